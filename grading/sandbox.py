"""Run one section's tests on one submission in a child process that cannot hurt the grader.

Every run gets a private directory of its own:

    root/      a fresh copy of the course's tests, tooling and reference, written from the
               bytes read once at start-up (`Pristine`); the reference of the section under
               test is left out, so the submission has no copy of it to reach
    impl/      the submission's module of that section, and nothing else of it
    cache/     a copy of the pre-trained reference biLM (`course.pretrained`), so that no
               submission can poison the one the others use
    home/ tmp/ hypothesis/   its $HOME, $TMPDIR and hypothesis' storage

and runs `pytest tests/sections --section N` there, forked from `grading.forkserver`, with
a wall-clock limit (the whole process group is killed), a per-test timeout, a cap on its
address space and on the size of any file it writes (its output included), and an
environment that holds nothing of the grader's. After the run the copy of the tests is
compared with the pristine bytes, so a run that edits them is caught.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from course.registry import CACHE_ENV_VAR, REFERENCE_DIR, ROOT, RUNTIME_FILES, Section

# What a run's private root holds, as globs relative to the repository: the learner runtime,
# the reference and the grader's own plugin.
COPIED = (*RUNTIME_FILES, f"{REFERENCE_DIR.name}/*.py", "grading/*.py")
# What a section's run imports, imported once in the fork server: torch alone takes seconds,
# and hypothesis loads libcst on a test's first failure.
PRELOADED = ("numpy", "torch", "torch.nn", "torch.nn.functional", "pytest", "_pytest.python",
             "hypothesis", "hypothesis.strategies", "hypothesis.extra._patching",
             "pytest_timeout", "tqdm.auto", "matplotlib", "matplotlib.pyplot")
KILL_GRACE_S = 10
SERVER_START_S = 300
OUTPUT_TAIL_BYTES = 1 << 16
# Fixed for every child: one thread (no oversubscription, same sums), one hash seed, no GPU.
FIXED_ENV = {"PYTHONHASHSEED": "0", "PYTHONDONTWRITEBYTECODE": "1", "OMP_NUM_THREADS": "1",
             "MKL_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "CUDA_VISIBLE_DEVICES": "",
             "MPLBACKEND": "Agg", "LANG": "C.UTF-8", "HYPOTHESIS_PROFILE": "course"}


@dataclass(frozen=True)
class Limits:
    """test_timeout_s: per test (pytest-timeout); section_timeout_s: the whole run, wall
    clock; memory_mb: address space; output_mb: the largest file it may write."""

    test_timeout_s: float = 60
    section_timeout_s: float = 600
    memory_mb: int = 4096
    output_mb: int = 64

    def rlimits(self) -> dict[str, int]:
        return {"RLIMIT_AS": self.memory_mb << 20, "RLIMIT_FSIZE": self.output_mb << 20,
                "RLIMIT_CORE": 0, "RLIMIT_CPU": int(self.section_timeout_s) + KILL_GRACE_S}


class Pristine:
    """The bytes of every file a run's private root holds, read once from the repository."""

    def __init__(self, root: Path = ROOT) -> None:
        self.files = {
            str(path.relative_to(root)): path.read_bytes()
            for pattern in COPIED for path in sorted(root.glob(pattern)) if path.is_file()
        }

    def for_section(self, section: Section) -> dict[str, bytes]:
        """Everything but the reference of `section`."""
        own = f"{REFERENCE_DIR.name}/{section.file_name}"
        return {name: data for name, data in self.files.items() if name != own}


@dataclass
class SectionRun:
    """What one run left: its records (as `course.results` writes them, last one per test
    wins), the guard's flags, how it ended, and the files of the root it changed."""

    records: dict[str, dict] = field(default_factory=dict)
    flags: list[dict] = field(default_factory=list)
    wait_status: int | None = None  # as os.wait gives it; None: it never ran or got lost
    timed_out: bool = False
    lost: bool = False  # the fork server died under it
    output_tail: str = ""
    tampered: list[str] = field(default_factory=list)
    seconds: float = 0.0


