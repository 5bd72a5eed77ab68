"""The test loop: wall time and peak memory of `make test` on a complete implementation, the
reference, and of `make check`, each against its goal.

`make test-solutions` runs twice: first with an empty cache of pre-trained biLMs (a learner's
first run, or the first after changing sections 1-4, which trains one), then with that cache
warm. A first `make test` fills what the passed sections' summaries cache (section 8's
character biLM, section 7's probes). Then, warm, what a learner runs: `make test SECTION=n`
for every section (goal: at most SECTION_SECONDS each) and `make test` (at most
ALL_SECONDS). `make check` runs once,
with the repository's own cache as it is (at most CHECK_SECONDS).

Peak memory is the largest resident set of any one process of the command's tree (the
`ru_maxrss` that `wait4` reports for the child and its descendants, as `/usr/bin/time -v`
shows it), not the sum over processes running at once. CPU time is the tree's user and
system time: the tests run on one torch thread, so on an idle machine the wall time is
about the CPU time, and on a busy one the CPU time is what the command itself cost.

Floor: what any run costs before its first test, the median of COLLECT_REPEATS starts of
the python that runs the tests: importing torch, pytest and hypothesis (the start-up that the
goal counts as its floor), and that plus `torch._dynamo`, which torch imports on the first
optimizer made (`Optimizer.add_param_group`) and the first operation on the meta device that
the device tests use: sections 3, 4, 7 and 8 pay it once per run.

Collection: what pytest costs before the first test runs, `--collect-only`, for every
section, the median of COLLECT_REPEATS runs of each of two commands: the one that `make test
SECTION=n` ran before it handed pytest the section's own file (BEFORE: the folder of every
section's tests, which the conftest then narrows to one, with every plugin that any package
registers), and the one it runs now (as `make -n` prints it). Each: wall time, CPU time and
pytest's own "collected in".
"""

from __future__ import annotations

import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from course.registry import CACHE_ENV_VAR, REFERENCE_DIR, ROOT, SECTIONS

LOG_DIR = ROOT / "build" / "bench"
# A `make bench` passes its own flags and variables (SECTION=3, -j) down to every make it
# starts; the measured commands must run as a learner types them.
INHERITED_FROM_MAKE = ("MAKEFLAGS", "MFLAGS", "MAKELEVEL", "MAKEOVERRIDES", "SECTION")
SECTION_SECONDS = 3.0  # `make test SECTION=n`, warm, on a complete implementation
ALL_SECONDS = 15.0  # `make test`, warm, on a complete implementation
COLD_SECONDS = 30.0  # `make test-solutions` with an empty cache: it trains a biLM first
CHECK_SECONDS = 150.0  # `make check`
TOOLING_TIMES = ROOT / "build" / "tooling-times.xml"  # what `make check` wrote of its tests
REPLAYED = ROOT / "build" / "replayed.txt"  # the slow tests it replayed (replay.py)
SLOWEST_FILES = 5
COLLECT_REPEATS = 5
# What `make test SECTION=n` ran before it named the section's file itself.
BEFORE = "{python} -m pytest tests/sections --impl {impl} --section {number}"
_COLLECTED_IN = re.compile(r"collected in ([0-9.]+)s")


@dataclass(frozen=True)
class CommandRun:
    label: str
    command: list[str]
    seconds: float
    cpu_seconds: float
    peak_rss_mib: float
    returncode: int
    log: Path
    limit_s: float  # the goal: at most this many seconds


def run_measured(label: str, command: list[str], env: dict[str, str],
                 limit_s: float) -> CommandRun:
    """Run `command` in the repository root, output to a log; its wall time and peak RSS."""
    LOG_DIR.mkdir(parents=True, exist_ok=True)
    log = LOG_DIR / f"{re.sub(r'[^a-z0-9]+', '-', label).strip('-')}.log"
    with log.open("w") as out:
        start = time.perf_counter()
        process = subprocess.Popen(command, cwd=ROOT, env=env, stdout=out,
                                   stderr=subprocess.STDOUT)
        _, status, usage = os.wait4(process.pid, 0)
        seconds = time.perf_counter() - start
    process.returncode = os.waitstatus_to_exitcode(status)  # reaped here, not by Popen
    kib = usage.ru_maxrss / (1024 if sys.platform == "darwin" else 1)  # macOS counts bytes
    cpu = usage.ru_utime + usage.ru_stime
    return CommandRun(label, command, seconds, cpu, kib / 1024, process.returncode, log, limit_s)


