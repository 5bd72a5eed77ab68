"""What the companion notebooks call, and `make run-notebooks`, which runs them headless.

    sections = load_sections(IMPL, "pretrain")   # every section, as section 4's tests see them
    sections.pretrain.train_bilm(...)            # IMPL's section 4, as its file is now
    sections.corpus.CORPUS                       # the reference's section 2, where there is one
    trained = pretrained_bilm(sections)          # the biLM that sections 1-4 pre-train
    run_checks(IMPL, "pretrain")                 # section 4's tests, as `make test SECTION=4`

    python -m analyses.notebook run [--impl exercises] [--out build/notebooks] [NOTEBOOK...]

A notebook takes its section from `IMPL` and the others from the reference (where there is
one), as the tests do. The modules follow their files: after an edit to a section's file,
running a cell again runs the edited code (the harness loads a changed file afresh), with
no restart and no re-run of the cells above; an object made from a section's code (a model)
keeps the code it was made with, unless a cell makes it through `sections.builder`, which
makes it again after an edit:

    new_model = sections.builder(lambda: sections.bilm.BiLM(30))
    model = new_model()    # the same model while the files are unchanged, a new one after

The implementation a notebook runs is its parameters cell's `IMPL`, or, when that is None
(as committed), `ELMO_IMPL` from the environment, or the first line of the ignored file
`.elmo-impl` at the repository's root, or `exercises`: switching never edits a notebook.
"""

from __future__ import annotations

import argparse
import asyncio
import codecs
import copy
import json
import os
import re
import subprocess
import sys
import tempfile
import textwrap
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType, SimpleNamespace

import nbformat
import torch
from nbclient import NotebookClient
from nbclient.exceptions import CellExecutionError
from traitlets.config import Config

from course.harness import Harness, Sections
from course.pretrained import pretrained
from course.registry import (
    BUILD_DIR,
    EXERCISES_DIR,
    NOTEBOOKS_DIR,
    OUTPUT_WIDTH,
    REFERENCE_DIR,
    ROOT,
    SECTIONS,
    STUB_MESSAGE,
    Section,
    find_section,
    shown,
)
from course.state import module_digest
from course.switch import IMPL_FILE, IMPL_VARIABLE, chosen_impl  # noqa: F401 (the notebooks')

OVERVIEW = "00_overview.ipynb"
REAL_ENGLISH = "09_real_english.ipynb"  # no section's: ELMo on real English, after them all
PARAMETERS_TAG = "parameters"
CELL_TIMEOUT_S = 300
SLOW_CELL_S = 5.0  # `make run-notebooks` reports each code cell that takes this long or more
EXECUTED_DIR = BUILD_DIR / "notebooks"  # where `make run-notebooks` keeps what it executed
KERNEL = {"name": "python3", "display_name": "Python 3 (ipykernel)", "language": "python"}
# One torch thread per kernel unless told otherwise: kernels run side by side on few cores,
# where OpenMP threads waiting for each other slow training down several times over.
KERNEL_ENV = {"OMP_NUM_THREADS": "1"}
# The results file whose records a section's checks show, instead of running them, where
# they were made from the module under test (`recorded_checks`).
RECORDED_CHECKS_VAR = "ELMO_CHECKS_RECORDED"
_TERMINAL_COLOURS = re.compile(r"\x1b\[[0-9;]*m")
_PYTEST_EXPLANATION = re.compile(r"\s+assert\s")  # pytest's explanation after a message


def notebook_names() -> list[str]:
    """Every companion notebook: the overview, then one per section, in the registry's order,
    then ELMo on real English."""
    return [OVERVIEW, *(section.notebook for section in SECTIONS), REAL_ENGLISH]


def section_of(notebook: str) -> Section | None:
    """The section whose notebook this is; None for the overview."""
    return next((s for s in SECTIONS if s.notebook == notebook), None)


# --- called from the notebooks -------------------------------------------------------------


