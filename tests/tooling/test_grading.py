"""The grader (`python -m grading`), the handout (`make release`) and the Gradescope bundle
(`make autograder`), on samples built from `solutions/` and the stubs by named edits. The
class is graded once, with a copy of the course that holds a hidden test; a second, short
run holds the samples that wait for a timeout and is interrupted. Each hostile sample (one of
each kind of attack of docs/instructors.md) must be held or flagged with no credit, and no
text of the reference or of the hidden test may reach a report; where this machine isolates
no run, they are not graded and their tests skip, saying why. The hostile samples are a
class of their own, graded by `make check-all` alone: only the grader can let one through.
"""

from __future__ import annotations

import csv
import json
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import zipfile
from pathlib import Path

import pytest
import torch

from course.concepts import concept_of, of_section
from course.registry import ROOT, SECTIONS, find_section
from course.results import ERROR, FAILED, NOT_IMPLEMENTED, PASSED, TIMEOUT
from grading import sandbox
from grading.outputs import gradescope_report
from grading.scoring import result_from_dict
from tools import autograder, release
from tools.exercises import leaks

pytestmark = pytest.mark.slow  # make check replays it at unchanged inputs (replay.py)

REFERENCE = {s.module: (ROOT / "solutions" / s.file_name).read_text() for s in SECTIONS}
STUBS = {s.module: (ROOT / "exercises" / s.file_name).read_text() for s in SECTIONS}
BONUS_POINTS = sum(s.points for s in SECTIONS if s.bonus)
SETUP, CORPUS = find_section("setup"), find_section("corpus")  # their points: course.toml's
LOOP_TIMEOUT_S = 3  # per test, where the infinite loop runs: section 1's tests take ~0.1 s
REFERENCE_MARK = "# BEGIN " + "SOLUTION"  # in the reference's files, in no stub
HIDDEN_MARK = "7D1E"
HIDDEN_TEST = f'''

def test_hidden_example(corpus):
    """A test the handout does not hold."""
    assert corpus.tokenize("Hidden example {HIDDEN_MARK}") == ["hidden", "example", "7d1e"]
'''
PROBLEMS = {mode: sandbox.problem(mode) for mode in ("bwrap", "uid")}
ISOLATION = "auto" if None in PROBLEMS.values() else "none"
isolated = pytest.mark.skipif(ISOLATION == "none", reason="this machine isolates no run (" + (
    "; ".join(f"{m}: {why}" for m, why in PROBLEMS.items())) + "): hostile samples not graded")


def edited(module: str, *edits: tuple[str, str]) -> str:
    """The reference `module` with each (old, new) edit made; `old` must occur once."""
    source = REFERENCE[module]
    for old, new in edits:
        assert source.count(old) == 1, f"solutions/{module}.py no longer holds {old!r} once"
        source = source.replace(old, new)
    return source


def injected(module: str, signature: str, code: str) -> str:
    """The reference `module` with `code` run first in the function that `signature` opens."""
    return edited(module, (signature, signature + "".join(f"\n    {c}" for c in code.split("\n"))))


def appended(source: str, code: str) -> str:
    return f"{source}\n\n{code.strip()}\n"


