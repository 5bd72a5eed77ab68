"""The results of ELMo on real English (`analyses.real_english`): their schema, the tables and
the text of the docs, and the figures, all generated from them.

The reference's results are `docs/results-real.json` (a run of the pipeline on the
reference writes `build/demo-real/results.json`, which is committed there); a learner's run
on `exercises/` (`make replicate-real`) writes `build/replicate-real/results.json`, and
`comparison_table` sets the two side by side. The results hold:

    run          what ran, where: command, machine, versions, commit, code (the digest of the
                 code that made them: `real_english.code_digest`), seconds (wall clock),
                 cpu_seconds, load ({start, mean, max} of the one-minute load average)
    scale        `real_english.Scale`; seeds
    data         the sizes of what was read (definitions, definition_tokens, train_tokens,
                 heldout_tokens, vocabulary, examples, pool, lemmas)
    ngram        held-out perplexities: unigram, bigram (modified Kneser-Ney), its discounts
    full_scale   what the full scale's pre-training would cost here, from a timed fraction
                 (`real_english.full_scale_cost`), or null
    budget       which pre-training a biLM's CPU budget buys best: each candidate trained for
                 the same CPU seconds (seconds, machine, commit, load, configs), or null
    penalties    the probe's penalties (the sweep's readings "<reading>@<index>")
    tests        {test: {n, answerable, unknown, lemmas: one value per seed}}
    readings     {test: {reading: interval}}: each reading's accuracy ("word/2": the
                 pre-trained biLM's layer 2; "untrained/2", "masked/2", "char/2",
                 "char_untrained/2"; the priors "chance", "most_frequent", "first_sense",
                 "majority"; "mix", section 7's learned mix)
    findings     one per comparison (`real_findings.findings`): test, name, primary,
                 control_model, pretrained, control, part (intervals), verdict
    nearest      seed 0: a few test sentences' nearest training examples per layer
    runs         per seed: seed, pretraining ({word, char: history, seconds, cpu_seconds,
                 tokens, trained, perplexity: {forward, backward}}), pos ({penalties: the
                 penalty chosen per fold, per reading; mix_weights})

An interval is {mean (over seeds), low, high (the 95 % two-level bootstrap interval), seeds
(each seed's mean)}.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import NamedTuple

import numpy as np
from matplotlib.figure import Figure

from course.registry import BUILD_DIR, ROOT, shown

from .plots import NOTEBOOK_WIDTH_IN, SMALL
from .real_findings import LAYERS, MASKED, PRETRAINED, UNTRAINED, reading, resolved

REFERENCE_RESULTS = ROOT / "docs" / "results-real.json"
DEMO_OUT = BUILD_DIR / "demo-real"
REPLICATE_OUT = BUILD_DIR / "replicate-real"
TOP_LEVEL = ("run", "scale", "seeds", "data", "ngram", "full_scale", "budget", "penalties",
             "tests", "readings", "findings", "nearest", "runs")
SENSE_TESTS = ("natural", "balanced")
TEST_NAMES = {"natural": "word sense, natural split", "balanced": "word sense, balanced split",
              "pos": "part of speech", "rare_sense": "word sense, words read as <unk>",
              "rare_pos": "part of speech, words read as <unk>"}
PRIOR_NAMES = {"chance": "chance: one of the lemma's senses at random",
               "most_frequent": "the most frequent sense by training counts (ties at random)",
               "first_sense": "WordNet's first sense (knows SemCor's counts)",
               "majority": "the majority class of the training folds"}
MODEL_NAMES = {PRETRAINED: "pre-trained biLM", UNTRAINED: "untrained biLM",
               MASKED: "untrained biLM, target read as <unk>", "char": "character biLM",
               "char_untrained": "untrained character biLM"}
# What the paper and the probing literature report, to set beside the findings: Peters et
# al. 2018, Table 5 (WSD F1, SemCor to the all-words benchmarks) and Table 6 (POS accuracy,
# the Penn Treebank), a biLM of 4096 LSTM cells pre-trained on 800 million tokens.
FIRST_SENSE_PAPER = "WordNet's first sense"
PAPER = {"sense": {"biLM layer 1": 67.4, "biLM layer 2": 69.0, "CoVe layer 1": 59.4,
                   "CoVe layer 2": 64.7, FIRST_SENSE_PAPER: 65.9},
         "pos": {"biLM layer 1": 97.3, "biLM layer 2": 96.8, "CoVe layer 1": 93.3,
                 "CoVe layer 2": 92.8}}


# --- the schema -------------------------------------------------------------------------------


def _interval_problems(found, where: str) -> list[str]:
    keys = ("mean", "low", "high", "seeds")
    if not (isinstance(found, dict) and all(k in found for k in keys)):
        return [f"{where} must be an interval {{{', '.join(keys)}}}"]
    return []


def validate(results: dict) -> list[str]:
    """What is wrong with `results`, one line each; [] when it has the schema above."""
    missing = [key for key in TOP_LEVEL if key not in results]
    if missing:
        return [f"missing top-level keys {missing}"]
    problems = []
    if [run.get("seed") for run in results["runs"]] != results["seeds"]:
        problems.append(f"runs' seeds {[r.get('seed') for r in results['runs']]} are not "
                        f"{results['seeds']}")
    for test in (*SENSE_TESTS, "pos"):
        readings = results["readings"].get(test, {})
        for model in (PRETRAINED, UNTRAINED):
            for k in LAYERS:
                problems += _interval_problems(readings.get(reading(model, k)),
                                               f"readings.{test}.{reading(model, k)}")
        counts = results["tests"].get(test, {})
        if sorted(counts) != ["answerable", "lemmas", "n", "unknown"] or any(
                len(v) != len(results["seeds"]) for v in counts.values()):
            problems.append(f"tests.{test} must hold n, answerable, unknown and lemmas, one "
                            "value per seed")
    for n, found in enumerate(results["findings"]):
        problems += _interval_problems(found.get("pretrained"), f"findings[{n}].pretrained")
        if "verdict" not in found:
            problems.append(f"findings[{n}] has no verdict")
    if not any(f["primary"] for f in results["findings"]):
        problems.append("no primary finding")
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


# --- readings ---------------------------------------------------------------------------------


def finding(results: dict, test: str, name: str, control: str = UNTRAINED) -> dict | None:
    """The finding `name` of `test` read against `control` (None: not in the results)."""
    return next((f for f in results["findings"] if f["test"] == test and f["name"] == name
                 and f["control_model"] in (control, None)), None)


def has_characters(results: dict) -> bool:
    return "rare_sense" in results["readings"]


def per_seed(results: dict, value: Callable[[dict], float]) -> np.ndarray:
    """(seeds,) `value` of every seed's record in `runs`."""
    return np.array([value(run) for run in results["runs"]], dtype=float)


