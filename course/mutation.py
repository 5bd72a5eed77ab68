"""Mutation testing of `solutions/` (`make mutation`): a pytest plugin for mutmut's runs, and
the report of their results.

The plugin. mutmut copies `solutions/` to `mutants/solutions/`, where every function becomes
a trampoline that runs the original or the mutant named by `$MUTANT_UNDER_TEST`
("solutions.s3_bilm.xǁBiLMǁforward__mutmut_7"), choosing by module name. Three things stand
between that and the section tests; the plugin handles each:

* The harness imports each section under a fresh package name (`elmo_under_test_0.s3_bilm`),
  so no trampoline would ever recognise its mutant: every mutant would run the original code
  and survive. The plugin names the trampolined functions' module as mutmut does,
  `solutions.<module>`.
* mutmut runs the tests inside `mutants/`, so the harness would take every section from the
  mutated copy. `--reference DIR` points the harness back at the unmutated `solutions/`: the
  tests of section k see the mutants of section k only, exactly as they see a learner's
  section k and nothing else of the learner's.
* mutmut forks its workers from one process; each gets a scratch folder of its own for the
  harness, or the packages of one would collide with another's, every test would error, and
  every mutant would read as killed.

    pytest tests/sections -p course.mutation --reference=../solutions --impl=solutions

(Options with `=`: pytest takes a path after a space for a test path when it looks for its
configuration, and would find the repository's instead of the one in `mutants/`.)

The report. `python -m course.mutation` reads `mutants/` after `mutmut run`, counts the
mutants of each section by outcome, and checks every surviving mutant against the review,
`mistakes/equivalent_mutants.toml`: each survivor must be listed there with the reason it
is equivalent (no test could tell it from the reference), and each listed one must still
survive. It rewrites the results block of `MUTATION.md` and exits 1 on any difference.
"""

from __future__ import annotations

import functools
import importlib
import json
import os
import sys
import tomllib
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import pytest

from .registry import ROOT, SECTIONS

SOURCE_PACKAGE = "solutions"
MUTANTS_DIR = ROOT / "mutants"
REVIEW_FILE = ROOT / "mistakes" / "equivalent_mutants.toml"
REPORT_FILE = ROOT / "MUTATION.md"
BEGIN, END = "<!-- results: written by make mutation -->", "<!-- end of results -->"

# --- the plugin ------------------------------------------------------------------------------


def _named_as_mutmut_names_it(wrap_in_trampoline):
    """mutmut's decorator, with the decorated function's module renamed first."""

    @functools.wraps(wrap_in_trampoline)
    def wrap(mutants: dict, is_classmethod: bool = False):
        decorate = wrap_in_trampoline(mutants, is_classmethod)

        def rename_then_decorate(function):
            module = f"{SOURCE_PACKAGE}.{function.__module__.rpartition('.')[2]}"
            function.__module__ = module  # the trampoline compares it with the mutant's module
            trampoline = decorate(function)

            @functools.wraps(trampoline)
            def call(*args, **kwargs):
                # mutmut's statistics record the original's module; the module defines the
                # original only after this decorator has run, so it is renamed on each call
                mutants["_mutmut_orig"].__module__ = module
                return trampoline(*args, **kwargs)

            return call

        return rename_then_decorate

    wrap.renames_modules = True
    return wrap


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--reference", required=True, metavar="DIR",
                     help="the unmutated solutions/ that every other section comes from")


def pytest_configure(config: pytest.Config) -> None:
    from mutmut.mutation import trampoline

    from . import harness
    from .pretrained import CACHE_ENV_VAR

    reference = Path(config.getoption("--reference")).resolve()
    if not (reference / "__init__.py").exists():
        raise pytest.UsageError(f"--reference {reference}: not a solutions/ package")
    # mutmut forks every worker from one process that has imported the harness: without a
    # scratch folder of their own, they would all write their packages to that one folder
    importlib.reload(harness)
    harness.REFERENCE_DIR = reference
    if not getattr(trampoline.wrap_in_trampoline, "renames_modules", False):  # once a process
        trampoline.wrap_in_trampoline = _named_as_mutmut_names_it(trampoline.wrap_in_trampoline)
    # sections 5-7 use a biLM trained by the unmutated sections 1-4: the repository's cache
    # already holds it
    os.environ.setdefault(CACHE_ENV_VAR, str(reference.parent / "build" / "cache"))


# --- the report ------------------------------------------------------------------------------

DETECTED = ("killed", "timeout", "segfault")
UNDETECTED = ("survived", "no tests")


@dataclass(frozen=True)
class Mutant:
    name: str  # mutmut's: solutions.s3_bilm.xǁBiLMǁforward__mutmut_7
    module: str  # s3_bilm
    function: str  # BiLM.forward
    status: str
    original: str  # the changed lines, before and after
    mutated: str

    @property
    def key(self) -> tuple[str, str, str, str]:
        return self.module, self.function, self.original, self.mutated


def _function_of(name: str) -> str:
    mangled = name.rpartition(".")[2].partition("__mutmut_")[0]
    if mangled.startswith("x_"):
        return mangled[2:]
    _, cls, method = mangled.split("ǁ")
    return f"{cls}.{method}"


