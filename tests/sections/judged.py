"""Section tests as an act and a judge.

A judged test is two functions. The *act* calls the implementation under test on a case and
returns what it computed, as data: tensors, arrays, numbers, strings, and lists, tuples and
dicts of them. The *judge* is a pure function of the case and that data, and holds every
assertion; it never sees the implementation.

    @judged(stack=layer_stacks())               # the case, drawn by hypothesis
    def test_output_is_gamma_times_the_weighted_sum(layer_weights, stack):
        ...                                     # act: the only place the section's code runs
        return {"mixed": mix(layers)}

    @test_output_is_gamma_times_the_weighted_sum.judge
    def _(out, stack):                          # judge: data in, assertions out
        ...

In a learner's run (`make test`) both run in one process, on each case as hypothesis draws
it, the act's data handed to the judge through the plain format a grading run sends (so the
judge meets the same types in both). In a grading run (`--act-cases FILE`, `ActOnly`) the
grader has drawn the cases in its own process; the run acts on them and sends the data
(`pytest_act_output`), and the grader judges it with these same judges in its own process
(`grading.judging`): nothing the run says about passing counts. A judge's parameters are
`out` and any of the case's or pytest's parameters by name, and `trusted` (`Trusted`: the
tests' fakes and the biLM they train); a fixture is no part of a case. A judge passes over a
case it does not read with this module's `assume`.
"""

from __future__ import annotations

import base64
import functools
import inspect
import json
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
import torch
from hypothesis import given
from hypothesis.errors import UnsatisfiedAssumption

from course.harness import Harness, Sections
from course.pretrained import pretrained
from course.registry import FAKES_DIR, find_section

# the element types a plain array may hold: never Python objects
DTYPES = {"bool", "uint8", "int8", "int16", "int32", "int64", "float16", "float32", "float64"}


class NotData(TypeError):
    """What an act returned, or a run sent, is not plain data."""


def to_plain(value):
    """`value` as JSON-ready data: a tensor or an array becomes {"tensor"|"array": dtype,
    "shape", "data": base64 of its bytes}, a tuple {"tuple": [...]}, a dict {"dict": {...}}.

    Raises:
        NotData: `value` holds something else (a module, an object, a dict with other keys).
    """
    if isinstance(value, torch.Tensor):
        array = value.detach().cpu().resolve_conj().numpy()
        return {"tensor": str(array.dtype), "shape": list(array.shape),
                "data": base64.b64encode(np.ascontiguousarray(array).tobytes()).decode()}
    if isinstance(value, np.ndarray):
        if str(value.dtype) not in DTYPES:
            raise NotData(f"an array of {value.dtype} is not plain data")
        return {"array": str(value.dtype), "shape": list(value.shape),
                "data": base64.b64encode(np.ascontiguousarray(value).tobytes()).decode()}
    if isinstance(value, np.generic):
        return to_plain(value.item())
    if value is None or isinstance(value, bool | int | float | str):
        return value
    if isinstance(value, tuple):
        return {"tuple": [to_plain(v) for v in value]}
    if isinstance(value, list):
        return [to_plain(v) for v in value]
    if isinstance(value, dict) and all(isinstance(k, str) for k in value):
        return {"dict": {k: to_plain(v) for k, v in value.items()}}
    raise NotData(f"an act returns tensors, arrays, numbers, strings, and lists, tuples and "
                  f"dicts of them; not {type(value).__name__}")


def from_plain(value):
    """The data `to_plain` wrote, checked: tensors as tensors, arrays as arrays.

    Raises:
        NotData: `value` is not what `to_plain` writes.
    """
    if value is None or isinstance(value, bool | int | float | str):
        return value
    if isinstance(value, list):
        return [from_plain(v) for v in value]
    if not isinstance(value, dict) or len(value) not in (1, 3):
        raise NotData(f"not plain data: {str(value)[:80]}")
    if len(value) == 1:
        (tag, inner), = value.items()
        if tag == "tuple" and isinstance(inner, list):
            return tuple(from_plain(v) for v in inner)
        if tag == "dict" and isinstance(inner, dict):
            return {str(k): from_plain(v) for k, v in inner.items()}
        raise NotData(f"not plain data: {str(value)[:80]}")
    kind = "tensor" if "tensor" in value else "array"
    dtype, shape, data = value.get(kind), value.get("shape"), value.get("data")
    if dtype not in DTYPES or not isinstance(shape, list) or not isinstance(data, str) or \
            not all(isinstance(n, int) and not isinstance(n, bool) and n >= 0 for n in shape):
        raise NotData(f"not a plain {kind}: {str(value)[:80]}")
    try:
        array = np.frombuffer(base64.b64decode(data, validate=True), dtype=dtype)
        array = array.reshape(shape).copy()
    except ValueError as err:
        raise NotData(f"a {kind} whose bytes do not fit its shape {shape}: {err}") from None
    return torch.from_numpy(array) if kind == "tensor" else array


class UnreadCase(UnsatisfiedAssumption):
    """A case that a judge does not read (`assume`)."""


