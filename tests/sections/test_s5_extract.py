"""Section 5: layer-wise embeddings of a sentence read between <s> and </s>, in eval mode,
without gradients, exactly repeatable.

Each test is an act, which runs the section's code and returns what it computed as data,
and a judge, which checks that data alone (`judged.py`); the judges read the biLM that the
tests' fakes pre-train from `trusted`, never from the act.
"""

import copy

import pytest
import torch
from hypothesis import strategies as st

from course.corpus import CORPUS
from course.diagnose import assert_close

from .devices import mixed_devices
from .judged import TRUSTED, judged
from .strategies import sentences_from

SAME_WORD_TWICE = ("she put her money in the bank", "they sat on the bank of the river")
# the words the biLM knows, as the trusted section 2 numbers them
WORDS = set(TRUSTED.sections.corpus.build_vocab(CORPUS)[0]) - set(
    TRUSTED.sections.corpus.SPECIAL_TOKENS)


def layers_of(trusted, ids):
    """(3, len(ids), 512): the trusted biLM's layers on one sentence's ids, in eval mode."""
    with torch.no_grad():
        return trusted.trained.model.eval()(torch.tensor(ids).unsqueeze(1)).layers[:, :, 0]


@judged()
def test_one_sentence_gives_three_layers_per_word(extract, trained):
    """One sentence of 6 words gives one tensor (3, 6, 512)."""
    emb = extract.get_elmo_embeddings(trained.model, "the bank gave him a loan", trained.word2idx)
    return {"tensor": isinstance(emb, torch.Tensor), "type": str(type(emb)),
            "shape": tuple(getattr(emb, "shape", ()))}


@test_one_sentence_gives_three_layers_per_word.judge
def _(out):
    assert out["tensor"], f"one sentence should give one tensor, got {out['type']}"
    assert out["shape"] == (3, 6, 512), (
        f"expected (layers, words, 512) = (3, 6, 512): every layer j = 0 .. 2, one row per "
        f"word (<s> and </s> stripped); got {out['shape']}"
    )


@judged()
def test_rows_are_the_words_read_between_boundaries(extract, trained):
    """Row i is word i of the biLM's layers on <s> w_1 .. w_n </s>, at every layer."""
    return extract.get_elmo_embeddings(trained.model, "the bank gave him a loan",
                                       trained.word2idx)


@test_rows_are_the_words_read_between_boundaries.judge
def _(emb, trusted):
    sentence = "the bank gave him a loan"
    corpus = trusted.sections.corpus
    ids = corpus.encode(sentence, trusted.trained.word2idx, add_boundaries=True)
    expected = layers_of(trusted, ids)[:, 1:-1]
    assert tuple(emb.shape) == tuple(expected.shape), (
        f"expected {tuple(expected.shape)}: one row per word, got {tuple(emb.shape)}")
    assert_close(emb[0], expected[0], f"layer 0 of {sentence!r}, row i for word i",
                 atol=1e-6, rtol=0,
                 hint="drop exactly the <s> before the first word and the </s> after the last")
    assert_close(emb, expected, f"the embeddings of {sentence!r}", time_dim=1,
                 atol=1e-5, rtol=0,
                 hint="feed the biLM <s> w_1 .. w_n </s>, as it was pre-trained, then drop the "
                      "boundary positions")


WITHOUT_BOUNDARIES = ["the bank gave him a loan", "turn right"]


@judged()
def test_without_boundaries_the_rows_are_the_words_read_alone(extract, trained):
    """`boundaries=False` (section 5's experiment): row i is word i of the biLM's layers on
    w_1 .. w_n alone, in a batch as alone."""
    return extract.get_elmo_embeddings(trained.model, WITHOUT_BOUNDARIES, trained.word2idx,
                                       boundaries=False)


@test_without_boundaries_the_rows_are_the_words_read_alone.judge
def _(embs, trusted):
    for sentence, emb in zip(WITHOUT_BOUNDARIES, embs, strict=True):
        ids = trusted.sections.corpus.encode(sentence, trusted.trained.word2idx)
        expected = layers_of(trusted, ids)
        assert tuple(emb.shape) == tuple(expected.shape), (
            f"boundaries=False: expected {tuple(expected.shape)}, one row per word, got "
            f"{tuple(emb.shape)}")
        assert_close(emb, expected, f"the embeddings of {sentence!r} without boundaries",
                     time_dim=1, atol=1e-5, rtol=0,
                     hint="with boundaries=False the biLM reads w_1 .. w_n alone, no <s> and "
                          "no </s>, and row i is still word i")


@judged()
def test_batch_gives_one_tensor_per_sentence(extract, trained):
    """A list of 2 sentences gives a list of 2 tensors, each with its own number of words."""
    embs = extract.get_elmo_embeddings(trained.model, ["turn right", "the play was long but good"],
                                       trained.word2idx)
    return {"list": isinstance(embs, list), "type": str(type(embs)),
            "shapes": [tuple(e.shape) for e in embs]}


@test_batch_gives_one_tensor_per_sentence.judge
def _(out):
    assert out["list"], f"a list of sentences should give a list, got {out['type']}"
    shapes = out["shapes"]
    assert shapes == [(3, 2, 512), (3, 6, 512)], (
        "each sentence should get (3, its own number of words, 512), without padding rows: "
        f"expected [(3, 2, 512), (3, 6, 512)], got {shapes}"
    )


@judged(sentences=st.lists(sentences_from(WORDS, 7), min_size=1, max_size=4))
def test_batch_equals_one_at_a_time(extract, trained, sentences):
    """Each sentence of a list gets what it gets alone."""
    return {"together": extract.get_elmo_embeddings(trained.model, sentences, trained.word2idx),
            "alone": [extract.get_elmo_embeddings(trained.model, sentence, trained.word2idx)
                      for sentence in sentences]}


