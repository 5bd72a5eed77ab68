# %% [markdown]
# # Section 6: does context change the embedding?
#
# The point of ELMo is that a word's vector depends on its sentence. The paper finds that
# the biLM's layers capture different things (Peters et al. 2018, Sec. 5.3): the first LSTM
# layer is the better one for part-of-speech tagging (syntax), the second for word sense
# disambiguation (meaning). This section looks at that on the toy corpus.
#
# For each polysemous word (bank, play, right, watch) and every two sentences that contain
# it, compare the word's two embeddings layer by layer with the cosine similarity
#
# $$\cos(a, b) = \frac{\langle a, b \rangle}{\lVert a \rVert \, \lVert b \rVert},
#   \qquad \cos(0, b) = 0 .$$
#
# The pairs fall into two groups: **same sense** (two "bank"s of money) and **different
# sense** (a "bank" of money and a "bank" of a river).
#
# * Layer 0 sees only the word, so its cosine is 1 for every pair, by construction.
# * The LSTM layers have read the sentence, so their cosines fall below 1.
# * The seed notebook's hope: as the layers go up, different-sense pairs drift further apart
#   than same-sense pairs. Whether a biLM trained on 32 sentences does that is what the table
#   and the figure below measure: read them, rather than expect it.
#
# You write `cosine_sim` (normalise both vectors before the dot product, and decide what a
# zero vector gives), `compare_contexts` (every pair of sentences with the same target word,
# the cosine of the word's embeddings at each layer) and `plot_context_comparison`.

# %% tags=["parameters"]
IMPL = "exercises"  # the implementation these cells run: your exercises/

# %%
import torch
from IPython.display import display
from matplotlib_inline.backend_inline import set_matplotlib_formats

from course.notebook import load_sections, run_checks
from course.pretrained import pretrained
from course.registry import find_section

SECTION = find_section("context")
sections = load_sections(IMPL, SECTION.name)
context = sections.context
trained = pretrained(sections.package)
set_matplotlib_formats("png")  # the section draws without pyplot: show its figures as images

# %% [markdown]
# ## Cosine similarity
#
# Parallel vectors give 1, opposite ones -1, orthogonal ones 0; a batch of vectors gives
# one cosine per row, and a zero vector is similar to nothing.

# %% tags=["first-call"]
a = torch.tensor([[1.0, 0.0], [1.0, 1.0], [0.0, 0.0]])
b = torch.tensor([[2.0, 0.0], [-1.0, -1.0], [3.0, 4.0]])
context.cosine_sim(a, b)

# %% [markdown]
# ## Every pair of sentences, layer by layer
#
# Mean cosine similarity per target word and sense group (the number of pairs in brackets).

# %%
comparison = context.compare_contexts(trained.model, trained.word2idx)
print(comparison.table())

# %% [markdown]
# ## The picture
#
# Left, every pair of sentences (grouped by word, same sense first); right, the two sense
# groups per layer, with one standard deviation over pairs.

# %%
display(context.plot_context_comparison(comparison))

# %% [markdown]
# ## Checks
#
# Section 6's tests, exactly as `make test SECTION=6` runs them on `IMPL`.

# %%
run_checks(IMPL, SECTION.name)
