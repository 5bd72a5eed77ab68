"""The demo's measured results: their schema, their readings against the targets, and the
tables of the README and docs/analysis.md, generated from them so that they always agree.

    python -m tools.results check            # exit 1 if a committed table differs from
                                             # what docs/results.json gives, or it is invalid
    python -m tools.results write [RESULTS]  # copy RESULTS (default build/demo/results.json,
                                             # what `make demo` writes) to docs/results.json
                                             # and regenerate every table from it

A table lives in its Markdown file between `<!-- table: NAME -->` and `<!-- /table -->`;
`write` replaces what is between, `check` compares it. The results (`tools.demo` writes
them) hold, beside what the run was (`run`: command, machine, versions, commit, threads)
and `seeds`:

    context      {seed, split, word, layer, same, different, baseline}: the mean cosine of
                 the word's same-sense and different-sense pairs (word "all": every pair),
                 and the split's anisotropy baseline; split "train" or "heldout"
    probes       {seed, task, layer, accuracy, weights, chance, n}: task "word_class" or
                 "word_sense"; layer "mix" (the learned weights, a list) or 0, 1, 2 (a
                 single-layer probe, weights null)
    nearest      {seed, split, word, layer, accuracy, chance, n}: 1-nearest-neighbour sense
                 accuracy
    pretraining  {seed, train, heldout, seconds, cpu_seconds}: the losses after the last
                 epoch and the training time, wall clock and CPU; `floors` holds the
                 corpus's entropy floors
    char         the same four kinds of record for section 8's character biLM
    neighbours   {seed, model, query, relative, rank, candidates}: where the relative of a
                 word the corpus lacks ranks among the query's nearest words (1 = the
                 nearest) of `candidates`; model "word" (the query is <unk>), "untrained"
                 (a character biLM before training) or "char"
"""

from __future__ import annotations

import argparse
import json
import math
import re
import shutil
import sys
from collections.abc import Callable
from pathlib import Path

import numpy as np

from course.registry import BUILD_DIR, ROOT, shown

COMMITTED = ROOT / "docs" / "results.json"
DEMO_RESULTS = BUILD_DIR / "demo" / "results.json"
TABLE_FILES = (ROOT / "README.md", ROOT / "docs" / "analysis.md")
RECORDS = {
    "context": ("seed", "split", "word", "layer", "same", "different", "baseline"),
    "probes": ("seed", "task", "layer", "accuracy", "weights", "chance", "n"),
    "nearest": ("seed", "split", "word", "layer", "accuracy", "chance", "n"),
    "pretraining": ("seed", "train", "heldout", "seconds", "cpu_seconds"),
}
NEIGHBOURS = ("seed", "model", "query", "relative", "rank", "candidates")
TOP_LEVEL = ("run", "seeds", "floors", *RECORDS, "char", "neighbours")
MODELS = ("word", "untrained", "char")
MODEL_NAMES = {"word": "word biLM", "untrained": "untrained character biLM",
               "char": "character biLM"}
SPLITS = ("train", "heldout")
TASKS = ("word_class", "word_sense")
LAYERS = (0, 1, 2)
CONTEXT_LAYERS = (1, 2)  # the layers that read the context; layer 0 is the token alone
MIN_GAP = 0.1  # the same-minus-different gap that counts as telling the senses apart
SPLIT_NAMES = {"train": "training", "heldout": "held-out"}
TASK_NAMES = {"word_class": "word class", "word_sense": "word sense"}
TABLE = re.compile(r"(<!-- table: (?P<name>[a-z_]+) -->\n)(?P<body>.*?)(<!-- /table -->)",
                   re.DOTALL)


# --- the schema ------------------------------------------------------------------------------


def validate(results: dict) -> list[str]:
    """What is wrong with `results`, one line each; [] when it has the schema above."""
    problems = []
    if sorted(results) != sorted(TOP_LEVEL):
        problems.append(f"top-level keys {sorted(results)}, expected {sorted(TOP_LEVEL)}")
        return problems
    if not isinstance(results["char"], dict) or sorted(results["char"]) != sorted(RECORDS):
        problems.append(f"char must hold the records {sorted(RECORDS)}")
        return problems
    problems += _record_problems(results, results["seeds"], "")
    problems += _record_problems(results["char"], results["seeds"], "char.")
    problems += _fields_problems(results["neighbours"], NEIGHBOURS, results["seeds"],
                                 "neighbours")
    problems += [f"model not one of {MODELS}: {record}" for record in results["neighbours"]
                 if record.get("model") not in MODELS]
    return problems


