"""The companion notebooks: built from text sources, checked for staleness, run headless.

    python -m course.notebooks build                           # notebooks/*.py -> *.ipynb
    python -m course.notebooks check                           # exit 1 if one is stale
    python -m course.notebooks run --impl solutions            # every notebook runs through
    python -m course.notebooks run --impl exercises --stubs    # each stops at its first call

Sources. `notebooks/03_bilm.py` builds `notebooks/03_bilm.ipynb`: one notebook per section,
named as in the registry, and `00_overview`. A source is Python in the "percent" format
that editors know: each cell starts with a line `# %%` (code) or `# %% [markdown]` (prose,
every line a comment), optionally with tags, `# %% tags=["parameters"]`. Built notebooks
carry no outputs, so a committed `.ipynb` changes only when its source does.

Two tags mean something here:

* `parameters`: the first code cell, exactly `IMPL = "exercises"`, the notebook's one
  switch ("solutions" runs the reference). `run --impl DIR` replaces it, as papermill does.
* `first-call`: in a section's notebook, the cell that first calls the learner's code of
  that section. On the pristine stubs the notebook must stop there, with that section's
  "not implemented yet" error, and nowhere else.

The builder puts one cell of its own right after the parameters cell: Jupyter starts the
kernel in `notebooks/`, and the course runs from the repository root (`course`, `exercises`,
`solutions` and `tests` import from there).

The notebooks call `run_checks` (a section's tests, with the tests' report and messages)
and the overview calls `stubs_left`; both are defined at the end of this module.
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
import time
from dataclasses import dataclass
from pathlib import Path

import nbformat
from nbclient import NotebookClient
from nbclient.exceptions import CellExecutionError
from traitlets.config import Config

from .make_exercises import STUB_MESSAGE
from .registry import ROOT, SECTIONS, Section, find_section

NOTEBOOKS_DIR = ROOT / "notebooks"
OVERVIEW = "00_overview.ipynb"
PARAMETERS_TAG, FIRST_CALL_TAG = "parameters", "first-call"
DEFAULT_IMPL = "exercises"
CELL_TIMEOUT_S = 300
KERNEL = {"name": "python3", "display_name": "Python 3 (ipykernel)", "language": "python"}
# One torch thread per kernel unless told otherwise: kernels run side by side on few cores,
# where OpenMP threads waiting for each other slow training down several times over.
KERNEL_ENV = {"OMP_NUM_THREADS": "1", **os.environ}

ROOT_CELL = """\
# Jupyter starts the kernel in notebooks/; the course's code and tests live one level up.
import os
import sys

if not os.path.exists("course.toml"):
    os.chdir("..")
if not os.path.exists("course.toml"):
    raise FileNotFoundError("open this notebook from the course's notebooks/ folder")
sys.path.insert(0, os.getcwd())"""

_MARKER = re.compile(r"# %%(?P<markdown> \[markdown\])?(?: tags=(?P<tags>\[.*\]))?")
_PARAMETERS = re.compile(r'IMPL = "[^"]+"(  # .*)?')
_TERMINAL_COLOURS = re.compile(r"\x1b\[[0-9;]*m")


def notebook_names() -> list[str]:
    """Every companion notebook: the overview, then one per section, in the registry's order."""
    return [OVERVIEW, *(section.notebook for section in SECTIONS)]


def section_of(notebook: str) -> Section | None:
    """The section whose notebook this is; None for the overview."""
    return next((s for s in SECTIONS if s.notebook == notebook), None)


# --- sources -> notebooks ------------------------------------------------------------------


