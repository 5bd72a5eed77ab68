"""Failures diagnosed by pattern: which catalogued mistake a learner's failing tests look like.

`make signatures` (maintainers) runs every mistake of the catalogue against its section's
whole test file and records its signature, the set of tests it fails, in `signatures.json`
beside this file, with what the learner reads of it: the mistake in words and the concept
it violates (never its code). When a run of a section's tests fails, the report compares
the failing tests with each signature of that section, restricted to the tests that ran, by
their Jaccard similarity |failed ∩ signature| / |failed ∪ signature|, and names the mistakes
that score highest, if that is at least `MATCH_AT_LEAST`: 1 is the very same set.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

SIGNATURES_FILE = Path(__file__).with_name("signatures.json")
MATCH_AT_LEAST = 0.5  # half the tests in common, of those either fails


@dataclass(frozen=True)
class Known:
    """A catalogued mistake as the learner may read it."""

    id: str
    section: int
    mistake: str  # what the learner wrote, in words
    concept: str  # what it violates
    tests: frozenset[str]  # the section's tests it fails: its signature


def dump(known: Iterable[Known], digests: dict[str, str], path: Path = SIGNATURES_FILE) -> None:
    """Write the signatures, with the digests of the files they were measured on."""
    records = [{"id": k.id, "section": k.section, "mistake": k.mistake, "concept": k.concept,
                "tests": sorted(k.tests)} for k in known]
    path.write_text(json.dumps({"measured_on": digests, "mistakes": records}, indent=1) + "\n")


def load(path: Path = SIGNATURES_FILE) -> tuple[list[Known], dict[str, str]]:
    """(every signature, the digests of the files they were measured on); none if absent."""
    if not path.exists():
        return [], {}
    data = json.loads(path.read_text())
    known = [Known(r["id"], r["section"], r["mistake"], r["concept"], frozenset(r["tests"]))
             for r in data["mistakes"]]
    return known, data["measured_on"]


def similarity(failed: frozenset[str], signature: frozenset[str]) -> float:
    union = failed | signature
    return len(failed & signature) / len(union) if union else 0.0


def likely(section: int, failed: Iterable[str], ran: Iterable[str] | None = None,
           known: list[Known] | None = None) -> tuple[float, list[Known]]:
    """(the best score, the mistakes of `section` that reach it), or (score, []) when no
    signature reaches `MATCH_AT_LEAST`. `failed` and `ran` are test names without
    parameters; a signature counts only the tests that ran (all, if `ran` is None)."""
    failed = frozenset(failed)
    ran = None if ran is None else frozenset(ran)
    scored = []
    for k in (load()[0] if known is None else known):
        signature = k.tests if ran is None else k.tests & ran
        if k.section == section and signature:
            scored.append((similarity(failed, signature), k))
    best = max((score for score, _ in scored), default=0.0)
    if best < MATCH_AT_LEAST:
        return best, []
    return best, [k for score, k in scored if score == best]
