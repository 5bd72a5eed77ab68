"""ELMo on real English: a biLM pre-trained on WordNet's definitions, read on its
sense-labelled example sentences, the paper's Sec. 5.3 at a scale a CPU can do.

    python -m course.real_english [--impl exercises] [--seeds 5] [--scale cpu|gpu|check]

It runs on any implementation's sections, the learner's `exercises/` as well as a
reference: every function takes the sections (a `course.harness.Sections`) and uses only
what their contracts state (section 1's seeds and device, section 2's vocabulary and
encoding, section 3's `BiLM`, section 5's `get_elmo_embeddings`, section 7's `ScalarMix`
probe, section 8's `CharBiLM`).

The data (`data/wordnet/`, extracted from WordNet 3.0, with its licence): the definitions of
WordNet's 117,659 synsets, about 1.2 million words of real English, to pre-train on; and,
never trained on, its example sentences, each of one sense of a word (`Example`). For each
seed, the biLM is pre-trained on a sample of the definitions (`Scale`: on a CPU 100,000
tokens for 2 epochs, on a GPU all of them for several epochs), then read per layer:

    sense       the paper's method (Sec. 5.3): each sense's mean representation over a
                training split of the examples, a test example labelled with its nearest
                sense (cosine), WordNet's first sense for a lemma that training never saw;
                for the synset and for the supersense (WordNet's lexicographer file)
    pos         the part of speech of the word: a linear probe (logistic regression) on
                each layer, in folds that hold out lemmas
    mix         section 7's learned scalar mix of the three layers, on both
    char        section 8's character biLM, on the examples whose word the word biLM
                reads as <unk>

each against its baselines: chance, the most frequent sense of the training split, layer
0, and a biLM of the same shape and seed that was never trained.

What makes pre-training at this vocabulary affordable on a CPU: an adaptive softmax
(`torch.nn.AdaptiveLogSoftmaxWithLoss`, one per direction) in place of the biLM's full
softmax heads, which here give the top LSTM states themselves (`nn.Identity`); batches of
sentences of about the same length, so that little is padding; seeds in parallel
processes. The trained biLMs are cached (`build/cache/`), keyed by the sections' sources,
the data and the scale, so a second run only measures.
"""

from __future__ import annotations

import argparse
import csv
import gzip
import hashlib
import io
import json
import math
import multiprocessing
import os
import sys
import time
from collections import Counter, defaultdict
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from functools import cache
from pathlib import Path
from typing import NamedTuple

import torch
from torch import nn

from .harness import Harness, Sections, sources_key
from .registry import CACHE_DIR, CACHE_ENV_VAR, EXERCISES_DIR, ROOT, find_section

DATA_DIR = ROOT / "data" / "wordnet"
GLOSSES = DATA_DIR / "glosses.tsv.gz"
EXAMPLES = DATA_DIR / "examples.tsv.gz"
HELDOUT_EVERY = 100  # every 100th definition is held out, for the perplexities
SAMPLE_SEED = 1234  # which definitions a scale trains on: the same for every seed
TEST_SHARE = 0.2  # of the examples, per seed, for the sense task's test split
POS_FOLDS = 4
POS_EXAMPLES = 3000  # the part-of-speech probe's examples, drawn per seed from the pool
MIX_EXAMPLES = 3000  # the examples that learn the sense task's scalar mix
PROBE_EPOCHS, PROBE_LR = 100, 0.05  # section 7's defaults
PARTS_OF_SPEECH = ("noun", "verb", "adjective", "adverb")
# (lemma, part of speech) of the test sentences whose nearest examples the results show
# (the paper's Table 4), each a lemma with several senses in the examples
NEAREST_QUERIES = (("play", "verb"), ("bank", "noun"), ("run", "verb"), ("light", "adjective"),
                   ("line", "noun"), ("hold", "verb"))


