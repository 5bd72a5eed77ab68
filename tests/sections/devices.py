"""Device checks without a GPU, on PyTorch's `meta` device: its tensors have shapes but no
values, and an operation that mixes a meta tensor with a CPU one fails as it would on CUDA.

An operation that needs values (`.item()`, a boolean mask) cannot run there at all; such a
stop says nothing about devices, so it is not held against the code. Any other error is the
code's own, and the test reports it as it would anywhere.
"""

from __future__ import annotations

from collections.abc import Callable

from course.registry import STUB_MESSAGE


def mixed_devices(call: Callable[[], object]) -> str | None:
    """Run `call()`: the error's message if it mixed tensors of two devices, None if it ran,
    or stopped only because the meta device has no values (torch says "meta" in each such
    error: "cannot be called on meta tensors", "no data", a missing "Meta" kernel).

    Raises:
        whatever else `call()` raised: a stub's NotImplementedError, or an error of the
        code's own, which says nothing about devices and must not pass for a device check.
    """
    try:
        call()
    except (RuntimeError, NotImplementedError) as err:
        text = str(err)
        if STUB_MESSAGE.search(text):
            raise
        if "device" in text and "meta" in text and "cpu" in text:
            return text
        if "meta" not in text.lower():
            raise
    return None