def _fields_problems(records: list[dict], fields: tuple[str, ...], seeds: list[int],
                     kind: str) -> list[str]:
    problems = []
    for n, record in enumerate(records):
        if tuple(sorted(record)) != tuple(sorted(fields)):
            problems.append(f"{kind}[{n}] has keys {sorted(record)}, expected {sorted(fields)}")
        elif record["seed"] not in seeds:
            problems.append(f"{kind}[{n}]: seed {record['seed']} is not one of {seeds}")
    return problems


def _record_problems(results: dict, seeds: list[int], prefix: str) -> list[str]:
    """What is wrong with the records of one biLM (`RECORDS`' kinds)."""
    problems = []
    for kind, fields in RECORDS.items():
        problems += _fields_problems(results[kind], fields, seeds, prefix + kind)
    for record in results["context"] + results["nearest"]:
        if record.get("split") not in SPLITS or record.get("layer") not in LAYERS:
            problems.append(f"split or layer not one of {SPLITS}, {LAYERS}: {record}")
    for record in results["probes"]:
        mixed = record.get("layer") == "mix"
        if record.get("task") not in TASKS or not (mixed or record.get("layer") in LAYERS):
            problems.append(f"task or layer not one of {TASKS}, mix or {LAYERS}: {record}")
        elif mixed != isinstance(record.get("weights"), list):
            problems.append(f"weights are a list for the mix and null otherwise: {record}")
    return problems


def load(path: Path = COMMITTED) -> dict:
    """The results in `path`, checked.

    Raises:
        ValueError: they do not have the schema.
    """
    results = json.loads(path.read_text())
    problems = validate(results)
    if problems:
        raise ValueError(f"{shown(path)}: " + "; ".join(problems))
    return results


# --- readings: one number per seed, and what held on how many ------------------------------


def _per_seed(records: list[dict], value: Callable[[dict], float], **match) -> np.ndarray:
    """`value` of the record matching `match`, for every seed in order."""
    chosen = sorted((r for r in records if all(r[k] == v for k, v in match.items())),
                    key=lambda r: r["seed"])
    return np.array([value(r) for r in chosen], dtype=float)


def gap(results: dict, split: str, word: str, layer: int) -> np.ndarray:
    """(seeds,) same-sense minus different-sense cosine."""
    return _per_seed(results["context"], lambda r: r["same"] - r["different"], split=split,
                     word=word, layer=layer)


def words(results: dict) -> list[str]:
    """The target words, without "all"."""
    return list(dict.fromkeys(r["word"] for r in results["context"] if r["word"] != "all"))


def weights(results: dict, task: str) -> np.ndarray:
    """(seeds, layers) the learned softmax weights."""
    chosen = sorted((r for r in results["probes"] if r["task"] == task and r["layer"] == "mix"),
                    key=lambda r: r["seed"])
    return np.array([r["weights"] for r in chosen])


def probes(results: dict, task: str) -> np.ndarray:
    """(seeds, layers) the single-layer probes' accuracy."""
    return np.stack([_per_seed(results["probes"], lambda r: r["accuracy"], task=task,
                               layer=layer) for layer in LAYERS], axis=1)


def char_view(results: dict) -> dict:
    """`results` as the readings above see them, with the character biLM's records in place
    of the word biLM's."""
    return {**results, **results["char"]}


def baseline(results: dict, split: str, layer: int) -> np.ndarray:
    """(seeds,) the cosine of two tokens of different words (the anisotropy baseline)."""
    return _per_seed(results["context"], lambda r: r["baseline"], split=split, word="all",
                     layer=layer)


def queries(results: dict) -> list[tuple[str, str]]:
    """(word the corpus lacks, its relative), in order."""
    return list(dict.fromkeys((r["query"], r["relative"]) for r in results["neighbours"]))


def ranks(results: dict, model: str, query: str) -> np.ndarray:
    """(seeds,) the rank of the query's relative among its nearest words."""
    return _per_seed(results["neighbours"], lambda r: r["rank"], model=model, query=query)


def mean_ranks(results: dict, model: str) -> np.ndarray:
    """(seeds,) the relatives' rank, averaged over the queries."""
    return np.mean([ranks(results, model, query) for query, _ in queries(results)], axis=0)


