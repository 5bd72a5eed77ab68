"""The companion notebooks: sources parse, notebooks are fresh and bare, and they run both
ways: through on the reference, and on the pristine stubs up to their first call only; the
course book is built from the run on the reference and read in a browser."""

import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import nbformat
import pytest
import torch

from analyses import notebook as notebooks
from analyses.notebook import PARAMETERS_TAG, Outcome
from course import switch
from course.registry import NOTEBOOKS_DIR, ROOT, SECTIONS, find_section
from course.state import module_digest
from tests.tooling.conftest import fresh_solution_results
from tools import book
from tools import notebooks as tools_notebooks
from tools.notebooks import FIRST_CALL_TAG

SOURCE = f'''\
# %% [markdown]
# # A title
#
# Some *prose*.

# %% tags=["parameters"]
{tools_notebooks.PARAMETERS_CELL + tools_notebooks.PARAMETERS_COMMENT}

# %%
x = 1

print(x)


# %% [markdown] tags=["note"]
# The end.
'''


def read(name: str) -> nbformat.NotebookNode:
    """The notebook as committed: a learner's save (outputs, metadata) changes nothing here."""
    return tools_notebooks.committed(NOTEBOOKS_DIR / name)


def copy_committed(folder: Path) -> None:
    """Every notebook and its source into `folder` as committed, not as a save in Jupyter
    left the working tree (its outputs and its switch are the learner's)."""
    for path in [*NOTEBOOKS_DIR.glob("*.py"), *NOTEBOOKS_DIR.glob("*.ipynb")]:
        (folder / path.name).write_text(tools_notebooks.committed_text(path))


def test_a_source_gives_its_cells_with_tags_and_the_root_cell(tmp_path):
    source = tmp_path / notebooks.OVERVIEW.replace(".ipynb", ".py")
    source.write_text(SOURCE)
    cells = tools_notebooks.build_notebook(source).cells
    assert [c.cell_type for c in cells] == ["markdown", "code", "code", "code", "markdown"]
    assert cells[0].source == "# A title\n\nSome *prose*."
    assert cells[1].metadata == {"tags": ["parameters"]} and cells[1].source.startswith(
        "IMPL = None  # None: your exercises/")
    assert cells[2].source == tools_notebooks.ROOT_CELL, "the root cell follows the switch"
    assert cells[3].source == "x = 1\n\nprint(x)"
    assert cells[4].metadata == {"tags": ["note"]} and cells[4].source == "The end."
    assert [c.id for c in cells] == [f"cell-{i:02d}" for i in range(5)], "stable ids"


def test_a_source_must_have_its_switch_and_a_section_its_first_call(tmp_path):
    overview = tmp_path / notebooks.OVERVIEW.replace(".ipynb", ".py")
    overview.write_text(SOURCE.replace(' tags=["parameters"]', ""))
    with pytest.raises(ValueError, match='tagged "parameters"'):
        tools_notebooks.build_notebook(overview)
    section = tmp_path / find_section("bilm").notebook.replace(".ipynb", ".py")
    section.write_text(SOURCE)
    with pytest.raises(ValueError, match=f'expected 1 cell.* tagged "{FIRST_CALL_TAG}", found 0'):
        tools_notebooks.build_notebook(section)


def test_every_notebook_is_committed_bare_with_the_switch_first():
    assert tools_notebooks.bare_problems() == []
    for name in notebooks.notebook_names():
        code = [c for c in tools_notebooks.committed(NOTEBOOKS_DIR / name).cells
                if c.cell_type == "code"]
        assert PARAMETERS_TAG in code[0].metadata.get("tags", []), name
        assert code[0].source == "IMPL = None  # None: your exercises/, or the folder that " \
            "$ELMO_IMPL or the file .elmo-impl names", name
        assert code[1].source == tools_notebooks.ROOT_CELL, f"{name}: the root cell next"


def _git(folder: Path, *args: str) -> None:
    subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", *args], cwd=folder,
                   check=True, capture_output=True)


