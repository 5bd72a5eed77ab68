"""The class report (grading.report) on a generated class: grades made from the catalogue's
failure signatures by arithmetic alone (tools.class_example), every number checked against
what the test works out from the mistakes it gave each submission, never from the report's
own code."""

from __future__ import annotations

import json
import math
import statistics

import pytest

from course import signatures
from course.concepts import CONCEPTS
from course.registry import MAX_POINTS, SECTIONS
from course.results import NOT_IMPLEMENTED
from course.signatures import Known
from grading import report
from grading.outputs import read_grades
from grading.scan import FORGES, Flag
from tools.class_example import (
    catalogue_known,
    generate,
    section_tests,
    synthetic_result,
    write_grades,
)

KNOWN = catalogue_known()
CLASS = generate(KNOWN, size=30, seed=7)
CHEAT = synthetic_result("cheat", [], KNOWN, [Flag(FORGES, "line 3: a forged __eq__", 3)])
RESULTS = [s.result for s in CLASS] + [CHEAT]


def fails(synthetic, section: int, tests) -> bool:
    """Whether a generated submission fails any of `tests` of `section`, by its mistakes."""
    return any(k.section == section and k.tests & set(tests) for k in synthetic.mistakes)


def share(part: int, whole: int) -> str:
    return f"{100 * part / whole:.0f} %"


@pytest.fixture(scope="module")
def written(tmp_path_factory):
    out = tmp_path_factory.mktemp("report")
    grades = write_grades(RESULTS, out / "grades.json")
    report.write_report(read_grades(grades), out, str(grades), known=KNOWN)
    return out


def test_the_generated_class_is_graded_by_the_course_rule():
    """A section loses its points in proportion to the tests its mistakes fail."""
    assert len(CLASS) == 30 and {len(s.mistakes) for s in CLASS} <= {0, 1, 2, 3}
    assert any(s.mistakes for s in CLASS) and any(not s.mistakes for s in CLASS)
    for synthetic in CLASS:
        assert len({k.section for k in synthetic.mistakes}) == len(synthetic.mistakes)
        for section, graded in zip(SECTIONS, synthetic.result.sections, strict=True):
            tests = section_tests(section, KNOWN)
            failing = {t for k in synthetic.mistakes if k.section == section.number
                       for t in k.tests}
            assert graded.score == pytest.approx(
                section.points * (len(tests) - len(failing)) / len(tests))


def test_an_unfinished_section_scores_nothing_and_matches_no_mistake():
    """A section left as the stub fails every test, as the catalogue's signatures never do
    alone: it is not counted as a mistake."""
    unfinished = synthetic_result("stopped", [], stopped_at=4)
    assert [s.score for s in unfinished.sections[3:]] == [0] * (len(SECTIONS) - 3)
    assert {t.status for t in unfinished.sections[3].tests} == {NOT_IMPLEMENTED}
    everything = Known("all", 4, "", "", frozenset(section_tests(SECTIONS[3])))
    assert report.misconceptions([unfinished], [everything]) == []
    assert len(generate(KNOWN, 30, 7, unfinished=0.5)) == 30


def test_point_biserial_on_a_tiny_class_worked_by_hand():
    """Four submissions: two pass section 1's first test, two fail it; their rest of the
    score differs through section 2. r = (M1 - M0) / s * sqrt(p q), s the population
    standard deviation of the rest."""
    s1, s2 = section_tests(SECTIONS[0]), section_tests(SECTIONS[1])
    miss_1 = Known("t1", 1, "", "", frozenset({s1[0]}))
    miss_2 = [Known(f"t2-{n}", 2, "", "", frozenset(s2[:n])) for n in (1, 2, 3)]
    tiny = [synthetic_result("a", []), synthetic_result("b", [miss_2[0]]),
            synthetic_result("c", [miss_1, miss_2[0]]), synthetic_result("d", [miss_1, miss_2[2]])]
    lost = SECTIONS[1].points / len(s2)
    full = MAX_POINTS - SECTIONS[0].points  # the rest: the 100 without section 1's points
    rest = [full, full - lost, full - lost, full - 3 * lost]
    m1, m0 = (rest[0] + rest[1]) / 2, (rest[2] + rest[3]) / 2
    expected = (m1 - m0) / statistics.pstdev(rest) * math.sqrt(0.5 * 0.5)
    items = {(i.section, i.name): i for i in report.per_test(tiny)}
    first = items[(1, s1[0])]
    assert (first.ran, first.passed) == (4, 2)
    assert first.discrimination == pytest.approx(expected)
    assert not first.review
    # passed by all four: no discrimination, and flagged for review
    assert items[(1, s1[1])].discrimination is None and items[(1, s1[1])].review
    # a rest of the score the same for everyone: no discrimination either
    same_rest = [synthetic_result("e", []), synthetic_result("f", [miss_1])]
    item = next(i for i in report.per_test(same_rest) if i.name == s1[0])
    assert item.discrimination is None and not item.review
    assert report.point_biserial([True, False, True, False], [1.0, 0.0, 1.0, 0.0]) == \
        pytest.approx(1.0)


