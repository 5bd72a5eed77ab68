"""python -m grading.report GRADES.json [--out DIR]: what a class's grades say about the class
and about the tests, written as DIR/report.md and DIR/report.html (the same content; the HTML
self-contained, its figure an embedded PNG).

GRADES.json is the grader's `--json` (`grading.outputs.FORMAT`). The report holds

* each section's score distribution: a histogram per section, and its mean, median, share at
  full credit and share at zero;
* each test's pass rate and discrimination, the point-biserial correlation between passing it
  and the rest of the submission's score (its total of the 100 without the test's own
  section); a test of parameters passes when every case of it passes. A test that nobody or
  everybody passes is flagged "review"; where the outcome or the rest of the score is the
  same for every submission, the discrimination is "n/a";
* the same per concept (`course.concepts`): a submission passes a concept when it passes all
  of its tests that ran;
* the known mistakes that the class's failures match (`course.signatures.likely` on each
  section's failing tests; a tie counts each of the tied mistakes);
* the submissions with a penalised flag (`grading.scan`), listed apart with their flags and
  left out of every statistic above.
"""

from __future__ import annotations

import argparse
import base64
import html
import io
import math
import statistics
import sys
from dataclasses import dataclass
from pathlib import Path

from matplotlib.figure import Figure

from course import signatures
from course.concepts import concept_of, title_of
from course.registry import SECTIONS
from course.results import NOT_IMPLEMENTED, PASSED

from .outputs import number, read_grades, shown
from .scoring import SubmissionResult

FIGURE = "scores.png"
NA = "n/a"
REVIEW = "review"


@dataclass(frozen=True)
class Item:
    """A test function or a concept of a section, across the class."""

    section: int
    name: str
    ran: int  # submissions it ran for
    passed: int  # of those, the ones that passed it
    discrimination: float | None  # None: the outcome or the rest of the score is constant
    concept: str = ""  # for a test: the concept it checks

    @property
    def review(self) -> bool:
        """Nobody or everybody passes it: it tells the class apart in nothing."""
        return self.ran > 0 and self.passed in (0, self.ran)


def flagged(result: SubmissionResult) -> bool:
    return any(f.penalised for f in result.all_flags)


def point_biserial(passed: list[bool], rest: list[float]) -> float | None:
    """The Pearson correlation between passing (1 or 0) and the rest of the score; None when
    either is the same for every submission."""
    n = len(passed)
    if n < 2 or len(set(passed)) < 2 or max(rest) - min(rest) < 1e-9:
        return None
    mean_x, mean_y = sum(passed) / n, sum(rest) / n
    cov = sum((x - mean_x) * (y - mean_y) for x, y in zip(passed, rest, strict=True))
    var_x = sum((x - mean_x) ** 2 for x in passed)
    var_y = sum((y - mean_y) ** 2 for y in rest)
    return cov / math.sqrt(var_x * var_y)


def outcomes_of(result: SubmissionResult) -> dict[tuple[int, str], bool]:
    """{(section, test function): passed every case of it} for every test that ran."""
    outcomes: dict[tuple[int, str], bool] = {}
    for section in result.sections:
        for test in section.tests:
            key = (section.number, test.name.split("[")[0])
            outcomes[key] = outcomes.get(key, True) and test.status == PASSED
    return outcomes


def rest_of_score(result: SubmissionResult, section: int) -> float:
    """The submission's total of the 100 without section `section`'s points."""
    return sum(s.score for s in result.sections if not s.bonus and s.number != section)


def _items(results: list[SubmissionResult], key_of) -> list[Item]:
    """An Item per key that `key_of(section, test)` gives (None: left out), passed by a
    submission when it passes every test of that key that ran."""
    outcomes: dict[tuple[int, str], dict[int, bool]] = {}
    for index, result in enumerate(results):
        for (section, test), passed in outcomes_of(result).items():
            key = key_of(section, test)
            if key is not None:
                by_submission = outcomes.setdefault((section, key), {})
                by_submission[index] = by_submission.get(index, True) and passed
    items = []
    for (section, name), by_submission in outcomes.items():
        passed = list(by_submission.values())
        rest = [rest_of_score(results[i], section) for i in by_submission]
        concept = concept_of(section, name)
        items.append(Item(section, name, len(passed), sum(passed),
                          point_biserial(passed, rest), concept.id if concept else ""))
    return items


def per_test(results: list[SubmissionResult]) -> list[Item]:
    """Every test function of the class's results, in the order they ran."""
    return _items(results, lambda section, test: test)


def per_concept(results: list[SubmissionResult]) -> list[Item]:
    """Every concept whose tests ran (`course.concepts`), in the order they first ran."""
    def key(section: int, test: str) -> str | None:
        concept = concept_of(section, test)
        return concept.id if concept else None

    return [Item(i.section, i.name, i.ran, i.passed, i.discrimination)
            for i in _items(results, key)]


