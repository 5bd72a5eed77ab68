"""Tensor-aware failure messages: when a section test's tensor differs from what it expects,
say which of the catalogue's usual mistakes turns the expected tensor into the learner's,
before any number.

    assert_close(found, expected, "layer 1 of the padded batch", time_dim=0)

raises AssertionError("layer 1 of the padded batch differs from what is expected: it matches
the expected one with the time axis reversed ...") when flipping time makes them agree. Each
transform is tried on the expected tensor and named only when the result matches the
learner's within the same tolerance as the test's own comparison: never one that is merely
closer. Where none matches, the message gives the largest difference and where it is, not
a dump of the tensors.

The AssertionError carries `output_digest`, a fingerprint of what the learner's code
computed (its shape and its values to the test's tolerance): the grader keeps it in the
instructors' results, where two submissions with the same wrong output on a test's fixed
inputs show it (`grading.similarity`). It holds nothing of the expected tensor.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable

import torch

# A transform gives the part of the learner's tensor and what it should then equal.
Pair = tuple[torch.Tensor, torch.Tensor] | None
Transform = Callable[[torch.Tensor, torch.Tensor, int], Pair]


def _reversed(found: torch.Tensor, expected: torch.Tensor, time_dim: int) -> Pair:
    return found, expected.flip(time_dim)


def _shifted(step: int) -> Transform:
    """found[t] = expected[t - step] wherever both exist (the first or last step has none)."""
    def shift(found: torch.Tensor, expected: torch.Tensor, time_dim: int) -> Pair:
        length = expected.shape[time_dim]
        if length < 3 or found.shape != expected.shape:
            return None
        later, earlier = (found.narrow(time_dim, step, length - step),
                          expected.narrow(time_dim, 0, length - step)) if step > 0 else (
            found.narrow(time_dim, 0, length + step), expected.narrow(time_dim, -step,
                                                                      length + step))
        return later, earlier
    return shift


def _halves_swapped(found: torch.Tensor, expected: torch.Tensor, time_dim: int) -> Pair:
    if expected.shape[-1] % 2:
        return None
    first, second = expected.chunk(2, dim=-1)
    return found, torch.cat([second, first], dim=-1)


def _transposed(found: torch.Tensor, expected: torch.Tensor, time_dim: int) -> Pair:
    if expected.dim() < 2:
        return None
    return found, expected.transpose(time_dim, 1 if time_dim == 0 else 0)


# What each transform means in the course's terms, in the order they are tried.
TRANSFORMS: dict[str, Transform] = {
    "the time axis reversed (a sequence read back to front, or reversed twice)": _reversed,
    "every position shifted one step later in time (targets or states off by one)":
        _shifted(1),
    "every position shifted one step earlier in time (targets or states off by one)":
        _shifted(-1),
    "the two halves of the last axis swapped (the forward and backward directions in the "
    "wrong order)": _halves_swapped,
    "the time and batch axes swapped ((B, T) where (T, B) is asked, or the reverse)":
        _transposed,
}


USUAL_FACTORS = (0.5, 2.0)  # two directions averaged, or summed twice


def _matches(found: torch.Tensor, candidate: torch.Tensor | None, atol: float,
             rtol: float) -> bool:
    return (candidate is not None and candidate.shape == found.shape
            and bool(torch.allclose(found, candidate, atol=atol, rtol=rtol)))


def diagnose(found: torch.Tensor, expected: torch.Tensor, time_dim: int = 0,
             atol: float = 1e-5, rtol: float = 1e-4) -> str | None:
    """The catalogue mistake that maps `expected` onto `found` within tolerance, in words,
    or None: a transform of the axes (above), a constant factor (a scale missing or
    applied twice, a mean for a sum), or a normalisation over another axis (a softmax over
    the wrong dimension)."""
    found, expected = found.detach().double().cpu(), expected.detach().double().cpu()
    for meaning, transform in TRANSFORMS.items() if expected.dim() > time_dim else ():
        pair = transform(found, expected, time_dim)
        if pair is not None and not _matches(found, expected, atol, rtol) and _matches(
                *pair, atol, rtol):
            return meaning
    if found.shape != expected.shape:
        return None
    scale = float((found * expected).sum() / (expected * expected).sum().clamp_min(1e-30))
    # One number is always some factor of another: there, only a factor that a usual mistake
    # gives (a mean where a sum is asked, or the reverse) says anything.
    usual = expected.numel() > 1 or any(abs(scale - f) < 1e-3 for f in USUAL_FACTORS)
    if usual and abs(scale - 1) > 1e-3 and abs(scale) > 1e-6 and _matches(
            found, scale * expected, atol, rtol):
        return (f"the expected values times {scale:.4g} (a scale factor missing or applied "
                "twice, or a mean where a sum is asked, or the reverse)")
    for dim in range(found.dim()):
        ones = torch.ones_like(found.sum(dim))
        if (_matches(found.sum(dim), ones, 1e-4, 0) and expected.dim() > 1
                and not _matches(expected.sum(dim), ones, 1e-4, 0)):
            return (f"values that sum to 1 along axis {dim}, where the expected ones do not (a "
                    "softmax or normalisation over the wrong axis)")
    return None


def difference(found: torch.Tensor, expected: torch.Tensor, dims: tuple[str, ...] = ()
               ) -> str:
    """The largest difference and where it is, in one line: at index (2, 0, 16), or, given
    a name per dimension (`dims`), at layer 2, position 0, unit 16; of a scalar, the two
    values."""
    if found.shape != expected.shape:
        return f"shape {tuple(found.shape)} where {tuple(expected.shape)} is expected"
    found, expected = found.detach().double().cpu(), expected.detach().double().cpu()
    gap = (found - expected).abs()
    if gap.dim() == 0:  # one number: nowhere to place it
        return f"found {float(found):.4g}, expected {float(expected):.4g}"
    where = tuple(int(i) for i in torch.unravel_index(gap.argmax(), gap.shape))
    at = (", ".join(f"{name} {i}" for name, i in zip(dims, where, strict=True))
          if len(dims) == len(where) > 0 else f"index {where}")
    return (f"largest difference {float(gap.max()):.4g} at {at} (found "
            f"{float(found[where]):.4g}, expected {float(expected[where]):.4g}); "
            f"{int((gap > 0).sum())} of {gap.numel()} values differ")


DIGEST_LENGTH = 16  # hex digits of a wrong output's fingerprint


def output_digest(found: torch.Tensor, atol: float = 1e-5) -> str:
    """The first DIGEST_LENGTH hex digits of SHA-256 of `found`'s shape and its values in
    steps of `atol`: the same wrong output gives the same digest, and mostly also when it
    was computed in another order (a value near a step's edge may fall either side)."""
    values = found.detach().double().cpu()
    steps = torch.round(values / atol).nan_to_num(nan=0.5, posinf=0.25, neginf=-0.25)
    return hashlib.sha256(repr(tuple(values.shape)).encode() + steps.numpy().tobytes()
                          ).hexdigest()[:DIGEST_LENGTH]


def digest_of(error: BaseException | None) -> str | None:
    """The `output_digest` that `assert_close` gave the first error in `error`'s chain that
    has one, where it is a string: the wrong output a failing test saw."""
    seen = set()
    while error is not None and id(error) not in seen:
        seen.add(id(error))
        digest = getattr(error, "output_digest", None)
        if digest is not None:
            return digest if isinstance(digest, str) else None
        error = error.__cause__ or error.__context__
    return None


def assert_close(found: torch.Tensor, expected: torch.Tensor, what: str, time_dim: int = 0,
                 atol: float = 1e-5, rtol: float = 1e-4, hint: str = "",
                 dims: tuple[str, ...] = ()) -> None:
    """Raise AssertionError, in the course's terms, unless `found` is `expected` within
    tolerance: `what` differs, then the mistake that explains it (if one does), then `hint`,
    then the largest difference and where it is (`dims`: a name per dimension)."""
    found_t, expected_t = torch.as_tensor(found), torch.as_tensor(expected)
    if found_t.shape == expected_t.shape and torch.allclose(
            found_t.detach().double().cpu(), expected_t.detach().double().cpu(),
            atol=atol, rtol=rtol):
        return
    parts = [f"{what} differs from what is expected"]
    explained = diagnose(found_t, expected_t, time_dim, atol, rtol)
    if explained:
        parts.append(f"it matches the expected one with {explained}")
    if hint:
        parts.append(hint)
    parts.append(difference(found_t, expected_t, dims))
    error = AssertionError(": ".join(parts[:2]) + "".join(f"; {p}" for p in parts[2:]))
    error.output_digest = output_digest(found_t, atol)  # for the instructors' results
    raise error
