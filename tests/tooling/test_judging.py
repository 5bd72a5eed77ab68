"""Judged tests (tests/sections/judged.py, grading/judging.py): the act's data crosses as plain
data, the grader draws the cases and judges them in its own process, and what a run says of
passing never passes a judged test."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

from course.harness import Harness
from course.registry import EXERCISES_DIR, FAKES_DIR, REFERENCE_DIR, find_section
from course.results import FAILED, NOT_IMPLEMENTED, PASSED
from grading import judging
from grading.records import Stream
from tests.sections.judged import NotData, from_plain, to_plain

MODULE = "tests.sections.test_s7_layer_weights"
NAME = "test_output_is_gamma_times_the_weighted_sum"
NODEID = f"tests/sections/test_s7_layer_weights.py::{NAME}"
SPEC = {"module": MODULE, "name": NAME, "params": to_plain({})}
SEED = 12345


def section_module(folder, name):
    """Section `name`'s module of the implementation in `folder`, the others the fakes."""
    harness, section = Harness(folder, FAKES_DIR), find_section(name)
    return harness.module(harness.load(section), section)


def section_7(folder):
    return section_module(folder, "layer_weights")


def uniform_weights(tmp_path):
    """The reference's section 7 with every layer weighed alike, whatever its scalars."""
    source = (REFERENCE_DIR / "s7_layer_weights.py").read_text().replace(
        "return torch.softmax(self.scalar_parameters, dim=0)",
        "return torch.ones_like(self.scalar_parameters) / len(self.scalar_parameters)")
    assert "ones_like(self.scalar_parameters)" in source
    (tmp_path / "s7_layer_weights.py").write_text(source)
    return section_7(tmp_path)


def acted(module, cases):
    """{index: data} as a run's acts send it, of `module` on `cases`."""
    act = judging._test(SPEC).judged.act
    return {i: json.loads(json.dumps(to_plain(act(layer_weights=module, **from_plain(case)))))
            for i, case in enumerate(cases)}


def test_plain_data_crosses_unchanged_and_nothing_else_crosses():
    value = {"t": torch.arange(6, dtype=torch.float32).view(2, 3), "a": np.eye(2),
             "n": (1, 2.5, True, None, "x"), "l": [np.float32(1.5)]}
    back = from_plain(json.loads(json.dumps(to_plain(value))))
    assert torch.equal(back["t"], value["t"]) and np.array_equal(back["a"], value["a"])
    assert back["n"] == value["n"] and back["l"] == [1.5]
    for not_data in (torch.nn.Linear(2, 2), object(), {1: 2}, np.array([object()])):
        with pytest.raises(NotData):
            to_plain(not_data)
    for forged in ({"tensor": "object", "shape": [1], "data": ""},
                   {"array": "float32", "shape": [3], "data": "AAAA"}, {"dict": 3}, {"x": 1}):
        with pytest.raises(NotData):
            from_plain(forged)


def test_the_cases_are_the_grader_s_own_per_submission():
    first = judging.cases_for({NODEID: SPEC}, SEED)[NODEID]
    assert judging.cases_for({NODEID: SPEC}, SEED)[NODEID] == first
    assert judging.cases_for({NODEID: SPEC}, SEED + 1)[NODEID] != first
    assert len(first) > 1
    key = b"k" * 32
    assert judging.section_seed(key, 7, b"a") != judging.section_seed(key, 7, b"b")


def test_the_judge_passes_the_reference_and_fails_a_wrong_mix(tmp_path):
    cases = judging.cases_for({NODEID: SPEC}, SEED)[NODEID]
    assert judging.verdict(SPEC, cases, acted(section_7(REFERENCE_DIR), cases)) == (None, None)
    why, _ = judging.verdict(SPEC, cases, acted(uniform_weights(tmp_path), cases))
    assert why is not None and why.startswith("AssertionError in the test's checks, on case ")
    assert "Failing case: stack=(array(" in why


def test_what_a_run_says_of_passing_passes_no_judged_test(tmp_path):
    """A run that records every test passed (a forged runner, a patched comparison) passes a
    judged test only where its data passes the grader's judge."""
    cases = {NODEID: judging.cases_for({NODEID: SPEC}, SEED)[NODEID]}
    wrong = acted(uniform_weights(tmp_path), cases[NODEID])
    partial = dict(list(acted(section_7(REFERENCE_DIR), cases[NODEID]).items())[:1])
    forged_data = {i: {"dict": {"as_list": 0, "as_stack": 0}} for i in range(len(cases[NODEID]))}
    for acts, expected in ((wrong, "AssertionError"), ({}, "sent no data"),
                           (partial, "sent no data for case 2"), (forged_data, "cannot be judged")):
        stream = Stream(begun=True, tests={NODEID: {"status": PASSED}}, acts={NODEID: acts})
        judging.judge_stream(stream, {NODEID: SPEC}, cases)
        assert stream.tests[NODEID]["status"] == FAILED
        assert expected in stream.tests[NODEID]["judged"]


def test_a_stub_s_act_fails_as_not_implemented_in_a_learner_s_run_too():
    module = section_7(EXERCISES_DIR)
    act = judging._test(SPEC).judged.act
    case = from_plain(judging.cases_for({NODEID: SPEC}, SEED)[NODEID][0])
    with pytest.raises(NotImplementedError):
        act(layer_weights=module, **case)
    stream = Stream(begun=True, tests={NODEID: {"status": NOT_IMPLEMENTED}}, acts={})
    judging.judge_stream(stream, {NODEID: SPEC}, {NODEID: [to_plain(case)]})
    assert stream.tests[NODEID]["status"] == NOT_IMPLEMENTED


def test_prepare_finds_every_judged_test_with_its_parameters():
    import pytest as pytest_

    class Collect:
        def pytest_collection_finish(self, session):
            self.found = judging.judged_tests(session.items)

    collect = Collect()
    assert pytest_.main(["tests/sections/test_s7_layer_weights.py", "--impl",
                         str(REFERENCE_DIR), "--collect-only", "-q"], plugins=[collect]) == 0
    assert collect.found[NODEID] == SPEC
    for nodeid, spec in collect.found.items():
        assert judging._test(spec).judged.judge_function is not None, nodeid


def test_a_judge_reads_the_biLM_it_trusts_never_the_one_the_run_held():
    """Section 5's judge compares the rows with the biLM that the fakes pre-train, made in
    its own process: extraction from another biLM (the run's own, changed) fails."""
    from tests.sections.judged import TRUSTED

    spec = {"module": "tests.sections.test_s5_extract",
            "name": "test_rows_are_the_words_read_between_boundaries", "params": to_plain({})}
    harness = Harness(REFERENCE_DIR, FAKES_DIR)
    extract = harness.module(harness.load(find_section("extract")), find_section("extract"))
    act = judging._test(spec).judged.act
    honest = act(extract=extract, trained=TRUSTED.trained)
    assert judging.verdict(spec, [to_plain({})], {0: to_plain(honest)}) == (None, None)
    other = TRUSTED.trained
    with torch.no_grad():
        for parameter in other.model.parameters():
            parameter.mul_(0.5)
    changed = act(extract=extract, trained=other)
    why, digest = judging.verdict(spec, [to_plain({})], {0: to_plain(changed)})
    assert "AssertionError" in why and len(digest) == 16  # assert_close's, the grader's own
