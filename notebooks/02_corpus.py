# %% [markdown]
# # Section 2: the toy corpus and its vocabulary
#
# The paper pre-trains on the 1B Word Benchmark, about 800 million tokens (Sec. 3.4). Here
# the corpus is 32 hand-written sentences built around four words that have two senses
# each, four sentences per sense:
#
# | word | one sense | the other |
# |---|---|---|
# | bank | money: *the bank gave him a loan* | river: *they sat on the bank of the river* |
# | play | verb: *the children play in the park* | theatre: *we saw a play at the theatre* |
# | right | direction: *turn right at the river* | correct: *your answer is right* |
# | watch | verb: *they watch football at night* | timepiece: *he wore a gold watch* |
#
# Section 6 uses these labels to ask whether the biLM's layers tell the senses apart.
#
# You write the text handling that turns sentences into what an LSTM reads:
#
# * `tokenize(text)`: lower-case, split into words, drop punctuation;
# * `build_vocab(corpus)`: four special tokens at fixed indices (`<pad>` 0, `<unk>` 1,
#   `<s>` 2, `</s>` 3), then the corpus's words **in sorted order**, so one corpus always
#   gives one numbering, whatever the order of its sentences;
# * `encode` / `decode`: words to indices and back; an unknown word becomes `<unk>`, and
#   `add_boundaries=True` wraps a sentence in `<s> ... </s>`, as the biLM reads it;
# * `pad_batch(sequences)`: sentences of different lengths as one time-major tensor
#   `(max_len, batch)`, padded with `<pad>` after each sentence's end, and their lengths.

# %% tags=["parameters"]
IMPL = "exercises"  # the implementation these cells run: your exercises/

# %%
from collections import Counter

from course.notebook import load_sections, run_checks
from course.registry import find_section

SECTION = find_section("corpus")
sections = load_sections(IMPL, SECTION.name)
corpus = sections.corpus

# %% [markdown]
# ## The corpus
#
# The sentences and their labels are given (`CORPUS`, `SENSE_LABELS`): sentences per target
# word and sense.

# %%
print(len(corpus.CORPUS), "sentences")
Counter((word, sense) for _, word, sense in corpus.SENSE_LABELS)

# %% [markdown]
# ## Tokens and the vocabulary

# %% tags=["first-call"]
corpus.tokenize("Turn RIGHT, at the river!")

# %%
word2idx, idx2word = corpus.build_vocab(corpus.CORPUS)
print(len(word2idx), "entries; the first eight:")
print({idx2word[i]: i for i in range(8)})

# %% [markdown]
# ## Encoding, decoding, padding
#
# An unknown word ("castle") becomes `<unk>`; with boundaries, the sentence starts with `<s>`
# and ends with `</s>`.

# %%
ids = corpus.encode("the castle by the river", word2idx, add_boundaries=True)
print(ids)
print(corpus.decode(ids, idx2word))

# %% [markdown]
# Two sentences in one batch: one column each, the shorter one padded with 0 (`<pad>`).

# %%
batch, lengths = corpus.pad_batch([corpus.encode(s, word2idx, add_boundaries=True)
                                   for s in ["turn right at the river", "your answer is right"]])
print(batch)
print("lengths:", lengths)

# %% [markdown]
# ## Checks
#
# Section 2's tests, exactly as `make test SECTION=2` runs them on `IMPL`.

# %%
run_checks(IMPL, SECTION.name)