class _Pending:
    def __init__(self, server: subprocess.Popen) -> None:
        self.server = server
        self.pid: int | None = None
        self.status: int | None = None
        self.error: str | None = None
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
                pending.status, pending.error = message.get("status"), message.get("error")
                pending.started.set()
                pending.done.set()
        with self._lock:  # the server is gone: whatever it ran is lost
            for request_id, pending in list(self._pending.items()):
                if pending.server is process and not pending.done.is_set():
                    if pending.pid:
                        _kill_group(pending.pid)
                    pending.error = "the grader's fork server died during the run"
                    pending.started.set()
                    pending.done.set()
                    del self._pending[request_id]

    def _send(self, process: subprocess.Popen, message: dict) -> None:
        process.stdin.write((json.dumps(message) + "\n").encode())
        process.stdin.flush()

    def spawn(self, module: str, argv: list[str], cwd: Path, env: dict[str, str],
              output: Path, limits: dict[str, int]) -> tuple[int, _Pending]:
        with self._lock:
            process = self._ensure_started()
            request_id, self._next_id = self._next_id, self._next_id + 1
            pending = self._pending[request_id] = _Pending(process)
            try:
                self._send(process, {"op": "spawn", "id": request_id, "module": module,
                                     "argv": argv, "cwd": str(cwd), "env": env,
                                     "output": str(output), "limits": limits})
            except OSError as err:
                pending.error = f"the grader's fork server is not answering: {err}"
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

    def run(self, module: str, argv: list[str], cwd: Path, env: dict[str, str], output: Path,
            limits: dict[str, int], timeout_s: float) -> tuple[int | None, bool, str | None]:
        """Run to the end or to `timeout_s` after it started: (wait status, timed out, error
        of the server)."""
        request_id, pending = self.spawn(module, argv, cwd, env, output, limits)
        pending.started.wait(SERVER_START_S)  # the first run waits for the server's imports
        timed_out = not pending.done.wait(timeout_s)
        if timed_out:
            self.kill(request_id)
            if not pending.done.wait(KILL_GRACE_S) and pending.pid:
                _kill_group(pending.pid)  # the server does not answer: do it from here
                pending.done.wait(KILL_GRACE_S)
        with self._lock:
            self._pending.pop(request_id, None)
        return pending.status, timed_out, pending.error

    def close(self) -> None:
        """Stop the server; it kills every child it still runs."""
        with self._lock:
            process, self._process, self._closed = self._process, None, True
        if process is not None:
            process.stdin.close()
            try:
                process.wait(KILL_GRACE_S)
            except subprocess.TimeoutExpired:
                _kill_group(process.pid)
                process.wait()


def _kill_group(pid: int) -> None:
    try:
        os.killpg(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def child_env(run_dir: Path) -> dict[str, str]:
    return {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), **FIXED_ENV,
            "HOME": str(run_dir / "home"), "TMPDIR": str(run_dir / "tmp"),
            "HYPOTHESIS_STORAGE_DIRECTORY": str(run_dir / "hypothesis"),
            CACHE_ENV_VAR: str(run_dir / "cache")}


def _read_json_lines(path: Path) -> list[dict]:
    if not path.exists():
        return []
    found = []
    for line in path.read_text(errors="replace").splitlines():
        try:
            value = json.loads(line)
        except ValueError:
            continue  # a line cut short when the run was killed
        if isinstance(value, dict):
            found.append(value)
    return found


def _tail(path: Path) -> str:
    if not path.exists():
        return ""
    with path.open("rb") as stream:
        stream.seek(max(0, path.stat().st_size - OUTPUT_TAIL_BYTES))
        return stream.read().decode(errors="replace")


