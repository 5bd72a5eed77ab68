"""python -m grading.similarity SUBMISSIONS_DIR [--grades GRADES.json] [--out DIR]: what the
submissions of a class share, written as DIR/similarity.md and DIR/similarity.json for an
instructor to read (docs/instructors.md, "What the submissions share"). Offline: nothing of a
submission is run.

copydetect compares each section module of every two submissions, read as the grader reads
them (`grading.submissions`) and laid out by `ast.unparse`, with the handout's module and the
reference's as boilerplate, so that the stubs' given code, and code written as the reference
writes it, count for nothing; and each submission's modules with the reference's, the handout
alone as boilerplate. With `--grades` (the grader's `--json`), the groups of submissions that
fail a test with the same wrong output (`reported_digest`) or else the same message. Evidence
for a person to read, never a verdict.
"""

from __future__ import annotations

import argparse
import ast
import hashlib
import io
import json
import sys
from itertools import combinations
from pathlib import Path

from copydetect import CodeFingerprint, compare_files
from copydetect.utils import get_token_coverage

from course import signatures
from course.registry import EXERCISES_DIR, REFERENCE_DIR, SECTIONS
from course.results import ERROR, FAILED

from .outputs import number, read_grades, shown
from .report import markdown as render
from .submissions import Submission, read_submission, unique_names

FORMAT = "similarity/1"
NOISE = 25  # copydetect's k: the shortest run of filtered code that counts as shared
PAIR_AT_LEAST = 0.6  # share of each side's own code that the other side holds too
PAIR_CHARS = 200  # characters of filtered code shared, at least: less is a few lines
SECTION_AT_LEAST = 0.9  # or in one section alone (a copy of part of the work)
SECTION_CHARS = 300
REFERENCE_AT_LEAST = 0.9  # share of a submission's own code that is the reference's
REFERENCE_CHARS = 600  # a section or two of a few lines as the reference writes them is
# what independent work looks like
MOST_SHARED = 0.5  # a wrong output that more of the class shares is no evidence of copying
HANDOUT_MANIFEST = ".generated.json"  # the generator's digests, beside the stubs
SEPARATOR = "\n$\n"  # between two statements: no Python, so copydetect keeps it as it is


def canonical(source: str) -> str:
    """`source` as `ast.unparse` lays it out (comments and layout gone), each top-level
    statement, and each statement of a class, apart: SEPARATOR between them, so that the
    order of functions changes nothing. As it is when it does not parse."""
    def statements(body: list[ast.stmt]):
        for node in body:
            yield from statements(node.body) if isinstance(node, ast.ClassDef) else [
                ast.unparse(node)]

    try:
        return SEPARATOR.join(statements(ast.parse(source).body))
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return source


def fingerprint(source: str, boilerplate: frozenset[int] = frozenset()) -> CodeFingerprint:
    """copydetect's fingerprint of `canonical(source)`: every k-gram kept (window 1: no
    dependence on the string hash's seed) but those of `boilerplate` and those across a
    SEPARATOR. Dropped here, not by copydetect's `boilerplate` argument, which also drops a
    k-gram that merely repeats in `source`."""
    found = CodeFingerprint("module.py", NOISE, 1, language="python",
                            fp=io.StringIO(canonical(source)))
    code, mark = found.filtered_code, SEPARATOR.strip()
    found.hash_idx = {h: kept for h, at in found.hash_idx.items() if h not in boilerplate
                      and (kept := [i for i in at if mark not in code[i:i + NOISE]])}
    found.hashes = set(found.hash_idx)
    found.token_coverage = get_token_coverage(found.hash_idx, NOISE, len(code))
    return found


def given(source: str) -> frozenset[int]:
    """The k-grams of `source` (a handout's or the reference's module), laid out as it is and
    as `ast.unparse` lays it out: boilerplate for a submission that parses and one that does
    not."""
    raw = CodeFingerprint("module.py", NOISE, 1, language="python", fp=io.StringIO(source))
    return frozenset(raw.hashes | fingerprint(source).hashes)


def shared(one: CodeFingerprint, other: CodeFingerprint) -> tuple[int, int, int, int]:
    """Characters of each side's filtered code that lie in shared k-grams, and each side's
    own (boilerplate left out)."""
    _, (share_one, share_other), _ = compare_files(one, other)
    own_one, own_other = int(one.token_coverage), int(other.token_coverage)
    return round(share_one * own_one), round(share_other * own_other), own_one, own_other


def _ratio(part: int, whole: int) -> float:
    return round(part / whole, 3) if whole else 0.0


