"""`make lock`: the exact version of every package the course installs, dependencies
included, so that every learner and every grading run gets the same environment.

    python3 -m tools.lock

pyproject.toml pins the course's direct dependencies in two groups: `[project]
dependencies`, what a learner needs, and the optional group `maintainer`, what only the
repository's own tools need. This installs each group into a fresh environment and writes
what pip resolved:

    requirements/learner.lock      every package of the learner's group
    requirements/maintainer.lock   the packages the maintainers' group adds to it

`make install` installs the learner's lock in a handout and both in the repository; the
tooling tests check that the locks hold exactly pyproject.toml's pins.
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
LOCKS = {"learner": ROOT / "requirements" / "learner.lock",
         "maintainer": ROOT / "requirements" / "maintainer.lock"}
HEADER = "# Written by `make lock` from pyproject.toml: do not edit.\n"


def groups(pyproject: Path = ROOT / "pyproject.toml") -> dict[str, list[str]]:
    """{"learner": its pins, "maintainer": its pins}, as pyproject.toml writes them."""
    with pyproject.open("rb") as f:
        project = tomllib.load(f)["project"]
    return {"learner": project["dependencies"],
            "maintainer": project["optional-dependencies"]["maintainer"]}


def read_lock(path: Path) -> dict[str, str]:
    """{normalised package name: version} of a lock file."""
    pins = {}
    for line in path.read_text().splitlines():
        if line and not line.startswith("#"):
            name, _, version = line.partition("==")
            pins[normalised(name)] = version
    return pins


def normalised(name: str) -> str:
    return name.strip().lower().replace("_", "-").replace(".", "-")


def _freeze(python: Path) -> list[str]:
    """What `python`'s environment holds, `name==version` a line, without pip's own tools and
    without local version labels: `torch==2.13.0+cpu` is locked as `torch==2.13.0`, which
    PyPI's index, PyTorch's CPU index and a local wheel all satisfy."""
    listed = subprocess.run([python, "-m", "pip", "freeze", "--all", "--exclude-editable"],
                            check=True, capture_output=True, text=True).stdout.splitlines()
    tooling = {"pip", "setuptools", "wheel"}
    return sorted((line.partition("+")[0] for line in listed
                   if normalised(line.split("==")[0]) not in tooling), key=normalised)


def main() -> int:
    pins = groups()
    with tempfile.TemporaryDirectory(prefix="elmo-lock-") as scratch:
        python = Path(scratch) / "bin" / "python"
        subprocess.run([sys.executable, "-m", "venv", scratch], check=True)
        install = [python, "-m", "pip", "install", "--quiet", "--disable-pip-version-check"]
        subprocess.run([*install, *pins["learner"]], check=True)
        learner = _freeze(python)
        subprocess.run([*install, *pins["learner"], *pins["maintainer"]], check=True)
        everything = _freeze(python)
    maintainer = [line for line in everything if line not in learner]
    for group, lines in (("learner", learner), ("maintainer", maintainer)):
        LOCKS[group].parent.mkdir(exist_ok=True)
        LOCKS[group].write_text(HEADER + "".join(f"{line}\n" for line in lines))
        print(f"{LOCKS[group].relative_to(ROOT)}: {len(lines)} packages")
    return 0


if __name__ == "__main__":
    sys.exit(main())
