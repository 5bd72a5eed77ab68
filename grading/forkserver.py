"""A fork server: one trusted process that imports torch, pytest and hypothesis once, then
forks a fresh child for every run, so that grading one section starts in about a second
instead of the three that importing torch costs.

    python -m grading.forkserver [MODULE...]    # imports the MODULEs; then, spoken to through
                                                # stdin and stdout by `sandbox.ForkServer`

Requests and replies are JSON lines. A request names an id, the module to run as
`python -m MODULE ARGV...` would, the child's working directory, its whole environment,
where its stdout and stderr go, its resource limits, the files that its streams fill, and
its isolation (`grading.isolation`; none when absent):

    {"op": "spawn", "id": 7, "module": "pytest", "argv": [...], "cwd": "...", "env": {...},
     "output": "/path/output.txt", "limits": {"RLIMIT_AS": 4294967296, ...},
     "streams": {"3": "/path/records.jsonl", "4": "/path/flags.jsonl"}, "stream_bytes": N,
     "isolation": {"mode": "namespaces", ...}}
        -> {"id": 7, "pid": 1234}                 (or {"id": 7, "error": "..."})
        -> {"id": 7, "status": 256, "entered": true}    when it has ended (os.wait status;
                                                  entered: its isolation was set up)
    {"op": "kill", "id": 7}                       SIGKILL to all of it, if it runs

A stream is a pipe: the run writes to its descriptor (3, 4) and the server copies what
comes, up to `stream_bytes`, into a file the run cannot reach, so nothing a run wrote can be
rewritten or erased after it was written. In namespaces mode the forked child unshares and
forks the run's process, pid 1 of its pid namespace, which the server (a subreaper) then
holds as its own child: killing it kills everything the run started. In uid mode all of the
run's uid is killed; otherwise, its process group. When stdin closes, the server kills every
run and exits.
"""

from __future__ import annotations

import fcntl
import gc
import importlib
import json
import os
import resource
import runpy
import selectors
import signal
import sys
import tempfile
import traceback

from grading import isolation

POLL_SECONDS = 0.05
CHUNK = 1 << 16
STATUS_FD = 5  # the child's line to the server: "pid N", then "entered", then closed
FIRST_FREE_FD = 6
SPARE_FDS = 64


def _reply(message: dict) -> None:
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


class Run:
    """One spawned run: the child forked for it, the process that runs it (the same, or in
    namespaces mode the child's child), its status line and its streams."""

    def __init__(self, request: dict, child: int, status: int, streams: dict[int, list]):
        self.id, self.child = request["id"], child
        self.spec = request.get("isolation") or {"mode": "none"}
        self.runner: int | None = None
        self.status_fd, self.pending = status, b""
        self.entered = False
        self.streams = streams  # read end -> [file descriptor, bytes it may still take]
        self.child_status: int | None = None

    def read_status(self) -> bool:
        """Take in what the status line says; False once it is closed."""
        try:
            chunk = os.read(self.status_fd, 4096)
        except BlockingIOError:
            return True
        self.pending += chunk
        *lines, self.pending = self.pending.split(b"\n")
        for line in lines:
            if line.startswith(b"pid ") and self.runner is None:
                self.runner = int(line[4:])
                _reply({"id": self.id, "pid": self.runner})
            elif line == b"entered":
                self.entered = True
        return bool(chunk)

    def kill(self) -> None:
        mode = self.spec["mode"]
        if self.runner is not None:
            _signal(lambda: os.kill(self.runner, signal.SIGKILL))
        _signal(lambda: os.killpg(self.child, signal.SIGKILL))  # its group, until it left
        if mode == "uid":
            isolation.kill_uid(self.spec["uid"])


def _signal(send) -> None:
    try:
        send()
    except (ProcessLookupError, PermissionError):
        pass


