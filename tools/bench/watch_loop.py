"""The watch loop: how long `make watch` takes from a save to the last line of its answer,
and how much of that is the tests' own time, section by section, beside `make test SECTION=n`.

    python -m tools.bench.watch_loop [--saves 5] [--record BENCHMARKS.md]

On a copy of the reference (every section complete), with its own cache of pre-trained
biLMs filled by a first `make test` (the warm loop of bench/test_loop.py), for every
section: `make test SECTION=n` runs `--saves` times, each a process of its own; then one
`make watch` takes one untimed save of the section's module and `--saves` timed ones, one at
a time, each after the last answer is complete. A save writes the module's bytes again, as
an editor does; its time runs from the end of that write to the arrival of the answer's last
line on the watcher's output (as many lines as `make test SECTION=n` printed). The tests' own
time is the sum of pytest's times of the run's tests (setup, call and teardown of each, from
its JUnit XML: `PYTEST_ARGS=--junitxml`, given to both commands); what remains is the
overhead: for `make watch` the wait for the save to settle, the children's start, pytest's
configuration and collection, what the passed section shows and the table; for `make test`
also starting Python and importing torch, pytest and hypothesis. Medians per section; the
goal: `make watch`'s overhead at most WATCH_OVERHEAD_S in every section. The answers' text
is compared with `make test`'s, durations aside ("same output").
"""

from __future__ import annotations

import argparse
import datetime
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import xml.etree.ElementTree as ElementTree
from dataclasses import dataclass
from pathlib import Path

from course.registry import CACHE_ENV_VAR, REFERENCE_DIR, ROOT, SECTIONS, Section
from tests.tooling.test_watch import comparable
from tools.bench.test_loop import INHERITED_FROM_MAKE

WATCH_OVERHEAD_S = 0.3  # the most `make watch` may add to the tests' own time
SAVES = 5
ANSWER_LIMIT_S = 300.0  # a save whose answer has not come by then: the bench stops
TITLE = "5. the watch loop"
BEGIN, END = "<!-- bench-watch:begin -->", "<!-- bench-watch:end -->"  # in BENCHMARKS.md


@dataclass(frozen=True)
class Timing:
    total_s: float  # from the end of the save (or the command's start) to its last line
    tests_s: float  # the tests' own time, pytest's

    @property
    def overhead_s(self) -> float:
        return self.total_s - self.tests_s


@dataclass(frozen=True)
class SectionLoop:
    section: Section
    make_test: list[Timing]
    make_watch: list[Timing]
    same_output: bool  # the watch's answers read as make test's, durations aside

    @staticmethod
    def median(timings: list[Timing], what: str) -> float:
        return statistics.median(getattr(t, what) for t in timings)


@dataclass(frozen=True)
class WatchBench:
    sections: list[SectionLoop]
    saves: int
    load: tuple[float, float]  # 1-minute load average at the start and the end
    bytecode: bool  # whether Python writes bytecode (PYTHONDONTWRITEBYTECODE unset)


def tests_own_s(junit: Path) -> float:
    """The sum of the times of a run's tests in its JUnit XML."""
    return sum(float(case.get("time", 0))
               for case in ElementTree.parse(junit).getroot().iter("testcase"))


class Watcher:
    """`make watch` running, its output lines kept with the time each arrived."""

    def __init__(self, command: list[str], env: dict[str, str]) -> None:
        self.process = subprocess.Popen(command, cwd=ROOT, env=env, stdout=subprocess.PIPE,
                                        stderr=subprocess.STDOUT, text=True,
                                        start_new_session=True)
        self.lines: list[tuple[float, str]] = []
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        for line in self.process.stdout:
            self.lines.append((time.perf_counter(), line))

    def wait_for(self, found, limit_s: float = ANSWER_LIMIT_S) -> None:
        deadline = time.monotonic() + limit_s
        while not found():
            if time.monotonic() > deadline or self.process.poll() is not None:
                self.stop()
                raise RuntimeError("the watcher gave no answer:\n"
                                   + "".join(line for _, line in self.lines[-40:]))
            time.sleep(0.005)

    def answer(self, path: Path, data: bytes, lines: int) -> tuple[float, list[str]]:
        """Save `path` with `data`; the seconds to the answer's `lines`-th line after its
        header, and those lines."""
        start = len(self.lines)
        path.write_bytes(data)
        saved = time.perf_counter()

        def header() -> int | None:
            return next((i for i in range(start, len(self.lines))
                         if " saved: make test SECTION=" in self.lines[i][1]), None)

        self.wait_for(lambda: header() is not None
                      and len(self.lines) > header() + lines)
        first = header() + 1
        answer = self.lines[first:first + lines]
        return answer[-1][0] - saved, [line for _, line in answer]

    def stop(self) -> None:
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGINT)  # Ctrl-C, as the learner stops it
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait()


