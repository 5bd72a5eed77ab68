"""Predict, then run (`analyses.predictions`): a prediction comes before the numbers, is kept in
the learner's state beside what their biLM did, and is counted, never scored; the reference's
numbers come from the generated `analyses/predictions.json`, where every experiment is beyond
twice its seed noise; each of sections 3 to 8 has one, in its notebook."""

from __future__ import annotations

import dataclasses
import json
import re

import pytest

from analyses import predictions
from analyses.notebook import section_of
from course import progress
from course.harness import Harness
from course.registry import NOTEBOOKS_DIR, REFERENCE_DIR, ROOT, SECTIONS
from course.state import State

RESULTS = json.loads(predictions.RESULTS.read_text())
FOUND = {predictions.DEFAULT: 1.5, predictions.SWITCHED: 1.75, predictions.UNTRAINED: 9.5}


@pytest.fixture
def toy(monkeypatch, tmp_path):
    """A toy experiment that counts its runs, the reference's numbers of it, a fresh cache."""
    calls = []

    def measure(sections, seed):
        calls.append(seed)
        return dict(FOUND)

    experiment = predictions.Experiment("toy", 3, "BiLM(..., toy=True)", "toy=True",
                                        "held-out loss (lower is better)", (1, 2, 3), measure)
    monkeypatch.setitem(predictions.EXPERIMENTS, "toy", experiment)
    spread = {"mean": 1.0, "sd": 0.05}
    results = tmp_path / "predictions.json"
    results.write_text(json.dumps({"experiments": {"toy": {"summary": {
        "n": 5, **{key: spread for key in predictions.MEASURED},
        "effect": {"mean": 0.2, "sd": 0.05}, "kept": True}}}}))
    monkeypatch.setattr(predictions, "RESULTS", results)
    monkeypatch.setenv("ELMO_CACHE_DIR", str(tmp_path / "cache"))
    return calls


@pytest.fixture(scope="module")
def learners():
    """Sections as a learner's notebook loads them: section 3 from exercises/."""
    return Harness(ROOT / "exercises").sections(SECTIONS[2])


@pytest.fixture(scope="module")
def reference():
    return Harness(REFERENCE_DIR).sections(SECTIONS[-1])


def test_without_a_prediction_nothing_runs_and_one_is_asked_for(toy, learners, tmp_path,
                                                                  capsys):
    state = tmp_path / "progress.json"
    assert predictions.run(learners, "toy", "   ", state_path=state) is None
    assert toy == [] and not state.exists(), "nothing may run, nor be kept, before a prediction"
    assert "Write your prediction first" in capsys.readouterr().out


def test_the_numbers_are_shown_beside_the_control_and_the_reference(toy, learners, tmp_path,
                                                                     capsys):
    state = tmp_path / "progress.json"
    found = predictions.run(learners, "toy", "the loss rises a little", state_path=state)
    out = capsys.readouterr().out
    assert found == FOUND
    for words in ("your biLM", "the reference (5 seeds", "as built", "switched: toy=True",
                  "untrained",
                  "effect", "1.500", "1.750", "+0.250", "+0.200 ± 0.100", "9.500"):
        assert words in out, f"{words!r} missing from:\n{out}"
    assert "raised the held-out loss by 0.250 on your biLM, 5 times" in " ".join(out.split())
    assert "you predicted: the loss rises a little" in out
    assert all(len(line) <= 88 for line in out.splitlines()), out


def test_every_experiments_rows_keep_their_columns():
    names = [f"{predictions.SWITCHED}: {e.label}" for e in predictions.EXPERIMENTS.values()]
    assert max(map(len, names)) < predictions.NAMES, "a row's name runs into its number"


def test_every_prediction_is_kept_counted_and_shown_beside_its_outcome(toy, learners,
                                                                         tmp_path, capsys):
    state = tmp_path / "progress.json"
    for guess in ("it rises", "it falls"):
        predictions.run(learners, "toy", guess, state_path=state)
    kept = State.load(state).predictions
    assert [p["prediction"] for p in kept] == ["it rises", "it falls"]
    assert kept[-1][predictions.SWITCHED] == FOUND[predictions.SWITCHED]
    assert "2 predictions kept" in capsys.readouterr().out
    shown = "\n".join(progress.predictions_made(kept))
    assert "Predictions made before an experiment: 2 (sections 3)" in shown
    assert "you predicted: it falls" in shown and "your biLM: BiLM(..., toy=True) raised" in shown
    assert not re.search(r"score|correct|wrong|\d+ ?%", shown), "a prediction is never scored"


