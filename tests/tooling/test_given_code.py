"""The given code of the sections (`course.given`, and what the section modules keep outside
the learner's blocks): the clear errors for the inputs that would otherwise give a silently
wrong answer or a baffling error deep inside torch, the progress bar and the printed log of
training. It is the course's, so it is tested here, through the reference, and carries no
learner points."""

from __future__ import annotations

import sys

import pytest
import torch

from analyses import analysis
from course.pretrained import pretrained
from tools import reference

REFERENCE = reference()
setup, corpus, bilm = REFERENCE.setup, REFERENCE.corpus, REFERENCE.bilm
pretrain, extract = REFERENCE.pretrain, REFERENCE.extract
context, layer_weights = REFERENCE.context, REFERENCE.layer_weights
char_encoder = REFERENCE.char_encoder


@pytest.fixture(scope="module")
def trained():
    return pretrained(REFERENCE.package)


# --- section 1 --------------------------------------------------------------------------

def test_a_bad_device_is_a_clear_error_naming_where_it_came_from(monkeypatch):
    monkeypatch.delenv(setup.DEVICE_ENV_VAR, raising=False)
    with pytest.raises(ValueError, match="gpu") as err:
        setup.get_device("gpu")
    assert "preferred" in str(err.value), f"the message should name the argument: {err.value}"
    monkeypatch.setenv(setup.DEVICE_ENV_VAR, "tpu")
    with pytest.raises(ValueError, match="tpu") as err:
        setup.get_device()
    assert setup.DEVICE_ENV_VAR in str(err.value), f"the message should name it: {err.value}"
    assert setup.get_device("cpu") == torch.device("cpu"), (
        "a bad $ELMO_DEVICE is no error when the argument decides")


