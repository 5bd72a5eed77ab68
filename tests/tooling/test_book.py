"""The course book (`make book`, tools/book.py): its pieces, each alone. The book itself is
built and checked in a browser by tests/tooling/test_notebooks.py, from the notebooks that
file executes on the reference (the book is never run a second time in `make check`)."""

from __future__ import annotations

import ast
import json
import re

import pytest

from course.registry import EXERCISES_DIR, REFERENCE_DIR, ROOT, SECTIONS, find_section
from tools import book, book_explore, book_text, results_text
from tools.notebooks import figure_of


def test_mathjax_is_pinned_and_served_from_the_build():
    config = book.CONFIG.format(title="t", mathjax_path=book.MATHJAX_PATH, assets=book.ASSETS,
                                stylesheet=book.STYLESHEET)
    assert "mathjax_path: mathjax/tex-mml-chtml.js" in config and "://" not in config.split(
        "sphinx:")[1], "MathJax comes from the build, never from a CDN"
    assert book.MATHJAX.startswith("mathjax@3.") and len(book.MATHJAX_SHA256) == 64
    lock = (ROOT / "requirements" / "book.lock").read_text()
    assert "\njupyter-book==1." in lock, "Jupyter Book 1.x: version 2 needs the internet"
    assert "\nsphinxcontrib-bibtex==" in lock, "the bibliography's extension is pinned"


def test_a_markdown_output_is_read_as_the_pages_are_so_its_tables_render():
    config = book.CONFIG.format(title="t", mathjax_path="m", assets="a", stylesheet="s")
    assert "nb_render_markdown_format: myst" in config, (
        "myst-nb's default, CommonMark, has no tables: a displayed Markdown table showed as "
        "pipes")


@pytest.mark.parametrize("section", SECTIONS, ids=lambda s: s.name)
def test_a_section_page_shows_the_stub_never_the_reference(section):
    shown = book.interface(section)
    stub = (EXERCISES_DIR / section.file_name).read_text()
    assert f"section {section.number} ({section.name}): " in shown and (
        "is not implemented yet" in shown), "the stubs' raise, as the learner reads it"
    assert all(line in stub for line in shown.splitlines()), "every line as the stub has it"
    ast.parse(shown)  # whole functions and classes, as Python
    assert book.interface(section, REFERENCE_DIR) == "", (
        "only a stub is shown: code that is written, the reference's, never is")


def test_the_interface_keeps_a_classs_stubbed_methods_and_leaves_its_given_ones():
    shown = book.interface(find_section("bilm"))
    assert "class BiLM(" in shown and "def forward(" in shown
    assert "def reverse_within_lengths(" in shown


def test_citations_become_the_bibliographys_links_and_an_unknown_one_is_found():
    text = "its objective (Peters et al. 2018, eq. 1) and a baseline (Ethayarajh 2019)."
    cited = book_text.cite(text)
    assert cited == ("its objective ({cite:alp}`peters2018`, eq. 1) and a baseline "
                     "({cite:alp}`ethayarajh2019`).")
    assert book_text.unlinked_citations(cited) == []
    assert book_text.unlinked_citations("as Smith et al. 2021 found, on 2026-12-04") == [
        "Smith et al. 2021"]
    bibliography = (ROOT / "docs" / "references.bib").read_text()
    assert all(f"{{{key}," in bibliography for key in book_text.CITATIONS.values()), (
        "every cited key is in docs/references.bib")


def test_a_number_typed_in_prose_is_found_unless_glued_coded_named_or_a_constant():
    text = ("The loss ends 0.3 above its floor, {glue:text}`gap:.2f` here, `lr=0.01` in "
            "code, $\\sigma(1) = 0.73$ in maths, Sec. 3.4, Python 3.11, 10 epochs, 8 of 10 "
            "seeds, 8/10 biLMs, 40% of them, and the paper's 69.0.\n\n```\nloss 1.107\n```")
    assert book_text.typed_numbers(text) == ["0.3", "8/10", "40%"]
    assert all(why for why in book_text.CONSTANTS.values()), "each constant says what it is"


