"""Section 6: cosine similarity, and the comparison of a word's embeddings between every two
of its sentences, per layer.

Each test is an act, which runs the section's code and returns what it computed as data,
and a judge, which checks that data alone (`judged.py`). The judges of the comparison
recompute the embeddings it compares with the tests' fakes of sections 2 and 5 (course code,
`_trusted`): the fake `get_elmo_embeddings` is a fixed function of the words and reads no
biLM, so a judge needs no trained model.
"""

import functools
import math
from types import SimpleNamespace
from typing import NamedTuple

import numpy as np
import pytest
import torch
from hypothesis import settings

from course.corpus import CORPUS
from course.diagnose import assert_close

from .judged import TRUSTED, judged
from .strategies import positive_scales, vector_pairs

TOL = 1e-5
ROUNDING = 1e-6  # float32 rounding: torch's cosine_similarity(x, x) can be 1 + 2e-7
# The properties below hold for any pair; fewer examples than the definition's (10 of the
# usual 25) find what they look for, in a fraction of the time: hypothesis draws arrays slowly.
FEWER = settings(max_examples=settings.default.max_examples * 2 // 5)


def reference_cosine(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    a, b = a.astype(np.float64), b.astype(np.float64)
    return (a * b).sum(-1) / (np.linalg.norm(a, axis=-1) * np.linalg.norm(b, axis=-1))


@judged(pair=vector_pairs())
def test_cosine_matches_the_definition(context, pair):
    """<a, b> / (|a| |b|) along the last axis, one cosine per vector, as a float tensor."""
    a, b = pair
    return {"got": context.cosine_sim(torch.from_numpy(a), torch.from_numpy(b))}


@test_cosine_matches_the_definition.judge
def _(out, pair):
    a, b = pair
    got = out["got"]
    assert isinstance(got, torch.Tensor) and got.dtype.is_floating_point, (
        f"cosine_sim should return a floating-point tensor, got {got!r}"
    )
    assert tuple(got.shape) == a.shape[:-1], (
        f"inputs of shape {a.shape} should give one cosine per vector, shape {a.shape[:-1]}; "
        f"got {tuple(got.shape)}"
    )
    np.testing.assert_allclose(
        got.double().numpy(), reference_cosine(a, b), atol=TOL,
        err_msg=f"cosine_sim of vectors of shape {a.shape} is not <a, b> / (|a| |b|)")


@FEWER
@judged(pair=vector_pairs())
def test_cosine_is_symmetric_and_within_minus_one_and_one(context, pair):
    """cos(a, b) = cos(b, a), within [-1, 1] up to float32 rounding."""
    a, b = (torch.from_numpy(x) for x in pair)
    return {"ab": context.cosine_sim(a, b), "ba": context.cosine_sim(b, a)}


@test_cosine_is_symmetric_and_within_minus_one_and_one.judge
def _(out):
    ab, ba = out["ab"], out["ba"]
    assert torch.allclose(ab, ba, atol=1e-6), "cos(a, b) should equal cos(b, a)"
    assert ((ab >= -1 - ROUNDING) & (ab <= 1 + ROUNDING)).all(), (
        f"cosines must lie in [-1, 1], got {ab}"
    )


@FEWER
@judged(pair=vector_pairs(), scale=positive_scales)
def test_cosine_ignores_scale_and_flips_with_sign(context, pair, scale):
    """cos(s a, b) = cos(a, b) for s > 0, and cos(-a, b) = -cos(a, b)."""
    a, b = (torch.from_numpy(x) for x in pair)
    return {"base": context.cosine_sim(a, b), "scaled": context.cosine_sim(a * scale, b),
            "flipped": context.cosine_sim(-a, b)}


@test_cosine_ignores_scale_and_flips_with_sign.judge
def _(out, scale):
    base = out["base"]
    assert torch.allclose(out["scaled"], base, atol=TOL), (
        f"scaling a vector by {scale} should not change its cosine"
    )
    assert torch.allclose(out["flipped"], -base, atol=TOL), "cos(-a, b) = -cos(a, b)"


@FEWER
@judged(pair=vector_pairs())
def test_a_vector_is_fully_similar_to_itself(context, pair):
    """cos(a, a) = 1 for every non-zero vector."""
    a = torch.from_numpy(pair[0])
    return {"got": context.cosine_sim(a, a)}


@test_a_vector_is_fully_similar_to_itself.judge
def _(out, pair):
    a = torch.from_numpy(pair[0])
    got = out["got"]
    assert torch.allclose(got.double(), torch.ones(a.shape[:-1], dtype=torch.double),
                          atol=ROUNDING), f"cos(a, a) should be 1, got {got}"


@FEWER
@judged(pair=vector_pairs(max_batch_dims=1))
def test_a_batch_gives_each_row_its_own_cosine(context, pair):
    """For (N, D) inputs, row n of the result is the cosine of row n of a and of b."""
    a, b = (torch.from_numpy(x) for x in pair)
    return {"batch": context.cosine_sim(a, b),
            "alone": [context.cosine_sim(a[row], b[row])
                      for row in range(a.shape[0] if a.dim() > 1 else 0)]}


@test_a_batch_gives_each_row_its_own_cosine.judge
def _(out, pair):
    a = torch.from_numpy(pair[0])
    batch, alone = out["batch"], out["alone"]
    for row in range(a.shape[0] if a.dim() > 1 else 0):
        assert_close(batch[row], alone[row], f"row {row} of a batch's cosines", atol=1e-6,
                     rtol=0, hint=f"row {row} should be cos(a[{row}], b[{row}]): is the sum "
                                  "over the last axis, D?")


def _angles():
    """(x, [(b, the cosine of x and b, what they are)]): the known angles' vectors."""
    x, y = torch.tensor([1.0, 0.0]), torch.tensor([0.0, 2.0])
    diagonal = torch.tensor([1.0, 1.0])
    return x, [(y, 0.0, "orthogonal"), (-3 * x, -1.0, "opposite"),
               (diagonal, math.sqrt(0.5), "45 degrees apart")]


@judged()
def test_known_angles(context):
    """Orthogonal vectors: 0; opposite: -1; 45 degrees apart: sqrt(1/2)."""
    x, angles = _angles()
    return {"got": [float(context.cosine_sim(x, b)) for b, _, _ in angles]}


@test_known_angles.judge
def _(out):
    x, angles = _angles()
    for (b, expected, name), got in zip(angles, out["got"], strict=True):
        assert got == pytest.approx(expected, abs=ROUNDING), (
            f"{name}: the cosine of {x.tolist()} and {b.tolist()} is {expected:.6f}, got {got}"
        )


@judged()
def test_zero_vector_has_similarity_zero(context):
    """cos(0, b) = cos(b, 0) = cos(0, 0) = 0, never nan."""
    zero, x = torch.zeros(4), torch.tensor([1.0, 2.0, 3.0, 4.0])
    return {"got": [context.cosine_sim(a, b) for a, b in ((zero, x), (x, zero), (zero, zero))]}


@test_zero_vector_has_similarity_zero.judge
def _(out):
    for got in out["got"]:
        assert not torch.isnan(got) and float(got) == 0.0, (
            f"the documented result for a zero vector is 0, got {float(got)}"
        )


# --- the comparison, on the biLM pre-trained with seed 0 ---------------------------------

@functools.cache
def _trusted():
    """(corpus, extract, word2idx) for a judge: the tests' fakes of sections 2 and 5
    (`judged.TRUSTED`: course code, none of the learner's) and the vocabulary that `trained`
    has (`course.pretrained` builds it with the fake's `build_vocab`). The fake
    `get_elmo_embeddings` reads no model, so a judge passes None: the act's comparison ran on
    the same fake, whatever biLM it was given."""
    corpus, extract = TRUSTED.sections.corpus, TRUSTED.sections.extract
    word2idx, _ = corpus.build_vocab(CORPUS)
    return corpus, extract, word2idx


class SentencePair(NamedTuple):
    """A pair as a judge reads it: the fields (and repr) of section 6's `SentencePair`."""

    word: str
    first: int
    second: int
    same_sense: bool


def _comparison_data(comparison):
    """What a judge reads of a ContextComparison: its sentences, its pairs' fields, and its
    similarity."""
    sentences = comparison.sentences
    return {"sentences": sentences if isinstance(sentences, tuple | list) else repr(sentences),
            "pairs": [(p.word, p.first, p.second, p.same_sense) for p in comparison.pairs],
            "similarity": comparison.similarity}


def _read(data):
    """The comparison an act sent (`_comparison_data`), its pairs as SentencePairs."""
    return SimpleNamespace(sentences=data["sentences"],
                           pairs=tuple(SentencePair(*fields) for fields in data["pairs"]),
                           similarity=data["similarity"])


@pytest.fixture(scope="module")
def comparison(context, trained):
    return context.compare_contexts(trained.model, trained.word2idx)


@judged()
def test_every_pair_of_sentences_with_one_target_word(comparison):
    """All pairs i < j of sentences sharing a target word, each marked same- or
    different-sense, and one row of similarities per pair and layer."""
    return _comparison_data(comparison)


@test_every_pair_of_sentences_with_one_target_word.judge
def _(out):
    comparison, (corpus, _, _) = _read(out), _trusted()
    words = {word for _, word, _ in corpus.SENSE_LABELS}
    expected = {(i, j) for i, (_, wi, _) in enumerate(corpus.SENSE_LABELS)
                for j, (_, wj, _) in enumerate(corpus.SENSE_LABELS) if i < j and wi == wj}
    found = {(pair.first, pair.second) for pair in comparison.pairs}
    assert found == expected and len(comparison.pairs) == len(expected), (
        f"expected the {len(expected)} pairs i < j of sentences sharing a target word, "
        f"found {len(comparison.pairs)}, {len(found - expected)} of them not such a pair"
    )
    assert {pair.word for pair in comparison.pairs} == words, (
        f"every target word {sorted(words)} should have its pairs"
    )
    for pair in comparison.pairs:
        sense_a, sense_b = corpus.SENSE_LABELS[pair.first][2], corpus.SENSE_LABELS[pair.second][2]
        assert pair.same_sense == (sense_a == sense_b), (
            f"{pair}: the senses are {sense_a!r} and {sense_b!r}, so same_sense should be "
            f"{sense_a == sense_b}"
        )
    shape = tuple(comparison.similarity.shape)
    assert shape == (len(expected), 3), (
        f"similarity should be (pairs, layers) = ({len(expected)}, 3), got {shape}"
    )


@judged()
def test_the_comparison_keeps_the_sentences_in_order(comparison):
    """ContextComparison.sentences are the labels' sentences, in the labels' order."""
    return _comparison_data(comparison)


@test_the_comparison_keeps_the_sentences_in_order.judge
def _(out):
    comparison, (corpus, _, _) = _read(out), _trusted()
    expected = tuple(sentence for sentence, _, _ in corpus.SENSE_LABELS)
    assert comparison.sentences == expected, (
        "sentences should be a tuple of the labels' sentences in their order, as the pairs' "
        "indices refer to them"
    )


@judged()
def test_similarity_is_the_cosine_of_the_target_words_embeddings(comparison):
    """Each row is the per-layer cosine of the target word's embeddings in the two sentences."""
    return _comparison_data(comparison)


@test_similarity_is_the_cosine_of_the_target_words_embeddings.judge
def _(out):
    comparison, (corpus, extract, word2idx) = _read(out), _trusted()
    sentences = [sentence for sentence, _, _ in corpus.SENSE_LABELS]
    embeddings = extract.get_elmo_embeddings(None, sentences, word2idx)
    targets = [emb[:, corpus.tokenize(sentence).index(word)]
               for emb, (sentence, word, _) in zip(embeddings, corpus.SENSE_LABELS, strict=True)]
    for pair, got in zip(comparison.pairs, comparison.similarity, strict=True):
        expected = torch.nn.functional.cosine_similarity(
            targets[pair.first], targets[pair.second], dim=-1)
        assert_close(got.double(), expected.double(),
                     f"the per-layer cosines of {pair.word!r} in sentences {pair.first} and "
                     f"{pair.second}", atol=TOL, rtol=0,
                     hint="each row is cosine_sim of the target word's embeddings in the two "
                          "sentences, one per layer (the word's own row, not the sentence's)")


@judged()
def test_centred_similarity_takes_out_the_mean_of_every_target_word(context, corpus, trained):
    """`centre=True` (section 6's experiment): each row is the per-layer cosine of the two
    sentences' target-word embeddings, each less the mean, layer by layer, of the target
    words' embeddings over every sentence of the labels; the pairs are the default's."""
    labels = corpus.SENSE_LABELS
    centred = context.compare_contexts(trained.model, trained.word2idx, labels, centre=True)
    default = context.compare_contexts(trained.model, trained.word2idx, labels)
    return {"centred": _comparison_data(centred), "default": _comparison_data(default)}


@test_centred_similarity_takes_out_the_mean_of_every_target_word.judge
def _(out):
    (corpus, extract, word2idx), centred = _trusted(), _read(out["centred"])
    labels = corpus.SENSE_LABELS
    embeddings = extract.get_elmo_embeddings(None, [s for s, _, _ in labels], word2idx)
    targets = torch.stack([emb[:, corpus.tokenize(sentence).index(word)].cpu().double()
                           for emb, (sentence, word, _) in zip(embeddings, labels, strict=True)])
    targets = targets - targets.mean(dim=0)  # (N, layers, D) less the mean of each layer
    assert [tuple(p) for p in centred.pairs] == [tuple(p) for p in _read(out["default"]).pairs], (
        "centre=True should compare the same pairs as the default, in the same order")
    for pair, got in zip(centred.pairs, centred.similarity, strict=True):
        expected = torch.nn.functional.cosine_similarity(
            targets[pair.first], targets[pair.second], dim=-1)
        assert_close(got.double(), expected, f"the centred cosines of {pair.word!r} in "
                     f"sentences {pair.first} and {pair.second}", atol=1e-4, rtol=0,
                     hint="with centre=True, subtract from every target word's embedding the "
                          "mean of all the labels' target-word embeddings, per layer, before "
                          "the cosine")


@judged()
def test_layer_0_similarity_is_one_for_every_pair(comparison):
    """Layer 0 has no context: every pair's layer-0 cosine is 1, its layers 1-2 below 1."""
    return _comparison_data(comparison)


@test_layer_0_similarity_is_one_for_every_pair.judge
def _(out):
    comparison = _read(out)
    layer0 = comparison.similarity[:, 0].double()
    assert torch.allclose(layer0, torch.ones_like(layer0), atol=ROUNDING), (
        f"layer 0 has no context, so a word's vector is the same in every sentence; "
        f"found cosines from {float(layer0.min()):.6f} to {float(layer0.max()):.6f}"
    )
    assert (comparison.similarity[:, 1:] < 1 - 1e-4).all(), (
        "layers 1-2 depend on context: no pair of different sentences should have a cosine "
        "of 1 there"
    )


@judged()
def test_a_few_labels_of_ones_choice(context, trained):
    """Three labelled sentences of one word: pairs (0, 1), (0, 2), (1, 2) with their senses."""
    labels = [("she put her money in the bank", "bank", "finance"),
              ("the bank gave him a loan", "bank", "finance"),
              ("they sat on the bank of the river", "bank", "river")]
    return _comparison_data(context.compare_contexts(trained.model, trained.word2idx, labels))


@test_a_few_labels_of_ones_choice.judge
def _(out):
    result = _read(out)
    found = [(p.first, p.second, p.same_sense) for p in result.pairs]
    expected = [(0, 1, True), (0, 2, False), (1, 2, False)]
    assert found == expected, (
        f"(first, second, same_sense) of the pairs should be {expected}, got {found}"
    )


# 'bank' twice in the first sentence, at words 1 and 4
BANK_TWICE = (("the bank by the bank of the river", "bank", "river"),
              ("the bank gave him a loan", "bank", "finance"))


@judged()
def test_a_target_word_twice_is_compared_at_its_first_occurrence(context, trained):
    """'bank' twice in a sentence: the comparison uses its first occurrence, word 1."""
    labels = list(BANK_TWICE)
    return _comparison_data(context.compare_contexts(trained.model, trained.word2idx, labels))


@test_a_target_word_twice_is_compared_at_its_first_occurrence.judge
def _(out):
    (_, extract, word2idx), labels = _trusted(), list(BANK_TWICE)
    result = _read(out)
    first, second = extract.get_elmo_embeddings(None, [s for s, _, _ in labels], word2idx)
    expected = torch.nn.functional.cosine_similarity(first[:, 1], second[:, 1], dim=-1)
    assert_close(result.similarity[0].double(), expected.double(),
                 "the per-layer cosines of 'bank' in 'the bank by the bank of the river' and "
                 "'the bank gave him a loan'", atol=TOL, rtol=0,
                 hint="the first sentence holds 'bank' at words 1 and 4: compare it at its "
                      "first occurrence, word 1")


# capitals, punctuation and a hyphen: str.split and tokenize find 'bank' at different words
RIVER_SIDE = (("The river-side bank was steep.", "bank", "river"),
              ("The bank gave him a loan.", "bank", "finance"))


@judged()
def test_the_target_is_found_among_the_words_tokenize_gives(context, trained):
    """Capitals, punctuation and a hyphen: 'bank' is word 3 of 'The river-side bank was
    steep.' as tokenize splits it (the, river, side, bank, ...), and is compared there."""
    labels = list(RIVER_SIDE)
    return _comparison_data(context.compare_contexts(trained.model, trained.word2idx, labels))


@test_the_target_is_found_among_the_words_tokenize_gives.judge
def _(out):
    (corpus, extract, word2idx), labels = _trusted(), list(RIVER_SIDE)
    result = _read(out)
    first, second = extract.get_elmo_embeddings(None, [s for s, _, _ in labels], word2idx)
    words = corpus.tokenize(labels[0][0])
    cosines = [torch.nn.functional.cosine_similarity(first[:, i], second[:, 1], dim=-1)
               for i in range(len(words))]  # 'bank' of the second sentence is its word 1
    at = next((i for i, c in enumerate(cosines)
               if torch.allclose(result.similarity[0].double(), c.double(), atol=TOL)), None)
    assert at == words.index("bank"), (
        f"in {labels[0][0]!r}, whose words are {words} (tokenize, as extraction encodes "
        f"them), 'bank' is word {words.index('bank')}; compare_contexts compared "
        + (f"word {at}, {words[at]!r}" if at is not None else "none of its words")
        + ": find the target among the words that tokenize gives, not those of str.split"
    )
