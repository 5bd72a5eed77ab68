"""Each submission's result on disk, written the moment it is graded, so that an
interrupted run loses nothing and the next one resumes where it stopped.

    build/grading/results/<name>-<hash of the name>.json
        {"settings": the grader's settings key, "digest": the submission's, "result": {...}}

A stored result is used again only for the same submission bytes under the same settings
(tests, reference, tooling, sections, limits): change any of them and it is regraded.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from pathlib import Path

from .integrity import Flag
from .scoring import SectionResult, SubmissionResult, TestResult
from .submissions import Submission


def write_atomically(path: Path, text: str) -> None:
    """Readers see the old file or the new one, never half of one."""
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    partial.write_text(text)
    partial.replace(path)


class Store:
    def __init__(self, folder: Path, settings_key: str) -> None:
        self.folder, self.settings_key = Path(folder), settings_key

    def path(self, name: str) -> Path:
        safe = re.sub(r"[^A-Za-z0-9._-]", "_", name)[:60]
        return self.folder / f"{safe}-{hashlib.sha256(name.encode()).hexdigest()[:8]}.json"

    def load(self, submission: Submission) -> SubmissionResult | None:
        try:
            stored = json.loads(self.path(submission.name).read_text())
            if (stored["settings"], stored["digest"]) != (self.settings_key, submission.digest):
                return None
            return result_from_dict(stored["result"])
        except (OSError, ValueError, KeyError, TypeError):
            return None  # nothing usable stored: grade it

    def save(self, result: SubmissionResult) -> None:
        stored = {"settings": self.settings_key, "digest": result.digest,
                  "result": result.to_dict()}
        write_atomically(self.path(result.name), json.dumps(stored, indent=1))


def _flag(data: dict) -> Flag:
    return Flag(data["kind"], data["detail"], data.get("section"))


def result_from_dict(data: dict) -> SubmissionResult:
    """The result that `SubmissionResult.to_dict` wrote."""
    sections = [
        SectionResult(**{**s, "flags": [_flag(f) for f in s["flags"]],
                         "tests": [TestResult(**t) for t in s["tests"]]})
        for s in data["sections"]
    ]
    return SubmissionResult(data["name"], data["path"], data["digest"], sections,
                            [_flag(f) for f in data["flags"]])
