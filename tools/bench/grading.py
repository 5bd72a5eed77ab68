"""Grading a class: what the grader's isolation costs a run, and how long a class takes.

    python -m tools.bench.grading [--jobs 2] [--repeats 9]

1. The sandbox's cost: section 1 of the reference (its quickest run, so the cost shows
   most) graded `--repeats` times in bubblewrap and as many times with no isolation, in
   turns, each mode's server started (and torch imported) beforehand; the cost is the
   difference of the medians. Starting a sandbox is measured apart (`--isolation bwrap`
   starts one per run at once, `--jobs`, once per grading).
2. A generated class of 30: 10 complete (the reference), 10 partial (sections 1 to k done,
   k = 1..8, the rest the handout's stubs), 5 broken and 5 hostile (samples of
   tests/tooling/test_grading.py, on top of the reference), every module but an untouched
   stub different from every other submission's, graded with `--jobs` in one
   command, `--fresh`, in its own work folder (build/bench/grading) after a
   `--prepare-only` there; its wall time and CPU time (every process of it), and the wall
   time of a class of 100 projected from it: the preparation once, the rest (the sections'
   sandboxes' start too) in proportion.
3. What an instructor reads of that class: the class report (`python -m grading.report`) of
   its grades, and the similarity of its submissions (`python -m grading.similarity`, with
   the grades), each one command's wall time.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from course.registry import ROOT, SECTIONS
from grading.sandbox import Limits, Pristine, Sandbox
from tests.tooling.test_grading import (
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
HOSTILE = ("steals_the_answer_key", "forges_in_process", "floods_its_stream",
           "outlives_and_harms", "lock_channel")


@dataclass(frozen=True)
class GradingBench:
    isolated_s: list[float]  # section 1's run, in bubblewrap, each repeat
    unisolated_s: list[float]  # the same with no isolation
    start_s: float  # a sandbox started: its server imports torch
    prepare_s: float  # `--prepare-only`, the cache warm
    class_s: float  # the class of CLASS_SIZE, wall clock
    class_cpu_s: float | None  # and its CPU time, every process of it (where counted)
    jobs: int
    returncode: int
    load: float  # the machine's load average at the end (1 min)
    report_s: float  # the class report of its grades, wall clock
    similarity_s: float  # the similarity of its submissions, with the grades

    @property
    def sandbox_cost_s(self) -> float:
        return statistics.median(self.isolated_s) - statistics.median(self.unisolated_s)

    @property
    def projected_cpu_s(self) -> float:
        """A class of PROJECTED_SIZE's CPU time, shared by `jobs` otherwise idle cores: what
        the grading needs at the least, whatever else runs on the machine."""
        return (self.class_cpu_s or 0.0) * PROJECTED_SIZE / CLASS_SIZE / self.jobs

    @property
    def projected_s(self) -> float:
        """A class of PROJECTED_SIZE: the preparation once, the grading in proportion."""
        return self.prepare_s + (self.class_s - self.prepare_s) * PROJECTED_SIZE / CLASS_SIZE


def build_class(folder: Path) -> list[Path]:
    """The class of 30, written to `folder`, in the order it is graded."""
    if folder.exists():
        shutil.rmtree(folder)
    hostile = hostile_samples({"repo": str(ROOT), "work": str(WORK_DIR), "klass": str(folder)})
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
    """Section 1's run time in each isolation, `repeats` times, the two taking turns; and
    (as "start") the first run in bubblewrap, which starts the sandbox."""
    source = REFERENCE[SECTIONS[0].module].encode()
    sandboxes = {mode: Sandbox(WORK_DIR / mode, Pristine(), Limits(), mode)
                 for mode in ("none", "bwrap")}
    times: dict[str, list[float]] = {mode: [] for mode in sandboxes}
    try:
        for mode, sandbox in sandboxes.items():
            started = time.perf_counter()
            sandbox.run_section(SECTIONS[0], source)  # the server's imports
            times[f"{mode} start"] = [time.perf_counter() - started]
        for _ in range(repeats):
            for mode, sandbox in sandboxes.items():
                times[mode].append(sandbox.run_section(SECTIONS[0], source).seconds)
        return times
    finally:
        for sandbox in sandboxes.values():
            sandbox.close()


def cpu_group() -> tuple[Path, str] | None:
    """A cgroup of this machine's (cpuacct in cgroup v1, any in v2) in which what a command
    and all its processes use of the CPU is counted: its folder and the file that says it;
    None where it cannot be made."""
    for mount, usage in (("/sys/fs/cgroup/cpuacct", "cpuacct.usage"),
                         ("/sys/fs/cgroup", "cpu.stat")):
        try:
            folder = Path(mount) / f"bench-grading-{os.getpid()}"
            folder.mkdir(exist_ok=True)
            if (folder / usage).exists():
                return folder, usage
            folder.rmdir()
        except OSError:
            continue
    return None


def grading(*args: str) -> tuple[float, float | None, int]:
    """Wall and CPU seconds (None where no cgroup counts them) of one grading command: the
    grader's, its sandboxes' and its runs'; and its exit status."""
    group, started = cpu_group(), time.perf_counter()
    join = (lambda: (group[0] / "cgroup.procs").write_text("0")) if group else None
    run = subprocess.run([sys.executable, "-m", "grading", *args, "--work-dir", str(WORK_DIR),
                          "--quiet"], cwd=ROOT, stdout=subprocess.DEVNULL,
                         stderr=subprocess.DEVNULL, preexec_fn=join)
    wall, cpu = time.perf_counter() - started, None
    if group:
        text = (group[0] / group[1]).read_text()
        cpu = int(text) / 1e9 if group[1] == "cpuacct.usage" else int(
            text.split("usage_usec")[1].split()[0]) / 1e6
        group[0].rmdir()
    return wall, cpu, run.returncode


