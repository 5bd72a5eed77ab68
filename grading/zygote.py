"""Inside a sandbox: a server that imports torch, pytest and hypothesis once and forks a child
per run, so that a run starts in a fraction of a second rather than in the seconds those
imports take. It never reads a submission or the reference: each child would inherit it.
Its stdin is a SOCK_SEQPACKET socket from `grading.sandbox`, on which it takes

    {"uid", "gid", "course", "scratch", "argv", "env", "limits", "cgroup", "files",
     "writable"} with descriptors: the records pipe, the output file, the
        run's cgroup.procs (where "cgroup"), then one per name of "files" (its module first),
        read-only
    -> {"status": os.waitpid's, "left": what could not be removed} once the child has ended
       and its scratch, and what its uid left in the folders "writable", are removed
    {"kill": true} -> SIGKILL to the run's child

The child joins its cgroup, becomes the run's uid, copies its files into its scratch, takes
the records pipe as descriptor 3 and the output as 1 and 2, sets its limits and seeds,
installs the system-call filter (`filter_program`) and runs pytest with `Records`.
"""

from __future__ import annotations

import builtins
import ctypes
import errno
import gc
import importlib
import json
import os
import random
import resource
import selectors
import shutil
import signal
import socket
import stat
import struct
import sys
import tempfile
import traceback

import pytest

# torch._dynamo too: torch imports it at a run's first optimizer or meta tensor (the tests of
# sections 3, 4, 7 and 8), 1.3 s of CPU that every such run paid again.
PRELOADED = ("numpy", "numpy.testing", "torch", "torch.nn", "torch.nn.functional",
             "_pytest.python", "hypothesis", "hypothesis.strategies",
             "hypothesis.extra._patching", "pytest_timeout", "tqdm.auto", "matplotlib.figure",
             "torch._dynamo")
RECORDS_FD, SEED = 3, 0
SHARED_WRITABLE = ("/tmp", "/var/tmp", "/dev/shm", "/run/lock", "/var/lock", "/dev/mqueue")
# Written out (classic BPF, about 50 lines) rather than through libseccomp: its own Python
# binding is Debian's python3-seccomp, built for the system's Python alone, and PyPI's
# ctypes wrapper of it (pyseccomp, about 500 lines) is a larger dependency than these lines.
# The filter (seccomp, x86-64) refuses (EPERM): new processes and programs (threads are
# allowed), other processes' memory, sockets, IPC, keyrings, namespaces, mounts, io_uring and
# Linux AIO, BPF, perf, every way of locking or watching a file another run could open too,
# and every way of reading or steering the page cache that runs share (which pages of a
# shared file are cached: a channel between two runs, even one after the other). By number:
# fork vfork execve execveat ptrace process_vm_readv/writev flock inotify_init, add_watch,
# init1 fanotify_init, mark socket socketpair shmget shmat msgget semget mq_open keyctl
# add_key request_key mincore pidfd_open pidfd_getfd unshare setns mount userfaultfd
# perf_event_open bpf io_uring_setup, enter, register kcmp fadvise64 readahead cachestat
# io_setup process_madvise.
DENIED = (57, 58, 59, 322, 101, 310, 311, 73, 253, 254, 294, 300, 301, 41, 53, 29, 30, 68, 64,
          240, 250, 248, 249, 27, 434, 438, 272, 308, 165, 323, 298, 321, 425, 426, 427, 312,
          221, 187, 451, 206, 440)
CLONE, CLONE3, CLONE_THREAD, AUDIT_ARCH_X86_64 = 56, 435, 0x10000, 0xC000003E
# Refused by argument: (call, argument's index, values it may not equal, bits it may not set).
# fcntl's locks, leases and F_NOTIFY; madvise's MADV_COLD and MADV_PAGEOUT (which evict a
# shared file's pages); preadv2 and pwritev2 with RWF_NOWAIT (which tell a cached page from
# one that is not).
BY_ARGUMENT = ((72, 1, (5, 6, 7, 36, 37, 38, 1024, 1026), 0), (28, 2, (20, 21), 0),
               (327, 5, (), 0x8), (328, 5, (), 0x8))
LD, JEQ, JGE, JSET, RET, ALLOW, KILL = 0x20, 0x15, 0x35, 0x45, 0x06, 0x7FFF0000, 0x80000000