def section_scores(results: list[SubmissionResult]) -> dict[int, list[float]]:
    """{section: its score in each submission that it was graded for}, in course order."""
    scores: dict[int, list[float]] = {}
    for section in sorted({s.number for r in results for s in r.sections}):
        scores[section] = [s.score for r in results for s in r.sections if s.number == section]
    return scores


def misconceptions(results: list[SubmissionResult],
                   known: list[signatures.Known]) -> list[tuple[signatures.Known, int]]:
    """(each known mistake, how many submissions' failing tests in its section match it
    best), most frequent first within each section, the ones nobody matches left out. A
    section that a submission left untouched (every test reached a stub) matches nothing."""
    counts: dict[str, int] = {}
    for result in results:
        for section in result.sections:
            if all(t.status == NOT_IMPLEMENTED for t in section.tests):
                continue
            ran = {t.name.split("[")[0] for t in section.tests}
            failed = {t.name.split("[")[0] for t in section.tests if t.status != PASSED}
            if failed:
                for k in signatures.likely(section.number, failed, ran, known)[1]:
                    counts[k.id] = counts.get(k.id, 0) + 1
    found = [(k, counts[k.id]) for k in known if k.id in counts]
    return sorted(found, key=lambda kc: (kc[0].section, -kc[1]))


# --- the report, as blocks that both Markdown and HTML render -------------------------------


def _share(part: int, whole: int) -> str:
    return f"{100 * part / whole:.0f} %" if whole else NA


def _r(value: float | None) -> str:
    return NA if value is None else f"{value:+.2f}"


def _title(section: int) -> str:
    match = next((s for s in SECTIONS if s.number == section), None)
    return f"{section} {match.name}" if match else str(section)


def scores_figure(scores: dict[int, list[float]]) -> bytes:
    """A histogram of each section's scores, as PNG bytes."""
    points = {s.number: s.points for s in SECTIONS}
    columns = 4
    rows = max(1, math.ceil(len(scores) / columns))
    figure = Figure(figsize=(3 * columns, 2.4 * rows), layout="constrained")
    axes = figure.subplots(rows, columns, squeeze=False).ravel()
    for ax, (section, values) in zip(axes, scores.items(), strict=False):
        top = points.get(section, max(values, default=1)) or 1
        ax.hist(values, bins=10, range=(0, top), color="#4c72b0", edgecolor="white")
        ax.set_title(_title(section), fontsize=10)
        ax.set_xlabel("points")
        ax.set_xlim(0, top)
    for ax in axes[len(scores):]:
        ax.set_visible(False)
    axes[0].set_ylabel("submissions")
    out = io.BytesIO()
    figure.savefig(out, format="png", dpi=100)
    return out.getvalue()


def build(results: list[SubmissionResult], source: str,
          known: list[signatures.Known] | None = None) -> list[tuple]:
    """The report as blocks: ("h", text), ("p", text), ("table", headers, rows),
    ("figure", file name, PNG bytes) and ("list", items). `known`: the mistakes to count
    (default: those `course.signatures` recorded)."""
    kept = [r for r in results if not flagged(r)]
    apart = [r for r in results if flagged(r)]
    known = signatures.load()[0] if known is None else known
    blocks: list[tuple] = [
        ("h", f"Class report: {shown(source)}"),
        ("p", f"{len(results)} submissions: {len(kept)} in the statistics, {len(apart)} "
              "flagged (listed at the end, left out of the statistics).")]
    scores = section_scores(kept)
    points = {s.number: s.points for s in SECTIONS}
    blocks += [("h", "Scores per section"), ("figure", FIGURE, scores_figure(scores))]
    rows = []
    for section, values in scores.items():
        full = sum(v >= points.get(section, 0) - 1e-9 for v in values)
        zero = sum(v <= 1e-9 for v in values)
        rows.append([_title(section), str(points.get(section, "")),
                     number(statistics.mean(values)) if values else NA,
                     number(statistics.median(values)) if values else NA,
                     _share(full, len(values)), _share(zero, len(values))])
    blocks.append(("table", ["section", "points", "mean", "median", "full credit", "zero"],
                   rows))
    blocks += [("h", "Tests"),
               ("p", "Pass rate among the submissions the test ran for; discrimination: the "
                     "point-biserial correlation of passing it with the rest of the score "
                     "(the total without its own section). Review: nobody or everybody "
                     "passes it.")]
    blocks.append(("table", ["section", "test", "concept", "pass rate", "discrimination", ""],
                   [[_title(i.section), i.name, i.concept, _share(i.passed, i.ran),
                     _r(i.discrimination), REVIEW if i.review else ""]
                    for i in per_test(kept)]))
    blocks += [("h", "Concepts"),
               ("p", "A submission passes a concept when it passes every test of it that "
                     "ran.")]
    blocks.append(("table", ["section", "concept", "pass rate", "discrimination", ""],
                   [[_title(i.section), i.name, _share(i.passed, i.ran),
                     _r(i.discrimination), REVIEW if i.review else ""]
                    for i in per_concept(kept)]))
    blocks.append(("h", "Known mistakes"))
    if not known:
        blocks.append(("p", "No signatures recorded (make signatures records them), so no "
                            "failure is matched to a known mistake."))
    else:
        found = misconceptions(kept, known)
        blocks.append(("p", "Each section's failing tests against the catalogue's signatures "
                            "(a tie counts each mistake of it)."
                       + ("" if found else " No submission's failures match one.")))
        blocks.append(("list", [f"{_share(count, len(kept))} of the class ({count} of "
                                f"{len(kept)}), section {_title(k.section)}: {k.mistake} "
                                f"({title_of(k.concept)})" for k, count in found]))
    blocks.append(("h", "Flagged submissions"))
    blocks.append(("list", [f"{shown(r.name)}: " + "; ".join(shown(f) for f in r.all_flags)
                            for r in apart] or ["none"]))
    return blocks