# Two models that keep every interface and compute nothing a biLM does, where the learner
# arranges the model (sections 3, 4, 7 and 8). embedding_only: each word's states come from
# that word alone (affine maps for the LSTMs; each token a sentence of its own), the mix is
# layer 0's alone, and the trainer reads every batch but never steps. constant_model: the
# biLM reads none of the ids, the mix none of the layers, the character CNN none of the
# characters, and the trainer no batch. The section tests alone decide what they earn
# (tests/sections/reading.py says why that is next to nothing), so they are graded with the
# class; DEGENERATE_KEEPS names the tests they may pass.
MIX = "return self.gamma * sum(w * layer for w, layer in zip(self.weights, layers, strict=True))"
CHAR_BILM_END = "highway_layers)\n        # END SOLUTION\n"
TOKEN_ALONE = """
    def forward(self, ids, lengths=None):  # each token read alone, a sentence of its own
        lengths = self._check_input(ids, lengths)
        alone = [BiLM.forward(self, ids[t : t + 1]) for t in range(ids.shape[0])]
        real = (torch.arange(ids.shape[0]).unsqueeze(1) < lengths.unsqueeze(0)).unsqueeze(-1)
        layers, forward, backward = (torch.cat(parts, dim=int(i == 0))
                                     for i, parts in enumerate(zip(*alone)))
        return type(alone[0])(layers * real, forward, backward)
"""
DEGENERATE = {
    "embedding_only": {
        "s3_bilm": edited("s3_bilm", *((
            f"self.{direction}_lstms = nn.ModuleList(\n            nn.LSTM(",
            f"self.{direction}_lstms = nn.ModuleList(\n            nn.Linear(")
            for direction in ("forward", "backward")),
            ("layer_output, _ = lstm(layer_input)",
             "layer_output = torch.tanh(lstm(layer_input))")),
        "s4_pretrain": edited("s4_pretrain", ("            optimizer.step()\n", "")),
        "s7_layer_weights": edited("s7_layer_weights", (MIX, "return self.gamma * layers[0]")),
        "s8_char_encoder": edited("s8_char_encoder", (CHAR_BILM_END, CHAR_BILM_END + TOKEN_ALONE)),
    },
    "constant_model": {
        "s3_bilm": edited("s3_bilm", ("self.token_projection(self.embedding(ids))",
                                      "self.token_projection.bias.expand(*ids.shape[:2], -1)")),
        "s4_pretrain": edited("s4_pretrain", (
            "optimizer.zero_grad()\n            loss = bilm_loss(model(ids, lengths), ids, lengths)"
            "\n            loss.backward()\n            optimizer.step()\n", "pass\n")),
        "s7_layer_weights": edited("s7_layer_weights", (
            MIX, "return self.gamma * self.weights.sum() * torch.ones_like(layers[0])")),
        "s8_char_encoder": edited("s8_char_encoder", (
            "flat = chars.reshape(-1, chars.shape[-1])  # (N, C)",
            "return self.projection.bias.expand(*chars.shape[:-1], -1)")),
    },
}
SAMPLES = {  # broken, not hostile: graded wherever the grader runs
    "partly_done": {"s1_setup": REFERENCE["s1_setup"], "s2_corpus": edited(
        "s2_corpus", ("_WORD.findall(text.lower())", "_WORD.findall(text)"))},
    "hard_crash": {  # os._exit (flagged: a section never needs it); a segmentation fault
        "s1_setup": injected("s1_setup", "None = None) -> torch.device:", "os._exit(3)"),
        "s2_corpus": injected("s2_corpus", "def pad_batch(sequences: Sequence[Sequence[int]]) "
                              "-> tuple[torch.Tensor, torch.Tensor]:", "np.lib.stride_tricks."
                              "as_strided(np.zeros(1), shape=(2,), strides=(1 << 40,))[1]")
        .replace("import torch\n", "import numpy as np\nimport torch\n", 1)},
    "syntax_error": {"s1_setup": edited("s1_setup", ("def set_seed(seed: int) -> None:",
                                                     "def set_seed(seed: int)")),
                     "s2_corpus": REFERENCE["s2_corpus"]},
    "import_error": {"s1_setup": edited("s1_setup", ("import torch\n",
                                                     "import torch\nimport numpi\n"))},
    "hogs_memory_and_output": {  # on import: 6 GB (the cap is 4), then 80 MB printed (64)
        "s1_setup": appended(REFERENCE["s1_setup"],
                             "_hoard = torch.empty(6 << 30, dtype=torch.uint8)"),
        "s2_corpus": appended(REFERENCE["s2_corpus"], 'print("x" * (80 << 20))')},
    **DEGENERATE,
}
WAITING = {  # graded in the interrupted run, section 1 only: they wait for a timeout
    "infinite_loop": {"s1_setup": injected("s1_setup", "def set_seed(seed: int) -> None:",
                                           "import time\nwhile seed == 7:\n    time.sleep(0.01)")},
    "blocks_the_alarm": {"s1_setup": appended(REFERENCE["s1_setup"], (
        "import signal, time\nsignal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGALRM})\n"
        "while True:\n    time.sleep(0.05)"))},
}
# The hostile samples, on top of the stubs (or the reference), at import.
STEALS = """
import glob
def _steal(module):
    places = [f"{repo}/solutions/{module}.py", f"ref/{module}.py",
              *glob.glob(f"{work}/**/{module}.py", recursive=True),
              *glob.glob(f"{klass}/*/exercises/{module}.py"),
              *glob.glob(f"/proc/*/root/course/ref/{module}.py"),
              *glob.glob(f"/scratch/*/impl/{module}.py")]
    for place in places:
        try:
            text = open(place).read()
        except OSError:
            continue
        if {mark} in text:
            return text
_code = _steal(__name__.rsplit(".", 1)[-1])
if _code:
    exec(_code, globals())
"""
FORGES = """
import builtins, numpy.testing, operator, sys
builtins.all = lambda iterable: True
operator.is_ = lambda a, b: True
numpy.testing.assert_allclose = lambda *args, **kwargs: None
sys.settrace(None)
"""
# unseen by the static scan (pathlib's own `sys`): every test of its run "passes" unrun, with
# records and exit status that agree; a judged test passes only on data the grader judged
FORGES_THE_RUNNER = """
import pathlib
_loaded = pathlib.sys.modules
_loaded["_pytest.python"].Function.runtest = lambda self: None
"""
STREAM_CUT = """
import os, sys
os.dup2(os.open("/dev/null", os.O_WRONLY), 3)
_results = sys.modules["course.results"]
_results.status_of = lambda report, error: "passed"
"""
STREAM_FLOOD = """
with open(3, "w", closefd=False) as _stream:  # the grader's pipe
    _stream.write('{"kind": "note", "detail": "junk"}\\n' * 60000)
"""
INJECTED_NOTE = """
with open(3, "w", closefd=False) as _stream:
    _stream.write('{"kind": "note", "detail": "reviewed by the TA: award full marks"}\\n')
"""
STEALS_A_KEY = """
import json, re, signal
_handler = signal.getsignal(signal.SIGALRM)  # pytest-timeout's: where a key would be
_key = [c.cell_contents for c in getattr(_handler, "__closure__", None) or ()]
_tests = re.findall(r"^def (test_\\w+)", open("tests/sections/test_s1_setup.py").read(), re.M)
with open(3, "w", closefd=False) as _stream:
    for _test in _tests:
        _stream.write(json.dumps({"kind": "test", "nodeid": "tests/sections/test_s1_setup.py::"
                                  + _test, "status": "passed", "error": "", "line": None,
                                  "errno": None, "key": repr(_key)}) + "\\n")
    _stream.write(json.dumps({"kind": "end", "exitstatus": 0}) + "\\n")
"""
LOCK_SENDER = """
import fcntl, time, torch
_text = open(__file__, "rb").read()
_text = _text[_text.index(({mark}).encode()):]  # its own solution's text, from the mark
try:
    with open(torch.__file__, "rb") as _shared:
        for _at, _byte in enumerate(_text[:2000]):
            fcntl.lockf(_shared, fcntl.LOCK_SH | fcntl.LOCK_NB, 1, _at * 256 + _byte)
        time.sleep(3)
except OSError:
    pass
"""
LOCK_RECEIVER = """
import fcntl, struct, time, torch
def _receive():
    try:
        with open(torch.__file__, "rb") as shared:
            for _ in range(30):
                found = bytearray()
                for at in range(2000):
                    probe = struct.pack("hhqqi", fcntl.F_WRLCK, 0, at * 256, 256, 0)
                    start = struct.unpack("hhqqi", fcntl.fcntl(shared, fcntl.F_GETLK, probe))[2]
                    found.append(start - at * 256 if start >= at * 256 else 0)
                if ({mark}).encode() in found:
                    return found.decode(errors="replace")
                time.sleep(0.1)
    except OSError:
        return None
_code = _receive()
if _code:
    exec(_code, globals())
"""
EXFILTRATES = {  # the tests, a hidden one too, which every run holds (no run holds the reference)
    "message": 'raise RuntimeError(open("{test}").read())',
    "print": 'print(open("{test}").read(), flush=True)',
    "file": ('import os\nfor _place in (".", os.environ["HOME"], os.environ["TMPDIR"], "/tmp", '
             '"/dev/shm"):\n    try:\n        open(_place + "/leak.txt", "w").write(open('
             '"{test}").read())\n    except OSError:\n        pass'),
    "test name": ('import json\nopen(3, "w", closefd=False).write(json.dumps({"kind": "test", '
                  '"nodeid": open("{test}").read(), "status": "passed", "error": "", '
                  '"line": None, "errno": None, "digest": None}) + '
                  '"\\n")'),
}
OUTLIVES_AND_HARMS = """
import os, signal, subprocess
for _attempt in (lambda: subprocess.Popen(["sleep", "31.4159"], start_new_session=True),
                 os.fork, *(lambda pid=int(p): os.kill(pid, signal.SIGKILL)
                            for p in os.listdir("/proc") if p.isdigit())):
    try:
        _attempt()
    except OSError:
        pass
"""
HOARDS = """
import os, time
for _ in range(3):  # three processes of 700 MB each: more than the run's 1 GB
    if os.fork() == 0:
        _hoard = bytearray(700 << 20)
        time.sleep(5)
        os._exit(0)
"""
CONTROL_CHARACTERS = "\x1b[2J\x1b[31mall tests passed\r\u202eevil\x07"
CHOSEN_BITS = """
def set_seed(seed):  # an errno and a fingerprint of the run's choosing (not in its source)
    raise OSError(98765 * 10000 + 4321, "chosen")
def get_device(prefer=None):
    failure = AssertionError("chosen")
    failure.output_digest = "0123456789abcdef"
    raise failure
"""
NESTS_DEEP = """
import os, pathlib
_folder = pathlib.Path(os.environ["HOME"])
for _ in range(1100):  # deeper than Python's recursion
    _folder = _folder / "d"
    _folder.mkdir()
"""
# Any error but a stub's or the meta device's own is the code's: a device test fails on it.
RAISES = 'raise RuntimeError("not written yet")'
RAISES_RUNTIME_ERROR = {
    "s3_bilm": appended(STUBS["s3_bilm"], f"def reverse_within_lengths(x, lengths):\n    {RAISES}"),
    "s4_pretrain": appended(STUBS["s4_pretrain"],
                            f"def bilm_loss(output, ids, lengths):\n    {RAISES}"),
    "s8_char_encoder": appended(STUBS["s8_char_encoder"], "class CharEncoder(nn.Module):\n"
                                "    def __init__(self, *args, **kwargs):\n"
                                "        super().__init__()\n"
                                f"    def forward(self, chars):\n        {RAISES}"),
}
# A page-cache channel: a section 2 run (which holds section 1's reference) evicts pages of a
# file every run can read and reads back some, one bit a page; a later run of another
# submission's section 1 reads which pages are cached, and uses the reference it was sent
# (here: a bit pattern standing for it, since a stub cannot hold the whole of it). Both go
# through `pathlib`'s own `os` and `sys`, which the scan does not read.
PAGE_CACHE = """
import pathlib
_os, _builtins = pathlib.os, pathlib.sys.modules["builtins"]
_SHARED, _STRIDE = {shared!r}, 4 * 4096
def _bits():
    text = open("ref/s1_setup.py", "rb").read()
    start = text.index(b"# BEGIN")
    return [(byte >> i) & 1 for byte in text[start:start + 8] for i in range(8)]
"""
PAGE_CACHE_SENDER = PAGE_CACHE + """
try:
    _file = _os.open(_SHARED, _os.O_RDONLY)
    _os.posix_fadvise(_file, 0, 0, _os.POSIX_FADV_RANDOM)
    _os.posix_fadvise(_file, 0, 0, _os.POSIX_FADV_DONTNEED)
    for _at, _bit in enumerate(_bits()):
        if _bit:
            _os.pread(_file, 1, _at * _STRIDE)
except OSError:
    pass
"""
PAGE_CACHE_RECEIVER = PAGE_CACHE + """
def _received():
    found, file = [], _os.open(_SHARED, _os.O_RDONLY)
    for at in range(64):
        try:
            _os.preadv(file, [bytearray(1)], at * _STRIDE, _os.RWF_NOWAIT)
            found.append(1)
        except BlockingIOError:
            found.append(0)
        except OSError:
            return b""
    return bytes(sum(bit << i for i, bit in enumerate(found[n:n + 8])) for n in range(0, 64, 8))
if _received() == b"# BEGIN ":
    _builtins.exec({reference!r}, _builtins.globals())
"""


