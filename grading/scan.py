"""What a submission must not do, read from its source (as Python reads it, in the encoding
its coding line declares; never run), and the kinds of flag the reports carry (their table is
in docs/instructors.md, "Integrity"). The scan sees the usual ways into the process: imports
a section never needs, what reaches the process's internals, assignments to what an import
bound, classes that forge a comparison; code that goes through an allowed library's internals
is beyond it.
"""

from __future__ import annotations

import ast
import importlib.util
import re
from dataclasses import dataclass

from course.registry import REFERENCE_DIR

IMPORTS, INTERNALS, PATCHES, FORGES = ("forbidden-import", "reaches-internals", "monkeypatch",
                                       "forges-values")
UNTRUSTED = "untrusted-run"
PENALISED = (IMPORTS, INTERNALS, PATCHES, FORGES, UNTRUSTED)
ALLOWED = {"__future__", "abc", "bisect", "collections", "copy", "course", "dataclasses",
           "enum", "fractions", "functools", "heapq", "itertools", "json", "math", "matplotlib",
           "numbers", "numpy", "operator", "os", "pathlib", "random", "re", "statistics",
           "string", "textwrap", "time", "torch", "tqdm", "typing", "unicodedata", "warnings"}
DENIED = ("torch.utils.cpp_extension", "torch.ops", "torch.library", "torch.hub",
          "torch.package", "torch.multiprocessing", "torch.distributed", "numpy.ctypeslib",
          "numpy.f2py", "numpy.testing", "course.harness")
OS_NAMES = {"environ", "getenv", "path", "fspath", "sep", "linesep", "PathLike", "cpu_count"}
BUILTINS = {"exec", "eval", "compile", "__import__", "globals", "locals", "vars", "setattr",
            "delattr", "breakpoint", "__builtins__"}
DUNDERS = {"__init__", "__name__", "__qualname__", "__doc__", "__class__", "__len__",
           "__call__", "__iter__", "__getitem__", "__repr__", "__post_init__"}
FRAMES = {"f_back", "f_locals", "f_globals", "f_code", "tb_frame", "gi_frame", "cr_frame",
          "ag_frame", "gi_code", "co_code", "cell_contents"}
VALUE_TYPES = {"torch.Tensor", "numpy.ndarray", "int", "float", "complex", "str", "bytes",
               "list", "tuple", "dict", "set", "frozenset"}
COMPARING = {"__eq__", "__ne__", "__lt__", "__le__", "__gt__", "__ge__", "__bool__",
             "__float__", "__int__", "__index__", "__array__", "__array_ufunc__",
             "__array_function__", "__torch_function__", "__torch_dispatch__",
             "__instancecheck__", "__subclasscheck__", "__class__", "__getattribute__",
             "__hash__"}
SETTABLE = ("torch.backends.", "os.environ")  # configuration, not behaviour
TEST_FILE = re.compile(r"(^|/)(conftest\.py|test_[^/]*\.py|[^/]*_test\.py|pytest\.ini|tox\.ini"
                       r"|setup\.cfg|pyproject\.toml)$")


@dataclass(frozen=True)
class Flag:
    """One thing the report must show; `section` is None for the submission as a whole."""

    kind: str
    detail: str
    section: int | None = None

    @property
    def penalised(self) -> bool:
        return self.kind in PENALISED

    def __str__(self) -> str:
        where = f"section {self.section}: " if self.section is not None else ""
        return f"{where}{self.kind}: {self.detail}"


def _imported(tree: ast.AST) -> dict[str, str]:
    """{name an import binds: the dotted name it stands for}."""
    names = {}
    for node in ast.walk(tree):
        for alias in node.names if isinstance(node, ast.Import | ast.ImportFrom) else ():
            if isinstance(node, ast.Import):
                top = alias.name.split(".")[0]
                names[alias.asname or top] = alias.name if alias.asname else top
            else:
                names[alias.asname or alias.name] = f"{node.module or ''}.{alias.name}".lstrip(".")
    return names


def _dotted(node: ast.expr, imported: dict[str, str]) -> str | None:
    """`torch.nn.functional.relu` for `F.relu` after `from torch.nn import functional as F`."""
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name) and node.id in imported:
        return ".".join([imported[node.id], *reversed(parts)])
    return None


def _allowed(name: str) -> bool:
    parts = name.split(".")
    if parts[0] == "os" and len(parts) > 1 and parts[1] not in OS_NAMES:
        return False
    return (parts[0] in ALLOWED and not any(name == d or name.startswith(d + ".") for d in DENIED)
            and not any(p.startswith("_") and p not in DUNDERS for p in parts[1:]))


