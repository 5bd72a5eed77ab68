"""What the course book does to its pages' prose, and what it checks of it.

* Citations. The notebooks cite as a reader writes, "(Peters et al. 2018, Sec. 3.1)", which
  reads whole in Jupyter, where a Sphinx role would show raw; the book turns each one it
  knows (`CITATIONS`) into sphinxcontrib-bibtex's role, linked to the bibliography page
  (docs/references.bib), and `unlinked_citations` finds any it does not know.
* Numbers. A number in a sentence that a run computed is written into it with Jupyter
  Book's glue ({glue:text}`name:.2f`, kept by `analyses.notebook.glue`); a number typed in
  prose is either a size or a name (an integer: section 3, 10 epochs) or one of
  `CONSTANTS`, each with what it is. A Markdown page (docs/analysis.md) has no glue: its
  measured numbers are in blocks that `tools.results` generates from the results files,
  tables and sentences alike, between `<!-- table: NAME -->` and `<!-- /table -->`, which
  `make check` keeps equal to what the results give. `typed_numbers` finds any other: a
  decimal, a share or a fraction typed into a sentence, or into a block that no results
  file writes, is a measurement that no run keeps true.
* The corpus's sizes. A size of the toy corpus (its sentences, its words, a sense's
  openings: `results_text.corpus_sizes`) typed into prose goes stale when the corpus
  changes: a page says it in a generated block (`corpus_read`), a notebook prints or glues
  it, and other prose says what it means without it. `corpus_sizes_typed` finds one typed
  before what it counts, in a page (`typed_numbers` too) or in the course's other prose.
"""

from __future__ import annotations

import functools
import re

from . import results_text
from .results import GENERATED, TABLE

# The works the course cites, as its prose names them: the bibliography's keys.
CITATIONS = {
    "Peters et al. 2018": "peters2018",
    "Gardner et al. 2018": "gardner2018",
    "Chelba et al. 2014": "chelba2014",
    "Srivastava et al. 2015": "srivastava2015",
    "Ethayarajh 2019": "ethayarajh2019",
    "Zhang and Bowman 2018": "zhang2018",
    "Hewitt and Liang 2019": "hewitt2019",
    "Miller 1995": "miller1995",
    "Tenney et al. 2019": "tenney2019",
    "Liu et al. 2019": "liu2019",
}
# "Peters et al. 2018", "Zhang and Bowman 2018", "Ethayarajh 2019": a citation as prose writes it.
CITATION = re.compile(r"\b[A-Z][a-z]+(?: et al\.| and [A-Z][a-z]+)? (?:19|20)\d\d(?![\w-])")

# The decimals, shares and fractions that prose may type, each a constant of the paper or of
# the course, never a run's result. Reviewed: add one only with what it is.
CONSTANTS = {
    "69.0": "the paper's WSD F1 with the biLM's second layer (Table 5)",
    "67.4": "the paper's WSD F1 with its first layer (Table 5)",
    "97.3": "the paper's POS accuracy with the biLM's first layer (Table 6)",
    "96.8": "the paper's POS accuracy with its second layer (Table 6)",
    "0.005": "the recipe's learning rate (section 4's DEFAULT_RECIPE)",
    "0.001": "the seed notebook's learning rate (section 4's SEED_RECIPE)",
    "0.1": "the gap that the course's targets count (analyses.targets.MIN_GAP)",
    "0.9": "the 1-NN and mix accuracy that the course's targets count (analyses.targets)",
    "0.5": "chance between a word's two senses",
    "95%": "the confidence of every interval (analyses.real_findings)",
    "8.5": "the notebook's width in inches, which every figure fits (analyses.plots)",
}

_CODE = re.compile(r"```.*?```|~~~.*?~~~|`[^`]*`", re.DOTALL)
_MATHS = re.compile(r"\$\$.*?\$\$|\$[^$\n]*\$", re.DOTALL)
_ROLE = re.compile(r"\{[a-z:]+\}`[^`]*`")
_LINK_TARGET = re.compile(r"\]\([^)]*\)|<[^>\n]*>")
# A name that carries a number: a part of the paper or of the course, a version.
_NAMED = re.compile(r"\b(?:Sec(?:tions?|\.)|Table|Fig(?:ure|\.)|eq(?:uation|\.)|Python|WordNet)"
                    r"\s+\d+(?:\.\d+)*")
_MEASURED = re.compile(r"(?<![\w.])(?:\d+\.\d+|\d+(?:\.\d+)?\s?%|\d+/\d+)(?![\w/])")
# A quotation, on one paragraph: what a page or a learner said once, a record (docs/learners.md).
_QUOTED = re.compile(r'"(?:[^"\n]|\n(?!\s*\n))*"')
# A word, hyphens within it ("held-out"): a run of words splits into them one way only, so
# that a pattern of a few of them never backtracks through a line of dashes.
_WORD = r"[\w']+(?:-[\w']+)*"
_COMMENT = re.compile(r"^[ \t]*#+ ?", re.MULTILINE)
_NUMBER_WORDS = ("zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine",
                 "ten", "eleven", "twelve", "thirteen", "fourteen", "fifteen", "sixteen",
                 "seventeen", "eighteen", "nineteen", "twenty")


