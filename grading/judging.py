"""The grader's half of a judged test (tests/sections/judged.py): it draws each judged test's
cases in its own process, from a seed that no run sees, hands them to the run as data, and
judges what the run's acts sent back with the course's judges, here. A run's word that a
judged test passed counts for nothing: it passes when its act ran on every case and the
judge accepts every case's data.

The seed of a section's cases is the MAC, under the grader's key, of the section and the
module's bytes (`section_seed`), and each test's is the MAC of its node id under that
(`test_seed`): the same module gets the same cases and the same verdict under the same key,
and nothing a run learns of its own cases tells it another module's, a classmate's or its own
next version's. The key is the term's secret (`--secret-file`, so that every grader of a
term draws alike) or, without one, a key the grader makes once in its work folder, which no
run can read. A report holds only a digest of the key, in the settings key.
"""

from __future__ import annotations

import hashlib
import hmac
import importlib
import json
import os
import threading
from pathlib import Path

import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import seed as with_seed
from hypothesis.errors import UnsatisfiedAssumption

from course.diagnose import digest_of
from course.results import FAILED, PASSED
from tests.sections import conftest  # noqa: F401  the course's hypothesis profile: its counts
from tests.sections.judged import TRUSTED, from_plain, to_plain

KEY_FILE = "judging.key"
SECRET_MIN_BYTES = 16
CASE_CHARS = 300  # of a failing case's text in a report
_DRAWING = threading.Lock()  # hypothesis draws one test's examples at a time


def read_secret(path: Path) -> bytes:
    """The secret in `path`, without the whitespace around it.

    Raises:
        OSError: the file cannot be read.
        ValueError: it holds fewer than SECRET_MIN_BYTES bytes.
    """
    secret = Path(path).read_bytes().strip()
    if len(secret) < SECRET_MIN_BYTES:
        raise ValueError(f"{path} holds {len(secret)} bytes, fewer than the "
                         f"{SECRET_MIN_BYTES} a secret needs (make one: python -c \"import "
                         f"secrets; print(secrets.token_hex(32))\" > {path})")
    return secret


def own_key(work_dir: Path) -> bytes:
    """The grader's key in `work_dir`, made on first use: readable by the grader alone."""
    path = Path(work_dir) / KEY_FILE
    if not path.exists():
        descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(descriptor, "wb") as file:
            file.write(os.urandom(32).hex().encode())
    return path.read_bytes()


def use_cache(folder: Path) -> None:
    """Have the judges read the biLM that the grader's preparation trained in `folder`."""
    TRUSTED.cache = Path(folder)


def _mac(key: bytes, message: bytes) -> int:
    return int.from_bytes(hmac.new(key, message, hashlib.sha256).digest()[:8], "big")


def section_seed(key: bytes, section: int, module: bytes) -> int:
    """The seed of section `section`'s cases for `module` (its bytes) under `key`: 64 bits."""
    return _mac(key, f"judged cases, section {section}\0".encode()
                + hashlib.sha256(module).digest())


def cases_seed(section_seed: int, nodeid: str) -> int:
    """The seed of the judged test `nodeid`'s cases, from its section's: 64 bits, from which
    the section's cannot be found."""
    return _mac(section_seed.to_bytes(8, "big"), nodeid.encode())


def digest(key: bytes) -> str:
    """What the settings key holds of the key: no way back to it, nor to a seed."""
    return hmac.new(key, b"settings key", hashlib.sha256).hexdigest()


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
    return {nodeid: [to_plain(case) for case in draw(spec, cases_seed(seed, nodeid))]
            for nodeid, spec in specs.items()}


def _case_text(case: dict, params: dict) -> str:
    text = ", ".join(f"{k}={v!r}" for k, v in {**params, **case}.items())
    text = "".join(c if c.isprintable() else "?" for c in " ".join(text.split()))
    text = text if len(text) <= CASE_CHARS else text[: CASE_CHARS - 3] + "..."
    return f"; Failing case: {text}" if text else ""


def verdict(spec: dict, cases: list, acts: dict[int, object]) -> tuple[str | None, str | None]:
    """(why, digest): why is None where the judge accepts the data of every case, else
    which case failed, in the grader's words alone (the judge's message would quote the
    run's numbers, through which a run could spell out what it read; a learner's `make test`
    shows it); digest is `course.diagnose`'s fingerprint of the wrong tensor that the judge's
    `assert_close` saw, if it saw one."""
    test, params = _test(spec), from_plain(spec["params"])
    for index, plain in enumerate(cases):
        case = from_plain(plain)
        of = f"case {index + 1} of {len(cases)}"
        if index not in acts:
            return f"its act sent no data for {of}", None
        try:
            out = from_plain(acts[index])
            test.judged.judge(out, {**params, **case})
        except UnsatisfiedAssumption:
            continue  # a case the judge does not read
        except (AssertionError, pytest.fail.Exception) as err:  # a check, or `pytest.fail`
            return f"AssertionError in the test's checks, on {of}" \
                   f"{_case_text(case, params)}", digest_of(err)
        except Exception as err:  # data of the wrong kind (NotData, a shape): the act's fault
            return f"what its act returned on {of} cannot be judged " \
                   f"({type(err).__name__}){_case_text(case, params)}", None
    return None, None


def judge_stream(stream, specs: dict[str, dict], cases: dict[str, list]) -> None:
    """Replace each judged test's status in `stream` (`grading.records.Stream`) by the
    verdict on its data: a test whose act ran on every case passes when its judge says so.
    Its wrong tensor's digest is the grader's, never the run's."""
    for nodeid, spec in specs.items():
        record = stream.tests.get(nodeid)
        if record is None:
            continue  # lost
        if record["status"] != PASSED:  # its act raised: the run's failure stands
            record["digest"] = None
            continue
        why, digest = verdict(spec, cases[nodeid], stream.acts.get(nodeid, {}))
        if why is not None:
            record.update(status=FAILED, error="AssertionError", line=None, digest=digest,
                          judged=why)


def encode_cases(cases: dict[str, list]) -> bytes:
    return json.dumps(cases).encode()