def _copy(read_fd: int, target: list, until_empty: bool = False) -> bool:
    """Copy what the pipe holds into its file, up to its cap (the rest is read and dropped,
    so that the run never blocks on it); False at its end. `until_empty`: read on until
    nothing is left to read now."""
    while True:
        try:
            chunk = os.read(read_fd, CHUNK)
        except BlockingIOError:
            return True
        kept = chunk[: max(0, target[1])]
        if kept:
            os.write(target[0], kept)
            target[1] -= len(kept)
        if not chunk:
            return False
        if not until_empty:
            return True


def _open_new(path: str) -> int:
    return os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC,
                   0o600)


def _child(request: dict, status: int, streams: dict[int, int], server_paths: set[str]) -> None:
    """In the forked child: take on the request's files, isolation, limits and environment,
    run its module, and leave with its exit status. Never returns."""
    exit_now = os._exit  # the submission may replace os._exit; this child keeps its own
    code = 1
    try:
        os.setpgid(0, 0)
        signal.signal(signal.SIGINT, signal.default_int_handler)
        output = os.open(request["output"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC
                         | os.O_NOFOLLOW, 0o600)
        kept = {number: fcntl.fcntl(fd, fcntl.F_DUPFD, SPARE_FDS)  # out of the way of 0..5
                for number, fd in [*streams.items(), (STATUS_FD, status)]}
        os.dup2(os.open(os.devnull, os.O_RDONLY), 0)
        os.dup2(output, 1)
        os.dup2(output, 2)
        for number, fd in kept.items():
            os.dup2(fd, number, inheritable=False)  # the run's own, not its subprocesses'
        os.closerange(FIRST_FREE_FD, os.sysconf("SC_OPEN_MAX"))  # nothing of the server's
        spec = request.get("isolation") or {"mode": "none"}
        if spec["mode"] == "namespaces":
            isolation.unshare(spec)
            runner = os.fork()
            if runner:  # its process is pid 1 of the new namespace; the server adopts it
                os.write(STATUS_FD, f"pid {runner}\n".encode())
                exit_now(0)
        else:
            os.write(STATUS_FD, f"pid {os.getpid()}\n".encode())
        isolation.enter(spec)
        for name, value in request["limits"].items():
            resource.setrlimit(getattr(resource, name), (value, value))
        os.chdir(request["cwd"])
        os.environ.clear()
        os.environ.update(request["env"])
        tempfile.tempdir = None  # read $TMPDIR again
        # As `python -m` would: the working directory first, and nothing of the server's.
        sys.path[:] = [request["cwd"], *(p for p in sys.path if p not in server_paths)]
        for name in [m for m in sys.modules if m.split(".")[0] == "grading"]:
            del sys.modules[name]
        sys.argv = [request["module"], *request["argv"]]
        os.write(STATUS_FD, b"entered\n")
        os.close(STATUS_FD)
        runpy.run_module(request["module"], run_name="__main__", alter_sys=True)
        code = 0
    except SystemExit as exit:
        code = exit.code if isinstance(exit.code, int) else (0 if exit.code is None else 1)
    except BaseException:
        traceback.print_exc()
    finally:
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except Exception:  # a stream the child broke must not keep it alive
                pass
        exit_now(code)


class Server:
    def __init__(self) -> None:
        self.selector = selectors.DefaultSelector()
        self.runs: dict[int, Run] = {}  # request id -> run
        self.server_paths = {"", os.getcwd()}

    def spawn(self, request: dict) -> None:
        ends = {}
        try:
            for number, path in request.get("streams", {}).items():
                read, write = os.pipe()
                os.set_blocking(read, False)
                ends[int(number)] = (read, write, _open_new(path))
            status_read, status_write = os.pipe()
            os.set_blocking(status_read, False)
            sys.stdout.flush()
            child = os.fork()
        except OSError as err:
            for read, write, target in ends.values():
                for fd in (read, write, target):
                    os.close(fd)
            _reply({"id": request["id"], "error": f"cannot fork: {err}"})
            return
        if child == 0:
            _child(request, status_write, {n: w for n, (_, w, _) in ends.items()},
                   self.server_paths)
        os.close(status_write)
        for _, write, _ in ends.values():
            os.close(write)
        try:
            os.setpgid(child, child)  # also here: the child may not have got there yet
        except OSError:
            pass
        cap = int(request.get("stream_bytes", 1 << 24))
        run = Run(request, child, status_read,
                  {read: [target, cap] for read, _, target in ends.values()})
        self.runs[run.id] = run
        self.selector.register(status_read, selectors.EVENT_READ, (run, None))
        for read in run.streams:
            self.selector.register(read, selectors.EVENT_READ, (run, read))

    def _close_stream(self, run: Run, read: int) -> None:
        self.selector.unregister(read)
        os.close(read)
        os.close(run.streams.pop(read)[0])

    def _close_status(self, run: Run) -> None:
        if run.status_fd is not None:
            self.selector.unregister(run.status_fd)
            os.close(run.status_fd)
            run.status_fd = None

    def readable(self, run: Run, read: int | None) -> None:
        if read is None:
            if not run.read_status():
                self._close_status(run)
        elif not _copy(read, run.streams[read]):
            self._close_stream(run, read)

    def finish(self, run: Run, status: int) -> None:
        """The run's process has ended and every process of it is killed: take in the rest of
        its streams (what a process that escaped, in mode none, still holds open is left),
        and say how it ended."""
        if run.status_fd is not None:
            run.read_status()
            self._close_status(run)
        for read in list(run.streams):
            _copy(read, run.streams[read], until_empty=True)
            self._close_stream(run, read)
        del self.runs[run.id]
        _reply({"id": run.id, "status": status, "entered": run.entered})

    def reap(self) -> None:
        """Reap every child that has ended: a run's process, a child that forked one and
        left, or an orphan of a run adopted by this subreaper."""
        for run in self.runs.values():  # a runner's pid may be waiting on its line
            if run.runner is None and run.status_fd is not None:
                self.readable(run, None)
        while True:
            try:
                info = os.waitid(os.P_ALL, 0, os.WEXITED | os.WNOHANG | os.WNOWAIT)
            except ChildProcessError:
                return
            if info is None:
                return
            pid = info.si_pid
            by_runner = next((r for r in self.runs.values() if r.runner == pid), None)
            by_child = next((r for r in self.runs.values() if r.child == pid), None)
            if by_runner is not None:
                by_runner.kill()  # before reaping: its pid cannot be reused meanwhile
                _, status = os.waitpid(pid, 0)
                self.finish(by_runner, status)
                continue
            _, status = os.waitpid(pid, 0)
            if by_child is not None:
                by_child.child_status = status
                if by_child.runner is None:
                    if by_child.status_fd is not None:
                        by_child.read_status()
                    if by_child.runner is None:  # it failed before it forked the run
                        by_child.kill()
                        self.finish(by_child, status)

    def kill(self, request_id: int) -> None:
        if request_id in self.runs:
            self.runs[request_id].kill()

    def close(self) -> None:
        for run in list(self.runs.values()):
            run.kill()


def serve(preload: list[str]) -> None:
    for name in preload:  # imported once here, inherited by every child
        try:
            importlib.import_module(name)
        except ImportError:  # only ever a speed-up: the child imports what it needs
            pass
    gc.freeze()  # what is loaded now is never collected: no child's collections walk it
    if sys.platform == "linux":
        isolation.become_subreaper()
    server = Server()
    stdin = sys.stdin.fileno()
    server.selector.register(stdin, selectors.EVENT_READ, None)
    pending = b""
    open_ = True
    while open_:
        for key, _ in server.selector.select(timeout=POLL_SECONDS):
            if key.data is not None:
                server.readable(*key.data)
                continue
            chunk = os.read(stdin, 1 << 16)
            if not chunk:
                open_ = False
                break
            pending += chunk
            *lines, pending = pending.split(b"\n")
            for line in lines:
                request = json.loads(line)
                if request["op"] == "kill":
                    server.kill(request["id"])
                else:
                    server.spawn(request)
        server.reap()
    server.close()


if __name__ == "__main__":
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the grader decides when its children stop
    serve(sys.argv[1:])
