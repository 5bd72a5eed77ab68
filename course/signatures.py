"""Failures diagnosed by pattern: which catalogued mistake a learner's failing tests look like.

`make signatures` (maintainers) runs every mistake of the catalogue against its section's
whole test file and records its signature, the set of tests it fails, in `signatures.json`
beside this file, with what the learner reads of it: the mistake in words and the concept
it violates (never its code). When a run of a section's tests fails, the report compares
the failing tests with each signature of that section, restricted to the tests that ran, by
their Jaccard similarity |failed ∩ signature| / |failed ∪ signature|, and names the mistakes
that score highest, if that is at least `MATCH_AT_LEAST`: 1 is the very same set. Where
several score so, it names those whose failures read as the learner's (`fingerprint`: each
failing test's message, its numbers and the tests' own words aside, and the wrong output it
saw), if any do. A fingerprint keeps of a message what the learner's code put in it (the
values, the names a test chose by what it found), never the words the test writes, so that
rewording a message changes no signature.
"""

from __future__ import annotations

import ast
import hashlib
import json
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path

SIGNATURES_FILE = Path(__file__).with_name("signatures.json")
MATCH_AT_LEAST = 0.5  # half the tests in common, of those either fails
# What differs between two runs of one mistake: numbers, and the reprs of objects (their
# addresses, and a module's folder, the learner's or a scratch one)
VARYING = re.compile(r"<[^<>]*>|0x[0-9a-f]+|\d+(?:\.\d+)?(?:e[-+]?\d+)?")
# pytest's `assert ...` line of a failed assert, after the test's message; the explanation
# below it is cut to 8 lines unless -vv or $CI, so it differs between two runs of one mistake
ASSERT_LINE = re.compile(r"^(?:AssertionError: )?assert ", re.MULTILINE)
COMPARISONS = Path(__file__).with_name("diagnose.py")  # whose messages the tests' checks use
WRITTEN_AT_LEAST = 3  # characters, one a letter: shorter literals are punctuation, or a value's


@dataclass(frozen=True)
class Known:
    """A catalogued mistake as the learner may read it."""

    id: str
    section: int
    mistake: str  # what the learner wrote, in words
    concept: str  # the id of the concept it violates (`course.concepts`)
    tests: frozenset[str]  # the section's tests it fails: its signature
    # {test: fingerprint} of the failures it made when measured
    fingerprints: dict[str, str] = field(default_factory=dict, hash=False, compare=False)


MESSAGE_ARGUMENTS = ("hint", "err_msg")  # the keywords of the checks that carry a message


def _words(tree: ast.AST) -> list[ast.Constant]:
    """The string literals of a test file's messages (an `assert`'s, `pytest.fail`'s, a
    check's `hint=` or `err_msg=`, f-strings' literal parts included) and its docstrings: its
    words, never its inputs or expected values (a word a message takes from those, "numpy"
    from a list of generators, stays what it is: a value)."""
    messages = [node.msg for node in ast.walk(tree) if isinstance(node, ast.Assert) and node.msg]
    messages += [k.value for node in ast.walk(tree) if isinstance(node, ast.Call)
                 for k in node.keywords if k.arg in MESSAGE_ARGUMENTS]
    messages += [a for node in ast.walk(tree) if isinstance(node, ast.Call)
                 and ast.unparse(node.func) == "pytest.fail" for a in node.args]
    messages += [node.value for node in ast.walk(tree) if isinstance(node, ast.Expr)
                 and isinstance(node.value, ast.Constant)]  # docstrings
    return [node for message in messages for node in ast.walk(message)
            if isinstance(node, ast.Constant) and isinstance(node.value, str)]


@cache
def written_by_the_tests(test_file: Path) -> tuple[str, ...]:
    """What the tests of `test_file` write themselves into a message: the words of its
    messages and every string literal of the comparisons (`course/diagnose.py`, which words
    the checks' messages), longest first."""
    comparisons = ast.parse(COMPARISONS.read_text())
    literals = {node.value for node in _words(ast.parse(test_file.read_text()))}
    literals |= {node.value for node in ast.walk(comparisons)
                 if isinstance(node, ast.Constant) and isinstance(node.value, str)}
    return tuple(sorted((text for text in literals if len(text.strip()) >= WRITTEN_AT_LEAST
                         and any(c.isalpha() for c in text)), key=len, reverse=True))


