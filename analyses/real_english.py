"""ELMo on real English: a biLM pre-trained on WordNet's definitions, read on its
sense-labelled example sentences, the paper's Sec. 5.3 at a scale a CPU can do.

    python -m analyses.real_english [--impl exercises] [--seeds 5] [--scale check|cpu|full]

It runs on any implementation's sections, the learner's `exercises/` as well as a
reference: every function takes the sections (a `course.harness.Sections`) and uses only
what their contracts state (section 1's seeds and device, section 2's vocabulary and
encoding, section 3's `BiLM`, section 5's `get_elmo_embeddings`, section 7's `ScalarMix`
probe, section 8's `CharBiLM`).

The data (`data/wordnet/`, extracted from WordNet 3.0, with its licence): the definitions of
WordNet's synsets to pre-train on; and, never trained on, its example sentences, each of one
sense of a word (`Example`). For each seed, the biLM is pre-trained on the definitions
(`Scale`: on a CPU, what a few minutes buy; `full`, every definition for several epochs),
then read per layer, beside an untrained biLM of the same shape and seed
(`analyses.real_readings`):

    natural     the nearest-sense method on WordNet's examples as they come: does a layer
                beat a frequency prior?
    balanced    the same where every test synset has training examples: can a layer tell
                senses apart?
    pos         the part of speech of the word: a regularised linear probe on each layer,
                in folds that hold out lemmas; the untrained biLM also reads the word as
                <unk>, so that only its context is left
    rare        section 8's character biLM, on the test examples whose word the word biLM
                reads as <unk>

Every reading gives a score per test example, and `analyses.real_findings` turns the seeds'
scores into intervals and verdicts.

What makes pre-training at this vocabulary affordable on a CPU: an adaptive softmax
(`torch.nn.AdaptiveLogSoftmaxWithLoss`, one per direction) in place of the biLM's full
softmax heads, which here give the top LSTM states themselves (`nn.Identity`); batches of
sentences of about the same length, so that little is padding; seeds in parallel
processes. The trained biLMs are cached (`build/cache/`), keyed by the sections' sources,
the data and the scale, so a second run only measures.
"""

from __future__ import annotations

import argparse
import contextlib
import csv
import gzip
import hashlib
import io
import json
import math
import multiprocessing
import os
import resource
import sys
import threading
import time
from collections import Counter, defaultdict
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from functools import cache
from pathlib import Path
from typing import NamedTuple

import numpy as np
import torch
from torch import nn

from course.harness import Harness, Sections, sources_key
from course.long_command import Ticker, forking, ignore_in_worker, patiently, stopped
from course.registry import CACHE_DIR, CACHE_ENV_VAR, EXERCISES_DIR, ROOT, find_section, shown

from . import real_findings
from .real_findings import LAYERS, MASKED, PRETRAINED, UNTRAINED, reading
from .real_readings import (
    PARTS_OF_SPEECH,
    PENALTIES,
    Split,
    balanced_split,
    majority_right,
    natural_split,
    nearest_sense,
    pos_folds,
    probe_scores,
    restricted,
    sense_priors,
    sense_task,
    standardiser,
)

DATA_DIR = ROOT / "data" / "wordnet"
GLOSSES = DATA_DIR / "glosses.tsv.gz"
EXAMPLES = DATA_DIR / "examples.tsv.gz"
HELDOUT_EVERY = 100  # every 100th definition is held out, for the perplexities
SAMPLE_SEED = 1234  # which definitions a scale trains on: the same for every seed
PROBE_EPOCHS, PROBE_LR = 100, 0.05  # section 7's defaults, for its learned mix
SPEED_SECONDS = 12.0  # CPU seconds of the full scale's pre-training timed by a run, per biLM
# The code whose change changes the results (with the sections' sources and the data).
CODE_FILES = ("analyses/real_english.py", "analyses/real_readings.py", "analyses/real_findings.py")
# (lemma, part of speech) of the test sentences whose nearest examples the results show
# (the paper's Table 4), each a lemma with several senses in the examples
NEAREST_QUERIES = (("play", "verb"), ("bank", "noun"), ("run", "verb"), ("light", "adjective"),
                   ("line", "noun"), ("hold", "verb"))


@dataclass(frozen=True)
class Scale:
    """How large a run is.

    tokens:      training tokens sampled from the definitions (None: every one).
    epochs:      passes over them; a fraction stops that far into the last pass.
    vocab_size:  the most frequent words of all the training definitions (whatever the
                 sample), special tokens included; every other word is <unk>. One
                 vocabulary for every sample, so that perplexities compare.
    embedding_dim, hidden_dim: the biLM's sizes (section 3).
    batch_tokens: about how many tokens a batch holds (its sentences of about one length).
    lr:          Adam's learning rate.
    cutoffs:     the adaptive softmax's clusters: the most frequent cutoffs[0] words are
                 scored at every position, the rarer ones in clusters behind them.
    lemmas:      how many of the sense pool's lemmas are read (None: all).
    pos_examples: the part-of-speech probe's examples, drawn per seed from the pool.
    char_epochs: passes of the character biLM over the same tokens (0: none trained).
    char_batch_tokens: its batches' tokens: its character layer runs faster on larger ones.
    """

    name: str
    tokens: int | None
    epochs: float
    vocab_size: int
    embedding_dim: int
    hidden_dim: int
    batch_tokens: int
    lr: float
    cutoffs: tuple[int, ...]
    lemmas: int | None
    pos_examples: int
    char_epochs: float
    char_batch_tokens: int


SCALES = {
    # the tests: a few thousand tokens, seconds; what must hold holds even so
    "check": Scale("check", 5_000, 2, 1_000, 32, 64, 1_024, 0.005, (200,), 1_000, 1_000, 0, 0),
    # a CPU: what ten minutes on two cores buy, the measurements included (docs/analysis.md)
    "cpu": Scale("cpu", None, 0.4, 16_000, 64, 128, 512, 0.006, (2_000, 8_000), None, 3_000,
                 0.15, 2_048),
    # every definition, several epochs, a larger biLM: a GPU, or a CPU with hours
    "full": Scale("full", None, 6, 20_000, 128, 256, 8_192, 0.002, (2_000, 8_000), None,
                  3_000, 6, 8_192),
}


# --- the data ---------------------------------------------------------------------------------


class Example(NamedTuple):
    """One of WordNet's example sentences, the sense of one of its words known.

    synset, supersense: the word's sense (`bank.n.01`) and its lexicographer file
        (`noun.object`); `first_synset`, `first_supersense`: those of the lemma's first
        sense in WordNet, the most frequent one. `sense` is the synset's rank (1 = first).
    lemma, pos: the word's lemma and part of speech (noun, verb, adjective, adverb).
    position, word: the word's index among the sentence's words (`tokenize`) and the word.
    """

    synset: str
    lemma: str
    pos: str
    supersense: str
    sense: int
    first_synset: str
    first_supersense: str
    position: int
    word: str
    sentence: str


def _rows(path: Path) -> list[dict[str, str]]:
    text = gzip.decompress(path.read_bytes()).decode()
    return list(csv.DictReader(io.StringIO(text), delimiter="\t", quoting=csv.QUOTE_NONE))


