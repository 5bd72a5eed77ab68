"""The pytest plugin that every grading child loads (`-p grading.guard`).

It does these things, all before any of the submission's code runs:

* makes the run repeatable: python, numpy and torch seeded, torch on one thread (the
  hypothesis profile "course" is derandomised, and the fork server fixes the hash seed);
* drops hypothesis' shrink phase, which only makes a failure's example simpler to read;
* writes each test's record (`course.results`) to disk the moment it is made, so that a
  run killed half-way keeps every result it reached;
* watches the submission: an audit hook notes every import of `solutions` and every file
  of the reference opened other than by the isolation harness, and after each test the
  guard compares the functions, classes and constants that the tests rely on (torch's,
  numpy's, the tests' own helpers, the other sections' modules) with what they were when
  the tests were collected. What it sees goes to the flags file, one JSON line each.

A submission runs in the same process, so a determined one could hide from the guard; the
grader's other defences (a private copy of the tests per run, a static scan of the source,
no copy of the section's own reference anywhere it can reach) do not rely on it.
"""

from __future__ import annotations

import json
import operator
import os
import random
import sys
import types
from itertools import repeat
from pathlib import Path

import numpy as np
import pytest
import torch
from hypothesis import Phase, settings

from course.harness import Harness
from course.registry import SECTIONS, find_section
from course.results import Recorder

SEED = 0
# Modules whose names the tests call; every loaded module of the course's tooling and tests
# is watched as well, and so are the reference's modules of the sections before the one
# under test, which the tests use to build their inputs.
WATCHED = ("builtins", "math", "random", "numpy", "numpy.random", "torch", "torch.nn",
           "torch.nn.functional", "torch.nn.init", "torch.optim", "torch.testing",
           "hypothesis", "hypothesis.strategies", "pytest", "grading.guard")
WATCHED_PACKAGES = ("course", "tests")
# Classes from these packages are watched member by member (torch.Tensor.__eq__, ...).
CLASS_OWNERS = ("torch", "numpy", "hypothesis", "course", "tests")
LIBRARIES = tuple(str(Path(m.__file__).parent) + os.sep for m in (torch, np))
PLAIN_DATA = (int, float, complex, str, bytes, bool, tuple, list, dict, set, frozenset,
              type(None))


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("grading")
    group.addoption("--grading-records", help="append each test's record here (JSON lines)")
    group.addoption("--grading-flags", help="append what the guard sees here (JSON lines)")
    group.addoption("--grading-protect", action="append", default=[],
                    help="a folder of the reference that the submission must not read")


class Flags:
    """Appends {"kind", "detail"} lines to a file opened now, once per distinct flag; it
    writes through a raw descriptor so that the audit hook never sees its own writes."""

    def __init__(self, path: Path) -> None:
        self._fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        self._seen: set[tuple[str, str]] = set()

    def __call__(self, kind: str, detail: str) -> None:
        if (kind, detail) not in self._seen:
            self._seen.add((kind, detail))
            os.write(self._fd, (json.dumps({"kind": kind, "detail": detail}) + "\n").encode())


class StreamingRecorder(Recorder):
    """`course.results`' recorder, appending each record to a JSON-lines file when it is
    made (a test's later record, say of a failed teardown, comes as a later line)."""

    def record(self, item: pytest.Item, status: str, error: BaseException | None) -> None:
        super().record(item, status, error)
        with self.path.open("a") as stream:
            stream.write(json.dumps(self.records[item.nodeid]) + "\n")

    def pytest_sessionfinish(self) -> None:
        """Every record is on disk already."""


def _called_from(filenames: tuple[str, ...]) -> bool:
    frame = sys._getframe(2)
    while frame is not None:
        if frame.f_code.co_filename in filenames:
            return True
        frame = frame.f_back
    return False


def audit_hook(flag: Flags, protected: tuple[str, ...], harness: str):
    """An audit hook flagging imports of `solutions` and reads of `protected` folders by
    anything but the harness."""

    imported: list[str] = []

    def hook(event: str, args: tuple) -> None:
        if event == "import":
            name = args[0]
            # `import solutions.x` imports `solutions` too: one flag says it all
            if name.split(".")[0] == "solutions" and not any(
                    n.startswith(f"{name}.") for n in imported):
                imported.append(name)
                flag("imports-solutions", f"imports {name}")
        elif event == "open":
            target = args[0]
            if isinstance(target, bytes | os.PathLike):
                target = os.fsdecode(target)
            if isinstance(target, str) and "solutions" in target:
                path = os.path.realpath(target)
                if path.startswith(protected) and not _called_from((harness,)):
                    flag("reads-solutions", f"opens {target}")

    return hook