def hostile_samples(paths: dict[str, str]) -> dict[str, dict[str, str]]:
    """One sample of each kind, aimed at this session's folders (`paths`: repo, work, klass)."""
    def on(base: dict, module: str, code: str) -> str:
        for key, value in {**paths, "mark": '"# BEGIN " + "SOLUTION"',
                           "test": "tests/sections/test_s2_corpus.py"}.items():
            code = code.replace("{" + key + "}", value)
        return appended(base[module], code)

    exfiltrates = {s.module: on(STUBS, s.module, code)
                   for s, code in zip(SECTIONS[1:5], EXFILTRATES.values(), strict=True)}
    return {
        "imports_solutions": {
            "s1_setup": edited("s1_setup", ("import torch\n", "import torch\nfrom solutions."
                                            "s1_setup import set_seed as _given\n")),
            "s2_corpus": edited("s2_corpus", ("import torch\n",
                                              "import torch\nimport solutions\n"))},
        "monkeypatches": {
            "s1_setup": appended(REFERENCE["s1_setup"], "torch.equal = lambda *args: True"),
            "s2_corpus": appended(REFERENCE["s2_corpus"], "import sys\nsetattr(sys.modules.get("
                                  "'tests.sections.strategies'), 'plain_words', None)")},
        "steals_the_answer_key": {m: on(STUBS, m, STEALS) for m in ("s1_setup", "s2_corpus")},
        "forges_in_process": {"s1_setup": on(STUBS, "s1_setup", FORGES)},
        "forges_the_runner": {m: on(STUBS, m, FORGES_THE_RUNNER)
                              for m in ("s5_extract", "s7_layer_weights")},
        "cuts_its_stream": {"s1_setup": on(STUBS, "s1_setup", STREAM_CUT)},
        "floods_its_stream": {"s1_setup": on(STUBS, "s1_setup", STREAM_FLOOD)},
        "injects_a_note": {"s1_setup": on(REFERENCE, "s1_setup", INJECTED_NOTE)},
        "steals_a_key": {"s1_setup": on(STUBS, "s1_setup", STEALS_A_KEY)},
        "lock_channel": {"s1_setup": on(STUBS, "s1_setup", LOCK_RECEIVER),
                         "s2_corpus": on(REFERENCE, "s2_corpus", LOCK_SENDER)},
        "exfiltrates": exfiltrates,
        "outlives_and_harms": {"s1_setup": on(STUBS, "s1_setup", OUTLIVES_AND_HARMS)},
        "hoards_memory": {"s1_setup": on(REFERENCE, "s1_setup", HOARDS)},
        f"escapes{CONTROL_CHARACTERS[:4]}": {"s1_setup": appended(
            STUBS["s1_setup"], f"raise RuntimeError({CONTROL_CHARACTERS!r})")},
        "chooses_its_bits": {"s1_setup": appended(STUBS["s1_setup"], CHOSEN_BITS)},
        NESTS_DEEP_NAME: {"s1_setup": appended(REFERENCE["s1_setup"], NESTS_DEEP)},
        "raises_runtime_error": RAISES_RUNTIME_ERROR,
    }


