"""`make watch` (`course.watch`): a saved section module runs exactly that section's tests,
then the table; Ctrl-C stops it cleanly."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from course.registry import ROOT, SECTIONS, find_section
from course.watch import file_system, saved_since

READY = "watching "  # what the watcher prints once it watches
LIMIT_S = 240  # a generous limit: the machine may be busy


def test_a_save_runs_its_section_once_and_a_missing_module_waits():
    tested = {s.number: (1, 10) for s in SECTIONS}
    now = {**tested, 3: (2, 10), 5: (1, 11), 2: None}
    assert saved_since(tested, now) == [find_section(3), find_section(5)]
    assert saved_since(tested, now) == [], "each save once"
    assert tested[2] == (1, 10), "a missing module keeps what was last tested"
    again = {**now, 3: (3, 10), 4: (2, 10)}
    assert saved_since(tested, again, only=find_section(4)) == [find_section(4)]


def test_the_file_system_of_a_folder_is_known():
    if not Path("/proc/mounts").exists():
        pytest.skip("no /proc/mounts on this system")
    assert file_system(Path("/proc/self")) == "proc"


class Watcher:
    """A running watcher, its output read line by line on a thread of its own."""

    def __init__(self, command: list[str], cwd: Path) -> None:
        env = {k: v for k, v in os.environ.items()
               if k not in ("SECTION", "MAKEFLAGS", "MAKELEVEL", "ELMO_IMPL")}
        self.process = subprocess.Popen(command, cwd=cwd, env=env, stdout=subprocess.PIPE,
                                        stderr=subprocess.STDOUT, text=True,
                                        start_new_session=True)
        self.lines: list[str] = []
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self) -> None:
        for line in self.process.stdout:
            self.lines.append(line)

    @property
    def output(self) -> str:
        return "".join(self.lines)

    def wait_for(self, text: str, limit: float = LIMIT_S) -> None:
        deadline = time.monotonic() + limit
        while text not in self.output:
            if time.monotonic() > deadline or (self.process.poll() is not None
                                               and not self.reader.is_alive()):
                self.stop()
                raise AssertionError(f"no {text!r} in the watcher's output:\n{self.output}")
            time.sleep(0.1)

    def interrupt(self) -> int:
        """Ctrl-C, as a terminal sends it: SIGINT to the whole foreground group."""
        os.killpg(self.process.pid, signal.SIGINT)
        return self.finish()

    def finish(self) -> int:
        code = self.process.wait(timeout=LIMIT_S)
        self.reader.join(timeout=10)
        return code

    def stop(self) -> None:
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait()


def touch(path: Path) -> None:
    """What `touch` does: the file's time moves, its bytes stay (an editor's save of an
    unchanged buffer)."""
    os.utime(path, None)


def test_touching_a_module_runs_exactly_its_sections_tests_then_the_table(tmp_path):
    """Polling, as on a file system without events (`make watch` in a handout, in
    test_handout_loop.py, waits for events and sees a module copied over a stub)."""
    impl = tmp_path / "impl"
    shutil.copytree(ROOT / "exercises", impl)
    shutil.copy(ROOT / "solutions" / "s1_setup.py", impl)
    results = tmp_path / "build" / "results.json"
    watcher = Watcher([sys.executable, "-m", "course.watch", "--impl", str(impl), "--once",
                       "--timeout", str(LIMIT_S), "--poll", "--", f"ELMO_IMPL={impl}",
                       f"RESULTS={results}", "-o", ".venv/.installed"], ROOT)
    watcher.wait_for(READY)
    assert "polling" in watcher.output
    touch(impl / "s1_setup.py")
    assert watcher.finish() == 0, watcher.output
    out = watcher.output
    assert out.count("saved: make test SECTION=") == 1, out
    assert "s1_setup.py saved: make test SECTION=1" in out
    assert " 1 setup" in out and "10/10" in out and "Next: section 2 (corpus)" in out, out
    records = json.loads(results.read_text())
    assert {r["section"] for r in records} == {1}, "that section's tests and no other"


def test_ctrl_c_stops_the_watcher_without_a_traceback(tmp_path):
    watcher = Watcher([sys.executable, "-m", "course.watch", "--impl", "exercises"], ROOT)
    watcher.wait_for(READY)
    assert watcher.interrupt() == 0
    assert "stopped watching" in watcher.output and "Traceback" not in watcher.output
