"""The demo's results: `make demo` writes them with the schema the tables read, every record
of a trained biLM beside the untrained biLM it started from; the README's and docs' tables,
and the reference's summary that the handout ships, are the ones the committed results give;
and the targets read as effects of pre-training."""

import copy
import json

import numpy as np
import pytest

from analyses import experiments, targets
from course import corpus
from tools import results, results_text

pytestmark = pytest.mark.slow  # make check replays it at unchanged inputs (replay.py)

FIGURES = ("training_loss.png", "context_gaps.png", "control.png", "context_comparison.png",
           "halves.png", "pca_bank.png", "layer_weights.png", "layer_weights_untrained.png",
           "nearest.txt", "char_vs_word.png", "char_neighbours.txt")


def test_the_demo_writes_results_with_the_schema_and_every_figure(demo_one_seed):
    written = json.loads((demo_one_seed / "results.json").read_text())
    assert results.validate(written) == []
    assert written["seeds"] == [0]
    words = {r["word"] for r in written["context"]}
    assert words == {"bank", "play", "right", "watch", "all"}
    assert len(written["context"]) == 2 * 2 * len(words) * 3, "state x split x word x layer"
    assert len(written["probes"]) == 2 * 2 * 4, "state x task x (mix, layers 0-2)"
    assert {kind: len(written["char"][kind]) for kind in results.RECORDS} == {
        kind: len(written[kind]) for kind in results.RECORDS}, "the character biLM's records"
    queries = targets.queries(targets.view(written))
    assert len(written["neighbours"]) == 2 * 2 * len(queries), "model x state x query"
    for name in FIGURES:
        assert (demo_one_seed / name).stat().st_size > 0, name
    nearest = (demo_one_seed / "nearest.txt").read_text()
    assert "trained biLM" in nearest and "untrained biLM" in nearest


def test_the_untrained_records_are_of_a_biLM_that_never_learned(demo_one_seed):
    """The control is a biLM before training: its held-out sense gap stays below the
    trained one's at layers 1 and 2, and it has no training record."""
    written = json.loads((demo_one_seed / "results.json").read_text())
    for model in targets.MODELS:
        trained, untrained = (targets.view(written, model, state) for state in (True, False))
        for layer in targets.CONTEXT_LAYERS:
            assert (targets.gap(untrained, "heldout", "all", layer)
                    < targets.gap(trained, "heldout", "all", layer)).all(), (model, layer)
        assert untrained["pretraining"] == [] and len(trained["pretraining"]) == 1


def test_the_schema_holds_the_record_kinds_the_experiments_write():
    assert set(results.RECORDS) == set(experiments.RECORDS)


def test_the_committed_results_are_valid_and_the_tables_match_them():
    committed = results.load()
    assert results.stale_tables(committed) == [], "run `python -m tools.results write`"


def test_a_changed_number_makes_the_tables_stale():
    changed = copy.deepcopy(results.load())
    changed["pretraining"][0]["heldout"] += 1.0  # a table of docs/analysis.md alone
    assert results.stale_tables(changed) == ["docs/analysis.md"]
    for record in changed["context"]:  # every gap gone: the targets, wherever they are kept
        record["different"] = record["same"]
    assert results.stale_tables(changed) == ["README.md", "docs/analysis.md",
                                             "analyses/reference_targets.py"]


def test_the_pages_sentences_say_what_the_numbers_say():
    committed = results.load()
    said = results_text.probes_read(committed)
    assert "the word-class mix from 0.22 to 0.52 (chance 0.27)" in said
    assert "below chance" in said, "the untrained mix scores under the most frequent class"
    changed = copy.deepcopy(committed)
    for record in changed["probes"]:
        if not record["trained"] and record["task"] == "word_class" and record["layer"] == "mix":
            record["accuracy"] = 0.9
    said = results_text.probes_read(changed)
    assert "from 0.90 to 0.52" in said and "below chance" not in said
    verdicts = {r.target.claim: r.verdict for r in targets.read(committed)}
    assert f"*{verdicts['word sense: single-layer probes prefer layer 2']}*" in (
        results_text.targets_read(committed).split("* **Does the sense task")[1])


def test_the_pages_sentences_about_the_corpus_follow_the_corpus(monkeypatch):
    sizes = results_text.corpus_sizes()
    said = results_text.corpus_read({})
    assert f"{sizes['training sentences']} training sentences" in said
    assert f"{sizes['held-out sentences']} held-out ones" in said
    monkeypatch.setattr(corpus, "CORPUS", (*corpus.CORPUS, "the zebra sat by the bank"))
    assert results.stale_tables(results.load()) == ["docs/analysis.md"], (
        "a sentence more: the page's sizes of the corpus are stale")
    monkeypatch.setattr(corpus, "SENSE_LABELS", corpus.SENSE_LABELS[1:])
    with pytest.raises(ValueError, match="training sentences per sense differ"):
        results_text.corpus_sizes()  # one number for every sense would be wrong


def test_a_changed_reading_makes_the_reference_summary_stale():
    changed = copy.deepcopy(results.load())
    for record in changed["context"]:  # the untrained biLM as far apart as the trained one
        if not record["trained"]:
            record["different"] -= 1.0
    assert "analyses/reference_targets.py" in results.stale_tables(changed)


