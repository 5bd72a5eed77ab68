"""A pytest plugin that test_watch.py gives a watched run (`PYTEST_ARGS=-p ...`): it says
which process ran the tests, and whether torch had been imported before pytest began, as
in `make watch`'s preloaded process and never in a fresh `make test`."""

import os
import sys

# pytest imports a `-p` plugin before any conftest, and pytest itself imports no torch.
TORCH_BEFORE_PYTEST = "torch" in sys.modules


def pytest_terminal_summary(terminalreporter) -> None:
    terminalreporter.write_line(f"probe: pid {os.getpid()} parent {os.getppid()} torch "
                                f"imported before pytest {TORCH_BEFORE_PYTEST}")