def _op(code: int, k: int, jt: int = 0, jf: int = 0) -> bytes:
    return struct.pack("HBBI", code, jt, jf, k)


def _refuse(number: int = errno.EPERM) -> bytes:
    return _op(RET, 0x00050000 | number)


def _by_argument(number: int, argument: int, values: tuple[int, ...], bits: int) -> list[bytes]:
    """Call `number` refused when its argument `argument` (its low 32 bits) is one of `values`
    or has one of `bits` set, allowed otherwise: a block that ends in a return."""
    tests = [*((JEQ, value) for value in values), *([(JSET, bits)] if bits else [])]
    body = [_op(LD, 16 + 8 * argument)]
    body += [_op(code, k, len(tests) - i, 0) for i, (code, k) in enumerate(tests)]
    body += [_op(RET, ALLOW), _refuse()]
    return [_op(JEQ, number, 0, len(body)), *body]


def filter_program() -> bytes:
    """Classic BPF over `struct seccomp_data` (nr at 0, arch at 4, args at 16 + 8 i): another
    architecture is killed, the x32 calls (nr >= 2**30) refused."""
    program = [_op(LD, 4), _op(JEQ, AUDIT_ARCH_X86_64, 1, 0), _op(RET, KILL), _op(LD, 0),
               _op(JGE, 1 << 30, 0, 1), _refuse()]
    for number in DENIED:
        program += [_op(JEQ, number, 0, 1), _refuse()]
    program += [_op(JEQ, CLONE3, 0, 1), _refuse(errno.ENOSYS)]  # glibc falls back to clone
    for rule in BY_ARGUMENT:
        program += _by_argument(*rule)
    program += [_op(JEQ, CLONE, 0, 3), _op(LD, 16), _op(JSET, CLONE_THREAD, 1, 0), _refuse()]
    return b"".join([*program, _op(RET, ALLOW)])


