"""Hidden examples: with a term secret (`python -m grading --secret-file`), each section's
property tests run under hypothesis's "hidden" profile (tests/sections/conftest.py: random
examples, several times as many), so that code fitted to the examples a learner sees fails.

The examples are drawn per submission: a run's seed is the secret's MAC of the section and of
the module's bytes, so the same module gets the same examples and the same verdict under the
same secret, and whatever one run could learn of its own examples tells nothing of another
module's, a classmate's or its own next version. The seed never enters a run as such: the
run's server hands it to the run's plugin (`HiddenSeeds`), which gives each property test a
seed of its own, derived from it, as the tests are collected, before any of the submission's
code runs, and drops it. The secret stays in the grader: a report holds only a digest of it,
in the settings key (so that results graded under one secret are not reused under another).
"""

from __future__ import annotations

import hashlib
import hmac
from pathlib import Path

import pytest

PROFILE = "hidden"
SECRET_MIN_BYTES = 16


def read_secret(path: Path) -> bytes:
    """The secret in `path`, without the whitespace around it.

    Raises:
        OSError: the file cannot be read.
        ValueError: it holds fewer than SECRET_MIN_BYTES bytes.
    """
    secret = Path(path).read_bytes().strip()
    if len(secret) < SECRET_MIN_BYTES:
        raise ValueError(f"{path} holds {len(secret)} bytes, fewer than the "
                         f"{SECRET_MIN_BYTES} a secret needs (make one: python -c \"import "
                         f"secrets; print(secrets.token_hex(32))\" > {path})")
    return secret


def seed(secret: bytes, section: int, module: bytes) -> int:
    """The seed of section `section`'s run on `module` (its bytes) under `secret`: 64 bits of
    HMAC-SHA256."""
    message = f"hidden examples, section {section}\0".encode() + hashlib.sha256(module).digest()
    return int.from_bytes(hmac.new(secret, message, hashlib.sha256).digest()[:8], "big")


def test_seed(run_seed: int, test: str) -> int:
    """The seed of the property test `test` (its node id without parameters) in a run whose
    seed is `run_seed`: 64 bits, from which `run_seed` cannot be found."""
    mac = hmac.new(run_seed.to_bytes(8, "big"), test.encode(), hashlib.sha256)
    return int.from_bytes(mac.digest()[:8], "big")


def digest(secret: bytes) -> str:
    """What the settings key holds of the secret: no way back to it, nor to a seed."""
    return hmac.new(secret, b"settings key", hashlib.sha256).hexdigest()


class HiddenSeeds:
    """A run's pytest plugin under hidden examples: it gives each collected property test its
    `test_seed` (hypothesis draws a test's examples from `Random(seed)`), then forgets the
    run's seed. The same seed and the same tests give the same examples in any run, the
    learner's or the reference's, whichever of the tests it selects."""

    def __init__(self, run_seed: int) -> None:
        self._run_seed: int | None = run_seed

    @pytest.hookimpl(trylast=True)
    def pytest_collection_modifyitems(self, items: list[pytest.Item]) -> None:
        for item in items:
            test = getattr(item, "obj", None)
            if getattr(test, "hypothesis", None) is not None:
                test._hypothesis_internal_use_seed = test_seed(
                    self._run_seed, item.nodeid.split("[", 1)[0])
        self._run_seed = None
