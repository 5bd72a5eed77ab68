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
#   \qquad \cos(0, b) = 0 .$$ (eq-cosine)
#
# The pairs fall into two groups: **same sense** (two "bank"s of money) and **different
# sense** (a "bank" of money and a "bank" of a river). The **gap**, same-sense minus
# different-sense similarity {eq}`eq-cosine`, is what a layer knows of the sense:
#
# * layer 0 sees only the word, so every cosine is 1 and the gap is 0, by construction;
# * the LSTM layers have read the sentence; if they carry its sense, the gap is positive.
#
# Three baselines to read the numbers against: how similar two *unrelated* words are at each
# layer (contextual vectors share a common direction, so this is above 0: Ethayarajh 2019);
# held-out sentences, which the biLM never trained on; and, for every claim about a layer,
# **the untrained biLM** of the same shape and seed, the one pre-training started from (the
# probing literature's control, as in Zhang and Bowman 2018). An LSTM that was never
# trained still mixes a sentence's words into each position, and the two senses of a word
# come with different words: some of the gap is the architecture's. What pre-training adds
# is the trained gap minus the untrained one.
#
# You write `cosine_sim` (normalise both vectors before the dot product, and decide what a
# zero vector gives) and `compare_contexts` (every pair of sentences with the same target
# word, the cosine of the word's embeddings at each layer). The baselines and the pictures
# are given (`analyses.analysis`, `analyses.plots`).

# %% tags=["parameters"]
IMPL = None  # None: your exercises/, or the folder that $ELMO_IMPL or the file .elmo-impl names

# %%
import torch
from IPython.display import display
from matplotlib_inline.backend_inline import set_matplotlib_formats

from analyses import analysis, playground, plots, predictions
from analyses.experiments import untrained_like
from analyses.notebook import glue, load_sections, pretrained_bilm, run_checks, say, targets_read
from analyses.reference_targets import NUMBERS, SUMMARY
from course.registry import find_section

SECTION = find_section("context")
sections = load_sections(IMPL, SECTION.name)
context, corpus = sections.context, sections.corpus
trained = pretrained_bilm(sections)
control = untrained_like(sections)  # the same shape and initial weights, never trained
set_matplotlib_formats("png")  # the figures are drawn without pyplot: show them as images
targets = SUMMARY["targets"]
glue("seeds", SUMMARY["seeds"])

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
# predict what follows "bank" the biLM must know which "bank" it is. Over the reference's
# {glue:text}`seeds` seeds, the held-out gap is larger at layer 2 than at layer 1 for
# {glue:text}`layer-2-larger-trained` pre-trained biLMs and {glue:text}`layer-2-larger-untrained`
# untrained ones: that order is pre-training's.
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
for layer in (1, 2):
    glue(f"gap-{layer}", float(pooled_gap(comparison)[layer]))
    glue(f"control-gap-{layer}", float(pooled_gap(control_comparison)[layer]))
    glue(f"added-{layer}", float(pooled_gap(comparison)[layer]
                                 - pooled_gap(control_comparison)[layer]))
every_word = targets["training: every word's gap >= 0.1 at layers 1 and 2"]
glue("every-word-trained", every_word["trained"])
glue("every-word-untrained", every_word["untrained"])
glue("every-word-effect", every_word["effect"])
glue("every-word-verdict", every_word["verdict"])
larger = targets["held-out: pooled gap larger at layer 2 than at layer 1"]
glue("layer-2-larger-trained", larger["trained"])
glue("layer-2-larger-untrained", larger["untrained"])

