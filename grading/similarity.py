"""python -m grading.similarity SUBMISSIONS_DIR [--grades GRADES.json] [--out DIR]: what the
submissions of a class have in common, written as DIR/similarity.md and DIR/similarity.json,
for an instructor to read. Offline, and nothing of a submission is run.

Each entry of SUBMISSIONS_DIR (a folder or a `.zip`, dot-files left out) is read as the grader
reads it (`grading.submissions`). The report holds

* **pairs**: for each section, the learner's part of each module (`learner_part`: what
  differs from the handout, `exercises/` as `make exercises` generated it from the
  reference, its manifest's digests checked: the functions a learner fills in, and anything
  a learner added), in a canonical layout
  (`ast.unparse`: comments and formatting gone), is compared with every other submission's
  by copydetect's fingerprints (every run of NOISE characters of code in which names and
  strings are filtered out, so that renaming changes nothing and the order of functions
  little), with the handout and the reference as boilerplate: code that two submissions
  share only because both took it from the handout or wrote it as the reference does counts
  for nothing. A pair is listed when, over the sections both hold, the shared code is at
  least PAIR_AT_LEAST of each side's own code and PAIR_CHARS characters of filtered code, or
  in one section alone SECTION_AT_LEAST and SECTION_CHARS (part of the work copied); each
  section's shares are shown;
* **the reference**: each submission's learner part compared with the reference's, the
  handout as boilerplate; one that is REFERENCE_AT_LEAST the reference's (REFERENCE_CHARS
  characters at least) is listed apart (a learner may have seen it: a published solution,
  a former year's);
* with `--grades` (the grader's `--json` of the same class), **shared wrong outputs**: the
  groups of submissions whose failing record of one test carries the same wrong output's
  fingerprint (`reported_digest`: `course.diagnose`'s `output_digest`, the shape and values
  the learner's code computed, where the test compares a tensor with `assert_close`, as the
  run reported it: a submission could report any), or else the same message; the tests'
  inputs are fixed, so the same digest is the same wrong output on the same probe input.
  Rarest first; a group that a catalogued mistake explains (`course.signatures`: it fails
  those tests) is marked so: a common misconception is weaker evidence (not where the
  message quotes the learner's own line: that is their code). The grader's messages hold no
  text of a run (docs/instructors.md): without a digest, a wrong answer reads `failed:
  AssertionError in the test's checks`, an error the exception and the learner's own line,
  so two wrong answers to one test read alike whatever each computed; what sets such a group
  apart is which tests it fails, and an error's quoted line. Each group says which it is
  (`by`: "output" or "message").

All of it is evidence for a person to read, never a verdict: small functions are written
alike by people who never met, and a whole class makes the same common mistakes.
"""

from __future__ import annotations

import argparse
import ast
import copy
import hashlib
import io
import json
import sys
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from itertools import combinations
from pathlib import Path

from copydetect import CodeFingerprint, compare_files
from copydetect.utils import get_token_coverage

from course import signatures
from course.registry import EXERCISES_DIR, REFERENCE_DIR, SECTIONS, Section
from course.results import ERROR, FAILED

from .reports import number, read_grades, shown
from .submissions import Submission, read_submission, unique_names

FORMAT = "similarity/1"
NOISE = 25  # copydetect's k: the shortest run of filtered code that counts as shared
PAIR_AT_LEAST = 0.6  # share of each side's own code that the other side holds too
PAIR_CHARS = 200  # characters of filtered code shared, at least: less is a few lines
SECTION_AT_LEAST = 0.9  # or in one section alone (a copy of part of the work)
SECTION_CHARS = 300
REFERENCE_AT_LEAST = 0.9  # share of a submission's own code that is the reference's
REFERENCE_CHARS = 600  # characters of filtered code: a section or two of a few lines, written
# as the reference writes them, is what independent work looks like
MOST_SHARED = 0.5  # a wrong output that more of the class shares is no evidence of copying
WRONG = (FAILED, ERROR)
SEPARATOR = "\n$\n"  # between two statements: no Python, so copydetect keeps it as it is,
# and a run of code across it does not count (it spans two pieces that the learner wrote apart)


# --- the learner's part of a module ------------------------------------------------------------


