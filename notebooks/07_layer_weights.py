# %% [markdown]
# # Section 7: learned layer weights
#
# A downstream task does not pick one layer of the biLM: it learns how much of each to take
# (Peters et al. 2018, Sec. 3.2). For token $k$, with the biLM frozen,
#
# $$\mathrm{ELMo}_k = \gamma \sum_{j=0}^{L} s_j \, h_{k,j},
#   \qquad s = \mathrm{softmax}(w),$$
#
# with one scalar $w_j$ per layer and a scale $\gamma$, both learned with the task. The
# softmax keeps the weights positive and summing to 1, so they read as shares; $\gamma$ lets
# the task scale the whole vector to what suits it. Optionally each layer is first normalised
# to zero mean and unit variance, so that a weight measures what the task takes from a layer
# rather than how large that layer's numbers are. This is AllenNLP's `ScalarMix`.
#
# You write `ScalarMix` (its parameters, the weights, the mix, the layer normalisation) and
# `LayerWeightDemo`: a `ScalarMix` followed by a linear classifier, and its training loop.
# Two toy tasks then learn their own mix:
#
# * **word class** (syntax-like): the class of the corpus's unambiguous words, judged on word
#   types the classifier never saw;
# * **word sense** (meaning-like): which sense a polysemous word has, judged on sentences the
#   classifier never saw.
#
# The paper finds that syntax prefers the lower LSTM layer and meaning the higher one
# (Tables 5 and 6). Whether two toy tasks on 32 sentences show the same is what the table and
# the figure below measure, for one seed: read them, rather than expect it.

# %% tags=["parameters"]
IMPL = "exercises"  # the implementation these cells run: your exercises/

# %%
import torch
from IPython.display import display
from matplotlib_inline.backend_inline import set_matplotlib_formats

from course.notebook import load_sections, run_checks
from course.pretrained import pretrained
from course.registry import find_section

SECTION = find_section("layer_weights")
sections = load_sections(IMPL, SECTION.name)
layer_weights = sections.layer_weights
corpus = sections.corpus
trained = pretrained(sections.package)
set_matplotlib_formats("png")  # the section draws without pyplot: show its figures as images

# %% [markdown]
# ## The mix on three constant layers
#
# Layers filled with 1, 2 and 3. With $w = 0$ every weight is $1/3$ and the mix is their
# mean, 2; a large $w_2$ puts almost all the weight on layer 2.

# %% tags=["first-call"]
layers = torch.stack([torch.full((2, 4), value) for value in (1.0, 2.0, 3.0)])  # (L+1, N, D)
for initial in ([0.0, 0.0, 0.0], [0.0, 0.0, 5.0]):
    mix = layer_weights.ScalarMix(3, initial_scalar_parameters=initial)
    weights = [round(w, 3) for w in mix.weights.tolist()]
    print(f"w = {initial}: weights {weights}, mix {mix(layers)[0, 0].item():.3f}")

# %% [markdown]
# ## Two tasks, two mixes
#
# For each task, a `LayerWeightDemo` is trained on all but one fold of the data and judged
# on that fold, for each of four folds; the weights are averaged over the folds. A probe on
# each single layer alone gives a second view of where the task finds what it needs.

# %%
tasks = [layer_weights.word_class_task(trained.model, trained.word2idx, corpus.CORPUS),
         layer_weights.sense_task(trained.model, trained.word2idx)]
results = [layer_weights.evaluate_task(task, seed=0) for task in tasks]
for result in results:
    weights = ", ".join(f"{w:.2f}" for w in result.weights.tolist())
    probes = ", ".join(f"{a:.2f}" for a in result.layer_accuracy.tolist())
    print(f"{result.name:<11} weights s = [{weights}]  gamma = {result.gamma:.2f}  "
          f"accuracy {result.accuracy:.2f}  single-layer probes [{probes}]")

# %%
display(layer_weights.plot_layer_weights([results]))

# %% [markdown]
# ## Checks
#
# Section 7's tests, exactly as `make test SECTION=7` runs them on `IMPL`.

# %%
run_checks(IMPL, SECTION.name)