@dataclass(frozen=True)
class Scale:
    """How large a run is.

    tokens:      training tokens sampled from the definitions (None: every one).
    epochs:      passes over them.
    vocab_size:  the most frequent words of the training definitions, special tokens
                 included; every other word is <unk>.
    embedding_dim, hidden_dim: the biLM's sizes (section 3).
    batch_tokens: about how many tokens a batch holds (its sentences of about one length).
    lr:          Adam's learning rate.
    cutoffs:     the adaptive softmax's clusters: the most frequent cutoffs[0] words are
                 scored at every position, the rarer ones in clusters behind them.
    lemmas:      how many of the sense task's lemmas are read (None: all).
    char_epochs: passes of the character biLM over the same tokens (0: none trained).
    char_batch_tokens: its batches' tokens: its character layer runs faster on larger ones.
    """

    name: str
    tokens: int | None
    epochs: int
    vocab_size: int
    embedding_dim: int
    hidden_dim: int
    batch_tokens: int
    lr: float
    cutoffs: tuple[int, ...]
    lemmas: int | None
    char_epochs: int
    char_batch_tokens: int


SCALES = {
    # the tests: a few thousand tokens, seconds; what must hold holds even so
    "check": Scale("check", 5_000, 2, 1_000, 32, 64, 1_024, 0.005, (200,), 1_000, 0, 0),
    # a CPU: about a minute of one core for each biLM of a seed
    "cpu": Scale("cpu", 100_000, 2, 8_000, 64, 128, 512, 0.006, (1_000, 4_000), 2_500, 2,
                 1_024),
    # a GPU: every definition, several epochs, a larger biLM
    "gpu": Scale("gpu", None, 6, 20_000, 128, 256, 8_192, 0.002, (2_000, 8_000), None, 6,
                 8_192),
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
    the vocabulary (`word2idx`, `idx2word`, section 2's numbering) and `counts` (each
    vocabulary word's count in `train`, the sentence boundaries and <unk> included)."""

    train: list[list[str]]
    heldout: list[list[str]]
    word2idx: dict[str, int]
    idx2word: dict[int, str]
    counts: Counter


def gloss_corpus(sections: Sections, scale: Scale) -> GlossCorpus:
    """Every `HELDOUT_EVERY`-th definition held out; of the others, a sample (the same for
    every seed) of about `scale.tokens` words to train on, in WordNet's order; the
    vocabulary: the `scale.vocab_size` - 4 most frequent words of the sample (ties in
    alphabetical order), numbered by section 2's `build_vocab`."""
    corpus = sections.corpus
    definitions_ = [definition for _, definition in read_definitions()]
    rest = [n for n in range(len(definitions_)) if n % HELDOUT_EVERY != 0]
    if scale.tokens is not None:  # counted by spaces: only the sample is tokenized
        order = torch.randperm(len(rest), generator=torch.Generator().manual_seed(SAMPLE_SEED))
        chosen, total = [], 0
        for index in order.tolist():
            if total >= scale.tokens:
                break
            chosen.append(rest[index])
            total += len(definitions_[rest[index]].split())
        rest = sorted(chosen)
    heldout = [corpus.tokenize(definitions_[n])
               for n in range(0, len(definitions_), HELDOUT_EVERY)]
    heldout = [words for words in heldout if words]
    rest = [words for words in (corpus.tokenize(definitions_[n]) for n in rest) if words]
    frequency = Counter(word for sentence in rest for word in sentence)
    kept = sorted(frequency, key=lambda w: (-frequency[w], w))[: scale.vocab_size - 4]
    word2idx, idx2word = corpus.build_vocab(kept)
    counts = Counter({word: frequency[word] for word in kept})
    counts[idx2word[corpus.UNK]] = sum(frequency.values()) - sum(counts.values())
    counts[idx2word[corpus.BOS]] = counts[idx2word[corpus.EOS]] = len(rest)
    return GlossCorpus(rest, heldout, word2idx, idx2word, counts)


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
             seed: int, epochs: int, device: torch.device, name: str = "biLM",
             log: Callable[[str], None] = print, batch_tokens: int | None = None) -> dict:
    """Pre-train `model` on the corpus's training definitions with Adam (gradients clipped
    to norm 1); batches from `buckets`, shuffled by `seed`. Logs its progress every few
    seconds. Returns {"history": the mean training loss (forward + backward NLL) of each
    epoch, "seconds": wall clock, "cpu_seconds": this process's CPU time, "tokens": the
    targets per direction per epoch}."""
    sentences = encoded(sections, corpus.train, corpus.word2idx)
    generator = torch.Generator().manual_seed(seed)
    optimizer = torch.optim.Adam(model.parameters(), lr=scale.lr)
    model.to(device).train()
    pad_batch = sections.corpus.pad_batch
    history, started, cpu_started = [], time.perf_counter(), time.process_time()
    last_log, total = started, sum(len(s) - 1 for s in sentences)
    for epoch in range(1, epochs + 1):
        done, summed = 0, 0.0
        for batch in buckets(sentences, batch_tokens or scale.batch_tokens, generator):
            ids, lengths = pad_batch([sentences[i] for i in batch])
            ids = ids.to(device)
            forward, backward, count = model.losses(ids, lengths)
            loss = forward + backward
            optimizer.zero_grad()
            loss.backward()
            nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            optimizer.step()
            done, summed = done + count, summed + float(loss.detach()) * count
            now = time.perf_counter()
            if now - last_log > 15:
                last_log = now
                log(f"  seed {seed}, {name}: epoch {epoch}/{epochs}, {done / total:4.0%} of "
                    f"{total:,} tokens, loss {summed / done:.3f}, "
                    f"{(done + (epoch - 1) * total) / (now - started):,.0f} tokens/s")
        history.append(summed / done)
    model.eval()
    return {"history": history, "seconds": time.perf_counter() - started,
            "cpu_seconds": time.process_time() - cpu_started, "tokens": total}


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


def ngram_perplexities(corpus: GlossCorpus, discount: float = 0.75) -> dict[str, float]:
    """The held-out perplexity of a unigram model and of an interpolated Kneser-Ney bigram
    model (absolute discount 0.75), both counted on the training definitions with the
    biLM's vocabulary (every other word <unk>), both directions for the bigram."""
    unk = corpus.idx2word[1]

    def known(sentence: Sequence[str]) -> list[str]:
        return [w if w in corpus.word2idx else unk for w in sentence]

    begin, end = corpus.idx2word[2], corpus.idx2word[3]
    found = {}
    unigram = Counter(w for s in corpus.train for w in [*known(s), end])
    total = sum(unigram.values())
    held = [[*known(s), end] for s in corpus.heldout]
    nll = -sum(math.log(unigram[w] / total) for s in held for w in s)
    found["unigram"] = math.exp(nll / sum(len(s) for s in held))
    for direction in ("forward", "backward"):
        def padded(sentence, direction=direction):
            words = [begin, *known(sentence), end]
            return words if direction == "forward" else words[::-1]
        pairs = Counter((a, b) for s in corpus.train for a, b in zip(padded(s), padded(s)[1:],
                                                                     strict=False))
        history = Counter()
        followers = Counter()
        preceders = Counter()
        for (a, b), n in pairs.items():
            history[a] += n
            followers[a] += 1
            preceders[b] += 1
        kinds = len(pairs)
        nll, n = 0.0, 0
        for s in corpus.heldout:
            words = padded(s)
            for a, b in zip(words, words[1:], strict=False):
                continuation = preceders[b] / kinds
                if history[a]:
                    p = (max(pairs[a, b] - discount, 0) / history[a]
                         + discount * followers[a] / history[a] * continuation)
                else:
                    p = continuation
                nll -= math.log(p)
                n += 1
        found[f"bigram_{direction}"] = math.exp(nll / n)
    return found


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


# --- reading the layers -------------------------------------------------------------------------


@torch.no_grad()
def embed(sections: Sections, model: RealBiLM, examples: Sequence[Example],
          word2idx: dict[str, int], batch: int = 256) -> torch.Tensor:
    """(L + 1, N, D) the target word's representation in each example, every layer
    (section 5's `get_elmo_embeddings`), as float32 on the CPU.

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
        layers = get(model.bilm, [examples[i].sentence for i in chunk], word2idx)
        vectors = torch.stack([e[:, examples[i].position].float().cpu()
                               for e, i in zip(layers, chunk, strict=True)], dim=1)
        if not found.numel():
            found = torch.empty(vectors.shape[0], len(examples), vectors.shape[-1])
        found[:, chunk] = vectors
    return found


class Split(NamedTuple):
    """A training and a test split of the sense pool for one seed (boolean masks)."""

    train: torch.Tensor
    test: torch.Tensor


def sense_split(examples: Sequence[Example], seed: int) -> Split:
    """A random `TEST_SHARE` of the examples to test on, the rest to train on."""
    order = torch.randperm(len(examples), generator=torch.Generator().manual_seed(seed))
    test = torch.zeros(len(examples), dtype=torch.bool)
    test[order[: round(TEST_SHARE * len(examples))]] = True
    return Split(~test, test)


class SenseTask(NamedTuple):
    """The nearest-sense method, set up for one split and one label (synset or supersense).

    train, sense_of: the training examples' indices and, for each, its sense (a row of the
        senses' means). test: the test examples' indices. candidates: (M, K) for each test
        example, the senses of its lemma and part of speech that training holds, the most
        frequent first (-1: none). gold: (M,) which candidate is right (-1: none).
        fallback_right: (M,) whether WordNet's first sense is right. seen: (M,) whether the
        lemma has a candidate.
    """

    label: str
    train: torch.Tensor
    sense_of: torch.Tensor
    test: torch.Tensor
    candidates: torch.Tensor
    gold: torch.Tensor
    fallback_right: torch.Tensor
    seen: torch.Tensor


def sense_task(examples: Sequence[Example], split: Split, label: str) -> SenseTask:
    """The nearest-sense method's candidates for `label`, "synset" or "supersense"."""
    senses: dict[tuple, list[int]] = defaultdict(list)
    for i in split.train.nonzero().flatten().tolist():
        e = examples[i]
        senses[e.lemma, e.pos, getattr(e, label)].append(i)
    rank = {}  # a sense's WordNet rank, for ties between equally frequent senses
    for e in examples:
        key = (e.lemma, e.pos, getattr(e, label))
        rank[key] = min(rank.get(key, e.sense), e.sense)
    keys = list(senses)
    row = {key: n for n, key in enumerate(keys)}
    by_lemma = defaultdict(list)
    for key in keys:
        by_lemma[key[:2]].append(key)
    for lemma in by_lemma:
        by_lemma[lemma].sort(key=lambda k: (-len(senses[k]), rank[k], k[2]))
    test = split.test.nonzero().flatten()
    width = max((len(v) for v in by_lemma.values()), default=1)
    candidates = torch.full((len(test), width), -1, dtype=torch.long)
    gold = torch.full((len(test),), -1, dtype=torch.long)
    fallback = torch.zeros(len(test), dtype=torch.bool)
    for m, i in enumerate(test.tolist()):
        e = examples[i]
        fallback[m] = getattr(e, "first_" + label) == getattr(e, label)
        for k, key in enumerate(by_lemma.get((e.lemma, e.pos), [])):
            candidates[m, k] = row[key]
            if key[2] == getattr(e, label):
                gold[m] = k
    train = [(i, row[key]) for key in keys for i in senses[key]]
    return SenseTask(label, torch.tensor([i for i, _ in train], dtype=torch.long),
                     torch.tensor([r for _, r in train], dtype=torch.long), test, candidates,
                     gold, fallback, candidates[:, 0] >= 0)


def nearest_sense(task: SenseTask, vectors: torch.Tensor) -> float:
    """Accuracy of the nearest-sense method on (N, D) `vectors` (every example's): each
    sense's mean over its training examples, each test example labelled with the candidate
    of highest cosine (equal cosines share the credit), WordNet's first sense where the
    lemma has no candidate. The vectors are centred by the training examples' mean first: the states
    share a common direction that makes every cosine high."""
    centred = vectors - vectors[task.train].mean(dim=0)
    sums = torch.zeros(int(task.sense_of.max()) + 1, vectors.shape[-1])
    sums.index_add_(0, task.sense_of, centred[task.train])
    means = nn.functional.normalize(sums, dim=-1)  # the mean's direction is the sum's
    queries = nn.functional.normalize(centred[task.test], dim=-1)
    cosines = torch.einsum("mkd,md->mk", means[task.candidates.clamp(min=0)], queries)
    cosines = cosines.masked_fill(task.candidates < 0, -math.inf)
    # candidates whose means are equally near (layer 0 of one word form) share the credit:
    # a representation that cannot tell them apart scores as a guess among them would
    best = cosines.max(dim=1, keepdim=True).values
    tied = cosines >= best - 1e-5
    gold = task.gold.clamp(min=0).unsqueeze(1)
    credit = (tied.gather(1, gold).squeeze(1) & (task.gold >= 0)).float() / tied.sum(dim=1)
    return float(torch.where(task.seen, credit, task.fallback_right.float()).mean())


def sense_baselines(task: SenseTask) -> dict[str, float]:
    """What needs no representation: chance (one of the lemma's candidates at random), the
    most frequent sense of the training split, and WordNet's first sense for every test
    example; each with the same fallback where the lemma has no candidate."""
    count = (task.candidates >= 0).sum(dim=1).clamp(min=1).float()
    chance = torch.where(task.seen, (task.gold >= 0).float() / count,
                         task.fallback_right.float())
    frequent = torch.where(task.seen, task.gold == 0, task.fallback_right)
    return {"chance": float(chance.mean()), "most_frequent": float(frequent.float().mean()),
            "first_sense": float(task.fallback_right.float().mean())}


def _restricted(task: SenseTask, subset: torch.Tensor) -> SenseTask:
    """`task` scored on the test examples in `subset` (N,) only."""
    keep = subset[task.test]
    return task._replace(test=task.test[keep], candidates=task.candidates[keep],
                         gold=task.gold[keep], fallback_right=task.fallback_right[keep],
                         seen=task.seen[keep])


def read_layers(layers: torch.Tensor, tasks: dict[str, SenseTask],
                subset: torch.Tensor | None = None) -> dict[str, list[float]]:
    """{label: the nearest-sense accuracy of each layer of (L + 1, N, D) `layers`}; with
    `subset` (N,) bool, on the test examples in it only."""
    return {label: [nearest_sense(task if subset is None else _restricted(task, subset),
                                  layers[k]) for k in range(layers.shape[0])]
            for label, task in tasks.items()}


def linear_probe(train: torch.Tensor, labels: torch.Tensor, test: torch.Tensor,
                 classes: int, epochs: int = PROBE_EPOCHS, lr: float = PROBE_LR
                 ) -> torch.Tensor:
    """A multinomial logistic regression on (N, D) `train`, each feature standardised by
    the training mean and sd, from zero weights, full batch with Adam: the predicted class
    of each row of `test`. Deterministic: nothing is drawn."""
    mean, sd = train.mean(dim=0), train.std(dim=0).clamp(min=1e-6)
    x, x_test = (train - mean) / sd, (test - mean) / sd
    classifier = nn.Linear(train.shape[-1], classes)
    nn.init.zeros_(classifier.weight)
    nn.init.zeros_(classifier.bias)
    optimizer = torch.optim.Adam(classifier.parameters(), lr=lr)
    for _ in range(epochs):
        optimizer.zero_grad()
        nn.functional.cross_entropy(classifier(x), labels).backward()
        optimizer.step()
    with torch.no_grad():
        return classifier(x_test).argmax(dim=-1)


def standardiser(train: torch.Tensor) -> Callable[[torch.Tensor], torch.Tensor]:
    """What standardises each feature of (..., N, D) tensors by `train`'s mean and sd over
    its N rows, as the linear probes' features are."""
    mean, sd = train.mean(dim=-2, keepdim=True), train.std(dim=-2, keepdim=True).clamp(min=1e-6)
    return lambda x: (x - mean) / sd


def fit_mix(sections: Sections, layers: torch.Tensor, labels: torch.Tensor, classes: int,
            seed: int) -> nn.Module:
    """Section 7's probe (the scalar mix of (L + 1, N, D) `layers`, then a classifier),
    fitted with section 7's defaults after `set_seed(seed)`; give it layers standardised
    as its training examples were (`standardiser`)."""
    sections.setup.set_seed(seed)
    probe = sections.layer_weights.ScalarMixProbe(layers.shape[0], layers.shape[-1], classes)
    probe.fit(layers, labels, epochs=PROBE_EPOCHS, lr=PROBE_LR)
    return probe


def pos_folds(examples: Sequence[Example], seed: int, size: int = POS_EXAMPLES
              ) -> tuple[torch.Tensor, torch.Tensor]:
    """(the chosen examples' indices, their fold): `size` examples drawn by `seed`, their
    lemmas dealt round-robin to `POS_FOLDS` folds in an order drawn by `seed`, so that no
    lemma is both trained and scored on."""
    generator = torch.Generator().manual_seed(seed)
    chosen = torch.randperm(len(examples), generator=generator)[:size].sort().values
    lemmas = sorted({examples[i].lemma for i in chosen.tolist()})
    order = torch.randperm(len(lemmas), generator=generator).tolist()
    fold_of = {lemmas[j]: k % POS_FOLDS for k, j in enumerate(order)}
    return chosen, torch.tensor([fold_of[examples[i].lemma] for i in chosen.tolist()])


def pos_probe(layers: torch.Tensor, labels: torch.Tensor, folds: torch.Tensor,
              sections: Sections | None = None, seed: int = 0) -> dict:
    """Cross-validated accuracy of a linear probe on each layer of (L + 1, N, D) `layers`
    and the majority class of each fold's training part; with `sections`, also section 7's
    learned mix of the layers, and its weights (averaged over the folds)."""
    right, majority, mix_right, weights = [0] * layers.shape[0], 0, 0, []
    classes = len(PARTS_OF_SPEECH)
    for fold in range(POS_FOLDS):
        train, test = folds != fold, folds == fold
        if not test.any() or not train.any():
            continue
        most = int(torch.bincount(labels[train], minlength=classes).argmax())
        majority += int((labels[test] == most).sum())
        for k in range(layers.shape[0]):
            predicted = linear_probe(layers[k, train], labels[train], layers[k, test], classes)
            right[k] += int((predicted == labels[test]).sum())
        if sections is not None:
            standard = standardiser(layers[:, train])
            probe = fit_mix(sections, standard(layers[:, train]), labels[train], classes,
                            seed + fold)
            mix_right += int((probe.predict(standard(layers[:, test])) == labels[test]).sum())
            weights.append(probe.mix.weights.detach())
    n = len(labels)
    found = {"layers": [r / n for r in right], "majority": majority / n, "n": n}
    if sections is not None:
        found |= {"mix": mix_right / n, "weights": torch.stack(weights).mean(0).tolist()}
    return found


def learned_mix(sections: Sections, layers: torch.Tensor, examples: Sequence[Example],
                split: Split, seed: int) -> tuple[torch.Tensor, list[float]]:
    """Section 7's scalar mix learned for sense: a probe of the supersense, trained on (at
    most `MIX_EXAMPLES` of) the training split; (the mixed (N, D) vectors of every example,
    its weights s_j)."""
    supersenses = sorted({e.supersense for e in examples})
    labels = torch.tensor([supersenses.index(e.supersense) for e in examples])
    train = split.train.nonzero().flatten()
    train = train[torch.randperm(len(train), generator=torch.Generator().manual_seed(seed))
                  [:MIX_EXAMPLES]]
    standard = standardiser(layers[:, train])
    probe = fit_mix(sections, standard(layers[:, train]), labels[train], len(supersenses), seed)
    with torch.no_grad():
        mixed = probe.mix(standard(layers))
    return mixed, probe.mix.weights.detach().tolist()


# --- one seed, end to end ---------------------------------------------------------------------


def measure_seed(sections: Sections, scale: Scale, seed: int, device: torch.device,
                 corpus: GlossCorpus | None = None, log: Callable[[str], None] = print,
                 nearest: bool = False) -> dict:
    """Pre-train the biLMs of `seed` (or read them from the cache) and read their layers:
    the records of one seed (`course.real_results` holds their schema). With `nearest`,
    also a few test sentences' nearest training examples (`nearest_records`)."""
    corpus = corpus or gloss_corpus(sections, scale)
    pool = sense_pool(read_examples(), scale.lemmas)
    model, record = pretrained_real(sections, corpus, scale, seed, device, log=log)
    model, untrained = model.to(device), make_bilm(sections, corpus, scale, seed).to(device)
    found = {"seed": seed, "pretraining": {
        "word": {**{k: record[k] for k in ("history", "seconds", "cpu_seconds", "tokens")},
                 "perplexity": perplexity(sections, model, corpus.heldout, corpus.word2idx)}}}
    layers = {"word": embed(sections, model, pool, corpus.word2idx),
              "untrained": embed(sections, untrained, pool, corpus.word2idx)}
    split = sense_split(pool, seed)
    tasks = {label: sense_task(pool, split, label) for label in ("synset", "supersense")}
    found["sense"] = {name: read_layers(value, tasks) for name, value in layers.items()}
    found["baselines"] = {label: sense_baselines(task) for label, task in tasks.items()}
    mixed, weights = learned_mix(sections, layers["word"], pool, split, seed)
    found["mix"] = {"weights": weights, **{label: nearest_sense(task, mixed)
                                           for label, task in tasks.items()}}
    chosen, folds = pos_folds(pool, seed)
    labels = torch.tensor([PARTS_OF_SPEECH.index(pool[i].pos) for i in chosen.tolist()])
    found["pos"] = {"word": pos_probe(layers["word"][:, chosen], labels, folds, sections, seed),
                    "untrained": pos_probe(layers["untrained"][:, chosen], labels, folds)}
    unknown = torch.tensor([e.word not in corpus.word2idx for e in pool])
    found["counts"] = {"pool": len(pool), "test": int(split.test.sum()),
                       "lemmas": len({(e.lemma, e.pos) for e in pool}),
                       "unknown_test": int((unknown & split.test).sum()),
                       "vocabulary": len(corpus.word2idx),
                       "train_tokens": record["tokens"], "heldout_tokens": sum(
                           len(s) + 1 for s in corpus.heldout)}
    if scale.char_epochs and _has_characters(sections):
        found["pretraining"]["char"], found["rare"] = measure_characters(
            sections, scale, seed, device, corpus, pool, split, layers["word"],
            (chosen, folds, labels), log)
    if nearest:
        found["nearest"] = nearest_records(pool, layers["word"], split)
    return found


def measure_characters(sections: Sections, scale: Scale, seed: int, device: torch.device,
                       corpus: GlossCorpus, pool: list[Example], split: Split,
                       word_layers: torch.Tensor, pos_task: tuple[torch.Tensor, ...],
                       log: Callable[[str], None]) -> tuple[dict, dict]:
    """The character biLM of `seed`, and both biLMs on the test examples whose word the
    word biLM reads as <unk>: (the character biLM's pre-training record, the "rare"
    record). The character biLM spells out every word, in the vocabulary or not. Only the
    lemmas with such a word are read: their examples are a sense pool of their own, split
    as the whole pool is."""
    extra = sorted({e.word for e in pool} - set(corpus.word2idx))
    chars, record = pretrained_real(sections, corpus, scale, seed, device, True, extra, log=log)
    chars = chars.to(device)
    spelled = {**corpus.word2idx, **{w: len(corpus.word2idx) + n for n, w in enumerate(extra)}}
    unknown = torch.tensor([e.word not in corpus.word2idx for e in pool])
    rare_lemmas = {(e.lemma, e.pos) for e, u in zip(pool, unknown.tolist(), strict=True) if u}
    read = torch.tensor([(e.lemma, e.pos) in rare_lemmas for e in pool]).nonzero().flatten()
    sub = [pool[i] for i in read.tolist()]
    sub_split = Split(split.train[read], split.test[read])
    tasks = {label: sense_task(sub, sub_split, label) for label in ("synset", "supersense")}
    layers = {"word": word_layers[:, read], "char": embed(sections, chars, sub, spelled)}
    rare = {name: read_layers(value, tasks, unknown[read]) for name, value in layers.items()}
    rare["baselines"] = {label: sense_baselines(_restricted(task, unknown[read]))
                         for label, task in tasks.items()}
    chosen, folds, labels = pos_task
    position = torch.full((len(pool),), -1, dtype=torch.long)
    position[read] = torch.arange(len(read))
    rare_pos = unknown[chosen]
    rare["pos"] = {name: pos_probe(value[:, position[chosen[rare_pos]]], labels[rare_pos],
                                   folds[rare_pos]) for name, value in layers.items()}
    return {**{k: record[k] for k in ("history", "seconds", "cpu_seconds", "tokens")},
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
    """For the first test example of each (lemma, pos) of `queries` in the pool, its `k`
    nearest training examples of the same lemma per layer."""
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


def _pretrain_in_worker(task: tuple[int, bool]) -> None:
    seed, characters = task
    torch.set_num_threads(_WORKER["threads"])
    extra = _WORKER["extra"] if characters else ()
    pretrained_real(_WORKER["sections"], _WORKER["corpus"], _WORKER["scale"], seed,
                    _WORKER["device"], characters, extra, log=_WORKER["log"])


def _measure_in_worker(seed: int) -> dict:
    torch.set_num_threads(_WORKER["threads"])
    found = measure_seed(_WORKER["sections"], _WORKER["scale"], seed, _WORKER["device"],
                         _WORKER["corpus"], log=_WORKER["log"], nearest=seed == _WORKER["first"])
    _report(found, _WORKER["log"])
    return found


def run(sections: Sections, seeds: Sequence[int], scale: Scale | None = None,
        device: torch.device | None = None, jobs: int = 1, threads: int = 1,
        log: Callable[[str], None] = print) -> dict:
    """Every seed of `seeds`, end to end: the results (`course.real_results` holds their
    schema), without `run`'s description of the machine, which the caller adds.

    On a CPU the work goes to `jobs` forked processes of `threads` torch threads each, in
    two rounds: every biLM of every seed is pre-trained (and cached), the longest first,
    then every seed is measured (`measure_seed`, its biLMs from the cache). On a GPU, or
    without a cache, one process does it all, seed by seed."""
    started = time.perf_counter()
    device = sections.setup.get_device() if device is None else device
    scale = scale or SCALES["gpu" if device.type == "cuda" else "cpu"]
    parallel = device.type != "cuda" and jobs > 1 and os.environ.get(CACHE_ENV_VAR, "x") != ""
    torch.set_num_threads(threads)
    log(f"reading the data and the vocabulary ({scale.name} scale) ...")
    corpus = gloss_corpus(sections, scale)
    ngram = ngram_perplexities(corpus)
    log(f"{sum(map(len, corpus.train)):,} training tokens of definitions, vocabulary "
        f"{len(corpus.word2idx):,}; held-out perplexity of a unigram model "
        f"{ngram['unigram']:.1f}, of a bigram model {ngram['bigram_forward']:.1f}")
    pool = sense_pool(read_examples(), scale.lemmas)
    characters = bool(scale.char_epochs) and _has_characters(sections)
    _WORKER.update(sections=sections, scale=scale, device=device, corpus=corpus, log=log,
                   threads=threads, first=seeds[0],
                   extra=sorted({e.word for e in pool} - set(corpus.word2idx)))
    if parallel:
        context = multiprocessing.get_context("fork")
        tasks = [(seed, True) for seed in seeds if characters] + [(s, False) for s in seeds]
        log(f"pre-training {len(tasks)} biLMs in {jobs} processes ...")
        with context.Pool(jobs) as workers:
            workers.map(_pretrain_in_worker, tasks, chunksize=1)
        log(f"measuring {len(seeds)} seeds in {jobs} processes ...")
        with context.Pool(jobs) as workers:
            runs = workers.map(_measure_in_worker, list(seeds), chunksize=1)
    else:
        runs = [_measure_in_worker(seed) for seed in seeds]
    first = runs[0]
    return {"run": {"device": str(device), "jobs": jobs if parallel else 1, "threads": threads,
                    "seconds": time.perf_counter() - started},
            "scale": asdict(scale), "seeds": list(seeds),
            "data": {"definitions": len(read_definitions()), "examples": len(read_examples()),
                     **first["counts"]},
            "ngram": ngram, "nearest": first.pop("nearest"), "runs": runs}


def _report(found: dict, log: Callable[[str], None]) -> None:
    word = found["pretraining"]["word"]
    sense_ = found["sense"]["word"]
    log(f"seed {found['seed']}: held-out perplexity {word['perplexity']['forward']:.1f} "
        f"(trained in {word['cpu_seconds']:.0f} s of CPU); synset by layer "
        + ", ".join(f"{a:.3f}" for a in sense_["synset"])
        + f" (most frequent sense {found['baselines']['synset']['most_frequent']:.3f}); "
        "part of speech by layer " + ", ".join(f"{a:.3f}" for a in found["pos"]["word"]["layers"]))


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


def main(argv: list[str] | None = None) -> int:
    from . import real_results  # matplotlib: only when writing

    parser = argparse.ArgumentParser(prog="python -m course.real_english",
                                     description=__doc__.splitlines()[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--impl", default=EXERCISES_DIR.name,
                        help="the implementation's folder (default exercises)")
    parser.add_argument("--seeds", type=int, default=5, help="seeds 0..N-1 (default 5)")
    parser.add_argument("--scale", choices=sorted(SCALES), default=None,
                        help="default: gpu on a GPU, cpu otherwise")
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
    sections = sections_of(args.impl)
    results = run(sections, list(range(args.seeds)), SCALES.get(args.scale), jobs=args.jobs,
                  threads=args.threads)
    results["run"]["command"] = f"python -m course.real_english --impl {args.impl} " \
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
