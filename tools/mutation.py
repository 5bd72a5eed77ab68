"""Mutation testing of `solutions/` (`make mutation`): a pytest plugin for mutmut's runs, and
the report of their results.

The plugin. mutmut copies `solutions/` to `mutants/solutions/`, where every function becomes
a trampoline that runs the original or the mutant named by `$MUTANT_UNDER_TEST`
("solutions.s3_bilm.xǁBiLMǁforward__mutmut_7"), choosing by module name. The harness
imports each section under a package name of its own (`elmo_<digest>.s3_bilm`), so no
trampoline would ever recognise its mutant: every mutant would run the original code and
survive. The plugin names the trampolined functions' module as mutmut does,
`solutions.<module>`. The tests of section k see the mutants of section k only, exactly as
they see a learner's section k: every other section comes from the tests' fakes.

    pytest tests/sections -p tools.mutation --impl=solutions

(Options with `=`: pytest takes a path after a space for a test path when it looks for its
configuration, and would find the repository's instead of the one in `mutants/`.)

The report. `python -m tools.mutation` reads `mutants/` after `mutmut run`, counts the
mutants of each section by outcome, and holds every surviving mutant to the review,
`mistakes/mutation_review.toml`. There each survivor is listed with its kind and why:
*equivalent* (no test can tell it from the reference) or *not pinned* (observable, but left
free on purpose, because a learner's correct code may differ there), and each listed one
must still survive. The review also names the functions left out of mutation, with why;
`--targets` prints mutmut's name patterns for all the others, which `make mutation` passes
to `mutmut run`. The report runs every survivor again against its section's whole test
file, and a few kills too (see `settle`), rewrites the results block of `MUTATION.md`, and
exits 1 on any difference.
"""

from __future__ import annotations

import argparse
import ast
import dataclasses
import functools
import json
import os
import subprocess
import sys
import tomllib
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import pytest

from course.registry import ROOT, SECTIONS

SOURCE_PACKAGE = "solutions"
MUTANTS_DIR = ROOT / "mutants"
REVIEW_FILE = ROOT / "mistakes" / "mutation_review.toml"
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


def pytest_configure(config: pytest.Config) -> None:
    from mutmut.mutation import trampoline

    if not getattr(trampoline.wrap_in_trampoline, "renames_modules", False):  # once a process
        trampoline.wrap_in_trampoline = _named_as_mutmut_names_it(trampoline.wrap_in_trampoline)


# --- the report ------------------------------------------------------------------------------

DETECTED = ("killed", "timeout", "segfault")
UNDETECTED = ("survived", "no tests")
KINDS = {
    "equivalent": "no test can tell it from the reference",
    "not pinned": "observable, but left free on purpose: a learner's correct code may differ "
                  "there (the wording of a message, the label of a progress bar)",
}


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


@dataclass(frozen=True)
class Review:
    """`mistakes/mutation_review.toml`: the functions left out, and each survivor's case."""

    not_mutated: dict[tuple[str, str], str]  # (module, function): why
    survivors: dict[tuple[str, str, str, str], tuple[str, str]]  # Mutant.key: (kind, why)


def _function_of(name: str) -> str:
    mangled = name.rpartition(".")[2].partition("__mutmut_")[0]
    if mangled.startswith("x_"):
        return mangled[2:]
    _, cls, method = mangled.split("ǁ")
    return f"{cls}.{method}"


def read_mutants(mutants_dir: Path = MUTANTS_DIR) -> list[Mutant]:
    """Every mutant of `mutants_dir` with its outcome and, for a survivor, what it changes."""
    from mutmut.mutation.diff_apply import get_diff_for_mutant
    from mutmut.stats import status_by_exit_code

    found = []
    for meta in sorted((mutants_dir / SOURCE_PACKAGE).glob("*.py.meta")):
        source = Path(SOURCE_PACKAGE) / meta.name.removesuffix(".meta")
        for name, code in json.loads(meta.read_text())["exit_code_by_key"].items():
            status = status_by_exit_code[code]
            original = mutated = ""
            if status in UNDETECTED or _function_of(name) in learner_lines(source.stem):
                lines = get_diff_for_mutant(name, path=source).splitlines()[3:]
                original = "\n".join(x[1:].strip() for x in lines if x.startswith("-"))
                mutated = "\n".join(x[1:].strip() for x in lines if x.startswith("+"))
            found.append(Mutant(name, source.stem, _function_of(name), status, original,
                                mutated))
    return found


def read_review(path: Path = REVIEW_FILE) -> Review:
    """The review; a survivor gives its own `kind` and `why`, or names one of `[reasons]`."""
    with path.open("rb") as f:
        data = tomllib.load(f)
    reasons = data.get("reasons", {})
    survivors = {}
    for entry in data.get("survivor", []):
        case = reasons[entry["reason"]] if "reason" in entry else entry
        if case["kind"] not in KINDS:
            raise ValueError(f"{path}: kind must be one of {sorted(KINDS)}, got {case['kind']!r}")
        key = (entry["module"], entry["function"], entry["original"].strip(),
               entry["mutated"].strip())
        survivors[key] = (case["kind"], case["why"])
    return Review(
        {(e["module"], e["function"]): e["why"] for e in data.get("not_mutated", [])},
        survivors)