@cache
def read_definitions() -> tuple[tuple[str, str], ...]:
    """(synset, definition) of every synset, in WordNet's order."""
    return tuple((row["synset"], row["definition"]) for row in _rows(GLOSSES))


@cache
def read_examples() -> tuple[Example, ...]:
    """Every sense-labelled example sentence, in WordNet's order."""
    return tuple(Example(**{**row, "sense": int(row["sense"]),
                            "position": int(row["position"])}) for row in _rows(EXAMPLES))


def data_digest() -> str:
    """A digest of the shipped data: a cached biLM is one trained on these files."""
    digest = hashlib.sha256()
    for path in (GLOSSES, EXAMPLES):
        digest.update(path.read_bytes())
    return digest.hexdigest()[:16]


def code_digest(sections: Sections) -> str:
    """A digest of what makes the results: `CODE_FILES`, the sections' sources and the data.
    Results whose digest differs from the code's are stale."""
    digest = hashlib.sha256()
    for name in CODE_FILES:
        digest.update((ROOT / name).read_bytes())
    digest.update(_sections_key(sections, _has_characters(sections)).encode())
    digest.update(data_digest().encode())
    return digest.hexdigest()[:16]


def sense_pool(examples: Sequence[Example], lemmas: int | None = None) -> list[Example]:
    """The examples of every (lemma, part of speech) whose examples hold two synsets or more:
    the words whose sense a reader must tell from the sentence. With `lemmas`, those of
    `lemmas` such lemmas only: `NEAREST_QUERIES`' and others drawn at random (the same every
    time)."""
    synsets = defaultdict(set)
    for example in examples:
        synsets[example.lemma, example.pos].add(example.synset)
    kept = [key for key in dict.fromkeys((e.lemma, e.pos) for e in examples)
            if len(synsets[key]) >= 2]
    if lemmas is not None:
        order = torch.randperm(len(kept), generator=torch.Generator().manual_seed(SAMPLE_SEED))
        drawn = [kept[i] for i in order.tolist() if kept[i] not in NEAREST_QUERIES]
        kept = [key for key in NEAREST_QUERIES if key in kept]
        kept += drawn[: lemmas - len(kept)]
    kept = set(kept)
    return [example for example in examples if (example.lemma, example.pos) in kept]


class GlossCorpus(NamedTuple):
    """The definitions as a pre-training corpus: `train` and `heldout` as lists of words,
    the vocabulary (`word2idx`, `idx2word`, section 2's numbering), `counts` (each
    vocabulary word's count in all the training definitions, the sentence boundaries and
    <unk> included), `all_tokens`, the words of all the training definitions, and
    `train_ids`, `train` encoded (`encoded`), once for every biLM."""

    train: list[list[str]]
    heldout: list[list[str]]
    word2idx: dict[str, int]
    idx2word: dict[int, str]
    counts: Counter
    all_tokens: int
    train_ids: list[list[int]]


def gloss_corpus(sections: Sections, scale: Scale) -> GlossCorpus:
    """Every `HELDOUT_EVERY`-th definition held out; of the others, a sample (the same for
    every seed) of about `scale.tokens` words to train on, in WordNet's order (all of them
    for None); the vocabulary: the `scale.vocab_size` - 4 most frequent words of all the
    training definitions (ties in alphabetical order), numbered by section 2's
    `build_vocab`."""
    corpus = sections.corpus
    definitions_ = [definition for _, definition in read_definitions()]
    heldout = [corpus.tokenize(definitions_[n])
               for n in range(0, len(definitions_), HELDOUT_EVERY)]
    rest = [words for words in (corpus.tokenize(definitions_[n]) for n in
                                range(len(definitions_)) if n % HELDOUT_EVERY != 0) if words]
    frequency = Counter(word for sentence in rest for word in sentence)
    kept = sorted(frequency, key=lambda w: (-frequency[w], w))[: scale.vocab_size - 4]
    word2idx, idx2word = corpus.build_vocab(kept)
    counts = Counter({word: frequency[word] for word in kept})
    counts[idx2word[corpus.UNK]] = sum(frequency.values()) - sum(counts.values())
    counts[idx2word[corpus.BOS]] = counts[idx2word[corpus.EOS]] = len(rest)
    train = rest
    if scale.tokens is not None:
        order = torch.randperm(len(rest), generator=torch.Generator().manual_seed(SAMPLE_SEED))
        chosen, total = [], 0
        for index in order.tolist():
            if total >= scale.tokens:
                break
            chosen.append(index)
            total += len(rest[index])
        train = [rest[i] for i in sorted(chosen)]
    return GlossCorpus(train, [words for words in heldout if words], word2idx, idx2word,
                       counts, sum(frequency.values()), encoded(sections, train, word2idx))


# --- the biLM with an adaptive softmax ------------------------------------------------------


class RealBiLM(nn.Module):
    """A biLM of section 3 (or section 8's `CharBiLM`) whose heads give the top LSTM states
    (`nn.Identity`), scored by one adaptive softmax per direction.

    The adaptive softmax wants the frequent words first: `ranks` maps each vocabulary id to
    its rank by training count (<pad>, never a target, last).
    """

    def __init__(self, bilm: nn.Module, corpus: GlossCorpus, scale: Scale, pad: int) -> None:
        super().__init__()
        bilm.forward_head = nn.Identity()
        bilm.backward_head = nn.Identity()
        self.bilm = bilm
        vocab_size = len(corpus.word2idx)
        by_count = sorted(corpus.word2idx, key=lambda w: (-corpus.counts.get(w, -1), w))
        by_count.remove(corpus.idx2word[pad])
        ranks = torch.full((vocab_size,), vocab_size - 1, dtype=torch.long)
        for rank, word in enumerate(by_count):
            ranks[corpus.word2idx[word]] = rank
        self.register_buffer("ranks", ranks)
        cutoffs = [c for c in scale.cutoffs if c < vocab_size - 1]
        self.softmax = nn.ModuleList(
            nn.AdaptiveLogSoftmaxWithLoss(scale.hidden_dim, vocab_size, cutoffs, div_value=4.0)
            for _ in range(2))

    def losses(self, ids: torch.Tensor, lengths: torch.Tensor
               ) -> tuple[torch.Tensor, torch.Tensor, int]:
        """(forward, backward) mean negative log likelihood in nats over the real targets
        of the batch (section 4's pairs: position t predicts t + 1 forwards, t - 1
        backwards), and how many targets each direction had."""
        output = self.bilm(ids, lengths)
        steps = torch.arange(ids.shape[0], device=ids.device).unsqueeze(1)
        valid = steps < lengths.to(ids.device).unsqueeze(0)
        pairs = valid[1:] & valid[:-1]  # (T - 1, B): both ends real
        forward = self.softmax[0](output.forward_logits[:-1][pairs],
                                  self.ranks[ids[1:][pairs]]).loss
        backward = self.softmax[1](output.backward_logits[1:][pairs],
                                   self.ranks[ids[:-1][pairs]]).loss
        return forward, backward, int(pairs.sum())


