"""The grader (`python -m grading`), the handout (`make release`) and the Gradescope bundle
(`make autograder`), on sample submissions built here from `solutions/` and the handout's
stubs by small, named edits, so that they cannot drift from the reference: an edit whose
text is no longer in the reference fails loudly.

Grading runs every section in a child of its own, so the class of samples is graded once,
in one run of the command, and each test reads its part of the results; a second, short
run (section 1 only) holds the samples that wait for a timeout and is interrupted. Every
sample but the reference and the stubs holds only the modules that matter to it (the others
are "missing", which costs no run).
"""

from __future__ import annotations

import csv
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import zipfile
from pathlib import Path

import pytest

from course.registry import ROOT, SECTIONS, find_section
from course.results import ERROR, FAILED, NOT_IMPLEMENTED, PASSED, TIMEOUT
from grading.grader import Grader
from grading.integrity import scan_files, scan_module
from grading.reports import VISIBILITIES, gradescope_report
from grading.sandbox import ForkServer, Limits, SectionRun
from grading.scoring import score_run
from grading.store import Store, result_from_dict
from grading.submissions import read_submission
from tools import autograder, release
from tools.exercises import leaks

LOOP_TIMEOUT_S = 3  # per test, where the infinite loop runs: section 1's tests take ~0.1 s
REFERENCE = {s.module: (ROOT / "solutions" / f"{s.module}.py").read_text() for s in SECTIONS}


def edited(module: str, *edits: tuple[str, str]) -> str:
    """The reference `module` with each (old, new) edit made; `old` must occur once."""
    source = REFERENCE[module]
    for old, new in edits:
        assert source.count(old) == 1, f"solutions/{module}.py no longer holds {old!r} once"
        source = source.replace(old, new)
    return source


# Each sample: {module: source}.
SAMPLES = {
    "partly_done": {
        "s1_setup": REFERENCE["s1_setup"],
        "s2_corpus": edited("s2_corpus", ("_WORD.findall(text.lower())", "_WORD.findall(text)")),
    },
    "hard_crash": {
        "s1_setup": edited("s1_setup",
                           ("    choice = preferred", "    os._exit(3)\n    choice = preferred")),
        "s2_corpus": edited("s2_corpus", ("    return _WORD.findall(text.lower())",
                                          "    import ctypes\n"
                                          "    ctypes.string_at(0)  # a segmentation fault\n"
                                          "    return _WORD.findall(text.lower())")),
    },
    "syntax_error": {
        "s1_setup": edited("s1_setup",
                           ("def set_seed(seed: int) -> None:", "def set_seed(seed: int)")),
        "s2_corpus": REFERENCE["s2_corpus"],
    },
    "import_error": {  # a typo
        "s1_setup": edited("s1_setup", ("import torch\n", "import torch\nimport numpi\n")),
    },
    "hogs_memory_and_output": {  # on import: 6 GB (the cap is 4), then 80 MB printed (64)
        "s1_setup": edited("s1_setup", ('DEVICE_ENV_VAR = "ELMO_DEVICE"',
                                        'DEVICE_ENV_VAR = "ELMO_DEVICE"\n'
                                        "_hoard = torch.empty(6 << 30, dtype=torch.uint8)")),
        "s2_corpus": edited("s2_corpus", ("PAD, UNK, BOS, EOS = 0, 1, 2, 3",
                                          "PAD, UNK, BOS, EOS = 0, 1, 2, 3\n"
                                          'print("x" * (80 << 20))')),
    },
    "imports_solutions": {  # its own reference (absent where it runs), another section's
        "s1_setup": edited("s1_setup", ("import torch\n", "import torch\n\n"
                                        "from solutions.s1_setup import set_seed as _given\n")),
        "s2_corpus": edited("s2_corpus",
                            ("import torch\n", "import torch\n\nimport solutions.s1_setup\n")),
    },
    "monkeypatches": {  # torch's function, in the open; the tests' helper, by a detour
        "s1_setup": edited("s1_setup", ('DEVICE_ENV_VAR = "ELMO_DEVICE"',
                                        'DEVICE_ENV_VAR = "ELMO_DEVICE"\n'
                                        "torch.equal = lambda *args: True")),
        "s2_corpus": edited("s2_corpus", ("import torch\n", (
            "import sys\n\nimport torch\n\n"
            "_helpers = sys.modules.get('tests.sections.strategies')\n"
            "setattr(_helpers, 'plain_words', None)\n"))),
    },
}