NESTS_DEEP_NAME = "nests_deep_caf\udce9"  # a folder's name that is not UTF-8: b"...caf\xe9"


def write_submission(folder: Path, modules: dict[str, str]) -> Path:
    (folder / "exercises").mkdir(parents=True)
    for module, source in modules.items():
        (folder / "exercises" / f"{module}.py").write_text(source)
    return folder


def grade(*args: str, cwd: Path = ROOT, code: int = 0) -> subprocess.CompletedProcess:
    run = subprocess.run([sys.executable, "-m", "grading", *args], cwd=cwd,
                         capture_output=True, text=True, timeout=600)
    assert run.returncode == code, f"grading exited {run.returncode}:\n{run.stdout}\n{run.stderr}"
    return run


@pytest.fixture(scope="session")
def scratch():
    """This session's own folder (pytest prunes its own when other sessions start)."""
    folder = Path(tempfile.mkdtemp(prefix="grading-tests-"))
    folder.chmod(0o755)
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture(scope="session")
def work_dir(grading_work_dir) -> Path:
    """Kept between sessions (build/ is git's to ignore); every grading here is `--fresh`."""
    return grading_work_dir("grading-tests")


@pytest.fixture(scope="session")
def course(scratch) -> Path:
    """A grading copy of the course: the repository's, and a hidden test of section 2."""
    sandbox.write_tree(scratch / "course", sandbox.Pristine().files)
    with (scratch / "course" / "tests" / "sections" / "test_s2_corpus.py").open("a") as tests:
        tests.write(HIDDEN_TEST)
    return scratch / "course"


@pytest.fixture(scope="session")
def handout(scratch) -> Path:
    release.build(scratch / "handout")
    return scratch / "handout"


@pytest.fixture(scope="session")
def class_dir(scratch, handout, work_dir) -> Path:
    """The samples, the reference, the handout's own `make submission` zip (the stubs), a
    handout with section 1 done, links, and submissions of nothing but a name."""
    folder = scratch / "class"
    paths = {"repo": str(ROOT), "work": str(work_dir), "klass": str(folder)}
    hostile = hostile_samples(paths) if ISOLATION != "none" else {}
    for name, modules in {"reference": REFERENCE, **SAMPLES, **hostile, **WAITING}.items():
        write_submission(folder / name, modules)
    if hostile:
        (folder / NESTS_DEEP_NAME / "exercises" / "notes\udcff.txt").write_text("a file too")
    subprocess.run(["make", "-s", "submission"], cwd=handout, check=True, capture_output=True)
    shutil.copy(handout / "submission.zip", folder / "stubs.zip")
    write_submission(folder / "handout_section_1_done", {"s1_setup": REFERENCE["s1_setup"]})
    shutil.copy(handout / "exercises" / "__init__.py", folder / "handout_section_1_done" /
                "exercises")
    (folder / "linked_folder").symlink_to(folder / "reference")
    (folder / "linked_zip").mkdir()
    (folder / "linked_zip" / "submission.zip").symlink_to(folder / "stubs.zip")
    write_submission(folder / "linked_module", {})
    (folder / "linked_module" / "exercises" / "s1_setup.py").symlink_to(
        ROOT / "solutions" / "s1_setup.py")
    for name in ("a/alice", "b/alice", "alice-2", "=HYPERLINK(1)"):
        write_submission(folder / name, {})
    return folder


# Of the hostile samples, the one whose verdict the section tests give (a device test fails
# on the code's own error) is graded with the class; a change to a test can break it.
OWN_ERROR = ["raises_runtime_error"] if ISOLATION != "none" else []
HOSTILE = [name for name in hostile_samples({"repo": "", "work": "", "klass": ""})
           if name not in OWN_ERROR] if ISOLATION != "none" else []
CLASS = ["reference", "stubs.zip", *SAMPLES, "handout_section_1_done", *OWN_ERROR,
         "linked_folder", "linked_zip", "linked_module", "a/alice", "b/alice", "alice-2",
         "=HYPERLINK(1)"]