def shown_interval(found: dict | None, signed: bool = False, decimals: int = 3) -> str:
    """'0.342 [0.330, 0.355]' (with `signed`, '+0.012 [-0.003, +0.027]'); '' for None."""
    if found is None:
        return ""
    form = f"{'+' if signed else ''}.{decimals}f"
    return (f"{found['mean']:{form}} [{found['low']:{form}}, {found['high']:{form}}]")


def spread(values, decimals: int = 3) -> str:
    """'mean ± sd' over seeds (sd with ddof 1; 0 for one value)."""
    values = np.asarray(values, dtype=float)
    sd = values.std(ddof=1) if len(values) > 1 else 0.0
    return f"{values.mean():.{decimals}f} ± {sd:.{decimals}f}"


def _share(values) -> str:
    return f"{100 * float(np.mean(values)):.0f}%"


def _text(cell: str) -> str:
    """`cell` with each `<` outside code as `&lt;`: a renderer reads a bare `<unk>` as an
    HTML tag and shows nothing of it."""
    parts = cell.split("`")
    return "`".join(p if n % 2 else p.replace("<", "&lt;") for n, p in enumerate(parts))


def rows(header: list[str], body: list[list[str]]) -> str:
    """A Markdown table."""
    lines = ["| " + " | ".join(map(_text, header)) + " |", "|" + "---|" * len(header)]
    return "\n".join(lines + ["| " + " | ".join(map(_text, row)) + " |" for row in body]) + "\n"


def _seeds(results: dict) -> str:
    seeds = results["seeds"]
    return f"seeds {seeds[0]}-{seeds[-1]}" if len(seeds) > 1 else f"seed {seeds[0]}"


# --- the tables -------------------------------------------------------------------------------


def table_run(results: dict) -> str:
    run, scale, data = results["run"], results["scale"], results["data"]
    passes = data["train_tokens"] * scale["epochs"] / data["definition_tokens"]
    load = run["load"]
    return rows(["", ""], [
        ["command", f"`{run['command']}`" if run.get("command") else ""],
        ["seeds", _seeds(results)],
        ["scale", f"{scale['name']}: {data['train_tokens']:,} training tokens of definitions "
                  f"x {scale['epochs']:g} passes ({passes:.2f} of all "
                  f"{data['definition_tokens']:,}), vocabulary {data['vocabulary']:,}, "
                  f"embedding {scale['embedding_dim']}, hidden {scale['hidden_dim']}; the "
                  f"character biLM {scale['char_epochs']:g} passes"],
        ["device", f"{run['device']}; {run['jobs']} process(es) of {run['threads']} torch "
                   "thread(s)"],
        ["machine", run.get("machine", "")], ["versions", run.get("versions", "")],
        ["commit; digest of the code", f"{run.get('commit', '')}; {run['code']}"],
        ["wall clock, the whole run", f"{run['seconds']:.0f} s"],
        ["CPU time, the whole run",
         f"{run['cpu_seconds']:.0f} s ({run['cpu_seconds'] / run['jobs']:.0f} s for each of "
         f"{run['jobs']} cores: the least wall clock as many idle cores would take)"],
        ["load average (one minute): at the start, mean, highest",
         f"{load['start']:.1f}, {load['mean']:.1f}, {load['max']:.1f}"]])


def table_tests(results: dict) -> str:
    """Per test: its test examples and lemmas (per seed), the share a reading can answer
    and the share whose word the word biLM reads as <unk>."""
    body = [[TEST_NAMES[test], f"{np.mean(c['n']):,.0f}", f"{np.mean(c['lemmas']):,.0f}",
             _share(c["answerable"]), _share(c["unknown"])]
            for test, c in results["tests"].items()]
    return rows(["test", "test examples (a seed)", "lemmas", "answerable",
                 "word read as `<unk>`"], body)


