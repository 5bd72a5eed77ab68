"""Test harness of the sections.

* `--impl DIR` (or $ELMO_IMPL) picks the implementation under test; default `exercises`.
* `--section N|NAME` runs one section's tests.
* Every section's module is a fixture named after the section (`setup`, `corpus`, `bilm`,
  `pretrain`, `extract`, `context`, `layer_weights`). In `test_s3_bilm.py` the fixture
  `bilm` is the implementation's, and `corpus` is the tests' fake of section 2
  (`tests/sections/fakes/`): each test file sees its own section from the implementation
  and the others as fakes to their interface (`course.harness`), so that a learner's run and
  the grader's run the same code, whatever the learner's other sections hold.
* `trained` is a biLM trained once per process and shared by the tests that need one.

A judged test (`judged.py`) is an act and a judge; `--act-cases FILE` (a grading run) has
the acts run on the grader's cases and send their data, and judges nothing.

What a failing test says, in the learner's terms, is `course.report`'s; each test's outcome
is recorded by `course.results` (`--results-json FILE`).
"""

from __future__ import annotations

import os
from pathlib import Path
from types import SimpleNamespace

import pytest
import torch
from hypothesis import HealthCheck, Phase, settings

from course.harness import Harness
from course.pretrained import pretrained
from course.registry import (
    EXERCISES_DIR,
    FAKES_DIR,
    IMPL_ENV_VAR,
    ROOT,
    SECTIONS,
    Section,
    find_section,
    section_of_test,
)

from .judged import ActHooks, ActOnly

pytest_plugins = ["course.results", "course.report"]
HARNESS = pytest.StashKey[Harness]()  # the harness of this run, made from its options

# Derandomised by default, so that a learner's runs and CI see the same examples (a grader
# draws its own for each submission: `grading.judging`).
# No "explain" phase: after a failure it spends seconds per test (on a stub, every property
# test fails) to print variations of the example that a learner does not need.
# One failure per test, the first: "2 distinct failures" in an ExceptionGroup hides both.
settings.register_profile(
    "course", derandomize=True, deadline=None, max_examples=25, print_blob=False,
    report_multiple_bugs=False,
    phases=[Phase.explicit, Phase.reuse, Phase.generate, Phase.shrink],
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.differing_executors],
)
settings.register_profile("explore", deadline=None, max_examples=200)
# Whether a test fails, and no more: the first failing example, not the smallest.
settings.register_profile("first-failure", parent=settings.get_profile("course"),
                          phases=[Phase.explicit, Phase.reuse, Phase.generate])
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "course"))

# The course's tensors are tiny: a second torch thread costs more in synchronisation than it
# saves (a section-7 probe step: 2-3 ms on one thread, 27-72 ms on two busy cores), and one
# thread makes every run independent of the machine's core count.
torch.set_num_threads(1)


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--impl", default=os.environ.get(IMPL_ENV_VAR, EXERCISES_DIR.name),
                     help="directory of the implementation under test (default: exercises)")
    parser.addoption("--section", default=os.environ.get("SECTION") or None,
                     help="run only this section's tests: a number (3) or a name (bilm)")
    parser.addoption("--act-cases", default=None, metavar="FILE",
                     help="a grading run: judged tests act on FILE's cases and judge nothing")


def pytest_addhooks(pluginmanager: pytest.PytestPluginManager) -> None:
    pluginmanager.add_hookspecs(ActHooks)


def pytest_configure(config: pytest.Config) -> None:
    impl = Path(config.getoption("--impl"))
    impl = impl if impl.is_absolute() else ROOT / impl
    if not impl.is_dir():
        raise pytest.UsageError(
            f"--impl {config.getoption('--impl')}: {impl} is not a directory; "
            "point it at a folder that holds the section modules (s1_setup.py, ...)"
        )
    wanted = config.getoption("--section")
    if wanted:
        try:
            find_section(wanted)
        except KeyError as err:
            raise pytest.UsageError(f"--section {wanted}: {err.args[0]}") from None
    config.stash[HARNESS] = Harness(impl, FAKES_DIR)
    if config.getoption("--act-cases"):
        config.pluginmanager.register(ActOnly(config.getoption("--act-cases")), "act-only")


def pytest_ignore_collect(collection_path: Path, config: pytest.Config) -> bool | None:
    wanted = config.getoption("--section")
    if wanted and collection_path.suffix == ".py" and collection_path.name.startswith("test_"):
        return section_of_test(collection_path) != find_section(wanted)
    return None


def _package_for(request: pytest.FixtureRequest):
    under_test = section_of_test(request.node.path)
    if under_test is None:
        raise RuntimeError(f"{request.node.path} is not named after a section module")
    return request.config.stash[HARNESS].load(under_test)


def _section_fixture(section: Section):
    @pytest.fixture(scope="module", name=section.name)
    def fixture(request: pytest.FixtureRequest):
        return Harness.module(_package_for(request), section)

    fixture.__doc__ = f"Section {section.number}'s module, `{section.module}`."
    return fixture


for _section in SECTIONS:
    globals()[f"_fixture_{_section.name}"] = _section_fixture(_section)


@pytest.fixture(scope="module")
def trained(request: pytest.FixtureRequest) -> SimpleNamespace:
    """A biLM trained on the toy corpus with the default recipe by the sections 1-4 that this
    test file sees (in section 4's, the implementation's `train_bilm` on the fake biLM; in
    the others', the fakes alone): `.model`, `.word2idx`, `.idx2word`, `.history` (loss per
    epoch). Trained once and cached (see `course.pretrained`); each test module gets its own
    copy."""
    return pretrained(_package_for(request))
