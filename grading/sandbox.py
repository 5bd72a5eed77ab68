"""Run one section's tests on one submission in a child process that cannot hurt the grader,
another run or the machine.

Every run gets a private directory of its own, which only the grader can reach:

    root/      a fresh copy of the course's tests, tooling and the reference of the sections
               before the one under test (what its tests build their inputs with), written
               from the bytes read once at start-up (`Pristine`): the reference of the section
               under test and of every later one is not there, so no run has a copy to reach
    impl/      the submission's module of that section, and nothing else of it
    tree/      (namespaces) where the run's own filesystem is assembled: the system, root/ and
               impl/ read-only, and a tmpfs at /scratch, its only writable space ($HOME,
               $TMPDIR, /tmp, hypothesis' storage, and the pre-trained biLM's cache, whose
               trusted file it can read but not change)
    scratch/   (uid and none) that writable space, as a folder of the run's own
    output.txt, records.jsonl, flags.jsonl    what the run printed, and what the fork server
               copied from its two streams (`grading.forkserver`)

and runs `pytest tests/sections --section N` there, forked from `grading.forkserver`, in the
isolation of `grading.isolation`, with a wall-clock limit (all of its processes are killed),
a per-test timeout, and caps on its address space, on any file it writes (its output
included), on its processes, and on its scratch space. The records it streams are signed
with a key of the run's (`signed_records`); what the grader reads back is read with
O_NOFOLLOW, from a regular file only, up to a cap (`read_capped`).
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import queue
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from course.registry import (
    CACHE_ENV_VAR,
    REFERENCE_DIR,
    ROOT,
    RUNTIME_FILES,
    SECTIONS,
    Section,
)
from course.results import PASSED

from . import isolation

# What a run's private root holds, as globs relative to the repository: the learner runtime,
# the reference and the grader's own plugin.
COPIED = (*RUNTIME_FILES, f"{REFERENCE_DIR.name}/*.py", "grading/*.py")
# What a section's run imports, imported once in the fork server: torch alone takes seconds,
# and hypothesis loads libcst on a test's first failure.
PRELOADED = ("numpy", "numpy.testing", "torch", "torch.nn", "torch.nn.functional", "pytest",
             "_pytest.python",
             "hypothesis", "hypothesis.strategies", "hypothesis.extra._patching",
             "pytest_timeout", "tqdm.auto", "matplotlib", "matplotlib.pyplot")
KILL_GRACE_S = 10
SERVER_START_S = 300
OUTPUT_TAIL_BYTES = 1 << 16
STREAM_BYTES = 8 << 20  # the most the grader keeps of a run's records, and of its flags
RECORDS_FD, FLAGS_FD = 3, 4
RECORDS_KEY_ENV_VAR = "GRADING_RECORDS_KEY"  # the run's key, in hex: the guard takes it out
# Fixed for every child: one thread (no oversubscription, same sums), one hash seed, no GPU.
FIXED_ENV = {"PYTHONHASHSEED": "0", "PYTHONDONTWRITEBYTECODE": "1", "OMP_NUM_THREADS": "1",
             "MKL_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "CUDA_VISIBLE_DEVICES": "",
             "MPLBACKEND": "Agg", "LANG": "C.UTF-8", "HYPOTHESIS_PROFILE": "course"}


@dataclass(frozen=True)
class Limits:
    """test_timeout_s: per test (pytest-timeout); section_timeout_s: the whole run, wall
    clock; memory_mb: address space; output_mb: the largest file it may write; scratch_mb:
    all it may write (namespaces mode)."""

    test_timeout_s: float = 60
    section_timeout_s: float = 600
    memory_mb: int = 4096
    output_mb: int = 64
    scratch_mb: int = 256

    def rlimits(self, mode: str) -> dict[str, int]:
        limits = {"RLIMIT_AS": self.memory_mb << 20, "RLIMIT_FSIZE": self.output_mb << 20,
                  "RLIMIT_CORE": 0, "RLIMIT_CPU": int(self.section_timeout_s) + KILL_GRACE_S}
        if mode != "none" and os.geteuid() == 0:  # a uid of the run's own: its count alone
            limits["RLIMIT_NPROC"] = isolation.NPROC_LIMIT
        return limits


class Pristine:
    """The bytes of every file a run's private root holds, read once from the repository."""

    def __init__(self, root: Path = ROOT) -> None:
        self.files = {
            str(path.relative_to(root)): path.read_bytes()
            for pattern in COPIED for path in sorted(root.glob(pattern)) if path.is_file()
        }

    def for_section(self, section: Section) -> dict[str, bytes]:
        """Everything but the reference of `section` and of the sections after it."""
        withheld = {f"{REFERENCE_DIR.name}/{s.file_name}" for s in SECTIONS
                    if s.number >= section.number}
        return {name: data for name, data in self.files.items() if name not in withheld}