def test_saving_a_notebook_with_outputs_and_another_switch_fails_no_check(tmp_path):
    if shutil.which("git") is None:
        pytest.skip("no git here")
    folder = tmp_path / "notebooks"
    folder.mkdir()
    copy_committed(folder)
    _git(tmp_path, "init", "-q")
    _git(tmp_path, "add", ".")
    _git(tmp_path, "commit", "-q", "-m", "bare")
    # What Jupyter writes on save after a run on the reference: outputs, counts, an error,
    # the kernel's metadata, and the switch set in the first cell.
    saved = folder / find_section("bilm").notebook
    notebook = nbformat.read(saved, as_version=4)
    code = [c for c in notebook.cells if c.cell_type == "code"]
    code[0].source = 'IMPL = "solutions"'
    for number, cell in enumerate(code, 1):
        cell.execution_count = number
        cell.outputs = [nbformat.v4.new_output("stream", text="x " * 100),
                        nbformat.v4.new_output("display_data",
                                               data={"image/png": "iVBORw0KGgo="})]
    code[-1].outputs.append(nbformat.v4.new_output(
        "error", ename="ChecksFailed", evalue="section 3", traceback=["ChecksFailed"]))
    notebook.metadata["kernelspec"] = {"name": "elmo-course", "display_name": "ELMo course",
                                       "language": "python"}
    notebook.metadata["language_info"] = {"name": "python", "version": "3.11.7"}
    nbformat.write(notebook, saved)
    nbformat.write(notebook, folder / "03_bilm-Copy1.ipynb")  # Jupyter's "Duplicate", saved
    assert tools_notebooks.stale(folder) == [], "check-notebooks passes after a save"
    assert tools_notebooks.bare_problems(folder) == [], "the committed notebook is still bare"
    _git(tmp_path, "add", str(saved.relative_to(tmp_path)))
    found = tools_notebooks.bare_problems(folder)
    assert len(found) == 2 and all(saved.name in line for line in found), (
        f"adding the saved notebook is found, outputs and switch: {found}")
    _git(tmp_path, "add", ".")
    assert "03_bilm-Copy1.ipynb has no place" in "\n".join(tools_notebooks.stale(folder)), (
        "a copy that is added to the course is found")


def test_each_section_notebook_loads_and_checks_its_own_section():
    for name in (section.notebook for section in SECTIONS):
        section, cells = notebooks.section_of(name), read(name).cells
        text = "\n".join(cell.source for cell in cells)
        assert f'SECTION = find_section("{section.name}")' in text and (
            "load_sections(IMPL, SECTION.name)" in text), (
            f"{name} must load section {section.number} ({section.name}) from IMPL")
        checks = [i for i, c in enumerate(cells) if "run_checks(IMPL, SECTION.name)" in c.source]
        (first_call,) = notebooks.tagged(cells, FIRST_CALL_TAG)
        assert len(checks) == 1 and first_call < checks[0], (
            f"{name}: one checks cell, after the first call of the learner's code")


def test_a_stale_notebook_is_found_and_rebuilt_but_a_saved_one_is_not_stale(tmp_path):
    copy_committed(tmp_path)
    assert tools_notebooks.stale(tmp_path) == []
    name = find_section("corpus").notebook
    source = (tmp_path / name).with_suffix(".py")
    source.write_text(source.read_text().replace("# ## Checks", "# ## The checks"))
    executed = tmp_path / find_section("bilm").notebook
    notebook = nbformat.read(executed, as_version=4)
    notebook.cells[2].outputs = [nbformat.v4.new_output("stream", text="hello")]
    notebook.cells[2].execution_count = 1
    notebook.metadata["language_info"]["version"] = "3.11.7"
    nbformat.write(notebook, executed)
    (tmp_path / "99_extra.ipynb").write_text("{}")
    found = tools_notebooks.stale(tmp_path)
    assert len(found) == 2 and all(n in "\n".join(found) for n in (name, "99_")), (
        f"an edited source and an unknown notebook are found; a saved one is not: {found}")
    assert sorted(p.name for p in tools_notebooks.build(tmp_path)) == sorted([name,
                                                                              executed.name])
    assert len(tools_notebooks.stale(tmp_path)) == 1, "only the notebook without a source is left"


