"""Extraction throughput: `get_elmo_embeddings` on the whole corpus, batched vs one at a time.

Tokens are the corpus's words (the boundaries <s> and </s> are not counted). Each way runs
once untimed to warm up, then `repeats` times; the figure is the median.
"""

from __future__ import annotations

import statistics
import time
from dataclasses import dataclass

from tools import reference

_reference = reference()
CORPUS, build_vocab, tokenize = (getattr(_reference.corpus, name) for name in (
    "CORPUS", "build_vocab", "tokenize"))
BiLM, get_elmo_embeddings = _reference.bilm.BiLM, _reference.extract.get_elmo_embeddings


@dataclass(frozen=True)
class Throughput:
    tokens: int
    batched_seconds: list[float]
    one_at_a_time_seconds: list[float]

    @property
    def batched(self) -> float:
        """Tokens per second, the corpus in one call (median over repeats)."""
        return self.tokens / statistics.median(self.batched_seconds)

    @property
    def one_at_a_time(self) -> float:
        """Tokens per second, one call per sentence (median over repeats)."""
        return self.tokens / statistics.median(self.one_at_a_time_seconds)


def _seconds(extract, repeats: int) -> list[float]:
    extract()  # warm-up: first-call allocations and dispatch caches
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        extract()
        times.append(time.perf_counter() - start)
    return times


def measure(model: BiLM, repeats: int = 20) -> Throughput:
    """Time extraction of the whole corpus with `model` (any weights: speed does not depend on
    them), as one list and sentence by sentence."""
    word2idx, _ = build_vocab(CORPUS)
    sentences = list(CORPUS)
    return Throughput(
        tokens=sum(len(tokenize(s)) for s in sentences),
        batched_seconds=_seconds(lambda: get_elmo_embeddings(model, sentences, word2idx),
                                 repeats),
        one_at_a_time_seconds=_seconds(
            lambda: [get_elmo_embeddings(model, s, word2idx) for s in sentences], repeats),
    )


def describe(result: Throughput) -> list[str]:
    repeats = len(result.batched_seconds)
    return [
        f"corpus: {len(CORPUS)} sentences, {result.tokens} tokens; median of {repeats} repeats "
        "after a warm-up",
        f"batched        {result.batched:9.0f} tokens/s",
        f"one at a time  {result.one_at_a_time:9.0f} tokens/s",
        f"batching is {result.batched / result.one_at_a_time:.1f}x faster",
    ]