def make_bilm(sections: Sections, corpus: GlossCorpus, scale: Scale, seed: int,
              characters: bool = False, words: Sequence[str] = ()) -> RealBiLM:
    """A `RealBiLM` initialised by `seed`: section 3's `BiLM` of the scale's sizes, or with
    `characters` section 8's `CharBiLM`, whose words are the vocabulary's and then `words`
    (spelled out, so that it reads them as themselves rather than as <unk>)."""
    sections.setup.set_seed(seed)
    if characters:
        vocabulary = [corpus.idx2word[i] for i in range(len(corpus.idx2word))]
        bilm = sections.char_encoder.CharBiLM(vocabulary + list(words), scale.hidden_dim)
    else:
        bilm = sections.bilm.BiLM(len(corpus.word2idx), scale.embedding_dim, scale.hidden_dim,
                                  2, sections.corpus.PAD)
    return RealBiLM(bilm, corpus, scale, sections.corpus.PAD)


def buckets(sentences: Sequence[Sequence[int]], batch_tokens: int,
            generator: torch.Generator) -> list[list[int]]:
    """The sentences' indices in batches of sentences of about one length (sorted by length,
    ties shuffled), each of about `batch_tokens` tokens, the batches in shuffled order."""
    shuffled = torch.randperm(len(sentences), generator=generator).tolist()
    ordered = sorted(shuffled, key=lambda i: len(sentences[i]))
    batches, batch = [], []
    for index in ordered:
        batch.append(index)
        if len(batch) * len(sentences[index]) >= batch_tokens:
            batches.append(batch)
            batch = []
    if batch:
        batches.append(batch)
    return [batches[i] for i in torch.randperm(len(batches), generator=generator).tolist()]


def encoded(sections: Sections, sentences: Sequence[Sequence[str]],
            word2idx: dict[str, int]) -> list[list[int]]:
    """Each sentence as <s> w_1 .. w_n </s> ids (section 2's `encode`)."""
    return [sections.corpus.encode(" ".join(words), word2idx, add_boundaries=True)
            for words in sentences]


def pretrain(sections: Sections, model: RealBiLM, corpus: GlossCorpus, scale: Scale,
             seed: int, epochs: float, device: torch.device, name: str = "biLM",
             log: Callable[[str], None] = print, batch_tokens: int | None = None,
             cpu_budget: float | None = None, log_every: float = 15.0) -> dict:
    """Pre-train `model` on the corpus's training definitions with Adam (gradients clipped
    to norm 1) for `epochs` passes (a fraction: that share of the last pass's batches), or
    until this process has spent `cpu_budget` CPU seconds on it; batches from `buckets`,
    shuffled by `seed`. Logs its progress every `log_every` seconds. Returns {"history": the mean
    training loss (forward + backward NLL) of each pass, "seconds": wall clock,
    "cpu_seconds": this process's CPU time, "tokens": the targets per direction of one pass,
    "trained": the targets per direction trained on in all}."""
    sentences = corpus.train_ids
    generator = torch.Generator().manual_seed(seed)
    optimizer = torch.optim.Adam(model.parameters(), lr=scale.lr)
    model.to(device).train()
    pad_batch = sections.corpus.pad_batch
    history, started, cpu_started = [], time.perf_counter(), time.process_time()
    last_log, total, trained = started, sum(len(s) - 1 for s in sentences), 0
    for epoch in range(1, math.ceil(epochs) + 1):
        batches = buckets(sentences, batch_tokens or scale.batch_tokens, generator)
        batches = batches[: round(len(batches) * min(1.0, epochs - epoch + 1))]
        done, summed, directions = 0, 0.0, [0.0, 0.0]
        for batch in batches:
            if cpu_budget is not None and time.process_time() - cpu_started >= cpu_budget:
                break
            ids, lengths = pad_batch([sentences[i] for i in batch])
            forward, backward, count = model.losses(ids.to(device), lengths)
            loss = forward + backward
            optimizer.zero_grad()
            loss.backward()
            nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            optimizer.step()
            done, summed = done + count, summed + float(loss.detach()) * count
            directions = [d + float(x.detach()) * count
                          for d, x in zip(directions, (forward, backward), strict=True)]
            now = time.perf_counter()
            if now - last_log >= log_every:  # perplexity, the n-gram baselines' unit
                last_log = now
                log(f"  seed {seed}, {name}: pass {epoch}/{epochs:g}, {done / total:4.0%} of "
                    f"{total:,} tokens, training perplexity forward "
                    f"{math.exp(directions[0] / done):.1f}, backward "
                    f"{math.exp(directions[1] / done):.1f}, "
                    f"{(trained + done) / (now - started):,.0f} tokens/s")
        trained += done
        if done:
            history.append(summed / done)
        if cpu_budget is not None and time.process_time() - cpu_started >= cpu_budget:
            break
    model.eval()
    return {"history": history, "seconds": time.perf_counter() - started,
            "cpu_seconds": time.process_time() - cpu_started, "tokens": total,
            "trained": trained}


@torch.no_grad()
def perplexity(sections: Sections, model: RealBiLM, sentences: Sequence[Sequence[str]],
               word2idx: dict[str, int], batch_tokens: int = 4_096) -> dict[str, float]:
    """{"forward", "backward"}: the biLM's perplexity on `sentences`, exp of the mean NLL
    per target (the words, and </s> forwards or <s> backwards)."""
    encoded_ = encoded(sections, sentences, word2idx)
    device = next(model.parameters()).device
    model.eval()
    sums, count = [0.0, 0.0], 0
    for batch in buckets(encoded_, batch_tokens, torch.Generator().manual_seed(0)):
        ids, lengths = sections.corpus.pad_batch([encoded_[i] for i in batch])
        forward, backward, n = model.losses(ids.to(device), lengths)
        sums = [sums[0] + float(forward) * n, sums[1] + float(backward) * n]
        count += n
    return {"forward": math.exp(sums[0] / count), "backward": math.exp(sums[1] / count)}


def kneser_ney_discounts(counts: Sequence[int]) -> tuple[float, float, float]:
    """Modified Kneser-Ney's discounts (Chen and Goodman 1998) for n-grams seen once, twice
    and three times or more, from how many n-grams were seen exactly 1, 2, 3 and 4 times:
    with Y = n1 / (n1 + 2 n2), D_k = k - (k + 1) Y n_(k+1) / n_k."""
    n = Counter(c for c in counts if c <= 4)
    y = n[1] / (n[1] + 2 * n[2])
    return tuple(k - (k + 1) * y * n[k + 1] / n[k] for k in (1, 2, 3))


def kneser_ney_bigram(sentences: Sequence[Sequence[str]], vocabulary: int
                      ) -> tuple[Callable[[str, str], float], tuple[float, float, float]]:
    """An interpolated modified Kneser-Ney bigram model (Chen and Goodman 1998) counted on
    `sentences` (each <s> w_1 .. w_n </s>), over `vocabulary` words that can follow (every
    word but <pad> and <s>): (p(word | previous), its three discounts). Its lowest order,
    the continuation counts, is discounted in the same way and interpolated with the uniform
    distribution, so that no word has probability 0."""
    pairs = Counter((a, b) for s in sentences for a, b in zip(s, s[1:], strict=False))
    discounts = kneser_ney_discounts(list(pairs.values()))
    history, kept = Counter(), Counter()
    for (a, _), n in pairs.items():
        history[a] += n
        kept[a] += discounts[min(n, 3) - 1]  # what a's discounts give to the lower order
    continuation = Counter(b for _, b in pairs)
    low_discounts = kneser_ney_discounts(list(continuation.values()))
    types = len(pairs)
    uniform = sum(low_discounts[min(n, 3) - 1] for n in continuation.values()) / types
    uniform /= vocabulary

    def lower(word: str) -> float:
        n = continuation[word]
        return (n - low_discounts[min(n, 3) - 1] if n else 0.0) / types + uniform

    def probability(previous: str, word: str) -> float:
        if not history[previous]:
            return lower(word)
        seen = pairs[previous, word]
        return ((seen - discounts[min(seen, 3) - 1] if seen else 0.0)
                + kept[previous] * lower(word)) / history[previous]

    return probability, discounts