def test_the_impl_switch_is_the_only_cell_replaced():
    notebook = read(find_section("bilm").notebook)
    switched = notebooks.with_impl(notebook, "/tmp/my impl")
    changed = [i for i, (a, b) in enumerate(zip(notebook.cells, switched.cells, strict=True))
               if a.source != b.source]
    assert changed == notebooks.tagged(notebook.cells, PARAMETERS_TAG)
    assert switched.cells[changed[0]].source == 'IMPL = "/tmp/my impl"'


def test_stubs_left_lists_the_functions_still_to_write():
    bilm = find_section("bilm")
    assert "BiLM.forward" in notebooks.stubs_left(ROOT / "exercises", bilm)
    assert notebooks.stubs_left(ROOT / "solutions", bilm) == []


def test_problems_judge_a_stub_run_by_cell_and_section():
    name = find_section("bilm").notebook
    (first_call,) = notebooks.tagged(read(name).cells, FIRST_CALL_TAG)
    stub = "NotImplementedError: section 3 (bilm): BiLM.__init__ is not implemented yet"
    assert tools_notebooks.problems(Outcome(name, "x", 1.0, first_call, stub), stubs=True) == []
    assert tools_notebooks.problems(Outcome(name, "x", 1.0, first_call + 1, stub), stubs=True)
    other = "NotImplementedError: section 2 (corpus): tokenize is not implemented yet"
    assert tools_notebooks.problems(Outcome(name, "x", 1.0, first_call, other), stubs=True)
    assert tools_notebooks.problems(Outcome(name, "x", 1.0), stubs=True), "a stub run must stop"
    assert tools_notebooks.problems(Outcome(name, "x", 1.0, 4, "KeyError: 1"), stubs=False)


# --- executing every notebook, both ways, two kernels at a time ------------------------------

IMPLS = {"reference": "solutions", "stubs": "exercises"}


@pytest.fixture(scope="module")
def outcomes() -> dict[tuple[str, str], Outcome]:
    """Every notebook run both ways. A section's checks cell on the reference shows what
    `make test-solutions` recorded in this `make check` (the same tests on the same module,
    `notebooks.recorded_checks`) rather than running them a second time; run alone, after an
    edit, the kernels run them."""
    runs = [(name, impl) for impl in IMPLS.values() for name in notebooks.notebook_names()]
    recorded = fresh_solution_results()
    with pytest.MonkeyPatch.context() as patch:
        if recorded is not None:
            patch.setenv(notebooks.RECORDED_CHECKS_VAR, str(recorded))
        return {(o.notebook, o.impl): o for o in notebooks.execute(runs, parallel=2)}


@pytest.mark.slow
@pytest.mark.parametrize("name", notebooks.notebook_names())
def test_the_notebook_runs_through_on_the_reference(outcomes, name):
    outcome = outcomes[name, IMPLS["reference"]]
    assert outcome.error_cell is None, (
        f"{name} failed at cell {outcome.error_cell}: {outcome.error}\n{outcome.traceback}")


@pytest.mark.slow
@pytest.mark.parametrize("name", notebooks.notebook_names())
def test_on_the_stubs_it_stops_at_its_first_call_with_its_own_error(outcomes, name):
    outcome, section = outcomes[name, IMPLS["stubs"]], notebooks.section_of(name)
    if section is None:
        assert outcome.error_cell is None, f"{name} failed: {outcome.error}"
        return
    (first_call,) = notebooks.tagged(read(name).cells, FIRST_CALL_TAG)
    assert outcome.error_cell == first_call, (
        f"{name} should stop at cell {first_call}, the first call of the learner's code; "
        f"it stopped at {outcome.error_cell} with {outcome.error or 'no error'}")
    prefix = f"NotImplementedError: section {section.number} ({section.name}): "
    assert outcome.error.startswith(prefix) and outcome.error.endswith(
        " is not implemented yet"), f"{name}: expected {prefix}..., got {outcome.error}"


# --- the course book, from the notebooks executed above on the reference ---------------------

CHROMIUM = Path("/usr/bin/chromium")


