"""`make bench`: every benchmark in one run, then the goals, met or missed.

    python -m tools.bench.run [--seed 0] [--threads 1] [--repeats 20] [--no-test-loop]
                        [--no-check] [--no-grading] [--record BENCHMARKS.md]

1. time to target loss: the reference recipe against the seed's (bench/time_to_target.py),
   and in the same run, that a padded batch trains as one sentence at a time (bench/batching.py);
2. extraction throughput, batched vs one sentence at a time (bench/extraction.py);
3. the test loop: `make test` on the reference, whole and section by section, its collection
   before and now, and `make check` (bench/test_loop.py), a few minutes;
   `--no-test-loop` skips it (and 5.), `--no-check` only `make check`.
4. grading: the sandbox's cost per run and a generated class of 30 graded with --jobs 2
   (bench/grading.py), several minutes; `--no-grading` skips it.
5. the watch loop: `make watch`, save by save, beside `make test SECTION=n`, every section
   (bench/watch_loop.py), a few minutes; recorded in a block of its own (its own markers),
   which `python -m tools.bench.watch_loop --record` also writes alone.

The training and extraction run on `--threads` torch threads: one by default, because every
tensor here is small and on two shared cores a second thread mostly adds synchronisation
(`make test` runs on torch's default). `--record FILE` writes the results between the markers
of FILE, which keeps its text outside them. The last line printed is
`time-to-target speedup: <ratio>x`.
"""

from __future__ import annotations

import argparse
import datetime
import os
import platform
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy
import torch

from course.registry import ROOT
from tools.bench import batching, extraction, test_loop, time_to_target, watch_loop
from tools.bench import grading as grading_bench

MIN_SPEEDUP = 20.0
BEGIN, END = "<!-- bench:begin -->", "<!-- bench:end -->"


@dataclass(frozen=True)
class Goal:
    name: str
    measured: str
    met: bool
    by: str  # how far from the limit, in the goal's own unit

    def line(self) -> str:
        return f"{'met   ' if self.met else 'MISSED'} {self.name}: {self.measured} ({self.by})"


def goals(target: time_to_target.TimeToTarget, check: batching.BatchingCheck,
          loop: list[test_loop.CommandRun]) -> list[Goal]:
    speedup = target.speedup or 0.0
    found = [Goal(f"reference reaches the target >= {MIN_SPEEDUP:g}x faster", f"{speedup:.1f}x",
                  speedup >= MIN_SPEEDUP, f"{speedup / MIN_SPEEDUP:.1f} times the goal"),
             Goal("padded batch equals one sentence at a time",
                  f"{check.tolerance_used:.2g} of the tolerance used", check.passed,
                  f"atol {batching.ATOL:g}, rtol {batching.RTOL:g}")]
    for run in loop:
        limit = run.limit_s  # each command's goal is the test loop's (bench/test_loop.py)
        ok = run.returncode == 0 and run.seconds <= limit
        found.append(Goal(f"make {run.label} under {limit:g} s", f"{run.seconds:.1f} s", ok,
                          f"{run.seconds - limit:+.1f} s against the limit"
                          + ("" if run.returncode == 0 else f", exit {run.returncode}")))
    return found


def machine() -> dict[str, str]:
    cpu = platform.processor() or platform.machine()
    cpuinfo = Path("/proc/cpuinfo")
    if cpuinfo.exists():
        models = [line.split(":", 1)[1].strip() for line in cpuinfo.read_text().splitlines()
                  if line.startswith("model name")]
        cpu = models[0] if models else cpu
    gpu = torch.cuda.get_device_name(0) if torch.cuda.is_available() else "none"
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, text=True,
                            capture_output=True).stdout.strip() or "unknown"
    return {
        "machine": f"{platform.system()} {platform.machine()}, {cpu}, "
                   f"{os.cpu_count()} CPU cores, GPU: {gpu}",
        "versions": f"Python {platform.python_version()}, torch {torch.__version__}, "
                    f"numpy {numpy.__version__}",
        "commit": commit,
    }


