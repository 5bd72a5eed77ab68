"""The progress table: every section's last result, when it ran, what changed since, the
hints used, and the next step.

    python -m course.progress [build/results.json] [--impl exercises] [--state FILE]
                              [--your-elmo FILE]

It reads the records that `course.results` wrote for the run that just ended and keeps them
in the learner's state (`course.state`, `build/progress.json`) in place of the earlier
records of the same sections: a run of one section changes that section's row only. Each
row shows the section's last result, when it ran, and "changed since" where the module's
bytes now differ from those that the run tested. Without a results file it only shows the
table.

A section earns its points (from `course.toml`) in proportion to the tests it passes, each
test counted by its concept's weight (`section_points`, the formula the grader uses too); a
bonus section's points come on top of the 100. The next step is the first section, in course
order, that is not done: its hint from the registry, and its first test that does not pass
(or the command that runs it).

After the table and the next step, each section that passed in this run shows a few lines of
what the learner's own ELMo computes, as the run wrote them (`--your-elmo`, below); then how
many predictions the learner made before the notebooks' experiments (`analyses.predictions`),
the latest beside what their biLM did. Nothing is scored.
"""

from __future__ import annotations

import argparse
import datetime
import json
import sys
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from .concepts import concept_of
from .registry import MAX_POINTS, RESULTS_FILE, ROOT, SECTIONS, YOUR_ELMO_FILE, Section, shown
from .state import STATE_FILE, SectionRun, State, module_digest

# The outcomes a record's "status" takes (`course.results` writes them; it imports them
# from here, so that this table does not need pytest).
PASSED, FAILED, ERROR, NOT_IMPLEMENTED, TIMEOUT = (
    "passed", "failed", "error", "not implemented", "timeout")
STATUSES = (PASSED, FAILED, ERROR, NOT_IMPLEMENTED, TIMEOUT)
BAR_WIDTH = 20
CHANGED = "changed since"


def weight_of(section: Section, test: str) -> int:
    """How many tests `test` (a test function's name; pytest's parameters, `test_x[3]`, are
    ignored) counts as in `section`'s points: its concept's weight in course.toml, else 1."""
    concept = concept_of(section.number, test)
    return section.weight(concept.id if concept else None)


def section_points(section: Section, tests: Iterable[tuple[str, bool]]) -> float:
    """What a section earns from a run of its tests, each given as (its name, whether it
    passed): the section's points shared by its tests in proportion to their weights
    (`weight_of`), the shares of those that pass. With no weight set, every test weighs 1:
    points * passed / tests."""
    weighed = [(weight_of(section, name), passed) for name, passed in tests]
    total = sum(weight for weight, _ in weighed)
    earned = sum(weight for weight, passed in weighed if passed)
    return section.points * earned / total if total else 0.0


@dataclass(frozen=True)
class SectionProgress:
    """One section's last test records (as `course.results` writes them), in the order they
    ran; when that run began (ISO 8601, "" if never), whether the module changed since, and
    how many hints the learner has seen for it."""

    section: Section
    records: tuple[dict, ...]
    ran_at: str = ""
    changed: bool = False
    hints_used: int = 0

    @property
    def total(self) -> int:
        return len(self.records)

    @property
    def passed(self) -> int:
        return sum(record["status"] == PASSED for record in self.records)

    @property
    def points(self) -> float:
        return section_points(self.section, [(r["name"], r["status"] == PASSED)
                                             for r in self.records])

    @property
    def done(self) -> bool:
        return self.total > 0 and self.passed == self.total

    @property
    def outcome(self) -> str:
        """"done", "not run", "not implemented yet", or the count of each other outcome."""
        if not self.total:
            return "not run"
        if self.done:
            return "done"
        counts = Counter(r["status"] for r in self.records if r["status"] != PASSED)
        if self.passed == 0 and set(counts) == {NOT_IMPLEMENTED}:
            return "not implemented yet"
        return ", ".join(f"{counts[s]} {s}" for s in STATUSES if counts[s])

    @property
    def state(self) -> str:
        """The outcome, then "changed since" and the hints used, where there are any."""
        notes = [CHANGED] if self.changed else []
        if self.hints_used:
            notes.append(f"{self.hints_used} hint{'s' * (self.hints_used > 1)} used")
        return "; ".join([self.outcome, *notes])

    @property
    def first_problem(self) -> dict | None:
        return next((r for r in self.records if r["status"] != PASSED), None)


def summarise(records: list[dict]) -> list[SectionProgress]:
    """Every section of the registry, with the records of its tests (none if it did not run)."""
    return [SectionProgress(s, tuple(r for r in records if r["section"] == s.number))
            for s in SECTIONS]


