"""`make release`: write the learner's handout, a folder to give out as it is.

    python -m tools.release [OUT]          # default build/handout

It holds the learner runtime (`course/`, whole, and the rest of `RUNTIME_FILES`: the
registry, the section tests, the pytest settings, the Makefile fragment), the exercises
generated afresh from the reference, the built notebooks, the learners' lock of the
dependencies, and what `tools/handout/` holds: the Makefile, the README and the GitHub
Classroom workflow (`make classroom-workflow`). Nothing of the tools, the
grader or the reference: the isolation harness then takes every section from the learner's
own package.

Before it is done, every file is checked for solution code (`tools.exercises.leaks`) and for
words that speak of what the handout does not hold (`foreign_mentions`); either stops the
release.
"""

from __future__ import annotations

import json
import re
import shutil
import sys
from pathlib import Path

from analyses.real_results import REFERENCE_RESULTS
from course.registry import ANALYSES_FILES, BUILD_DIR, REFERENCE_DIR, ROOT, RUNTIME_FILES

from .exercises import generate, leaks

TEMPLATES = Path(__file__).parent / "handout"
DEFAULT_OUT = BUILD_DIR / "handout"
SHIPPED = (*RUNTIME_FILES, *ANALYSES_FILES, "notebooks/*.ipynb", "requirements/learner.lock",
           "requirements/lab.lock", ".gitignore",
           "data/wordnet/*.gz", "data/wordnet/LICENSE")
# What a learner's handout never speaks of: the reference, and the maintainers' commands and
# files, none of which it holds.
FOREIGN = re.compile(r"solutions/|make (exercises|bench|demo|mutation|mistakes|release|check)"
                     r"\b|MUTATION\.md|BENCHMARKS\.md|\btools[./]|\bmutmut\b")


class ReleaseError(RuntimeError):
    """The handout would hold solution code, or speak of what it does not hold."""


def foreign_mentions(folder: Path) -> list[str]:
    """`file:line: text` for every mention in `folder` of what a handout does not hold."""
    found = []
    for path in sorted(p for p in folder.rglob("*") if p.is_file()):
        try:
            lines = path.read_text().splitlines()
        except (UnicodeDecodeError, OSError):
            continue
        found += [f"{path.relative_to(folder)}:{n}: {match[0]!r} in {line.strip()[:80]!r}"
                  for n, line in enumerate(lines, 1) if (match := FOREIGN.search(line))]
    return found


def handout_files(root: Path = ROOT) -> dict[str, bytes]:
    """{path in the handout: bytes} of everything the handout holds."""
    files = {f"exercises/{name}": text.encode()
             for name, text in generate(root / REFERENCE_DIR.name).items()}
    for pattern in SHIPPED:
        for path in sorted(root.glob(pattern)):
            if path.is_file():
                files[str(path.relative_to(root))] = path.read_bytes()
    for template in sorted(p for p in TEMPLATES.rglob("*") if p.is_file()):
        files[str(template.relative_to(TEMPLATES))] = template.read_bytes()
    files[str(REFERENCE_RESULTS.relative_to(root))] = real_english_numbers(root)
    return files


def real_english_numbers(root: Path = ROOT) -> bytes:
    """The reference's results on real English as the handout holds them, for `make
    replicate-real` to set beside the learner's: the numbers, not the command that made
    them."""
    found = json.loads((root / REFERENCE_RESULTS.relative_to(ROOT)).read_text())
    found["run"].pop("command", None)
    return (json.dumps(found, indent=1) + "\n").encode()


def build(out: Path = DEFAULT_OUT, root: Path = ROOT) -> list[str]:
    """Write the handout to `out` (replacing it); the files written, relative to it.

    Raises:
        ReleaseError: a file would hold solution code or speak of what the handout does not
            hold; `out` is removed again.
    """
    if out.exists():
        shutil.rmtree(out)
    files = handout_files(root)
    for name, data in files.items():
        (out / name).parent.mkdir(parents=True, exist_ok=True)
        (out / name).write_bytes(data)
    found = leaks(out, root / REFERENCE_DIR.name)
    mentions = foreign_mentions(out)
    if found or mentions:
        shutil.rmtree(out)
        raise ReleaseError("\n".join(
            (["the handout would hold solution code:", *found] if found else [])
            + (["the handout would speak of what it does not hold:", *mentions]
               if mentions else [])))
    return sorted(files)


def main(argv: list[str]) -> int:
    out = Path(argv[0]) if argv else DEFAULT_OUT
    try:
        written = build(out)
    except ReleaseError as err:
        print(f"make release: nothing released. {err}")
        return 1
    print(f"handout: {len(written)} files in {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
