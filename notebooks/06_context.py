# %% [markdown]
# # Section 6: does context change the embedding?
#
# The point of ELMo is that a word's vector depends on its sentence. The paper finds that
# the biLM's layers capture different things (Peters et al. 2018, Sec. 5.3): the first LSTM
# layer is the better one for part-of-speech tagging (syntax), the second for word sense
# disambiguation (meaning). This section looks at meaning on the toy corpus, where context
# decides the sense.
#
# For each polysemous word (bank, play, right, watch) and every two sentences that contain
# it, compare the word's two embeddings layer by layer with the cosine similarity
#
# $$\cos(a, b) = \frac{\langle a, b \rangle}{\lVert a \rVert \, \lVert b \rVert},
#   \qquad \cos(0, b) = 0 .$$
#
# The pairs fall into two groups: **same sense** (two "bank"s of money) and **different
# sense** (a "bank" of money and a "bank" of a river). The **gap**, same-sense minus
# different-sense similarity, is what a layer knows of the sense:
#
# * layer 0 sees only the word, so every cosine is 1 and the gap is 0, by construction;
# * the LSTM layers have read the sentence; if they carry its sense, the gap is positive.
#
# Two baselines to read the numbers against: how similar two *unrelated* words are at each
# layer (contextual vectors share a common direction, so this is above 0: Ethayarajh 2019),
# and held-out sentences, which the biLM never trained on.
#
# You write `cosine_sim` (normalise both vectors before the dot product, and decide what a
# zero vector gives) and `compare_contexts` (every pair of sentences with the same target
# word, the cosine of the word's embeddings at each layer). The baselines and the pictures
# are given (`course.analysis`, `course.plots`).

# %% tags=["parameters"]
IMPL = None  # None: your exercises/, or the folder that $ELMO_IMPL or the file .elmo-impl names

# %%
import torch
from IPython.display import display
from matplotlib_inline.backend_inline import set_matplotlib_formats

from course import analysis, plots
from course.notebook import load_sections, pretrained_bilm, run_checks
from course.registry import find_section

SECTION = find_section("context")
sections = load_sections(IMPL, SECTION.name)
context, corpus = sections.context, sections.corpus
trained = pretrained_bilm(sections)
set_matplotlib_formats("png")  # the figures are drawn without pyplot: show them as images

# %% [markdown]
# ## Cosine similarity
#
# Parallel vectors give 1, opposite ones -1, orthogonal ones 0; a batch of vectors gives
# one cosine per row, and a zero vector is similar to nothing.

# %% tags=["first-call"]
# Your code: exercises/s6_context.py, cosine_sim first. Until it is written, this
# cell stops with its NotImplementedError. After each edit, save the file, then re-run
# this cell and the cells below it (Run > Run Selected Cell and All Below): no restart.
a = torch.tensor([[1.0, 0.0], [1.0, 1.0], [0.0, 0.0]])
b = torch.tensor([[2.0, 0.0], [-1.0, -1.0], [3.0, 4.0]])
context.cosine_sim(a, b)

# %% [markdown]
# ## Every pair of training sentences, layer by layer
#
# Mean cosine similarity per target word and sense group (the number of pairs in brackets),
# and, per layer, the similarity of two tokens of different words (the anisotropy
# baseline).
#
# **Predict**: which layer will show the largest gap between same-sense and different-sense
# pairs: 0, 1 or 2?
#
# <details><summary>Answer</summary>
#
# Layer 2. Layer 0 has no gap at all; layer 1 already separates the senses, and layer 2,
# which feeds the predictions of the next and the previous word, separates them most: to
# predict what follows "bank" the biLM must know which "bank" it is.
# </details>

# %%
comparison = context.compare_contexts(trained.model, trained.word2idx)
baseline = analysis.anisotropy_baseline(sections, trained.model, trained.word2idx)
print(analysis.comparison_table(comparison))
print("two different words:" + "".join(f"{float(v):9.3f}" for v in baseline))
same, different = comparison.select(True).mean(0), comparison.select(False).mean(0)
print("gap, all pairs:     " + "".join(f"{float(v):9.3f}" for v in same - different))

# %% [markdown]
# Reading: at layer 0 every pair is 1, the gap 0. At layers 1 and 2 same-sense pairs are
# far more similar than different-sense pairs, for every word, and the gap is larger at
# layer 2. Both groups stay far above the level of two unrelated words (the baseline, under
# 0.15): a "bank" of a river is still much more like a "bank" of money than two different
# words are alike.
# Subtracting the baseline from both groups leaves the gap as it is; it says how much of
# each similarity is the shared direction of all vectors, not the word.
#
# One caution: some same-sense training pairs share an opening or an ending, which makes
# half of their vector identical. The held-out sentences below share none.

