"""Section 5: layer-wise embeddings of a sentence read between <s> and </s>, in eval mode,
without gradients, exactly repeatable."""

import copy

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from course.diagnose import assert_close

from .devices import mixed_devices
from .strategies import sentences_from

SAME_WORD_TWICE = ("she put her money in the bank", "they sat on the bank of the river")


def test_one_sentence_gives_three_layers_per_word(extract, trained):
    """One sentence of 6 words gives one tensor (3, 6, 512)."""
    emb = extract.get_elmo_embeddings(trained.model, "the bank gave him a loan", trained.word2idx)
    assert isinstance(emb, torch.Tensor), f"one sentence should give one tensor, got {type(emb)}"
    assert emb.shape == (3, 6, 512), (
        f"expected (layers, words, 512) = (3, 6, 512): every layer j = 0 .. 2, one row per "
        f"word (<s> and </s> stripped); got {tuple(emb.shape)}"
    )


def test_rows_are_the_words_read_between_boundaries(extract, corpus, trained):
    """Row i is word i of the biLM's layers on <s> w_1 .. w_n </s>, at every layer."""
    sentence = "the bank gave him a loan"
    ids = corpus.encode(sentence, trained.word2idx, add_boundaries=True)
    emb = extract.get_elmo_embeddings(trained.model, sentence, trained.word2idx)
    with torch.no_grad():
        expected = trained.model.eval()(torch.tensor(ids).unsqueeze(1)).layers[:, 1:-1, 0]
    assert tuple(emb.shape) == tuple(expected.shape), (
        f"expected {tuple(expected.shape)}: one row per word, got {tuple(emb.shape)}")
    assert_close(emb[0], expected[0], f"layer 0 of {sentence!r}, row i for word i",
                 atol=1e-6, rtol=0,
                 hint="drop exactly the <s> before the first word and the </s> after the last")
    assert_close(emb, expected, f"the embeddings of {sentence!r}", time_dim=1,
                 atol=1e-5, rtol=0,
                 hint="feed the biLM <s> w_1 .. w_n </s>, as it was pre-trained, then drop the "
                      "boundary positions")


def test_without_boundaries_the_rows_are_the_words_read_alone(extract, corpus, trained):
    """`boundaries=False` (section 5's experiment): row i is word i of the biLM's layers on
    w_1 .. w_n alone, in a batch as alone."""
    sentences = ["the bank gave him a loan", "turn right"]
    embs = extract.get_elmo_embeddings(trained.model, sentences, trained.word2idx,
                                       boundaries=False)
    for sentence, emb in zip(sentences, embs, strict=True):
        ids = corpus.encode(sentence, trained.word2idx)
        with torch.no_grad():
            expected = trained.model.eval()(torch.tensor(ids).unsqueeze(1)).layers[:, :, 0]
        assert tuple(emb.shape) == tuple(expected.shape), (
            f"boundaries=False: expected {tuple(expected.shape)}, one row per word, got "
            f"{tuple(emb.shape)}")
        assert_close(emb, expected, f"the embeddings of {sentence!r} without boundaries",
                     time_dim=1, atol=1e-5, rtol=0,
                     hint="with boundaries=False the biLM reads w_1 .. w_n alone, no <s> and "
                          "no </s>, and row i is still word i")


def test_batch_gives_one_tensor_per_sentence(extract, trained):
    """A list of 2 sentences gives a list of 2 tensors, each with its own number of words."""
    sentences = ["turn right", "the play was long but good"]
    embs = extract.get_elmo_embeddings(trained.model, sentences, trained.word2idx)
    assert isinstance(embs, list), f"a list of sentences should give a list, got {type(embs)}"
    shapes = [tuple(e.shape) for e in embs]
    assert shapes == [(3, 2, 512), (3, 6, 512)], (
        "each sentence should get (3, its own number of words, 512), without padding rows: "
        f"expected [(3, 2, 512), (3, 6, 512)], got {shapes}"
    )