@pytest.fixture(scope="module")
def book_of_the_run(outcomes, tmp_path_factory) -> tuple[Path, dict]:
    """The course book built as `make book` builds it, from the notebooks this file ran on
    the reference (not run again), and its check: (the book, the check's report)."""
    if not book.JUPYTER_BOOK.exists():
        pytest.skip("no .venv-book (make check and make book install it)")
    if shutil.which("npm") is None and not book.MATHJAX_CACHE.exists():
        pytest.skip("no npm here to fetch MathJax's package")
    if not CHROMIUM.exists():
        pytest.skip("no chromium (make system-packages installs it, as root)")
    executed = tmp_path_factory.mktemp("executed")
    for (name, impl), outcome in outcomes.items():
        if impl == IMPLS["reference"]:
            nbformat.write(outcome.executed, executed / name)
    out = tmp_path_factory.mktemp("book") / "book"
    return out, book.build(out, executed=executed, report=lambda line: None)


@pytest.mark.slow
def test_the_book_shows_every_result_as_it_is_meant_with_no_defect(book_of_the_run):
    _, found = book_of_the_run
    count, lines = book.defects_report(found)
    assert count == 0, f"the book's check found {count} defects:\n{lines}"


@pytest.mark.slow
def test_the_book_holds_every_page_reads_offline_and_numbers_its_figures(book_of_the_run):
    out, found = book_of_the_run
    pages = found["pages"]
    notebook_pages = {f"notebooks/{Path(name).stem}.html" for name in notebooks.notebook_names()}
    assert notebook_pages | {"intro.html", "explore.html", "references.html"} <= set(pages)
    for name, facts in pages.items():
        assert facts["text"] > 50 and "ELMo" in facts["title"], (name, facts)
    assert all(pages[name]["maths"] >= 1 for name in (
        "intro.html", "notebooks/04_pretrain.html")), "typed by the book's own MathJax"
    assert (out / "_static" / book.MATHJAX_PATH).exists()
    figures = [caption for facts in pages.values() for caption in facts["figures"]]
    assert len(figures) >= 10 and all(caption.startswith("Figure ") for caption in figures)
    bibliography = (out / "references.html").read_text()
    assert "deep contextualized word representations" in bibliography.lower()
    assert 'href="../references.html#' in (out / "notebooks" / "04_pretrain.html").read_text(), (
        "a citation in a notebook links to the bibliography")


@pytest.mark.slow
def test_the_explore_page_redraws_both_bilms_when_its_layer_moves(book_of_the_run):
    explore = book_of_the_run[1]["pages"]["explore.html"]
    assert explore["explore_points"] == 6, "three occurrences in each of the two panels"
    moved = explore["explore_moved"]
    assert moved["caption_changed"] and moved["points"] == 2, (
        "layer 0 is one point in each panel")
    assert "one vector in both biLMs" in moved["caption"]


@pytest.mark.slow
def test_each_section_page_opens_with_the_stub_and_ends_with_a_one_line_summary(book_of_the_run):
    out, _ = book_of_the_run
    for section in SECTIONS:
        page = (out / "notebooks" / section.notebook.replace(".ipynb", ".html")).read_text()
        text = re.sub(r"<[^>]+>", "", page)
        assert f"exercises/{section.file_name}" in text and "is not implemented yet" in text
        assert re.search(rf"section {section.number} \({section.name}\): (\d+) of \1 checks "
                         "pass", text), f"{section.notebook}: the checks' summary"


# --- the learning loop: edits picked up, the kernel checked, the plumbing folded away -------


def test_the_root_cell_is_folded_away_in_every_notebook():
    for name in notebooks.notebook_names():
        root = read(name).cells[2]
        assert root.source == tools_notebooks.ROOT_CELL, name
        assert root.metadata.get("jupyter") == {"source_hidden": True}, name


@pytest.mark.parametrize("python, warned", [(str(ROOT / ".venv/bin/python"), False),
                                            ("python3", True)])
