"""Read a submission: a directory holding an `exercises/` folder (or the section modules
themselves, as Gradescope hands them over), or a `.zip` of either (also a directory that
holds nothing but such a `.zip`).

Only the registry's section modules are read, as bytes, and nothing of the submission is
ever extracted or executed here: its tests, conftest, helpers and settings stay where they
are (the integrity scan notes them). Links are not followed; oversized files and archives
are refused. Where several folders hold section modules, the shallowest one named
`exercises` wins, then the shallowest of any name.
"""

from __future__ import annotations

import hashlib
import json
import os
import stat
import zipfile
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from course.registry import SECTIONS

MODULE_LIMIT_BYTES = 1 << 20
MAX_FILES = 5000
MODULE_NAMES = {f"{s.module}.py" for s in SECTIONS}


@dataclass
class Submission:
    """name: how the reports call it (`unique_names` makes it unique); modules: {module
    file name: source bytes}; files: every file's path inside it; unreadable: {module file
    name: why it was not read}; error: why nothing of it could be read."""

    name: str
    path: Path
    modules: dict[str, bytes] = field(default_factory=dict)
    files: list[str] = field(default_factory=list)
    unreadable: dict[str, str] = field(default_factory=dict)
    error: str | None = None
    given: Path | None = None  # the path it was named by, where that is not `path`

    @property
    def digest(self) -> str:
        """Equal for two submissions that grade alike: their modules and their file list."""
        digest = hashlib.sha256()
        for name in sorted(self.modules):
            digest.update(name.encode() + b"\0" + hashlib.sha256(self.modules[name]).digest())
        listing = [self.files, sorted(self.unreadable.items()), self.error]
        digest.update(json.dumps(listing).encode())
        return digest.hexdigest()


def _depth(folder: str) -> int:
    return 0 if folder == "." else folder.count("/") + 1


def _module_folder(paths: list[str]) -> str | None:
    """The folder that holds the section modules, by the rule of the module docstring."""
    folders = {str(PurePosixPath(p).parent) for p in paths if PurePosixPath(p).name in MODULE_NAMES}
    if not folders:
        return None
    named = [f for f in folders if PurePosixPath(f).name == "exercises"]
    return min(named or folders, key=lambda f: (_depth(f), f))


def _in_folder(folder: str, name: str) -> str:
    return name if folder == "." else f"{folder}/{name}"


def _read_zip(submission: Submission) -> None:
    with zipfile.ZipFile(submission.path) as archive:
        entries = {i.filename: i for i in archive.infolist() if not i.is_dir()}
        if len(entries) > MAX_FILES:
            raise ValueError(f"the archive holds {len(entries)} files, more than {MAX_FILES}")
        submission.files = sorted(entries)
        folder = _module_folder(submission.files)
        for name in MODULE_NAMES if folder is not None else ():
            info = entries.get(_in_folder(folder, name))
            if info is None:
                continue
            if stat.S_ISLNK(info.external_attr >> 16):
                submission.unreadable[name] = "it is a symbolic link in the archive"
            elif info.file_size > MODULE_LIMIT_BYTES:
                submission.unreadable[name] = f"it is larger than {MODULE_LIMIT_BYTES} bytes"
            else:
                submission.modules[name] = archive.read(info)


def _read_dir(submission: Submission) -> None:
    files = []
    for top, dirs, names in os.walk(submission.path):  # links to folders are not followed
        dirs[:] = sorted(d for d in dirs if d != "__pycache__")
        files += [str(Path(top, n).relative_to(submission.path).as_posix()) for n in names]
        if len(files) > MAX_FILES:
            raise ValueError(f"the folder holds more than {MAX_FILES} files")
    submission.files = sorted(files)
    folder = _module_folder(submission.files)
    for name in MODULE_NAMES if folder is not None else ():
        path = submission.path / _in_folder(folder, name)
        if not os.path.lexists(path):
            continue
        info = path.lstat()
        if not stat.S_ISREG(info.st_mode):
            submission.unreadable[name] = "it is a link or not a regular file"
        elif info.st_size > MODULE_LIMIT_BYTES:
            submission.unreadable[name] = f"it is larger than {MODULE_LIMIT_BYTES} bytes"
        else:
            submission.modules[name] = path.read_bytes()


def read_submission(path: Path, name: str | None = None) -> Submission:
    """Never raises: a submission that cannot be read carries its `error`."""
    path = Path(path)
    submission = Submission(name=name or (path.stem if path.suffix == ".zip" else path.name),
                            path=path)
    try:
        if path.is_file() and zipfile.is_zipfile(path):
            _read_zip(submission)
        elif path.is_dir():
            _read_dir(submission)
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


def _names(submission: Submission) -> list[str]:
    """What a submission may be called, shortest first: the name it was read with (`alice`
    for `alice.zip`), the file name of the path it was given by, then ever more of the
    folders above it, up to that whole path."""
    path = Path(os.path.abspath(submission.given or submission.path))
    longer = ["/".join(path.parts[-depth:]).lstrip("/") for depth in range(2, len(path.parts))]
    return list(dict.fromkeys([submission.name, path.name, *longer, str(path)]))


def unique_names(submissions: list[Submission]) -> None:
    """Give the submissions distinct names, in place, from their paths: each keeps its short
    name unless another has it too, in which case every one of them takes a longer one
    (`a/alice` and `b/alice`), never a made-up one that another could hold.

    Raises:
        ValueError: a path is given twice.
    """
    candidates = [_names(s) for s in submissions]
    seen: dict[str, Path] = {}
    for submission, names in zip(submissions, candidates, strict=True):
        if names[-1] in seen:
            raise ValueError(f"{submission.given or submission.path} is named twice")
        seen[names[-1]] = submission.path
    level = [0] * len(submissions)
    while True:
        names = [c[min(n, len(c) - 1)] for c, n in zip(candidates, level, strict=True)]
        counts: dict[str, int] = {}
        for name in names:
            counts[name] = counts.get(name, 0) + 1
        clashing = [i for i, name in enumerate(names) if counts[name] > 1]
        if not clashing:
            break
        for i in clashing:
            level[i] += 1
    for submission, name in zip(submissions, names, strict=True):
        submission.name = name
