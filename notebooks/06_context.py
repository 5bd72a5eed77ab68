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
# Three baselines to read the numbers against: how similar two *unrelated* words are at each
# layer (contextual vectors share a common direction, so this is above 0: Ethayarajh 2019);
# held-out sentences, which the biLM never trained on; and, for every claim about a layer,
# **the untrained biLM** of the same shape and seed, the one pre-training started from (the
# probing literature's standard control). An LSTM that was never trained still mixes a
# sentence's words into each position, and the two senses of a word come with different
# words: some of the gap is the architecture's. What pre-training adds is the trained gap
# minus the untrained one.
#
# You write `cosine_sim` (normalise both vectors before the dot product, and decide what a
# zero vector gives) and `compare_contexts` (every pair of sentences with the same target
# word, the cosine of the word's embeddings at each layer). The baselines and the pictures
# are given (`course.analysis`, `course.plots`).

# %% tags=["parameters"]
IMPL = None  # None: your exercises/, or the folder that $ELMO_IMPL or the file .elmo-impl names

# %%
import textwrap

import torch
from IPython.display import display
from matplotlib_inline.backend_inline import set_matplotlib_formats

from course import analysis, playground, plots
from course.experiments import untrained_like
from course.notebook import load_sections, pretrained_bilm, run_checks
from course.reference_targets import NUMBERS, SUMMARY
from course.registry import find_section

SECTION = find_section("context")
sections = load_sections(IMPL, SECTION.name)
context, corpus = sections.context, sections.corpus
trained = pretrained_bilm(sections)
control = untrained_like(sections)  # the same shape and initial weights, never trained
set_matplotlib_formats("png")  # the figures are drawn without pyplot: show them as images


def say(text):
    """Print a reading wrapped to the notebook's width."""
    print(textwrap.fill(text, 92))

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
def pooled_gap(comparison):
    """(layers,) same-sense minus different-sense cosine, over all pairs."""
    return comparison.select(True).mean(0) - comparison.select(False).mean(0)


def row(name, values):
    return f"{name:<34}" + "".join(f"{float(v):9.3f}" for v in values)


comparison = context.compare_contexts(trained.model, trained.word2idx)
baseline = analysis.anisotropy_baseline(sections, trained.model, trained.word2idx)
control_comparison = context.compare_contexts(control.model, control.word2idx)
print(analysis.comparison_table(comparison))
print(row("two different words:", baseline))
print()
print(" " * 34 + "".join(f"{'layer ' + str(k):>9}" for k in range(3)))
print(row("gap, pre-trained biLM", pooled_gap(comparison)))
print(row("gap, untrained biLM (control)", pooled_gap(control_comparison)))
print(row("what pre-training adds", pooled_gap(comparison) - pooled_gap(control_comparison)))

# %% [markdown]
# Reading: at layer 0 every pair is 1, the gap 0, for both biLMs: the word alone. At
# layers 1 and 2 same-sense pairs of the pre-trained biLM are more similar than
# different-sense pairs, for every word. The untrained biLM's gap is the control: whatever
# it shows comes from the architecture (an LSTM of random weights still mixes in the
# sentence's words), not from training. The last row is what pre-training adds, and the
# cell below says it in numbers. Both groups stay above the level of two unrelated words (the
# baseline row): a "bank" of a river is still more like a "bank" of money than two different
# words are alike. Subtracting the baseline from both groups leaves the gap as it is; it
# says how much of each similarity is the shared direction of all vectors, not the word.

# %%
added = pooled_gap(comparison) - pooled_gap(control_comparison)
say(f"Reading, this seed: at layer 1 the gap is {float(pooled_gap(comparison)[1]):.3f} "
    f"pre-trained against {float(pooled_gap(control_comparison)[1]):.3f} untrained, so "
    f"pre-training adds {float(added[1]):.3f}; at layer 2, {float(added[2]):.3f} "
    f"({'more' if added[2] > added[1] else 'less'} than at layer 1).")