def test_the_root_cell_says_when_the_kernel_is_not_the_courses_environment(python, warned):
    if shutil.which(python) is None:
        pytest.skip(f"no {python} here")
    prefix = subprocess.run([python, "-c", "import sys; print(sys.prefix)"], text=True,
                            capture_output=True).stdout.strip()
    if warned and Path(prefix).resolve() == (ROOT / ".venv").resolve():
        pytest.skip(f"{python} is the course's environment here")
    ran = subprocess.run([python, "-c", "IMPL = None\n" + tools_notebooks.ROOT_CELL],
                         cwd=ROOT / "notebooks",
                         capture_output=True, text=True, check=True)
    assert ("not the course's environment" in ran.stdout) == warned, ran.stdout
    if warned:
        assert "ipykernel install" in ran.stdout and "Change kernel" in ran.stdout


def test_a_section_edited_after_loading_is_the_one_a_cell_runs(tmp_path):
    impl = tmp_path / "impl"
    shutil.copytree(ROOT / "solutions", impl)
    torch.set_num_threads(2)  # as a kernel may start (this process runs one thread)
    sections = notebooks.load_sections(impl, "corpus")
    corpus, before = sections.corpus, sections.package
    assert corpus.tokenize("Turn right") == ["turn", "right"]
    module = impl / "s2_corpus.py"
    module.write_text(module.read_text().replace(
        "    return _WORD.findall(text.lower())", "    return _WORD.findall(text.lower())[:1]"))
    assert corpus.tokenize("Turn right") == ["turn"], "the edit is picked up"
    assert sections.package is not before and sections.corpus.CORPUS == corpus.CORPUS
    assert torch.get_num_threads() == 1, "the notebooks run torch on one thread"


