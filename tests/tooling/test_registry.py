"""The one registry agrees with the files that the tools read through it."""

from course.registry import ROOT, SECTIONS, find_section


def test_every_section_has_a_reference_module_and_a_test_file():
    for section in SECTIONS:
        assert (ROOT / "solutions" / f"{section.module}.py").exists(), section.module
        assert (ROOT / "tests" / "sections" / f"test_{section.module}.py").exists(), section.module


def test_module_names_show_the_order():
    for section in SECTIONS:
        assert section.module.startswith(f"s{section.number}_"), section.module


def test_sections_are_found_by_number_name_or_module():
    for section in SECTIONS:
        for key in (section.number, str(section.number), section.name, section.module):
            assert find_section(key) == section


def test_unknown_section_names_the_choices():
    try:
        find_section("lstm")
    except KeyError as err:
        assert "3=bilm" in str(err)
    else:
        raise AssertionError("find_section('lstm') should raise KeyError")