def table_pretraining(results: dict) -> str:
    models = ["word", *(["char"] if all("char" in r["pretraining"] for r in results["runs"])
                        else [])]
    names = {"word": "word biLM", "char": "character biLM"}
    body = []
    for model in models:
        def value(key: str, model: str = model):
            return per_seed(results, lambda r: r["pretraining"][model][key])
        ppl = {d: per_seed(results, lambda r, d=d, m=model: r["pretraining"][m]["perplexity"][d])
               for d in ("forward", "backward")}
        passes = value("trained") / value("tokens")
        body.append([names[model], spread(ppl["forward"], 1), spread(ppl["backward"], 1),
                     f"{passes.mean():.2f}", spread(value("cpu_seconds"), 0)])
    ngram = results["ngram"]
    body.append(["unigram model (add-one)", f"{ngram['unigram']:.1f}", "", "", ""])
    discounts = ", ".join(f"{d:.2f}" for d in ngram["discounts"])
    body.append([f"bigram model, interpolated modified Kneser-Ney (discounts {discounts})",
                 f"{ngram['bigram']:.1f}", "", "", ""])
    return rows(["held-out definitions", "perplexity, forward", "backward",
                 "passes over the training tokens", "training, seconds of CPU"], body)


def table_budget(results: dict) -> str:
    """What `--budget` measured: each pre-training for the same CPU seconds, and the best."""
    found = results["budget"]
    if not found:
        return rows(["", ""], [["no budget measured with these results", ""]])
    configs = found["configs"]
    body = [[label, f"{c['passes']:.2f}", f"{c['trained']:,}",
             f"{c['perplexity']['forward']:.1f}"] for label, c in configs.items()]
    best = min(configs, key=lambda label: configs[label]["perplexity"]["forward"])
    load = found["load"]
    return rows([f"{found['seconds']:.0f} s of CPU each, seed 0", "passes", "tokens trained on",
                 "held-out perplexity, forward"], body) + (
        f"\nThe lowest held-out perplexity: {best}. Measured on {found['machine']} at commit "
        f"{found['commit']}, one torch thread a process, the one-minute load average "
        f"{load['mean']:.1f} on average (at most {load['max']:.1f}).\n")


def _layer_rows(results: dict, test: str, control: str = UNTRAINED) -> list[list[str]]:
    """Rows: each layer's accuracy, pre-trained and `control`, and the named comparisons of
    `test` against `control`, each with its pre-trained minus control and verdict."""
    body = []
    for f in results["findings"]:
        if f["test"] != test or f["control_model"] != control or not f["primary"]:
            continue
        signed = "minus" in f["name"]
        body.append([f["name"], shown_interval(f["pretrained"], signed),
                     shown_interval(f["control"], signed), shown_interval(f["part"], True),
                     f["verdict"]])
    return body


def _sense_table(results: dict, test: str, priors: tuple[str, ...]) -> str:
    readings = results["readings"][test]
    body = [[PRIOR_NAMES[p], shown_interval(readings[p]), "", "", "(needs no biLM)"]
            for p in priors]
    body += _layer_rows(results, test)
    return rows([f"{TEST_NAMES[test]}: accuracy, or a difference", "pre-trained biLM",
                 "untrained biLM", "pre-trained minus untrained", "verdict"], body)


def table_natural(results: dict) -> str:
    return _sense_table(results, "natural", ("chance", "most_frequent", "first_sense"))


def table_balanced(results: dict) -> str:
    return _sense_table(results, "balanced", ("chance", "most_frequent"))


def table_pos(results: dict) -> str:
    readings = results["readings"]["pos"]
    masked = {row[0]: row for row in _layer_rows(results, "pos", MASKED)}
    body = [[PRIOR_NAMES["majority"], shown_interval(readings["majority"]), *[""] * 6]]
    for row in _layer_rows(results, "pos"):
        other = masked.get(row[0], ["", "", "", "", ""])
        body.append([*row, other[2], other[3], other[4]])
    weights = np.mean([r["pos"]["mix_weights"] for r in results["runs"]], axis=0)
    body.append([f"learned scalar mix (section 7's probe, unregularised; weights s_0, s_1, "
                 f"s_2: {', '.join(f'{w:.2f}' for w in weights)})",
                 shown_interval(readings["mix"]), *[""] * 6])
    return rows(["part of speech: accuracy, or a difference", "pre-trained biLM",
                 "untrained biLM", "pre-trained minus untrained", "verdict",
                 "untrained, target read as `<unk>`", "pre-trained minus that", "verdict"],
                body)