def test_a_state_without_predictions_reads_as_none_made(tmp_path):
    path = tmp_path / "progress.json"
    path.write_text(json.dumps({"format": 1, "runs": {}, "hints": {}}))
    assert State.load(path).predictions == [] and progress.predictions_made([]) == []


def test_a_section_not_written_yet_is_named_and_nothing_is_kept(monkeypatch, toy, learners,
                                                                 tmp_path, capsys):
    def stub(sections, seed):
        raise NotImplementedError("section 4 (pretrain): train_bilm is not implemented yet")

    monkeypatch.setitem(predictions.EXPERIMENTS, "toy",
                        dataclasses.replace(predictions.EXPERIMENTS["toy"], measure=stub))
    state = tmp_path / "progress.json"
    assert predictions.run(learners, "toy", "it rises", state_path=state) is None
    out = " ".join(capsys.readouterr().out.split())
    assert "train_bilm is not implemented yet" in out and "once that section passes" in out
    assert not state.exists()


def test_the_numbers_come_from_the_cache_until_the_code_changes(toy, learners):
    first = predictions.measure(learners, "toy")
    assert predictions.measure(learners, "toy") == first and toy == [0], (
        "the second measure of unchanged code should come from the cache")


def test_the_reference_runs_without_a_prediction_as_the_book_does(toy, reference, tmp_path):
    state = tmp_path / "progress.json"
    assert predictions.run(reference, "toy", "", state_path=state) == FOUND
    assert not state.exists(), "the book's run keeps no prediction"


# --- the generated file -----------------------------------------------------------------------


def test_every_experiment_is_measured_and_beyond_twice_its_seed_noise():
    measured = RESULTS["experiments"]
    assert set(measured) == set(predictions.EXPERIMENTS), (
        "analyses/predictions.json is stale: run `make predictions`")
    for name, experiment in predictions.EXPERIMENTS.items():
        found = measured[name]
        assert (found["section"], found["switch"], found["quantity"]) == (
            experiment.section, experiment.switch, experiment.quantity), (
            f"{name}: analyses/predictions.json is stale: run `make predictions`")
        summary = found["summary"]
        assert summary["n"] >= 5 and len(found["seeds"]) == summary["n"]
        assert abs(summary["effect"]["mean"]) >= 2 * summary["effect"]["sd"], (
            f"{name}: its effect is within twice its seed noise: not an experiment to keep")
    assert RESULTS["command"].startswith("make predictions")


@pytest.mark.parametrize("name", ["boundaries", "centre"])
def test_the_recorded_numbers_are_what_the_reference_computes_now(reference, name):
    """The experiments that train nothing beyond the cached biLM, at the course's seed."""
    recorded = next(run for run in RESULTS["experiments"][name]["seeds"] if run["seed"] == 0)
    found = predictions.EXPERIMENTS[name].measure(reference, 0)
    for key in predictions.MEASURED:
        assert found[key] == pytest.approx(recorded[key], abs=1e-3), (
            f"{name}, {key}: analyses/predictions.json is stale: run `make predictions`")


# --- the notebooks ------------------------------------------------------------------------------


def test_each_section_3_to_8_predicts_then_runs_then_explains_in_its_notebook():
    by_section = {e.section: name for name, e in predictions.EXPERIMENTS.items()}
    assert sorted(by_section) == [3, 4, 5, 6, 7, 8]
    for source in sorted(NOTEBOOKS_DIR.glob("0[3-8]_*.py")):
        section = section_of(source.with_suffix(".ipynb").name)
        cells = source.read_text().split("# %%")
        call = f'predictions.run(sections, "{by_section[section.number]}", prediction)'
        (at,) = [i for i, cell in enumerate(cells) if call in cell]
        assert 'prediction = ""' in cells[at], f"{source.name}: the prediction is the cell's"
        assert "**Predict**" in cells[at - 1], f"{source.name}: the question comes before"
        assert cells[at + 1].startswith(" [markdown]\n# <details><summary>Reading"), (
            f"{source.name}: the explanation comes after the run, folded until it is opened")
