"""The operating system's isolation of one run: what it can see, who it runs as, what dies
with it. The fork server calls it in the child it forks for a run, before the submission's
code is imported; the grader asks `problem(mode)` first, so that it never grades in a mode
this machine cannot give.

    namespaces  (the default) the run gets user, mount, pid, network, IPC and UTS namespaces
                of its own. Its filesystem is a fresh read-only tree: the system (/usr, /etc,
                the Python installation, the virtual environment), its own copy of the tests
                and tooling and its own module, also read-only, and a size-capped tmpfs as its
                only writable space ($HOME, $TMPDIR, /tmp, /dev/shm, the biLM cache). Nothing
                else of the machine is there: no repository, no .git, no work folder, no other
                run, no submission. It has no network (a loopback that is down), runs as an
                unprivileged uid with no capabilities and no_new_privs, cannot make user
                namespaces of its own, and is pid 1 of its pid namespace: when it ends, the
                kernel kills every process it started.
    uid         no namespaces (a container that forbids them): the run gets a uid of its own
                (the grader must be root), no_new_privs, a session of its own, and every process
                of that uid is killed when it ends; it sees what the filesystem lets any user
                see, so the reference must be unreadable to others (`problem` checks that).
    none        the run is the grader's own user, as trusted code (your own reference).

Every run forks from the fork server; in namespaces mode the child unshares (`unshare`),
forks the run's process, which becomes pid 1 of the new pid namespace, and leaves; that
process builds its tree and drops its privileges (`enter`).
"""

from __future__ import annotations

import ctypes
import errno
import os
import platform
import re
import shutil
import signal
import site
import stat
import sys
import sysconfig
from pathlib import Path

MODES = ("namespaces", "uid", "none")
RUN_UID_BASE = 3_000_000  # runs of a root grader: uid = gid = base + slot (one per job)
NPROC_LIMIT = 512  # processes and threads of one run's uid
SYSTEM_DIRS = ("/usr", "/etc")
TOP_LEVEL_LINKS = ("/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")
DEVICES = ("null", "zero", "full", "random", "urandom")
SCRATCH_DIRS = ("home", "tmp", "hypothesis", "cache", "shm")
SCRATCH_INODES = 16384
NAMESPACE_SCRATCH = "/scratch"  # where a run's tmpfs is, in its own tree

CLONE_NEWNS, CLONE_NEWUTS, CLONE_NEWIPC = 0x00020000, 0x04000000, 0x08000000
CLONE_NEWUSER, CLONE_NEWPID, CLONE_NEWNET = 0x10000000, 0x20000000, 0x40000000
MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC = 1, 2, 4, 8
MS_REMOUNT, MS_NOATIME, MS_NODIRATIME, MS_BIND = 32, 1024, 2048, 4096
MS_REC, MS_PRIVATE, MS_RELATIME = 16384, 1 << 18, 1 << 21
MNT_DETACH = 2
PR_SET_DUMPABLE, PR_CAPBSET_DROP, PR_SET_CHILD_SUBREAPER = 4, 24, 36
PR_SET_NO_NEW_PRIVS, PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL = 38, 47, 4
PIVOT_ROOT = {"x86_64": 155, "aarch64": 41, "riscv64": 41}  # its syscall number; glibc has none
LINUX_CAPABILITY_VERSION_3 = 0x20080522
# statvfs flags that a remount must keep: a mount made in a user namespace cannot drop them
KEPT_FLAGS = ((os.ST_NOSUID, MS_NOSUID), (os.ST_NODEV, MS_NODEV), (os.ST_NOEXEC, MS_NOEXEC),
              (os.ST_NOATIME, MS_NOATIME), (os.ST_NODIRATIME, MS_NODIRATIME),
              (os.ST_RELATIME, MS_RELATIME)) if sys.platform == "linux" else ()

_libc = ctypes.CDLL(None, use_errno=True)


def _check(result: int, what: str) -> int:
    if result == -1:
        number = ctypes.get_errno()
        raise OSError(number, f"{what}: {os.strerror(number)}")
    return result