def table_sweep(results: dict) -> str:
    """The probe at each penalty: pre-trained minus each untrained control, per layer."""
    body = []
    for penalty in results["penalties"]:
        cells = [f"{penalty:g}"]
        for k in LAYERS:
            for control in (UNTRAINED, MASKED):
                cells.append(shown_interval(finding(results, "pos", f"layer {k}, penalty "
                                                   f"{penalty:g}", control)["part"], True))
        body.append(cells)
    chosen = Counter(p for r in results["runs"] for fold in r["pos"]["penalties"].values()
                     for p in fold)
    body.append(["chosen by the inner folds (times)",
                 ", ".join(f"{p:g}: {n}" for p, n in sorted(chosen.items())), *[""] * 5])
    header = ["penalty lambda"]
    for k in LAYERS:
        header += [f"layer {k}: minus untrained", f"layer {k}: minus untrained, `<unk>`"]
    return rows(header, body)


def table_rare(results: dict) -> str:
    if not has_characters(results):
        return rows(["", ""], [["no character biLM in these results", ""]])
    body = []
    for test in ("rare_sense", "rare_pos"):
        readings = results["readings"][test]
        prior = "chance" if test == "rare_sense" else "majority"
        body.append([TEST_NAMES[test], PRIOR_NAMES[prior], shown_interval(readings[prior]), "",
                     "", "", ""])
        for k in LAYERS:
            f = finding(results, test, f"character minus word biLM, layer {k}",
                        "char_untrained")
            body.append([TEST_NAMES[test], f"layer {k}",
                         shown_interval(readings[reading(PRETRAINED, k)]),
                         shown_interval(readings[reading("char", k)]),
                         shown_interval(readings[reading("char_untrained", k)]),
                         shown_interval(f["pretrained"], True), f["verdict"]])
    return rows(["test", "", "word biLM (reads `<unk>`)", "character biLM",
                 "untrained character biLM", "character minus word", "verdict"], body)


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


def table_method(results: dict) -> str:
    """What a run does, with the sizes it ran at (a Markdown list)."""
    from . import real_findings, real_readings
    from .real_english import HELDOUT_EVERY, SCALES

    scale, data, run = results["scale"], results["data"], results["run"]
    passes = data["train_tokens"] * scale["epochs"] / data["definition_tokens"]
    full = SCALES["full"]
    lines = [
        f"- **pre-training**: section 3's `BiLM` (embedding {scale['embedding_dim']}, hidden "
        f"{scale['hidden_dim']}) on {data['train_tokens']:,} tokens of definitions, "
        f"{scale['epochs']:g} passes ({passes:.2f} of all {data['definition_tokens']:,} "
        f"training tokens), and section 8's `CharBiLM` of the same width for "
        f"{scale['char_epochs']:g} passes; every {HELDOUT_EVERY}th definition is held out "
        f"({data['heldout_tokens']:,} tokens) for the perplexities. The vocabulary is the "
        f"{data['vocabulary'] - 4:,} most frequent words of all the training definitions "
        f"({data['vocabulary']:,} entries with `<pad>`, `<unk>`, `<s>` and `</s>`), "
        "whatever the sample, so that perplexities compare. A full softmax over it is what "
        "would cost the most, so the heads are replaced by `nn.Identity` (the \"logits\" "
        "are the top LSTM states) and scored by PyTorch's adaptive softmax, one per "
        f"direction (clusters at the {', '.join(f'{c:,}th' for c in scale['cutoffs'])} "
        f"word); batches hold about {scale['batch_tokens']:,} tokens of sentences of one "
        f"length (the character biLM's {scale['char_batch_tokens']:,}); the biLMs train "
        f"in {run['jobs']} process(es) of {run['threads']} torch thread(s), then the seeds "
        "are measured the same way. `SCALE=full` (a GPU picks it itself) trains on every "
        f"definition for {full.epochs:g} passes, embedding {full.embedding_dim}, hidden "
        f"{full.hidden_dim}, vocabulary {full.vocab_size:,}.",
        f"- **the sense pool**: {data['pool']:,} of WordNet's {data['examples']:,} examples, "
        f"those of the {data['lemmas']:,} lemmas (with their part of speech) whose examples "
        "show two synsets or more.",
        f"- **word sense, natural split**: a random {real_readings.TEST_SHARE:.0%} of the "
        "pool, per seed, to test on; each synset's mean representation over its training "
        "examples, a test example labelled with the synset of its lemma whose mean is "
        "nearest by cosine (vectors centred by the training mean; equally near synsets "
        "share the credit, as a guess among them would), WordNet's first sense where the "
        "lemma has no training example (as in the paper). The priors: chance, the most "
        "frequent sense by training counts (ties credited at random), and WordNet's first "
        "sense, named apart: it knows the sense counts of SemCor, which nothing else here "
        "saw.",
        "- **word sense, balanced split**: of each synset with two examples or more, of the "
        "lemmas with two such synsets or more, one example drawn per seed to test on, the "
        "others to train on; the same method. Every test example is answerable, and any "
        "prior that gives a lemma one sense scores chance.",
        f"- **part of speech**: {scale['pos_examples']:,} examples of the pool drawn per "
        f"seed, in {real_readings.POS_FOLDS} folds that hold out lemmas, so that a probe "
        "must read the word's role rather than recognise the word; a multinomial logistic "
        "regression on each layer's standardised features, its L2 penalty one of "
        f"{', '.join(f'{p:g}' for p in results['penalties'])}, chosen for each fold by "
        "cross-validation inside the other folds (each of them held out in turn), fitted "
        f"by L-BFGS ({real_readings.PROBE_STEPS} steps). The untrained biLM is read twice: "
        "as it is, and reading the word itself as `<unk>`, so that only its context is "
        "left. Section 7's learned scalar mix (its `ScalarMixProbe`, fitted with its "
        "defaults, unregularised) on the same folds. Folds that hold out lemmas leave a "
        "probe nothing to learn about a word type as such, which a control task (Hewitt "
        "and Liang 2019) would measure; what is left to check is the probe's capacity: "
        "the accuracy at every penalty is kept (the sweep).",
        "- **words read as `<unk>`**: the word biLM, the character biLM and an untrained "
        "character biLM of the same seed on the test examples whose word the word biLM "
        "reads as `<unk>`: the balanced split's, and the probe's, trained and scored on "
        "such examples only.",
        "- **the findings**: every reading scores each test example; a comparison is their "
        "difference, example by example, and its 95% interval comes from "
        f"{real_findings.DRAWS:,} replicates of a two-level bootstrap (the seeds drawn with "
        "replacement, then each drawn seed's test examples). Examples of one lemma are "
        "drawn as if independent, so an interval is that much too narrow where a lemma's "
        "examples agree. The comparisons were named before any was measured "
        "(`analyses/real_findings.py`): pre-trained minus untrained at each layer, layer 2 "
        "minus each prior and minus layer 0, layer 2 minus layer 1.",
    ]
    return "\n".join(lines) + "\n"


