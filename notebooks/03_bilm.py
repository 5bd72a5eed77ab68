# %% [markdown]
# # Section 3: the biLM
#
# A **forward** language model reads a sentence left to right and predicts, at each
# position, the next token; a **backward** one reads it right to left and predicts the
# previous token. The biLM is both, over one shared token representation (Peters et al.
# 2018, Sec. 3.1), and ELMo uses every layer of both:
#
# ```
# ids (T, B) --embedding--> x (T, B, 128) --projection--> p (T, B, 256)
#     layer 0  = [p ; p]                                         (T, B, 512)
#     forward  : p -> LSTM -> h_f1 -> LSTM (+ h_f1) -> h_f2  --> logits of token t+1
#     backward : reverse(p) -> LSTM -> LSTM (+ residual) -> reverse --> logits of token t-1
#     layer j  = [h_fj ; h_bj]                                   (T, B, 512), j = 1, 2
# ```
#
# The shapes are time-major: `T` positions (the sentence with `<s>` and `</s>`), `B`
# sentences. Four choices, each tested:
#
# * **Layer 0 is [p; p]**: the token on its own, duplicated so that all three layers are 512
#   wide and section 7 can mix them, as bilm-tf and AllenNLP do.
# * **Two stacks of single-layer LSTMs**: a 2-layer `nn.LSTM` returns only its top layer's
#   sequence, and ELMo needs each layer's. Layer 2 adds layer 1's output to its own (a
#   residual connection, Sec. 3.4).
# * **The backward stack reads each sentence reversed within its own length**: reversing the
#   padded tensor as a whole would put the padding first. `reverse_within_lengths` does it.
# * **No peeking**: the forward state at t has seen tokens 0..t only, the backward state
#   tokens t..T-1 only, so predicting t+1 (or t-1) is a real prediction.
#
# One simplification matters for what layer 0 is: **the paper's token layer is a character
# CNN** (2048 character n-gram filters, two highway layers, a projection to 512; Sec. 3.4),
# so it builds a vector for any word from its spelling, even one never seen in training.
# Here it is a word embedding of 128, projected to 256: on a toy corpus with no rare words
# a lookup table does the same job, but it knows nothing of a word it has not seen (it is
# `<unk>`).
#
# You write `reverse_within_lengths`, and the `BiLM` module: its layers in `__init__`,
# `forward`, and the `_run_stack` helper that runs one direction's stack.

# %% tags=["parameters"]
IMPL = None  # None: your exercises/, or the folder that $ELMO_IMPL or the file .elmo-impl names

# %%
import torch
from IPython.display import display
from matplotlib_inline.backend_inline import set_matplotlib_formats

from analyses import playground, plots, predictions
from analyses.notebook import load_sections, run_checks
from course.registry import find_section

SECTION = find_section("bilm")
sections = load_sections(IMPL, SECTION.name)
bilm = sections.bilm
corpus = sections.corpus
set_matplotlib_formats("png")  # the figures are drawn without pyplot: show them as images

# %% [markdown]
# ## Reversing within lengths
#
# Two sequences in one batch, the second of length 3 and padded with 0: each is reversed
# within its length, and the padding stays where it was.

# %% tags=["first-call"]
# Your code: exercises/s3_bilm.py, reverse_within_lengths first. Until it is written, this
# cell stops with its NotImplementedError. After each edit, save the file, then re-run
# this cell and the cells below it (Run > Run Selected Cell and All Below): no restart.
x = torch.tensor([[1, 2, 3, 4, 5], [6, 7, 8, 0, 0]]).T  # (T=5, B=2)
print(bilm.reverse_within_lengths(x, torch.tensor([5, 3])).T)

# %% [markdown]
# Reading: the first row is reversed whole; in the second, `6 7 8` became `8 7 6` and the
# two padding zeros stayed at the end. Reversing the padded tensor as a whole would have
# given `0 0 8 7 6`: the backward LSTM would read padding first.
#
# ## The model and its shapes
#
# **Predict**: for the batch below, two sentences of 7 and 5 words, what shapes will
# `layers` and `forward_logits` have?
#
# <details><summary>Answer</summary>
#
# The biLM reads `<s>` and `</s>` too, so T = 7 + 2 = 9 positions: `layers` is
# (3, 9, 2, 512), layer 0 and two LSTM layers; `forward_logits` is (9, 2, V), one score per
# vocabulary entry at each position.
# </details>

