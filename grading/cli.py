"""python -m grading SUBMISSION... [--sections 1,3] [--json F] [--csv F] [--gradescope F]
[--jobs N] [--isolation MODE] [--deadline S]: grade submissions with the course's own tests
and reference.

A SUBMISSION is a folder holding `exercises/` (or the section modules themselves), or a
`.zip` of one. Results are kept in the work folder as each submission finishes; run the
same command again after an interruption and it resumes. Each run is isolated by the
operating system (`grading.isolation`); where it cannot be, the grader refuses to grade
unless told how far to trust the code. With --gradescope, results.json is written whatever
happens, if need be as a report of the grader's own error. See docs/instructors.md.
"""

from __future__ import annotations

import argparse
import signal
import sys
from pathlib import Path

from tqdm import tqdm

from course.registry import ROOT, SECTIONS, Section, find_section

from .grader import MODES, Grader, GraderError
from .reports import (
    VISIBILITIES,
    csv_report,
    gradescope_error,
    gradescope_report,
    json_report,
    shown,
    table,
)
from .sandbox import Limits
from .store import Seal, Store, write_atomically
from .submissions import read_submission, unique_names

DEFAULT_WORK_DIR = ROOT / "build" / "grading"


def sections_chosen(keys: str | None) -> list[Section]:
    """`1,3,bilm` -> those sections in course order; every section for None."""
    if not keys:
        return list(SECTIONS)
    chosen = {find_section(key).number for key in keys.split(",") if key.strip()}
    return [s for s in SECTIONS if s.number in chosen]


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m grading", description=__doc__.split("\n\n")[0])
    p.add_argument("submissions", nargs="*", type=Path, metavar="SUBMISSION")
    p.add_argument("--sections", help="grade only these sections: numbers or names, 1,3,bilm")
    p.add_argument("--json", type=Path, metavar="FILE", help="every submission, section, test")
    p.add_argument("--csv", type=Path, metavar="FILE", help="a row per submission (gradebook)")
    p.add_argument("--gradescope", type=Path, metavar="FILE",
                   help="results.json for Gradescope (one submission)")
    p.add_argument("--visibility", choices=VISIBILITIES, default="visible",
                   help="Gradescope visibility of the tests (default: visible)")
    p.add_argument("--jobs", type=int, default=1, metavar="N", help="sections graded at once")
    p.add_argument("--test-timeout", type=float, default=Limits.test_timeout_s, metavar="S",
                   help="seconds one test may take (default %(default)g)")
    p.add_argument("--section-timeout", type=float, default=Limits.section_timeout_s,
                   metavar="S", help="seconds one section's run may take, wall clock "
                   "(default %(default)g)")
    p.add_argument("--memory-mb", type=int, default=Limits.memory_mb, metavar="MB",
                   help="address space of one run (default %(default)s)")
    p.add_argument("--output-mb", type=int, default=Limits.output_mb, metavar="MB",
                   help="largest file (its output included) one run may write "
                   "(default %(default)s)")
    p.add_argument("--scratch-mb", type=int, default=Limits.scratch_mb, metavar="MB",
                   help="all that one run may write, namespaces isolation "
                   "(default %(default)s)")
    p.add_argument("--isolation", choices=MODES, default="namespaces",
                   help="how runs are kept apart: namespaces (default; refused where this "
                   "machine has none), uid (a uid of each run's own, no namespaces; as "
                   "root), auto (namespaces, else uid), none (trusted code only)")
    p.add_argument("--deadline", type=float, metavar="S",
                   help="seconds for the whole grading, shared out among the sections' runs "
                   "(Gradescope: below its own limit)")
    p.add_argument("--work-dir", type=Path, default=DEFAULT_WORK_DIR, metavar="DIR",
                   help="stored results, the trusted cache, the runs (default build/grading)")
    p.add_argument("--fresh", action="store_true", help="regrade even what is stored")
    p.add_argument("--keep-runs", action="store_true",
                   help="keep each run's private folder under the work folder, to debug")
    p.add_argument("--prepare-only", action="store_true",
                   help="collect the tests and pre-train the reference biLM, grade nothing")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    return p


def _raise_interrupt(signum, frame):
    raise KeyboardInterrupt


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    try:
        sections = sections_chosen(args.sections)
    except KeyError as err:
        parser().error(str(err.args[0]))
    if not args.submissions and not args.prepare_only:
        parser().error("name at least one SUBMISSION (a folder or a .zip)")
    if args.gradescope and len(args.submissions) != 1:
        parser().error("--gradescope writes the results of exactly one submission")
    signal.signal(signal.SIGTERM, _raise_interrupt)
    error = "it stopped before it wrote any result"
    try:  # with --gradescope, results.json is all Gradescope shows: there must be one
        code = grade(args, sections)
        error = None if code == 0 else "it was interrupted"
        return code
    except GraderError as err:
        print(f"grading: {err}", file=sys.stderr)
        error = str(err)
        return 1
    except BaseException as err:
        error = f"{type(err).__name__}: {err}"
        raise
    finally:
        if args.gradescope and error is not None:
            write_atomically(args.gradescope, gradescope_error(error, args.visibility))


def grade(args: argparse.Namespace, sections: list[Section]) -> int:
    """Grade as `args` say: 0 when done, 130 when interrupted.

    Raises:
        GraderError: the grader cannot grade (its isolation, its work folder, the course).
    """
    limits = Limits(args.test_timeout, args.section_timeout, args.memory_mb, args.output_mb,
                    args.scratch_mb)
    submissions = [read_submission(path) for path in args.submissions]
    try:
        unique_names(submissions)
    except ValueError as err:
        parser().error(str(err))
    grader = Grader(args.work_dir, sections, limits, keep_runs=args.keep_runs,
                    isolation=args.isolation, deadline_s=args.deadline)
    settings = {"sections": [s.number for s in sections], "limits": vars(limits),
                "isolation": args.isolation, "settings_key": grader.settings_key}
    done = []
    bar = tqdm(total=len(submissions) * len(sections), desc="grading", unit="section",
               disable=True if args.quiet else None, file=sys.stderr)

    def finished(result) -> None:
        done.append(result)
        bar.set_postfix_str(shown(result.name))
        if args.json:
            write_atomically(args.json, json_report(done, settings))
        if args.csv:
            write_atomically(args.csv, csv_report(done, sections))

    try:
        if args.prepare_only:
            grader.prepare(check_isolation=False)
            print(f"prepared: {sum(map(len, grader.tests.values()))} tests collected, "
                  f"reference biLM cached in {args.work_dir / 'cache'}")
            return 0
        try:
            store = Store(args.work_dir / "results", grader.settings_key, Seal(args.work_dir))
        except (OSError, ValueError) as err:
            raise GraderError(f"the work folder {args.work_dir} cannot be used: {err}") from err
        results = grader.grade(submissions, jobs=args.jobs, store=store, fresh=args.fresh,
                               on_done=finished, on_section=lambda: bar.update(1))
    except KeyboardInterrupt:
        bar.close()
        if done:
            print(table(done, sections))
        print(f"\ninterrupted: {len(done)} of {len(submissions)} submissions graded and kept "
              f"in {args.work_dir / 'results'}; run the same command again to resume.",
              file=sys.stderr)
        return 130
    finally:
        bar.close()
        grader.close()
    if args.json:  # again, in the order given (they were written as they finished)
        write_atomically(args.json, json_report(results, settings))
    if args.csv:
        write_atomically(args.csv, csv_report(results, sections))
    if args.gradescope:
        write_atomically(args.gradescope, gradescope_report(results[0], args.visibility))
    print(table(results, sections))
    return 0
