# %% [markdown]
# # ELMo on real English: WordNet's definitions and its sense-labelled examples
#
# Every other notebook reads ELMo's layers on a corpus written so that context decides the
# sense. Does any of it hold on English that nobody here wrote? WordNet 3.0 (Princeton) has
# both halves of the paper's Sec. 5.3 offline, in `data/wordnet/`:
#
# * the **definitions** of its 117,659 synsets, about 1.2 million words of real English, to
#   pre-train a biLM on (the paper used the 1B Word Benchmark, 800 million);
# * its **example sentences**, held apart and never trained on, each showing one sense of
#   one word: *"they pulled the canoe up on the **bank**"* is `bank.n.01`, sloping land.
#
# The paper's method for word sense (Sec. 5.3): take the biLM's representation of the word
# in every training example, average it per sense, and label a test example with the
# nearest sense's average; a lemma that training never saw gets WordNet's first sense. Part
# of speech: a linear probe on one layer. The paper found the second layer better for sense
# (Table 5: 69.0 against 67.4 F1) and the first better for part of speech (Table 6: 97.3
# against 96.8).
#
# The course ran all of it on its reference, 5 seeds, with an untrained biLM of the same
# shape and seed as the control; `make replicate-real` runs it on **your** sections
# (1, 2, 3, 5, 7, and 8 if written), in about ten minutes on two cores. This notebook shows
# the data, the reference's results, and lets you type a sentence and see which WordNet
# examples your biLM puts nearest to one of its words, layer by layer.

# %% tags=["parameters"]
IMPL = None  # None: your exercises/, or the folder that $ELMO_IMPL or the file .elmo-impl names

# %%
from collections import Counter

from IPython.display import Markdown, display
from matplotlib_inline.backend_inline import set_matplotlib_formats

from course import real_english, real_results
from course.notebook import say
from course.registry import shown

set_matplotlib_formats("png")  # the figures are drawn without pyplot: show them as images

examples = real_english.read_examples()
definitions = real_english.definitions()
pool = real_english.sense_pool(examples)
say(f"{len(definitions):,} definitions; {len(examples):,} examples whose word stands "
      f"in them; {len(pool):,} of them are of the {len({(e.lemma, e.pos) for e in pool}):,} "
      "lemmas (with their part of speech) whose examples show two senses or more")
print(Counter(e.pos for e in examples).most_common())

# %% [markdown]
# ## What an example is
#
# Each example names its word's synset, the synset's **supersense** (WordNet's
# lexicographer file: `noun.artifact`, `verb.motion`, ... 45 in all, a coarse sense), its
# rank among the lemma's senses (1: WordNet's first, the most frequent in its
# sense-tagged corpus), and where the word stands in the sentence.

# %%
for example in [e for e in examples if e.lemma == "bank" and e.pos == "noun"][:6]:
    say(f"{example.synset:22} {example.supersense:18} sense {example.sense}: "
        f"{example.sentence}")
    say(f"{'':22} {definitions[example.synset]}")

# %% [markdown]
# ## The reference's results
#
# Mean ± sd over the reference's 5 seeds (`docs/results-real.json`). A
# contextual layer is read against everything that needs no context: chance, the most
# frequent sense of the training split, layer 0 (one vector per word form: equally near
# senses share the credit), and an untrained biLM of the same shape and seed.

# %%
reference = real_results.load()
for name in ("real_sense", "real_pos", "real_layers"):
    display(Markdown(real_results.TABLES[name](reference)))

# %%
# Figure (fig-real-layers): The reference's readings per layer, mean ± sd over its seeds,
# pre-trained and untrained, with the baselines; the last panel beside the paper's.
display(real_results.plot_layers(reference))

# %% [markdown]
# **Predict** before reading the tables: on a few hundred thousand words of definitions,
# does pre-training teach the biLM more about part of speech or about word sense?
#
# <details><summary>What the reference's results show</summary>
#
# Part of speech, on lemmas the probe never saw: layers 1 and 2 of the pre-trained biLM
# are well above the untrained biLM's, which are well above the majority class. Word
# sense: the contextual layers are below the most frequent sense of the training split,
# and no better than the untrained biLM's (an LSTM that was never trained still sets
# sentences with words in common near each other): this much text does not teach the biLM
# what words mean. Syntax comes first.
#
# </details>
#
# ## Your biLM reads a sentence
#
# Your sections pre-train the biLM: the one `make replicate-real` trained (seed 0), from
# the cache, or else a small one trained now on a few thousand words (seconds; it reads
# most words as `<unk>`). Change the sentence and the word, then run the cell again.

# %%
missing = real_english.still_to_write(IMPL)
if missing:
    print("Reading a sentence needs sections 1, 2, 3, 5 and 7 written; still to write: "
          + "; ".join(f"section {n}: {', '.join(names)}" for n, names in missing.items()))
    read = bank = None
else:
    sections = real_english.sections_of(IMPL)
    read = real_english.reader(sections)
    bank = real_english.example_bank(sections, read)
    say(f"{read.source}: vocabulary {len(read.corpus.word2idx):,}; {len(bank.examples):,} "
        "examples to search")

# %%
SENTENCE = "we sat on the bank and watched the river"
WORD = "bank"
if read is not None:
    say(real_english.nearest_to(sections, read, bank, SENTENCE, WORD, k=4))

# %% [markdown]
# Reading: at layer 0 every example of the same word form is equally near (one vector per
# word), so the order there is the bank's; from layer 1 on the order follows the sentence.
# Try the other sense (*"she paid the cheque into the bank"*), a verb (*"they play
# chess"*), or a word the biLM has never seen.
#
# ## Your numbers beside the reference's
#
# After `make replicate-real` (about ten minutes on two cores), its results are in
# `build/replicate-real/`: the same tables, the figures, and this comparison.

# %%
yours = real_results.REPLICATE_OUT / "results.json"
if yours.exists():
    display(Markdown(real_results.comparison_table(real_results.load(yours), reference)))
else:
    print(f"no {shown(yours)} yet: run `make replicate-real`")
