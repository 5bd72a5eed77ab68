"""Section 6: cosine similarity, and how a word's embedding moves with its sentence.

What is asserted about the trained biLM held on every training seed measured (0-9, see
the README): layer 0 is the same vector in every context; the different-sense pairs are
less similar than the same-sense pairs at layers 1 and 2, pooled over the four words; and
different-sense similarity falls from layer 0 to 1 to 2. It did not hold word by word
("bank" and "right" went the other way on every seed), so that is not asserted.
"""

import math

import numpy as np
import pytest
import torch
from hypothesis import given
from matplotlib.figure import Figure

from .strategies import positive_scales, vector_pairs

TOL = 1e-5


def reference_cosine(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    a, b = a.astype(np.float64), b.astype(np.float64)
    return (a * b).sum(-1) / (np.linalg.norm(a, axis=-1) * np.linalg.norm(b, axis=-1))


@given(vector_pairs())
def test_cosine_matches_the_definition(context, pair):
    a, b = pair
    got = context.cosine_sim(torch.from_numpy(a), torch.from_numpy(b))
    assert tuple(got.shape) == a.shape[:-1], (
        f"inputs of shape {a.shape} should give one cosine per vector, shape {a.shape[:-1]}; "
        f"got {tuple(got.shape)}"
    )
    np.testing.assert_allclose(got.numpy(), reference_cosine(a, b), atol=TOL)


@given(vector_pairs())
def test_cosine_is_symmetric_and_within_minus_one_and_one(context, pair):
    a, b = (torch.from_numpy(x) for x in pair)
    ab, ba = context.cosine_sim(a, b), context.cosine_sim(b, a)
    assert torch.allclose(ab, ba, atol=1e-6), "cos(a, b) should equal cos(b, a)"
    assert ((ab >= -1) & (ab <= 1)).all(), f"cosines must lie in [-1, 1], got {ab}"


@given(vector_pairs(), positive_scales)
def test_cosine_ignores_scale_and_flips_with_sign(context, pair, scale):
    a, b = (torch.from_numpy(x) for x in pair)
    base = context.cosine_sim(a, b)
    assert torch.allclose(context.cosine_sim(a * scale, b), base, atol=TOL), (
        f"scaling a vector by {scale} should not change its cosine"
    )
    assert torch.allclose(context.cosine_sim(-a, b), -base, atol=TOL), "cos(-a, b) = -cos(a, b)"


@given(vector_pairs())
def test_a_vector_is_fully_similar_to_itself(context, pair):
    a = torch.from_numpy(pair[0])
    assert torch.allclose(context.cosine_sim(a, a), torch.ones(a.shape[:-1]), atol=1e-6)


@given(vector_pairs(max_batch_dims=1))
def test_a_batch_gives_each_row_its_own_cosine(context, pair):
    a, b = (torch.from_numpy(x) for x in pair)
    batch = context.cosine_sim(a, b)
    for row in range(a.shape[0] if a.dim() > 1 else 0):
        assert torch.allclose(batch[row], context.cosine_sim(a[row], b[row]), atol=1e-6)


def test_known_angles(context):
    x, y = torch.tensor([1.0, 0.0]), torch.tensor([0.0, 2.0])
    assert float(context.cosine_sim(x, y)) == pytest.approx(0.0, abs=1e-7), "orthogonal: 0"
    assert float(context.cosine_sim(x, -3 * x)) == pytest.approx(-1.0), "opposite: -1"
    diagonal = torch.tensor([1.0, 1.0])
    assert float(context.cosine_sim(x, diagonal)) == pytest.approx(math.sqrt(0.5)), "45 deg"


def test_zero_vector_has_similarity_zero(context):
    zero, x = torch.zeros(4), torch.tensor([1.0, 2.0, 3.0, 4.0])
    for a, b in ((zero, x), (x, zero), (zero, zero)):
        got = context.cosine_sim(a, b)
        assert not torch.isnan(got) and float(got) == 0.0, (
            f"the documented result for a zero vector is 0, got {float(got)}"
        )


@pytest.mark.parametrize("a, b", [
    (torch.ones(3), torch.ones(4)),
    (torch.ones(2, 3), torch.ones(3)),
    (torch.ones(2, 3), torch.ones(3, 3)),
])
def test_mismatched_shapes_are_a_clear_error(context, a, b):
    with pytest.raises(ValueError, match=r"shape") as err:
        context.cosine_sim(a, b)
    assert str(tuple(a.shape)) in str(err.value) and str(tuple(b.shape)) in str(err.value), (
        f"the message should name both shapes: {err.value}"
    )


def test_non_vectors_are_a_clear_error(context):
    with pytest.raises(ValueError, match="D >= 1"):
        context.cosine_sim(torch.tensor(1.0), torch.tensor(2.0))
    with pytest.raises(ValueError, match=r"D >= 1.*\(0,\)"):
        context.cosine_sim(torch.ones(0), torch.ones(0))
    with pytest.raises(TypeError, match="tensors, got list for a$"):
        context.cosine_sim([1.0, 0.0], torch.ones(2))
    with pytest.raises(TypeError, match="tensors, got list for b$"):
        context.cosine_sim(torch.ones(2), [0.0, 1.0])


# --- the comparison, on the biLM pre-trained with seed 0 ---------------------------------

@pytest.fixture(scope="module")
def comparison(context, trained):
    return context.compare_contexts(trained.model, trained.word2idx)


def test_every_pair_of_sentences_with_one_target_word(comparison, corpus):
    words = {word for _, word, _ in corpus.SENSE_LABELS}
    expected = {(i, j) for i, (_, wi, _) in enumerate(corpus.SENSE_LABELS)
                for j, (_, wj, _) in enumerate(corpus.SENSE_LABELS) if i < j and wi == wj}
    found = {(pair.first, pair.second) for pair in comparison.pairs}
    assert found == expected and len(comparison.pairs) == len(expected), (
        f"expected the {len(expected)} pairs i < j of sentences sharing a target word, "
        f"found {len(comparison.pairs)}"
    )
    assert set(comparison.words) == words
    for pair in comparison.pairs:
        sense_a, sense_b = corpus.SENSE_LABELS[pair.first][2], corpus.SENSE_LABELS[pair.second][2]
        assert pair.same_sense == (sense_a == sense_b), f"{pair}: senses {sense_a}, {sense_b}"
    assert comparison.similarity.shape == (len(expected), 3)


def test_the_comparison_keeps_the_sentences_in_order(comparison, corpus):
    assert comparison.sentences == tuple(sentence for sentence, _, _ in corpus.SENSE_LABELS)


def test_labels_without_a_shared_target_word_are_a_clear_error(context, trained):
    labels = [("turn right at the river", "right", "direction"),
              ("she put her money in the bank", "bank", "finance")]
    with pytest.raises(ValueError, match="no target word in two sentences"):
        context.compare_contexts(trained.model, trained.word2idx, labels)


def test_similarity_is_the_cosine_of_the_target_words_embeddings(comparison, corpus, extract,
                                                                 trained):
    sentences = [sentence for sentence, _, _ in corpus.SENSE_LABELS]
    embeddings = extract.get_elmo_embeddings(trained.model, sentences, trained.word2idx)
    targets = [emb[:, corpus.tokenize(sentence).index(word)]
               for emb, (sentence, word, _) in zip(embeddings, corpus.SENSE_LABELS, strict=True)]
    for pair, got in zip(comparison.pairs, comparison.similarity, strict=True):
        expected = torch.nn.functional.cosine_similarity(
            targets[pair.first], targets[pair.second], dim=-1)
        assert torch.allclose(got, expected, atol=TOL), (
            f"{pair}: expected the per-layer cosine of {pair.word!r}'s embeddings in the two "
            f"sentences, {expected.tolist()}; got {got.tolist()}"
        )


def test_layer_0_similarity_is_one_for_every_pair(comparison):
    layer0 = comparison.similarity[:, 0]
    assert torch.allclose(layer0, torch.ones_like(layer0), atol=1e-6), (
        f"layer 0 has no context, so a word's vector is the same in every sentence; "
        f"found cosines from {float(layer0.min()):.6f} to {float(layer0.max()):.6f}"
    )
    assert (comparison.similarity[:, 1:] < 1 - 1e-4).all(), "layers 1-2 depend on context"


def test_different_senses_are_less_similar_than_same_senses_at_layers_1_and_2(comparison):
    same = comparison.select(same_sense=True).mean(dim=0)
    different = comparison.select(same_sense=False).mean(dim=0)
    assert (different[1:] < same[1:]).all(), (
        f"mean similarity per layer: same sense {same.tolist()}, different {different.tolist()}"
    )


def test_different_sense_similarity_falls_layer_by_layer(comparison):
    different = comparison.select(same_sense=False).mean(dim=0)
    assert different[0] > different[1] > different[2], (
        f"different-sense similarity per layer should fall: {different.tolist()}"
    )


def test_the_table_names_every_word_and_layer(comparison):
    table = comparison.table()
    for text in (*comparison.words, "same sense", "different sense", "layer 0", "layer 2"):
        assert text in table, f"{text!r} is missing from the table:\n{table}"


def test_a_few_labels_of_ones_choice(context, trained):
    labels = [("she put her money in the bank", "bank", "finance"),
              ("the bank gave him a loan", "bank", "finance"),
              ("they sat on the bank of the river", "bank", "river")]
    result = context.compare_contexts(trained.model, trained.word2idx, labels)
    assert [(p.first, p.second, p.same_sense) for p in result.pairs] == [
        (0, 1, True), (0, 2, False), (1, 2, False)]


@pytest.mark.parametrize("labels, match", [
    ([], "none"),
    ([("the river was green", "bank", "river"), ("the bank", "bank", "finance")], "bank"),
])
def test_bad_labels_are_a_clear_error(context, trained, labels, match):
    with pytest.raises(ValueError, match=match):
        context.compare_contexts(trained.model, trained.word2idx, labels)


# --- the figure ------------------------------------------------------------------------

@pytest.fixture(scope="module")
def figure_path(tmp_path_factory):
    return tmp_path_factory.mktemp("figures") / "new folder" / "context.png"


@pytest.fixture(scope="module")
def figure(context, comparison, figure_path):
    return context.plot_context_comparison(comparison, figure_path)


def plotted_axes(figure):
    """The heatmap and the bar chart, told apart by what they hold (colorbars excluded)."""
    heat = [ax for ax in figure.axes if ax.images]
    bars = [ax for ax in figure.axes if ax.patches and not ax.images]
    assert len(heat) == 1 and len(bars) == 1, (
        f"expected one heatmap (imshow) and one bar chart, found {len(heat)} and {len(bars)}"
    )
    return heat[0], bars[0]


def test_returns_a_figure_with_a_heatmap_and_a_bar_chart(figure):
    assert isinstance(figure, Figure), f"expected a matplotlib Figure, got {type(figure)}"
    plotted_axes(figure)


def test_heatmap_shows_every_pair_at_every_layer(figure, comparison):
    heat, _ = plotted_axes(figure)
    values = np.asarray(heat.images[0].get_array())
    assert values.shape == tuple(comparison.similarity.shape), (
        f"the heatmap should have one row per pair and one column per layer, "
        f"{tuple(comparison.similarity.shape)}; it has {values.shape}"
    )
    assert np.allclose(np.sort(values, axis=0), np.sort(comparison.similarity.numpy(), axis=0))
    assert heat.get_xlabel() and heat.get_ylabel() and heat.get_title()
    labels = [t.get_text() for t in heat.get_xticklabels()]
    assert labels == ["layer 0", "layer 1", "layer 2"], f"x tick labels: {labels}"


def test_bars_are_the_mean_similarity_of_each_sense_group(figure, comparison):
    _, bars = plotted_axes(figure)
    heights = sorted(round(p.get_height(), 4) for p in bars.patches)
    expected = sorted(round(float(v), 4) for same in (True, False)
                      for v in comparison.select(same).mean(dim=0))
    assert heights == expected, f"bar heights {heights}, expected the group means {expected}"
    legend = bars.get_legend()
    assert legend is not None, "the bar chart needs a legend: which bar is which group"
    texts = " ".join(t.get_text() for t in legend.get_texts())
    assert "same" in texts and "different" in texts, f"legend: {texts}"
    assert bars.get_xlabel() and bars.get_ylabel() and bars.get_title()


def test_saves_the_figure_when_given_a_path(figure, figure_path):
    assert figure_path.exists() and figure_path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n", (
        f"expected a PNG at {figure_path}, creating its folder"
    )
