"""ELMo on real English, on the reference: `make demo-real`.

    python -m tools.demo_real [--seeds 5] [--out build/demo-real] [--jobs 2] [--scale cpu]
    python -m tools.demo_real --commit [RESULTS]   # RESULTS (default build/demo-real/
                                                   # results.json) -> docs/results-real.json,
                                                   # and every table generated from it

It runs `course.real_english`'s pipeline on `solutions/` (the same code that `make
replicate-real` runs on a learner's `exercises/`): per seed, pre-train the word biLM and
section 8's character biLM on WordNet's definitions, then read their layers on WordNet's
sense-labelled examples against the baselines. The pre-trained biLMs are cached, so a second
run only measures. It writes to `--out`:

    results.json    every number (the schema is `course.real_results`')
    layers.png      per layer: word sense (synset, supersense) and part of speech, pre-trained
                    and untrained, with the learned mix, the baselines, and layer 2 against
                    layer 1 beside the paper's Tables 5 and 6
    rare.png        the word and the character biLM on the examples whose word is <unk>
    nearest.txt     seed 0: a few test sentences' nearest training examples per layer (the
                    paper's Table 4)

On a GPU (section 1's `get_device`) it trains on all of the definitions for several epochs
(the gpu scale); on a CPU, on a sample, the seeds in `--jobs` processes of one torch thread.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
from pathlib import Path

from course import real_english, real_results
from course.registry import shown
from tools import reference, results
from tools.bench.run import machine


def commit(path: Path) -> None:
    """Copy the results at `path` to the committed file and regenerate every table."""
    real_results.load(path)  # valid, or no copy
    if path.resolve() != real_results.REFERENCE_RESULTS.resolve():
        shutil.copyfile(path, real_results.REFERENCE_RESULTS)
    toy = results.load()
    for table_file in results.TABLE_FILES:
        table_file.write_text(results.render(table_file.read_text(), toy))
    print(f"{shown(real_results.REFERENCE_RESULTS)} and the tables of "
          f"{', '.join(shown(p) for p in results.TABLE_FILES)} written")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tools.demo_real", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seeds", type=int, default=5, help="seeds 0..N-1 (default 5)")
    parser.add_argument("--out", type=Path, default=real_results.DEMO_OUT)
    parser.add_argument("--scale", choices=sorted(real_english.SCALES), default=None,
                        help="default: gpu on a GPU, cpu otherwise")
    parser.add_argument("--jobs", type=int, default=min(2, os.cpu_count() or 1),
                        help="processes at once on a CPU (default 2, or 1 on one core)")
    parser.add_argument("--threads", type=int, default=1, help="torch threads per process")
    parser.add_argument("--commit", nargs="?", type=Path, const=real_results.DEMO_OUT /
                        "results.json", metavar="RESULTS",
                        help="commit RESULTS to docs/results-real.json and write the tables")
    args = parser.parse_args(argv)
    if args.commit:
        commit(args.commit)
        return 0
    if min(args.seeds, args.jobs, args.threads) < 1:
        parser.error("--seeds, --jobs and --threads must be at least 1")
    found = real_english.run(reference(), list(range(args.seeds)),
                             real_english.SCALES.get(args.scale), jobs=args.jobs,
                             threads=args.threads)
    found["run"] = {"command": f"python -m tools.demo_real --seeds {args.seeds} --jobs "
                               f"{args.jobs}" + (f" --scale {args.scale}" if args.scale else ""),
                    **machine(), **found["run"]}
    real_results.write_outputs(found, args.out)
    print(f"\ndone in {found['run']['seconds']:.0f} s; `python -m tools.demo_real --commit` "
          "commits these results and writes the tables")
    return 0


if __name__ == "__main__":
    sys.exit(main())
