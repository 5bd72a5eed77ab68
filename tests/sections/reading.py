"""What the tests of a biLM (sections 3 and 8) ask first of the model they judge: that its
layers read the sentence. A property of what a biLM computes (no peeking, padding changes
nothing, no state kept, ...) holds as well of a model whose layers read each word alone, or
read nothing, which is no biLM; so a test of one counts only for a model that reads.

Its two halves: `sentence_reading(model, vocab_size)` in a test's act (it runs the model),
`assert_reads_the_sentence(reading)` in its judge (it checks what the act returned)."""

import torch

LENGTH, CHANGED = 5, 2  # the sentence the check reads, and the word it changes
TOL = dict(atol=1e-5, rtol=1e-4)


def sentence_reading(model, vocab_size):
    """The states (layers 1 and up) of a 5-word sentence (ids in [4, vocab_size)) `before`
    and `after` word CHANGED is changed to another word: what `assert_reads_the_sentence`
    judges."""
    ids = torch.randint(4, vocab_size, (LENGTH, 1), generator=torch.Generator().manual_seed(5))
    changed = ids.clone()
    changed[CHANGED] = 4 + (ids[CHANGED] - 3) % (vocab_size - 4)  # another word
    with torch.no_grad():
        return {"before": model(ids).layers[1:], "after": model(changed).layers[1:]}


def assert_reads_the_sentence(reading):
    """Changing one word of a 5-word sentence changed the states (layers 1 and up) of the
    other words too (`sentence_reading`): each direction's layers read the sentence, not
    each word alone, nor nothing."""
    before, after = reading["before"], reading["after"]
    others = [t for t in range(LENGTH) if t != CHANGED]
    if not torch.allclose(before[:, others], after[:, others], **TOL):
        return
    raise AssertionError(
        f"changing word {CHANGED} of a {LENGTH}-word sentence changed " + (
            "none of the states of layers 1 and up: they read none of the words, or every "
            "word has one token vector" if torch.allclose(before, after, **TOL) else
            f"the states of layers 1 and up at position {CHANGED} alone: each word's states "
            "come from that word only") +
        ". What this test checks would hold of such a model, which is no biLM; it counts for "
        "one whose LSTMs read the sentence along time, the forward states at t words 0..t, "
        "the backward ones words t..n-1")
