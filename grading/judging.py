"""The grader's half of a judged test (tests/sections/judged.py): it draws each judged test's
cases in its own process, from a seed that no run sees, hands them to the run as data, and
judges what the run's acts sent back with the course's judges, here. A run's word that a
judged test passed counts for nothing: it passes when its act ran on every case and the
judge accepts every case's data.

The seed of a section's cases is the MAC, under the grader's key, of the section and the
module's bytes (`hidden.seed`): the same module gets the same cases and the same verdict
under the same key, and nothing a run learns of its own cases tells it another module's. The
key is the term's secret (`--secret-file`) or, without one, a key the grader makes once in
its work folder, which no run can read.
"""

from __future__ import annotations

import importlib
import json
import os
import threading
from pathlib import Path

from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import seed as with_seed
from hypothesis.errors import UnsatisfiedAssumption

from course.results import FAILED, PASSED
from tests.sections import conftest  # noqa: F401  the course's hypothesis profile: its counts
from tests.sections.judged import from_plain, to_plain

from . import hidden

KEY_FILE = "judging.key"
CASE_CHARS = 300  # of a failing case's text in a report
_DRAWING = threading.Lock()  # hypothesis draws one test's examples at a time


def own_key(work_dir: Path) -> bytes:
    """The grader's key in `work_dir`, made on first use: readable by the grader alone."""
    path = Path(work_dir) / KEY_FILE
    if not path.exists():
        descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(descriptor, "wb") as file:
            file.write(os.urandom(32).hex().encode())
    return path.read_bytes()


def section_seed(key: bytes, section: int, module: bytes) -> int:
    """The seed of section `section`'s cases for `module` (its bytes) under `key`."""
    return hidden.seed(key + b"\0judged cases", section, module)


def judged_tests(items) -> dict[str, dict]:
    """{node id: {"module", "name", "params"}} of the judged tests among pytest's `items`:
    what `grading.prepare` writes, for the grader to find them again."""
    return {item.nodeid: {"module": item.module.__name__, "name": item.originalname,
                          "params": to_plain(dict(getattr(item, "callspec", None).params
                                                  if hasattr(item, "callspec") else {}))}
            for item in items if getattr(getattr(item, "obj", None), "judged", None)}


def _test(spec: dict):
    return getattr(importlib.import_module(spec["module"]), spec["name"])


def draw(spec: dict, seed: int) -> list[dict]:
    """The cases of the judged test `spec` under `seed`: as many as its examples in a
    learner's run, drawn by its own strategies; one empty case where it has none."""
    test = _test(spec)
    strategies = test.judged.strategies
    if not strategies:
        return [{}]
    count = test._hypothesis_internal_use_settings.max_examples
    found: list[dict] = []

    @with_seed(seed)
    @settings(database=None, max_examples=count, derandomize=False, deadline=None,
              phases=[Phase.generate], suppress_health_check=list(HealthCheck))
    @given(**strategies)
    def collect(**case):
        found.append(case)

    with _DRAWING:
        collect()
    return found


def cases_for(specs: dict[str, dict], seed: int) -> dict[str, list]:
    """{node id: [plain case, ...]} of the judged tests `specs`, each from its own seed."""
    return {nodeid: [to_plain(case) for case in draw(spec, hidden.test_seed(seed, nodeid))]
            for nodeid, spec in specs.items()}


def _case_text(case: dict, params: dict) -> str:
    text = ", ".join(f"{k}={v!r}" for k, v in {**params, **case}.items())
    text = "".join(c if c.isprintable() else "?" for c in " ".join(text.split()))
    text = text if len(text) <= CASE_CHARS else text[: CASE_CHARS - 3] + "..."
    return f"; Failing case: {text}" if text else ""


def verdict(spec: dict, cases: list, acts: dict[int, object]) -> str | None:
    """None where the judge accepts the data of every case, else why not: which case, in
    the grader's words alone (the judge's message would quote the run's numbers, through
    which a run could spell out what it read; a learner's `make test` shows it)."""
    test, params = _test(spec), from_plain(spec["params"])
    for index, plain in enumerate(cases):
        case = from_plain(plain)
        of = f"case {index + 1} of {len(cases)}"
        if index not in acts:
            return f"its act sent no data for {of}"
        try:
            out = from_plain(acts[index])
            test.judged.judge(out, {**params, **case})
        except UnsatisfiedAssumption:
            continue  # a case the judge does not read
        except AssertionError:
            return f"AssertionError in the test's checks, on {of}{_case_text(case, params)}"
        except Exception as err:  # data of the wrong kind (NotData, a shape): the act's fault
            return f"what its act returned on {of} cannot be judged " \
                   f"({type(err).__name__}){_case_text(case, params)}"
    return None


def judge_stream(stream, specs: dict[str, dict], cases: dict[str, list]) -> None:
    """Replace each judged test's status in `stream` (`grading.records.Stream`) by the
    verdict on its data: a test whose act ran on every case passes when its judge says so."""
    for nodeid, spec in specs.items():
        record = stream.tests.get(nodeid)
        if record is None or record["status"] != PASSED:
            continue  # lost, or its act raised: the run's failure stands
        why = verdict(spec, cases[nodeid], stream.acts.get(nodeid, {}))
        if why is not None:
            record.update(status=FAILED, error="AssertionError", line=None, digest=None,
                          judged=why)


def encode_cases(cases: dict[str, list]) -> bytes:
    return json.dumps(cases).encode()
