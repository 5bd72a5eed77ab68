"""The text of a failing hidden example, written by the trusted side. A run records only the
number of the first example a property test failed on (`grading.records`); the grader then
runs the reference's module on those tests, in the same sandbox and under the same seed
(`grading.hidden`), and `ExampleTexts` writes the text of the call with that number. Under
one seed and profile, hypothesis draws the same examples in the same order as long as every
earlier one passed, which on the reference they all do; so the example the reference was
called with is the one the submission failed on.

A text is `test_name(arg=value, ...)`, pytest's fixtures left out, printable, at most
EXAMPLE_CHARS: the grader's own words, whatever the submission did.
"""

from __future__ import annotations

import functools
import json

import pytest

EXAMPLE_CHARS = 400


def example_text(name: str, args: tuple, kwargs: dict, fixtures: frozenset[str]) -> str:
    """One call as a report shows it: `name(a=1, b=[2])`, bounded and printable."""
    shown = [repr(a) for a in args] + [f"{k}={v!r}" for k, v in kwargs.items()
                                       if k not in fixtures]
    text = "".join(c if c.isprintable() else "?" for c in f"{name}({', '.join(shown)})")
    return text if len(text) <= EXAMPLE_CHARS else text[:EXAMPLE_CHARS - 3] + "..."


def wrap_inner_test(item, on_call, on_raise) -> object | None:
    """Have `on_call(index, args, kwargs)` run before each call of `item`'s hypothesis inner
    test (its examples, numbered from 0) and `on_raise(index)` when one raises (a failure, not
    one of hypothesis's own signals). Returns the original inner test, for
    `unwrap_inner_test`, or None for a test that is not a property's."""
    handle = getattr(getattr(item, "obj", None), "hypothesis", None)
    inner = getattr(handle, "inner_test", None)
    if inner is None:
        return None
    from hypothesis.errors import StopTest, UnsatisfiedAssumption
    calls = [0]

    @functools.wraps(inner)
    def counted(*args, **kwargs):
        index = calls[0]
        calls[0] += 1
        on_call(index, args, kwargs)
        try:
            return inner(*args, **kwargs)
        except (StopTest, UnsatisfiedAssumption):
            raise
        except BaseException:
            on_raise(index)
            raise

    handle.inner_test = counted
    return inner


def unwrap_inner_test(item, inner) -> None:
    if inner is not None:
        item.obj.hypothesis.inner_test = inner


def test_of(nodeid: str) -> str:
    """A property test's node id without its parameters: what a run's examples are keyed by."""
    return nodeid.split("[", 1)[0]


class ExampleTexts:
    """The reference's run's plugin: for each test of `wanted` ({test: example number}), one
    line `{"kind": "example", "test", "text"}` through `send`, of the call with that number."""

    def __init__(self, wanted: dict[str, int], send) -> None:
        self.wanted, self.send = wanted, send

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_call(self, item):
        test, fixtures = test_of(item.nodeid), frozenset(item.fixturenames)

        def on_call(index: int, args: tuple, kwargs: dict) -> None:
            if index == self.wanted.get(test):
                self.send({"kind": "example", "test": test,
                           "text": example_text(item.originalname, args, kwargs, fixtures)})

        inner = wrap_inner_test(item, on_call, lambda index: None)
        try:
            return (yield)
        finally:
            unwrap_inner_test(item, inner)


def read_examples(data: bytes, wanted: dict[str, int]) -> dict[str, str]:
    """{test: text} of the lines `ExampleTexts` wrote, for the tests of `wanted`."""
    texts = {}
    for raw in data.splitlines():
        try:
            line = json.loads(raw)
        except ValueError:
            continue
        if isinstance(line, dict) and line.get("kind") == "example" and \
                line.get("test") in wanted and isinstance(line.get("text"), str):
            texts.setdefault(line["test"], line["text"][:EXAMPLE_CHARS])
    return texts