def fit(text: str, width: int = OUTPUT_WIDTH) -> str:
    """`text` with each line longer than `width` characters wrapped at its spaces, each
    continuation indented two more than its line, so that no line is cut on a page."""
    lines = []
    for line in text.splitlines():
        if len(line) <= width:
            lines.append(line)
            continue
        indent = " " * (len(line) - len(line.lstrip()))
        lines += textwrap.wrap(line, width, subsequent_indent=indent + "  ",
                               break_on_hyphens=False)
    return "\n".join(lines)


def say(text: str) -> None:
    """Print `text` (a reading, a table) fitted to the notebook's width (`fit`)."""
    print(fit(text), flush=True)


def targets_read(*prefixes: str) -> str:
    """The course's targets whose claim starts with one of `prefixes`, as the reference's
    seeds read them (`analyses.reference_targets.SUMMARY`): each claim, then how many of the
    pre-trained and of the untrained biLMs hold it, what pre-training adds to the reading
    (mean ± sd over the seeds) and the verdict."""
    from .reference_targets import SUMMARY

    lines = [f"The reference's {SUMMARY['seeds']} seeds, per target: how many pre-trained and "
             "untrained biLMs hold it,", "what pre-training adds to the reading (mean ± sd), "
             "and the verdict"]
    for claim, reading in SUMMARY["targets"].items():
        if claim.startswith(prefixes):
            lines += [f"  {claim}",
                      f"      pre-trained {reading['trained']}, untrained {reading['untrained']}"
                      f"; adds {reading['effect_mean_sd']}: {reading['verdict']}"]
    return fit("\n".join(lines))


# The output that Jupyter Book's `glue` writes and myst-nb reads: a display whose data is
# kept apart from what the cell shows, named in its metadata.
GLUE_PREFIX = "application/papermill.record/"


def glue(name: str, value) -> None:
    """Keep `value` under `name` for the notebook's prose: in the course book, a sentence
    written with {glue:text}`name:.2f` shows it, as this run computed it. The cell shows
    nothing more. This is myst_nb.glue's display, written here because myst-nb (and
    Sphinx with it) is the book's environment's, not the kernel's."""
    from IPython.core.formatters import format_display_data
    from IPython.display import display

    data, metadata = format_display_data(value)
    display({GLUE_PREFIX + mime: shown_as for mime, shown_as in data.items()}, raw=True,
            metadata={**metadata, "scrapbook": {"name": name, "mime_prefix": GLUE_PREFIX}})


def load_sections(impl: str | Path, section: str | int) -> LiveSections:
    """Every section's module as section `section`'s tests see it: its own from `impl`, by
    name (`.corpus`, ...), each as its file is now; `.package` for `course.pretrained`.

    It also runs torch on one thread: the course's tensors are small, and a second thread's
    synchronisation costs more than it saves (as in the tests).
    """
    torch.set_num_threads(1)
    return LiveSections(Harness(_in_course(impl)), find_section(section))


class LiveSections(Sections):
    """`Sections` that follow their files: each use of `.package` or of a module's attribute
    loads the package of the files as they are now (the same package while they are
    unchanged), so that an edited function is the one a re-run cell calls."""

    def __init__(self, harness: Harness, under_test: Section) -> None:
        self._harness, self._under_test = harness, under_test

    @property
    def package(self) -> ModuleType:
        return self._harness.load(self._under_test)

    def builder(self, make):
        """A function returning `make()`'s object, the same one while the sections' files
        are unchanged and a new one after an edit of any of them: a cell that starts with
        `model = new_model()` always runs the code as its file is now."""
        made: dict[str, object] = {}

        def current():
            key = self.package.__name__  # named by the digest of every section's file
            if key not in made:
                if made:
                    print("(your code changed since the last run: made again from it)")
                made.clear()
                made[key] = make()
            return made[key]

        return current

    def __getattr__(self, name: str) -> _LiveModule:
        try:
            section = find_section(name)
        except KeyError as err:
            raise AttributeError(err.args[0]) from None
        return _LiveModule(self, section)


