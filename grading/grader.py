"""Grade submissions section by section, each section in its own sandboxed run.

    grader = Grader(work_dir, sections, limits, isolation="namespaces")
    results = grader.grade(submissions, jobs=4, store=store, on_done=print)
    grader.close()

`grade` hands each submission's result to `on_done` (and to the store) as soon as its last
section is graded; a submission the store already holds, graded from the same bytes under
the same tests and settings, is not graded again. Before it grades anything it `prepare`s:
it checks that this machine gives the isolation asked for (`grading.isolation`), learns the
course's tests and has the reference biLM pre-trained, in a trusted child. The biLM's cache
is trusted only where its digests, sealed by this grader (`grading.store.Seal`), still
match; a file that does not match is removed, and trained again. With a `deadline` (seconds
for the whole of `grade`), each section's run gets its share of the time that is left.
"""

from __future__ import annotations

import copy
import hashlib
import json
import threading
import time
import traceback
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor, as_completed
from pathlib import Path

from course.registry import CACHE_ENV_VAR, REFERENCE_DIR, Section

from . import isolation
from .integrity import FORGES_RESULTS, Flag, scan_files, scan_module
from .sandbox import Limits, Pristine, Sandbox, read_capped
from .scoring import SectionResult, SubmissionResult, score_run, score_unrun
from .store import Seal, Store, load_sealed, save_sealed
from .submissions import Submission

PREPARE_TIMEOUT_S = 900
PREPARED_BYTES = 1 << 22
DEADLINE_MARGIN_S = 5  # kept back from a deadline: the reports are written after the runs
MODES = (*isolation.MODES, "auto")


class GraderError(RuntimeError):
    """The course itself cannot be graded against (its tests do not collect, say)."""


class Stopped(BaseException):
    """The grader was stopped while this section waited or ran."""


