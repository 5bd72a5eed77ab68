"""The judged tests' cases (`grading.judging`, tests/sections/judged.py): the grader draws
each submission's cases itself, from its key (the term's secret, `--secret-file`, or a key it
keeps in its work folder) and the module's bytes, so that code fitted to the examples a
learner's `make test` shows fails, and a report names the case it failed on in the grader's
words; no run can read a key or a seed.

The tuned submission is made here, honestly: a learner's run of section 2's tests on a copy of
the reference logs every input of `pad_batch`; the tuned module answers those inputs with the
reference's output and pads every other batch at the front. A small class (the reference,
the tuned submission, the stubs; sections 2 and 5) is graded through the grader's real path
under two secrets, under the first again and under the grader's own key; the two that go
after the grader's texts and seeds (one writes a marker wherever a failure's text could go,
one looks for a seed wherever a run could read one) are graded apart, by `make check-all`
alone (README). Every file the gradings write is searched for the marker, the secrets and
the seeds.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from course.registry import ROOT, find_section
from course.results import FAILED, NOT_IMPLEMENTED, PASSED
from grading import judging
from grading.grader import Grader
from tests.sections.judged import from_plain, to_plain
from tests.tooling.test_grading import (
    ISOLATION,
    REFERENCE,
    STUBS,
    appended,
    grade,
    isolated,
    write_submission,
)
from tests.tooling.test_judging import section_module
from tests.tooling.test_similarity import HARM, build_class

pytestmark = pytest.mark.slow  # make check replays it at unchanged inputs (replay.py)

SECTIONS = "2,5"  # grading A's; the others grade section 2 alone, which their tests read
SECRETS = {"A": "a9c1-term-secret-of-the-autumn", "B": "b7e2-another-term-secret"}
PAD_NODEID = "tests/sections/test_s2_corpus.py::test_pad_batch_is_time_major_and_pads_at_the_end"
PAD_TEST = "test_pad_batch_is_time_major_and_pads_at_the_end"
LOGS_INPUTS = """
import os as _os
_logged_pad_batch = pad_batch
def pad_batch(sequences):
    with open(_os.environ["PAD_BATCH_INPUTS"], "a") as _log:
        _log.write(repr(sequences) + "\\n")
    return _logged_pad_batch(sequences)
"""
TUNED = """
_SEEN = {seen!r}
_right_pad_batch = pad_batch
def pad_batch(sequences):
    ids, lengths = _right_pad_batch(sequences)
    if repr(sequences) in _SEEN:  # an example the tests showed: the right answer
        return ids, lengths
    for column, length in enumerate(lengths.tolist()):  # any other: padded at the front
        ids[:, column] = torch.roll(ids[:, column], ids.shape[0] - length)
    return ids, lengths
"""

MARKER = "MARK-6b1f-written-by-the-run"
WRITES_TEXT = f"""
def pad_batch(sequences):
    text = "{MARKER}(batch=" + repr(sequences) + ")"
    print("Falsifying example: " + text, flush=True)
    failure = AssertionError(text)
    failure.add_note("Failing test case: leak(" + text + ")")
    failure.__notes__.append("Falsifying example: " + text)
    raise failure
"""
SEEKS_ITS_SEED = """
import gc, os, sys
def _seeds_in_view():
    import hypothesis.core, _pytest.config
    found = [hypothesis.core.global_force_seed]
    found += [a for a in sys.argv if "seed" in a] + [v for k, v in os.environ.items()
                                                   if "SEED" in k and k != "PYTHONHASHSEED"]
    for config in [o for o in gc.get_objects() if isinstance(o, _pytest.config.Config)]:
        found += [config.getoption("hypothesis_seed", None)] + [
            a for a in config.invocation_params.args if "seed" in str(a)]
    frame = sys._getframe()
    while frame is not None:  # every caller's variables, up to the run's server
        found += [v for k, v in frame.f_locals.items() if "seed" in k.lower()
                  and (isinstance(v, int) and v > 2**16 or isinstance(v, list) and v)]
        frame = frame.f_back
    return [f for f in found if f is not None]
def pad_batch(sequences):
    raise (KeyError if _seeds_in_view() else ArithmeticError)("what it found")
