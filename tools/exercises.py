"""Generate `exercises/` from `solutions/`: every marked block becomes a stub.

    python -m tools.exercises            # write exercises/; never overwrites a learner's work
    python -m tools.exercises --force    # overwrite it all the same
    python -m tools.exercises --check    # write nothing; exit 1 on any problem

In a reference module, what a learner writes lies between the whole lines `# BEGIN SOLUTION`
and `# END SOLUTION`. Each block, markers included, becomes one line at the markers'
indentation,

    raise NotImplementedError("section 3 (bilm): BiLM.forward is not implemented yet")

and every other line stays byte for byte: signatures, docstrings, helpers and constants.

`exercises/.generated.json` records a digest of each file as it was written. A file whose
digest still matches is the generator's to update; any other difference is a learner's work,
and the generator refuses to overwrite it unless forced.

`--check` fails when a marker is malformed, unbalanced or nested, when `exercises/` is not
what the generator would write now, when solution code is left in `exercises/` (`leaks`,
the one leak detector, which `make release` runs on the whole handout too), or when the two
packages differ in a public name or signature.
"""

from __future__ import annotations

import argparse
import ast
import hashlib
import io
import json
import re
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

from course.registry import EXERCISES_DIR, REFERENCE_DIR, SECTIONS, Section, shown, stub_message

BEGIN, END = "# BEGIN SOLUTION", "# END SOLUTION"
MANIFEST = ".generated.json"
SHORTEST_LEAK = 20  # shorter lines (`else:`, `return ids`) say nothing of a solution
LEAK_LINES = 3  # one line in common (`optimizer.zero_grad()`) is no solution
_MARKER_LIKE = re.compile(r"#\s*(BEGIN|END)\s*SOLUTION", re.IGNORECASE)
_SCOPES = (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)
_FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)

HEADER = """\
# Section {number} of the ELMo course. This file is yours: replace each
# `raise NotImplementedError(...)` with your code, then run `make test SECTION={number}`.
"""

PACKAGE_INIT = '''\
"""Your implementation of the ELMo course: one module per section, with a stub that raises
NotImplementedError wherever there is code for you to write.

`make test` runs every section's tests against this package, `make test SECTION=3` one
section's, and `make grade` shows your progress.
"""
'''


class MarkerError(ValueError):
    """A marker that is not a whole line, is unbalanced or nested, or encloses no statement
    of a function's body."""


class WouldOverwrite(RuntimeError):
    """`exercises/` holds changes that the generator did not make."""

    def __init__(self, names: list[str]) -> None:
        super().__init__(f"these files hold changes of yours: {', '.join(names)}")
        self.names = names


@dataclass(frozen=True)
class Block:
    """One marked block: the lines of its two markers (1-based), and what it lies in."""

    begin: int
    end: int
    indent: str
    function: str  # qualified name, "BiLM.forward"
    statements: tuple[ast.stmt, ...]  # every statement inside, nested ones included


class _Placed(NamedTuple):
    statement: ast.stmt
    scopes: tuple[ast.AST, ...]  # the classes and functions around it, outermost first
    body: int  # identifies the list of statements it belongs to


def _placed_statements(tree: ast.AST) -> list[_Placed]:
    """Every statement of `tree`, nested ones included, with where it lies."""
    found: list[_Placed] = []

    def visit(node: ast.AST, scopes: tuple[ast.AST, ...]) -> None:
        for _, value in ast.iter_fields(node):
            for child in value if isinstance(value, list) else [value]:
                if not isinstance(child, ast.AST):
                    continue
                if isinstance(child, ast.stmt):
                    found.append(_Placed(child, scopes, id(value)))
                visit(child, (*scopes, child) if isinstance(child, _SCOPES) else scopes)

    visit(tree, ())
    return found


def _marker_spans(lines: list[str], filename: str) -> list[tuple[int, int]]:
    """(begin, end) line numbers of every block; MarkerError for a malformed marker."""
    spans, opened = [], None
    for number, line in enumerate(lines, 1):
        if not _MARKER_LIKE.search(line):
            continue
        text, where = line.strip(), f"{filename}:{number}"
        if text not in (BEGIN, END):
            raise MarkerError(
                f"{where}: a marker must be a whole line, {BEGIN!r} or {END!r}; found {text!r}"
            )
        if text == BEGIN and opened is not None:
            raise MarkerError(
                f"{where}: {BEGIN!r} inside the block opened at line {opened}: blocks cannot nest"
            )
        if text == END and opened is None:
            raise MarkerError(f"{where}: {END!r} without a {BEGIN!r} before it")
        if text == BEGIN:
            opened = number
            continue
        begin_indent = _indent(lines[opened - 1])
        if _indent(line) != begin_indent:
            raise MarkerError(
                f"{where}: {END!r} is indented {len(_indent(line))} spaces, its {BEGIN!r} "
                f"(line {opened}) {len(begin_indent)}: the two must line up"
            )
        spans.append((opened, number))
        opened = None
    if opened is not None:
        raise MarkerError(f"{filename}:{opened}: {BEGIN!r} is never closed by {END!r}")
    return spans


