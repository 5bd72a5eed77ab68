"""Fixtures that more than one tooling test file uses, and `shared_folder`, which makes what
they share once for all of `make check`'s test processes."""

import fcntl
import hashlib
import os
import shutil
import signal
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from course.registry import BUILD_DIR, ROOT
from tools import demo

SHARED_DIR = BUILD_DIR / "tooling-shared"
SOLUTION_RESULTS = BUILD_DIR / "results-solutions.json"  # `make test-solutions` writes it
# What a shared folder is made from: the course's code and data, never its prose.
CODE = ("course", "solutions", "exercises", "tools", "grading", "tests", "mistakes",
        "notebooks", "data", "requirements")


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "check_all: a check that no usual change (to a section's reference, a "
        "test's message, the docs) can break: `make check-all` runs it, `make check` does not "
        "(README says why)")


def code_digest() -> str:
    """A digest of every file of CODE and the course's settings: what made a shared folder."""
    digest = hashlib.sha256()
    files = [p for top in CODE for p in sorted((ROOT / top).rglob("*"))
             if p.is_file() and "__pycache__" not in p.parts]
    for path in [*files, ROOT / "course.toml", ROOT / "pytest.ini"]:
        digest.update(str(path.relative_to(ROOT)).encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()[:16]


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


def shared_folder(name: str, make: Callable[[Path], None]) -> Path:
    """The folder that `make(folder)` fills, made once under a lock by the first of `make
    check`'s test processes to ask and read by the others, and kept for later runs while
    the code it was made from (`code_digest`) is the same: two test files, in two processes,
    that read one slow result (the demo's) pay for it once."""
    SHARED_DIR.mkdir(parents=True, exist_ok=True)
    folder = SHARED_DIR / f"{name}-{code_digest()}"
    with open(SHARED_DIR / f"{name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # the others wait here while the first makes it
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
def demo_one_seed():
    """What `make demo` writes, for one seed (seed 0): its folder."""
    return shared_folder("demo-one-seed",
                         lambda out: demo.main(["--seeds", "1", "--out", str(out)]))


def interrupt_after(command: list[str], first: str, env: dict | None = None,
                    timeout: float = 300, then: float = 3.0) -> tuple[int, str, str, list[str]]:
    """Run `command` in a process group of its own, as a terminal runs it; `then` seconds
    after its output has a line containing `first`, press Ctrl-C (SIGINT to the whole group,
    the workers too). (exit status, stdout, stderr, the lines before Ctrl-C)."""
    process = subprocess.Popen(command, cwd=ROOT, env=env, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True, start_new_session=True)
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
