# %% [markdown]
# # Section 8 (bonus): the paper's token layer, a character CNN
#
# Sections 2-7 give each of the corpus's words an embedding of its own, and every other
# word, *banks*, *riverbank*, a typo, the one vector of `<unk>`. ELMo has no unknown words:
# its layer 0 is built from the token's **characters** (Peters et al. 2018, Sec. 3.4;
# AllenNLP's `_ElmoCharacterEncoder`, Gardner et al. 2018):
#
# ```
# word ──characters──> [BOW, c_1 .. c_n, EOW, PAD ...]      (C,)
#      ──char embedding──>                                  (C, 16)
#      ──1-D convolutions of widths 1..7, each filter's max over the windows──> (filters,)
#      ──ReLU, 2 highway layers──>                          (filters,)
#      ──projection──> p                                    (hidden,)   layer 0 = [p; p]
# ```
#
# | | the paper | here |
# |---|---|---|
# | characters per token | 50 | 16 (`MAX_CHARS`; longer words are cut) |
# | character ids | 262: 256 bytes, BOW, EOW, padding, `<s>`, `</s>` | 261, the same |
# | character embedding | 16 | 16 |
# | filters of widths 1-7 | 2048: 32 32 64 128 256 512 1024 | 172: 4 8 16 16 32 32 64 |
# | highway layers | 2 | 2 |
# | projection | to 512 | to 256, the LSTM width |
#
# A **highway layer** (Srivastava et al. 2015) lets the network choose, feature by feature,
# between carrying its input and transforming it:
#
# $$[f; g] = A x + b, \qquad t = \sigma(g),
#   \qquad y = t \odot x + (1 - t) \odot \mathrm{relu}(f),$$ (eq-highway)
#
# with the gate's bias starting at 1 so that a new layer mostly carries ($\sigma(1) = 0.73$).
#
# You write `char_ids` (the character mapper), `Highway`, `CharEncoder` and the constructor
# of `CharBiLM`: the biLM of section 3 whose `embedding` spells each word out and whose
# `token_projection` is a `CharEncoder`, so that section 3's `forward`, section 4's training
# and sections 5-7 run on it unchanged.

# %% tags=["parameters"]
IMPL = None  # None: your exercises/, or the folder that $ELMO_IMPL or the file .elmo-impl names

# %%
import torch
from IPython.display import display
from matplotlib_inline.backend_inline import set_matplotlib_formats

from analyses import analysis, playground, plots, predictions
from analyses.notebook import glue, load_sections, pretrained_bilm, run_checks, say
from analyses.reference_targets import SUMMARY
from course.registry import find_section

set_matplotlib_formats("png")  # the figures are drawn without pyplot: show them as images

SECTION = find_section("char_encoder")
sections = load_sections(IMPL, SECTION.name)
char_encoder, corpus, pretrain = sections.char_encoder, sections.corpus, sections.pretrain
context = sections.context

# %% [markdown]
# ## The character mapper
#
# Each token becomes `MAX_CHARS` ids: begin-of-word, its UTF-8 bytes, end-of-word, then
# padding. The sentence boundaries are one marker each; a letter outside ASCII is two bytes;
# a long word is cut.

# %% tags=["first-call"]
# Your code: exercises/s8_char_encoder.py, char_ids first. Until it is written, this
# cell stops with its NotImplementedError. After each edit, save the file, then re-run
# this cell and the cells below it (Run > Run Selected Cell and All Below): no restart.
for word in ("bank", "<s>", "naïve", "internationalisation"):
    print(f"{word!r:22} " + " ".join(f"{i:3}" for i in char_encoder.char_ids(word)))

# %% [markdown]
# Reading: `bank` is `1 103 102 115 112 2 0 ...` (b is byte 98, plus 5); `<s>` is
# `1 3 2 0 ...`; `ï` takes two ids; the long word keeps its first 14 bytes and still ends
# with EOW (2).
#
# ## The highway's two limits
#
# With the gate's bias far positive the gate $t$ of {eq}`eq-highway` is 1 and a layer gives
# its input back; far negative, the gate is 0 and it gives relu(f). At its starting bias of
# 1 it lies between.