def read_mutants(mutants_dir: Path = MUTANTS_DIR) -> list[Mutant]:
    """Every mutant of `mutants_dir` with its outcome and the lines it changes."""
    from mutmut.mutation.diff_apply import get_diff_for_mutant
    from mutmut.stats import status_by_exit_code

    found = []
    for meta in sorted((mutants_dir / SOURCE_PACKAGE).glob("*.py.meta")):
        source = Path(SOURCE_PACKAGE) / meta.name.removesuffix(".meta")
        for name, code in json.loads(meta.read_text())["exit_code_by_key"].items():
            status = status_by_exit_code[code]
            original = mutated = ""
            if status in UNDETECTED:
                lines = get_diff_for_mutant(name, path=source).splitlines()[3:]
                original = "\n".join(x[1:].strip() for x in lines if x.startswith("-"))
                mutated = "\n".join(x[1:].strip() for x in lines if x.startswith("+"))
            found.append(Mutant(name, source.stem, _function_of(name), status, original,
                                mutated))
    return found


def read_review(path: Path = REVIEW_FILE) -> dict[tuple, str]:
    """{(module, function, original, mutated): why it is equivalent}."""
    with path.open("rb") as f:
        entries = tomllib.load(f).get("equivalent", [])
    return {(e["module"], e["function"], e["original"].strip(), e["mutated"].strip()): e["why"]
            for e in entries}


def results_block(mutants: list[Mutant], review: dict[tuple, str]) -> str:
    """The Markdown of the results: a table per section, then every survivor and why."""
    rows = ["| section | mutants | killed | timeout | survived | no tests | equivalent | score |",
            "|---|---|---|---|---|---|---|---|"]
    totals: Counter = Counter()
    for section in SECTIONS:
        counts = Counter(m.status for m in mutants if m.module == section.module)
        counts["equivalent"] = sum(1 for m in mutants if m.module == section.module
                                   and m.status in UNDETECTED and m.key in review)
        counts["all"] = sum(counts[s] for s in (*DETECTED, *UNDETECTED))
        totals.update(counts)
        rows.append(_row(f"{section.number} {section.name}", counts))
    rows.append(_row("**all**", totals))
    lines = [*rows, "",
             "Score: killed / (mutants - equivalent). Equivalent survivors, and why no test "
             "can tell them from the reference:", ""]
    for m in mutants:
        if m.status in UNDETECTED:
            why = review.get(m.key, "**not reviewed**")
            lines += [f"* `{m.module}.{m.function}` ({m.status}): `{_one_line(m.original)}` "
                      f"→ `{_one_line(m.mutated)}`  ", f"  {why}"]
    return "\n".join(lines)


def _row(label: str, counts: Counter) -> str:
    detected = sum(counts[s] for s in DETECTED)
    judged = counts["all"] - counts["equivalent"]
    score = f"{100 * detected / judged:.1f} %" if judged else "-"
    cells = [counts[s] for s in ("all", "killed", "timeout", "survived", "no tests",
                                 "equivalent")]
    return f"| {label} | " + " | ".join(str(c) for c in cells) + f" | {score} |"


def _one_line(text: str) -> str:
    return " / ".join(text.splitlines()).replace("|", "\\|") or "(nothing)"


def problems(mutants: list[Mutant], review: dict[tuple, str]) -> list[str]:
    """Survivors not in the review, reviewed mutants that no longer survive, and mutants that
    were not run."""
    found = []
    surviving = {m.key for m in mutants if m.status in UNDETECTED}
    for m in mutants:
        if m.status in UNDETECTED and m.key not in review:
            found.append(f"{m.name} {m.status}, not reviewed: {_one_line(m.original)} -> "
                         f"{_one_line(m.mutated)}; kill it with a test, or list it as "
                         f"equivalent in {REVIEW_FILE.relative_to(ROOT)} with why")
        elif m.status not in (*DETECTED, *UNDETECTED):
            found.append(f"{m.name}: {m.status}; run `make mutation` to the end")
    for key in review.keys() - surviving:
        found.append(f"{REVIEW_FILE.relative_to(ROOT)} lists {key[0]}.{key[1]} "
                     f"{_one_line(key[3])!r}, which no longer survives: remove it")
    return found


def write_report(block: str, path: Path = REPORT_FILE) -> None:
    text = path.read_text()
    head, _, rest = text.partition(BEGIN)
    _, _, tail = rest.partition(END)
    path.write_text(f"{head}{BEGIN}\n{block}\n{END}{tail}")


def main() -> int:
    if not MUTANTS_DIR.is_dir():
        print(f"{MUTANTS_DIR} does not exist: run `mutmut run` first (make mutation does)")
        return 1
    os.chdir(ROOT)  # mutmut reads its files relative to the working directory
    mutants, review = read_mutants(), read_review()
    write_report(results_block(mutants, review))
    found = problems(mutants, review)
    print("\n".join(found))
    detected = sum(1 for m in mutants if m.status in DETECTED)
    print(f"{detected} of {len(mutants)} mutants killed; {len(found)} problems; "
          f"results written to {REPORT_FILE.relative_to(ROOT)}")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
