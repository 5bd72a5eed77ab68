"""`make run-notebooks` (`analyses.notebook run`) reports as it goes, whatever its output is, and
keeps every executed notebook, outputs and all, where it says."""

from __future__ import annotations

import time

import nbformat

from analyses import notebook
from analyses.notebook import PARAMETERS_TAG, execute, outcome_line


def tiny_notebook(folder):
    cells = [nbformat.v4.new_code_cell('IMPL = "exercises"', metadata={"tags": [PARAMETERS_TAG]}),
             nbformat.v4.new_code_cell("print('the answer is', 6 * 7)"),
             nbformat.v4.new_code_cell("1 / 0")]
    path = folder / "tiny.ipynb"
    nbformat.write(nbformat.v4.new_notebook(cells=cells), path)
    return path


def test_each_notebook_reports_as_it_goes_and_is_kept_with_its_outputs(tmp_path, monkeypatch):
    monkeypatch.setattr(notebook, "SLOW_CELL_S", 0.0)  # every cell counts as slow here
    source = tiny_notebook(tmp_path)
    saved = tmp_path / "executed"
    heard: list[tuple[float, str]] = []
    (outcome,) = execute([(source.name, "solutions")], directory=tmp_path, save_dir=saved,
                         report=lambda line: heard.append((time.monotonic(), line)))
    lines = [line for _, line in heard]
    assert lines[0].startswith("...  tiny.ipynb") and "started (3 code cells)" in lines[0]
    assert any("code cell 2/3 took" in line for line in lines), lines
    assert lines[-1] == outcome_line(outcome, saved) and lines[-1].startswith("STOP tiny.ipynb")
    assert "ZeroDivisionError" in lines[-1] and str(saved / "tiny.ipynb") in lines[-1]
    kept = nbformat.read(saved / "tiny.ipynb", as_version=4)
    assert kept.cells[0].source == 'IMPL = "solutions"'
    assert "the answer is 42" in kept.cells[1].outputs[0]["text"]
    assert kept.cells[2].outputs[0]["ename"] == "ZeroDivisionError", "kept up to its error"