# %%
torch.manual_seed(0)
x = torch.randn(3, 4)
for bias in (40.0, 1.0, -40.0):
    highway = char_encoder.Highway(4, num_layers=1)
    with torch.no_grad():
        highway.layers[0].bias[4:] = bias
        y = highway(x)
        f = torch.relu(x @ highway.layers[0].weight[:4].T + highway.layers[0].bias[:4])
    print(f"gate bias {bias:+5.0f}: |y - x| = {(y - x).abs().max():.3f}, "
          f"|y - relu(f)| = {(y - f).abs().max():.3f}")

# %% [markdown]
# Reading: at +40, y is x (the first distance 0); at -40, y is relu(f) (the second 0); at
# 1, neither: the layer carries about three quarters of its input.
#
# ## Padding never counts
#
# Each filter keeps its largest response over the windows within the token, so padding
# after the word changes nothing: the same word padded to 16 and to 24 characters.

# %%
torch.manual_seed(0)
encoder = char_encoder.CharEncoder(8).eval()
with torch.no_grad():
    for word in ("bank", "riverbank"):
        short, long = (encoder(char_encoder.words_to_chars([word], n)) for n in (16, 24))
        print(f"{word:10} padded to 16 and to 24: largest difference "
              f"{(short - long).abs().max():.1e}, largest entry {short.abs().max():.3f}")

# %% [markdown]
# Reading: no difference at all, against entries of a few tenths.
#
# ## A character biLM, pre-trained
#
# `CharBiLM(idx2word)` pre-trained on the corpus by section 4's `train_bilm`, with
# `CHAR_RECIPE`: section 4's recipe for 20 epochs instead of 10, since the character layer
# starts slower (its vectors must first learn to spell). Beside it, the word biLM of
# sections 2-4, and the floor of a biLM that knows which openings go with which endings.

# %%
trained_word = pretrained_bilm(sections)
trained_char = pretrained_bilm(sections, characters=True)
candidates = len([w for w in trained_word.word2idx if w not in corpus.SPECIAL_TOKENS])
glue("candidates", candidates)
glue("chance-rank", (candidates + 1) / 2)
floor = analysis.entropy_floor(sections, corpus.CORPUS + corpus.HELDOUT, corpus.CORPUS)
for name, trained in (("word biLM", trained_word), ("character biLM", trained_char)):
    heldout = pretrain.corpus_loss(trained.model, corpus.HELDOUT, trained.word2idx)
    token_layer = sum(p.numel() for p in (trained.model.embedding.parameters()))
    token_layer += sum(p.numel() for p in trained.model.token_projection.parameters())
    total = sum(p.numel() for p in trained.model.parameters())
    say(f"{name:15} {len(trained.history)} epochs: training loss {trained.history[-1]:.3f}, "
        f"held-out {heldout:.3f} (floor {floor:.3f}); {token_layer:,} parameters in its "
        f"token layer, {total:,} in all")

# %% [markdown]
# Reading: both end near the floor on the training sentences and about as far above it on
# the held-out ones (openings and endings they never saw together), the character biLM
# after twice the epochs (its training time is printed above, on one CPU thread). Its
# token layer is larger than the word embedding and its projection; both are small beside
# the LSTMs and the heads.
#
# ## Words the corpus lacks
#
# For each word the corpus lacks and a relative it has (`course.corpus.UNSEEN_RELATIVES`:
# inflections, a compound, a spelling variant, typos), the vocabulary ranked by the cosine
# of layer 0, each vector centred by the vocabulary's mean (`analysis.nearest_relatives`).
# Three models: the word biLM (an unseen word is `<unk>`), a character biLM that has not
# been trained (what spelling alone gives), and the trained one. Chance puts the relative
# at rank {glue:text}`chance-rank:.1f` of {glue:text}`candidates` on average.
#
# **Predict**: will training move the relatives closer, or is spelling enough?
#
# <details><summary>Answer</summary>
#
# Spelling does most of it: the untrained character CNN already puts *bank* first for
# *banks* and *bnak*, since they share most character n-grams. The word biLM ranks every
# relative as it ranks them for `<unk>`, near chance. Training does not improve the ranks
# on the whole: it pulls words towards others that stand in the same places in sentences
# (*bird* near *bank* and *park*), which is what the LSTMs need of layer 0.
# </details>