# Graded in the interrupted run, section 1 only: they wait for a timeout. Their loops sleep
# rather than spin, to spare a shared CPU; a spinning loop is stopped the same way.
WAITING = {
    "infinite_loop": {  # set_seed never returns for one seed, which one test uses
        "s1_setup": edited("s1_setup", ("import random\n", "import random\nimport time\n"),
                           ("    random.seed(seed)\n",
                            "    while seed == 7:\n        time.sleep(0.01)\n"
                            "    random.seed(seed)\n")),
    },
    "blocks_the_alarm": {  # hangs on import, and blocks SIGALRM, pytest-timeout's signal
        "s1_setup": edited("s1_setup", ("import torch\n", (
            "import torch\n\nimport signal\nimport time\n\n"
            "signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGALRM})\n"
            "while True:\n    time.sleep(0.05)\n"))),
    },
}


def write_submission(folder: Path, modules: dict[str, str]) -> Path:
    (folder / "exercises").mkdir(parents=True)
    for module, source in modules.items():
        (folder / "exercises" / f"{module}.py").write_text(source)
    return folder


def grade(*args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess:
    result = subprocess.run([sys.executable, "-m", "grading", *args], cwd=cwd,
                            capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, f"grading failed:\n{result.stdout}\n{result.stderr}"
    return result


@pytest.fixture(scope="session")
def scratch():
    """This session's own folder: pytest's tmp_path_factory prunes its folders when other
    pytest sessions start, and these fixtures live for the whole session."""
    folder = Path(tempfile.mkdtemp(prefix="grading-tests-"))
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture(scope="session")
def work_dir() -> Path:
    """The grader's work folder, kept between sessions (under build/, which git ignores) so
    that the reference is pre-trained once, not once per `make check`; every run here is
    `--fresh`, so no result stored by an earlier session is used."""
    return ROOT / "build" / "grading-tests"


@pytest.fixture(scope="session")
def handout(scratch) -> Path:
    release.build(scratch / "handout")
    return scratch / "handout"


@pytest.fixture(scope="session")
def class_dir(scratch, handout) -> Path:
    """The samples, the reference, the handout's own `make submission` zip (the pristine
    stubs), and a handout with section 1 done, as a class hands them in."""
    folder = scratch / "class"
    write_submission(folder / "reference", REFERENCE)
    for name, modules in {**SAMPLES, **WAITING}.items():
        write_submission(folder / name, modules)
    subprocess.run(["make", "-s", "submission"], cwd=handout, check=True, capture_output=True)
    shutil.copy(handout / "submission.zip", folder / "stubs.zip")
    # the handout's exercises with section 1 done (the modules of the later sections left out,
    # to spare their runs: the stubs' own zip grades those)
    write_submission(folder / "handout_section_1_done", {"s1_setup": REFERENCE["s1_setup"]})
    shutil.copy(handout / "exercises" / "__init__.py", folder / "handout_section_1_done" /
                "exercises")
    return folder


CLASS = ["reference", "stubs.zip", *SAMPLES, "handout_section_1_done"]


@pytest.fixture(scope="session")
def graded(class_dir, work_dir, scratch) -> dict:
    out = scratch / "reports"
    run = grade(*(str(class_dir / name) for name in CLASS), "--jobs", "2", "--fresh",
                "--work-dir", str(work_dir),
                "--json", str(out / "class.json"), "--csv", str(out / "class.csv"))
    report = json.loads((out / "class.json").read_text())
    by_name = {s["name"]: s for s in report["submissions"]}
    return {"stdout": run.stdout, "json": report, "by_name": by_name,
            "csv": list(csv.DictReader((out / "class.csv").open()))}


def section(result: dict, key: str) -> dict:
    number = find_section(key).number
    return next(s for s in result["sections"] if s["number"] == number)


def statuses(section_result: dict) -> dict[str, str]:
    return {t["name"]: t["status"] for t in section_result["tests"]}


# --- the reference and the stubs ---------------------------------------------------------


def test_reference_gets_every_point(graded):
    reference = graded["by_name"]["reference"]
    assert reference["score"] == reference["max_score"] == 100, [
        (s["name"], s["score"], s["reason"]) for s in reference["sections"]]
    assert all(s["status"] == PASSED and not s["flags"] for s in reference["sections"])
    assert not reference["flags"], "the reference must raise no flag"


def test_pristine_stubs_get_nothing_and_say_not_implemented(graded):
    stubs = graded["by_name"]["stubs"]
    assert stubs["score"] == 0 and stubs["max_score"] == 100
    for result in stubs["sections"]:
        assert result["status"] == NOT_IMPLEMENTED and result["tests"], result["reason"]
        assert set(statuses(result).values()) == {NOT_IMPLEMENTED}, result["name"]


def test_every_test_of_the_course_is_counted(graded):
    reference = graded["by_name"]["reference"]
    for result in reference["sections"]:
        test_file = ROOT / "tests" / "sections" / f"test_s{result['number']}_{result['name']}.py"
        assert test_file.exists() and result["tests"]
        assert sum(t["max_score"] for t in result["tests"]) == pytest.approx(result["points"])


# --- partial credit, and what broken code costs --------------------------------------------


def test_partial_credit_is_per_test(graded):
    done = graded["by_name"]["partly_done"]
    assert section(done, "setup")["score"] == 5
    corpus = section(done, "corpus")
    found = list(statuses(corpus).values())
    assert corpus["status"] == FAILED and set(found) == {PASSED, FAILED}
    assert corpus["score"] == pytest.approx(10 * found.count(PASSED) / len(found))


def test_missing_modules_cost_their_sections_only(graded):
    done = graded["by_name"]["partly_done"]
    bilm = section(done, "bilm")
    assert bilm["status"] == ERROR and bilm["score"] == 0
    assert "s3_bilm.py is missing" in bilm["reason"]
    assert done["score"] == pytest.approx(section(done, "setup")["score"]
                                          + section(done, "corpus")["score"], abs=1e-3)


def test_os_exit_keeps_the_results_before_it(graded):
    setup = section(graded["by_name"]["hard_crash"], "setup")
    found = list(statuses(setup).values())
    assert setup["status"] == ERROR and "exited with status 3" in setup["reason"]
    first_lost = found.index(ERROR)
    assert first_lost > 0 and set(found[:first_lost]) == {PASSED}
    assert set(found[first_lost:]) == {ERROR} and 0 < setup["score"] < 5


def test_a_segfault_costs_its_section_only(graded):
    crash = graded["by_name"]["hard_crash"]
    corpus = section(crash, "corpus")
    assert corpus["status"] == ERROR and corpus["score"] == 0
    assert "segmentation fault" in corpus["reason"] and "tokenize" in corpus["reason"]
    assert section(crash, "setup")["score"] > 0


def test_a_syntax_error_costs_its_section_only(graded):
    broken = graded["by_name"]["syntax_error"]
    setup = section(broken, "setup")
    assert setup["status"] == ERROR and setup["score"] == 0 and "SyntaxError" in setup["reason"]
    assert section(broken, "corpus")["score"] == 10


def test_an_import_error_is_every_test_s_error(graded):
    setup = section(graded["by_name"]["import_error"], "setup")
    assert setup["status"] == ERROR and setup["score"] == 0
    assert set(statuses(setup).values()) == {ERROR}
    assert "No module named 'numpi'" in setup["reason"]


def test_memory_and_output_caps_cost_their_sections_only(graded):
    hog = graded["by_name"]["hogs_memory_and_output"]
    setup, corpus = section(hog, "setup"), section(hog, "corpus")
    assert setup["status"] == ERROR and "can't allocate memory" in setup["reason"]
    assert corpus["status"] == ERROR and "File too large" in corpus["reason"]
    assert setup["score"] == corpus["score"] == 0


# --- integrity -------------------------------------------------------------------------------


def test_importing_solutions_is_flagged_and_earns_nothing(graded):
    cheat = graded["by_name"]["imports_solutions"]
    for key in ("setup", "corpus"):
        result = section(cheat, key)
        kinds = {f["kind"] for f in result["flags"]}
        assert "imports-solutions" in kinds and result["score"] == 0, result["reason"]
        assert result["reason"].startswith("flagged")
    # section 2's code is otherwise the reference: its tests pass, and still earn nothing
    assert set(statuses(section(cheat, "corpus")).values()) == {PASSED}


def test_monkeypatching_torch_or_the_tests_helpers_is_flagged(graded):
    cheat = graded["by_name"]["monkeypatches"]
    setup, corpus = section(cheat, "setup"), section(cheat, "corpus")
    assert {f["detail"] for f in setup["flags"]} >= {"replaced torch.equal"}
    assert any("torch.equal" in f["detail"] and "line" in f["detail"] for f in setup["flags"])
    assert {f["detail"] for f in corpus["flags"]} == {
        "replaced tests.sections.strategies.plain_words"}  # seen at run time only
    assert setup["score"] == corpus["score"] == 0
    assert all(f["penalised"] for f in setup["flags"] + corpus["flags"])


def test_static_scan_finds_patches_and_reference_imports():
    found = [f.detail for f in scan_module(
        "import torch as t\nimport importlib\nfrom torch.nn import functional as F\n"
        "t.allclose = None\nsetattr(F, 'relu', None)\nvars(t)['equal'] = None\n"
        "importlib.import_module('solutions.s3_bilm')\nfrom .. import solutions\n"
        "t.backends.cudnn.deterministic = True\nx = t.zeros(3)\nx[0] = 1\n", 3)]
    assert found == ["line 4: changes t.allclose", "line 5: calls setattr(F, 'relu', None)",
                     "line 6: changes vars(t)['equal']",
                     "line 7: importlib.import_module('solutions.s3_bilm')",
                     "line 8: from .. import solutions"]
    assert all(not scan_module(source, 0) for source in REFERENCE.values())


def test_shipped_tests_are_noted_and_ignored(tmp_path):
    folder = write_submission(tmp_path / "sub", {"s1_setup": REFERENCE["s1_setup"]})
    (folder / "conftest.py").write_text("import pytest\n")
    (folder / "exercises" / "test_mine.py").write_text("def test_x():\n    assert True\n")
    submission = read_submission(folder)
    assert set(submission.modules) == {"s1_setup.py"}, "only section modules are read"
    (flag,) = scan_files(submission.files)
    assert flag.kind == "ships-tests" and not flag.penalised
    assert "conftest.py" in flag.detail and "exercises/test_mine.py" in flag.detail


def test_links_are_not_followed(tmp_path):
    folder = tmp_path / "sub" / "exercises"
    folder.mkdir(parents=True)
    (folder / "s1_setup.py").symlink_to(ROOT / "solutions" / "s1_setup.py")
    submission = read_submission(tmp_path / "sub")
    assert not submission.modules and "link" in submission.unreadable["s1_setup.py"]


# --- determinism and outputs ---------------------------------------------------------------


def scores_and_statuses(result: dict, keys=("setup", "corpus")) -> list:
    return [(s["score"], s["status"], statuses(s)) for s in (section(result, k) for k in keys)]


def test_a_submission_made_from_the_handout_grades_correctly(graded):
    done = graded["by_name"]["handout_section_1_done"]
    assert section(done, "setup")["score"] == 5 and section(done, "setup")["status"] == PASSED
    assert "s2_corpus.py is missing" in section(done, "corpus")["reason"]


def test_csv_has_a_row_per_submission_and_a_column_per_section(graded):
    rows = {row["submission"]: row for row in graded["csv"]}
    assert list(rows) == [s["name"] for s in graded["json"]["submissions"]]
    columns = [f"{s.number}_{s.name}" for s in SECTIONS]
    assert list(graded["csv"][0]) == ["submission", *columns, "total", "max", "flags"]
    partly = rows["partly_done"]
    assert float(partly["total"]) == pytest.approx(sum(float(partly[c]) for c in columns))
    assert "imports-solutions" in rows["imports_solutions"]["flags"]


def test_terminal_table_shows_each_submission(graded):
    lines = graded["stdout"].splitlines()
    assert lines[0].split()[:2] == ["submission", "1"] and lines[0].split()[-1] == "total"
    assert any(line.startswith("reference") and line.endswith("100/100") for line in lines)
    assert any("segmentation fault" in line for line in lines), "errors are explained"


# --- the Gradescope bundle, run from where Gradescope unpacks it --------------------------


@pytest.fixture(scope="session")
def bundle(scratch) -> Path:
    folder = scratch / "autograder"
    autograder.build(folder / "autograder.zip")
    with zipfile.ZipFile(folder / "autograder.zip") as archive:
        archive.extractall(folder / "source")
        modes = {i.filename: i.external_attr >> 16 for i in archive.infolist()}
    for script in ("setup.sh", "run_autograder"):
        assert modes[script] & 0o111, f"{script} must be executable"
        (folder / "source" / script).chmod(0o755)
    return folder / "source"


def test_bundle_holds_the_scripts_tests_and_reference(bundle):
    assert (bundle / "setup.sh").read_text().startswith("#!/usr/bin/env bash")
    run = (bundle / "run_autograder").read_text()
    assert "/autograder/submission" in run and "/autograder/results/results.json" in run
    assert (bundle / autograder.LOCK).read_bytes() == (ROOT / autograder.LOCK).read_bytes()
    for section_ in SECTIONS:
        assert (bundle / "solutions" / f"{section_.module}.py").exists()
        assert (bundle / "tests" / "sections" / f"test_{section_.module}.py").exists()


def test_bundle_runs_from_where_gradescope_unpacks_it(bundle):
    run = grade("--help", cwd=bundle)
    assert "--gradescope" in run.stdout


def test_gradescope_results_follow_the_specification(graded):
    result = result_from_dict(graded["by_name"]["monkeypatches"])
    data = json.loads(gradescope_report(result, "after_published"))
    assert data["score"] == 0 and data["visibility"] == "after_published"
    assert "monkeypatch" in data["output"]
    partly = json.loads(gradescope_report(result_from_dict(graded["by_name"]["partly_done"])))
    assert partly["score"] == pytest.approx(graded["by_name"]["partly_done"]["score"], abs=0.01)
    assert partly["score"] == pytest.approx(sum(t["score"] for t in partly["tests"]), abs=0.01)
    for data_ in (data, partly):
        assert data_["visibility"] in VISIBILITIES
        for test in data_["tests"]:
            assert set(test) >= {"name", "score", "max_score", "status", "output", "visibility"}
            assert test["status"] in ("passed", "failed")
            assert (test["status"] == "passed") == (test["score"] == test["max_score"] > 0)
    flagged = [t for t in data["tests"] if t["tags"] == ["setup"]]
    assert flagged and all("no credit" in t["output"] for t in flagged)


# --- the handout ---------------------------------------------------------------------------


def test_handout_holds_no_solutions(tmp_path):
    written = release.build(tmp_path / "handout")
    assert not [n for n in written if n.startswith(("solutions/", "grading/", "mistakes/",
                                                    "tools/"))]
    assert "course/progress.py" in written and "exercises/s7_layer_weights.py" in written
    assert leaks(tmp_path / "handout") == []
    assert release.foreign_mentions(tmp_path / "handout") == []


def test_leak_check_catches_a_solution_in_the_handout(handout, tmp_path):
    copy = tmp_path / "handout"
    shutil.copytree(handout, copy)
    shutil.copy(ROOT / "solutions" / "s4_pretrain.py", copy / "notebooks" / "helper.py")
    assert any("s4_pretrain.py: train_bilm" in leak for leak in leaks(copy))


def test_handout_tests_run_on_the_learners_own_sections(handout):
    """`make test` in the handout, with this repository's environment."""
    run = subprocess.run(["make", "test", "SECTION=2", f"PY={sys.executable}", "-o",
                          ".venv/.installed"], cwd=handout, capture_output=True, text=True,
                         timeout=300)
    assert run.returncode == 2, run.stdout + run.stderr  # make: the stubs' tests fail
    records = json.loads((handout / "build" / "results.json").read_text())
    assert records and {r["status"] for r in records} == {NOT_IMPLEMENTED}
    assert "not implemented yet" in run.stdout


# --- interrupting and resuming -----------------------------------------------------------


@pytest.fixture(scope="session")
def interrupted(class_dir, work_dir, scratch) -> dict:
    """Section 1 of: hard_crash (graded again), infinite_loop, then blocks_the_alarm, which
    hangs until the run is interrupted (SIGINT, as Ctrl-C sends) once the others are done."""
    report = scratch / "interrupted.json"
    names = ["hard_crash", "infinite_loop", "blocks_the_alarm"]
    process = subprocess.Popen(
        [sys.executable, "-m", "grading", *(str(class_dir / n) for n in names),
         "--sections", "setup", "--jobs", "2", "--quiet", "--fresh",
         "--test-timeout", str(LOOP_TIMEOUT_S), "--work-dir", str(work_dir), "--json",
         str(report)], cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)

    def finished() -> list[dict]:
        return json.loads(report.read_text())["submissions"] if report.exists() else []

    deadline = time.monotonic() + 300
    while len(finished()) < 2 and time.monotonic() < deadline and process.poll() is None:
        time.sleep(0.2)
    started = time.monotonic()
    process.send_signal(signal.SIGINT)
    out, err = process.communicate(timeout=60)
    return {"code": process.returncode, "stdout": out, "stderr": err,
            "seconds_to_stop": time.monotonic() - started,
            "settings": json.loads(report.read_text())["settings"],
            "by_name": {s["name"]: s for s in finished()}}


def test_an_infinite_loop_times_out_one_test(interrupted):
    setup = section(interrupted["by_name"]["infinite_loop"], "setup")
    found = list(statuses(setup).values())
    assert setup["status"] == TIMEOUT and "Timeout" in setup["reason"]
    assert found.count(TIMEOUT) == 1 and found.count(PASSED) == len(found) - 1  # seed 7's test
    assert setup["score"] == pytest.approx(5 * (len(found) - 1) / len(found))


def test_an_interrupted_run_stops_at_once_and_keeps_what_it_finished(interrupted):
    assert interrupted["code"] == 130 and "interrupted" in interrupted["stderr"]
    assert interrupted["seconds_to_stop"] < 30, "the hanging run is killed, not waited for"
    assert set(interrupted["by_name"]) == {"hard_crash", "infinite_loop"}
    assert "hard_crash" in interrupted["stdout"], "the table of what was finished is printed"


def test_a_submission_graded_again_scores_the_same(interrupted, graded):
    again, first = interrupted["by_name"]["hard_crash"], graded["by_name"]["hard_crash"]
    assert scores_and_statuses(again, ["setup"]) == scores_and_statuses(first, ["setup"])


def test_a_stored_result_is_not_graded_again(interrupted, class_dir, work_dir):
    grader = Grader(work_dir, [find_section("setup")], Limits(test_timeout_s=LOOP_TIMEOUT_S))
    # the key that run wrote: the repository's tests may have changed since (on a shared machine)
    store = Store(work_dir / "results", interrupted["settings"]["settings_key"])
    path = store.path("hard_crash")
    before = path.stat().st_mtime_ns
    # no prepare(): had it to run anything, this grader could not
    (again,) = grader.grade([read_submission(class_dir / "hard_crash")], store=store)
    assert path.stat().st_mtime_ns == before
    stored = interrupted["by_name"]["hard_crash"]["sections"][0]
    assert (again.sections[0].score, again.sections[0].reason) == (stored["score"],
                                                                   stored["reason"])


def test_the_settings_key_follows_the_tests_sections_and_limits(work_dir):
    setup, corpus = find_section("setup"), find_section("corpus")
    key = Grader(work_dir, [setup], Limits(test_timeout_s=3)).settings_key
    assert Grader(work_dir, [setup], Limits(test_timeout_s=3.0)).settings_key == key
    assert Grader(work_dir, [setup, corpus], Limits(test_timeout_s=3)).settings_key != key
    assert Grader(work_dir, [setup], Limits(test_timeout_s=4)).settings_key != key
    changed = Grader(work_dir, [setup], Limits(test_timeout_s=3))
    changed.pristine.files["tests/sections/test_s1_setup.py"] += b"\n"
    assert changed.settings_key != key


def test_the_wall_clock_limit_kills_the_whole_process_group(tmp_path):
    """A child that no signal of its own stops, with a grandchild: both are killed."""
    (tmp_path / "hang_here.py").write_text(
        "import signal, subprocess, sys, time\n"
        "signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGALRM, signal.SIGTERM})\n"
        "grandchild = subprocess.Popen(['sleep', '600'])\n"
        "open(sys.argv[1], 'w').write(str(grandchild.pid))\n"
        "while True:\n    time.sleep(0.05)\n")
    server = ForkServer(tmp_path / "forkserver.log")
    pid_file = tmp_path / "grandchild.pid"
    try:
        status, timed_out, error = server.run(
            "hang_here", [str(pid_file)], tmp_path, {"PATH": "/usr/bin:/bin"},
            tmp_path / "output.txt", {}, timeout_s=3)
    finally:
        server.close()
    assert timed_out and error is None and os.WIFSIGNALED(status)
    assert os.WTERMSIG(status) == signal.SIGKILL
    assert not alive(int(pid_file.read_text())), "the grandchild outlived the limit"


def alive(pid: int) -> bool:
    """Whether `pid` runs (a zombie, killed but not yet reaped by init, does not)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except FileNotFoundError:
        return False
    return state != "Z"


def test_a_run_past_its_limit_loses_its_remaining_tests_as_timeouts():
    setup = find_section("setup")
    nodeids = [f"tests/sections/test_s1_setup.py::test_{n}" for n in ("a", "b", "c")]
    run = SectionRun(records={nodeids[0]: {"nodeid": nodeids[0], "status": PASSED,
                                           "message": ""}}, timed_out=True)
    result = score_run(setup, nodeids, run, [], Limits(section_timeout_s=5))
    assert [t.status for t in result.tests] == [PASSED, TIMEOUT, TIMEOUT]
    assert result.status == TIMEOUT and result.score == pytest.approx(5 / 3)
    assert "ran past its 5 s limit during test_b; 2 of 3 tests lost" in result.reason