def _bytes(path: str | None) -> bytes | None:
    return None if path is None else os.fsencode(path)


def _mount(source: str | None, target: str, fstype: str | None, flags: int,
           data: str | None = None) -> None:
    _check(_libc.mount(_bytes(source), _bytes(target), _bytes(fstype), ctypes.c_ulong(flags),
                       _bytes(data)), f"mount {source or ''} on {target}")


def _prctl(option: int, value: int = 0) -> None:
    _check(_libc.prctl(option, ctypes.c_ulong(value), ctypes.c_ulong(0), ctypes.c_ulong(0),
                       ctypes.c_ulong(0)), f"prctl({option})")


def _unshare(flags: int) -> None:
    _check(_libc.unshare(flags), "unshare")


def _write(path: str, text: str) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CLOEXEC)
    try:
        os.write(fd, text.encode())
    finally:
        os.close(fd)


def _map_own_ids(uid: int, gid: int) -> None:
    """In a user namespace just made: the one uid and gid of this process, as themselves."""
    _write("/proc/self/setgroups", "deny")
    _write("/proc/self/uid_map", f"{uid} {uid} 1")
    _write("/proc/self/gid_map", f"{gid} {gid} 1")


def become_subreaper() -> None:
    """Orphans of this process's descendants become its children (the fork server's), so
    that it reaps a run's process once the child that forked it has left."""
    _prctl(PR_SET_CHILD_SUBREAPER, 1)


def run_ids(slot: int) -> tuple[int, int]:
    """The uid and gid of the run in `slot`: its own when the grader is root (a fork bomb in
    one run then counts against its own process limit only), the grader's otherwise."""
    if os.geteuid() == 0:
        return RUN_UID_BASE + slot, RUN_UID_BASE + slot
    return os.getuid(), os.getgid()


def system_paths() -> list[str]:
    """What a run sees of the system, read-only, at the same paths: /usr, /etc, the Python
    installation and the virtual environment, wherever they live (a virtual environment's
    own folder, not where its links lead)."""
    wanted = [*SYSTEM_DIRS, sys.base_prefix, sys.base_exec_prefix, sys.prefix, sys.exec_prefix,
              *sysconfig.get_paths().values(), *site.getsitepackages()]
    found: list[str] = []
    for path in sorted({os.path.abspath(p) for p in wanted if os.path.isdir(p)}, key=len):
        if not any(path == kept or path.startswith(kept + os.sep) for kept in found):
            found.append(path)
    return found


# --- in the fork server's child ------------------------------------------------------------


def unshare(spec: dict) -> None:
    """In the forked child, namespaces mode: unshare every namespace (the user namespace too
    when the grader is not root, which the others then need). The child's next child is pid 1
    of the new pid namespace."""
    flags = CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWNET | CLONE_NEWIPC | CLONE_NEWUTS
    unprivileged = os.geteuid() != 0
    _unshare(flags | (CLONE_NEWUSER if unprivileged else 0))
    if unprivileged:
        _map_own_ids(spec["uid"], spec["gid"])


def enter(spec: dict) -> None:
    """In the process that will run the submission: take on `spec`'s isolation. Raises
    OSError when any step fails: a run is never started half-isolated."""
    if spec["mode"] == "namespaces":
        _build_tree(spec)
        _drop_privileges(spec)
    elif spec["mode"] == "uid":
        os.setsid()
        os.chown(spec["scratch"], spec["uid"], spec["gid"])
        _prepare_scratch(spec, spec["scratch"])
        for target, source in spec["files"].items():
            try:
                os.link(source, target)  # the grader's file: the run's uid cannot change it
            except OSError:
                shutil.copyfile(source, target)
        os.umask(0o077)
        _drop_privileges(spec)


def _prepare_scratch(spec: dict, where: str) -> None:
    for name in SCRATCH_DIRS:
        folder = os.path.join(where, name)
        os.makedirs(folder, mode=0o700, exist_ok=True)
        os.chown(folder, spec["uid"], spec["gid"])


