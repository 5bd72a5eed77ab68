"""Where a section's run runs, reaching nothing but its own inputs (docs/instructors.md,
"How the runs are isolated"): in bwrap mode a bubblewrap sandbox per slot (`--jobs`), whose
zygote (`grading.zygote`) forks its runs one at a time; in uid mode one zygote on the machine;
in none mode (trusted code) no sandbox. Each run is one process with a uid of its own from a
block the grader holds (`UidBlock`), its limits its process's (`Limits`), its CPU share a
cgroup of its own where the machine gives one (`CpuShares`).
"""

from __future__ import annotations

import fcntl
import json
import os
import platform
import select
import shutil
import socket
import stat
import subprocess
import sys
import sysconfig
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from course.registry import CACHE_ENV_VAR, REFERENCE_DIR, ROOT, RUNTIME_FILES, Section

from .zygote import remove_owned, remove_tree, writable_folders

MODES = ("bwrap", "uid", "none")
UID_BASE, UID_BLOCK, UID_BLOCKS = 3_000_000, 100, 1000
RECORDS_BYTES = 16 << 20  # the most a run may write to the grader (acts' data included):
# past it, it is untrusted
GRACE_S = 10
ZYGOTE_CAPS = ("SETUID", "SETGID", "CHOWN", "FOWNER", "DAC_OVERRIDE", "KILL")
NAMESPACES = ("--unshare-pid", "--unshare-ipc", "--unshare-net", "--unshare-uts")
# Fixed for every run: one thread, one hash seed, no GPU.
FIXED_ENV = {"PYTHONHASHSEED": "0", "PYTHONDONTWRITEBYTECODE": "1", "OMP_NUM_THREADS": "1",
             "MKL_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "CUDA_VISIBLE_DEVICES": "",
             "MPLBACKEND": "Agg", "LANG": "C.UTF-8",
             "PATH": "/usr/bin:/bin"}


@dataclass(frozen=True)
class Limits:
    """Per test, per run (wall clock); a run's address space, largest file, scratch, threads."""

    test_timeout_s: float = 60
    section_timeout_s: float = 600
    memory_mb: int = 4096
    output_mb: int = 64
    scratch_mb: int = 256
    threads: int = 32

    def rlimits(self, own_uid: bool) -> dict[str, int]:
        limits = {"RLIMIT_AS": self.memory_mb << 20, "RLIMIT_FSIZE": self.output_mb << 20,
                  "RLIMIT_CORE": 0, "RLIMIT_CPU": int(self.section_timeout_s) + GRACE_S}
        return {**limits, "RLIMIT_NPROC": self.threads} if own_uid else limits


class Pristine:
    """The bytes of the course's runtime, tests and reference, read once from `root`."""

    def __init__(self, root: Path = ROOT) -> None:
        self.files = {str(path.relative_to(root)): path.read_bytes()
                      for pattern in (*RUNTIME_FILES, f"{REFERENCE_DIR.name}/*.py")
                      for path in sorted(root.glob(pattern)) if path.is_file()}

    def course(self) -> dict[str, bytes]:
        """A run's course: the runtime and tests, which hold the fakes of the other sections
        (tests/sections/fakes); nothing of the reference."""
        return {name: data for name, data in self.files.items()
                if not name.startswith(f"{REFERENCE_DIR.name}/")}


def write_tree(folder: Path, files: dict[str, bytes], gid: int = 0, mode: int = 0o755) -> None:
    """`files` under `folder`, root's, readable by group `gid` (or by all: mode 0o755)."""
    for name, data in files.items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_bytes(data)
    for path in [folder, *folder.rglob("*")]:
        if os.geteuid() == 0:
            os.chown(path, 0, gid)
        path.chmod(mode if path.is_dir() else mode & 0o644)


def _reachable(path: Path, readable: bool = True) -> bool:
    """Whether a user who is not its owner, in its group or root reaches (reads) `path`."""
    path = Path(path).resolve()
    needed = stat.S_IROTH | stat.S_IXOTH if readable else stat.S_IXOTH
    return all(os.stat(p).st_mode & stat.S_IXOTH for p in path.parents) and (
        os.stat(path).st_mode & needed == needed)


