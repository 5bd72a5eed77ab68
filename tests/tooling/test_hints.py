"""The hint ladder: `course/hints.toml` agrees with the reference (`tools.hints`), and
`make hint` climbs it for the first function of a section that does not pass yet."""

from __future__ import annotations

import subprocess
import sys

import pytest

from course import hints
from course.hints import Ladder, choose, climb, load, of_section, wanting
from course.progress import NOT_IMPLEMENTED, PASSED, SectionProgress, from_state
from course.registry import ROOT, find_section, stub_message
from course.state import State
from tools import hints as check

BILM = find_section("bilm")


def test_every_ladder_agrees_with_the_reference():
    """Every learner function has its ladder, with enough rungs, naming only what the
    reference uses, never a statement of the solution as it stands."""
    assert check.problems() == []


def replaced(function: str, *rungs: tuple[str, str]) -> tuple[Ladder, ...]:
    ladders = list(load())
    index = next(i for i, ladder in enumerate(ladders) if ladder.function == function)
    ladders[index] = Ladder(ladders[index].section, function, rungs or ladders[index].rungs)
    return tuple(ladders)


@pytest.mark.parametrize("text, found", [
    ("use `torch.nn.utils.rnn.pack_padded_sequence(x, lengths)`", "'pack_padded_sequence'"),
    ("`self.parameters()`", "the call 'parameters'"),
    ("`nn.LSTM(hidden_dim, hidden_dim, batch_first=True)`", "the keyword 'batch_first'"),
    ("`bidirectional=True`", "the keyword 'bidirectional'"),
    ("`tokens = self.token_projection(self.embedding(ids))`", "a statement of the solution"),
])
def test_a_hint_that_strays_from_the_reference_is_caught(text, found):
    ladders = replaced("BiLM.forward", ("concept", "c"), ("approach", "a"), ("near_code", text))
    assert any(found in problem for problem in check.problems(ladders)), check.problems(ladders)


def test_prose_and_what_is_not_python_pass():
    ladders = replaced("BiLM.forward", ("concept", "`<pad>` and `<s>`; `(T, B)`"),
                       ("approach", "then `make test SECTION=3`"),
                       ("near_code", "`torch.cat([f, b], dim=-1)` and `padding_idx=0`"))
    assert check.problems(ladders) == []


def test_a_missing_ladder_too_few_rungs_and_the_wrong_order_are_caught():
    ladders = list(load())
    without = tuple(x for x in ladders if x.function != "BiLM._run_stack")
    assert any("no ladder for BiLM._run_stack" in p for p in check.problems(without))
    short = replaced("bilm_loss", ("concept", "c"), ("approach", "a"))
    assert any("bilm_loss has 2 rungs; it needs at least 3" in p for p in check.problems(short))
    swapped = list(ladders)
    i, j = (next(k for k, x in enumerate(ladders) if x.function == f)
            for f in ("BiLM.__init__", "BiLM.forward"))
    swapped[i], swapped[j] = swapped[j], swapped[i]
    assert any("the module's order" in p for p in check.problems(tuple(swapped)))
    stranger = (*ladders, Ladder(3, "BiLM.backward", (("concept", "c"), ("approach", "a"))))
    assert any("does not ask the learner to write" in p for p in check.problems(stranger))


def record(name: str, status: str, message: str = "") -> dict:
    return {"nodeid": f"t::{name}", "section": BILM.number, "name": name, "status": status,
            "message": message}


def test_the_function_is_the_first_in_module_order_that_the_records_find_wanting():
    stub = f"NotImplementedError: {stub_message(BILM, 'BiLM._run_stack')}"
    records = (record("test_layer_0_ignores_context", PASSED),
               record("test_seed_key_shapes", NOT_IMPLEMENTED, stub),
               record("test_each_direction_has_its_own_parameters", "failed", "assert False"))
    assert wanting(BILM, records) == {
        (3, "BiLM._run_stack"): "BiLM._run_stack is not implemented yet",
        (3, "BiLM.__init__"): "test_each_direction_has_its_own_parameters does not pass yet "
                              "(failed); it checks: two language models: the backward one "
                              "shares no parameter with the forward one"}
    ladder, why = choose(load(), SectionProgress(BILM, records))
    assert ladder.function == "BiLM.__init__", "the module's order, not the records'"