def measure(jobs: int = 2, repeats: int = 9) -> GradingBench:
    times = sandbox_runs(repeats)
    submissions = build_class(WORK_DIR.parent / "grading-class")
    prepare_s, _, _ = grading("--prepare-only")
    class_s, cpu_s, code = grading(*map(str, submissions), "--jobs", str(jobs), "--fresh",
                                   "--json", str(WORK_DIR.parent / "grading-class.json"))
    load = os.getloadavg()[0]
    grades, out = WORK_DIR.parent / "grading-class.json", WORK_DIR.parent / "class-reading"
    report_s = timed("grading.report", str(grades), "--out", str(out))
    similarity_s = timed("grading.similarity", str(submissions[0].parent), "--grades",
                         str(grades), "--out", str(out))
    return GradingBench(times["bwrap"], times["none"], times["bwrap start"][0], prepare_s,
                        class_s, cpu_s, jobs, code, load, report_s, similarity_s)


def timed(module: str, *args: str) -> float:
    """Wall seconds of `python -m module args` (NaN where it fails)."""
    started = time.perf_counter()
    run = subprocess.run([sys.executable, "-m", module, *args], cwd=ROOT,
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - started if run.returncode == 0 else float("nan")


def describe(bench: GradingBench) -> list[str]:
    def median(values: list[float]) -> str:
        return f"median {statistics.median(values):.3f} s of {len(values)}"

    return [
        f"section 1 of the reference, in bubblewrap:  {median(bench.isolated_s)}",
        f"section 1 of the reference, no isolation:   {median(bench.unisolated_s)}",
        f"the sandbox's cost per run: {bench.sandbox_cost_s:+.3f} s",
        f"a sandbox started (once per --jobs): {bench.start_s:.1f} s",
        f"--prepare-only (cache warm): {bench.prepare_s:.1f} s",
        f"a class of {CLASS_SIZE} (10 complete, 10 partial, 5 broken, 5 hostile), --jobs "
        f"{bench.jobs}: {bench.class_s:.1f} s wall"
        + (f", {bench.class_cpu_s:.1f} s CPU" if bench.class_cpu_s is not None else "")
        + ("" if bench.returncode == 0 else f", exit {bench.returncode}")
        + f" (load {bench.load:.1f} at the end)",
        f"a class of {PROJECTED_SIZE}, projected: {bench.projected_s / 60:.1f} min"
        + (f"; its CPU time over {bench.jobs} cores: {bench.projected_cpu_s / 60:.1f} min"
           if bench.class_cpu_s is not None else ""),
        f"its class report (python -m grading.report): {bench.report_s:.1f} s; its "
        f"similarity (python -m grading.similarity --grades): {bench.similarity_s:.1f} s",
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
    parser.add_argument("--repeats", type=int, default=9, help="timed runs per isolation")
    args = parser.parse_args(argv)
    print(*describe(measure(args.jobs, args.repeats)), sep="\n")


if __name__ == "__main__":
    main()