def measure(saves: int = SAVES) -> WatchBench:
    env = {k: v for k, v in os.environ.items() if k not in INHERITED_FROM_MAKE}
    load_start = os.getloadavg()[0]
    found = []
    with tempfile.TemporaryDirectory(prefix="elmo-bench-watch-") as scratch:
        scratch = Path(scratch)
        impl, junit = scratch / "impl", scratch / "junit.xml"
        shutil.copytree(REFERENCE_DIR, impl)
        env[CACHE_ENV_VAR] = str(scratch / "cache")
        variables = [f"ELMO_IMPL={impl}", f"RESULTS={scratch / 'results.json'}",
                     f"STATE={scratch / 'progress.json'}", f"PYTEST_ARGS=--junitxml={junit}"]
        make = ["make", "--no-print-directory"]
        subprocess.run([*make, "test", *variables], cwd=ROOT, env=env, capture_output=True)
        baselines = {}
        for section in SECTIONS:
            timings = []
            for _ in range(saves):
                start = time.perf_counter()
                run = subprocess.run([*make, "test", f"SECTION={section.number}", *variables],
                                     cwd=ROOT, env=env, stdout=subprocess.PIPE,
                                     stderr=subprocess.STDOUT, text=True)
                timings.append(Timing(time.perf_counter() - start, tests_own_s(junit)))
            baselines[section.number] = (timings, run.stdout.splitlines(True))
        watcher = Watcher([*make, "watch", *variables], env)
        try:
            watcher.wait_for(lambda: any(line.startswith("watching ")
                                         for _, line in watcher.lines))
            for section in SECTIONS:
                timings, expected = baselines[section.number]
                path, answers, watched = impl / section.file_name, [], []
                data = path.read_bytes()
                for _ in range(saves + 1):  # the first: not timed
                    seconds, answer = watcher.answer(path, data, len(expected))
                    watched.append(Timing(seconds, tests_own_s(junit)))
                    answers.append(comparable(answer))
                    time.sleep(0.5)  # the watcher back to waiting for events
                same = all(answer == comparable(expected) for answer in answers)
                found.append(SectionLoop(section, timings, watched[1:], same))
        finally:
            watcher.stop()
    return WatchBench(found, saves, (load_start, os.getloadavg()[0]),
                      not env.get("PYTHONDONTWRITEBYTECODE"))


def describe(bench: WatchBench) -> list[str]:
    width = 3 + max(len(loop.section.name) for loop in bench.sections)
    lines = [f"medians of {bench.saves} runs each; make watch: {bench.saves} saves after one "
             "untimed; the tests' own time: pytest's, test by test",
             f"{'':{width}}{'make test SECTION=n':>30}{'make watch, a save':>30}",
             f"{'section':{width}}" + f"{'total':>10}{'tests':>10}{'overhead':>10}" * 2
             + "  same output"]
    for loop in bench.sections:
        cells = "".join(f"{SectionLoop.median(timings, what):9.2f}s"
                        for timings in (loop.make_test, loop.make_watch)
                        for what in ("total_s", "tests_s", "overhead_s"))
        name = f"{loop.section.number:>2} {loop.section.name}"
        lines.append(f"{name:{width}}{cells}  {'yes' if loop.same_output else 'NO'}")
    lines.append(f"load average (1 min): {bench.load[0]:.2f} at the start, "
                 f"{bench.load[1]:.2f} at the end")
    lines.append("Python writes bytecode, as on a learner's machine" if bench.bytecode else
                 "PYTHONDONTWRITEBYTECODE is set: every run compiles what it imports afresh, "
                 "pytest's rewritten tests too")
    return lines


def worst(bench: WatchBench) -> SectionLoop:
    return max(bench.sections, key=lambda loop: SectionLoop.median(loop.make_watch,
                                                                   "overhead_s"))


def goals(bench: WatchBench, goal: type) -> list:
    """The goal this benchmark measures, as a `goal` (`tools.bench.run.Goal`)."""
    loop = worst(bench)
    overhead = SectionLoop.median(loop.make_watch, "overhead_s")
    same = all(loop.same_output for loop in bench.sections)
    return [goal(f"make watch adds <= {WATCH_OVERHEAD_S:g} s to the tests' own time, every "
                 "section", f"{overhead:.2f} s (section {loop.section.number}, the largest)",
                 overhead <= WATCH_OVERHEAD_S and same,
                 f"{overhead - WATCH_OVERHEAD_S:+.2f} s against the limit"
                 + ("" if same else "; an answer differs from make test's"))]


def main(argv: list[str] | None = None) -> None:
    from tools.bench import run  # its table's format and the machine's description

    parser = argparse.ArgumentParser(prog="python -m tools.bench.watch_loop",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("--saves", type=int, default=SAVES, help="timed saves per section")
    parser.add_argument("--record", type=Path, metavar="FILE",
                        help=f"write the results into FILE between {BEGIN} and {END}")
    command_line = sys.argv[1:] if argv is None else argv
    args = parser.parse_args(command_line)
    started = datetime.datetime.now(datetime.UTC)
    bench = measure(args.saves)
    lines, found = describe(bench), goals(bench, run.Goal)
    print(*lines, *(g.line() for g in found), sep="\n")
    if args.record:
        header = {"date": started.strftime("%Y-%m-%d %H:%M UTC"),
                  "command": "`" + " ".join(["python -m tools.bench.watch_loop",
                                             *command_line]) + "`",
                  **run.machine()}
        run.record(args.record, header, {TITLE: lines}, found, BEGIN, END)
        print(f"results written to {args.record}")


if __name__ == "__main__":
    main()