class Space:
    """One watched namespace (a module's dict, or a class's live mapping): each name, what
    it held when the tests were collected, and for a function its code and defaults; for
    the public constants of the course's own modules, also their value as text."""

    def __init__(self, owner: str, mapping, public_data: bool) -> None:
        self.owner, self.mapping = owner, mapping
        self.names = list(mapping)
        self.values = [mapping[name] for name in self.names]
        self.functions = [v for v in self.values if isinstance(v, types.FunctionType)]
        self.codes = [f.__code__ for f in self.functions]
        self.defaults = [f.__defaults__ for f in self.functions]
        self.data = {name: repr(value) for name, value in zip(self.names, self.values,
                                                              strict=True)
                     if public_data and name[:1] != "_" and isinstance(value, PLAIN_DATA)}

    def _unchanged(self) -> bool:
        """The fast check, in C loops: every name holds the same object, code, defaults."""
        return (all(map(operator.is_, map(self.mapping.get, self.names, repeat(_MISSING)),
                        self.values))
                and all(map(operator.is_, map(operator.attrgetter("__code__"), self.functions),
                            self.codes))
                and all(map(operator.is_, map(operator.attrgetter("__defaults__"), self.functions),
                            self.defaults))
                and all(repr(self.mapping.get(n)) == text for n, text in self.data.items()))

    def changes(self) -> list[str]:
        """"removed torch.x" or "replaced torch.x" for each name that no longer holds what
        it held; a library's own wrapper of what it held becomes the new normal."""
        if self._unchanged():
            return []
        found = []
        for index, (name, value) in enumerate(zip(self.names, self.values, strict=True)):
            current = self.mapping.get(name, _MISSING)
            if current is _MISSING:
                found.append(f"removed {self.owner}.{name}")
            elif current is not value:
                if _library_wrapper(current, value):
                    self.values[index] = current
                else:
                    found.append(f"replaced {self.owner}.{name}")
        for function, code, defaults in zip(self.functions, self.codes, self.defaults,
                                            strict=True):
            if function.__code__ is not code or function.__defaults__ is not defaults:
                found.append(f"replaced {self.owner}.{function.__name__}")
        found += [f"replaced {self.owner}.{name}" for name, text in self.data.items()
                  if repr(self.mapping.get(name)) != text]
        return found


_MISSING = object()


def _watched_modules(extra: tuple[str, ...]) -> list:
    names = [*WATCHED, *extra, *(n for n in sys.modules if n.split(".")[0] in WATCHED_PACKAGES)]
    return [sys.modules[n] for n in dict.fromkeys(names) if n in sys.modules]


def namespaces(extra: tuple[str, ...] = ()) -> list[Space]:
    """The watched modules, and the classes they hold."""
    spaces = []
    for module in _watched_modules(extra):
        spaces.append(Space(module.__name__, vars(module),
                            module.__name__.split(".")[0] in WATCHED_PACKAGES))
        for name, value in list(vars(module).items()):
            if isinstance(value, type) and str(value.__module__).split(".")[0] in CLASS_OWNERS:
                spaces.append(Space(f"{module.__name__}.{name}", vars(value), False))
    return spaces


def _library_wrapper(new: object, old: object) -> bool:
    """True when `new` wraps `old` by a library's own hand: torch wraps some of its functions
    the first time they are used (`torch.manual_seed` once dynamo loads, an optimiser's
    `step` once it is made), with wrappers defined in its own files."""
    while isinstance(new, types.FunctionType) and new.__code__.co_filename.startswith(LIBRARIES):
        new = getattr(new, "__wrapped__", None)
        if new is old:
            return True
    return False


class Watch:
    """Snapshots the watched names once the tests are collected (before the submission is
    imported) and flags every one that a test leaves replaced, removed or changed."""

    def __init__(self, flag: Flags, harness: Harness, section: str) -> None:
        self.flag, self.harness, self.section = flag, harness, find_section(section)
        self.spaces: list[Space] = []

    def _load_earlier_sections(self) -> tuple[str, ...]:
        """Import the reference's modules of the earlier sections (they never import a later
        one, so never the submission) to watch them too."""
        package = self.harness.load(self.section)
        earlier = [s for s in SECTIONS if s.number < self.section.number]
        return (package.__name__, *(Harness.module(package, s).__name__ for s in earlier))

    @pytest.hookimpl(trylast=True)
    def pytest_collection_finish(self, session: pytest.Session) -> None:
        try:
            extra = self._load_earlier_sections()
        except Exception:  # a reference that does not load fails the tests, not the guard
            extra = ()
        self.spaces = namespaces(extra)

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_teardown(self, item: pytest.Item):
        result = yield  # the test's own fixtures (monkeypatch) are undone by now
        for space in self.spaces:
            for change in space.changes():
                self.flag("monkeypatch", change)
        return result


def _without_shrinking() -> None:
    """The tests' hypothesis profile, less its shrink phase: shrinking finds the simplest
    failing example for a reader, at the cost of seconds per failing test, and never turns a
    failing test into a passing one or back (it fails on its first failing example)."""
    current = settings.get_profile(settings.get_current_profile_name())
    phases = [p for p in current.phases if p is not Phase.shrink]
    settings.register_profile("grading", current, phases=phases)
    settings.load_profile("grading")


@pytest.hookimpl(trylast=True)  # after the tests' conftest has loaded its profile
def pytest_configure(config: pytest.Config) -> None:
    records = config.getoption("--grading-records")
    if not records:
        return
    _without_shrinking()
    random.seed(SEED)
    np.random.seed(SEED)
    torch.manual_seed(SEED)
    torch.set_num_threads(1)
    flag = Flags(Path(config.getoption("--grading-flags")))
    protected = tuple(os.path.realpath(p) + os.sep for p in config.getoption("--grading-protect"))
    harness = sys.modules[Harness.__module__].__file__
    sys.addaudithook(audit_hook(flag, protected, harness))
    config.pluginmanager.register(StreamingRecorder(Path(records)), "grading-recorder")
    config.pluginmanager.register(
        Watch(flag, Harness(config.getoption("--impl"), config.getoption("--reference")),
              config.getoption("--section")),
        "grading-watch")