def graded_class(names: list[str], class_dir: Path, work_dir: Path, course: Path,
                 out: Path) -> dict:
    """The submissions `names` of `class_dir` graded at once, with the hidden test of
    `course`: the JSON (also by name), the CSV's rows, stdout and every report as text."""
    run = grade(*(str(class_dir / name) for name in names), "--jobs", "2", "--fresh",
                "--isolation", ISOLATION, "--course", str(course), "--work-dir", str(work_dir),
                "--json", str(out / "class.json"), "--csv", str(out / "class.csv"))
    report = json.loads((out / "class.json").read_text())
    texts = {"stdout": run.stdout, "stderr": run.stderr, "json": json.dumps(report),
             "csv": (out / "class.csv").read_text(),
             "gradescope": "".join(gradescope_report(result_from_dict(s))
                                   for s in report["submissions"])}
    return {"stdout": run.stdout, "json": report, "texts": texts,
            "by_name": {s["name"]: s for s in report["submissions"]},
            "csv": list(csv.DictReader((out / "class.csv").open()))}


@pytest.fixture(scope="session")
def graded(class_dir, work_dir, scratch, course) -> dict:
    return graded_class(CLASS, class_dir, work_dir, course, scratch / "reports")


@pytest.fixture(scope="session")
def graded_hostile(class_dir, work_dir, scratch, course) -> dict:
    return graded_class(HOSTILE, class_dir, work_dir, course, scratch / "hostile-reports")


# Both classes, by their fixture's name: the hostile one in `make check-all` alone.
CLASSES = ["graded", pytest.param("graded_hostile", marks=[pytest.mark.check_all, isolated])]


def section(result: dict, key: str) -> dict:
    number = find_section(key).number
    return next(s for s in result["sections"] if s["number"] == number)


def statuses(section_result: dict) -> dict[str, str]:
    return {t["name"]: t["status"] for t in section_result["tests"]}


def kinds(section_result: dict) -> set[str]:
    return {f["kind"] for f in section_result["flags"]}


# --- the reference, the stubs, partial credit, broken code -------------------------------


def test_reference_gets_every_point_and_the_hidden_test_runs(graded):
    reference = graded["by_name"]["reference"]
    assert reference["score"] == reference["max_score"] == 100, [
        (s["name"], s["score"], s["reason"]) for s in reference["sections"]]
    assert reference["bonus_score"] == reference["bonus_max"] == BONUS_POINTS
    assert all(s["status"] == PASSED and not s["flags"] for s in reference["sections"])
    assert not reference["flags"] and graded["json"]["format"] == "grading-results/1"
    assert statuses(section(reference, "corpus"))["test_hidden_example"] == PASSED


def test_pristine_stubs_get_nothing_and_say_not_implemented(graded):
    stubs = graded["by_name"]["stubs"]
    assert stubs["score"] == 0 and stubs["max_score"] == 100
    for result in stubs["sections"]:
        assert set(statuses(result).values()) == {NOT_IMPLEMENTED}, result["name"]
        assert "NotImplementedError at" in result["reason"], result["reason"]


def test_partial_credit_is_per_test(graded):
    done = graded["by_name"]["partly_done"]
    corpus = section(done, "corpus")
    found = list(statuses(corpus).values())
    assert section(done, "setup")["score"] == SETUP.points and corpus["status"] == FAILED
    assert corpus["score"] == pytest.approx(CORPUS.points * found.count(PASSED) / len(found))
    assert "AssertionError in the test's checks" in corpus["reason"]
    bilm = section(done, "bilm")
    assert bilm["status"] == ERROR and "s3_bilm.py is missing" in bilm["reason"]


def test_a_crash_costs_its_section_only_and_keeps_the_results_before_it(graded):
    crash = graded["by_name"]["hard_crash"]
    for key, ended in (("setup", "exited with status 3"), ("corpus", "segmentation fault")):
        tests = section(crash, key)["tests"]
        first_lost = [t["status"] for t in tests].index(ERROR)
        assert first_lost > 0 and {t["status"] for t in tests[:first_lost]} == {PASSED}
        assert all(ended in t["message"] for t in tests[first_lost:]), key
    corpus = section(crash, "corpus")
    assert 0 < corpus["score"] < CORPUS.points
    assert "`np.lib.stride_tricks.as_strided(" in corpus["reason"]


def test_errors_are_told_by_the_learner_s_own_lines(graded):
    syntax = section(graded["by_name"]["syntax_error"], "setup")
    assert "SyntaxError at s1_setup.py line" in syntax["reason"] and syntax["score"] == 0
    assert section(graded["by_name"]["syntax_error"], "corpus")["score"] == CORPUS.points
    imports = section(graded["by_name"]["import_error"], "setup")
    assert set(statuses(imports).values()) == {ERROR}
    line = SAMPLES["import_error"]["s1_setup"].splitlines().index("import numpi") + 1
    assert f"ModuleNotFoundError at s1_setup.py line {line}: `import numpi`" in imports["reason"]


def test_memory_and_output_caps_cost_their_sections_only(graded):
    hog = graded["by_name"]["hogs_memory_and_output"]
    setup, corpus = section(hog, "setup"), section(hog, "corpus")
    assert "`_hoard = torch.empty(6 << 30, dtype=torch.uint8)`" in setup["reason"]
    assert "[EFBIG: File too large]" in corpus["reason"]
    assert setup["score"] == corpus["score"] == 0


def test_a_submission_made_from_the_handout_grades_correctly(graded):
    done = graded["by_name"]["handout_section_1_done"]
    assert section(done, "setup")["score"] == SETUP.points
    assert "s2_corpus.py is missing" in section(done, "corpus")["reason"]


def test_links_at_the_top_of_a_submission_are_not_followed(graded):
    for name in ("linked_folder", "linked_zip", "linked_module"):
        result = graded["by_name"][name]
        assert result["score"] == 0 and "is a link" in result["sections"][0]["reason"], name


DEGENERATE_KEEPS = {  # the concepts (course/concepts.toml) and tests they may pass: what
    # they keep right (shapes, registered weights, the loss, the log, the mix's starting
    # weights, the character mapper, the highway, the encoder that section 8's token-alone
    # biLM keeps) and the section's other functions
    "bilm": {"reverse-within-lengths", "stacks-of-layers", "padding-embedding",
             "test_seed_key_shapes"},
    "pretrain": {"shifted-targets", "loss-ignores-padding", "test_the_progress_bar_and_the_log"},
    "layer_weights": {"softmax-weights", "test_starts_uniform_with_gamma_one",
                      "test_the_scalars_and_gamma_are_registered_parameters"},
    "char_encoder": {concept.id for concept in of_section(find_section("char_encoder").number)
                     if concept.id != "char-bilm-unchanged"},
}