def test_pass_rates_per_test_and_per_concept():
    kept = [s.result for s in CLASS]
    tests = {(i.section, i.name): i for i in report.per_test(kept)}
    for section in SECTIONS:
        for test in section_tests(section, KNOWN):
            item = tests[(section.number, test)]
            passed = sum(not fails(s, section.number, {test}) for s in CLASS)
            assert (item.ran, item.passed) == (30, passed)
            assert item.review == (passed in (0, 30))
    concepts = {(i.section, i.name): i for i in report.per_concept(kept)}
    assert set(concepts) == {(c.section, c.id) for c in CONCEPTS}
    for concept in CONCEPTS:
        passed = sum(not fails(s, concept.section, concept.tests) for s in CLASS)
        assert concepts[(concept.section, concept.id)].passed == passed


def test_the_report_holds_the_sections_tests_and_concepts(written):
    text = (written / "report.md").read_text()
    assert "31 submissions: 30 in the statistics, 1 flagged" in text
    for section in SECTIONS:
        scores = [s.result.sections[section.number - 1].score for s in CLASS]
        clean = sum(not any(k.section == section.number for k in s.mistakes) for s in CLASS)
        row = next(line for line in text.splitlines()
                   if line.startswith(f"| {section.number} {section.name} | {section.points} |"))
        cells = [c.strip() for c in row.strip("|").split("|")]
        assert float(cells[2]) == pytest.approx(statistics.mean(scores), abs=0.005)
        assert float(cells[3]) == pytest.approx(statistics.median(scores), abs=0.005)
        zero = sum(score == 0 for score in scores)
        assert cells[4:] == [share(clean, 30), share(zero, 30)]
    concept = CONCEPTS[0]
    assert any(line.startswith(f"| 1 setup | {concept.id} |") for line in text.splitlines())
    assert "## Flagged submissions" in text
    assert text.split("## Flagged submissions")[1].strip().startswith(
        "* cheat: section 3: forges-values: line 3: a forged __eq__")


def test_the_html_is_the_same_report_self_contained(written):
    page = (written / "report.html").read_text()
    assert page.count("data:image/png;base64,") == 1
    assert "http://" not in page and "https://" not in page and "<script" not in page
    assert (written / "scores.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    for heading in ("Scores per section", "Tests", "Concepts", "Known mistakes",
                    "Flagged submissions"):
        assert f"<h2>{heading}</h2>" in page and f"## {heading}" in \
            (written / "report.md").read_text()


def test_each_known_mistake_is_counted_once_per_submission_that_holds_it(written):
    """Every mistake is alone in its section in the class, so it is counted exactly as many
    times as it was given; the flagged submission counts for none."""
    counts = {k.id: count for k, count in report.misconceptions([s.result for s in CLASS],
                                                                KNOWN)}
    given = {}
    for synthetic in CLASS:
        for k in synthetic.mistakes:
            given[k.id] = given.get(k.id, 0) + 1
    assert counts == given
    text = (written / "report.md").read_text()
    by_id = {k.id: k for k in KNOWN}
    for mistake, k in given.items():
        assert f"* {share(k, 30)} of the class ({k} of 30), section " in text
        assert by_id[mistake].mistake in text


def test_a_tie_names_each_mistake_and_no_signatures_say_so(monkeypatch, tmp_path):
    test = section_tests(SECTIONS[3])[0]
    twins = [Known(f"twin-{n}", 4, f"mistake {n}", "idea", frozenset({test})) for n in "ab"]
    tied = [synthetic_result(f"s{n}", [twins[0]]) for n in range(3)]
    assert [(k.id, c) for k, c in report.misconceptions(tied, twins)] == \
        [("twin-a", 3), ("twin-b", 3)]
    monkeypatch.setattr(signatures, "load", lambda *a: ([], {}))
    report.write_report(tied, tmp_path)
    assert "No signatures recorded" in (tmp_path / "report.md").read_text()


def test_the_command_writes_the_report_and_refuses_what_is_not_grades(tmp_path, capsys):
    grades = write_grades(RESULTS[:3], tmp_path / "grades.json")
    assert report.main([str(grades), "--out", str(tmp_path / "report")]) == 0
    assert {p.name for p in (tmp_path / "report").iterdir()} == \
        {"report.md", "report.html", "scores.png"}
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"submissions": []}))
    assert report.main([str(bad), "--out", str(tmp_path / "out")]) == 1
    assert "not a grades file" in capsys.readouterr().err