def table_full_scale(results: dict) -> str:
    """What `SCALE=full` would cost here, from the fraction a run timed (a paragraph)."""
    from .real_english import SCALES

    found, full = results["full_scale"], SCALES["full"]
    if not found:
        return "This run did not time the full scale.\n"
    word = found["word"]
    share = word["trained"] / word["tokens"]
    parts = [f"the word biLM trained on {word['trained']:,} targets ({share:.1%} of one pass) "
             f"in {word['cpu_seconds']:.1f} s of CPU"]
    if found["char"]:
        char = found["char"]
        parts.append(f"the character biLM on {char['trained']:,} in "
                     f"{char['cpu_seconds']:.1f} s")
    return (f"`SCALE=full` pre-trains on all {word['tokens']:,} targets a direction (the "
            "training tokens and each definition's `</s>`) for "
            f"{full.epochs:g} passes (the character biLM {full.char_epochs:g}). Timed here "
            f"on its first batches ({'; '.join(parts)}), the pre-training of "
            f"{len(results['seeds'])} seeds would take about {found['cpu_hours']:.0f} CPU "
            "hours on this machine, one torch thread a process, before the measurements: "
            "a GPU's work, or a night's on a CPU.\n")


def _here(results: dict, test: str, name: str, control: str = UNTRAINED,
          part: bool = False) -> str:
    f = finding(results, test, name, control)
    return f"{shown_interval(f['part' if part else 'pretrained'], True)}: {f['verdict']}"


FIRST_SENSE = "layer 2 minus WordNet's first sense"
NATURAL_PRIOR = "layer 2 minus the most frequent sense (training counts)"
RESOLVED_GAIN = ("pre-training", "the architecture", "the architecture and pre-training",
                 "not told apart")


class Expectation(NamedTuple):
    """A finding set beside what the literature leads one to expect of it at this scale:
    `finding` (test, name, control, whether pre-training's part is read), `expected` (the
    verdicts that would be no surprise; any other is news) and `why` (the literature)."""

    claim: str
    finding: tuple[str, str, str, bool]
    expected: tuple[str, ...]
    why: str


