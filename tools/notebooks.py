"""The companion notebooks: built from text sources, checked for staleness, run both ways.

    python -m tools.notebooks build                    # notebooks/*.py -> *.ipynb
    python -m tools.notebooks check                    # exit 1 if one is stale
    python -m tools.notebooks run --impl solutions     # every notebook runs through
    python -m tools.notebooks run --stubs              # on the pristine exercises, each
                                                       # stops at its first call

Sources. `notebooks/03_bilm.py` builds `notebooks/03_bilm.ipynb`: one notebook per section,
named as in the registry, and `00_overview`. A source is in jupytext's "percent" format
(`# %%` starts a code cell, `# %% [markdown]` a prose cell, `# %% tags=["parameters"]`
gives tags); jupytext reads it. What jupytext does not do is done here:

* the root cell, put right after the parameters cell and folded away: Jupyter starts the
  kernel in `notebooks/`, and the course runs from the repository root; it also says so
  when the kernel is not the course's environment, and how to switch;
* stable cell ids (`cell-00`, `cell-01`, ...), and no outputs, so that a rebuild changes
  nothing and a committed `.ipynb` changes only when its source does;
* two tags that mean something: `parameters`, the first code cell, exactly
  `IMPL = None` (the root cell then reads the switch from `ELMO_IMPL` or `.elmo-impl`;
  `analyses.notebook.with_impl` replaces it, as papermill does), and
  `first-call`, in a section's notebook the cell that first calls the learner's code of that
  section: on the pristine stubs the notebook must stop there, with that section's "not
  implemented yet" error, and nowhere else;
* the stale check, which compares what each source builds with the committed notebook,
  leaving out what running and saving it in Jupyter adds (outputs, execution counts, the
  kernel's metadata), so saving a notebook never makes it stale; editing its code does.
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
from pathlib import Path

import jupytext
import nbformat

from analyses.notebook import (
    KERNEL,
    PARAMETERS_TAG,
    Outcome,
    execute,
    notebook_names,
    section_of,
    tagged,
)
from course.registry import EXERCISES_DIR, NOTEBOOKS_DIR, STUB_MESSAGE, shown

FIRST_CALL_TAG = "first-call"
PARAMETERS_CELL = "IMPL = None"
# What follows it in every notebook, as a comment: the switch is read, never edited.
PARAMETERS_COMMENT = ("  # None: your exercises/, or the folder that $ELMO_IMPL or the file "
                      ".elmo-impl names")

ROOT_CELL = """\
# Jupyter starts the kernel in notebooks/; the course's code and tests live one level up.
import os
import sys

if not os.path.exists("course.toml"):
    os.chdir("..")
if not os.path.exists("course.toml"):
    raise FileNotFoundError("open this notebook from the course's notebooks/ folder")
sys.path.insert(0, os.getcwd())
if os.path.isdir(".venv") and not os.path.samefile(sys.prefix, ".venv"):
    print(f"This kernel runs {sys.executable}, not the course's environment .venv, which has "
          "the packages the course was tested with. To switch: once, in a terminal, "
          "`.venv/bin/python -m ipykernel install --user --name elmo-course`; then choose "
          "the kernel elmo-course (Kernel > Change kernel, or VS Code's kernel picker).")
from course.switch import chosen_impl

IMPL = chosen_impl(IMPL)  # the folder these cells run: see the first cell"""
# Its source is folded away in Jupyter (JupyterLab, Notebook 7, VS Code): it is plumbing.
ROOT_CELL_METADATA = {"jupyter": {"source_hidden": True}}
# A cell that draws a figure opens with its name and caption, as a comment that Jupyter
# shows above the code: `# Figure (fig-loss): The loss per epoch ...`, the caption going on
# over the comment lines that follow. The notebook keeps them as myst-nb's cell option, with
# which the course book shows the figure numbered and captioned, and the prose cites it as
# {numref}`fig-loss`.
FIGURE_KEY = "mystnb"
FIGURE_LINE = re.compile(r"# Figure \((?P<name>fig-[a-z0-9-]+)\): (?P<caption>.+)")


def figure_of(source: str) -> tuple[dict, int] | None:
    """({"name", "caption"}, how many comment lines hold them) of a cell whose source opens
    with `# Figure (fig-name): caption`; None for any other."""
    lines = source.splitlines()
    match = FIGURE_LINE.fullmatch(lines[0]) if lines else None
    if match is None:
        return None
    caption = [match["caption"]]
    for line in lines[1:]:
        if not line.startswith("# "):
            break
        caption.append(line[2:])
    return {"name": match["name"], "caption": " ".join(caption)}, len(caption)


def build_notebook(source: Path) -> nbformat.NotebookNode:
    """The notebook that `source` describes, with the root cell after its parameters cell.

    Raises:
        ValueError: a parameters or first-call cell missing, doubled or out of place.
    """
    cells = jupytext.read(source, fmt="py:percent").cells
    code = [i for i, cell in enumerate(cells) if cell.cell_type == "code"]
    where = shown(source)
    if (not code or tagged(cells, PARAMETERS_TAG) != code[:1]
            or cells[code[0]].source != PARAMETERS_CELL + PARAMETERS_COMMENT):
        raise ValueError(f'{where}: the first code cell, and only it, must be tagged '
                         f'"{PARAMETERS_TAG}" and hold `{PARAMETERS_CELL + PARAMETERS_COMMENT}`')
    first_calls = len(tagged(cells, FIRST_CALL_TAG))
    wanted = 0 if section_of(source.with_suffix(".ipynb").name) is None else 1
    if first_calls != wanted:
        raise ValueError(f'{where}: expected {wanted} cell(s) tagged "{FIRST_CALL_TAG}", '
                         f"found {first_calls}")
    cells.insert(code[0] + 1, nbformat.v4.new_code_cell(ROOT_CELL))
    built = []
    for index, cell in enumerate(cells):
        tags = cell.metadata.get("tags", [])
        make = nbformat.v4.new_markdown_cell if cell.cell_type == "markdown" else (
            nbformat.v4.new_code_cell)
        figure = figure_of(cell.source) if cell.cell_type == "code" else None
        metadata = {**({"tags": tags} if tags else {}),
                    **({FIGURE_KEY: {"figure": figure[0]}} if figure else {}),
                    **(ROOT_CELL_METADATA if cell.source == ROOT_CELL else {})}
        built.append(make(cell.source, metadata=metadata,
                          id=f"cell-{index:02d}"))  # stable ids: a rebuild changes nothing
    return nbformat.v4.new_notebook(cells=built, metadata={  # validates it
        "kernelspec": dict(KERNEL), "language_info": {"name": "python"}})


