"""What the grader learns from the course before it grades anyone, in a child of its own (the
course's code, trusted): `python -m grading.prepare OUT.json`, run in the course's folder.

* every section's tests, by node id in the order they run, collected against the reference: a
  run is scored against this list, so a test a crash kept from reporting counts, as lost;
* the biLM that the tests of sections 5 and 6 read, trained by the tests' fakes of sections
  1-4 (tests/sections/fakes; or found) in `$ELMO_CACHE_DIR`, and its file's name there, of
  which every run gets a copy; files of older fakes are removed.

* the judged tests (tests/sections/judged.py), by node id: where the grader finds each one's
  strategies and judge, and its pytest parameters (`grading.judging`).

OUT.json: {"tests": {"1": [node ids], ...}, "cache_files": [file names],
           "judged": {node id: {"module", "name", "params"}}}
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest
import torch

from course.harness import Harness
from course.pretrained import pretrained
from course.registry import (
    CACHE_ENV_VAR,
    FAKES_DIR,
    REFERENCE_DIR,
    SECTIONS,
    find_section,
    section_of_test,
)
from grading.judging import judged_tests


class _Collector:
    nodeids: list[str] = []

    def pytest_collection_finish(self, session: pytest.Session) -> None:
        self.nodeids = [item.nodeid for item in session.items]
        self.judged = judged_tests(session.items)


def main(out: str) -> int:
    collector = _Collector()
    code = pytest.main(["tests/sections", "--impl", str(REFERENCE_DIR), "--collect-only", "-q",
                        "-p", "no:cacheprovider"], plugins=[collector])
    if code != pytest.ExitCode.OK:
        raise RuntimeError(f"collecting the section tests failed (pytest exit status {code})")
    fakes = Harness(REFERENCE_DIR, FAKES_DIR).load(find_section("extract"))  # 1-4: the fakes
    weights = pretrained(fakes).model.state_dict()
    kept = []
    for path in sorted(Path(os.environ[CACHE_ENV_VAR]).glob("bilm-*.pt")):
        saved = torch.load(path, map_location="cpu", weights_only=True)["state_dict"]
        if saved.keys() == weights.keys() and all(torch.equal(saved[k], weights[k])
                                                  for k in weights):
            kept.append(path.name)
        else:
            path.unlink()
    tests = {s.number: [n for n in collector.nodeids if section_of_test(n) == s]
             for s in SECTIONS}
    Path(out).write_text(json.dumps({"tests": tests, "cache_files": kept,
                                     "judged": collector.judged}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
