"""Device checks without a GPU, on PyTorch's `meta` device: its tensors have shapes but no
values, and an operation that mixes a meta tensor with a CPU one fails as it would on CUDA.

An operation that needs values (`.item()`, a boolean mask) cannot run there at all; such a
stop says nothing about devices, so it is not held against the code.
"""

from __future__ import annotations

from collections.abc import Callable

from course.registry import STUB_MESSAGE


def mixed_devices(call: Callable[[], object]) -> str | None:
    """Run `call()`: the error's message if it mixed tensors of two devices, else None.
    A stub's NotImplementedError goes on up: a stub is not implemented, not right."""
    try:
        call()
    except (RuntimeError, NotImplementedError) as err:  # NotImplementedError: no meta kernel
        if STUB_MESSAGE.search(str(err)):
            raise
        text = str(err)
        if "device" in text and "meta" in text and "cpu" in text:
            return text
    return None
