"""Test harness of the seven sections.

* `--impl DIR` (or $ELMO_IMPL) picks the implementation under test; default `exercises`.
* `--section N|NAME` runs one section's tests.
* Every section's module is a fixture named after the section (`setup`, `corpus`, `bilm`,
  `pretrain`, `extract`, `context`, `layer_weights`). In `test_s3_bilm.py` the fixture
  `bilm` is the implementation's, and `corpus` comes from `solutions/`: each test file sees
  its own section from the implementation and the others from the reference.
* `trained` is a biLM pre-trained once per process and shared by the tests that need one.
"""

from __future__ import annotations

import os
from pathlib import Path
from types import SimpleNamespace

import pytest
from hypothesis import HealthCheck, settings

from course.harness import IMPL_ENV_VAR, load_isolated, module_of
from course.pretrained import pretrained
from course.registry import ROOT, SECTIONS, Section, find_section

# Derandomised by default, so a learner's run, CI and grading all see the same examples.
settings.register_profile(
    "course", derandomize=True, deadline=None, max_examples=25, print_blob=False,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.differing_executors],
)
settings.register_profile("explore", deadline=None, max_examples=200)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "course"))


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--impl", default=os.environ.get(IMPL_ENV_VAR, "exercises"),
                     help="directory of the implementation under test (default: exercises)")
    parser.addoption("--section", default=os.environ.get("SECTION") or None,
                     help="run only this section's tests: a number (3) or a name (bilm)")


def section_of_test_file(path: Path) -> Section | None:
    """`test_s3_bilm.py` -> section 3; None for files that belong to no section."""
    stem = path.stem.removeprefix("test_")
    return next((s for s in SECTIONS if s.module == stem), None)


def pytest_ignore_collect(collection_path: Path, config: pytest.Config) -> bool | None:
    wanted = config.getoption("--section")
    if wanted and collection_path.suffix == ".py" and collection_path.name.startswith("test_"):
        return section_of_test_file(collection_path) != find_section(wanted)
    return None


def impl_dir(config: pytest.Config) -> Path:
    path = Path(config.getoption("--impl"))
    return path if path.is_absolute() else (ROOT / path)


def _package_for(request: pytest.FixtureRequest):
    under_test = section_of_test_file(Path(request.node.path))
    if under_test is None:
        raise RuntimeError(f"{request.node.path} is not named after a section module")
    return load_isolated(impl_dir(request.config), under_test)


def _section_fixture(section: Section):
    @pytest.fixture(scope="module", name=section.name)
    def fixture(request: pytest.FixtureRequest):
        return module_of(_package_for(request), section)

    fixture.__doc__ = f"Section {section.number}'s module, `{section.module}`."
    return fixture


for _section in SECTIONS:
    globals()[f"_fixture_{_section.name}"] = _section_fixture(_section)


@pytest.fixture(scope="module")
def trained(request: pytest.FixtureRequest) -> SimpleNamespace:
    """A biLM pre-trained on the toy corpus with the default recipe by the implementation's
    sections 1-4: `.model`, `.word2idx`, `.idx2word`, `.history` (loss per epoch). Trained
    once and cached (see `course.pretrained`); each test module gets its own copy."""
    return pretrained(_package_for(request))
