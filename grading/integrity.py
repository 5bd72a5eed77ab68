"""Integrity: what a submission must not do, found by reading its source, and the kinds of
flag that the grader reports.

A flag is *penalised* when the section's score cannot be trusted: its points are withheld
and the report says why. The others are notes: what they concern is never used anyway.

    kind                  penalised   raised by
    imports-solutions     yes         the static scan (here) and the guard's audit hook
    reads-solutions       yes         the guard's audit hook: a file of the reference opened
    monkeypatch           yes         the static scan and the guard's watch of the namespaces,
                                      pytest's plugins and hooks, and the collected tests
    runs-processes        yes         the static scan (subprocess, os.system, ...) and the
                                      audit hook: a section never starts a process
    uses-ctypes           yes         the static scan and the audit hook
    inspects-the-runtime  yes         the static scan and the audit hook: the garbage
                                      collector's objects, frames, trace and profile hooks
    forges-values         yes         the static scan and the guard: a class that subclasses a
                                      tensor or a value type, or defines how it compares
    forges-results        yes         the sandbox: lines on the run's records stream that the
                                      guard did not sign
    tampered              yes         the sandbox: the run changed its copy of the tests
    ships-tests           no          the submission holds tests, a conftest or pytest settings
    unreadable            no          a module that is a link or too large (not graded)

The source is read as Python reads it: in the encoding its coding line or byte-order mark
declares, so that what is scanned is what runs.
"""

from __future__ import annotations

import ast
import importlib.util
import re
from dataclasses import dataclass

RUNS_PROCESSES, USES_CTYPES = "runs-processes", "uses-ctypes"
INSPECTS, FORGES = "inspects-the-runtime", "forges-values"
FORGES_RESULTS = "forges-results"
PENALISED = ("imports-solutions", "reads-solutions", "monkeypatch", RUNS_PROCESSES,
             USES_CTYPES, INSPECTS, FORGES, FORGES_RESULTS, "tampered")
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
# What a section's code never needs, by the dotted name it is reached by: a module (and
# everything in it) or one function.
FORBIDDEN = {
    "subprocess": RUNS_PROCESSES, "multiprocessing": RUNS_PROCESSES, "pty": RUNS_PROCESSES,
    "os.system": RUNS_PROCESSES, "os.popen": RUNS_PROCESSES, "os.fork": RUNS_PROCESSES,
    "os.forkpty": RUNS_PROCESSES, "os.posix_spawn": RUNS_PROCESSES,
    "os.posix_spawnp": RUNS_PROCESSES, "os.kill": RUNS_PROCESSES, "os.killpg": RUNS_PROCESSES,
    **{f"os.{name}": RUNS_PROCESSES for name in ("execv", "execve", "execl", "execle",
                                                  "execlp", "execlpe", "execvp", "execvpe",
                                                  "spawnv", "spawnve", "spawnl", "spawnle")},
    "ctypes": USES_CTYPES, "_ctypes": USES_CTYPES, "cffi": USES_CTYPES,
    "gc": INSPECTS, "inspect": INSPECTS, "sys._getframe": INSPECTS,
    "sys._current_frames": INSPECTS, "sys.settrace": INSPECTS, "sys.setprofile": INSPECTS,
    "threading.settrace": INSPECTS, "threading.setprofile": INSPECTS,
}
# Attributes that lead to frames, on whatever object.
FRAME_ATTRIBUTES = ("f_back", "f_locals", "f_globals", "f_builtins", "tb_frame", "gi_frame",
                    "cr_frame", "ag_frame")
# What a class of a submission must not subclass (a plain NamedTuple excepted) or define:
# what a test compares would then not be what it seems. The guard checks the same at run time.
VALUE_TYPES = ("torch.Tensor", "numpy.ndarray", "int", "float", "complex", "str", "bytes",
               "list", "tuple", "dict", "set", "frozenset")
COMPARING = ("__eq__", "__ne__", "__lt__", "__le__", "__gt__", "__ge__", "__bool__",
             "__float__", "__int__", "__index__", "__array__", "__array_ufunc__",
             "__array_function__", "__torch_function__", "__torch_dispatch__",
             "__instancecheck__", "__subclasscheck__", "__class__", "__getattribute__")
NAMED_TUPLES = ("typing.NamedTuple", "NamedTuple")


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


