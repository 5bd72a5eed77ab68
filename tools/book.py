"""`make book`: the course book, a static site that reads offline, and its check.

    python -m tools.book [OUT]                   # default build/book: every notebook run now
    python -m tools.book OUT --executed DIR      # the notebooks already executed in DIR

It holds the companion notebooks executed on the reference (`analyses.notebook.execute`, their
outputs and figures kept), the docs, the Explore page (tools/book_explore.py) and the
references (docs/references.bib), built by Jupyter Book 1.x from the book's own environment,
`.venv-book` (requirements/book.lock; version 2 fetches its theme from the internet). Each
section's page opens with what the learner writes there, as the stub in `exercises/` states
it (`interface`), never the reference's code. The maths is typeset by MathJax 3, taken from
its npm package (`npm pack`, checked against its digest) and copied into the build, so that
no page asks the internet for anything.

`--executed` builds from notebooks executed already (`make check` builds its book from the
run its notebook tests made, not from a second one), with the Explore page on made-up views
(its biLMs take a minute to train).

Once built, the book checks itself, and any defect fails the build: in headless chromium,
every page as a reader meets it (tools/book_check.py, in the book's environment: links,
tables, figures, lines cut, requests off the machine), and in its sources, every number
typed into a sentence and every citation left unlinked (tools/book_text.py).

The sources are written to `OUT-src/`: `_config.yml`, `_toc.yml`, the pages.
"""

from __future__ import annotations

import argparse
import ast
import hashlib
import json
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path

import nbformat

from analyses.notebook import execute, notebook_names, section_of
from course.registry import (
    BUILD_DIR,
    EXERCISES_DIR,
    OUTPUT_WIDTH,
    REFERENCE_DIR,
    ROOT,
    STUB_MESSAGE,
    Section,
    shown,
)

from . import book_explore, book_text
from .notebooks import figure_of

BOOK_VENV = ROOT / ".venv-book"
BOOK_PYTHON = BOOK_VENV / "bin" / "python"
JUPYTER_BOOK = BOOK_VENV / "bin" / "jupyter-book"
CHECKER = Path(__file__).with_name("book_check.py")
DEFAULT_OUT = BUILD_DIR / "book"
MATHJAX = "mathjax@3.2.2"  # npm's package: es5/tex-mml-chtml.js and its fonts
MATHJAX_SHA256 = "1b9c0a1c44df864e915690558e72adb9cc5203360daefd385084ced3b6c64c09"
MATHJAX_CACHE = BUILD_DIR / "cache" / "mathjax-3.2.2.tgz"
MATHJAX_PATH = "mathjax/tex-mml-chtml.js"  # under _static/ once built
# MathJax's folder and the book's stylesheet go to the sources' _assets/, Sphinx's
# html_static_path, copied to the site's _static/: Jupyter Book would put every .js of a
# folder named _static in each page.
ASSETS = "_assets"
STYLESHEET = "book.css"
DOCS = ("learners.md", "notebooks.md", "analysis.md", "design.md")  # docs/, in this order
BIBLIOGRAPHY = ROOT / "docs" / "references.bib"

CONFIG = """\
# Written by tools/book.py: do not edit.
title: "{title}"
author: the ELMo course
copyright: "the ELMo course"
only_build_toc_files: true
execute:
  execute_notebooks: "off"  # executed on the reference by tools/book.py, outputs kept
bibtex_bibfiles: [references.bib]
html:
  use_repository_button: false
  use_issues_button: false
  use_edit_page_button: false
  use_download_button: false
  use_multitoc_numbering: false
  comments:
    hypothesis: false
    utterances: false
launch_buttons:
  notebook_interface: none
  binderhub_url: ""
  jupyterhub_url: ""
  thebe: false
  colab_url: ""
parse:
  myst_enable_extensions: [dollarmath, amsmath, colon_fence]
sphinx:
  config:
    mathjax_path: {mathjax_path}
    html_static_path: [{assets}]
    html_css_files: [{stylesheet}]
    html_theme_options:
      search_bar_text: Search the course...
    # no font, script or image from the internet: the theme's own are in the build
    html_js_files: []
    # a Markdown output (a table) is read as the pages are, links to notebooks included
    nb_render_markdown_format: myst
    nb_merge_streams: true
    highlight_language: none  # a fence without a language is text, not Python
    numfig: true
    numfig_format: {{figure: "Figure %s", table: "Table %s"}}
    bibtex_reference_style: author_year
    bibtex_default_style: plain
    suppress_warnings: [myst.header]
"""

