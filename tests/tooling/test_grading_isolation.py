"""The operating system's isolation of a run (`grading.isolation`, through the fork server),
seen from inside a run: a probe module reports what it can see, do and reach, and the tests
hold it to the isolation model of docs/instructors.md. No torch here: each run takes a
fraction of a second.

Also here: what the grader reads back from a run (never a link, a FIFO or a device, never
more than a cap), and the records stream (a line the guard did not sign is not believed, a
test that failed never passes later).
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import stat
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

import pytest

from course.registry import REFERENCE_DIR, ROOT, SECTIONS
from course.results import FAILED, PASSED
from grading import isolation
from grading.grader import Grader, GraderError
from grading.sandbox import (
    ForkServer,
    Limits,
    Pristine,
    Sandbox,
    isolation_request,
    read_capped,
    sign_record,
    signed_records,
)

SYSTEM_PYTHON = Path("/usr/bin/python3")
NOBODY = 65534
DAEMON = "47.1234"  # what the probe's leftover `sleep` waits, to find it by
needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="the grader runs as root here only")

# What a run reports of itself, as one JSON object on its output.
PROBE = """
import ctypes, json, os, socket, sys

def attempt(action):
    try:
        action()
        return "ok"
    except OSError as err:
        return err.strerror or type(err).__name__

def write(path, size=1):
    with open(path, "wb") as stream:
        stream.write(b"x" * size)

status = dict(line.split(":", 1) for line in open("/proc/self/status").read().splitlines())
facts = {{
    "uid": os.getuid(), "euid": os.geteuid(), "pid": os.getpid(),
    "processes": len([p for p in os.listdir("/proc") if p.isdigit()]),
    "capabilities": status["CapEff"].strip(), "bounding": status["CapBnd"].strip(),
    "no_new_privs": status["NoNewPrivs"].strip(),
    "sees": {{path: os.path.exists(path) for path in {hidden!r}}},
    "writes": {{path: attempt(lambda path=path: write(path)) for path in {read_only!r}}},
    "scratch": attempt(lambda: write(os.environ["TMPDIR"] + "/small")),
    "scratch_cap": attempt(lambda: write("/tmp/big", 3 << 20)),
    "signal_outside": attempt(lambda: os.kill({outside_pid}, 0)),
    "network": attempt(lambda: socket.create_connection(("127.0.0.1", {port}), timeout=1)),
    "user_namespace": ctypes.CDLL(None, use_errno=True).unshare(0x10000000),
    "mount_again": attempt(lambda: os.rmdir("/proc")),
}}
print(json.dumps(facts), flush=True)
"""


def run_probe(tmp_path: Path, code: str, mode: str = "namespaces", timeout_s: float = 30,
              hidden: tuple[str, ...] = ()) -> tuple[object, str]:
    """Run `code` as module `probe` in a run of `mode`: (its outcome, its output)."""
    folder = tmp_path / "code"
    folder.mkdir(exist_ok=True)
    (folder / "probe.py").write_text(code)
    for path in (tmp_path, folder):
        path.chmod(0o755)
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    spec, scratch = isolation_request(mode, run_dir, 0, [str(folder)], {}, 2,
                                      [str(ROOT), *hidden])
    server = ForkServer(tmp_path / "forkserver.log")
    try:
        outcome = server.run({"module": "probe", "argv": [], "cwd": str(folder),
                              "env": {"PATH": "/usr/bin:/bin", "HOME": f"{scratch}/home",
                                      "TMPDIR": f"{scratch}/tmp"},
                              "output": str(run_dir / "output.txt"), "limits": {},
                              "isolation": spec}, timeout_s)
    finally:
        server.close()
    return outcome, (run_dir / "output.txt").read_text()


@pytest.fixture
def open_folder():
    """A folder that users other than root can reach (pytest's own are root's alone)."""
    folder = Path(tempfile.mkdtemp(prefix="grading-isolation-"))
    folder.chmod(0o755)
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture
def listening():
    server = socket.create_server(("127.0.0.1", 0))
    yield server.getsockname()[1]
    server.close()


def test_namespaces_are_available_here():
    """CI's machine must give them: the grader refuses to grade without them otherwise."""
    assert isolation.problem("namespaces", Path("/tmp/grading-probe"), REFERENCE_DIR) is None


