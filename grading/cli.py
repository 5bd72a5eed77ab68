"""python -m grading SUBMISSION...: grade submissions with the course's own tests and reference.

A SUBMISSION is a folder holding `exercises/` (or the section modules themselves), or a `.zip`
of one. Results are kept in the work folder as each submission finishes, so the same command
again resumes. With --previous, a regrade is previewed (`grading.regrade`): nothing is
exported while a submission's scores or statuses would change, unless --accept-changes.
The judged tests' cases are drawn for each module from a key (`grading.judging`): the file's
secret with --secret-file (the same cases on any grader of the term), else one the grader
keeps in its work folder; neither key nor seed reaches an output or report.
See docs/instructors.md.
"""

from __future__ import annotations

import argparse
import signal
import sys
from pathlib import Path

from tqdm import tqdm

from course.registry import ROOT, SECTIONS, Section, find_section

from . import judging, outputs, regrade
from .grader import MODES, Grader, GraderError
from .sandbox import Limits
from .store import Store, write_atomically
from .submissions import read_submission, unique_names

LIMITS = {"test-timeout": "seconds one test may take",
          "section-timeout": "seconds one section's run may take, wall clock",
          "memory-mb": "memory of one run (one process)",
          "output-mb": "largest file one run may write, its output included",
          "scratch-mb": "all that one run may write (bwrap)", "threads": "threads of one run"}
REFUSED = 3  # the exit status when --previous finds changes not accepted


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m grading", description=__doc__.split("\n\n")[0])
    p.add_argument("submissions", nargs="*", type=Path, metavar="SUBMISSION")
    p.add_argument("--sections", help="grade only these sections: numbers or names, 1,3,bilm")
    p.add_argument("--json", type=Path, metavar="FILE", help="every submission, section, test")
    p.add_argument("--csv", type=Path, metavar="FILE", help="a row per submission (gradebook)")
    p.add_argument("--canvas", type=Path, metavar="FILE", help="the CSV Canvas's gradebook "
                   "imports: a row per student (the submission's name), the assignment's total")
    p.add_argument("--canvas-assignment", default="ELMo", metavar="NAME",
                   help="the assignment's name in Canvas (default %(default)s)")
    p.add_argument("--canvas-assignment-id", metavar="N", help="Canvas's id of the assignment "
                   "(in its address), so that the import fills it rather than creating one")
    p.add_argument("--canvas-id-column", choices=outputs.CANVAS_IDS, default=outputs.CANVAS_IDS[0],
                   help="the Canvas column that the submissions' names are (default %(default)s)")
    p.add_argument("--gradescope", type=Path, metavar="FILE",
                   help="results.json for Gradescope (one submission)")
    p.add_argument("--visibility", choices=outputs.VISIBILITIES, default="visible",
                   help="Gradescope visibility of the results (default: visible)")
    p.add_argument("--jobs", type=int, default=1, metavar="N", help="sections graded at once")
    for option, help_ in LIMITS.items():
        name = option.replace("-", "_") + ("_s" if option.endswith("timeout") else "")
        default = getattr(Limits(), name)
        p.add_argument(f"--{option}", type=type(default), dest=name, default=default,
                       help=f"{help_} (default %(default)s)")
    p.add_argument("--isolation", choices=MODES, default="bwrap",
                   help="how runs are kept apart: bwrap (default), uid (where bubblewrap "
                   "cannot run), auto (bwrap, else uid), none (trusted code only)")
    p.add_argument("--deadline", type=float, metavar="S",
                   help="seconds for the whole grading, shared out among the runs")
    p.add_argument("--course", type=Path, default=ROOT, metavar="DIR",
                   help="the course's tests and reference to grade with: a copy of this "
                   "repository's holding hidden tests, say (default: this repository)")
    p.add_argument("--work-dir", type=Path, default=ROOT / "build" / "grading", metavar="DIR",
                   help="stored results, the reference's cache, the runs (default build/grading)")
    p.add_argument("--fresh", action="store_true", help="regrade even what is stored")
    p.add_argument("--prepare-only", action="store_true",
                   help="collect the tests and train the fakes' biLM, grade nothing")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.add_argument("--previous", type=Path, metavar="OLD.json",
                   help="a grades file (--json) to compare with: print what would change, "
                   "and export nothing when anything would (without --accept-changes)")
    p.add_argument("--accept-changes", action="store_true",
                   help="with --previous: export the new results even where they change")
    p.add_argument("--secret-file", type=Path, metavar="FILE",
                   help="the term's secret (at least "
                   f"{judging.SECRET_MIN_BYTES} bytes): the key from which each module's cases "
                   "are drawn, on any grader; it reaches no report (default: a key kept in "
                   "the work folder)")
    return p


