"""Each submission's result on disk, written the moment it is graded, so that an
interrupted run loses nothing and the next one resumes where it stopped; and the seal that
lets the grader trust, later, only what it wrote itself.

    build/grading/results/<name>-<hash of the name>.json
        {"settings": the grader's settings key, "digest": the submission's, "result": {...},
         "seal": HMAC-SHA256 of the rest, under the work folder's key}

A stored result is used again only for the same submission bytes under the same settings
(tests, reference, tooling, sections, limits, isolation), and only when its seal holds: a
file that anything but this grader wrote or changed is graded again. The key
(`<work folder>/key`) and every file here are the grader's alone: no run can see them.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import re
from pathlib import Path

from .integrity import Flag
from .sandbox import read_capped
from .scoring import SectionResult, SubmissionResult, TestResult
from .submissions import Submission

STORED_BYTES = 16 << 20  # the most a stored result may hold


def write_atomically(path: Path, text: str) -> None:
    """Readers see the old file or the new one, never half of one."""
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    partial.unlink(missing_ok=True)
    fd = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644)
    with os.fdopen(fd, "w") as stream:
        stream.write(text)
    partial.replace(path)


class Seal:
    """An HMAC key of the work folder's, made on first use, readable by the grader only."""

    def __init__(self, work_dir: Path) -> None:
        path = Path(work_dir) / "key"
        path.parent.mkdir(parents=True, exist_ok=True)
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
            os.write(fd, os.urandom(32))
            os.close(fd)
        except FileExistsError:
            pass
        self._key = read_capped(path, 64)
        if len(self._key) != 32:
            raise ValueError(f"{path} is not a key this grader wrote: remove it to start afresh")

    def __call__(self, data: object) -> str:
        text = json.dumps(data, sort_keys=True, separators=(",", ":")).encode()
        return hmac.new(self._key, text, hashlib.sha256).hexdigest()

    def holds(self, data: object, seal: object) -> bool:
        return isinstance(seal, str) and hmac.compare_digest(self(data), seal)


def load_sealed(path: Path, seal: Seal) -> dict | None:
    """The JSON object `path` holds, if `seal` vouches for it; None otherwise."""
    try:
        stored = json.loads(read_capped(path, STORED_BYTES))
        body = stored["body"]
        return body if seal.holds(body, stored["seal"]) else None
    except (ValueError, KeyError, TypeError):
        return None


def save_sealed(path: Path, seal: Seal, body: dict) -> None:
    write_atomically(path, json.dumps({"body": body, "seal": seal(body)}, indent=1))


class Store:
    def __init__(self, folder: Path, settings_key: str, seal: Seal) -> None:
        self.folder, self.settings_key, self.seal = Path(folder), settings_key, seal

    def path(self, name: str) -> Path:
        safe = re.sub(r"[^A-Za-z0-9._-]", "_", name)[:60]
        return self.folder / f"{safe}-{hashlib.sha256(name.encode()).hexdigest()[:8]}.json"

    def load(self, submission: Submission) -> SubmissionResult | None:
        stored = load_sealed(self.path(submission.name), self.seal)
        try:
            if stored is None or (stored["settings"], stored["digest"], stored["result"]["name"]
                                  ) != (self.settings_key, submission.digest, submission.name):
                return None
            return result_from_dict(stored["result"])
        except (ValueError, KeyError, TypeError):
            return None  # nothing usable stored: grade it

    def save(self, result: SubmissionResult) -> None:
        save_sealed(self.path(result.name), self.seal,
                    {"settings": self.settings_key, "digest": result.digest,
                     "result": result.to_dict()})


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
