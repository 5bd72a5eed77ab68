"""The grader (`python -m grading`), the handout (`make release`) and the Gradescope bundle
(`make autograder`), on sample submissions built here from `solutions/` and the handout's
stubs by small, named edits, so that they cannot drift from the reference: an edit whose
text is no longer in the reference fails loudly.

Grading runs every section in a child of its own, so the class of samples is graded once,
in one run of the command, and each test reads its part of the results; a second, short
run (section 1 only) holds the samples that wait for a timeout and is interrupted. Every
sample but the reference and the stubs holds only the modules that matter to it (the others
are "missing", which costs no run).

The hostile samples (`hostile_samples`) do what the grader must hold: read the answer key
every way there is, forge their results in the run's process, write where they must not,
leave processes behind, harm the other submissions' runs and the grader, and feed the
reports what a terminal or a spreadsheet would misread. Each is a few lines added to the
stubs (or the reference) at module level or at the start of a function, bounded in time and
local to this machine; together they cost the class about ten section runs.
"""

from __future__ import annotations

import ast
import csv
import hashlib
import json
import os
import shutil
import signal
import subprocess
import sys
import sysconfig
import tempfile
import time
import zipfile
from fractions import Fraction
from pathlib import Path

import pytest

from course.registry import ROOT, SECTIONS, find_section
from course.results import ERROR, FAILED, NOT_IMPLEMENTED, PASSED, TIMEOUT
from grading.grader import Grader
from grading.integrity import scan_files, scan_module
from grading.reports import VISIBILITIES, gradescope_report, shown
from grading.sandbox import ForkServer, Limits, SectionRun
from grading.scoring import UNITS, score_run
from grading.store import Seal, Store, load_sealed, result_from_dict
from grading.submissions import read_submission
from tools import autograder, release
from tools.exercises import leaks

LOOP_TIMEOUT_S = 3  # per test, where the infinite loop runs: section 1's tests take ~0.1 s
REFERENCE = {s.module: (ROOT / "solutions" / f"{s.module}.py").read_text() for s in SECTIONS}
STUBS = {s.module: (ROOT / "exercises" / f"{s.module}.py").read_text() for s in SECTIONS}
HALF_UNIT = 1 / (2 * UNITS)  # a section's score is its formula's, to the nearest unit
BONUS_POINTS = sum(s.points for s in SECTIONS if s.bonus)  # on top of the 100
DAEMON_SECONDS = ("31.4158", "31.4159")  # what the hostile samples' leftover `sleep`s wait


def edited(module: str, *edits: tuple[str, str]) -> str:
    """The reference `module` with each (old, new) edit made; `old` must occur once."""
    source = REFERENCE[module]
    for old, new in edits:
        assert source.count(old) == 1, f"solutions/{module}.py no longer holds {old!r} once"
        source = source.replace(old, new)
    return source


def injected(module: str, function: str, code: str, source: str | None = None) -> str:
    """`module` (the reference, or `source`) with `code` run first in `function`'s body,
    after its docstring."""
    source = REFERENCE[module] if source is None else source
    tree = ast.parse(source)
    found = [n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef) and n.name == function]
    assert len(found) == 1, f"{module}.py no longer defines {function} once"
    body = found[0].body
    first = body[1] if ast.get_docstring(found[0]) and len(body) > 1 else body[0]
    lines = source.splitlines(keepends=True)
    indent = " " * first.col_offset
    lines.insert(first.lineno - 1, "".join(f"{indent}{line}\n" for line in code.splitlines()))
    return "".join(lines)


def appended(source: str, code: str) -> str:
    """`source` with `code` run at the end of its module body."""
    return f"{source}\n\n{code.strip()}\n"