def _parsed(source: str) -> list[ast.stmt] | None:
    """The statements of `source` without docstrings (the handout's words, or a learner's:
    not code); None when it does not parse."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if isinstance(body, list) and body and isinstance(body[0], ast.Expr) and isinstance(
                body[0].value, ast.Constant) and isinstance(body[0].value.value, str):
            node.body = body[1:] or [ast.Pass()]
    return tree.body


def _pieces(body: list[ast.stmt], classes: set[str], prefix: str = "") -> dict[str, str]:
    """{key: canonical text} of the statements of `body`, each as `ast.unparse` writes it
    (comments and layout gone): a definition keyed by its qualified name, any other statement
    by its text; a class that `classes` names by its body's statements instead."""
    found = {}
    for node in body:
        name = getattr(node, "name", None)
        qualified = f"{prefix}{name}" if name else None
        if isinstance(node, ast.ClassDef) and qualified in classes:
            found.update(_pieces(node.body, classes, f"{qualified}."))
        else:
            text = ast.unparse(node)
            found[qualified or text] = text
    return found


def _classes(body: list[ast.stmt], prefix: str = "") -> set[str]:
    found = set()
    for node in body:
        if isinstance(node, ast.ClassDef):
            found |= {f"{prefix}{node.name}", *_classes(node.body, f"{prefix}{node.name}.")}
    return found


def learner_part(source: str, handout: str) -> str:
    """What of `source` (a section module) is not the handout's `handout` module: each
    function, method or other statement that the handout does not hold as it is (a
    filled-in stub, a learner's own helper), in canonical form, in the order of `source`,
    SEPARATOR between them. A module that does not parse is its learner's part whole (the
    handout's code in it is boilerplate)."""
    body, given = _parsed(source), _parsed(handout)
    if body is None or given is None:
        return source
    classes = _classes(given)
    theirs = _pieces(given, classes)
    return SEPARATOR.join(text for key, text in _pieces(body, classes).items()
                          if theirs.get(key) != text)


def given_code(source: str, handout: str) -> str:
    """Every statement of `source` (the handout's module or the reference's), cut as
    `learner_part` cuts a submission's."""
    body, given = _parsed(source), _parsed(handout)
    return SEPARATOR.join(_pieces(body, _classes(given)).values())


# --- fingerprints and comparisons --------------------------------------------------------------


def fingerprint(text: str) -> CodeFingerprint:
    """copydetect's fingerprint of Python `text`: every k-gram kept (window 1), so that the
    result does not depend on the string hash's seed, but those across a SEPARATOR."""
    found = CodeFingerprint("module.py", NOISE, 1, language="python", fp=io.StringIO(text))
    return without(found, frozenset())


def without(found: CodeFingerprint, boilerplate: frozenset[int]) -> CodeFingerprint:
    """A copy of `found` without the hashes of `boilerplate`. (copydetect's own
    `boilerplate` drops one occurrence of a repeated k-gram only, and fails on hashes that
    repeat: they are dropped here.)"""
    kept = copy.copy(found)
    code, mark = found.filtered_code, SEPARATOR.strip()
    kept.hash_idx = {h: at for h, where in found.hash_idx.items() if h not in boilerplate
                     and (at := [i for i in where if mark not in code[i:i + NOISE]])}
    kept.hashes = set(kept.hash_idx)
    kept.token_coverage = get_token_coverage(kept.hash_idx, NOISE, len(code))
    return kept


@dataclass(frozen=True)
class Shared:
    """What two texts share in one section: characters of filtered code of each side that
    lie in shared fingerprints, and each side's characters that count at all (boilerplate
    left out)."""

    a: int
    b: int
    own_a: int
    own_b: int

    @property
    def share_a(self) -> float:
        return self.a / self.own_a if self.own_a else 0.0

    @property
    def share_b(self) -> float:
        return self.b / self.own_b if self.own_b else 0.0


def shared(one: CodeFingerprint, other: CodeFingerprint) -> Shared:
    _, (share_a, share_b), _ = compare_files(one, other)
    own_a, own_b = int(one.token_coverage), int(other.token_coverage)
    return Shared(round(share_a * own_a), round(share_b * own_b), own_a, own_b)


@dataclass
class Pair:
    a: str
    b: str
    share_a: float  # of a's own code, over the sections both hold
    share_b: float
    sections: dict[int, dict] = field(default_factory=dict)  # {number: {share_a, share_b, chars}}


@dataclass
class ReferenceMatch:
    name: str
    share: float  # of its own code, over its sections
    sections: dict[int, float] = field(default_factory=dict)


