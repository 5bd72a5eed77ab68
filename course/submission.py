"""`make submission`: the section modules of `exercises/`, zipped, and nothing else.

    python3 -m course.submission [submission.zip] [--impl exercises]

Only the modules that `course.toml` names (`exercises/s1_setup.py`, ...) go in: they are
what the grader reads. Everything else in the folder stays out, whatever it is (a
generator's manifest, caches, notes, a backup). It needs no more than the standard library,
so it runs before anything is installed.
"""

from __future__ import annotations

import argparse
import sys
import zipfile
from pathlib import Path

from .registry import EXERCISES_DIR, ROOT, SECTIONS, shown


def pack(out: Path, impl_dir: Path = EXERCISES_DIR) -> tuple[list[str], list[str]]:
    """Write `out`; the names packed (`exercises/s1_setup.py`, ...) and the modules missing."""
    packed, missing = [], []
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as archive:
        for section in SECTIONS:
            path = impl_dir / section.file_name
            if not path.is_file():
                missing.append(section.file_name)
                continue
            name = f"{EXERCISES_DIR.name}/{section.file_name}"
            archive.write(path, name)
            packed.append(name)
    return packed, missing


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python3 -m course.submission",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("out", type=Path, nargs="?", default=Path("submission.zip"))
    parser.add_argument("--impl", type=Path, default=EXERCISES_DIR,
                        help="the folder of your section modules (default: exercises)")
    args = parser.parse_args(argv)
    out = args.out if args.out.is_absolute() else ROOT / args.out
    impl = args.impl if args.impl.is_absolute() else ROOT / args.impl
    packed, missing = pack(out, impl)
    print(f"{shown(out)}: {len(packed)} section modules of {shown(impl)}/; hand this file in")
    if missing:
        print(f"  missing, and so not handed in: {', '.join(missing)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
