"""Load one section of an implementation under test, with every other section from a folder
of its own: for the section tests, the tests' fakes of the other sections (`FAKES_DIR`),
so that what a section's tests run is that section and course code alone, the same in a
learner's handout as in the grader; for a notebook, the reference where there is one.

    harness = Harness(Path("exercises"), FAKES_DIR)
    package = harness.load(find_section("bilm"))
    bilm = harness.module(package, find_section("bilm"))      # exercises/s3_bilm.py
    corpus = harness.module(package, find_section("corpus"))  # tests/sections/fakes/s2_corpus.py

The sections import each other relatively (`from .s3_bilm import BiLM`), so a package is all
it takes: `load` makes one, named after a digest of its modules' bytes, whose modules are
imported from their own files, where they are. Tracebacks, pytest's reports and a notebook's
errors therefore name `exercises/s3_bilm.py` and its lines, and nothing is ever copied.
Where the other folder does not exist (the reference, in a learner's handout), every
section comes from the implementation; a section that it lacks is in no package (the fakes
stand for the sections that another imports, and no more).

Each package's modules run the bytes that were hashed, never a stale `__pycache__`; loading
again after an edit gives a new package, and loading unchanged files gives the same one.
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import sys
from pathlib import Path
from types import ModuleType

from .registry import REFERENCE_DIR, SECTIONS, Section, find_section

PACKAGE_PREFIX = "elmo_"


class _SourceLoader(importlib.abc.SourceLoader):
    """A module from fixed bytes at a real path: no bytecode read or written."""

    def __init__(self, path: Path, source: bytes) -> None:
        self.path, self.source = str(path), source

    def get_filename(self, fullname: str) -> str:
        return self.path

    def get_data(self, path: str) -> bytes:
        return self.source


class _Finder(importlib.abc.MetaPathFinder):
    """Finds the modules of every package that a `Harness` has made, by their full name."""

    def __init__(self) -> None:
        self.sources: dict[str, tuple[Path, bytes]] = {}

    def find_spec(self, fullname, path=None, target=None):
        found = self.sources.get(fullname)
        if found is None:
            return None
        return importlib.util.spec_from_file_location(
            fullname, found[0], loader=_SourceLoader(*found))


_FINDER = _Finder()
sys.meta_path.append(_FINDER)


class Harness:
    """The sections of `impl_dir`, each run with the others of `others_dir`.

    Args:
        impl_dir: the folder of the implementation under test (section modules by name).
        others_dir: where the sections not under test come from (the tests' fakes, or the
            reference); where it does not exist, they come from `impl_dir` too.
    """

    def __init__(self, impl_dir: str | Path, others_dir: str | Path = REFERENCE_DIR) -> None:
        self.impl_dir = Path(impl_dir).resolve()
        self.others_dir = Path(others_dir).resolve()

    def source_for(self, under_test: Section, section: Section) -> Path:
        """The file that `section` comes from when `under_test` is the section tested."""
        if section == under_test or not self.others_dir.is_dir():
            return self.impl_dir / section.file_name
        return self.others_dir / section.file_name

    def load(self, under_test: Section) -> ModuleType:
        """A package of every section: `under_test` from the implementation, the others
        from `others_dir`. Its modules are imported when first asked for (`module`).

        Raises:
            FileNotFoundError: the implementation has no module for `under_test`.
        """
        target = self.impl_dir / under_test.file_name
        if not target.exists():
            raise FileNotFoundError(f"section {under_test.number}: {target} does not exist")
        files = {s.module: self.source_for(under_test, s) for s in SECTIONS}
        sources = {m: p.read_bytes() for m, p in files.items() if p.exists()}
        digest = hashlib.sha256()
        for module in sorted(sources):
            digest.update(f"{module}\0{files[module]}\0".encode() + sources[module])
        name = f"{PACKAGE_PREFIX}{digest.hexdigest()[:16]}"
        if name not in sys.modules:
            for module, source in sources.items():
                _FINDER.sources[f"{name}.{module}"] = (files[module], source)
            spec = importlib.machinery.ModuleSpec(name, None, is_package=True)
            package = importlib.util.module_from_spec(spec)
            package.__path__ = []
            package.__doc__ = f"{under_test.module} from {self.impl_dir}, the others from " \
                              f"{self.others_dir}"
            package.sources = files
            package.digests = {m: hashlib.sha256(s).hexdigest() for m, s in sources.items()}
            sys.modules[name] = package
        return sys.modules[name]

    @staticmethod
    def module(package: ModuleType, section: Section) -> ModuleType:
        """Import `section`'s module of `package` (errors of that module surface here)."""
        return importlib.import_module(f"{package.__name__}.{section.module}")

    def sections(self, under_test: Section) -> Sections:
        """Every section's module as `under_test`'s tests see it, by name."""
        return Sections(self.load(under_test))


class Sections:
    """The modules of one package by their section's name (`.corpus`, `.bilm`, ...), each
    imported when first used; `.package` is the package itself."""

    def __init__(self, package: ModuleType) -> None:
        self.package = package

    def __getattr__(self, name: str) -> ModuleType:
        try:
            section = find_section(name)
        except KeyError as err:
            raise AttributeError(err.args[0]) from None
        return Harness.module(self.package, section)


def sources_key(package: ModuleType, sections: list[Section]) -> str:
    """A digest of `sections`' sources in `package`: equal digests, equal behaviour."""
    digest = hashlib.sha256()
    for section in sections:
        digest.update(package.digests.get(section.module, "").encode())
    return digest.hexdigest()