def expectations() -> list[Expectation]:
    """What the paper and the probing literature lead one to expect here, stated before
    the results are read."""
    sense, pos = PAPER["sense"], PAPER["pos"]
    return [
        Expectation(
            "layer 2 above WordNet's first sense (natural split)",
            ("natural", FIRST_SENSE, UNTRAINED, False), ("not at this scale",),
            f"Peters et al. 2018, Table 5: the biLM's layer 2 {sense['biLM layer 2']} F1 "
            f"against {sense[FIRST_SENSE_PAPER]} for the first sense, with 800 million tokens "
            "of pre-training and SemCor's sense-tagged examples to average; CoVe's layer 2, "
            f"{sense['CoVe layer 2']}, trails it. A biLM pre-trained on a part of WordNet's "
            "definitions, with a single example for most synsets, should stay far below it."),
        Expectation(
            "layer 2 above the most frequent sense by training counts (natural split)",
            ("natural", NATURAL_PRIOR, UNTRAINED, False),
            ("not at this scale", "the architecture"),
            "A prior that needs no biLM, from the same few examples the layer averages: "
            "with most test examples unanswerable, a small gain at most, and one that an "
            "untrained biLM (which still sets sentences with words in common near each "
            "other) shares."),
        Expectation(
            "a contextual layer tells senses apart better than layer 0 (balanced split)",
            ("balanced", "layer 2 minus layer 0", UNTRAINED, False),
            ("the architecture", "the architecture and pre-training"),
            "Tenney et al. 2019: contextual encoders offer only small improvements over a "
            "non-contextual baseline on semantic tasks, with far more pre-training; Zhang "
            "and Bowman 2018: randomly initialised, frozen LSTMs already do strikingly well "
            "as probed encoders. A gain over layer 0 that the untrained biLM shares."),
        Expectation(
            "pre-training adds to word sense at layer 2 (balanced split)",
            ("balanced", "layer 2", UNTRAINED, True), ("not at this scale", "pre-training"),
            "Small or none at this scale (the untrained biLM beside it shows the "
            "architecture's part, above)."),
        Expectation(
            "pre-training adds to part of speech at layer 1, against the untrained biLM",
            ("pos", "layer 1", UNTRAINED, True), ("pre-training",),
            "Zhang and Bowman 2018: language-model pre-training teaches part of speech "
            "even from little data, above untrained LSTMs; Tenney et al. 2019: pre-trained "
            "encoders are strong on syntax. A gain."),
        Expectation(
            "the same, against the untrained biLM reading the word as `<unk>`",
            ("pos", "layer 1", MASKED, True), ("pre-training",),
            "Zhang and Bowman 2018: an untrained LSTM's reading of the context already "
            "tells much of the part of speech, so the gain over it is the smaller one; "
            "still a gain."),
        Expectation(
            "layer 2 minus layer 1 for part of speech",
            ("pos", "layer 2 minus layer 1", UNTRAINED, False), ("not at this scale",),
            f"Table 6: layer 1 {pos['biLM layer 1']} against layer 2 {pos['biLM layer 2']} "
            f"(CoVe {pos['CoVe layer 1']} against {pos['CoVe layer 2']}); Liu et al. 2019: "
            "ELMo's higher LSTM layer is the more specific to language modelling, its first "
            "the more transferable. A half-point difference needs far more test examples "
            "than these to resolve: level."),
        Expectation(
            "layer 2 minus layer 1 for word sense (balanced split)",
            ("balanced", "layer 2 minus layer 1", UNTRAINED, False),
            ("not at this scale", *RESOLVED_GAIN),
            f"Table 5: layer 2 {sense['biLM layer 2']} against layer 1 "
            f"{sense['biLM layer 1']} F1 (CoVe {sense['CoVe layer 2']} against "
            f"{sense['CoVe layer 1']}): level here, or layer 2 ahead; layer 1 ahead would "
            "be news."),
    ]


def table_expected(results: dict) -> str:
    """What the literature leads one to expect at this scale, beside what was found here,
    and whether it was."""
    body = []
    for claim, (test, name, control, part), expected, why in expectations():
        found = finding(results, test, name, control)
        value = found["part" if part else "pretrained"]
        surprise = found["verdict"] not in expected or (
            set(expected) >= set(RESOLVED_GAIN) and resolved(value) < 0)
        body.append([claim, why, f"{shown_interval(value, True)}: {found['verdict']}",
                     "**news**" if surprise else "as expected"])
    return rows(["finding", "what the literature leads one to expect at this scale",
                 "here: the difference, and its verdict", "as expected?"], body)





def table_summary(results: dict) -> str:
    """The findings named in advance, one bullet a test, every number from the results."""
    tests, data, scale = results["tests"], results["data"], results["scale"]
    natural, balanced, pos = tests["natural"], tests["balanced"], tests["pos"]
    ppl = per_seed(results, lambda r: r["pretraining"]["word"]["perplexity"]["forward"])
    passes = data["train_tokens"] * scale["epochs"] / data["definition_tokens"]
    lines = [
        f"- **Pre-training**: {passes:.2f} of a pass over WordNet's "
        f"{data['definition_tokens']:,} training tokens of definitions, {len(results['seeds'])}"
        f" seeds; held-out perplexity {spread(ppl, 1)} (mean ± sd over seeds), against "
        f"{results['ngram']['bigram']:.1f} for a modified Kneser-Ney bigram model counted on "
        "the same tokens"
        + (" (lower is better: at this budget the biLM has not caught up with the bigram)."
           if np.mean(ppl) > results['ngram']['bigram'] else
           " (lower is better: the biLM predicts held-out definitions better)."),
        f"- **Word sense, balanced split** ({np.mean(balanced['n']):,.0f} test examples a "
        f"seed, {_share(balanced['answerable'])} answerable, {_share(balanced['unknown'])} of "
        "their words `<unk>` to the biLM): layer 2 minus chance, which is any frequency "
        f"prior here, {_here(results, 'balanced', 'layer 2 minus chance (= any frequency prior)')}"
        f"; pre-trained minus untrained at layer 2, "
        f"{_here(results, 'balanced', 'layer 2', part=True)}; layer 2 minus layer 1, "
        f"{_here(results, 'balanced', 'layer 2 minus layer 1')}.",
        f"- **Word sense, natural split** ({np.mean(natural['n']):,.0f} test examples a "
        f"seed, only {_share(natural['answerable'])} answerable, "
        f"{_share(natural['unknown'])} `<unk>`): layer 2 minus the most frequent sense by "
        f"training counts, {_here(results, 'natural', NATURAL_PRIOR)}; minus WordNet's first "
        f"sense, {_here(results, 'natural', FIRST_SENSE)}.",
        f"- **Part of speech** ({np.mean(pos['n']):,.0f} examples a seed, lemmas held out, "
        f"{_share(pos['unknown'])} `<unk>`; a regularised probe): pre-trained minus "
        f"untrained at layer 1, {_here(results, 'pos', 'layer 1', part=True)}; at layer 2, "
        f"{_here(results, 'pos', 'layer 2', part=True)}; against the untrained biLM reading "
        f"the word as `<unk>`, {_here(results, 'pos', 'layer 1', MASKED, True)} and "
        f"{_here(results, 'pos', 'layer 2', MASKED, True)}; layer 2 minus layer 1, "
        f"{_here(results, 'pos', 'layer 2 minus layer 1')}.",
        "- Each difference is in accuracy, a mean over seeds with its 95% interval from a "
        "two-level bootstrap (seeds, then test examples), and its verdict: what the "
        "intervals of the pre-trained biLM, the untrained one and their difference "
        "resolve.",
    ]
    return "\n".join(lines) + "\n"


