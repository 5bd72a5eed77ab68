# %% [markdown]
# # Section 1: seeds and device
#
# Everything later in the course is random: the biLM's initial weights, the order in which
# pre-training visits the sentences. ELMo's claims are about what the trained layers hold,
# so a run you cannot repeat is a claim you cannot check. You write two functions:
#
# * `set_seed(seed)` seeds the three generators the course draws from (python's `random`,
#   numpy, torch) and asks cuDNN for deterministic LSTM kernels. After it, two runs with one
#   seed give bit-identical losses and embeddings on CPU.
# * `get_device(preferred=None)` decides where tensors live: `preferred` if given, else the
#   environment variable `ELMO_DEVICE`, else CUDA when there is a GPU, else the CPU; a name
#   that is not a device, or CUDA where there is none, is a clear error.
#
# The paper trained on GPUs for weeks; here everything fits on a CPU, and the same code
# moves to a GPU without change.

# %% tags=["parameters"]
IMPL = None  # None: your exercises/, or the folder that $ELMO_IMPL or the file .elmo-impl names

# %%
import random

import numpy as np
import torch

from analyses.notebook import load_sections, run_checks
from course.registry import find_section

SECTION = find_section("setup")
sections = load_sections(IMPL, SECTION.name)
setup = sections.setup

# %% [markdown]
# ## One seed, one sequence of draws
#
# Seed, draw from each generator, seed again, draw again: the two draws must be equal. The
# control is a third draw without seeding again: it must differ, or the "equal" says
# nothing.
#
# **Predict**: if `set_seed` seeded only torch, which of the three numbers would differ
# between the first draw and the second?
#
# <details><summary>Answer</summary>
#
# The first two: python's `random.random()` and numpy's `np.random.rand()` would go on from
# wherever their generators were. Only the torch draw would repeat.
# </details>

# %% tags=["first-call"]
# Your code: exercises/s1_setup.py, set_seed first. Until it is written, this
# cell stops with its NotImplementedError. After each edit, save the file, then re-run
# this cell and the cells below it (Run > Run Selected Cell and All Below): no restart.
def draws():
    return random.random(), float(np.random.rand()), torch.rand(2).tolist()


def as_text(drawn):
    """One draw of each generator, to six decimals."""
    python, numpy, from_torch = drawn
    return (f"python {python:.6f}   numpy {numpy:.6f}   torch "
            f"{', '.join(f'{x:.6f}' for x in from_torch)}")


setup.set_seed(0)
first = draws()
setup.set_seed(0)
again = draws()
unseeded = draws()  # the control: no set_seed before it
print("first:    ", as_text(first))
print("again:    ", as_text(again))
print("unseeded: ", as_text(unseeded))
print("first == again:", first == again, "  first == unseeded:", first == unseeded)

# %% [markdown]
# Reading: `first == again` is True and `first == unseeded` is False: the seed, not chance,
# decides the draws.
#
# The same holds for a model's initial weights, which is what makes a training run repeat;
# another seed gives other weights.

# %%
setup.set_seed(3)
a = torch.nn.LSTM(4, 4).weight_ih_l0
setup.set_seed(3)
b = torch.nn.LSTM(4, 4).weight_ih_l0
setup.set_seed(4)
c = torch.nn.LSTM(4, 4).weight_ih_l0
print("seed 3 twice, same initial weights:", torch.equal(a, b))
print("seed 3 and seed 4, same initial weights:", torch.equal(a, c))

# %% [markdown]
# ## Where the tensors live

# %%
print("this machine has CUDA:", torch.cuda.is_available())
print("get_device():", setup.get_device())
print('get_device("cpu"):', setup.get_device("cpu"))

# %% [markdown]
# Reading: without CUDA, `get_device()` must say `cpu`; with a GPU, `cuda`. Everything in
# this course runs on the CPU in seconds: the tensors are small.
#
# ## Playground
#
# Any seed of your own: drawn twice after `set_seed`, the same three numbers; a seed one
# apart, others. (numpy takes seeds from 0 to 2**32 - 1: what does yours do with -1?)

# %%
SEED = 2018
setup.set_seed(SEED)
mine = draws()
setup.set_seed(SEED)
print(f"seed {SEED}:  {as_text(mine)}\nagain:      {as_text(draws())}")
setup.set_seed(SEED + 1)
print(f"seed {SEED + 1}:  {as_text(draws())}")

# %% [markdown]
# ## Summary
#
# * One seed fixes python's, numpy's and torch's draws: a training run repeats exactly.
# * The device is chosen once, in one place, and can be overridden (`ELMO_DEVICE`).
#
# ## Try
#
# 1. Remove the numpy seeding from your `set_seed` and run the first cell again: which of
#    the three numbers changes?
# 2. Set `ELMO_DEVICE=cuda` on a machine without a GPU and call `get_device()`: is the
#    error clear?
#
# ## Checks
#
# Section 1's tests, exactly as `make test SECTION=1` runs them on `IMPL`.

# %%
run_checks(IMPL, SECTION.name)