def code_digest(path: Path) -> str:
    """A digest of the Python file `path` (a test file, a reference module) without the
    words of its messages and docstrings (`_words`): it changes with what the code does and
    checks, inputs and expected values included, not with how it words them."""
    tree = ast.parse(path.read_text())
    for node in _words(tree):
        node.value = ""
    return hashlib.sha256(ast.dump(tree).encode()).hexdigest()


def fingerprint(message: str, digest: str | None, written: Iterable[str] = ()) -> str:
    """How a test failed: a hash of its message (up to pytest's `assert` line, if any) with
    the tests' own words (`written`, `written_by_the_tests`), every number and every object
    repr masked, and the digest of the wrong output it saw (`course.diagnose.digest_of`), if
    any."""
    assert_line = ASSERT_LINE.search(message)
    end = message.find("\n", assert_line.end()) if assert_line else -1
    if end >= 0:  # the explanation below the assert line
        message = message[:end]
    message = " ".join(message.split())
    for words in written:
        message = message.replace(" ".join(words.split()), "\0")
    masked = VARYING.sub("#", message)
    return f"{hashlib.sha256(masked.encode()).hexdigest()[:12]}/{digest or ''}"


def dump(known: Iterable[Known], digests: dict[str, str], path: Path = SIGNATURES_FILE) -> None:
    """Write the signatures, with the digests of the files they were measured on."""
    records = [{"id": k.id, "section": k.section, "mistake": k.mistake, "concept": k.concept,
                "tests": sorted(k.tests), "fingerprints": dict(sorted(k.fingerprints.items()))}
               for k in known]
    path.write_text(json.dumps({"measured_on": digests, "mistakes": records}, indent=1) + "\n")


def load(path: Path = SIGNATURES_FILE) -> tuple[list[Known], dict[str, str]]:
    """(every signature, the digests of the files they were measured on); none if absent."""
    if not path.exists():
        return [], {}
    data = json.loads(path.read_text())
    known = [Known(r["id"], r["section"], r["mistake"], r["concept"], frozenset(r["tests"]),
                   r.get("fingerprints", {})) for r in data["mistakes"]]
    return known, data["measured_on"]


def similarity(failed: frozenset[str], signature: frozenset[str]) -> float:
    union = failed | signature
    return len(failed & signature) / len(union) if union else 0.0


def likely(section: int, failed: Iterable[str], ran: Iterable[str] | None = None,
           known: list[Known] | None = None, seen: dict[str, str] | None = None
           ) -> tuple[float, list[Known]]:
    """(the best score, the mistakes of `section` that reach it), or (score, []) when no
    signature reaches `MATCH_AT_LEAST`. `failed` and `ran` are test names without
    parameters; a signature counts only the tests that ran (all, if `ran` is None). Given
    `seen`, the failing tests' fingerprints, of several mistakes that reach the best score
    by explaining the same failing tests only those that `fail_alike` are named, if any do;
    each part of the failures keeps its own."""
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
    tied = [k for score, k in scored if score == best]
    parts: dict[frozenset[str], list[Known]] = {}  # the failing tests each one explains
    for k in tied:
        parts.setdefault(k.tests & failed, []).append(k)
    return best, [k for part in parts.values() for k in _narrowed(part, seen or {})]


def _narrowed(tied: list[Known], seen: dict[str, str]) -> list[Known]:
    """Of mistakes that explain the same failing tests, those that fail as the learner's
    did: the same messages and outputs, else the same messages, else all of them."""
    for whole in (True, False):
        alike = [k for k in tied if fail_alike(k, seen, whole)]
        if alike:
            return alike
    return tied


def fail_alike(known: Known, seen: dict[str, str], whole: bool = True) -> bool:
    """Whether the failing tests' fingerprints `seen` are those `known` recorded, on every
    test both have (at least one): messages and outputs, or (not `whole`) messages alone."""
    def part(fp: str) -> str:
        return fp if whole else fp.split("/")[0]

    shared = [test for test in seen if test in known.fingerprints]
    return bool(shared) and all(part(seen[t]) == part(known.fingerprints[t]) for t in shared)
