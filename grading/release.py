"""`make release`: write the learner's handout, a folder to give out as it is.

    python -m grading.release [OUT]          # default build/handout

It holds the exercises (generated afresh from the reference by `course.make_exercises`),
the section tests, the notebooks, the progress tool and the parts of `course/` that these
import (found by following their imports, so an instructor-only tool never ships), the
registry, `pyproject.toml`, and a Makefile and README for learners. No `solutions/`: the
isolation harness then takes every section from the learner's own package.

Before it is done, every file is checked for solution code: no file may hold three lines of
one marked block of the reference (all of a shorter block's), counting only lines of 20
characters or more that the reference has nowhere outside its blocks. A leak stops the
release.
"""

from __future__ import annotations

import ast
import shutil
import sys
from pathlib import Path

from course.harness import REFERENCE_DIR
from course.make_exercises import find_blocks, generate
from course.registry import ROOT, SECTIONS

TEMPLATES = Path(__file__).parent / "handout"
DEFAULT_OUT = ROOT / "build" / "handout"
# What learners run; the parts of course/ they import are found from these.
ENTRY_POINTS = ("tests/sections/*.py", "notebooks/*.py", "course/progress.py")
COPIED = ("course.toml", "pyproject.toml", ".gitignore", "tests/__init__.py",
          "tests/sections/*.py", "notebooks/*")
SHORTEST_LEAK = 20  # shorter lines (`else:`, `return ids`) say nothing of a solution
LEAK_LINES = 3  # one line in common (`optimizer.zero_grad()`) is no solution


class LeakError(RuntimeError):
    """The handout would hold solution code."""


def _course_imports(path: Path) -> set[str]:
    """The `course` modules that a file imports, absolutely or (inside course/) relatively."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names if a.name.startswith("course.")}
        elif isinstance(node, ast.ImportFrom) and node.module:
            if node.level == 0 and node.module.startswith("course."):
                found.add(node.module)
            elif node.level == 1 and path.parent.name == "course":
                found.add(f"course.{node.module}")
    return found


def learner_modules(root: Path = ROOT) -> list[Path]:
    """course/__init__.py and every course module the entry points import, transitively."""
    todo = [p for pattern in ENTRY_POINTS for p in sorted(root.glob(pattern))]
    seen = {root / "course" / "__init__.py", *(p for p in todo if p.parent == root / "course")}
    while todo:
        for name in _course_imports(todo.pop()):
            path = root / Path(*name.split(".")).with_suffix(".py")
            if path.exists() and path not in seen:
                seen.add(path)
                todo.append(path)
    return sorted(seen)


def solution_blocks(reference_dir: Path = REFERENCE_DIR) -> dict[str, set[str]]:
    """{"s3_bilm.py: BiLM.forward": its lines}, each line stripped, without the short ones
    and those the reference also has outside its blocks."""
    blocks, outside = {}, set()
    for section in SECTIONS:
        path = reference_dir / f"{section.module}.py"
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
    """Every file under `folder` that holds a solution body: LEAK_LINES lines of one block
    (all of them, for a shorter block)."""
    blocks = solution_blocks(reference_dir)
    found = []
    for path in sorted(p for p in folder.rglob("*") if p.is_file()):
        lines = _lines(path)
        for name, body in blocks.items():
            held = body & lines
            if body and len(held) >= min(LEAK_LINES, len(body)):
                found.append(f"{path.relative_to(folder)} holds {len(held)} lines of {name}, "
                             f"e.g. `{sorted(held)[0]}`")
    return found


def build(out: Path = DEFAULT_OUT, root: Path = ROOT) -> list[str]:
    """Write the handout to `out` (replacing it); the files written, relative to it.

    Raises:
        LeakError: a file would hold solution code; `out` is removed again.
    """
    if out.exists():
        shutil.rmtree(out)
    files: dict[str, bytes] = {f"exercises/{name}": text.encode()
                               for name, text in generate(root / "solutions").items()}
    for pattern in COPIED:
        for path in sorted(root.glob(pattern)):
            if path.is_file():
                files[str(path.relative_to(root))] = path.read_bytes()
    for path in learner_modules(root):
        files[str(path.relative_to(root))] = path.read_bytes()
    for template in sorted(TEMPLATES.iterdir()):
        files[template.name] = template.read_bytes()
    for name, data in files.items():
        (out / name).parent.mkdir(parents=True, exist_ok=True)
        (out / name).write_bytes(data)
    found = leaks(out, root / "solutions")
    if found:
        shutil.rmtree(out)
        raise LeakError("the handout would hold solution code:\n" + "\n".join(found))
    return sorted(files)


def main(argv: list[str]) -> int:
    out = Path(argv[0]) if argv else DEFAULT_OUT
    try:
        written = build(out)
    except LeakError as err:
        print(f"make release: nothing released. {err}")
        return 1
    print(f"handout: {len(written)} files in {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
