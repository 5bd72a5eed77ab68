"""Integrity: what a submission must not do, found by reading its source, and the kinds of
flag that the grader reports.

A flag is *penalised* when the section's score cannot be trusted: its points are withheld
and the report says why. The others are notes: what they concern is never used anyway.

    kind                  penalised   raised by
    imports-solutions     yes         the static scan (here) and the guard's audit hook
    reads-solutions       yes         the guard's audit hook: a file of the reference opened
    monkeypatch           yes         the static scan and the guard's watch of the namespaces
    tampered              yes         the sandbox: the run changed its copy of the tests
    ships-tests           no          the submission holds tests, a conftest or pytest settings
    unreadable            no          a module that is a link or too large (not graded)
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass

PENALISED = ("imports-solutions", "reads-solutions", "monkeypatch", "tampered")
# Files that pytest would read as tests or settings, were they used.
TEST_FILE = re.compile(r"(^|/)(conftest\.py|test_[^/]*\.py|[^/]*_test\.py|pytest\.ini|tox\.ini"
                       r"|setup\.cfg|pyproject\.toml)$")
# A string that names the reference package or a path into it.
SOLUTIONS_REFERENCE = re.compile(r"(^|[/\\.])solutions([/\\.]|$)")
# Attributes of imported modules that a section may set: configuration, not behaviour.
SETTABLE = ("torch.backends.", "os.environ")
IMPORTERS = ("__import__", "import_module", "importlib.import_module", "exec", "open",
             "run_path", "runpy.run_path", "spec_from_file_location",
             "importlib.util.spec_from_file_location")


@dataclass(frozen=True)
class Flag:
    """One thing a submission did that the report must show. `section` is None for the
    submission as a whole."""

    kind: str
    detail: str
    section: int | None = None

    @property
    def penalised(self) -> bool:
        return self.kind in PENALISED

    def __str__(self) -> str:
        where = f"section {self.section}: " if self.section is not None else ""
        return f"{where}{self.kind}: {self.detail}"


def _root_name(node: ast.expr) -> str | None:
    """`torch` for `torch.nn.functional.relu`, `vars(torch)["x"]` or `getattr(torch, "nn").x`;
    None when the chain starts elsewhere (a call's fresh result, a literal)."""
    while True:
        if isinstance(node, ast.Attribute | ast.Subscript):
            node = node.value
        elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
              and node.func.id in ("vars", "getattr") and node.args):
            node = node.args[0]
        elif isinstance(node, ast.Name):
            return node.id
        else:
            return None


def _imported_names(tree: ast.AST) -> dict[str, str]:
    """{name an import binds: what it names}: `t` -> `torch` for `import torch as t`,
    `F` -> `torch.nn.functional` for `from torch.nn import functional as F`."""
    names = {"__builtins__": "builtins"}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                bound = alias.asname or alias.name.split(".")[0]
                names[bound] = alias.name if alias.asname else bound
        elif isinstance(node, ast.ImportFrom):
            origin = "." * node.level + (node.module or "")
            for alias in node.names:
                names[alias.asname or alias.name] = f"{origin}.{alias.name}".lstrip(".")
    return names


def _imports_of_solutions(node: ast.AST) -> str | None:
    if isinstance(node, ast.Import):
        hit = next((a.name for a in node.names if a.name.split(".")[0] == "solutions"), None)
        return f"import {hit}" if hit else None
    if isinstance(node, ast.ImportFrom):
        if node.level == 0 and (node.module or "").split(".")[0] == "solutions":
            return ast.unparse(node)
        if node.level > 1:  # out of the section's package, towards the grader's files
            return ast.unparse(node)
    if isinstance(node, ast.Call) and ast.unparse(node.func) in IMPORTERS:
        for arg in node.args:
            if (isinstance(arg, ast.Constant) and isinstance(arg.value, str)
                    and SOLUTIONS_REFERENCE.search(arg.value)):
                return ast.unparse(node)[:120]
    return None


def _targets(node: ast.AST) -> list[ast.expr]:
    """What a statement assigns to or deletes, tuples unpacked."""
    if isinstance(node, ast.Assign | ast.Delete):
        found = list(node.targets)
    elif isinstance(node, ast.AugAssign | ast.AnnAssign):
        found = [node.target]
    else:
        return []
    flat = []
    while found:
        target = found.pop()
        if isinstance(target, ast.Tuple | ast.List):
            found.extend(target.elts)
        else:
            flat.append(target.value if isinstance(target, ast.Starred) else target)
    return flat


def _patch_target(node: ast.AST, imported: dict[str, str]) -> str | None:
    """What `node` changes of the objects its module imported: `torch.allclose` for
    `torch.allclose = ...`, the call itself for `setattr(torch, ...)`; None otherwise."""
    if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
            and node.func.id in ("setattr", "delattr") and node.args):
        return f"calls {ast.unparse(node)[:120]}" if _root_name(node.args[0]) in imported else None
    for target in _targets(node):
        root = _root_name(target)
        if isinstance(target, ast.Attribute | ast.Subscript) and root in imported:
            shown = ast.unparse(target)
            if not (imported[root] + shown[len(root):]).startswith(SETTABLE):
                return f"changes {shown}"
    return None


def scan_module(source: str, section: int) -> list[Flag]:
    """Flags for one section module: imports of the reference, and assignments to (or
    deletions of) what its imports bind: `torch.allclose = ...`, `setattr(F, ...)`.
    A module that does not parse has no flags: its tests report the syntax error."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return []
    imported = _imported_names(tree)
    found = []
    for node in ast.walk(tree):
        use = _imports_of_solutions(node)
        if use:
            found.append((node.lineno, Flag("imports-solutions", f"line {node.lineno}: {use}",
                                            section)))
        target = _patch_target(node, imported)
        if target:
            found.append((node.lineno, Flag("monkeypatch", f"line {node.lineno}: {target}",
                                            section)))
    return [flag for _, flag in sorted(found, key=lambda pair: pair[0])]


def scan_files(paths: list[str]) -> list[Flag]:
    """A note for tests, a conftest or pytest settings in the submission (never used)."""
    shipped = sorted(p for p in paths if TEST_FILE.search(p))
    if not shipped:
        return []
    shown = ", ".join(shipped[:5]) + (f" and {len(shipped) - 5} more" if len(shipped) > 5 else "")
    return [Flag("ships-tests", f"{shown} (ignored: graded with the course's own tests)")]