def _forbidden_import(node: ast.Import | ast.ImportFrom) -> bool:
    if isinstance(node, ast.Import):
        names = [alias.name for alias in node.names]
    elif node.level:  # a sibling section, by its name; `..` leaves the package
        names = [f"course.{a.name}" for a in node.names] if node.level == 1 else ["..."]
    else:
        names = [f"{node.module}.{a.name}" if _allowed(node.module) else node.module
                 for a in node.names]
    return any(not _allowed(n) and (n == "..." or n.split(".")[0] == REFERENCE_DIR.name
                                    or _exists(n.split(".")[0])) for n in names)


def _exists(module: str) -> bool:
    """Whether `module` can be imported here (a typo's import fails on its own)."""
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):
        return True


def _internals(node: ast.AST, imported: dict[str, str]) -> str | None:
    if isinstance(node, ast.Name) and node.id in BUILTINS and node.id not in imported:
        return f"uses {node.id}"
    if isinstance(node, ast.Call) and getattr(node.func, "id", "") == "getattr" and \
            len(node.args) > 1 and not (isinstance(node.args[1], ast.Constant) and isinstance(
                node.args[1].value, str) and not node.args[1].value.startswith("_")):
        return f"calls {ast.unparse(node)[:80]}"
    if isinstance(node, ast.Attribute):
        name, dotted = node.attr, _dotted(node, imported)
        if name in FRAMES or (name[:2] == name[-2:] == "__" and name not in DUNDERS):
            return f"reads .{name}"
        if dotted is not None and dotted.split(".")[0] in ALLOWED and not _allowed(dotted):
            return f"uses {dotted}"
    return None


def _forges(node: ast.AST, imported: dict[str, str]) -> list[tuple[int, str]]:
    found = []
    if isinstance(node, ast.ClassDef):
        for base in node.bases:
            name = _dotted(base, imported) or getattr(base, "id", "")
            if name in VALUE_TYPES:
                found.append((node.lineno, f"{node.name} subclasses {name}"))
        for item in node.body:
            names = [getattr(item, "name", None), *(getattr(t, "id", None)
                                                    for t in getattr(item, "targets", []))]
            found += [(item.lineno, f"{node.name} defines {n}") for n in names if n in COMPARING]
    if isinstance(node, ast.Call) and getattr(node.func, "id", "") == "type" and \
            len(node.args) == 3:
        found.append((node.lineno, "makes a class with type(name, bases, dict)"))
    return found


def scan_module(source: bytes, section: int) -> list[Flag]:
    """The flags of one section module, one of a kind per line. A module that does not decode
    or parse has none: its tests report the error."""
    try:
        tree = ast.parse(importlib.util.decode_source(source))
    except (SyntaxError, LookupError, UnicodeError, ValueError):
        return []
    imported, found = _imported(tree), {}

    def add(line: int, kind: str, what: str) -> None:
        found.setdefault((line, kind), Flag(kind, f"line {line}: {what}", section))

    for node in ast.walk(tree):
        if isinstance(node, ast.Import | ast.ImportFrom) and _forbidden_import(node):
            add(node.lineno, IMPORTS, ast.unparse(node)[:120])
        targets = [*getattr(node, "targets", []), getattr(node, "target", None)] if isinstance(
            node, ast.Assign | ast.AugAssign | ast.AnnAssign | ast.Delete) else []
        while targets:
            target = targets.pop()
            if isinstance(target, ast.Tuple | ast.List):
                targets += target.elts
                continue
            root = target
            while isinstance(root, ast.Attribute | ast.Subscript | ast.Starred):
                root = root.value
            shown = ast.unparse(target) if target is not None else ""
            if root is not target and getattr(root, "id", None) in imported and not (
                    imported[root.id] + shown[len(root.id):]).startswith(SETTABLE):
                add(node.lineno, PATCHES, f"changes {shown[:80]}")
        what = _internals(node, imported)
        if what:
            add(node.lineno, INTERNALS, what)
        for line, what in _forges(node, imported):
            add(line, FORGES, what)
    return [found[key] for key in sorted(found)]


def scan_files(paths: list[str]) -> list[Flag]:
    """A note for tests, a conftest or pytest settings in the submission (never used)."""
    shipped = sorted(p for p in paths if TEST_FILE.search(p))
    if not shipped:
        return []
    shown = ", ".join(shipped[:5]) + (f" and {len(shipped) - 5} more" if len(shipped) > 5 else "")
    return [Flag("ships-tests", f"{shown} (ignored: graded with the course's own tests)")]
