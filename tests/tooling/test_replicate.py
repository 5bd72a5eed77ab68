"""`make replicate` in a learner's handout, where there is no reference: the reference's
sections 1-7 copied into the handout's exercises/ (section 8, the bonus, left a stub), one
seed. It measures what the demo measures, prints every target read trained against
untrained beside the reference's reading, and says which section stops it."""

import json
import shutil
import subprocess
import sys

import pytest

from analyses import experiments, targets
from course.long_command import INTERRUPTED
from course.registry import OUTPUT_WIDTH, REFERENCE_DIR, SECTIONS
from tests.tooling.conftest import interrupt_after
from tools import release, results

pytestmark = pytest.mark.slow  # make check replays it at unchanged inputs (replay.py)

BONUS = SECTIONS[-1]


def replicate(handout, seeds: int = 1) -> subprocess.CompletedProcess:
    return subprocess.run(["make", "replicate", f"REPLICATE_SEEDS={seeds}",
                           f"PY={sys.executable}", "-o", ".venv/.installed"], cwd=handout,
                          capture_output=True, text=True, timeout=900)


@pytest.fixture(scope="module")
def handout(tmp_path_factory):
    """A released handout whose sections 1-7 are the reference's; its stubs are kept in
    the folder beside it, `stubs/`."""
    folder = tmp_path_factory.mktemp("replicate") / "handout"
    release.build(folder)
    shutil.copytree(folder / "exercises", folder.parent / "stubs")
    for section in SECTIONS:
        if section != BONUS:
            shutil.copy(REFERENCE_DIR / section.file_name, folder / "exercises")
    return folder


@pytest.fixture(scope="module")
def replicated(handout):
    return replicate(handout)


def test_replicate_prints_every_target_trained_against_untrained_beside_the_reference(
        replicated):
    assert replicated.returncode == 0, replicated.stdout + replicated.stderr
    out = replicated.stdout
    assert "[2/2] word biLM, seed 0: trained to loss" in out, "progress as each seed finishes"
    assert f"section {BONUS.number} ({BONUS.name})" in out and "not measured" in out
    lines = out.splitlines()
    for target in targets.TARGETS:
        claim = next(n for n in range(len(lines) - 1) if lines[n].startswith("  ") and " ".join(
            f"{lines[n]} {lines[n + 1]}".split()).startswith(f"{target.claim} (the effect"))
        yours, reference = [line for line in lines[claim + 1:claim + 4]
                            if line.lstrip().startswith(("yours,", "reference,"))]
        assert yours.startswith("    yours, 1 seed ") and reference.startswith(
            "    reference, 10 seeds"), target
        if BONUS.number == target.section:
            assert targets.NOT_RUN in yours, target.claim
        else:  # one seed: its numbers, no interval, and no verdict but unclear
            assert "±" not in yours and yours.endswith(targets.UNCLEAR), yours
    assert f"of {len(targets.TARGETS)} targets:" in out


def test_replicate_measures_what_the_demo_measures(handout, replicated, demo_one_seed):
    """The same seed of the same code: every record of the word biLM, trained and untrained,
    equals the demo's (the training times aside)."""
    mine = json.loads((handout / "build" / "replicate" / "results.json").read_text())
    demo = json.loads((demo_one_seed / "results.json").read_text())
    for kind in ("context", "nearest", "probes"):
        assert mine[kind] == demo[kind], kind
    timing = ("seconds", "cpu_seconds")
    assert [{k: v for k, v in r.items() if k not in timing} for r in mine["pretraining"]] == [
        {k: v for k, v in r.items() if k not in timing} for r in demo["pretraining"]]
    assert mine["neighbours"] == [r for r in demo["neighbours"] if r["model"] == "word"]
    assert all(not records for records in mine["char"].values())


def test_replicate_stops_at_a_section_not_implemented_yet_and_names_it(handout, tmp_path,
                                                                     capsys):
    impl = tmp_path / "exercises"
    shutil.copytree(handout / "exercises", impl)
    layer_weights = next(s for s in SECTIONS if s.name == "layer_weights")
    shutil.copy(handout.parent / "stubs" / layer_weights.file_name, impl)
    assert experiments.main(["--impl", str(impl), "--seeds", "1", "--jobs", "1", "--out",
                             str(tmp_path / "out")]) == 1
    out = capsys.readouterr().out
    assert f"section {BONUS.number} ({BONUS.name})" in out, "section 8 is said first"
    assert (f"make replicate stopped: the word biLM of seed 0: section {layer_weights.number} "
            f"({layer_weights.name}): ScalarMix") in out, out


def test_replicate_shows_progress_at_once_and_stops_cleanly_on_ctrl_c(tmp_path):
    """Its first lines come before any biLM is done, each seed's biLMs say when they start,
    and Ctrl-C, which reaches the workers too, ends it in one line, with no traceback."""
    status, out, err, before = interrupt_after(
        [sys.executable, "-m", "analyses.experiments", "--impl", str(REFERENCE_DIR), "--seeds",
         "2", "--jobs", "2", "--out", str(tmp_path)], first="seed 0: started")
    assert before[0].startswith("make replicate:") and "Ctrl-C" in before[0], before
    assert status == INTERRUPTED, (status, out, err)
    assert "make replicate stopped (Ctrl-C)" in out, out
    assert "Traceback" not in err + out, err
    assert not (tmp_path / "results.json").exists()


def test_a_reading_otherwise_than_the_references_says_whether_it_is_within_seed_noise():
    """The reference's own seeds, halved: where a verdict differs, the line says within or
    beyond seed noise, never a mistake by default."""
    committed = results.load()
    half = {**committed, "seeds": committed["seeds"][:5]}
    for kind in ("context", "nearest", "probes"):
        half[kind] = [r for r in committed[kind] if r["seed"] < 5]
    half["char"] = {kind: [r for r in records if r["seed"] < 5] if isinstance(records, list)
                    else records for kind, records in committed["char"].items()}
    half["neighbours"] = [r for r in committed["neighbours"] if r["seed"] < 5]
    for difference in targets.differences(half, targets.summary(committed)):
        assert difference.within, str(difference)  # the same code: seed noise, no mistake
        assert "within seed noise" in str(difference)
    report = targets.report(half, targets.summary(committed))
    assert "yours, 5 seeds" in report and "reference, 10 seeds" in report
    assert max(map(len, report.splitlines())) <= OUTPUT_WIDTH