def test_an_earlier_sections_stub_that_stops_the_tests_gets_its_own_ladder():
    """In a handout, section 3's tests reach the learner's section 2: its stub is the
    function to write first, and the hint says so."""
    corpus = find_section("corpus")
    blocked = (record("test_padded_batch_equals_one_sentence_at_a_time", NOT_IMPLEMENTED,
                      f"NotImplementedError: {stub_message(corpus, 'pad_batch')}"),
               record("test_layer_0_ignores_context", PASSED))
    ladder, why = choose(load(), SectionProgress(BILM, blocked))
    assert (ladder.section, ladder.function) == (2, "pad_batch")
    assert why == ("pad_batch is not implemented yet; section 3's tests need it: finish "
                   "section 2 first")
    own_too = (*blocked, record("test_each_layer_reads_the_layer_below", "failed"))
    assert choose(load(), SectionProgress(BILM, own_too))[0].function == "BiLM._run_stack", (
        "the section's own failing function comes first")


def test_a_section_not_run_starts_at_its_first_function_and_a_done_one_needs_none():
    ladders = of_section(load(), BILM)
    assert choose(load(), SectionProgress(BILM, ()))[0] == ladders[0]
    assert choose(load(), SectionProgress(BILM, (record("test_x", PASSED),))) is None


def test_each_hint_is_the_next_rung_and_the_state_counts_them(tmp_path):
    state = State(tmp_path / "progress.json")
    ladder = of_section(load(), BILM)[1]
    assert [climb(state, ladder) for _ in range(4)] == [(0, True), (1, True), (2, True),
                                                        (2, False)]
    assert state.hints_shown(BILM, ladder.function) == 3 and state.hints_used(BILM) == 3


def run_hint(state_path, impl, *args: str) -> str:
    run = subprocess.run([sys.executable, "-m", "course.hints", "--state", str(state_path),
                          "--impl", str(impl), *args], cwd=ROOT, capture_output=True,
                         text=True, timeout=120)
    assert run.returncode == 0, run.stdout + run.stderr
    return run.stdout


def test_make_hint_climbs_the_ladder_and_the_table_counts_the_hints(tmp_path):
    impl = ROOT / "exercises"
    state_path = tmp_path / "progress.json"
    state = State(state_path)
    stub = f"NotImplementedError: {stub_message(find_section(1), 'get_device')}"
    state.record_run([{"nodeid": "t::test_device_is_cuda_when_available", "section": 1,
                       "name": "test_device_is_cuda_when_available", "status": NOT_IMPLEMENTED,
                       "message": stub, "ran_at": "", "module_digest": None}], impl)
    state.save()
    first = run_hint(state_path, impl)
    assert first.startswith("Hint 1 of 3 for get_device (the concept), section 1 (setup)")
    assert "get_device is not implemented yet" in first and "1 hint used" in first
    second = run_hint(state_path, impl)
    assert second.startswith("Hint 2 of 3 for get_device (the approach)") and "2 hints used" in (
        second)
    progress = from_state(State.load(state_path), impl)
    assert progress[0].state == "not implemented yet; 2 hints used"
    other = run_hint(state_path, impl, "--section", "bilm")
    assert other.startswith("Hint 1 of 3 for reverse_within_lengths (the concept), section 3")


def test_the_hint_texts_print_as_written():
    """A rung's lines are shown as the file has them, indented, and the kinds in order."""
    ladder = load()[0]
    assert [kind for kind, _ in ladder.rungs] == [kind for kind, _ in hints.RUNGS]
    assert all(text == text.strip() and "\n\n\n" not in text for _, text in ladder.rungs)
