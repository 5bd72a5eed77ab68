"""The pytest plugin that every grading child loads (`-p grading.guard`).

It does these things, all before any of the submission's code runs:

* makes the run repeatable: python, numpy and torch seeded, torch on one thread (the
  hypothesis profile "course" is derandomised, and the fork server fixes the hash seed);
* drops hypothesis' shrink phase, which only makes a failure's example simpler to read;
* writes each test's record (`course.results`) to its stream the moment it is made, so that
  a run killed half-way keeps every result it reached, and nothing written can be taken back;
* watches the submission, and writes what it sees to the flags stream, one JSON line each:
  an audit hook notes every import of `solutions`, every file of the reference opened other
  than by the isolation harness, and what the submission's own code does that a section never
  needs (processes, ctypes, the garbage collector's lists of objects, frames, trace and
  profile hooks); after each test the guard compares with what they were when the tests were
  collected the functions, classes and constants that the tests rely on (torch's, numpy's,
  os', operator's, the builtins, pytest's and pluggy's, the tests' own helpers, the other
  sections' modules and this guard's own), pytest's plugins and hooks and the collected tests,
  and it looks for classes of the submission that could pass for what a test compares (a
  tensor subclass, a value type, anything that defines how it compares).

A submission runs in the same process, so a determined one could still hide from the guard;
the grader's other defences (the operating system's isolation of each run, a static scan of
the source, no copy of the section's own reference anywhere it can reach, streams it cannot
rewrite) do not rely on it. docs/instructors.md says what is left.
"""

from __future__ import annotations

import builtins
import importlib
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
from grading.integrity import (
    COMPARING,
    FORGES,
    INSPECTS,
    RUNS_PROCESSES,
    USES_CTYPES,
    VALUE_TYPES,
)
from grading.sandbox import RECORDS_KEY_ENV_VAR, sign_record

SEED = 0
# Modules whose names the tests call; every loaded module of the course's tooling and tests,
# of pytest and of pluggy is watched as well, and so are the reference's modules of the
# sections before the one under test, which the tests use to build their inputs.
WATCHED = ("builtins", "math", "random", "os", "operator", "json", "threading", "numpy",
           "numpy.random", "numpy.testing", "torch", "torch.nn", "torch.nn.functional",
           "torch.nn.init", "torch.optim", "torch.testing", "hypothesis",
           "hypothesis.strategies", "pytest", "grading.guard")
WATCHED_PACKAGES = ("course", "tests", "_pytest", "pluggy")
PUBLIC_DATA_PACKAGES = ("course", "tests")  # their public constants are compared by value
# What pytest itself sets anew for every test, and so is not watched.
REBOUND = {"_pytest.assertion.util": ("_reprcompare", "_config", "_assertion_pass")}
# Classes from these packages are watched member by member (torch.Tensor.__eq__, ...).
CLASS_OWNERS = ("torch", "numpy", "hypothesis", "course", "tests", "grading", "_pytest",
                "pluggy")
LIBRARIES = tuple(str(Path(m.__file__).parent) + os.sep for m in (torch, np))
MUTABLE_DATA = (list, dict, set, bytearray)  # what can change in place, so compared by value
# Audit events that a section's own code never causes, by the flag kind they raise.
EVENTS = {**dict.fromkeys(("subprocess.Popen", "os.system", "os.exec", "os.posix_spawn",
                           "os.spawn", "os.fork", "os.forkpty", "os.kill"), RUNS_PROCESSES),
          **dict.fromkeys(("ctypes.dlopen", "ctypes.dlsym", "ctypes.cdata", "ctypes.string_at",
                           "ctypes.call_function", "ctypes.addressof"), USES_CTYPES),
          **dict.fromkeys(("gc.get_objects", "gc.get_referrers", "gc.get_referents",
                           "sys._current_frames", "sys.settrace", "sys.setprofile"), INSPECTS)}