def test_the_switch_comes_from_the_cell_the_environment_the_file_or_the_default(
        tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(switch, "IMPL_FILE", tmp_path / ".elmo-impl")
    monkeypatch.delenv("ELMO_IMPL", raising=False)
    assert switch.chosen_impl(None) == "exercises"
    assert "(the default)" in capsys.readouterr().out
    (tmp_path / ".elmo-impl").write_text("solutions\n")
    assert switch.chosen_impl(None) == "solutions"
    assert "from .elmo-impl" in capsys.readouterr().out
    monkeypatch.setenv("ELMO_IMPL", "my_impl")
    assert switch.chosen_impl(None) == "my_impl"
    assert switch.chosen_impl("/tmp/x") == "/tmp/x", "a headless run's value wins"
    assert ".elmo-impl" in (ROOT / ".gitignore").read_text().split(), "the file is ignored"


def test_every_first_call_cell_names_the_file_to_edit_and_the_cells_to_rerun():
    for section in SECTIONS:
        cells = read(section.notebook).cells
        (first_call,) = notebooks.tagged(cells, FIRST_CALL_TAG)
        text = " ".join(cells[first_call].source.replace("#", " ").split())
        assert f"exercises/{section.file_name}" in text and (
            "re-run this cell and the cells below it" in text), section.notebook


def test_a_model_made_through_the_builder_is_made_again_after_an_edit(tmp_path, capsys):
    impl = tmp_path / "impl"
    shutil.copytree(ROOT / "solutions", impl)
    sections = notebooks.load_sections(impl, "corpus")
    made = sections.builder(lambda: sections.corpus.tokenize("Turn right"))
    first = made()
    assert made() is first, "the same object while the files are unchanged"
    module = impl / "s2_corpus.py"
    module.write_text(module.read_text().replace(
        "    return _WORD.findall(text.lower())", "    return _WORD.findall(text.lower())[:1]"))
    assert made() == ["turn"] and "made again" in capsys.readouterr().out


RESULTS = [
    {"name": "test_ok", "checks": "It works.", "status": "passed", "message": ""},
    {"name": "test_padding", "checks": "Padding changes nothing.", "status": "failed",
     "message": "AssertionError: column 1: expected [1, 0], got [0, 1] assert False + where "
                "False = equal(tensor([[0.1, 0.2]]), tensor([[0.3]]))"},
]


def test_a_failing_check_prints_the_courses_message_first_and_no_traceback():
    bilm = find_section("bilm")
    report = notebooks.checks_report(bilm, RESULTS, 1, "pytest's own output")
    assert report.splitlines()[0] == "section 3 (bilm): 1 of 2 checks pass"
    assert "message: AssertionError: column 1: expected [1, 0], got [0, 1]" in report
    assert "tensor(" not in report and "assert False" not in report, report
    error = notebooks.ChecksFailed("section 3 (bilm): 1 of 2 checks do not pass yet")
    assert error._render_traceback_() == [
        "ChecksFailed: section 3 (bilm): 1 of 2 checks do not pass yet"], (
        "IPython shows this one line instead of a traceback into analyses/notebook.py")
    broken = [{"name": f"test_{n}", "checks": "c", "status": "failed",
               "message": "SyntaxError: invalid syntax (s3_bilm.py, line 9)"} for n in range(4)]
    grouped = notebooks.checks_report(bilm, broken, 1, "")
    assert grouped.count("SyntaxError") == 1 and "and 3 more with the same message" in grouped
    crashed = notebooks.checks_report(bilm, [], 2, "E   SyntaxError: invalid syntax")
    assert "no check ran" in crashed and "SyntaxError" in crashed


@pytest.mark.slow
def test_run_checks_on_a_broken_section_prints_the_report_and_raises_one_line(tmp_path,
                                                                              capsys):
    impl = tmp_path / "impl"
    shutil.copytree(ROOT / "solutions", impl)
    module = impl / "s1_setup.py"
    source = module.read_text()
    module.write_text(source.replace("np.random.seed(seed)", "pass", 1))
    assert module.read_text() != source, "the mistake was made"
    with pytest.raises(notebooks.ChecksFailed, match="checks do not pass yet"):
        notebooks.run_checks(impl, "setup")
    printed = capsys.readouterr().out
    assert "FAILED " in printed and "Traceback" not in printed, printed


def test_recorded_checks_of_the_module_as_it_is_are_shown_and_any_other_run_again(
        tmp_path, monkeypatch, capsys):
    impl, setup = tmp_path / "impl", find_section("setup")
    shutil.copytree(ROOT / "solutions", impl)
    digest = module_digest(impl / setup.file_name)
    records = [{"section": 1, "name": "test_a", "checks": "It works.", "status": "passed",
                "message": "", "module_digest": digest},
               {"section": 1, "name": "test_b", "checks": "It seeds.", "status": "failed",
                "message": "AssertionError: as recorded", "module_digest": digest}]
    (tmp_path / "results.json").write_text(json.dumps(records))
    monkeypatch.setenv(notebooks.RECORDED_CHECKS_VAR, str(tmp_path / "results.json"))
    assert notebooks.recorded_checks(impl, setup) == records
    with pytest.raises(notebooks.ChecksFailed, match="1 of 2 checks do not pass yet"):
        notebooks.run_checks(impl, "setup")  # what was recorded: no test runs
    assert "message: AssertionError: as recorded" in capsys.readouterr().out
    assert notebooks.recorded_checks(impl, find_section("corpus")) is None, "none recorded"
    module = impl / setup.file_name
    module.write_text(module.read_text() + "\n")
    assert notebooks.recorded_checks(impl, setup) is None, "recorded of other bytes"
    monkeypatch.delenv(notebooks.RECORDED_CHECKS_VAR)
    assert notebooks.recorded_checks(ROOT / "solutions", setup) is None, "a learner's: run"


def test_make_lab_installs_jupyter_apart_and_starts_it_at_the_root_as_root_too():
    lab = (ROOT / "requirements" / "lab.lock").read_text()
    assert "\njupyterlab==4." in lab and "jupyterlab" not in (
        ROOT / "requirements" / "learner.lock").read_text(), "pinned, apart from the tests'"
    ran = subprocess.run(["make", "-n", "lab"], cwd=ROOT, capture_output=True, text=True,
                         env={**os.environ, "MAKEFLAGS": ""})
    assert ran.returncode == 0, ran.stderr
    commands = ran.stdout.replace("\\\n", " ")  # a command continued over lines, whole
    start = next(line for line in commands.splitlines() if "jupyter lab" in line)
    assert f'--ServerApp.root_dir="{ROOT}"' in start, "from the course's root"
    assert ("--allow-root" in start) == (os.getuid() == 0), "as root, Jupyter must be told"
    if "ipykernel install" in commands:  # the first time: .venv's Python is the kernel
        assert "--name python3" in commands and "-r requirements/lab.lock" in commands