def ngram_perplexities(corpus: GlossCorpus) -> dict:
    """The held-out perplexity of a unigram model (add-one: the sample may lack a word of
    the vocabulary) and of an interpolated modified Kneser-Ney bigram model
    (`kneser_ney_bigram`), both counted on the training tokens with the biLM's vocabulary
    (every other word <unk>), both predicting the words and </s> as the biLM's forward
    direction does. The bigram's backward perplexity is not given: a bigram model reads a
    sentence's pairs the same either way round. {"unigram", "bigram", "discounts": the
    bigram's three}."""
    unk, begin, end = corpus.idx2word[1], corpus.idx2word[2], corpus.idx2word[3]

    def known(sentence: Sequence[str]) -> list[str]:
        return [begin, *(w if w in corpus.word2idx else unk for w in sentence), end]

    train = [known(s) for s in corpus.train]
    held = [known(s) for s in corpus.heldout]
    targets = sum(len(s) - 1 for s in held)
    unigram = Counter(w for s in train for w in s[1:])
    total, size = sum(unigram.values()), len(corpus.word2idx) - 2  # all but <pad> and <s>
    nll = -sum(math.log((unigram[w] + 1) / (total + size)) for s in held for w in s[1:])
    bigram, discounts = kneser_ney_bigram(train, size)
    bigram_nll = -sum(math.log(bigram(a, b)) for s in held
                      for a, b in zip(s, s[1:], strict=False))
    return {"unigram": math.exp(nll / targets), "bigram": math.exp(bigram_nll / targets),
            "discounts": list(discounts)}


# --- caching the pre-trained biLMs -------------------------------------------------------------


def _sections_key(sections: Sections, characters: bool) -> str:
    names = ["setup", "corpus", "bilm", *(["char_encoder"] if characters else [])]
    return sources_key(sections.package, [find_section(name) for name in names])


def cache_path(sections: Sections, scale: Scale, seed: int, characters: bool) -> Path | None:
    """Where the biLM of these sections, scale, seed and kind is kept (None: no cache)."""
    setting = os.environ.get(CACHE_ENV_VAR, str(CACHE_DIR))
    if not setting:
        return None
    key = hashlib.sha256(" ".join([
        _sections_key(sections, characters), torch.__version__, data_digest(),
        json.dumps(asdict(scale))]).encode()).hexdigest()[:16]
    kind = "char" if characters else "word"
    return Path(setting) / f"real-{kind}-{scale.name}-seed{seed}-{key}.pt"


def pretrained_real(sections: Sections, corpus: GlossCorpus, scale: Scale, seed: int,
                    device: torch.device, characters: bool = False, words: Sequence[str] = (),
                    log: Callable[[str], None] = print) -> tuple[RealBiLM, dict]:
    """The biLM of `seed`, pre-trained (`pretrain`), from the cache when it was trained
    before with the same sections, data and scale; (model on the CPU, in eval mode, its
    training record)."""
    model = make_bilm(sections, corpus, scale, seed, characters, words)
    path = cache_path(sections, scale, seed, characters)
    if path is not None and path.exists():
        saved = torch.load(path, map_location="cpu", weights_only=True)
        model.load_state_dict(saved["state_dict"])
        return model.eval(), {**saved["record"], "cached": True}
    record = pretrain(sections, model, corpus, scale, seed,
                      scale.char_epochs if characters else scale.epochs, device,
                      "character biLM" if characters else "word biLM", log,
                      scale.char_batch_tokens if characters else scale.batch_tokens)
    model.cpu().eval()
    if path is not None:
        path.parent.mkdir(parents=True, exist_ok=True)
        partial = path.with_suffix(f".{os.getpid()}.tmp")
        torch.save({"state_dict": model.state_dict(), "record": record}, partial)
        partial.replace(path)
    return model, {**record, "cached": False}


def full_scale_speed(sections: Sections, device: torch.device, characters: bool,
                     cpu_seconds: float = SPEED_SECONDS) -> dict:
    """What pre-training a biLM at the `full` scale costs here, from a measured fraction:
    its first batches, for about `cpu_seconds` of this process's CPU. {"tokens": the targets
    of one full pass, "trained": those of the fraction, "cpu_seconds" it took,
    "epochs": the full scale's passes}."""
    scale = SCALES["full"]
    corpus = gloss_corpus(sections, scale)
    model = make_bilm(sections, corpus, scale, 0, characters)
    record = pretrain(sections, model, corpus, scale, 0, 1, device, "full-scale timing",
                      lambda _: None, scale.char_batch_tokens if characters else None,
                      cpu_budget=cpu_seconds)
    return {"tokens": record["tokens"], "trained": record["trained"],
            "cpu_seconds": record["cpu_seconds"],
            "epochs": scale.char_epochs if characters else scale.epochs}


# --- reading the layers -------------------------------------------------------------------------


@torch.no_grad()
def embed(sections: Sections, model: RealBiLM, examples: Sequence[Example],
          word2idx: dict[str, int], batch: int = 256, masked: bool = False) -> torch.Tensor:
    """(L + 1, N, D) the target word's representation in each example, every layer
    (section 5's `get_elmo_embeddings`), as float32 on the CPU. With `masked`, the biLM
    reads the target word as <unk> (section 2's UNK), so that only its context is left.

    Raises:
        ValueError: the sections' `tokenize` does not put an example's word where the data
            says it is.
    """
    tokenize = sections.corpus.tokenize
    for example in examples:
        words = tokenize(example.sentence)
        if example.position >= len(words) or words[example.position] != example.word:
            raise ValueError(f"tokenize({example.sentence!r}) does not give {example.word!r} "
                             f"at position {example.position}: is section 2's tokenize the "
                             "one its docstring states?")
    get = sections.extract.get_elmo_embeddings
    order = sorted(range(len(examples)), key=lambda i: len(examples[i].sentence))
    found = torch.empty(0)
    for start in range(0, len(order), batch):
        chunk = order[start:start + batch]  # sentences of about one length: little padding
        sentences = [examples[i].sentence for i in chunk]
        if masked:
            sentences = [sections.corpus.encode(s, word2idx) for s in sentences]
            for ids, i in zip(sentences, chunk, strict=True):
                ids[examples[i].position] = sections.corpus.UNK
        layers = get(model.bilm, sentences, word2idx)
        vectors = torch.stack([e[:, examples[i].position].float().cpu()
                               for e, i in zip(layers, chunk, strict=True)], dim=1)
        if not found.numel():
            found = torch.empty(vectors.shape[0], len(examples), vectors.shape[-1])
        found[:, chunk] = vectors
    return found


def _numpy(found: dict[str, torch.Tensor]) -> dict[str, np.ndarray]:
    return {name: value.float().numpy() for name, value in found.items()}


