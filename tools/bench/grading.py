"""Grading a class: what the grader's isolation costs a run, and how long a class takes.

    python -m tools.bench.grading [--jobs 2] [--repeats 5]

1. The sandbox's cost: section 1 of the reference (its quickest run, so the cost shows
   most) graded `--repeats` times with each run isolated by namespaces and as many times with
   none, in turns, through one fork server each; the cost is the difference of the medians.
2. A generated class of 30: 10 complete (the reference), 10 partial (sections 1 to k done,
   k = 1..7, the rest the handout's stubs), 5 broken and 5 hostile (the samples of
   tests/tooling/test_grading.py, on top of the reference), every module but an untouched
   stub different from every other submission's, graded with `--jobs` in one
   command, `--fresh`, in its own work folder (build/bench/grading) after a
   `--prepare-only` there; its wall time, and the same for a class of 100 projected from it:
   the preparation once, the rest in proportion.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import subprocess
import sys
import sysconfig
import time
from dataclasses import dataclass
from pathlib import Path

from course.registry import ROOT, SECTIONS
from grading.sandbox import Limits, Pristine, Sandbox
from tests.tooling.test_grading import (
    DAEMON_SECONDS,
    REFERENCE,
    SAMPLES,
    STUBS,
    hostile_samples,
    write_submission,
)

WORK_DIR = ROOT / "build" / "bench" / "grading"
CLASS_SIZE, PROJECTED_SIZE = 30, 100
SANDBOX_COST_S = 0.3  # the most the isolation may add to a run
PROJECTED_MINUTES = 15.0  # the most a class of 100 may take on 2 cores, --jobs 2
BROKEN = ("hard_crash", "syntax_error", "import_error", "hogs_memory_and_output", "partly_done")
HOSTILE = ("steals_the_answer_key", "forges_in_process", "forges_by_introspection",
           "outlives_its_run", "harms_the_class")


@dataclass(frozen=True)
class GradingBench:
    isolated_s: list[float]  # section 1's run, isolated by namespaces, each repeat
    unisolated_s: list[float]  # the same with no isolation
    prepare_s: float  # `--prepare-only`, the cache warm
    class_s: float  # the class of CLASS_SIZE, wall clock
    jobs: int
    returncode: int

    @property
    def sandbox_cost_s(self) -> float:
        return statistics.median(self.isolated_s) - statistics.median(self.unisolated_s)

    @property
    def projected_s(self) -> float:
        """A class of PROJECTED_SIZE: the preparation once, the grading in proportion."""
        return self.prepare_s + (self.class_s - self.prepare_s) * PROJECTED_SIZE / CLASS_SIZE


def build_class(folder: Path) -> list[Path]:
    """The class of 30, written to `folder`, in the order it is graded."""
    if folder.exists():
        shutil.rmtree(folder)
    paths = {"repo": str(ROOT), "work": str(WORK_DIR), "klass": str(folder),
             "reports": str(folder.parent / "reports"),
             "site": sysconfig.get_paths()["purelib"], "marker": str(folder / "escaped"),
             "daemons": DAEMON_SECONDS}
    hostile = hostile_samples(paths)
    members = {f"complete_{i:02}": REFERENCE for i in range(10)}
    for i in range(10):
        done = 1 + i % len(SECTIONS)
        members[f"partial_{i:02}_{done}_done"] = {
            s.module: (REFERENCE if s.number <= done else STUBS)[s.module] for s in SECTIONS}
    members |= {f"broken_{name}": {**REFERENCE, **SAMPLES[name]} for name in BROKEN}
    members |= {f"hostile_{name}": {**REFERENCE, **hostile[name]} for name in HOSTILE}
    assert len(members) == CLASS_SIZE
    # Each learner's own code is their own: a module that is not the handout's stub differs
    # from every other submission's (the grader runs a module that two hold only once).
    return [write_submission(folder / name, {
        module: source if source == STUBS[module] else f"{source}\n# {name}\n"
        for module, source in modules.items()}) for name, modules in members.items()]


def sandbox_runs(repeats: int) -> dict[str, list[float]]:
    """Section 1's run time in each isolation, `repeats` times, the two taking turns."""
    source = REFERENCE[SECTIONS[0].module].encode()
    sandboxes = {mode: Sandbox(WORK_DIR, Pristine(), {}, Limits(), False, mode, 1)
                 for mode in ("none", "namespaces")}
    times: dict[str, list[float]] = {mode: [] for mode in sandboxes}
    try:
        for sandbox in sandboxes.values():
            sandbox.run_section(SECTIONS[0], source, "warm-up")  # the server's imports
        for _ in range(repeats):
            for mode, sandbox in sandboxes.items():
                times[mode].append(sandbox.run_section(SECTIONS[0], source, mode).seconds)
        return times
    finally:
        for sandbox in sandboxes.values():
            sandbox.close()