def parse_cells(text: str, filename: str = "<source>") -> list[nbformat.NotebookNode]:
    """The cells of a percent-format source, without ids.

    Raises:
        ValueError: naming the line: text before the first marker, a malformed marker or
            tags, or a markdown cell with a line that is not a comment.
    """
    cells: list[nbformat.NotebookNode] = []
    body: list[str] = []

    def close() -> None:  # the blank lines around a cell belong to no cell
        if cells:
            cells[-1].source = "\n".join(body).strip("\n")
        body.clear()

    for number, line in enumerate(text.splitlines(), 1):
        where = f"{filename}:{number}"
        if line.startswith("# %%"):
            marker = _MARKER.fullmatch(line.rstrip())
            if marker is None:
                raise ValueError(f"{where}: expected '# %%', '# %% [markdown]' or "
                                 f"'# %% tags=[...]', found {line!r}")
            close()
            tags = _tags(marker["tags"], where) if marker["tags"] else []
            metadata = {"tags": tags} if tags else {}
            new_cell = nbformat.v4.new_markdown_cell if marker["markdown"] else (
                nbformat.v4.new_code_cell)
            cells.append(new_cell(metadata=metadata))
            cells[-1].pop("id", None)  # ids are given by position once every cell is known
        elif not cells:
            if line.strip():
                raise ValueError(f"{where}: a source starts with a cell marker, '# %%'")
        elif cells[-1].cell_type == "markdown":
            if line.strip() and line != "#" and not line.startswith("# "):
                raise ValueError(f"{where}: every line of a markdown cell is a comment, "
                                 f"'# text' or '#'; found {line!r}")
            body.append(line[2:])
        else:
            body.append(line)
    close()
    return cells


def _tags(text: str, where: str) -> list[str]:
    try:
        tags = json.loads(text)
    except json.JSONDecodeError:
        tags = None
    if not (isinstance(tags, list) and all(isinstance(t, str) for t in tags)):
        raise ValueError(f"{where}: tags must be a JSON list of strings, found {text}")
    return tags


def tagged(cells: list[nbformat.NotebookNode], tag: str) -> list[int]:
    """The indices of the cells that carry `tag`."""
    return [i for i, cell in enumerate(cells) if tag in cell.metadata.get("tags", [])]


def build_notebook(source: Path) -> nbformat.NotebookNode:
    """The notebook that `source` describes, with the root cell after its parameters cell.

    Raises:
        ValueError: a malformed source, or a parameters or first-call cell missing, doubled
            or out of place.
    """
    cells = parse_cells(source.read_text(), _shown(source))
    code = [i for i, cell in enumerate(cells) if cell.cell_type == "code"]
    parameters = tagged(cells, PARAMETERS_TAG)
    where = _shown(source)
    if not code or parameters != code[:1] or not _PARAMETERS.fullmatch(cells[code[0]].source):
        raise ValueError(f'{where}: the first code cell, and only it, must be tagged '
                         f'"{PARAMETERS_TAG}" and hold exactly `IMPL = "{DEFAULT_IMPL}"`')
    first_calls = len(tagged(cells, FIRST_CALL_TAG))
    wanted = 0 if section_of(source.with_suffix(".ipynb").name) is None else 1
    if first_calls != wanted:
        raise ValueError(f'{where}: expected {wanted} cell(s) tagged "{FIRST_CALL_TAG}", '
                         f"found {first_calls}")
    cells.insert(code[0] + 1, nbformat.v4.new_code_cell(ROOT_CELL))
    for index, cell in enumerate(cells):
        cell.id = f"cell-{index:02d}"  # stable ids: a rebuild changes nothing
    return nbformat.v4.new_notebook(cells=cells, metadata={  # validates it
        "kernelspec": dict(KERNEL), "language_info": {"name": "python"}})


def render(notebook: nbformat.NotebookNode) -> str:
    return nbformat.writes(notebook) + "\n"


def _pairs(directory: Path) -> list[tuple[Path, Path]]:
    """(source, notebook) for every companion notebook."""
    return [((directory / name).with_suffix(".py"), directory / name) for name in notebook_names()]


def build(directory: Path = NOTEBOOKS_DIR) -> list[Path]:
    """Write every notebook whose source exists and differs from it; the paths written."""
    written = []
    for source, target in _pairs(directory):
        if not source.exists():
            continue
        text = render(build_notebook(source))
        if not target.exists() or target.read_text() != text:
            target.write_text(text)
            written.append(target)
    return written


