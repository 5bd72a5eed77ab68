# %% [markdown]
# # Section 4: pre-training the biLM
#
# The biLM learns by predicting words. Over a sentence $t_1, \ldots, t_N$ it maximises the
# log likelihood of both directions together (Peters et al. 2018, eq. 1):
#
# $$\sum_{k=1}^{N} \Big( \log p(t_k \mid t_1, \ldots, t_{k-1};
#   \Theta_x, \overrightarrow{\Theta}_{LSTM}, \Theta_s)
#   + \log p(t_k \mid t_{k+1}, \ldots, t_N;
#   \Theta_x, \overleftarrow{\Theta}_{LSTM}, \Theta_s) \Big)$$ (eq-log-likelihood)
#
# The token representation $\Theta_x$ and the softmax $\Theta_s$ serve both directions
# (here each direction has its own output projection); only the LSTMs differ. Maximising
# the log likelihood {eq}`eq-log-likelihood` is minimising the cross-entropy, so the loss you
# write is
#
# $$\mathcal{L} = \mathrm{CE}_{\text{forward}} + \mathrm{CE}_{\text{backward}}$$ (eq-loss)
#
# where the forward logits at position $t$ are scored against token $t + 1$, the backward
# logits at $t$ against token $t - 1$, each averaged over the real target tokens of the
# batch: padding never counts.
#
# You write `bilm_loss` and `train_bilm`, the loop: Adam, the corpus shuffled with a seeded
# generator every epoch, and after each epoch the loss of the whole corpus in eval mode
# (`corpus_loss`, given), which is what the loss curve shows. The default recipe trains
# mini-batches of 16 sentences with learning rate 0.005 for 10 epochs.

# %% tags=["parameters"]
IMPL = None  # None: your exercises/, or the folder that $ELMO_IMPL or the file .elmo-impl names

# %%
import math

import torch
from IPython.display import display
from matplotlib_inline.backend_inline import set_matplotlib_formats

from analyses import analysis, playground, plots, predictions
from analyses.notebook import each_epoch_on, glue, load_sections, run_checks, say
from analyses.reference_targets import NUMBERS, SUMMARY
from course.registry import find_section

set_matplotlib_formats("png")  # the figures are drawn without pyplot: show them as images

SECTION = find_section("pretrain")
sections = load_sections(IMPL, SECTION.name)
pretrain = sections.pretrain
setup, corpus, bilm = sections.setup, sections.corpus, sections.bilm

word2idx, idx2word = corpus.build_vocab(corpus.CORPUS)


def untrained_model():
    """A biLM as your section 3 makes it now, the same weights each time (seed 0): every cell
    that trains or measures one makes it afresh, so a re-run cell runs your edited code."""
    setup.set_seed(0)
    return bilm.BiLM(len(word2idx))

# %% [markdown]
# ## The loss before training
#
# **Predict**: an untrained biLM guesses about uniformly over the vocabulary of $V$ words.
# What loss do you expect before training?
#
# <details><summary>Answer</summary>
#
# Each direction's cross-entropy is near $\ln V$ (the surprise of a uniform guess among $V$),
# so the loss {eq}`eq-loss`, their sum, is near $2 \ln V$: about
# {glue:text}`two-ln-v:.1f` for the vocabulary's {glue:text}`vocabulary` entries.
# </details>

# %% tags=["first-call"]
# Your code: exercises/s4_pretrain.py, bilm_loss first. Until it is written, this
# cell stops with its NotImplementedError. After each edit, save the file, then re-run
# this cell and the cells below it (Run > Run Selected Cell and All Below): no restart.
ids, lengths = corpus.pad_batch([corpus.encode(s, word2idx, add_boundaries=True)
                                 for s in corpus.CORPUS])
model = untrained_model()
with torch.no_grad():
    loss = pretrain.bilm_loss(model(ids, lengths), ids, lengths)
print(f"loss of the untrained biLM: {float(loss):.3f}   2 ln V = {2 * math.log(len(word2idx)):.3f}")
glue("two-ln-v", 2 * math.log(len(word2idx)))
glue("vocabulary", len(word2idx))