def measure(include_check: bool = True) -> list[CommandRun]:
    env = {k: v for k, v in os.environ.items() if k not in INHERITED_FROM_MAKE}
    runs = []
    learner = ["make", "test", f"ELMO_IMPL={REFERENCE_DIR}",
               f"RESULTS={LOG_DIR / 'results-test-loop.json'}"]
    with tempfile.TemporaryDirectory(prefix="elmo-bench-cache-") as cache:
        cached = {**env, CACHE_ENV_VAR: cache}
        runs.append(run_measured("test-solutions (cold cache)", ["make", "test-solutions"],
                                 cached, COLD_SECONDS))
        runs.append(run_measured("test-solutions (warm cache)", ["make", "test-solutions"],
                                 cached, ALL_SECONDS))
        # What a passed section shows computes once what it caches (section 8's character
        # biLM, section 7's probes); a learner's warm run finds it done.
        runs.append(run_measured("test (first, caches filled)", learner, cached,
                                 COLD_SECONDS))
        for section in SECTIONS:
            runs.append(run_measured(f"test SECTION={section.number} (warm)",
                                     [*learner, f"SECTION={section.number}"], cached,
                                     SECTION_SECONDS))
        runs.append(run_measured("test (warm)", learner, cached, ALL_SECONDS))
    if include_check:
        runs.append(run_measured("check", ["make", "check"], env, CHECK_SECONDS))
    return runs


def test_seconds(path: Path = TOOLING_TIMES) -> list[tuple[str, float]]:
    """Each tooling test's seconds in the last `make check`, fixtures included, from
    pytest's JUnit XML: [(node id, seconds)]; [] without one. Each test's file is the XML's
    own `file` (`make check` writes the xunit1 family, which names it): a class name alone
    does not say where a module's name ends."""
    import xml.etree.ElementTree as ElementTree

    try:
        cases = list(ElementTree.parse(path).getroot().iter("testcase"))
    except (OSError, ElementTree.ParseError):
        return []
    return [(f"{case.get('file', '?')}::{case.get('name')}", float(case.get("time", 0)))
            for case in cases]


def slowest_test_files(path: Path = TOOLING_TIMES, count: int = SLOWEST_FILES
                       ) -> list[tuple[str, float]]:
    """The `count` tooling test files whose tests took longest in the last `make check`:
    [(file, seconds)]; a test that it replayed (tests/tooling/replay.py) took none."""
    seconds: dict[str, float] = {}
    for node, took in test_seconds(path):
        name = node.split("::")[0]
        seconds[name] = seconds.get(name, 0.0) + took
    return sorted(seconds.items(), key=lambda item: -item[1])[:count]


def describe(runs: list[CommandRun]) -> list[str]:
    lines = []
    for run in runs:
        status = "ok" if run.returncode == 0 else f"FAILED (exit {run.returncode})"
        lines.append(f"make {run.label:<28} {run.seconds:6.1f} s (goal {run.limit_s:g}, CPU "
                     f"{run.cpu_seconds:.1f} s)  peak RSS "
                     f"{run.peak_rss_mib:6.0f} MiB  {status}; log {run.log.relative_to(ROOT)}")
    if any(run.label == "check" for run in runs):
        lines += [f"  slowest tooling test files of make check (their tests, fixtures "
                  f"included, over {TOOLING_TIMES.relative_to(ROOT)}):"]
        lines += [f"    {name:<44} {seconds:6.1f} s" for name, seconds in slowest_test_files()]
        replayed = REPLAYED.read_text().splitlines() if REPLAYED.exists() else []
        lines += [f"  {len(replayed)} slow tests replayed, not run: they passed at the same "
                  f"inputs ({REPLAYED.relative_to(ROOT)}, tests/tooling/replay.py)"]
    return lines


# --- floor ---------------------------------------------------------------------------
FLOORS = {"torch + pytest + hypothesis": "import torch, pytest, hypothesis",
          "... + torch._dynamo (an optimizer, a meta tensor)":
              "import torch, pytest, hypothesis, torch._dynamo"}