@test_batch_equals_one_at_a_time.judge
def _(out, sentences):
    together = out["together"]
    assert len(together) == len(sentences), f"{len(sentences)} sentences gave {len(together)}"
    for sentence, emb, alone in zip(sentences, together, out["alone"], strict=True):
        assert_close(emb, alone, f"the embeddings of {sentence!r} in a batch of "
                     f"{len(sentences)}, against alone", time_dim=1, atol=1e-5, rtol=0,
                     hint="a sentence gets what it gets alone: are the lengths passed to the "
                          "biLM, and each sentence's rows cut from its own column?")


@judged()
def test_same_input_twice_is_bit_identical(extract, trained):
    """Two extractions of the same sentences give bit-identical tensors."""
    return [extract.get_elmo_embeddings(trained.model, SAME_WORD_TWICE, trained.word2idx)
            for _ in range(2)]


@test_same_input_twice_is_bit_identical.judge
def _(runs):
    first, second = runs
    pairs = zip(first, second, strict=True)
    assert all(torch.equal(a, b) for a, b in pairs), (
        "the same sentences gave other embeddings the second time"
    )


@judged()
def test_runs_in_eval_mode_without_gradients(extract, trained):
    """The biLM runs with training False and gradients off; the result has no graph."""
    seen = []
    hook = trained.model.register_forward_pre_hook(
        lambda module, args: seen.append((module.training, torch.is_grad_enabled())))
    try:
        trained.model.train()
        emb = extract.get_elmo_embeddings(trained.model, "turn right", trained.word2idx)
    finally:
        hook.remove()
    return {"seen": seen, "requires_grad": emb.requires_grad}


@test_runs_in_eval_mode_without_gradients.judge
def _(out):
    seen = out["seen"]
    assert seen, "get_elmo_embeddings never called the model"
    assert seen[0] == (False, False), (
        f"the biLM ran with training={seen[0][0]}, gradients enabled={seen[0][1]}; "
        "extraction should call model.eval() and run under torch.no_grad()"
    )
    assert not out["requires_grad"], "the embeddings should carry no autograd graph"


@judged()
def test_section_7_can_train_on_the_embeddings(extract, trained):
    """A trainable weight times the embeddings has a gradient: section 7 learns its mix on
    what extraction returns (torch.inference_mode's tensors cannot take part in that)."""
    emb = extract.get_elmo_embeddings(trained.model, "turn right", trained.word2idx)
    weights = torch.ones(emb.shape[0], 1, 1, requires_grad=True)
    try:
        (weights * emb).sum().backward()
    except RuntimeError as err:
        return {"error": str(err).split('.')[0], "inference": emb.is_inference()}
    return {"error": None, "gradient": weights.grad is not None}


@test_section_7_can_train_on_the_embeddings.judge
def _(out):
    if out["error"] is not None:
        made_in = ("they were made under torch.inference_mode(), whose tensors autograd "
                   "never takes; extract under torch.no_grad() instead"
                   if out["inference"] else "see torch's words")
        raise AssertionError(
            "section 7 multiplies the embeddings by trainable weights, and that failed: "
            f"{made_in} (torch: {out['error']})") from None
    assert out["gradient"], "no gradient reached a weight that multiplied them"


@judged()
def test_the_ids_go_to_the_models_device(extract, trained):
    """A model on the meta device (shapes, no values) reads ids on that device: the biLM runs
    wherever its parameters are, a GPU included."""
    model = copy.deepcopy(trained.model).to("meta")
    return mixed_devices(lambda: extract.get_elmo_embeddings(model, "turn right",
                                                             trained.word2idx))


@test_the_ids_go_to_the_models_device.judge
def _(mixed):
    assert mixed is None, (
        "the biLM's parameters are on one device and the ids it read on another: move the "
        f"padded ids to the device of the model's parameters before it reads them: {mixed}")


@pytest.mark.parametrize("mode", [True, False], ids=["from training mode", "from eval mode"])
@judged()
def test_leaves_the_model_in_the_mode_it_found(extract, trained, mode):
    """A model in training (or eval) mode is in that mode again after extraction."""
    trained.model.train(mode)
    extract.get_elmo_embeddings(trained.model, "turn right", trained.word2idx)
    return trained.model.training


@test_leaves_the_model_in_the_mode_it_found.judge
def _(training, mode):
    assert training is mode, (
        f"the model was in {'training' if mode else 'eval'} mode before extraction and "
        f"in {'training' if training else 'eval'} mode after it"
    )


@judged()
def test_layer_0_of_one_word_is_identical_across_contexts(extract, trained):
    """'bank' in two sentences: the same layer 0 vector, different layers 1 and 2."""
    return extract.get_elmo_embeddings(trained.model, SAME_WORD_TWICE, trained.word2idx)


@test_layer_0_of_one_word_is_identical_across_contexts.judge
def _(embs):
    a, b = embs
    bank_a, bank_b = a[:, 6], b[:, 4]
    cosine = torch.nn.functional.cosine_similarity(bank_a, bank_b, dim=-1)
    assert torch.equal(bank_a[0], bank_b[0]), (
        f"layer 0 of 'bank' (word 6 of the first sentence, word 4 of the second) should be "
        f"the same vector in both sentences; its cosine is {cosine[0]:.6f}"
    )
    assert (cosine[1:] < 1 - 1e-4).all(), (
        f"layers 1-2 of 'bank' should depend on its context; their cosines are "
        f"{cosine[1:].tolist()}"
    )