@dataclass
class SectionRun:
    """What one run left: its records (as `course.results` writes them, last one per test
    wins), the guard's flags, how it ended, and the files of the root it changed."""

    records: dict[str, dict] = field(default_factory=dict)
    flags: list[dict] = field(default_factory=list)
    wait_status: int | None = None  # as os.wait gives it; None: it never ran or got lost
    timed_out: bool = False
    timeout_s: float = 0.0  # the wall-clock limit it ran under
    forged: int = 0  # lines of its records stream that the guard did not sign
    lost: bool = False  # the fork server died under it
    output_tail: str = ""
    tampered: list[str] = field(default_factory=list)
    seconds: float = 0.0


def read_capped(path: Path, limit: int, tail: bool = False) -> bytes:
    """Up to `limit` bytes of `path` (its last ones with `tail`), or nothing unless it is a
    regular file: a link, a FIFO or a device that a run left there is never followed, waited
    on or read without end."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return b""
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            return b""
        if tail:
            os.lseek(fd, max(0, info.st_size - limit), os.SEEK_SET)
        chunks, left = [], limit
        while left > 0:
            chunk = os.read(fd, min(left, 1 << 20))
            if not chunk:
                break
            chunks.append(chunk)
            left -= len(chunk)
        return b"".join(chunks)
    finally:
        os.close(fd)


def sign_record(key: bytes, record: dict) -> str:
    """The signature of one of a run's records under its key (the guard signs, we check)."""
    return hmac.new(key, json.dumps(record, sort_keys=True).encode(), hashlib.sha256).hexdigest()


def signed_records(lines: list[dict], key: bytes) -> tuple[dict[str, dict], int]:
    """{node id: record} from the records stream, and how many lines were not the guard's.
    A test's later record replaces its earlier one only where that one passed (a teardown
    that fails after a passing test): once a test has not passed, it never passes."""
    records, forged = {}, 0
    for line in lines:
        record = line.get("record")
        if not (isinstance(record, dict) and isinstance(record.get("nodeid"), str)
                and hmac.compare_digest(str(line.get("mac")), sign_record(key, record))):
            forged += 1
            continue
        earlier = records.get(record["nodeid"])
        if earlier is None or earlier.get("status") == PASSED:
            records[record["nodeid"]] = record
    return records, forged


def json_lines(data: bytes) -> list[dict]:
    found = []
    for line in data.decode(errors="replace").splitlines():
        try:
            value = json.loads(line)
        except ValueError:
            continue  # a line cut short when the run was killed
        if isinstance(value, dict):
            found.append(value)
    return found


@dataclass
class Outcome:
    status: int | None = None
    error: str | None = None
    entered: bool = False  # its isolation was set up and its module started
    timed_out: bool = False


class _Pending:
    def __init__(self, server: subprocess.Popen) -> None:
        self.server = server
        self.pid: int | None = None
        self.outcome = Outcome()
        self.started = threading.Event()
        self.done = threading.Event()


