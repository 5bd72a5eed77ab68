# Section 1 of the ELMo course. This file is yours: replace each
# `raise NotImplementedError(...)` with your code, then run `make test SECTION=1`.
"""Section 1 - Setup: reproducible seeds and device selection.

Every later section calls `set_seed` before it initialises weights or shuffles data,
and `get_device` to decide where tensors live. Two runs with one seed give bit-identical
losses and embeddings on CPU; on CUDA, cuDNN's LSTM kernels are deterministic once
`torch.backends.cudnn.deterministic` is set, which `set_seed` does.
"""

from __future__ import annotations

import os
import random

import numpy as np
import torch

__all__ = ["DEVICE_ENV_VAR", "get_device", "set_seed"]

DEVICE_ENV_VAR = "ELMO_DEVICE"


def set_seed(seed: int) -> None:
    """Seed python's `random`, numpy and torch (CPU and every CUDA device) with `seed`.

    On CUDA, cuDNN's LSTM kernels repeat exactly only when told to: set
    `torch.backends.cudnn.deterministic = True` and `torch.backends.cudnn.benchmark = False`.

    Args:
        seed: a non-negative integer below 2**32 (numpy's limit).

    Raises:
        TypeError: `seed` is not an int (from the given `_check_seed`).
        ValueError: `seed` is negative or too large for numpy (from `_check_seed`).
    """
    _check_seed(seed)  # clear errors for a bad seed, given below
    raise NotImplementedError("section 1 (setup): set_seed is not implemented yet")


def get_device(preferred: str | torch.device | None = None) -> torch.device:
    """The device to run on: `preferred` if given, else `$ELMO_DEVICE` (the environment
    variable named by `DEVICE_ENV_VAR`) if it is set and not empty, else CUDA when
    `torch.cuda.is_available()`, else CPU.

    Args:
        preferred: "cpu", "cuda", "cuda:1", a `torch.device`, or None to decide automatically.

    Returns:
        a `torch.device` (never a string), whichever way it was chosen.

    Raises:
        ValueError: the requested device is not a valid device string (from the given
            `_check_device_request`, before your code runs).
        RuntimeError: CUDA was requested but is not available on this machine (idem).
    """
    _check_device_request(preferred)  # clear errors for a bad request, given below
    raise NotImplementedError("section 1 (setup): get_device is not implemented yet")


def _check_seed(seed: int) -> None:
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise TypeError(f"set_seed expects an int seed, got {type(seed).__name__} {seed!r}")
    if not 0 <= seed < 2**32:
        raise ValueError(f"set_seed expects 0 <= seed < 2**32, got {seed}")


def _check_device_request(preferred: str | torch.device | None) -> None:
    """The request that get_device follows (the argument, else a non-empty $ELMO_DEVICE)
    must name a device, and CUDA only where there is one; the error says where it came from."""
    if preferred is not None:
        choice, source = preferred, "get_device(preferred=...)"
    else:
        choice, source = os.environ.get(DEVICE_ENV_VAR) or None, f"${DEVICE_ENV_VAR}"
    if choice is None:
        return
    try:
        device = torch.device(choice)
    except (RuntimeError, TypeError) as err:
        raise ValueError(
            f"{source} must name a device such as 'cpu' or 'cuda', got {choice!r}"
        ) from err
    if device.type == "cuda" and not torch.cuda.is_available():
        raise RuntimeError(f"device {choice!r} was requested but CUDA is not available here")