def main(argv: list[str] | None = None) -> int:
    """0 when done, 1 when the grader cannot grade (its isolation, its work folder, the
    course), 3 when --previous finds changes that --accept-changes did not accept (nothing
    exported), 130 when interrupted; with --gradescope, results.json is written in every case
    but the 3."""
    args = parser().parse_args(argv)
    try:  # `1,3,bilm`: those sections in course order; every section by default
        chosen = {find_section(key).number for key in (args.sections or "").split(",")
                  if key.strip()}
    except KeyError as err:
        parser().error(str(err.args[0]))
    sections = [s for s in SECTIONS if not chosen or s.number in chosen]
    if not args.submissions and not args.prepare_only:
        parser().error("name at least one SUBMISSION (a folder or a .zip)")
    if args.gradescope and len(args.submissions) != 1:
        parser().error("--gradescope writes the results of exactly one submission")
    if args.accept_changes and not args.previous:
        parser().error("--accept-changes accepts what --previous shows: name a previous file")
    secret = None
    if args.secret_file:
        try:
            secret = judging.read_secret(args.secret_file)
        except (OSError, ValueError) as err:
            parser().error(f"--secret-file: {err}")
    previous = None
    if args.previous:
        try:
            previous = outputs.read_grades(args.previous)
        except (OSError, ValueError, KeyError, TypeError) as err:
            parser().error(f"--previous: {err}")
    signal.signal(signal.SIGTERM, signal.default_int_handler)  # as Ctrl-C: KeyboardInterrupt
    # Ctrl-C stops a grading even where it was started with SIGINT ignored (a shell's `&`)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    error = "it stopped before it wrote any result"
    try:
        code = grade(args, sections, previous, secret)
        error = None if code in (0, REFUSED) else "it was interrupted"
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
            write_atomically(args.gradescope, outputs.gradescope_error(error, args.visibility))


def grade(args: argparse.Namespace, sections: list[Section], previous: list | None = None,
          secret: bytes | None = None) -> int:
    submissions = [read_submission(path) for path in args.submissions]
    try:
        unique_names(submissions)
    except ValueError as err:
        parser().error(str(err))
    limits = Limits(*(getattr(args, name) for name in vars(Limits())))
    grader = Grader(args.work_dir, sections, limits, args.isolation, args.deadline,
                    args.course.resolve(), secret)
    settings = {"sections": [s.number for s in sections], "limits": vars(limits),
                "isolation": args.isolation, "settings_key": grader.settings_key}
    if secret is not None:
        settings["cases"] = "drawn from the term's secret"
    done: list = []
    bar = tqdm(total=len(submissions) * len(sections), desc="grading", unit="section",
               disable=True if args.quiet else None, file=sys.stderr)

    def write(results: list) -> None:
        if grader.sandbox is not None:
            settings.update(isolation=grader.mode, cpu_share=grader.sandbox.cpu_share)
        if args.json:
            write_atomically(args.json, outputs.json_report(results, settings))
        if args.csv:
            write_atomically(args.csv, outputs.csv_report(results, sections))
        if args.canvas:
            write_atomically(args.canvas, outputs.canvas_report(
                results, outputs.canvas_assignment(args.canvas_assignment,
                                                   args.canvas_assignment_id),
                args.canvas_id_column))

    def finished(result) -> None:
        if previous is None:  # with --previous, nothing is exported before the comparison
            write(done + [result])
        done.append(result)

    try:
        if args.prepare_only:
            grader.prepare(check_isolation=False)
            print(f"prepared: {sum(map(len, grader.tests.values()))} tests collected, "
                  f"the fakes' biLM cached in {grader.cache}")
            return 0
        try:
            store = Store(args.work_dir / "results", grader.settings_key)
        except OSError as err:
            raise GraderError(f"the work folder {args.work_dir} cannot be used: {err}") from err
        results = grader.grade(submissions, args.jobs, store, args.fresh, finished,
                               lambda: bar.update(1))
    except KeyboardInterrupt:
        bar.close()
        if done:
            print(outputs.table(done, sections))
        print(f"\ninterrupted: {len(done)} of {len(submissions)} submissions graded and kept "
              f"in {args.work_dir / 'results'}; run the same command again to resume.",
              file=sys.stderr)
        return 130
    finally:
        bar.close()
        grader.close()
    print(outputs.table(results, sections))
    if previous is not None:
        changes = regrade.regrade_changes(previous, results)
        print(regrade.describe(changes))
        if changes and not args.accept_changes:
            print(f"\nnothing exported: {len(changes)} submission(s) would change against "
                  f"{args.previous}. To export them, run the same command with "
                  "--accept-changes (the results are kept: nothing is graded again).",
                  file=sys.stderr)
            return REFUSED
    write(results)  # in the order given (without --previous, also as each finished)
    if args.gradescope:
        write_atomically(args.gradescope, outputs.gradescope_report(results[0], args.visibility))
    return 0