def stale(directory: Path = NOTEBOOKS_DIR) -> list[str]:
    """What is wrong with the built notebooks in `directory`, one line each; [] when fresh."""
    problems = []
    for source, target in _pairs(directory):
        if not source.exists():
            problems.append(f"{_shown(source)} is missing: it is the source of {target.name}")
        elif not target.exists():
            problems.append(f"{_shown(target)} is missing: run `make notebooks`")
        elif target.read_text() != render(build_notebook(source)):
            problems.append(f"{_shown(target)} differs from what {source.name} builds (edited, "
                            "or saved with outputs?): run `make notebooks`")
    known = {target.name for _, target in _pairs(directory)}
    problems += [f"{_shown(path)} has no place in the registry: rename or remove it"
                 for path in sorted(directory.glob("*.ipynb")) if path.name not in known]
    return problems


def _shown(path: Path) -> str:
    path = Path(path).resolve()
    return str(path.relative_to(ROOT)) if path.is_relative_to(ROOT) else str(path)


# --- running them --------------------------------------------------------------------------


@dataclass(frozen=True)
class Outcome:
    """One execution: `error_cell` is the index of the cell that failed (None: none did),
    `error` its exception as "Name: message", `traceback` what that cell printed and the
    kernel's traceback."""

    notebook: str
    impl: str
    seconds: float
    error_cell: int | None = None
    error: str = ""
    traceback: str = ""


def with_impl(notebook: nbformat.NotebookNode, impl: str | Path) -> nbformat.NotebookNode:
    """A copy of `notebook` whose parameters cell reads `IMPL = "<impl>"`."""
    notebook = copy.deepcopy(notebook)
    (index,) = tagged(notebook.cells, PARAMETERS_TAG)
    notebook.cells[index].source = f"IMPL = {json.dumps(str(impl))}"
    return notebook


async def _execute(path: Path, impl: str, slots: asyncio.Semaphore) -> Outcome:
    async with slots:
        notebook = with_impl(nbformat.read(path, as_version=4), impl)
        current = {"cell": None}
        client = NotebookClient(
            notebook, timeout=CELL_TIMEOUT_S, kernel_name=KERNEL["name"],
            # CurveZMQ between client and kernel, where the kernelspec supports it
            config=Config({"KernelManager": {"transport_encryption": "auto"}}),
            resources={"metadata": {"path": str(path.parent)}},  # where Jupyter starts it
            on_cell_start=lambda cell, cell_index: current.update(cell=cell_index),
        )
        start = time.perf_counter()
        try:
            await client.async_execute(env=KERNEL_ENV)
        except CellExecutionError:
            outputs = notebook.cells[current["cell"]].outputs
            error = next(o for o in outputs if o.output_type == "error")
            printed = "".join(o.text for o in outputs if o.output_type == "stream")
            report = _TERMINAL_COLOURS.sub("", printed + "\n".join(error.traceback))
            return Outcome(path.name, impl, time.perf_counter() - start, current["cell"],
                           f"{error.ename}: {error.evalue}", report)
        except Exception as err:  # a cell ran out of time, or the kernel died
            return Outcome(path.name, impl, time.perf_counter() - start, current["cell"],
                           f"{type(err).__name__}: {err}")
        return Outcome(path.name, impl, time.perf_counter() - start)


def execute(runs: list[tuple[str, str | Path]], parallel: int = 2,
            directory: Path = NOTEBOOKS_DIR) -> list[Outcome]:
    """Run each (notebook name, impl) headless, `parallel` kernels at a time; never raises
    for an error in a cell, which its `Outcome` records instead."""

    async def run_all() -> list[Outcome]:
        slots = asyncio.Semaphore(parallel)
        return await asyncio.gather(*(_execute(directory / name, str(impl), slots)
                                      for name, impl in runs))

    return asyncio.run(run_all())


