"""`python -m grading SUBMISSION...`: see `grading.cli`."""

import sys

from .cli import main

sys.exit(main())