# The article takes the page's width, its contents ("On this page") behind the header's
# button: a figure, 8.5 inches at 100 dpi (analyses/plots.py), shows at its full width, and an
# output line of OUTPUT_WIDTH characters whole. A longer line of code or of a terminal's
# output in the docs wraps at the column rather than running off it.
STYLESHEET_TEXT = """\
/* Written by tools/book.py. */
#pst-secondary-sidebar { display: none; }
button.sidebar-toggle.secondary-toggle { display: inline-block !important; }
.bd-main .bd-content .bd-article-container { max-width: none; }
main pre { white-space: pre-wrap; overflow-wrap: anywhere; }
"""

LANDING = """\
# {title}

ELMo (Peters et al. 2018, *Deep contextualized word representations*) rebuilt step by
step on a toy corpus where context decides a word's sense: a biLM pre-trained on raw text,
every layer read out, what the layers know of context, and a task's learned mix of them,

$$\\mathrm{{ELMo}}_k = \\gamma \\sum_{{j=0}}^{{L}} s_j \\, h_{{k,j}} .$$ (eq-elmo)

Sections 1 to 4 pre-train the biLM, section 5 reads its layers $h_{{k,j}}$ out, section 6
measures what they know of a word's sense, and section 7 learns the weights $s_j$ and
$\\gamma$ of {{eq}}`eq-elmo` for two toy tasks.

This book is the course's notebooks as the reference runs them, with every output and
figure, and its docs. Each section's page opens with what you write there, as your stub
states it, and ends with that section's checks. It reads offline: its maths is typeset by a
copy of MathJax that ships with it. To run the notebooks on your own code, open them in
Jupyter from the course's repository (`make lab`, see [the notebooks](notebooks.md)). The
works it cites are on the [references](references.md) page.
"""

REFERENCES = """\
# References

The works the course cites, each linked from where it is cited.

```{bibliography}
```
"""

def mathjax(static: Path) -> Path:
    """MathJax 3's `es5/` folder copied to `static/mathjax/`, from npm's package of it
    (fetched once with `npm pack` into build/cache, and checked against its digest).

    Raises:
        RuntimeError: npm is missing, or the package is not the one pinned.
    """
    if not MATHJAX_CACHE.exists():
        if shutil.which("npm") is None:
            raise RuntimeError("the book needs npm once, to fetch MathJax (`npm pack "
                               f"{MATHJAX}`); install node and npm")
        MATHJAX_CACHE.parent.mkdir(parents=True, exist_ok=True)
        subprocess.run(["npm", "pack", MATHJAX, "--silent"], cwd=MATHJAX_CACHE.parent,
                       check=True, capture_output=True)
    digest = hashlib.sha256(MATHJAX_CACHE.read_bytes()).hexdigest()
    if digest != MATHJAX_SHA256:
        raise RuntimeError(f"{shown(MATHJAX_CACHE)} is not {MATHJAX} as pinned (sha256 "
                           f"{digest}); remove it to fetch it again")
    target = static / "mathjax"
    shutil.rmtree(target, ignore_errors=True)
    with tarfile.open(MATHJAX_CACHE) as archive:
        for member in archive.getmembers():
            if member.isfile() and member.name.startswith("package/es5/"):
                destination = target / member.name.removeprefix("package/es5/")
                destination.parent.mkdir(parents=True, exist_ok=True)
                destination.write_bytes(archive.extractfile(member).read())
    return target



def interface(section: Section, exercises: Path = EXERCISES_DIR) -> str:
    """What a learner writes in `section`, as their stub states it: each function that raises
    the stub's NotImplementedError, whole (its signature, docstring, given lines and the
    raise), and of a class with such methods its first line, its docstring and those
    methods. Read from `exercises/`, never from the reference."""
    source = (exercises / section.file_name).read_text()
    lines = source.splitlines()

    def text(node: ast.AST) -> str:
        first = min([node.lineno, *(d.lineno for d in getattr(node, "decorator_list", []))])
        return "\n".join(lines[first - 1: node.end_lineno])

    def stubbed(node: ast.AST) -> bool:
        return any(int(m["number"]) == section.number
                   for m in STUB_MESSAGE.finditer(ast.get_source_segment(source, node) or ""))

    parts = []
    for node in ast.parse(source).body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and stubbed(node):
            parts.append(text(node))
        elif isinstance(node, ast.ClassDef) and stubbed(node):
            header = lines[node.lineno - 1: node.body[0].lineno - 1]
            docstring = node.body[0] if isinstance(node.body[0], ast.Expr) and isinstance(
                getattr(node.body[0], "value", None), ast.Constant) else None
            kept = [text(docstring)] if docstring is not None else []
            kept += [text(member) for member in node.body
                     if isinstance(member, ast.FunctionDef) and stubbed(member)]
            parts.append("\n".join(header) + "\n" + "\n\n".join(kept))
    return "\n\n\n".join(parts)


