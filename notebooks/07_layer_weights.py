# %% [markdown]
# # Section 7: learned layer weights
#
# A downstream task does not pick one layer of the biLM: it learns how much of each to take
# (Peters et al. 2018, Sec. 3.2). For token $k$, with the biLM frozen,
#
# $$\mathrm{ELMo}_k = \gamma \sum_{j=0}^{L} s_j \, h_{k,j},
#   \qquad s = \mathrm{softmax}(w),$$ (eq-scalar-mix)
#
# with one scalar $w_j$ per layer and a scale $\gamma$, both learned with the task. The
# softmax keeps the weights positive and summing to 1, so they read as shares; $\gamma$ lets
# the task scale the whole vector to what suits it. Optionally each layer is first normalised
# to zero mean and unit variance, so that a weight measures what the task takes from a layer
# rather than how large that layer's numbers are. This is AllenNLP's `ScalarMix` (Gardner
# et al. 2018).
#
# You write `ScalarMix` (its parameters, the weights, the mix, the layer normalisation) and
# `ScalarMixProbe`: a `ScalarMix` followed by a linear classifier, and its training loop.
# Two toy tasks (given, in `analyses.analysis`) then learn their own mix, each scored on a
# held-out split that keeps it fair:
#
# * **word class** (syntax-like): the class of the corpus's unambiguous words (noun, verb,
#   ...), scored on word *types* the classifier never saw, so that it must read the word's
#   role rather than recognise the word;
# * **word sense** (meaning-like): which sense a polysemous word has, scored on sentences
#   whose opening and ending the classifier never saw, so that it must read the sense
#   rather than recognise the phrase.
#
# The paper reads the layers two ways. The **learned weights** of each task (Sec. 5.5,
# Fig. 2), and **single-layer probes** (Sec. 5.3): a model on one layer alone, where the
# first LSTM layer is better for POS tagging (Table 6: 97.3 against 96.8 for the second) and
# the second for word sense disambiguation (Table 5: 69.0 against 67.4). This notebook
# measures both, for one seed, on the pre-trained biLM and on its control, **the untrained
# biLM** of the same shape and seed: a layer's weight or probe says what pre-training put
# there only where it differs from the untrained biLM's. An untrained LSTM still carries its
# sentence's words, and the senses of a word come with different words.

# %% tags=["parameters"]
IMPL = None  # None: your exercises/, or the folder that $ELMO_IMPL or the file .elmo-impl names

# %%
import torch
from IPython.display import display
from matplotlib_inline.backend_inline import set_matplotlib_formats

from analyses import analysis, plots, predictions
from analyses.experiments import untrained_like
from analyses.notebook import glue, load_sections, pretrained_bilm, run_checks, say, targets_read
from analyses.reference_targets import NUMBERS, SUMMARY
from analyses.targets import interval
from course.registry import find_section

SECTION = find_section("layer_weights")
sections = load_sections(IMPL, SECTION.name)
layer_weights = sections.layer_weights
corpus = sections.corpus
trained = pretrained_bilm(sections)
control = untrained_like(sections)  # the same shape and initial weights, never trained
set_matplotlib_formats("png")  # the figures are drawn without pyplot: show them as images
glue("seeds", SUMMARY["seeds"])
for key, claim in (("sense-weights-layer-2", "word sense: learned weights prefer layer 2"),
                   ("sense-weights-layer-0", "word sense: learned weights put the least on "
                                             "layer 0"),
                   ("sense-probes-layer-2", "word sense: single-layer probes prefer layer 2"),
                   ("class-mix", "word class: the mix beats chance by >= 0.1"),
                   ("class-weights-lower", "word class: learned weights prefer a lower layer "
                                           "(0 or 1)"),
                   ("class-probes-lower", "word class: single-layer probes prefer a lower "
                                          "layer (0 or 1)")):
    for field in ("trained", "untrained", "effect_mean_sd", "verdict"):
        glue(f"{key}-{field}", SUMMARY["targets"][claim][field])
    mean, low, high = interval(SUMMARY["targets"][claim]["values"]["effect"])
    glue(f"{key}-effect-interval", f"{mean:+.3f} [{low:+.3f}, {high:+.3f}]")