# %%
word2idx, idx2word = corpus.build_vocab(corpus.CORPUS)


def new_model():
    """A biLM as your file makes it now, the same weights each time (seed 0): each cell below
    makes its own, so re-running one after an edit runs your edited code."""
    torch.manual_seed(0)
    return bilm.BiLM(len(word2idx))


model = new_model()
print(model)
print(f"{sum(p.numel() for p in model.parameters()):,} parameters")

# %%
sentences = ["she put her money in the bank", "turn right at the corner"]
ids, lengths = corpus.pad_batch([corpus.encode(s, word2idx, add_boundaries=True)
                                 for s in sentences])
model = new_model()
with torch.no_grad():  # nothing here is trained
    out = model(ids, lengths)
print("ids            ", tuple(ids.shape), "(T, B)")
print("layers         ", tuple(out.layers.shape), "(L + 1, T, B, 512)")
print("forward_logits ", tuple(out.forward_logits.shape), "(T, B, vocabulary)")
print("backward_logits", tuple(out.backward_logits.shape), "(T, B, vocabulary)")

# %% [markdown]
# ## Padding changes nothing
#
# The second sentence is shorter; in the batch it is padded. Run alone, it must give the
# same layers at its real positions (up to floating-point rounding).

# %%
model = new_model()
alone_ids = ids[: lengths[1], 1:2]
with torch.no_grad():
    out = model(ids, lengths)
    alone = model(alone_ids).layers[:, :, 0]
in_batch = out.layers[:, : lengths[1], 1]
print("largest difference, alone vs in the batch:", float((alone - in_batch).abs().max()))
print("the size of the layers' values, for scale:", float(in_batch.abs().max()))

# %% [markdown]
# Reading: the difference is float32 rounding (around 1e-7; the tests allow 1e-5) against
# values up to about 2: padding changes nothing a sentence's real positions see.
#
# ## No peeking
#
# Change the last word of a sentence: the forward states before it must not move (they
# have not read it yet), and the backward states must (they read it first).

# %%
one = torch.tensor(corpus.encode("we walked along the bank by the water", word2idx,
                                 add_boundaries=True)).unsqueeze(1)
other = one.clone()
other[-2, 0] = word2idx["trees"]  # "... by the trees"
def by_position(ids, moved, layers):
    """A row per half: how far its states in `layers` moved at each position (T, 512)."""
    print(f"largest change at each position, {layers}:")
    print(f"{'':15}" + "".join(f"{word:>7}" for word in corpus.decode(ids, idx2word)))
    for name, half in (("forward half", moved[..., :256]), ("backward half", moved[..., 256:])):
        print(f"{name:<15}" + "".join(f"{float(x):7.3f}" for x in half.amax(-1)))


model = new_model()
with torch.no_grad():
    a, b = model(one).layers, model(other).layers
by_position(one[:, 0].tolist(), (a - b)[1:, :, 0].abs().amax(dim=0), "LSTM layers 1 and 2")

# %% [markdown]
# Reading: the forward half is exactly 0 at every position before the changed word and
# moves only from it on; the backward half moves everywhere up to it. An untrained biLM
# already obeys this: it is the architecture, not the training.
#
# The same check for every word of the sentence in turn: row k changes token k (to
# "trees"), and each column says how far the top layer's state at position t moved.

# %%
# Figure (fig-no-peeking): How far the top layer's state at each position moves when one
# token of the sentence changes, per direction: white is exactly 0.
model = new_model()
words = one[:, 0]
forward_moved = torch.zeros(len(words), len(words))
backward_moved = torch.zeros(len(words), len(words))
with torch.no_grad():
    reference = model(one).layers[-1, :, 0]  # (T, 512): the top layer
    for k in range(len(words)):
        changed = one.clone()
        changed[k, 0] = word2idx["trees"] if words[k] != word2idx["trees"] else word2idx["bank"]
        moved = (model(changed).layers[-1, :, 0] - reference).abs()
        forward_moved[k], backward_moved[k] = moved[:, :256].amax(-1), moved[:, 256:].amax(-1)