def exposed(root: Path, keep: tuple[Path, ...] = ()) -> list[str]:
    """What of the folder `root` a user who is not its owner, in its group or root can read
    (a file) or list (a folder), but `keep` and what is below it; links are not followed (where
    one leads is checked where it is). Walked with no recursion."""
    root, keep = Path(root).resolve(), {Path(p).resolve() for p in keep}
    if not all(os.stat(p).st_mode & stat.S_IXOTH for p in (root, *root.parents)):
        return []  # no one but root and the owner gets past it or a folder above it
    found, todo = [], [root]
    while todo:
        with os.scandir(todo.pop()) as entries:
            for entry in entries:
                info = entry.stat(follow_symlinks=False)
                if Path(entry.path) in keep or stat.S_ISLNK(info.st_mode):
                    continue
                if info.st_mode & stat.S_IROTH:
                    found.append(entry.path)
                if stat.S_ISDIR(info.st_mode) and info.st_mode & stat.S_IXOTH:
                    todo.append(Path(entry.path))
    return sorted(found)


def _exposed_repository(roots: tuple[Path, ...], keep: tuple[Path, ...]) -> str | None:
    """Why a run in uid mode could read something of the course's repositories `roots` (its
    reference, `.git`, its tests), or None: they must be the grader's alone, but for `keep`."""
    for root in dict.fromkeys(Path(r).resolve() for r in roots):
        found = exposed(root, keep)
        if found:
            tops = sorted({root / Path(p).relative_to(root).parts[0] for p in found})
            kept = [Path(p).resolve() for p in keep]  # reopened below what is closed
            through = sorted({q for k in kept for q in (k, *k.parents)
                              if any(q.is_relative_to(t) for t in tops)} - set(kept))
            fix = f"chmod -R go-rwx {' '.join(map(str, tops))}" + "".join(
                f" && chmod o+x {q}" for q in through) + "".join(
                f" && chmod -R o+rX {k}" for k in kept if k.exists()
                and any(k.is_relative_to(t) for t in tops))
            shown = ", ".join(str(t.relative_to(root)) for t in tops[:8])
            return (f"{len(found)} files or folders of {root} are readable by every user, so "
                    f"by a run, in: {shown}{' ...' if len(tops) > 8 else ''}. Make them the "
                    f"grader's alone: {fix}")
    return None


def problem(mode: str, roots: tuple[Path, ...] = (ROOT,), work_dir: Path | None = None
            ) -> str | None:
    """Why `mode` cannot isolate runs on this machine, or None when it can. `roots`: the
    repositories of the course graded with and of the grader, of which a run in uid mode
    may read nothing but Python's environment and the work folder `work_dir` (the grader's
    own, which it keeps private)."""
    if mode == "none":
        return None
    if os.geteuid() != 0:
        return "the grader gives each run a uid of its own, so it must run as root (sudo)"
    if platform.machine() != "x86_64":
        return f"the runs' system-call filter knows x86-64 only, not {platform.machine()}"
    if mode == "uid":
        keep = (Path(sys.prefix), *([work_dir] if work_dir else []))
        if why := _exposed_repository(roots, keep):
            return why
        if not all(_reachable(Path(p)) for p in (sys.prefix, sys.base_prefix)):
            return f"Python ({sys.base_prefix}) is not readable by other users, so by no run"
        return None
    if not shutil.which("bwrap"):
        return "bubblewrap is not installed (apt-get install bubblewrap; make install does it)"
    probe = subprocess.run(["bwrap", *NAMESPACES, "--ro-bind", "/", "/", "--proc", "/proc",
                            "--dev", "/dev", "true"], capture_output=True, text=True)
    return None if probe.returncode == 0 else (
        f"bubblewrap cannot make its namespaces here ({probe.stderr.strip()}): a container's "
        "seccomp profile or missing CAP_SYS_ADMIN forbids them, as Docker's default does")


