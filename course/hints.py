"""`make hint`: the next rung of the hint ladder for the first function of a section that does
not pass yet.

    python -m course.hints [--section N] [--impl exercises] [--state build/progress.json]

The ladders live in `course/hints.toml`, one per learner function, each rung one step closer
to code: the concept, then the approach, then near-code. Which function: the section's first
(in the module's order) among those its last run found wanting, from the records that the
learner's state keeps (`course.state`): a "not implemented" record names its stub's
function, and a failing test names the function of the concept it checks
(`course/concepts.toml`). A section that has not run gets its first function's ladder.
Without `--section`, the section is the first that is not done, as the progress table's
"Next" says. The state remembers how many rungs of each ladder were shown: each call shows
the next one, and the progress table counts them ("2 hints used").
"""

from __future__ import annotations

import argparse
import sys
import textwrap
import tomllib
from dataclasses import dataclass
from pathlib import Path

from .concepts import concept_of
from .progress import PASSED, SectionProgress, from_state
from .registry import ROOT, STUB_MESSAGE, Section, find_section, shown
from .state import STATE_FILE, State

HINTS_FILE = Path(__file__).with_name("hints.toml")
RUNGS = (("concept", "the concept"), ("approach", "the approach"), ("near_code", "near-code"))


@dataclass(frozen=True)
class Ladder:
    """The hints for one learner function: (kind, text) rungs, from concept to near-code."""

    section: int
    function: str
    rungs: tuple[tuple[str, str], ...]


def load(path: Path = HINTS_FILE) -> tuple[Ladder, ...]:
    """Every ladder of `path`, in its order (course order, then each module's order).

    Raises:
        ValueError: an entry without a section or a function, or with a key that is not a
            rung's kind.
    """
    with path.open("rb") as f:
        entries = tomllib.load(f).get("ladder", [])
    kinds = [kind for kind, _ in RUNGS]
    ladders = []
    for entry in entries:
        unknown = set(entry) - {"section", "function", *kinds}
        if unknown or "section" not in entry or "function" not in entry:
            raise ValueError(f"{path.name}: a ladder holds section, function and rungs "
                             f"{kinds}; found {sorted(entry)}")
        rungs = tuple((kind, textwrap.dedent(entry[kind]).strip())
                      for kind in kinds if entry.get(kind, "").strip())
        ladders.append(Ladder(entry["section"], entry["function"], rungs))
    return tuple(ladders)


def of_section(ladders: tuple[Ladder, ...], section: Section) -> list[Ladder]:
    return [ladder for ladder in ladders if ladder.section == section.number]


def wanting(section: Section, records: tuple[dict, ...]) -> dict[tuple[int, str], str]:
    """{(section number, function): why} for each function that `section`'s records find
    wanting, in the records' order: a stub names its function (in a handout, where every
    section is the learner's, the stub of an earlier section may stop these tests); another
    test that does not pass, the function of its concept."""
    found: dict[tuple[int, str], str] = {}
    for record in records:
        if record["status"] == PASSED:
            continue
        stub = STUB_MESSAGE.search(record.get("message", ""))
        if stub:
            number, function = int(stub["number"]), stub["function"]
            found.setdefault((number, function), f"{function} is not implemented yet" + (
                "" if number == section.number else
                f"; section {section.number}'s tests need it: finish section {number} first"))
            continue
        concept = concept_of(section.number, record["name"])
        if concept is not None:
            found.setdefault((section.number, concept.function),
                             f"{record['name']} does not pass yet ({record['status']}); "
                             f"it checks: {concept.title}")
    return found


def choose(ladders: tuple[Ladder, ...], progress: SectionProgress) -> tuple[Ladder, str] | None:
    """The ladder to climb for this section and why; None when the section is done. The
    section's own functions come first, in the module's order; then those of the earlier
    sections whose stubs stop its tests."""
    own = of_section(ladders, progress.section)
    if not own or progress.done:
        return None
    if not progress.total:
        return own[0], (f"section {progress.section.number} has not run yet, so its first "
                        "function (after `make test SECTION="
                        f"{progress.section.number}`, the hint follows what its tests find)")
    found = wanting(progress.section, progress.records)
    others = [x for x in ladders if x.section != progress.section.number]
    for ladder in [*own, *others]:  # the module's order, then course order
        if (ladder.section, ladder.function) in found:
            return ladder, found[(ladder.section, ladder.function)]
    return own[0], "its first function"


def climb(state: State, ladder: Ladder) -> tuple[int, bool]:
    """The index of the rung to show now, and whether it is a new one (the state counts it)."""
    seen = state.hints_shown(ladder.section, ladder.function)
    if seen < len(ladder.rungs):
        state.show_hint(ladder.section, ladder.function)
        return seen, True
    return len(ladder.rungs) - 1, False


def text_of(ladder: Ladder, index: int, section: Section, impl_dir: Path, why: str,
            new: bool, used: int) -> str:
    kind = dict(RUNGS)[ladder.rungs[index][0]]
    which = (f"Hint {index + 1} of {len(ladder.rungs)} for {ladder.function} ({kind})" if new
             else f"All {len(ladder.rungs)} hints for {ladder.function}")
    lines = [f"{which}, section {section.number} ({section.name}), "
             f"{shown(impl_dir / section.file_name)}",
             f"  why this function: {why}", ""]
    if not new:  # the ladder is climbed: show every rung again
        lines += [f"  {i + 1}. " + textwrap.indent(text, "     ").lstrip()
                  for i, (_, text) in enumerate(ladder.rungs)]
        lines += ["", "That was the last hint for this function: the tests' messages and the "
                      "docstring say the rest."]
    else:
        lines += [textwrap.indent(ladder.rungs[index][1], "  "), ""]
        if index + 1 < len(ladder.rungs):
            following = dict(RUNGS)[ladder.rungs[index + 1][0]]
            lines.append(f"`make hint SECTION={section.number}` again for the next step "
                         f"({following}).")
        else:
            lines.append("That was the last hint for this function.")
    lines.append(f"{used} hint{'s' * (used != 1)} used in section {section.number}.")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m course.hints",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("--section", default=None,
                        help="a section's number or name (default: the first not done)")
    parser.add_argument("--impl", type=Path, default=Path("exercises"),
                        help="the implementation whose last run decides (default: exercises)")
    parser.add_argument("--state", type=Path, default=STATE_FILE,
                        help=f"the learner's state (default: {shown(STATE_FILE)})")
    args = parser.parse_args(argv)
    impl_dir = args.impl if args.impl.is_absolute() else ROOT / args.impl
    state_path = args.state if args.state.is_absolute() else ROOT / args.state
    state = State.load(state_path)
    progress = from_state(state, impl_dir)
    if args.section:
        try:
            section = find_section(args.section)
        except KeyError as err:
            print(f"make hint: {err.args[0]}")
            return 2
        chosen = next(p for p in progress if p.section == section)
    else:
        chosen = next((p for p in progress if not p.done), None)
        if chosen is None:
            print("Every section passes: no hint needed.")
            return 0
        section = chosen.section
    found = choose(load(), chosen)
    if found is None:
        print(f"Section {section.number} ({section.name}) passes: no hint needed. "
              "`make hint SECTION=n` gives hints for another section.")
        return 0
    ladder, why = found
    index, new = climb(state, ladder)
    state.save()
    section = find_section(ladder.section)  # another section's, where its stub stops these
    print(text_of(ladder, index, section, impl_dir, why, new, state.hints_used(section)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