display(plots.plot_no_peeking(forward_moved.numpy(), backward_moved.numpy()))

# %% [markdown]
# Reading: in {numref}`fig-no-peeking`, the forward map is white (exactly 0) left of the
# diagonal: a forward state at t never moves when a later token changes. The backward map
# is its mirror: white right of the diagonal. On the diagonal both move: the state at t has
# read its own token, which is why the forward LM predicts t+1 from it, never t. A peeking
# biLM would colour a white triangle.
#
# ## Playground
#
# A sentence of your own, typed as you would write it: what the biLM reads (section 2's
# tokens, `<unk>` for a word the vocabulary lacks, `<s>` and `</s>` around them), and how far
# each position's layer-2 state moves when one word of it changes (to "trees"), per
# direction. A word the vocabulary lacks is `<unk>` whatever it was: change it to another
# unknown word and nothing moves.

# %%
sentence, changed_word = "The ducks swam by the Bank, near zebras!", "Bank"
print(playground.reading(sections, sentence, word2idx))
model = new_model()
mine = torch.tensor(corpus.encode(sentence, word2idx, add_boundaries=True)).unsqueeze(1)
other = mine.clone()
other[playground.position(sections, sentence, changed_word) + 1, 0] = word2idx["trees"]
with torch.no_grad():
    moved = (model(mine).layers[-1, :, 0] - model(other).layers[-1, :, 0]).abs()
by_position(mine[:, 0].tolist(), moved, "layer 2")

# %% [markdown]
# ## Predict, then run: the biLM without its residual connection
#
# `BiLM(..., residual=False)` builds the same biLM, the same parameters, with layer 2 its
# LSTM's output alone. The cell below pre-trains your biLM both ways from one seed (with the
# sections 1-4 it finds; a few seconds each) and measures what each has learned of its
# training sentences, its loss on them, beside the untrained biLM they start from and the
# reference's numbers.
#
# **Predict** before you run it, in one line in `prediction`: without the residual
# connection, will the loss on the training sentences end higher, lower, or within seed
# noise, and by about how much?

# %%
prediction = ""  # your one line, written before you run this cell
predictions.run(sections, "residual", prediction)

# %% [markdown]
# <details><summary>Reading: open it once your cell has run</summary>
#
# Reading: without the residual connection the loss on the training sentences ends higher:
# in the same training, the biLM fits its sentences less well. With the connection, layer 2
# starts as layer 1 plus what its LSTM adds, so that LSTM only has to learn a correction,
# and the gradient of the loss reaches layer 1 directly through the sum rather than only
# through the second LSTM. That is what residual connections are for: they make a stack of
# layers easier to train, which is why the paper adds one (Sec. 3.4). The untrained control
# is the loss of a biLM that knows nothing yet, near $2 \ln V$: both trained biLMs are far
# below it; the switch decides how far.
#
# </details>

# %% [markdown]
# ## Summary
#
# * The biLM is a shared token layer, a forward and a backward stack of LSTMs, and one
#   next-token and one previous-token head; ELMo uses every layer of both stacks.
# * The backward stack reads each sentence reversed within its own length, so padding is
#   never read before a word.
# * Layer 0 here is a word embedding; in the paper it is a character CNN.
#
# ## Try
#
# 1. Reverse the padded batch as a whole instead of within lengths, and run the "padding
#    changes nothing" cell again: how large does the difference get?
# 2. Count the parameters of each part (`model.embedding`, the LSTMs, the heads): which
#    part is the largest, and how would that change with a vocabulary of 800,000 words?

# %% [markdown]
# ## Checks
#
# Section 3's tests, exactly as `make test SECTION=3` runs them on `IMPL`.

# %%
run_checks(IMPL, SECTION.name)
