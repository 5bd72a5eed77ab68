"""Mutation testing: the plugin lets mutmut's trampolines find their mutants under the
harness's package names, and the report holds every survivor to the review."""

from mutmut.mutation import trampoline

from course.mutation import Mutant, _function_of, _named_as_mutmut_names_it, problems, results_block


def x_tokenize__mutmut_orig(text):
    return "original"


def x_tokenize__mutmut_1(text):
    return "mutant"


def harness_imported_function(text):
    return "never called: the trampoline calls the original or a mutant"


harness_imported_function.__module__ = "elmo_under_test_3.s2_corpus"  # as the harness names it


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


def mutant(number: int, status: str, mutated: str = "") -> Mutant:
    return Mutant(f"solutions.s4_pretrain.x_bilm_loss__mutmut_{number}", "s4_pretrain",
                  "bilm_loss", status, "return forward + backward" if mutated else "", mutated)


def test_every_survivor_must_be_reviewed_and_every_review_must_still_survive():
    mutants = [mutant(1, "killed"), mutant(2, "survived", "return backward + forward"),
               mutant(3, "survived", "return forward - backward")]
    review = {mutants[1].key: "addition commutes",
              ("s4_pretrain", "bilm_loss", "a", "b"): "a mutant that is gone"}
    found = problems(mutants, review)
    assert len(found) == 2, found
    assert "mutmut_3 survived, not reviewed" in found[0]
    assert "no longer survives" in found[1]


def test_the_score_leaves_out_equivalent_mutants():
    mutants = [mutant(1, "killed"), mutant(2, "killed"), mutant(3, "killed"),
               mutant(4, "survived", "return backward + forward")]
    block = results_block(mutants, {mutants[3].key: "addition commutes"})
    assert "| 4 pretrain | 4 | 3 | 0 | 1 | 0 | 1 | 100.0 % |" in block, block
    assert "addition commutes" in block
    assert "75.0 %" in results_block(mutants, {}) and "**not reviewed**" in results_block(
        mutants, {})