# %%
# Figure (fig-relative-ranks): Where each word the corpus lacks ranks its relative, for the
# word biLM, an untrained character biLM and the trained one, against chance (dashed).
torch.manual_seed(0)
untrained = char_encoder.CharBiLM(trained_word.idx2word).eval()
models = {"word biLM": trained_word.model, "untrained character biLM": untrained,
          "character biLM": trained_char.model}
ranked = {}
for name, model in models.items():
    found = ranked[name] = analysis.nearest_relatives(sections, model, trained_word.word2idx)
    firsts = sum(n.rank == 1 for n in found)
    mean_rank = sum(n.rank for n in found) / len(found)
    print(f"== {name}: relative first for {firsts} of {len(found)}, mean rank {mean_rank:.1f}")
    print(analysis.neighbours_table(found))
display(plots.plot_relative_ranks(ranked, (found[0].candidates + 1) / 2))

# %% [markdown]
# Reading, against chance (the dashed line of {numref}`fig-relative-ranks`): the word biLM
# has one ranking for every query,
# `<unk>`'s, and its mean rank is near chance. Both character models put half of the
# relatives first or more, the untrained one a few more than the trained one; *played* is
# nearer to *walked* (the same ending) than to *play* in both, and *riverbank* finds
# *river* only among its first ten or twenty. Where the two differ, the trained one's
# nearest words stand where the query's relative stands in a sentence (*bird*: *bank*,
# *park*, *boat*).
#
# ## Sections 6 and 7 on the character biLM
#
# The context comparison of section 6 (the same-sense minus different-sense gap of the
# target words, pooled, with the cosine of two different words as its baseline), side by
# side for the two biLMs, on the training sentences.

# %%
print(f"{'':16}{'gap, layers 0 1 2':<25}two different words, layers 0 1 2")
for name, trained in (("word biLM", trained_word), ("character biLM", trained_char)):
    comparison = context.compare_contexts(trained.model, trained.word2idx)
    baseline = analysis.anisotropy_baseline(sections, trained.model, trained.word2idx)
    gap = comparison.select(True).mean(0) - comparison.select(False).mean(0)
    print(f"{name:<16}" + "".join(f"{g:7.3f}" for g in gap.tolist()) + "    "
          + "".join(f"{b:7.3f}" for b in baseline.tolist()))
for layer in (1, 2):
    reading = SUMMARY["targets"][f"character biLM, held-out: pooled gap >= 0.1 at layer {layer}"]
    glue(f"char-gap-{layer}", reading["trained"])
glue("seeds", SUMMARY["seeds"])

# %% [markdown]
# Reading: layer 0 has no gap in either model, by construction; on this seed's training
# sentences layers 1 and 2 tell the senses apart in both, the character biLM by somewhat
# less. Over the reference's {glue:text}`seeds` seeds, the character biLM's gap on
# held-out sentences reaches the 0.1 that counts on {glue:text}`char-gap-1` seeds at layer
# 1 and {glue:text}`char-gap-2` at layer 2. Its vectors are more alike to begin with: two
# different words have a cosine well above the word biLM's at every layer (its layer 0
# shares the spelling's n-grams).
#
# Section 7's word-class task scores a probe on word *types* it never saw. For layer 0 of a
# word biLM an unseen type is just another vector it knows nothing of; a character layer
# sees its spelling. A single-layer probe on layer 0, for the three models, against chance.