"""


def test_a_seed_is_the_key_s_the_section_s_and_the_module_s():
    modules = [b"", b"def pad_batch(x): ...", b"def pad_batch(x): ... "]
    seeds = {(key, n, m): judging.section_seed(s.encode(), n, m) for key, s in SECRETS.items()
             for n in range(1, 9) for m in modules}
    assert len(set(seeds.values())) == len(seeds)  # a seed per key, section and module
    assert judging.section_seed(SECRETS["A"].encode(), 2, modules[1]) == seeds["A", 2, modules[1]]
    assert all(0 <= seed < 2**64 for seed in seeds.values())
    assert SECRETS["A"] not in judging.digest(SECRETS["A"].encode())
    tests = {judging.cases_seed(seeds["A", 2, m], t) for m in modules for t in ("a::x", "a::y")}
    assert len(tests) == 6 and not tests & set(seeds.values())


def test_a_short_secret_is_refused(tmp_path):
    (tmp_path / "short").write_text("tiny\n")
    run = grade(str(tmp_path), "--secret-file", str(tmp_path / "short"), code=2)
    assert "fewer than the 16" in run.stderr and "secrets.token_hex" in run.stderr


def test_the_settings_key_holds_the_key_s_digest(tmp_path):
    section = find_section("corpus")
    own = Grader(tmp_path, [section]).settings_key
    assert own == Grader(tmp_path, [section]).settings_key  # the work folder's key, kept
    assert own != Grader(tmp_path, [section], secret=SECRETS["A"].encode()).settings_key != \
        Grader(tmp_path, [section], secret=SECRETS["B"].encode()).settings_key
    assert (tmp_path / judging.KEY_FILE).stat().st_mode & 0o077 == 0  # the grader's alone


@pytest.fixture(scope="module")
def folder():
    """This module's own (pytest prunes its folders when other sessions start)."""
    made = Path(tempfile.mkdtemp(prefix="drawn-cases-"))
    made.chmod(0o755)
    yield made
    shutil.rmtree(made, ignore_errors=True)


@pytest.fixture(scope="module")
def tuned(folder) -> Path:
    """A submission whose section 2 passes a learner's examples by remembering them."""
    impl, log = folder / "instrumented", folder / "pad_batch_inputs.txt"
    impl.mkdir()
    (impl / "s2_corpus.py").write_text(appended(REFERENCE["s2_corpus"], LOGS_INPUTS))
    env = {**os.environ, "PAD_BATCH_INPUTS": str(log), "HYPOTHESIS_PROFILE": "course",
           "HYPOTHESIS_STORAGE_DIRECTORY": str(folder / "hypothesis")}
    run = subprocess.run([sys.executable, "-m", "pytest", "tests/sections", "--impl", str(impl),
                          "--section", "2", "-q"], cwd=ROOT, env=env, capture_output=True,
                         text=True, timeout=300)
    assert run.returncode == 0, run.stdout + run.stderr
    seen = set(log.read_text().splitlines())
    assert len(seen) >= 20, seen  # the property's 25 examples, give or take repeats
    return write_submission(folder / "class" / "tuned", {
        "s2_corpus": appended(REFERENCE["s2_corpus"], TUNED.format(seen=sorted(seen)))})


@pytest.fixture(scope="module")
def reference(folder) -> Path:
    return write_submission(folder / "class" / "reference",
                            {m: REFERENCE[m] for m in ("s2_corpus", "s5_extract")})


@pytest.fixture(scope="module")
def stubs(folder) -> Path:
    return write_submission(folder / "class" / "stubs",
                            {m: STUBS[m] for m in ("s2_corpus", "s5_extract")})


@pytest.fixture(scope="module")
def writes_text(folder) -> Path:
    """A submission that writes a marker in its failure's message, its notes and its output,
    where hypothesis writes a failing example."""
    return write_submission(folder / "class" / "writes_text",
                            {"s2_corpus": appended(REFERENCE["s2_corpus"], WRITES_TEXT)})


@pytest.fixture(scope="module")
def seeks_its_seed(folder) -> Path:
    """A submission that looks for its run's seed in what a run can read of its process."""
    return write_submission(folder / "class" / "seeks_its_seed",
                            {"s2_corpus": appended(REFERENCE["s2_corpus"], SEEKS_ITS_SEED)})