class _LiveModule:
    """A section's module, read afresh from its `LiveSections` on every attribute."""

    def __init__(self, sections: LiveSections, section: Section) -> None:
        self._sections, self._section = sections, section

    def _module(self) -> ModuleType:
        return Harness.module(self._sections.package, self._section)

    def __getattr__(self, name: str):
        return getattr(self._module(), name)

    def __dir__(self) -> list[str]:
        return dir(self._module())

    def __repr__(self) -> str:
        return f"<section {self._section.number} ({self._section.name}), as its file is now>"


def pretrained_bilm(sections: Sections, characters: bool = False) -> SimpleNamespace:
    """The biLM that `sections`' sections 1-4 pre-train on the corpus (`course.pretrained`),
    saying so first: it trains once for each version of those files, then comes from
    the cache. With `characters`, section 8's character biLM, trained the same way."""
    which = "the character biLM pre-trained by sections 1-4 and 8" if characters else (
        "the biLM pre-trained by sections 1-4")
    takes = "about twenty seconds" if characters else "a few seconds"
    say(f"{which} (the first time, or after they change, it trains now, for {takes} of "
        "CPU; then it is read from the cache) ...")
    trained = pretrained(sections.package, characters)
    took = "" if trained.cpu_seconds is None else (
        f", trained in {trained.cpu_seconds:.1f} s of CPU")
    say(f"... {len(trained.history)} epochs, final loss {trained.history[-1]:.3f}{took}")
    return trained


@contextmanager
def each_epoch_on(sections: Sections, sentences: Sequence[str]) -> Iterator[list[float]]:
    """While it lasts, each call of section 4's `corpus_loss` (the one `train_bilm` makes
    after every epoch, to record its history) also measures the loss on `sentences`: the
    list it yields fills with one held-out loss per epoch. The training itself is unchanged
    (`corpus_loss` runs in eval mode and draws nothing at random)."""
    module = Harness.module(sections.package, find_section("pretrain"))
    original, found = module.corpus_loss, []

    def measured(model, corpus, word2idx):
        loss = original(model, corpus, word2idx)
        found.append(original(model, sentences, word2idx))
        return loss

    module.corpus_loss = measured
    try:
        yield found
    finally:
        module.corpus_loss = original


def _in_course(impl: str | Path) -> Path:
    path = Path(impl)
    return path if path.is_absolute() else ROOT / path


class ChecksFailed(AssertionError):
    """A section's checks did not all pass. Jupyter shows only its message (the course's
    report, printed above it), not a traceback into this module."""

    def _render_traceback_(self) -> list[str]:  # IPython's hook for an exception's display
        return [f"{type(self).__name__}: {self}"]


def run_checks(impl: str | Path, section: str | int) -> None:
    """Run one section's tests on `impl` as `make test SECTION=<section>` does, then show the
    course's report of them: a line of counts, then for each test that failed what it checks
    and the course's message, without pytest's tracebacks or the tensors it compared.

    In a notebook, one output counts the checks as they pass and is then replaced by the
    report, so that a saved notebook (and the course book) keeps the report alone; elsewhere
    the report is printed. The tests run in a process of their own: hypothesis draws some
    examples from constants it finds in the modules already imported, so in the kernel they
    would see other examples than `make test` does. Where a run of the same tests on the
    same module has been recorded for it (`recorded_checks`), its records are shown instead.

    Raises:
        ChecksFailed: a test failed, or there was none to run.
    """
    chosen = find_section(section)
    running = f"section {chosen.number} ({chosen.name}): its checks on {shown(_in_course(impl))}/"
    progress = _Progress(f"{running} ...")
    found = recorded_checks(impl, chosen)
    if found is not None:
        status, printed = int(any(r["status"] not in ("passed", "skipped") for r in found)), ""
    else:
        found, status, printed = _run_checks(impl, chosen, running, progress)
    progress.done(fit(checks_report(chosen, found, status, printed)))
    if status != 0:
        failed = sum(r["status"] not in ("passed", "skipped") for r in found)
        raise ChecksFailed(
            f"section {chosen.number} ({chosen.name}): "
            + (f"{failed} of {len(found)} checks do not pass yet; the report above says "
               "which and why" if failed else "the checks could not run; see above")
            + f" (all of pytest's output: make test SECTION={chosen.number})")