def _new(root: str, path: str) -> str:
    return root + path


def _mount_points_below(path: str) -> list[str]:
    """Mount points strictly inside `path`, from this namespace's mount table (where a
    space in a name is written \\040)."""
    found = []
    with open("/proc/self/mountinfo", "rb") as table:
        for line in table:
            point = re.sub(rb"\\([0-7]{3})", lambda m: bytes([int(m[1], 8)]), line.split()[4])
            if os.fsdecode(point).startswith(path.rstrip("/") + "/"):
                found.append(os.fsdecode(point))
    return found


def _remount_read_only(path: str, extra: int = MS_NOSUID | MS_NODEV) -> None:
    flags = MS_BIND | MS_REMOUNT | MS_RDONLY | extra
    kept = os.statvfs(path).f_flag
    for statvfs_flag, mount_flag in KEPT_FLAGS:
        if kept & statvfs_flag:
            flags |= mount_flag
    _mount(None, path, None, flags)


def _bind_read_only(source: str, target: str, extra: int = MS_NOSUID | MS_NODEV) -> None:
    if os.path.isdir(source):
        os.makedirs(target, exist_ok=True)
    else:
        os.makedirs(os.path.dirname(target), exist_ok=True)
        os.close(os.open(target, os.O_WRONLY | os.O_CREAT, 0o600))
    _mount(source, target, None, MS_BIND | MS_REC)
    for point in [target, *_mount_points_below(target)]:
        _remount_read_only(point, extra)


def _layout(spec: dict) -> list[tuple[str, str]]:
    """(path, "bind" or "hide") in the order to mount them: each of spec["hidden"] that lies
    inside a folder bound read-only gets an empty read-only tmpfs over it."""
    binds = [(path, "bind") for path in spec["read_only"]]
    hides = [(path, "hide") for path in spec["hidden"]
             if any(path == bound or path.startswith(bound.rstrip("/") + "/")
                    for bound, _ in binds)]
    return sorted([*binds, *hides], key=lambda entry: (entry[0].count("/"), entry[1] == "bind"))


def _build_tree(spec: dict) -> None:
    """Assemble the run's filesystem on a tmpfs at spec["root"] and pivot into it."""
    new = spec["root"]
    os.umask(0o022)  # the folders made here are the run's way to what is bound on them
    _mount(None, "/", None, MS_REC | MS_PRIVATE)  # nothing done here reaches the machine's
    _mount("tmpfs", new, "tmpfs", MS_NOSUID | MS_NODEV, "size=1m,nr_inodes=4096,mode=0755")
    dev = _new(new, "/dev")
    os.makedirs(dev)
    _mount("tmpfs", dev, "tmpfs", MS_NOSUID | MS_NOEXEC, "size=64k,nr_inodes=64,mode=0755")
    for device in DEVICES:
        _bind_read_only(f"/dev/{device}", f"{dev}/{device}", MS_NOSUID | MS_NOEXEC)
    for name, target in (("fd", "/proc/self/fd"), ("stdin", "/proc/self/fd/0"),
                         ("stdout", "/proc/self/fd/1"), ("stderr", "/proc/self/fd/2")):
        os.symlink(target, f"{dev}/{name}")
    os.makedirs(_new(new, "/proc"))
    _mount("proc", _new(new, "/proc"), "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC)
    # the scratch space, and /tmp and /dev/shm in it, before anything that may lie under /tmp
    scratch = _new(new, NAMESPACE_SCRATCH)
    os.makedirs(scratch)
    _mount("tmpfs", scratch, "tmpfs", MS_NOSUID | MS_NODEV,
           f"size={spec['scratch_mb']}m,nr_inodes={SCRATCH_INODES},mode=0700,"
           f"uid={spec['uid']},gid={spec['gid']}")
    _prepare_scratch(spec, scratch)
    for name, target in (("tmp", "/tmp"), ("shm", "/dev/shm")):
        os.makedirs(_new(new, target), exist_ok=True)
        _mount(f"{scratch}/{name}", _new(new, target), None, MS_BIND)
    # Shallow paths first, so that what lies inside a hidden folder (a virtual environment
    # in the repository, the run's own folders in the work folder) is bound over its cover.
    covers = []
    for path, kind in _layout(spec):
        if kind == "hide":
            os.makedirs(_new(new, path), exist_ok=True)
            _mount("tmpfs", _new(new, path), "tmpfs", MS_NOSUID | MS_NODEV,
                   "size=64k,nr_inodes=1024,mode=0755")
            covers.append(_new(new, path))
        else:
            _bind_read_only(path, _new(new, path))
    for cover in covers:
        _remount_read_only(cover)
    for link in TOP_LEVEL_LINKS:  # /bin -> usr/bin, as on the machine
        if os.path.islink(link) and not os.path.lexists(_new(new, link)):
            os.symlink(os.readlink(link), _new(new, link))
    for target, source in spec["files"].items():
        _bind_read_only(source, _new(new, target))
    old = _new(new, "/.old")
    os.makedirs(old)
    machine = platform.machine()
    if machine not in PIVOT_ROOT:
        raise OSError(errno.ENOSYS, f"pivot_root: no syscall number known for {machine}")
    _check(_libc.syscall(PIVOT_ROOT[machine], _bytes(new), _bytes(old)), "pivot_root")
    os.chdir("/")
    _check(_libc.umount2(b"/.old", MNT_DETACH), "umount the old root")
    os.rmdir("/.old")
    _mount(None, "/", None, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV)


class _CapHeader(ctypes.Structure):
    _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]