def _indent(line: str) -> str:
    return line[: len(line) - len(line.lstrip())]


def _physical_lines(source: str) -> list[str]:
    """The lines as Python numbers them, ends kept (str.splitlines also splits at form
    feeds and other separators, and would shift the line numbers)."""
    return io.StringIO(source, newline="").readlines()


def find_blocks(source: str, filename: str = "<source>") -> list[Block]:
    """The marked blocks of a module, checked: whole-line markers, balanced, not nested,
    each enclosing whole statements of one function's body, after its docstring.

    Raises:
        MarkerError: naming the file, the line and what is wrong.
    """
    lines = [line.rstrip("\r\n") for line in _physical_lines(source)]
    spans = _marker_spans(lines, filename)
    statements = _placed_statements(ast.parse(source, filename))
    blocks = []
    for begin, end in spans:
        indent = _indent(lines[begin - 1])
        inside = [p for p in statements if begin < p.statement.lineno < end]
        where = f"{filename}:{begin}"
        if not inside:
            raise MarkerError(f"{where}: the block holds no code")
        outermost = [p for p in inside if p.statement.col_offset == len(indent)]
        if not outermost or any(p.statement.col_offset < len(indent) for p in inside):
            raise MarkerError(f"{where}: the code in the block must line up with the markers")
        scopes = outermost[0].scopes
        if not scopes or not isinstance(scopes[-1], _FUNCTIONS):
            raise MarkerError(f"{where}: a block must lie in a function's body, so that its "
                              "stub raises when the function is called")
        if _docstring_of(scopes[-1]) in {p.statement for p in inside}:
            raise MarkerError(f"{where}: the block swallows the docstring of "
                              f"{scopes[-1].name}; put {BEGIN!r} after it")
        straddles = any(p.statement.end_lineno >= end for p in outermost)
        if straddles or len({p.body for p in outermost}) > 1:
            raise MarkerError(f"{where}: the block must enclose whole statements of one body")
        name = ".".join(scope.name for scope in scopes)
        blocks.append(Block(begin, end, indent, name, tuple(p.statement for p in inside)))
    return blocks


def _docstring_of(function: ast.AST) -> ast.stmt | None:
    first = function.body[0]
    is_doc = isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) and isinstance(
        first.value.value, str)
    return first if is_doc else None


def stub_module(source: str, section: Section, filename: str = "<source>") -> str:
    """The exercise for one reference module: the header, then `source` with every block
    replaced by its stub line; every other line is kept byte for byte.

    Raises:
        MarkerError: a malformed marker, or a module with no block to stub.
    """
    blocks = find_blocks(source, filename)
    if not blocks:
        raise MarkerError(f"{filename}: no {BEGIN!r} block, so nothing for a learner to write")
    lines = _physical_lines(source)
    for block in reversed(blocks):
        marker = lines[block.begin - 1]
        newline = marker[len(marker.rstrip("\r\n")):] or "\n"
        stub = f'{block.indent}raise NotImplementedError("{stub_message(section, block.function)}")'
        lines[block.begin - 1 : block.end] = [stub + newline]
    return HEADER.format(module=section.module, number=section.number) + "".join(lines)


def _digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _reference(solutions_dir: Path, section: Section) -> Path:
    return solutions_dir / f"{section.module}.py"


def generate(solutions_dir: Path = REFERENCE_DIR) -> dict[str, str]:
    """Every file of `exercises/` as the generator writes it, {file name: text}, for the
    sections whose reference module exists; the manifest of digests included.

    Raises:
        MarkerError: naming every malformed marker of every reference module.
    """
    files, errors = {"__init__.py": PACKAGE_INIT}, []
    for section in SECTIONS:
        path = _reference(solutions_dir, section)
        if not path.exists():
            continue
        try:
            files[path.name] = stub_module(path.read_text(), section, shown(path))
        except MarkerError as err:
            errors.append(str(err))
    if errors:
        raise MarkerError("\n".join(errors))
    digests = {name: _digest(text.encode()) for name, text in files.items()}
    manifest = {"about": "digests of the files as the generator last wrote them",
                "files": digests}
    files[MANIFEST] = json.dumps(manifest, indent=1) + "\n"
    return files