def sense_scores(examples: Sequence[Example], split: Split,
                 layers: dict[str, torch.Tensor], priors: Sequence[str],
                 subset: torch.Tensor | None = None) -> dict[str, np.ndarray]:
    """The nearest-sense credit of every test example of `split` (of `subset`, (N,) bool,
    only) for each layer of each of `layers` ({model: (L + 1, N, D)}) and for each of the
    `priors` (`real_readings.sense_priors`)."""
    task = sense_task(examples, split)
    task = task if subset is None else restricted(task, subset)
    found = {name: value for name, value in sense_priors(task).items() if name in priors}
    found |= {reading(model, k): nearest_sense(task, value[k])
              for model, value in layers.items() for k in LAYERS}
    return _numpy(found)


def _split_counts(examples: Sequence[Example], split: Split, unknown: torch.Tensor) -> dict:
    task = sense_task(examples, split)
    return {"n": len(task.test), "answerable": float(task.answerable.float().mean()),
            "unknown": float(unknown[task.test].float().mean()),
            "lemmas": len({(examples[i].lemma, examples[i].pos) for i in task.test.tolist()})}


def pos_scores(layers: dict[str, torch.Tensor], labels: torch.Tensor, folds: torch.Tensor,
               sweep: bool = True) -> tuple[dict[str, np.ndarray], dict[str, list[float]]]:
    """The part-of-speech probe (`real_readings.probe_scores`) of each layer of each of
    `layers` ({model: (L + 1, N, D)}): ({reading: (N,) right or not} with "majority", and
    with `sweep`, for each penalty p, "<reading>@p"; {reading: the penalty chosen per
    fold})."""
    classes = len(PARTS_OF_SPEECH)
    found = {"majority": majority_right(labels, folds, classes)}
    chosen = {}
    for model, value in layers.items():
        for k in LAYERS:
            name = reading(model, k)
            found[name], every, chosen[name] = probe_scores(value[k], labels, folds, classes)
            if sweep:
                found |= {f"{name}@{p}": every[p] for p in range(len(PENALTIES))}
    return _numpy(found), chosen


def pos_mix(sections: Sections, layers: torch.Tensor, labels: torch.Tensor,
            folds: torch.Tensor, seed: int) -> tuple[np.ndarray, list[float]]:
    """Section 7's probe (the learned scalar mix of (L + 1, N, D) `layers`, then a
    classifier), fitted on each fold's other folds with section 7's defaults after
    `set_seed(seed + fold)`, its features standardised as the probes' are: ((N,) right or
    not, its weights s_j averaged over the folds)."""
    right = torch.zeros(len(labels), dtype=torch.bool)
    weights = []
    for fold in folds.unique().tolist():
        train, test = folds != fold, folds == fold
        standard = standardiser(layers[:, train])
        sections.setup.set_seed(seed + fold)
        probe = sections.layer_weights.ScalarMixProbe(layers.shape[0], layers.shape[-1],
                                                      len(PARTS_OF_SPEECH))
        probe.fit(standard(layers[:, train]), labels[train], epochs=PROBE_EPOCHS, lr=PROBE_LR)
        right[test] = probe.predict(standard(layers[:, test])) == labels[test]
        weights.append(probe.mix.weights.detach())
    return right.numpy().astype(np.float32), torch.stack(weights).mean(0).tolist()


# --- one seed, end to end ---------------------------------------------------------------------


def measure_seed(sections: Sections, scale: Scale, seed: int, device: torch.device,
                 corpus: GlossCorpus | None = None, log: Callable[[str], None] = print,
                 nearest: bool = False) -> tuple[dict, dict]:
    """Pre-train the biLMs of `seed` (or read them from the cache) and read their layers:
    (the seed's record, its scores: {test: {reading: (n,) per test example}}). The record
    holds "seed", "pretraining" ({"word", "char": history, seconds, cpu_seconds, tokens,
    trained, perplexity}), "tests" ({test: n, answerable, unknown, lemmas}), "pos"
    ({"penalties": {reading: the penalty chosen per fold}, "mix_weights"}) and, with
    `nearest`, "nearest" (`nearest_records`)."""
    corpus = corpus or gloss_corpus(sections, scale)
    pool = sense_pool(read_examples(), scale.lemmas)
    model, record = pretrained_real(sections, corpus, scale, seed, device, log=log)
    model, untrained = model.to(device), make_bilm(sections, corpus, scale, seed).to(device)
    found = {"seed": seed, "pretraining": {"word": {
        **{k: record[k] for k in ("history", "seconds", "cpu_seconds", "tokens", "trained")},
        "perplexity": perplexity(sections, model, corpus.heldout, corpus.word2idx)}}}
    layers = {PRETRAINED: embed(sections, model, pool, corpus.word2idx),
              UNTRAINED: embed(sections, untrained, pool, corpus.word2idx)}
    unknown = torch.tensor([e.word not in corpus.word2idx for e in pool])
    splits = {"natural": natural_split(pool, seed), "balanced": balanced_split(pool, seed)}
    priors = {"natural": ("chance", "most_frequent", "first_sense"),
              "balanced": ("chance", "most_frequent")}
    scores = {name: sense_scores(pool, split, layers, priors[name])
              for name, split in splits.items()}
    found["tests"] = {name: _split_counts(pool, split, unknown) for name, split in splits.items()}
    chosen, folds = pos_folds(pool, seed, scale.pos_examples)
    labels = torch.tensor([PARTS_OF_SPEECH.index(pool[i].pos) for i in chosen.tolist()])
    pos_layers = {PRETRAINED: layers[PRETRAINED][:, chosen],
                  UNTRAINED: layers[UNTRAINED][:, chosen],
                  MASKED: embed(sections, untrained, [pool[i] for i in chosen.tolist()],
                                corpus.word2idx, masked=True)}
    scores["pos"], penalties = pos_scores(pos_layers, labels, folds)
    scores["pos"]["mix"], weights = pos_mix(sections, pos_layers[PRETRAINED], labels, folds, seed)
    found["tests"]["pos"] = {"n": len(chosen), "answerable": 1.0,
                             "unknown": float(unknown[chosen].float().mean()),
                             "lemmas": len({pool[i].lemma for i in chosen.tolist()})}
    found["pos"] = {"penalties": penalties, "mix_weights": weights}
    if scale.char_epochs and _has_characters(sections):
        found["pretraining"]["char"], rare = measure_characters(
            sections, scale, seed, device, corpus, pool, splits["balanced"], layers[PRETRAINED],
            (chosen, folds, labels), log)
        found["tests"] |= rare.pop("tests")
        scores |= rare
    if nearest:
        found["nearest"] = nearest_records(pool, layers[PRETRAINED], splits["balanced"])
    return found, scores