def test_a_size_of_the_corpus_typed_before_what_it_counts_is_found_in_any_spelling():
    sizes = results_text.corpus_sizes()
    training, words, openings, endings = (
        sizes[k] for k in ("training sentences", "words", "openings", "endings"))
    spelled = book_text._NUMBER_WORDS[endings].capitalize()
    text = (f"It trains on the {training} training sentences, {words} words in all. "
            f"{spelled} endings, {openings} openings.")
    assert book_text.corpus_sizes_typed(text) == [
        f"{training} training sentences", f"{words} words", f"{spelled} endings",
        f"{openings} openings"]
    assert book_text.typed_numbers(text) == book_text.corpus_sizes_typed(text), (
        "a page's typed numbers hold the corpus's sizes")
    per_sense = sizes["sentences a sense"]
    assert book_text.corpus_sizes_typed(
        f"batches of {per_sense} sentences, then {per_sense} sentences per sense") == [
        f"{per_sense} sentences per sense"], "a size of a sense counts with the sense named"


def test_a_corpus_size_is_not_typed_in_a_generated_block_a_quotation_or_code():
    training = results_text.corpus_sizes()["training sentences"]
    typed = f"{training} training sentences"
    text = (f"<!-- table: corpus_read -->\n{typed}.\n<!-- /table -->\n\nA learner read "
            f"\"the\n{typed}\" as one. `print('{typed}')`\n")
    assert book_text.corpus_sizes_typed(text) == []
    assert book_text.corpus_sizes_typed(f"# the {training}\n# training sentences",
                                        markdown=False) == [typed], (
        "in Python a comment's lines are one sentence, and a string is prose too")


# The course's prose that is not a page of the book: what learners, instructors and
# maintainers read, and the sources of the notebooks.
PROSE = sorted({*ROOT.glob("*.md"), *(ROOT / "docs").glob("*.md"), ROOT / "course.toml",
                *(ROOT / "course").glob("*.toml"), *(ROOT / "notebooks").glob("*.py"),
                *(ROOT / "solutions").glob("*.py"), *(ROOT / "course").glob("*.py"),
                *(ROOT / "tools").rglob("*.py"), *(ROOT / "grading").rglob("*.py")})


def test_no_prose_types_a_size_of_the_corpus():
    typed = {str(path.relative_to(ROOT)): found for path in PROSE
             if (found := book_text.corpus_sizes_typed(path.read_text(),
                                                       markdown=path.suffix == ".md"))}
    assert typed == {}, (
        "these type the corpus's sizes, which go stale when course/corpus.py changes: say "
        "what they mean without the number, print or glue it in a notebook, or generate it "
        "in a page (tools/results_text.py's corpus_read, python -m tools.results write)")


def test_a_number_in_a_generated_block_is_not_typed_but_one_outside_it_or_in_another_is():
    text = ("The held-out loss ends 0.3 above its floor.\n\n<!-- table: pretraining -->\n"
            "| loss | 1.430 ± 0.012 |\n\nIt ends 0.344 above it.\n<!-- /table -->\n\n"
            "<!-- table: by_hand -->\nabout 0.25\n<!-- /table -->\n")
    assert book_text.typed_numbers(text) == ["0.3", "0.25"], (
        "a block that tools.results writes is generated; one it does not write is prose")


@pytest.mark.parametrize("name", book.DOCS)
def test_no_docs_page_types_a_measured_number_into_its_prose(name):
    text = book_text.cite((ROOT / "docs" / name).read_text())
    assert book_text.typed_numbers(text) == [], (
        f"docs/{name} types these into sentences: generate them from the results files or "
        "the corpus (tools/results_text.py, python -m tools.results write) or say it without "
        "them")


def test_a_figures_name_and_caption_come_from_the_comment_that_opens_its_cell():
    source = ("# Figure (fig-loss-curve): The loss per epoch, on the training\n"
              "# and the held-out sentences.\ndisplay(figure)")
    assert figure_of(source) == ({"name": "fig-loss-curve", "caption": "The loss per epoch, "
                                  "on the training and the held-out sentences."}, 2)
    assert figure_of("display(figure)") is None


def test_the_explore_page_says_what_separates_the_two_bilms_not_the_colours():
    at_layer_2 = book_explore.caption(2, {"pre-trained": 0.25, "untrained": 0.03}, 32)
    assert "0.250 for the pre-trained biLM against 0.030 for its untrained control" in (
        at_layer_2) and "pre-training adds +0.220" in at_layer_2
    assert "one vector in both biLMs" in book_explore.caption(0, {}, 32)
    data = book_explore.explore_data(made_up=True)
    views = data["views"]["bank"]["0"]
    assert set(views[1]) == {"pre-trained", "untrained", "caption"}, "both biLMs, one view"
    page = book_explore.page(data)
    assert "first principal component" in page and "second principal component" in page
    assert json.dumps(data, separators=(",", ":")) in page
    assert not re.search(r"https?://", page), "nothing is fetched"