def test_a_run_sees_only_its_own_tree_and_keeps_no_privilege(tmp_path, listening):
    secret = tmp_path / "secret.txt"
    secret.write_text("another submission")
    hidden = [str(REFERENCE_DIR), str(ROOT / ".git"), str(ROOT / "tests"), str(secret),
              "/root/.bash_history", str(tmp_path / "forkserver.log")]
    read_only = ["/usr/escaped", "/etc/escaped", f"{sys.prefix}/escaped", "/escaped",
                 str(tmp_path / "code" / "escaped")]
    outcome, output = run_probe(tmp_path, PROBE.format(
        hidden=hidden, read_only=read_only, outside_pid=os.getpid(), port=listening))
    assert outcome.entered and outcome.status == 0, output
    facts = json.loads(output.splitlines()[-1])
    assert facts["uid"] == facts["euid"] != 0, "an unprivileged uid"
    assert facts["capabilities"] == facts["bounding"] == "0000000000000000"
    assert facts["no_new_privs"] == "1"
    assert facts["pid"] == 1 and facts["processes"] == 1, "a pid namespace of its own"
    assert not any(facts["sees"].values()), facts["sees"]
    assert set(facts["writes"].values()) <= {"Read-only file system", "No such file or directory"}
    assert facts["scratch"] == "ok" and facts["scratch_cap"] == "No space left on device"
    assert facts["signal_outside"] == "No such process"
    assert facts["network"] != "ok"
    assert facts["user_namespace"] == -1, "no user namespace of its own to regain privileges"
    assert facts["mount_again"] != "ok"


def alive_with(argument: str) -> list[int]:
    """Processes (not zombies) whose command line holds `argument`."""
    found = []
    for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
        try:
            if argument in cmdline.read_bytes().decode(errors="replace").split("\0"):
                state = (cmdline.parent / "stat").read_text().rsplit(")", 1)[1].split()[0]
                if state != "Z":
                    found.append(int(cmdline.parent.name))
        except (OSError, IndexError):
            continue
    return found


@pytest.mark.parametrize("ends", ["by itself", "past its limit"])
def test_every_process_of_a_run_dies_with_it(tmp_path, ends):
    """A process in a session of its own, and a twice-forked one: none outlives the run,
    whether it ends by itself or is killed."""
    code = textwrap.dedent(f"""
        import os, subprocess, time
        subprocess.Popen(["sleep", "{DAEMON}"], start_new_session=True)
        if os.fork() == 0:
            os.setsid()
            if os.fork() == 0:
                os.execv("/bin/sleep", ["sleep", "{DAEMON}"])
            os._exit(0)
        time.sleep(0.5)
        while {ends == "past its limit"}:
            time.sleep(0.05)
    """)
    outcome, output = run_probe(tmp_path, code, timeout_s=3)
    assert outcome.entered and outcome.timed_out == (ends == "past its limit"), output
    time.sleep(0.2)
    assert alive_with(DAEMON) == []


@needs_root
@pytest.mark.skipif(not shutil.which("setpriv") or not SYSTEM_PYTHON.exists()
                    or not isolation.reachable_by_others(ROOT / "grading" / "isolation.py"),
                    reason="needs setpriv, the system's Python, and this clone readable by all")
def test_a_grader_that_is_not_root_isolates_its_runs_too(open_folder):
    """Run as nobody, with the system's Python: the user namespace comes first, then the
    others, as for an instructor grading on their own account."""
    tmp_path = open_folder
    root = tmp_path / "tree"
    root.mkdir()
    for path in (tmp_path, root):
        path.chmod(0o777)
    spec = {"mode": "namespaces", "uid": NOBODY, "gid": NOBODY, "root": str(root),
            "scratch_mb": 2, "files": {}, "read_only": ["/usr", "/etc", str(ROOT / "grading")],
            "hidden": [], "scratch": isolation.NAMESPACE_SCRATCH}
    script = textwrap.dedent(f"""
        import json, os, sys
        sys.path.insert(0, {str(ROOT)!r})
        from grading import isolation
        isolation.unshare({spec!r})
        child = os.fork()
        if child == 0:
            isolation.enter({spec!r})
            status = dict(l.split(":", 1) for l in open("/proc/self/status").read().splitlines())
            print(json.dumps({{"pid": os.getpid(), "uid": os.getuid(),
                               "capabilities": status["CapEff"].strip(),
                               "sees": os.path.exists({str(REFERENCE_DIR)!r}),
                               "no_new_privs": status["NoNewPrivs"].strip()}}), flush=True)
            os._exit(0)
        os._exit(os.waitpid(child, 0)[1] >> 8)
    """)
    run = subprocess.run(["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups",
                          str(SYSTEM_PYTHON), "-c", script], capture_output=True, text=True,
                         timeout=60, cwd="/")
    assert run.returncode == 0, run.stderr
    facts = json.loads(run.stdout.splitlines()[-1])
    assert facts == {"pid": 1, "uid": NOBODY, "capabilities": "0000000000000000",
                     "sees": False, "no_new_privs": "1"}


@needs_root
@pytest.mark.skipif(not SYSTEM_PYTHON.exists()
                    or not isolation.reachable_by_others(ROOT / "grading" / "isolation.py"),
                    reason="needs the system's Python, and this clone readable by all")