TABLES: dict[str, Callable[[dict], str]] = {
    f"real_{name.removeprefix('table_')}": function for name, function in globals().items()
    if name.startswith("table_")}


def table(name: str, path: Path | None = None) -> str:
    """The table `name` ("real_natural", ...) of the results in `path` (default: the
    reference's, `REFERENCE_RESULTS`).

    Raises:
        KeyError: no table has that name.
    """
    return TABLES[name](load(REFERENCE_RESULTS if path is None else path))


def comparison_table(yours: dict, reference: dict) -> str:
    """Your run's main numbers beside the reference's, each a mean over seeds with its 95%
    interval; the biLM's perplexity beside the n-gram models' (on a scale's held-out
    definitions, the same for every seed), in one unit."""
    def both(test: str, name: str, part: bool = False) -> list[str]:
        return [shown_interval(finding(r, test, name)["part" if part else "pretrained"],
                               part or "minus" in name) for r in (yours, reference)]

    body = [[f"held-out perplexity, {direction}", *(spread(per_seed(
        r, lambda x, d=direction: x["pretraining"]["word"]["perplexity"][d]), 1)
        for r in (yours, reference))] for direction in ("forward", "backward")]
    body += [[f"held-out perplexity, a {model} model (its baseline)",
              *(f"{r['ngram'][model]:.1f}" for r in (yours, reference))]
             for model in ("unigram", "bigram")]
    for test in (*SENSE_TESTS, "pos"):
        body += [[f"{TEST_NAMES[test]}: layer {k}", *both(test, f"layer {k}")] for k in LAYERS]
        body.append([f"{TEST_NAMES[test]}: pre-trained minus untrained, layer 2",
                     *both(test, "layer 2", part=True)])
    return rows(["", "your ELMo", "the reference's"], body)


# --- the figures -------------------------------------------------------------------------------


def _errors(found: list[dict]) -> np.ndarray:
    """(2, n) the distances from each interval's mean to its ends, for `errorbar`."""
    return np.array([[f["mean"] - f["low"] for f in found], [f["high"] - f["mean"] for f in found]])


_PRIOR_STYLE = {"chance": ("black", "--"), "most_frequent": ("C2", ":"),
                "first_sense": ("C3", "-."), "majority": ("black", "--")}


def plot_layers(results: dict, path: Path | None = None) -> Figure:
    """Per test (natural split, balanced split, part of speech) and layer, the accuracy of
    the pre-trained and the untrained biLM (and, for part of speech, the untrained biLM
    that reads the word as <unk>) with their 95% intervals, and the priors as lines."""
    figure = Figure(figsize=(NOTEBOOK_WIDTH_IN, 10), layout="constrained")  # a notebook's width
    priors = {"natural": ("chance", "most_frequent", "first_sense"),
              "balanced": ("chance",), "pos": ("majority",)}
    for ax, test in zip(figure.subplots(3, 1), priors, strict=True):
        readings = results["readings"][test]
        models = [PRETRAINED, UNTRAINED, *([MASKED] if test == "pos" else [])]
        width = 0.8 / len(models)
        for n, model in enumerate(models):
            found = [readings[reading(model, k)] for k in LAYERS]
            x = np.arange(len(LAYERS)) + (n - (len(models) - 1) / 2) * width
            ax.bar(x, [f["mean"] for f in found], width, yerr=_errors(found), capsize=3,
                   color=f"C{[0, 7, 1][n]}", label=MODEL_NAMES[model])
        for prior in priors[test]:
            colour, style = _PRIOR_STYLE[prior]
            ax.axhline(readings[prior]["mean"], color=colour, linestyle=style, linewidth=1.2,
                       label=f"{PRIOR_NAMES[prior]} ({readings[prior]['mean']:.3f})")
        ax.set_xticks(range(len(LAYERS)), [f"layer {k}" for k in LAYERS])
        share = _share(results["tests"][test]["answerable"])
        ax.set_title(f"{TEST_NAMES[test]} ({share} answerable)", fontsize="medium")
        ax.legend(fontsize=SMALL, loc="center left", bbox_to_anchor=(1.01, 0.5))
        ax.set_ylabel("test accuracy (95% interval)")
    figure.suptitle(f"ELMo on WordNet's examples, {len(results['seeds'])} seeds")
    if path is not None:
        figure.savefig(path, dpi=120)
    return figure