def decode(source: bytes) -> str | None:
    """The text Python runs for `source`, or None where it would not decode it."""
    try:
        return importlib.util.decode_source(source)
    except (SyntaxError, LookupError, UnicodeError, ValueError):
        return None


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


def _dotted(node: ast.expr, imported: dict[str, str]) -> str | None:
    """`os.system` for `os.system` (or `from os import system; system`), through imports."""
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name) or node.id not in imported:
        return None
    return ".".join([imported[node.id], *reversed(parts)])


def _forbidden(name: str | None) -> str | None:
    """The flag kind of a dotted name FORBIDDEN reaches (itself or a module above it)."""
    while name:
        if name in FORBIDDEN:
            return FORBIDDEN[name]
        name = name.rpartition(".")[0]
    return None


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


def _uses(node: ast.AST, imported: dict[str, str]) -> tuple[str, str] | None:
    """(kind, what) for a use of what FORBIDDEN or FRAME_ATTRIBUTES name."""
    if isinstance(node, ast.Import | ast.ImportFrom):
        names = ([a.name for a in node.names] if isinstance(node, ast.Import) else
                 [f"{node.module}.{a.name}" for a in node.names] if node.level == 0 else [])
        for name in names:
            kind = _forbidden(name)
            if kind:
                return kind, ast.unparse(node)
        return None
    if isinstance(node, ast.Attribute) and node.attr in FRAME_ATTRIBUTES:
        return INSPECTS, f"reads {ast.unparse(node)[:80]}"
    if isinstance(node, ast.Attribute | ast.Name) and not isinstance(node.ctx, ast.Store):
        name = _dotted(node, imported)
        kind = _forbidden(name) if name and "." in name else None
        if kind and not (isinstance(node, ast.Name) and name.split(".")[0] == node.id):
            return kind, f"uses {name}"
    return None


def _class_forges(node: ast.ClassDef, imported: dict[str, str]) -> list[tuple[ast.AST, str]]:
    """(where, what) a class statement does of what `COMPARING` and `VALUE_TYPES` name."""
    found = []
    for base in node.bases:
        name = _dotted(base, imported) or (base.id if isinstance(base, ast.Name) else None)
        if name in VALUE_TYPES and name not in NAMED_TUPLES:
            found.append((node, f"{node.name} subclasses {name}"))
    for item in node.body:
        names = ([item.name] if isinstance(item, ast.FunctionDef | ast.AsyncFunctionDef) else
                 [t.id for t in _targets(item) if isinstance(t, ast.Name)])
        found += [(item, f"{node.name} defines {name}") for name in names if name in COMPARING]
    return found


def scan_module(source: bytes, section: int) -> list[Flag]:
    """Flags for one section module: imports of the reference; assignments to (or deletions
    of) what its imports bind (`torch.allclose = ...`, `setattr(F, ...)`); uses of what a
    section never needs (FORBIDDEN, frames); classes that could forge what a test compares.
    A module that does not decode or parse has no flags: its tests report the error."""
    text = decode(source)
    try:
        tree = ast.parse(text) if text is not None else None
    except (SyntaxError, ValueError):
        tree = None
    if tree is None:
        return []
    imported = _imported_names(tree)
    found = []

    def add(node: ast.AST, kind: str, what: str) -> None:
        found.append((node.lineno, Flag(kind, f"line {node.lineno}: {what}", section)))

    for node in ast.walk(tree):
        use = _imports_of_solutions(node)
        if use:
            add(node, "imports-solutions", use)
        target = _patch_target(node, imported)
        if target:
            add(node, "monkeypatch", target)
        forbidden = _uses(node, imported)
        if forbidden:
            add(node, *forbidden)
        if isinstance(node, ast.ClassDef):
            for where, what in _class_forges(node, imported):
                add(where, FORGES, what)
    # one flag of a kind per line: `sys._getframe(1).f_back` is one use, seen twice
    kept = {}
    for line, flag in sorted(found, key=lambda pair: pair[0]):
        kept.setdefault((line, flag.kind), flag)
    return list(kept.values())


def scan_files(paths: list[str]) -> list[Flag]:
    """A note for tests, a conftest or pytest settings in the submission (never used)."""
    shipped = sorted(p for p in paths if TEST_FILE.search(p))
    if not shipped:
        return []
    shown = ", ".join(shipped[:5]) + (f" and {len(shipped) - 5} more" if len(shipped) > 5 else "")
    return [Flag("ships-tests", f"{shown} (ignored: graded with the course's own tests)")]
