"""The mistakes catalogue: realistic learner mistakes, each caught by its own section's tests.

    python -m tools.mistakes               # every mistake; last line "<caught> of <total> ..."
    python -m tools.mistakes --section 4   # one section's mistakes
    python -m tools.mistakes --only forgot-zero-grad
    python -m tools.mistakes --list        # the catalogue, each entry a diff, running nothing

`mistakes/<module>.py` holds the mistakes of one section as `MISTAKES`, and `LEARNER_CODE`:
{function: the code a learner writes in it}, a copy of the reference's marked blocks as they
were when the mistakes were written. A mistake is one or more `Edit`s of that copy and the
section test that must catch it, by name; the concept it violates is that test's
(`course/concepts.toml`), so that the idea's words live with the test, never here. Because a
mistake edits the catalogue's own copy and the edited code then replaces the function's
whole block, a refactor of `solutions/` never breaks it; where the copy differs from the
reference, it runs as a correct alternative of its own (it must pass every test). To show
that a mistake is caught, the runner

1. writes the section's reference module, with the mistake's code in place of the blocks
   it edits, to a temporary folder;
2. runs the named test with `--impl <that folder>` (stopping at its first failing example)
   and reads its outcome from `course.results`: caught means the test failed or errored;
3. checks that no other section's tests can see the mistake: with the isolation harness
   (`course.harness`), every other section's tests take this module from `solutions/`,
   whose tests `make test-solutions` runs. `--all-sections` runs them all the same.

The same files hold `ALTERNATIVES`: other correct ways to write the learner's code (torch's
`cosine_similarity`, a boolean mask in the loss, a python loop for the reversal, ...). Each
runs against its section's whole test file, which must pass it: the tests accept every
correct implementation, not only the reference's.

Each one runs in a process forked from a parent that has imported torch, pytest and the
section tests once, two at a time by default. The exit status is 1 when any mistake is not
caught, any alternative fails a test, or an entry does not apply to the reference any more.

What a run found is kept in `mistakes/record.json` (committed), each entry under a key: the
digest of what decides its outcome (its edits, the code they edit and its test, never its
words), of the code of its section's reference module (its docstrings aside), and of the
tests (its section's file, the words of its messages and docstrings aside, the shared
helpers of `tests/sections` and the fakes of the other sections, the comparisons of
`course/diagnose.py`). A later run checks again only the entries whose key changed, or that
did not pass; `--rerun` checks every one.
"""

from __future__ import annotations

import argparse
import ast
import dataclasses
import difflib
import hashlib
import importlib
import importlib.util
import json
import multiprocessing
import os
import sys
import tempfile
import textwrap
import time
from dataclasses import dataclass, field
from pathlib import Path

from course import signatures
from course.concepts import concept_of, title_of
from course.harness import Harness
from course.registry import FAKES_DIR, REFERENCE_DIR, ROOT, SECTIONS, Section, find_section, shown
from course.results import ERROR, FAILED
from course.signatures import SIGNATURES_FILE

from .exercises import find_blocks

CATALOGUE_DIR = ROOT / "mistakes"
RECORD_FILE = CATALOGUE_DIR / "record.json"
SHARED_TEST_FILES = sorted((ROOT / "tests" / "sections").glob("[!t]*.py")) + sorted(
    FAKES_DIR.glob("*.py")) + [ROOT / "course" / "diagnose.py"]  # every section's tests use
CAUGHT = (FAILED, ERROR)
TEST_TIMEOUT_S = 120  # a mistake that makes a test hang is reported, not waited for


@dataclass(frozen=True)
class Edit:
    """Replace `old` with `new` in the learner's code of `function` ("bilm_loss",
    "BiLM.forward"), where `old` occurs exactly once. Without a newline, `old` is text within
    a line; with one, it is whole lines, matched at any indentation, and `new` (whole lines
    too, or "" to delete them) takes the indentation found."""

    function: str
    old: str
    new: str


@dataclass(frozen=True)
class Mistake:
    """One learner mistake: `id` (a slug), what the learner wrote, the test of its section
    that must fail, and the edits of the catalogue's `learner_code` that make it (the
    loader sets `section` and `learner_code`, the file's `LEARNER_CODE` as pairs)."""

    id: str
    mistake: str
    caught_by: str
    edits: tuple[Edit, ...]
    section: Section | None = field(default=None, compare=False)
    learner_code: tuple[tuple[str, str], ...] = field(default=(), compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "edits", tuple(self.edits))

    @property
    def concept(self) -> str:
        """The id of the concept it violates: its test's (`course.concepts`), "" if none."""
        found = concept_of(self.section.number, self.caught_by) if self.section else None
        return found.id if found else ""