class ForkServer:
    """The grader's side of `grading.forkserver`, which imports `preload` before it forks
    anything: started on first use, and again if it dies; `run` may be called from several
    threads at once."""

    def __init__(self, log: Path, preload: tuple[str, ...] = ()) -> None:
        self.log, self.preload = log, preload
        self._lock = threading.Lock()
        self._process: subprocess.Popen | None = None
        self._pending: dict[int, _Pending] = {}
        self._next_id = 0
        self._closed = False

    def _ensure_started(self) -> subprocess.Popen:
        if self._closed:
            raise RuntimeError("the fork server was closed: no more runs")
        if self._process is None or self._process.poll() is not None:
            self.log.parent.mkdir(parents=True, exist_ok=True)
            env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), **FIXED_ENV}
            with self.log.open("ab") as log:
                self._process = subprocess.Popen(
                    [sys.executable, "-m", "grading.forkserver", *self.preload], cwd=ROOT, env=env,
                    stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=log,
                    start_new_session=True)
            threading.Thread(target=self._read, args=(self._process,), daemon=True).start()
        return self._process

    def _read(self, process: subprocess.Popen) -> None:
        for line in process.stdout:
            try:
                message = json.loads(line)
                pending = self._pending[message["id"]]
            except (ValueError, KeyError, TypeError):
                continue
            if "pid" in message:
                pending.pid = message["pid"]
                pending.started.set()
            else:
                outcome = pending.outcome
                outcome.status, outcome.error = message.get("status"), message.get("error")
                outcome.entered = bool(message.get("entered"))
                pending.started.set()
                pending.done.set()
        with self._lock:  # the server is gone: whatever it ran is lost
            for request_id, pending in list(self._pending.items()):
                if pending.server is process and not pending.done.is_set():
                    if pending.pid:
                        _kill(pending.pid)
                    pending.outcome.error = "the grader's fork server died during the run"
                    pending.started.set()
                    pending.done.set()
                    del self._pending[request_id]

    def _send(self, process: subprocess.Popen, message: dict) -> None:
        process.stdin.write((json.dumps(message) + "\n").encode())
        process.stdin.flush()

    def spawn(self, request: dict) -> tuple[int, _Pending]:
        """Send a spawn request (`grading.forkserver`'s, less its op and id)."""
        with self._lock:
            process = self._ensure_started()
            request_id, self._next_id = self._next_id, self._next_id + 1
            pending = self._pending[request_id] = _Pending(process)
            try:
                self._send(process, {"op": "spawn", "id": request_id, **request})
            except OSError as err:
                pending.outcome.error = f"the grader's fork server is not answering: {err}"
                pending.started.set()
                pending.done.set()
        return request_id, pending

    def kill(self, request_id: int) -> None:
        with self._lock:
            if self._process is not None and self._process.poll() is None:
                try:
                    self._send(self._process, {"op": "kill", "id": request_id})
                except OSError:
                    pass

    def run(self, request: dict, timeout_s: float) -> Outcome:
        """Run to the end or to `timeout_s` after it started."""
        request_id, pending = self.spawn(request)
        pending.started.wait(SERVER_START_S)  # the first run waits for the server's imports
        if not pending.done.wait(timeout_s):
            pending.outcome.timed_out = True
            self.kill(request_id)
            if not pending.done.wait(KILL_GRACE_S) and pending.pid:
                _kill(pending.pid)  # the server does not answer: do it from here
                pending.done.wait(KILL_GRACE_S)
        with self._lock:
            self._pending.pop(request_id, None)
        return pending.outcome

    def close(self) -> None:
        """Stop the server; it kills every child it still runs."""
        with self._lock:
            process, self._process, self._closed = self._process, None, True
        if process is not None:
            process.stdin.close()
            try:
                process.wait(KILL_GRACE_S)
            except subprocess.TimeoutExpired:
                _kill(process.pid)
                process.wait()


def _kill(pid: int) -> None:
    """SIGKILL to `pid`, and to its process group where it leads one."""
    for send in (os.kill, os.killpg):
        try:
            send(pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass


def child_env(scratch: Path) -> dict[str, str]:
    return {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), **FIXED_ENV,
            "HOME": str(scratch / "home"), "TMPDIR": str(scratch / "tmp"),
            "HYPOTHESIS_STORAGE_DIRECTORY": str(scratch / "hypothesis"),
            "TORCHINDUCTOR_CACHE_DIR": str(scratch / "torchinductor"),  # not the course's build/
            CACHE_ENV_VAR: str(scratch / "cache")}


