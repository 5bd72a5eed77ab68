"""Grade submissions section by section, each section's run in a sandbox (`grading.sandbox`).

`grade` hands each submission's result to `on_done` (and to the store) as soon as its last
section is graded; what the store holds for the same bytes under the same settings is not
graded again, and a module that several submissions hold byte for byte (an untouched stub) is
run once. Before it runs anything it `prepare`s: it checks the isolation asked for and, in a
child of its own (the course's code, trusted), collects the tests and has the biLM that the
tests of sections 5 and 6 read trained by the tests' fakes of the other sections. Each run
acts on cases the grader drew for its module, and the grader judges what it computed
(`grading.judging`). With a `deadline`, each run gets its share of the time left.
A section that the grader itself failed to grade (an internal error) is reported but never
stored, so that the same command grades it again.
"""

from __future__ import annotations

import copy
import hashlib
import json
import subprocess
import sys
import threading
import time
import traceback
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor, as_completed
from pathlib import Path

from course.registry import CACHE_ENV_VAR, ROOT, Section

from . import judging, sandbox
from .records import read_stream
from .sandbox import Limits, Pristine, Sandbox
from .scan import Flag, scan_files, scan_module
from .scoring import SectionResult, SubmissionResult, score_section, score_unrun
from .submissions import Submission, readable

DEADLINE_MARGIN_S = 5  # kept back from a deadline: the reports are written after the runs
MODES = (*sandbox.MODES, "auto")


class GraderError(RuntimeError):
    """The grader cannot grade: its isolation, its work folder, the course's tests."""


class Stopped(BaseException):
    """The grader was stopped while this section waited or ran."""


