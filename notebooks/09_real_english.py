# %% [markdown]
# # ELMo on real English: WordNet's definitions and its sense-labelled examples
#
# Every other notebook reads ELMo's layers on a corpus written so that context decides the
# sense. Does any of it hold on English that nobody here wrote? WordNet 3.0 (Princeton) has
# both halves of the paper's Sec. 5.3 offline, in `data/wordnet/`:
#
# * the **definitions** of its synsets, real English, to pre-train a biLM on (the paper used
#   the far larger 1B Word Benchmark);
# * its **example sentences**, held apart and never trained on, each showing one sense of
#   one word: *"they pulled the canoe up on the **bank**"* is `bank.n.01`, sloping land.
#
# The cell below counts them.

# %% tags=["parameters"]
IMPL = None  # None: your exercises/, or the folder that $ELMO_IMPL or the file .elmo-impl names

# %%
from collections import Counter

from IPython.display import Markdown, display
from matplotlib_inline.backend_inline import set_matplotlib_formats

from analyses import real_english, real_results
from analyses.notebook import say
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
# lexicographer file: `noun.artifact`, `verb.motion`, ..., a coarse sense), its rank among
# the lemma's senses (WordNet's first sense is the most frequent in its sense-tagged
# corpus, SemCor), and where the word stands in the sentence.

# %%
for example in [e for e in examples if e.lemma == "bank" and e.pos == "noun"][:6]:
    say(f"{example.synset:22} {example.supersense:18} sense {example.sense}: "
        f"{example.sentence}")
    say(f"{'':22} {definitions[example.synset]}")

# %% [markdown]
# ## Three questions, each read fairly
#
# The paper's method for word sense (Sec. 5.3): take the biLM's representation of the word
# in every training example, average it per sense, and label a test example with the
# nearest sense's average. How the examples are split decides what that measures:
#
# * **The natural split** (the examples as WordNet gives them, a random fifth to test on)
#   asks *does a layer beat a frequency prior?* Most synsets have a single example, so most
#   test examples have no training example of their synset: no reading can answer them, and
#   every difference shrinks with the share that can. The priors: the most frequent sense
#   by training counts (a tie is credited as a guess among the tied senses would be), and,
#   named apart, WordNet's first sense, which knows the sense counts of a corpus that
#   nothing else here saw.
# * **The balanced split** (one held-out example of every synset with two examples or more,
#   of lemmas with two such synsets) asks *can a layer tell senses apart?* Every test
#   example is answerable, and any prior that gives a lemma one sense is right on exactly
#   one of its test examples: chance, by construction.
# * **Part of speech**: a linear probe on each layer, in folds that hold out lemmas, its
#   penalty chosen by cross-validation inside the training folds. The untrained biLM is
#   read twice: as it is, and with the word itself read as `<unk>`, so that only its
#   context is left.
#
# Every claim is read against an **untrained biLM of the same shape and seed**: what it
# already has, the architecture gives. Each finding is a paired difference (the same test
# examples, read two ways) with a 95% interval from a two-level bootstrap: seeds, then test
# examples within a seed. The verdict says *pre-training*, *the architecture* or *not at
# this scale* only where the interval says so.
#
# ## The reference's results
#
# The course ran all of it on its reference (`docs/results-real.json`);
# `make replicate-real` runs it on **your** sections (1, 2, 3, 5, 7, and 8 if written).
# First, how large each test is and how much of it can be answered:

# %%
reference = real_results.load()
display(Markdown(real_results.TABLES["real_tests"](reference)))
display(Markdown(real_results.TABLES["real_pretraining"](reference)))

# %% [markdown]
# **Predict** before reading on: with what a few minutes of CPU buy (a part of one pass over
# the definitions, a biLM far smaller than the paper's), which of these would you expect
# pre-training to add to: telling a word's senses apart, beating WordNet's first sense,
# telling its part of speech? And how much of each would an untrained biLM already have?

# %%
display(Markdown(real_results.TABLES["real_balanced"](reference)))
display(Markdown(real_results.TABLES["real_natural"](reference)))
display(Markdown(real_results.TABLES["real_pos"](reference)))

# %%
# Figure (fig-real-layers): Each test's accuracy per layer, the pre-trained biLM beside the
# untrained one of the same shape and seed, each with its 95% interval, the priors as lines.
display(real_results.plot_layers(reference))

# %%
# Figure (fig-real-findings): The comparisons named in advance, each a paired difference
# with its 95% interval, coloured by the verdict its interval allows.
display(real_results.plot_findings(reference))

# %% [markdown]
# {numref}`fig-real-layers` draws each test's accuracies layer by layer, and
# {numref}`fig-real-findings` the differences with their intervals. The findings in words,
# every number from the same results:

# %%
display(Markdown(real_results.TABLES["real_summary"](reference)))

# %% [markdown]
# ## What the literature leads one to expect
#
# The paper read its biLM with the same nearest-sense method (Peters et al. 2018, Table 5)
# and the same linear probe (Table 6), at a far larger scale; contextual encoders have
# since been probed against untrained ones (Tenney et al. 2019; Liu et al. 2019;
# Zhang and Bowman 2018). Which of the findings above are expected at this scale, and which would
# be news?

# %%
display(Markdown(real_results.TABLES["real_expected"](reference)))

# %% [markdown]
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
SENTENCE = "we sat at the mouth of the river and watched the boats"
WORD = "mouth"
if read is not None:
    say(real_english.nearest_to(sections, read, bank, SENTENCE, WORD, k=4))

# %% [markdown]
# Reading: at layer 0 every example of the same word form is equally near (one vector per
# word), so the order there is only the examples' own; from layer 1 on the order follows the
# sentence, and not always its sense: sentences with words in common come near each other
# (*"the mouth of the ..."*). How much of that an untrained biLM of the same shape does too,
# this cell does not show: the word-sense tables above measure it, pre-trained minus
# untrained, layer by layer. Try the other sense (*"she wiped the jam from her mouth"*), a
# verb (*"they play chess"*), or a word the biLM has never seen.
#
# ## Your numbers beside the reference's
#
# After `make replicate-real`, its results are in `build/replicate-real/`: the same tables,
# the figures, and this comparison.

# %%
yours = real_results.REPLICATE_OUT / "results.json"
if yours.exists():
    display(Markdown(real_results.comparison_table(real_results.load(yours), reference)))
else:
    print(f"no {shown(yours)} yet: run `make replicate-real`")
