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

from course.given import check_device_request

__all__ = ["DEVICE_ENV_VAR", "get_device", "set_seed"]

DEVICE_ENV_VAR = "ELMO_DEVICE"


def set_seed(seed: int) -> None:
    """Seed python's `random`, numpy and torch (CPU and every CUDA device) with `seed`.

    On CUDA, cuDNN's LSTM kernels repeat exactly only when told to: set
    `torch.backends.cudnn.deterministic = True` and `torch.backends.cudnn.benchmark = False`.

    Args:
        seed: a non-negative integer below 2**32 (numpy's limit).
    """
    raise NotImplementedError("section 1 (setup): set_seed is not implemented yet")


def get_device(preferred: str | torch.device | None = None) -> torch.device:
    """The device to run on: `preferred` if given, else `$ELMO_DEVICE` (the environment
    variable named by `DEVICE_ENV_VAR`) if it is set and not empty, else CUDA where torch
    can use it (as `torch.cuda.is_available` reports; the tests pretend both ways), else
    CPU.

    Args:
        preferred: "cpu", "cuda", "cuda:1", a `torch.device`, or None to decide automatically.

    Returns:
        a `torch.device` (never a string), whichever way it was chosen.

    Raises:
        ValueError: the requested device is not a valid device string (from the given
            `check_device_request`, before your code runs).
        RuntimeError: CUDA was requested but is not available on this machine (idem).
    """
    check_device_request(preferred, DEVICE_ENV_VAR)  # clear errors for a bad request, given
    raise NotImplementedError("section 1 (setup): get_device is not implemented yet")