def rounded(values):
    """Numbers per layer, to two decimals: '0.31 0.51 0.18'."""
    return " ".join(f"{float(v):.2f}" for v in values)

# %% [markdown]
# ## The mix on three constant layers
#
# Layers filled with 1, 2 and 3. With $w = 0$ every weight is $1/3$ and the mix
# {eq}`eq-scalar-mix` is their mean, 2; a large $w_2$ puts almost all the weight on layer 2.

# %% tags=["first-call"]
# Your code: exercises/s7_layer_weights.py, ScalarMix first. Until it is written, this
# cell stops with its NotImplementedError. After each edit, save the file, then re-run
# this cell and the cells below it (Run > Run Selected Cell and All Below): no restart.
layers = torch.stack([torch.full((2, 4), value) for value in (1.0, 2.0, 3.0)])  # (L+1, N, D)
for initial in ([0.0, 0.0, 0.0], [0.0, 0.0, 5.0]):
    mix = layer_weights.ScalarMix(3, initial_scalar_parameters=initial)
    weights = [round(w, 3) for w in mix.weights.tolist()]
    print(f"w = {initial}: weights {weights}, mix {mix(layers)[0, 0].item():.3f}")

# %% [markdown]
# Reading: 2 for uniform weights, the mean; just under 3 for $w_2 = 5$, where layer 2
# has weight $e^5 / (2 + e^5) = 0.987$.
#
# ## The two tasks
#
# The data each task is scored on, and what guessing would score: for word class, always
# the most frequent class; for word sense, one of the word's two senses, 0.5, which is also
# the best layer 0 can do, since it is one vector for both senses.

# %%
def tasks_of(biLM):
    """The two tasks, on the vectors of `biLM`."""
    return [analysis.word_class_task(sections, biLM.model, biLM.word2idx, corpus.CORPUS),
            analysis.sense_task(sections, biLM.model, biLM.word2idx)]


tasks, control_tasks = tasks_of(trained), tasks_of(control)
for task in tasks:
    counts = torch.bincount(task.labels, minlength=len(task.classes)).tolist()
    say(f"{task.name}: n = {len(task.labels)} tokens, chance {task.chance:.3f}; "
        f"{len(task.classes)} classes: "
        + ", ".join(f"{name} {count}" for name, count in zip(task.classes, counts, strict=True)))
    glue(f"{task.name.replace(' ', '-')}-chance", task.chance)

# %% [markdown]
# ## Two tasks, two mixes
#
# For each task, a `ScalarMixProbe` is trained on one part of the data and scored on a
# held-out fold it never saw, once for each of four folds; the weights are averaged over
# the folds. A probe on each single layer alone gives the second view.
#
# **Predict**: which layer will the word-sense task weigh most? And the word-class task?
#
# <details><summary>Answer</summary>
#
# Over the reference's {glue:text}`seeds` seeds: word sense weighs layer 2 most on
# {glue:text}`sense-weights-layer-2-trained` pre-trained biLMs and
# {glue:text}`sense-weights-layer-2-untrained` untrained ones, and pre-training adds
# {glue:text}`sense-weights-layer-2-effect-interval` to its lead (the mean over the seeds,
# its interval in brackets, Student's t; verdict: {glue:text}`sense-weights-layer-2-verdict`). It
# weighs layer 0 least on {glue:text}`sense-weights-layer-0-trained` pre-trained and
# {glue:text}`sense-weights-layer-0-untrained` untrained biLMs: that is the architecture's
# (layer 0 is one vector for both senses). Word class weighs a lower layer (0 or 1) most on
# {glue:text}`class-weights-lower-trained` pre-trained and
# {glue:text}`class-weights-lower-untrained` untrained biLMs: the architecture's too.
#
# The probes do not follow the paper. A single-layer probe of word class prefers a lower
# layer on only {glue:text}`class-probes-lower-trained` pre-trained biLMs: the paper's
# finding that the first layer is the better one for syntax is **missed** here. One of word
# sense prefers layer 2 on {glue:text}`sense-probes-layer-2-trained` pre-trained biLMs and
# {glue:text}`sense-probes-layer-2-untrained` untrained ones: "unclear", since the sense
# task is nearly perfect at layers 1 and 2 alike.
# </details>

