# %% [markdown]
# # ELMo, section by section: overview
#
# ELMo (Peters et al. 2018, *Deep contextualized word representations*) gives a word a
# vector that depends on its sentence: "bank" in *she put her money in the bank* and in
# *they sat on the bank of the river* get different vectors. It takes them from a
# **bidirectional language model** (biLM) pre-trained on raw text, and lets each task mix
# the biLM's layers with weights of its own.
#
# In these notebooks you build it yourself, one section at a time, on a toy corpus of
# sentences in which context decides the sense of bank, play, right and watch: the biLM
# trains in seconds on a laptop's CPU, and its layers then tell "bank" of money from "bank"
# of a river.
#
# ## The two equations
#
# **Pre-training** (Sec. 3.1, eq. 1). A forward LSTM language model predicts each token from
# the tokens before it, a backward one from the tokens after it, and the biLM maximises both
# log likelihoods together over a sentence $t_1, \ldots, t_N$:
#
# $$\sum_{k=1}^{N} \Big( \log p(t_k \mid t_1, \ldots, t_{k-1};
#   \Theta_x, \overrightarrow{\Theta}_{LSTM}, \Theta_s)
#   + \log p(t_k \mid t_{k+1}, \ldots, t_N;
#   \Theta_x, \overleftarrow{\Theta}_{LSTM}, \Theta_s) \Big)$$ (eq-objective)
#
# **Mixing the layers** (Sec. 3.2). For token $k$ the biLM gives $L + 1$ representations
# $h_{k,j}$: the token itself ($j = 0$) and the states of each LSTM layer $j = 1..L$, both
# directions side by side. A task collapses them into one vector with softmax-normalised
# weights $s_j$ and a scale $\gamma$, all learned for that task:
#
# $$\mathrm{ELMo}_k = \gamma \sum_{j=0}^{L} s_j \, h_{k,j}$$ (eq-mix)
#
# ## The path through the sections
#
# ```
# 1 setup      seeds and device: every run repeats exactly
# 2 corpus     sentences around bank, play, right, watch; the vocabulary
# 3 bilm       embedding -> two LSTM stacks (forward, backward) -> next/previous-word logits
# 4 pretrain   forward LM loss + backward LM loss; the training loop; the loss curve
# 5 extract    three 512-d vectors per word: layer 0 (no context), layers 1 and 2
# 6 context    cosine similarity of one word across sentences, layer by layer
# 7 layers     ELMo_k = gamma * sum_j s_j h_kj, learned for two toy tasks
# 8 chars      (bonus) the paper's token layer from characters: no word is unknown
# ```
#
# Every result in the notebooks comes with what to read it against: chance, a floor, a
# control, or the paper's number. Questions marked **Predict** ask you to guess before you
# run a cell; click the answer open afterwards.
#
# ## How to use the notebooks
#
# Each section's notebook explains the idea, runs **your** code from `exercises/` on
# examples, draws what there is to see, and ends with that section's checks: the same tests,
# with the same messages, as `make test SECTION=<n>`. Until you have written a section, its
# notebook stops with `NotImplementedError: section <n> (...): ... is not implemented yet` at
# the first cell that calls your code: that is where to start.
#
# Start Jupyter with `make lab` in the course's root folder: it installs JupyterLab the
# first time and starts it there, so that `exercises/`, where you write, is one click away
# from `notebooks/`. Open your section's file in Lab's editor beside its notebook: edit,
# save, then re-run the notebook's cells from the one that first calls your code (Run > Run
# Selected Cell and All Below). No restart is needed: each cell calls your functions as
# their file is now, and the cells that use a model make it afresh from your code.
#
# A reading's numbers are written into its sentences as ``{glue:text}`name` ``, the same
# numbers its cells print above it; the course book shows each in its place, Jupyter its
# name.
#
# The cell below is each notebook's switch, `IMPL`: the folder it runs, your `exercises/`
# unless `$ELMO_IMPL` or the one-line file `.elmo-impl` at the course's root names another
# (then restart the kernel). A section's notebook runs that section of `IMPL`, and the
# sections before it as its tests see them, so it can be worked through as soon as the
# section is written.

