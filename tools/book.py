"""`make book`: the course book, a static site that reads offline.

    python -m tools.book [OUT]            # default build/book
    python -m tools.book OUT --small      # a two-page book, for the browser test

It holds the companion notebooks, executed on the reference (`course.notebook.execute`,
their outputs and figures kept), and the docs, built by Jupyter Book 1.x from the book's
own environment, `.venv-book` (requirements/book.lock; version 2 fetches its theme from the
internet). The maths is typeset by MathJax 3, taken from its npm package (`npm pack`,
checked against its digest) and copied into the build, so that no page asks the internet
for anything: `tests/tooling/test_book.py` opens a book in headless chromium and fails on any
request that leaves the machine.

The sources are written to `build/book-src/` (or `OUT-src/`): `_config.yml`, `_toc.yml`,
a landing page, the docs, the executed notebooks.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path

import nbformat

from course.notebook import execute, notebook_names
from course.registry import BUILD_DIR, REFERENCE_DIR, ROOT, shown

BOOK_VENV = ROOT / ".venv-book"
JUPYTER_BOOK = BOOK_VENV / "bin" / "jupyter-book"
DEFAULT_OUT = BUILD_DIR / "book"
MATHJAX = "mathjax@3.2.2"  # npm's package: es5/tex-mml-chtml.js and its fonts
MATHJAX_SHA256 = "1b9c0a1c44df864e915690558e72adb9cc5203360daefd385084ced3b6c64c09"
MATHJAX_CACHE = BUILD_DIR / "cache" / "mathjax-3.2.2.tgz"
MATHJAX_PATH = "mathjax/tex-mml-chtml.js"  # under _static/ once built
# MathJax's folder goes to the sources' _assets/, Sphinx's html_static_path, copied to the
# site's _static/: Jupyter Book would put every .js of a folder named _static in each page.
ASSETS = "_assets"
DOCS = ("learners.md", "notebooks.md", "analysis.md")  # docs/, in this order
EXPLORE_SEEDS = (0, 1, 2)  # the seeds of the interactive figure's biLMs

CONFIG = """\
# Written by tools/book.py: do not edit.
title: "{title}"
author: the ELMo course
copyright: "the ELMo course"
only_build_toc_files: true
execute:
  execute_notebooks: "off"  # executed on the reference by tools/book.py, outputs kept
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
    html_theme_options:
      search_bar_text: Search the course...
    # no font, script or image from the internet: the theme's own are in the build
    html_js_files: []
    suppress_warnings: [myst.header, myst.xref_missing, misc.highlighting_failure]
"""

LANDING = """\
# {title}

ELMo (Peters et al. 2018, *Deep contextualized word representations*) rebuilt step by
step on a toy corpus where context decides a word's sense: a biLM pre-trained on raw text,
every layer read out, what the layers know of context, and a task's learned mix of them,

$$\\mathrm{{ELMo}}_k = \\gamma \\sum_{{j=0}}^{{L}} s_j \\, h_{{k,j}} .$$

This book is the course's notebooks as the reference runs them, with every output and
figure, and its docs. It reads offline: its maths is typeset by a copy of MathJax that
ships with it. To run the notebooks on your own code, open them in Jupyter from the course's
repository (see *The notebooks*).
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


EXPLORE_PAGE = """\
# Explore: one word, layer by layer

Every occurrence of a target word in the corpus (training sentences filled, held-out ones
hollow), coloured by its sense, on the first two principal components of one layer's
vectors. Choose the word, the biLM (pre-trained, or the untrained one of the same shape and
seed, the control), the seed, and the layer: layer 0 is one point (the word alone); a layer
that knows the sense splits the colours. The caption gives each view's numbers. Drawn in
the page itself, from numbers computed when the book was built: nothing is fetched.

```{{raw}} html
<div id="explore" style="font-size: 0.95rem">
  <label>word <select id="ex-word"></select></label>
  <label>biLM <select id="ex-model"></select></label>
  <label>seed <select id="ex-seed"></select></label>
  <label>layer <input type="range" id="ex-layer" min="0" max="2" step="1" value="1">
    <span id="ex-layer-value"></span></label>
  <svg id="ex-plot" viewBox="0 0 640 420" width="100%" style="max-width: 640px"
       role="img" aria-label="the word's occurrences"></svg>
  <p id="ex-caption"></p>
</div>
<script>
const EXPLORE = {data};
(function () {{
  const $ = (id) => document.getElementById(id);
  const colours = ["#1f77b4", "#ff7f0e"];
  function options(select, values) {{
    select.innerHTML = values.map((v) => `<option value="${{v}}">${{v}}</option>`).join("");
  }}
  options($("ex-word"), Object.keys(EXPLORE.views));
  options($("ex-model"), EXPLORE.models);
  options($("ex-seed"), EXPLORE.seeds);
  function draw() {{
    const word = $("ex-word").value, model = $("ex-model").value;
    const seed = $("ex-seed").value, layer = +$("ex-layer").value;
    $("ex-layer-value").textContent = layer;
    const view = EXPLORE.views[word][model][seed][layer];
    const senses = EXPLORE.senses[word];
    const xs = view.points.map((p) => p[0]), ys = view.points.map((p) => p[1]);
    const span = (v) => Math.max(...v) - Math.min(...v);
    // one vector everywhere (layer 0): a single point, in the middle
    const sx = (x) => span(xs) < 1e-6 ? 330 : 60 + (x - Math.min(...xs)) / span(xs) * 540;
    const sy = (y) => span(ys) < 1e-6 ? 200 : 360 - (y - Math.min(...ys)) / span(ys) * 320;
    let svg = '<rect x="40" y="20" width="580" height="360" fill="none" stroke="#999"/>';
    view.points.forEach((p) => {{
      const colour = colours[p[2]];
      svg += `<circle class="ex-point" cx="${{sx(p[0])}}" cy="${{sy(p[1])}}" r="6" ` +
        `stroke="${{colour}}" stroke-width="2" fill="${{p[3] ? "none" : colour}}">` +
        `<title>${{p[4]}}</title></circle>`;
    }});
    senses.forEach((sense, i) => {{
      svg += `<text x="${{60 + 160 * i}}" y="405" fill="${{colours[i]}}" font-size="14">` +
        `&#9679; ${{sense}}</text>`;
    }});
    svg += '<text x="380" y="405" font-size="14" fill="#333">hollow: held out</text>';
    $("ex-plot").innerHTML = svg;
    $("ex-caption").textContent = `'${{word}}', layer ${{layer}} of the ${{model}} biLM, ` +
      `seed ${{seed}}: ` + view.caption;
  }}
  ["ex-word", "ex-model", "ex-seed", "ex-layer"].forEach((id) =>
    $(id).addEventListener("input", draw));
  draw();
}})();
</script>
```
"""