class _CapData(ctypes.Structure):
    _fields_ = [("effective", ctypes.c_uint32), ("permitted", ctypes.c_uint32),
                ("inheritable", ctypes.c_uint32)]


def _drop_bounding_set() -> None:
    """No capability can come back, whatever runs later (EPERM: there is none to drop)."""
    last = int(Path("/proc/sys/kernel/cap_last_cap").read_text())
    for capability in range(last + 1):
        try:
            _prctl(PR_CAPBSET_DROP, capability)
        except OSError:
            return


def _drop_privileges(spec: dict) -> None:
    """Become spec's uid and gid with no capability left anywhere, no_new_privs, and (in
    namespaces mode) in a user namespace that can make no other."""
    namespaces = spec["mode"] == "namespaces"
    if os.geteuid() == 0:
        _drop_bounding_set()
        os.setgroups([])
        os.setresgid(spec["gid"], spec["gid"], spec["gid"])
        os.setresuid(spec["uid"], spec["uid"], spec["uid"])  # this clears the capabilities
        if namespaces:  # a user namespace of its own, only to forbid the run any other
            _prctl(PR_SET_DUMPABLE, 1)  # its /proc/self is its own again, to write the maps
            _unshare(CLONE_NEWUSER)
            _map_own_ids(spec["uid"], spec["gid"])
    if namespaces:  # full capabilities in the new user namespace, until dropped below
        _write("/proc/sys/user/max_user_namespaces", "0")
        _drop_bounding_set()
    _libc.prctl(PR_CAP_AMBIENT, ctypes.c_ulong(PR_CAP_AMBIENT_CLEAR_ALL), ctypes.c_ulong(0),
                ctypes.c_ulong(0), ctypes.c_ulong(0))  # fails only where there is no such set
    header = _CapHeader(LINUX_CAPABILITY_VERSION_3, 0)
    _check(_libc.capset(ctypes.byref(header), (_CapData * 2)()), "capset")
    _prctl(PR_SET_NO_NEW_PRIVS, 1)
    if os.geteuid() == 0 or os.getuid() != spec["uid"]:
        raise OSError(errno.EPERM, "the run is still root, or not its own uid")


# --- the grader's side --------------------------------------------------------------------