def _changed_files(root: Path, written: dict[str, bytes]) -> list[str]:
    """Files of `written` that are gone or differ, and files added beside them."""
    changed = [name for name, data in written.items()
               if read_capped(root / name, len(data) + 1) != data]
    for folder in {str(Path(name).parent) for name in written} - {"."}:
        for path in (root / folder).iterdir():
            name = str(path.relative_to(root))
            if name not in written and (path.is_symlink() or not path.is_dir()):
                changed.append(name)
    return sorted(changed)


def isolation_request(mode: str, run_dir: Path, slot: int, visible: list[str],
                      cache_files: dict[str, Path], scratch_mb: int,
                      hidden: list[str]) -> tuple[dict, Path]:
    """The isolation (`grading.isolation`'s spec) of a run in `run_dir` that sees `visible`
    read-only besides the system, gets `cache_files` ({name: trusted file}) in its cache,
    and must not see `hidden` (where they lie inside what it sees); and its scratch space."""
    uid, gid = isolation.run_ids(slot)
    if mode == "namespaces":  # a tmpfs of its own tree
        scratch = Path(isolation.NAMESPACE_SCRATCH)
    else:
        scratch = run_dir / "scratch"
        scratch.mkdir()
    spec = {"mode": mode, "uid": uid, "gid": gid, "scratch": str(scratch),
            "files": {str(scratch / "cache" / name): str(path)
                      for name, path in cache_files.items()}}
    if mode == "namespaces":
        (run_dir / "tree").mkdir()
        spec.update(root=str(run_dir / "tree"), scratch_mb=scratch_mb, hidden=hidden,
                    read_only=[*isolation.system_paths(), *visible])
    elif mode == "uid":  # this run's uid may enter its own folder, no other's
        os.chown(run_dir, 0, gid)
        run_dir.chmod(0o750)
    else:
        (scratch / "cache").mkdir()
        for name, path in cache_files.items():
            shutil.copyfile(path, scratch / "cache" / name)  # a copy it may spoil
        spec["files"] = {}
    return spec, scratch


def _write_tree(folder: Path, files: dict[str, bytes]) -> None:
    """Write `files` under `folder`, readable by the run's uid whatever the grader's umask."""
    for name, data in files.items():
        path = folder / name
        for parent in reversed([p for p in path.parents if p.is_relative_to(folder)]):
            if not parent.exists():
                parent.mkdir()
                parent.chmod(0o755)
        path.write_bytes(data)
        path.chmod(0o644)