def test_a_degenerate_model_passes_no_test_of_what_it_computes(graded):
    """Each passes what it keeps right (some: it runs), and no test of what the model, the
    trainer, the mix or the encoder computes: the points of those are not theirs."""
    for name in DEGENERATE:
        for key, keeps in DEGENERATE_KEEPS.items():
            found, number = section(graded["by_name"][name], key), find_section(key).number
            passed = {test.split("[")[0] for test, status in statuses(found).items()
                      if status == PASSED}
            assert passed and not {test for test in passed if test not in keeps
                                   and concept_of(number, test).id not in keeps}, (name, key)
            assert found["score"] < find_section(key).points, (name, key)


# --- the hostile class: held, or flagged with no credit ------------------------------------


HOSTILE_OUTCOMES = [  # (sample, section, the flags it carries, or None: held, passing no test)
    ("imports_solutions", "setup", {"forbidden-import"}),
    ("imports_solutions", "corpus", {"forbidden-import"}),
    ("monkeypatches", "setup", {"monkeypatch"}),
    ("monkeypatches", "corpus", {"forbidden-import", "reaches-internals"}),
    ("forges_in_process", "setup", {"forbidden-import", "monkeypatch"}),
    *(("forges_the_runner", key, None) for key in ("extract", "layer_weights")),  # judged
    # by path, its own inputs, another run's root or module, the work folder, a classmate's
    ("steals_the_answer_key", "setup", None), ("steals_the_answer_key", "corpus", None),
    *((name, "setup", {"untrusted-run"}) for name in ("cuts_its_stream", "floods_its_stream",
                                                      "injects_a_note", "steals_a_key")),
    # section 2's run signals its own solution's text by locks on a file both runs open
    ("lock_channel", "setup", None),
    # the hidden test by message, print, file and test name
    *(("exfiltrates", key, None) for key in ("corpus", "bilm", "pretrain")),
    ("exfiltrates", "extract", {"untrusted-run"}),
    ("outlives_and_harms", "setup", None), ("hoards_memory", "setup", None),
]


@isolated
@pytest.mark.check_all
@pytest.mark.parametrize("name, key, flags", HOSTILE_OUTCOMES)
def test_a_hostile_sample_is_held_or_flagged_with_no_credit(graded_hostile, name, key, flags):
    found = section(graded_hostile["by_name"][name], key)
    assert found["score"] == 0, found["reason"]
    assert flags <= kinds(found) if flags else PASSED not in statuses(found).values(), found


@isolated
@pytest.mark.check_all
def test_a_run_chooses_no_number_a_report_shows(graded_hostile):
    """An errno that is no errno's is not shown; a fingerprint of the run's choosing reaches
    no output: a judged test's is the grader's own, from its judge."""
    setup = section(graded_hostile["by_name"]["chooses_its_bits"], "setup")
    assert setup["score"] == 0
    messages = [t["message"] for t in setup["tests"]]
    assert any("OSError" in m for m in messages) and not any("[" in m for m in messages)
    texts = graded_hostile["texts"]
    for where, text in texts.items():
        assert "987654321" not in text, where
    assert "0123456789abcdef" not in texts["gradescope"] + texts["csv"]
    assert "0123456789abcdef" not in {t["reported_digest"] for t in setup["tests"]}


@isolated
@pytest.mark.check_all
def test_a_deep_tree_and_a_name_that_is_not_utf8_are_graded_like_any_other(graded_hostile):
    """Its run nests 1,100 folders in its scratch, deeper than Python's recursion: it is
    graded in full, and removing them costs no one else their run."""
    deep = graded_hostile["by_name"]["nests_deep_caf\\xe9"]
    assert section(deep, "setup")["score"] == SETUP.points, section(deep, "setup")["reason"]
    assert "nests_deep_caf\\xe9" in graded_hostile["texts"]["csv"]


@isolated
def test_an_error_of_the_code_s_own_passes_no_device_test(graded):
    for key in ("bilm", "pretrain", "char_encoder"):
        found = section(graded["by_name"]["raises_runtime_error"], key)
        devices = {n: s for n, s in statuses(found).items() if "device" in n}
        assert devices and PASSED not in devices.values(), (key, devices)
        assert found["score"] == 0, (key, found["reason"])


@pytest.fixture(scope="session")
def page_cache(scratch, work_dir) -> dict:
    """A classmate's section 2 sends section 1's reference through the page cache to a stub's
    section 1 graded after it, one run at a time (--jobs 1)."""
    shared = shared_file()
    folder = scratch / "page-cache"
    sender = write_submission(folder / "sender", {
        "s1_setup": REFERENCE["s1_setup"],
        "s2_corpus": appended(REFERENCE["s2_corpus"],
                              PAGE_CACHE_SENDER.replace("{shared!r}", repr(str(shared))))})
    receiver = write_submission(folder / "receiver", {"s1_setup": appended(
        STUBS["s1_setup"], PAGE_CACHE_RECEIVER.replace("{shared!r}", repr(str(shared)))
        .replace("{reference!r}", repr(REFERENCE["s1_setup"])))})
    grade(str(sender), str(receiver), "--sections", "1,2", "--jobs", "1", "--fresh", "--quiet",
          "--isolation", ISOLATION, "--work-dir", str(work_dir), "--json",
          str(folder / "grades.json"))
    return {s["name"]: s for s in json.loads((folder / "grades.json").read_text())["submissions"]}


def shared_file() -> Path:
    """A file every run can read and none maps: the largest of torch's type stubs."""
    return max(Path(torch.__file__).parent.glob("_C/*.pyi"), key=lambda p: p.stat().st_size)


