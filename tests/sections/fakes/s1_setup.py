"""Section 1 as the other sections' tests need it, written for them, never the answer: a
seed that decides torch's, python's and numpy's draws, and a device that is the one asked
for, else CUDA where there is one, else the CPU."""

from __future__ import annotations

import random

import numpy as np
import torch


def set_seed(seed: int) -> None:
    """Seed python's, numpy's and torch's global generators with `seed`."""
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)


def get_device(preferred: str | torch.device | None = None) -> torch.device:
    """`preferred`, or CUDA where torch sees it, else the CPU (no environment variable: no
    test of another section sets one)."""
    if preferred is not None:
        return torch.device(preferred)
    return torch.device("cuda" if torch.cuda.is_available() else "cpu")
