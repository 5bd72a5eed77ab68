"""What the learner's runs leave behind: the last result of every section, the hints shown,
and the predictions made before the notebooks' experiments.

    state = State.load(STATE_FILE)
    state.record_run(records, impl)      # the sections this run ran; the others stay as they were
    state.runs_of(impl)                  # {section number: SectionRun}
    state.hints_shown(3, "BiLM.forward") # how many rungs of that ladder were shown
    state.record_prediction({...})       # a prediction and what the experiment gave
    state.save()

The file (`build/progress.json` by default; `make test` and `make hint` keep it, it is never in
the submission) is JSON:

    {"format": 1,
     "runs": {"exercises": {"3": {"ran_at": "2026-12-03T17:43:02+00:00",
                                  "module_digest": "<sha256 of s3_bilm.py as the run found it>",
                                  "records": [<course.results records of section 3>]}}},
     "hints": {"3": {"BiLM.forward": 2}},
     "predictions": [{"experiment": "residual", "section": 3, "prediction": "<one line>",
                      "outcome": "<what the learner's biLM did>", ...}]}

`runs` is kept per implementation (its folder as the course names it), so that testing
another folder never overwrites what the learner's own `exercises/` did. A file that cannot
be read is set aside (renamed `.broken`) and the state starts afresh.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path

from .registry import BUILD_DIR, Section, shown

STATE_FILE = BUILD_DIR / "progress.json"
FORMAT = 1


@dataclass(frozen=True)
class SectionRun:
    """A section's last run: when it started, the digest of its module then, its records."""

    ran_at: str
    module_digest: str | None
    records: tuple[dict, ...]


def module_digest(path: Path) -> str | None:
    """SHA-256 of the file's bytes (as `course.results` takes it); None if it is missing."""
    try:
        return hashlib.sha256(path.read_bytes()).hexdigest()
    except OSError:
        return None


def impl_key(impl_dir: Path) -> str:
    """How the state names an implementation: its folder as the course names it."""
    return shown(impl_dir)


class State:
    def __init__(self, path: Path, data: dict | None = None) -> None:
        self.path = path
        data = data or {}
        self.runs: dict[str, dict[str, dict]] = data.get("runs", {})
        self.hints: dict[str, dict[str, int]] = data.get("hints", {})
        self.predictions: list[dict] = data.get("predictions", [])

    @classmethod
    def load(cls, path: Path = STATE_FILE) -> State:
        try:
            data = json.loads(path.read_text())
            if not isinstance(data, dict) or data.get("format") != FORMAT:
                raise ValueError(f"not a progress file of format {FORMAT}")
        except FileNotFoundError:
            return cls(path)
        except (OSError, ValueError):
            path.replace(path.with_name(path.name + ".broken"))
            return cls(path)
        return cls(path, data)

    def save(self) -> None:
        """Write the file whole or not at all (a temporary file, then a rename)."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        data = {"format": FORMAT, "runs": self.runs, "hints": self.hints,
                "predictions": self.predictions}
        with tempfile.NamedTemporaryFile("w", dir=self.path.parent, prefix=".progress-",
                                         suffix=".json", delete=False) as f:
            json.dump(data, f, indent=1)
        os.replace(f.name, self.path)

    # --- runs -------------------------------------------------------------------------------

    def record_run(self, records: list[dict], impl_dir: Path) -> list[int]:
        """Keep the records of each section that `records` holds, in place of that section's
        earlier ones; the numbers of those sections, in order."""
        by_section: dict[int, list[dict]] = {}
        for record in records:
            if isinstance(record.get("section"), int):
                by_section.setdefault(record["section"], []).append(record)
        runs = self.runs.setdefault(impl_key(impl_dir), {})
        for number, found in by_section.items():
            runs[str(number)] = {
                "ran_at": found[0].get("ran_at") or "",
                "module_digest": found[0].get("module_digest"),
                "records": found,
            }
        return sorted(by_section)

    def runs_of(self, impl_dir: Path) -> dict[int, SectionRun]:
        return {int(number): SectionRun(run.get("ran_at", ""), run.get("module_digest"),
                                        tuple(run.get("records", ())))
                for number, run in self.runs.get(impl_key(impl_dir), {}).items()}

    # --- hints ------------------------------------------------------------------------------

    def hints_shown(self, section: Section | int, function: str) -> int:
        number = section if isinstance(section, int) else section.number
        return self.hints.get(str(number), {}).get(function, 0)

    def show_hint(self, section: Section | int, function: str) -> None:
        number = section if isinstance(section, int) else section.number
        shown_now = self.hints.setdefault(str(number), {})
        shown_now[function] = shown_now.get(function, 0) + 1

    def hints_used(self, section: Section | int) -> int:
        number = section if isinstance(section, int) else section.number
        return sum(self.hints.get(str(number), {}).values())

    # --- predictions ------------------------------------------------------------------------

    def record_prediction(self, made: dict) -> None:
        """Keep a prediction and its experiment's outcome (`analyses.predictions.run`), after
        the earlier ones: every prediction counts, a repeated experiment too."""
        self.predictions.append(made)
