"""The hint ladder (`course/hints.toml`) checked against the reference; `make check` runs it
through tests/tooling/test_hints.py.

    python -m tools.hints        # every problem, one a line; exit 1 if there is any

* Every learner function (each `# BEGIN SOLUTION` block's function, `tools.exercises.
  find_blocks`) has a ladder, in the module's order, and no ladder names anything else.
* A ladder has at least MIN_RUNGS rungs (concept, approach, near-code).
* A hint names (in `backticks`) only calls, attributes and keyword arguments that the
  reference uses as such: in the solution block of its function or elsewhere in its module
  (a call may also be of a name that the module defines or imports).
  A code span that is not Python (`<pad>`, `make test`) names nothing.
* No code span is a statement of the function's solution as it stands (one of
  SHORTEST_WHOLE_LINE characters or more, spaces aside): near-code is near.
"""

from __future__ import annotations

import ast
import re
import sys
from pathlib import Path

from course.hints import HINTS_FILE, Ladder, load
from course.registry import REFERENCE_DIR, SECTIONS, Section

from .exercises import find_blocks

MIN_RUNGS = {3: 3, 4: 3, 7: 3, 8: 3}  # by section; two elsewhere
DEFAULT_MIN_RUNGS = 2
_CODE_SPAN = re.compile(r"`([^`\n]+)`")
_KEYWORD_STYLE = re.compile(r"\w+=(?!=)")  # `padding_idx=0`: an argument, not an assignment
SHORTEST_WHOLE_LINE = 24  # shorter statements (`optimizer.step()`) say nothing


def code_spans(text: str) -> list[str]:
    return _CODE_SPAN.findall(text)


def named(span: str) -> set[tuple[str, str]]:
    """{(kind, name)} that a code span names: ("call", f) for f(...) and x.f(...),
    ("attribute", a) for x.a, ("keyword", k) for f(k=...) and a bare `k=...`. A span
    that does not parse as Python names nothing."""
    text = span.strip()
    tree = None
    for source in ([f"_({text})"] if _KEYWORD_STYLE.match(text) else []) + [text, f"_({text})"]:
        try:
            tree = ast.parse(source)
            break
        except SyntaxError:
            continue
    if tree is None:
        return set()
    found, called = set(), set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            if isinstance(node.func, ast.Name) and node.func.id != "_":
                found.add(("call", node.func.id))
            elif isinstance(node.func, ast.Attribute):
                found.add(("call", node.func.attr))
                called.add(id(node.func))
            found |= {("keyword", k.arg) for k in node.keywords if k.arg}
        elif isinstance(node, ast.Attribute) and id(node) not in called:
            found.add(("attribute", node.attr))
    return found


def used(tree: ast.AST) -> dict[str, set[str]]:
    """What code uses, by the kinds that `named` gives: "call" (the names it calls, and those
    it defines or imports), "attribute" (every attribute it reads or sets) and "keyword"
    (the keyword arguments it passes)."""
    found = {"call": set(), "attribute": set(), "keyword": set()}
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            if isinstance(node.func, ast.Name):
                found["call"].add(node.func.id)
            elif isinstance(node.func, ast.Attribute):
                found["call"].add(node.func.attr)
            found["keyword"] |= {k.arg for k in node.keywords if k.arg}
        elif isinstance(node, ast.Attribute):
            found["attribute"].add(node.attr)
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            found["call"].add(node.name)
        elif isinstance(node, ast.alias):
            found["call"].add(node.asname or node.name.split(".")[-1])
    return found


_COMPOUND = (ast.For, ast.While, ast.If, ast.With, ast.Try, ast.FunctionDef, ast.ClassDef,
             ast.AsyncFor, ast.AsyncWith, ast.AsyncFunctionDef, ast.Match)


def statements_of(code: str | list[ast.stmt]) -> set[str]:
    """The simple statements of `code` (one line each: no loop or `if` around them),
    written as `ast.unparse` writes them, without spaces; none where `code` is no Python."""
    if isinstance(code, str):
        try:
            code = ast.parse(code).body
        except SyntaxError:
            return set()
    found = set()
    for statement in code:
        for node in ast.walk(statement):
            if isinstance(node, ast.stmt) and not isinstance(node, _COMPOUND):
                found.add(re.sub(r"\s+", "", ast.unparse(node)))
    return found


def problems(ladders: tuple[Ladder, ...] | None = None,
             reference_dir: Path = REFERENCE_DIR) -> list[str]:
    """Every way the ladders disagree with the reference in `reference_dir`."""
    ladders = load() if ladders is None else ladders
    found = []
    sections = {s.number: s for s in SECTIONS}
    for ladder in ladders:
        if ladder.section not in sections:
            found.append(f"{ladder.function}: no section {ladder.section} in course.toml")
    for section in SECTIONS:
        found += _section_problems(section, [x for x in ladders if x.section == section.number],
                                   reference_dir)
    return found


def _section_problems(section: Section, ladders: list[Ladder], reference_dir: Path) -> list[str]:
    path = reference_dir / section.file_name
    source = path.read_text()
    blocks = {b.function: b for b in find_blocks(source, str(path))}
    module_uses = used(ast.parse(source))
    where = f"section {section.number} ({section.file_name})"
    found = []
    named_ones = [ladder.function for ladder in ladders]
    missing = [f for f in blocks if f not in named_ones]
    extra = [f for f in named_ones if f not in blocks]
    if missing:
        found.append(f"{where}: no ladder for {', '.join(missing)}")
    if extra:
        found.append(f"{where}: ladders for {', '.join(extra)}, which the reference does not "
                     "ask the learner to write")
    if not missing and not extra and named_ones != list(blocks):
        found.append(f"{where}: the ladders go {named_ones}; the module's order is "
                     f"{list(blocks)}")
    least = MIN_RUNGS.get(section.number, DEFAULT_MIN_RUNGS)
    for ladder in ladders:
        block = blocks.get(ladder.function)
        if block is None:
            continue
        if len(ladder.rungs) < least:
            found.append(f"{where}: {ladder.function} has {len(ladder.rungs)} rungs; it needs "
                         f"at least {least}")
        block_uses = used(ast.Module(body=list(block.statements), type_ignores=[]))
        solution = {s for s in statements_of(list(block.statements))
                    if len(s) >= SHORTEST_WHOLE_LINE}
        for kind, text in ladder.rungs:
            for span in code_spans(text):
                for what, name in sorted(named(span)):
                    if name not in block_uses[what] and name not in module_uses[what]:
                        found.append(f"{where}: {ladder.function}, {kind}: `{span}` names the "
                                     f"{what} {name!r}, which neither its solution nor "
                                     f"{section.file_name} uses")
                if statements_of(span) & solution:
                    found.append(f"{where}: {ladder.function}, {kind}: `{span}` is a statement "
                                 "of the solution as it stands; make it near-code")
    return found


def main() -> int:
    found = problems()
    print("\n".join(found) if found else f"{HINTS_FILE.name}: every ladder agrees with the "
                                          "reference")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
