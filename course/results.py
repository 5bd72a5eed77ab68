"""A pytest plugin that records every section test's outcome, for the progress table and
the grader (the section tests' conftest loads it):

    pytest tests/sections --results-json build/results.json

Each record: {"nodeid", "section", "name", "checks", "status", "message", "concept",
"ran_at", "module_digest"}, where status is one of STATUSES, `checks` is what the test checks
(`purpose`), `concept` the id of the concept it checks (`course/concepts.toml`; None for a
test that none names), `ran_at` when the run started (UTC, ISO 8601) and `module_digest` the
SHA-256 of the bytes of the section's module under test as the run found them (None where
the recorder is not told the implementation's folder). A test fails as "not implemented"
when a stub's NotImplementedError is anywhere in its exception chain, so an unfinished
section never reads as a wrong answer.

With `--your-elmo FILE` as well (a learner's `make test`), the run ends by writing to FILE
what each section that passed shows of the implementation's own ELMo (`analyses.your_elmo`),
for the progress table to print.
"""

from __future__ import annotations

import datetime
import json
from pathlib import Path

import pytest

from .concepts import concept_of
from .progress import ERROR, FAILED, NOT_IMPLEMENTED, PASSED, STATUSES, TIMEOUT  # noqa: F401
from .registry import ROOT, SECTIONS, section_of_test
from .state import module_digest

# The outcomes of a record (STATUSES) are defined with the progress table, which must not
# need pytest; they are named here too, where the grader and the tools import them.

MESSAGE_LIMIT = 300


def stub_error(error: BaseException | None) -> NotImplementedError | None:
    """The NotImplementedError that `error` is, or was raised from, if any: a stub's."""
    seen = set()
    while error is not None and id(error) not in seen:
        if isinstance(error, NotImplementedError):
            return error
        seen.add(id(error))
        error = error.__cause__ or error.__context__
    return None


def purpose(item: pytest.Item) -> str:
    """What a test checks, in one line: its docstring's first paragraph, or else its name."""
    doc = getattr(getattr(item, "function", None), "__doc__", None) or ""
    first = " ".join(doc.strip().split("\n\n")[0].split())
    return first or item.name.removeprefix("test_").replace("_", " ")


def status_of(report: pytest.TestReport, error: BaseException | None) -> str:
    """passed; not implemented (a stub); timeout; failed (a wrong answer: an assertion or
    pytest.raises that saw no error); error (any other exception, or a broken fixture)."""
    if report.passed:
        return PASSED
    if stub_error(error) is not None:
        return NOT_IMPLEMENTED
    if error is not None and str(error).startswith("Timeout"):
        return TIMEOUT
    if report.when == "call" and isinstance(error, AssertionError | pytest.fail.Exception):
        return FAILED
    return ERROR


def short_message(error: BaseException | None) -> str:
    text = f"{type(error).__name__}: {error}" if error is not None else ""
    text = " ".join(text.split())
    return text if len(text) <= MESSAGE_LIMIT else text[: MESSAGE_LIMIT - 3] + "..."


def module_digests(impl_dir: Path) -> dict[int, str]:
    """{section number: SHA-256 of its module's bytes} for the modules `impl_dir` holds."""
    digests = {s.number: module_digest(impl_dir / s.file_name) for s in SECTIONS}
    return {number: digest for number, digest in digests.items() if digest is not None}


class Recorder:
    def __init__(self, path: Path, impl_dir: Path | None = None,
                 your_elmo_file: Path | None = None) -> None:
        self.path, self.impl_dir, self.your_elmo_file = path, impl_dir, your_elmo_file
        self.records: dict[str, dict] = {}
        self.ran_at = datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds")
        self.digests: dict[int, str] = {}

    def pytest_sessionstart(self) -> None:
        """The time and the modules' bytes as the run begins: what its results are about."""
        self.ran_at = datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds")
        if self.impl_dir is not None:
            self.digests = module_digests(self.impl_dir)

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_makereport(self, item: pytest.Item, call: pytest.CallInfo):
        outcome = yield
        report = outcome.get_result()
        if report.skipped or (report.passed and report.when != "call"):
            return
        error = call.excinfo.value if call.excinfo is not None else None
        self.record(item, status_of(report, error), error)

    def record(self, item: pytest.Item, status: str, error: BaseException | None) -> None:
        if item.nodeid in self.records and self.records[item.nodeid]["status"] != PASSED:
            return  # keep a test's first failure: a teardown error after it adds nothing
        section = getattr(section_of_test(item.nodeid), "number", None)
        concept = concept_of(section, getattr(item, "originalname", item.name))
        self.records[item.nodeid] = {
            "nodeid": item.nodeid,
            "section": section,
            "name": item.name,
            "checks": purpose(item),
            "status": status,
            "message": "" if status == PASSED else short_message(error),
            "concept": None if concept is None else concept.id,
            "ran_at": self.ran_at,
            "module_digest": self.digests.get(section),
        }

    def pytest_sessionfinish(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.path.write_text(json.dumps(list(self.records.values()), indent=1))
        if self.your_elmo_file is not None and self.impl_dir is not None:
            # Here, in the process that has torch, the sections and their trained biLM
            # loaded already, not in the progress table's own (a second torch start-up).
            from analyses import your_elmo  # only for a run that asks (never a grading run)
            your_elmo.write(self.your_elmo_file, self.ran_at, self.passed_sections(),
                            self.impl_dir)

    def passed_sections(self) -> list[int]:
        """The sections of which this run ran tests, every one passing, in course order."""
        statuses: dict[int, set[str]] = {}
        for record in self.records.values():
            statuses.setdefault(record["section"], set()).add(record["status"])
        return [s.number for s in SECTIONS if statuses.get(s.number) == {PASSED}]


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--results-json", default=None, help="write each test's outcome here")
    parser.addoption("--your-elmo", default=None,
                     help="with --results-json: write here what each section that passes "
                          "shows of the implementation's own ELMo (analyses.your_elmo)")


def pytest_configure(config: pytest.Config) -> None:
    path = config.getoption("--results-json")
    if path:
        your_elmo = config.getoption("--your-elmo")
        config.pluginmanager.register(
            Recorder(Path(path), _impl_dir(config), Path(your_elmo) if your_elmo else None),
            "course-results-recorder")


def _impl_dir(config: pytest.Config) -> Path | None:
    """The folder of the implementation under test: the section tests' `--impl`, as their
    conftest reads it (relative to the course)."""
    try:
        impl = config.getoption("--impl")
    except ValueError:  # run without the section tests' options
        return None
    path = Path(impl)
    return path if path.is_absolute() else ROOT / path