def measure_characters(sections: Sections, scale: Scale, seed: int, device: torch.device,
                       corpus: GlossCorpus, pool: list[Example], split: Split,
                       word_layers: torch.Tensor, pos_task: tuple[torch.Tensor, ...],
                       log: Callable[[str], None]) -> tuple[dict, dict]:
    """The character biLM of `seed`, pre-trained and untrained, and the word biLM, on the
    test examples whose word the word biLM reads as <unk>: (the character biLM's
    pre-training record, {"rare_sense": the balanced split's scores on those test examples,
    "rare_pos": the probe's, trained and scored on those examples only, "tests": their
    counts}). The character biLM spells out every word, in the vocabulary or not."""
    extra = sorted({e.word for e in pool} - set(corpus.word2idx))
    chars, record = pretrained_real(sections, corpus, scale, seed, device, True, extra, log=log)
    untrained = make_bilm(sections, corpus, scale, seed, True, extra)
    spelled = {**corpus.word2idx, **{w: len(corpus.word2idx) + n for n, w in enumerate(extra)}}
    unknown = torch.tensor([e.word not in corpus.word2idx for e in pool])
    rare_lemmas = {(pool[i].lemma, pool[i].pos) for i in (unknown & split.test).nonzero()
                   .flatten().tolist()}
    read = torch.tensor([(e.lemma, e.pos) in rare_lemmas and bool(split.train[i] | split.test[i])
                         for i, e in enumerate(pool)]).nonzero().flatten()
    chosen, folds, labels = pos_task
    rare_pos = chosen[unknown[chosen]]
    both = torch.cat([read, rare_pos]).unique()  # what the character biLMs embed, once
    where = torch.full((len(pool),), -1, dtype=torch.long)
    where[both] = torch.arange(len(both))
    spelled_layers = {name: embed(sections, bilm.to(device), [pool[i] for i in both.tolist()],
                                  spelled) for name, bilm in (("char", chars),
                                                              ("char_untrained", untrained))}
    sub = [pool[i] for i in read.tolist()]
    sense_layers = {PRETRAINED: word_layers[:, read],
                    **{name: value[:, where[read]] for name, value in spelled_layers.items()}}
    rare = {"rare_sense": sense_scores(sub, Split(split.train[read], split.test[read]),
                                       sense_layers, ("chance",), unknown[read])}
    keep = unknown[chosen]
    pos_layers = {PRETRAINED: word_layers[:, rare_pos],
                  **{name: value[:, where[rare_pos]] for name, value in spelled_layers.items()}}
    rare["rare_pos"], _ = pos_scores(pos_layers, labels[keep], folds[keep], sweep=False)
    rare["tests"] = {"rare_sense": {"n": len(rare["rare_sense"]["chance"]), "answerable": 1.0,
                                    "unknown": 1.0, "lemmas": len(rare_lemmas)},
                     "rare_pos": {"n": int(keep.sum()), "answerable": 1.0, "unknown": 1.0,
                                  "lemmas": len({pool[i].lemma for i in rare_pos.tolist()})}}
    return {**{k: record[k] for k in ("history", "seconds", "cpu_seconds", "tokens", "trained")},
            "perplexity": perplexity(sections, chars, corpus.heldout, corpus.word2idx)}, rare


def _has_characters(sections: Sections) -> bool:
    """Whether section 8 is written: its `CharBiLM` builds."""
    try:
        sections.char_encoder.CharBiLM(["<pad>", "<unk>", "<s>", "</s>", "a"], 8)
    except NotImplementedError:
        return False
    return True


# --- the nearest examples (the paper's Table 4) ------------------------------------------------


def nearest_examples(vectors: torch.Tensor, bank: torch.Tensor, k: int = 5,
                     centre: torch.Tensor | None = None) -> list[tuple[list[int], list[float]]]:
    """For each layer of `vectors` (L + 1, D), one query's representation, the `k` rows of
    `bank` (L + 1, N, D) nearest by cosine, every vector centred by `centre` (L + 1, D;
    default: the bank's mean): (their indices, their cosines), per layer. Equal cosines
    (layer 0 of one word) keep the bank's order."""
    centre = bank.mean(dim=1) if centre is None else centre
    found = []
    for layer in range(bank.shape[0]):
        cosines = nn.functional.cosine_similarity(bank[layer] - centre[layer],
                                                  (vectors[layer] - centre[layer]).unsqueeze(0),
                                                  -1)
        order = torch.sort(cosines, descending=True, stable=True)
        found.append((order.indices[:k].tolist(), order.values[:k].tolist()))
    return found


def nearest_records(examples: Sequence[Example], layers: torch.Tensor, split: Split,
                    queries: Sequence[tuple[str, str]] = NEAREST_QUERIES, k: int = 5
                    ) -> list[dict]:
    """For the first test example of each (lemma, pos) of `queries` in `split` (the
    balanced one: every test synset has training examples), its `k` nearest training
    examples of the same lemma per layer."""
    found = []
    for lemma, pos in queries:
        same = [i for i, e in enumerate(examples) if (e.lemma, e.pos) == (lemma, pos)]
        tests = [i for i in same if split.test[i]]
        train = [i for i in same if split.train[i]]
        if not tests or len(train) < 2:
            continue
        query = examples[tests[0]]
        layers_found = []
        centre = layers[:, split.train].mean(dim=1)
        for indices, cosines in nearest_examples(layers[:, tests[0]], layers[:, train], k,
                                                 centre):
            layers_found.append([{"sentence": examples[train[i]].sentence,
                                  "synset": examples[train[i]].synset, "cosine": c}
                                 for i, c in zip(indices, cosines, strict=True)])
        found.append({"sentence": query.sentence, "word": query.word, "synset": query.synset,
                      "layers": layers_found})
    return found


# --- reading any sentence: the notebook ---------------------------------------------------------


class Reader(NamedTuple):
    """A pre-trained word biLM ready to read sentences: `model`, the `corpus` it was trained
    on (its vocabulary), its `scale`, and `source`, where it came from."""

    model: RealBiLM
    corpus: GlossCorpus
    scale: Scale
    source: str


def reader(sections: Sections, device: torch.device | None = None) -> Reader:
    """The cpu-scale word biLM of seed 0 of these sections when a run of the pipeline
    (`make replicate-real` for `exercises/`) trained it: it is then in the cache; otherwise
    the check-scale biLM, trained now in a few seconds."""
    device = torch.device("cpu") if device is None else device
    for name in ("cpu", "check"):
        scale = SCALES[name]
        path = cache_path(sections, scale, 0, False)
        if name == "check" or (path is not None and path.exists()):
            corpus = gloss_corpus(sections, scale)
            cached = path is not None and path.exists()
            model, _ = pretrained_real(sections, corpus, scale, 0, device, log=lambda _: None)
            source = (f"the {name}-scale biLM of seed 0, "
                      + ("from the cache" if cached else "trained just now"))
            return Reader(model, corpus, scale, source)
    raise AssertionError("unreachable: the check scale always trains")


class Bank(NamedTuple):
    """Examples and their target words' representations (L + 1, N, D), to search."""

    examples: list[Example]
    layers: torch.Tensor


def example_bank(sections: Sections, read: Reader) -> Bank:
    """The sense pool of the reader's scale (what a run measures), embedded by its biLM with
    the sections' `get_elmo_embeddings`; cached beside the biLM."""
    pool = sense_pool(read_examples(), read.scale.lemmas)
    path = cache_path(sections, read.scale, 0, False)
    extract = sources_key(sections.package, [find_section("extract")])[:8]
    bank = path.with_name(f"{path.stem}-bank-{extract}.pt") if path is not None else None
    if bank is not None and bank.exists():
        return Bank(pool, torch.load(bank, weights_only=True).float())
    layers = embed(sections, read.model, pool, read.corpus.word2idx)
    if bank is not None:
        partial = bank.with_suffix(f".{os.getpid()}.tmp")
        torch.save(layers.half(), partial)
        partial.replace(bank)
    return Bank(pool, layers)


