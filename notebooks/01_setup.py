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
IMPL = "exercises"  # the implementation these cells run: your exercises/

# %%
import random

import numpy as np
import torch

from course.notebook import load_sections, run_checks
from course.registry import find_section

SECTION = find_section("setup")
sections = load_sections(IMPL, SECTION.name)
setup = sections.setup

# %% [markdown]
# ## One seed, one sequence of draws
#
# Seed, draw from each generator, seed again, draw again: the two draws must be equal.

# %% tags=["first-call"]
def draws():
    return random.random(), float(np.random.rand()), torch.rand(2).tolist()


setup.set_seed(0)
first = draws()
setup.set_seed(0)
again = draws()
print("first:", first)
print("again:", again)
print("equal:", first == again)

# %% [markdown]
# The same holds for a model's initial weights, which is what makes a training run repeat.

# %%
setup.set_seed(3)
a = torch.nn.LSTM(4, 4).weight_ih_l0
setup.set_seed(3)
b = torch.nn.LSTM(4, 4).weight_ih_l0
print("same initial weights:", torch.equal(a, b))

# %% [markdown]
# ## Where the tensors live

# %%
print("this machine has CUDA:", torch.cuda.is_available())
print("get_device():", setup.get_device())
print('get_device("cpu"):', setup.get_device("cpu"))

# %% [markdown]
# ## Checks
#
# Section 1's tests, exactly as `make test SECTION=1` runs them on `IMPL`.

# %%
run_checks(IMPL, SECTION.name)
