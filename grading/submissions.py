"""Read a submission: a folder holding an `exercises/` folder (or the section modules
themselves, as Gradescope hands them over), or a `.zip` of either (also a folder that holds
nothing but such a `.zip`). Where several folders hold section modules, the shallowest one
named `exercises` wins, then the shallowest of any name.

Only the registry's section modules are read, as bytes; nothing of a submission is extracted
or run here. Links are not followed: a module that is one is unreadable, and a submission
named by one (its folder, its `.zip`, the one `.zip` in its folder) is refused, for it could
be a classmate's or anything of the grader's. Oversized modules and archives are refused. A
name that is not UTF-8 (a folder's, a file's) is kept with its odd bytes written as `\\xe9`,
so that every report can hold it.
"""

from __future__ import annotations

import hashlib
import json
import os
import stat
import zipfile
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from course.registry import SECTIONS

MODULE_LIMIT_BYTES = 1 << 20
MAX_FILES = 5000
MODULE_NAMES = {s.file_name for s in SECTIONS}


@dataclass
class Submission:
    """modules: {file name: source bytes}; files: every file's path in it; unreadable: {file
    name: why not read}; error: why nothing of it could be read; given: the path it was
    named by, where that is not `path` (a folder holding its .zip)."""

    name: str
    path: Path
    modules: dict[str, bytes] = field(default_factory=dict)
    files: list[str] = field(default_factory=list)
    unreadable: dict[str, str] = field(default_factory=dict)
    error: str | None = None
    given: Path | None = None

    @property
    def digest(self) -> str:
        """Equal for two submissions that grade alike: their modules and their file list."""
        digest = hashlib.sha256()
        for name in sorted(self.modules):
            digest.update(name.encode() + b"\0" + hashlib.sha256(self.modules[name]).digest())
        digest.update(json.dumps([self.files, sorted(self.unreadable.items()),
                                  self.error]).encode())
        return digest.hexdigest()


def readable(name: str) -> str:
    """`name` as a report can hold it: a byte that is not UTF-8 (Python keeps it as a lone
    surrogate, which no UTF-8 file can hold) written as `\\xe9`."""
    return name.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")


def _read(submission: Submission, entries: dict[str, tuple[bool, int]], read) -> None:
    """The section modules among `entries` ({path: (is a link, size)}), read by `read`."""
    if len(entries) > MAX_FILES:
        raise ValueError(f"it holds {len(entries)} files, more than {MAX_FILES}")
    submission.files = sorted(readable(p) for p in entries)
    folders = {str(PurePosixPath(p).parent) for p in entries if PurePosixPath(p).name in
               MODULE_NAMES}
    named = [f for f in folders if PurePosixPath(f).name == "exercises"] or folders
    if not named:
        return
    folder = min(named, key=lambda f: (0 if f == "." else f.count("/") + 1, f))
    for name in MODULE_NAMES:
        path = name if folder == "." else f"{folder}/{name}"
        if path not in entries:
            continue
        link, size = entries[path]
        if link:
            submission.unreadable[name] = "it is a link or not a regular file"
        elif size > MODULE_LIMIT_BYTES:
            submission.unreadable[name] = f"it is larger than {MODULE_LIMIT_BYTES} bytes"
        else:
            submission.modules[name] = read(path)


def read_submission(path: Path, name: str | None = None) -> Submission:
    """Never raises: a submission that cannot be read carries its `error`."""
    path = Path(path)
    submission = Submission(readable(name or (path.stem if path.suffix == ".zip" else path.name)),
                            path)
    try:
        if path.is_symlink():
            submission.error = f"{path} is a link: a submission's own folder or .zip is needed"
        elif path.is_file() and zipfile.is_zipfile(path):
            with zipfile.ZipFile(path) as archive:
                _read(submission, {i.filename: (stat.S_ISLNK(i.external_attr >> 16), i.file_size)
                                   for i in archive.infolist() if not i.is_dir()}, archive.read)
        elif path.is_dir():
            entries = {}
            for top, dirs, names in os.walk(path):  # links to folders are not followed
                dirs[:] = sorted(d for d in dirs if d != "__pycache__")
                for file in (Path(top, n) for n in names):
                    info = file.lstat()
                    entries[file.relative_to(path).as_posix()] = (
                        not stat.S_ISREG(info.st_mode), info.st_size)
                if len(entries) > MAX_FILES:
                    raise ValueError(f"it holds more than {MAX_FILES} files")
            _read(submission, entries, lambda name: (path / name).read_bytes())
            archives = sorted(path.glob("*.zip"))
            if not submission.modules and len(archives) == 1:  # handed in as a .zip, kept so
                inner = read_submission(archives[0], submission.name)
                inner.given = path
                return inner
        else:
            submission.error = f"{path} is neither a folder nor a .zip archive"
    except (OSError, ValueError, zipfile.BadZipFile, RuntimeError) as err:
        submission.error = f"cannot read {path}: {err}"
    return submission


def unique_names(submissions: list[Submission]) -> None:
    """Give the submissions distinct names, in place, from their paths: each keeps its short
    name (`alice` for `alice.zip`) unless another has it too, in which case each of those takes
    ever more of the folders above it (`a/alice`, `b/alice`), never a made-up one.

    Raises:
        ValueError: a path is given twice.
    """
    candidates = []
    for submission in submissions:
        path = Path(os.path.abspath(submission.given or submission.path))
        longer = ["/".join(path.parts[-depth:]).lstrip("/") for depth in range(2, len(path.parts))]
        candidates.append(list(dict.fromkeys([submission.name, path.name, *longer, str(path)])))
    whole = Counter(c[-1] for c in candidates)
    for submission, names in zip(submissions, candidates, strict=True):
        if whole[names[-1]] > 1:
            raise ValueError(f"{submission.given or submission.path} is named twice")
    level = [0] * len(submissions)
    while True:
        names = [c[min(n, len(c) - 1)] for c, n in zip(candidates, level, strict=True)]
        counts = Counter(names)
        clashing = [i for i, name in enumerate(names) if counts[name] > 1]
        if not clashing:
            break
        for i in clashing:
            level[i] += 1
    for submission, name in zip(submissions, names, strict=True):
        submission.name = readable(name)