# Each sample: {module: source}.
SAMPLES = {
    "partly_done": {
        "s1_setup": REFERENCE["s1_setup"],
        "s2_corpus": edited("s2_corpus", ("_WORD.findall(text.lower())", "_WORD.findall(text)")),
    },
    "hard_crash": {  # os._exit; a segmentation fault (the C stack runs out)
        "s1_setup": injected("s1_setup", "get_device", "os._exit(3)"),
        "s2_corpus": injected("s2_corpus", "tokenize", "import sys\n"
                              "sys.setrecursionlimit(1 << 30)\n"
                              "return tokenize.__call__(text)"),
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

# Stub modules that take the reference's code from wherever they can read it, every way
# the grader has been beaten so: if any way works they are the reference and pass.
THEFT = """
def _stolen(module, repo={repo!r}, work={work!r}, klass={klass!r}):
    import ctypes, glob, importlib.util, os, subprocess
    def walk(top, limit=5000):
        for seen, (folder, _, names) in enumerate(os.walk(top)):
            if seen > limit:
                return
            yield from (os.path.join(folder, n) for n in names if n == module + ".py")
    def libc(path):
        lib = ctypes.CDLL(None)
        buffer = ctypes.create_string_buffer(1 << 20)
        fd = lib.open(path.encode(), 0)
        return buffer.raw[: lib.read(fd, buffer, 1 << 20)].decode()
    def dir_fd(path):
        folder = os.open(os.path.dirname(path), os.O_RDONLY)
        return os.read(os.open(os.path.basename(path), os.O_RDONLY, dir_fd=folder), 1 << 20)
    def linked(path):
        link = os.path.join(os.environ.get("TMPDIR", "/tmp"), "link-" + module)
        os.symlink(path, link)
        return open(link).read()
    def relative(path):
        os.chdir(os.path.dirname(path))
        return open(os.path.basename(path)).read()
    ref = f"{{repo}}/solutions/{{module}}.py"
    ways = [lambda: open(ref).read(), lambda: relative(ref), lambda: linked(ref),
            lambda: dir_fd(ref).decode(), lambda: libc(ref),
            lambda: importlib.util.find_spec("solu" + "tions." + module).loader.get_data(ref),
            lambda: subprocess.run(["cat", ref], capture_output=True, text=True).stdout,
            lambda: subprocess.run(["git", "-C", repo, "show", f"HEAD:solutions/{{module}}.py"],
                                   capture_output=True, text=True).stdout]
    places = [*glob.glob(f"{{work}}/runs/*/root/solutions/{{module}}.py"),
              *glob.glob(f"{{klass}}/*/exercises/{{module}}.py")]
    for top in ("/tmp", "/dev/shm", os.environ.get("TMPDIR", "/tmp"),
                os.environ.get("HOME", "/tmp"), os.path.dirname(repo), "/root", "/home"):
        places += walk(top)
    for cmdline in glob.glob("/proc/[0-9]*/cmdline"):
        try:
            arguments = open(cmdline, "rb").read().decode(errors="replace").split("\\0")
        except OSError:
            continue
        for argument in arguments:
            places += glob.glob(f"{{argument}}/exercises/{{module}}.py")
    ways += [lambda path=path: open(path).read() for path in places]
    for way in ways:
        try:
            text = way()
        except BaseException:
            continue
        if isinstance(text, bytes):
            text = text.decode(errors="replace")
        if "# BEGIN " + "SOLUTION" in (text or ""):  # the reference's mark, not this text
            return text
    return None


_code = _stolen(__name__.rsplit(".", 1)[-1])
if _code:
    exec(compile(_code, "<stolen>", "exec"), globals())
"""

# The reference's section 2, which leaves copies of the reference it runs with (section
# 1's) wherever a later run might find them.
LEAVES_COPIES = """
import glob as _glob, os as _os, shutil as _shutil
for _copy in _glob.glob("solutions/*.py"):
    for _place in (_os.environ.get("TMPDIR", "/tmp"), "/tmp", "/dev/shm",
                   _os.environ.get("HOME", "/tmp"), {work!r} + "/runs"):
        try:
            _shutil.copy(_copy, _os.path.join(_place, _os.path.basename(_copy)))
        except OSError:
            pass
"""

# Forgery inside the run's process: the watch blinded, the exit replaced, the recorder
# patched, its stream truncated and forged.
FORGES = """
import builtins, json, operator, os, sys
import numpy.testing
os._exit = lambda code: None
builtins.all = lambda iterable: True
operator.is_ = lambda a, b: True
numpy.testing.assert_allclose = lambda *args, **kwargs: None
sys.settrace(None)
sys.setprofile(None)
sys.modules["grading.guard"].StreamingRecorder.record = lambda self, item, status, err: None
for _fd in (3, 4):
    try:
        os.ftruncate(_fd, 0)
    except OSError:
        pass
for _test in ("test_same_seed_gives_same_random_draws", "test_each_generator_is_seeded"):
    _record = {{"nodeid": f"tests/sections/test_s1_setup.py::{{_test}}", "status": "passed"}}
    os.write(3, (json.dumps({{"record": _record, "mac": "0" * 64}}) + "\\n").encode())
"""

# Forgery by what the runtime gives away: a pytest plugin found through the garbage
# collector that passes every test, the guard's check turned off, the test's own oracle
# read off its frame, and values that compare equal to anything.
FORGES_BY_INTROSPECTION = """
import gc, inspect
import pytest


class _Pass:
    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_makereport(self, item, call):
        report = yield
        report.outcome = "passed"
        return report


_manager = next(o for o in gc.get_objects() if type(o).__name__ == "PytestPluginManager")
_manager.register(_Pass(), "passes-everything")
_manager.get_plugin("grading-watch").check = lambda *args, **kwargs: None
_oracle = [frame.frame.f_locals for frame in inspect.stack()]


class _AlwaysEqual(list):
    def __eq__(self, other):
        return True


_Sneaky = type("_Sneaky", (torch.Tensor,), {{}})
"""

# What must not outlive the run or reach outside it: processes left behind, writes to the
# grader's tests, the environment, the trusted cache, the stored results and the reports.
OUTLIVES = """
import glob as _glob, os as _os, subprocess as _subprocess, time as _time


def _escape():
    targets = [{repo!r} + "/tests/sections/conftest.py", {site!r} + "/zz_escaped.pth",
               {marker!r}, *_glob.glob({work!r} + "/cache/*"),
               *_glob.glob({work!r} + "/results/*.json"), *_glob.glob({reports!r} + "/*")]
    for target in targets:
        try:
            with open(target, "a") as stream:
                stream.write("\\nraise SystemExit('escaped')\\n")
        except OSError:
            pass


_escape()
_subprocess.Popen(["sleep", "{daemons[0]}"], start_new_session=True)
if _os.fork() == 0:
    _os.setsid()
    if _os.fork() == 0:
        _time.sleep(2)
        _escape()
        _os.execv("/bin/sleep", ["sleep", "{daemons[1]}"])
    _os._exit(0)
"""

# Harm to the others: a thread that writes into every other run's copy of the tests and
# module for a while, and signals to the grader and to its fork server.
HARMS = """
import glob as _glob, os as _os, signal as _signal, threading as _threading, time as _time


def _tamper(until):
    while _time.monotonic() < until:
        for path in (_glob.glob({work!r} + "/runs/*/root/tests/sections/*.py")
                     + _glob.glob({work!r} + "/runs/*/impl/*.py")):
            try:
                with open(path, "a") as stream:
                    stream.write("\\nassert False\\n")
            except OSError:
                pass
        _time.sleep(0.05)


_threading.Thread(target=_tamper, args=(_time.monotonic() + 1.5,), daemon=True).start()
_graders = set()
for _cmdline in _glob.glob("/proc/[0-9]*/cmdline"):
    try:
        if {klass!r}.encode() in open(_cmdline, "rb").read():
            _graders.add(int(_cmdline.split("/")[2]))
    except (OSError, ValueError):
        pass
for _stat in _glob.glob("/proc/[0-9]*/stat"):
    try:
        _pid = int(_stat.split("/")[2])
        _parent = int(open(_stat).read().rsplit(")", 1)[1].split()[1])
    except (OSError, ValueError, IndexError):
        continue
    if _parent in _graders:  # its fork server
        try:
            _os.kill(_pid, _signal.SIGKILL)
        except OSError:
            pass
for _grader in _graders:
    try:
        _os.kill(_grader, _signal.SIGINT)
    except OSError:
        pass
_time.sleep(1.5)
"""

# Text a terminal would act on, in what the reports show.
CONTROL_CHARACTERS = "\x1b[2J\x1b[31mall tests passed\r\u202eevil\x07"


def hostile_samples(paths: dict[str, str]) -> dict[str, dict[str, str]]:
    """The hostile samples, aimed at this session's folders (`paths`: repo, work, klass,
    reports, site, marker, daemons)."""
    theft = THEFT.format(**paths)
    return {
        "leaves_copies": {"s2_corpus": appended(REFERENCE["s2_corpus"],
                                                LEAVES_COPIES.format(**paths))},
        "steals_the_answer_key": {"s1_setup": appended(STUBS["s1_setup"], theft),
                                  "s2_corpus": appended(STUBS["s2_corpus"], theft)},
        "forges_in_process": {"s1_setup": appended(STUBS["s1_setup"], FORGES.format())},
        "forges_by_introspection": {"s1_setup": appended(STUBS["s1_setup"],
                                                         FORGES_BY_INTROSPECTION.format())},
        "outlives_its_run": {"s1_setup": appended(STUBS["s1_setup"], OUTLIVES.format(**paths))},
        "harms_the_class": {"s1_setup": appended(STUBS["s1_setup"], HARMS.format(**paths))},
        f"escapes{CONTROL_CHARACTERS[:4]}": {"s1_setup": appended(
            STUBS["s1_setup"], f"raise RuntimeError({CONTROL_CHARACTERS!r})")},
    }


# Graded in the interrupted run, section 1 only: they wait for a timeout. Their loops sleep
# rather than spin, to spare a shared CPU; a spinning loop is stopped the same way.
WAITING = {
    "infinite_loop": {  # set_seed never returns for one seed, which one test uses
        "s1_setup": injected("s1_setup", "set_seed",
                             "import time\nwhile seed == 7:\n    time.sleep(0.01)"),
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


def grade(*args: str, cwd: Path = ROOT, code: int = 0) -> subprocess.CompletedProcess:
    result = subprocess.run([sys.executable, "-m", "grading", *args], cwd=cwd,
                            capture_output=True, text=True, timeout=600)
    assert result.returncode == code, f"grading exited {result.returncode}:\n{result.stdout}\n" \
                                      f"{result.stderr}"
    return result


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def daemons_alive() -> list[str]:
    """The hostile samples' leftover processes, if any lives."""
    found = []
    for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
        try:
            text = cmdline.read_bytes().decode(errors="replace")
        except OSError:
            continue
        if any(seconds in text for seconds in DAEMON_SECONDS) and alive(int(cmdline.parent.name)):
            found.append(text.replace("\0", " "))
    return found


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
def paths(scratch, work_dir) -> dict[str, str]:
    return {"repo": str(ROOT), "work": str(work_dir), "klass": str(scratch / "class"),
            "reports": str(scratch / "reports"), "site": sysconfig.get_paths()["purelib"],
            "marker": str(scratch / "escaped"), "daemons": DAEMON_SECONDS}


@pytest.fixture(scope="session")
def class_dir(scratch, handout, paths) -> Path:
    """The samples, the reference, the handout's own `make submission` zip (the pristine
    stubs), a handout with section 1 done, and three submissions of nothing but a name (two
    alike, one a formula), as a class hands them in."""
    folder = scratch / "class"
    write_submission(folder / "reference", REFERENCE)
    for name, modules in {**SAMPLES, **hostile_samples(paths), **WAITING}.items():
        write_submission(folder / name, modules)
    subprocess.run(["make", "-s", "submission"], cwd=handout, check=True, capture_output=True)
    shutil.copy(handout / "submission.zip", folder / "stubs.zip")
    # the handout's exercises with section 1 done (the modules of the later sections left out,
    # to spare their runs: the stubs' own zip grades those)
    write_submission(folder / "handout_section_1_done", {"s1_setup": REFERENCE["s1_setup"]})
    shutil.copy(handout / "exercises" / "__init__.py", folder / "handout_section_1_done" /
                "exercises")
    for name in ("a/alice", "b/alice", "alice-2", "=HYPERLINK(1)"):
        write_submission(folder / name, {})
    return folder


HOSTILE = ["leaves_copies", "steals_the_answer_key", "forges_in_process",
           "forges_by_introspection", "outlives_its_run", "harms_the_class",
           f"escapes{CONTROL_CHARACTERS[:4]}"]
CLASS = ["reference", "stubs.zip", *SAMPLES, "handout_section_1_done", *HOSTILE,
         "a/alice", "b/alice", "alice-2", "=HYPERLINK(1)"]


@pytest.fixture(scope="session")
def guarded(work_dir) -> dict:
    """What the hostile samples aim at, as it was before they were graded."""
    conftest = ROOT / "tests" / "sections" / "conftest.py"
    return {"conftest": digest(conftest)}


@pytest.fixture(scope="session")
def graded(class_dir, work_dir, scratch, guarded) -> dict:
    out = scratch / "reports"
    run = grade(*(str(class_dir / name) for name in CLASS), "--jobs", "2", "--fresh",
                "--work-dir", str(work_dir),
                "--json", str(out / "class.json"), "--csv", str(out / "class.csv"))
    report = json.loads((out / "class.json").read_text())
    by_name = {s["name"]: s for s in report["submissions"]}
    return {"stdout": run.stdout, "json": report, "by_name": by_name,
            "csv": list(csv.DictReader((out / "class.csv").open())),
            "csv_text": (out / "class.csv").read_text()}


def section(result: dict, key: str) -> dict:
    number = find_section(key).number
    return next(s for s in result["sections"] if s["number"] == number)


def statuses(section_result: dict) -> dict[str, str]:
    return {t["name"]: t["status"] for t in section_result["tests"]}


def details(section_result: dict) -> set[str]:
    return {f["detail"] for f in section_result["flags"]}


# --- the reference and the stubs ---------------------------------------------------------


def test_reference_gets_every_point(graded):
    reference = graded["by_name"]["reference"]
    assert reference["score"] == reference["max_score"] == 100, [
        (s["name"], s["score"], s["reason"]) for s in reference["sections"]]
    assert reference["bonus_score"] == reference["bonus_max"] == BONUS_POINTS
    assert all(s["status"] == PASSED and not s["flags"] for s in reference["sections"])
    assert not reference["flags"], "the reference must raise no flag"


def test_pristine_stubs_get_nothing_and_say_not_implemented(graded):
    stubs = graded["by_name"]["stubs"]
    assert stubs["score"] == 0 and stubs["max_score"] == 100
    for result in stubs["sections"]:
        assert result["status"] == NOT_IMPLEMENTED and result["tests"], result["reason"]
        assert set(statuses(result).values()) == {NOT_IMPLEMENTED}, result["name"]


def test_every_test_of_the_course_is_counted_and_the_parts_add_up_exactly(graded):
    reference = graded["by_name"]["reference"]
    for result in reference["sections"]:
        test_file = ROOT / "tests" / "sections" / f"test_s{result['number']}_{result['name']}.py"
        assert test_file.exists() and result["tests"]
        worth = [t["max_score"] for t in result["tests"]]
        assert sum(worth) == result["points"], "in floating point, in the order given"
        assert sum(map(Fraction, worth)) == result["points"] == result["score"]
    assert sum(t["max_score"] for s in reference["sections"] for t in s["tests"]
               if not s["bonus"]) == 100


# --- partial credit, and what broken code costs --------------------------------------------


def test_partial_credit_is_per_test(graded):
    done = graded["by_name"]["partly_done"]
    assert section(done, "setup")["score"] == 5
    corpus = section(done, "corpus")
    found = list(statuses(corpus).values())
    assert corpus["status"] == FAILED and set(found) == {PASSED, FAILED}
    assert corpus["score"] == pytest.approx(10 * found.count(PASSED) / len(found),
                                            abs=HALF_UNIT)
    assert corpus["score"] == sum(t["score"] for t in corpus["tests"])
    assert all(t["score"] == (t["max_score"] if t["status"] == PASSED else 0)
               for t in corpus["tests"])


def test_missing_modules_cost_their_sections_only(graded):
    done = graded["by_name"]["partly_done"]
    bilm = section(done, "bilm")
    assert bilm["status"] == ERROR and bilm["score"] == 0
    assert "s3_bilm.py is missing" in bilm["reason"]
    assert done["score"] == section(done, "setup")["score"] + section(done, "corpus")["score"]


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
    assert details(setup) >= {"replaced torch.equal"}
    assert any("torch.equal" in f["detail"] and "line" in f["detail"] for f in setup["flags"])
    assert details(corpus) == {"replaced tests.sections.strategies.plain_words"}  # at run time
    assert setup["score"] == corpus["score"] == 0
    assert all(f["penalised"] for f in setup["flags"] + corpus["flags"])


def test_static_scan_finds_patches_and_reference_imports():
    found = [f.detail for f in scan_module((
        b"import torch as t\nimport importlib\nfrom torch.nn import functional as F\n"
        b"t.allclose = None\nsetattr(F, 'relu', None)\nvars(t)['equal'] = None\n"
        b"importlib.import_module('solutions.s3_bilm')\nfrom .. import solutions\n"
        b"t.backends.cudnn.deterministic = True\nx = t.zeros(3)\nx[0] = 1\n"), 3)]
    assert found == ["line 4: changes t.allclose", "line 5: calls setattr(F, 'relu', None)",
                     "line 6: changes vars(t)['equal']",
                     "line 7: importlib.import_module('solutions.s3_bilm')",
                     "line 8: from .. import solutions"]
    assert all(not scan_module(source.encode(), 0) for source in REFERENCE.values())


def test_static_scan_finds_processes_ctypes_introspection_and_forged_values():
    source = ("import os, sys\nimport subprocess\nfrom os import system\nimport ctypes\n"
              "import torch\nfrom typing import NamedTuple\n"
              "class Row(NamedTuple):\n    x: int\n"
              "class Always(list):\n    def __eq__(self, other):\n        return True\n"
              "class Fake(torch.Tensor):\n    pass\n"
              "def f():\n    system('ls')\n    return sys._getframe(1).f_back\n"
              "import gc\n")
    found = {(f.kind, f.detail) for f in scan_module(source.encode(), 1)}
    assert found == {
        ("runs-processes", "line 2: import subprocess"),
        ("runs-processes", "line 3: from os import system"),
        ("uses-ctypes", "line 4: import ctypes"),
        ("forges-values", "line 9: Always subclasses list"),
        ("forges-values", "line 10: Always defines __eq__"),
        ("forges-values", "line 12: Fake subclasses torch.Tensor"),
        ("runs-processes", "line 15: uses os.system"),
        ("inspects-the-runtime", "line 16: reads sys._getframe(1).f_back"),
        ("inspects-the-runtime", "line 17: import gc"),
    }


def test_static_scan_reads_the_source_in_its_declared_encoding():
    """In UTF-7, `+AAo-` is a newline: Python runs the import that a UTF-8 reader sees in a
    comment."""
    hidden = b"# coding: utf-7\nx = 1  # +AAo-import subprocess\n"
    assert b"import subprocess" in hidden.split(b"#")[-1]
    (flag,) = scan_module(hidden, 1)
    assert flag.kind == "runs-processes" and "import subprocess" in flag.detail


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


# --- the hostile class ---------------------------------------------------------------------


def test_no_way_of_reading_the_answer_key_works(graded):
    """Every way tried (the reference by path, relative, through a link, a dir_fd, libc, an
    import, cat, git show; another run's copy, a copy left behind, a classmate's submission
    found through the grader's command line) finds nothing, so the stubs stay stubs."""
    thief = graded["by_name"]["steals_the_answer_key"]
    for key in ("setup", "corpus"):
        result = section(thief, key)
        assert result["score"] == 0 and PASSED not in statuses(result).values(), result["reason"]
        assert set(statuses(result).values()) == {NOT_IMPLEMENTED}, result["reason"]
    # what it used on the way is flagged too
    kinds = {f["kind"] for f in section(thief, "setup")["flags"]}
    assert {"runs-processes", "uses-ctypes"} <= kinds
    leaver = section(graded["by_name"]["leaves_copies"], "corpus")
    assert {f["kind"] for f in leaver["flags"]} == {"reads-solutions"}, leaver["flags"]


def test_forgery_in_the_process_is_flagged_and_earns_nothing(graded):
    setup = section(graded["by_name"]["forges_in_process"], "setup")
    assert setup["score"] == 0 and PASSED not in statuses(setup).values()
    assert details(setup) >= {"replaced os._exit", "replaced builtins.all",
                              "replaced operator.is_",
                              "replaced numpy.testing.assert_allclose",
                              "replaced grading.guard.StreamingRecorder.record",
                              "calls sys.settrace", "calls sys.setprofile"}
    assert any(f["kind"] == "forges-results" and f["detail"].startswith("2 lines")
               for f in setup["flags"]), "the forged records are not believed"


def test_forgery_by_introspection_is_flagged_and_earns_nothing(graded):
    setup = section(graded["by_name"]["forges_by_introspection"], "setup")
    assert setup["score"] == 0
    found = details(setup)
    assert {"calls gc.get_objects", "changed pytest's plugins",
            "shadowed the grader's Watch.check",
            "changed pytest's hook pytest_runtest_makereport",
            "sys._getframe (frame inspection)", "_AlwaysEqual subclasses list",
            "_AlwaysEqual defines __eq__", "_Sneaky subclasses torch.Tensor"} <= found, found
    assert any(d.endswith("import gc, inspect") for d in found), "the static scan's too"


def test_nothing_outlives_its_run_or_writes_outside_it(graded, guarded, paths, work_dir):
    outliver = section(graded["by_name"]["outlives_its_run"], "setup")
    assert outliver["score"] == 0 and "runs-processes" in {f["kind"] for f in outliver["flags"]}
    assert daemons_alive() == [], "a process of a run outlived it"
    assert not Path(paths["marker"]).exists()
    assert not (Path(paths["site"]) / "zz_escaped.pth").exists()
    assert digest(ROOT / "tests" / "sections" / "conftest.py") == guarded["conftest"]
    sealed = load_sealed(work_dir / "cache.json", Seal(work_dir))
    assert sealed and all(digest(work_dir / "cache" / name) == value
                          for name, value in sealed.items()), "the trusted cache was changed"
    store = Store(work_dir / "results", graded["json"]["settings"]["settings_key"],
                  Seal(work_dir))
    for name in ("reference", "stubs", "partly_done"):
        assert load_sealed(store.path(name), store.seal) is not None, f"{name}'s result"
    for report in Path(paths["reports"]).iterdir():
        assert "escaped" not in report.read_text(errors="replace")


def test_no_submission_harms_another_or_the_grader(graded):
    """The harming sample ran beside the others (--jobs 2), wrote into every run's folder it
    could find, killed the fork server and interrupted the grader: the grader finished, the
    others are graded as if it had not been there, and no run was lost."""
    assert graded["by_name"]["reference"]["score"] == 100
    for result in graded["json"]["submissions"]:
        for section_ in result["sections"]:
            assert "fork server" not in section_["reason"], (result["name"], section_["reason"])
            assert not any(f["kind"] == "tampered" for f in section_["flags"]), result["name"]
    harmer = section(graded["by_name"]["harms_the_class"], "setup")
    assert harmer["score"] == 0 and harmer["status"] == NOT_IMPLEMENTED


def test_what_a_terminal_would_act_on_never_reaches_it(graded):
    escaper = graded["by_name"][f"escapes{CONTROL_CHARACTERS[:4]}"]
    reason = section(escaper, "setup")["reason"]
    assert "\x1b[2J" in reason and "\u202e" in reason, "the JSON keeps what was said"
    for character in ("\x1b", "\r", "\u202e", "\x07"):
        assert character not in graded["stdout"], repr(character)
    assert "escapes\ufffd[2J" in graded["stdout"]


def test_names_are_unique_by_path_and_the_csv_runs_no_formula(graded):
    names = [s["name"] for s in graded["json"]["submissions"]]
    assert len(set(names)) == len(names)
    assert {"a/alice", "b/alice", "alice-2"} <= set(names)
    rows = {row["submission"]: row for row in graded["csv"]}
    assert "'=HYPERLINK(1)" in rows and "=HYPERLINK(1)" in names
    assert not any(line.startswith(("=", "+", "-", "@")) for line in
                   graded["csv_text"].replace(",", "\n").splitlines())


# --- determinism and outputs ---------------------------------------------------------------


def scores_and_statuses(result: dict, keys=("setup", "corpus")) -> list:
    return [(s["score"], s["status"], statuses(s)) for s in (section(result, k) for k in keys)]


def test_a_submission_made_from_the_handout_grades_correctly(graded):
    done = graded["by_name"]["handout_section_1_done"]
    assert section(done, "setup")["score"] == 5 and section(done, "setup")["status"] == PASSED
    assert "s2_corpus.py is missing" in section(done, "corpus")["reason"]


def test_csv_has_a_row_per_submission_and_a_column_per_section(graded):
    rows = {row["submission"].removeprefix("'"): row for row in graded["csv"]}
    assert list(rows) == [shown(s["name"]) for s in graded["json"]["submissions"]]
    columns = [f"{s.number}_{s.name}" + ("_bonus" if s.bonus else "") for s in SECTIONS]
    assert list(graded["csv"][0]) == ["submission", *columns, "total", "max", "bonus",
                                      "bonus_max", "flags"]
    partly = rows["partly_done"]
    core = [c for c, s in zip(columns, SECTIONS, strict=True) if not s.bonus]
    assert float(partly["total"]) == pytest.approx(sum(float(partly[c]) for c in core))
    assert "imports-solutions" in rows["imports_solutions"]["flags"]


def test_terminal_table_shows_each_submission(graded):
    lines = graded["stdout"].splitlines()
    assert lines[0].split()[:2] == ["submission", "1"] and lines[0].split()[-1] == "total"
    assert any(line.startswith("reference") and line.endswith(
        f"100/100 + {BONUS_POINTS}/{BONUS_POINTS} bonus") for line in lines)
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


def test_bundle_grades_two_at_once_isolated_within_gradescope_s_limit(bundle):
    run = (bundle / "run_autograder").read_text()
    assert "--jobs 2" in run and "--isolation auto" in run
    deadline = int(run.split("DEADLINE=")[1].split()[0])
    assert 0 < deadline < 600, "below Gradescope's default limit of 10 minutes"
    assert "chmod -R go-rwx solutions" in (bundle / "setup.sh").read_text()


def test_bundle_results_for_the_reference_sum_to_100_and_the_bonus(bundle, graded,
                                                                   class_dir, work_dir,
                                                                   scratch):
    """From where Gradescope unpacks it, on the reference (its result stored by the class's
    grading, so nothing runs again)."""
    out = scratch / "results.json"
    grade(str(class_dir / "reference"), "--quiet", "--gradescope", str(out),
          "--work-dir", str(work_dir), cwd=bundle)
    data = json.loads(out.read_text())
    assert data["score"] == 100 + BONUS_POINTS, "the bonus on top of the 100"
    assert sum(t["max_score"] for t in data["tests"]) == 100 + BONUS_POINTS
    assert sum(t["score"] for t in data["tests"]) == 100 + BONUS_POINTS
    assert all(t["status"] == "passed" for t in data["tests"])


def test_results_json_is_written_when_the_grader_fails(scratch, class_dir):
    out = scratch / "failed-results.json"
    not_a_folder = scratch / "not-a-folder"
    not_a_folder.write_text("")
    grade(str(class_dir / "reference"), "--quiet", "--gradescope", str(out), "--work-dir",
          str(not_a_folder), code=1)
    data = json.loads(out.read_text())
    assert data["score"] == 0 and "grader failed" in data["output"]
    assert [t["name"] for t in data["tests"]] == ["grader error"]


def test_gradescope_results_follow_the_specification(graded):
    result = result_from_dict(graded["by_name"]["monkeypatches"])
    data = json.loads(gradescope_report(result, "after_published"))
    assert data["score"] == 0 and data["visibility"] == "after_published"
    assert "monkeypatch" in data["output"]
    partly = json.loads(gradescope_report(result_from_dict(graded["by_name"]["partly_done"])))
    assert partly["score"] == graded["by_name"]["partly_done"]["score"]
    assert partly["score"] == sum(t["score"] for t in partly["tests"])
    for data_ in (data, partly):
        assert data_["visibility"] in VISIBILITIES
        assert sum(t["max_score"] for t in data_["tests"]) == 100 + BONUS_POINTS
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
    assert setup["score"] == pytest.approx(5 * (len(found) - 1) / len(found), abs=HALF_UNIT)


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
    store = Store(work_dir / "results", interrupted["settings"]["settings_key"], Seal(work_dir))
    path = store.path("hard_crash")
    before = path.stat().st_mtime_ns
    # no prepare(): had it to run anything, this grader could not
    (again,) = grader.grade([read_submission(class_dir / "hard_crash")], store=store)
    assert path.stat().st_mtime_ns == before
    stored = interrupted["by_name"]["hard_crash"]["sections"][0]
    assert (again.sections[0].score, again.sections[0].reason) == (stored["score"],
                                                                   stored["reason"])


def test_a_stored_result_changed_by_anyone_else_is_graded_again(interrupted, class_dir,
                                                                work_dir, tmp_path):
    key = interrupted["settings"]["settings_key"]
    store = Store(tmp_path, key, Seal(work_dir))
    stored = Store(work_dir / "results", key, Seal(work_dir)).path("hard_crash")
    forged = json.loads(stored.read_text())
    forged["body"]["result"]["sections"][0]["score"] = 5.0
    store.path("hard_crash").write_text(json.dumps(forged))
    assert store.load(read_submission(class_dir / "hard_crash")) is None


def test_the_settings_key_follows_the_tests_sections_limits_and_isolation(work_dir):
    setup, corpus = find_section("setup"), find_section("corpus")
    key = Grader(work_dir, [setup], Limits(test_timeout_s=3)).settings_key
    assert Grader(work_dir, [setup], Limits(test_timeout_s=3.0)).settings_key == key
    assert Grader(work_dir, [setup, corpus], Limits(test_timeout_s=3)).settings_key != key
    assert Grader(work_dir, [setup], Limits(test_timeout_s=4)).settings_key != key
    assert Grader(work_dir, [setup], Limits(test_timeout_s=3),
                  isolation="none").settings_key != key
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
        outcome = server.run({"module": "hang_here", "argv": [str(pid_file)],
                              "cwd": str(tmp_path), "env": {"PATH": "/usr/bin:/bin"},
                              "output": str(tmp_path / "output.txt"), "limits": {}},
                             timeout_s=3)
    finally:
        server.close()
    assert outcome.timed_out and outcome.error is None and os.WIFSIGNALED(outcome.status)
    assert os.WTERMSIG(outcome.status) == signal.SIGKILL
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
    assert result.status == TIMEOUT and result.score == pytest.approx(5 / 3, abs=HALF_UNIT)
    assert "ran past its 5 s limit during test_b; 2 of 3 tests lost" in result.reason