def assume(condition: object) -> None:
    """hypothesis's `assume`, for a judge: in a learner's run hypothesis draws another case,
    and the grader, which judges outside hypothesis, passes over it."""
    if not condition:
        raise UnreadCase


class Trusted:
    """What a judge may read besides its case and the act's data: the tests' fakes of the
    sections (`.sections.corpus`, `.sections.extract`, ...) and the biLM that the fakes of
    sections 1-4 pre-train (`.trained`, as `course.pretrained` gives it: the `trained` of
    the tests of sections 5 and 6), made by course code alone, never the learner's. A judge
    asks for it by a parameter named `trusted`. The grader points `cache` at its own cache,
    where its preparation trained that biLM."""

    cache: Path | None = None

    @functools.cached_property
    def sections(self) -> Sections:
        return Harness(FAKES_DIR, FAKES_DIR).sections(find_section("extract"))

    @property
    def trained(self) -> SimpleNamespace:
        """A fresh copy each time: a judge may change its mode."""
        return pretrained(self.sections.package, cache=self.cache)


TRUSTED = Trusted()


class Judged:
    """A judged test's two functions and the strategies of its case."""

    def __init__(self, act, strategies: dict) -> None:
        self.act, self.strategies, self.judge_function = act, strategies, None

    def judge(self, out, given_values: dict) -> None:
        """Run the judge on the act's data `out`, with those of `given_values` (the case,
        pytest's parameters) that it names."""
        if self.judge_function is None:
            raise RuntimeError(f"{self.act.__name__} has no judge")
        __tracebackhide__ = True  # a failure shows the judge's lines, not these
        wanted = inspect.signature(self.judge_function).parameters
        given_values = {**given_values, "trusted": TRUSTED}
        self.judge_function(out, **{n: v for n, v in given_values.items() if n in wanted})


def judged(**strategies):
    """Make the act (the decorated function) a test; `@test.judge` adds its judge."""
    def decorate(act):
        spec = Judged(act, strategies)

        def test(**kwargs):
            """The act, then its judge on its data, as a grading run would send it."""
            __tracebackhide__ = True
            out = from_plain(json.loads(json.dumps(to_plain(act(**kwargs)))))
            spec.judge(out, kwargs)

        test.__name__, test.__qualname__, test.__doc__ = act.__name__, act.__qualname__, act.__doc__
        test.__module__, test.__wrapped__ = act.__module__, act  # its signature and source
        test = given(**strategies)(test) if strategies else test
        test.judged = spec

        def add_judge(function):
            # what a grader can give it, in a learner's run too: never a fixture
            readable = {"trusted", *strategies, *parametrized(test)}
            unknown = list(inspect.signature(function).parameters)[1:]
            if unknown := [name for name in unknown if name not in readable]:
                raise TypeError(f"the judge of {act.__name__} reads {unknown}: a judge reads "
                                f"its act's data, its case {sorted(strategies)}, pytest's "
                                f"parameters and `trusted`, and nothing else")
            # a failure's traceback reads "in judge", whatever the function is called
            function.__code__ = function.__code__.replace(co_name="judge", co_qualname="judge")
            spec.judge_function = function
            return function

        test.judge = add_judge
        return test

    return decorate


def parametrized(test) -> list[str]:
    """The names that `@pytest.mark.parametrize` gives `test` (marks already applied)."""
    names = []
    for mark in getattr(test, "pytestmark", []):
        if mark.name == "parametrize":
            argnames = mark.args[0]
            names += [n.strip() for n in argnames.split(",")] if isinstance(argnames, str) \
                else list(argnames)
    return names


def act_data(item: pytest.Item, case: dict):
    """What `item`'s act returns on `case`, as plain data (a grading run's side)."""
    spec = item.obj.judged
    fixtures = {n: item.funcargs[n] for n in item._fixtureinfo.argnames if n in item.funcargs}
    return to_plain(spec.act(**fixtures, **case))


class ActOnly:
    """A grading run's plugin (`--act-cases FILE`): each judged test acts on the cases that
    FILE holds for it ({node id: [plain case, ...]}) and sends its data, case by case, to
    `pytest_act_output`; it judges nothing (the grader does)."""

    def __init__(self, cases_file: str | Path) -> None:
        self.cases = json.loads(Path(cases_file).read_text())

    @pytest.hookimpl(tryfirst=True)
    def pytest_pyfunc_call(self, pyfuncitem: pytest.Function):
        if getattr(pyfuncitem.obj, "judged", None) is None:
            return None
        for index, case in enumerate(self.cases[pyfuncitem.nodeid]):
            data = act_data(pyfuncitem, from_plain(case))
            pyfuncitem.config.hook.pytest_act_output(item=pyfuncitem, index=index, data=data)
        return True


class ActHooks:
    """The hook a grading run's data goes to (grading.zygote's `Records` implements it)."""

    @pytest.hookspec(firstresult=True)
    def pytest_act_output(self, item: pytest.Item, index: int, data) -> object:
        """Case `index` of judged test `item` acted, giving `data` (plain)."""
