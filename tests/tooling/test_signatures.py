"""Failures diagnosed by pattern (course.signatures): every catalogued mistake is recognised
by its own signature, the reference by none, and a run of a section's tests names the
mistake that its failures match."""

import dataclasses
import os
import re
import subprocess
import sys

import pytest

from course import signatures
from course.concepts import title_of
from course.registry import ROOT
from tools import mistakes

pytestmark = pytest.mark.slow  # make check replays it at unchanged inputs (replay.py)

KNOWN, _ = signatures.load()


def test_the_signatures_are_current():
    """They record every mistake of the catalogue, each with its own test, measured on the
    section tests and catalogue as they are (else: make signatures)."""
    assert not mistakes.stale_signatures(mistakes.load_catalogue())


@pytest.mark.parametrize("known", KNOWN, ids=lambda k: k.id)
def test_every_mistake_matches_its_own_signature_first(known):
    score, likeliest = signatures.likely(known.section, known.tests)
    assert score == 1 and known in likeliest


@pytest.mark.parametrize("section", sorted({k.section for k in KNOWN}))
def test_the_reference_matches_none(section):
    assert signatures.likely(section, []) == (0.0, [])


def test_a_match_is_a_jaccard_similarity_of_at_least_one_half():
    """Counted over the tests that ran: a signature's tests that did not run do not count."""
    known = [signatures.Known("k", 4, "words", "an idea", frozenset({"a", "b", "c"}))]
    assert signatures.likely(4, {"a", "b"}, known=known) == (2 / 3, known)
    assert signatures.likely(4, {"a"}, known=known)[1] == []
    assert signatures.likely(4, {"a"}, ran={"a", "x"}, known=known) == (1.0, known)
    assert signatures.likely(5, {"a", "b", "c"}, known=known)[1] == []


@pytest.mark.parametrize("known", KNOWN, ids=lambda k: k.id)
def test_a_mistake_that_fails_as_recorded_is_named_before_those_that_fail_otherwise(known):
    """Of the mistakes that fail the same tests, those whose messages (numbers aside) and
    wrong outputs are the learner's are named; recorded for every mistake."""
    assert known.fingerprints and set(known.fingerprints) <= known.tests
    score, named = signatures.likely(known.section, known.tests, seen=known.fingerprints)
    assert score == 1 and known in named
    assert all(signatures.fail_alike(k, known.fingerprints) for k in named)


def test_the_same_messages_narrow_the_tied_mistakes_and_the_same_outputs_narrow_them_more():
    def known(name: str, fingerprint: str) -> signatures.Known:
        return signatures.Known(name, 4, name, "", frozenset({"a", "b"}), {"a": fingerprint})

    tied = [known("half", "m1/d1"), known("sum", "m1/d2"), known("other", "m2/")]
    def named(fingerprint: str) -> list[str]:
        return [k.id for k in signatures.likely(4, {"a", "b"}, known=tied,
                                                seen={"a": fingerprint})[1]]

    assert named("m1/d1") == ["half"]  # the very message and output
    assert named("m1/d9") == ["half", "sum"]  # the message: another output of that mistake
    assert named("m9/") == ["half", "sum", "other"]  # neither: all that fail those tests
    assert signatures.fingerprint("x = 1.5 at 0x7f in <module 'a' from '/a/m.py'>", None) \
        == signatures.fingerprint("x  = 2 at 0x1a in <module 'b' from '/b/m.py'>", None) \
        != signatures.fingerprint("y = 1.5 at 0x7f in <module 'a' from '/a/m.py'>", None)



def test_each_part_of_the_failures_keeps_its_own_mistakes():
    """Two mistakes at once, each explaining one failing test: the one that fails as
    recorded does not hide the other, whose message differs from its record."""
    decode = signatures.Known("decode", 2, "decode", "", frozenset({"a"}), {"a": "m1/"})
    pad = signatures.Known("pad", 2, "pad", "", frozenset({"b"}), {"b": "m2/"})
    assert signatures.likely(2, {"a", "b"}, known=[decode, pad],
                             seen={"a": "m1/", "b": "m9/"}) == (0.5, [decode, pad])


def test_a_message_is_fingerprinted_without_pytest_s_explanation_of_the_assert():
    """Which pytest cuts to 8 lines, but not with -vv or on CI hosts ($CI)."""
    message = "AssertionError: column 0 is wrong\nassert [0, 1] == [1, 0]\n  \n  At index 0"
    assert signatures.fingerprint(message, None) \
        == signatures.fingerprint(message + "\n  Full diff:\n  - [1, 0]", None) \
        != signatures.fingerprint("AssertionError: column 0 is wrong\nassert x", None)

CATALOGUE = {m.id: m for m in mistakes.load_catalogue()}


