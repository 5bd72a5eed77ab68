# %% [markdown]
# # Section 4: pre-training the biLM
#
# The biLM learns by predicting words. Over a sentence $t_1, \ldots, t_N$ it maximises the
# log likelihood of both directions together (Peters et al. 2018, eq. 1):
#
# $$\sum_{k=1}^{N} \Big( \log p(t_k \mid t_1, \ldots, t_{k-1};
#   \Theta_x, \overrightarrow{\Theta}_{LSTM}, \Theta_s)
#   + \log p(t_k \mid t_{k+1}, \ldots, t_N;
#   \Theta_x, \overleftarrow{\Theta}_{LSTM}, \Theta_s) \Big)$$
#
# The token representation $\Theta_x$ and the softmax $\Theta_s$ serve both directions
# (here each direction has its own output projection); only the LSTMs differ. Maximising
# the log likelihood is minimising the cross-entropy, so the loss you write is
#
# $$\mathcal{L} = \mathrm{CE}_{\text{forward}} + \mathrm{CE}_{\text{backward}}$$
#
# where the forward logits at position $t$ are scored against token $t + 1$, the backward
# logits at $t$ against token $t - 1$, each averaged over the real target tokens of the
# batch: padding never counts.
#
# You write `bilm_loss` and `train_bilm`, the loop: Adam, the corpus shuffled with a seeded
# generator every epoch, and after each epoch the loss of the whole corpus in eval mode
# (`corpus_loss`, given), which is what the loss curve shows. The default recipe trains on
# the 32 sentences as one batch, with learning rate 0.02, for 40 epochs.

# %% tags=["parameters"]
IMPL = "exercises"  # the implementation these cells run: your exercises/

# %%
import math

import matplotlib.pyplot as plt
import torch

from course.notebook import load_sections, run_checks
from course.registry import find_section

SECTION = find_section("pretrain")
sections = load_sections(IMPL, SECTION.name)
pretrain = sections.pretrain
setup, corpus, bilm = sections.setup, sections.corpus, sections.bilm

word2idx, idx2word = corpus.build_vocab(corpus.CORPUS)
setup.set_seed(0)
model = bilm.BiLM(len(word2idx))

# %% [markdown]
# ## The loss before training
#
# An untrained biLM guesses about uniformly over the vocabulary of $V$ words, so each
# direction's cross-entropy starts near $\ln V$, and the loss near $2 \ln V$.

# %% tags=["first-call"]
ids, lengths = corpus.pad_batch([corpus.encode(s, word2idx, add_boundaries=True)
                                 for s in corpus.CORPUS])
with torch.no_grad():
    loss = pretrain.bilm_loss(model(ids, lengths), ids, lengths)
print(f"loss of the untrained biLM: {float(loss):.3f}   2 ln V = {2 * math.log(len(word2idx)):.3f}")

# %% [markdown]
# ## Training
#
# On the CPU: the toy biLM trains in seconds, and the cells below stay on one device.

# %%
history = pretrain.train_bilm(model, corpus.CORPUS, word2idx, pretrain.DEFAULT_RECIPE,
                              seed=0, device="cpu", log_every=10, progress=False)

# %% [markdown]
# ## The loss curve
#
# The loss cannot reach 0: *the* is followed by many words in the corpus, so predicting the
# word after it stays uncertain however long the biLM trains.

# %%
losses = [float(loss), *history]  # epoch 0: before training
figure, axes = plt.subplots(figsize=(7, 4))
axes.plot(range(len(losses)), losses, marker=".")
axes.axhline(2 * math.log(len(word2idx)), color="grey", linestyle="--", label="2 ln V: guessing")
axes.set_xlabel("epoch")
axes.set_ylabel("forward CE + backward CE")
axes.set_title("Pre-training the biLM on the toy corpus")
axes.legend()
plt.show()

# %% [markdown]
# ## What it learned
#
# The forward LM's most likely next words after a prefix, and the backward LM's most likely
# previous words before a suffix.

# %%
def most_likely(logits: torch.Tensor, k: int = 3) -> list[str]:
    return [idx2word[i] for i in logits.topk(k).indices.tolist()]


model.eval()
with torch.no_grad():
    prefix = corpus.encode("she put her money in the", word2idx, add_boundaries=True)[:-1]
    forward_logits = model(torch.tensor(prefix).unsqueeze(1)).forward_logits
    print("after  'she put her money in the':", most_likely(forward_logits[-1, 0]))
    suffix = corpus.encode("of the river", word2idx, add_boundaries=True)[1:]
    backward_logits = model(torch.tensor(suffix).unsqueeze(1)).backward_logits
    print("before 'of the river':", most_likely(backward_logits[0, 0]))

# %% [markdown]
# ## Checks
#
# Section 4's tests, exactly as `make test SECTION=4` runs them on `IMPL`.

# %%
run_checks(IMPL, SECTION.name)