def grading(*args: str) -> tuple[float, int]:
    started = time.perf_counter()
    run = subprocess.run([sys.executable, "-m", "grading", *args, "--work-dir", str(WORK_DIR),
                          "--quiet"], cwd=ROOT, stdout=subprocess.DEVNULL,
                         stderr=subprocess.DEVNULL)
    return time.perf_counter() - started, run.returncode


def measure(jobs: int = 2, repeats: int = 5) -> GradingBench:
    times = sandbox_runs(repeats)
    submissions = build_class(WORK_DIR.parent / "grading-class")
    prepare_s, _ = grading("--prepare-only")
    class_s, code = grading(*map(str, submissions), "--jobs", str(jobs), "--fresh",
                            "--json", str(WORK_DIR.parent / "grading-class.json"))
    return GradingBench(times["namespaces"], times["none"], prepare_s, class_s, jobs, code)


def describe(bench: GradingBench) -> list[str]:
    def median(values: list[float]) -> str:
        return f"median {statistics.median(values):.3f} s of {len(values)}"

    return [
        f"section 1 of the reference, isolated by namespaces: {median(bench.isolated_s)}",
        f"section 1 of the reference, no isolation:           {median(bench.unisolated_s)}",
        f"the sandbox's cost per run: {bench.sandbox_cost_s:+.3f} s",
        f"--prepare-only (cache warm): {bench.prepare_s:.1f} s",
        f"a class of {CLASS_SIZE} (10 complete, 10 partial, 5 broken, 5 hostile), --jobs "
        f"{bench.jobs}: {bench.class_s:.1f} s wall"
        + ("" if bench.returncode == 0 else f", exit {bench.returncode}"),
        f"a class of {PROJECTED_SIZE}, projected: {bench.projected_s / 60:.1f} min",
    ]


def goals(bench: GradingBench, goal: type) -> list:
    """The goals this benchmark measures, as `goal`s (`tools.bench.run.Goal`)."""
    minutes = bench.projected_s / 60
    return [goal(f"the sandbox costs <= {SANDBOX_COST_S:g} s per run",
                 f"{bench.sandbox_cost_s:+.3f} s", bench.sandbox_cost_s <= SANDBOX_COST_S,
                 f"{bench.sandbox_cost_s - SANDBOX_COST_S:+.3f} s against the limit"),
            goal(f"a class of {PROJECTED_SIZE} grades in <= {PROJECTED_MINUTES:g} min "
                 f"(--jobs {bench.jobs}, projected)", f"{minutes:.1f} min",
                 minutes <= PROJECTED_MINUTES and bench.returncode == 0,
                 f"{minutes - PROJECTED_MINUTES:+.1f} min against the limit")]


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m tools.bench.grading",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("--jobs", type=int, default=2, help="sections graded at once")
    parser.add_argument("--repeats", type=int, default=5, help="timed runs per isolation")
    args = parser.parse_args(argv)
    print(*describe(measure(args.jobs, args.repeats)), sep="\n")


if __name__ == "__main__":
    main()