def explore_data(small: bool = False) -> dict:
    """The interactive figure's numbers: per word, biLM ("pre-trained", "untrained"), seed
    and layer, each occurrence's first two principal components [x, y, sense index,
    held out (0/1), sentence], and a caption with the view's share of spread and the
    sense gap. With `small`, two made-up views (no biLM), for the browser test."""
    if small:
        points = [[0.0, 0.0, 0, 0, "a"], [1.0, 0.5, 1, 1, "b"], [0.2, 1.0, 0, 0, "c"]]
        view = {"points": points, "caption": "made up"}
        return {"models": ["pre-trained", "untrained"], "seeds": [0],
                "senses": {"bank": ["finance", "river"]},
                "views": {"bank": {m: {"0": [view, view, view]}
                                   for m in ("pre-trained", "untrained")}}}
    import torch

    from course import analysis, experiments
    from course.corpus import HELDOUT_LABELS, SENSE_LABELS
    from course.pretrained import pretrained
    from tools import reference

    sections = reference()
    labels = [*SENSE_LABELS, *HELDOUT_LABELS]
    held_out = {sentence for sentence, _, _ in HELDOUT_LABELS}
    words = list(dict.fromkeys(word for _, word, _ in labels))
    senses = {w: list(dict.fromkeys(s for _, x, s in labels if x == w)) for w in words}
    word2idx, _ = experiments.vocabulary(sections)
    models = {}
    for seed in EXPLORE_SEEDS:
        trained = (pretrained(sections.package).model if seed == 0
                   else experiments.pretrain(sections, seed, word2idx)[0])
        models["pre-trained", seed] = trained.eval()
        models["untrained", seed] = experiments.untrained_like(sections, seed).model
    views: dict = {w: {"pre-trained": {}, "untrained": {}} for w in words}
    for (name, seed), model in models.items():
        for word in words:
            chosen = [label for label in labels if label[1] == word]
            vectors = analysis.target_vectors(sections, model, word2idx, chosen)
            sense_of = [senses[word].index(sense) for _, _, sense in chosen]
            same = torch.tensor([[a == b for b in sense_of] for a in sense_of])
            layers = []
            for points in vectors:
                centred = points - points.mean(dim=0)
                _, singular, directions = torch.linalg.svd(centred, full_matrices=False)
                xy = (centred @ directions[:2].T).tolist()
                cosines = points @ points.T
                off = ~torch.eye(len(chosen), dtype=torch.bool)
                gap = float(cosines[same & off].mean() - cosines[~same].mean())
                share = float((singular[0] ** 2 / (singular**2).sum()).nan_to_num())
                caption = ("one vector in every sentence (the word without its context)"
                           if singular[0] < 1e-6 else
                           f"the first component holds {share:.0%} of the spread; the sense "
                           f"gap (same-sense minus different-sense cosine) is {gap:.3f}")
                layers.append({"points": [[round(x, 4), round(y, 4), s, int(sent in held_out),
                                           sent] for (x, y), s, (sent, _, _)
                                          in zip(xy, sense_of, chosen, strict=True)],
                               "caption": caption})
            views[word][name][str(seed)] = layers
    return {"models": ["pre-trained", "untrained"], "seeds": list(EXPLORE_SEEDS),
            "senses": senses, "views": views}