def _md_cell(text: str) -> str:
    """A table's cell: printable, its pipes escaped, no code span (a pipe in one shows)."""
    return shown(text).replace("|", "\\|").replace("`", "'")


def markdown(blocks: list[tuple]) -> str:
    lines: list[str] = []
    for block in blocks:
        kind = block[0]
        if kind == "h":
            lines += [("# " if not lines else "## ") + block[1], ""]
        elif kind == "p":
            lines += [block[1], ""]
        elif kind == "figure":
            lines += [f"![scores per section]({block[1]})", ""]
        elif kind == "list":
            lines += [f"* {item}" for item in block[1]] + [""]
        elif kind == "table":
            headers, rows = block[1], block[2]
            lines += ["| " + " | ".join(map(_md_cell, headers)) + " |",
                      "|" + "---|" * len(headers),
                      *("| " + " | ".join(map(_md_cell, row)) + " |" for row in rows), ""]
    return "\n".join(lines)


def to_html(blocks: list[tuple]) -> str:
    e = html.escape
    body: list[str] = []
    for block in blocks:
        kind = block[0]
        if kind == "h":
            body.append(f"<h{1 if not body else 2}>{e(block[1])}</h{1 if not body else 2}>")
        elif kind == "p":
            body.append(f"<p>{e(block[1])}</p>")
        elif kind == "figure":
            data = base64.b64encode(block[2]).decode()
            body.append(f'<img alt="scores per section" src="data:image/png;base64,{data}">')
        elif kind == "list":
            body.append("<ul>" + "".join(f"<li>{e(i)}</li>" for i in block[1]) + "</ul>")
        elif kind == "table":
            head = "".join(f"<th>{e(h)}</th>" for h in block[1])
            rows = "".join("<tr>" + "".join(f"<td>{e(str(c))}</td>" for c in row) + "</tr>"
                           for row in block[2])
            body.append(f"<table><tr>{head}</tr>{rows}</table>")
    style = ("body{font-family:sans-serif;max-width:70em;margin:2em auto}"
             "table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:2px 6px;"
             "text-align:left}img{max-width:100%}")
    title = e(blocks[0][1]) if blocks else "Class report"
    return (f'<!DOCTYPE html>\n<html><head><meta charset="utf-8"><title>{title}</title>'
            f"<style>{style}</style></head><body>\n" + "\n".join(body) + "\n</body></html>\n")


def write_report(results: list[SubmissionResult], out: Path, source: str = "",
                 known: list[signatures.Known] | None = None) -> list[Path]:
    """Write out/report.md (with out/scores.png beside it) and out/report.html; their
    paths."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    blocks = build(results, source, known)
    figure = next(b for b in blocks if b[0] == "figure")
    paths = [out / "report.md", out / FIGURE, out / "report.html"]
    paths[0].write_text(markdown(blocks))
    paths[1].write_bytes(figure[2])
    paths[2].write_text(to_html(blocks))
    return paths


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m grading.report",
                                description=__doc__.split("\n\n")[0])
    p.add_argument("grades", type=Path, metavar="GRADES.json",
                   help="what python -m grading --json wrote")
    p.add_argument("--out", type=Path, default=Path("build/class-report"), metavar="DIR",
                   help="where report.md and report.html go (default build/class-report)")
    args = p.parse_args(argv)
    try:
        results = read_grades(args.grades)
    except (OSError, ValueError, KeyError, TypeError) as err:
        print(f"grading.report: {err}", file=sys.stderr)
        return 1
    for path in write_report(results, args.out, str(args.grades)):
        print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