def kill_uid(uid: int) -> None:
    """Kill every process of `uid` (uid mode): a helper becomes that uid and signals all it
    may, which is exactly them, until none is left. Needs root."""
    helper = os.fork()
    if helper == 0:
        try:
            os.setresuid(uid, uid, uid)
            for _ in range(1000):
                os.kill(-1, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        finally:
            os._exit(0)
    os.waitpid(helper, 0)


def reachable_by_others(path: Path) -> bool:
    """Whether a user who is neither `path`'s owner nor in its group, and not root, can read
    it: every folder above it searchable by others, and it readable (and searchable)."""
    path = Path(path).resolve()
    for parent in reversed(path.parents):
        if not os.stat(parent).st_mode & stat.S_IXOTH:
            return False
    mode = os.stat(path).st_mode
    needed = stat.S_IROTH | (stat.S_IXOTH if stat.S_ISDIR(mode) else 0)
    return mode & needed == needed


def _probe_child(spec: dict, report: int) -> None:
    """In a forked child: the steps of namespaces mode that can fail, on a scratch folder."""
    try:
        unshare(spec)
        init = os.fork()
        if init == 0:
            try:
                _mount(None, "/", None, MS_REC | MS_PRIVATE)
                _mount("tmpfs", spec["root"], "tmpfs", MS_NOSUID | MS_NODEV, "size=64k")
                os.makedirs(spec["root"] + "/proc")
                _mount("proc", spec["root"] + "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC)
                if os.geteuid() == 0:
                    os.setresgid(spec["gid"], spec["gid"], spec["gid"])
                    os.setresuid(spec["uid"], spec["uid"], spec["uid"])
                    _prctl(PR_SET_DUMPABLE, 1)
                    _unshare(CLONE_NEWUSER)
                os._exit(0)
            except OSError as err:
                os.write(report, str(err).encode())
                os._exit(1)
        _, status = os.waitpid(init, 0)
        os._exit(0 if status == 0 else 1)
    except BaseException as err:  # noqa: B036 - whatever it is, it is the reason
        os.write(report, str(err).encode())
        os._exit(1)


def _namespaces_problem(scratch: Path) -> str | None:
    if sys.platform != "linux":
        return f"namespaces are Linux's; this is {sys.platform}"
    if platform.machine() not in PIVOT_ROOT:
        return f"pivot_root's syscall number is not known for {platform.machine()}"
    uid, gid = run_ids(0)
    scratch.mkdir(parents=True, exist_ok=True)
    read, write = os.pipe()
    child = os.fork()
    if child == 0:
        os.close(read)
        _probe_child({"uid": uid, "gid": gid, "root": str(scratch)}, write)
    os.close(write)
    with os.fdopen(read, "rb") as stream:
        said = stream.read(4000).decode(errors="replace")
    _, status = os.waitpid(child, 0)
    if status == 0:
        return None
    hints = []
    for setting in ("/proc/sys/kernel/unprivileged_userns_clone",
                    "/proc/sys/user/max_user_namespaces",
                    "/proc/sys/kernel/apparmor_restrict_unprivileged_userns"):
        try:
            value = Path(setting).read_text().strip()
        except OSError:
            continue
        hints.append(f"{setting.removeprefix('/proc/sys/')} = {value}")
    return (f"{said or 'the probe failed'} (user namespaces: {', '.join(hints) or 'unknown'}; "
            "a container may forbid them too, as Docker's default seccomp profile does)")


def problem(mode: str, scratch: Path, reference: Path) -> str | None:
    """Why `mode` cannot isolate runs here, or None when it can. `scratch`: an empty folder
    of the grader's; `reference`: what a run must not be able to read."""
    if mode == "namespaces":
        return _namespaces_problem(scratch)
    if mode == "uid":
        if os.geteuid() != 0:
            return "a run can have a uid of its own only when the grader runs as root"
        if reference.exists() and reachable_by_others(reference):
            return (f"{reference} is readable by every user, so by a run too: make it "
                    f"unreadable to others first (chmod -R go-rwx {reference})")
        for needed in (Path(sys.prefix), Path(sys.base_prefix)):
            if not reachable_by_others(needed):
                return (f"{needed} (Python) is not readable by other users, so a run of "
                        "another uid could not import anything")
    return None