def recorded_checks(impl: str | Path, section: Section) -> list[dict] | None:
    """`section`'s records in the results file that $ELMO_CHECKS_RECORDED names (`make
    check` names the one its run of every section's tests on the reference wrote, which its
    notebook test sees fresh), where there are some and each was made from the module that
    `impl` holds now; None otherwise, and always where the variable is not set (a learner's
    notebook runs its checks)."""
    path = os.environ.get(RECORDED_CHECKS_VAR)
    if not path or not Path(path).is_file():
        return None
    digest = module_digest(_in_course(impl) / section.file_name)
    found = [r for r in json.loads(Path(path).read_text()) if r.get("section") == section.number]
    if not found or any(r.get("module_digest") != digest for r in found):
        return None
    return found


def _run_checks(impl: str | Path, chosen: Section, running: str, progress: _Progress
                ) -> tuple[list[dict], int, str]:
    """Run `chosen`'s tests on `impl` in a process of their own, counting them in
    `progress` as they pass: (their records, pytest's exit status, what it printed)."""
    with tempfile.TemporaryDirectory() as scratch:
        results = Path(scratch) / "results.json"
        command = [sys.executable, "-m", "pytest", "tests/sections", "--impl", str(impl),
                   "--section", chosen.name, "--tb=no", "-q", "-rN", "-p", "no:warnings",
                   "--color=no", "--results-json", str(results)]
        decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        printed = ""
        with subprocess.Popen(command, cwd=ROOT, stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT) as tests:
            for chunk in iter(lambda: tests.stdout.read1(4096), b""):
                printed += decoder.decode(chunk)
                progress.show(f"{running}: {_tally(printed)} ...")
        found = json.loads(results.read_text()) if results.exists() else []
    return found, tests.returncode, printed


# pytest -q's progress: a line of marks, one per test (. passed, F or E not, s skipped, x
# and X expected failures), then its share done.
_PROGRESS_LINE = re.compile(r"^([.FEsxX]+)\s*(?:\[\s*\d+%\])?$", re.MULTILINE)


def _tally(printed: str) -> str:
    """"41 pass, 1 does not": the tests that pytest -q's progress in `printed` shows."""
    marks = "".join(line[1] for line in _PROGRESS_LINE.finditer(printed))
    failed = marks.count("F") + marks.count("E")
    return f"{marks.count('.')} pass" + (f", {failed} do not" if failed else "")


class _Progress:
    """One output that a notebook updates in place (IPython's display handle), so that what a
    saved notebook keeps is its last state; outside IPython, only that state, printed."""

    def __init__(self, text: str) -> None:
        from IPython import get_ipython
        from IPython.display import Pretty, display

        self._shown = text
        self._handle = display(Pretty(text), display_id=True) if get_ipython() else None

    def show(self, text: str) -> None:
        """Replace the output with `text`, where it differs."""
        if self._handle is not None and text != self._shown:
            from IPython.display import Pretty

            self._handle.update(Pretty(text))
            self._shown = text

    def done(self, text: str) -> None:
        """The last state: in a notebook it replaces the output, elsewhere it is printed."""
        if self._handle is None:
            print(text, flush=True)
        else:
            self.show(text)


def _course_message(message: str) -> str:
    """A test's message without what pytest appends to it (its rewritten `assert`, the
    values it compared): the course's own words only."""
    return _PYTEST_EXPLANATION.split(message, maxsplit=1)[0].rstrip()