def measure_floor(repeats: int = COLLECT_REPEATS) -> dict[str, float]:
    """{what is imported: median wall seconds of a python that imports it and exits}."""
    env = {k: v for k, v in os.environ.items() if k not in INHERITED_FROM_MAKE}
    return {label: statistics.median(
        run_measured(f"floor {label}", [sys.executable, "-c", code], env, 0.0).seconds
        for _ in range(repeats)) for label, code in FLOORS.items()}


def describe_floor(floor: dict[str, float]) -> list[str]:
    return [f"floor (python start-up, median of {COLLECT_REPEATS}): "
            + "; ".join(f"{label} {seconds:.2f} s" for label, seconds in floor.items())]


# --- collection ------------------------------------------------------------------------


@dataclass(frozen=True)
class Collection:
    """One command's collection of one section: medians over its runs."""

    section: int
    label: str  # "before" or "now"
    command: str
    seconds: float
    cpu_seconds: float
    pytest_seconds: float  # pytest's own "collected in"


def learner_command(number: int, impl: Path, results: Path) -> str:
    """The pytest command of `make test SECTION=number`, as `make -n` prints it."""
    env = {k: v for k, v in os.environ.items() if k not in INHERITED_FROM_MAKE}
    printed = subprocess.run(["make", "-n", "--no-print-directory", "-o", ".venv/.installed",
                              "test", f"SECTION={number}", f"ELMO_IMPL={impl}",
                              f"RESULTS={results}"], cwd=ROOT, env=env, text=True,
                             capture_output=True, check=True).stdout
    return printed.split("; status=")[0].strip()


def _collect_once(label: str, command: str, env: dict[str, str]) -> tuple[float, float, float]:
    run = run_measured(label, ["bash", "-c", f"{command} --collect-only"], env, 0.0)
    found = _COLLECTED_IN.findall(run.log.read_text())
    return run.seconds, run.cpu_seconds, float(found[-1]) if found else float("nan")


def measure_collection(repeats: int = COLLECT_REPEATS) -> list[Collection]:
    """Both commands for every section, alternating, `repeats` times each."""
    env = {k: v for k, v in os.environ.items() if k not in INHERITED_FROM_MAKE}
    impl, results = REFERENCE_DIR, LOG_DIR / "results-collect.json"
    found = []
    for section in SECTIONS:
        commands = {
            "before": BEFORE.format(python=Path(sys.executable).relative_to(ROOT)
                                    if Path(sys.executable).is_relative_to(ROOT)
                                    else sys.executable, impl=impl, number=section.number),
            "now": learner_command(section.number, impl, results),
        }
        samples: dict[str, list[tuple[float, float, float]]] = {k: [] for k in commands}
        for _ in range(repeats):
            for label, command in commands.items():
                samples[label].append(_collect_once(
                    f"collect {section.number} {label}", command, env))
        for label, command in commands.items():
            wall, cpu, own = (statistics.median(values) for values in zip(*samples[label],
                                                                          strict=True))
            found.append(Collection(section.number, label, command, wall, cpu, own))
    return found


def describe_collection(found: list[Collection]) -> list[str]:
    lines = [f"collection (--collect-only), median of {COLLECT_REPEATS} runs each:",
             "  before: " + BEFORE.format(python="python", impl="<impl>", number="n"),
             "  now:    what `make test SECTION=n` runs (make -n)"]
    for number in sorted({c.section for c in found}):
        row = {c.label: c for c in found if c.section == number}
        lines.append(f"  SECTION={number}: " + "; ".join(
            f"{label} {c.seconds:.2f} s (CPU {c.cpu_seconds:.2f} s, pytest's collection "
            f"{c.pytest_seconds:.2f} s)" for label, c in row.items()))
    for label in ("before", "now"):
        chosen = [c for c in found if c.label == label]
        lines.append(f"  median over the sections, {label}: "
                     f"{statistics.median(c.seconds for c in chosen):.2f} s, CPU "
                     f"{statistics.median(c.cpu_seconds for c in chosen):.2f} s, pytest's "
                     f"collection {statistics.median(c.pytest_seconds for c in chosen):.2f} s")
    return lines
