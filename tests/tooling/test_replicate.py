"""`make replicate` in a learner's handout, where there is no reference: the reference's
sections 1-7 copied into the handout's exercises/ (section 8, the bonus, left a stub), one
seed. It measures what the demo measures, prints every target read trained against
untrained beside the reference's reading, and says which section stops it."""

import json
import re
import shutil
import subprocess
import sys

import pytest

from course import experiments, targets
from course.registry import REFERENCE_DIR, SECTIONS
from tools import release

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
    for target in targets.TARGETS:
        claim = out.index(f"  {target.claim}\n")
        yours, reference = out[claim:].splitlines()[1:3]
        assert yours.split()[0] == "yours" and reference.split()[0] == "reference", target
        if BONUS.number == target.section:
            assert targets.NOT_RUN in yours, target.claim
        else:
            assert re.search(r"trained [01]/1 \(needs 1\), untrained [01]/1, effect", yours), yours
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