# %% [markdown]
# Reading: at layer 0 every pair is 1, the gap 0, for both biLMs: the word alone. At
# layers 1 and 2, this seed's pre-trained biLM gives same-sense pairs more similarity than
# different-sense pairs, for every word: a pooled gap of {glue:text}`gap-1:.3f` at layer 1
# and {glue:text}`gap-2:.3f` at layer 2. The untrained biLM's gap is the control, and it is
# not 0: {glue:text}`control-gap-1:.3f` and {glue:text}`control-gap-2:.3f`, from the
# architecture alone (an LSTM of random weights still mixes in the sentence's words). What
# pre-training adds is the difference, {glue:text}`added-1:.3f` and {glue:text}`added-2:.3f`.
#
# Over the reference's {glue:text}`seeds` seeds, every word's gap is at least 0.1 at both
# layers for {glue:text}`every-word-trained` pre-trained biLMs and
# {glue:text}`every-word-untrained` untrained ones, but pre-training raises every word's gap
# by 0.1 on only {glue:text}`every-word-effect` of the seeds ("bank" at layer 1 is the one
# that falls short): for each word on its own the verdict is
# "{glue:text}`every-word-verdict`"; for the words pooled it is pre-training (the held-out
# targets, below).
#
# Both groups stay above the level of two unrelated words (the baseline row): a "bank" of a
# river is still more like a "bank" of money than two different words are alike.
# Subtracting the baseline from both groups leaves the gap as it is; it says how much of
# each similarity is the shared direction of all vectors, not the word.

# %%
# Figure (fig-gap-control): The sense gap of the training pairs (left) and the similarity of
# two unrelated words (right), per layer, for the pre-trained biLM and its untrained control.
display(plots.plot_against_control([
    plots.ControlPanel("training pairs: the sense gap", "same minus different cosine",
                       pooled_gap(comparison).tolist(), pooled_gap(control_comparison).tolist(),
                       0.0, "no gap"),
    plots.ControlPanel("two unrelated words", "cosine (anisotropy)", baseline.tolist(),
                       analysis.anisotropy_baseline(sections, control.model,
                                                    control.word2idx).tolist()),
]))

# %% [markdown]
# {numref}`fig-gap-control` sets each reading beside the control's. One caution: some
# same-sense training pairs share an opening or an ending, which makes half of their vector
# identical. The held-out sentences below share none.

# %%
# Figure (fig-context-comparison): The pre-trained biLM's gap of each word per layer, and
# every pair pooled per layer against the similarity of two unrelated words.
display(plots.plot_context_comparison(comparison, baseline))

# %% [markdown]
# ## Held-out sentences
#
# The sentences the biLM never trained on: within a sense, no two share a phrase.

# %%
held_out = context.compare_contexts(trained.model, trained.word2idx, corpus.HELDOUT_LABELS)
control_held_out = context.compare_contexts(control.model, control.word2idx,
                                            corpus.HELDOUT_LABELS)
print(analysis.comparison_table(held_out))
print()
print(row("gap, pre-trained biLM", pooled_gap(held_out)))
print(row("gap, untrained biLM (control)", pooled_gap(control_held_out)))
print(row("what pre-training adds", pooled_gap(held_out) - pooled_gap(control_held_out)))
print()
say(f"The mean held-out gap over the reference's {SUMMARY['seeds']} seeds, layers 0 1 2: "
    + "  ".join(f"{g:.3f}" for g in NUMBERS["word"]["trained"]["gap"]) + " pre-trained, "
    + "  ".join(f"{g:.3f}" for g in NUMBERS["word"]["untrained"]["gap"]) + " untrained.")
print(targets_read("held-out: pooled gap", "held-out: every word's"))
for layer in (1, 2):
    glue(f"held-out-gap-{layer}", float(pooled_gap(held_out)[layer]))
    glue(f"held-out-control-gap-{layer}", float(pooled_gap(control_held_out)[layer]))

# %% [markdown]
# Reading: on sentences it has never seen, this seed's pre-trained biLM still separates the
# senses, with a gap of {glue:text}`held-out-gap-1:.3f` at layer 1 and
# {glue:text}`held-out-gap-2:.3f` at layer 2, because each of their phrases taught it the
# sense elsewhere; the untrained biLM's gap, {glue:text}`held-out-control-gap-1:.3f` and
# {glue:text}`held-out-control-gap-2:.3f`, is what the architecture alone gives. The last
# lines read the course's targets over the reference's seeds: a target is pre-training's
# only where the untrained biLMs miss it and the trained ones hold it. The pooled gaps are;
# every word's gap on its own is not settled.
#
# ## Which direction knows what
#
# At the target word, the forward half of each layer has read the opening, the backward
# half the ending. Each half on its own:

# %%
halves = analysis.compare_halves(sections, trained.model, trained.word2idx)
control_halves = analysis.compare_halves(sections, control.model, control.word2idx)
print(" " * 34 + "".join(f"{'layer ' + str(k):>9}" for k in range(3)))
for direction, half in halves.items():
    print(row(f"{direction} half, pre-trained", pooled_gap(half)))
    print(row(f"{direction} half, untrained", pooled_gap(control_halves[direction])))

