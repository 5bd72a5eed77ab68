"""The reference's numbers of the notebooks' predict-and-run experiments, and their seed noise.

    python -m tools.predictions [--seeds 5] [--jobs 2]     # make predictions

runs every experiment of `analyses.predictions` on the reference over seeds 0 .. N-1, a seed to
a process (one torch thread each), and writes `analyses/predictions.json`: per experiment,
each seed's numbers (as built, switched, untrained) and the seconds it took, and the summary
the notebooks print beside a learner's numbers: the mean and standard deviation over the
seeds of each, and of the effect (switched minus as built, seed by seed). An experiment
belongs in the course only where its effect is at least twice its seed noise
(`kept`); tests/tooling/test_predictions.py holds every experiment to it. The file names the
command, the machine and its load, so that its times read with what they were measured on.
"""

from __future__ import annotations

import argparse
import datetime
import json
import multiprocessing
import os
import platform
import statistics
import sys
import time

import torch

from analyses import predictions
from course.harness import Harness
from course.long_command import each, forking, ignore_in_worker
from course.registry import REFERENCE_DIR, SECTIONS, shown

SEEDS = 5
NOISE_FACTOR = 2  # an effect is kept where |mean| >= NOISE_FACTOR * its sd over the seeds


def _worker() -> None:
    torch.set_num_threads(1)
    ignore_in_worker()


def _seed(seed: int) -> tuple[int, dict[str, dict]]:
    """Every experiment of one seed on the reference, each timed (wall clock and this
    process's CPU); the biLM as built is trained once for them all (at the course's seed it
    comes from `course.pretrained`'s cache, as in a learner's notebook)."""
    sections = Harness(REFERENCE_DIR).sections(SECTIONS[-1])
    found = {}
    for name, experiment in predictions.EXPERIMENTS.items():
        wall, cpu = time.perf_counter(), time.process_time()
        measured = experiment.measure(sections, seed)
        found[name] = {"seed": seed, **{k: round(v, 4) for k, v in measured.items()},
                       "seconds": round(time.perf_counter() - wall, 1),
                       "cpu_seconds": round(time.process_time() - cpu, 1)}
    return seed, found


def summary(runs: list[dict]) -> dict:
    """Mean and sd over the seeds of each measured number and of the effect, and whether
    the effect is beyond `NOISE_FACTOR` sd of its seed noise."""
    def spread(values: list[float]) -> dict:
        return {"mean": round(statistics.fmean(values), 4),
                "sd": round(statistics.stdev(values), 4) if len(values) > 1 else 0.0}

    effect = [run[predictions.SWITCHED] - run[predictions.DEFAULT] for run in runs]
    found = {"n": len(runs), **{key: spread([run[key] for run in runs])
                                for key in predictions.MEASURED},
             "effect": spread(effect)}
    found["kept"] = abs(found["effect"]["mean"]) >= NOISE_FACTOR * found["effect"]["sd"]
    return found


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tools.predictions",
                                     description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=SEEDS, help=f"default {SEEDS}")
    parser.add_argument("--jobs", type=int, default=2, help="processes at once (default 2)")
    args = parser.parse_args(argv)
    load = os.getloadavg()
    started = time.perf_counter()
    with forking():
        pool = multiprocessing.get_context("fork").Pool(args.jobs, initializer=_worker)
    runs: dict[str, list[dict]] = {name: [] for name in predictions.EXPERIMENTS}
    try:
        for seed, found in each(pool.imap_unordered(_seed, range(args.seeds))):
            for name, run in found.items():
                runs[name].append(run)
                print(f"seed {seed}, {name}: {run[predictions.DEFAULT]:.3f} -> "
                      f"{run[predictions.SWITCHED]:.3f} (untrained "
                      f"{run[predictions.UNTRAINED]:.3f}) in {run['seconds']:.0f} s", flush=True)
    finally:
        pool.terminate()
        pool.join()
    results = {
        "command": f"make predictions PREDICTION_SEEDS={args.seeds}",
        "measured": datetime.date.today().isoformat(),
        "machine": f"{os.cpu_count()} cores ({platform.machine()}), load average "
                   f"{load[0]:.1f} at the start, {args.jobs} processes of one torch thread",
        "torch": torch.__version__,
        "experiments": {},
    }
    for name, experiment in predictions.EXPERIMENTS.items():
        found = sorted(runs[name], key=lambda run: run["seed"])
        results["experiments"][name] = {
            "section": experiment.section, "switch": experiment.switch,
            "quantity": experiment.quantity, "seeds": found, "summary": summary(found)}
        s = results["experiments"][name]["summary"]
        print(f"{name}: effect {s['effect']['mean']:+.3f}, seed sd {s['effect']['sd']:.3f} "
              f"over {s['n']} seeds: {'kept' if s['kept'] else 'NOT beyond 2 sd'}")
    predictions.RESULTS.write_text(json.dumps(results, indent=1) + "\n")
    print(f"wrote {shown(predictions.RESULTS)} in {time.perf_counter() - started:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