def test_uid_mode_gives_a_uid_of_its_own_and_kills_all_of_it(open_folder):
    tmp_path = open_folder
    uid = isolation.RUN_UID_BASE + 7
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    spec = {"mode": "uid", "uid": uid, "gid": uid, "scratch": str(scratch), "files": {}}
    script = textwrap.dedent(f"""
        import json, os, subprocess, sys
        sys.path.insert(0, {str(ROOT)!r})
        from grading import isolation
        isolation.enter({spec!r})
        status = dict(l.split(":", 1) for l in open("/proc/self/status").read().splitlines())
        subprocess.Popen(["sleep", "{DAEMON}"], start_new_session=True,
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        print(json.dumps({{"uid": os.getuid(), "no_new_privs": status["NoNewPrivs"].strip(),
                           "home": os.stat({str(scratch / "home")!r}).st_uid}}), flush=True)
    """)
    run = subprocess.run([str(SYSTEM_PYTHON), "-c", script], capture_output=True, text=True,
                         timeout=60)
    assert run.returncode == 0, run.stderr
    assert json.loads(run.stdout) == {"uid": uid, "no_new_privs": "1", "home": uid}
    assert alive_with(DAEMON), "the run's process lives on until its uid is killed"
    isolation.kill_uid(uid)
    time.sleep(0.2)
    assert alive_with(DAEMON) == []


def test_uid_mode_refuses_a_reference_that_others_can_read(open_folder):
    tmp_path = open_folder
    reference = tmp_path / "solutions"
    reference.mkdir()
    for path in (tmp_path, reference):
        path.chmod(0o755)
    why = isolation.problem("uid", tmp_path / "probe", reference)
    if os.geteuid() == 0:
        assert why is not None and "chmod -R go-rwx" in why and str(reference) in why
        reference.chmod(0o700)
        assert "chmod -R go-rwx" not in (isolation.problem("uid", tmp_path, reference) or "")
    else:
        assert "root" in why


def test_the_grader_refuses_to_grade_where_it_cannot_isolate(tmp_path, monkeypatch):
    monkeypatch.setattr(isolation, "problem", lambda mode, *args: f"no {mode} here")
    grader = Grader(tmp_path, [], isolation="auto")
    with pytest.raises(GraderError) as refused:
        grader.choose_isolation()
    said = str(refused.value)
    assert "no namespaces here" in said and "no uid here" in said
    assert "--isolation uid" in said and "--isolation none" in said
    monkeypatch.setattr(isolation, "problem", lambda mode, *args: None if mode == "uid" else "x")
    assert grader.choose_isolation() == "uid"


# --- reading back what a run left ----------------------------------------------------------


def test_what_a_run_left_is_read_as_a_regular_file_only_and_capped(tmp_path):
    (tmp_path / "records").write_bytes(b"x" * 100)
    os.mkfifo(tmp_path / "fifo")
    (tmp_path / "link").symlink_to("/dev/zero")
    (tmp_path / "folder").mkdir()
    assert read_capped(tmp_path / "records", 10) == b"x" * 10
    assert read_capped(tmp_path / "records", 1000, tail=True) == b"x" * 100
    started = time.monotonic()
    for path in ("fifo", "link", "folder", "missing"):
        assert read_capped(tmp_path / path, 10) == b"", path
    assert read_capped(Path("/dev/zero"), 10) == b""
    assert time.monotonic() - started < 5, "nothing is waited on"
    assert stat.S_ISFIFO(os.lstat(tmp_path / "fifo").st_mode)


def test_only_records_the_guard_signed_count_and_a_failure_stays_one():
    key = os.urandom(16)
    record = {"nodeid": "t::a", "status": FAILED, "message": "no"}
    passed = {"nodeid": "t::a", "status": PASSED, "message": ""}
    other = {"nodeid": "t::b", "status": PASSED, "message": ""}
    lines = [{"record": record, "mac": sign_record(key, record)},
             {"record": passed, "mac": sign_record(key, passed)},  # after its failure
             {"record": other, "mac": "0" * 64}, {"record": other}, {"nodeid": "t::b"}]
    records, forged = signed_records(lines, key)
    assert records == {"t::a": record} and forged == 3
    assert signed_records([{"record": other, "mac": sign_record(os.urandom(16), other)}],
                          key) == ({}, 1)


def test_a_work_folder_named_relative_to_the_grader_is_found_by_its_runs(tmp_path, monkeypatch):
    """`--work-dir build/grading` is relative to where the grader started; a run changes its
    root and its directory before it uses the run's paths, and must find them all the same."""
    monkeypatch.chdir(tmp_path)
    section = SECTIONS[0]
    sandbox = Sandbox(Path("work"), Pristine(), {}, Limits(), False, "namespaces", 1)
    try:
        run = sandbox.run_section(section, (REFERENCE_DIR / section.file_name).read_bytes(),
                                  "relative")
    finally:
        sandbox.close()
    assert run.wait_status == 0, run.output_tail
    assert run.records and all(r["status"] == PASSED for r in run.records.values()), run.records