def _hashes(source: str, handout: str) -> frozenset[int]:
    """The fingerprints of `source` (the handout's module or the reference's) as it is, for
    a learner's module that does not parse, and cut as `learner_part` cuts one that does."""
    return frozenset(fingerprint(source).hashes | fingerprint(given_code(source, handout)).hashes)


def _total(parts: list[Shared]) -> tuple[float, float]:
    own_a, own_b = sum(p.own_a for p in parts), sum(p.own_b for p in parts)
    return (sum(p.a for p in parts) / own_a if own_a else 0.0,
            sum(p.b for p in parts) / own_b if own_b else 0.0)


HANDOUT_MANIFEST = ".generated.json"  # tools/exercises.py writes it beside the stubs


def read_handout(handout_dir: Path = EXERCISES_DIR) -> dict[str, str]:
    """The handout's section modules, {file name: text}, each as `make exercises` wrote it.

    Raises:
        ValueError: a module differs from the digest the generator recorded for it (a
            checkout in which someone filled in the stubs), naming it and the fix.
    """
    manifest = json.loads((handout_dir / HANDOUT_MANIFEST).read_text())["files"]
    handouts, changed = {}, []
    for name, digest in manifest.items():
        path = handout_dir / name
        data = path.read_bytes() if path.exists() else b""
        if hashlib.sha256(data).hexdigest() != digest:
            changed.append(name)
        handouts[name] = data.decode()
    if changed:
        raise ValueError(f"{handout_dir}: {', '.join(changed)} not as the generator wrote "
                         "them: compare against a clean handout (`make exercises FORCE=1`, "
                         "or a fresh clone)")
    return handouts


def compare(submissions: list[Submission], reference_dir: Path = REFERENCE_DIR,
            sections: Iterable[Section] = SECTIONS, handouts: dict[str, str] | None = None
            ) -> tuple[list[Pair], list[ReferenceMatch]]:
    """The pairs of `submissions` that share their own code, best first, and the
    submissions whose code is the reference's; `handouts` the handout's modules
    (`read_handout()` when None)."""
    handouts = read_handout() if handouts is None else handouts
    prints: dict[str, dict[int, CodeFingerprint]] = {s.name: {} for s in submissions}
    against_reference: dict[str, dict[int, Shared]] = {s.name: {} for s in submissions}
    for section in sections:
        name = section.file_name
        if name not in handouts or not (reference_dir / name).exists():
            continue
        handout, reference = handouts[name], (reference_dir / name).read_text()
        given = _hashes(handout, handout)
        explained = given | _hashes(reference, handout)
        key = without(fingerprint(learner_part(reference, handout)), given)
        for submission in submissions:
            if name not in submission.modules:
                continue
            source = submission.modules[name].decode(errors="replace")
            part = fingerprint(learner_part(source, handout))
            prints[submission.name][section.number] = without(part, explained)
            against_reference[submission.name][section.number] = shared(
                without(part, given), key)
    pairs = []
    for one, other in combinations(submissions, 2):
        parts = {n: shared(prints[one.name][n], prints[other.name][n])
                 for n in prints[one.name].keys() & prints[other.name].keys()}
        share_a, share_b = _total(list(parts.values()))
        chars = min(sum(p.a for p in parts.values()), sum(p.b for p in parts.values()))
        whole = min(share_a, share_b) >= PAIR_AT_LEAST and chars >= PAIR_CHARS
        if not whole and not any(min(p.share_a, p.share_b) >= SECTION_AT_LEAST
                                 and min(p.a, p.b) >= SECTION_CHARS for p in parts.values()):
            continue
        pairs.append(Pair(one.name, other.name, round(share_a, 3), round(share_b, 3), {
            n: {"share_a": round(p.share_a, 3), "share_b": round(p.share_b, 3),
                "chars": min(p.a, p.b)} for n, p in sorted(parts.items()) if p.a or p.b}))
    pairs.sort(key=lambda p: (-min(p.share_a, p.share_b), p.a, p.b))
    matches = []
    for name, parts in against_reference.items():
        share, _ = _total(list(parts.values()))
        if share >= REFERENCE_AT_LEAST and sum(p.a for p in parts.values()) >= REFERENCE_CHARS:
            matches.append(ReferenceMatch(name, round(share, 3), {
                n: round(p.share_a, 3) for n, p in sorted(parts.items()) if p.own_a}))
    matches.sort(key=lambda m: (-m.share, m.name))
    return pairs, matches


