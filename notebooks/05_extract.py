# %% [markdown]
# # Section 5: extracting the layer-wise embeddings
#
# Once pre-trained, the biLM is frozen and read out. For token $k$ of a sentence, a biLM
# with $L$ LSTM layers gives $2L + 1$ vectors, which ELMo groups into $L + 1$ layers
# (Peters et al. 2018, eq. 2):
#
# $$R_k = \{\, x_k^{LM}, \overrightarrow{h}_{k,j}^{LM}, \overleftarrow{h}_{k,j}^{LM}
#   \mid j = 1, \ldots, L \,\}
#   = \{\, h_{k,j}^{LM} \mid j = 0, \ldots, L \,\}$$ (eq-representations)
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
# The biLM comes pre-trained by sections 1-4 (trained once, then cached in `build/cache`):
# this notebook is about reading it out, not training it.

# %% tags=["parameters"]
IMPL = None  # None: your exercises/, or the folder that $ELMO_IMPL or the file .elmo-impl names

# %%
import torch
from torch.nn import functional as F

from analyses import playground, predictions
from analyses.notebook import load_sections, pretrained_bilm, run_checks, say
from course.registry import find_section

SECTION = find_section("extract")
sections = load_sections(IMPL, SECTION.name)
extract, corpus = sections.extract, sections.corpus
trained = pretrained_bilm(sections)

# %% [markdown]
# ## Three layers per word

# %% tags=["first-call"]
# Your code: exercises/s5_extract.py, get_elmo_embeddings first. Until it is written, this
# cell stops with its NotImplementedError. After each edit, save the file, then re-run
# this cell and the cells below it (Run > Run Selected Cell and All Below): no restart.
sentence = "she put her money in the bank to keep it safe"
embeddings = extract.get_elmo_embeddings(trained.model, sentence, trained.word2idx)
print(tuple(embeddings.shape), "(layers, words, width) for", len(sentence.split()), "words")

# %% [markdown]
# ## Row i is word i: decode it
#
# Layer 0 is the word alone, so each row of layer 0 can be decoded: it is exactly the
# layer-0 vector of one vocabulary entry. If the rows were off by one (`<s>` kept, or the
# last word dropped), the decoded words would be shifted against the sentence.

# %%
with torch.no_grad():
    everything = torch.arange(len(trained.idx2word)).unsqueeze(0)  # every entry, alone
    vocabulary = trained.model(everything).layers[0, 0]  # (V, 512): layer 0 of each entry
decoded = [trained.idx2word[int((vocabulary - row).abs().sum(-1).argmin())]
           for row in embeddings[0]]
print("the sentence:", sentence)
print("decoded:     ", " ".join(decoded))
print("equal:", decoded == sentence.split())

# %% [markdown]
# ## One word, three sentences: a same-sense control
#
# "bank" of money twice, with no phrase in common, and "bank" of a river. Layer 0 knows
# only the word, so it gives 1 for both pairs; the LSTM layers have read the sentences.
# Without the same-sense pair there is nothing to read the different-sense number
# against: any two different sentences move a word's vector.
#
# **Predict**: at layers 1 and 2, which pair will be more similar?
#
# <details><summary>Answer</summary>
#
# The two money "bank"s: their sentences share no phrase, but both openings and both
# endings are of the finance sense, and the biLM had to carry that sense to predict what
# follows "bank". The river "bank" is further away, more so at layer 2.
# </details>

# %%
money = "she put her money in the bank to keep it safe"
more_money = "we paid the money into the bank before it closed"
river = "they sat on the bank of the river"
vectors = [emb[:, s.split().index("bank")] for s, emb in zip(
    (money, more_money, river),
    extract.get_elmo_embeddings(trained.model, [money, more_money, river], trained.word2idx),
    strict=True)]