@functools.cache
def learner_lines(module: str) -> dict[str, frozenset[str]]:
    """{function: the stripped lines of its marked blocks}: the code a learner writes. The
    rest of `solutions/` (a given function, a given check before a block, a default in a
    signature) is given code, tested by tests/tooling, and out of mutation's scope: a
    mutant there says nothing about the section tests."""
    from .exercises import find_blocks

    source = (ROOT / SOURCE_PACKAGE / f"{module}.py").read_text()
    lines = source.splitlines()
    found: dict[str, set[str]] = {}
    for block in find_blocks(source):
        found.setdefault(block.function, set()).update(
            line.strip() for line in lines[block.begin:block.end - 1] if line.strip())
    return {function: frozenset(body) for function, body in found.items()}


def changes_learner_code(mutant: Mutant) -> bool:
    body = learner_lines(mutant.module).get(mutant.function)
    changed = [line for line in mutant.original.splitlines() if line.strip()]
    return body is not None and (not changed or any(line in body for line in changed))


def mutmut_targets(review: Review, solutions: Path = ROOT / SOURCE_PACKAGE) -> list[str]:
    """mutmut's name patterns for every function of `solutions/` with learner's code but
    those left out."""
    targets = []
    for section in SECTIONS:
        tree = ast.parse((solutions / f"{section.module}.py").read_text())
        for node in tree.body:
            methods = node.body if isinstance(node, ast.ClassDef) else [node]
            for function in methods:
                if not isinstance(function, ast.FunctionDef | ast.AsyncFunctionDef):
                    continue
                owner = node.name if isinstance(node, ast.ClassDef) else None
                name = f"{owner}.{function.name}" if owner else function.name
                if ((section.module, name) in review.not_mutated
                        or name not in learner_lines(section.module)):
                    continue
                mangled = f"xǁ{owner}ǁ{function.name}" if owner else f"x_{function.name}"
                targets.append(f"{SOURCE_PACKAGE}.{section.module}.{mangled}__mutmut_*")
    return targets


def in_scope(mutants: list[Mutant], review: Review) -> list[Mutant]:
    """The mutants of the learner's code (`changes_learner_code`) but in functions left out."""
    return [m for m in mutants if (m.module, m.function) not in review.not_mutated
            and changes_learner_code(m)]


def results_block(mutants: list[Mutant], review: Review) -> str:
    """The Markdown of the results: a table per section, then every survivor and why."""
    mutants = in_scope(mutants, review)
    rows = ["| section | mutants | killed | survived | of which equivalent | not pinned "
            "| score | score without the equivalent |", "|---|---|---|---|---|---|---|---|"]
    totals: Counter = Counter()
    for section in SECTIONS:
        counts: Counter = Counter()
        for m in mutants:
            if m.module == section.module:
                counts["all"] += 1
                counts["killed" if m.status in DETECTED else "survived"] += 1
                counts[review.survivors.get(m.key, ("unreviewed",))[0]] += m.status in UNDETECTED
        totals.update(counts)
        rows.append(_row(f"{section.number} {section.name}", counts))
    rows.append(_row("**all**", totals))
    lines = [*rows, ""]
    for kind, meaning in KINDS.items():
        lines += [f"### {kind.capitalize()}", "", f"{meaning.capitalize()}.", ""]
        by_reason: dict[str, list[Mutant]] = {}
        for m in mutants:
            if m.status in UNDETECTED and review.survivors.get(m.key, ("",))[0] == kind:
                by_reason.setdefault(review.survivors[m.key][1], []).append(m)
        for why, group in by_reason.items():
            lines += [f"* {why}", ""]
            lines += [f"  * `{m.module}.{m.function}`: `{_one_line(m.original)}` → "
                      f"`{_one_line(m.mutated)}`" for m in group]
            lines.append("")
    unreviewed = [m for m in mutants if m.status in UNDETECTED and m.key not in review.survivors]
    if unreviewed:
        lines += ["### Not reviewed yet", ""]
        lines += [f"* `{m.name}`: `{_one_line(m.original)}` → `{_one_line(m.mutated)}`"
                  for m in unreviewed]
    return "\n".join(lines).rstrip()


def _row(label: str, counts: Counter) -> str:
    judged = counts["all"] - counts["equivalent"]
    cells = [counts[k] for k in ("all", "killed", "survived", "equivalent", "not pinned")]
    scores = [_percent(counts["killed"], counts["all"]), _percent(counts["killed"], judged)]
    return f"| {label} | " + " | ".join(str(c) for c in [*cells, *scores]) + " |"