# %%
# Figure (fig-halves): The pre-trained biLM's mean cosine per layer, over every word's
# same-sense pairs and its different-sense pairs, of the forward half and of the backward
# half of each layer's vector; the untrained control is in the lines above.
display(plots.plot_halves(halves, baseline))

# %% [markdown]
# Reading: in {numref}`fig-halves`, both halves of this seed's pre-trained biLM separate the
# senses, since both the openings and the endings are sense-specific; each half of the
# untrained one (the lines above) is the control for it. On the seed notebook's corpus it
# was otherwise: sentences with the same opening had identical forward halves (cosine 1),
# and only the backward half told the senses apart at all.
#
# ## The picture of one word
#
# Every occurrence of "bank", per layer, on its first two principal components: coloured by
# sense, its marker the sentence's opening, hollow for held-out sentences.

# %%
# Figure (fig-pca-trained): Every occurrence of "bank" per layer on its first two principal
# components, for the pre-trained biLM.
display(plots.plot_sense_pca(sections, trained.model, trained.word2idx, "bank"))

# %% [markdown]
# The same picture for the untrained biLM, the control:

# %%
# Figure (fig-pca-untrained): The same for the untrained biLM of the same shape and seed,
# the control.
display(plots.plot_sense_pca(sections, control.model, control.word2idx, "bank"))

# %% [markdown]
# Reading: layer 0 is one point, for both. Do not take a split of the colours on two
# components for what pre-training added: the untrained biLM's occurrences of "bank" can
# fall apart by sense too ({numref}`fig-pca-untrained`), because each sense's sentences are
# made of other words. What differs is how: the untrained biLM's points sit in tight
# clusters in which every opening's marker mixes, sentences that share their ending (read
# last by its backward half), and a sense is spread over its endings' clusters; the
# pre-trained biLM's ({numref}`fig-pca-trained`) gather by sense, the held-out occurrences
# among the training ones of their sense. The measure is the gap above, set against the
# control's; the Explore page of the course book shows the two side by side for other seeds
# and words.
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
print(f"{'1-NN sense accuracy':<28}" + "".join(f"{'layer ' + str(k):>9}" for k in range(3))
      + f"{'chance':>9}{'n':>4}")
for name, queries in (("training", corpus.SENSE_LABELS), ("held-out", corpus.HELDOUT_LABELS)):
    for biLM, which in ((trained, "pre-trained"), (control, "untrained")):
        found = analysis.nearest_sense_accuracy(sections, biLM.model, biLM.word2idx, queries)
        nearest[name, which] = found
        for word, reading in found.items():
            print(f"{name:<9} {which:<11} {word:<6}"
                  + "".join(f"{float(a):9.3f}" for a in reading.accuracy)
                  + f"{reading.chance:9.3f}{reading.n:4}")
trained_nn = pooled_accuracy(nearest["held-out", "pre-trained"])
control_nn = pooled_accuracy(nearest["held-out", "untrained"])
chance_nn = (sum(r.chance * r.n for r in nearest["held-out", "pre-trained"].values())
             / sum(r.n for r in nearest["held-out", "pre-trained"].values()))
print()
say(f"The mean over the reference's {SUMMARY['seeds']} seeds, held-out queries, layers 0 1 "
    "2: " + "  ".join(f"{a:.3f}" for a in NUMBERS["word"]["trained"]["nearest"])
    + " pre-trained, " + "  ".join(f"{a:.3f}" for a in NUMBERS["word"]["untrained"]["nearest"])
    + " untrained.")
print(targets_read("held-out: the nearest"))
glue("chance-nn", chance_nn)
for layer in (1, 2):
    glue(f"control-nn-{layer}", float(control_nn[layer]))
    glue(f"trained-nn-{layer}", float(trained_nn[layer]))

# %%
# Figure (fig-nearest): Held-out queries: how often the nearest other occurrence of the word
# has its sense, per layer, for the pre-trained biLM and its untrained control.
display(plots.plot_against_control([plots.ControlPanel(
    "held-out queries: is the nearest occurrence of the word's sense?", "1-NN sense accuracy",
    trained_nn.tolist(), control_nn.tolist(), chance_nn, f"chance {chance_nn:.2f}")]))