# %%
found = {}
for which, biLM_tasks in (("pre-trained", tasks), ("untrained", control_tasks)):
    for task in biLM_tasks:
        print(f"{which} biLM, {task.name}: {analysis.NUM_FOLDS} folds of the mix and of a "
              "probe per layer ...", flush=True)
        result = analysis.evaluate_task(sections, task, seed=0)
        found[which, task.name] = result
        print(f"    weights s {rounded(result.weights)}, gamma {result.gamma:.2f}, "
              f"accuracy {result.accuracy:.2f} (chance {result.chance:.2f}, n = {result.n})")
        print(f"    single-layer probes {rounded(result.layer_accuracy)}")
results = [found["pre-trained", task.name] for task in tasks]
control_results = [found["untrained", task.name] for task in tasks]

# %%
# Figure (fig-layer-weights): The pre-trained biLM's learned weights and single-layer probes
# for each task, against chance and with the number of tokens scored.
display(plots.plot_layer_weights([results]))

# %%
# Figure (fig-weights-control): Each task's learned weights and single-layer probes, for the
# pre-trained biLM and beside them its untrained control (grey).
display(plots.plot_against_control([
    plots.ControlPanel(f"{t.name}: learned weights", "softmax weight $s_j$",
                       r.weights.tolist(), c.weights.tolist(), 1 / len(r.weights),
                       f"uniform, $1/(L+1)$ = {1 / len(r.weights):.2f}")
    for t, r, c in zip(tasks, results, control_results, strict=True)
] + [
    plots.ControlPanel(f"{t.name}: one probe per layer", "held-out accuracy",
                       r.layer_accuracy.tolist(), c.layer_accuracy.tolist(), r.chance,
                       "chance")
    for t, r, c in zip(tasks, results, control_results, strict=True)
]))

# %% [markdown]
# Reading, against chance, n and the control. {numref}`fig-layer-weights` is the pre-trained
# biLM alone; {numref}`fig-weights-control` sets each reading beside the untrained biLM's
# (grey):
#
# * **word sense** (chance 0.5): the layer-0 probe scores exactly chance for both biLMs: it
#   knows the word but not the sense. The untrained biLM's layers 1 and 2 already score well
#   above chance, because each sense's sentences are made of different words; what
#   pre-training adds is the rest of the way. The learned weights of the two biLMs are much
#   alike: an untrained biLM's mix also puts the least on layer 0 and spreads over layers 1
#   and 2, so "layer 0 least" is the architecture's, and the preference for layer 2 is a
#   small effect of pre-training ({glue:text}`sense-weights-layer-2-effect-interval`, the
#   mean over the seeds and its interval), seen only over seeds.
# * **word class** (chance {glue:text}`word-class-chance:.2f`): the untrained biLM's probes
#   and mix stay at or below chance, where the classifier must name the class of words it
#   has never seen; the pre-trained biLM's are well above it, though far from the paper's
#   97.3 (Table 6). That step is what pre-training put in the layers: the mix beats chance
#   by 0.1 on {glue:text}`class-mix-trained` pre-trained biLMs and
#   {glue:text}`class-mix-untrained` untrained ones.
#
# The cell below says it in this seed's numbers, then over the reference's seeds.

# %%
for task, result, untrained in zip(tasks, results, control_results, strict=True):
    say(f"{task.name}: the mix scores {result.accuracy:.2f} pre-trained against "
        f"{untrained.accuracy:.2f} untrained (chance {task.chance:.2f}); pre-training adds "
        f"{result.accuracy - untrained.accuracy:.2f}. Weights {rounded(result.weights)} "
        f"against {rounded(untrained.weights)}; probes per layer "
        f"{rounded(result.layer_accuracy)} against {rounded(untrained.layer_accuracy)}.")
