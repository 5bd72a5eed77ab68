"""Fixtures that more than one tooling test file uses, and `shared_folder`, which makes what
they share once for all of `make check`'s test processes."""

import fcntl
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
import torch

from course.registry import BUILD_DIR, ROOT
from tests.tooling import replay
from tests.tooling.replay import pytest_addoption, pytest_collection_modifyitems  # noqa: F401
from tools import demo

# One torch thread in each tooling test process, as in the section tests, the notebooks'
# kernels and the grader's runs: make check runs two such processes on two cores beside its
# other parts, where a second thread mostly waits for the first (test_context_effect.py,
# which pre-trains the reference again: 46 s of CPU on two threads, 9 s on one, at load 5).
torch.set_num_threads(1)

SHARED_DIR = BUILD_DIR / "tooling-shared"
# The grader's work folder that the others copy its preparation from (`grading_work_dir`).
GRADER_PREPARED = BUILD_DIR / "grading-prepared"
SOLUTION_RESULTS = BUILD_DIR / "results-solutions.json"  # `make test-solutions` writes it


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "check_all: a check that no usual change (to a section's reference, a "
        "test's message, the docs) can break: `make check-all` runs it, `make check` does not "
        "(README says why)")
    replay.register(config)


def fresh_solution_results() -> Path | None:
    """What `make test-solutions` recorded of every section's tests on the reference, where
    it was written after every file that their outcome depends on (in `make check`, by this
    run's test-solutions); None otherwise (a tooling test run alone, after an edit)."""
    if not SOLUTION_RESULTS.exists():
        return None
    sources = [ROOT / "course.toml", *ROOT.glob("solutions/*.py"), *ROOT.glob("course/*.py"),
               *ROOT.glob("tests/sections/**/*.py")]
    fresh = SOLUTION_RESULTS.stat().st_mtime > max(p.stat().st_mtime for p in sources)
    return SOLUTION_RESULTS if fresh else None


@contextmanager
def locked(name: str) -> Iterator[None]:
    """Held by one of `make check`'s test processes at a time: the others wait here."""
    SHARED_DIR.mkdir(parents=True, exist_ok=True)
    with open(SHARED_DIR / f"{name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield


def shared_folder(name: str, make: Callable[[Path], None]) -> Path:
    """The folder that `make(folder)` fills, made once under a lock by the first of `make
    check`'s test processes to ask and read by the others, and kept for later runs while
    what it was made from (`replay.course_digest`) is the same: two test files, in two
    processes, that read one slow result (the demo's) pay for it once."""
    folder = SHARED_DIR / f"{name}-{replay.course_digest()}"
    with locked(name):
        if not folder.exists():
            for stale in SHARED_DIR.glob(f"{name}-*"):
                shutil.rmtree(stale)
            partial = SHARED_DIR / f"{name}.partial"
            shutil.rmtree(partial, ignore_errors=True)
            partial.mkdir()
            make(partial)
            partial.rename(folder)
    return folder


@pytest.fixture(scope="session")
def grading_work_dir() -> Callable[[str], Path]:
    """`grading_work_dir(name)`: build/<name>, the work folder of a test file that grades,
    holding the grader's preparation of this course (its tests collected, the reference biLM
    pre-trained), made once for every such file, in GRADER_PREPARED, by the grader itself
    (`--prepare-only`, which keeps what has not changed), where each file would otherwise
    pre-train the reference itself. Each file grades in a folder of its own all the same:
    two gradings at once may not share one."""
    with locked("grading-prepared"):
        run = subprocess.run([sys.executable, "-m", "grading", "--prepare-only", "--work-dir",
                              str(GRADER_PREPARED)], cwd=ROOT, capture_output=True, text=True,
                             timeout=900)
    assert run.returncode == 0, run.stdout + run.stderr

    def seeded(name: str) -> Path:
        work = BUILD_DIR / name
        with locked("grading-prepared"):
            for part in ("prepared", "cache"):  # as the grader keeps them: its own alone
                (work / part).mkdir(mode=0o700, parents=True, exist_ok=True)
                made = {path.name: path for path in (GRADER_PREPARED / part).iterdir()}
                for path in (work / part).iterdir():
                    if part == "cache" and path.name not in made:  # an older reference's
                        path.unlink()
                for path in made.values():
                    if not (work / part / path.name).exists():
                        shutil.copy(path, work / part / path.name)
        return work

    return seeded


@pytest.fixture(scope="session")
def demo_one_seed():
    """What `make demo` writes, for one seed (seed 0): its folder."""
    return shared_folder("demo-one-seed",
                         lambda out: demo.main(["--seeds", "1", "--out", str(out)]))


def as_from_a_terminal() -> None:
    """A child's SIGINT as a terminal's foreground job has it, whatever this run inherited
    (a shell's `&` starts its commands with SIGINT ignored, and Python keeps it so)."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def interrupt_after(command: list[str], first: str, env: dict | None = None,
                    timeout: float = 300, then: float = 3.0) -> tuple[int, str, str, list[str]]:
    """Run `command` in a process group of its own, as a terminal runs it; `then` seconds
    after its output has a line containing `first`, press Ctrl-C (SIGINT to the whole group,
    the workers too). (exit status, stdout, stderr, the lines before Ctrl-C)."""
    process = subprocess.Popen(command, cwd=ROOT, env=env, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True, start_new_session=True,
                               preexec_fn=as_from_a_terminal)
    before = []
    deadline = time.monotonic() + timeout
    for line in process.stdout:  # a line at a time: the command flushes each
        before.append(line.rstrip("\n"))
        if first in line or time.monotonic() > deadline:
            break
    time.sleep(then)
    os.killpg(process.pid, signal.SIGINT)
    out, err = process.communicate(timeout=120)
    return process.returncode, out, err, before
