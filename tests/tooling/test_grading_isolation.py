"""A run's isolation (`grading.sandbox`), seen from inside: a probe, run as section 1's module
like any submission, reports on its output what it can see and do, and the tests hold it to
the isolation model of docs/instructors.md. What needs bubblewrap, or root, skips where this
machine forbids it, saying why.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from course.registry import REFERENCE_DIR, ROOT, SECTIONS
from grading import sandbox
from grading.grader import Grader, GraderError
from grading.sandbox import Limits, Pristine, Sandbox, UidBlock
from grading.zygote import DENIED

LIMITS = Limits(memory_mb=2048, scratch_mb=8, threads=8, section_timeout_s=120)
PROBLEM = {mode: sandbox.problem(mode) for mode in ("bwrap", "uid")}
# What a run can see and do depends on grading/ and the machine alone: its probe is a module
# of its own, never the reference's, and no test's message reaches it.
pytestmark = pytest.mark.check_all
PROBE = """
import ctypes, fcntl, json, mmap, os, socket, subprocess, sys, threading, time, torch

def attempt(action):
    try:
        action()
        return "ok"
    except (OSError, MemoryError, RuntimeError) as err:
        return type(err).__name__ + ": " + str(getattr(err, "strerror", "") or err)

def write(path, size=1):
    try:
        with open(path, "wb") as stream:
            stream.write(b"x" * size)
    finally:
        if size > 1 and os.path.exists(path):
            os.remove(path)  # pytest's capture of the output needs the room

def threads():
    started = []
    for _ in range(20):
        thread = threading.Thread(target=time.sleep, args=(1,), daemon=True)
        if attempt(thread.start) != "ok":
            break
        started.append(thread)
    return len(started)

def refused(number):  # the call's arguments all 0: without the filter, most would fail otherwise
    libc = ctypes.CDLL(None, use_errno=True)
    return libc.syscall(number, 0, 0, 0, 0, 0) == -1 and ctypes.get_errno() == 1  # EPERM

def deep(top, depth=1100):  # deeper than Python's recursion, longer than a path may be
    here = os.getcwd()
    try:
        os.chdir(top)
        for _ in range(depth):
            os.mkdir("deep-dir")
            os.chdir("deep-dir")
    finally:
        os.chdir(here)

def page_cache(shared):  # every way of steering or reading which pages of a file are cached
    libc = ctypes.CDLL(None, use_errno=True)
    def call(number, *args):
        if libc.syscall(number, *args) != 0:
            raise OSError(ctypes.get_errno(), os.strerror(ctypes.get_errno()))
    mapped = mmap.mmap(shared.fileno(), 0, prot=mmap.PROT_READ)
    return {name: attempt(action) for name, action in {
        "fadvise": lambda: os.posix_fadvise(shared.fileno(), 0, 0, os.POSIX_FADV_DONTNEED),
        "readahead": lambda: call(187, shared.fileno(), 0, 4096),
        "nowait": lambda: os.preadv(shared.fileno(), [bytearray(1)], 0, os.RWF_NOWAIT),
        "pageout": lambda: mapped.madvise(21), "cold": lambda: mapped.madvise(20),
        "cachestat": lambda: call(451, shared.fileno(), 0, 0, 0),
        "mincore": lambda: call(27, 0, 0, 0)}.items()}

