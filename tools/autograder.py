"""`make autograder`: the Gradescope autograder bundle, so that Gradescope's own fleet
grades a whole class, one container per submission.

    python -m tools.autograder [OUT.zip]         # default build/autograder.zip

The zip holds, at its root as Gradescope requires, `setup.sh` (run once when Gradescope
builds the image: Python, the learners' lock of the dependencies, then
`python -m grading --prepare-only` to collect the tests and pre-train the reference, and the
reference made unreadable to any user but root) and `run_autograder` (run per submission:
`python -m grading /autograder/submission --jobs 2 --isolation auto --deadline 540
--gradescope /autograder/results/results.json`: each run in bubblewrap where the container
allows it and as a uid of its own where not, the whole within a deadline below Gradescope's
10 minutes), beside the grader, the tests, the reference and the learner runtime.
"""

from __future__ import annotations

import sys
import zipfile
from pathlib import Path

from course.registry import BUILD_DIR, ROOT
from grading.sandbox import Pristine

TEMPLATES = Path(__file__).parent / "gradescope"
DEFAULT_OUT = BUILD_DIR / "autograder.zip"
# What an instructor runs on a class's submissions offline, with the maintainers' tools: not
# what Gradescope runs on one.
INSTRUCTOR_ONLY = {"similarity.py"}
LOCK = "requirements/learner.lock"  # what every learner installs, and so every grading run
EXECUTABLE = 0o755
# A fixed date for every entry: the same sources always give the same bytes.
ZIP_DATE = (2024, 1, 1, 0, 0, 0)


def _add(archive: zipfile.ZipFile, name: str, data: bytes, mode: int = 0o644) -> None:
    info = zipfile.ZipInfo(name, ZIP_DATE)
    info.external_attr = mode << 16
    info.compress_type = zipfile.ZIP_DEFLATED
    archive.writestr(info, data)


def build(out: Path = DEFAULT_OUT, root: Path = ROOT) -> list[str]:
    """Write the bundle to `out`; the names it holds."""
    out.parent.mkdir(parents=True, exist_ok=True)
    grader = {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.glob("grading/*.py"))
              if p.name not in INSTRUCTOR_ONLY}
    files = {**Pristine(root).files, **grader, LOCK: (root / LOCK).read_bytes()}
    with zipfile.ZipFile(out, "w") as archive:
        for script in ("setup.sh", "run_autograder"):
            _add(archive, script, (TEMPLATES / script).read_bytes(), EXECUTABLE)
        for name, data in sorted(files.items()):
            _add(archive, name, data)
        return archive.namelist()


def main(argv: list[str]) -> int:
    out = Path(argv[0]) if argv else DEFAULT_OUT
    names = build(out)
    print(f"autograder: {len(names)} files in {out}; upload it as the assignment's autograder")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