# %% [markdown]
# Reading: the control matters here most. On this seed's held-out queries, layer 0 scores
# chance ({glue:text}`chance-nn:.2f`) for both biLMs; at layers 1 and 2 the untrained biLM
# already reaches {glue:text}`control-nn-1:.2f` and {glue:text}`control-nn-2:.2f`, because
# the two senses' phrases differ in their words and random LSTMs carry those words.
# Pre-training takes it to {glue:text}`trained-nn-1:.2f` and {glue:text}`trained-nn-2:.2f`
# ({numref}`fig-nearest`). A nearest neighbour of the right sense is no proof that the biLM
# learned the sense: what pre-training adds is the step from the grey bars to the blue
# ones, on queries from sentences it never saw, and over the reference's seeds it is
# pre-training's at both layers (the lines above). The paper's WSD with biLM layer 2
# reaches 69.0 F1 on real text (Table 5), against baselines of the same kind.
#
# ## Playground
#
# Type a sentence with bank, play, right or watch, as you would write it: what each
# direction of the biLM expects around every word, and the word's nearest corpus
# occurrences, per layer. Case and punctuation are read as section 2 reads them, an unknown
# word as `<unk>`; where many occurrences are equally near (layer 0: the word is one vector
# everywhere), the table says it is a tie rather than listing a few.

# %%
sentence, word = "The ducks sat by the Bank, of the water.", "Bank"
print(playground.predictions(sections, trained.model, sentence, trained.word2idx,
                             trained.idx2word))
print()
print(playground.nearest(sections, trained.model, trained.word2idx, sentence, word))

# %% [markdown]
# ## Predict, then run: the comparison centred
#
# `compare_contexts(..., centre=True)` subtracts from every target word's embedding the
# mean, layer by layer, of all the target words' embeddings, before the cosines. The cell
# below measures the gap at layer 2 (the same-sense pairs' mean cosine minus the
# different-sense pairs') both ways on your pre-trained biLM, beside the untrained biLM it
# started from and the reference's numbers.
#
# **Predict** before you run it, in one line in `prediction`: centred, will the gap grow,
# shrink, or stay within seed noise?

# %%
prediction = ""  # your one line, written before you run this cell
predictions.run(sections, "centre", prediction)

# %% [markdown]
# <details><summary>Reading: open it once your cell has run</summary>
#
# Reading: centred, the gap grows. Every occurrence of every target word shares a common
# direction (the cosine of two unrelated words above measures it): it lifts every cosine,
# same-sense and different-sense alike, towards 1, and leaves little room between them.
# Taking the mean out leaves what tells the occurrences apart, and the sense is much of
# that. The sense was in the embeddings all along; the raw cosine understates it.
#
# </details>

# %% [markdown]
# ## Summary
#
# * Layer 0 cannot tell senses apart; layers 1 and 2 can, more at layer 2, on held-out
#   sentences too, above the similarity of unrelated words.
# * An untrained biLM of the same shape already gets part of it: its layers carry the
#   surrounding words, which differ between senses. What pre-training adds is the trained
#   reading minus the untrained one, and it is what the course's targets read: over the
#   reference's seeds the pooled gap, its growth from layer 1 to layer 2 and the nearest
#   neighbour's sense are pre-training's; every word's gap on its own is not settled.
# * The gap comes from the corpus: a biLM learns a sense only where the context predicts
#   differently for each sense.
#
# ## Try
#
# 1. Write a sentence whose opening is of one sense and whose ending of the other ("she put
#    her money in the bank of the river") and look at its nearest neighbours per layer:
#    which half wins?
# 2. Compare only the pairs that share neither an opening nor an ending (pass
#    `compare_contexts`, for each sense, the sentences of opening k with ending k + 1, the
#    last opening with the first ending): how much of the training gap is left?
# 3. Run the comparison on an untrained biLM of another seed
#    (`untrained_like(sections, seed=3)`): how much does the control move with the seed?
#
# ## Checks
#
# Section 6's tests, exactly as `make test SECTION=6` runs them on `IMPL`.

# %%
run_checks(IMPL, SECTION.name)