def interface_cell(section: Section) -> nbformat.NotebookNode:
    """The Markdown cell that shows a section's `interface`, open, in a dropdown."""
    return nbformat.v4.new_markdown_cell(
        f":::{{dropdown}} What you write: `exercises/{section.file_name}`, as its stub "
        f"states it\n:open:\n\n```python\n{interface(section)}\n```\n:::",
        metadata={"tags": ["interface"]})


def _for_the_book(path: Path) -> None:
    """The executed notebook at `path` as the book shows it: without its switch and root
    cell (a reader needs neither, nor their output, which names the machine's folders), with
    what the learner writes after its introduction, its citations linked, and each figure's
    caption under the figure rather than in its cell's code."""
    notebook = nbformat.read(path, as_version=4)
    for cell in notebook.cells[:4]:
        if cell.cell_type == "code" and (cell.source.startswith("IMPL = ")
                                         or "course.toml" in cell.source):
            cell.metadata.setdefault("tags", []).append("remove-cell")
    for cell in notebook.cells:
        if cell.cell_type == "markdown":
            cell.source = book_text.cite(cell.source)
        elif (figure := figure_of(cell.source)) is not None:  # its caption is the figure's
            cell.source = "\n".join(cell.source.splitlines()[figure[1]:])
    section = section_of(path.name)
    if section is not None:
        notebook.cells.insert(1, interface_cell(section))
    nbformat.write(notebook, path)


def sources(src: Path, executed: Path | None = None, report=print) -> list[str]:
    """Write the book's sources to `src`: config, table of contents, pages (the notebooks run
    now on the reference, or taken from `executed`); the pages' names, in order."""
    shutil.rmtree(src, ignore_errors=True)
    (src / ASSETS).mkdir(parents=True)
    mathjax(src / ASSETS)
    (src / ASSETS / STYLESHEET).write_text(STYLESHEET_TEXT)
    title = "ELMo, step by step"
    (src / "_config.yml").write_text(CONFIG.format(
        title=title, mathjax_path=MATHJAX_PATH, assets=ASSETS, stylesheet=STYLESHEET))
    shutil.copy(BIBLIOGRAPHY, src / "references.bib")
    (src / "intro.md").write_text(book_text.cite(LANDING.format(title=title)))
    pages = []
    for name in DOCS:
        (src / name).write_text(book_text.cite((ROOT / "docs" / name).read_text()))
        pages.append(Path(name).stem)
    (src / "notebooks").mkdir()
    names = notebook_names()
    if executed is None:
        report(f"running {len(names)} notebooks on the reference, two at a time ...")
        outcomes = execute([(name, shown(REFERENCE_DIR)) for name in names],
                           save_dir=src / "notebooks", report=report)
        failed = [o.notebook for o in outcomes if o.error_cell is not None]
        if failed:
            raise RuntimeError(f"these notebooks failed on the reference: {failed}")
    else:
        missing = [name for name in names if not (executed / name).exists()]
        if missing:
            raise RuntimeError(f"{shown(executed)} lacks the executed {missing}")
        for name in names:
            shutil.copy(executed / name, src / "notebooks" / name)
    for name in names:
        _for_the_book(src / "notebooks" / name)
        pages.append(f"notebooks/{Path(name).stem}")
    report("computing the Explore page's views" + (" (made up)" if executed else
                                                   ", training two more seeds' biLMs ..."))
    (src / "explore.md").write_text(book_explore.page(book_explore.explore_data(
        made_up=executed is not None)))
    (src / "references.md").write_text(REFERENCES)
    pages += ["explore", "references"]
    toc = ["# Written by tools/book.py: do not edit.", "format: jb-book", "root: intro",
           "chapters:", *(f"- file: {page}" for page in pages)]
    (src / "_toc.yml").write_text("\n".join(toc) + "\n")
    return pages