@given(st.data())
def test_batch_equals_one_at_a_time(extract, corpus, trained, data):
    """Each sentence of a list gets what it gets alone."""
    words = set(trained.word2idx) - set(corpus.SPECIAL_TOKENS)
    sentences = data.draw(st.lists(sentences_from(words, 7), min_size=1, max_size=4))
    together = extract.get_elmo_embeddings(trained.model, sentences, trained.word2idx)
    assert len(together) == len(sentences), f"{len(sentences)} sentences gave {len(together)}"
    for sentence, emb in zip(sentences, together, strict=True):
        alone = extract.get_elmo_embeddings(trained.model, sentence, trained.word2idx)
        assert_close(emb, alone, f"the embeddings of {sentence!r} in a batch of "
                     f"{len(sentences)}, against alone", time_dim=1, atol=1e-5, rtol=0,
                     hint="a sentence gets what it gets alone: are the lengths passed to the "
                          "biLM, and each sentence's rows cut from its own column?")


def test_same_input_twice_is_bit_identical(extract, trained):
    """Two extractions of the same sentences give bit-identical tensors."""
    first = extract.get_elmo_embeddings(trained.model, SAME_WORD_TWICE, trained.word2idx)
    second = extract.get_elmo_embeddings(trained.model, SAME_WORD_TWICE, trained.word2idx)
    pairs = zip(first, second, strict=True)
    assert all(torch.equal(a, b) for a, b in pairs), (
        "the same sentences gave other embeddings the second time"
    )


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
    assert seen, "get_elmo_embeddings never called the model"
    assert seen[0] == (False, False), (
        f"the biLM ran with training={seen[0][0]}, gradients enabled={seen[0][1]}; "
        "extraction should call model.eval() and run under torch.no_grad()"
    )
    assert not emb.requires_grad, "the embeddings should carry no autograd graph"


def test_section_7_can_train_on_the_embeddings(extract, trained):
    """A trainable weight times the embeddings has a gradient: section 7 learns its mix on
    what extraction returns (torch.inference_mode's tensors cannot take part in that)."""
    emb = extract.get_elmo_embeddings(trained.model, "turn right", trained.word2idx)
    weights = torch.ones(emb.shape[0], 1, 1, requires_grad=True)
    try:
        (weights * emb).sum().backward()
    except RuntimeError as err:
        made_in = ("they were made under torch.inference_mode(), whose tensors autograd "
                   "never takes; extract under torch.no_grad() instead"
                   if emb.is_inference() else "see torch's words")
        raise AssertionError(
            "section 7 multiplies the embeddings by trainable weights, and that failed: "
            f"{made_in} (torch: {str(err).split('.')[0]})") from None
    assert weights.grad is not None, "no gradient reached a weight that multiplied them"


def test_the_ids_go_to_the_models_device(extract, trained):
    """A model on the meta device (shapes, no values) reads ids on that device: the biLM runs
    wherever its parameters are, a GPU included."""
    model = copy.deepcopy(trained.model).to("meta")
    mixed = mixed_devices(lambda: extract.get_elmo_embeddings(model, "turn right",
                                                              trained.word2idx))
    assert mixed is None, (
        "the biLM's parameters are on one device and the ids it read on another: move the "
        f"padded ids to the device of the model's parameters before it reads them: {mixed}")


@pytest.mark.parametrize("mode", [True, False], ids=["from training mode", "from eval mode"])
def test_leaves_the_model_in_the_mode_it_found(extract, trained, mode):
    """A model in training (or eval) mode is in that mode again after extraction."""
    trained.model.train(mode)
    extract.get_elmo_embeddings(trained.model, "turn right", trained.word2idx)
    assert trained.model.training is mode, (
        f"the model was in {'training' if mode else 'eval'} mode before extraction and "
        f"in {'training' if trained.model.training else 'eval'} mode after it"
    )


def test_layer_0_of_one_word_is_identical_across_contexts(extract, trained):
    """'bank' in two sentences: the same layer 0 vector, different layers 1 and 2."""
    a, b = extract.get_elmo_embeddings(trained.model, SAME_WORD_TWICE, trained.word2idx)
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