def render(notebook: nbformat.NotebookNode) -> str:
    return nbformat.writes(notebook) + "\n"


def _unrun(notebook: nbformat.NotebookNode) -> list[tuple]:
    """What a notebook says, without what running or saving it adds: outputs, and the
    parameters cell's value, which a headless run or a learner may set."""
    return [(c.cell_type, "" if PARAMETERS_TAG in c.metadata.get("tags", []) else c.source,
             c.metadata.get("tags", []), c.metadata.get(FIGURE_KEY)) for c in notebook.cells]


def committed_text(path: Path) -> str:
    """The file at `path` as git's index holds it (what a commit would record), or as it is
    where git does not track it: a notebook saved from Jupyter with its outputs is judged by
    what is committed, never by what the learner's save wrote."""
    shown_in_git = subprocess.run(["git", "show", f":./{path.name}"], cwd=path.parent,
                                  capture_output=True, text=True)
    return shown_in_git.stdout if shown_in_git.returncode == 0 else path.read_text()


def committed(path: Path) -> nbformat.NotebookNode:
    """The notebook at `path` as committed (`committed_text`)."""
    return nbformat.reads(committed_text(path), as_version=4)


def bare_problems(directory: Path = NOTEBOOKS_DIR) -> list[str]:
    """What is wrong with the committed notebooks: outputs, execution counts, or a switch
    other than the committed one; [] when each is bare (run `make notebooks`, then add)."""
    found = []
    for _, target in _pairs(directory):
        if not target.exists():
            continue
        notebook = committed(target)
        code = [c for c in notebook.cells if c.cell_type == "code"]
        if any(c.outputs or c.execution_count is not None for c in code):
            found.append(f"{shown(target)} is committed with outputs: `make notebooks` gives "
                         "back the bare one")
        if not code or code[0].source != PARAMETERS_CELL + PARAMETERS_COMMENT:
            found.append(f"{shown(target)} is committed with its switch set: `make notebooks`"
                         " gives back `IMPL = None`")
    return found


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
    """What is wrong with the built notebooks in `directory`, one line each; [] when fresh.
    What running and saving one adds (outputs, the switch's value) is not stale."""
    problems = []
    for source, target in _pairs(directory):
        if not source.exists():
            problems.append(f"{shown(source)} is missing: it is the source of {target.name}")
        elif not target.exists():
            problems.append(f"{shown(target)} is missing: run `make notebooks`")
        elif _unrun(nbformat.read(target, as_version=4)) != _unrun(build_notebook(source)):
            problems.append(f"{shown(target)} differs from what {source.name} builds (its "
                            "cells were edited?): run `make notebooks`")
    known = {target.name for _, target in _pairs(directory)}
    tracked = _tracked(directory)
    problems += [f"{shown(path)} has no place in the registry: rename or remove it"
                 for path in sorted(directory.glob("*.ipynb")) if path.name not in known
                 and (tracked is None or path.name in tracked)]
    return problems


def _tracked(directory: Path) -> set[str] | None:
    """The names of the notebooks in `directory` that git tracks; None outside a repository.
    A learner's own copy (Jupyter's "Duplicate", saved with its outputs) is not the course's
    until it is added."""
    listed = subprocess.run(["git", "ls-files", "--", "*.ipynb"], cwd=directory,
                            capture_output=True, text=True)
    if listed.returncode != 0:
        return None
    return {Path(line).name for line in listed.stdout.splitlines()}


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


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tools.notebooks", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    commands = parser.add_subparsers(dest="command", required=True)
    commands.add_parser("build", help="write notebooks/*.ipynb from their sources")
    commands.add_parser("check", help="exit 1 when a notebook is stale against its source")
    run = commands.add_parser("run", help="execute notebooks headless and judge the outcome")
    run.add_argument("--impl", default=EXERCISES_DIR.name, help="the IMPL they run on")
    run.add_argument("--stubs", action="store_true",
                     help="IMPL holds pristine stubs: expect each section's notebook to stop "
                          "at its first-call cell with that section's stub error")
    run.add_argument("--parallel", type=int, default=2, help="kernels at a time (default 2)")
    args = parser.parse_args(argv)

    if args.command == "build":
        written = build()
        print("\n".join(f"wrote {shown(p)}" for p in written) or "notebooks are up to date")
        return 0
    if args.command == "check":
        found = stale()
        print("\n".join(found) or f"{len(notebook_names())} notebooks are fresh")
        return 1 if found else 0
    failed = 0
    for outcome in execute([(name, args.impl) for name in notebook_names()], args.parallel):
        found = problems(outcome, args.stubs)
        failed += bool(found)
        print(f"{'FAIL' if found else 'ok  '} {outcome.notebook:24} {outcome.seconds:5.1f} s")
        for problem in found:
            print("     " + problem.replace("\n", "\n     "))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
