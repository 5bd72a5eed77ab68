"""A fork server: one trusted process that imports torch, pytest and hypothesis once, then
forks a fresh child for every run, so that grading one section starts in about a second
instead of the three that importing torch costs.

    python -m grading.forkserver [MODULE...]    # imports the MODULEs; then, spoken to through
                                                # stdin and stdout by `sandbox.ForkServer`

Requests and replies are JSON lines. A request names an id, the module to run as
`python -m MODULE ARGV...` would, the child's working directory, its whole environment,
where its stdout and stderr go, and its resource limits:

    {"op": "spawn", "id": 7, "module": "pytest", "argv": [...], "cwd": "...", "env": {...},
     "output": "/path/output.txt", "limits": {"RLIMIT_AS": 4294967296, ...}}
        -> {"id": 7, "pid": 1234}                 (or {"id": 7, "error": "..."})
        -> {"id": 7, "status": 256}               when it has ended (os.wait status)
    {"op": "kill", "id": 7}                       SIGKILL to its process group, if it runs

Each child leads its own process group. When a child ends, the server kills what is left
of its group before it reaps the child, so nothing it started outlives it and no process
id is reused in between. When stdin closes, the server kills every child and exits.
"""

from __future__ import annotations

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

POLL_SECONDS = 0.05


def _reply(message: dict) -> None:
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


def _run_child(request: dict, server_paths: set[str]) -> None:
    """In the forked child: take on the request's limits, files and environment, run its
    module, and leave with its exit status. Never returns."""
    code = 1
    try:
        os.setpgid(0, 0)
        signal.signal(signal.SIGINT, signal.default_int_handler)
        for name, value in request["limits"].items():
            resource.setrlimit(getattr(resource, name), (value, value))
        output = os.open(request["output"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        os.dup2(os.open(os.devnull, os.O_RDONLY), 0)
        os.dup2(output, 1)
        os.dup2(output, 2)
        os.closerange(3, os.sysconf("SC_OPEN_MAX"))  # the server's files are not the child's
        os.chdir(request["cwd"])
        os.environ.clear()
        os.environ.update(request["env"])
        tempfile.tempdir = None  # read $TMPDIR again
        # As `python -m` would: the working directory first, and nothing of the server's.
        sys.path[:] = [request["cwd"], *(p for p in sys.path if p not in server_paths)]
        for name in [m for m in sys.modules if m.split(".")[0] == "grading"]:
            del sys.modules[name]
        sys.argv = [request["module"], *request["argv"]]
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
        os._exit(code)


def _kill_group(pid: int) -> None:
    try:
        os.killpg(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def serve(preload: list[str]) -> None:
    for name in preload:  # imported once here, inherited by every child
        try:
            importlib.import_module(name)
        except ImportError:  # only ever a speed-up: the child imports what it needs
            pass
    gc.freeze()  # what is loaded now is never collected: no child's collections walk it
    server_paths = {"", os.getcwd()}
    children: dict[int, int] = {}  # pid -> request id
    by_id: dict[int, int] = {}  # request id -> pid
    selector = selectors.DefaultSelector()
    stdin = sys.stdin.fileno()
    selector.register(stdin, selectors.EVENT_READ)
    pending = b""
    while True:
        if selector.select(timeout=POLL_SECONDS):
            chunk = os.read(stdin, 1 << 16)
            if not chunk:
                break
            pending += chunk
            *lines, pending = pending.split(b"\n")
            for line in lines:
                request = json.loads(line)
                if request["op"] == "kill":
                    if request["id"] in by_id:
                        _kill_group(by_id[request["id"]])
                    continue
                sys.stdout.flush()
                try:
                    pid = os.fork()
                except OSError as err:
                    _reply({"id": request["id"], "error": f"cannot fork: {err}"})
                    continue
                if pid == 0:
                    _run_child(request, server_paths)
                try:
                    os.setpgid(pid, pid)  # also here: the child may not have got there yet
                except OSError:
                    pass
                children[pid], by_id[request["id"]] = request["id"], pid
                _reply({"id": request["id"], "pid": pid})
        for pid in list(children):
            if os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is None:
                continue
            _kill_group(pid)  # before reaping: the group's id cannot be reused meanwhile
            _, status = os.waitpid(pid, 0)
            request_id = children.pop(pid)
            del by_id[request_id]
            _reply({"id": request_id, "status": status})
    for pid in children:
        _kill_group(pid)


if __name__ == "__main__":
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the grader decides when its children stop
    serve(sys.argv[1:])