def test_cuda_requested_without_cuda_is_a_clear_error(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    with pytest.raises(RuntimeError, match="CUDA"):
        setup.get_device("cuda")
    assert setup.get_device("cpu") == torch.device("cpu"), "the CPU needs no CUDA"


# --- section 2 --------------------------------------------------------------------------

def test_a_single_string_is_no_corpus():
    """Iterated, a str would be a corpus of one-letter sentences."""
    with pytest.raises(TypeError, match="single str"):
        corpus.build_vocab("turn right at the river")


def test_a_corpus_may_be_any_iterable():
    sentences = ["turn right", "the river bank"]
    assert corpus.build_vocab(s for s in sentences) == corpus.build_vocab(sentences)


def test_decode_takes_a_tensor_of_ids():
    word2idx, idx2word = corpus.build_vocab(corpus.CORPUS)
    ids = corpus.encode("turn right at the river", word2idx)
    assert corpus.decode(torch.tensor(ids), idx2word) == corpus.decode(ids, idx2word)


def test_pad_batch_rejects_nothing_to_pad():
    with pytest.raises(ValueError, match="at least one"):
        corpus.pad_batch([])
    with pytest.raises(ValueError, match=r"positions \[1\]"):
        corpus.pad_batch([[4], []])


# --- section 3 --------------------------------------------------------------------------

VOCAB = 30


@pytest.fixture(scope="module")
def model():
    setup.set_seed(0)
    return bilm.BiLM(VOCAB).eval()


@pytest.mark.parametrize("ids, error, match", [
    pytest.param(torch.zeros(3, dtype=torch.long), ValueError,
                 r"\(seq_len, batch\).*unsqueeze\(1\)", id="1-D"),
    pytest.param(torch.zeros(3, 1, 1, dtype=torch.long), ValueError, r"\(seq_len, batch\)",
                 id="3-D"),
    pytest.param(torch.zeros(0, 1, dtype=torch.long), ValueError, r"empty batch of shape \(0, 1\)",
                 id="empty"),
    pytest.param(torch.tensor([[4], [VOCAB]]), ValueError, rf"\[0, {VOCAB}\)", id="too large"),
    pytest.param(torch.tensor([[-1], [4]]), ValueError, rf"\[0, {VOCAB}\)", id="negative"),
])
def test_bad_ids_are_clear_errors(model, ids, error, match):
    with pytest.raises(error, match=match):
        model(ids)


@pytest.mark.parametrize("lengths, match", [
    pytest.param(torch.tensor([3]), r"shape \(2,\)", id="one length for two"),
    pytest.param(torch.tensor([3, 4]), r"\[1, 3\]", id="too long"),
    pytest.param(torch.tensor([0, 2]), r"\[1, 3\]", id="zero"),
])
def test_lengths_that_do_not_match_the_batch_are_clear_errors(model, lengths, match):
    with pytest.raises(ValueError, match=match):
        model(torch.full((3, 2), 5), lengths)


def test_lengths_may_be_a_list(model):
    ids = torch.full((3, 2), 5)
    assert torch.equal(model(ids, [3, 2]).layers, model(ids, torch.tensor([3, 2])).layers)


@pytest.mark.parametrize("sizes, name", [
    pytest.param(dict(vocab_size=0), "vocab_size", id="vocab_size=0"),
    pytest.param(dict(vocab_size=10, embedding_dim=0), "embedding_dim", id="embedding_dim=0"),
    pytest.param(dict(vocab_size=10, hidden_dim=-4), "hidden_dim", id="hidden_dim=-4"),
    pytest.param(dict(vocab_size=10, num_layers=0), "num_layers", id="num_layers=0"),
])
def test_bad_sizes_are_clear_errors(sizes, name):
    with pytest.raises(ValueError, match=name):
        bilm.BiLM(**sizes)


# --- section 4 --------------------------------------------------------------------------

def tiny_training(capsys, monkeypatch, **options):
    """Train a tiny biLM for 20 epochs, as in a terminal: (history, stdout, stderr)."""
    word2idx, _ = corpus.build_vocab(corpus.CORPUS)
    model = bilm.BiLM(len(word2idx), embedding_dim=4, hidden_dim=4)
    monkeypatch.setattr(sys.stderr, "isatty", lambda: True, raising=False)
    history = pretrain.train_bilm(model, corpus.CORPUS[:2], word2idx,
                                  pretrain.Recipe(2, 0.01, 20), device="cpu", **options)
    printed = capsys.readouterr()
    return history, printed.out, printed.err


def test_the_loss_is_printed_every_10_epochs(capsys, monkeypatch):
    history, out, err = tiny_training(capsys, monkeypatch, progress=False)
    lines = [line for line in out.splitlines() if "loss" in line]
    assert lines == [f"epoch  10  loss {history[9]:.4f}", f"epoch  20  loss {history[19]:.4f}"], (
        f"by default the loss is printed at epochs 10 and 20 of 20, at 4 decimals: {lines}")
    assert not err, f"progress=False should show no progress bar: {err!r}"


def test_a_progress_bar_by_default_and_nothing_printed_without_a_log(capsys, monkeypatch):
    _, out, err = tiny_training(capsys, monkeypatch, log_every=0)
    assert "pre-training" in err and "loss=" in err, f"a progress bar on stderr: {err!r}"
    assert not out, f"log_every=0 prints nothing: {out!r}"


# --- section 5 --------------------------------------------------------------------------

@pytest.mark.parametrize("sentences, error, match", [
    pytest.param("", ValueError, "empty", id="empty text"),
    pytest.param([], ValueError, "no sentences", id="no sentences"),
    pytest.param([[4, 5], []], ValueError, "sentence 1 is empty", id="an empty sentence"),
    pytest.param([[4.0, 5.0]], TypeError, "ints", id="float ids"),
    pytest.param([[True, False]], TypeError, "ints", id="bool ids"),
    pytest.param(torch.tensor([1.0, 2.0]), TypeError, "integer", id="float tensor"),
    pytest.param(torch.tensor([[4, 5]]), ValueError, "1-D", id="2-D tensor"),
    pytest.param([4, 10_000], ValueError, "must lie in", id="id out of range"),
])
def test_bad_sentences_are_clear_errors(trained, sentences, error, match):
    with pytest.raises(error, match=match):
        extract.get_elmo_embeddings(trained.model, sentences, trained.word2idx)


def test_text_without_a_vocabulary_is_a_clear_error(trained):
    with pytest.raises(ValueError, match="word2idx"):
        extract.get_elmo_embeddings(trained.model, "turn right")


def test_one_sentence_may_be_text_ids_or_a_tensor_and_unknown_words_are_unk(trained):
    text = "she put her money in the bank"
    ids = corpus.encode(text, trained.word2idx)
    from_text = extract.get_elmo_embeddings(trained.model, text, trained.word2idx)
    assert torch.equal(extract.get_elmo_embeddings(trained.model, ids), from_text)
    assert torch.equal(extract.get_elmo_embeddings(trained.model, torch.tensor(ids)), from_text)
    one = extract.get_elmo_embeddings(trained.model, [ids[0]])
    assert isinstance(one, torch.Tensor) and one.shape == (3, 1, 512), "a list of one id"
    unknown = extract.get_elmo_embeddings(trained.model, "the qzxj bank", trained.word2idx)
    unk = extract.get_elmo_embeddings(
        trained.model, [trained.word2idx["the"], corpus.UNK, trained.word2idx["bank"]])
    assert torch.equal(unknown, unk), "an unknown word is embedded as <unk>"


# --- section 6 --------------------------------------------------------------------------

@pytest.mark.parametrize("a, b", [
    pytest.param(torch.ones(3), torch.ones(4), id="(3,) and (4,)"),
    pytest.param(torch.ones(2, 3), torch.ones(3), id="(2, 3) and (3,)"),
    pytest.param(torch.ones(2, 3), torch.ones(3, 3), id="(2, 3) and (3, 3)"),
])
def test_cosines_of_mismatched_shapes_are_a_clear_error(a, b):
    with pytest.raises(ValueError, match=r"shape") as err:
        context.cosine_sim(a, b)
    assert str(tuple(a.shape)) in str(err.value) and str(tuple(b.shape)) in str(err.value), (
        f"the message should name both shapes: {err.value}")


def test_cosines_of_non_vectors_are_a_clear_error():
    with pytest.raises(ValueError, match="D >= 1"):
        context.cosine_sim(torch.tensor(1.0), torch.tensor(2.0))
    with pytest.raises(ValueError, match=r"D >= 1.*\(0,\)"):
        context.cosine_sim(torch.ones(0), torch.ones(0))


@pytest.mark.parametrize("labels, match", [
    pytest.param([], "none", id="no labels"),
    pytest.param([("turn right at the river", "right", "direction"),
                  ("she put her money in the bank", "bank", "finance")],
                 "no target word in two sentences", id="no shared target"),
])
def test_labels_with_nothing_to_compare_are_a_clear_error(trained, labels, match):
    with pytest.raises(ValueError, match=match):
        context.compare_contexts(trained.model, trained.word2idx, labels)


# --- section 7 --------------------------------------------------------------------------

def test_initial_scalars_of_another_length_are_a_clear_error():
    with pytest.raises(ValueError, match="initial_scalar_parameters"):
        layer_weights.ScalarMix(3, initial_scalar_parameters=[0.0, 1.0])


@pytest.mark.parametrize("given", [2, 4], ids=lambda n: f"{n} layers for 3")
def test_the_wrong_number_of_layers_is_a_clear_error(given):
    with pytest.raises(ValueError, match="3") as err:
        layer_weights.ScalarMix(3)([torch.zeros(2, 5)] * given)
    assert str(given) in str(err.value), f"name what was given: {err.value}"


def test_layers_of_different_shapes_are_a_clear_error():
    with pytest.raises(ValueError, match="shape"):
        layer_weights.ScalarMix(2)([torch.zeros(2, 5), torch.zeros(3, 5)])


def test_a_mask_of_the_wrong_shape_or_masking_everything_is_a_clear_error():
    mix = layer_weights.ScalarMix(2, do_layer_norm=True)
    with pytest.raises(ValueError, match=r"\(3, 4\).*\(3, 5\)"):
        mix(torch.randn(2, 3, 4, 6), torch.ones(3, 5, dtype=torch.bool))
    with pytest.raises(ValueError, match="at least one unmasked position"):
        mix(torch.randn(2, 3, 4), torch.zeros(3, dtype=torch.bool))
    plain = layer_weights.ScalarMix(2)
    assert plain(torch.ones(2, 3, 4), torch.ones(5, dtype=torch.bool)).shape == (3, 4), (
        "without layer normalisation the mask is not used, so not checked either")


# --- section 8 --------------------------------------------------------------------------

def test_too_few_characters_for_a_word_are_a_clear_error():
    with pytest.raises(ValueError, match="max_chars") as err:
        char_encoder.char_ids("bank", max_chars=2)
    assert "2" in str(err.value), f"name what was given: {err.value}"


@pytest.mark.parametrize("sizes, name", [
    (dict(output_dim=0), "output_dim"), (dict(char_dim=0), "char_dim"),
    (dict(filters=()), "filter"), (dict(filters=((0, 4),)), "filter_width"),
    (dict(highway_layers=-1), "highway_layers"),
], ids=["output_dim=0", "char_dim=0", "no filters", "width 0", "highway_layers=-1"])
def test_bad_encoder_sizes_are_clear_errors(sizes, name):
    with pytest.raises(ValueError, match=name):
        char_encoder.CharEncoder(**{"output_dim": 4, **sizes})


@pytest.fixture(scope="module")
def char_model():
    _, idx2word = corpus.build_vocab(corpus.CORPUS)
    setup.set_seed(0)
    return char_encoder.CharBiLM(idx2word, hidden_dim=8, char_dim=4,
                                 filters=((1, 2), (3, 2)), highway_layers=1).eval()


@pytest.mark.parametrize("chars, error, match", [
    (torch.zeros(2, 1, 2, dtype=torch.long), ValueError, "at least 3"),
    (torch.full((2, 1, 16), 300), ValueError, "261"),
], ids=["too few characters", "id out of range"])
def test_bad_characters_are_clear_errors(char_model, chars, error, match):
    with pytest.raises(error, match=match):
        char_model(chars)


def test_word_ids_and_their_characters_give_one_output(char_model):
    """Spelling turns word ids into the characters of their words; the lengths are checked
    against (T, B) for characters as for ids."""
    word2idx, _ = corpus.build_vocab(corpus.CORPUS)
    sentences = ["we sat on the bank", "turn right"]
    chars, lengths = char_encoder.sentence_chars(sentences)
    ids, id_lengths = corpus.pad_batch([corpus.encode(s, word2idx, add_boundaries=True)
                                        for s in sentences])
    assert torch.equal(lengths, id_lengths) and chars.shape == (*ids.shape, char_encoder.MAX_CHARS)
    by_chars, by_ids = char_model(chars, lengths), char_model(ids, lengths)
    assert torch.allclose(by_chars.layers, by_ids.layers, atol=1e-6)
    with pytest.raises(ValueError, match="length must lie in"):
        char_model(chars, torch.tensor([9, 2]))


def test_nearest_relatives_rank_the_vocabulary_and_unk_is_one_ranking_for_all(trained):
    found = analysis.nearest_relatives(REFERENCE, trained.model, trained.word2idx,
                                       [("banks", "bank"), ("bnak", "bank"), ("bank", "bank")])
    assert [n.candidates for n in found] == [len(trained.word2idx) - 4] * 3
    assert found[0].rank == found[1].rank and found[0].nearest == found[1].nearest, (
        "for a word biLM both unseen words are <unk>: one ranking")
    assert found[2].rank == 1 and found[2].nearest[0][0] == "bank", "a word is its own nearest"
