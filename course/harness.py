"""Load one section of an implementation under test, with every other section from the
reference, so that a learner's unfinished or broken section never fails another's tests.

    package = load_isolated(Path("exercises"), find_section("bilm"))
    bilm = module_of(package, find_section("bilm"))    # the learner's s3_bilm
    corpus = module_of(package, find_section("corpus"))  # solutions' s2_corpus

The sections import each other relatively (`from .s3_bilm import BiLM`), so copying the
chosen files into a fresh package is all it takes. Where the reference is absent (a
learner's handout has no `solutions/`), every section comes from the implementation.
"""

from __future__ import annotations

import hashlib
import importlib
import shutil
import sys
import tempfile
from pathlib import Path
from types import ModuleType

from .registry import ROOT, SECTIONS, Section

REFERENCE_DIR = ROOT / "solutions"
IMPL_ENV_VAR = "ELMO_IMPL"

_WORKDIR = Path(tempfile.mkdtemp(prefix="elmo-under-test-"))
_loaded: dict[tuple[str, ...], ModuleType] = {}


def source_for(impl_dir: Path, under_test: Section, section: Section) -> Path:
    """The file that `section` is taken from when `under_test` is the section being tested."""
    reference = REFERENCE_DIR / f"{section.module}.py"
    if section == under_test or not reference.exists():
        return impl_dir / f"{section.module}.py"
    return reference


def load_isolated(impl_dir: Path, under_test: Section) -> ModuleType:
    """A fresh package holding `under_test` from `impl_dir` and the others from the reference.

    Raises:
        FileNotFoundError: `impl_dir` has no module for `under_test`.
    """
    impl_dir = Path(impl_dir).resolve()
    target = impl_dir / f"{under_test.module}.py"
    if not target.exists():
        raise FileNotFoundError(f"section {under_test.number}: {target} does not exist")
    sources = [source_for(impl_dir, under_test, s) for s in SECTIONS]
    key = tuple(hashlib.sha256(p.read_bytes()).hexdigest() if p.exists() else "" for p in sources)
    if key in _loaded:
        return _loaded[key]
    name = f"elmo_under_test_{len(_loaded)}"
    package_dir = _WORKDIR / name
    package_dir.mkdir()
    (package_dir / "__init__.py").write_text(f'"""{under_test.module} from {impl_dir}."""\n')
    for section, source in zip(SECTIONS, sources, strict=True):
        if source.exists():
            shutil.copyfile(source, package_dir / f"{section.module}.py")
    if str(_WORKDIR) not in sys.path:
        sys.path.insert(0, str(_WORKDIR))
    importlib.invalidate_caches()
    _loaded[key] = package = importlib.import_module(name)
    return package


def module_of(package: ModuleType, section: Section) -> ModuleType:
    """Import `section`'s module from an isolated package (errors of that module surface here)."""
    return importlib.import_module(f"{package.__name__}.{section.module}")


def sources_key(package: ModuleType, sections: list[Section]) -> str:
    """A digest of the source of `sections` in `package`: equal digests, equal behaviour."""
    digest = hashlib.sha256()
    for section in sections:
        path = Path(package.__file__).parent / f"{section.module}.py"
        digest.update(path.read_bytes() if path.exists() else b"")
    return digest.hexdigest()
