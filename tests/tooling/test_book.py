"""The course book (`make book`, tools/book.py): a small one is built as the whole one is, with
Jupyter Book 1.x from .venv-book and MathJax from its pinned npm package, then opened in
headless chromium: every page renders, its maths is typeset, its figure loads, and no
request leaves the machine."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from course.registry import ROOT
from tools import book

CHROMIUM = Path("/usr/bin/chromium")
BOOK_PYTHON = book.BOOK_VENV / "bin" / "python"


def test_mathjax_is_pinned_and_served_from_the_build():
    config = book.CONFIG.format(title="t", mathjax_path=book.MATHJAX_PATH, assets=book.ASSETS)
    assert "mathjax_path: mathjax/tex-mml-chtml.js" in config and "://" not in config.split(
        "sphinx:")[1], "MathJax comes from the build, never from a CDN"
    assert book.MATHJAX.startswith("mathjax@3.") and len(book.MATHJAX_SHA256) == 64
    lock = (ROOT / "requirements" / "book.lock").read_text()
    assert "\njupyter-book==1." in lock, "Jupyter Book 1.x: version 2 needs the internet"


@pytest.fixture(scope="module")
def small_book(tmp_path_factory) -> Path:
    if not book.JUPYTER_BOOK.exists():
        pytest.skip("no .venv-book (make check and make book install it)")
    if shutil.which("npm") is None and not book.MATHJAX_CACHE.exists():
        pytest.skip("no npm here to fetch MathJax's package")
    out = tmp_path_factory.mktemp("book") / "book"
    index = book.build(out, small=True, report=lambda line: None)
    assert index.exists()
    return out


def test_the_small_book_holds_its_pages_and_a_local_mathjax(small_book):
    assert {"intro.html", "notebook.html", "notes.html", "explore.html"} <= {p.name for p in
                                                             small_book.glob("*.html")}
    assert (small_book / "_static" / book.MATHJAX_PATH).exists()
    page = (small_book / "notebook.html").read_text()
    assert f'src="_static/{book.MATHJAX_PATH}' in page
    assert "cdn.jsdelivr" not in page and "unpkg.com/mathjax" not in page


def test_in_a_browser_every_page_renders_with_its_maths_and_figure_offline(small_book):
    if not CHROMIUM.exists():
        pytest.skip("no chromium (make system-packages installs it, as root)")
    ran = subprocess.run([str(BOOK_PYTHON), str(ROOT / "tools" / "book_check.py"),
                          str(small_book)], capture_output=True, text=True, timeout=180)
    assert ran.returncode == 0, ran.stderr[-3000:]
    found = json.loads(ran.stdout)
    assert found["external"] == [], f"requests that left the machine: {found['external']}"
    assert found["failed"] == [], f"requests that failed: {found['failed']}"
    pages = found["pages"]
    assert set(pages) == {"intro.html", "notebook.html", "notes.html", "explore.html"}
    for name, facts in pages.items():
        assert facts["text"] > 50 and "ELMo" in facts["title"], (name, facts)
        assert facts["raw_tex"] == 0, f"{name}: TeX left raw: {facts}"
        if name != "explore.html":
            assert facts["maths"] >= 1, f"{name}: typeset by the local MathJax: {facts}"
    explore = pages["explore.html"]
    assert explore["explore_points"] == 3, "the interactive figure draws every occurrence"
    assert explore["explore_moved"] == {"caption_changed": True, "points": 3}, (
        "moving the layer control redraws the figure and its caption")
    assert pages["notebook.html"]["maths"] == 2, "inline and displayed maths"
    assert pages["notebook.html"]["images"] == 1 and pages["notebook.html"][
        "broken_images"] == 0, "the notebook's figure is shown"
