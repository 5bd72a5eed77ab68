"""The learner runtime of the ELMo course, what a test run needs: the registry, the
isolation harness, the tests' plugins, the progress table, hints and watch mode, the
pre-trained biLM, and the given code of the sections (the corpus, the characters, the input
checks). The handout ships it with the analyses (`analyses`); every grading run is given it
alone. It imports nothing of the analyses (a run that asks for its own ELMo's lines loads
`analyses.your_elmo` then), the course's tools, grader or reference."""

import os

from .registry import BUILD_DIR

# torch makes a cache folder for its compiler the first time an optimiser is built; keep it
# with the course's other build files rather than in /tmp.
os.environ.setdefault("TORCHINDUCTOR_CACHE_DIR", str(BUILD_DIR / "torchinductor"))
