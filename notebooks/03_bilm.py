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
# You write `reverse_within_lengths`, and the `BiLM` module: its layers in `__init__`,
# `forward`, and the `_run_stack` helper that runs one direction's stack.

# %% tags=["parameters"]
IMPL = "exercises"  # the implementation these cells run: your exercises/

# %%
import torch

from course.notebook import load_sections, run_checks
from course.registry import find_section

SECTION = find_section("bilm")
sections = load_sections(IMPL, SECTION.name)
bilm = sections.bilm
corpus = sections.corpus

# %% [markdown]
# ## Reversing within lengths
#
# Two sequences in one batch, the second of length 3 and padded with 0: each is reversed
# within its length, and the padding stays where it was.

# %% tags=["first-call"]
x = torch.tensor([[1, 2, 3, 4, 5], [6, 7, 8, 0, 0]]).T  # (T=5, B=2)
print(bilm.reverse_within_lengths(x, torch.tensor([5, 3])).T)

# %% [markdown]
# ## The model and its shapes

# %%
word2idx, idx2word = corpus.build_vocab(corpus.CORPUS)
torch.manual_seed(0)
model = bilm.BiLM(len(word2idx))
print(model)
print(f"{sum(p.numel() for p in model.parameters()):,} parameters")

# %%
sentences = ["the bank gave him a loan", "turn right at the river"]
ids, lengths = corpus.pad_batch([corpus.encode(s, word2idx, add_boundaries=True)
                                 for s in sentences])
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
alone_ids = ids[: lengths[1], 1:2]
alone = model(alone_ids).layers[:, :, 0]
in_batch = out.layers[:, : lengths[1], 1]
print("largest difference, alone vs in the batch:", float((alone - in_batch).abs().max()))

# %% [markdown]
# ## Checks
#
# Section 3's tests, exactly as `make test SECTION=3` runs them on `IMPL`.

# %%
run_checks(IMPL, SECTION.name)