# --- shared wrong outputs ----------------------------------------------------------------------


@dataclass
class WrongOutput:
    """Submissions whose failing records of `tests` (of `section`) carry the same wrong
    output (`by` "output": its `digest`) or else the same message (`by` "message")."""

    section: int
    tests: list[str]
    message: str
    submissions: list[str]
    of: int  # submissions graded
    catalogued: list[str] = field(default_factory=list)  # mistakes that fail these tests
    by: str = "message"
    digest: str | None = None


def shared_wrong_outputs(results, known: list[signatures.Known] | None = None
                         ) -> list[WrongOutput]:
    """The groups of at least two, and at most MOST_SHARED of the class, rarest first."""
    known = signatures.load()[0] if known is None else known
    holders: dict[tuple[int, str, str | None, str], set[str]] = {}
    for result in results:
        for section in result.sections:
            for test in section.tests:
                if test.status in WRONG:
                    digest = test.reported_digest
                    key = (section.number, test.name, digest, "" if digest else test.message)
                    holders.setdefault(key, set()).add(result.name)
    merged: dict[tuple, list[tuple[str, str]]] = {}
    for (section, test, digest, message), names in holders.items():
        if 2 <= len(names) <= max(2, MOST_SHARED * len(results)):
            merged.setdefault((section, digest, message, frozenset(names)), []).append(
                (test, message))
    groups = []
    for (section, digest, message, names), tests in merged.items():
        functions = {t.split("[")[0] for t, _ in tests}
        quotes = " line " in message  # the learner's own line: theirs, not the mistake's
        explained = [] if quotes else sorted(
            k.id for k in known if k.section == section and functions <= k.tests)
        groups.append(WrongOutput(section, sorted(t for t, _ in tests),
                                  message or f"wrong output {digest}", sorted(names),
                                  len(results), explained, "output" if digest else "message",
                                  digest))
    groups.sort(key=lambda g: (len(g.submissions), bool(g.catalogued), -len(g.tests),
                               g.section, g.tests))
    return groups


# --- the report --------------------------------------------------------------------------------


def read_class(folder: Path) -> list[Submission]:
    """Every submission of `folder`, named as the grader names them."""
    entries = sorted(p for p in Path(folder).iterdir() if not p.name.startswith("."))
    submissions = [read_submission(p) for p in entries]
    unique_names(submissions)
    return submissions


def _cell(text: str) -> str:
    return shown(text).replace("|", "\\|").replace("`", "'")


def _some(names: list[str], shown_at_most: int = 3) -> str:
    more = len(names) - shown_at_most
    return ", ".join(names[:shown_at_most]) + (f" and {more} more" if more > 0 else "")


def _percent(share: float) -> str:
    return f"{number(100 * share)} %"


