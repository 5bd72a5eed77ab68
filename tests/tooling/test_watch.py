"""`make watch` (`course.watch`): a saved section module runs exactly that section's tests,
then the table, as `make test SECTION=n` would (its output, results and state), once per
save that has settled, in a preloaded process that serves every save (a process of its own
where that is not safe); Ctrl-C stops it cleanly."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from course.registry import ROOT, SECTIONS, find_section
from course.watch import RunHistory, digest, file_system, preload_refusal, saved_since

pytestmark = pytest.mark.slow  # make check replays it at unchanged inputs (replay.py)

READY = "watching "  # what the watcher prints once it watches
LIMIT_S = 240  # a generous limit: the machine may be busy
PROBE = "PYTEST_ARGS=-p tests.tooling.watch_probe"  # which process ran a watched run's tests
_PROBED = re.compile(r"probe: pid (\d+) parent (\d+) torch imported before pytest (\w+)")


def test_a_save_runs_its_section_once_and_a_missing_module_waits(tmp_path):
    tested = RunHistory({s.number: (1, 10) for s in SECTIONS})
    now = {**tested.signatures, 3: (2, 10), 5: (1, 11), 2: None}
    assert saved_since(tested, now, tmp_path) == [find_section(3), find_section(5)]
    assert saved_since(tested, now, tmp_path) == [], "each save once"
    assert tested.signatures[2] == (1, 10), "a missing module keeps what was last tested"
    again = {**now, 3: (3, 10), 4: (2, 10)}
    assert saved_since(tested, again, tmp_path, only=find_section(4)) == [find_section(4)]


def test_the_bytes_a_run_tested_written_again_during_it_are_its_own_save(tmp_path):
    """An editor that writes a file twice, the second time while the first save's run tests
    it, gets one run; the same bytes saved after that run ended run again."""
    module = tmp_path / SECTIONS[0].file_name
    module.write_text("x = 1\n")
    tested = RunHistory({s.number: None for s in SECTIONS})
    tested.runs[1] = (digest(module), 2_000)  # a run of these bytes that ended at 2000 ns
    during = {**tested.signatures, 1: (1_500, 6)}
    assert saved_since(tested, during, tmp_path) == []
    after = {**tested.signatures, 1: (2_500, 6)}
    assert saved_since(tested, after, tmp_path) == [SECTIONS[0]]
    module.write_text("x = 2\n")
    other_bytes = {**tested.signatures, 1: (1_800, 6)}
    assert saved_since(tested, other_bytes, tmp_path) == [SECTIONS[0]]


def test_the_tests_run_in_a_process_of_their_own_where_fork_is_not_safe():
    assert preload_refusal("linux") is None
    assert preload_refusal("darwin") and preload_refusal("win32")


def test_the_file_system_of_a_folder_is_known():
    if not Path("/proc/mounts").exists():
        pytest.skip("no /proc/mounts on this system")
    assert file_system(Path("/proc/self")) == "proc"


class Watcher:
    """A running watcher, its output read line by line on a thread of its own."""

    def __init__(self, command: list[str], cwd: Path) -> None:
        self.env = {k: v for k, v in os.environ.items()
                    if k not in ("SECTION", "MAKEFLAGS", "MAKELEVEL", "ELMO_IMPL")}
        self.process = subprocess.Popen(command, cwd=cwd, env=self.env, stdout=subprocess.PIPE,
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

    def wait_for(self, text: str, limit: float = LIMIT_S, times: int = 1) -> None:
        deadline = time.monotonic() + limit
        while self.output.count(text) < times:
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


def implementation(tmp_path: Path) -> Path:
    """The handout's stubs with section 1 done."""
    impl = tmp_path / "impl"
    shutil.copytree(ROOT / "exercises", impl)
    shutil.copy(ROOT / "solutions" / "s1_setup.py", impl)
    return impl


def watch(impl: Path, *options: str, make_args: tuple[str, ...] = ()) -> Watcher:
    """The watcher of `impl`, its runs as `make test ELMO_IMPL=impl` with `make_args`."""
    return Watcher([sys.executable, "-m", "course.watch", "--impl", str(impl), *options, "--",
                    f"ELMO_IMPL={impl}", "-o", ".venv/.installed", *make_args], ROOT)


def probes(output: str) -> list[tuple[int, int, bool]]:
    """(pid, parent's pid, torch imported before pytest) of each probed run, in order."""
    return [(int(pid), int(parent), before == "True")
            for pid, parent, before in _PROBED.findall(output)]


def comparable(lines: list[str]) -> list[str]:
    """`lines` without what differs from one run to the next: pytest's durations and the
    table's "last run"."""
    durations, ages = re.compile(r"\d+\.\d+s\b"), re.compile(r"(just now|\d+ \w+ ago) *")
    return [ages.sub("(when) ", durations.sub("#s", line.rstrip("\n"))) for line in lines]


