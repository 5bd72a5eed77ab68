"""The course's registry: its sections (`course.toml`) and every constant that more than one
of its tools needs, each defined here once.

    from course.registry import SECTIONS, find_section
    find_section("3").module      # 's3_bilm'
    find_section("bilm").number   # 3
"""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
REGISTRY_FILE = ROOT / "course.toml"

# --- where things are ---------------------------------------------------------------------
EXERCISES_DIR = ROOT / "exercises"  # the learner's implementation
REFERENCE_DIR = ROOT / "solutions"  # the reference; absent from a learner's handout
TESTS_DIR = ROOT / "tests" / "sections"
FAKES_DIR = TESTS_DIR / "fakes"  # what a section's tests take of the other sections
NOTEBOOKS_DIR = ROOT / "notebooks"
BUILD_DIR = ROOT / "build"
CACHE_DIR = BUILD_DIR / "cache"  # pre-trained biLMs (`course.pretrained`)
RESULTS_FILE = BUILD_DIR / "results.json"  # what `make test` recorded (`course.results`)
YOUR_ELMO_FILE = BUILD_DIR / "your-elmo-lines.json"  # its passed sections shown (`your_elmo`)

# The files of the learner runtime, as globs relative to the repository: what the handout
# ships and what every grading run is given, besides the implementation under test.
RUNTIME_FILES = ("course.toml", "pytest.ini", "course/*.py", "course/*.mk", "course/*.toml",
                 "course/*.json",
                 "tests/__init__.py", "tests/sections/*.py", "tests/sections/fakes/*.py")
# The analyses that the notebooks, `make replicate` and the demos call (the package
# `analyses`): the handout ships them; a grading run, which only runs the tests, never holds
# them.
ANALYSES_FILES = ("analyses/*.py", "analyses/*.json")

# --- what a notebook prints -----------------------------------------------------------------
# The widest line of a notebook's output, in characters: what the course book's column holds
# without cutting it, as a notebook in Jupyter does beside a file browser. Readings wrap to
# it (`analyses.notebook.fit`).
OUTPUT_WIDTH = 88

# --- environment variables ----------------------------------------------------------------
IMPL_ENV_VAR = "ELMO_IMPL"  # the implementation under test (default: exercises)
CACHE_ENV_VAR = "ELMO_CACHE_DIR"  # where pre-trained biLMs are kept; empty: nowhere

# --- what a stub says ---------------------------------------------------------------------
# Every stub raises NotImplementedError(stub_message(...)); the tests' reports, the progress
# table, the notebooks and the grader read it back with STUB_MESSAGE.
STUB_MESSAGE = re.compile(
    r"section (?P<number>\d+) \((?P<name>\w+)\): (?P<function>[\w.]+) is not implemented yet"
)


@dataclass(frozen=True)
class Section:
    number: int
    name: str
    module: str
    title: str
    points: int
    notebook: str
    question: str  # what the section asks, never its recipe
    bonus: bool = False  # its points come on top of the course's 100
    # (concept id, weight): how many tests each test of that concept counts as in the
    # section's points; a concept not named counts 1 (course.toml's header)
    weights: tuple[tuple[str, int], ...] = ()

    def weight(self, concept: str | None) -> int:
        """How many tests each test of `concept` (its id; None: no concept) counts as."""
        return dict(self.weights).get(concept, 1)

    @property
    def test_file(self) -> Path:
        """The section's tests: `tests/sections/test_s3_bilm.py`."""
        return TESTS_DIR / f"test_{self.module}.py"

    @property
    def file_name(self) -> str:
        """The module's file in `exercises/` and in the reference: `s3_bilm.py`."""
        return f"{self.module}.py"


def stub_message(section: Section, function: str) -> str:
    """`section 3 (bilm): BiLM.forward is not implemented yet`."""
    return f"section {section.number} ({section.name}): {function} is not implemented yet"


def _weights(path: Path, number: int, weights: object) -> tuple[tuple[str, int], ...]:
    """A section's `weights` table as (concept id, weight) pairs; each weight a whole number
    of at least 1 (a bool is not one)."""
    if not isinstance(weights, dict):
        raise ValueError(f"{path}: section {number}'s weights must be a table, "
                         f"{{ concept-id = 2 }}, got {weights!r}")
    for concept, weight in weights.items():
        if type(weight) is not int or weight < 1:
            raise ValueError(f"{path}: section {number}'s weight of {concept!r} must be a "
                             f"whole number of at least 1, got {weight!r}")
    return tuple(weights.items())


def _load(path: Path = REGISTRY_FILE) -> tuple[Section, ...]:
    with path.open("rb") as f:
        sections = tuple(
            Section(**{**entry, "weights": _weights(path, entry.get("number"),
                                                    entry.get("weights", {}))})
            for entry in tomllib.load(f)["section"])
    numbers = [s.number for s in sections]
    if numbers != list(range(1, len(sections) + 1)):
        raise ValueError(f"{path}: sections must be numbered 1..{len(sections)}, got {numbers}")
    if sum(s.points for s in sections if not s.bonus) != 100:
        raise ValueError(f"{path}: the points of the sections that are not a bonus must add "
                         "up to 100")
    return sections


SECTIONS: tuple[Section, ...] = _load()
MAX_POINTS = sum(s.points for s in SECTIONS if not s.bonus)


def find_section(key: str | int) -> Section:
    """The section whose number, name or module is `key` ("3", 3, "bilm", "s3_bilm")."""
    text = str(key).strip()
    for section in SECTIONS:
        if text in (str(section.number), section.name, section.module):
            return section
    choices = ", ".join(f"{s.number}={s.name}" for s in SECTIONS)
    raise KeyError(f"no section {key!r}; choose a number or a name: {choices}")


def section_of_test(path_or_nodeid: str | Path) -> Section | None:
    """The section a test file or test belongs to: `tests/sections/test_s3_bilm.py` and
    `tests/sections/test_s3_bilm.py::test_x[3]` -> section 3; None for any other file."""
    stem = Path(str(path_or_nodeid).split("::")[0]).stem.removeprefix("test_")
    return next((s for s in SECTIONS if s.module == stem), None)


def shown(path: str | Path) -> str:
    """`path` relative to the repository when it lies inside it, as a learner names it."""
    path = Path(path).resolve()
    return str(path.relative_to(ROOT)) if path.is_relative_to(ROOT) else str(path)
