"""Hidden examples (`python -m grading --secret-file`, `grading.hidden`): the property tests
run under a term secret's seed, on more examples than a learner's `make grade` draws, so that
code fitted to the public examples fails, and says on which example it failed.

The tuned submission is made here, honestly: the public profile runs section 2's tests on a
copy of the reference that logs every input of `pad_batch`; the tuned module answers those
inputs with the reference's output and pads every other batch at the front. A small class
(the reference, the tuned submission, the stubs, and a submission that writes its run's seed
where a failing example goes; sections 2 and 5) is graded through the grader's real path: in
public, under three secrets, and under the first secret again. Every file the gradings write
is searched for the secrets and the seeds.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from types import SimpleNamespace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from course.registry import ROOT, find_section
from course.results import FAILED, NOT_IMPLEMENTED, PASSED
from grading import hidden, records
from grading.grader import Grader
from grading.zygote import EXAMPLE_CHARS, falsifying_example
from tests.tooling.test_grading import ISOLATION, REFERENCE, STUBS, appended, grade, isolated

SECTIONS = "2,5"
SECRETS = {"A": "a9c1-term-secret-of-the-autumn", "B": "b7e2-another-term-secret",
           "C": "c3f4-yet-another-term-secret"}
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

LEAKS_ITS_SEED = """
_honest_pad_batch = pad_batch
def pad_batch(sequences):
    import hypothesis.core
    failure = AssertionError("the run's seed, carried out in its example")
    failure.add_note(f"Failing test case: leak(seed={hypothesis.core.global_force_seed})")
    raise failure
"""


def test_a_seed_is_the_secret_s_and_the_section_s():
    seeds = {(key, n): hidden.seed(s.encode(), n) for key, s in SECRETS.items()
             for n in range(1, 9)}
    assert len(set(seeds.values())) == len(seeds)  # a seed per secret and section
    assert hidden.seed(SECRETS["A"].encode(), 2) == seeds["A", 2]  # the same, again
    assert all(0 <= seed < 2**64 for seed in seeds.values())
    assert SECRETS["A"] not in hidden.digest(SECRETS["A"].encode())


def test_a_short_secret_is_refused(tmp_path):
    (tmp_path / "short").write_text("tiny\n")
    run = grade(str(tmp_path), "--secret-file", str(tmp_path / "short"), code=2)
    assert "fewer than the 16" in run.stderr and "secrets.token_hex" in run.stderr


@settings(database=None, derandomize=True)
@given(batch=st.lists(st.integers(0, 9), min_size=1), data=st.data())
def example_property(corpus_module, batch, data):
    assert sum(batch) + data.draw(st.integers(0, 1)) < 12


def test_a_record_s_example_is_hypothesis_s_without_the_fixtures():
    with pytest.raises(AssertionError) as failed:
        example_property("a module\n    with=a line that looks like an argument")
    example = falsifying_example(failed.value, frozenset({"corpus_module"}))
    assert example.startswith("Failing test case: example_property(batch=[")
    assert example.isprintable()
    assert "Draw 1: " in example and "a module" not in example and "with=" not in example
    assert falsifying_example(AssertionError("not a property's")) == ""
    long = AssertionError()
    long.add_note("Failing test case: f(x=" + "\x1b" * 1000 + ")")
    assert len(falsifying_example(long)) == EXAMPLE_CHARS == records.EXAMPLE_CHARS
    assert falsifying_example(long).isprintable()


def test_the_grader_shows_no_example_without_a_secret_and_never_the_secret_or_seed(tmp_path):
    section, secret = find_section("corpus"), SECRETS["A"].encode()
    seed = hidden.seed(secret, section.number)
    public, hiding = Grader(tmp_path, [section]), Grader(tmp_path, [section], secret=secret)
    hiding.sandbox = SimpleNamespace(seeds={section.number: seed})
    assert public._shown("Failing test case: f(x=1)", section) == ""
    assert hiding._shown("Failing test case: f(x=1)", section) == "Failing test case: f(x=1)"
    leaked = hiding._shown(f"Failing test case: f(x={seed}, y={SECRETS['A']!r})", section)
    assert str(seed) not in leaked and SECRETS["A"] not in leaked, leaked
    assert public.settings_key != hiding.settings_key != Grader(
        tmp_path, [section], secret=SECRETS["B"].encode()).settings_key


@pytest.fixture(scope="module")
def folder():
    """This module's own (pytest prunes its folders when other sessions start)."""
    made = Path(tempfile.mkdtemp(prefix="hidden-examples-"))
    made.chmod(0o755)
    yield made
    shutil.rmtree(made, ignore_errors=True)


