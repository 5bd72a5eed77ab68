"""The demo's results: `make demo` writes them with the schema the tables read, and the
README's and docs' tables are the ones the committed results give."""

import copy
import json

import pytest

from tools import demo, results

FIGURES = ("training_loss.png", "context_gaps.png", "context_comparison.png", "halves.png",
           "pca_bank.png", "layer_weights.png", "nearest.txt", "char_vs_word.png",
           "char_neighbours.txt")


@pytest.fixture(scope="module")
def one_seed(tmp_path_factory):
    """What `make demo` writes, for one seed."""
    out = tmp_path_factory.mktemp("demo")
    demo.main(["--seeds", "1", "--out", str(out)])
    return out


def test_the_demo_writes_results_with_the_schema_and_every_figure(one_seed):
    written = json.loads((one_seed / "results.json").read_text())
    assert results.validate(written) == []
    assert written["seeds"] == [0]
    words = {r["word"] for r in written["context"]}
    assert words == {"bank", "play", "right", "watch", "all"}
    assert len(written["context"]) == 2 * len(words) * 3, "split x word x layer"
    assert len(written["probes"]) == 2 * 4, "task x (mix, layers 0-2)"
    assert {kind: len(written["char"][kind]) for kind in results.RECORDS} == {
        kind: len(written[kind]) for kind in results.RECORDS}, "the character biLM's records"
    assert len(written["neighbours"]) == 3 * len(results.queries(written)), "model x query"
    for name in FIGURES:
        assert (one_seed / name).stat().st_size > 0, name


def test_the_committed_results_are_valid_and_the_tables_match_them():
    committed = results.load()
    assert results.stale_tables(committed) == [], "run `python -m tools.results write`"


def test_a_changed_number_makes_the_tables_stale():
    changed = copy.deepcopy(results.load())
    changed["pretraining"][0]["heldout"] += 1.0
    assert results.stale_tables(changed) == ["README.md", "docs/analysis.md"]


@pytest.mark.parametrize("damage, found", [
    (lambda r: r.pop("nearest"), "top-level keys"),
    (lambda r: r["context"][0].pop("baseline"), "context[0] has keys"),
    (lambda r: r["probes"][0].update(layer=3), "task or layer"),
    (lambda r: r["probes"][0].update(weights=None), "weights are a list"),
    (lambda r: r["context"][0].update(seed=99), "seed 99"),
    (lambda r: r["char"]["probes"][0].update(layer=3), "task or layer"),
    (lambda r: r["neighbours"][0].update(model="glove"), "model not one of"),
])
def test_a_result_without_the_schema_is_refused(damage, found):
    broken = copy.deepcopy(results.load())
    damage(broken)
    assert any(found in problem for problem in results.validate(broken)), found


def test_targets_count_the_seeds_each_held_on():
    committed = results.load()
    n = len(committed["seeds"])
    for name, held, needed in results.targets(committed):
        assert held.shape == (n,) and 0 < needed <= n, name