def _changed_files(root: Path, written: dict[str, bytes]) -> list[str]:
    """Files of `written` that are gone or differ, and files added beside them."""
    changed = [name for name, data in written.items()
               if not (root / name).is_file() or (root / name).read_bytes() != data]
    for folder in {str(Path(name).parent) for name in written} - {"."}:
        for path in (root / folder).iterdir():
            name = str(path.relative_to(root))
            if path.is_file() and name not in written:
                changed.append(name)
    return sorted(changed)


@dataclass
class Sandbox:
    """Runs sections in private directories under `work_dir`, through one fork server."""

    work_dir: Path
    pristine: Pristine
    cache_files: dict[str, bytes]
    limits: Limits = Limits()
    keep_runs: bool = False

    def __post_init__(self) -> None:
        self.server = ForkServer(self.work_dir / "forkserver.log", PRELOADED)
        (self.work_dir / "runs").mkdir(parents=True, exist_ok=True)

    def run_section(self, section: Section, module_source: bytes, label: str) -> SectionRun:
        """Grade `module_source` as `section`'s module; a run the fork server lost is
        tried once more."""
        run = self._run_once(section, module_source, label)
        return self._run_once(section, module_source, label) if run.lost else run

    def _run_once(self, section: Section, module_source: bytes, label: str) -> SectionRun:
        run_dir = Path(tempfile.mkdtemp(prefix=f"{label}-s{section.number}-",
                                        dir=self.work_dir / "runs"))
        try:
            return self._run_in(run_dir, section, module_source)
        finally:
            if not self.keep_runs:
                shutil.rmtree(run_dir, ignore_errors=True)

    def _run_in(self, run_dir: Path, section: Section, module_source: bytes) -> SectionRun:
        root, impl = run_dir / "root", run_dir / "impl"
        written = self.pristine.for_section(section)
        for name, data in written.items():
            (root / name).parent.mkdir(parents=True, exist_ok=True)
            (root / name).write_bytes(data)
        for folder in ("impl", "cache", "home", "tmp", "hypothesis"):
            (run_dir / folder).mkdir()
        (impl / f"{section.module}.py").write_bytes(module_source)
        for name, data in self.cache_files.items():
            (run_dir / "cache" / name).write_bytes(data)
        records, flags = run_dir / "records.jsonl", run_dir / "flags.jsonl"
        output = run_dir / "output.txt"
        argv = ["tests/sections", "--impl", str(impl), "--section", str(section.number),
                "-c", "pytest.ini", "--rootdir", ".", "-p", "grading.guard",
                "--grading-records", str(records), "--grading-flags", str(flags),
                "--grading-protect", str(REFERENCE_DIR),
                "--timeout", str(self.limits.test_timeout_s), "--tb=line", "-q",
                "-W", "ignore::pytest.PytestAssertRewriteWarning"]
        started = time.monotonic()
        status, timed_out, error = self.server.run(
            "pytest", argv, root, child_env(run_dir), output, self.limits.rlimits(),
            self.limits.section_timeout_s)
        result = SectionRun(wait_status=status, timed_out=timed_out, lost=error is not None,
                            output_tail=_tail(output), tampered=_changed_files(root, written),
                            seconds=time.monotonic() - started)
        for record in _read_json_lines(records):
            if isinstance(record.get("nodeid"), str):
                result.records[record["nodeid"]] = record
        result.flags = list({(f.get("kind"), f.get("detail")): f
                             for f in _read_json_lines(flags)}.values())
        return result

    def run_trusted(self, module: str, argv: list[str], env: dict[str, str],
                    timeout_s: float) -> tuple[int | None, str]:
        """Run the grader's own `module` in the repository (no limits but the clock):
        (wait status, the tail of its output)."""
        output = self.work_dir / f"{module.rsplit('.', 1)[-1]}.log"
        env = {**child_env(self.work_dir / "trusted"), **env}
        for folder in ("home", "tmp", "hypothesis"):
            (self.work_dir / "trusted" / folder).mkdir(parents=True, exist_ok=True)
        status, _, error = self.server.run(module, argv, ROOT, env, output, {}, timeout_s)
        return status, error or _tail(output)

    def close(self) -> None:
        self.server.close()