def checks_report(section: Section, results: list[dict], status: int, printed: str) -> str:
    """The course's report of one section's checks: a line of counts, then each failure's
    message under what the test checks; pytest's own tail when no test could run."""
    failed = [r for r in results if r["status"] not in ("passed", "skipped")]
    if not results or (status not in (0, 1)):
        tail = "\n".join(printed.strip().splitlines()[-25:])
        return (f"section {section.number} ({section.name}): no check ran (pytest exit "
                f"status {status}); pytest said:\n{tail}")
    lines = [f"section {section.number} ({section.name}): {len(results) - len(failed)} of "
             f"{len(results)} checks pass"]
    by_message: dict[str, list[dict]] = {}
    for result in failed:  # one message said once, however many tests it failed
        message = _course_message(result["message"]) or result["status"]
        by_message.setdefault(message, []).append(result)
    for message, results_of in by_message.items():
        first, more = results_of[0], len(results_of) - 1
        lines += [f"\nFAILED {first['name']}" + (f" and {more} more with the same message"
                                                  if more else ""),
                  f"  checks:  {first['checks']}", f"  message: {message}"]
    return "\n".join(lines)


def stubs_left(impl: str | Path, section: Section) -> list[str]:
    """The functions of `section` in `impl` that still raise the stub's NotImplementedError,
    or one note saying that `impl` has no module for the section."""
    path = _in_course(impl) / section.file_name
    if not path.exists():
        return [f"({shown(path)} is missing)"]
    return [m["function"] for m in STUB_MESSAGE.finditer(path.read_text())
            if int(m["number"]) == section.number]


# --- running them headless -----------------------------------------------------------------


@dataclass(frozen=True)
class Outcome:
    """One execution: `error_cell` is the index of the cell that failed (None: none did),
    `error` its exception as "Name: message", `traceback` what that cell printed and the
    kernel's traceback, `executed` the notebook with its outputs (up to an error)."""

    notebook: str
    impl: str
    seconds: float
    error_cell: int | None = None
    error: str = ""
    traceback: str = ""
    executed: nbformat.NotebookNode | None = field(default=None, compare=False, repr=False)


def tagged(cells: list[nbformat.NotebookNode], tag: str) -> list[int]:
    """The indices of the cells that carry `tag`."""
    return [i for i, cell in enumerate(cells) if tag in cell.metadata.get("tags", [])]


def with_impl(notebook: nbformat.NotebookNode, impl: str | Path) -> nbformat.NotebookNode:
    """A copy of `notebook` whose parameters cell reads `IMPL = "<impl>"`, as papermill
    would set it."""
    notebook = copy.deepcopy(notebook)
    (index,) = tagged(notebook.cells, PARAMETERS_TAG)
    notebook.cells[index].source = f"IMPL = {json.dumps(str(impl))}"
    return notebook


async def _execute(path: Path, impl: str, slots: asyncio.Semaphore,
                   save_dir: Path | None = None, report=None) -> Outcome:
    report = report or (lambda line: None)
    async with slots:
        notebook = with_impl(nbformat.read(path, as_version=4), impl)
        current = {"cell": None, "started": 0.0}
        code_cells = sum(cell.cell_type == "code" for cell in notebook.cells)

        def cell_started(cell, cell_index):
            current.update(cell=cell_index, started=time.perf_counter())

        def cell_executed(cell, cell_index, execute_reply):
            took = time.perf_counter() - current["started"]
            if cell.cell_type == "code" and took >= SLOW_CELL_S:
                number = sum(c.cell_type == "code" for c in notebook.cells[: cell_index + 1])
                report(f"     {path.name:24} code cell {number}/{code_cells} took {took:.1f} s")

        client = NotebookClient(
            notebook, timeout=CELL_TIMEOUT_S, kernel_name=KERNEL["name"],
            # CurveZMQ between client and kernel, where the kernelspec supports it
            config=Config({"KernelManager": {"transport_encryption": "auto"}}),
            resources={"metadata": {"path": str(path.parent)}},  # where Jupyter starts it
            on_cell_start=cell_started, on_cell_executed=cell_executed,
        )
        report(f"...  {path.name:24} started ({code_cells} code cells)")
        start = time.perf_counter()
        try:
            await client.async_execute(env={**KERNEL_ENV, **os.environ})  # as it is now
        except CellExecutionError:
            outputs = notebook.cells[current["cell"]].outputs
            error = next(o for o in outputs if o.output_type == "error")
            printed = "".join(o.text for o in outputs if o.output_type == "stream")
            text = _TERMINAL_COLOURS.sub("", printed + "\n".join(error.traceback))
            outcome = Outcome(path.name, impl, time.perf_counter() - start, current["cell"],
                              f"{error.ename}: {error.evalue}", text, notebook)
        except Exception as err:  # a cell ran out of time, or the kernel died
            outcome = Outcome(path.name, impl, time.perf_counter() - start, current["cell"],
                              f"{type(err).__name__}: {err}", executed=notebook)
        else:
            outcome = Outcome(path.name, impl, time.perf_counter() - start, executed=notebook)
        if save_dir is not None:
            save_dir.mkdir(parents=True, exist_ok=True)
            nbformat.write(notebook, save_dir / path.name)
        report(outcome_line(outcome, save_dir))
        return outcome


