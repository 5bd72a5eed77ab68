"""What the grader learns from the course itself before it grades anyone, run once per
grading run as the grader's own (trusted) child:

    python -m grading.prepare OUT.json

* the tests of every section, by node id in the order they run, collected from the
  repository's own tests against the reference (a submission's run is scored against this
  list, so a test that a crash or a timeout kept from reporting still counts, as lost);
* the pre-trained reference biLM, trained (or found) in `$ELMO_CACHE_DIR`, and the name of
  its file there, which every run gets a copy of.

OUT.json: {"tests": {"1": [node ids], ...}, "cache_files": [file names]}
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
from course.registry import CACHE_ENV_VAR, REFERENCE_DIR, SECTIONS, section_of_test


class _Collector:
    def __init__(self) -> None:
        self.nodeids: list[str] = []

    def pytest_collection_finish(self, session: pytest.Session) -> None:
        self.nodeids = [item.nodeid for item in session.items]


def collect_tests() -> dict[str, list[str]]:
    collector = _Collector()
    code = pytest.main(["tests/sections", "--impl", str(REFERENCE_DIR), "--collect-only", "-q",
                        "-p", "no:cacheprovider"], plugins=[collector])
    if code not in (pytest.ExitCode.OK, pytest.ExitCode.NO_TESTS_COLLECTED):
        raise RuntimeError(f"collecting the section tests failed (pytest exit status {code})")
    return {str(s.number): [n for n in collector.nodeids if section_of_test(n) == s]
            for s in SECTIONS}


def warm_cache() -> list[str]:
    """Train (or load) the reference biLM; the cache file that holds exactly its weights.
    Files of an older reference are removed, so that runs are not given them."""
    cache = Path(os.environ[CACHE_ENV_VAR])
    weights = pretrained(Harness(REFERENCE_DIR).load(SECTIONS[0])).model.state_dict()
    kept = []
    for path in sorted(cache.glob("bilm-*.pt")):
        saved = torch.load(path, map_location="cpu", weights_only=True)["state_dict"]
        if saved.keys() == weights.keys() and all(torch.equal(saved[k], weights[k])
                                                  for k in weights):
            kept.append(path.name)
        else:
            path.unlink()
    return kept


def main(argv: list[str]) -> int:
    out = Path(argv[0])
    tests = collect_tests()
    out.write_text(json.dumps({"tests": tests, "cache_files": warm_cache()}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