class Grader:
    def __init__(self, work_dir: Path, sections: list[Section], limits: Limits | None = None,
                 isolation: str = "bwrap", deadline_s: float | None = None,
                 course_root: Path = ROOT, secret: bytes | None = None) -> None:
        self.work_dir, self.sections = Path(work_dir).resolve(), sections
        self.cache = self.work_dir / "cache"  # the fakes' biLM, trained once
        self.limits, self.isolation, self.deadline_s = limits or Limits(), isolation, deadline_s
        self.course_root, self.pristine = course_root, Pristine(course_root)
        self.sandbox: Sandbox | None = None
        self.tests: dict[int, list[str]] = {}
        self.judged: dict[int, dict[str, dict]] = {}  # a section's judged tests, by node id
        self.work_dir.mkdir(parents=True, exist_ok=True)
        # the judged tests' cases: the term's secret, or the grader's own key
        self.judging_key = secret if secret is not None else judging.own_key(self.work_dir)
        self._stopped, self._clock = threading.Event(), threading.Lock()
        self._deadline: float | None = None
        self._waiting = self._running = 0
        self.slots = 1
        self._graded: dict[tuple[int, str], SectionResult] = {}  # by the module's bytes

    @property
    def settings_key(self) -> str:
        """Changes whenever a result could: the course's files and the grader's, the sections,
        the limits, the isolation asked for and the key of the judged tests' cases (its digest)."""
        limits = {name: float(value) for name, value in vars(self.limits).items()}
        head = json.dumps([[s.number for s in self.sections], limits, self.isolation])
        head += "\0judged cases\0" + judging.digest(self.judging_key)
        return self._course_digest(*(p.name for p in Path(__file__).parent.glob("*.py")),
                                   head=head)

    def choose_isolation(self) -> str:
        """The mode asked for, or for "auto" bwrap where it runs and uid where not; a
        `GraderError` that says why where it is not available here."""
        reasons = {}
        for mode in (["bwrap", "uid"] if self.isolation == "auto" else [self.isolation]):
            if reasons.setdefault(mode, sandbox.problem(
                    mode, (self.course_root, ROOT), self.work_dir)) is None:
                return mode
        raise GraderError(
            "this machine cannot isolate the runs as asked (" + "; ".join(
                f"{mode}: {why}" for mode, why in reasons.items()) + "). Without that a "
            "submission could read the reference, reach the grader or harm the others, so the "
            "grader refuses to grade: see docs/instructors.md, or choose --isolation none for "
            "code you trust (your own reference).")

    def prepare(self, check_isolation: bool = True) -> None:
        """Check the isolation (unless only preparing: then only the course's code runs),
        collect the tests and train (or find) the fakes' biLM, in a trusted child, or take
        what an earlier preparation of the same course kept; a `GraderError` where there is
        no isolation as asked or the tests do not collect."""
        self.mode = self.choose_isolation() if check_isolation else "none"
        cache = self.cache
        kept = self.work_dir / "prepared" / f"{self._course_digest('prepare.py')}.json"
        try:
            for folder in (kept.parent, cache):  # the grader's alone (uid mode: a run can
                folder.mkdir(parents=True, exist_ok=True)  # pass through the work folder)
                folder.chmod(0o700)
            prepared = json.loads(kept.read_text()) if kept.exists() else None
            if prepared is None or not all((cache / n).is_file() for n in prepared["cache_files"]):
                prepared = self._prepared_anew(kept)
            self.tests = {int(number): ids for number, ids in prepared["tests"].items()}
            self.judged = {s.number: {n: spec for n, spec in prepared["judged"].items()
                                      if n in self.tests.get(s.number, [])}
                           for s in self.sections}
            judging.use_cache(cache)
            self.sandbox = Sandbox(self.work_dir, self.pristine, self.limits, self.mode,
                                   self.slots, {n: cache / n for n in prepared["cache_files"]})
        except (OSError, ValueError, KeyError, RuntimeError, subprocess.TimeoutExpired) as err:
            raise GraderError(f"the grader cannot prepare its runs: {err}") from err

    def _prepared_anew(self, kept: Path) -> dict:
        """The JSON that `python -m grading.prepare PARTIAL` writes, run as a trusted child in
        the course's folder (the course's `course`, the grader's `grading`), kept at `kept`
        once it succeeds.

        Raises:
            RuntimeError: it failed, with its exit status and the end of what it printed.
        """
        partial = kept.with_suffix(".partial")
        run = subprocess.run(
            [sys.executable, "-m", "grading.prepare", str(partial)], cwd=self.course_root,
            capture_output=True, text=True, timeout=900,
            env={**sandbox.FIXED_ENV, CACHE_ENV_VAR: str(self.cache),
                 "PYTHONPATH": str(ROOT), "HOME": str(self.work_dir)})
        if run.returncode != 0:
            raise RuntimeError(f"python -m grading.prepare exited {run.returncode}:\n"
                               f"{(run.stderr or run.stdout)[-3000:]}")
        partial.rename(kept)
        return json.loads(kept.read_text())

    def _course_digest(self, *own: str, head: str = "") -> str:
        """A digest of `head`, the course's files and the grader's files named `own`: what
        the grader keeps in its work folder is used again only under the same one."""
        digest = hashlib.sha256(head.encode())
        files = {f"grading/{n}": (Path(__file__).parent / n).read_bytes() for n in own}
        for name, data in sorted({**self.pristine.files, **files}.items()):
            digest.update(name.encode() + b"\0" + hashlib.sha256(data).digest())
        return digest.hexdigest()

    def grade_section(self, submission: Submission, section: Section) -> SectionResult:
        """Never raises but `Stopped`: a failure of the grader itself is the section's error."""
        nodeids, module = self.tests.get(section.number, []), section.file_name
        with self._clock:
            self._waiting -= 1
        try:
            why = (submission.error or (f"{module} was not read: {submission.unreadable[module]}"
                                        if module in submission.unreadable else None)
                   or (None if module in submission.modules else
                       f"{module} is missing from the submission")
                   or (None if nodeids else "the course has no tests for this section"))
            if why:
                return score_unrun(section, nodeids, why)
            source = submission.modules[module]
            same = (section.number, hashlib.sha256(source).hexdigest())
            if same in self._graded:
                return copy.deepcopy(self._graded[same])
            if self._stopped.is_set():
                raise Stopped
            with self._clock:
                self._running += 1
            try:
                timeout_s = self._share_of_time()
                if timeout_s is not None and timeout_s <= 0:
                    return score_unrun(section, nodeids, "not run: grading reached its "
                                       f"deadline of {self.deadline_s:g} s before this section")
                specs = self.judged.get(section.number, {})
                cases = judging.cases_for(specs, judging.section_seed(
                    self.judging_key, section.number, source))
                outcome = self.sandbox.run_section(section, source, timeout_s,
                                                   judging.encode_cases(cases))
            finally:
                with self._clock:
                    self._running -= 1
            if self._stopped.is_set():
                raise Stopped
            stream = read_stream(outcome.records, outcome.overflowed, nodeids, outcome.status)
            judging.judge_stream(stream, specs, cases)
            if outcome.error or not (stream.begun or outcome.timed_out):
                raise RuntimeError(outcome.error or f"the run did not start ({self.mode}): "
                                   + outcome.output_tail[-2000:])
            result = score_section(section, nodeids, stream, outcome, source,
                                   scan_module(source, section.number))
            if not outcome.timed_out:  # this run's fate, not the module's
                self._graded[same] = copy.deepcopy(result)
            return result
        except Exception as err:
            if self._stopped.is_set():
                raise Stopped from err
            with (self.work_dir / "grader-errors.log").open("a") as log:
                log.write(traceback.format_exc())  # the grader's fault: say so, and go on
            return score_unrun(section, nodeids, f"internal grader error: {err!r}",
                               internal=True)

    def grade(self, submissions: list[Submission], jobs: int = 1, store=None,
              fresh: bool = False, on_done: Callable[[SubmissionResult], None] = lambda r: None,
              on_section: Callable[[], None] = lambda: None) -> list[SubmissionResult]:
        """Results in the order of `submissions`; `on_section` after each section graded."""
        results: dict[int, SubmissionResult] = {}
        for index, submission in enumerate(submissions):
            stored = None if fresh or store is None else store.load(submission)
            if stored is not None:
                results[index] = stored
                on_done(stored)
                for _ in self.sections:
                    on_section()
        pending = [(i, s) for i in range(len(submissions)) if i not in results
                   for s in self.sections]
        self.slots = max(1, jobs)
        if self.deadline_s is not None:
            self._deadline = time.monotonic() + self.deadline_s - DEADLINE_MARGIN_S
        if pending and self.sandbox is None:
            self.prepare()  # only when something is left to grade
        graded: dict[int, dict[int, SectionResult]] = {i: {} for i, _ in pending}
        self._waiting = len(pending)
        pool = ThreadPoolExecutor(max_workers=self.sandbox.slots if pending else 1)
        try:
            jobs_ = {pool.submit(self.grade_section, submissions[i], s): (i, s) for i, s in pending}
            for future in as_completed(jobs_):
                index, section = jobs_[future]
                graded[index][section.number] = future.result()
                on_section()
                if len(graded[index]) == len(self.sections):
                    done = submissions[index]
                    notes = scan_files(done.files) + [Flag("unreadable", f"{n}: {why}")
                                                      for n, why in sorted(done.unreadable.items())]
                    results[index] = SubmissionResult(
                        done.name, readable(str(done.path)), done.digest,
                        [graded[index][s.number] for s in self.sections], notes)
                    if store is not None and not any(
                            s.internal for s in results[index].sections):
                        store.save(results[index])
                    on_done(results[index])
        except BaseException:
            self.stop()
            raise
        finally:
            pool.shutdown(wait=True, cancel_futures=True)
        return [results[i] for i in sorted(results)]

    def _share_of_time(self) -> float | None:
        """This run's wall-clock limit under the deadline: the time left, shared by the
        sections still to run and those running, over the runs that go at once."""
        with self._clock:
            if self._deadline is None:
                return None
            left = self._deadline - time.monotonic()
            share = left * self.sandbox.slots / (self._waiting + self._running)
            return min(self.limits.section_timeout_s, share, left)

    def stop(self) -> None:
        """Stop now: no new section starts and every running one is killed."""
        self._stopped.set()
        self.close()

    def close(self) -> None:
        if self.sandbox is not None:
            self.sandbox.close()