def problems(outcome: Outcome, stubs: bool, directory: Path = NOTEBOOKS_DIR) -> list[str]:
    """How `outcome` differs from what is expected: no error at all, or with `stubs` (the
    pristine exercises) the section's own stub error at its first-call cell."""
    name, section = outcome.notebook, section_of(outcome.notebook)
    where = f"{name} on {outcome.impl}"
    if not stubs or section is None:
        if outcome.error_cell is None:
            return []
        return [f"{where}: cell {outcome.error_cell} failed with {outcome.error}\n"
                f"{outcome.traceback}"]
    (first_call,) = tagged(nbformat.read(directory / name, as_version=4).cells, FIRST_CALL_TAG)
    found = []
    if outcome.error_cell != first_call:
        found.append(f"{where}: expected to stop at cell {first_call} (tagged "
                     f"{FIRST_CALL_TAG}), stopped at cell {outcome.error_cell}")
    stub = STUB_MESSAGE.fullmatch(outcome.error.removeprefix("NotImplementedError: "))
    if not outcome.error.startswith("NotImplementedError: ") or stub is None or (
            int(stub["number"]), stub["name"]) != (section.number, section.name):
        found.append(f"{where}: expected section {section.number} ({section.name})'s "
                     f"NotImplementedError, got {outcome.error or 'no error'}")
    return found


# --- called from the notebooks -------------------------------------------------------------


def run_checks(impl: str | Path, section: str | int) -> None:
    """Run one section's tests on `impl` as `make test SECTION=<section>` does, printing
    their report as it comes.

    The tests run in a process of their own: hypothesis draws some examples from constants
    it finds in the modules already imported, so in the kernel they would see other examples
    than `make test` does.

    Raises:
        AssertionError: a test failed, or there was none to run.
    """
    chosen = find_section(section)
    command = [sys.executable, "-m", "pytest", "tests/sections", "--impl", str(impl),
               "--section", chosen.name, "--color=yes"]
    decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
    with subprocess.Popen(command, cwd=ROOT, stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT) as tests:
        for chunk in iter(lambda: tests.stdout.read1(4096), b""):
            print(decoder.decode(chunk), end="", flush=True)
    if tests.returncode != 0:
        raise AssertionError(f"section {chosen.number} ({chosen.name}) does not pass its checks "
                             f"yet (pytest exit status {tests.returncode}); the report above "
                             "says which and why")


def stubs_left(impl: str | Path, section: Section) -> list[str]:
    """The functions of `section` in `impl` that still raise the stub's NotImplementedError,
    or one note saying that `impl` has no module for the section."""
    path = Path(impl) / f"{section.module}.py"
    if not path.exists():
        return [f"({path} is missing)"]
    return [m["function"] for m in STUB_MESSAGE.finditer(path.read_text())
            if int(m["number"]) == section.number]


# --- command line --------------------------------------------------------------------------


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m course.notebooks", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    commands = parser.add_subparsers(dest="command", required=True)
    commands.add_parser("build", help="write notebooks/*.ipynb from their sources")
    commands.add_parser("check", help="exit 1 when a notebook is stale against its source")
    run = commands.add_parser("run", help="execute notebooks headless and judge the outcome")
    run.add_argument("--impl", default=DEFAULT_IMPL, help="the IMPL the notebooks run on")
    run.add_argument("--stubs", action="store_true",
                     help="IMPL holds pristine stubs: expect each section's notebook to stop "
                          "at its first-call cell with that section's stub error")
    run.add_argument("--parallel", type=int, default=2, help="kernels at a time (default 2)")
    run.add_argument("notebooks", nargs="*", help="names, e.g. 03_bilm.ipynb (default: all)")
    args = parser.parse_args(argv)

    if args.command == "build":
        written = build()
        print("\n".join(f"wrote {_shown(p)}" for p in written) or "notebooks are up to date")
        return 0
    if args.command == "check":
        found = stale()
        print("\n".join(found) or f"{len(notebook_names())} notebooks are fresh")
        return 1 if found else 0
    names = args.notebooks or notebook_names()
    unknown = sorted(set(names) - set(notebook_names()))
    if unknown:
        parser.error(f"unknown notebooks {unknown}; choose from {notebook_names()}")
    failed = 0
    for outcome in execute([(name, args.impl) for name in names], args.parallel):
        found = problems(outcome, args.stubs)
        failed += bool(found)
        print(f"{'FAIL' if found else 'ok  '} {outcome.notebook:24} {outcome.seconds:5.1f} s")
        for problem in found:
            print("     " + problem.replace("\n", "\n     "))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