def _percent(part: int, whole: int) -> str:
    return f"{100 * part / whole:.1f} %" if whole else "-"


def _one_line(text: str) -> str:
    return " / ".join(text.splitlines()).replace("|", "\\|").replace("`", "'") or "(nothing)"


def problems(mutants: list[Mutant], review: Review) -> list[str]:
    """Survivors not in the review, reviewed survivors that no longer survive, and mutants
    that were not run."""
    found = []
    mutants = in_scope(mutants, review)
    for m in mutants:
        if m.status in UNDETECTED and m.key not in review.survivors:
            found.append(f"{m.name} {m.status}, not reviewed: {_one_line(m.original)} -> "
                         f"{_one_line(m.mutated)}; kill it with a test, or list it in "
                         f"{REVIEW_FILE.relative_to(ROOT)} with why")
        elif m.status not in (*DETECTED, *UNDETECTED):
            found.append(f"{m.name}: {m.status}; run `make mutation` to the end")
    surviving = {m.key for m in mutants if m.status in UNDETECTED}
    for key in review.survivors.keys() - surviving:
        found.append(f"{REVIEW_FILE.relative_to(ROOT)} lists {key[0]}.{key[1]} "
                     f"{_one_line(key[3])!r}, which no longer survives: remove it")
    return found


def run_alone(mutant: Mutant) -> str:
    """"killed" or "survived": the mutant against its section's whole test file, in a fresh
    process, outside mutmut."""
    with (ROOT / "pyproject.toml").open("rb") as f:
        options = tomllib.load(f)["tool"]["mutmut"]["pytest_add_cli_args"]
    run = subprocess.run(
        [sys.executable, "-m", "pytest", f"tests/sections/test_{mutant.module}.py", "-x", "-q",
         "--rootdir=.", *options],
        cwd=MUTANTS_DIR, env={**os.environ, "MUTANT_UNDER_TEST": mutant.name},
        capture_output=True, text=True)
    return {0: "survived", 1: "killed"}.get(run.returncode, f"pytest exit {run.returncode}")


def settle(mutants: list[Mutant], jobs: int = 2) -> tuple[list[Mutant], list[str]]:
    """Run every survivor, and the first killed mutant of each section, again on its own.

    mutmut runs only the tests it saw call a mutant's function, and a call made while a
    module-scoped fixture is set up counts for the first test that uses the fixture only: a
    survivor may be one that the section's other tests would kill. So each survivor runs
    against its section's whole test file, and one that fails there counts as killed. A kill
    is checked the same way, one per section: a worker that fails every test for a reason of
    its own (as colliding scratch folders once did) reads to mutmut as a kill.

    Returns the mutants with the settled outcomes, and the differences that are problems.
    """
    survivors = [m for m in mutants if m.status in UNDETECTED]
    sample = [next(m for m in mutants if m.module == s.module and m.status in DETECTED)
              for s in SECTIONS if any(m.module == s.module and m.status in DETECTED
                                       for m in mutants)]
    with ThreadPoolExecutor(jobs) as pool:
        outcomes = dict(zip(survivors + sample, pool.map(run_alone, survivors + sample),
                            strict=True))
    settled, found = [], []
    for m in mutants:
        alone = outcomes.get(m)
        if m in sample and alone != "killed":
            found.append(f"{m.name}: killed in mutmut's run, {alone} on its own")
        if m.status in UNDETECTED and alone == "killed":
            print(f"{m.name}: killed by its section's whole test file")
            m = dataclasses.replace(m, status="killed")
        elif m.status in UNDETECTED and alone != "survived":
            found.append(f"{m.name}: {m.status} in mutmut's run, {alone} on its own")
        settled.append(m)
    return settled, found


def write_report(block: str, path: Path = REPORT_FILE) -> None:
    text = path.read_text()
    head, _, rest = text.partition(BEGIN)
    _, _, tail = rest.partition(END)
    path.write_text(f"{head}{BEGIN}\n{block}\n{END}{tail}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tools.mutation", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--targets", action="store_true",
                        help="print mutmut's name patterns of the functions to mutate, and stop")
    args = parser.parse_args(argv)
    review = read_review()
    if args.targets:
        print(" ".join(mutmut_targets(review)))
        return 0
    if not MUTANTS_DIR.is_dir():
        print(f"{MUTANTS_DIR} does not exist: run `mutmut run` first (make mutation does)")
        return 1
    os.chdir(ROOT)  # mutmut reads its files relative to the working directory
    mutants, found = settle(in_scope(read_mutants(), review))
    write_report(results_block(mutants, review))
    found += problems(mutants, review)
    print("\n".join(found))
    killed = sum(1 for m in in_scope(mutants, review) if m.status in DETECTED)
    print(f"{killed} of {len(in_scope(mutants, review))} mutants killed; {len(found)} problems; "
          f"results written to {REPORT_FILE.relative_to(ROOT)}")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