def without_times(value):
    """A results or state file's JSON without when its runs began."""
    if isinstance(value, dict):
        return {k: without_times(v) for k, v in value.items() if k != "ran_at"}
    return [without_times(v) for v in value] if isinstance(value, list) else value


def test_a_save_written_twice_runs_once_and_every_run_is_a_child_of_one_preloaded_process(
        tmp_path):
    impl = implementation(tmp_path)
    module = impl / "s1_setup.py"
    done = module.read_bytes()
    watcher = watch(impl, "--settle", "1",
                    make_args=(f"RESULTS={tmp_path / 'results.json'}", PROBE))
    try:
        watcher.wait_for(READY)
        assert "the tests in a preloaded process" in watcher.output
        module.write_bytes(b"")  # one save in two writes: the file emptied, then written
        time.sleep(0.3)
        module.write_bytes(done)
        watcher.wait_for("Next: section 2 (corpus)")
        # other bytes: a new save even if its run has not quite ended (the same bytes would be
        # that run's own save)
        module.write_bytes(done + b"\n")
        watcher.wait_for("Next: section 2 (corpus)", times=2)
    finally:
        watcher.interrupt()
    out = watcher.output
    assert out.count("s1_setup.py saved: make test SECTION=1") == 2, out
    assert out.count("10 passed") == 2, "each run tested the module as its save left it"
    (first, server, preloaded), (second, same_server, still_preloaded) = probes(out)
    assert preloaded and still_preloaded, "torch was imported before pytest began"
    assert server == same_server != watcher.process.pid, "one server for every save"
    assert first != second, "each run a child of its own"


def test_a_watched_run_gives_what_make_test_gives(tmp_path):
    """Polling, as on a file system without events (`make watch` in a handout, in
    test_handout_loop.py, waits for events and sees a module copied over a stub). Two
    modules saved at once run in course order: section 1, done, and section 2, a stub.
    Each run's output, and the results and state it leaves, are `make test SECTION=n`'s."""
    impl = implementation(tmp_path)

    def files(folder: Path) -> tuple[str, str]:
        return f"RESULTS={folder / 'results.json'}", f"STATE={folder / 'progress.json'}"

    watcher = watch(impl, "--poll", "--timeout", "5", make_args=files(tmp_path / "watched"))
    watcher.wait_for(READY)
    assert "polling" in watcher.output
    touch(impl / "s1_setup.py")
    touch(impl / "s2_corpus.py")
    assert watcher.finish() == 0, watcher.output
    runs = watcher.output.removesuffix("stopped watching\n").split("\n== ")[1:]
    assert [run.splitlines()[0] for run in runs] == [
        "s1_setup.py saved: make test SECTION=1", "s2_corpus.py saved: make test SECTION=2"]
    for number, run in zip((1, 2), runs, strict=True):
        made = subprocess.run(["make", "--no-print-directory", "test", f"SECTION={number}",
                               f"ELMO_IMPL={impl}", "-o", ".venv/.installed",
                               *files(tmp_path / "made")], cwd=ROOT, env=watcher.env,
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        printed = [line for line in made.stdout.splitlines()
                   if not re.fullmatch(r"make: \*\*\* .*Error \d+", line)]  # make's own
        assert comparable(run.splitlines()[1:]) == comparable(printed), run
    for name in ("results.json", "progress.json"):
        watched, made = (json.loads((tmp_path / folder / name).read_text())
                         for folder in ("watched", "made"))
        assert without_times(watched) == without_times(made), name


def test_with_fresh_each_save_runs_make_test_in_a_process_of_its_own(tmp_path):
    """What a save runs where fork is not safe (macOS, Windows)."""
    impl = implementation(tmp_path)
    watcher = watch(impl, "--fresh", "--once",
                    make_args=(f"RESULTS={tmp_path / 'results.json'}", PROBE))
    watcher.wait_for(READY)
    assert "a process of its own (--fresh)" in watcher.output
    touch(impl / "s1_setup.py")
    assert watcher.finish() == 0, watcher.output
    assert "10 passed" in watcher.output
    [(_, _, preloaded)] = probes(watcher.output)
    assert not preloaded, "the run imported torch itself"


def test_ctrl_c_stops_the_watcher_without_a_traceback(tmp_path):
    watcher = Watcher([sys.executable, "-m", "course.watch", "--impl", "exercises"], ROOT)
    watcher.wait_for(READY)
    assert watcher.interrupt() == 0
    assert "stopped watching" in watcher.output and "Traceback" not in watcher.output