def markdown(report: dict) -> str:
    s = report["settings"]
    lines = [
        f"# Similarity of {len(report['submissions'])} submissions", "",
        "Evidence for a person to read, never a verdict: small functions are written alike "
        "by people who never met, and a class makes the same common mistakes. Compared: what "
        "each module holds that the handout does not, with the handout and the reference as "
        "boilerplate; names and strings do not count (copydetect, runs of "
        f"{s['noise']} characters of filtered code).", "",
        f"## Pairs: at least {_percent(s['pair_at_least'])} of each side's own code shared "
        f"({s['pair_chars']} characters at least), or {_percent(s['section_at_least'])} in "
        f"one section ({s['section_chars']} characters)", ""]
    if report["pairs"]:
        lines += ["| a | b | of a's code | of b's code | sections (a / b, characters) |",
                  "|---|---|---|---|---|"]
        for p in report["pairs"]:
            detail = "; ".join(f"{n}: {_percent(d['share_a'])} / {_percent(d['share_b'])}, "
                               f"{d['chars']}" for n, d in p["sections"].items())
            lines.append(f"| {_cell(p['a'])} | {_cell(p['b'])} | {_percent(p['share_a'])} | "
                         f"{_percent(p['share_b'])} | {detail} |")
    else:
        lines.append("None.")
    lines += ["", f"## The reference: at least {_percent(s['reference_at_least'])} of a "
              f"submission's own code, and {s['reference_chars']} characters of it", ""]
    if report["reference"]:
        lines += ["| submission | of its code | sections |", "|---|---|---|"]
        for m in report["reference"]:
            detail = "; ".join(f"{n}: {_percent(v)}" for n, v in m["sections"].items())
            lines.append(f"| {_cell(m['name'])} | {_percent(m['share'])} | {detail} |")
    else:
        lines.append("None.")
    if report["wrong_outputs"] is not None:
        lines += ["", "## Shared wrong outputs, rarest first", "",
                  "The same failing record of the same test (a probe input the course fixes): "
                  "*by output*, the same wrong tensor (its shape and values: the same digest, "
                  "as each run reported it: a submission could report any); "
                  "*by message*, where the test recorded no tensor, the same message. The "
                  "grader's messages hold no text of a run: every wrong answer to a test "
                  "reads alike, so what sets a group by message apart is which tests it fails "
                  "and an error's quoted line. *catalogued*: a known mistake fails these "
                  "tests, a common misconception, weaker evidence.", ""]
        if report["wrong_outputs"]:
            lines += ["| section | tests | by | same | submissions | catalogued |",
                      "|---|---|---|---|---|---|"]
            for g in report["wrong_outputs"]:
                lines.append(
                    f"| {g['section']} | {_cell(', '.join(g['tests']))} | {g['by']} | "
                    f"{_cell(g['message'])} "
                    f"| {len(g['submissions'])} of {g['of']}: "
                    f"{_cell(', '.join(g['submissions']))} | {_some(g['catalogued'])} |")
        else:
            lines.append("None.")
    lines += ["", "## Not compared", ""]
    skipped = [(s["name"], why) for s in report["submissions"]
               for why in ([s["error"]] if s["error"] else []) + [
                   f"{m}: {w}" for m, w in s["unreadable"].items()]]
    lines += [f"* {_cell(name)}: {_cell(why)}" for name, why in skipped] or ["Nothing."]
    return "\n".join(lines) + "\n"


def build(submissions: list[Submission], results=None, reference_dir: Path = REFERENCE_DIR,
          known: list[signatures.Known] | None = None,
          handouts: dict[str, str] | None = None) -> dict:
    """The report as the JSON holds it (`handouts`: as `compare` takes them)."""
    pairs, matches = compare(submissions, reference_dir, handouts=handouts)
    return {
        "format": FORMAT,
        "settings": {"noise": NOISE, "pair_at_least": PAIR_AT_LEAST,
                     "reference_at_least": REFERENCE_AT_LEAST,
                     "pair_chars": PAIR_CHARS,
                     "section_at_least": SECTION_AT_LEAST, "section_chars": SECTION_CHARS,
                     "reference_chars": REFERENCE_CHARS, "most_shared": MOST_SHARED},
        "submissions": [{"name": s.name, "modules": sorted(s.modules), "error": s.error,
                         "unreadable": s.unreadable} for s in submissions],
        "pairs": [asdict(p) for p in pairs],
        "reference": [asdict(m) for m in matches],
        "wrong_outputs": None if results is None else [
            asdict(g) for g in shared_wrong_outputs(results, known)],
    }


def write_report(report: dict, out: Path) -> list[Path]:
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    paths = [out / "similarity.md", out / "similarity.json"]
    paths[0].write_text(markdown(report))
    paths[1].write_text(json.dumps(report, indent=1) + "\n")
    return paths


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m grading.similarity",
                                description=__doc__.split("\n\n")[0])
    p.add_argument("submissions", type=Path, metavar="SUBMISSIONS_DIR",
                   help="a folder holding one folder or .zip per submission")
    p.add_argument("--grades", type=Path, metavar="GRADES.json",
                   help="the grader's --json of the same class: adds the shared wrong outputs")
    p.add_argument("--out", type=Path, default=Path("build/similarity"), metavar="DIR",
                   help="where similarity.md and similarity.json go (default build/similarity)")
    args = p.parse_args(argv)
    try:
        submissions = read_class(args.submissions)
        results = read_grades(args.grades) if args.grades else None
        handouts = read_handout()
    except (OSError, ValueError, KeyError, TypeError) as err:
        print(f"grading.similarity: {err}", file=sys.stderr)
        return 1
    report = build(submissions, results, handouts=handouts)
    for path in write_report(report, args.out):
        print(path)
    print(f"{len(report['pairs'])} pair(s), {len(report['reference'])} match(es) of the "
          "reference" + ("" if results is None else
                         f", {len(report['wrong_outputs'])} shared wrong output(s)"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
