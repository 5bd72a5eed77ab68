"""The demo's measured results: their schema, and the tables of the README and
docs/analysis.md generated from them, so that they always agree (and the page's sentences
that read them, tools/results_text.py).

    python -m tools.results check            # exit 1 if a committed table (or the reference's
                                             # summary the handout ships) differs from what
                                             # docs/results.json gives, or it is invalid
    python -m tools.results write [RESULTS]  # copy RESULTS (default build/demo/results.json,
                                             # what `make demo` writes) to docs/results.json
                                             # and regenerate every table from it

A table lives in its Markdown file between `<!-- table: NAME -->` and `<!-- /table -->`;
`write` replaces what is between, `check` compares it. `write` also writes
`analyses/reference_targets.py`, what `make replicate` shows of the reference beside a
learner's biLMs: each target's reading, numbers only.

The results (`analyses.experiments.run` measures them, `tools.demo` writes them) hold, beside
what the run was (`run`: command, machine, versions, commit, threads) and `seeds`, the
records of the word biLM; "trained" says whether a record is of the pre-trained biLM of its
seed or of the untrained one it started from (the same shape and initial weights):

    context      {seed, trained, split, word, layer, same, different, baseline}: the mean
                 cosine of the word's same-sense and different-sense pairs (word "all": every
                 pair), and the split's anisotropy baseline; split "train" or "heldout"
    probes       {seed, trained, task, layer, accuracy, weights, gamma, chance, n}: task
                 "word_class" or "word_sense"; layer "mix" (the learned weights, a list, and
                 gamma) or 0, 1, 2 (a single-layer probe, weights and gamma null)
    nearest      {seed, trained, split, word, layer, accuracy, chance, n}: 1-nearest-
                 neighbour sense accuracy
    pretraining  {seed, train, heldout, seconds, cpu_seconds}: the trained biLM's losses after
                 the last epoch and its training time, wall clock and CPU; `floors` holds the
                 corpus's entropy floors
    char         the same four kinds of record for section 8's character biLM
    neighbours   {seed, model, trained, query, relative, rank, candidates}: where the
                 relative of a word the corpus lacks ranks among the query's nearest words
                 (1 = the nearest) of `candidates`; model "word" (the query is <unk>) or
                 "char"

The readings of the records (`gap`, `weights`, ...) and the targets are `analyses.targets`'.
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import sys
from collections.abc import Callable
from pathlib import Path

import numpy as np

from analyses import real_results, targets
from analyses.targets import (
    CONTEXT_LAYERS,
    LAYERS,
    MIN_GAP,
    MODEL_NAMES,
    MODELS,
    SPLIT_NAMES,
    SPLITS,
    TASK_NAMES,
    TASKS,
    spread,
    view,
)
from course.registry import BUILD_DIR, ROOT, shown

from . import results_text

COMMITTED = ROOT / "docs" / "results.json"
DEMO_RESULTS = BUILD_DIR / "demo" / "results.json"
TABLE_FILES = (ROOT / "README.md", ROOT / "docs" / "analysis.md")
REFERENCE_SUMMARY = ROOT / "analyses" / "reference_targets.py"
RECORDS = {
    "context": ("seed", "trained", "split", "word", "layer", "same", "different", "baseline"),
    "probes": ("seed", "trained", "task", "layer", "accuracy", "weights", "gamma", "chance",
               "n"),
    "nearest": ("seed", "trained", "split", "word", "layer", "accuracy", "chance", "n"),
    "pretraining": ("seed", "train", "heldout", "seconds", "cpu_seconds"),
}
NEIGHBOURS = ("seed", "model", "trained", "query", "relative", "rank", "candidates")
TOP_LEVEL = ("run", "seeds", "floors", *RECORDS, "char", "neighbours")
STATES = {True: "trained", False: "untrained"}
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
        elif "trained" in fields and not isinstance(record["trained"], bool):
            problems.append(f"{kind}[{n}]: trained must be true or false: {record}")
    return problems


def _record_problems(results: dict, seeds: list[int], prefix: str) -> list[str]:
    """What is wrong with the records of one biLM (`RECORDS`' kinds)."""
    problems = []
    for kind, fields in RECORDS.items():
        problems += _fields_problems(results[kind], fields, seeds, prefix + kind)
    if problems:
        return problems
    for record in results["context"] + results["nearest"]:
        if record.get("split") not in SPLITS or record.get("layer") not in LAYERS:
            problems.append(f"split or layer not one of {SPLITS}, {LAYERS}: {record}")
    for record in results["probes"]:
        mixed = record.get("layer") == "mix"
        if record.get("task") not in TASKS or not (mixed or record.get("layer") in LAYERS):
            problems.append(f"task or layer not one of {TASKS}, mix or {LAYERS}: {record}")
        elif mixed != isinstance(record.get("weights"), list) or mixed != isinstance(
                record.get("gamma"), float):
            problems.append(f"weights and gamma are a list and a number for the mix and null "
                            f"otherwise: {record}")
    for kind in ("context", "nearest", "probes"):
        for seed in {r["seed"] for r in results[kind]}:
            states = {r["trained"] for r in results[kind] if r["seed"] == seed}
            if states != {True, False}:
                problems.append(f"{prefix}{kind}: seed {seed} lacks the trained or the "
                                "untrained biLM's records")
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


# --- the tables ------------------------------------------------------------------------------


def _rows(header: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    return "\n".join(lines + ["| " + " | ".join(row) + " |" for row in rows]) + "\n"


def _seeds(results: dict) -> str:
    seeds = results["seeds"]
    return f"seeds {seeds[0]}-{seeds[-1]}" if len(seeds) > 1 else f"seed {seeds[0]}"


def _both(results: dict, model: str = "word") -> dict[bool, dict]:
    """{True: the trained biLM's records, False: the untrained one's}."""
    return {trained: view(results, model, trained) for trained in STATES}


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
    """Pooled same-sense and different-sense cosines, their gap and the baseline, per split
    and layer, for the trained biLM and the untrained one."""
    rows = []
    both = _both(results)
    for split in SPLITS:
        for layer in LAYERS:
            cells = [SPLIT_NAMES[split], str(layer)]
            for trained in STATES:
                def column(key, records=both[trained]["context"], layer=layer, split=split):
                    return targets._per_seed(records, lambda r: r[key], split=split,
                                             word="all", layer=layer)
                same, different = column("same"), column("different")
                cells += [spread(same), spread(different), spread(same - different),
                          spread(column("baseline"))]
            rows.append(cells)
    header = ["sentences", "layer"]
    for state in STATES.values():
        header += [f"{state}: same sense", f"{state}: different sense", f"{state}: gap",
                   f"{state}: two different words"]
    return _rows(header, rows)


def table_gaps(results: dict) -> str:
    """Each word's gap at layers 1 and 2, trained and untrained, and on how many seeds the
    trained one's exceeds the untrained one's by at least MIN_GAP."""
    rows = []
    both = _both(results)
    for split in SPLITS:
        for word in [*targets.words(both[True]), "all"]:
            cells = [SPLIT_NAMES[split], word]
            for layer in CONTEXT_LAYERS:
                trained, untrained = (targets.gap(both[t], split, word, layer) for t in STATES)
                cells += [spread(trained), spread(untrained),
                          f"{int((trained - untrained >= MIN_GAP - 1e-9).sum())}/{len(trained)}"]
            rows.append(cells)
    header = ["sentences", "word"]
    for layer in CONTEXT_LAYERS:
        header += [f"gap, layer {layer}", "untrained", f"by >= {MIN_GAP}"]
    return _rows(header, rows)


def table_targets(results: dict) -> str:
    return targets.markdown_table(results)


def table_probes(results: dict) -> str:
    """Per task, the learned weights (with the mix's accuracy and gamma) and the single-layer
    probes, of the trained biLM and of the untrained one."""
    rows = []
    both = _both(results)
    for task in TASKS:
        chance = f"{targets.chance(both[True], task):.3f}"
        n = str(next(r["n"] for r in both[True]["probes"] if r["task"] == task))
        for trained, state in STATES.items():
            mix = targets.weights(both[trained], task)
            rows.append([TASK_NAMES[task], state, "learned weight s_j",
                         *(spread(mix[:, k]) for k in LAYERS),
                         spread(targets.mix_accuracy(both[trained], task)),
                         spread(targets.gamma(both[trained], task)), chance, n])
        for trained, state in STATES.items():
            single = targets.probes(both[trained], task)
            rows.append([TASK_NAMES[task], state, "probe on the layer alone",
                         *(spread(single[:, k]) for k in LAYERS), "", "", chance, n])
    return _rows(["task", "biLM", "", "layer 0", "layer 1", "layer 2", "accuracy of the mix",
                  "gamma", "chance", "n"], rows)


def table_probes_by_seed(results: dict) -> str:
    rows = []
    for seed in results["seeds"]:
        for task in TASKS:
            for trained, state in STATES.items():
                chosen = {r["layer"]: r for r in results["probes"] if r["seed"] == seed
                          and r["task"] == task and r["trained"] == trained}
                rows.append([str(seed), TASK_NAMES[task], state,
                             *(f"{w:.3f}" for w in chosen["mix"]["weights"]),
                             f"{chosen['mix']['gamma']:.3f}",
                             f"{chosen['mix']['accuracy']:.3f}",
                             *(f"{chosen[k]['accuracy']:.3f}" for k in LAYERS)])
    return _rows(["seed", "task", "biLM", "s0", "s1", "s2", "gamma", "accuracy of the mix",
                  "probe L0", "probe L1", "probe L2"], rows)


def table_nearest(results: dict) -> str:
    rows = []
    both = _both(results)
    for split in SPLITS:
        n = sum(r["n"] for r in both[True]["nearest"] if r["split"] == split
                and r["layer"] == 0 and r["seed"] == results["seeds"][0])
        for layer in LAYERS:
            rows.append([SPLIT_NAMES[split], str(layer),
                         *(spread(targets.nearest(both[t], split, layer)) for t in STATES),
                         f"{targets.nearest_chance(both[True], split):.3f}", str(n)])
    return _rows(["queries", "layer", "1-NN sense accuracy, trained", "untrained", "chance",
                  "n"], rows)


def table_characters(results: dict) -> str:
    """The word and the character biLM side by side, each trained and untrained."""
    views = {(model, trained): view(results, model, trained)
             for model in MODELS for trained in STATES}

    def row(name: str, value: Callable[[dict], np.ndarray], untrained: bool = True,
            show: Callable[[np.ndarray], str] = spread) -> list[str]:
        return [name, *(show(value(v)) if trained or untrained else ""
                        for (_, trained), v in views.items())]

    def pretraining(key: str) -> Callable[[dict], np.ndarray]:
        return lambda v: targets._per_seed(v["pretraining"], lambda r: r[key])

    chance = {task: targets.chance(views["word", True], task) for task in TASKS}
    rows = [row("loss after the last epoch, training sentences", pretraining("train"), False),
            row("loss after the last epoch, held-out sentences", pretraining("heldout"), False),
            row("training time, seconds of CPU (one torch thread)", pretraining("cpu_seconds"),
                False)]
    rows += [row(f"held-out: same minus different sense, layer {layer}",
                 lambda v, layer=layer: targets.gap(v, "heldout", "all", layer))
             for layer in CONTEXT_LAYERS]
    rows += [row(f"held-out: two different words (the baseline), layer {layer}",
                 lambda v, layer=layer: targets.baseline(v, "heldout", layer)) for layer in LAYERS]
    rows += [row(f"held-out: 1-NN sense accuracy, layer {layer}",
                 lambda v, layer=layer: targets.nearest(v, "heldout", layer))
             for layer in CONTEXT_LAYERS]
    for task in TASKS:
        rows.append(row(f"{TASK_NAMES[task]}: accuracy of the mix (chance {chance[task]:.3f})",
                        lambda v, task=task: targets.mix_accuracy(v, task)))
        rows.append(row(f"{TASK_NAMES[task]}: learned weights of layers 0 / 1 / 2 (means)",
                        lambda v, task=task: targets.weights(v, task), show=_means))
        rows += [row(f"{TASK_NAMES[task]}: probe on layer {layer} alone",
                     lambda v, task=task, layer=layer: targets.probes(v, task)[:, layer])
                 for layer in LAYERS]
    header = [""]
    for model, trained in views:
        header.append(MODEL_NAMES[model] if trained else "untrained")
    return _rows(header, rows)


def _means(values: np.ndarray) -> str:
    """(seeds, layers) as each layer's mean over seeds: '0.25 / 0.36 / 0.40'."""
    return " / ".join(f"{mean:.2f}" for mean in values.mean(axis=0))


def table_unseen_words(results: dict) -> str:
    views = {(model, trained): view(results, model, trained)
             for model in MODELS for trained in (False, True)}
    first = views["word", True]
    rows = [[query, relative, *(spread(targets.ranks(v, query), 1) for v in views.values())]
            for query, relative in targets.queries(first)]
    rows.append(["mean rank", "", *(spread(targets.mean_ranks(v), 1) for v in views.values())])
    rows.append([f"relative first (of {len(targets.queries(first))})", "",
                 *(spread(targets.firsts(v), 1) for v in views.values())])
    candidates = first["neighbours"][0]["candidates"]
    rows.append([f"chance: a ranking of the {candidates} words that knows nothing", "",
                 *([f"{targets.chance_rank(first):.1f}"] * len(views))])
    return _rows(["word the corpus lacks", "relative",
                  *(f"rank: {'' if trained else 'untrained '}{MODEL_NAMES[model]}"
                    for model, trained in views)], rows)


TABLES: dict[str, Callable[[dict], str]] = {
    name.removeprefix("table_"): function for name, function in globals().items()
    if name.startswith("table_")} | results_text.SENTENCES
# Every block's name that `render` writes: these tables and ELMo on real English's.
GENERATED = frozenset(TABLES) | frozenset(real_results.TABLES)


def render(text: str, results: dict) -> str:
    """`text` with every table between its markers regenerated from `results`; the tables
    of ELMo on real English (`real_*`) from their own committed results
    (`analyses.real_results`, `python -m tools.demo_real --commit`).

    Raises:
        KeyError: a marker names no table.
    """
    def replace(match: re.Match) -> str:
        name = match["name"]
        table = (real_results.table(name) if name in real_results.TABLES
                 else TABLES[name](results))
        return match[1] + table + match[4]

    return TABLE.sub(replace, text)


def stale_tables(results: dict, files: tuple[Path, ...] = TABLE_FILES) -> list[str]:
    """The files whose tables differ from what `results` gives, and the reference's summary
    where it differs (or is missing)."""
    stale = [shown(path) for path in files if render(path.read_text(), results)
             != path.read_text()]
    written = REFERENCE_SUMMARY.read_text() if REFERENCE_SUMMARY.exists() else ""
    return stale + ([shown(REFERENCE_SUMMARY)] if written != reference_summary(results) else [])


def _wrapped(key: str, value) -> str:
    """`"key": value` as JSON, a list of the seeds' values on as many lines as the line
    length needs (it is Python the course ships and lints)."""
    head, items = f"{json.dumps(key)}: ", json.dumps(value, ensure_ascii=False)
    if not isinstance(value, list):
        return head + items
    lines, line = [], " " * 10 + head + "["
    for n, item in enumerate(json.dumps(x) for x in value):
        piece = item + ("]" if n == len(value) - 1 else ", ")
        if len(line) + len(piece) > 99:
            lines.append(line.rstrip())
            line = " " * (len(head) + 11)
        line += piece
    return "\n".join([*lines, line]).lstrip()


def reference_summary(results: dict) -> str:
    """`analyses/reference_targets.py`: `analyses.targets.summary` of `results`, as Python."""
    found = targets.summary(results)
    lines = ['"""What `make replicate` shows of the reference implementation beside your '
             'biLMs: each', "target's reading over the reference's seeds, trained against "
             "untrained. Numbers only, written", "from the course's measured results; do not "
             'edit.', '"""', "", f'SUMMARY = {{"seeds": {found["seeds"]}, "targets": {{']
    for claim, reading in found["targets"].items():
        values = reading.pop("values")
        cells = [f"{json.dumps(key)}: {json.dumps(value, ensure_ascii=False)}"
                 for key, value in reading.items()]
        lines += [f"    {json.dumps(claim)}:", f"        {{{', '.join(cells[:3])},",
                  f"         {', '.join(cells[3:])},", '         "values": {',
                  *(f"          {_wrapped(key, value)}," for key, value in values.items()),
                  "         }},"]
    numbers = re.sub(r"\[\s+([^\[\]{}]*?)\s+\]",  # a list of numbers on one line
                     lambda m: "[" + " ".join(m.group(1).split()) + "]",
                     json.dumps(targets.key_means(results), indent=1, ensure_ascii=False))
    return "\n".join([*lines, "}}", "", "# What `make test` sets beside a passed section's own "
                      "numbers (`analyses.targets.key_means`).",
                      f"NUMBERS = {numbers}", ""])


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
        REFERENCE_SUMMARY.write_text(reference_summary(results))
        print(f"tables of {', '.join(shown(p) for p in TABLE_FILES)} and "
              f"{shown(REFERENCE_SUMMARY)} written from {shown(COMMITTED)}")
        return 0
    stale = stale_tables(results)
    print("\n".join(f"{name}: differs from what {shown(COMMITTED)} gives: run "
                    "`python -m tools.results write`" for name in stale)
          or f"the tables match {shown(COMMITTED)}")
    return 1 if stale else 0


if __name__ == "__main__":
    sys.exit(main())