# %% tags=["parameters"]
IMPL = None  # None: your exercises/, or the folder that $ELMO_IMPL or the file .elmo-impl names

# %% [markdown]
# ## Where you stand
#
# Every section, its notebook, its weight in the grade, and the functions of `IMPL` that
# still raise the stub's `NotImplementedError`. A section with nothing left to write is not
# necessarily right: its notebook's checks say whether it is.

# %%
from IPython.display import Markdown

from analyses.notebook import stubs_left
from course.registry import SECTIONS

rows = ["| # | section | notebook | points | still to write |", "|---|---|---|---|---|"]
for section in SECTIONS:
    left = ", ".join(f"`{name}`" for name in stubs_left(IMPL, section)) or "nothing"
    rows.append(f"| {section.number} | {section.title} | [{section.notebook}]"
                f"({section.notebook}) | {section.points}{' (bonus)' if section.bonus else ''} "
                f"| {left} |")
Markdown("\n".join(rows))

# %% [markdown]
# ## The next step
#
# Open the notebook of the first section that has something left to write, or run
# `make test` in a terminal for every section's checks at once.

# %%
unfinished = [section for section in SECTIONS if stubs_left(IMPL, section)]
if unfinished:
    section = unfinished[0]
    print(f"next: section {section.number}, {section.title}, in {section.notebook}")
    print(f"it asks: {section.question}")
else:
    print("every section is written: run `make test` to see whether each passes its checks")

# %% [markdown]
# ## Summary
#
# * ELMo is a biLM's layers, mixed per task: pre-train once on raw text with the objective
#   {eq}`eq-objective` (sections 1-4), read every layer out (section 5), see what the layers
#   know (section 6), and let a task choose its mix {eq}`eq-mix` (section 7); then, as a
#   bonus, build its token layer from characters (section 8), and read the same layers on
#   real English, WordNet's definitions and sense-labelled examples (notebook 09).
# * Each section's notebook runs your code from `exercises/` next to what it should show,
#   and ends with the section's checks.
#
# ## Once you are through
#
# Two experiments, as code that runs: once sections 1-6 pass, run the cells below (about
# half a minute each, on one CPU thread). Each trains a biLM from scratch with the
# sections that `IMPL`'s section 6 sees (in the course repository, the reference's 1-5 and
# your 6), then reads the sense gap of section 6: same-sense minus different-sense cosine
# of the target word, per layer. Change their settings and run them again.
#
# 1. **A phrase that fits both senses.** One opening of "bank"'s finance sense is replaced
#    by one of its river sense, so that the two senses share it. How far does the sense
#    gap of "bank" shrink, and in which half of the vectors?
# 2. **Training for longer.** 40 epochs instead of the recipe's 10: does memorising the
#    sentences help or hurt the held-out loss, and the held-out sense gap?

# %%
import dataclasses

from analyses import analysis
from analyses.notebook import glue, load_sections, pretrained_bilm
from course import corpus as given_corpus

experiments = load_sections(IMPL, "context")


def labels_of(phrases, held_out=False):
    """(sentence, word, sense) for every opening with every ending (as the corpus is built):
    training pairs, or the held-out ones (opening k with ending k)."""
    return [(f"{opening} {word} {ending}", word, sense)
            for (word, sense), (openings, endings) in phrases.items()
            for k, opening in enumerate(openings) for j, ending in enumerate(endings)
            if (k == j) == held_out]


def train(sentences, epochs=None):
    """A biLM trained from scratch (seed 0) on `sentences`; its vocabulary."""
    word2idx, _ = experiments.corpus.build_vocab(sentences)
    recipe = experiments.pretrain.DEFAULT_RECIPE
    if epochs is not None:
        recipe = dataclasses.replace(recipe, epochs=epochs)
    experiments.setup.set_seed(0)
    model = experiments.bilm.BiLM(len(word2idx))
    experiments.pretrain.train_bilm(model, sentences, word2idx, recipe, seed=0, device="cpu",
                                    log_every=0, progress=False)
    return model.eval(), word2idx


