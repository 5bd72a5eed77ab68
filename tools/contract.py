"""The stub is the whole contract: what the section tests rely on is written in the exercises.

    python -m tools.contract      # the problems, then a summary; exit 1 on any problem

Read from the sources, never run (ast):

* **match= literals.** Every `pytest.raises(..., match=...)` of a section test matches a
  literal (no regex operators beyond escaped characters) that appears in a docstring of that
  section's exercise module; every exception type a section test expects is named in a
  `Raises:` block there.
* **Attributes.** Every attribute a section test reads on an object that is not a library's
  (torch, numpy, pytest, python) nor the test's own is either defined in the visible code of
  the exercises (a public function, class, method or field, or a name the module imports
  from the learner runtime, `course`, such as section 2's `CORPUS`) or listed in an
  `Attributes:` block of their docstrings. An attribute assigned in a learner's block
  (`self.embedding`) is visible only there.
* **Messages.** Every `assert` of a section test has a message, every `np.testing.assert_*`
  an `err_msg`, every test a docstring (the report shows it when the learner's code raises),
  and every parametrised case a readable id (`vocab_size=0`, not pytest's `kwargs0`).
* **The learner's blocks** of `solutions/` hold at most `MAX_RAISES` raise statements
  (`NotImplementedError` not counted): input validation is given code.
"""

from __future__ import annotations

import ast
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path

from course.registry import EXERCISES_DIR, REFERENCE_DIR, SECTIONS, TESTS_DIR, Section, shown

from .exercises import find_blocks

MAX_RAISES = 3
_REGEX_OPERATOR = re.compile(r"(?<!\\)[.*+?^$|()\[\]{}]")
_ATTRIBUTE_LINE = re.compile(r"(\w+)(?:\s*\([^)]*\))?\s*:")


def _library_names() -> frozenset[str]:
    """Every attribute of the library objects a test handles: tensors, modules, numbers,
    containers, pytest's and hypothesis's helpers."""
    import numpy as np
    import pytest
    import torch
    from hypothesis import strategies as st
    from torch import nn

    objects = [torch.zeros(1), nn.Module(), nn.LSTM(1, 1), nn.Linear(1, 1), nn.Embedding(2, 1),
               nn.Parameter(torch.zeros(1)), torch.device("cpu"), torch.Size([1]), torch.float32,
               torch.Generator(), torch.optim.Adam, np.zeros(1), np.float64(0), np.random,
               [], {}, "", (), set(), 0, 0.0, True, None, Exception(), type,
               pytest.MonkeyPatch(), pytest.ExceptionInfo, st.DataObject, st.integers(),
               nn.Conv1d(1, 1, 1)]
    names = {name for obj in objects for name in dir(obj)}
    return frozenset(names | {"out", "err", "_replace", "_asdict", "_fields", "value"})


@dataclass
class Contract:
    """What the exercises of the course state, read from their sources."""

    docstrings: dict[str, str] = field(default_factory=dict)  # module -> every docstring
    defined: dict[str, set[str]] = field(default_factory=dict)  # module -> public names in view
    attributes: set[str] = field(default_factory=set)  # listed in an `Attributes:` block
    raises: dict[str, set[str]] = field(default_factory=dict)  # module -> names in `Raises:`
    methods: set[str] = field(default_factory=set)  # of the classes in view, given hooks too

    @property
    def documented(self) -> set[str]:
        return set().union(*self.defined.values()) | self.attributes | self.methods


def _block_entries(docstring: str, heading: str) -> list[str]:
    """The first words of the entries of every `heading:` block of a Google-style
    docstring (`Attributes:`, `Raises:`): the lines one level deeper than the heading."""
    names, lines = [], docstring.splitlines()
    for i, line in enumerate(lines):
        if line.strip() != f"{heading}:":
            continue
        indent = len(line) - len(line.lstrip())
        entry_indent = None
        for entry in lines[i + 1:]:
            if not entry.strip():
                continue
            depth = len(entry) - len(entry.lstrip())
            if depth <= indent:
                break
            entry_indent = entry_indent or depth
            if depth == entry_indent and (found := _ATTRIBUTE_LINE.match(entry.strip())):
                names.append(found[1])
            elif depth == entry_indent and heading == "Raises":
                names += re.findall(r"\w+", entry.split(":")[0])
    return names


