"""Hidden examples: with a term secret (`python -m grading --secret-file FILE`), each
section's property tests run under hypothesis's "hidden" profile (tests/sections/conftest.py:
random examples, several times as many) from a seed that the secret and the section give, so
that code fitted to the examples a learner sees fails, and the same submission gets the same
verdict under the same secret. The secret and the seeds stay in the grader: a report holds
neither, only a digest of the secret in the settings key (so that results graded under one
secret are not reused under another).
"""

from __future__ import annotations

import hashlib
import hmac
from pathlib import Path

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


def seed(secret: bytes, section: int) -> int:
    """Section `section`'s seed under `secret`: 64 bits of HMAC-SHA256."""
    mac = hmac.new(secret, f"hidden examples, section {section}".encode(), hashlib.sha256)
    return int.from_bytes(mac.digest()[:8], "big")


def digest(secret: bytes) -> str:
    """What the settings key holds of the secret: no way back to it, nor to a seed."""
    return hmac.new(secret, b"settings key", hashlib.sha256).hexdigest()
