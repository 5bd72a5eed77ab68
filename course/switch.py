"""Which implementation the notebooks run, chosen without editing a notebook.

A notebook's parameters cell is committed as `IMPL = None`; its folded root cell then calls
`chosen_impl(IMPL)`: `ELMO_IMPL` from the environment (as for `make test`), else the first
word of the file `.elmo-impl` at the course's root (ignored by git: the learner's own), else
`exercises`. A headless run (`make run-notebooks`) sets the parameters cell instead.

Only the standard library here: the root cell runs it before it knows the kernel is the
course's environment.
"""

from __future__ import annotations

import os
import textwrap
from pathlib import Path

from .registry import EXERCISES_DIR, OUTPUT_WIDTH, ROOT

IMPL_VARIABLE = "ELMO_IMPL"  # the environment's switch, as for `make test`
IMPL_FILE = ROOT / ".elmo-impl"  # the learner's own switch, ignored by git


def chosen_impl(impl: str | Path | None = None, announce: bool = True) -> str:
    """The implementation a notebook runs: `impl` when given (a headless run sets it), else
    `ELMO_IMPL` from the environment, else the first line of `.elmo-impl` at the root, else
    `exercises`. With `announce`, one line says which, and how to switch without editing
    the notebook."""
    if impl is not None:
        chosen, why = str(impl), "set in the notebook's first cell"
    elif os.environ.get(IMPL_VARIABLE, "").strip():
        chosen, why = os.environ[IMPL_VARIABLE].strip(), f"from ${IMPL_VARIABLE}"
    elif IMPL_FILE.exists() and IMPL_FILE.read_text().strip():
        chosen, why = IMPL_FILE.read_text().split()[0], f"from {IMPL_FILE.name}"
    else:
        chosen, why = EXERCISES_DIR.name, "the default"
    if announce:
        print(textwrap.fill(
            f"These cells run {chosen}/ ({why}). To run another folder, write its name in "
            f"the file {IMPL_FILE.name} at the course's root (or start Jupyter with "
            f"{IMPL_VARIABLE}=<folder>), then restart the kernel.", OUTPUT_WIDTH))
    return chosen