word, untrained_mean = NUMBERS["word"]["trained"], NUMBERS["word"]["untrained"]
say(f"Over the reference's {SUMMARY['seeds']} seeds, the mean gap (training pairs) per "
    f"layer is {word['gap']} pre-trained against {untrained_mean['gap']} untrained.")

# %%
display(plots.plot_against_control([
    plots.ControlPanel("training pairs: the sense gap", "same minus different cosine",
                       pooled_gap(comparison).tolist(), pooled_gap(control_comparison).tolist(),
                       0.0, "no gap"),
    plots.ControlPanel("two unrelated words", "cosine (anisotropy)", baseline.tolist(),
                       analysis.anisotropy_baseline(sections, control.model,
                                                    control.word2idx).tolist()),
]))

# %% [markdown]
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
control_held_out = context.compare_contexts(control.model, control.word2idx,
                                            corpus.HELDOUT_LABELS)
print(analysis.comparison_table(held_out))
print()
print(row("gap, pre-trained biLM", pooled_gap(held_out)))
print(row("gap, untrained biLM (control)", pooled_gap(control_held_out)))
print(row("what pre-training adds", pooled_gap(held_out) - pooled_gap(control_held_out)))
print(SUMMARY["seeds"], "seeds: the held-out targets, read as effects of pre-training")
for name, reading in SUMMARY["targets"].items():
    if name.startswith("held-out") and "gap" in name:
        print(f"  {name:<56} pre-trained {reading['trained']:>5}, untrained "
              f"{reading['untrained']:>5}; adds {reading['effect_mean_sd']}: "
              f"{reading['verdict']}")

# %% [markdown]
# Reading: on sentences it has never seen, the pre-trained biLM still separates the senses
# at layers 1 and 2, because each of their phrases taught it the sense elsewhere; the
# untrained biLM's gap, the control, is what the architecture alone gives. The last lines
# read the course's targets over its seeds: a target is pre-training's only where the
# untrained biLMs miss it and the trained ones hold it.
#
# ## Which direction knows what
#
# At the target word, the forward half of each layer has read the opening, the backward
# half the ending. Each half on its own:

# %%
halves = analysis.compare_halves(sections, trained.model, trained.word2idx)
control_halves = analysis.compare_halves(sections, control.model, control.word2idx)
for direction, half in halves.items():
    print(row(f"{direction} half, pre-trained", pooled_gap(half)))
    print(row(f"{direction} half, untrained", pooled_gap(control_halves[direction])))
display(plots.plot_halves(halves, baseline))

# %% [markdown]
# Reading: both halves of the pre-trained biLM separate the senses, since both the
# openings and the endings are sense-specific; each half of the untrained one is the control
# for it. On the seed notebook's corpus it was otherwise: sentences with the same
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
# The same picture for the untrained biLM, the control:

# %%
display(plots.plot_sense_pca(sections, control.model, control.word2idx, "bank"))

# %% [markdown]
# Reading: layer 0 is one point, for both. For the pre-trained biLM, at layers 1 and 2 the
# first component splits the two senses, and the held-out occurrences fall among the
# training ones of their sense. The untrained biLM's points fall into tight clusters of
# sentences that share a phrase (the same e, the ending, read last by its backward half),
# and a sense is split among its phrases' clusters: it groups occurrences by the words
# around them, which is part of why its nearest neighbours below often share the sense.
#
# ## Nearest neighbours
#
# The paper's Table 4 finds, for "play" in a sentence, the nearest occurrences in a corpus:
# a biLM's neighbours share the sense, GloVe's only the word. Here: is a word's nearest
# other occurrence (not one sharing its opening or ending) of its sense? Chance is the share
# of candidates of the query's sense; layer 0, where every candidate ties, gets exactly that.

# %%
def pooled_accuracy(found):
    """(layers,) 1-NN accuracy over every query of every word."""
    n = sum(r.n for r in found.values())
    return sum(r.accuracy * r.n for r in found.values()) / n