def prose_defects(src: Path) -> dict[str, list[str]]:
    """What the sources' prose holds that it should not: numbers typed into sentences (a
    generated table or sentence aside, `book_text.typed_numbers`) and citations left
    unlinked, `page: what` each."""
    found: dict[str, list[str]] = {"numbers typed in prose": [], "citations not linked": []}
    for page in sorted([*src.glob("*.md"), *src.glob("notebooks/*.ipynb")]):
        name = str(page.relative_to(src).with_suffix(""))
        if page.suffix == ".ipynb":
            cells = nbformat.read(page, as_version=4).cells
            texts = [c.source for c in cells if c.cell_type == "markdown"
                     and "interface" not in c.metadata.get("tags", [])]
        else:
            texts = [page.read_text()]
        for text in texts:
            found["citations not linked"] += [f"{name}: {c}"
                                              for c in book_text.unlinked_citations(text)]
            found["numbers typed in prose"] += [f"{name}: {n}"
                                                for n in book_text.typed_numbers(text)]
    return found


def check(out: Path, screenshots: Path | None = None) -> dict:
    """The built book at `out` as a reader meets it: tools/book_check.py's report, from the
    book's environment (`{"pages": ..., "defects": {kind: [examples]}}`).

    Raises:
        RuntimeError: the checker could not run.
    """
    command = [str(BOOK_PYTHON), str(CHECKER), str(out), "--width", str(OUTPUT_WIDTH),
               "--forbid", str(ROOT)]
    if screenshots is not None:
        command += ["--screenshots", str(screenshots)]
    ran = subprocess.run(command, capture_output=True, text=True, timeout=600)
    if ran.returncode != 0:
        raise RuntimeError(f"the book's check failed to run:\n{ran.stderr[-3000:]}")
    return json.loads(ran.stdout)


def build(out: Path = DEFAULT_OUT, executed: Path | None = None, report=print,
          screenshots: Path | None = None) -> dict:
    """Write the sources next to `out` (`OUT-src`), build them with Jupyter Book into `out`,
    and check the book; the check's report, the sources' defects among its `defects`.

    Raises:
        RuntimeError: no `.venv-book` (`make book` installs it), or the build failed.
    """
    if not JUPYTER_BOOK.exists():
        raise RuntimeError(f"no {shown(JUPYTER_BOOK)}: `make book` installs the book's tools")
    src = out.with_name(out.name + "-src")
    sources(src, executed, report)
    report(f"building the book from {shown(src)}/ with Jupyter Book ...")
    built = subprocess.run([str(JUPYTER_BOOK), "build", str(src), "--builder", "html",
                            "--warningiserror", "--keep-going"],
                           capture_output=True, text=True)
    if built.returncode != 0:
        raise RuntimeError(f"jupyter-book failed:\n{built.stdout[-3000:]}{built.stderr[-3000:]}")
    shutil.rmtree(out, ignore_errors=True)
    shutil.copytree(src / "_build" / "html", out)
    report("checking every page in headless chromium ...")
    found = check(out, screenshots)
    found["defects"].update(prose_defects(src))
    return found


def defects_report(found: dict) -> tuple[int, str]:
    """(how many defects, a line per kind with an example)."""
    lines = [f"  {kind}: {len(where)}" + (f" (e.g. {where[0]})" if where else "")
             for kind, where in found["defects"].items()]
    return sum(len(where) for where in found["defects"].values()), "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tools.book", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("out", nargs="?", type=Path, default=DEFAULT_OUT)
    parser.add_argument("--executed", type=Path, default=None,
                        help="a folder of the notebooks executed on the reference already "
                             "(make run-notebooks ELMO_IMPL=solutions writes build/notebooks)")
    parser.add_argument("--screenshots", type=Path, default=None,
                        help="a folder for a screenshot of each page, as the check sees it")
    args = parser.parse_args(argv)
    out = args.out if args.out.is_absolute() else ROOT / args.out
    try:
        found = build(out, args.executed, screenshots=args.screenshots)
    except RuntimeError as err:
        print(err, file=sys.stderr)
        return 1
    count, lines = defects_report(found)
    print(f"the book: {shown(out / 'index.html')} (open it in a browser; it needs no "
          f"network); its check over {len(found['pages'])} pages: {count} defects\n{lines}")
    return 1 if count else 0


if __name__ == "__main__":
    sys.exit(main())