def record(path: Path, header: dict[str, str], sections: dict[str, list[str]],
           found: list[Goal], begin: str = BEGIN, end: str = END) -> None:
    """Replace what lies between `begin` and `end` in `path` with this run's results."""
    text = path.read_text()
    if begin not in text or end not in text:
        raise SystemExit(f"{path}: expected the markers {begin} and {end}; found none")
    rows = ["| | |", "|---|---|", *(f"| {key} | {value} |" for key, value in header.items())]
    rows += ["", "| goal | measured | verdict |", "|---|---|---|"]
    rows += [f"| {g.name} | {g.measured} | {'met' if g.met else '**missed**'}: {g.by} |"
             for g in found]
    for title, lines in sections.items():
        rows += ["", f"**{title}**", "", "```text", *lines, "```"]
    before, rest = text.split(begin, 1)
    after = rest.split(end, 1)[1]
    path.write_text(f"{before}{begin}\n{chr(10).join(rows)}\n{end}{after}")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m tools.bench.run", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seed", type=int, default=0, help="initial weights and shuffling")
    parser.add_argument("--threads", type=int, default=1, help="torch threads (default 1)")
    parser.add_argument("--repeats", type=int, default=20, help="timed extraction repeats")
    parser.add_argument("--no-test-loop", action="store_true",
                        help="skip timing make test-solutions and make check")
    parser.add_argument("--no-check", action="store_true",
                        help="in the test loop, skip timing make check")
    parser.add_argument("--no-grading", action="store_true",
                        help="skip grading a generated class")
    parser.add_argument("--record", type=Path, metavar="FILE",
                        help="write the results into FILE between its bench markers")
    command_line = sys.argv[1:] if argv is None else argv
    args = parser.parse_args(command_line)
    torch.set_num_threads(args.threads)
    started = datetime.datetime.now(datetime.UTC)
    load_before = os.getloadavg()
    sections: dict[str, list[str]] = {}

    def report(title: str, lines: list[str]) -> None:
        sections[title] = lines
        print(f"\n== {title}", *lines, sep="\n", flush=True)

    print(f"training both recipes (seed {args.seed}, {args.threads} thread(s)); "
          "the seed recipe takes a minute or two", flush=True)
    target = time_to_target.measure(args.seed)
    check = batching.check(target.reference.model)
    report("1. time to target loss", time_to_target.describe(target) + batching.describe(check))
    report("2. extraction throughput",
           extraction.describe(extraction.measure(target.reference.model, args.repeats)))
    loop: list[test_loop.CommandRun] = []
    if not args.no_test_loop:
        print("\ntiming make test-solutions twice and make check: a few minutes", flush=True)
        loop = test_loop.measure(include_check=not args.no_check)
        collection = test_loop.measure_collection()
        report("3. the test loop", test_loop.describe(loop) + [
            "peak RSS: the largest single process of the command's tree"]
            + test_loop.describe_floor(test_loop.measure_floor())
            + test_loop.describe_collection(collection))
    found = goals(target, check, loop)
    if not args.no_grading:  # 4. grading: its own goals, beside the others
        print("\ngrading a generated class of 30 with --jobs 2: about five minutes", flush=True)
        graded = grading_bench.measure()
        report("4. grading", grading_bench.describe(graded))
        found += grading_bench.goals(graded, Goal)
    watched, watch_goals = None, []
    if not args.no_test_loop:  # 5. the watch loop
        print("\ntiming make watch save by save, beside make test: a few minutes", flush=True)
        watched = watch_loop.measure()
        print(f"\n== {watch_loop.TITLE}", *watch_loop.describe(watched), sep="\n", flush=True)
        watch_goals = watch_loop.goals(watched, Goal)
    load_after = os.getloadavg()
    print("\n== goals", *(g.line() for g in found + watch_goals), sep="\n")
    if args.record:
        header = {
            "date": started.strftime("%Y-%m-%d %H:%M UTC"),
            "command": "`" + " ".join(["python -m tools.bench.run", *command_line]) + "`",
            "seed, threads": f"seed {args.seed}; {args.threads} torch thread(s) for training "
                             "and extraction",
            **machine(),
            "load average (1 min)": f"{load_before[0]:.2f} at the start, "
                                    f"{load_after[0]:.2f} at the end",
        }
        record(args.record, header, sections, found)
        if watched is not None:
            record(args.record, header, {watch_loop.TITLE: watch_loop.describe(watched)},
                   watch_goals, watch_loop.BEGIN, watch_loop.END)
        print(f"results written to {args.record}")
    print(time_to_target.describe(target)[-1])  # again, so that it is the last line


if __name__ == "__main__":
    main()