def from_state(state: State, impl_dir: Path) -> list[SectionProgress]:
    """Every section of the registry as the learner's state remembers it for `impl_dir`: its
    last run's records, when, whether its module changed since, the hints seen."""
    runs: dict[int, SectionRun] = state.runs_of(impl_dir)
    progress = []
    for section in SECTIONS:
        run = runs.get(section.number)
        changed = run is not None and run.module_digest is not None and (
            module_digest(impl_dir / section.file_name) != run.module_digest)
        progress.append(SectionProgress(
            section, run.records if run else (), run.ran_at if run else "", changed,
            state.hints_used(section)))
    return progress


def _number(value: float) -> str:
    return f"{value:.1f}".removesuffix(".0")


def _bar(fraction: float) -> str:
    filled = round(fraction * BAR_WIDTH)
    return f"[{'#' * filled}{'.' * (BAR_WIDTH - filled)}] {fraction:4.0%}"


def ago(ran_at: str, now: datetime.datetime | None = None) -> str:
    """When a run began, as a learner says it: "just now", "5 min ago", "3 h ago", "2 days
    ago"; "-" for never or an unreadable time."""
    try:
        then = datetime.datetime.fromisoformat(ran_at)
    except (TypeError, ValueError):
        return "-"
    seconds = max(0.0, ((now or datetime.datetime.now(datetime.UTC)) - then).total_seconds())
    if seconds < 60:
        return "just now"
    if seconds < 3600:
        return f"{int(seconds // 60)} min ago"
    if seconds < 86400:
        return f"{int(seconds // 3600)} h ago"
    days = int(seconds // 86400)
    return f"{days} day{'s' * (days > 1)} ago"


def table(progress: list[SectionProgress], now: datetime.datetime | None = None) -> str:
    """One row per section and a total: tests passed of total, points, a bar, when it last
    ran, and its state (outcome; "changed since"; hints used)."""
    width = max(len(p.section.name) + 8 * p.section.bonus for p in progress) + 4
    rows = [f"{'section':{width}} {'tests':>7} {'points':>9}  {'progress':{BAR_WIDTH + 7}}  "
            f"{'last run':12} state"]
    for p in progress:
        label = f"{p.section.number:2} {p.section.name}" + (" (bonus)" if p.section.bonus else "")
        tests = f"{p.passed}/{p.total}" if p.total else "-"
        points = f"{_number(p.points)}/{p.section.points}"
        bar = _bar(p.passed / p.total) if p.total else " " * (BAR_WIDTH + 7)
        when = ago(p.ran_at, now) if p.total else "-"
        rows.append(f"{label:{width}} {tests:>7} {points:>9}  {bar}  {when:12} {p.state}")
    passed, total = sum(p.passed for p in progress), sum(p.total for p in progress)
    core = sum(p.points for p in progress if not p.section.bonus)
    bonus = sum(p.points for p in progress if p.section.bonus)
    points = f"{_number(core)}/{MAX_POINTS}"
    extra = f"  + {_number(bonus)} bonus" if any(p.section.bonus for p in progress) else ""
    rows.append(f"{'   total':{width}} {f'{passed}/{total}':>7} {points:>9}{extra}")
    return "\n".join(rows)


def next_step(progress: list[SectionProgress], impl_dir: Path) -> str:
    """What to do now: the first section in course order that is not done, its file, its
    question and first problem (or how to run it); when every section is done, that."""
    changed = [p.section.number for p in progress if p.changed]
    again = (f"`make test SECTION={changed[0]}` runs it again" if len(changed) == 1
             else "`make test` runs them all again")
    rerun = [f"{CHANGED} their last run: section {', '.join(map(str, changed))}; {again}"
             ] if changed else []
    unfinished = next((p for p in progress if not p.done), None)
    if unfinished is None:
        return "\n".join([f"All {len(progress)} sections pass. Well done.", *rerun])
    section, problem = unfinished.section, unfinished.first_problem
    lines = [f"Next: section {section.number} ({section.name}), {section.title}, in "
             f"{shown(impl_dir / section.file_name)}"]
    if problem is None:  # once it has run, its first problem and `make hint` say more
        lines += [f"  it asks: {section.question}",
                  f"  not run yet: make test SECTION={section.number}"]
        return "\n".join([*lines, *rerun])
    # A test's own message comes before pytest's " assert ..." introspection: show only it.
    message, _, introspection = problem["message"].partition(" assert ")
    if introspection and message in ("AssertionError:", ""):
        message = problem["message"]
    reason = [f"    {message}"]
    if problem["status"] == ERROR and problem.get("checks"):
        reason = [f"    it checks: {problem['checks']}", f"    your code raised {message}"]
    lines += [f"  first test to pass: {problem['name']} ({problem['status']})", *reason,
              f"  then: make test SECTION={section.number}"
              + (f"  (the module {CHANGED} that run)" if unfinished.changed else ""),
              f"  stuck? make hint SECTION={section.number} gives a hint, one step more "
              "each time"]
    return "\n".join([*lines, *rerun])


# --- what a passed section shows -----------------------------------------------------------
# After the table and the next step, each section that passed in the run just recorded shows
# the lines that the run wrote for it (`analyses.your_elmo`, the tests' `--your-elmo FILE`):
# what the learner's own code computes (its biLM's loss against the entropy floor, the
# context gap per layer, ...). They are read from that file, so that this table never needs
# torch.


def read_your_elmo(path: Path | None, ran_at: str) -> dict[int, list[str]]:
    """{section number: lines} from the file that the run which began at `ran_at` wrote;
    nothing if it is missing, unreadable, or another run's."""
    try:
        found = json.loads(path.read_text()) if path is not None else {}
        if found.get("ran_at") != ran_at:
            return {}
        return {int(number): [str(line) for line in lines]
                for number, lines in found["sections"].items()}
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return {}


def after_pass(progress: list[SectionProgress], ran: list[int],
               your_elmo: dict[int, list[str]]) -> list[str]:
    """The lines of `your_elmo` for each section of `ran` that is done, in course order."""
    lines = []
    for p in progress:
        number = p.section.number
        if number in ran and p.done and your_elmo.get(number):
            lines += ["", f"Your ELMo, section {number} ({p.section.name}):",
                      *(f"  {line}" for line in your_elmo[number])]
    return lines


# --- the predictions made ------------------------------------------------------------------
# Each notebook of sections 3-8 asks for a one-line prediction before an experiment on the
# learner's own code (`analyses.predictions.run` keeps both in the state). The table counts them
# and shows the latest beside what the learner's biLM did: the surprise, never a score.

LATEST_PREDICTIONS = 3


def predictions_made(predictions: list[dict], latest: int = LATEST_PREDICTIONS) -> list[str]:
    """How many predictions were made, and the `latest` of them, each beside its outcome."""
    if not predictions:
        return []
    sections = sorted({int(p["section"]) for p in predictions})
    lines = ["", f"Predictions made before an experiment: {len(predictions)} (sections "
             f"{', '.join(map(str, sections))}); the latest, beside what your biLM did:"]
    for p in predictions[-latest:]:
        lines += [f"  section {p['section']}, {p['switch']}",
                  f"    you predicted: {p['prediction']}", f"    your biLM: {p['outcome']}"]
    return lines


def render(progress: list[SectionProgress], impl_dir: Path, ran: list[int] = (),
           now: datetime.datetime | None = None,
           your_elmo: dict[int, list[str]] | None = None,
           predictions: list[dict] = ()) -> str:
    """The whole output: the table, the next step, what passed sections show, then the
    predictions made."""
    return "\n".join([table(progress, now), "", next_step(progress, impl_dir),
                      *after_pass(progress, list(ran), your_elmo or {}),
                      *predictions_made(list(predictions))])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m course.progress",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("results", type=Path, nargs="?", default=None,
                        help=f"the JSON that the tests' `--results-json` wrote (e.g. "
                             f"{shown(RESULTS_FILE)}); without it, only the table")
    parser.add_argument("--impl", type=Path, default=Path("exercises"),
                        help="the implementation that was tested (default: exercises)")
    parser.add_argument("--state", type=Path, default=STATE_FILE,
                        help=f"the learner's state (default: {shown(STATE_FILE)})")
    parser.add_argument("--your-elmo", type=Path, default=YOUR_ELMO_FILE,
                        help="what the run's passed sections showed, as the tests' "
                             f"`--your-elmo` wrote it (default: {shown(YOUR_ELMO_FILE)})")
    args = parser.parse_args(argv)
    impl_dir = args.impl if args.impl.is_absolute() else (ROOT / args.impl)
    state_path = args.state if args.state.is_absolute() else (ROOT / args.state)
    state, ran, ran_at = State.load(state_path), [], ""
    if args.results is not None:
        try:
            records = json.loads(args.results.read_text())
        except (OSError, ValueError) as err:
            print(f"no test results in {args.results} ({err}): run `make test` first")
            return 1
        for record in records:  # results written without the digest: the module as it is now
            if record.get("module_digest") is None and isinstance(record.get("section"), int):
                record["module_digest"] = module_digest(
                    impl_dir / SECTIONS[record["section"] - 1].file_name)
        ran = state.record_run(records, impl_dir)
        ran_at = next((r.get("ran_at") for r in records if isinstance(r, dict)), "")
        state.save()
    your_elmo = args.your_elmo if args.your_elmo.is_absolute() else (ROOT / args.your_elmo)
    lines = read_your_elmo(your_elmo, ran_at) if ran else {}
    print("\n" + render(from_state(state, impl_dir), impl_dir, ran, your_elmo=lines,
                        predictions=state.predictions))
    return 0


if __name__ == "__main__":
    sys.exit(main())
