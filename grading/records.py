"""What a run wrote to the grader: typed lines, checked, and the only source of a result's
words besides the grader's own copy of the submission's module.

The run's plugin (`grading.zygote.Records`) writes JSON lines to a pipe: `begin` (before any
of the submission's code runs), a `test` line per test, an `act` line per case of a judged
test with the data its act computed (which `grading.judging` judges: the line's status
alone never passes a judged test), and `end` with pytest's exit status.
A test line holds no text of the run's own: its error's builtin class, an errno by its name
in the `errno` module, a line of the learner's module. Of a wrong tensor it
holds `course.diagnose`'s `output_digest` (16 lowercase hex digits), which the run can choose
as it likes: the instructors' JSON alone keeps it, as `reported_digest`. Anything else
makes the run *untrusted* (flagged, no credit; `read_stream` says which check failed,
docs/instructors.md lists them). A crash (a signal: a segmentation fault, a limit) is not
untrusted: the tests recorded before it stand, and the others are lost.
"""

from __future__ import annotations

import builtins
import errno
import json
import os
import re
from dataclasses import dataclass, field

from course.results import FAILED, PASSED, STATUSES

ERRORS = {name for name, value in vars(builtins).items()
          if isinstance(value, type) and issubclass(value, BaseException)}
FIELDS = {"begin": {"kind": str},
          "test": {"kind": str, "nodeid": str, "status": str, "error": str,
                   "line": (int, type(None)), "errno": (str, type(None)),
                   "digest": (str, type(None))},
          "act": {"kind": str, "nodeid": str, "index": int, "data": object},
          "end": {"kind": str, "exitstatus": int}}
ERRNOS = set(errno.errorcode.values())  # an errno is one of these names, never a number
BEGIN = b'{"kind": "begin"}\n'
DIGEST = re.compile(r"[0-9a-f]{16}")  # course.diagnose's output_digest


@dataclass
class Stream:
    begun: bool = False
    tests: dict[str, dict] = field(default_factory=dict)  # by node id
    acts: dict[str, dict[int, object]] = field(default_factory=dict)  # a judged test's data
    exitstatus: int | None = None
    untrusted: str | None = None  # why


def _valid(line: object) -> bool:
    fields = FIELDS.get(line.get("kind")) if isinstance(line, dict) else None
    return (fields is not None and set(line) == set(fields)
            and all(isinstance(line[k], t) and (k == "data" or not isinstance(line[k], bool))
                    for k, t in fields.items())
            and (line["kind"] != "test" or (line["status"] in STATUSES
                                            and line["error"] in ERRORS | {""}
                                            and line["errno"] in ERRNOS | {None}
                                            and (line["digest"] is None or DIGEST.fullmatch(
                                                line["digest"]) is not None))))


def read_stream(data: bytes, overflowed: bool, nodeids: list[str], wait_status: int | None
                ) -> Stream:
    """The stream of a run whose process ended with `wait_status`, checked against the
    course's `nodeids` for its section."""
    stream, known = Stream(begun=data.startswith(BEGIN)), set(nodeids)
    code = os.WEXITSTATUS(wait_status) if wait_status is not None and os.WIFEXITED(
        wait_status) else None
    *lines, rest = data.split(b"\n")
    if overflowed:
        stream.untrusted = "it wrote more to the grader than the grader's plugin ever does"
    elif rest and code is not None:
        stream.untrusted = "its last line to the grader was cut short"
    for number, raw in enumerate(lines if not stream.untrusted else []):
        try:
            line = json.loads(raw)
        except ValueError:
            line = None
        if not _valid(line) or (line["kind"] == "begin") != (number == 0) \
                or stream.exitstatus is not None:
            stream.untrusted = "it wrote a line to the grader that the grader's plugin does not"
            break
        if line["kind"] == "test":
            if line["nodeid"] not in known or line["nodeid"] in stream.tests:
                stream.untrusted = "it recorded a test the course does not have, or one twice"
                break
            stream.tests[line["nodeid"]] = line
        elif line["kind"] == "act":
            acts = stream.acts.setdefault(line["nodeid"], {})
            if line["nodeid"] not in known or line["index"] < 0 or line["index"] in acts:
                stream.untrusted = "it sent a test's data the course does not ask for, or twice"
                break
            acts[line["index"]] = line["data"]
        elif line["kind"] == "end":
            stream.exitstatus = line["exitstatus"]
    passed = set(stream.tests) == known and all(t["status"] == PASSED
                                                for t in stream.tests.values())
    if stream.untrusted is None and stream.begun and code is not None and (
            stream.exitstatus != code or passed != (code == 0)):
        stream.untrusted = ("it ended without its stream's end" if stream.exitstatus is None
                            else "its records and its exit status disagree")
    return stream


def short(text: str, limit: int = 300) -> str:
    """`text` on one line, its spaces collapsed, cut to `limit` characters."""
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def source_line(source: bytes, line: int | None) -> str:
    """Line `line` of the learner's module, shortened: what a message quotes."""
    lines = source.decode(errors="replace").splitlines()
    return short(lines[line - 1], 100) if line and 0 < line <= len(lines) else ""


def describe(test: dict, module: str, source: bytes) -> str:
    """A test's message, from its record: `failed: AssertionError in the test's checks`,
    `error: ModuleNotFoundError at s1_setup.py line 3: `import numpi``; of a judged test
    that its judge failed, the grader's words on the case (`grading.judging`)."""
    if test["status"] == PASSED:
        return ""
    if test.get("judged"):
        return f"{test['status']}: {test['judged']}"
    text = f"{test['status']}: {test['error'] or 'no exception'}"
    if test["errno"] is not None:
        text += f" [{test['errno']}: {os.strerror(getattr(errno, test['errno']))}]"
    if quoted := source_line(source, test["line"]):
        text = f"{text} at {module} line {test['line']}: `{quoted}`"
    else:
        text += " in the test's checks" if test["status"] == FAILED else ""
    return text


def crash_line(output_tail: str, module: str) -> int | None:
    """The line of `module` where a crashed run's traceback points, read as a number only."""
    found = re.search(rf'File "[^"\n]*/{re.escape(module)}", line (\d+)', output_tail)
    return int(found[1]) if found else None