def sense_gap(model, word2idx, labels, word=None, half=None):
    """(layers,) same-sense minus different-sense cosine of `word` (None: every word),
    of the whole vectors or of one `half` ("forward" or "backward")."""
    if half is not None:
        comparison = analysis.compare_halves(experiments, model, word2idx, labels)[half]
    else:
        comparison = experiments.context.compare_contexts(model, word2idx, labels)
    gap = comparison.select(True, word).mean(0) - comparison.select(False, word).mean(0)
    return [float(g) for g in gap]


def per_layer(values):
    """Numbers per layer, in columns: '0.000  0.204  0.220'."""
    return "  ".join(f"{v:6.3f}" for v in values)


try:
    baseline = pretrained_bilm(experiments)
    experiments.context.compare_contexts(baseline.model, baseline.word2idx,
                                         given_corpus.SENSE_LABELS[:2])
    ready = True
except NotImplementedError as unfinished:
    ready = False
    print(f"These experiments need sections 1-6 written: {unfinished}")

# %%
if ready:
    phrases = dict(given_corpus.SENSE_PHRASES)
    finance, river = phrases["bank", "finance"], phrases["bank", "river"]
    shared = river[0][0]  # the river sense's first opening, now the finance sense's too
    phrases["bank", "finance"] = ((shared, *finance[0][1:]), finance[1])
    mixed = labels_of(phrases)
    model, word2idx = train([sentence for sentence, _, _ in mixed])
    bank = [label for label in given_corpus.SENSE_LABELS if label[1] == "bank"]
    mixed_bank = [label for label in mixed if label[1] == "bank"]
    print(f"'{shared} ...' now opens both senses of 'bank'. Its sense gap, layers 0 1 2:")
    print(f"{'':16}{'the corpus as it is':<24}with the shared opening")
    for half in (None, "forward", "backward"):
        name = "whole vectors" if half is None else f"{half} half"
        before = sense_gap(baseline.model, baseline.word2idx, bank, "bank", half)
        after = sense_gap(model, word2idx, mixed_bank, "bank", half)
        print(f"  {name:<14}{per_layer(before)}    {per_layer(after)}")
        glue(f"shared-{name.split()[0]}-kept", after[2] / before[2])

# %% [markdown]
# Reading: at layer 2, the whole vectors keep {glue:text}`shared-whole-kept:.0%` of their
# gap, the forward half {glue:text}`shared-forward-kept:.0%` and the backward half
# {glue:text}`shared-backward-kept:.0%`. The forward half of each layer has read only the
# opening when it reaches "bank", the backward half only "bank" and the ending: compare
# what each loses, and ask why a half that never reads the shared opening can lose anything
# (hint: what did training have to make of "bank" in the sentences whose opening no longer
# told the sense?). Try another word, or share an ending.

# %%
if ready:
    print("epochs  training loss  held-out loss   held-out sense gap, layers 0 1 2")
    for epochs in (experiments.pretrain.DEFAULT_RECIPE.epochs, 40):
        model, word2idx = ((baseline.model, baseline.word2idx)
                           if epochs == experiments.pretrain.DEFAULT_RECIPE.epochs
                           else train(given_corpus.CORPUS, epochs))
        held_out_loss = experiments.pretrain.corpus_loss(model, given_corpus.HELDOUT, word2idx)
        train_loss = experiments.pretrain.corpus_loss(model, given_corpus.CORPUS, word2idx)
        gap = sense_gap(model, word2idx, given_corpus.HELDOUT_LABELS)
        print(f"{epochs:>6}  {train_loss:13.3f}  {held_out_loss:13.3f}   {per_layer(gap)}")
        for name, value in (("train", train_loss), ("held-out", held_out_loss),
                            ("gap", gap[2])):
            glue(f"longer-{name}-{epochs}", value)

# %% [markdown]
# Reading: with four times the epochs the training loss goes on falling, from
# {glue:text}`longer-train-10:.3f` to {glue:text}`longer-train-40:.3f`, towards the by-heart
# floor, while the held-out loss rises from {glue:text}`longer-held-out-10:.3f` to
# {glue:text}`longer-held-out-40:.3f`: the biLM memorises which endings went with which
# openings in training. The held-out sense gap at layer 2 goes from
# {glue:text}`longer-gap-10:.3f` to {glue:text}`longer-gap-40:.3f`, on one seed: try other
# seeds before reading a direction into it, and 20 or 80 epochs.