@pytest.fixture(scope="module")
def tuned(folder) -> Path:
    """A submission whose section 2 passes the public examples by remembering them."""
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
    submission = folder / "class" / "tuned"
    (submission / "exercises").mkdir(parents=True)
    (submission / "exercises" / "s2_corpus.py").write_text(
        appended(REFERENCE["s2_corpus"], TUNED.format(seen=sorted(seen))))
    (submission / "exercises" / "s5_extract.py").write_text(REFERENCE["s5_extract"])
    return submission


@pytest.fixture(scope="module")
def reference(folder) -> Path:
    submission = folder / "class" / "reference"
    (submission / "exercises").mkdir(parents=True)
    for module in ("s2_corpus", "s5_extract"):
        (submission / "exercises" / f"{module}.py").write_text(REFERENCE[module])
    return submission


@pytest.fixture(scope="module")
def stubs(folder) -> Path:
    submission = folder / "class" / "stubs"
    (submission / "exercises").mkdir(parents=True)
    for module in ("s2_corpus", "s5_extract"):
        (submission / "exercises" / f"{module}.py").write_text(STUBS[module])
    return submission


@pytest.fixture(scope="module")
def leaks_its_seed(folder) -> Path:
    """A submission that writes its run's seed where hypothesis writes a failing example."""
    submission = folder / "class" / "leaks_its_seed"
    (submission / "exercises").mkdir(parents=True)
    (submission / "exercises" / "s2_corpus.py").write_text(
        appended(REFERENCE["s2_corpus"], LEAKS_ITS_SEED))
    return submission


@pytest.fixture(scope="module")
def graded(folder, reference, tuned, stubs, leaks_its_seed) -> dict:
    """Each grading's JSON by name, and every file it wrote with its output, as text."""
    work, out, written = ROOT / "build" / "grading-hidden-tests", folder / "out", {}
    out.mkdir()
    for key, secret in SECRETS.items():
        (folder / f"{key}.secret").write_text(secret + "\n")

    def run(name: str, submissions: list[Path], *options: str) -> dict:
        files = {"json": out / f"{name}.json", "csv": out / f"{name}.csv",
                 "canvas": out / f"{name}-canvas.csv"}
        done = grade(*map(str, submissions), "--sections", SECTIONS, "--isolation", ISOLATION,
                     "--work-dir", str(work), "--quiet", *options,
                     *(a for kind, path in files.items() for a in (f"--{kind}", str(path))))
        written[name] = {"stdout": done.stdout, "stderr": done.stderr,
                         **{kind: path.read_text() for kind, path in files.items()}}
        return json.loads(files["json"].read_text())

    both = [reference, tuned, stubs, leaks_its_seed]
    reports = {"A": run("A", both, "--fresh", "--secret-file", str(folder / "A.secret"))}
    reports["A again"] = run("A again", [tuned], "--fresh", "--secret-file",
                             str(folder / "A.secret"), "--gradescope", str(out / "results.json"))
    for key in ("B", "C"):  # not --fresh: what the store holds under A must not be reused
        reports[key] = run(key, both, "--secret-file", str(folder / f"{key}.secret"))
    reports["public"] = run("public", both)  # nor under no secret
    written["gradescope"] = {"results.json": (out / "results.json").read_text()}
    report = subprocess.run([sys.executable, "-m", "grading.report", str(out / "A.json"),
                             "--out", str(out / "class-report")], cwd=ROOT, capture_output=True,
                            text=True, timeout=300)
    assert report.returncode == 0, report.stdout + report.stderr
    written["class report"] = {p.name: p.read_text(errors="replace")
                               for p in (out / "class-report").iterdir() if p.is_file()}
    written["store"] = {p.name: p.read_text() for p in (work / "results").glob("*.json")}
    written["work folder's logs"] = {p.name: p.read_text(errors="replace")
                                     for p in work.glob("*.log")}
    return {"reports": reports, "written": written}