@pytest.mark.parametrize("damage, found", [
    (lambda r: r.pop("nearest"), "top-level keys"),
    (lambda r: r["context"][0].pop("baseline"), "context[0] has keys"),
    (lambda r: r["context"][0].pop("trained"), "context[0] has keys"),
    (lambda r: r["nearest"][0].update(trained="yes"), "trained must be true or false"),
    (lambda r: r["probes"][0].update(layer=3), "task or layer"),
    (lambda r: r["probes"][0].update(weights=None), "weights and gamma"),
    (lambda r: r["probes"][0].update(gamma=None), "weights and gamma"),
    (lambda r: r["context"][0].update(seed=99), "seed 99"),
    (lambda r: r["char"]["probes"][0].update(layer=3), "task or layer"),
    (lambda r: r["neighbours"][0].update(model="glove"), "model not one of"),
    (lambda r: r.update(probes=[p for p in r["probes"] if p["trained"]]), "untrained"),
])
def test_a_result_without_the_schema_is_refused(damage, found):
    broken = copy.deepcopy(results.load())
    damage(broken)
    assert any(found in problem for problem in results.validate(broken)), found


def test_every_target_is_read_on_every_seed_of_the_committed_results():
    committed = results.load()
    n = len(committed["seeds"])
    for reading in targets.read(committed):
        assert reading.trained.shape == reading.untrained.shape == (n,), reading.target.claim
        assert reading.verdict != targets.NOT_RUN


def _results_of(seeds: int) -> dict:
    """Results of `seeds` seeds that hold nothing but what `measured` looks for."""
    records = [{"seed": s, "trained": t} for s in range(seeds) for t in (True, False)]
    return {"seeds": list(range(seeds)), "context": records, "nearest": [], "probes": [],
            "pretraining": [], "neighbours": [],
            "char": {"context": [], "nearest": [], "probes": [], "pretraining": []}}


NOISE = np.tile([-0.01, 0.01], 5)  # 10 seeds of spread 0.01


@pytest.mark.parametrize("trained, untrained, verdict", [
    (0.3 + NOISE, 0.05 + NOISE, targets.PRE_TRAINING),
    (0.3 + NOISE, 0.2 + NOISE, targets.ARCHITECTURE),  # the untrained biLM holds it too
    (0.05 + NOISE, NOISE, targets.MISSED),  # the trained interval lies below 0.1
    (0.1 + NOISE, NOISE, targets.UNCLEAR),  # its interval straddles 0.1
    (0.15 + NOISE, 0.09 + NOISE, targets.UNCLEAR),  # held, but by less than the margin
])
def test_a_target_is_met_by_pre_training_only_where_the_untrained_biLM_misses_it(
        trained, untrained, verdict):
    values = {True: np.array(trained), False: np.array(untrained)}
    target = targets.Target(6, "a gap", lambda results, state: values[state], 0.1, 0.1)
    (reading,) = targets.read(_results_of(10), [target])
    assert reading.verdict == verdict, reading.counts()


@pytest.mark.parametrize("seeds", [5, 10, 20])
def test_one_rule_reads_any_number_of_seeds(seeds):
    """The same effect and spread read the same over 5 seeds as over 10; only the interval
    narrows. One seed has no interval: nothing but unclear."""
    spread = np.tile([-0.02, 0.02], seeds)[:seeds]
    values = {True: 0.3 + spread, False: 0.05 + spread}
    target = targets.Target(6, "a gap", lambda results, state: values[state], 0.1, 0.1)
    (reading,) = targets.read(_results_of(seeds), [target])
    assert reading.verdict == targets.PRE_TRAINING
    one = {True: np.array([0.3]), False: np.array([0.05])}
    target = targets.Target(6, "a gap", lambda results, state: one[state], 0.1, 0.1)
    assert targets.read(_results_of(1), [target])[0].verdict == targets.UNCLEAR


def test_a_strict_target_is_not_held_by_a_tie():
    """A preference: layer 2's value above the others'; a tie prefers nothing."""
    values = {True: np.zeros(5), False: np.zeros(5)}
    target = targets.Target(7, "prefers", lambda results, state: values[state], 0.0, 0.0,
                            strict=True)
    (reading,) = targets.read(_results_of(5), [target])
    assert reading.counts() == {"trained": "0/5", "untrained": "0/5", "effect": "0/5"}
    assert reading.verdict == targets.MISSED


def test_the_interval_is_students_t():
    mean, low, high = targets.interval([1.0, 2.0, 3.0])  # sd 1, n 3: t 4.303
    assert mean == 2.0 and high - mean == pytest.approx(4.303 / np.sqrt(3))


@pytest.mark.parametrize("yours, within", [
    ([0.15, 0.16, 0.14, 0.15, 0.16], True),  # the reference's mean, its spread
    ([0.02, 0.03, 0.01, 0.02, 0.03], False),  # the effect gone: a mistake
    ([0.14], True),  # one seed: read against the reference's spread
])
def test_a_difference_says_whether_it_is_within_seed_noise(yours, within):
    theirs = np.tile([0.14, 0.16], 5)
    assert targets.within_noise(yours, theirs)[0] is within


def test_replicate_judges_yours_and_the_references_by_one_rule():
    """The reference's verdicts that `make replicate` shows are the rule's on its seeds."""
    committed = results.load()
    summary = targets.summary(committed)
    for target in targets.TARGETS:
        theirs = summary["targets"][target.claim]
        assert targets.verdict(target, *(theirs["values"][key] for key in (
            "trained", "untrained", "effect"))) == theirs["verdict"], target.claim


def test_without_the_character_biLM_its_targets_are_not_run_and_the_others_unchanged():
    committed = results.load()
    without = {**copy.deepcopy(committed), "char": {kind: [] for kind in results.RECORDS},
               "neighbours": [r for r in committed["neighbours"] if r["model"] == "word"]}
    for reading, before in zip(targets.read(without), targets.read(committed), strict=True):
        if "char" in reading.target.models:
            assert reading.verdict == targets.NOT_RUN, reading.target.claim
        else:
            assert reading.verdict == before.verdict, reading.target.claim
    assert "not run" in targets.markdown_table(without).splitlines()[-1]
    assert "section 8 was not measured" in targets.report(without)
