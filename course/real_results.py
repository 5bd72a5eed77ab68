"""The results of ELMo on real English (`course.real_english`): their schema, their readings
against the baselines and the paper, the tables and the figures.

The reference's results are `docs/results-real.json` (a run of the pipeline on the
reference writes `build/demo-real/results.json`, which is committed there); a learner's run
on `exercises/` (`make replicate-real`) writes `build/replicate-real/results.json`, and
`comparison_table` sets the two side by side. The results hold, beside `run` (what ran,
where), `scale` (`real_english.Scale`), `seeds`, `data` (the sizes of what was read),
`ngram` (the held-out perplexities of a unigram and a bigram model) and `nearest` (seed 0:
a few test sentences' nearest training examples per layer), one record per seed in `runs`:

    pretraining  {"word": {history, seconds, cpu_seconds, tokens, perplexity: {forward,
                 backward}}, "char": the same for the character biLM, when trained}
    sense        {"word" | "untrained": {"synset" | "supersense": accuracy per layer}}
    baselines    {"synset" | "supersense": {chance, most_frequent, first_sense}}
    mix          {"weights": s_j, "synset": accuracy, "supersense": accuracy}
    pos          {"word" | "untrained": {layers, mix, weights, majority, n}}
    rare         (with a character biLM) on the test examples whose word the word biLM
                 reads as <unk>: {"word" | "char": {"synset" | "supersense": per layer},
                 "baselines": as above, "pos": {"word" | "char": as pos}}
    counts       {pool, test, lemmas, unknown_test, vocabulary, train_tokens, heldout_tokens}
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from pathlib import Path

import numpy as np
from matplotlib.figure import Figure

from .plots import NOTEBOOK_WIDTH_IN, SMALL
from .registry import BUILD_DIR, ROOT, shown

REFERENCE_RESULTS = ROOT / "docs" / "results-real.json"
DEMO_OUT = BUILD_DIR / "demo-real"
REPLICATE_OUT = BUILD_DIR / "replicate-real"
TOP_LEVEL = ("run", "scale", "seeds", "data", "ngram", "nearest", "runs")
RUN_KEYS = ("seed", "pretraining", "sense", "baselines", "mix", "pos", "counts")
LABELS = ("synset", "supersense")
LABEL_NAMES = {"synset": "synset (word sense)", "supersense": "supersense",
               "pos": "part of speech"}
LAYERS = (0, 1, 2)
BASELINE_NAMES = {"chance": "chance: one of the lemma's senses at random",
                  "most_frequent": "the most frequent sense in the training split",
                  "first_sense": "WordNet's first sense (a prior from outside the split)"}
# The paper's single-layer results (Peters et al. 2018, Sec. 5.3): WSD F1 (Table 5, SemCor
# to the all-words benchmarks) and POS accuracy (Table 6, the Penn Treebank).
PAPER = {"sense": {"layer 1": 67.4, "layer 2": 69.0, "WordNet's first sense": 65.9},
         "pos": {"layer 1": 97.3, "layer 2": 96.8}}


# --- the schema -------------------------------------------------------------------------------


def validate(results: dict) -> list[str]:
    """What is wrong with `results`, one line each; [] when it has the schema above."""
    problems = []
    missing = [key for key in TOP_LEVEL if key not in results]
    if missing:
        return [f"missing top-level keys {missing}"]
    if [run.get("seed") for run in results["runs"]] != results["seeds"]:
        problems.append(f"runs' seeds {[r.get('seed') for r in results['runs']]} are not "
                        f"{results['seeds']}")
    for n, run in enumerate(results["runs"]):
        absent = [key for key in RUN_KEYS if key not in run]
        if absent:
            problems.append(f"runs[{n}] lacks {absent}")
            continue
        for model in ("word", "untrained"):
            for label in LABELS:
                values = run["sense"].get(model, {}).get(label)
                if not (isinstance(values, list) and len(values) == len(LAYERS)):
                    problems.append(f"runs[{n}].sense.{model}.{label} must be one accuracy a "
                                    "layer")
            if len(run["pos"].get(model, {}).get("layers", [])) != len(LAYERS):
                problems.append(f"runs[{n}].pos.{model}.layers must be one accuracy a layer")
    return problems


def load(path: Path | None = None) -> dict:
    """The results in `path` (default: the reference's, `REFERENCE_RESULTS`), checked.

    Raises:
        ValueError: they do not have the schema.
    """
    path = REFERENCE_RESULTS if path is None else Path(path)
    results = json.loads(path.read_text())
    problems = validate(results)
    if problems:
        raise ValueError(f"{shown(path)}: " + "; ".join(problems))
    return results


# --- readings: one number per seed ------------------------------------------------------------


def per_seed(results: dict, value: Callable[[dict], float]) -> np.ndarray:
    """(seeds,) `value` of every seed's record."""
    return np.array([value(run) for run in results["runs"]], dtype=float)


def sense(results: dict, model: str, label: str, layer: int) -> np.ndarray:
    return per_seed(results, lambda r: r["sense"][model][label][layer])


def baseline(results: dict, label: str, name: str) -> np.ndarray:
    return per_seed(results, lambda r: r["baselines"][label][name])


def best_baseline(results: dict, label: str) -> np.ndarray:
    """(seeds,) the best of chance, the most frequent sense, the trained biLM's layer 0 and
    every layer of the untrained biLM: what a contextual layer must beat. WordNet's first
    sense is left out: it knows the sense frequencies of a corpus the others never saw."""
    candidates = [baseline(results, label, "chance"), baseline(results, label, "most_frequent"),
                  sense(results, "word", label, 0),
                  *(sense(results, "untrained", label, k) for k in LAYERS)]
    return np.max(candidates, axis=0)


def pos(results: dict, model: str, layer: int | str) -> np.ndarray:
    """(seeds,) the part-of-speech probe's accuracy on `layer` (or "mix")."""
    if layer == "mix":
        return per_seed(results, lambda r: r["pos"][model]["mix"])
    return per_seed(results, lambda r: r["pos"][model]["layers"][layer])


def has_characters(results: dict) -> bool:
    return all("rare" in run for run in results["runs"]) and bool(results["runs"])


def rare(results: dict, model: str, label: str, layer: int) -> np.ndarray:
    """(seeds,) on the examples whose word the word biLM reads as <unk>: `label` "synset",
    "supersense" or "pos"."""
    if label == "pos":
        return per_seed(results, lambda r: r["rare"]["pos"][model]["layers"][layer])
    return per_seed(results, lambda r: r["rare"][model][label][layer])


def targets(results: dict) -> list[tuple[str, np.ndarray, int]]:
    """(target, whether it held on each seed, on how many seeds it must): on both sense
    tasks, layers 1 and 2 above the best baseline on every seed; the character biLM ahead
    of the word biLM where the word biLM reads the word as <unk>, on most seeds."""
    n = len(results["seeds"])
    found = []
    for label in LABELS:
        best = best_baseline(results, label)
        for layer in (1, 2):
            found.append((f"{label}: layer {layer} beats the best baseline (chance, most "
                          "frequent sense, layer 0, the untrained biLM)",
                          sense(results, "word", label, layer) > best, n))
    if has_characters(results):
        most = math.ceil(0.8 * n - 1e-9)
        for label in (*LABELS, "pos"):
            char = np.max([rare(results, "char", label, k) for k in LAYERS], axis=0)
            word = np.max([rare(results, "word", label, k) for k in LAYERS], axis=0)
            found.append((f"words read as `<unk>`, {LABEL_NAMES[label]}: the character "
                          "biLM's best layer beats the word biLM's", char > word, most))
    return found


# --- the tables -------------------------------------------------------------------------------


def spread(values, decimals: int = 3) -> str:
    """'mean ± sd' (sd with ddof 1; 0 for one value)."""
    values = np.asarray(values, dtype=float)
    sd = values.std(ddof=1) if len(values) > 1 else 0.0
    return f"{values.mean():.{decimals}f} ± {sd:.{decimals}f}"


def rows(header: list[str], body: list[list[str]]) -> str:
    """A Markdown table."""
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    return "\n".join(lines + ["| " + " | ".join(row) + " |" for row in body]) + "\n"


def _seeds(results: dict) -> str:
    seeds = results["seeds"]
    return f"seeds {seeds[0]}-{seeds[-1]}" if len(seeds) > 1 else f"seed {seeds[0]}"


def table_run(results: dict) -> str:
    run, scale, data = results["run"], results["scale"], results["data"]
    return rows(["", ""], [
        ["command", f"`{run['command']}`" if run.get("command") else ""],
        ["seeds", _seeds(results)],
        ["scale", f"{scale['name']}: {data['train_tokens']:,} training tokens of definitions "
                  f"x {scale['epochs']} epochs, vocabulary {data['vocabulary']:,}, "
                  f"embedding {scale['embedding_dim']}, hidden {scale['hidden_dim']}"],
        ["device", f"{run['device']}; {run['jobs']} process(es) of {run['threads']} torch "
                   "thread(s)"],
        ["machine", run.get("machine", "")], ["versions", run.get("versions", "")],
        ["commit", run.get("commit", "")],
        ["wall clock, the whole run", f"{run['seconds']:.0f} s"]])


def table_pretraining(results: dict) -> str:
    models = ["word", *(["char"] if has_characters(results) else [])]
    names = {"word": "word biLM", "char": "character biLM"}
    body = []
    for model in models:
        ppl = {d: per_seed(results, lambda r, d=d, m=model: r["pretraining"][m]["perplexity"][d])
               for d in ("forward", "backward")}
        cpu = per_seed(results, lambda r, m=model: r["pretraining"][m]["cpu_seconds"])
        body.append([names[model], spread(ppl["forward"], 1), spread(ppl["backward"], 1),
                     spread(cpu, 0)])
    ngram = results["ngram"]
    body.append(["unigram model", f"{ngram['unigram']:.1f}", f"{ngram['unigram']:.1f}", ""])
    body.append(["bigram model (interpolated Kneser-Ney)", f"{ngram['bigram_forward']:.1f}",
                 f"{ngram['bigram_backward']:.1f}", ""])
    return rows(["held-out definitions", "perplexity, forward", "perplexity, backward",
                 "training, seconds of CPU"], body)


def table_sense(results: dict) -> str:
    body = [[BASELINE_NAMES[name], *(spread(baseline(results, label, name)) for label in LABELS)]
            for name in BASELINE_NAMES]
    for model, name in (("untrained", "untrained biLM"), ("word", "pre-trained biLM")):
        body += [[f"{name}, layer {k}", *(spread(sense(results, model, label, k))
                                          for label in LABELS)] for k in LAYERS]
    body.append(["pre-trained biLM, learned scalar mix",
                 *(spread(per_seed(results, lambda r, x=label: r["mix"][x])) for label in LABELS)])
    return rows(["nearest sense (test examples)", *(LABEL_NAMES[x] for x in LABELS)], body)


def table_pos(results: dict) -> str:
    majority = per_seed(results, lambda r: r["pos"]["word"]["majority"])
    body = [["majority class of the training folds", spread(majority), spread(majority)]]
    body += [[f"layer {k}", spread(pos(results, "untrained", k)), spread(pos(results, "word", k))]
             for k in LAYERS]
    body.append(["learned scalar mix (section 7)", "", spread(pos(results, "word", "mix"))])
    return rows(["part of speech (lemmas held out)", "untrained biLM", "pre-trained biLM"], body)


def table_layers(results: dict) -> str:
    """Layer 2 against layer 1, here and in the paper, and the learned mix's weights."""
    n = len(results["seeds"])
    body = []
    for label in LABELS:
        gap = sense(results, "word", label, 2) - sense(results, "word", label, 1)
        body.append([f"{LABEL_NAMES[label]}: layer 2 minus layer 1", spread(gap),
                     f"{int((gap > 0).sum())}/{n}", "+1.6 F1 (69.0 against 67.4)"])
    gap = pos(results, "word", 1) - pos(results, "word", 2)
    body.append(["part of speech: layer 1 minus layer 2", spread(gap),
                 f"{int((gap > 0).sum())}/{n}", "+0.5 (97.3 against 96.8)"])
    weights = {"sense": np.array([r["mix"]["weights"] for r in results["runs"]]),
               "pos": np.array([r["pos"]["word"]["weights"] for r in results["runs"]])}
    for task, name in (("sense", "supersense"), ("pos", "part of speech")):
        body.append([f"learned weights s_0, s_1, s_2 ({name})",
                     ", ".join(f"{w:.2f}" for w in weights[task].mean(0)), "", ""])
    return rows(["", "here (mean ± sd)", "seeds above 0", "the paper"], body)


def table_rare(results: dict) -> str:
    if not has_characters(results):
        return rows(["", ""], [["no character biLM in these results", ""]])
    body = []
    for label in (*LABELS, "pos"):
        for k in LAYERS:
            body.append([LABEL_NAMES[label], f"layer {k}", spread(rare(results, "word", label, k)),
                         spread(rare(results, "char", label, k))])
    for label in LABELS:
        for name in ("chance", "most_frequent"):
            body.append([LABEL_NAMES[label], BASELINE_NAMES[name], spread(per_seed(
                results, lambda r, x=label, b=name: r["rare"]["baselines"][x][b])), ""])
    counts = per_seed(results, lambda r: r["counts"]["unknown_test"])
    body.append(["test examples whose word is `<unk>`", "", f"{counts.mean():.0f}", ""])
    return rows(["task", "", "word biLM (reads `<unk>`)", "character biLM"], body)


def table_targets(results: dict) -> str:
    body = [[name, f"{int(held.sum())}/{len(held)}", f"{needed}/{len(held)}",
             "met" if held.sum() >= needed else "**missed**"]
            for name, held, needed in targets(results)]
    return rows(["target", "held on", "needed", ""], body)


def table_nearest(results: dict) -> str:
    body = []
    for query in results["nearest"]:
        for layer, neighbours in enumerate(query["layers"]):
            best = neighbours[0]
            body.append([f"{query['sentence']} ({query['word']}: {query['synset']})" if layer == 0
                         else "", str(layer), f"{best['sentence']} ({best['synset']})",
                         f"{best['cosine']:.2f}",
                         f"{sum(n['synset'] == query['synset'] for n in neighbours)}/"
                         f"{len(neighbours)}"])
    return rows(["test sentence (word: its synset)", "layer",
                 "nearest training example of the lemma", "cosine",
                 "same synset among the nearest"], body)


TABLES: dict[str, Callable[[dict], str]] = {
    f"real_{name.removeprefix('table_')}": function for name, function in globals().items()
    if name.startswith("table_")}


def table(name: str, path: Path | None = None) -> str:
    """The table `name` ("real_sense", ...) of the results in `path` (default: the
    reference's, `REFERENCE_RESULTS`).

    Raises:
        KeyError: no table has that name.
    """
    return TABLES[name](load(REFERENCE_RESULTS if path is None else path))


def comparison_table(yours: dict, reference: dict) -> str:
    """Your run's main numbers beside the reference's, mean ± sd over each one's seeds."""
    def both(value: Callable[[dict], np.ndarray]) -> list[str]:
        return [spread(value(yours)), spread(value(reference))]

    body = [["held-out perplexity, forward", *(spread(per_seed(
        r, lambda x: x["pretraining"]["word"]["perplexity"]["forward"]), 1)
        for r in (yours, reference))]]
    for label in LABELS:
        body += [[f"{LABEL_NAMES[label]}: layer {k}", *both(
            lambda r, x=label, k=k: sense(r, "word", x, k))] for k in LAYERS]
        body.append([f"{LABEL_NAMES[label]}: best baseline", *both(
            lambda r, x=label: best_baseline(r, x))])
    body += [[f"part of speech: layer {k}", *both(lambda r, k=k: pos(r, "word", k))]
             for k in LAYERS]
    return rows(["", "your ELMo", "the reference's"], body)


# --- the figures -------------------------------------------------------------------------------


_LINES = {"chance": ("black", "--"), "most_frequent": ("C2", ":"),
          "first_sense": ("C3", "-."), "majority": ("black", "--")}


def _bars(ax, groups: list[tuple[str, str, np.ndarray]], lines: dict[str, np.ndarray],
          title: str) -> None:
    """Bars per layer (each group: name, colour, (seeds, layers) values, mean ± sd) and
    horizontal lines (name: (seeds,) values, their mean), zoomed to what they span."""
    x = np.arange(len(LAYERS))
    width = 0.8 / len(groups)
    for n, (name, colour, values) in enumerate(groups):
        ax.bar(x + (n - (len(groups) - 1) / 2) * width, values.mean(0), width,
               yerr=values.std(0), capsize=3, color=colour, label=name)
    for name, values in lines.items():
        colour, style = _LINES.get(name, ("C0", "-"))
        ax.axhline(values.mean(), color=colour, linestyle=style, linewidth=1.2,
                   label=f"{name.replace('_', ' ')} ({values.mean():.3f})")
    spanned = [v.mean(0) for _, _, v in groups] + [np.atleast_1d(v.mean()) for v in
                                                   lines.values()]
    low, high = min(map(np.min, spanned)), max(map(np.max, spanned))
    margin = 0.15 * (high - low) + 0.01
    ax.set_ylim(max(0.0, low - margin), min(1.0, high + margin))
    ax.set_xticks(x, [f"layer {k}" for k in LAYERS])
    ax.set_title(title, fontsize="medium")
    ax.legend(fontsize=SMALL, loc="upper center", bbox_to_anchor=(0.5, -0.1), ncol=2)


def plot_layers(results: dict, path: Path | None = None) -> Figure:
    """Per layer, mean ± sd over seeds: the nearest-sense accuracy (synset, supersense) and
    the part-of-speech probe, pre-trained and untrained, with the learned mix and the
    baselines; the last panel sets layer 2 against layer 1 beside the paper."""
    figure = Figure(figsize=(NOTEBOOK_WIDTH_IN, 8.5), layout="constrained")  # a notebook's width
    axes = figure.subplots(2, 2).ravel()
    for ax, label in zip(axes[:3], (*LABELS, "pos"), strict=True):
        def values(model: str, label: str = label) -> np.ndarray:
            return np.array([(pos(results, model, k) if label == "pos"
                              else sense(results, model, label, k)) for k in LAYERS]).T

        if label == "pos":
            lines = {"majority": per_seed(results, lambda r: r["pos"]["word"]["majority"]),
                     "learned mix": pos(results, "word", "mix")}
        else:
            lines = {name: baseline(results, label, name) for name in BASELINE_NAMES}
            lines["learned mix"] = per_seed(results, lambda r, x=label: r["mix"][x])
        _bars(ax, [("untrained biLM", "C7", values("untrained")),
                   ("pre-trained biLM", "C0", values("word"))], lines, LABEL_NAMES[label])
    axes[0].set_ylabel("test accuracy")
    axes[2].set_ylabel("test accuracy")
    differences = [sense(results, "word", "synset", 2) - sense(results, "word", "synset", 1),
                   pos(results, "word", 2) - pos(results, "word", 1)]
    paper = [(PAPER["sense"]["layer 2"] - PAPER["sense"]["layer 1"]) / 100,
             (PAPER["pos"]["layer 2"] - PAPER["pos"]["layer 1"]) / 100]
    ax = axes[3]
    ax.bar(np.arange(2) - 0.2, [d.mean() for d in differences], 0.4, capsize=3, color="C0",
           yerr=[d.std() for d in differences], label="here (synset; part of speech)")
    ax.bar(np.arange(2) + 0.2, paper, 0.4, color="C3",
           label="the paper (Table 5: WSD F1 / 100; Table 6)")
    ax.axhline(0, color="black", linewidth=0.8)
    ax.set_xticks(range(2), ["word sense", "part of speech"])
    ax.set_title("layer 2 minus layer 1", fontsize="medium")
    ax.legend(fontsize=SMALL, loc="upper center", bbox_to_anchor=(0.5, -0.1))
    figure.suptitle(f"ELMo on WordNet's examples, mean ± sd over {len(results['seeds'])} "
                    "seeds")
    if path is not None:
        figure.savefig(path, dpi=120)
    return figure


def plot_rare(results: dict, path: Path | None = None) -> Figure:
    """On the test examples whose word the word biLM reads as <unk>: each layer of the word
    and the character biLM, mean ± sd over seeds, with the baselines."""
    figure = Figure(figsize=(12, 4.5), layout="constrained")
    for ax, label in zip(figure.subplots(1, 3), (*LABELS, "pos"), strict=True):
        groups = [(name, colour, np.array([rare(results, model, label, k) for k in LAYERS]).T)
                  for model, colour, name in (("word", "C0", "word biLM (reads <unk>)"),
                                              ("char", "C1", "character biLM"))]
        lines = {} if label == "pos" else {
            name: per_seed(results, lambda r, x=label, n=name: r["rare"]["baselines"][x][n])
            for name in ("chance", "most_frequent")}
        _bars(ax, groups, lines, f"{LABEL_NAMES[label]}, words read as <unk>")
    figure.axes[0].set_ylabel("test accuracy")
    if path is not None:
        figure.savefig(path, dpi=120)
    return figure


def nearest_text(results: dict) -> str:
    """The paper's Table 4 for a few test sentences: per layer, the nearest training
    examples of the same lemma, with their synsets."""
    blocks = []
    for query in results["nearest"]:
        lines = [f"{query['sentence']!r}  ({query['word']}: {query['synset']})"]
        for layer, neighbours in enumerate(query["layers"]):
            lines.append(f"  layer {layer}:")
            lines += [f"    {n['cosine']:+.2f}  {n['synset']:<22} {n['sentence']}"
                      for n in neighbours]
        blocks.append("\n".join(lines))
    return "\n\n".join(blocks) + "\n"


# --- writing a run's outputs -------------------------------------------------------------------

PRINTED = (("the run", "real_run"), ("pre-training: held-out perplexity", "real_pretraining"),
           ("word sense, the paper's nearest-sense method", "real_sense"),
           ("part of speech, a linear probe per layer", "real_pos"),
           ("which layer, here and in the paper", "real_layers"),
           ("words the word biLM reads as <unk>: the character biLM", "real_rare"),
           ("the targets", "real_targets"))


def write_outputs(results: dict, out: Path, log: Callable[[str], None] = print) -> None:
    """`out`/results.json, the figures `layers.png` and `rare.png` (with a character biLM)
    and `nearest.txt`; the tables, printed."""
    out.mkdir(parents=True, exist_ok=True)
    (out / "results.json").write_text(json.dumps(results, indent=1) + "\n")
    log(str(out / "results.json"))
    for title, name in PRINTED:
        log(f"\n== {title} " + "=" * max(0, 84 - len(title)))
        log(TABLES[name](results))
    plot_layers(results, out / "layers.png")
    log(str(out / "layers.png"))
    if has_characters(results):
        plot_rare(results, out / "rare.png")
        log(str(out / "rare.png"))
    (out / "nearest.txt").write_text(nearest_text(results))
    log(str(out / "nearest.txt"))