# %% [markdown]
# Reading: within a few hundredths of $2 \ln V$. Far above it would mean padding counted as
# targets, or a sum where the mean belongs; far below, a prediction that peeks at its own
# target.
#
# ## The floors
#
# How low can the loss go? No biLM does better than one that knows the corpus exactly: at
# every position it gives each possible next token the share of sentences with that prefix
# that continue with it. That is the corpus's **entropy floor** (`entropy_floor`, given in
# `analyses.analysis`). It is not 0, because the corpus itself is uncertain: after "she put
# her money in the bank", every ending of the sense is possible, and training saw all but
# one.
#
# There are two floors worth knowing here:
#
# * **the sentences by heart**: the floor of the training sentences. A biLM there knows
#   which endings training paired with each opening, and gives the held-out one
#   probability 0: its held-out loss is infinite;
# * **the phrases**: the floor of a biLM that knows the language the corpus is written in,
#   any opening of a sense with any ending of it (the floor of the training and the
#   held-out sentences together). Slightly higher on the training sentences, but the same
#   on the held-out ones.

# %%
by_heart = analysis.entropy_floor(sections, corpus.CORPUS)
phrases = analysis.entropy_floor(sections, corpus.CORPUS + corpus.HELDOUT, corpus.CORPUS)
by_heart_held_out = analysis.entropy_floor(sections, corpus.CORPUS, corpus.HELDOUT)
phrases_held_out = analysis.entropy_floor(sections, corpus.CORPUS + corpus.HELDOUT,
                                          corpus.HELDOUT)
print(f"floor, the training sentences by heart: {by_heart:.3f}   on held-out sentences: "
      f"{by_heart_held_out}")
print(f"floor, the phrases: {phrases:.3f} on training sentences, "
      f"{phrases_held_out:.3f} on held-out")

# %% [markdown]
# ## Training
#
# On the CPU: the toy biLM trains in seconds, and the cells below stay on one device.

# %%
model = untrained_model()  # from scratch: re-running this cell trains a new biLM
with each_epoch_on(sections, corpus.HELDOUT) as held_out_history:  # the held-out loss too
    history = pretrain.train_bilm(model, corpus.CORPUS, word2idx, pretrain.DEFAULT_RECIPE,
                                  seed=0, device="cpu", log_every=5, progress=False)
held_out = pretrain.corpus_loss(model, corpus.HELDOUT, word2idx)
print(f"after {len(history)} epochs: training loss {history[-1]:.3f}, held-out loss "
      f"{held_out:.3f}")

# %% [markdown]
# ## The loss curve
#
# **Predict**: will the training loss end below the phrases' floor? And the held-out loss?
#
# <details><summary>Answer</summary>
#
# The training loss ends a little above the phrases' floor, short of the by-heart floor:
# ten epochs teach the phrases, not yet the sentences. The held-out loss ends higher,
# {glue:text}`held-out-above-floor:.2f` above its floor: the biLM has begun to prefer the
# endings it saw with each opening. What training for longer does, the experiment at the
# end of this notebook measures on your biLM.
# </details>

# %%
# Figure (fig-loss-curve): The loss per epoch (0: before training), on the training and the
# held-out sentences, against the floors; left the whole run, right its last epochs.
with torch.no_grad():
    before = untrained_model()
    held_out_before = pretrain.corpus_loss(before, corpus.HELDOUT, word2idx)
display(plots.plot_loss_curve(
    [float(loss), *history],  # epoch 0: before training
    [held_out_before, *held_out_history] if len(held_out_history) == len(history) else [],
    {"the phrases": phrases, "the sentences by heart": by_heart}, phrases_held_out,
    2 * math.log(len(word2idx))))
gap = held_out - phrases_held_out
say(f"after {len(history)} epochs: training loss {history[-1]:.3f} against its floors "
    f"{phrases:.3f} (the phrases) and {by_heart:.3f} (by heart); held-out loss "
    f"{held_out:.3f}, {gap:.3f} above its floor {phrases_held_out:.3f}")
glue("held-out-above-floor", gap)
glue("train-above-floor", history[-1] - phrases)
if len(held_out_history) == len(history):
    lowest = min(range(len(history)), key=held_out_history.__getitem__)
    glue("held-out-lowest", held_out_history[lowest])
    glue("held-out-lowest-epoch", lowest + 1)
    glue("held-out-last", held_out_history[-1])