def firsts(results: dict, model: str) -> np.ndarray:
    """(seeds,) how many queries have their relative as their nearest word."""
    return np.sum([ranks(results, model, query) == 1 for query, _ in queries(results)], axis=0)


def chance_rank(results: dict) -> float:
    """The relative's mean rank for a ranking that knows nothing: (candidates + 1) / 2."""
    return (results["neighbours"][0]["candidates"] + 1) / 2


def targets(results: dict) -> list[tuple[str, np.ndarray, int]]:
    """(target, whether it held on each seed, on how many seeds it must) for every target:
    the context gaps on 9 seeds in 10, the layer preferences of section 7 on 8 in 10; for the
    character biLM, its context gaps and the relatives of unseen words on 9 in 10, its
    layer-0 probe on 8 in 10."""
    n = len(results["seeds"])
    nine, eight = math.ceil(0.9 * n - 1e-9), math.ceil(0.8 * n - 1e-9)
    found = []
    for split in SPLITS:
        for layer in CONTEXT_LAYERS:
            for word in words(results):
                found.append((f"{SPLIT_NAMES[split]}: '{word}' gap >= {MIN_GAP} at layer "
                              f"{layer}", gap(results, split, word, layer) >= MIN_GAP, nine))
        found.append((f"{SPLIT_NAMES[split]}: pooled gap larger at layer 2 than at layer 1",
                      gap(results, split, "all", 2) > gap(results, split, "all", 1), nine))
    lower = "a lower layer (0 or 1)"
    class_weights, sense_weights = weights(results, "word_class"), weights(results, "word_sense")
    class_probes, sense_probes = probes(results, "word_class"), probes(results, "word_sense")
    found += [
        (f"word class: learned weights prefer {lower}", class_weights.argmax(1) < 2, eight),
        (f"word class: single-layer probes prefer {lower}",
         class_probes[:, :2].max(1) > class_probes[:, 2], eight),
        ("word sense: learned weights prefer layer 2", sense_weights.argmax(1) == 2, eight),
        ("word sense: single-layer probes prefer layer 2",
         sense_probes[:, 2] > sense_probes[:, :2].max(1), eight),
    ]
    char = char_view(results)
    found += [(f"character biLM, held-out: pooled gap >= {MIN_GAP} at layer {layer}",
               gap(char, "heldout", "all", layer) >= MIN_GAP, nine) for layer in CONTEXT_LAYERS]
    found += [
        ("character biLM: its layer-0 word-class probe beats the word biLM's",
         probes(char, "word_class")[:, 0] > class_probes[:, 0], eight),
        ("words the corpus lacks: the character biLM ranks their relatives nearer than the "
         "word biLM", mean_ranks(results, "char") < mean_ranks(results, "word"), nine),
    ]
    return found


# --- the tables ------------------------------------------------------------------------------


def spread(values, decimals: int = 3) -> str:
    """'mean ± sd' (sd with ddof 1; 0 for one value), three decimals unless told."""
    values = np.asarray(values, dtype=float)
    sd = values.std(ddof=1) if len(values) > 1 else 0.0
    return f"{values.mean():.{decimals}f} ± {sd:.{decimals}f}"