@pytest.fixture(scope="module")
def work(grading_work_dir) -> Path:
    return grading_work_dir("grading-hidden-tests")


@pytest.fixture(scope="module")
def secret_files(folder) -> dict[str, Path]:
    for key, secret in SECRETS.items():
        (folder / f"{key}.secret").write_text(secret + "\n")
    return {key: folder / f"{key}.secret" for key in SECRETS}


def graded_in(out: Path, work: Path, gradings: dict[str, tuple[list[Path], list[str], str]]
              ) -> dict:
    """Each of `gradings` ({name: (submissions, options, sections)}) in turn, in `work`, its
    reports in `out`, then the class report of the first: each grading's JSON by name, every
    file they wrote with its output, as text, and each submission's modules."""
    out.mkdir()
    reports, written = {}, {}
    for name, (submissions, options, sections) in gradings.items():
        files = {"json": out / f"{name}.json", "csv": out / f"{name}.csv",
                 "canvas": out / f"{name}-canvas.csv"}
        done = grade(*map(str, submissions), "--sections", sections, "--isolation", ISOLATION,
                     "--work-dir", str(work), "--quiet", *options,
                     *(a for kind, path in files.items() for a in (f"--{kind}", str(path))))
        written[name] = {"stdout": done.stdout, "stderr": done.stderr,
                         **{kind: path.read_text() for kind, path in files.items()}}
        reports[name] = json.loads(files["json"].read_text())
    report = subprocess.run([sys.executable, "-m", "grading.report",
                             str(out / f"{next(iter(gradings))}.json"), "--out",
                             str(out / "class-report")], cwd=ROOT, capture_output=True,
                            text=True, timeout=300)
    assert report.returncode == 0, report.stdout + report.stderr
    written["class report"] = {p.name: p.read_text(errors="replace")
                               for p in (out / "class-report").iterdir() if p.is_file()}
    written["store"] = {p.name: p.read_text() for p in (work / "results").glob("*.json")}
    written["work folder's logs"] = {p.name: p.read_text(errors="replace")
                                     for p in work.glob("*.log")}
    graded = {path for submissions, _, _ in gradings.values() for path in submissions}
    modules = {path.name: {s: (path / "exercises" / f"{s}.py").read_bytes()
                           for s in ("s2_corpus", "s5_extract")
                           if (path / "exercises" / f"{s}.py").exists()} for path in graded}
    return {"reports": reports, "written": written, "modules": modules}


@pytest.fixture(scope="module")
def graded(folder, work, secret_files, reference, tuned, stubs) -> dict:
    """The honest class under secret A (sections 2 and 5), the tuned submission again, then
    under secret B and under the grader's own key: what `graded_in` gives."""
    a, b = (str(secret_files[key]) for key in SECRETS)
    graded = graded_in(folder / "out", work, {
        "A": ([reference, tuned, stubs], ["--fresh", "--secret-file", a], SECTIONS),
        "A again": ([tuned], ["--fresh", "--secret-file", a, "--gradescope",
                              str(folder / "results.json")], "2"),
        # not --fresh: what the store holds under A must not be reused
        "B": ([reference, tuned], ["--secret-file", b], "2"),
        "own key": ([reference, tuned], [], "2")})  # nor under the work folder's key
    graded["written"]["gradescope"] = {"results.json": (folder / "results.json").read_text()}
    graded["written"]["work folder's key"] = {
        "own": (work / judging.KEY_FILE).read_text()}  # never in what it writes, below
    return graded


@pytest.fixture(scope="module")
def graded_adversaries(folder, work, secret_files, writes_text, seeks_its_seed) -> dict:
    """The submissions that go after the grader's texts and seeds, graded apart under both
    secrets (`make check-all` alone: only the grader can give them what they seek): what
    `graded_in` gives."""
    adversaries = [writes_text, seeks_its_seed]
    return graded_in(folder / "adversaries", work, {
        "A": (adversaries, ["--fresh", "--secret-file", str(secret_files["A"])], SECTIONS),
        "B": (adversaries, ["--secret-file", str(secret_files["B"])], "2")})