FRAME_EVENTS = ("sys._getframe",)  # flagged when the submission's own line makes them
FRAME_ATTRIBUTES = ("tb_frame", "gi_frame", "cr_frame", "ag_frame")
STDLIB = os.path.dirname(os.__file__) + os.sep
INTROSPECTION_FILES = tuple(os.path.join(STDLIB, name) for name in ("inspect.py", "traceback.py"))


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("grading")
    group.addoption("--grading-records-fd", type=int,
                    help="write each test's record to this descriptor (JSON lines)")
    group.addoption("--grading-flags-fd", type=int,
                    help="write what the guard sees to this descriptor (JSON lines)")
    group.addoption("--grading-protect", action="append", default=[],
                    help="a folder of the reference that the submission must not read")


class Flags:
    """Writes {"kind", "detail"} lines to a stream, once per distinct flag, through a raw
    descriptor, so that the audit hook never sees its own writes."""

    def __init__(self, fd: int) -> None:
        self._fd = fd
        self._seen: set[tuple[str, str]] = set()

    def __call__(self, kind: str, detail: str, _write=os.write, _dumps=json.dumps) -> None:
        if (kind, detail) not in self._seen:
            self._seen.add((kind, detail))
            _write(self._fd, (_dumps({"kind": kind, "detail": detail}) + "\n").encode())


def signer(key: bytes):
    """What signs a record, holding the run's key where no attribute shows it."""

    def sign(record: dict, _sign=sign_record) -> str:
        return _sign(key, record)

    return sign


class StreamingRecorder(Recorder):
    """`course.results`' recorder, writing each record to its stream when it is made (a
    test's later record, say of a failed teardown, comes as a later line), signed with the
    run's key: a line that anything else writes there is not believed."""

    def __init__(self, fd: int, sign) -> None:
        super().__init__(Path(os.devnull))
        self._fd, self._sign = fd, sign

    def record(self, item: pytest.Item, status: str, error: BaseException | None) -> None:
        super().record(item, status, error)
        record = self.records[item.nodeid]
        line = {"record": record, "mac": self._sign(record)}
        os.write(self._fd, (json.dumps(line) + "\n").encode())

    def pytest_sessionfinish(self) -> None:
        """Every record is on its stream already."""


def _caller(frame, skip: tuple[str, ...] = ()) -> str:
    """The file of the first frame from `frame` outwards not in `skip`."""
    while frame is not None and frame.f_code.co_filename in skip:
        frame = frame.f_back
    return "" if frame is None else frame.f_code.co_filename


def _first_outside_stdlib(frame) -> str:
    """The file of the first frame from `frame` outwards that is not the standard library's:
    whoever asked `subprocess` or `ctypes` for what they did (a library's own use, such as
    pytest-timeout's look at the frames of a test it stops, is the library's)."""
    while frame is not None and (frame.f_code.co_filename.startswith(STDLIB)
                                 or frame.f_code.co_filename.startswith("<frozen")):
        frame = frame.f_back
    return "" if frame is None else frame.f_code.co_filename


def audit_hook(flag: Flags, protected: tuple[str, ...], submission: str,
               _getframe=sys._getframe):
    """An audit hook flagging imports of `solutions`, and what the code of `submission` (a
    file's path) does itself or through the standard library: reads of `protected` folders
    (the harness's, the tests', a traceback's or a warning's are theirs), the events of
    EVENTS, and those of FRAME_EVENTS."""

    imported: list[str] = []
    busy = [False]

    def hook(event: str, args: tuple) -> None:
        if busy[0]:
            return  # the hook's own sys._getframe
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
                busy[0] = True
                try:
                    if (path.startswith(protected)
                            and _first_outside_stdlib(_getframe(1)) == submission):
                        flag("reads-solutions", f"opens {target}")
                finally:
                    busy[0] = False
        elif event in EVENTS or event in FRAME_EVENTS or (
                event == "object.__getattr__" and args[1] in FRAME_ATTRIBUTES):
            busy[0] = True
            try:
                frame = _getframe(1)
                if event in EVENTS:
                    if _first_outside_stdlib(frame) == submission:
                        flag(EVENTS[event], f"calls {event}")
                elif _caller(frame, INTROSPECTION_FILES) == submission:
                    what = event if event in FRAME_EVENTS else f"reads .{args[1]}"
                    flag(INSPECTS, f"{what} (frame inspection)")
            finally:
                busy[0] = False

    return hook


