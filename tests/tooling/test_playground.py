"""The notebooks' playgrounds (`analyses.playground`) take what a person types: case and
punctuation as the tokenizer reads them, unknown words shown as <unk>, ties said to be ties,
a clear message for what cannot be read as asked. Every section's notebook has one."""

import pytest

from analyses import playground
from analyses.notebook import notebook_names, section_of
from course.pretrained import pretrained
from course.registry import NOTEBOOKS_DIR
from tools import reference

REFERENCE = reference()


@pytest.fixture(scope="module")
def trained():
    return pretrained(REFERENCE.package)


@pytest.mark.parametrize("typed, expected", [
    ("By the BANK, of the water!", "by the bank of the water"),
    ("  the   bank  ", "the bank"),
    ("the zebra sat by the bank", "the <unk> sat by the bank"),
    ("Don't swim", "<unk> swim"),
])
def test_a_sentence_is_read_as_the_tokenizer_and_the_vocabulary_read_it(trained, typed,
                                                                         expected):
    assert " ".join(playground.as_read(REFERENCE, typed, trained.word2idx)) == expected
    shown = playground.reading(REFERENCE, typed, trained.word2idx)
    assert shown.startswith(f"the biLM reads: {expected}")
    assert ("unknown to its vocabulary" in shown) == ("<unk>" in expected)


def test_nothing_to_read_is_said_plainly(trained):
    assert "reads no word" in playground.reading(REFERENCE, "!!! ...", trained.word2idx)
    with pytest.raises(playground.PlaygroundError, match="no word"):
        playground.predictions(REFERENCE, trained.model, "", trained.word2idx,
                               trained.idx2word)


@pytest.mark.parametrize("sentence, word, at", [
    ("by the bank, of the water", "bank", 2),
    ("By the BANK, of the water", "Bank", 2),
    ("the bank by the bank", "bank,", 1),
])
def test_a_word_is_found_as_the_tokenizer_reads_it(sentence, word, at):
    assert playground.position(REFERENCE, sentence, word) == at


@pytest.mark.parametrize("sentence, word, message", [
    ("the river", "bank", "not in the sentence"),
    ("", "bank", "not in the sentence"),
    ("the river bank", "river bank", "2 words"),
    ("the river", "!", "0 words"),
])
def test_what_cannot_be_read_as_asked_says_what_the_biLM_reads(sentence, word, message):
    with pytest.raises(playground.PlaygroundError, match=message):
        playground.position(REFERENCE, sentence, word)


def test_predictions_show_an_unknown_word_as_unk(trained):
    table = playground.predictions(REFERENCE, trained.model, "The zebra sat by the Bank!",
                                   trained.word2idx, trained.idx2word)
    assert "<unk> (zebra)" in table and "'zebra'" in table.splitlines()[1]
    assert " bank " in table, "lower case, no punctuation"


def test_nearest_occurrences_say_layer_0_is_a_tie(trained):
    table = playground.nearest(REFERENCE, trained.model, trained.word2idx,
                               "The ducks sat by the BANK, of the water.", "Bank")
    (layer0,) = [line for line in table.splitlines() if line.startswith("layer 0")]
    assert "a tie: 24 of 24 occurrences are equally near (12 finance, 12 river)" in layer0
    assert sum(line.startswith("layer 1") for line in table.splitlines()) == 3


def test_a_corpus_sentence_typed_is_not_its_own_neighbour(trained):
    table = playground.nearest(REFERENCE, trained.model, trained.word2idx,
                               "She put her MONEY in the bank to keep it safe!", "bank")
    assert "1.000  finance    she put her money in the bank to keep it safe" not in table


def test_an_unknown_word_has_no_occurrences_to_compare(trained):
    with pytest.raises(playground.PlaygroundError, match="<unk>"):
        playground.nearest(REFERENCE, trained.model, trained.word2idx, "the zebra ran",
                           "Zebra")


def test_nearest_words_say_when_the_word_biLM_reads_unk(trained):
    line = playground.nearest_words(REFERENCE, trained.model, trained.word2idx, "Banks")
    assert line.startswith("banks ") and "read as <unk>" in line
    known = playground.nearest_words(REFERENCE, trained.model, trained.word2idx, "BANK")
    assert known.split()[1] == "bank" and "<unk>" not in known
    with pytest.raises(playground.PlaygroundError, match="2 words"):
        playground.nearest_words(REFERENCE, trained.model, trained.word2idx, "river bank")


def test_every_section_notebook_has_a_playground():
    for name in notebook_names():
        if section_of(name) is not None:
            source = (NOTEBOOKS_DIR / name).with_suffix(".py").read_text()
            assert "# ## Playground" in source, f"{name} has no playground"
