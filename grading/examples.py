"""The text of the hidden examples, written by the trusted side: a run records only the number
of the first example a property test failed on (`grading.records`), and the grader shows the
text this child wrote of that example. Under one seed and profile, hypothesis draws the same
examples in the same order as long as every earlier one passed, which on the reference they
all do; so the examples the reference's run was called with are those of the submission's.

    python -m grading.examples OUT.json SECTION     # in the course's folder; stdin: the seed

runs SECTION's tests on the reference (REFERENCE_DIR) under the hidden profile
(HYPOTHESIS_PROFILE, set by the caller) and writes, per test node id, the text of each call
of its inner test: `test_name(arg=value, ...)`, pytest's fixtures left out, printable, at
most EXAMPLE_CHARS. Exit status 1 when a reference test fails (its later examples would not
be the submission's) or pytest does not run them.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from course.registry import REFERENCE_DIR

from .zygote import unwrap_inner_test, wrap_inner_test

EXAMPLE_CHARS = 400


def example_text(name: str, args: tuple, kwargs: dict, fixtures: frozenset[str]) -> str:
    """One call as a report shows it: `name(a=1, b=[2])`, bounded and printable."""
    shown = [repr(a) for a in args] + [f"{k}={v!r}" for k, v in kwargs.items()
                                       if k not in fixtures]
    text = "".join(c if c.isprintable() else "?" for c in f"{name}({', '.join(shown)})")
    return text if len(text) <= EXAMPLE_CHARS else text[:EXAMPLE_CHARS - 3] + "..."


class Recorder:
    def __init__(self) -> None:
        self.examples: dict[str, list[str]] = {}
        self.failed: list[str] = []

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_call(self, item):
        calls = self.examples[item.nodeid] = []
        fixtures, name = frozenset(item.fixturenames), item.originalname
        inner = wrap_inner_test(
            item, lambda index, args, kwargs: calls.append(
                example_text(name, args, kwargs, fixtures)), lambda index: None)
        if inner is None:
            del self.examples[item.nodeid]
        try:
            return (yield)
        finally:
            unwrap_inner_test(item, inner)

    def pytest_runtest_logreport(self, report) -> None:
        if report.failed:
            self.failed.append(report.nodeid)


def main(out: str, section: str) -> int:
    seed = int(sys.stdin.read())
    recorder = Recorder()
    code = pytest.main(["tests/sections", "--impl", str(REFERENCE_DIR), "--section", section,
                        "--hypothesis-seed", str(seed), "-q"], plugins=[recorder])
    Path(out).write_text(json.dumps(recorder.examples))
    if recorder.failed or code != pytest.ExitCode.OK:
        print(f"the reference's run ended with pytest's status {int(code)}; failed: "
              f"{', '.join(recorder.failed) or 'none'}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:]))
