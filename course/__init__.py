"""The learner runtime of the ELMo course, shipped whole in the handout: the registry, the
isolation harness, the tests' plugins, the progress table, the pre-trained biLM, what the
notebooks call, the given code of the sections (the corpus, the input checks, the
analyses and the figures), and the measurements of `make replicate` (`experiments`, each
biLM against the untrained biLM it started from, and `targets`, what the paper found read
as effects of pre-training). It imports nothing of the course's tools, grader or
reference."""

import os

from .registry import BUILD_DIR

# torch makes a cache folder for its compiler the first time an optimiser is built; keep it
# with the course's other build files rather than in /tmp.
os.environ.setdefault("TORCHINDUCTOR_CACHE_DIR", str(BUILD_DIR / "torchinductor"))