nearest = {}
for name, queries in (("training", corpus.SENSE_LABELS), ("held-out", corpus.HELDOUT_LABELS)):
    for biLM, which in ((trained, "pre-trained"), (control, "untrained")):
        found = analysis.nearest_sense_accuracy(sections, biLM.model, biLM.word2idx, queries)
        nearest[name, which] = found
        for word, reading in found.items():
            print(f"{name:<9} {which:<11} {word:<6} 1-NN accuracy per layer "
                  f"{[round(float(a), 3) for a in reading.accuracy]}   chance "
                  f"{reading.chance:.3f}   n = {reading.n}")
trained_nn = pooled_accuracy(nearest["held-out", "pre-trained"])
control_nn = pooled_accuracy(nearest["held-out", "untrained"])
chance_nn = (sum(r.chance * r.n for r in nearest["held-out", "pre-trained"].values())
             / sum(r.n for r in nearest["held-out", "pre-trained"].values()))
display(plots.plot_against_control([plots.ControlPanel(
    "held-out queries: is the nearest occurrence of the word's sense?", "1-NN sense accuracy",
    trained_nn.tolist(), control_nn.tolist(), chance_nn, f"chance {chance_nn:.2f}")]))
say(f"Reading, this seed, held-out queries: layer 0 scores chance ({chance_nn:.2f}) for "
    f"both. At layers 1 and 2 the untrained biLM already reaches {float(control_nn[1]):.2f} "
    f"and {float(control_nn[2]):.2f}: the two senses' phrases differ in their words, and "
    f"random LSTMs carry those words. Pre-training takes it to {float(trained_nn[1]):.2f} "
    f"and {float(trained_nn[2]):.2f}, adding {float(trained_nn[1] - control_nn[1]):.2f} "
    f"and {float(trained_nn[2] - control_nn[2]):.2f}.")
say(f"Over the reference's {SUMMARY['seeds']} seeds: {NUMBERS['word']['trained']['nearest']} "
    f"pre-trained against {NUMBERS['word']['untrained']['nearest']} untrained.")

# %% [markdown]
# Reading: the control matters here most. A nearest neighbour of the right sense is no
# proof that the biLM learned the sense: an untrained one finds many, because the senses'
# contexts are made of different words. What pre-training adds is the step from the grey
# bars to the blue ones, on queries from sentences it never saw. The paper's WSD with biLM
# layer 2 reaches 69.0 F1 on real text (Table 5), against baselines of the same kind.
#
# ## Playground
#
# Type a sentence with one of the four words, as you would write it: what each direction
# of the biLM expects around every word, and the word's nearest corpus occurrences, per
# layer. Case and punctuation are read as section 2 reads them, an unknown word as `<unk>`;
# where many occurrences are equally near (layer 0: the word is one vector everywhere), the
# table says it is a tie rather than listing a few.

# %%
sentence, word = "The ducks sat by the Bank, of the water.", "Bank"
print(playground.predictions(sections, trained.model, sentence, trained.word2idx,
                             trained.idx2word))
print()
print(playground.nearest(sections, trained.model, trained.word2idx, sentence, word))

# %% [markdown]
# ## Summary
#
# * Layer 0 cannot tell senses apart; layers 1 and 2 can, more at layer 2, on held-out
#   sentences too, above the similarity of unrelated words.
# * An untrained biLM of the same shape already gets part of it: its layers carry the
#   surrounding words, which differ between senses. What pre-training adds is the trained
#   reading minus the untrained one, and it is what the course's targets read.
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
# 3. Run the comparison on an untrained biLM of another seed
#    (`untrained_like(sections, seed=3)`): how much does the control move with the seed?
#
# ## Checks
#
# Section 6's tests, exactly as `make test SECTION=6` runs them on `IMPL`.

# %%
run_checks(IMPL, SECTION.name)