def _rows(header: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    return "\n".join(lines + ["| " + " | ".join(row) + " |" for row in rows]) + "\n"


def _seeds(results: dict) -> str:
    seeds = results["seeds"]
    return f"seeds {seeds[0]}-{seeds[-1]}" if len(seeds) > 1 else f"seed {seeds[0]}"


def table_run(results: dict) -> str:
    run = results["run"]
    return _rows(["", ""], [["command", f"`{run['command']}`"], ["seeds", _seeds(results)],
                            ["machine", f"{run['machine']}; {run['threads']} torch thread(s)"],
                            ["versions", run["versions"]], ["commit", run["commit"]]])


def table_pretraining(results: dict) -> str:
    records, floors = results["pretraining"], results["floors"]
    column = {key: [r[key] for r in records]
              for key in ("train", "heldout", "seconds", "cpu_seconds")}
    return _rows(
        ["", "training sentences", "held-out sentences"],
        [["loss after the last epoch", spread(column["train"]), spread(column["heldout"])],
         ["floor: a biLM that knows which openings go with which endings",
          f"{floors['phrases']:.3f}", f"{floors['phrases']:.3f}"],
         ["floor: a biLM that knows the training sentences by heart",
          f"{floors['corpus']:.3f}", "infinite (it gives them probability 0)"],
         ["training time, seconds (wall clock)", spread(column["seconds"]), ""],
         ["training time, seconds of CPU (one torch thread)", spread(column["cpu_seconds"]),
          ""]])


def table_context(results: dict) -> str:
    rows = []
    for split in SPLITS:
        for layer in LAYERS:
            def column(key, layer=layer, split=split):
                return _per_seed(results["context"], lambda r: r[key], split=split,
                                 word="all", layer=layer)
            same, different, baseline = column("same"), column("different"), column("baseline")
            rows.append([SPLIT_NAMES[split], str(layer), spread(same), spread(different),
                         spread(same - different), spread(baseline), spread(same - baseline),
                         spread(different - baseline)])
    return _rows(["sentences", "layer", "same sense", "different sense", "gap",
                  "two different words", "same, adjusted", "different, adjusted"], rows)


def table_gaps(results: dict) -> str:
    rows = []
    for split in SPLITS:
        for word in [*words(results), "all"]:
            cells = [SPLIT_NAMES[split], word]
            for layer in CONTEXT_LAYERS:
                values = gap(results, split, word, layer)
                cells += [spread(values), f"{values.min():.3f}",
                          f"{int((values >= MIN_GAP).sum())}/{len(values)}"]
            rows.append(cells)
    return _rows(["sentences", "word", "gap, layer 1", "lowest", f">= {MIN_GAP}",
                  "gap, layer 2", "lowest", f">= {MIN_GAP}"], rows)


def table_targets(results: dict) -> str:
    rows = [[name, f"{int(held.sum())}/{len(held)}", f"{wanted}/{len(held)}",
             "met" if held.sum() >= wanted else "**missed**"]
            for name, held, wanted in targets(results)]
    return _rows(["target", "held on", "needed", ""], rows)


def table_probes(results: dict) -> str:
    rows = []
    for task in TASKS:
        mix = weights(results, task)
        single = probes(results, task)
        accuracy = _per_seed(results["probes"], lambda r: r["accuracy"], task=task, layer="mix")
        chance, n = (next(r[k] for r in results["probes"] if r["task"] == task)
                     for k in ("chance", "n"))
        rows.append([TASK_NAMES[task], "learned weight s_j",
                     *(spread(mix[:, k]) for k in LAYERS), spread(accuracy), f"{chance:.3f}",
                     str(n)])
        rows.append([TASK_NAMES[task], "probe on the layer alone",
                     *(spread(single[:, k]) for k in LAYERS), "", f"{chance:.3f}", str(n)])
    return _rows(["task", "", "layer 0", "layer 1", "layer 2", "accuracy of the mix", "chance",
                  "n"], rows)


def table_probes_by_seed(results: dict) -> str:
    rows = []
    for seed in results["seeds"]:
        for task in TASKS:
            chosen = {r["layer"]: r for r in results["probes"]
                      if r["seed"] == seed and r["task"] == task}
            rows.append([str(seed), TASK_NAMES[task],
                         *(f"{w:.3f}" for w in chosen["mix"]["weights"]),
                         f"{chosen['mix']['accuracy']:.3f}",
                         *(f"{chosen[k]['accuracy']:.3f}" for k in LAYERS)])
    return _rows(["seed", "task", "s0", "s1", "s2", "accuracy of the mix", "probe L0",
                  "probe L1", "probe L2"], rows)


def table_nearest(results: dict) -> str:
    rows = []
    for split in SPLITS:
        for layer in LAYERS:
            records = [r for r in results["nearest"] if r["split"] == split and r["layer"] == layer]
            per_seed = {}
            for r in records:  # pooled over words, each word weighed by its queries
                hits, total = per_seed.get(r["seed"], (0.0, 0))
                per_seed[r["seed"]] = (hits + r["accuracy"] * r["n"], total + r["n"])
            accuracy = [hits / total for hits, total in per_seed.values()]
            chance = sum(r["chance"] * r["n"] for r in records) / sum(r["n"] for r in records)
            n = sum(r["n"] for r in records) // len(per_seed)
            rows.append([SPLIT_NAMES[split], str(layer), spread(accuracy), f"{chance:.3f}",
                         str(n)])
    return _rows(["queries", "layer", "1-NN sense accuracy", "chance", "n"], rows)


def table_characters(results: dict) -> str:
    views = {"word": results, "char": char_view(results)}

    def row(name: str, value: Callable[[dict], np.ndarray]) -> list[str]:
        return [name, *(spread(value(view)) for view in views.values())]

    def pretraining(key: str) -> Callable[[dict], np.ndarray]:
        return lambda view: _per_seed(view["pretraining"], lambda r: r[key])

    chance = {task: next(r["chance"] for r in results["probes"] if r["task"] == task)
              for task in TASKS}
    rows = [row("loss after the last epoch, training sentences", pretraining("train")),
            row("loss after the last epoch, held-out sentences", pretraining("heldout")),
            row("training time, seconds of CPU (one torch thread)", pretraining("cpu_seconds"))]
    rows += [row(f"held-out: same minus different sense, layer {layer}",
                 lambda view, layer=layer: gap(view, "heldout", "all", layer))
             for layer in CONTEXT_LAYERS]
    rows += [row(f"held-out: two different words (the baseline), layer {layer}",
                 lambda view, layer=layer: baseline(view, "heldout", layer)) for layer in LAYERS]
    for task in TASKS:
        rows.append(row(f"{TASK_NAMES[task]}: accuracy of the mix (chance {chance[task]:.3f})",
                        lambda view, task=task: _per_seed(view["probes"], lambda r: r["accuracy"],
                                                          task=task, layer="mix")))
        rows += [row(f"{TASK_NAMES[task]}: probe on layer {layer} alone",
                     lambda view, task=task, layer=layer: probes(view, task)[:, layer])
                 for layer in LAYERS]
    return _rows(["", MODEL_NAMES["word"], MODEL_NAMES["char"]], rows)


def table_unseen_words(results: dict) -> str:
    rows = [[query, relative, *(spread(ranks(results, model, query), 1) for model in MODELS)]
            for query, relative in queries(results)]
    rows.append(["mean rank", "", *(spread(mean_ranks(results, model), 1) for model in MODELS)])
    rows.append([f"relative first (of {len(queries(results))})", "",
                 *(spread(firsts(results, model), 1) for model in MODELS)])
    candidates = results["neighbours"][0]["candidates"]
    rows.append([f"chance: a ranking of the {candidates} words that knows nothing", "",
                 *([f"{chance_rank(results):.1f}"] * len(MODELS))])
    return _rows(["word the corpus lacks", "relative",
                  *(f"rank: {MODEL_NAMES[model]}" for model in MODELS)], rows)


TABLES: dict[str, Callable[[dict], str]] = {
    name.removeprefix("table_"): function for name, function in globals().items()
    if name.startswith("table_")}


def render(text: str, results: dict) -> str:
    """`text` with every table between its markers regenerated from `results`.

    Raises:
        KeyError: a marker names no table.
    """
    def replace(match: re.Match) -> str:
        return match[1] + TABLES[match["name"]](results) + match[4]

    return TABLE.sub(replace, text)


def stale_tables(results: dict, files: tuple[Path, ...] = TABLE_FILES) -> list[str]:
    """The files whose tables differ from what `results` gives."""
    return [shown(path) for path in files if render(path.read_text(), results)
            != path.read_text()]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tools.results", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    commands = parser.add_subparsers(dest="command", required=True)
    commands.add_parser("check", help="exit 1 when a committed table differs from the results")
    write = commands.add_parser("write", help="commit RESULTS and regenerate the tables")
    write.add_argument("results", nargs="?", type=Path, default=DEMO_RESULTS)
    args = parser.parse_args(argv)
    if args.command == "write":
        load(args.results)  # valid, or no copy
        if args.results.resolve() != COMMITTED.resolve():
            shutil.copyfile(args.results, COMMITTED)
    results = load(COMMITTED)
    if args.command == "write":
        for path in TABLE_FILES:
            path.write_text(render(path.read_text(), results))
        print(f"tables of {', '.join(shown(p) for p in TABLE_FILES)} written from "
              f"{shown(COMMITTED)}")
        return 0
    stale = stale_tables(results)
    print("\n".join(f"{name}: its tables differ from {shown(COMMITTED)}: run "
                    "`python -m tools.results write`" for name in stale)
          or f"the tables match {shown(COMMITTED)}")
    return 1 if stale else 0


if __name__ == "__main__":
    sys.exit(main())