def result(report: dict, name: str, section: str) -> dict:
    submission = next(s for s in report["submissions"] if s["name"] == name)
    return next(s for s in submission["sections"] if s["number"] == find_section(section).number)


def statuses(section_result: dict) -> dict[str, str]:
    return {t["name"]: t["status"] for t in section_result["tests"]}


def test_the_reference_passes_under_every_secret(graded):
    for key in (*SECRETS, "public"):
        for section in ("corpus", "extract"):
            found = result(graded["reports"][key], "reference", section)
            assert found["status"] == PASSED and found["score"] == found["points"], (
                key, section, found["reason"])
    assert {graded["reports"][key]["settings"].get("examples") for key in SECRETS} == {"hidden"}
    assert "examples" not in graded["reports"]["public"]["settings"]


def test_the_tuned_submission_passes_in_public_and_fails_on_hidden_examples(graded):
    public = result(graded["reports"]["public"], "tuned", "corpus")
    assert public["status"] == PASSED and public["score"] == public["points"], public["reason"]
    for key in SECRETS:
        found = result(graded["reports"][key], "tuned", "corpus")
        failing = {name for name, status in statuses(found).items() if status != PASSED}
        assert failing == {PAD_TEST} and statuses(found)[PAD_TEST] == FAILED, (key, failing)
        message = next(t["message"] for t in found["tests"] if t["name"] == PAD_TEST)
        assert message.startswith("failed: AssertionError in the test's checks; "), message
        assert f"Failing test case: {PAD_TEST}(batch=[[" in message, message  # its example
        assert 0 < found["score"] < found["points"]
        assert result(graded["reports"][key], "tuned", "extract")["status"] == PASSED


def test_a_stub_gets_no_example(graded):
    for section in ("corpus", "extract"):
        found = result(graded["reports"]["A"], "stubs", section)
        assert set(statuses(found).values()) == {NOT_IMPLEMENTED}, statuses(found)
        assert not [t for t in found["tests"] if "Failing test case" in t["message"]]


def test_the_same_secret_gives_the_same_verdict(graded):
    first, again = (result(graded["reports"][key], "tuned", "corpus") for key in ("A", "A again"))
    for found in (first, again):
        found.pop("seconds")
    assert first == again
    examples = {key: next(t["message"] for t in result(graded["reports"][key], "tuned",
                                                       "corpus")["tests"] if t["name"] == PAD_TEST)
                for key in SECRETS}
    assert len(set(examples.values())) == len(SECRETS), examples  # graded anew per secret


def test_neither_the_secret_nor_a_seed_reaches_what_the_grader_writes(graded):
    leaked = result(graded["reports"]["A"], "leaks_its_seed", "corpus")
    assert "Failing test case: leak(seed=<hidden>)" in json.dumps(leaked["tests"]), leaked
    keys = {graded["reports"][key]["settings"]["settings_key"] for key in ("A", "B", "public")}
    assert len(keys) == 3  # the store keeps results apart per secret
    for secret in SECRETS.values():
        forbidden = [secret, *(str(hidden.seed(secret.encode(), n)) for n in (2, 5))]
        for place, texts in graded["written"].items():
            for name, text in texts.items():
                found = [f for f in forbidden if f in text]
                assert not found, f"{found} in {place}: {name}"


@isolated
def test_hidden_examples_run_in_the_sandbox(graded):
    assert graded["reports"]["A"]["settings"]["isolation"] in ("bwrap", "uid")
