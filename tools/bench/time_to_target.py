"""Time to target loss: the reference recipe against the seed's, on one corpus and one seed.

Both recipes run through the reference `train_bilm`, from the same initial weights and with
the same shuffling seed. The target is the corpus loss at which the reference recipe stops
(it stops on purpose before the biLM learns the training sentences by heart, see
`DEFAULT_RECIPE`); each recipe's time to target is its training time up to the end of the
first epoch whose corpus loss is at or below the target, so the reference's is its whole
training, and the seed recipe's how long it takes to get as far.

`train_bilm` evaluates `corpus_loss` after every epoch. Neither clock counts it: the time
spent inside `corpus_loss` is measured and subtracted from both, so the figures are training
time only (the evaluation time is reported beside them). The reference recipe does one
evaluation per epoch and the seed recipe too, but the seed recipe's epochs are many more
steps (one per sentence, against one per 16 sentences), so counting the evaluation would
charge the reference far more of it per step than the seed recipe.
"""

from __future__ import annotations

import copy
import time
from dataclasses import dataclass
from unittest import mock

from tools import reference

_reference = reference()
s4_pretrain = _reference.pretrain
set_seed, BiLM = _reference.setup.set_seed, _reference.bilm.BiLM
CORPUS, build_vocab = _reference.corpus.CORPUS, _reference.corpus.build_vocab
DEFAULT_RECIPE, SEED_RECIPE, Recipe, train_bilm = (getattr(s4_pretrain, name) for name in (
    "DEFAULT_RECIPE", "SEED_RECIPE", "Recipe", "train_bilm"))


@dataclass(frozen=True)
class Run:
    """One recipe's training: its corpus loss and cumulative training time after each epoch.

    losses[e] and seconds[e] are taken after epoch e + 1; seconds excludes evaluation.
    """

    recipe: Recipe
    losses: list[float]
    seconds: list[float]
    evaluation_seconds: float
    model: BiLM

    def time_to(self, target: float) -> tuple[int, float] | None:
        """(epoch, training seconds) at the first epoch whose loss is <= target; None if never."""
        for epoch, (loss, seconds) in enumerate(zip(self.losses, self.seconds, strict=True), 1):
            if loss <= target:
                return epoch, seconds
        return None


def train_timed(model: BiLM, recipe: Recipe, seed: int) -> Run:
    """Train `model` (in place, on CPU) with `recipe`, timing every epoch without its evaluation.

    `train_bilm` calls `corpus_loss` once at the end of every epoch; wrapping that call gives
    the end time of each epoch and the time the evaluation itself takes.
    """
    word2idx, _ = build_vocab(CORPUS)
    evaluate = s4_pretrain.corpus_loss
    ends: list[float] = []
    evaluation = 0.0

    def timed_corpus_loss(*args, **kwargs) -> float:
        nonlocal evaluation
        begin = time.perf_counter()
        ends.append(begin - evaluation)  # training time so far, evaluations excluded
        loss = evaluate(*args, **kwargs)
        evaluation += time.perf_counter() - begin
        return loss

    with mock.patch.object(s4_pretrain, "corpus_loss", timed_corpus_loss):
        start = time.perf_counter()
        losses = train_bilm(model, CORPUS, word2idx, recipe, seed=seed, device="cpu",
                            log_every=0, progress=False)
    return Run(recipe, losses, [end - start for end in ends], evaluation, model)


@dataclass(frozen=True)
class TimeToTarget:
    seed: Run
    reference: Run
    target: float

    @property
    def seed_time(self) -> tuple[int, float] | None:
        return self.seed.time_to(self.target)

    @property
    def reference_time(self) -> tuple[int, float]:
        reached = self.reference.time_to(self.target)
        assert reached is not None, "the reference reaches its own final loss by definition"
        return reached

    @property
    def speedup(self) -> float | None:
        """Seed recipe's time to target over the reference's; None if the seed recipe never
        gets there."""
        if self.seed_time is None:
            return None
        return self.seed_time[1] / self.reference_time[1]


def measure(seed: int = 0, seed_recipe: Recipe = SEED_RECIPE,
            reference_recipe: Recipe = DEFAULT_RECIPE) -> TimeToTarget:
    """Train one biLM, initialised by `seed`, with each recipe; `seed` also shuffles."""
    word2idx, _ = build_vocab(CORPUS)
    set_seed(seed)
    initial = BiLM(len(word2idx))
    seed_run = train_timed(copy.deepcopy(initial), seed_recipe, seed)
    reference_run = train_timed(copy.deepcopy(initial), reference_recipe, seed)
    return TimeToTarget(seed_run, reference_run, target=reference_run.losses[-1])


def describe(result: TimeToTarget) -> list[str]:
    """The report's lines; the last one is `time-to-target speedup: <ratio>x`."""
    lines = [f"target: the reference's corpus loss after its {result.reference.recipe.epochs} "
             f"epochs = {result.target:.4f} (training time only; evaluation excluded from both)"]
    for name, run, reached in (("seed recipe", result.seed, result.seed_time),
                               ("reference", result.reference, result.reference_time)):
        r = run.recipe
        where = (f"reached at epoch {reached[0]:3d} after {reached[1]:7.2f} s" if reached
                 else f"not reached in {r.epochs} epochs ({run.seconds[-1]:.2f} s)")
        lines.append(f"{name:<12} batch {r.batch_size:2d}  lr {r.lr:<6g} {r.epochs:3d} epochs: "
                     f"{where}; final loss {run.losses[-1]:.4f}; "
                     f"evaluation {run.evaluation_seconds:.2f} s")
    speedup = result.speedup
    lines.append("time-to-target speedup: " + (f"{speedup:.1f}x" if speedup is not None
                                               else "none (the seed recipe never got there)"))
    return lines
