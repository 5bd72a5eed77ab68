# %% [markdown]
# # Section 2: the toy corpus and its vocabulary
#
# The paper pre-trains on the 1B Word Benchmark (Chelba et al. 2014), about 800 million
# tokens (Sec. 3.4). Here
# the corpus is built so that **context decides the sense** of a few words, each with two
# senses. For every sense, openings and endings are written by hand, and any opening, the
# word and any ending of the same sense make a sentence:
#
# | word | sense | an opening | | an ending |
# |---|---|---|---|---|
# | bank | finance | *she put her money in the* | bank | *to keep it safe* |
# | bank | river | *they sat on the* | bank | *of the river* |
# | play | verb | *the children like to* | play | *football in the park* |
# | play | theatre | *we saw a new* | play | *at the theatre* |
# | right | direction | *turn* | right | *at the corner* |
# | right | correct | *your answer is* | right | *about the test* |
# | watch | verb | *we sit down to* | watch | *the football games* |
# | watch | timepiece | *he wore a gold* | watch | *on his wrist* |
#
# Opening k with ending k is held out (`HELDOUT`): the biLM never trains on them, though it
# sees each of their phrases in other sentences. The others are the training corpus
# (`CORPUS`); the cell below counts them.
#
# Why so many sentences, when the seed notebook had about 30, of 50-80 words in all? On
# so few sentences a biLM learns *which sentence* it is reading, and its states tell
# sentences apart, not senses. Here every opening goes with every ending of its sense, so
# the only way to predict what follows "bank" is to know which "bank" it is.
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
IMPL = None  # None: your exercises/, or the folder that $ELMO_IMPL or the file .elmo-impl names

# %%
from collections import Counter

from analyses.notebook import glue, load_sections, run_checks, say
from course.registry import find_section

SECTION = find_section("corpus")
sections = load_sections(IMPL, SECTION.name)
corpus = sections.corpus

# %% [markdown]
# ## The corpus
#
# The sentences, their labels and their phrases are given (`course/corpus.py`, which
# section 2 re-exports: `CORPUS`, `HELDOUT`, `SENSE_LABELS`, `HELDOUT_LABELS`,
# `SENSE_PHRASES`): sentences per target word and sense.

# %%
print(len(corpus.CORPUS), "training sentences,", len(corpus.HELDOUT), "held out,",
      len({w for sentence in corpus.CORPUS for w in sentence.split()}), "distinct words")
training = Counter((w, s) for _, w, s in corpus.SENSE_LABELS)
held_out = Counter((w, s) for _, w, s in corpus.HELDOUT_LABELS)
print(f"\n{'word':<7}{'sense':<11}{'training':>9}{'held out':>10}")
for word, sense in training:
    print(f"{word:<7}{sense:<11}{training[word, sense]:>9}{held_out[word, sense]:>10}")
glue("senses", len(training))
glue("training-per-sense", len(corpus.CORPUS) // len(training))
glue("held-out-per-sense", len(corpus.HELDOUT) // len(training))
glue("training-sentences", len(corpus.CORPUS))
glue("held-out-sentences", len(corpus.HELDOUT))
openings, endings = corpus.SENSE_PHRASES["bank", "river"]
print()
say("bank, river, its openings: " + " | ".join(openings))
say("bank, river, its endings: " + " | ".join(endings))

# %% [markdown]
# Reading: {glue:text}`training-per-sense` training and {glue:text}`held-out-per-sense`
# held-out sentences for each of the {glue:text}`senses` senses, so no sense outweighs
# another in section 6's comparisons (the numbers of same-sense and of different-sense
# pairs still differ: section 6 compares their means).
#
# ## Tokens and the vocabulary

# %% tags=["first-call"]
# Your code: exercises/s2_corpus.py, tokenize first. Until it is written, this
# cell stops with its NotImplementedError. After each edit, save the file, then re-run
# this cell and the cells below it (Run > Run Selected Cell and All Below): no restart.
corpus.tokenize("Turn RIGHT, at the river!")

# %% [markdown]
# **Predict**: how many entries will the vocabulary have, given the number of distinct
# words printed above?
#
# <details><summary>Answer</summary>
#
# Four more than the distinct words: the four special tokens `<pad>`, `<unk>`, `<s>`,
# `</s>` come first, at indices 0-3.
# </details>

# %%
word2idx, idx2word = corpus.build_vocab(corpus.CORPUS)
print(len(word2idx), "entries; the first eight:")
print(", ".join(f"{idx2word[i]} {i}" for i in range(8)))
held_out_words = {w for sentence in corpus.HELDOUT for w in corpus.tokenize(sentence)}
print("words of the held-out sentences that training never saw:",
      sorted(held_out_words - set(word2idx)) or "none")

# %% [markdown]
# Reading: after the four special tokens come the words in sorted order (`a` first). The
# held-out sentences use only words that training saw: what is new in them is the pairing
# of an opening with an ending, not the words.
#
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
                                   for s in ["turn right at the corner", "she was right again"]])
print(batch)
print("lengths:", lengths)

# %% [markdown]
# Reading: each column is one sentence between `<s>` (2) and `</s>` (3); the shorter one
# ends with `<pad>` (0), after its `</s>`, where no LSTM reads it before a real word.
#
# ## Playground
#
# Type a sentence: its tokens, its ids with boundaries, and the words the vocabulary does
# not know.

# %%
sentence = "She put her cash in the bank, then sat by the river."
ids = corpus.encode(sentence, word2idx, add_boundaries=True)
print(corpus.tokenize(sentence))
print(ids)
print("unknown:", [w for w in corpus.tokenize(sentence) if w not in word2idx])

# %% [markdown]
# ## Summary
#
# * The corpus is built so that context decides the sense: sense-specific openings and
#   endings, any opening with any ending, {glue:text}`training-sentences` training and
#   {glue:text}`held-out-sentences` held-out sentences.
# * The vocabulary numbers words in sorted order after four special tokens, so it never
#   depends on the order of the sentences.
#
# ## Try
#
# 1. Shuffle `corpus.CORPUS` and build the vocabulary again: is it the same?
# 2. Count how often each word occurs in `CORPUS` (`Counter`): which words would a biLM
#    see most, and which only in one sense's sentences?
#
# ## Checks
#
# Section 2's tests, exactly as `make test SECTION=2` runs them on `IMPL`.

# %%
run_checks(IMPL, SECTION.name)
