"""Test harness of the seven sections.

* `--impl DIR` (or $ELMO_IMPL) picks the implementation under test; default `exercises`.
* `--section N|NAME` runs one section's tests.
* Every section's module is a fixture named after the section (`setup`, `corpus`, `bilm`,
  `pretrain`, `extract`, `context`, `layer_weights`). In `test_s3_bilm.py` the fixture
  `bilm` is the implementation's, and `corpus` comes from `solutions/`: each test file sees
  its own section from the implementation and the others from the reference.
* `trained` is a biLM pre-trained once per process and shared by the tests that need one.

What a failing test says, in the learner's terms:

* a stub's NotImplementedError is its own outcome, "not implemented" (`N`), reported in one
  line with the stub's place, and listed once per stub at the end of the run; where the test
  of one section runs into another section's stub (a handout without `solutions/`), the
  report says which section to finish first;
* a wrong answer keeps pytest's short report: the assertion's message, what was found, and
  for a shape, which dimension differs from what was expected;
* any other error shows only the frames of the tests and of the implementation, never those
  of torch or of the harness;
* paths and module names read as the learner knows them (`exercises/s3_bilm.py`), not as
  the isolated copy that the harness imports.
"""

from __future__ import annotations

import os
import re
import traceback
from pathlib import Path
from types import SimpleNamespace

import pytest
import torch
from hypothesis import HealthCheck, Phase, settings

from course.harness import IMPL_ENV_VAR, load_isolated, module_of, source_for
from course.make_exercises import STUB_MESSAGE
from course.pretrained import pretrained
from course.registry import ROOT, SECTIONS, Section, find_section
from course.results import NOT_IMPLEMENTED, stub_error

# Derandomised by default, so a learner's run, CI and grading all see the same examples.
# No "explain" phase: after a failure it spends seconds per test (on a stub, every property
# test fails) to print variations of the example that a learner does not need.
settings.register_profile(
    "course", derandomize=True, deadline=None, max_examples=25, print_blob=False,
    phases=[Phase.explicit, Phase.reuse, Phase.generate, Phase.shrink],
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.differing_executors],
)
settings.register_profile("explore", deadline=None, max_examples=200)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "course"))

# The course's tensors are tiny: a second torch thread costs more in synchronisation than it
# saves (a section-7 probe step: 2-3 ms on one thread, 27-72 ms on two busy cores), and one
# thread makes every run independent of the machine's core count.
torch.set_num_threads(1)


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--impl", default=os.environ.get(IMPL_ENV_VAR, "exercises"),
                     help="directory of the implementation under test (default: exercises)")
    parser.addoption("--section", default=os.environ.get("SECTION") or None,
                     help="run only this section's tests: a number (3) or a name (bilm)")


def pytest_configure(config: pytest.Config) -> None:
    if not impl_dir(config).is_dir():
        raise pytest.UsageError(
            f"--impl {config.getoption('--impl')}: {impl_dir(config)} is not a directory; "
            "point it at a folder that holds the section modules (s1_setup.py, ...)"
        )
    wanted = config.getoption("--section")
    if wanted:
        try:
            find_section(wanted)
        except KeyError as err:
            raise pytest.UsageError(f"--section {wanted}: {err.args[0]}") from None


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


# --- what a failing test says ------------------------------------------------------------


def _shown(path: Path) -> str:
    return str(path.relative_to(ROOT)) if path.is_relative_to(ROOT) else str(path)


def _learner_names(item: pytest.Item, under_test: Section) -> dict[str, str]:
    """{path or module name of the isolated copy: the file it was copied from}."""
    impl = impl_dir(item.config).resolve()
    try:
        package = load_isolated(impl, under_test)
    except OSError:
        return {}
    names = {}
    for section in SECTIONS:
        source = source_for(impl, under_test, section)
        names[str(Path(package.__file__).parent / f"{section.module}.py")] = _shown(source)
        names[f"{package.__name__}.{section.module}"] = f"{source.parent.name}.{section.module}"
    names[f"{ROOT}{os.sep}"] = ""  # the repository's own files by their relative paths
    return names


def _renamed(text: str, names: dict[str, str]) -> str:
    for copy in sorted(names, key=len, reverse=True):
        text = text.replace(copy, names[copy])
    return text


_EXAMPLE = re.compile(r"(Failing test case|Falsifying example): ")
_ARGUMENT = re.compile(r"    (\w+)=")
_SUBEXPRESSION = re.compile(r"\s*\+\s+(where|and) ")


def _readable(text: str, fixtures: list[str]) -> str:
    """`text` without what buries the message: hypothesis's own frame (the test's `def`
    line), the fixtures among the arguments of its failing example (a whole model's repr),
    pytest's long reprs of tensors and functions in an assertion's sub-expressions, and its
    advice to rerun with -v."""
    lines, in_example, skipping = [], False, False
    for line in text.splitlines():
        content = line[4:] if line.startswith("E   ") else line
        if _EXAMPLE.match(content):
            in_example = True
        elif in_example and content == ")":
            in_example = skipping = False
        elif in_example and (argument := _ARGUMENT.match(content)):
            skipping = argument[1] in fixtures
        if skipping or content.strip() == "Use -v to get more diff" or (
                _SUBEXPRESSION.match(content)
                and (len(content) > 160 or " object at 0x" in content)):
            continue
        if lines and set(line.strip()) == {"^"} and lines[-1].lstrip().startswith("def test_"):
            del lines[-2:]  # the frame of the test's `def` line: hypothesis calling it
            continue
        lines.append(line)
    return "\n".join(lines)


