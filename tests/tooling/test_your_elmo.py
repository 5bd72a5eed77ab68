"""What a passed section shows of the learner's own ELMo (`course.your_elmo`), read on the
reference: every section with something to show says it against a baseline, and whatever a
layer is said to know, against the untrained biLM of the same shape."""

import json
import os
import subprocess
import sys

import pytest

from course import your_elmo
from course.harness import Harness
from course.registry import REFERENCE_DIR, ROOT, SECTIONS, find_section

# What each reading must set its numbers against.
AGAINST = {"corpus": ["<unk>"], "bilm": ["forward", "backward"],
           "pretrain": ["untrained", "floors", "reference"],
           "extract": ["layer 0"], "context": ["untrained", "reference", "different words"],
           "layer_weights": ["chance", "reference"], "char_encoder": ["untrained", "reference"]}


def test_every_section_but_the_first_shows_something():
    assert set(your_elmo.SHOWN) == {s.name for s in SECTIONS[1:]} == set(AGAINST)


@pytest.mark.parametrize("name", list(AGAINST))
def test_a_reading_says_what_it_is_read_against(name):
    section = find_section(name)
    lines = your_elmo.show(section, REFERENCE_DIR)
    text = "\n".join(lines)
    missing = [word for word in AGAINST[name] if word not in text]
    assert not missing, f"section {name}'s lines lack {missing}:\n{text}"
    assert lines[-1].endswith(f"notebooks/{section.notebook}"), lines[-1]


def test_the_context_reading_puts_pre_training_above_the_untrained_biLM():
    """On the reference, layers 1-2's gap is pre-training's: well above the untrained one's."""
    sections = Harness(REFERENCE_DIR).sections(find_section("context"))
    lines = your_elmo.context(sections)
    trained, untrained = ([float(x) for x in line.split("(")[0].split()[-3:]]
                          for line in lines[1:3])
    assert trained[0] == untrained[0] == 0.0, lines
    assert min(trained[1:]) > max(untrained[1:]) + 0.1, lines


def test_make_test_shows_it_after_a_passing_section(tmp_path):
    """What `make test SECTION=2` runs: the tests with `--results-json` and `--your-elmo`,
    which write the section's lines as the run ends, then `python -m course.progress`, whose
    output ends with them. The progress table itself never imports torch."""
    results, shown_file = tmp_path / "results.json", tmp_path / "your-elmo.json"
    env = {k: v for k, v in os.environ.items() if k not in ("SECTION", "ELMO_IMPL")}
    tests = subprocess.run([sys.executable, "-m", "pytest", "tests/sections", "--section", "2",
                            "--impl", "solutions", "--results-json", str(results),
                            "--your-elmo", str(shown_file), "-q", "-p", "no:cacheprovider"],
                           cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert tests.returncode == 0, tests.stdout[-2000:]
    assert set(json.loads(shown_file.read_text())["sections"]) == {"2"}
    table = ("import sys; from course import progress; code = progress.main(sys.argv[1:]); "
             "assert 'torch' not in sys.modules, 'the table imported torch'; sys.exit(code)")
    shown = subprocess.run([sys.executable, "-c", table, str(results), "--impl",
                            "solutions", "--state", str(tmp_path / "progress.json"),
                            "--your-elmo", str(shown_file)],
                           cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert shown.returncode == 0, shown.stderr[-2000:]
    assert "Your ELMo, section 2 (corpus):" in shown.stdout, shown.stdout[-2000:]


def test_a_section_whose_lines_cannot_be_computed_says_so(tmp_path, monkeypatch):
    """Whatever a learner's passing code raises while its lines are computed, the run still
    writes the file, with the reason in place of the lines; a failing section has none."""
    def broken(sections):
        raise ValueError("no biLM")

    monkeypatch.setitem(your_elmo.SHOWN, "corpus", broken)
    monkeypatch.setattr(your_elmo, "CACHE", tmp_path / "cache")  # none kept from another run
    path = tmp_path / "your-elmo.json"
    your_elmo.write(path, "2026-12-04T12:00:00+00:00", [1, 2], REFERENCE_DIR)
    found = json.loads(path.read_text())
    assert found == {"ran_at": "2026-12-04T12:00:00+00:00",
                     "sections": {"2": ["(could not show it: ValueError: no biLM)"]}}


def test_the_lines_are_kept_until_a_module_changes(tmp_path, monkeypatch):
    """A second run after no edit reads the lines it kept; an edit computes them again."""
    monkeypatch.setattr(your_elmo, "CACHE", tmp_path / "cache")
    impl = tmp_path / "impl"
    impl.mkdir()
    for section in SECTIONS:
        (impl / section.file_name).write_bytes((REFERENCE_DIR / section.file_name).read_bytes())
    calls = []
    monkeypatch.setitem(your_elmo.SHOWN, "corpus", lambda sections: calls.append(1) or ["x"])
    corpus = find_section("corpus")
    assert your_elmo.show(corpus, impl) == your_elmo.show(corpus, impl) and len(calls) == 1
    with (impl / corpus.file_name).open("a") as module:
        module.write("\n# an edit\n")
    your_elmo.show(corpus, impl)
    assert len(calls) == 2
