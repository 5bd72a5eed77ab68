# %% [markdown]
# # ELMo, section by section: overview
#
# ELMo (Peters et al. 2018, *Deep contextualized word representations*) gives a word a
# vector that depends on its sentence: "bank" in *she put her money in the bank* and in
# *they sat on the bank of the river* get different vectors. It takes them from a
# **bidirectional language model** (biLM) pre-trained on raw text, and lets each task mix
# the biLM's layers with weights of its own.
#
# In these notebooks you build it yourself, one section at a time, on a toy corpus of 96
# sentences in which context decides the sense of four words: the biLM trains in seconds on
# a laptop's CPU, and its layers then tell "bank" of money from "bank" of a river.
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
#   \Theta_x, \overleftarrow{\Theta}_{LSTM}, \Theta_s) \Big)$$
#
# **Mixing the layers** (Sec. 3.2). For token $k$ the biLM gives $L + 1$ representations
# $h_{k,j}$: the token itself ($j = 0$) and the states of each LSTM layer $j = 1..L$, both
# directions side by side. A task collapses them into one vector with softmax-normalised
# weights $s_j$ and a scale $\gamma$, all learned for that task:
#
# $$\mathrm{ELMo}_k = \gamma \sum_{j=0}^{L} s_j \, h_{k,j}$$
#
# ## The path through the sections
#
# ```
# 1 setup      seeds and device: every run repeats exactly
# 2 corpus     96 sentences around bank, play, right, watch; the vocabulary
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
# Start Jupyter from the course's root folder (`jupyter lab` there), so that `exercises/`,
# where you write, is one click away from `notebooks/`. Open your section's file in Lab's
# editor beside its notebook: edit, save, then re-run the notebook's cells from the one that
# first calls your code (Run > Run Selected Cell and All Below). No restart is needed: each
# cell calls your functions as their file is now, and the cells that use a model make it
# afresh from your code.
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

from course.notebook import stubs_left
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
    print(f"hint: {section.hint}")
else:
    print("every section is written: run `make test` to see whether each passes its checks")

# %% [markdown]
# ## Summary
#
# * ELMo is a biLM's layers, mixed per task: pre-train once on raw text (sections 1-4),
#   read every layer out (section 5), see what the layers know (section 6), and let a task
#   choose its mix (section 7); then, as a bonus, build its token layer from characters
#   (section 8).
# * Each section's notebook runs your code from `exercises/` next to what it should show,
#   and ends with the section's checks.
#
# ## Once you are through
#
# 1. Change one opening of the corpus (section 2's `SENSE_PHRASES`) so that it fits both
#    senses of its word, and see how far the sense gap of section 6 shrinks.
# 2. Train the biLM for 40 epochs instead of 10 (section 4's recipe) and compare the
#    held-out loss and the sense gap: does memorising the sentences help or hurt?
