"""Each submission's result on disk, written when it is graded, so that an interrupted
grading resumes where it stopped: `<work folder>/results/<name>-<hash>.json` holds
{"settings": the settings key, "digest": the submission's, "result": {...}}, used again only
for the same bytes under the same settings. No run reaches the work folder, so what is there
is the grader's; a file that does not read as a result is graded again.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from pathlib import Path

from .scoring import SubmissionResult, result_from_dict
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
        self.folder.mkdir(mode=0o700, parents=True, exist_ok=True)

    def path(self, name: str) -> Path:
        safe = re.sub(r"[^A-Za-z0-9._-]", "_", name)[:60]
        return self.folder / f"{safe}-{hashlib.sha256(name.encode()).hexdigest()[:8]}.json"

    def load(self, submission: Submission) -> SubmissionResult | None:
        try:
            stored = json.loads(self.path(submission.name).read_text())
            if (stored["settings"], stored["digest"], stored["result"]["name"]) == (
                    self.settings_key, submission.digest, submission.name):
                return result_from_dict(stored["result"])
        except (OSError, ValueError, KeyError, TypeError):
            pass
        return None

    def save(self, result: SubmissionResult) -> None:
        write_atomically(self.path(result.name), json.dumps(
            {"settings": self.settings_key, "digest": result.digest,
             "result": result.to_dict()}, indent=1))
