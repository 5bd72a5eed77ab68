"""Mutation testing: the plugin lets mutmut's trampolines find their mutants under the
harness's package names, and the report holds every survivor to the review."""

from mutmut.mutation import trampoline

from tools.mutation import (
    Mutant,
    Review,
    _function_of,
    _named_as_mutmut_names_it,
    changes_learner_code,
    in_scope,
    mutmut_targets,
    problems,
    results_block,
)


def x_tokenize__mutmut_orig(text):
    return "original"


def x_tokenize__mutmut_1(text):
    return "mutant"


def harness_imported_function(text):
    return "never called: the trampoline calls the original or a mutant"


harness_imported_function.__module__ = "elmo_0123456789abcdef.s2_corpus"  # as the harness names it


def test_a_mutant_is_found_under_the_harness_package_name(monkeypatch):
    monkeypatch.setenv("MUTANT_UNDER_TEST", "solutions.s2_corpus.x_tokenize__mutmut_1")
    mutants = {"_mutmut_orig": x_tokenize__mutmut_orig,
               "x_tokenize__mutmut_1": x_tokenize__mutmut_1}
    plain = trampoline.wrap_in_trampoline(dict(mutants))(harness_imported_function)
    assert plain("x") == "original", "without the plugin the mutant is never run"
    renamed = _named_as_mutmut_names_it(trampoline.wrap_in_trampoline)(mutants)
    assert renamed(harness_imported_function)("x") == "mutant"
    assert mutants["_mutmut_orig"].__module__ == "solutions.s2_corpus", "for mutmut's statistics"


def test_function_names_are_read_back_from_mutant_names():
    assert _function_of("solutions.s2_corpus.x_build_vocab__mutmut_12") == "build_vocab"
    assert _function_of("solutions.s3_bilm.xǁBiLMǁforward__mutmut_7") == "BiLM.forward"


def mutant(number: int, status: str, mutated: str = "", function: str = "bilm_loss") -> Mutant:
    return Mutant(f"solutions.s4_pretrain.x_{function}__mutmut_{number}", "s4_pretrain",
                  function, status, "return forward + backward" if mutated else "", mutated)


def review(survivors=None, not_mutated=None) -> Review:
    return Review(not_mutated or {}, survivors or {})


def test_every_survivor_must_be_reviewed_and_every_review_must_still_survive():
    mutants = [mutant(1, "killed"), mutant(2, "survived", "return backward + forward"),
               mutant(3, "survived", "return forward - backward")]
    found = problems(mutants, review({
        mutants[1].key: ("equivalent", "addition commutes"),
        ("s4_pretrain", "bilm_loss", "a", "b"): ("equivalent", "a mutant that is gone")}))
    assert len(found) == 2, found
    assert "mutmut_3 survived, not reviewed" in found[0]
    assert "no longer survives" in found[1]


def test_a_function_left_out_is_neither_counted_nor_a_problem():
    mutants = [mutant(1, "killed"), mutant(2, "not checked", function="train_bilm")]
    left_out = review(not_mutated={("s4_pretrain", "train_bilm"): "too slow, say"})
    assert problems(mutants, left_out) == []
    assert "| 4 pretrain | 1 | 1 | 0 | 0 | 0 | 100.0 % | 100.0 % |" in results_block(
        mutants, left_out)
    assert problems(mutants, review()) and "run `make mutation` to the end" in problems(
        mutants, review())[0]


def test_the_second_score_leaves_out_only_the_equivalent():
    mutants = [mutant(1, "killed"), mutant(2, "killed"),
               mutant(3, "survived", "return backward + forward"),
               mutant(4, "survived", "raise ValueError('XX')")]
    block = results_block(mutants, review({
        mutants[2].key: ("equivalent", "addition commutes"),
        mutants[3].key: ("not pinned", "the wording is free")}))
    assert "| 4 pretrain | 4 | 2 | 2 | 1 | 1 | 50.0 % | 66.7 % |" in block, block
    assert "addition commutes" in block and "the wording is free" in block
    assert "Not reviewed yet" in results_block(mutants, review())


def test_targets_name_every_function_but_those_left_out():
    targets = mutmut_targets(review(not_mutated={("s4_pretrain", "_encode_corpus"): "x"}))
    assert "solutions.s3_bilm.xǁBiLMǁforward__mutmut_*" in targets
    assert "solutions.s2_corpus.x_build_vocab__mutmut_*" in targets
    assert "solutions.s4_pretrain.x_train_bilm__mutmut_*" in targets
    assert not any("_encode_corpus" in t for t in targets)
    assert not any("corpus_loss" in t for t in targets), "given: no learner's code in it"


def test_a_mutant_of_a_given_line_is_out_of_scope():
    """A given check before the learner's block, or a default in a signature, is not the
    learner's code: its mutants are neither counted nor a problem."""
    given = Mutant("solutions.s1_setup.x_get_device__mutmut_1", "s1_setup", "get_device",
                   "survived", "check_device_request(preferred, DEVICE_ENV_VAR)  # clear "
                   "errors for a bad request, given", "check_device_request(None, DEVICE_ENV_VAR)")
    learners = Mutant("solutions.s4_pretrain.x_bilm_loss__mutmut_9", "s4_pretrain",
                      "bilm_loss", "survived", "return forward + backward",
                      "return forward - backward")
    assert not changes_learner_code(given) and changes_learner_code(learners)
    assert [m.name for m in in_scope([given, learners], review())] == [learners.name]