def outcome_line(outcome: Outcome, save_dir: Path | None = None) -> str:
    """`ok   03_bilm.ipynb  12.3 s` (or `STOP`, with the cell and its error), and where the
    executed copy is."""
    where = "" if outcome.error_cell is None else (
        f"  stopped at cell {outcome.error_cell}: {outcome.error}")
    saved = f"  -> {shown(save_dir / outcome.notebook)}" if save_dir is not None else ""
    return (f"{'ok  ' if outcome.error_cell is None else 'STOP'} {outcome.notebook:24} "
            f"{outcome.seconds:5.1f} s{where}{saved}")


def execute(runs: list[tuple[str, str | Path]], parallel: int = 2,
            directory: Path = NOTEBOOKS_DIR, save_dir: Path | None = None,
            report=None) -> list[Outcome]:
    """Run each (notebook name, impl) headless, `parallel` kernels at a time; never raises
    for an error in a cell, which its `Outcome` records instead. With `save_dir`, each
    executed notebook (its outputs, up to an error) is written there under its name;
    `report` is called with a line as each notebook starts, as a slow cell ends and as each
    notebook ends."""

    async def run_all() -> list[Outcome]:
        slots = asyncio.Semaphore(parallel)
        return await asyncio.gather(*(_execute(directory / name, str(impl), slots, save_dir,
                                               report)
                                      for name, impl in runs))

    return asyncio.run(run_all())


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m analyses.notebook", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    commands = parser.add_subparsers(dest="command", required=True)
    run = commands.add_parser("run", help="execute notebooks headless, each to its end")
    run.add_argument("--impl", default=EXERCISES_DIR.name,
                     help="the implementation the notebooks run on (default: exercises)")
    run.add_argument("--parallel", type=int, default=2, help="kernels at a time (default 2)")
    run.add_argument("--out", type=Path, default=EXECUTED_DIR,
                     help=f"where the executed notebooks go (default: {shown(EXECUTED_DIR)})")
    run.add_argument("notebooks", nargs="*", help="names, e.g. 03_bilm.ipynb (default: all)")
    args = parser.parse_args(argv)
    names = args.notebooks or notebook_names()
    unknown = sorted(set(names) - set(notebook_names()))
    if unknown:
        parser.error(f"unknown notebooks {unknown}; choose from {notebook_names()}")
    others = (f"the others from the reference, {shown(REFERENCE_DIR)}/" if REFERENCE_DIR.is_dir()
              else "the others from there too")
    save_dir = args.out if args.out.is_absolute() else ROOT / args.out
    print(f"running {len(names)} notebooks headless, {args.parallel} at a time: each runs its "
          f"own section from {shown(_in_course(args.impl))}/ (IMPL) and {others}, as `make "
          "test` does; each stops at its first error. The executed notebooks, with every "
          f"output, go to {shown(save_dir)}/", flush=True)
    outcomes = execute([(name, args.impl) for name in names], args.parallel,
                       save_dir=save_dir, report=lambda line: print(line, flush=True))
    failed = [o for o in outcomes if o.error_cell is not None]
    print(f"{len(outcomes) - len(failed)} of {len(outcomes)} notebooks ran to their end; "
          f"open the executed copies in {shown(save_dir)}/ to read what they computed"
          + (f"; stopped: {', '.join(o.notebook for o in failed)}" if failed else ""))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
