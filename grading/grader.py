"""Grade submissions section by section, each section in its own sandboxed run.

    grader = Grader(work_dir, sections, limits)
    results = grader.grade(submissions, jobs=4, store=store, on_done=print)
    grader.close()

`grade` hands each submission's result to `on_done` (and to the store) as soon as its last
section is graded; a submission the store already holds, graded from the same bytes under
the same tests and settings, is not graded again. Before it grades anything it `prepare`s:
it learns the course's tests and has the reference biLM pre-trained, in a trusted child.
"""

from __future__ import annotations

import hashlib
import json
import threading
import traceback
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor, as_completed
from pathlib import Path

from course.registry import Section

from .integrity import Flag, scan_files, scan_module
from .sandbox import CACHE_ENV_VAR, Limits, Pristine, Sandbox
from .scoring import SectionResult, SubmissionResult, score_run, score_unrun
from .store import Store
from .submissions import Submission

PREPARE_TIMEOUT_S = 900


class GraderError(RuntimeError):
    """The course itself cannot be graded against (its tests do not collect, say)."""


class Stopped(BaseException):
    """The grader was stopped while this section waited or ran."""


class Grader:
    def __init__(self, work_dir: Path, sections: list[Section], limits: Limits | None = None,
                 keep_runs: bool = False) -> None:
        self.work_dir, self.sections = Path(work_dir), sections
        self.limits = limits or Limits()
        self.pristine = Pristine()
        self.sandbox: Sandbox | None = None
        self.keep_runs = keep_runs
        self.tests: dict[int, list[str]] = {}
        self._stopped = threading.Event()

    @property
    def settings_key(self) -> str:
        """Changes whenever a result could: the tests, the reference, the tooling, the
        sections chosen and the limits."""
        digest = hashlib.sha256()
        for name, data in sorted(self.pristine.files.items()):
            digest.update(name.encode() + b"\0" + hashlib.sha256(data).digest())
        limits = {name: float(value) for name, value in vars(self.limits).items()}
        digest.update(json.dumps([[s.number for s in self.sections], limits]).encode())
        return digest.hexdigest()

    def prepare(self) -> None:
        """Collect the tests and train (or find) the reference biLM, in a trusted child.

        Raises:
            GraderError: the course's tests do not collect, or the child cannot run.
        """
        trusted_cache = self.work_dir / "cache"
        out = self.work_dir / "prepared.json"
        try:
            trusted_cache.mkdir(parents=True, exist_ok=True)
            out.unlink(missing_ok=True)
            self.sandbox = Sandbox(self.work_dir, self.pristine, {}, self.limits,
                                   self.keep_runs)
            status, tail = self.sandbox.run_trusted(
                "grading.prepare", [str(out)], {CACHE_ENV_VAR: str(trusted_cache)},
                PREPARE_TIMEOUT_S)
        except (OSError, RuntimeError) as err:
            raise GraderError(f"the grader cannot start its runs: {err}") from err
        if status != 0 or not out.exists():
            raise GraderError(f"preparing the course failed (wait status {status}):\n{tail}")
        prepared = json.loads(out.read_text())
        self.tests = {int(number): ids for number, ids in prepared["tests"].items()}
        self.sandbox.cache_files = {name: (trusted_cache / name).read_bytes()
                                    for name in prepared["cache_files"]}

    def grade_section(self, submission: Submission, section: Section) -> SectionResult:
        """Never raises but `Stopped`: a failure of the grader itself is the section's error."""
        nodeids = self.tests.get(section.number, [])
        module = f"{section.module}.py"
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
            flags = scan_module(source.decode(errors="replace"), section.number)
            if self._stopped.is_set():
                raise Stopped
            run = self.sandbox.run_section(section, source, _label(submission.name))
            if self._stopped.is_set():
                raise Stopped
            flags += [Flag(f["kind"], f["detail"], section.number) for f in run.flags]
            if run.tampered:
                flags.append(Flag("tampered", "changed the grader's copy of "
                                  + ", ".join(run.tampered[:5]), section.number))
            return score_run(section, nodeids, run, _distinct(flags), self.limits)
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
        if todo and self.sandbox is None:
            self.prepare()  # only when something is left to grade
        graded: dict[int, dict[int, SectionResult]] = {i: {} for i in todo}
        pool = ThreadPoolExecutor(max_workers=max(1, jobs))
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