means = NUMBERS["word"]
print()
say(f"Over the reference's {SUMMARY['seeds']} seeds, mean weights: word sense "
    f"{rounded(means['trained']['weights']['word_sense'])} pre-trained against "
    f"{rounded(means['untrained']['weights']['word_sense'])} untrained; word class "
    f"{rounded(means['trained']['weights']['word_class'])} against "
    f"{rounded(means['untrained']['weights']['word_class'])}.")
print(targets_read("word sense", "word class"))

# %% [markdown]
# ## Playground
#
# The mix on a task of your own: a sense task on two words only.

# %%
words = {corpus.tokenize(word)[0] for word in ("Bank", "play")}  # typed as you like
chosen = [label for label in corpus.SENSE_LABELS + corpus.HELDOUT_LABELS if label[1] in words]
mine = analysis.evaluate_task(
    sections, analysis.sense_task(sections, trained.model, trained.word2idx, chosen), seed=0)
print(f"bank and play only: weights {rounded(mine.weights)}, accuracy {mine.accuracy:.2f}, "
      f"n = {mine.n}")

# %% [markdown]
# ## Predict, then run: the mix without layer normalisation
#
# `ScalarMixProbe(..., do_layer_norm=False)` mixes the layers as they are, where the probe
# normalises each one by default. The cell below trains the word-class task's probes both
# ways on your pre-trained biLM, on the same folds as above, and reads the weight each mix
# gives layer 0, beside the untrained biLM and the reference's numbers.
#
# **Predict** before you run it, in one line in `prediction`: without normalisation, will
# the word-class task give layer 0 more weight, less, or the same within seed noise?

# %%
prediction = ""  # your one line, written before you run this cell
predictions.run(sections, "unnormalised", prediction)

# %% [markdown]
# <details><summary>Reading: open it once your cell has run</summary>
#
# Reading: without normalisation the word-class task gives layer 0 less weight. A weight
# multiplies its layer as it is, so it answers two questions at once: what the task takes
# from the layer, and how large the layer's values are. The cell below prints the spread of
# each layer's values over the task's tokens on your biLM: the larger a layer's values, the
# smaller the weight that gives it the same say. Normalised, a weight answers the first
# question alone, which is why the probe normalises by default and why the weights above
# are read as what a task takes from each layer.
#
# </details>

# %%
say("standard deviation of each layer's values over the word-class tokens, layers 0 1 2: "
    + "  ".join(f"{float(layer.std()):.3f}" for layer in tasks[0].layers))

# %% [markdown]
# ## Summary
#
# * ELMo's mix {eq}`eq-scalar-mix` is a softmax over one scalar per layer, times $\gamma$; a
#   task learns it with its classifier while the biLM stays frozen.
# * On the toy corpus, the meaning-like task weighs the top layer most and the token layer
#   least; the syntax-like task weighs a lower layer most. Against the untrained biLM,
#   though, most of that ordering is the architecture's: what pre-training adds shows in the
#   accuracies of the mix, much less in the weights, where only word sense's preference for
#   layer 2 is pre-training's, and only just.
# * The paper's probe finding for syntax, the first layer better than the second on its
#   own, is missed here: these tasks are too easy at layers 1 and 2 to rank them.
#
# ## Try
#
# 1. Train the mix without layer normalisation (`ScalarMixProbe(..., do_layer_norm=False)`
#    in a loop of your own): do the weights then follow the layers' sizes?
# 2. Fit with a smaller learning rate (`analysis.evaluate_task(sections, task, seed=0,
#    lr=0.01)`): how far do the weights move from uniform?
# 3. Evaluate the word-class task with folds by sentence instead of by word type, so the
#    classifier sees every word in training: what does layer 0 score then, and why?
#
# ## Checks
#
# Section 7's tests, exactly as `make test SECTION=7` runs them on `IMPL`.

# %%
run_checks(IMPL, SECTION.name)