@dataclass
class Sandbox:
    """Runs sections in private directories under `work_dir`, through one fork server, in
    `mode` (`grading.isolation`); `slots`: the runs that may run at once, each with a uid of
    its own when the grader is root; `cache_files`: {name: trusted file} of the biLM cache."""

    work_dir: Path
    pristine: Pristine
    cache_files: dict[str, Path]
    limits: Limits = Limits()
    keep_runs: bool = False
    mode: str = "namespaces"
    slots: int = 1

    def __post_init__(self) -> None:
        # Absolute: the fork server's children change their root and directory before they
        # use a run's paths (`--work-dir build/grading` is a path relative to the grader).
        self.work_dir = Path(self.work_dir).resolve()
        self.server = ForkServer(self.work_dir / "forkserver.log", PRELOADED)
        self.runs = self.work_dir / "runs"
        self.runs.mkdir(parents=True, exist_ok=True)
        self.runs.chmod(0o711)  # a run's uid may pass through (uid mode), never list
        self._free_slots: queue.Queue[int] = queue.Queue()
        for slot in range(max(1, self.slots)):
            self._free_slots.put(slot)

    def run_section(self, section: Section, module_source: bytes, label: str,
                    timeout_s: float | None = None) -> SectionRun:
        """Grade `module_source` as `section`'s module, under `timeout_s` (the limits'
        section timeout by default); a run the fork server lost is tried once more."""
        timeout_s = self.limits.section_timeout_s if timeout_s is None else timeout_s
        run = self._run_once(section, module_source, label, timeout_s)
        return self._run_once(section, module_source, label, timeout_s) if run.lost else run

    def _run_once(self, section: Section, module_source: bytes, label: str,
                  timeout_s: float) -> SectionRun:
        slot = self._free_slots.get()
        run_dir = Path(tempfile.mkdtemp(prefix=f"{label}-s{section.number}-", dir=self.runs))
        try:
            return self._run_in(run_dir, section, module_source, timeout_s, slot)
        finally:
            if not self.keep_runs:
                shutil.rmtree(run_dir, ignore_errors=True)
            self._free_slots.put(slot)


    def _run_in(self, run_dir: Path, section: Section, module_source: bytes,
                timeout_s: float, slot: int) -> SectionRun:
        root, impl = run_dir / "root", run_dir / "impl"
        written = self.pristine.for_section(section)
        _write_tree(root, written)
        _write_tree(impl, {section.file_name: module_source})
        spec, scratch = isolation_request(
            self.mode, run_dir, slot, [str(root), str(impl)], self.cache_files,
            self.limits.scratch_mb, [str(ROOT), str(self.work_dir.resolve())])
        records, flags = run_dir / "records.jsonl", run_dir / "flags.jsonl"
        output = run_dir / "output.txt"
        argv = ["tests/sections", "--impl", str(impl), "--section", str(section.number),
                "-c", "pytest.ini", "--rootdir", ".", "-p", "grading.guard",
                "--grading-records-fd", str(RECORDS_FD), "--grading-flags-fd", str(FLAGS_FD),
                "--grading-protect", str(REFERENCE_DIR),  # the grader's, and the run's copy
                "--grading-protect", str(root / REFERENCE_DIR.name),
                "--timeout", str(self.limits.test_timeout_s), "--tb=line", "-q",
                "-W", "ignore::pytest.PytestAssertRewriteWarning"]
        key = os.urandom(16)
        env = {**child_env(scratch), RECORDS_KEY_ENV_VAR: key.hex()}
        started = time.monotonic()
        outcome = self.server.run(
            {"module": "pytest", "argv": argv, "cwd": str(root), "env": env,
             "output": str(output), "limits": self.limits.rlimits(self.mode),
             "streams": {str(RECORDS_FD): str(records), str(FLAGS_FD): str(flags)},
             "stream_bytes": STREAM_BYTES, "isolation": spec}, timeout_s)
        tail = read_capped(output, OUTPUT_TAIL_BYTES, tail=True).decode(errors="replace")
        if outcome.error is None and not outcome.entered and not outcome.timed_out:
            raise RuntimeError(f"the run's isolation ({self.mode}) could not be set up "
                               f"(wait status {outcome.status}): {tail[-2000:]}")
        result = SectionRun(wait_status=outcome.status, timed_out=outcome.timed_out,
                            timeout_s=timeout_s, lost=outcome.error is not None,
                            output_tail=tail, tampered=_changed_files(root, written),
                            seconds=time.monotonic() - started)
        result.records, result.forged = signed_records(
            json_lines(read_capped(records, STREAM_BYTES)), key)
        result.flags = list({(f.get("kind"), f.get("detail")): f
                             for f in json_lines(read_capped(flags, STREAM_BYTES))
                             if isinstance(f.get("kind"), str)
                             and isinstance(f.get("detail"), str)}.values())
        return result

    def run_trusted(self, module: str, argv: list[str], env: dict[str, str],
                    timeout_s: float) -> tuple[int | None, str]:
        """Run the grader's own `module` in the repository (no limits but the clock, no
        isolation: it is the course's own code): (wait status, the tail of its output)."""
        output = self.work_dir / f"{module.rsplit('.', 1)[-1]}.log"
        output.unlink(missing_ok=True)
        trusted = self.work_dir / "trusted"
        env = {**child_env(trusted), **env}
        for folder in ("home", "tmp", "hypothesis"):
            (trusted / folder).mkdir(parents=True, exist_ok=True)
        outcome = self.server.run({"module": module, "argv": argv, "cwd": str(ROOT),
                                   "env": env, "output": str(output), "limits": {}},
                                  timeout_s)
        tail = read_capped(output, OUTPUT_TAIL_BYTES, tail=True).decode(errors="replace")
        return outcome.status, outcome.error or tail

    def close(self) -> None:
        self.server.close()