# %%
for name, model in models.items():
    task = analysis.word_class_task(sections, model, trained_word.word2idx)
    accuracy, _ = analysis.cross_validate(sections, task, [0], seed=0)
    print(f"{name:25} layer 0: {accuracy:.3f} (chance {task.chance:.3f}, n = {len(task.labels)})")
spelling = SUMMARY["targets"]["character biLM: its layer-0 word-class probe beats the word biLM's"]
for field in ("trained", "untrained", "verdict"):
    glue(f"spelling-{field}", spelling[field])

# %% [markdown]
# Reading: on this seed the word biLM's layer 0 scores about chance, the character biLM's
# well above it, and the untrained character CNN lies between: spelling alone says
# something of a word's class (*-s*, *-ed*). Whether pre-training adds to it, one seed
# cannot say. Over the reference's {glue:text}`seeds` seeds, the character biLM's layer-0
# probe beats the word biLM's on {glue:text}`spelling-trained` pre-trained character biLMs
# and on {glue:text}`spelling-untrained` untrained ones: the verdict is
# "{glue:text}`spelling-verdict`", the spelling, not pre-training.
#
# ## Playground
#
# Any word, spelt as you like: the vocabulary's words nearest to it by layer 0, for the
# pre-trained character biLM (which reads the spelling) and the word biLM (which reads any
# word it lacks as `<unk>`, so every unknown word gets the same list).

# %%
for typed in ("Banks", "rivver", "watching", "teacher's", "zebra"):
    say("character biLM  " + playground.nearest_words(
        sections, trained_char.model, trained_word.word2idx, typed, spelling=True))
    say("word biLM       " + playground.nearest_words(
        sections, trained_word.model, trained_word.word2idx, typed))

# %% [markdown]
# ## Predict, then run: trigrams only
#
# `CharBiLM(..., filters=((3, 172),))` builds the character biLM with as many filters as
# the course's (172), all of width 3, where the course's span widths 1 to 7. The cell below
# pre-trains your character biLM both ways from one seed, with `CHAR_RECIPE` (the first
# time, half a minute or so), and ranks the relatives of the words the corpus lacks as
# above, beside the untrained character biLM and the reference's numbers.
#
# **Predict** before you run it, in one line in `prediction`: with trigrams only, will the
# relatives rank nearer, further, or the same within seed noise?

# %%
prediction = ""  # your one line, written before you run this cell
predictions.run(sections, "trigrams", prediction)

# %% [markdown]
# <details><summary>Reading: open it once your cell has run</summary>
#
# Reading: with trigrams only, the relatives rank much nearer. A filter of width 3 answers
# "does this word hold that trigram?", and a word and its relative (an inflection, a typo,
# a compound) share most of their trigrams, so their maxima mostly agree. Most of the
# course's filters are wider, reading five to seven characters at once, and one changed
# letter changes every wide window over it: those filters tell a word from its relatives.
# Which words a token layer puts near each other is decided by the widths it reads.
#
# </details>

# %% [markdown]
# ## Summary
#
# * A character CNN gives every word a vector of its own, from its bytes: no word is
#   unknown, and words that share n-grams start near each other.
# * The max over the windows within a token ignores the padding; the highway's gate chooses
#   between carrying and transforming, and starts by carrying.
# * Swapped in for the word embedding, it leaves the biLM, its training and every analysis
#   unchanged; its layer 0 tells the class of unseen word types better than a word
#   embedding can, trained or not: that is the spelling's doing, not pre-training's.
#
# ## Try
#
# 1. Set `highway_layers=0`: does the character biLM still reach the floor in 20 epochs?
# 2. Look up the nearest words of a typo of your own with `analysis.nearest_relatives(
#    sections, model, word2idx, [("yuor", "your")])`.
#
# ## Checks
#
# Section 8's tests, exactly as `make test SECTION=8` runs them on `IMPL`.

# %%
run_checks(IMPL, SECTION.name)