@cache
def definitions() -> dict[str, str]:
    """{synset: its definition}."""
    return dict(read_definitions())


def nearest_to(sections: Sections, read: Reader, bank: Bank, sentence: str, word: str,
               k: int = 5) -> str:
    """The bank's examples nearest to `word` in `sentence`, per layer, as text: among the
    examples of that word (as lemma or as written) where the bank has some, else among all.

    Raises:
        ValueError: `word` is not one of the sentence's words.
    """
    words = sections.corpus.tokenize(sentence)
    word = word.lower()
    if word not in words:
        raise ValueError(f"{word!r} is not one of the words of {sentence!r}: {words}")
    layers = sections.extract.get_elmo_embeddings(read.model.bilm, sentence,
                                                  read.corpus.word2idx)
    vectors = layers[:, words.index(word)].float().cpu()
    same = [i for i, e in enumerate(bank.examples) if word in (e.lemma, e.word)]
    among = same or list(range(len(bank.examples)))
    known = "" if word in read.corpus.word2idx else " (the biLM reads it as <unk>)"
    lines = [f"{word!r} in {sentence!r}{known}: the nearest of "
             + (f"the {len(same)} examples of {word!r}" if same else
                f"all {len(among)} examples (none is of {word!r})")]
    found = nearest_examples(vectors, bank.layers[:, among], k, bank.layers.mean(dim=1))
    for layer, (indices, cosines) in enumerate(found):
        lines.append(f"  layer {layer}:")
        for i, cosine in zip(indices, cosines, strict=True):
            example = bank.examples[among[i]]
            lines.append(f"    {cosine:+.2f}  {example.sentence}")
            lines.append(f"           {example.synset}: {definitions()[example.synset]}")
    return "\n".join(lines)


# --- the whole run ------------------------------------------------------------------------------

_WORKER: dict = {}  # what a forked worker needs: the sections, scale, device, corpus, log


def _pretrain_in_worker(task: tuple[str, int | bool]) -> dict | None:
    """("word" or "char", seed): pre-train (and cache) that biLM; ("speed", characters):
    time the full scale's (`full_scale_speed`) and return it."""
    kind, value = task
    torch.set_num_threads(_WORKER["threads"])
    if kind == "speed":
        return full_scale_speed(_WORKER["sections"], _WORKER["device"], bool(value))
    characters = kind == "char"
    pretrained_real(_WORKER["sections"], _WORKER["corpus"], _WORKER["scale"], int(value),
                    _WORKER["device"], characters, _WORKER["extra"] if characters else (),
                    log=_WORKER["log"])
    return None


def _measure_in_worker(seed: int) -> tuple[dict, dict]:
    torch.set_num_threads(_WORKER["threads"])
    found, scores = measure_seed(_WORKER["sections"], _WORKER["scale"], seed,
                                 _WORKER["device"], _WORKER["corpus"], log=_WORKER["log"],
                                 nearest=seed == _WORKER["first"])
    _report(found, scores, _WORKER["log"])
    return found, scores


class LoadSampler:
    """The machine's one-minute load average, sampled every `every` seconds in a thread
    while a run lasts: the machine may be shared, and a wall clock means little without
    it."""

    def __init__(self, every: float = 5.0) -> None:
        self.every, self.samples, self.stop = every, [os.getloadavg()[0]], threading.Event()
        self.thread = threading.Thread(target=self._sample, daemon=True)
        self.thread.start()

    def _sample(self) -> None:
        while not self.stop.wait(self.every):
            self.samples.append(os.getloadavg()[0])

    def summary(self) -> dict[str, float]:
        """{"start", "mean", "max"} of the samples; stops sampling."""
        self.stop.set()
        return {"start": self.samples[0], "mean": float(np.mean(self.samples)),
                "max": float(max(self.samples))}


def cpu_seconds() -> float:
    """This process's CPU time and that of its children that have ended, user and system."""
    return sum(r.ru_utime + r.ru_stime for r in (resource.getrusage(resource.RUSAGE_SELF),
                                                  resource.getrusage(resource.RUSAGE_CHILDREN)))


def full_scale_cost(speeds: Sequence[dict], seeds: int) -> dict:
    """What pre-training every biLM of `seeds` seeds at the full scale would cost here, from
    `speeds` (`full_scale_speed`'s, the word biLM's first): {"word", "char": the measured
    fractions, "cpu_hours": the whole pre-training, in CPU hours}."""
    per_seed = sum(s["tokens"] * s["epochs"] * s["cpu_seconds"] / s["trained"] for s in speeds)
    return {"word": speeds[0], "char": speeds[1] if len(speeds) > 1 else None,
            "cpu_hours": per_seed * seeds / 3600}


def _over_seeds(records: Sequence[dict], key: str) -> dict:
    """{test: {count: [one per seed]}} of the records' "tests"."""
    return {test: {name: [r[key][test][name] for r in records] for name in records[0][key][test]}
            for test in records[0][key]}


def say(line: str) -> None:
    """Print `line` at once, also into a pipe or a file (`make ... | tee`)."""
    print(line, flush=True)


