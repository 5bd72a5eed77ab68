# %% [markdown]
# # Section 5: extracting the layer-wise embeddings
#
# Once pre-trained, the biLM is frozen and read out. For token $k$ of a sentence, a biLM
# with $L$ LSTM layers gives $2L + 1$ vectors, which ELMo groups into $L + 1$ layers
# (Peters et al. 2018, eq. 2):
#
# $$R_k = \{\, x_k^{LM}, \overrightarrow{h}_{k,j}^{LM}, \overleftarrow{h}_{k,j}^{LM}
#   \mid j = 1, \ldots, L \,\} = \{\, h_{k,j}^{LM} \mid j = 0, \ldots, L \,\}$$
#
# with $h_{k,0}^{LM}$ the token layer and
# $h_{k,j}^{LM} = [\overrightarrow{h}_{k,j}^{LM}; \overleftarrow{h}_{k,j}^{LM}]$ for the LSTM
# layers. Here $L = 2$ and every layer is 512 wide:
#
# | layer | what | context |
# |---|---|---|
# | 0 | $[p; p]$, the projected word embedding twice | none: one vector per word |
# | 1 | first LSTM layer, forward and backward | the whole sentence |
# | 2 | second LSTM layer, forward and backward | the whole sentence |
#
# You write `get_elmo_embeddings(model, sentences, word2idx)`: run the biLM in eval mode
# without gradients on `<s> w_1 ... w_n </s>`, drop the two boundary positions so there is
# one row per word, and leave the model in the mode you found it. One sentence gives a
# tensor `(3, n_words, 512)`; a list gives a list of them.
#
# The biLM comes pre-trained by the reference's sections 1-4 (trained once, then cached in
# `build/cache`): this notebook is about reading it out, not training it.

# %% tags=["parameters"]
IMPL = "exercises"  # the implementation these cells run: your exercises/

# %%
import torch
from torch.nn import functional as F

from course.notebook import load_sections, run_checks
from course.pretrained import pretrained
from course.registry import find_section

SECTION = find_section("extract")
sections = load_sections(IMPL, SECTION.name)
extract = sections.extract
trained = pretrained(sections.package)
print(f"a biLM pre-trained for {len(trained.history)} epochs, final loss "
      f"{trained.history[-1]:.3f}")

# %% [markdown]
# ## Three layers per word

# %% tags=["first-call"]
embeddings = extract.get_elmo_embeddings(trained.model, "the bank gave him a loan",
                                         trained.word2idx)
print(tuple(embeddings.shape), "(layers, words, width)")

# %% [markdown]
# ## One word, two sentences
#
# "bank" of money and "bank" of a river. Layer 0 knows only the word, so its two vectors
# are the same; the LSTM layers have read the sentences, so theirs are not. Section 6 asks
# how far apart they move, over every pair of sentences.

# %%
money, river = "she put her money in the bank", "they sat on the bank of the river"
first, second = extract.get_elmo_embeddings(trained.model, [money, river], trained.word2idx)
a, b = first[:, money.split().index("bank")], second[:, river.split().index("bank")]
for layer, cosine in enumerate(F.cosine_similarity(a, b, dim=-1).tolist()):
    print(f"layer {layer}: cosine similarity of the two 'bank's = {cosine:.3f}")

# %% [markdown]
# ## The same input, the same embedding
#
# The LSTMs start from a zero state on every call, so nothing carries over from one call to
# the next, and embedding a sentence alone or in a batch gives the same vectors.

# %%
again = extract.get_elmo_embeddings(trained.model, "the bank gave him a loan", trained.word2idx)
print("identical on a second call:", torch.equal(embeddings, again))
print("model left in training mode:", trained.model.training)

# %% [markdown]
# ## Checks
#
# Section 5's tests, exactly as `make test SECTION=5` runs them on `IMPL`.

# %%
run_checks(IMPL, SECTION.name)
