"""What a passed section shows of the learner's own ELMo (`analyses.your_elmo`), read on the
reference: every section with something to show says it against a baseline, and whatever a
layer is said to know, against the untrained biLM of the same shape."""

import json
import os
import subprocess
import sys

import pytest

from analyses import your_elmo
from course.registry import OUTPUT_WIDTH, REFERENCE_DIR, ROOT, SECTIONS, find_section

pytestmark = pytest.mark.slow  # make check replays it at unchanged inputs (replay.py)

# What each reading must set its numbers against.
AGAINST = {"corpus": ["<unk>"], "bilm": ["forward", "backward"],
           "pretrain": ["untrained", "floors", "reference"],
           "extract": ["layer 0"],
           "context": ["untrained", "reference", "seed noise", "different words", "reading:"],
           "layer_weights": ["untrained", "reference", "seed noise", "chance", "uniform",
                             "reading:"],
           "char_encoder": ["untrained", "reference", "seed noise", "knows nothing",
                            "reading:", "LSTMs"]}


def test_every_section_but_the_first_shows_something():
    assert set(your_elmo.SHOWN) == {s.name for s in SECTIONS[1:]} == set(AGAINST)


@pytest.fixture(scope="module")
def shown():
    """Every section's lines on the reference, as `make test` shows them."""
    return {name: your_elmo.show(find_section(name), REFERENCE_DIR) for name in AGAINST}


@pytest.mark.parametrize("name", list(AGAINST))
def test_a_reading_says_what_it_is_read_against_within_the_page(name, shown):
    section, lines = find_section(name), shown[name]
    text = "\n".join(lines)
    missing = [word for word in AGAINST[name] if word not in text]
    assert not missing, f"section {name}'s lines lack {missing}:\n{text}"
    assert lines[-1].endswith(f"notebooks/{section.notebook}"), lines[-1]
    too_wide = [line for line in lines if len(f"  {line}") > OUTPUT_WIDTH]  # as make test
    assert not too_wide, too_wide


def _row(lines: list[str], name: str) -> list[float]:
    """The numbers of the table row `name`."""
    (line,) = [line for line in lines if line.startswith(name + "  ")]
    return [float(cell) for cell in line[len(name):].split()]


def test_the_context_reading_puts_pre_training_above_the_untrained_biLM(shown):
    """On the reference, layers 1-2's gap is pre-training's: well above the untrained one's,
    beyond seed noise, and the reading says so."""
    lines = shown["context"]
    trained, untrained = _row(lines, "yours, trained"), _row(lines, "yours, untrained")
    assert trained[0] == untrained[0] == 0.0, lines
    assert min(trained[1:]) > max(untrained[1:]) + 0.1, lines
    assert "pre-training opened it at layer 1 (" in " ".join(" ".join(lines).split())


def test_the_layer_weights_reading_sets_each_task_beside_its_untrained_biLM(shown):
    """Section 7: the weights and accuracy of both biLMs per task, and word class's lower
    layer read as the architecture's where the untrained weights prefer it too."""
    lines = shown["layer_weights"]
    assert sum(line.startswith("yours, untrained") for line in lines) == 2, lines
    word_class = lines[:next(n for n, line in enumerate(lines) if line.startswith("word sense"))]
    trained, untrained = (_row(word_class, f"yours, {state}") for state in ("trained",
                                                                           "untrained"))
    class_prefers = your_elmo.PREFERS["word class"][1]
    if class_prefers(trained[:3]) and class_prefers(untrained[:3]):
        assert "the architecture's, not pre-training's" in " ".join(" ".join(lines).split())


# --- the rule, on numbers made to fall on each side of it --------------------------------------


@pytest.mark.parametrize("effect, sd, kind", [
    (0.3, 0.1, your_elmo.RAISED), (-0.3, 0.1, your_elmo.LOWERED),
    (0.19, 0.1, your_elmo.WITHIN), (-0.19, 0.1, your_elmo.WITHIN),
    (0.3, None, your_elmo.UNMEASURED)])
def test_an_effect_is_read_against_twice_the_seed_noise(effect, sd, kind):
    assert your_elmo.effect_of(effect, sd) == kind


@pytest.mark.parametrize("trained, said", [
    ([0.0, 0.20, 0.26], "pre-training opened it at layer 1"),
    ([0.0, 0.05, 0.26], "within seed noise at layer 1"),
    ([0.0, -0.10, 0.26], "pre-training closed it at layer 1"),
])
def test_the_gap_reading_is_chosen_by_the_rule(trained, said):
    text = " ".join(" ".join(your_elmo.read_gap(trained, [0.0, 0.04, 0.04],
                                                [0.0, 0.01, 0.01])).split())
    assert said in text, text
    assert "layer 2" in text and "by design" in text


@pytest.mark.parametrize("task, trained, untrained, said", [
    ("word class", [0.3, 0.5, 0.2], [0.5, 0.3, 0.2], "the architecture's, not pre-training's"),
    ("word class", [0.3, 0.5, 0.2], [0.5, 0.3, 0.2], "off s_0 -0.200, onto s_1 +0.200"),
    ("word sense", [0.2, 0.3, 0.5], [0.4, 0.3, 0.3], "trained, not untrained: pre-training's"),
    ("word sense", [0.5, 0.3, 0.2], [0.5, 0.3, 0.2], "do not prefer layer 2"),
    ("word sense", [0.5, 0.3, 0.2], [0.5, 0.3, 0.2], "moved no weight beyond seed noise"),
])
def test_the_weights_reading_is_chosen_by_the_rule(task, trained, untrained, said):
    text = " ".join(your_elmo.read_weights(task, trained, untrained, [0.03] * 3))
    assert said in " ".join(text.split()), text


@pytest.mark.parametrize("trained, untrained, said, why", [
    (8.7, 2.5, "moved the relatives away", True),  # the learner's: why, and against chance
    (2.5, 8.7, "brought the relatives nearer", False),
    (4.0, 3.0, "within seed noise", True),  # the reference moves them away over its seeds
])
def test_the_unseen_words_reading_says_why_pre_training_moves_them(trained, untrained, said,
                                                                     why):
    text = " ".join(" ".join(your_elmo.read_ranks(trained, untrained, 2.1, 58.5, 4.1))
                    .split())
    assert said in text and "spelling alone" in text and "knows nothing (58.5)" in text
    assert ("the same places in sentences" in text) is why, text


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