def read_contract(exercises_dir: Path = EXERCISES_DIR) -> Contract:
    contract = Contract()
    for section in SECTIONS:
        path = exercises_dir / section.file_name
        if not path.exists():
            continue
        tree = ast.parse(path.read_text())
        docs = [ast.get_docstring(node, clean=True) or "" for node in ast.walk(tree)
                if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef)]
        contract.docstrings[section.module] = "\n".join(docs)
        defined = set()
        for node in tree.body:
            if isinstance(node, ast.FunctionDef | ast.ClassDef):
                defined.add(node.name)
            if (isinstance(node, ast.ImportFrom) and node.level == 0
                    and (node.module or "").split(".")[0] == "course"):
                defined |= {alias.asname or alias.name for alias in node.names}  # re-exported
            if isinstance(node, ast.Assign | ast.AnnAssign):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                defined |= {n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)}
            if isinstance(node, ast.ClassDef):
                for item in node.body:
                    if isinstance(item, ast.FunctionDef):
                        defined.add(item.name)
                        contract.methods.add(item.name)
                    elif isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name):
                        defined.add(item.target.id)
        contract.defined[section.module] = {n for n in defined if not n.startswith("_")}
        for doc in docs:
            contract.attributes.update(_block_entries(doc, "Attributes"))
        contract.raises[section.module] = {n for doc in docs for n in _block_entries(doc, "Raises")}
    return contract


# --- the section tests ---------------------------------------------------------------------


# pytest's own fixtures that a section test may take: what is read on them is pytest's.
PYTEST_FIXTURES = {"capsys", "capfd", "caplog", "monkeypatch", "recwarn", "request", "tmp_path",
                   "trusted", "TRUSTED"}  # and the judges' course objects (judged.Trusted)


def _imported_names(tree: ast.Module) -> set[str]:
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names |= {(a.asname or a.name).split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            names |= {a.asname or a.name for a in node.names}
    return names


def _own_attributes(trees: list[ast.Module]) -> set[str]:
    """Attributes the tests give their own objects (`self.steps = ...` in a helper class)."""
    return {node.attr for tree in trees for node in ast.walk(tree)
            if isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store)}


def _fixture_attributes(conftest: Path) -> set[str]:
    """The attributes of conftest's fixture objects, as its docstrings name them (`.model`)."""
    text = "\n".join(ast.get_docstring(n) or "" for n in ast.walk(ast.parse(conftest.read_text()))
                     if isinstance(n, ast.FunctionDef))
    return set(re.findall(r"`\.(\w+)`", text))


def _root(node: ast.expr) -> ast.expr:
    while isinstance(node, ast.Attribute):
        node = node.value
    return node


def _is_call_of(node: ast.AST, *dotted: str) -> bool:
    return isinstance(node, ast.Call) and ast.unparse(node.func) in dotted


def _literal(node: ast.expr) -> str | None:
    return node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else None


def _readable_values(node: ast.expr) -> bool:
    """A parametrize list whose pytest ids are readable without `ids=`: constants, tuples of
    constants, or `pytest.param(..., id=...)`."""
    if not isinstance(node, ast.List | ast.Tuple):
        return False
    for value in node.elts:
        if _is_call_of(value, "pytest.param"):
            if not any(k.arg == "id" for k in value.keywords):
                return False
        elif isinstance(value, ast.Tuple):
            if not all(isinstance(e, ast.Constant) for e in value.elts):
                return False
        elif not isinstance(value, ast.Constant):
            return False
    return True