def run(sections: Sections, seeds: Sequence[int], scale: Scale | None = None,
        device: torch.device | None = None, jobs: int = 1, threads: int = 1,
        log: Callable[[str], None] = say) -> dict:
    """Every seed of `seeds`, end to end: the results (`analyses.real_results` holds their
    schema), without `run`'s description of the machine, which the caller adds.

    On a CPU the work goes to `jobs` forked processes of `threads` torch threads each, in
    two rounds: every biLM of every seed is pre-trained (and cached), the longest first,
    with the timing of the full scale's biLMs beside them; then every seed is measured
    (`measure_seed`, its biLMs from the cache). On a GPU, or without a cache, one process
    does it all, seed by seed. The findings are the seeds' scores read together
    (`analyses.real_findings`)."""
    started, cpu_started, load = time.perf_counter(), cpu_seconds(), LoadSampler()
    device = sections.setup.get_device() if device is None else device
    scale = scale or SCALES["full" if device.type == "cuda" else "cpu"]
    parallel = device.type != "cuda" and jobs > 1 and os.environ.get(CACHE_ENV_VAR, "x") != ""
    torch.set_num_threads(threads)
    log(f"reading the data and the vocabulary ({scale.name} scale) ...")
    corpus = gloss_corpus(sections, scale)
    ngram = ngram_perplexities(corpus)
    log(f"{sum(map(len, corpus.train)):,} training tokens of definitions, vocabulary "
        f"{len(corpus.word2idx):,}; held-out perplexity of a unigram model "
        f"{ngram['unigram']:.1f}, of a modified Kneser-Ney bigram model {ngram['bigram']:.1f}")
    pool = sense_pool(read_examples(), scale.lemmas)
    characters = bool(scale.char_epochs) and _has_characters(sections)
    _WORKER.update(sections=sections, scale=scale, device=device, corpus=corpus, log=log,
                   threads=threads, first=seeds[0],
                   extra=sorted({e.word for e in pool} - set(corpus.word2idx)))
    speed = [] if scale.name == "full" else [("speed", c) for c in (False, True)[
        : 1 + characters]]
    if parallel:
        context = multiprocessing.get_context("fork")
        longest = sorted([("char", s) for s in seeds if characters] + [("word", s) for s in seeds],
                         key=lambda t: -(scale.char_epochs if t[0] == "char" else scale.epochs))
        tasks = longest + speed
        log(f"pre-training {len(tasks) - len(speed)} biLMs in {jobs} processes ...")
        with forking():
            processes = context.Pool(jobs, initializer=ignore_in_worker)
        doing = ["pre-training"]
        ticker = Ticker(lambda: f"  ... {time.perf_counter() - started:.0f} s, {doing[0]}", log,
                        every=15)
        with processes as workers, contextlib.closing(ticker):
            speeds = [found for found in patiently(workers.map_async(
                _pretrain_in_worker, tasks, chunksize=1)) if found is not None]
            log(f"measuring {len(seeds)} seeds in {jobs} processes ...")
            doing[0] = "measuring"
            measured = patiently(workers.map_async(_measure_in_worker, list(seeds),
                                                   chunksize=1))
            workers.close()
            workers.join()
    else:
        speeds = [_pretrain_in_worker(task) for task in speed]
        measured = [_measure_in_worker(seed) for seed in seeds]
    records = [record for record, _ in measured]
    log("the findings: a two-level bootstrap over the seeds and their test examples ...")
    findings = real_findings.findings([scores for _, scores in measured],
                                      real_findings.COMPARISONS
                                      + tuple(real_findings.sweep_comparisons(PENALTIES)))
    return {"run": {"device": str(device), "jobs": jobs if parallel else 1, "threads": threads,
                    "seconds": time.perf_counter() - started,
                    "cpu_seconds": cpu_seconds() - cpu_started, "load": load.summary(),
                    "code": code_digest(sections)},
            "scale": asdict(scale), "seeds": list(seeds),
            "data": {"definitions": len(read_definitions()), "examples": len(read_examples()),
                     "definition_tokens": corpus.all_tokens,
                     "train_tokens": sum(map(len, corpus.train)),
                     "heldout_tokens": sum(len(s) + 1 for s in corpus.heldout),
                     "vocabulary": len(corpus.word2idx), "pool": len(pool),
                     "lemmas": len({(e.lemma, e.pos) for e in pool})},
            "ngram": ngram, "full_scale": full_scale_cost(speeds, len(seeds)) if speeds else None,
            "penalties": list(PENALTIES), "tests": _over_seeds(records, "tests"), **findings,
            "nearest": records[0].pop("nearest"),
            "runs": [{k: r[k] for k in ("seed", "pretraining", "pos")} for r in records]}


def _report(found: dict, scores: dict, log: Callable[[str], None]) -> None:
    word = found["pretraining"]["word"]
    means = {test: {name: float(np.mean(v)) for name, v in values.items()}
             for test, values in scores.items()}
    log(f"seed {found['seed']}: held-out perplexity {word['perplexity']['forward']:.1f} "
        f"(trained in {word['cpu_seconds']:.0f} s of CPU); balanced sense by layer "
        + ", ".join(f"{means['balanced'][reading(PRETRAINED, k)]:.3f}" for k in LAYERS)
        + f" (chance {means['balanced']['chance']:.3f}); part of speech by layer "
        + ", ".join(f"{means['pos'][reading(PRETRAINED, k)]:.3f}" for k in LAYERS))


def sections_of(impl: str | Path) -> Sections:
    """Every section from `impl` alone (none from the reference)."""
    folder = Path(impl) if Path(impl).is_absolute() else ROOT / impl
    return Harness(folder, folder).sections(find_section(1))


NEEDED = ("setup", "corpus", "bilm", "extract", "layer_weights")  # section 8: if written


def still_to_write(impl: str | Path) -> dict[int, list[str]]:
    """{section number: its functions that are still stubs} of the sections the pipeline
    needs (1, 2, 3, 5, 7); {} when it can run."""
    from .notebook import stubs_left  # the notebook runtime imports nbclient

    found = {s.number: stubs_left(impl, s) for s in map(find_section, NEEDED)}
    return {number: names for number, names in found.items() if names}


def expected_time(jobs: int) -> str:
    """What the reference's run took, as the time to expect on idle cores: its CPU time
    over `jobs` processes ('' without the reference's results)."""
    from .real_results import REFERENCE_RESULTS

    if not REFERENCE_RESULTS.exists():
        return ""
    run_ = json.loads(REFERENCE_RESULTS.read_text())["run"]
    return (f"; expect about {run_['cpu_seconds'] / jobs / 60:.0f} min on {jobs} idle cores "
            "(the reference's CPU time), longer on a busy machine")


def main(argv: list[str] | None = None) -> int:
    from analyses import real_results  # matplotlib: only when writing

    parser = argparse.ArgumentParser(prog="python -m analyses.real_english",
                                     description=__doc__.splitlines()[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--impl", default=EXERCISES_DIR.name,
                        help="the implementation's folder (default exercises)")
    parser.add_argument("--seeds", type=int, default=5, help="seeds 0..N-1 (default 5)")
    parser.add_argument("--scale", choices=sorted(SCALES), default=None,
                        help="default: full on a GPU, cpu otherwise")
    parser.add_argument("--out", type=Path, default=real_results.REPLICATE_OUT)
    parser.add_argument("--jobs", type=int, default=min(2, os.cpu_count() or 1),
                        help="processes at once on a CPU (default 2, or 1 on one core)")
    parser.add_argument("--threads", type=int, default=1, help="torch threads per process")
    args = parser.parse_args(argv)
    missing = still_to_write(args.impl)
    if missing:
        print("ELMo on real English needs sections 1, 2, 3, 5 and 7 written (and section 8 "
              "for the character biLM); still to write: " + "; ".join(
                  f"section {n}: {', '.join(names)}" for n, names in missing.items()))
        return 1
    say(f"make replicate-real: your sections pre-train a biLM (and a character biLM, with "
        f"section 8) on WordNet's definitions for each of {args.seeds} seed(s), in "
        f"{args.jobs} process(es), then read them beside untrained ones"
        + expected_time(args.jobs) + "; a line every 15 s (Ctrl-C stops it)")
    sections = sections_of(args.impl)
    try:
        results = run(sections, list(range(args.seeds)), SCALES.get(args.scale),
                      jobs=args.jobs, threads=args.threads)
    except KeyboardInterrupt:
        cache = os.environ.get(CACHE_ENV_VAR, str(CACHE_DIR))
        return stopped("make replicate-real", (
            f"the biLMs it finished pre-training are kept in {shown(Path(cache))}/, so the "
            "next run trains only the others") if cache else "no biLM is kept (no cache)")
    results["run"]["command"] = f"python -m analyses.real_english --impl {args.impl} " \
                                f"--seeds {args.seeds}"
    real_results.write_outputs(results, args.out)
    if real_results.REFERENCE_RESULTS.exists():
        reference = real_results.load()
        print("\n== your ELMo beside the reference's " + "=" * 49)
        print(real_results.comparison_table(results, reference))
        if reference["scale"] != results["scale"]:
            print(f"(the reference ran at the {reference['scale']['name']} scale, yours at "
                  f"the {results['scale']['name']} scale: the numbers differ for that too)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