def _stub_place(stub: NotImplementedError, names: dict[str, str]) -> tuple[str, int, str]:
    """(file, line, message) of the stub that raised `stub`."""
    frame = traceback.extract_tb(stub.__traceback__)[-1]
    return _renamed(frame.filename, names), frame.lineno, str(stub)


def _is_ours(filename: str, names: dict[str, str]) -> bool:
    """A frame of the tests or of the implementation (not of torch, pytest or the harness)."""
    return filename in names or Path(filename).is_relative_to(ROOT / "tests")


def _short_traceback(error: BaseException, names: dict[str, str]) -> str:
    # Not the frame of a test's `def` line either: that is hypothesis calling the test.
    frames = [f for f in traceback.extract_tb(error.__traceback__)
              if _is_ours(f.filename, names) and not (f.line or "").startswith("def ")]
    lines = [f"{f.filename}:{f.lineno}: in {f.name}\n    {f.line}" for f in frames]
    if error.__cause__ is not None:
        lines.append(f"E   (raised from {type(error.__cause__).__name__}: {error.__cause__})")
    lines += [f"E   {line}" for line in "".join(
        traceback.format_exception_only(error)).rstrip().splitlines()]
    return _renamed("\n".join(lines), names)


class LearnerReport:
    """A failing test's report as the learner reads it: `text` in the failures section, and
    `reprcrash.message`, the line that pytest's short summary shows for it."""

    def __init__(self, text: str, summary: str) -> None:
        self.text, self.reprcrash = text, SimpleNamespace(message=summary)

    def toterminal(self, out) -> None:
        for line in self.text.splitlines():
            out.line(line, red=line.startswith("E "))

    def __str__(self) -> str:
        return self.text


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo):
    report = yield
    under_test = section_of_test_file(Path(item.path))
    if not report.failed or call.excinfo is None or under_test is None:
        return report
    error, names = call.excinfo.value, _learner_names(item, under_test)
    summary = _renamed(call.excinfo.exconly().split("\n")[0], names)
    if isinstance(error, SyntaxError):
        summary = _renamed(f"{error.filename}:{error.lineno}: SyntaxError: {error.msg}", names)
    stub = stub_error(error)
    if stub is not None:
        report.stub, report.stub_seen_by = _stub_place(stub, names), under_test
        text = summary = "{}:{}: {}".format(*report.stub)
    elif isinstance(error, AssertionError | pytest.fail.Exception):
        # pytest's own report of the check: the message, and what was found
        text = _readable(_renamed(str(report.longrepr), names), item.fixturenames)
    elif item.config.getoption("tbstyle") in ("auto", "short"):
        text = _readable(_short_traceback(error, names), item.fixturenames)
    else:
        return report
    report.longrepr = LearnerReport(text, summary)
    return report


def pytest_report_teststatus(report: pytest.TestReport, config: pytest.Config):
    if getattr(report, "stub", None):
        return NOT_IMPLEMENTED, "N", ("NOT IMPLEMENTED", {"yellow": True})
    return None


def pytest_terminal_summary(terminalreporter) -> None:
    """Each stub once, with how many tests it stopped, and which sections' tests those are
    where another section's test ran into it (a handout without `solutions/`)."""
    reports = terminalreporter.stats.get(NOT_IMPLEMENTED, [])
    if not reports:
        return
    terminalreporter.write_sep("=", "not implemented yet")
    stubs = sorted({r.stub for r in reports})
    width = max(len(f"{path}:{line}") for path, line, _ in stubs)
    for stub in stubs:
        seen_by = [r.stub_seen_by for r in reports if r.stub == stub]
        count = f"{len(seen_by)} test{'s' * (len(seen_by) > 1)}"
        match = STUB_MESSAGE.search(stub[2])
        owner = int(match["number"]) if match else None
        others = sorted({s.number for s in seen_by} - {owner})
        if owner and others:
            count += (f"; the tests of section {', '.join(map(str, others))} need it: "
                      f"finish section {owner} first")
        terminalreporter.write_line(f"{f'{stub[0]}:{stub[1]}':{width}}  {stub[2]} ({count})")


def pytest_assertrepr_compare(config: pytest.Config, op: str, left, right) -> list[str] | None:
    """Shapes found vs expected, dimension by dimension (the torch.Size is what was found)."""
    if op != "==" or not (_is_shape(left) and _is_shape(right)):
        return None
    if not isinstance(left, torch.Size) and not isinstance(right, torch.Size):
        return None
    found, expected = (right, left) if isinstance(right, torch.Size) and not isinstance(
        left, torch.Size) else (left, right)
    lines = [f"shape {tuple(found)} == {tuple(expected)}",
             f"found shape {tuple(found)}, expected {tuple(expected)}"]
    if len(found) != len(expected):
        lines.append(f"found {len(found)} dimensions, expected {len(expected)}")
    else:
        lines += [f"dimension {d}: found {f}, expected {e}"
                  for d, (f, e) in enumerate(zip(found, expected, strict=True)) if f != e]
    return lines


def _is_shape(value) -> bool:
    return isinstance(value, tuple) and all(isinstance(d, int) for d in value)