class Space:
    """One watched namespace (a module's dict, a class's live mapping, an object's
    attributes): each name, what it held when the tests were collected, and for a function
    its code and defaults; for the public constants of the course's own modules that could
    change in place, also their value as text."""

    def __init__(self, owner: str, mapping, public_data: bool) -> None:
        self.owner, self.mapping = owner, mapping
        self.names = [name for name in mapping if name not in REBOUND.get(owner, ())]
        self.values = [mapping[name] for name in self.names]
        self.functions = [v for v in self.values if isinstance(v, types.FunctionType)]
        self.codes = [f.__code__ for f in self.functions]
        self.defaults = [f.__defaults__ for f in self.functions]
        self.data = {name: repr(value) for name, value in zip(self.names, self.values,
                                                              strict=True)
                     if public_data and name[:1] != "_" and _mutable(value)}

    # The builtins it uses are bound here, once: a submission that replaces `all` or
    # `operator.is_` is seen replacing them, not believed.
    def _unchanged(self, _all=all, _map=map, _is=operator.is_, _repeat=repeat, _repr=repr,
                   _code=operator.attrgetter("__code__"),
                   _defaults=operator.attrgetter("__defaults__")) -> bool:
        """The fast check, in C loops: every name holds the same object, code, defaults."""
        get = self.mapping.get
        return (_all(_map(_is, _map(get, self.names, _repeat(_MISSING)), self.values))
                and _all(_map(_is, _map(_code, self.functions), self.codes))
                and _all(_map(_is, _map(_defaults, self.functions), self.defaults))
                and _all(_repr(get(n)) == text for n, text in self.data.items()))

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


def _mutable(value: object) -> bool:
    """Plain data that may change without its name changing what it holds: a list, a dict,
    a set, or a tuple that holds one (the rest is checked by identity alone)."""
    return isinstance(value, MUTABLE_DATA) or (
        isinstance(value, tuple) and any(isinstance(v, MUTABLE_DATA) for v in value))


def _watched_modules(extra: tuple[str, ...]) -> list:
    names = [*WATCHED, *extra, *(n for n in sys.modules if n.split(".")[0] in WATCHED_PACKAGES)]
    return [sys.modules[n] for n in dict.fromkeys(names) if n in sys.modules]


def namespaces(extra: tuple[str, ...] = ()) -> list[Space]:
    """The watched modules, and the classes they hold."""
    spaces = []
    for module in _watched_modules(extra):
        spaces.append(Space(module.__name__, vars(module),
                            module.__name__.split(".")[0] in PUBLIC_DATA_PACKAGES))
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


def _hooks(pluginmanager) -> dict[str, tuple]:
    """Every hook of pytest's plugin manager, with the functions that implement it."""
    return {name: tuple(impl.function for impl in caller.get_hookimpls())
            for name, caller in vars(pluginmanager.hook).items() if hasattr(caller,
                                                                            "get_hookimpls")}


def _subclasses(roots: tuple[type, ...]) -> list[type]:
    found, seen, todo = [], set(), list(roots)
    while todo:
        cls = todo.pop()
        for sub in type.__subclasses__(cls) if isinstance(cls, type) else ():
            if id(sub) not in seen:
                seen.add(id(sub))
                found.append(sub)
                todo.append(sub)
    return found


def _generated_by_dataclass(cls: type, name: str) -> bool:
    function = vars(cls).get(name)
    params = vars(cls).get("__dataclass_params__")
    return (params is not None and isinstance(function, types.FunctionType)
            and function.__code__.co_filename == "<string>"
            and function.__qualname__ == f"{cls.__qualname__}.{name}")


def _resolve(name: str) -> type:
    """`torch.Tensor` -> the class; `list` -> the builtin."""
    owner, _, attribute = name.rpartition(".")
    return getattr(sys.modules[owner] if owner else builtins, attribute)