def result(report: dict, name: str, section: str) -> dict:
    submission = next(s for s in report["submissions"] if s["name"] == name)
    return next(s for s in submission["sections"] if s["number"] == find_section(section).number)


def statuses(section_result: dict) -> dict[str, str]:
    return {t["name"]: t["status"] for t in section_result["tests"]}


def message(report: dict, name: str, test: str = PAD_TEST) -> str:
    return next(t["message"] for t in result(report, name, "corpus")["tests"]
                if t["name"] == test)


def test_the_reference_passes_under_every_key(graded):
    """Section 2 under both secrets and the grader's own key; section 5 (extraction from the
    biLM the fakes train, judged against the grader's own copy) under secret A."""
    for key, section in [*((key, "corpus") for key in (*SECRETS, "own key")), ("A", "extract")]:
        found = result(graded["reports"][key], "reference", section)
        assert found["status"] == PASSED and found["score"] == found["points"], (
            key, section, found["reason"])
    assert {graded["reports"][key]["settings"].get("cases") for key in SECRETS} == {
        "drawn from the term's secret"}
    assert "cases" not in graded["reports"]["own key"]["settings"]


def test_the_tuned_submission_passes_a_learner_s_run_and_fails_every_grading(graded, tuned):
    learner = subprocess.run([sys.executable, "-m", "pytest", "tests/sections", "--impl",
                              str(tuned / "exercises"), "--section", "2", "-q"], cwd=ROOT,
                             capture_output=True, text=True, timeout=300)
    assert learner.returncode == 0, learner.stdout[-2000:]
    for key in (*SECRETS, "own key"):
        found = result(graded["reports"][key], "tuned", "corpus")
        failing = {name for name, status in statuses(found).items() if status != PASSED}
        assert failing == {PAD_TEST} and statuses(found)[PAD_TEST] == FAILED, (key, failing)
        shown = message(graded["reports"][key], "tuned")
        assert shown.startswith("failed: AssertionError in the test's checks, on case "), shown
        assert "; Failing case: batch=[[" in shown, shown
        assert 0 < found["score"] < found["points"]


def test_a_stub_shows_no_case(graded):
    for section in ("corpus", "extract"):
        found = result(graded["reports"]["A"], "stubs", section)
        assert set(statuses(found).values()) == {NOT_IMPLEMENTED}, statuses(found)
        assert not [t for t in found["tests"] if "Failing case" in t["message"]]


def test_the_same_secret_gives_the_same_verdict_and_another_other_cases(graded):
    first, again = (result(graded["reports"][key], "tuned", "corpus") for key in ("A", "A again"))
    for found in (first, again):
        found.pop("seconds")
    assert first == again
    shown = {key: message(graded["reports"][key], "tuned") for key in (*SECRETS, "own key")}
    assert len(set(shown.values())) == len(shown), shown  # each key its own cases


def test_the_case_shown_is_the_first_the_tuned_module_fails(graded, tuned):
    """The grader's cases for the tuned module under secret A, drawn again here, and its
    act and judge run on each in this process: the first it fails is the one the report
    names."""
    module = (tuned / "exercises" / "s2_corpus.py").read_bytes()
    spec = {"module": "tests.sections.test_s2_corpus", "name": PAD_TEST, "params": {"dict": {}}}
    seed = judging.section_seed(SECRETS["A"].encode(), find_section("corpus").number, module)
    cases = judging.cases_for({PAD_NODEID: spec}, seed)[PAD_NODEID]
    corpus = section_module(tuned / "exercises", "corpus")
    act = judging._test(spec).judged.act
    acts = {i: json.loads(json.dumps(to_plain(act(corpus=corpus, **from_plain(c)))))
            for i, c in enumerate(cases)}
    why, _ = judging.verdict(spec, cases, acts)
    assert why is not None and message(graded["reports"]["A"], "tuned") == f"failed: {why}"


@pytest.mark.check_all
def test_no_text_a_run_writes_reaches_a_report(graded_adversaries):
    """Its message, notes and output carry a marker where a failure's text would go: the
    report names the grader's own words, with its own line of the module quoted."""
    shown = message(graded_adversaries["reports"]["A"], "writes_text")
    assert shown.startswith("failed: AssertionError at s2_corpus.py line "), shown
    for place, texts in graded_adversaries["written"].items():
        for name, text in texts.items():
            assert MARKER not in text, f"the run's marker in {place}: {name}"