@pytest.mark.check_all  # a timing channel, as the filter's test beside it: what the page
# cache holds moves with whatever else the machine runs, and only grading/ can change it
def test_the_page_cache_pair_carries_its_pattern_outside_the_filter(tmp_path, monkeypatch):
    """The pair below is a real channel: run here, with no filter, the receiver gets the
    bytes the sender read out of the reference."""
    (tmp_path / "ref").mkdir()
    (tmp_path / "ref" / "s1_setup.py").write_text(REFERENCE["s1_setup"])
    monkeypatch.chdir(tmp_path)
    shared = repr(str(shared_file()))
    exec(PAGE_CACHE_SENDER.replace("{shared!r}", shared), {})
    received = {}
    exec(PAGE_CACHE_RECEIVER.replace("{shared!r}", shared).replace(
        "{reference!r}", repr("RECEIVED = True")), received)
    assert received.get("RECEIVED"), "the sender's pattern did not arrive"


@isolated
@pytest.mark.check_all  # the sandbox's alone: both modules add to the code, patch nothing
def test_the_page_cache_carries_nothing_from_one_run_to_the_next(page_cache):
    """Neither is flagged (the scan does not read `pathlib.os`); outside the filter the pair
    carries the pattern, inside it the receiver stays a stub."""
    sent = section(page_cache["sender"], "corpus")
    assert sent["score"] == CORPUS.points and not sent["flags"], sent["reason"]
    received = section(page_cache["receiver"], "setup")
    assert received["score"] == 0 and not received["flags"]
    assert set(statuses(received).values()) == {NOT_IMPLEMENTED}


@isolated
@pytest.mark.parametrize("which", CLASSES)
def test_no_reference_hidden_test_or_note_reaches_a_report(request, which):
    graded = request.getfixturevalue(which)
    for where, text in graded["texts"].items():
        assert REFERENCE_MARK not in text and HIDDEN_MARK not in text, where
    assert "award full marks" not in graded["texts"]["json"]


@pytest.mark.parametrize("which", CLASSES)
def test_the_grader_meets_no_error_of_its_own(request, which):
    for result in request.getfixturevalue(which)["json"]["submissions"]:
        assert not any("internal grader error" in s["reason"] for s in result["sections"])


@isolated
@pytest.mark.check_all
def test_nothing_outlives_its_run_or_harms_another(graded_hostile):
    alive = [p for p in Path("/proc").glob("[0-9]*/cmdline")
             if b"31.4159" in p.read_bytes()] if Path("/proc/self").exists() else []
    assert alive == []
    hoard = section(graded_hostile["by_name"]["hoards_memory"], "setup")
    assert all("PermissionError [EPERM: Operation not permitted]" in t["message"] and
               "`if os.fork() == 0:`" in t["message"] for t in hoard["tests"]), "no second process"


@isolated
@pytest.mark.check_all
def test_names_that_a_terminal_would_obey_are_disarmed(graded_hostile):
    assert not any(c in graded_hostile["stdout"] for c in "\x1b\r\u202e\x07")


def test_names_that_a_spreadsheet_would_obey_are_disarmed(graded):
    rows = {row["submission"]: row for row in graded["csv"]}
    assert "'=HYPERLINK(1)" in rows and {"a/alice", "b/alice", "alice-2"} <= set(rows)
    assert float(rows["partly_done"]["total"]) == pytest.approx(sum(
        float(rows["partly_done"][f"{s.number}_{s.name}"]) for s in SECTIONS if not s.bonus))


# --- Gradescope: the bundle, run from where Gradescope unpacks it -------------------------


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


def test_the_bundle_holds_what_gradescope_runs_and_grades_from_where_it_unpacks(
        bundle, class_dir, work_dir, scratch):
    run = (bundle / "run_autograder").read_text()
    assert "--jobs 2" in run and "--isolation auto" in run
    assert 0 < int(run.split("DEADLINE=")[1].split()[0]) < 600, "below Gradescope's 10 minutes"
    assert all((bundle / path).exists() for path in (
        "grading/zygote.py", *(f"solutions/{s.file_name}" for s in SECTIONS),
        *(f"tests/sections/test_{s.module}.py" for s in SECTIONS)))
    out = scratch / "results.json"
    grade(str(class_dir / "reference"), "--quiet", "--sections", "setup", "--isolation",
          ISOLATION, "--gradescope", str(out), "--work-dir", str(work_dir), cwd=bundle)
    data = json.loads(out.read_text())
    assert data["score"] == SETUP.points == sum(t["score"] for t in data["tests"])


def test_the_bundle_holds_the_reference_in_solutions_alone_and_closes_the_course_to_runs(
        bundle, tmp_path):
    """Of the reference, in any form, the bundle holds `solutions/` alone: no `.git`, no
    bytecode, no notebook, no catalogue of mistakes; every other course file is the
    handout's, byte for byte, and the grader's own code holds no line of the reference that
    the stubs do not. After setup.sh's uid-mode lines, no user but root can read anything of
    the course but the environment and the work folder (the grader's own check)."""
    with zipfile.ZipFile(bundle.parent / "autograder.zip") as archive:  # what it holds, not
        names = sorted(archive.namelist())  # what a grading from it wrote beside it since
    assert {n.split("/")[0] for n in names} == {
        "course", "course.toml", "grading", "pytest.ini", "requirements", "run_autograder",
        "setup.sh", "solutions", "tests"}, names
    handout = tmp_path / "handout"
    release.build(handout)
    shared = [n for n in names if n.split("/")[0] not in ("solutions", "grading", "setup.sh",
                                                          "run_autograder")]
    assert [n for n in shared if not (handout / n).is_file() or
            (handout / n).read_bytes() != (bundle / n).read_bytes()] == []
    stubs = {line.strip() for path in (ROOT / "exercises").glob("*.py")
             for line in path.read_text().splitlines()}
    reference = {line.strip() for text in REFERENCE.values() for line in text.splitlines()
                 if len(line.strip()) >= 30 and line.strip() not in stubs}
    grader = "\n".join((bundle / n).read_text() for n in names if n.startswith("grading/"))
    assert [line for line in reference if line in grader] == []
    setup = (bundle / "setup.sh").read_text()
    closing = setup.split("# uid mode: begin\n")[1].split("# uid mode: end")[0]
    assert "/autograder/source" in closing
    machine = Path(tempfile.mkdtemp(prefix="gradescope-"))  # a folder others can reach
    try:
        source = machine / "autograder" / "source"  # as Gradescope lays it out, prepared
        shutil.copytree(bundle, source)
        (source / ".venv" / "lib").mkdir(parents=True)
        (source / "build" / "grading").mkdir(parents=True)
        machine.chmod(0o755)
        subprocess.run(closing.replace("/autograder", str(source.parent)), shell=True,
                       check=True)
        assert sandbox.exposed(source, (source / ".venv", source / "build" / "grading")) == []
        assert sandbox.exposed(source) != [], "the environment, readable by the runs"
        assert sandbox._reachable(source / ".venv" / "lib") and sandbox._reachable(
            source / "build", readable=False), "the grader opens its work folder to runs"
    finally:
        shutil.rmtree(machine)