@dataclass(frozen=True)
class Alternative:
    """A correct way to write the learner's code that is not the reference's: `id`, what it
    does differently, and the edits that make it. Every test of its section must pass it."""

    id: str
    variant: str
    edits: tuple[Edit, ...]
    section: Section | None = field(default=None, compare=False)
    learner_code: tuple[tuple[str, str], ...] = field(default=(), compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "edits", tuple(self.edits))


Entry = Mistake | Alternative


class CatalogueError(ValueError):
    """A mistake that no longer applies to the reference, or a malformed catalogue file."""


@dataclass(frozen=True)
class Outcome:
    mistake: Entry
    caught: bool  # for an alternative: every test of its section passed it
    detail: str  # the failing test's message, or why the entry counts as not caught
    elsewhere: str = ""  # other sections' tests that failed (with --all-sections)
    signature: tuple[str, ...] = ()  # with --signatures: every test of its section it fails
    fingerprints: dict[str, str] = field(default_factory=dict)  # how each of those failed


# --- the catalogue ---------------------------------------------------------------------------


def load_catalogue(directory: Path = CATALOGUE_DIR) -> list[Entry]:
    """Every mistake and alternative of `directory`, in section order, the mistakes of a
    section first; each file is named after a module."""
    modules = {s.module: s for s in SECTIONS}
    mistakes = []
    for path in sorted(directory.glob("s*.py")):
        section = modules.get(path.stem)
        if section is None:
            raise CatalogueError(f"{path}: not named after a section module ({', '.join(modules)})")
        spec = importlib.util.spec_from_file_location(f"mistakes_{path.stem}", path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        learner_code = tuple((function, textwrap.dedent(code).strip("\n") + "\n")
                             for function, code in getattr(module, "LEARNER_CODE", {}).items())
        entries = [*module.MISTAKES, *getattr(module, "ALTERNATIVES", [])]
        if learner_code != reference_code(section, [f for f, _ in learner_code]):
            entries.append(Alternative(f"{section.module}-learner-code", "the catalogue's copy "
                                       "of the learner's code, which differs from the "
                                       "reference's", ()))
        mistakes += [dataclasses.replace(m, section=section, learner_code=learner_code)
                     for m in entries]
    ids = [m.id for m in mistakes]
    repeated = sorted({i for i in ids if ids.count(i) > 1})
    if repeated:
        raise CatalogueError(f"mistake ids must be unique; repeated: {', '.join(repeated)}")
    return sorted(mistakes, key=lambda m: m.section.number)


def reference_code(section: Section, functions: list[str]) -> tuple[tuple[str, str], ...]:
    """(function, its marked block's code, dedented) of the reference's `functions`."""
    source = (REFERENCE_DIR / section.file_name).read_text()
    blocks = {b.function: b for b in find_blocks(source, section.file_name)}
    lines = source.splitlines(keepends=True)
    return tuple((f, textwrap.dedent("".join(lines[blocks[f].begin : blocks[f].end - 1])))
                 for f in functions if f in blocks)


def take_reference(section: Section, directory: Path = CATALOGUE_DIR) -> None:
    """Rewrite the `LEARNER_CODE` of `section`'s catalogue file from the reference's marked
    blocks of today, for every function its entries edit: after a change of the reference
    that the mistakes should follow (then `make mistakes` shows which edits still apply)."""
    path = directory / section.file_name
    text = path.read_text()
    edited = {e.function for entry in load_catalogue(directory)
              if entry.section == section for e in entry.edits}
    source = (REFERENCE_DIR / section.file_name).read_text()
    blocks = sorted((b for b in find_blocks(source, section.file_name) if b.function in edited),
                    key=lambda b: b.begin)
    lines = source.splitlines(keepends=True)
    entries = []
    for block in blocks:
        code = "".join(lines[block.begin : block.end - 1])
        quote = 'r"""' if "\\" in code else '"""'
        entries.append(f'    "{block.function}": {quote}\n{code}{block.indent}""",\n')
    [node] = [n for n in ast.parse(text).body if isinstance(n, ast.Assign)
              and getattr(n.targets[0], "id", "") == "LEARNER_CODE"]
    old = text.splitlines(keepends=True)
    old[node.lineno - 1 : node.end_lineno] = ["LEARNER_CODE = {\n", *entries, "}\n"]
    path.write_text("".join(old))


def edited_code(mistake: Entry) -> dict[str, str]:
    """{function: the learner code the mistake puts in it}: the catalogue's `learner_code`
    of each function it edits, edited (all of it, for an entry without edits).

    Raises:
        CatalogueError: see `apply_edits`.
    """
    learner_code = dict(mistake.learner_code)
    code = {} if mistake.edits else dict(learner_code)
    for edit in mistake.edits:
        if edit.new == edit.old:
            raise CatalogueError(f"{mistake.id}: an edit of {edit.function} changes nothing")
        if edit.function not in learner_code:
            raise CatalogueError(f"{mistake.id}: the catalogue's LEARNER_CODE has no "
                                 f"{edit.function}")
        lines = code.get(edit.function, learner_code[edit.function]).splitlines(keepends=True)
        matches = _matches(lines, 0, len(lines), edit)
        if len(matches) != 1:
            raise CatalogueError(
                f"{mistake.id}: expected the text to change once in {edit.function}'s code, "
                f"found it {len(matches)} times:\n{textwrap.indent(edit.old, '    ')}")
        code[edit.function] = _replace(lines, *matches[0], edit)
    return code


def difference(mistake: Entry) -> str:
    """The mistake's code against the catalogue's learner code, a unified diff a function."""
    learner_code = dict(mistake.learner_code)
    return "".join(line for function, code in edited_code(mistake).items()
                   for line in difflib.unified_diff(
                       learner_code[function].splitlines(keepends=True),
                       code.splitlines(keepends=True), function, mistake.id, n=1))


def apply_edits(source: str, mistake: Entry, filename: str) -> str:
    """`source` (a reference module) with the marked block of each function that the
    mistake edits replaced by the catalogue's learner code of it, edited; an entry without
    edits puts in all of its learner code.

    Raises:
        CatalogueError: the catalogue has no learner code of an edited function, `source` no
            marked block of it, an edit's `old` text is not found exactly once in the code
            or changes nothing, or the result does not parse.
    """
    code = edited_code(mistake)
    blocks = {b.function: b for b in find_blocks(source, filename)}
    missing = sorted(set(code) - set(blocks))
    if missing:
        raise CatalogueError(f"{mistake.id}: {filename} has no marked code in {missing[0]}")
    lines = source.splitlines(keepends=True)
    for function in sorted(code, key=lambda f: -blocks[f].begin):  # from the bottom up
        block = blocks[function]
        lines[block.begin : block.end - 1] = [textwrap.indent(code[function], block.indent)]
    source = "".join(lines)
    try:
        compile(source, filename, "exec")
    except SyntaxError as err:
        raise CatalogueError(f"{mistake.id}: the edited {filename} does not parse: {err}") from None
    return source


def _matches(lines: list[str], first: int, last: int, edit: Edit) -> list[tuple]:
    """(line index, then the column or the indentation) of each place where `edit.old`
    occurs in `lines[first:last]`."""
    found = []
    if "\n" not in edit.old:
        for i in range(first, last):
            start = lines[i].find(edit.old)
            while start >= 0:
                found.append((i, start))
                start = lines[i].find(edit.old, start + 1)
        return found
    wanted, _ = _block_lines(edit)
    for i in range(first, last - len(wanted) + 1):
        head = lines[i].rstrip("\n")
        indent = head[: len(head) - len(wanted[0])]
        window = [line.rstrip("\n") for line in lines[i : i + len(wanted)]]
        if not indent.strip() and window == [indent + w if w else "" for w in wanted]:
            found.append((i, indent))
    return found


def _replace(lines: list[str], index: int, where: int | str, edit: Edit) -> str:
    if isinstance(where, int):  # one line: `where` is the column
        lines[index] = lines[index][:where] + edit.new + lines[index][where + len(edit.old):]
        return "".join(lines)
    old, new = _block_lines(edit)
    lines[index : index + len(old)] = [(where + n if n else "") + "\n" for n in new]
    return "".join(lines)


def _block_lines(edit: Edit) -> tuple[list[str], list[str]]:
    """The lines of `edit.old` and `edit.new`, both without `old`'s common indentation."""
    old, new = (text.lstrip("\n").rstrip().splitlines() for text in (edit.old, edit.new))
    margin = min((len(line) - len(line.lstrip()) for line in old if line.strip()), default=0)
    if any(line[:margin].strip() for line in new):
        raise CatalogueError(f"{edit.function}: the new lines are indented less than the old")
    return [line[margin:] for line in old], [line[margin:] for line in new]


# --- running the tests -----------------------------------------------------------------------
# Every job runs in a process forked from the runner, which has imported torch and pytest once.


def make_copy(mistake: Entry, directory: Path) -> Path:
    """`directory`, holding the mistaken module of the mistake's section and nothing else
    (the tests take every other section from their fakes)."""
    directory.mkdir(parents=True, exist_ok=True)
    name = mistake.section.file_name
    source = (REFERENCE_DIR / name).read_text()
    (directory / name).write_text(apply_edits(source, mistake, f"solutions/{name}"))
    return directory


def seen_by_other_sections(mistake: Entry, copy: Path) -> list[str]:
    """The other sections whose tests would load the mistaken module from `copy`: none, as
    long as the tests take every section but the one under test from their fakes."""
    harness = Harness(copy, FAKES_DIR)
    fake = FAKES_DIR / mistake.section.file_name
    return [f"section {s.number}" for s in SECTIONS
            if s != mistake.section and harness.source_for(s, mistake.section) != fake]


def _run_pytest(targets: list[str], impl: Path, results: Path, stop_first: bool,
                collect_only: bool = False) -> list[dict]:
    """pytest on `targets` against `impl`, its output discarded; the records of
    `course.results`, each with how it failed (`fingerprint`, course.signatures) or None."""
    import pytest

    fingerprints: dict[str, str] = {}

    class Fingerprints:  # course.report gives each failing test's report its fingerprint
        @staticmethod
        def pytest_runtest_logreport(report) -> None:
            if hasattr(report, "fingerprint"):
                fingerprints.setdefault(report.nodeid, report.fingerprint)

    args = [*targets, "--impl", str(impl), "--results-json", str(results), "-q",
            "-p", "no:cacheprovider", f"--timeout={TEST_TIMEOUT_S}",
            "-p", "no:unraisableexception",  # its gc.collect() after each run costs 0.5 s
            "-W", "ignore::pytest.PytestAssertRewriteWarning",  # the modules collected before
            "--rootdir", str(ROOT), *(["-x"] if stop_first else []),
            *(["--collect-only"] if collect_only else [])]
    saved = [os.dup(1), os.dup(2)]
    with open(os.devnull, "w") as quiet:
        os.dup2(quiet.fileno(), 1)
        os.dup2(quiet.fileno(), 2)
        try:
            pytest.main(args, plugins=[Fingerprints()])
        finally:
            for fd, saved_fd in zip((1, 2), saved, strict=True):
                os.dup2(saved_fd, fd)
                os.close(saved_fd)
    records = json.loads(results.read_text()) if results.exists() else []
    return [{**r, "fingerprint": fingerprints.get(r["nodeid"])} for r in records]


def _test_id(mistake: Mistake) -> str:
    """The named test's pytest id: `tests/sections/test_s4_pretrain.py::test_...`."""
    return f"{mistake.section.test_file.relative_to(ROOT)}::{mistake.caught_by}"


def _without_parameters(record: dict) -> str:
    return record["nodeid"].split("[")[0]


def check(mistake: Entry, scratch: Path, all_sections: bool = False,
          signature: bool = False) -> Outcome:
    """Apply `mistake` to a copy of the reference in `scratch` and run the test that must
    catch it (and, with `all_sections`, every other section's tests; with `signature`, every
    test of its section, to record those it fails); for an alternative, every test of its
    section."""
    try:
        copy = make_copy(mistake, scratch / "impl")
    except CatalogueError as err:
        return Outcome(mistake, False, f"does not apply: {err}")
    seen_by = seen_by_other_sections(mistake, copy)
    if seen_by:
        return Outcome(mistake, False, f"the tests of {', '.join(seen_by)} would see it")
    if isinstance(mistake, Alternative):
        records = _run_pytest([str(mistake.section.test_file)], copy, scratch / "all.json", False)
        wrong = [r for r in records if r["status"] != "passed"]
        if not records or wrong:
            found = f"{wrong[0]['name']}: {_gist(wrong[0]['message'])}" if wrong else "no tests"
            return Outcome(mistake, False, f"{len(wrong)} test(s) fail it, e.g. {found}")
        return Outcome(mistake, True, f"all {len(records)} tests of its section")
    failing_tests: tuple[str, ...] = ()
    fingerprints: dict[str, str] = {}
    if signature:
        records = _run_pytest([str(mistake.section.test_file)], copy, scratch / "all.json",
                              False)
        failing = [r for r in records if r["status"] in CAUGHT]
        failing_tests = tuple(sorted({r["name"].split("[")[0] for r in failing}))
        for r in failing:
            if r["fingerprint"] is not None:
                fingerprints.setdefault(r["name"].split("[")[0], r["fingerprint"])
    else:
        records = _run_pytest([str(ROOT / _test_id(mistake))], copy, scratch / "own.json", True)
    records = [r for r in records if _without_parameters(r) == _test_id(mistake)]
    failed = [r for r in records if r["status"] in CAUGHT]
    if not failed:
        found = sorted({r["status"] for r in records}) or "no such test"
        return Outcome(mistake, False, f"{mistake.caught_by} did not fail: {found}")
    elsewhere = ""
    if all_sections:
        others = [str(s.test_file) for s in SECTIONS
                  if s != mistake.section and s.test_file.exists()]
        records = _run_pytest(others, copy, scratch / "others.json", False)
        elsewhere = ", ".join(r["nodeid"] for r in records if r["status"] != "passed")
    return Outcome(mistake, not elsewhere, f"{failed[0]['name']}: {_gist(failed[0]['message'])}",
                   elsewhere, failing_tests, fingerprints)


def _gist(message: str) -> str:
    """The test's own words, without pytest's rendering of the assertion that follows them."""
    said, _, _ = message.partition(" assert ")
    return message if said in ("AssertionError:", "") else said


def failing_on_the_reference(mistakes: list[Entry], scratch: Path) -> dict[str, str]:
    """{test id: message} of the named tests that do not pass on `solutions/` itself: the
    control, without which a failure might not be the mistake's doing."""
    tests = sorted({str(ROOT / _test_id(m)) for m in mistakes if isinstance(m, Mistake)})
    if not tests:
        return {}
    records = _run_pytest(tests, REFERENCE_DIR, scratch / "control.json", False)
    return {_without_parameters(r): f"{r['status']}: {_gist(r['message'])}" for r in records
            if r["status"] != "passed"}


def _job(task: tuple) -> tuple:
    """One job, in a fresh forked process: ("control", mistakes) or ("mistake", mistake)."""
    kind, payload, all_sections, signature, threads = task
    import torch

    torch.set_num_threads(threads)  # two jobs on two cores: one thread each, not two
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="elmo-mistake-") as scratch:
        if kind == "control":
            result = failing_on_the_reference(payload, Path(scratch))
        else:
            result = check(payload, Path(scratch), all_sections, signature)
    return result, time.perf_counter() - started