glue("train-loss-over-seeds", NUMBERS["word"]["trained"]["train_loss"])
glue("seeds", SUMMARY["seeds"])

# %% [markdown]
# Reading: on the left of {numref}`fig-loss-curve`, the loss falls from $2 \ln V$ to near
# the floors in the first epochs, and the rest of the run is a thin line along them. The
# right panel zooms on the last epochs, where the story is. The training loss approaches
# the phrases' floor and ends {glue:text}`train-above-floor:.3f` above it: what the biLM has
# still to learn of the language. The held-out loss is lowest after epoch
# {glue:text}`held-out-lowest-epoch`, at {glue:text}`held-out-lowest:.3f`, and ends the run
# at {glue:text}`held-out-last:.3f`, {glue:text}`held-out-above-floor:.3f` above its own
# floor: where it rises while the training loss still falls, the biLM is learning its
# particular sentences instead of the language. Over the reference's
# {glue:text}`seeds` seeds the training loss ends at {glue:text}`train-loss-over-seeds:.3f`
# on average.
#
# ## What it learned
#
# Around every word of a sentence, the backward LM's most likely previous words (left) and
# the forward LM's most likely next words (right), with their probabilities, a guess under
# half a percent left out (`top_predictions` and `predictions_table`, given in
# `analyses.analysis`).

# %%
print(analysis.predictions_table(analysis.top_predictions(
    sections, model, "she put her money in the bank to keep it safe", word2idx, idx2word, k=3)))

# %% [markdown]
# Reading: after "bank", the forward LM spreads its guesses over the first words of the
# finance endings ("to", "before"), not over "of" or "by", which begin the river ones: to
# predict what follows it has to know which "bank" this is. That is why its states will
# carry the sense (section 6).
#
# ## Playground
#
# Type a sentence, as you would write it: it is read as section 2 reads it (lower case, no
# punctuation), a word the vocabulary lacks is shown as `<unk>`, which is all the biLM sees
# of it, and each direction's guesses around every word follow.

# %%
sentence = "We walked along the Bank, by the zebras!"
print(playground.predictions(sections, model, sentence, word2idx, idx2word, k=3))

# %% [markdown]
# ## Predict, then run: four times as many epochs
#
# The recipe is part of `train_bilm`'s interface. The cell below pre-trains your biLM from
# one seed with the course's recipe and with four times its epochs (half a minute), and
# measures both on the held-out sentences, beside the untrained biLM they start from and the
# reference's numbers.
#
# **Predict** before you run it, in one line in `prediction`: trained four times as long,
# will the held-out loss fall further, rise, or stay within seed noise?

# %%
prediction = ""  # your one line, written before you run this cell
predictions.run(sections, "longer", prediction)

# %% [markdown]
# <details><summary>Reading: open it once your cell has run</summary>
#
# Reading: trained longer, the held-out loss rises. The training loss goes on falling past
# the phrases' floor towards the corpus's own, and what the biLM gains there is which
# opening the training sentences paired with which ending: the held-out sentences pair them
# otherwise, and it now bets against them. This is why the course's recipe stops at ten
# epochs. The untrained control says how far both are from knowing nothing.
#
# </details>

# %% [markdown]
# ## Summary
#
# * The loss is forward plus backward cross-entropy over real tokens; it starts near
#   $2 \ln V$.
# * Its floor is the corpus's own uncertainty: a biLM that knows the phrases ends near
#   it on training and held-out sentences alike; one that knows the sentences by heart
#   goes lower on training and fails on held-out ones.
#
# ## Try
#
# 1. Train with the seed notebook's recipe, `pretrain.SEED_RECIPE` (one sentence at a time,
#    lr 0.001, 50 epochs; a minute or two): how does its held-out loss compare?
# 2. Change one held-out sentence's ending to an ending of the other sense, and compare its
#    loss with the others' (`corpus_loss` on a list of one sentence).
#
# ## Checks
#
# Section 4's tests, exactly as `make test SECTION=4` runs them on `IMPL`.

# %%
run_checks(IMPL, SECTION.name)
