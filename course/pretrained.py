"""A biLM pre-trained on the toy corpus with the default recipe, trained once and cached.

Sections 5-7 (and their notebooks) need a pre-trained biLM but are not about training one;
the tests of sections 4-6 train the fakes' small biLM the same way (`tests/sections/fakes`).
`pretrained(package)` trains it with the package's own sections 1-4 and
caches the weights on disk, keyed by the source of those sections, the corpus they train on
(`course/corpus.py`) and the torch version, so the same code never trains twice on one
machine. `$ELMO_CACHE_DIR` moves the cache;
set it empty to turn it off. `pretrained(package, characters=True)` does the same for the
character biLM of section 8 (its `CharBiLM`, trained with its `CHAR_RECIPE`).
"""

from __future__ import annotations

import copy
import hashlib
import os
import time
from pathlib import Path
from types import ModuleType, SimpleNamespace

import torch

from .corpus import CORPUS
from .harness import Harness, sources_key
from .registry import CACHE_DIR, CACHE_ENV_VAR, SECTIONS, find_section

TRAINING_SEED = 0
_CORPUS_FILE = Path(__file__).with_name("corpus.py")  # the data trained on: in the key too
_in_memory: dict[str, SimpleNamespace] = {}


def _cache_dir() -> Path | None:
    setting = os.environ.get(CACHE_ENV_VAR, str(CACHE_DIR))
    return Path(setting) if setting else None


def pretrained(package: ModuleType, characters: bool = False, cache: Path | None = None
               ) -> SimpleNamespace:
    """`.model` (a fresh copy each call, on CPU), `.word2idx`, `.idx2word`, `.history`,
    `.cpu_seconds` (what its training took, when it trained; None in an older cache); with
    `characters`, section 8's `CharBiLM` rather than the `BiLM`; `cache`: the cache's
    folder, rather than `$ELMO_CACHE_DIR`'s."""
    setup, corpus, bilm, pretrain = (Harness.module(package, s) for s in SECTIONS[:4])
    sections = [*SECTIONS[:4], *([find_section("char_encoder")] if characters else [])]
    corpus_digest = hashlib.sha256(_CORPUS_FILE.read_bytes()).hexdigest()
    key = hashlib.sha256(
        f"{sources_key(package, sections)} {corpus_digest} {torch.__version__}".encode()
    ).hexdigest()[:16]
    if key not in _in_memory:
        word2idx, idx2word = corpus.build_vocab(CORPUS)
        setup.set_seed(TRAINING_SEED)
        if characters:
            char_encoder = Harness.module(package, sections[-1])
            model, recipe = char_encoder.CharBiLM(idx2word), char_encoder.CHAR_RECIPE
        else:
            model, recipe = bilm.BiLM(len(word2idx)), pretrain.DEFAULT_RECIPE
        cache = cache or _cache_dir()
        name = "char-bilm" if characters else "bilm"
        path = cache / f"{name}-{key}.pt" if cache else None
        if path and path.exists():
            saved = torch.load(path, map_location="cpu", weights_only=True)
            model.load_state_dict(saved["state_dict"])
            history, cpu_seconds = saved["history"], saved.get("cpu_seconds")
        else:
            started = time.process_time()
            history = pretrain.train_bilm(model, CORPUS, word2idx, recipe,
                                          seed=TRAINING_SEED, device="cpu", log_every=0,
                                          progress=False)
            cpu_seconds = time.process_time() - started
            if path:
                path.parent.mkdir(parents=True, exist_ok=True)
                partial = path.with_suffix(f".{os.getpid()}.tmp")
                torch.save({"state_dict": model.state_dict(), "history": history,
                            "cpu_seconds": cpu_seconds}, partial)
                partial.replace(path)  # atomic: parallel runs never read half a file
        _in_memory[key] = SimpleNamespace(model=model.cpu(), word2idx=word2idx,
                                          idx2word=idx2word, history=list(history),
                                          cpu_seconds=cpu_seconds)
    shared = _in_memory[key]
    return SimpleNamespace(**{**vars(shared), "model": copy.deepcopy(shared.model)})