def install_filter() -> None:
    """no_new_privs, then the filter, for this process and every thread it makes."""
    program = ctypes.create_string_buffer(filter_program())
    fprog = struct.pack("HxxxxxxP", len(program.raw) // 8, ctypes.addressof(program))
    libc = ctypes.CDLL(None, use_errno=True)
    for option, arg in ((38, 1), (22, 2)):  # PR_SET_NO_NEW_PRIVS, PR_SET_SECCOMP (FILTER)
        pointer = ctypes.c_char_p(fprog) if option == 22 else None
        if libc.prctl(option, ctypes.c_ulong(arg), pointer, ctypes.c_ulong(0),
                      ctypes.c_ulong(0)) != 0:
            raise OSError(ctypes.get_errno(), "prctl: the run's system-call filter")


class Records:
    """The run's pytest plugin: one JSON line per test to the records pipe when it has ended
    (its status, the builtin class of its first error, the line of the module under test
    where that was raised, its errno's name, the `output_digest` of a wrong tensor), an act
    line per case that a judged test acted on, with its data (`grading.judging` judges it),
    then an end line with pytest's exit status. No text of the run's own."""

    def __init__(self, module_file: str, status_of, stub_error, digest_of, _write=os.write,
                 _dumps=json.dumps) -> None:
        self.module_file, self.status_of, self.stub_error = module_file, status_of, stub_error
        self.digest_of = digest_of
        self._write, self._dumps, self.tests = _write, _dumps, {}

    def send(self, line: dict) -> None:
        self._write(RECORDS_FD, (self._dumps(line) + "\n").encode())

    def _line_of(self, error: BaseException) -> int | None:
        if isinstance(error, SyntaxError) and error.filename == self.module_file:
            return error.lineno
        line, frame = None, error.__traceback__
        while frame is not None:
            line = frame.tb_lineno if frame.tb_frame.f_code.co_filename == self.module_file \
                else line
            frame = frame.tb_next
        return line

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_makereport(self, item, call):
        report = yield
        earlier = self.tests.get(item.nodeid)
        if report.skipped or (report.passed and report.when != "call") or (
                earlier and earlier["status"] != "passed"):
            return report  # a test's first failure is its result
        error = call.excinfo.value if call.excinfo is not None else None
        cause = (self.stub_error(error) or error) if error is not None else None
        name = next((c.__name__ for c in type(cause).__mro__
                     if vars(builtins).get(c.__name__) is c), "") if cause else ""
        self.tests[item.nodeid] = {
            "kind": "test", "nodeid": item.nodeid, "status": self.status_of(report, error),
            "error": name, "line": self._line_of(cause) if cause else None,
            "errno": errno.errorcode.get(cause.errno) if isinstance(
                getattr(cause, "errno", None), int) else None,
            "digest": self.digest_of(error)}
        return report

    def pytest_act_output(self, item, index: int, data) -> bool:
        self.send({"kind": "act", "nodeid": item.nodeid, "index": index, "data": data})
        return True

    def pytest_runtest_logfinish(self, nodeid: str) -> None:
        if nodeid in self.tests:
            self.send(self.tests.pop(nodeid))

    def pytest_sessionfinish(self, exitstatus: int) -> None:
        self.send({"kind": "end", "exitstatus": int(exitstatus)})


def _child(request: dict, fds: list[int], site: list[str]) -> None:
    """One run. Never returns."""
    exit_now, code = os._exit, 1  # the submission may replace os._exit; not for this child
    try:
        records, output, *files = fds
        if request["cgroup"]:
            os.write(files[0], b"0")
            os.close(files.pop(0))
        os.setsid()
        signal.signal(signal.SIGINT, signal.default_int_handler)
        scratch, uid, gid = request["scratch"], request["uid"], request["gid"]
        os.mkdir(scratch, 0o700)
        os.chown(scratch, uid, gid)
        if os.getuid() != uid:
            os.setgroups([])
            os.setresgid(gid, gid, gid)
            os.setresuid(uid, uid, uid)  # every capability goes with uid 0
        for folder in ("impl", "home", "tmp", "cache"):
            os.mkdir(os.path.join(scratch, folder), 0o700)
        for name, fd in zip(request["files"], files, strict=True):
            with open(fd, "rb") as source, open(os.path.join(scratch, name), "xb") as target:
                shutil.copyfileobj(source, target)
        for fd, target in ((os.open(os.devnull, os.O_RDONLY), 0), (output, 1), (output, 2),
                           (records, RECORDS_FD)):
            os.dup2(fd, target, inheritable=target != RECORDS_FD)
        os.closerange(RECORDS_FD + 1, os.sysconf("SC_OPEN_MAX"))
        for name, value in request["limits"].items():
            resource.setrlimit(getattr(resource, name), (value, value))
        os.chdir(request["course"])
        os.environ.clear()
        os.environ.update(request["env"])
        tempfile.tempdir = None  # read $TMPDIR again
        sys.path[:] = [request["course"], *site]  # as `python -m pytest` there would have it
        import numpy
        import torch

        from course.diagnose import digest_of
        from course.results import status_of, stub_error

        random.seed(SEED)  # the same draws in every run, whichever zygote forked it
        numpy.random.seed(SEED)
        torch.manual_seed(SEED)
        torch.set_num_threads(1)
        plugin = Records(os.path.realpath(os.path.join(scratch, request["files"][0])),
                         status_of, stub_error, digest_of)
        install_filter()
        plugin.send({"kind": "begin"})  # isolated: whatever comes next is the run's
        code = pytest.main(request["argv"], plugins=[plugin])
    except SystemExit as exit_:
        code = exit_.code if isinstance(exit_.code, int) else 1
    except BaseException:
        traceback.print_exc()
    finally:
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except Exception:  # a stream the run broke must not keep its process alive
                pass
        exit_now(int(code))


def _enter(name: str, folder: int) -> int:
    """A descriptor of the folder `name` in `folder`, never through a link; a folder its
    owner closed to itself (chmod 0) is opened up first (the grader's own runs, mode none)."""
    flags = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
    try:
        return os.open(name, flags, dir_fd=folder)
    except PermissionError:
        os.chmod(name, 0o700, dir_fd=folder)
        return os.open(name, flags, dir_fd=folder)


def _clear(folder: int) -> list[str]:
    """Remove every entry of `folder` but its folders, whose names it returns."""
    inner = []
    with os.scandir(folder) as entries:
        for entry in list(entries):
            if entry.is_dir(follow_symlinks=False):
                inner.append(entry.name)
            else:
                os.unlink(entry.name, dir_fd=folder)
    return inner


def remove_tree(path: str) -> None:
    """Remove `path` and everything under it, following no link, however deep a run made it:
    one folder open at a time, by its name in its parent, so that neither Python's recursion,
    nor the length of a path, nor the number of open files limits the depth. Its time grows
    with the number of entries, which a run can make only within its time and scratch.

    Raises:
        OSError: something could not be removed.
    """
    parent = os.open(os.path.dirname(path) or ".", os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        if not stat.S_ISDIR(os.lstat(path).st_mode):  # a file, or a link
            os.unlink(path)
            return
        folder = _enter(os.path.basename(path), parent)
    except FileNotFoundError:
        return
    finally:
        os.close(parent)
    names, pending = [], [_clear(folder)]  # the folders entered; those left at each depth
    try:
        while pending:
            if pending[-1]:
                name = pending[-1].pop()
                inner = _enter(name, folder)
                os.close(folder)
                folder, names = inner, [*names, name]
                pending.append(_clear(folder))
                continue
            pending.pop()
            if names:
                parent = os.open("..", os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC, dir_fd=folder)
                os.close(folder)
                folder = parent
                os.rmdir(names.pop(), dir_fd=folder)
    finally:
        os.close(folder)
    os.rmdir(path)


def writable_folders(tops: tuple[str, ...] = SHARED_WRITABLE, most: int = 1000) -> list[str]:
    """The folders under `tops` that every user may write to, and `tops` themselves where
    they are: where a run in uid mode can leave something. Found by the grader once, walking
    only folders that every user may write to, with no recursion.

    Raises:
        RuntimeError: more than `most` of them, which the server would scan after every run.
    """
    found, todo = [], [top for top in tops if os.path.isdir(top) and not os.path.islink(top)]
    while todo:
        folder = todo.pop()
        try:
            if not os.lstat(folder).st_mode & stat.S_IWOTH:
                continue
            found.append(folder)
            with os.scandir(folder) as entries:
                todo += [e.path for e in entries if e.is_dir(follow_symlinks=False)]
        except OSError:
            continue
        if len(found) > most:
            raise RuntimeError(f"more than {most} folders under {', '.join(tops)} are writable "
                               f"by every user (one is {folder}): remove those left behind")
    return sorted(found)


def remove_owned(uids: set[int], writable: list[str]) -> list[str]:
    """Remove what `uids` left in the folders `writable` (uid mode: the only places a run's
    uid can leave anything but its scratch); what could not be removed, with why."""
    failed = []
    for folder in writable:
        try:
            owned = [e.path for e in os.scandir(folder)
                     if e.stat(follow_symlinks=False).st_uid in uids]
        except OSError:
            continue
        for path in owned:
            try:
                remove_tree(path)
            except OSError as err:
                failed.append(f"{path}: {err}")
    return failed


def serve(control: socket.socket) -> None:
    site = [p for p in sys.path if p.startswith((sys.prefix, sys.base_prefix))]
    runs: dict[int, dict] = {}  # pid -> its request
    selector = selectors.DefaultSelector()
    selector.register(control, selectors.EVENT_READ)
    while True:
        if selector.select(timeout=0.05):
            message, fds, _, _ = socket.recv_fds(control, 1 << 20, 64)
            if not message:
                break
            request = json.loads(message)
            if request.get("kill"):
                for pid in runs:
                    os.kill(pid, signal.SIGKILL)
                continue
            pid = os.fork()
            if pid == 0:
                control.close()
                _child(request, fds, site)
            for fd in fds:
                os.close(fd)
            runs[pid] = request
        while runs and (ended := os.waitpid(-1, os.WNOHANG))[0]:
            run = runs.pop(ended[0])
            left = remove_owned({run["uid"]}, run["writable"])
            try:
                remove_tree(run["scratch"])
            except OSError as err:
                left.append(f"{run['scratch']}: {err}")
            control.send(json.dumps({"status": ended[1], "left": left}).encode())
    for pid in runs:
        os.kill(pid, signal.SIGKILL)


def main() -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the grader decides when its runs stop
    for name in PRELOADED:  # imported once, here, and inherited by every child
        importlib.import_module(name)
    gc.freeze()  # what is loaded now is never collected: no child's collections walk it
    serve(socket.socket(fileno=0))


if __name__ == "__main__":
    main()