class UidBlock:
    """UID_BLOCK uids this grader holds, by a lock on a file, for as long as it runs."""

    def __init__(self) -> None:
        folder = Path(tempfile.gettempdir()) / "grading-uids"
        folder.mkdir(mode=0o700, exist_ok=True)
        for block in range(UID_BLOCKS):
            fd = os.open(folder / f"{block}.lock", os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                os.close(fd)
                continue
            self.fd, self.free = fd, list(range(UID_BASE + block * UID_BLOCK,
                                                UID_BASE + (block + 1) * UID_BLOCK))
            return
        raise RuntimeError(f"every block of run uids in {folder} is held by a running grader")


class CpuShares:
    """A cgroup (cpu controller) per slot under the grader's own, so that concurrent runs share
    the CPU as runs, not as threads; none where the machine does not let the grader make one."""

    def __init__(self, slots: int) -> None:
        self.folders: list[Path] = []
        try:
            own = dict(line.split(":")[1:] for line in open("/proc/self/cgroup").read().split())
            mounts = [(m[0].split()[4], *m[1].split()[:3]) for m in
                      (line.split(" - ") for line in open("/proc/self/mountinfo"))]
            v1 = [m[0] for m in mounts if m[1] == "cgroup" and "cpu" in m[3].split(",")]
            top = v1[0] + own[next(k for k in own if "cpu" in k.split(","))] if v1 else \
                next(m[0] for m in mounts if m[1] == "cgroup2") + own[""]
            self.parent = Path(tempfile.mkdtemp(prefix=f"grading-{os.getpid()}-", dir=top))
            if not v1:  # cgroup v2: the cpu controller, delegated down to the runs
                for folder in (self.parent.parent, self.parent):
                    (folder / "cgroup.subtree_control").write_text("+cpu")
            for slot in range(slots):
                self.folders.append(self.parent / f"run-{slot}")
                self.folders[-1].mkdir()
        except (OSError, StopIteration, KeyError, ValueError, IndexError):
            self.close()

    def close(self) -> None:
        for folder in [*self.folders, getattr(self, "parent", None)]:
            try:
                folder.rmdir()
            except (OSError, AttributeError):
                pass
        self.folders = []


@dataclass
class Outcome:
    """How a run ended: its wait status (None: lost), whether it ran past `timeout_s`, what
    it wrote to the grader (`records`; `overflowed` past RECORDS_BYTES), its output's tail."""

    status: int | None = None
    timed_out: bool = False
    error: str | None = None
    records: bytes = b""
    overflowed: bool = False
    output_tail: str = ""
    seconds: float = 0.0
    timeout_s: float = 0.0


class Zygote:
    """One `grading.zygote` server started by `argv`, running one run at a time."""

    def __init__(self, argv: list[str], env: dict[str, str], log: Path) -> None:
        self.socket, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        with log.open("ab") as out:
            self.process = subprocess.Popen(argv, stdin=theirs, stdout=out, stderr=out,
                                            env=env, cwd="/", start_new_session=True)
        theirs.close()

    def run(self, request: dict, fds: list[int], records: int, timeout_s: float) -> Outcome:
        """Run `request` with `fds` (closed here), reading its records from the pipe's end
        `records`, until it ends; past `timeout_s`, or past RECORDS_BYTES, it is killed."""
        outcome, chunks, started = Outcome(timeout_s=timeout_s), [], time.monotonic()
        deadline, killed = started + timeout_s, False
        try:
            socket.send_fds(self.socket, [json.dumps(request).encode()], fds)
        except OSError as err:
            outcome.error = f"the sandbox's server is not answering: {err}"
        for fd in fds:
            os.close(fd)
        with os.fdopen(records, "rb", buffering=0) as pipe:
            watched = [pipe, self.socket]
            while outcome.error is None and (outcome.status is None or pipe in watched):
                if time.monotonic() > deadline or (outcome.overflowed and not killed):
                    if killed:
                        self.close()  # it does not answer: it and all it runs go
                        outcome.error = "the sandbox's server did not answer"
                        break
                    outcome.timed_out, killed = not outcome.overflowed, True
                    self.socket.send(b'{"kill": true}')
                    deadline = time.monotonic() + GRACE_S
                for ready in select.select(watched, [], [], 1)[0]:
                    data = ready.read(1 << 16) if ready is pipe else self.socket.recv(1 << 16)
                    if ready is self.socket and not data:
                        outcome.error = "the sandbox's server ended"
                    elif ready is self.socket:
                        ended = json.loads(data)
                        outcome.status = ended["status"]
                        if ended["left"]:  # the next run could find it: not a result
                            outcome.error = ("what the run left could not be removed: "
                                             + "; ".join(ended["left"]))
                    elif data and sum(map(len, chunks)) + len(data) <= RECORDS_BYTES:
                        chunks.append(data)
                    else:
                        outcome.overflowed = bool(data)
                        watched.remove(pipe)
        outcome.records, outcome.seconds = b"".join(chunks), time.monotonic() - started
        return outcome

    def close(self) -> None:
        try:
            self.socket.shutdown(socket.SHUT_RDWR)
            self.process.wait(GRACE_S)
        except OSError:
            pass
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


class Sandbox:
    """Runs sections in `mode`, up to `slots` at once, under `work_dir`: each slot's runs one
    after another from a zygote of its own (in bwrap mode, in a sandbox that sees the slot's
    folder of runs alone); each run gets its own copy of the course for its section and of
    `cache_files` ({name: the trusted file}) in its cache folder."""

    def __init__(self, work_dir: Path, pristine: Pristine, limits: Limits, mode: str,
                 slots: int = 1, cache_files: dict[str, Path] | None = None) -> None:
        self.work_dir, self.pristine, self.limits = Path(work_dir).resolve(), pristine, limits
        self.mode, self.cache_files = mode, cache_files or {}
        self.slots = 1 if mode == "uid" else max(1, slots)  # uid: nothing keeps runs apart
        self.work_dir.mkdir(parents=True, exist_ok=True)
        self.runs = Path(tempfile.mkdtemp(prefix="runs-", dir=self.work_dir))  # this one's
        for folder in (self.work_dir, self.runs, *(self.runs / str(s) for s in range(self.slots))):
            folder.mkdir(exist_ok=True)
            folder.chmod(0o711)  # a run's uid passes through to its own folder, no other's
        if mode == "uid" and not _reachable(self.runs, readable=False):
            raise RuntimeError(f"{self.runs} must be reachable by other users (o+x on it and "
                               "every folder above), so that each run's uid reaches its own")
        self.uids = UidBlock() if mode != "none" else None
        # uid mode: where a run's uid can leave something but its scratch; cleared of what any
        # uid of the block left there (a grader that was killed) before the first run
        self.writable = writable_folders() if mode == "uid" else []
        if left := remove_owned(set(self.uids.free) if self.uids else set(), self.writable):
            raise RuntimeError("what earlier runs left cannot be removed: " + "; ".join(left))
        self.cpu = CpuShares(self.slots) if mode != "none" else None
        self.cpu_share = "cgroup" if self.cpu and self.cpu.folders else "threads"
        self._free_slots = list(range(self.slots))
        self._zygotes: dict[int, Zygote] = {}
        self._changed = threading.Condition()
        self._closed = False

    def _zygote(self, slot: int) -> Zygote:
        env = {**FIXED_ENV, "PYTHONPATH": str(ROOT)}
        argv = [sys.executable, "-m", "grading.zygote"]
        if self.mode == "bwrap":
            paths = [*{os.path.abspath(p) for p in ("/usr", "/etc", sys.base_prefix, sys.prefix,
                                                    *sysconfig.get_paths().values())
                       if os.path.isdir(p)}]
            paths = sorted(p for p in paths if not any(p.startswith(q + "/") for q in paths))
            box = ["bwrap", "--die-with-parent", "--new-session", *NAMESPACES, "--cap-drop",
                   "ALL", *(a for cap in ZYGOTE_CAPS for a in ("--cap-add", f"CAP_{cap}"))]
            for parent in sorted({str(q) for p in paths for q in Path(p).parents} - {"/"}):
                box += ["--perms", "0755", "--dir", parent]  # bubblewrap's own are 0700
            box += [a for p in paths for a in ("--ro-bind", p, p)]
            box += [a for link in ("/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")
                    if os.path.islink(link) for a in ("--symlink", os.readlink(link), link)]
            box += ["--perms", "0755", "--dir", "/grader", "--ro-bind", str(ROOT / "grading"),
                    "/grader/grading", "--ro-bind", str(self.runs / str(slot)), "/runs",
                    "--size", str(self.limits.scratch_mb << 20), "--perms", "0711", "--tmpfs",
                    "/scratch", "--proc", "/proc", "--dev", "/dev", "--"]
            argv, env = box + argv, {**env, "PYTHONPATH": "/grader"}
        return Zygote(argv, env, self.work_dir / "zygote.log")

    def run_section(self, section: Section, source: bytes, timeout_s: float | None = None,
                    cases: bytes = b"{}") -> Outcome:
        """Run `section`'s tests on `source` as its module, within `timeout_s` (by default the
        section timeout), in the first slot free; its judged tests act on `cases` (JSON:
        `grading.judging`) and judge nothing."""
        with self._changed:
            while not self._free_slots and not self._closed:
                self._changed.wait()
            if self._closed:
                raise RuntimeError("the sandbox was closed: no more runs")
            slot = self._free_slots.pop(0)
            zygote = self._zygotes.get(slot)
            if zygote is None or zygote.process.poll() is not None:  # started, or again
                zygote = self._zygotes[slot] = self._zygote(slot)
        run_dir = Path(tempfile.mkdtemp(prefix=f"s{section.number}-", dir=self.runs / str(slot)))
        try:
            return self._run(zygote, slot, run_dir, section, source,
                             self.limits.section_timeout_s if timeout_s is None else timeout_s,
                             cases)
        finally:
            try:
                remove_tree(str(run_dir))
            finally:
                with self._changed:
                    self._free_slots.append(slot)
                    self._changed.notify_all()

    def _run(self, zygote: Zygote, slot: int, run_dir: Path, section: Section, source: bytes,
             timeout_s: float, cases: bytes) -> Outcome:
        uid = gid = self.uids.free[slot] if self.uids else os.getuid()
        inside = f"/runs/{run_dir.name}" if self.mode == "bwrap" else str(run_dir)
        scratch = f"/scratch/{run_dir.name}" if self.mode == "bwrap" else f"{run_dir}/scratch"
        write_tree(run_dir, {}, gid, 0o750)  # its own copy, its uid's group's alone
        write_tree(run_dir / "course", self.pristine.course(), gid, 0o750)
        (run_dir / "module.py").write_bytes(source)
        (run_dir / "cases.json").write_bytes(cases)
        files = {f"impl/{section.file_name}": run_dir / "module.py",
                 "cases.json": run_dir / "cases.json",
                 **{f"cache/{name}": path for name, path in self.cache_files.items()}}
        records, records_end = os.pipe()
        fds = [records_end, os.open(run_dir / "output.txt", os.O_RDWR | os.O_CREAT, 0o600),
               *([os.open(self.cpu.folders[slot] / "cgroup.procs", os.O_WRONLY)]
                 if self.cpu_share == "cgroup" else []),
               *(os.open(path, os.O_RDONLY) for path in files.values())]
        argv = ["tests/sections", "--impl", f"{scratch}/impl", "--act-cases",
                f"{scratch}/cases.json", "--section", str(section.number), "-c", "pytest.ini",
                "--rootdir", ".", "--timeout", str(self.limits.test_timeout_s), "--tb=line",
                "-q", "-W", "ignore::pytest.PytestAssertRewriteWarning"]
        env = {**FIXED_ENV, "HOME": f"{scratch}/home", "TMPDIR": f"{scratch}/tmp",
               "MPLCONFIGDIR": f"{scratch}/tmp", "TORCHINDUCTOR_CACHE_DIR": f"{scratch}/tmp",
               "HYPOTHESIS_STORAGE_DIRECTORY": f"{scratch}/tmp", CACHE_ENV_VAR: f"{scratch}/cache"}
        outcome = zygote.run({"uid": uid, "gid": gid, "course": f"{inside}/course",
                              "scratch": scratch, "argv": argv, "env": env,
                              "files": list(files), "writable": self.writable,
                              "limits": self.limits.rlimits(self.uids is not None),
                              "cgroup": self.cpu_share == "cgroup"}, fds, records, timeout_s)
        with open(run_dir / "output.txt", "rb") as output:
            output.seek(max(0, os.fstat(output.fileno()).st_size - (1 << 16)))
            outcome.output_tail = output.read().decode(errors="replace")
        return outcome

    def close(self) -> None:
        with self._changed:
            self._closed, zygotes, self._zygotes = True, self._zygotes, {}
            self._changed.notify_all()
        for zygote in zygotes.values():
            zygote.close()
        if self.cpu:
            self.cpu.close()
        try:
            remove_tree(str(self.runs))
        except OSError:
            pass  # a later grader's start clears what its uids left