def small_notebook() -> nbformat.NotebookNode:
    """A notebook with what the book must show: prose with maths, code, a figure."""
    import base64
    import io

    from matplotlib.figure import Figure

    figure = Figure(figsize=(4, 3))
    ax = figure.subplots()
    ax.plot([0, 1, 2], [2.0, 1.2, 1.0], marker=".")
    ax.set_title("a loss curve")
    png = io.BytesIO()
    figure.savefig(png, format="png")
    code = nbformat.v4.new_code_cell("figure", execution_count=1, outputs=[
        nbformat.v4.new_output("display_data", data={
            "image/png": base64.b64encode(png.getvalue()).decode(),
            "text/plain": "<Figure>"})])
    return nbformat.v4.new_notebook(cells=[
        nbformat.v4.new_markdown_cell(
            "# A notebook\n\nThe objective, inline $\\log p(t_k)$ and displayed:\n\n"
            "$$\\sum_{k=1}^{N} \\log p(t_k \\mid t_1, \\ldots, t_{k-1})$$"),
        code], metadata={"kernelspec": {"name": "python3", "display_name": "Python 3",
                                        "language": "python"}})


def sources(src: Path, small: bool = False, report=print) -> list[str]:
    """Write the book's sources to `src`: config, table of contents, landing page, docs and
    notebooks (executed on the reference unless `small`); the pages' names, in order."""
    shutil.rmtree(src, ignore_errors=True)
    (src / ASSETS).mkdir(parents=True)
    mathjax(src / ASSETS)
    title = "ELMo, step by step" + (" (a small book)" if small else "")
    (src / "_config.yml").write_text(CONFIG.format(title=title, mathjax_path=MATHJAX_PATH,
                                                     assets=ASSETS))
    (src / "intro.md").write_text(LANDING.format(title=title))
    report("computing the interactive figure's views ...")
    (src / "explore.md").write_text(EXPLORE_PAGE.format(
        data=json.dumps(explore_data(small), separators=(",", ":"))))
    pages = []
    if small:
        nbformat.write(small_notebook(), src / "notebook.ipynb")
        (src / "notes.md").write_text("# Notes\n\nA doc page with maths: "
                                      "$s = \\mathrm{softmax}(w)$.\n")
        pages = ["notebook", "notes", "explore"]
    else:
        for name in DOCS:
            text = (ROOT / "docs" / name).read_text()
            (src / name).write_text(text)
            pages.append(Path(name).stem)
        (src / "notebooks").mkdir()
        names = notebook_names()
        report(f"running {len(names)} notebooks on the reference, two at a time ...")
        outcomes = execute([(name, shown(REFERENCE_DIR)) for name in names],
                           save_dir=src / "notebooks", report=report)
        failed = [o.notebook for o in outcomes if o.error_cell is not None]
        if failed:
            raise RuntimeError(f"these notebooks failed on the reference: {failed}")
        for name in names:
            _without_plumbing(src / "notebooks" / name)
            pages.append(f"notebooks/{Path(name).stem}")
        pages.append("explore")
    toc = ["# Written by tools/book.py: do not edit.", "format: jb-book", "root: intro",
           "chapters:", *(f"- file: {page}" for page in pages)]
    (src / "_toc.yml").write_text("\n".join(toc) + "\n")
    return pages


def _without_plumbing(path: Path) -> None:
    """The executed notebook without its switch and root cell's source (a reader of the
    book needs neither), their outputs kept."""
    notebook = nbformat.read(path, as_version=4)
    for cell in notebook.cells[:4]:
        if cell.cell_type == "code" and (cell.source.startswith("IMPL = ")
                                         or "course.toml" in cell.source):
            cell.metadata.setdefault("tags", []).append("remove-cell")
    nbformat.write(notebook, path)


def build(out: Path = DEFAULT_OUT, small: bool = False, report=print) -> Path:
    """Write the sources next to `out` (`OUT-src`), build them with Jupyter Book, and put
    the site in `out`; its index page.

    Raises:
        RuntimeError: no `.venv-book` (`make book` installs it), or the build failed.
    """
    if not JUPYTER_BOOK.exists():
        raise RuntimeError(f"no {shown(JUPYTER_BOOK)}: `make book` installs the book's tools")
    src = out.with_name(out.name + "-src")
    sources(src, small, report)
    report(f"building the book from {shown(src)}/ with Jupyter Book ...")
    built = subprocess.run([str(JUPYTER_BOOK), "build", str(src), "--builder", "html"],
                           capture_output=True, text=True)
    if built.returncode != 0:
        raise RuntimeError(f"jupyter-book failed:\n{built.stdout[-3000:]}{built.stderr[-3000:]}")
    shutil.rmtree(out, ignore_errors=True)
    shutil.copytree(src / "_build" / "html", out)
    return out / "index.html"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tools.book", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("out", nargs="?", type=Path, default=DEFAULT_OUT)
    parser.add_argument("--small", action="store_true", help="a two-page book, for tests")
    args = parser.parse_args(argv)
    out = args.out if args.out.is_absolute() else ROOT / args.out
    try:
        index = build(out, args.small)
    except RuntimeError as err:
        print(err, file=sys.stderr)
        return 1
    print(f"the book: {shown(index)} (open it in a browser; it needs no network)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