# %%
display(plots.plot_context_comparison(comparison, baseline))

# %% [markdown]
# ## Held-out sentences
#
# The 32 sentences the biLM never trained on: within a sense, no two share a phrase.

# %%
held_out = context.compare_contexts(trained.model, trained.word2idx, corpus.HELDOUT_LABELS)
print(analysis.comparison_table(held_out))
same, different = held_out.select(True).mean(0), held_out.select(False).mean(0)
print("gap, all pairs:     " + "".join(f"{float(v):9.3f}" for v in same - different))

# %% [markdown]
# Reading: the gaps are a little smaller than on training pairs (no shared phrases), still
# well above 0.1 for every word at layers 1 and 2: the biLM separates senses in sentences it
# has never seen, because each of their phrases taught it the sense elsewhere.
#
# ## Which direction knows what
#
# At the target word, the forward half of each layer has read the opening, the backward
# half the ending. Each half on its own:

# %%
halves = analysis.compare_halves(sections, trained.model, trained.word2idx)
for direction, half in halves.items():
    gap = half.select(True).mean(0) - half.select(False).mean(0)
    print(f"{direction:<8} half, gap per layer:", [round(float(g), 3) for g in gap])
display(plots.plot_halves(halves, baseline))

# %% [markdown]
# Reading: both halves separate the senses, since both the openings and the endings are
# sense-specific. On the seed notebook's corpus it was otherwise: sentences with the same
# opening had identical forward halves (cosine 1.000), and only the backward half told the
# senses apart at all.
#
# ## The picture of one word
#
# Every occurrence of "bank", per layer, on its first two principal components: coloured by
# sense, hollow for held-out sentences, each labelled with its opening and ending
# (o2 e3: opening 2, ending 3).

# %%
display(plots.plot_sense_pca(sections, trained.model, trained.word2idx, "bank"))

# %% [markdown]
# Reading: layer 0 is one point. At layers 1 and 2 the first component splits the two
# senses, and the held-out occurrences fall among the training ones of their sense; within
# a sense, points sharing an opening (same o) or an ending (same e) sit together.
#
# ## Nearest neighbours
#
# The paper's Table 4 finds, for "play" in a sentence, the nearest occurrences in a corpus:
# a biLM's neighbours share the sense, GloVe's only the word. Here: is a word's nearest
# other occurrence (not one sharing its opening or ending) of its sense? Chance is the share
# of candidates of the query's sense; layer 0, where every candidate ties, gets exactly that.

# %%
for name, queries in (("training", corpus.SENSE_LABELS), ("held-out", corpus.HELDOUT_LABELS)):
    found = analysis.nearest_sense_accuracy(sections, trained.model, trained.word2idx, queries)
    for word, reading in found.items():
        print(f"{name:<9} {word:<6} 1-NN accuracy per layer "
              f"{[round(float(a), 3) for a in reading.accuracy]}   chance {reading.chance:.3f}"
              f"   n = {reading.n}")

# %% [markdown]
# Reading: from chance at layer 0 to 1.0 at layers 1 and 2, for every word, on held-out
# queries too. On a toy corpus whose contexts were written to decide the sense, that is what
# a biLM should do; the paper's WSD with biLM layer 2 reaches 69.0 F1 on real text
# (Table 5).
#
# ## Playground
#
# Type a sentence with one of the four words: what each direction of the biLM expects
# around every word, and the word's nearest corpus occurrences, per layer.

# %%
sentence, word = "the ducks sat by the bank of the water", "bank"
print(analysis.predictions_table(analysis.top_predictions(
    sections, trained.model, sentence, trained.word2idx, trained.idx2word, k=3)))
print()
print(analysis.nearest_table(analysis.nearest_occurrences(
    sections, trained.model, trained.word2idx, sentence, word)))

# %% [markdown]
# ## Summary
#
# * Layer 0 cannot tell senses apart; layers 1 and 2 can, by a gap of about 0.2-0.3, more
#   at layer 2, on held-out sentences too, far above the similarity of unrelated words.
# * The gap comes from the corpus: a biLM learns a sense only where the context predicts
#   differently for each sense.
#
# ## Try
#
# 1. Write a sentence whose opening is of one sense and whose ending of the other ("she put
#    her money in the bank of the river") and look at its nearest neighbours per layer:
#    which half wins?
# 2. Compare only the pairs that share neither an opening nor an ending (pass
#    `compare_contexts` the four sentences `opening k, ending (k + 1) mod 4` of each sense):
#    how much of the training gap is left?
# 3. Run the comparison on an untrained biLM (`sections.bilm.BiLM(len(trained.word2idx))`):
#    is there a gap?
#
# ## Checks
#
# Section 6's tests, exactly as `make test SECTION=6` runs them on `IMPL`.

# %%
run_checks(IMPL, SECTION.name)