def read_handout(handout_dir: Path = EXERCISES_DIR) -> dict[str, str]:
    """The handout's section modules, {file name: text}, as `make exercises` wrote them.

    Raises:
        ValueError: a module differs from the digest the generator recorded for it (someone
            filled in the stubs of this checkout), naming it and the fix.
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


def compare(submissions: list[Submission], handouts: dict[str, str]
            ) -> tuple[list[dict], list[dict]]:
    """The pairs of `submissions` that share their own code, most first, and the
    submissions whose own code is the reference's, as the JSON holds them."""
    prints: dict[str, dict[int, CodeFingerprint]] = {s.name: {} for s in submissions}
    as_reference: dict[str, dict[int, tuple]] = {s.name: {} for s in submissions}
    for section in SECTIONS:
        name = section.file_name
        if name not in handouts or not (REFERENCE_DIR / name).exists():
            continue
        handout, reference = given(handouts[name]), (REFERENCE_DIR / name).read_text()
        explained, key = handout | given(reference), fingerprint(reference, handout)
        for submission in submissions:
            if name in submission.modules:
                source = submission.modules[name].decode(errors="replace")
                prints[submission.name][section.number] = fingerprint(source, explained)
                as_reference[submission.name][section.number] = shared(
                    fingerprint(source, handout), key)
    pairs = []
    for one, other in combinations(submissions, 2):
        parts = {n: shared(prints[one.name][n], prints[other.name][n])
                 for n in sorted(prints[one.name].keys() & prints[other.name].keys())}
        a, b, own_a, own_b = (sum(column) for column in zip(*parts.values(), strict=True)) \
            if parts else (0, 0, 0, 0)
        whole = min(_ratio(a, own_a), _ratio(b, own_b)) >= PAIR_AT_LEAST \
            and min(a, b) >= PAIR_CHARS
        if whole or any(min(_ratio(pa, oa), _ratio(pb, ob)) >= SECTION_AT_LEAST
                        and min(pa, pb) >= SECTION_CHARS for pa, pb, oa, ob in parts.values()):
            pairs.append({"a": one.name, "b": other.name, "share_a": _ratio(a, own_a),
                          "share_b": _ratio(b, own_b), "sections": {
                              n: {"share_a": _ratio(pa, oa), "share_b": _ratio(pb, ob),
                                  "chars": min(pa, pb)}
                              for n, (pa, pb, oa, ob) in parts.items() if pa or pb}})
    pairs.sort(key=lambda p: (-min(p["share_a"], p["share_b"]), p["a"], p["b"]))
    matches = []
    for name, parts in as_reference.items():
        mine, own = sum(p[0] for p in parts.values()), sum(p[2] for p in parts.values())
        if _ratio(mine, own) >= REFERENCE_AT_LEAST and mine >= REFERENCE_CHARS:
            matches.append({"name": name, "share": _ratio(mine, own), "sections": {
                n: _ratio(p[0], p[2]) for n, p in parts.items() if p[2]}})
    matches.sort(key=lambda m: (-m["share"], m["name"]))
    return pairs, matches


def shared_wrong_outputs(results, known: list[signatures.Known]) -> list[dict]:
    """The groups of at least two submissions, and at most MOST_SHARED of the class, whose
    failing records of one section's tests carry the same wrong output's digest (`by`
    "output") or, without one, the same message (`by` "message"), rarest first; each with
    the catalogued mistakes that fail its tests, unless its message quotes the learners' own
    line."""
    holders: dict[tuple, set[str]] = {}
    for result in results:
        for section in result.sections:
            for test in section.tests:
                if test.status in (FAILED, ERROR):
                    digest = test.reported_digest
                    key = (section.number, test.name, digest, "" if digest else test.message)
                    holders.setdefault(key, set()).add(result.name)
    merged: dict[tuple, list[str]] = {}
    for (section, test, digest, message), names in holders.items():
        if 2 <= len(names) <= max(2, MOST_SHARED * len(results)):
            merged.setdefault((section, digest, message, frozenset(names)), []).append(test)
    groups = []
    for (section, digest, message, names), tests in merged.items():
        functions = {t.split("[")[0] for t in tests}
        groups.append({
            "section": section, "tests": sorted(tests),
            "message": message or f"wrong output {digest}", "submissions": sorted(names),
            "of": len(results), "by": "output" if digest else "message", "digest": digest,
            "catalogued": [] if " line " in message else sorted(
                k.id for k in known if k.section == section and functions <= k.tests)})
    groups.sort(key=lambda g: (len(g["submissions"]), bool(g["catalogued"]),
                               -len(g["tests"]), g["section"], g["tests"]))
    return groups