def plot_findings(results: dict, path: Path | None = None) -> Figure:
    """The comparisons named in advance, each the pre-trained biLM's difference with its
    95% interval, coloured by its verdict, against 0."""
    chosen = [f for f in results["findings"] if f["primary"] and f["test"] in
              (*SENSE_TESTS, "pos") and f["name"] != "layer 0"
              and (f["control_model"] == UNTRAINED or f["name"] in ("layer 1", "layer 2"))]
    labels, values, colours = [], [], []
    palette = {"pre-training": "C0", "the architecture": "C7",
               "the architecture and pre-training": "C9", "not told apart": "C4",
               "not at this scale": "C3", "pre-training lowers it": "C1"}
    for f in chosen:
        part = f["name"] in ("layer 1", "layer 2")
        control = "untrained" if f["control_model"] == UNTRAINED else "untrained (<unk>)"
        labels.append(f"{TEST_NAMES[f['test']]}: " + (f"pre-trained minus {control}, "
                      f"{f['name']}" if part else f["name"]))
        values.append(f["part"] if part else f["pretrained"])
        colours.append(palette.get(f["verdict"], "black"))
    figure = Figure(figsize=(NOTEBOOK_WIDTH_IN, 0.3 * len(values) + 2), layout="constrained")
    ax = figure.subplots()
    y = np.arange(len(values))[::-1]
    for yi, value, colour in zip(y, values, colours, strict=True):
        ax.errorbar(value["mean"], yi, xerr=_errors([value]), fmt="o", color=colour, capsize=3)
    ax.axvline(0, color="black", linewidth=0.8)
    ax.set_yticks(y, labels, fontsize=SMALL)
    ax.set_xlabel("difference in accuracy, mean over seeds with its 95% interval")
    for verdict, colour in palette.items():
        if colour in colours:
            ax.plot([], [], "o", color=colour, label=verdict)
    ax.legend(fontsize=SMALL, loc="upper center", bbox_to_anchor=(0.5, -0.12), ncol=3,
              title="verdict", title_fontsize=SMALL)
    if path is not None:
        figure.savefig(path, dpi=120)
    return figure


def plot_rare(results: dict, path: Path | None = None) -> Figure:
    """On the test examples whose word the word biLM reads as <unk>: each layer of the word
    biLM and of the character biLM, pre-trained and untrained, with 95% intervals."""
    figure = Figure(figsize=(NOTEBOOK_WIDTH_IN, 4.5), layout="constrained")  # a notebook's width
    models = (PRETRAINED, "char", "char_untrained")
    for ax, test in zip(figure.subplots(1, 2), ("rare_sense", "rare_pos"), strict=True):
        readings = results["readings"][test]
        for n, model in enumerate(models):
            found = [readings[reading(model, k)] for k in LAYERS]
            ax.bar(np.arange(len(LAYERS)) + (n - 1) * 0.27, [f["mean"] for f in found], 0.27,
                   yerr=_errors(found), capsize=3, color=f"C{[0, 1, 7][n]}",
                   label="word biLM (reads <unk>)" if model == PRETRAINED else MODEL_NAMES[model])
        prior = "chance" if test == "rare_sense" else "majority"
        ax.axhline(readings[prior]["mean"], color="black", linestyle="--", linewidth=1.2,
                   label=PRIOR_NAMES[prior])
        ax.set_xticks(range(len(LAYERS)), [f"layer {k}" for k in LAYERS])
        ax.set_title(TEST_NAMES[test], fontsize="medium")
        ax.legend(fontsize=SMALL, loc="upper center", bbox_to_anchor=(0.5, -0.1), ncol=2)
    figure.axes[0].set_ylabel("test accuracy (95% interval)")
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

PRINTED = (("the run", "real_run"), ("the tests", "real_tests"),
           ("pre-training: held-out perplexity", "real_pretraining"),
           ("word sense, natural split", "real_natural"),
           ("word sense, balanced split", "real_balanced"),
           ("part of speech, a regularised probe per layer", "real_pos"),
           ("the probe's penalty: the capacity sweep", "real_sweep"),
           ("words the word biLM reads as <unk>: the character biLM", "real_rare"),
           ("what the literature leads one to expect", "real_expected"))


def write_outputs(results: dict, out: Path, log: Callable[[str], None] = print) -> None:
    """`out`/results.json, the figures `layers.png`, `findings.png` and `rare.png` (with a
    character biLM) and `nearest.txt`; the tables, printed."""
    out.mkdir(parents=True, exist_ok=True)
    results = {"budget": None, **results}
    (out / "results.json").write_text(json.dumps(results, indent=1) + "\n")
    log(str(out / "results.json"))
    for title, name in PRINTED:
        log(f"\n== {title} " + "=" * max(0, 84 - len(title)))
        log(TABLES[name](results))
    plot_layers(results, out / "layers.png")
    plot_findings(results, out / "findings.png")
    log(f"{out / 'layers.png'}\n{out / 'findings.png'}")
    if has_characters(results):
        plot_rare(results, out / "rare.png")
        log(str(out / "rare.png"))
    (out / "nearest.txt").write_text(nearest_text(results))
    log(str(out / "nearest.txt"))