def _last_generated(exercises_dir: Path) -> dict[str, str]:
    path = exercises_dir / MANIFEST
    try:
        return json.loads(path.read_text())["files"]
    except (OSError, ValueError, KeyError, TypeError):
        return {}  # no usable record: every difference counts as the learner's


def learner_changes(exercises_dir: Path, wanted: dict[str, str]) -> list[str]:
    """Files of `exercises_dir` that differ both from `wanted` and from what the generator
    last wrote there: the learner's work."""
    recorded = _last_generated(exercises_dir)
    changed = []
    for name, text in wanted.items():
        path = exercises_dir / name
        if name == MANIFEST or not path.exists():
            continue
        current = path.read_bytes()
        if current != text.encode() and _digest(current) != recorded.get(name):
            changed.append(name)
    return changed


def write_exercises(solutions_dir: Path = REFERENCE_DIR, exercises_dir: Path = EXERCISES_DIR,
                    force: bool = False) -> list[str]:
    """Generate `exercises_dir` from `solutions_dir`; the names of the files written.

    Raises:
        WouldOverwrite: unless `force`, a file holds the learner's changes; nothing is written.
        MarkerError: a reference module's markers are malformed; nothing is written.
    """
    wanted = generate(solutions_dir)
    changed = learner_changes(exercises_dir, wanted)
    if changed and not force:
        raise WouldOverwrite(changed)
    exercises_dir.mkdir(parents=True, exist_ok=True)
    written = []
    for name, text in wanted.items():
        path = exercises_dir / name
        if not path.exists() or path.read_bytes() != text.encode():
            path.write_bytes(text.encode())
            written.append(name)
    return written


def public_surface(source: str) -> dict[str, str]:
    """What a module exposes, {name: declaration}: `__all__`, public functions and classes
    with their signatures, public methods (dunders included) and class fields, and public
    module-level names (their values are not compared)."""
    surface = {}
    for node in ast.parse(source).body:
        if isinstance(node, _FUNCTIONS) and _is_public(node.name):
            surface[node.name] = _signature(node)
        elif isinstance(node, ast.ClassDef) and _is_public(node.name):
            bases = ", ".join(ast.unparse(b) for b in [*node.bases, *node.keywords])
            surface[node.name] = f"class {node.name}({bases})"
            for item in node.body:
                if isinstance(item, _FUNCTIONS) and _is_public(item.name):
                    surface[f"{node.name}.{item.name}"] = _signature(item)
                elif isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name):
                    surface[f"{node.name}.{item.target.id}"] = ast.unparse(item.annotation)
        elif isinstance(node, ast.Assign | ast.AnnAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for name in _assigned_names(targets):
                if name == "__all__" or _is_public(name):
                    surface[name] = ast.unparse(node.value) if name == "__all__" else "a value"
    return surface


def _is_public(name: str) -> bool:
    return not name.startswith("_") or (name.startswith("__") and name.endswith("__"))


def _assigned_names(targets: list[ast.expr]) -> list[str]:
    return [n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)]


def _signature(node: ast.FunctionDef | ast.AsyncFunctionDef) -> str:
    decorators = "".join(f"@{ast.unparse(d)} " for d in node.decorator_list)
    returns = f" -> {ast.unparse(node.returns)}" if node.returns else ""
    asynchronous = "async " if isinstance(node, ast.AsyncFunctionDef) else ""
    return f"{decorators}{asynchronous}def {node.name}({ast.unparse(node.args)}){returns}"


def parity_problems(reference_dir: Path, impl_dir: Path) -> list[str]:
    """Every public name or signature in which `impl_dir`'s modules differ from the
    reference's, for the sections present in both."""
    problems = []
    for section in SECTIONS:
        reference, impl = _reference(reference_dir, section), impl_dir / f"{section.module}.py"
        if not (reference.exists() and impl.exists()):
            continue
        try:
            found = public_surface(impl.read_text())
        except SyntaxError as err:
            problems.append(f"{shown(impl)}:{err.lineno}: does not parse: {err.msg}")
            continue
        expected = public_surface(reference.read_text())
        for name in sorted(expected.keys() | found.keys()):
            if name not in found:
                problems.append(f"{shown(impl)}: {name} is missing; {shown(reference)} has "
                                f"`{expected[name]}`")
            elif name not in expected:
                problems.append(f"{shown(impl)}: {name} is not in {shown(reference)}")
            elif found[name] != expected[name]:
                problems.append(f"{shown(impl)}: {name}: expected `{expected[name]}`, "
                                f"found `{found[name]}`")
    return problems


