"""What a passed section shows of the learner's own ELMo (`course.your_elmo`), read on the
reference: every section with something to show says it against a baseline, and whatever a
layer is said to know, against the untrained biLM of the same shape."""

import pytest

from course import progress, your_elmo
from course.harness import Harness
from course.registry import REFERENCE_DIR, SECTIONS, find_section

# What each reading must set its numbers against.
AGAINST = {"corpus": ["<unk>"], "bilm": ["forward", "backward"],
           "pretrain": ["untrained", "floors", "reference"],
           "extract": ["layer 0"], "context": ["untrained", "reference", "different words"],
           "layer_weights": ["chance", "reference"], "char_encoder": ["untrained", "reference"]}


def test_every_section_but_the_first_shows_something():
    assert set(your_elmo.SHOWN) == {s.name for s in SECTIONS[1:]} == set(AGAINST)
    assert all(progress.AFTER_PASS[name] is your_elmo.show for name in AGAINST)


@pytest.mark.parametrize("name", list(AGAINST))
def test_a_reading_says_what_it_is_read_against(name):
    section = find_section(name)
    done = progress.SectionProgress(section, ())
    lines = your_elmo.show(done, REFERENCE_DIR)
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