same = F.cosine_similarity(vectors[0], vectors[1], dim=-1)
different = F.cosine_similarity(vectors[0], vectors[2], dim=-1)
for layer in range(3):
    print(f"layer {layer}: money-money {float(same[layer]):.3f}   money-river "
          f"{float(different[layer]):.3f}   gap {float(same[layer] - different[layer]):+.3f}")

# %% [markdown]
# Reading: 1 and 1 at layer 0, by construction; at layers 1 and 2 the same-sense pair is
# clearly more similar than the different-sense pair. Section 6 measures this over every
# pair of sentences, and against the similarity of two unrelated words.
#
# ## The same input, the same embedding
#
# The LSTMs start from a zero state on every call, so nothing carries over from one call to
# the next, and embedding a sentence alone or in a batch gives the same vectors.

# %%
again = extract.get_elmo_embeddings(trained.model, sentence, trained.word2idx)
in_a_batch = extract.get_elmo_embeddings(trained.model, [river, sentence], trained.word2idx)[1]
print("identical on a second call:", torch.equal(embeddings, again))
print("largest difference alone vs in a batch:", float((embeddings - in_a_batch).abs().max()))
print("model left in training mode:", trained.model.training)

# %% [markdown]
# ## Playground
#
# Embed a sentence of your own, typed as you would write it, and compare one word of it with
# the same word in a corpus sentence, layer by layer. Case and punctuation are read as
# section 2 reads them, and a word the vocabulary lacks is read as `<unk>`.

# %%
mine, word = "The ducks sat by the Bank, of the water.", "bank"
print(playground.reading(sections, mine, trained.word2idx))
yours, theirs = extract.get_elmo_embeddings(trained.model, [mine, river], trained.word2idx)
cosines = F.cosine_similarity(yours[:, playground.position(sections, mine, word)],
                              theirs[:, playground.position(sections, river, word)], dim=-1)
say(f"cosine of {word!r} here and in {river!r}, layers 0 1 2: "
    + "  ".join(f"{float(c):.3f}" for c in cosines))

# %% [markdown]
# ## Predict, then run: extraction without the boundaries
#
# `get_elmo_embeddings(..., boundaries=False)` reads each sentence's words alone, without
# the `<s>` and `</s>` the biLM was pre-trained with. The cell below compares the target
# words of the training sentences (section 6's pairs) both ways on your pre-trained biLM:
# the mean cosine of the same-sense pairs minus that of the different-sense pairs, at layer
# 2, beside the untrained biLM it started from and the reference's numbers.
#
# **Predict** before you run it, in one line in `prediction`: without the boundaries, will
# the gap between the senses grow, shrink, or stay within seed noise?

# %%
prediction = ""  # your one line, written before you run this cell
predictions.run(sections, "boundaries", prediction)

# %% [markdown]
# <details><summary>Reading: open it once your cell has run</summary>
#
# Reading: without the boundaries the gap shrinks. The biLM learned its states from `<s>`
# onwards (and, backward, from `</s>`): each LSTM read a boundary first, every time. Fed the
# words alone, it starts from a state it was never trained to start from, and every later
# state drifts from the ones it learned to give, the sense it carries included. Extraction
# must read a sentence as pre-training did.
#
# </details>

# %% [markdown]
# ## Summary
#
# * Each word gets three 512-d vectors, its representations {eq}`eq-representations`:
#   layer 0 the word alone, layers 1 and 2 the word in its sentence, forward and backward
#   halves side by side.
# * Reading out is deterministic: the same sentence gives the same vectors, alone or in a
#   batch.
#
# ## Try
#
# 1. Slice your embeddings from position 0 instead of 1 (keeping `<s>`), and run the decode
#    cell again: what does it show, and would the same-sense control still look right?
# 2. Compare the forward half (`[..., :256]`) and the backward half (`[..., 256:]`) of
#    "bank" in `money` and `more_money`: which half tells the pair apart more?
#
# ## Checks
#
# Section 5's tests, exactly as `make test SECTION=5` runs them on `IMPL`.

# %%
run_checks(IMPL, SECTION.name)