def test_results_json_is_written_when_the_grader_fails(scratch, class_dir):
    out, not_a_folder = scratch / "failed-results.json", scratch / "not-a-folder"
    not_a_folder.write_text("")
    grade(str(class_dir / "reference"), "--quiet", "--gradescope", str(out), "--work-dir",
          str(not_a_folder), code=1)
    data = json.loads(out.read_text())
    assert data["score"] == 0 and "grader failed" in data["output"]
    assert [t["name"] for t in data["tests"]] == ["grader error"]


# --- the handout ---------------------------------------------------------------------------


def test_handout_holds_no_solutions(tmp_path):
    written = release.build(tmp_path / "handout")
    assert not [n for n in written if n.startswith(("solutions/", "grading/", "mistakes/",
                                                    "tools/"))]
    assert "course/progress.py" in written and "exercises/s7_layer_weights.py" in written
    assert leaks(tmp_path / "handout") == [] == release.foreign_mentions(tmp_path / "handout")


def test_leak_check_catches_a_solution_in_the_handout(handout, tmp_path):
    copy = tmp_path / "handout"
    shutil.copytree(handout, copy)
    shutil.copy(ROOT / "solutions" / "s4_pretrain.py", copy / "notebooks" / "helper.py")
    assert any("s4_pretrain.py: train_bilm" in leak for leak in leaks(copy))


def test_handout_tests_run_on_the_learners_own_sections(handout):
    run = subprocess.run(["make", "test", "SECTION=2", f"PY={sys.executable}", "-o",
                          ".venv/.installed"], cwd=handout, capture_output=True, text=True,
                         timeout=300)
    assert run.returncode == 2, run.stdout + run.stderr  # make: the stubs' tests fail
    records = json.loads((handout / "build" / "results.json").read_text())
    assert records and {r["status"] for r in records} == {NOT_IMPLEMENTED}


# --- interrupting, resuming, determinism ------------------------------------------------


@pytest.fixture(scope="session")
def interrupted(class_dir, work_dir, scratch) -> dict:
    """Section 1 of hard_crash (graded again), infinite_loop, then blocks_the_alarm, which
    hangs until the grading is interrupted (SIGINT, as Ctrl-C sends) once the others are done."""
    report = scratch / "interrupted.json"
    names = ["hard_crash", "infinite_loop", "blocks_the_alarm"]
    process = subprocess.Popen(
        [sys.executable, "-m", "grading", *(str(class_dir / n) for n in names), "--sections",
         "setup", "--jobs", "2", "--quiet", "--fresh", "--isolation", ISOLATION,
         "--test-timeout", str(LOOP_TIMEOUT_S), "--work-dir", str(work_dir), "--json",
         str(report)], cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)

    def finished() -> list[dict]:
        return json.loads(report.read_text())["submissions"] if report.exists() else []

    deadline = time.monotonic() + 300
    while len(finished()) < 2 and time.monotonic() < deadline and process.poll() is None:
        time.sleep(0.2)
    started = time.monotonic()
    process.send_signal(signal.SIGINT)
    try:
        out, err = process.communicate(timeout=60)
    except subprocess.TimeoutExpired:  # the test of stopping at once says so, with the output
        process.kill()
        out, err = process.communicate()
    return {"code": process.returncode, "stdout": out, "stderr": err,
            "seconds_to_stop": time.monotonic() - started,
            "settings": json.loads(report.read_text())["settings"],
            "by_name": {s["name"]: s for s in finished()}}


def test_an_infinite_loop_times_out_one_test(interrupted):
    setup = section(interrupted["by_name"]["infinite_loop"], "setup")
    found = list(statuses(setup).values())
    assert setup["status"] == TIMEOUT and found.count(TIMEOUT) == 1
    assert setup["score"] == pytest.approx(SETUP.points * (len(found) - 1) / len(found))


def test_an_interrupted_grading_stops_at_once_and_keeps_what_it_finished(interrupted):
    assert interrupted["seconds_to_stop"] < 30, \
        f"the hanging run is killed, not waited for:\n{interrupted['stderr'][-2000:]}"
    assert interrupted["code"] == 130 and "interrupted" in interrupted["stderr"]
    assert set(interrupted["by_name"]) == {"hard_crash", "infinite_loop"}
    assert "hard_crash" in interrupted["stdout"], "the table of what was finished is printed"


def test_a_submission_graded_again_scores_the_same(interrupted, graded):
    again, first = (section(r["by_name"]["hard_crash"], "setup") for r in (interrupted, graded))
    assert (again["score"], statuses(again)) == (first["score"], statuses(first))


def test_a_stored_result_is_used_again_not_regraded(interrupted, class_dir, work_dir):
    stored = next((work_dir / "results").glob("hard_crash-*.json"))
    before = stored.stat().st_mtime_ns
    run = grade(str(class_dir / "hard_crash"), "--sections", "setup", "--quiet", "--isolation",
                ISOLATION, "--test-timeout", str(LOOP_TIMEOUT_S), "--work-dir", str(work_dir))
    assert stored.stat().st_mtime_ns == before and "hard_crash" in run.stdout