def section_test_problems(section: Section, contract: Contract, library: frozenset[str],
                          tests_dir: Path = TESTS_DIR) -> tuple[list[str], dict[str, int]]:
    """The problems of one section's test file, and counts of what it checked."""
    path = tests_dir / f"test_{section.module}.py"
    if not path.exists():
        return [], {}
    tree = ast.parse(path.read_text())
    helpers = [ast.parse(p.read_text()) for p in tests_dir.glob("*.py")
               if not p.name.startswith("test_")]
    modules = _imported_names(tree)
    fixtures = {s.name: s for s in SECTIONS}
    own = _own_attributes([tree, *helpers]) | _fixture_attributes(tests_dir / "conftest.py")
    where = shown(path)
    problems, counts = [], {"match": 0, "attributes": 0, "raises": 0}
    docs = contract.docstrings.get(section.module, "")

    for node in ast.walk(tree):
        line = f"{where}:{getattr(node, 'lineno', '?')}"
        if _is_call_of(node, "pytest.raises"):
            counts["raises"] += 1
            for error in node.args[:1]:
                names = {n.id for n in ast.walk(error) if isinstance(n, ast.Name)}
                missing = names - contract.raises.get(section.module, set())
                if missing:
                    problems.append(f"{line}: the test expects {', '.join(sorted(missing))}, "
                                    f"which no Raises: block of {section.file_name} names")
            for keyword in node.keywords:
                if keyword.arg != "match":
                    continue
                counts["match"] += 1
                text = _literal(keyword.value)
                if text is None or _REGEX_OPERATOR.search(text):
                    problems.append(f"{line}: match= must be a literal string, without regex "
                                    f"operators: {ast.unparse(keyword.value)}")
                elif re.sub(r"\\(.)", r"\1", text) not in docs:
                    problems.append(f"{line}: match={text!r} is in no docstring of "
                                    f"{section.file_name}: a test checks no wording the stub "
                                    "does not state")
        elif isinstance(node, ast.Assert) and node.msg is None:
            problems.append(f"{line}: an assert without a message: say what was expected, "
                            "in the learner's terms")
        elif (isinstance(node, ast.Call) and ast.unparse(node.func).startswith("np.testing.")
              and not any(k.arg == "err_msg" for k in node.keywords)):
            problems.append(f"{line}: {ast.unparse(node.func)} without err_msg=")
        elif isinstance(node, ast.FunctionDef) and node.name.startswith("test_"):
            if ast.get_docstring(node) is None:
                problems.append(f"{line}: {node.name} has no docstring: the report shows it "
                                "as what the test checks")
            for decorator in node.decorator_list:
                if (_is_call_of(decorator, "pytest.mark.parametrize")
                        and not any(k.arg == "ids" for k in decorator.keywords)
                        and not _readable_values(decorator.args[1])):
                    problems.append(f"{line}: {node.name}'s parameters need readable ids: "
                                    "ids=, or pytest.param(..., id=...)")
        elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Load):
            root = _root(node)
            if isinstance(root, ast.Name) and (root.id in modules or root.id in PYTEST_FIXTURES):
                continue  # torch.backends.cudnn, np.testing, capsys.readouterr: a library's
            if isinstance(node.value, ast.Name) and node.value.id in fixtures:
                counts["attributes"] += 1
                module = fixtures[node.value.id].module
                if node.attr not in contract.defined.get(module, set()):
                    problems.append(f"{line}: {node.value.id}.{node.attr} is not a public name "
                                    f"of {module}.py")
                continue
            if node.attr in library or node.attr in own:
                continue
            counts["attributes"] += 1
            if node.attr not in contract.documented:
                problems.append(f"{line}: `.{node.attr}` ({ast.unparse(node)}) is read on a "
                                "learner's object, but no exercise defines it in view or "
                                "lists it under Attributes:")
    return problems, counts


def raises_in_blocks(solutions_dir: Path = REFERENCE_DIR) -> list[str]:
    """`file:line: statement` of every raise in a learner's block of the reference but the
    stubs' NotImplementedError."""
    found = []
    for section in SECTIONS:
        path = solutions_dir / section.file_name
        if not path.exists():
            continue
        for block in find_blocks(path.read_text(), shown(path)):
            for statement in block.statements:
                if isinstance(statement, ast.Raise) and "NotImplementedError" not in ast.unparse(
                        statement.exc or ast.Constant(None)):
                    found.append(f"{shown(path)}:{statement.lineno}: {ast.unparse(statement)}")
    return found


def problems(tests_dir: Path = TESTS_DIR, exercises_dir: Path = EXERCISES_DIR,
             solutions_dir: Path = REFERENCE_DIR) -> tuple[list[str], dict[str, int]]:
    """Every breach of the contract, and counts of what was checked."""
    contract, library = read_contract(exercises_dir), _library_names()
    found, counts = [], {"match": 0, "attributes": 0, "raises": 0}
    for section in SECTIONS:
        more, seen = section_test_problems(section, contract, library, tests_dir)
        found += more
        counts = {k: counts[k] + seen.get(k, 0) for k in counts}
    raised = raises_in_blocks(solutions_dir)
    counts["raises in blocks"] = len(raised)
    if len(raised) > MAX_RAISES:
        found.append(f"the learner's blocks hold {len(raised)} raise statements, more than "
                     f"{MAX_RAISES}: move input validation to given code\n  " + "\n  ".join(raised))
    return found, counts


def main() -> int:
    found, counts = problems()
    print("\n".join(found))
    print(f"{len(found)} problem(s); the section tests read {counts['attributes']} attributes "
          f"and call pytest.raises {counts['raises']} times, with {counts['match']} match= "
          f"literals; the learner's blocks hold {counts['raises in blocks']} raise statements "
          f"(at most {MAX_RAISES})")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
