"""ELMo on real English, on the reference: `make demo-real`.

    python -m tools.demo_real [--seeds 5] [--out build/demo-real] [--jobs 2] [--scale cpu]
    python -m tools.demo_real --budget SECONDS     # which pre-training a biLM's SECONDS of CPU
                                                   # buy best: build/demo-real/budget.json
    python -m tools.demo_real --commit [RESULTS]   # RESULTS (default build/demo-real/
                                                   # results.json) -> docs/results-real.json,
                                                   # with the budget's, and every table
    python -m tools.demo_real --stale              # warn (exit 0) when docs/results-real.json
                                                   # was made by other code than today's

It runs `analyses.real_english`'s pipeline on `solutions/` (the same code that `make
replicate-real` runs on a learner's `exercises/`): per seed, pre-train the word biLM and
section 8's character biLM on WordNet's definitions, then read their layers on WordNet's
sense-labelled examples against the priors and an untrained biLM, and read the seeds
together into intervals and verdicts (`analyses.real_findings`). The pre-trained biLMs are
cached, so a second run only measures. It writes to `--out`:

    results.json    every number (the schema is `analyses.real_results`')
    layers.png      per test and layer: the pre-trained and the untrained biLM's accuracy
                    with its 95 % interval, and the priors
    findings.png    the comparisons named in advance, each a difference with its interval
    rare.png        the word and the character biLM on the examples whose word is <unk>
    nearest.txt     seed 0: a few test sentences' nearest training examples per layer (the
                    paper's Table 4)

On a GPU (section 1's `get_device`) it runs the `full` scale: every definition, several
epochs, a larger biLM; `--scale full` asks for it anywhere (hours on a CPU: each run of the
cpu scale times a fraction of it and states the cost).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import multiprocessing
import os
import sys
from pathlib import Path

import torch

from analyses import real_english, real_results
from course.registry import shown
from tools import reference, results
from tools.bench.run import machine

BUDGET_OUT = real_results.DEMO_OUT / "budget.json"
# What `--budget` compares: each a change to the cpu scale's biLM and its pre-training,
# trained for the same CPU seconds from seed 0.
_CPU = real_english.SCALES["cpu"]
BUDGET_CONFIGS = {
    f"the cpu scale: every definition as it comes, batches of {_CPU.batch_tokens:,} tokens, "
    f"learning rate {_CPU.lr:g}": {},
    "a sample of 300,000 tokens, seen again": {"tokens": 300_000},
    "a sample of 100,000 tokens, seen again": {"tokens": 100_000},
    "a wider biLM: embedding 128, hidden 256": {"embedding_dim": 128, "hidden_dim": 256},
    "batches of 2,048 tokens, learning rate 0.01": {"batch_tokens": 2_048, "lr": 0.01},
    "batches of 256 tokens, learning rate 0.003": {"batch_tokens": 256, "lr": 0.003},
}


def commit(path: Path) -> None:
    """Copy the results at `path` to the committed file, with the budget's measurements
    (`BUDGET_OUT` when there, else the committed ones), and regenerate every table."""
    found = json.loads(path.read_text())
    if BUDGET_OUT.exists():
        found["budget"] = json.loads(BUDGET_OUT.read_text())
    elif real_results.REFERENCE_RESULTS.exists():
        found["budget"] = json.loads(real_results.REFERENCE_RESULTS.read_text()).get("budget")
    problems = real_results.validate(found)
    if problems:
        raise SystemExit(f"{shown(path)}: " + "; ".join(problems))
    real_results.REFERENCE_RESULTS.write_text(json.dumps(found, indent=1) + "\n")
    toy = results.load()
    for table_file in results.TABLE_FILES:
        table_file.write_text(results.render(table_file.read_text(), toy))
    print(f"{shown(real_results.REFERENCE_RESULTS)} and the tables of "
          f"{', '.join(shown(p) for p in results.TABLE_FILES)} written")


def stale_warning(committed: dict, code: str) -> str | None:
    """A warning when the `committed` results were made by other code than `code` (a
    `real_english.code_digest`), else None."""
    made = committed["run"].get("code")
    if made == code:
        return None
    return (f"WARNING: {shown(real_results.REFERENCE_RESULTS)} was made at commit "
            f"{committed['run'].get('commit', 'unknown')} by code of digest {made}, and the "
            f"code's digest is now {code}: its numbers may no longer be what the code gives. "
            "Run `make demo-real` and `python -m tools.demo_real --commit`.")


def _budget_in_worker(task: tuple[str, dict, float]) -> tuple[str, dict]:
    label, change, seconds = task
    torch.set_num_threads(1)
    sections = reference()
    scale = dataclasses.replace(real_english.SCALES["cpu"], name="budget", epochs=1_000,
                                **change)
    corpus = real_english.gloss_corpus(sections, scale)
    model = real_english.make_bilm(sections, corpus, scale, 0)
    record = real_english.pretrain(sections, model, corpus, scale, 0, scale.epochs,
                                   torch.device("cpu"), label, lambda _: None,
                                   cpu_budget=seconds)
    ppl = real_english.perplexity(sections, model, corpus.heldout, corpus.word2idx)
    print(f"{label}: {record['trained'] / record['tokens']:.2f} passes, held-out perplexity "
          f"{ppl['forward']:.1f}", flush=True)
    return label, {"change": change, "trained": record["trained"],
                   "passes": record["trained"] / record["tokens"],
                   "cpu_seconds": record["cpu_seconds"], "perplexity": ppl}


def budget(seconds: float, jobs: int) -> dict:
    """Each of `BUDGET_CONFIGS` trained for `seconds` of CPU in `jobs` processes: {"seconds",
    "machine", "load", "configs": {label: {change, trained, passes, cpu_seconds,
    perplexity}}}."""
    load = real_english.LoadSampler()
    tasks = [(label, change, seconds) for label, change in BUDGET_CONFIGS.items()]
    with multiprocessing.get_context("fork").Pool(jobs) as workers:
        found = dict(workers.map(_budget_in_worker, tasks, chunksize=1))
    return {"seconds": seconds, **machine(), "load": load.summary(), "configs": found}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tools.demo_real", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seeds", type=int, default=5, help="seeds 0..N-1 (default 5)")
    parser.add_argument("--out", type=Path, default=real_results.DEMO_OUT)
    parser.add_argument("--scale", choices=sorted(real_english.SCALES), default=None,
                        help="default: full on a GPU, cpu otherwise")
    parser.add_argument("--jobs", type=int, default=min(2, os.cpu_count() or 1),
                        help="processes at once on a CPU (default 2, or 1 on one core)")
    parser.add_argument("--threads", type=int, default=1, help="torch threads per process")
    parser.add_argument("--commit", nargs="?", type=Path, const=real_results.DEMO_OUT /
                        "results.json", metavar="RESULTS",
                        help="commit RESULTS to docs/results-real.json and write the tables")
    parser.add_argument("--budget", type=float, metavar="SECONDS",
                        help="compare pre-trainings of SECONDS of CPU each")
    parser.add_argument("--stale", action="store_true",
                        help="warn when the committed results were made by other code")
    args = parser.parse_args(argv)
    if args.commit:
        commit(args.commit)
        return 0
    if args.stale:
        warning = stale_warning(real_results.load(), real_english.code_digest(reference()))
        print(warning or f"{shown(real_results.REFERENCE_RESULTS)}: made by today's code")
        return 0
    if min(args.seeds, args.jobs, args.threads) < 1:
        parser.error("--seeds, --jobs and --threads must be at least 1")
    if args.budget:
        found = budget(args.budget, args.jobs)
        BUDGET_OUT.parent.mkdir(parents=True, exist_ok=True)
        BUDGET_OUT.write_text(json.dumps(found, indent=1) + "\n")
        print(f"{shown(BUDGET_OUT)}; `python -m tools.demo_real --commit` commits it")
        return 0
    found = real_english.run(reference(), list(range(args.seeds)),
                             real_english.SCALES.get(args.scale), jobs=args.jobs,
                             threads=args.threads)
    found["run"] = {"command": f"python -m tools.demo_real --seeds {args.seeds} --jobs "
                               f"{args.jobs}" + (f" --scale {args.scale}" if args.scale else ""),
                    **machine(), **found["run"]}
    real_results.write_outputs(found, args.out)
    print(f"\ndone in {found['run']['seconds']:.0f} s ({found['run']['cpu_seconds']:.0f} s of "
          f"CPU, load average {found['run']['load']['mean']:.1f}); `python -m tools.demo_real "
          "--commit` commits these results and writes the tables")
    return 0


if __name__ == "__main__":
    sys.exit(main())
