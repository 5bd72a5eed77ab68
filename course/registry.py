"""The section registry (`course.toml`), read by every tool of the course.

    from course.registry import SECTIONS, find_section
    find_section("3").module      # 's3_bilm'
    find_section("bilm").number   # 3
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
REGISTRY_FILE = ROOT / "course.toml"


@dataclass(frozen=True)
class Section:
    number: int
    name: str
    module: str
    title: str
    points: int
    notebook: str
    hint: str


def _load(path: Path = REGISTRY_FILE) -> tuple[Section, ...]:
    with path.open("rb") as f:
        sections = tuple(Section(**entry) for entry in tomllib.load(f)["section"])
    numbers = [s.number for s in sections]
    if numbers != list(range(1, len(sections) + 1)):
        raise ValueError(f"{path}: sections must be numbered 1..{len(sections)}, got {numbers}")
    if sum(s.points for s in sections) != 100:
        raise ValueError(f"{path}: points must add up to 100")
    return sections


SECTIONS: tuple[Section, ...] = _load()


def find_section(key: str | int) -> Section:
    """The section whose number, name or module is `key` ("3", 3, "bilm", "s3_bilm")."""
    text = str(key).strip()
    for section in SECTIONS:
        if text in (str(section.number), section.name, section.module):
            return section
    choices = ", ".join(f"{s.number}={s.name}" for s in SECTIONS)
    raise KeyError(f"no section {key!r}; choose a number or a name: {choices}")