def summary_of_a_learner_run(test_file, impl) -> str:
    """The "what your failures look like" block of a failing run of `test_file` on `impl`,
    as a learner's `make test` runs it (the course's hypothesis profile), on one line."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("SECTION", "ELMO_IMPL", "HYPOTHESIS_PROFILE")}
    run = subprocess.run([sys.executable, "-m", "pytest", str(test_file), "--impl", str(impl),
                          "-q", "-p", "no:cacheprovider"],
                         cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert run.returncode == 1, run.stdout[-2000:]
    return " ".join(run.stdout[run.stdout.index("what your failures look like"):].split())


@pytest.mark.parametrize("mistake, twin", [
    ("directions-averaged", "loss-summed-over-tokens"),  # another wrong loss, same test
    ("decode-joins-the-words", "decode-drops-special-tokens"),  # the learner's module named
])
def test_a_failing_run_names_the_mistake_it_matches(tmp_path, mistake, twin):
    """A section run with a catalogued mistake, as a learner runs it: the run ends with that
    mistake in words and its concept, and not with its twin, which fails the same tests in
    another way."""
    entry = CATALOGUE[mistake]
    summary = summary_of_a_learner_run(entry.section.test_file,
                                       mistakes.make_copy(entry, tmp_path / "impl"))
    assert "your failing tests are exactly the tests that a known mistake fails, with the " \
        "same messages; check whether it is yours" in summary
    assert entry.mistake in summary and " ".join(title_of(entry.concept).split()) in summary
    assert CATALOGUE[twin].mistake not in summary


def test_an_error_that_stops_many_tests_is_shown_once_with_the_count(tmp_path):
    """The transpose before Conv1d forgotten: one error at one line stops most of section 8;
    the failures show it once, headed by how many tests it stopped, after the known mistake."""
    entry = CATALOGUE["convolved-over-the-embedding"]
    summary = summary_of_a_learner_run(entry.section.test_file,
                                       mistakes.make_copy(entry, tmp_path / "impl"))
    stopped = re.search(r"The same (\w+) at \S+ stopped (\d+) tests", summary)
    assert stopped and int(stopped[2]) >= 2, summary[:2000]
    errors_shown = summary.split("short test summary")[0].count(" checks: ")
    assert errors_shown < int(stopped[2]), f"{errors_shown} errors shown: the same one again"
    assert summary.index(entry.mistake) < summary.index("The same"), "the diagnosis first"


def test_two_mistakes_at_once_are_both_named_as_each_explaining_a_part(tmp_path):
    """Section 2 padded at the front and decoded into one string: each mistake fails one of
    the two failing tests, and the run names both, saying the code may hold more than one."""
    first, second = CATALOGUE["left-padding"], CATALOGUE["decode-joins-the-words"]
    impl = mistakes.make_copy(first, tmp_path / "impl")
    module = impl / first.section.file_name
    module.write_text(mistakes.apply_edits(module.read_text(), second, module.name))
    summary = summary_of_a_learner_run(first.section.test_file, impl)
    assert "your failing tests are in part (50% in common) the tests that each of 2 known " \
        "mistakes fails, with the same messages; check each: your code may hold more than " \
        "one of them" in summary, summary
    assert first.mistake in summary and second.mistake in summary


def test_rewording_a_message_changes_no_fingerprint_and_no_digest(tmp_path):
    """A message's words are the test's own: a fingerprint keeps what the learner's code put
    in it (values, the word a test chose by what it found) and the digests that make the
    signatures stale leave the words out, so a maintainer rewords a message without `make
    signatures`. Its inputs and expected values are code: changing one makes them stale."""
    before = tmp_path / "test_before.py"
    before.write_text('def test_x(found, side):\n    """Checks x."""\n'
                      '    assert found == [1], f"the {side} states moved at {found}: keep them"\n')
    after = tmp_path / "test_after.py"
    after.write_text('def test_x(found, side):\n    """Checks that x holds."""\n'
                     '    assert found == [1], f"your {side} states changed at {found}, '
                     'which they must not"\n')
    data = tmp_path / "test_data.py"
    data.write_text(before.read_text().replace("[1]", "[2]"))

    def seen(test_file, message: str) -> str:
        return signatures.fingerprint(message, None, signatures.written_by_the_tests(test_file))

    old = seen(before, "AssertionError: the forward states moved at [3, 4]: keep them")
    new = seen(after, "AssertionError: your forward states changed at [3, 4], which they "
                      "must not")
    other = seen(after, "AssertionError: your backward states changed at [3, 4], which they "
                        "must not")
    assert old == new != other
    assert signatures.code_digest(before) == signatures.code_digest(after)
    assert signatures.code_digest(before) != signatures.code_digest(data)


def test_rewording_a_mistake_asks_for_no_new_measurement():
    """A mistake's words are what a learner reads, not what it fails: reworded, the
    signatures are stale only in their words, which `make signatures` rewrites without
    running a test."""
    catalogue = mistakes.load_catalogue()
    first = next(m for m in catalogue if isinstance(m, mistakes.Mistake))
    reworded = [dataclasses.replace(m, mistake=f"{m.mistake}, reworded") if m is first else m
                for m in catalogue]
    assert mistakes.stale_signatures(catalogue) == []
    [problem] = mistakes.stale_signatures(reworded)
    assert problem.startswith(f"the words of {first.id} changed") and "runs nothing" in problem
