"""Section 5: layer-wise embeddings, in eval mode, without gradients, exactly repeatable."""

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from .strategies import sentences_from

SAME_WORD_TWICE = ("she put her money in the bank", "they sat on the bank of the river")


def test_one_sentence_gives_three_layers_per_word(extract, trained):
    emb = extract.get_elmo_embeddings(trained.model, "the bank gave him a loan", trained.word2idx)
    assert isinstance(emb, torch.Tensor), f"one sentence should give one tensor, got {type(emb)}"
    assert emb.shape == (3, 6, 512), (
        f"expected (layers, words, 512) = (3, 6, 512), got {tuple(emb.shape)}; "
        "are <s> and </s> stripped?"
    )


def test_row_i_is_word_i(extract, trained):
    words = "the bank gave him a loan".split()
    emb = extract.get_elmo_embeddings(trained.model, " ".join(words), trained.word2idx)
    with torch.no_grad():
        for i, word in enumerate(words):
            alone = trained.model(torch.tensor([[trained.word2idx[word]]])).layers[0, 0, 0]
            assert torch.allclose(emb[0, i], alone, atol=1e-6), (
                f"row {i} of layer 0 is not the word {word!r}; drop exactly the <s> before the "
                "first word and the </s> after the last"
            )


def test_one_word_as_a_list_of_one_id_is_one_sentence(extract, trained):
    emb = extract.get_elmo_embeddings(trained.model, [trained.word2idx["bank"]])
    assert isinstance(emb, torch.Tensor) and emb.shape == (3, 1, 512), (
        "a list of word ids is one sentence, even a list of one"
    )


def test_batch_gives_one_tensor_per_sentence(extract, trained):
    sentences = ["turn right", "the play was long but good"]
    embs = extract.get_elmo_embeddings(trained.model, sentences, trained.word2idx)
    assert isinstance(embs, list), f"a list of sentences should give a list, got {type(embs)}"
    assert [tuple(e.shape) for e in embs] == [(3, 2, 512), (3, 6, 512)], (
        "each sentence should get (3, its own number of words, 512), without padding rows"
    )


@given(st.data())
def test_batch_equals_one_at_a_time(extract, corpus, trained, data):
    words = set(trained.word2idx) - set(corpus.SPECIAL_TOKENS)
    sentences = data.draw(st.lists(sentences_from(words, 7), min_size=1, max_size=4))
    together = extract.get_elmo_embeddings(trained.model, sentences, trained.word2idx)
    assert len(together) == len(sentences), f"{len(sentences)} sentences gave {len(together)}"
    for sentence, emb in zip(sentences, together, strict=True):
        alone = extract.get_elmo_embeddings(trained.model, sentence, trained.word2idx)
        assert torch.allclose(emb, alone, atol=1e-5), f"{sentence!r}: batched != alone"


def test_text_and_ids_give_the_same_embeddings(extract, corpus, trained):
    text = "we watch the children in the park"
    ids = corpus.encode(text, trained.word2idx)
    from_text = extract.get_elmo_embeddings(trained.model, text, trained.word2idx)
    assert torch.equal(extract.get_elmo_embeddings(trained.model, ids), from_text)
    assert torch.equal(extract.get_elmo_embeddings(trained.model, torch.tensor(ids)), from_text)


def test_same_input_twice_is_bit_identical(extract, trained):
    first = extract.get_elmo_embeddings(trained.model, SAME_WORD_TWICE, trained.word2idx)
    second = extract.get_elmo_embeddings(trained.model, SAME_WORD_TWICE, trained.word2idx)
    pairs = zip(first, second, strict=True)
    assert all(torch.equal(a, b) for a, b in pairs), "the embeddings changed"


def test_runs_in_eval_mode_without_gradients(extract, trained):
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


@pytest.mark.parametrize("mode", [True, False])
def test_leaves_the_model_in_the_mode_it_found(extract, trained, mode):
    trained.model.train(mode)
    extract.get_elmo_embeddings(trained.model, "turn right", trained.word2idx)
    assert trained.model.training is mode, (
        f"the model was in {'training' if mode else 'eval'} mode before extraction and "
        f"in {'training' if trained.model.training else 'eval'} mode after it"
    )


def test_layer_0_of_one_word_is_identical_across_contexts(extract, trained):
    a, b = extract.get_elmo_embeddings(trained.model, SAME_WORD_TWICE, trained.word2idx)
    bank_a, bank_b = a[:, 6], b[:, 4]
    cosine = torch.nn.functional.cosine_similarity(bank_a, bank_b, dim=-1)
    assert torch.equal(bank_a[0], bank_b[0]) and cosine[0] > 1 - 1e-6, (
        f"layer 0 of 'bank' should be the same vector in both sentences (cosine 1), "
        f"cosine is {cosine[0]:.6f}"
    )
    assert (cosine[1:] < 1 - 1e-4).all(), f"layers 1-2 should depend on context: {cosine}"


def test_unknown_words_are_embedded_as_unk(extract, corpus, trained):
    emb = extract.get_elmo_embeddings(trained.model, "the qzxj bank", trained.word2idx)
    unk = extract.get_elmo_embeddings(trained.model, [trained.word2idx["the"], corpus.UNK,
                                                      trained.word2idx["bank"]])
    assert torch.equal(emb, unk)


@pytest.mark.parametrize("sentences, error, match", [
    ("", ValueError, "empty"),
    ([], ValueError, "no sentences"),
    ([[4, 5], []], ValueError, "sentence 1 is empty"),
    ([[4.0, 5.0]], TypeError, "ints"),
    ([[True, False]], TypeError, "ints"),
    (torch.tensor([1.0, 2.0]), TypeError, "integer"),
    (torch.tensor([[4, 5]]), ValueError, "1-D"),
    ([4, 10_000], ValueError, "must lie in"),
])
def test_bad_input_is_a_clear_error(extract, trained, sentences, error, match):
    with pytest.raises(error, match=match):
        extract.get_elmo_embeddings(trained.model, sentences, trained.word2idx)


def test_text_without_vocabulary_is_a_clear_error(extract, trained):
    with pytest.raises(ValueError, match="word2idx"):
        extract.get_elmo_embeddings(trained.model, "turn right")