status = dict(line.split(":", 1) for line in open("/proc/self/status").read().splitlines())
shared = open(torch.__file__, "rb")
raise RuntimeError("FACTS " + json.dumps({
    "uid": os.getuid(), "capabilities": status["CapEff"].strip(),
    "no_new_privs": status["NoNewPrivs"].strip(), "seccomp": status["Seccomp"].strip(),
    "sees": [p for p in {hidden!r} if os.path.exists(p)],
    "writes": [p for p in {read_only!r} if attempt(lambda p=p: write(p)) == "ok"],
    "own": attempt(lambda: write(os.environ["HOME"] + "/mine")),
    "left": attempt(lambda: write("/tmp/left-behind-by-a-run")),
    "deep": attempt(lambda: deep(os.environ["HOME"])),
    "deep_left": attempt(lambda: os.mkdir("/tmp/deep-left-by-a-run") or deep(
        "/tmp/deep-left-by-a-run")),
    "page_cache": page_cache(shared),
    "fills": attempt(lambda: write(os.environ["HOME"] + "/big", 16 << 20)),
    "fork": attempt(os.fork), "program": attempt(lambda: subprocess.run(["true"])),
    "socket": attempt(socket.socket), "flock": attempt(lambda: fcntl.flock(shared, fcntl.LOCK_SH)),
    "lock": attempt(lambda: fcntl.lockf(shared, fcntl.LOCK_SH | fcntl.LOCK_NB, 1, 7)),
    "memory": attempt(lambda: bytearray(2500 << 20)), "threads": threads(),
    "signal": attempt(lambda: os.kill(1, 0)),
    "not_refused": [number for number in {denied!r} if not refused(number)],
    "cgroup": open("/proc/self/cgroup").read(),
}))  # pytest shows it on one line of its output
"""


@pytest.fixture
def open_folder():
    """A folder that users other than root can reach (pytest's own are root's alone)."""
    folder = Path(tempfile.mkdtemp(prefix="grading-isolation-"))
    folder.chmod(0o755)
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


def probe(mode: str, work: Path, hidden: list[str], read_only: list[str],
          runs: int = 1, rounds: int = 2) -> tuple[list[dict], str]:
    """The facts of `runs` probes run at once in `mode`, `rounds` times (each round's runs in
    the slots the last round's left), and how they shared the CPU."""
    code = PROBE.replace("{hidden!r}", repr(hidden)).replace("{read_only!r}", repr(read_only))
    code = code.replace("{denied!r}", repr(DENIED))
    box = Sandbox(work, Pristine(), LIMITS, mode, slots=runs)
    try:
        with ThreadPoolExecutor(runs) as pool:
            outcomes = list(pool.map(lambda _: box.run_section(SECTIONS[0], code.encode()),
                                     range(runs * rounds)))
    finally:
        box.close()
    facts = []
    for outcome in outcomes:
        found = [line for line in outcome.output_tail.splitlines() if "FACTS {" in line]
        assert outcome.error is None and found, (outcome.error, outcome.output_tail[-3000:])
        facts.append(json.loads(found[-1].split("FACTS ", 1)[1]))
    return facts, box.cpu_share


@pytest.mark.skipif(PROBLEM["bwrap"] is not None, reason=f"no bubblewrap: {PROBLEM['bwrap']}")
def test_a_run_reaches_nothing_but_its_own_inputs(tmp_path):
    """Two runs at once, twice: each a uid of its own with no privilege, every call of the
    filter's list refused, none of the grader's files in view, nowhere to write but its own
    capped scratch, no second process, program, socket or lock, no way to steer or read the
    page cache, its memory and threads bounded, no one to signal, and (where the machine
    gives cgroups) a CPU share of its own. The folders it nests deeper than a path may be
    long are removed with it, and the next run in its slot runs as the first did."""
    work = tmp_path / "work"
    hidden = [str(REFERENCE_DIR), str(ROOT / ".git"), str(ROOT / "tests"), str(work),
              "/course/ref/s1_setup.py"]
    read_only = ["/course/x", "/usr/x", f"{sys.prefix}/x", "/grader/x", "/x", "/tmp/x"]
    facts, shared = probe("bwrap", work, hidden, read_only, runs=2)
    assert facts[0]["uid"] != facts[1]["uid"], "a uid of each run's own"
    assert len(facts) == 4
    for fact in facts:
        assert fact["deep"] == "ok", "its scratch is its own to fill"
        assert set(fact["page_cache"].values()) == {"PermissionError: Operation not permitted"}
        assert fact["uid"] != 0 and fact["capabilities"] == "0000000000000000"
        assert (fact["no_new_privs"], fact["seccomp"]) == ("1", "2")
        assert fact["sees"] == [] and fact["writes"] == [] and fact["own"] == "ok"
        assert fact["fills"].startswith("OSError: No space left")
        for action in ("fork", "program", "socket", "flock", "lock"):
            assert fact[action] == "PermissionError: Operation not permitted", action
        assert fact["memory"].startswith("MemoryError") and fact["threads"] < LIMITS.threads
        assert fact["signal"].startswith("PermissionError")
        assert fact["not_refused"] == [], "every call of the filter's list is refused"
        if shared == "cgroup":
            assert f"/grading-{os.getpid()}-" in fact["cgroup"], "a CPU share of its own"


UID_TEST = """
import json, os, sys
from pathlib import Path
sys.path[:0] = [{root!r}, {tests!r}]
from grading import sandbox
from test_grading_isolation import probe
problem = sandbox.problem("uid", (Path({reference!r}),))  # as private as the grader demands
assert problem is None, problem
facts = probe("uid", Path({work!r}), {hidden!r}, [], runs=1)[0]
first, again = ({{**f, "threads": 0}} for f in facts)  # a thread of the last may linger
assert first == again, (first, again)  # the second run found what the first did
facts = facts[-1]
facts["left_after"] = [p for p in ("/tmp/left-behind-by-a-run", "/tmp/deep-left-by-a-run")
                       if os.path.exists(p)]
print("UID " + json.dumps(facts))
"""


@pytest.mark.skipif(os.geteuid() != 0 or None not in PROBLEM.values(),
                    reason=f"uid mode: {PROBLEM['uid']}; no view for it: {PROBLEM['bwrap']}")
def test_uid_mode_gives_a_uid_of_its_own_and_clears_what_it_left(open_folder):
    """Where bubblewrap cannot run: the run is a uid of its own that cannot read the reference
    (unreadable to others, as the grader demands) or the work folder, cannot fork, lock or
    reach the page cache, and what it left where everyone may write (a file; folders nested
    deeper than a path may be long) is gone after it, so that the next run sees the same
    machine. Here, where Python is root's alone, the test runs in a view of this machine in
    which Python is readable by all."""
    reference, work = open_folder / "reference", open_folder / "work"
    shutil.copytree(REFERENCE_DIR, reference)
    reference.chmod(0o700)
    script = UID_TEST.format(root=str(ROOT), tests=str(Path(__file__).parent), work=str(work),
                             hidden=[str(REFERENCE_DIR / "s1_setup.py")],
                             reference=str(REFERENCE_DIR))
    command = [sys.executable, "-c", script]
    if PROBLEM["uid"] is not None:  # a view of this machine with the reference unreadable
        prefix = Path(sys.base_prefix)  # to others, and Python readable by all
        view = []
        for parent in reversed([p for p in prefix.parents if p != Path("/")]):
            view += ["--perms", "0755", "--tmpfs" if not view else "--dir", str(parent)]
        command = ["bwrap", "--dev-bind", "/", "/", *view, "--ro-bind", str(prefix), str(prefix),
                   "--bind", str(reference), str(REFERENCE_DIR), *command]
    run = subprocess.run(command, capture_output=True, text=True, timeout=300, cwd=ROOT)
    found = [line for line in run.stdout.splitlines() if line.startswith("UID ")]
    assert run.returncode == 0 and found, run.stdout[-2000:] + run.stderr[-3000:]
    facts = json.loads(found[0][4:])
    assert facts["uid"] >= sandbox.UID_BASE and facts["sees"] == []
    assert (facts["fork"], facts["lock"]) == ("PermissionError: Operation not permitted",) * 2
    assert set(facts["page_cache"].values()) == {"PermissionError: Operation not permitted"}
    assert facts["left"] == facts["deep"] == facts["deep_left"] == "ok", "it may write there"
    assert facts["left_after"] == [], "cleared after each run, and the next one ran"


def test_two_graders_hold_different_uids():
    first, second = UidBlock(), UidBlock()
    try:
        assert not set(first.free) & set(second.free)
    finally:
        os.close(first.fd)
        os.close(second.fd)


def test_the_grader_refuses_to_grade_where_it_cannot_isolate(tmp_path, monkeypatch):
    monkeypatch.setattr(os, "geteuid", lambda: 1000)
    assert all("root" in sandbox.problem(mode) for mode in ("bwrap", "uid"))
    assert sandbox.problem("none") is None
    monkeypatch.setattr(sandbox, "problem", lambda mode, *where: f"no {mode} here")
    with pytest.raises(GraderError) as refused:
        Grader(tmp_path, [], isolation="auto").choose_isolation()
    assert all(said in str(refused.value) for said in ("no bwrap here", "no uid here",
                                                       "--isolation none"))
    monkeypatch.setattr(sandbox, "problem", lambda mode, *where: None if mode == "uid" else "x")
    assert Grader(tmp_path, [], isolation="auto").choose_isolation() == "uid"



def test_uid_mode_refuses_a_repository_that_others_can_read(open_folder, monkeypatch):
    """In uid mode a run can read whatever every user may: the grader refuses to grade while
    anything of the course's repository is readable by others (`.git`, whose packs hold the
    reference, as much as `solutions/`), names what, and says how to close it, keeping the
    Python environment and the work folder that runs need."""
    repository = open_folder / "repository"
    for name, mode in ((".git/objects/pack/pack-1.pack", 0o644), ("solutions/s3_bilm.py", 0o600),
                       (".venv/lib/site.py", 0o644), ("build/grading/cache/bilm.pt", 0o600)):
        (repository / name).parent.mkdir(parents=True, exist_ok=True)
        (repository / name).write_text("x")
        (repository / name).chmod(mode)
    for folder in (repository, repository / ".venv", repository / "build"):
        folder.chmod(0o755)
    (repository / "solutions").chmod(0o700)
    keep = (repository / ".venv", repository / "build" / "grading")
    assert sandbox.exposed(repository, keep) == sorted(
        str(repository / p) for p in (".git", ".git/objects", ".git/objects/pack",
                                      ".git/objects/pack/pack-1.pack", "build"))
    monkeypatch.setattr(sandbox.sys, "prefix", str(repository / ".venv"))
    monkeypatch.setattr(os, "geteuid", lambda: 0)
    why = sandbox.problem("uid", (repository,), keep[1])
    assert "5 files or folders" in why and "in: .git, build." in why, why
    fix = why.split("alone: ", 1)[1]
    subprocess.run(fix, shell=True, check=True)
    assert sandbox.exposed(repository, keep) == []
    assert sandbox._reachable(repository / "build", readable=False), "the work folder's way"