class Grader:
    def __init__(self, work_dir: Path, sections: list[Section], limits: Limits | None = None,
                 keep_runs: bool = False, isolation: str = "namespaces",
                 deadline_s: float | None = None) -> None:
        self.work_dir, self.sections = Path(work_dir).resolve(), sections
        self.limits = limits or Limits()
        self.pristine = Pristine()
        self.sandbox: Sandbox | None = None
        self.keep_runs = keep_runs
        self.isolation, self.deadline_s = isolation, deadline_s
        self.tests: dict[int, list[str]] = {}
        self._stopped = threading.Event()
        self._clock = threading.Lock()
        self._deadline: float | None = None
        self._waiting = self._running = 0
        self.slots = 1
        # A section's result by its module's bytes: grading is deterministic, so a module
        # that another submission holds too (an untouched stub, say) is run once.
        self._graded: dict[tuple[int, str], SectionResult] = {}

    @property
    def settings_key(self) -> str:
        """Changes whenever a result could: the tests, the reference, the tooling, the
        sections chosen, the limits and the isolation asked for."""
        digest = hashlib.sha256()
        for name, data in sorted(self.pristine.files.items()):
            digest.update(name.encode() + b"\0" + hashlib.sha256(data).digest())
        limits = {name: float(value) for name, value in vars(self.limits).items()}
        digest.update(json.dumps([[s.number for s in self.sections], limits,
                                  self.isolation]).encode())
        return digest.hexdigest()

    def choose_isolation(self) -> str:
        """The isolation mode runs get: the one asked for, or with "auto" namespaces where
        this machine gives them and a uid of the run's own where not.

        Raises:
            GraderError: the mode asked for is not available here, and why.
        """
        probe = self.work_dir / "probe"
        reasons = {}
        for mode in (["namespaces", "uid"] if self.isolation == "auto" else [self.isolation]):
            reasons[mode] = isolation.problem(mode, probe, REFERENCE_DIR)
            if reasons[mode] is None:
                return mode
        said = "; ".join(f"{mode}: {why}" for mode, why in reasons.items())
        raise GraderError(
            f"this machine cannot isolate the runs as asked ({said}). Without that a "
            "submission could read the reference, forge its results or harm the others, so "
            "the grader refuses to grade. Grade elsewhere (a machine or container that allows "
            "user namespaces), or, knowing what it costs (docs/instructors.md), choose "
            "--isolation uid (a uid of each run's own; the grader must be root) or "
            "--isolation none (only for code you trust, such as your own reference).")

    def _trusted_cache(self, seal: Seal, folder: Path) -> None:
        """Remove every file of the cache whose digest this grader did not seal."""
        sealed = load_sealed(self.work_dir / "cache.json", seal) or {}
        for path in folder.iterdir():
            data = read_capped(path, 1 << 30)
            if sealed.get(path.name) != hashlib.sha256(data).hexdigest():
                path.unlink()

    def prepare(self, check_isolation: bool = True) -> None:
        """Check the isolation (unless only preparing: nothing but the course's own code
        runs then), collect the tests and train (or find) the reference biLM, in a trusted
        child.

        Raises:
            GraderError: runs cannot be isolated as asked, the course's tests do not
                collect, or the child cannot run.
        """
        trusted_cache = self.work_dir / "cache"
        out = self.work_dir / "prepared.json"
        try:
            self.work_dir.mkdir(parents=True, exist_ok=True)
            mode = self.choose_isolation() if check_isolation else "none"
            seal = Seal(self.work_dir)
            trusted_cache.mkdir(exist_ok=True)
            trusted_cache.chmod(0o755)  # a run of another uid reads its file (uid mode)
            self._trusted_cache(seal, trusted_cache)
            out.unlink(missing_ok=True)
            self.sandbox = Sandbox(self.work_dir, self.pristine, {}, self.limits,
                                   self.keep_runs, mode, self.slots)
            status, tail = self.sandbox.run_trusted(
                "grading.prepare", [str(out)], {CACHE_ENV_VAR: str(trusted_cache)},
                PREPARE_TIMEOUT_S)
        except (OSError, RuntimeError, ValueError) as err:
            raise GraderError(f"the grader cannot start its runs: {err}") from err
        try:
            prepared = json.loads(read_capped(out, PREPARED_BYTES))
            self.tests = {int(number): list(ids) for number, ids in prepared["tests"].items()}
            names = [name for name in prepared["cache_files"] if "/" not in name]
        except (ValueError, KeyError, TypeError, AttributeError) as err:
            raise GraderError(f"preparing the course failed (wait status {status}):\n{tail}"
                              ) from err
        digests = {name: hashlib.sha256(read_capped(trusted_cache / name, 1 << 30)).hexdigest()
                   for name in names}
        save_sealed(self.work_dir / "cache.json", seal, digests)
        self.sandbox.cache_files = {name: trusted_cache / name for name in names}
        self.mode = mode

    def grade_section(self, submission: Submission, section: Section) -> SectionResult:
        """Never raises but `Stopped`: a failure of the grader itself is the section's error."""
        nodeids = self.tests.get(section.number, [])
        module = f"{section.module}.py"
        with self._clock:
            self._waiting -= 1
        try:
            if submission.error:
                return score_unrun(section, nodeids, submission.error)
            if module in submission.unreadable:
                return score_unrun(section, nodeids,
                                   f"{module} was not read: {submission.unreadable[module]}")
            if module not in submission.modules:
                return score_unrun(section, nodeids, f"{module} is missing from the submission")
            if not nodeids:
                return score_unrun(section, nodeids,
                                   f"the course has no tests for section {section.number}")
            source = submission.modules[module]
            same = (section.number, hashlib.sha256(source).hexdigest())
            if same in self._graded:
                return copy.deepcopy(self._graded[same])
            flags = scan_module(source, section.number)
            if self._stopped.is_set():
                raise Stopped
            with self._clock:
                self._running += 1
            try:
                timeout_s = self._share_of_time()
                if timeout_s is not None and timeout_s <= 0:
                    return score_unrun(section, nodeids, "not run: grading reached its "
                                       f"deadline of {self.deadline_s:g} s before this section")
                run = self.sandbox.run_section(section, source, _label(submission.name),
                                               timeout_s)
            finally:
                with self._clock:
                    self._running -= 1
            if self._stopped.is_set():
                raise Stopped
            flags += [Flag(f["kind"], f["detail"], section.number) for f in run.flags]
            if run.tampered:
                flags.append(Flag("tampered", "changed the grader's copy of "
                                  + ", ".join(run.tampered[:5]), section.number))
            if run.forged:
                flags.append(Flag(FORGES_RESULTS, f"{run.forged} lines on its records stream "
                                  "that the grader's plugin did not write", section.number))
            result = score_run(section, nodeids, run, _distinct(flags), self.limits)
            if not (run.timed_out or run.lost):  # this run's fate, not the module's
                self._graded[same] = copy.deepcopy(result)
            return result
        except Exception as err:
            if self._stopped.is_set():
                raise Stopped from err
            with (self.work_dir / "grader-errors.log").open("a") as log:
                log.write(traceback.format_exc())  # the grader's fault: say so, and go on
            return score_unrun(section, nodeids, f"internal grader error: {err!r}")

    def grade(self, submissions: list[Submission], jobs: int = 1, store: Store | None = None,
              fresh: bool = False, on_done: Callable[[SubmissionResult], None] = lambda r: None,
              on_section: Callable[[], None] = lambda: None) -> list[SubmissionResult]:
        """Results in the order of `submissions`; `on_section` after each section graded."""
        results: dict[int, SubmissionResult] = {}
        todo = []
        for index, submission in enumerate(submissions):
            stored = None if fresh or store is None else store.load(submission)
            if stored is not None:
                results[index] = stored
                on_done(stored)
                for _ in self.sections:
                    on_section()
            else:
                todo.append(index)
        self.slots = max(1, jobs)
        if self.deadline_s is not None:
            self._deadline = time.monotonic() + self.deadline_s - DEADLINE_MARGIN_S
        if todo and self.sandbox is None:
            self.prepare()  # only when something is left to grade
        graded: dict[int, dict[int, SectionResult]] = {i: {} for i in todo}
        self._waiting = len(todo) * len(self.sections)
        pool = ThreadPoolExecutor(max_workers=self.slots)
        try:
            futures = {pool.submit(self.grade_section, submissions[i], section): (i, section)
                       for i in todo for section in self.sections}
            for future in as_completed(futures):
                index, section = futures[future]
                graded[index][section.number] = future.result()
                on_section()
                if len(graded[index]) == len(self.sections):
                    result = self._assemble(submissions[index], graded[index])
                    results[index] = result
                    if store is not None:
                        store.save(result)
                    on_done(result)
        except BaseException:
            self.stop()
            raise
        finally:
            pool.shutdown(wait=True, cancel_futures=True)
        return [results[i] for i in sorted(results)]

    def _share_of_time(self) -> float | None:
        """This section's wall-clock limit under the deadline: the time left, shared by the
        sections still to run and those running (this one among them), over the runs that go
        at once; None without a deadline."""
        with self._clock:
            if self._deadline is None:
                return None
            left = self._deadline - time.monotonic()
            share = left * self.slots / (self._waiting + self._running)
            return min(self.limits.section_timeout_s, share, left)

    def _assemble(self, submission: Submission,
                  sections: dict[int, SectionResult]) -> SubmissionResult:
        notes = scan_files(submission.files)
        notes += [Flag("unreadable", f"{name}: {why}") for name, why in
                  sorted(submission.unreadable.items())]
        return SubmissionResult(submission.name, str(submission.path), submission.digest,
                                [sections[s.number] for s in self.sections], notes)

    def stop(self) -> None:
        """Stop now: no new section starts and every running one is killed."""
        self._stopped.set()
        self.close()

    def close(self) -> None:
        if self.sandbox is not None:
            self.sandbox.close()


def _label(name: str) -> str:
    return "".join(c if c.isalnum() or c in "-_" else "_" for c in name)[:40]


def _distinct(flags: list[Flag]) -> list[Flag]:
    return list(dict.fromkeys(flags))