def cite(text: str) -> str:
    """`text` with each citation of `CITATIONS` as sphinxcontrib-bibtex's role ("Peters et
    al., 2018", linked), the parentheses around it kept: (Peters et al. 2018, eq. 1)."""
    for written, key in CITATIONS.items():
        text = text.replace(written, f"{{cite:alp}}`{key}`")
    return text


def prose(text: str) -> str:
    """Markdown `text` without what is not a sentence's words: code, maths, roles (a glued
    number, a citation, a reference), link targets and HTML tags."""
    for pattern in (_CODE, _MATHS, _ROLE, _LINK_TARGET):
        text = pattern.sub(" ", text)
    return text


def unlinked_citations(text: str) -> list[str]:
    """The citations left as plain text in Markdown `text` (after `cite`)."""
    return CITATION.findall(prose(text))


def handwritten(text: str) -> str:
    """Markdown `text` without its generated blocks: those between `<!-- table: NAME -->` and
    `<!-- /table -->` whose NAME is one that `tools.results` writes (`GENERATED`). A block
    under any other name is kept, to be read as the prose it is."""
    return TABLE.sub(lambda block: "\n" if block["name"] in GENERATED else block[0], text)


def typed_numbers(text: str) -> list[str]:
    """The measurements typed into Markdown `text`'s sentences: every decimal, share or
    fraction that is neither generated (`handwritten`), nor glued, nor in code or maths, nor
    part of a name (Sec. 3.4, Python 3.11), nor one of `CONSTANTS`; then every size of the
    corpus typed before what it counts, outside a quotation (`corpus_sizes_typed`)."""
    words = _NAMED.sub(" ", prose(handwritten(text)))
    return ([number for number in _MEASURED.findall(words) if number not in CONSTANTS]
            + corpus_sizes_typed(text))


def _size(*sizes: int) -> str:
    """A regular expression for any of `sizes`, in digits or, up to twenty, in words."""
    return "|".join(f"{n}|{_NUMBER_WORDS[n]}" if n < len(_NUMBER_WORDS) else str(n)
                    for n in sorted(set(sizes), reverse=True))


@functools.cache
def _typed_sizes() -> tuple[re.Pattern, tuple[re.Pattern, ...]]:
    """Where a size of the corpus may start (any of them, alone), and what makes it one: the
    size, then at most `gap` words (0 where a number alone is common), then what it counts.
    A size of a sense counts only with the sense named after it ("N sentences per sense"),
    since "batches of 16 sentences" are the recipe's."""
    s = results_text.corpus_sizes()
    a_sense = r"[\s,]+(?:per|a|of a|each|every|of each|of every|for each|for every)\s+sense\b"
    counts = (  # (sizes, what they count, gap, what follows)
        ((s["training sentences"], s["held-out sentences"], s["sentences"]), "sentences|ones",
         4, ""),
        ((s["sentences a sense"], s["training sentences a sense"],
          s["held-out sentences a sense"]), "sentences|ones", 2, a_sense),
        ((s["words"], s["words the corpus lacks"]), "words", 1, ""),
        ((s["target words"],), "(?:polysemous |target )?words", 0, ""),
        ((s["target words"] * s["senses a word"],), "senses", 0, ""),
        ((s["openings"], s["endings"]), "openings|endings", 0, ""),
        ((s["same-sense training pairs"], s["different-sense training pairs"],
          s["same-sense held-out pairs"], s["different-sense held-out pairs"]),
         "pairs|same-sense|different-sense", 1, ""))
    every = [size for sizes, *_ in counts for size in sizes]
    return re.compile(rf"(?<![\w.,/-])(?:{_size(*every)})\b", re.IGNORECASE), tuple(
        re.compile(rf"(?:{_size(*sizes)})(?:\s+{_WORD}){{0,{gap}}}?\s+(?:{counted})\b{then}",
                   re.IGNORECASE) for sizes, counted, gap, then in counts)


def corpus_sizes_typed(text: str, markdown: bool = True) -> list[str]:
    """The sizes of the corpus (`results_text.corpus_sizes`) typed into `text` before what
    they count, each as it is typed (the size, the words between, what it counts), in the
    order they come.

    Args:
        text: Markdown, read without its generated blocks, code, maths and quotations; or,
            with `markdown` False, Python or TOML, read whole but for the `#` that opens a
            comment's line: a size typed into a string or a docstring is typed too.
    """
    text = _QUOTED.sub(" ", prose(handwritten(text))) if markdown else _COMMENT.sub("", text)
    start, typed = _typed_sizes()
    found, end = [], 0
    for number in start.finditer(text):  # each pattern tried only where a size starts: fast
        match = next((m for pattern in typed if number.start() >= end
                      and (m := pattern.match(text, number.start()))), None)
        if match:
            found.append(" ".join(match[0].split()))
            end = match.end()
    return found