def solution_lines(reference_dir: Path = REFERENCE_DIR) -> dict[str, set[str]]:
    """{"s3_bilm.py: BiLM.forward": its lines}, each line stripped, without the short ones
    and those the reference also has outside its blocks."""
    blocks, outside = {}, set()
    for section in SECTIONS:
        path = _reference(reference_dir, section)
        if not path.exists():
            continue
        lines = path.read_text().splitlines()
        in_block = set()
        for block in find_blocks("\n".join(lines), str(path)):
            span = range(block.begin, block.end - 1)  # 0-based, the markers excluded
            in_block |= set(span)
            blocks[f"{path.name}: {block.function}"] = {lines[i].strip() for i in span}
        outside |= {line.strip() for i, line in enumerate(lines) if i not in in_block}
    return {name: {line for line in body - outside if len(line) >= SHORTEST_LEAK}
            for name, body in blocks.items()}


def _lines(path: Path) -> set[str]:
    try:
        text = path.read_text()
    except (UnicodeDecodeError, OSError):
        return set()
    # a notebook keeps its source lines as JSON strings
    return {line.strip().strip('",').replace('\\"', '"').removesuffix("\\n").strip()
            for line in text.splitlines()}


def leaks(folder: Path, reference_dir: Path = REFERENCE_DIR) -> list[str]:
    """Every file under `folder` that holds a solution: LEAK_LINES lines of one marked block
    of the reference (all of them, for a shorter block), counting only lines of
    SHORTEST_LEAK characters or more that the reference has nowhere outside its blocks."""
    blocks = solution_lines(reference_dir)
    found = []
    for path in sorted(p for p in Path(folder).rglob("*") if p.is_file()):
        lines = _lines(path)
        for name, body in blocks.items():
            held = body & lines
            if body and len(held) >= min(LEAK_LINES, len(body)):
                found.append(f"{shown(path)} holds {len(held)} lines of {name}, "
                             f"e.g. `{sorted(held)[0]}`")
    return found


def check(solutions_dir: Path = REFERENCE_DIR, exercises_dir: Path = EXERCISES_DIR) -> list[str]:
    """Every reason `exercises_dir` is not exactly what the generator writes from
    `solutions_dir`; an empty list when it is."""
    problems = [
        f"{shown(_reference(solutions_dir, s))} is missing: course.toml lists section "
        f"{s.number} ({s.name})"
        for s in SECTIONS if not _reference(solutions_dir, s).exists()
    ]
    try:
        wanted = generate(solutions_dir)
    except MarkerError as err:
        return [*problems, str(err)]
    recorded = _last_generated(exercises_dir)
    for name, text in wanted.items():
        path = exercises_dir / name
        if not path.exists():
            problems.append(f"{shown(path)} is missing: run `make exercises`")
        elif path.read_bytes() == text.encode():
            continue
        elif name != MANIFEST and _digest(path.read_bytes()) != recorded.get(name):
            problems.append(f"{shown(path)} was edited after it was generated: "
                            "`make exercises FORCE=1` regenerates it")
        else:
            problems.append(f"{shown(path)} is stale against solutions/: run `make exercises`")
    return problems + leaks(exercises_dir, solutions_dir) + parity_problems(
        solutions_dir, exercises_dir)



def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m course.make_exercises",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("--force", action="store_true",
                        help="overwrite exercises/ even where it holds changes of yours")
    parser.add_argument("--check", action="store_true",
                        help="write nothing; exit 1 unless exercises/ is what would be written")
    args = parser.parse_args(argv)
    if not REFERENCE_DIR.is_dir():
        print("solutions/ is not here: exercises/ is generated where the reference lives.")
        return 1
    if args.check:
        problems = check()
        for problem in problems:
            print(problem)
        return 1 if problems else 0
    try:
        written = write_exercises(force=args.force)
    except WouldOverwrite as err:
        print("make exercises: nothing written. These files hold changes of yours since they "
              "were generated:")
        print("".join(f"  exercises/{name}\n" for name in err.names), end="")
        print("To regenerate them anyway, losing those changes: make exercises FORCE=1")
        return 1
    except MarkerError as err:
        print(f"make exercises: nothing written. {err}")
        return 1
    missing = [s for s in SECTIONS if not _reference(REFERENCE_DIR, s).exists()]
    for section in missing:
        print(f"solutions/{section.module}.py does not exist: no exercise for section "
              f"{section.number}")
    print(f"exercises/: {len(written)} file(s) written" if written else "exercises/ is up to date")
    return 0


if __name__ == "__main__":
    sys.exit(main())
