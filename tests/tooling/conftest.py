"""Fixtures that more than one tooling test file uses."""

import pytest

from tools import demo


@pytest.fixture(scope="session")
def demo_one_seed(tmp_path_factory):
    """What `make demo` writes, for one seed (seed 0): its folder."""
    out = tmp_path_factory.mktemp("demo")
    demo.main(["--seeds", "1", "--out", str(out)])
    return out