def forged_values(module: types.ModuleType | None, module_name: str,
                  every_class: bool) -> list[str]:
    """What the classes of the submission's module (`module_name`, `module` once imported)
    do that could make what a test compares not what it seems: subclass a tensor, an array
    or a value type (a plain NamedTuple excepted), or define how their objects compare,
    convert or pass isinstance. Looked for among the subclasses of those types, the classes
    the module holds, and with `every_class` (a tenth of a second with torch loaded) among
    every class there is."""
    found = []
    value_types = {name: _resolve(name) for name in VALUE_TYPES}
    classes = _subclasses((object,) if every_class else tuple(value_types.values()))
    if module is not None:
        classes += [v for v in vars(module).values() if isinstance(v, type)]
    for cls in dict.fromkeys(classes):
        if getattr(cls, "__module__", None) != module_name:
            continue
        named_tuple = issubclass(cls, tuple) and hasattr(cls, "_fields")
        bases = [name for name, base in value_types.items() if issubclass(cls, base)]
        if bases and not named_tuple:
            found.append(f"{cls.__qualname__} subclasses {bases[0]}")
        for name in COMPARING:
            if name in vars(cls) and not _generated_by_dataclass(cls, name):
                found.append(f"{cls.__qualname__} defines {name}")
    return found


class Watch:
    """Snapshots the watched names, plugins and tests once the tests are collected (before
    the submission is imported) and flags every one that a test leaves changed."""

    def __init__(self, flag: Flags, harness: Harness, section: str, config: pytest.Config,
                 own: list[object]) -> None:
        self.flag, self.harness, self.section = flag, harness, find_section(section)
        self.config, self.own = config, own
        self.spaces: list[Space] = []
        self.submission_module = ""
        self.hooks: dict[str, tuple] = {}
        self.plugins: list[tuple[str, object]] = []
        self.items: list[pytest.Item] = []
        self.item_state: list[tuple] = []
        self.looked_everywhere = [False]  # one list all along: its own space stays true
        self._flat: tuple[list, ...] = ([], [], [], [], [], [])
        self._own_names: list[set[str]] = []

    def _load_earlier_sections(self) -> tuple[str, ...]:
        """Import the reference's modules of the earlier sections (they never import a later
        one, so never the submission) to watch them too."""
        package = self.harness.load(self.section)
        self.submission_module = f"{package.__name__}.{self.section.module}"
        earlier = [s for s in SECTIONS if s.number < self.section.number]
        return (package.__name__, *(Harness.module(package, s).__name__ for s in earlier))

    @staticmethod
    def _state(item: pytest.Item) -> tuple:
        return (type(item), item.__dict__.get("_obj"), item.__dict__.get("runtest"))

    @pytest.hookimpl(trylast=True)
    def pytest_collection_finish(self, session: pytest.Session) -> None:
        try:
            extra = self._load_earlier_sections()
        except Exception:  # a reference that does not load fails the tests, not the guard
            extra = ()
        for item in session.items:
            getattr(item, "obj", None)  # resolved now, so that a later change shows
        pluginmanager = self.config.pluginmanager
        self.hooks = _hooks(pluginmanager)
        self.plugins = pluginmanager.list_name_plugin()
        self.items, self.item_state = list(session.items), [self._state(i) for i in
                                                              session.items]
        self.session = session
        self.spaces = namespaces(extra)
        getters, names, values = [], [], []
        for space in self.spaces:
            getters += [space.mapping.get] * len(space.names)
            names += space.names
            values += space.values
        functions = [f for space in self.spaces for f in space.functions]
        self._flat = (getters, names, values, functions, [f.__code__ for f in functions],
                      [f.__defaults__ for f in functions])
        # last, once every attribute of the guard's own objects is set
        owned = [*self.own, pluginmanager]
        self._own_names = [set(vars(o)) for o in owned]
        own_spaces = [Space(f"the grader's {type(o).__name__}", vars(o), False) for o in owned]
        self.spaces += own_spaces
        for space in own_spaces:
            self._flat[0].extend([space.mapping.get] * len(space.names))
            self._flat[1].extend(space.names)
            self._flat[2].extend(space.values)

    def _unchanged(self, _all=all, _map=map, _is=operator.is_, _call=operator.call,
                   _repeat=repeat, _code=operator.attrgetter("__code__"),
                   _defaults=operator.attrgetter("__defaults__")) -> bool:
        """Every space's fast check at once, in C loops over all their names together (the
        builtins bound here, once, as in `Space._unchanged`)."""
        getters, names, values, functions, codes, defaults = self._flat
        return (_all(_map(_is, _map(_call, getters, names, _repeat(_MISSING)), values))
                and _all(_map(_is, _map(_code, functions), codes))
                and _all(_map(_is, _map(_defaults, functions), defaults))
                and _all(space._unchanged() for space in self.spaces if space.data))

    def check(self, every_class: bool = False) -> None:
        """Flag what changed since the snapshot. Every class is looked at after the test
        that imported the submission and at the end; after the others, those it holds and
        the subclasses of the value types."""
        if not self._unchanged():
            for space in self.spaces:
                for change in space.changes():
                    self.flag("monkeypatch", change)
        for owned, known in zip([*self.own, self.config.pluginmanager], self._own_names,
                                strict=True):
            for name in set(vars(owned)) - known:  # an attribute that hides a method
                if hasattr(type(owned), name):
                    self.flag("monkeypatch", f"shadowed the grader's "
                              f"{type(owned).__name__}.{name}")
        pluginmanager = self.config.pluginmanager
        plugins = pluginmanager.list_name_plugin()
        if len(plugins) != len(self.plugins) or any(
                a is not b for (_, a), (_, b) in zip(plugins, self.plugins, strict=True)):
            self.flag("monkeypatch", "changed pytest's plugins")
        for name, functions in _hooks(pluginmanager).items():
            before = self.hooks.get(name, ())
            if len(functions) != len(before) or any(
                    a is not b for a, b in zip(functions, before, strict=True)):
                self.flag("monkeypatch", f"changed pytest's hook {name}")
        items = self.session.items
        if len(items) != len(self.items) or any(
                a is not b for a, b in zip(items, self.items, strict=True)) or any(
                self._state(i) != s for i, s in zip(self.items, self.item_state, strict=True)):
            self.flag("monkeypatch", "changed pytest's collected tests")
        if sys.gettrace() is not None or sys.getprofile() is not None:
            self.flag(INSPECTS, "left a trace or profile function set")
        if self.submission_module:
            module = sys.modules.get(self.submission_module)
            every_class = every_class or (module is not None and not self.looked_everywhere[0])
            self.looked_everywhere[0] |= every_class
            for detail in forged_values(module, self.submission_module, every_class):
                self.flag(FORGES, detail)

    # The hooks call `check` as it was when the class was made: a submission that replaces
    # it (on the class, or on this object) is seen doing so, not obeyed.
    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_teardown(self, item: pytest.Item, _check=check):
        result = yield  # the test's own fixtures (monkeypatch) are undone by now
        _check(self)
        return result

    @pytest.hookimpl(tryfirst=True)
    def pytest_sessionfinish(self, session: pytest.Session, _check=check) -> None:
        """Once more, looking at every class: one made and used within a test is still
        there (its instances, its cycles) unless the collector took it meanwhile."""
        if self.spaces:
            _check(self, every_class=True)


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
    records = config.getoption("--grading-records-fd")
    if records is None:
        return
    _without_shrinking()
    random.seed(SEED)
    np.random.seed(SEED)
    torch.manual_seed(SEED)
    torch.set_num_threads(1)
    for name in WATCHED:  # loaded now, so that they are watched from the start
        importlib.import_module(name)
    flag = Flags(config.getoption("--grading-flags-fd"))
    protected = tuple(os.path.realpath(p) + os.sep for p in config.getoption("--grading-protect"))
    harness = Harness(config.getoption("--impl"), config.getoption("--reference"))
    section = find_section(config.getoption("--section"))
    submission = str(harness.impl_dir / section.file_name)
    sys.addaudithook(audit_hook(flag, protected, submission))
    key = bytes.fromhex(os.environ.pop(RECORDS_KEY_ENV_VAR))  # gone before the submission runs
    recorder = StreamingRecorder(records, signer(key))
    del key
    config.pluginmanager.register(recorder, "grading-recorder")
    watch = Watch(flag, harness, config.getoption("--section"), config, [])
    watch.own += [recorder, flag, watch]
    config.pluginmanager.register(watch, "grading-watch")