def _warm_pretrained_cache() -> None:
    """Train (or load) the fakes' biLM, which the tests of sections 5 and 6 read, once, so
    that parallel jobs never train it twice."""
    from course.pretrained import pretrained

    pretrained(Harness(REFERENCE_DIR, FAKES_DIR).load(find_section("extract")))


def _import_the_tests(sections: list[Section], profile: str) -> None:
    """Import here, once, what every forked job would import again: the section tests,
    their conftest and plugins (collected, so that pytest rewrites their asserts), the
    libraries the sections import (matplotlib), and what hypothesis imports to report a
    failing example. Together they were most of a job's time. `profile`: hypothesis's,
    "first-failure" where only whether a test fails matters (no shrinking)."""
    import hypothesis.extra._patching  # noqa: F401  (a failing example's report: 1 s)

    os.environ["HYPOTHESIS_PROFILE"] = profile
    reference = Harness(REFERENCE_DIR).load(SECTIONS[-1])
    for section in SECTIONS:
        Harness.module(reference, section)
    with tempfile.TemporaryDirectory(prefix="elmo-mistakes-") as scratch:
        _run_pytest([str(s.test_file) for s in sections], REFERENCE_DIR,
                    Path(scratch) / "collected.json", False, collect_only=True)


def check_all(mistakes: list[Entry], jobs: int, all_sections: bool = False,
              signatures: bool = False):
    """Yield the control ({test: message} of named tests failing on the reference), then each
    mistake's `Outcome`, in order, each with its time in seconds; `jobs` at a time."""
    import hypothesis  # noqa: F401  (imported here once, so that every forked job has them)
    import pytest  # noqa: F401
    import torch  # noqa: F401
    import torch._dynamo  # noqa: F401  (what the first Adam or meta tensor imports: 0.9 s)

    context = multiprocessing.get_context("fork")
    after_training = find_section("pretrain").number
    if any(m.section.number > after_training for m in mistakes):  # their tests use `trained`
        warm = context.Process(target=_warm_pretrained_cache)
        warm.start()
        warm.join()
    _import_the_tests(sorted({m.section for m in mistakes}, key=lambda s: s.number),
                      # a signature's fingerprints are those of a learner's run: shrunk
                      "course" if signatures else "first-failure")
    threads = max(1, (os.cpu_count() or 1) // jobs)
    tasks = [("control", mistakes, False, False, threads)]
    tasks += [("mistake", m, all_sections, signatures, threads) for m in mistakes]
    with context.Pool(jobs, maxtasksperchild=1) as pool:  # a fresh process for each job
        yield from pool.imap(_job, tasks, chunksize=1)


# --- the record: what was found, under the digests it depends on ----------------------------


def behaviour(entry: Entry) -> str:
    """What of `entry` decides its outcome: its kind, id, edits, the learner code they edit
    and its test, never its words."""
    edited = {e.function for e in entry.edits}
    code = [(f, c) for f, c in entry.learner_code if f in edited or not entry.edits]
    return repr((type(entry).__name__, entry.id, getattr(entry, "caught_by", ""),
                 entry.edits, code))


def entry_key(entry: Entry) -> str:
    """What `entry`'s outcome depends on: its `behaviour`, its section's reference module,
    and that section's tests with what they load (the fakes)."""
    digest = hashlib.sha256(behaviour(entry).encode())
    section = entry.section
    for path in SHARED_TEST_FILES:
        digest.update(shown(path).encode() + b"\0" + hashlib.sha256(path.read_bytes()).digest())
    code = [REFERENCE_DIR / section.file_name,
            section.test_file]  # their code, not their docstrings' or messages' words
    for path in code:
        digest.update(shown(path).encode() + b"\0" + signatures.code_digest(path).encode())
    return digest.hexdigest()


def load_record(path: Path = RECORD_FILE) -> dict[str, dict]:
    """{entry id: {"key", "detail"}} of the entries that passed when last run under `key`."""
    try:
        return json.loads(path.read_text())["passed"]
    except (OSError, ValueError, KeyError):
        return {}


def write_record(record: dict[str, dict], path: Path = RECORD_FILE) -> None:
    path.write_text(json.dumps({"passed": dict(sorted(record.items()))}, indent=1) + "\n")


# --- the signatures (course.signatures) -------------------------------------------------------
# A signature is measured on a section's test file, its catalogue file and the comparisons
# (course/diagnose.py); a change of the code of any makes it stale, a change of a message's
# words does not (the fingerprints leave them out). A change of the reference seldom changes
# which tests a mistake fails, and make mistakes still shows every mistake caught by its own
# test.


def _digests(catalogue_dir: Path = CATALOGUE_DIR) -> dict[str, str]:
    """{file: digest} of what the signatures were measured on: the section tests' code, each
    catalogue file's entries' `behaviour` (their words may change freely), and the code that
    every section's tests share (their helpers, the fakes, the comparisons)."""
    tests = [s.test_file for s in SECTIONS if s.test_file.exists()]
    entries = load_catalogue(catalogue_dir)
    catalogue = {shown(catalogue_dir / s.file_name): hashlib.sha256("\n".join(
        behaviour(e) for e in entries if e.section == s).encode()).hexdigest()
        for s in SECTIONS if (catalogue_dir / s.file_name).exists()}
    # the helpers decide what a test asks (a biLM that reads the sentence), the fakes what
    # another section's code gives
    return {**{shown(f): signatures.code_digest(f) for f in tests}, **catalogue,
            **{shown(f): hashlib.sha256(f.read_bytes()).hexdigest() for f in SHARED_TEST_FILES}}


def write_signatures(outcomes: list[Outcome], catalogue_dir: Path = CATALOGUE_DIR) -> None:
    missing = [o.mistake.id for o in outcomes if not o.signature]
    if missing:
        raise SystemExit(f"no signature for {', '.join(missing)}: fix the catalogue first")
    signatures.dump([signatures.Known(o.mistake.id, o.mistake.section.number,
                                      o.mistake.mistake, o.mistake.concept,
                                      frozenset(o.signature), o.fingerprints)
                     for o in outcomes],
                     _digests(catalogue_dir))


def stale_signatures(catalogue: list[Entry], catalogue_dir: Path = CATALOGUE_DIR) -> list[str]:
    """What makes the recorded signatures out of date, in words; [] when they are current."""
    known, measured_on = signatures.load()
    mistakes = {m.id: m for m in catalogue if isinstance(m, Mistake)}
    problems = []
    if set(mistakes) != {k.id for k in known}:
        problems.append(f"{shown(SIGNATURES_FILE)} does not record the catalogue's mistakes "
                        "(missing or extra ids)")
    changed = sorted(f for f, d in _digests(catalogue_dir).items()
                     if measured_on.get(f) != d)
    if changed:
        problems.append(f"{', '.join(changed)} changed since the signatures were measured")
    for k in known:
        if k.id in mistakes and mistakes[k.id].caught_by not in k.tests:
            problems.append(f"{k.id}'s signature lacks its own test {mistakes[k.id].caught_by}")
    if problems:
        return problems + ["run `make signatures` (about 4 minutes)"]
    reworded = [k.id for k in known if _words(mistakes[k.id]) != (k.mistake, k.concept)]
    if reworded:
        return [f"the words of {', '.join(reworded)} changed; run `make signatures` (seconds: "
                "it rewrites the words and runs nothing)"]
    return []


def _words(mistake: Mistake) -> tuple[str, str]:
    """What a learner reads of `mistake`: its words and its concept's id."""
    return mistake.mistake, mistake.concept


def reword_signatures(catalogue: list[Entry]) -> None:
    """Rewrite the recorded signatures' words from the catalogue, keeping what each fails:
    for a catalogue whose entries changed only in their words."""
    known, measured_on = signatures.load()
    mistakes = {m.id: m for m in catalogue if isinstance(m, Mistake)}
    signatures.dump([dataclasses.replace(k, mistake=mistakes[k.id].mistake,
                                         concept=mistakes[k.id].concept) for k in known],
                    measured_on)


# --- the report ------------------------------------------------------------------------------


def describe(mistake: Entry) -> str:
    functions = ", ".join(dict.fromkeys(e.function for e in mistake.edits)) or ", ".join(
        function for function, _ in mistake.learner_code)
    section = mistake.section
    if isinstance(mistake, Alternative):
        return (f"section {section.number} ({section.name}) {mistake.id}, a correct "
                f"alternative: {mistake.variant} [{functions}]")
    return (f"section {section.number} ({section.name}) {mistake.id}: {mistake.mistake} "
            f"[{functions}]\n    concept:   {mistake.concept}: {title_of(mistake.concept)}")


def report(outcome: Outcome, seconds: float) -> str:
    if isinstance(outcome.mistake, Alternative):
        verdict = "passes" if outcome.caught else "REJECTED:"
    else:
        verdict = "caught by" if outcome.caught else "NOT CAUGHT:"
    text = f"{describe(outcome.mistake)}\n    {verdict} {outcome.detail} ({seconds:.1f} s)"
    if outcome.elsewhere:
        text += f"\n    and other sections' tests failed: {outcome.elsewhere}"
    return text


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tools.mistakes", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--section", help="only this section's mistakes (a number or a name)")
    parser.add_argument("--only", metavar="ID", action="append", help="only this mistake")
    parser.add_argument("--list", action="store_true", help="print the catalogue and stop")
    parser.add_argument("--all-sections", action="store_true",
                        help="also run every other section's tests against each mistake (slow)")
    parser.add_argument("--jobs", type=int, default=min(2, os.cpu_count() or 1),
                        help="mistakes checked at once (default: 2, or 1 on one core)")
    parser.add_argument("--signatures", action="store_true",
                        help="run every mistake against its section's whole test file and "
                        f"write what each fails to {shown(SIGNATURES_FILE)} (make signatures)")
    parser.add_argument("--check-signatures", action="store_true",
                        help=f"check that {shown(SIGNATURES_FILE)} is current, and stop")
    parser.add_argument("--catalogue", type=Path, default=CATALOGUE_DIR, metavar="DIR",
                        help="the folder of mistakes/<module>.py files (default: mistakes/)")
    parser.add_argument("--take-reference", action="store_true",
                        help="rewrite each catalogue file's LEARNER_CODE from the reference's "
                        "code of today (after a change the mistakes should follow), and stop")
    parser.add_argument("--rerun", action="store_true",
                        help=f"check every entry, whatever {shown(RECORD_FILE)} records")
    args = parser.parse_args(argv)

    mistakes = load_catalogue(args.catalogue)
    if args.section:
        mistakes = [m for m in mistakes if m.section == find_section(args.section)]
    if args.only:
        unknown = set(args.only) - {m.id for m in mistakes}
        if unknown:
            parser.error(f"no mistake {', '.join(sorted(unknown))}; see --list")
        mistakes = [m for m in mistakes if m.id in args.only]
    if args.take_reference:
        for section in dict.fromkeys(m.section for m in mistakes):
            take_reference(section, args.catalogue)
        print("LEARNER_CODE taken from solutions/; `make mistakes` shows the edits that apply")
        return 0
    if args.check_signatures:
        stale = stale_signatures(load_catalogue(args.catalogue), args.catalogue)
        print("\n".join(stale) or f"{shown(SIGNATURES_FILE)}: current")
        return 1 if stale else 0
    if args.signatures and (args.section or args.only):
        parser.error("--signatures records the whole catalogue: no --section or --only")
    if args.signatures and not args.rerun and all(
            "the words of" in problem
            for problem in stale_signatures(mistakes, args.catalogue) or ["the words of"]):
        reword_signatures(mistakes)
        print(f"{shown(SIGNATURES_FILE)}: what each mistake fails is current; its words are "
              "rewritten from the catalogue (--rerun measures every one again)")
        return 0
    if args.list:
        print("\n".join(describe(m) + (f"\n    caught by: {m.caught_by}" if isinstance(
            m, Mistake) else "") + "\n" + textwrap.indent(difference(m), "    ")
            for m in mistakes))
        return 0

    record_file = args.catalogue / RECORD_FILE.name
    record = {} if args.rerun or args.all_sections or args.signatures else load_record(
        record_file)
    keys = {m.id: entry_key(m) for m in mistakes}
    kept = [m for m in mistakes if record.get(m.id, {}).get("key") == keys[m.id]]
    to_run = [m for m in mistakes if m not in kept]
    caught = passing = 0
    for entry in kept:
        caught += isinstance(entry, Mistake)
        passing += isinstance(entry, Alternative)
        print(report(Outcome(entry, True, record[entry.id]["detail"]), 0.0)
              .replace(" (0.0 s)", " (as recorded)"))
    results = check_all(to_run, max(1, args.jobs), args.all_sections, args.signatures) \
        if to_run else iter([({}, 0.0)])
    failing, seconds = next(results)
    tests = len({_test_id(m) for m in to_run if isinstance(m, Mistake)})
    print(f"control: of the {tests} tests named below, {tests - len(failing)} pass on solutions/ "
          f"({seconds:.1f} s){': not ' + ', '.join(failing) if failing else ''}")
    recorded = []
    for outcome, seconds in results:
        recorded.append(outcome)
        if isinstance(outcome.mistake, Mistake):
            test = _test_id(outcome.mistake)
            if outcome.caught and test in failing:
                outcome = Outcome(outcome.mistake, False,
                                  f"{test} fails on solutions/ as well, so it proves nothing: "
                                  f"{failing[test]}")
            caught += outcome.caught
        else:
            passing += outcome.caught
        if outcome.caught and not outcome.elsewhere:
            record[outcome.mistake.id] = {"key": keys[outcome.mistake.id],
                                          "detail": outcome.detail}
        else:
            record.pop(outcome.mistake.id, None)
        print(report(outcome, seconds), flush=True)
    if not args.all_sections:
        write_record({i: r for i, r in record.items()
                      if i in {m.id for m in load_catalogue(args.catalogue)}}, record_file)
    wrong = sum(isinstance(m, Mistake) for m in mistakes)
    right = len(mistakes) - wrong
    if args.signatures:
        write_signatures([o for o in recorded if isinstance(o.mistake, Mistake)],
                         args.catalogue)
        print(f"wrote the signatures of {wrong} mistakes to {shown(SIGNATURES_FILE)}")
    print(f"{len(to_run)} checked now, {len(kept)} as {shown(record_file)} records them")
    print(f"{caught} of {wrong} mistakes caught"
          + (f", {passing} of {right} correct alternatives pass" if right else ""))
    return 0 if (caught, passing) == (wrong, right) else 1


if __name__ == "__main__":
    # Run as the module the catalogue's files import (`tools.mistakes`), not as `__main__`, a
    # second copy whose classes the catalogue's entries would not be instances of.
    from tools import mistakes

    sys.exit(mistakes.main())