def test_the_store_keeps_results_apart_per_key(graded):
    keys = {graded["reports"][key]["settings"]["settings_key"] for key in ("A", "B", "own key")}
    assert len(keys) == 3


@pytest.mark.parametrize("which", ["graded", pytest.param("graded_adversaries",
                                                          marks=pytest.mark.check_all)])
def test_neither_a_key_nor_a_seed_reaches_what_the_grader_writes(request, which, work):
    graded = request.getfixturevalue(which)
    keys = [*(s.encode() for s in SECRETS.values()), (work / judging.KEY_FILE).read_bytes()]
    for key in keys:
        forbidden = [key.decode(), *(str(judging.section_seed(key, find_section(s).number, m))
                                     for modules in graded["modules"].values()
                                     for s, m in modules.items())]
        for place, texts in graded["written"].items():
            if place == "work folder's key":
                continue
            for name, text in texts.items():
                found = [f for f in forbidden if f in text]
                assert not found, f"{found} in {place}: {name}"


@pytest.mark.check_all
def test_a_run_finds_no_seed_of_its_own(graded_adversaries):
    """It looks in its arguments, its environment, hypothesis's and pytest's settings and the
    variables of every frame that called it: it finds nothing, under either secret."""
    for key in SECRETS:
        shown = message(graded_adversaries["reports"][key], "seeks_its_seed")
        assert "ArithmeticError at s2_corpus.py line " in shown, (key, shown)


@isolated
def test_the_cases_are_acted_on_in_the_sandbox(graded):
    assert graded["reports"]["A"]["settings"]["isolation"] in ("bwrap", "uid")


@pytest.fixture(scope="module")
def generated_class(folder, work, tuned) -> tuple[dict[str, list[str]], dict, Path]:
    """Of the generated class of tests/tooling/test_similarity.py, every independent
    complete submission (8), two renamed copies, the partial copy, the reference verbatim and
    renamed, the untouched stubs and the module that writes a file on import, and the tuned
    submission: their section 2 graded under secret A, each on cases of its own."""
    root = folder / "generated"
    root.mkdir()
    kinds = build_class(root)
    kinds["copies"] = kinds["copies"][:2]
    shutil.copytree(tuned, root / "tuned")
    (folder / "A.secret").write_text(SECRETS["A"] + "\n")
    out = folder / "generated.json"
    names = [*kinds["complete"], *(c.split(":")[0] for c in kinds["copies"] + kinds[
        "part_copies"]), *kinds["reference"], "untouched", "harmful", "tuned"]
    paths = [root / f"{n}.zip" if (root / f"{n}.zip").exists() else root / n for n in names]
    grade(*map(str, paths), "--sections", "2", "--jobs", "2", "--fresh",
          "--isolation", ISOLATION, "--work-dir", str(work),
          "--secret-file", str(folder / "A.secret"), "--json", str(out), "--quiet")
    return kinds, json.loads(out.read_text()), root


def test_on_a_generated_class_only_code_fitted_to_a_learner_s_examples_fails(generated_class):
    """On cases drawn for each module every correct section 2 of the class, written
    independently, copied with renamed names, or the reference's, earns full marks; the stub
    none; the tuned submission fails the property it was fitted to; and the module that
    would write a file as it is imported wrote nothing here."""
    kinds, report, root = generated_class
    correct = [*kinds["complete"], *(c.split(":")[0] for c in kinds["copies"]),
               *(c.split(":")[0] for c in kinds["part_copies"]), *kinds["reference"]]
    assert len(report["submissions"]) == 16 and len(correct) == 13
    for name in correct:
        found = result(report, name, "corpus")
        assert found["score"] == found["points"], (name, found["reason"], statuses(found))
    assert set(statuses(result(report, "untouched", "corpus")).values()) == {NOT_IMPLEMENTED}
    tuned = result(report, "tuned", "corpus")
    assert {n for n, s in statuses(tuned).items() if s != PASSED} == {PAD_TEST}
    assert not (root / HARM).exists()