def read_class(folder: Path) -> list[Submission]:
    """Every submission of `folder` (dot-files left out), named as the grader names them."""
    submissions = [read_submission(p) for p in sorted(Path(folder).iterdir())
                   if not p.name.startswith(".")]
    unique_names(submissions)
    return submissions


def build(submissions: list[Submission], results=None, known=None, handouts=None) -> dict:
    """The report as the JSON holds it. `results`: the grades (None: no wrong outputs);
    `known`: the catalogued mistakes (default `course.signatures`'); `handouts`: as
    `read_handout()` reads them (its default)."""
    pairs, matches = compare(submissions, read_handout() if handouts is None else handouts)
    known = signatures.load()[0] if known is None and results is not None else known
    return {
        "format": FORMAT,
        "settings": {"noise": NOISE, "pair_at_least": PAIR_AT_LEAST, "pair_chars": PAIR_CHARS,
                     "section_at_least": SECTION_AT_LEAST, "section_chars": SECTION_CHARS,
                     "reference_at_least": REFERENCE_AT_LEAST,
                     "reference_chars": REFERENCE_CHARS, "most_shared": MOST_SHARED},
        "submissions": [{"name": s.name, "modules": sorted(s.modules), "error": s.error,
                         "unreadable": s.unreadable} for s in submissions],
        "pairs": pairs, "reference": matches,
        "wrong_outputs": None if results is None else shared_wrong_outputs(results, known)}


def _percent(share: float) -> str:
    return f"{number(100 * share)} %"


def _table(headers: list[str], rows: list[list[str]]) -> tuple:
    return ("table", headers, rows) if rows else ("p", "None.")


def markdown(report: dict) -> str:
    """similarity.md: the report's lists as tables (`grading.report`'s blocks)."""
    s = report["settings"]
    blocks = [
        ("h", f"Similarity of {len(report['submissions'])} submissions"),
        ("p", "Evidence for a person to read, never a verdict (how to read it: "
              "docs/instructors.md, \"What the submissions share\"). Compared: each section "
              "module beyond the handout's code and the reference's, by copydetect (runs of "
              f"{s['noise']} characters of code, names and strings left out)."),
        ("h", f"Pairs: at least {_percent(s['pair_at_least'])} of each side's own code shared "
              f"({s['pair_chars']} characters at least), or {_percent(s['section_at_least'])} "
              f"in one section ({s['section_chars']})"),
        _table(["a", "b", "of a's code", "of b's code", "sections (a / b, characters)"], [
            [p["a"], p["b"], _percent(p["share_a"]), _percent(p["share_b"]), "; ".join(
                f"{n}: {_percent(d['share_a'])} / {_percent(d['share_b'])}, {d['chars']}"
                for n, d in p["sections"].items())] for p in report["pairs"]]),
        ("h", f"The reference: at least {_percent(s['reference_at_least'])} of a submission's "
              f"own code ({s['reference_chars']} characters at least)"),
        _table(["submission", "of its code", "sections"], [
            [m["name"], _percent(m["share"]), "; ".join(
                f"{n}: {_percent(v)}" for n, v in m["sections"].items())]
            for m in report["reference"]])]
    if report["wrong_outputs"] is not None:
        blocks += [
            ("h", "Shared wrong outputs, rarest first"),
            ("p", "by output: the same wrong tensor's digest, as each run reported it; by "
                  "message: the same message, where the test recorded no tensor; catalogued: a "
                  "known mistake fails these tests (weaker evidence)."),
            _table(["section", "tests", "by", "same", "submissions", "catalogued"], [
                [str(g["section"]), ", ".join(g["tests"]), g["by"], g["message"],
                 f"{len(g['submissions'])} of {g['of']}: {', '.join(g['submissions'])}",
                 ", ".join(g["catalogued"])] for g in report["wrong_outputs"]])]
    skipped = [shown(f"{s['name']}: {why}") for s in report["submissions"]
               for why in [s["error"]] * bool(s["error"]) + [
                   f"{m}: {w}" for m, w in s["unreadable"].items()]]
    blocks += [("h", "Not compared"), ("list", skipped) if skipped else ("p", "Nothing.")]
    return render(blocks)


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
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "similarity.md").write_text(markdown(report))
    (args.out / "similarity.json").write_text(json.dumps(report, indent=1) + "\n")
    print(f"{args.out / 'similarity.md'}\n{args.out / 'similarity.json'}\n"
          f"{len(report['pairs'])} pair(s), {len(report['reference'])} match(es) of the "
          "reference" + ("" if results is None else
                         f", {len(report['wrong_outputs'])} shared wrong output(s)"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
