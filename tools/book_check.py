"""Open a built course book in headless chromium and say, as JSON, what a reader meets.

    .venv-book/bin/python tools/book_check.py BOOK_DIR [--width 88] [--forbid TEXT]
                                              [--screenshots DIR] [--chromium PATH]

It serves BOOK_DIR on 127.0.0.1 and opens each of its pages (but the index, search and
genindex): every request is routed, and one for any other host is aborted and recorded. Per
page, its facts: its title, the maths MathJax typeset, the images and figures, the Explore
page's points and whether its controls redraw it. Over the whole book, its defects, each
kind a list of `page: what`:

    broken internal links      a link to a page or an anchor that the book lacks
    raw Markdown tables        a table left as pipes and dashes in a paragraph
    figures shown as text      a figure's repr (`<Figure size ...>`) where its image belongs
    figures missing            an image that does not load
    figures shrunk             an output's image shown narrower than it was drawn
    figures without a number   an output's image that is not a numbered, captioned figure
    output lines too wide      an output line longer than --width characters
    lines cut by the column    a block (code, output, table) wider than the column shows
    TeX left raw               `$$` or `\\(` in a page's text
    roles left raw             `{glue...}`, `{cite...}`, `{numref}`, `{eq}` in a page's text
    machine paths              --forbid (the repository's folder) in a page
    requests off the machine   a request for another host
    requests failed            a request on the machine that failed

Only the standard library and playwright: it runs in the book's environment, not the
course's.
"""

from __future__ import annotations

import argparse
import functools
import html
import http.server
import json
import re
import sys
import threading
from pathlib import Path
from urllib.parse import unquote, urlsplit

from playwright.sync_api import sync_playwright

LOCAL = {"127.0.0.1", "localhost"}
SKIPPED = {"index.html", "search.html", "genindex.html"}
KINDS = ("broken internal links", "raw Markdown tables", "figures shown as text",
         "figures missing", "figures shrunk", "figures without a number",
         "output lines too wide", "lines cut by the column", "TeX left raw", "roles left raw",
         "machine paths", "requests off the machine", "requests failed")
# A page without maths loads no MathJax; one with it is read once MathJax has typeset it.
MATHJAX_DONE = """() => !document.querySelector('script[src*="mathjax"]') || (
    window.MathJax && MathJax.startup && MathJax.startup.promise
    ? MathJax.startup.promise.then(() => true) : false)"""
PAGE_FACTS = """() => {
  const main = document.querySelector('main') || document.body;
  const prose = main.cloneNode(true);  // what is not code: a role shown as code is meant
  prose.querySelectorAll('pre, code').forEach((el) => el.remove());
  document.body.appendChild(prose);
  const text = prose.innerText;
  prose.remove();
  const outputs = Array.from(main.querySelectorAll('.cell_output img'));
  const first = (el) => (el.innerText || '').split('\\n')[0].slice(0, 60);
  return {
    title: document.title,
    maths: document.querySelectorAll('mjx-container').length,
    raw_tex: text.split('\\n').filter(l => l.includes('$$') || l.includes('\\\\(')).length,
    raw_roles: text.split('\\n').filter(l => /\\{(glue|cite|numref|eq)[^}]*\\}/.test(l))
                   .map(l => l.slice(0, 60)),
    text: text.length,
    images: outputs.length,
    broken_images: Array.from(main.querySelectorAll('img'))
                     .filter(i => !i.complete || i.naturalWidth === 0).map(i => i.src),
    shrunk_images: outputs.filter(i => i.naturalWidth > i.getBoundingClientRect().width + 1)
                     .map(i => `${i.naturalWidth} px shown at ${
                                  Math.round(i.getBoundingClientRect().width)}`),
    unnumbered_images: outputs.filter(i => !(i.closest('figure') &&
                           i.closest('figure').querySelector('.caption-number'))).length,
    figures: Array.from(main.querySelectorAll('figure .caption-number'))
               .map(c => c.innerText.trim()),
    cut: Array.from(main.querySelectorAll('pre, table, svg'))
           .filter(el => el.scrollWidth > el.clientWidth + 1 ||
                         el.getBoundingClientRect().right > main.getBoundingClientRect().right + 1)
           .map(first),
    explore_points: document.querySelectorAll('#ex-plot .ex-point').length,
  };
}"""
# On the Explore page: move the layer control, and say whether the picture and its caption
# followed.
EXPLORE_MOVED = """() => {
  const layer = document.getElementById('ex-layer');
  const before = document.getElementById('ex-caption').textContent;
  layer.value = layer.value === '0' ? '2' : '0';
  layer.dispatchEvent(new Event('input'));
  return {caption_changed: document.getElementById('ex-caption').textContent !== before,
          points: document.querySelectorAll('#ex-plot .ex-point').length,
          caption: document.getElementById('ex-caption').textContent};
}"""
_HREF = re.compile(r'<a\s[^>]*href="([^"]*)"')
_ID = re.compile(r'\sid="([^"]*)"')
_PARAGRAPH = re.compile(r"<p>(.*?)</p>", re.DOTALL)
_RAW_TABLE = re.compile(r"\|\s*:?[-\u2013\u2014]+:?\s*\|")
_OUTPUT = re.compile(r'<div class="cell_output[^"]*"[^>]*>(.*?)</div>\s*</div>', re.DOTALL)
_PRE = re.compile(r"<pre[^>]*>(.*?)</pre>", re.DOTALL)
_TAG = re.compile(r"<[^>]+>")


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args) -> None:  # no line per request
        pass


def pages_of(book: Path) -> list[str]:
    """The book's pages, relative to it: every .html but the theme's and the indices."""
    return sorted(str(p.relative_to(book)) for p in book.rglob("*.html")
                  if p.name not in SKIPPED and "_static" not in p.parts
                  and "_sources" not in p.parts)


def source_defects(book: Path, width: int, forbid: str | None) -> dict[str, list[str]]:
    """The defects that each page's HTML shows as it is: links, tables, figure reprs, output
    lines, machine paths."""
    found: dict[str, list[str]] = {kind: [] for kind in KINDS}
    ids: dict[Path, set[str]] = {}

    def anchors(path: Path) -> set[str]:
        if path not in ids:
            ids[path] = set(_ID.findall(path.read_text(errors="replace")))
        return ids[path]

    for name in pages_of(book):
        page = book / name
        text = page.read_text(errors="replace")
        for href in _HREF.findall(text):
            parts = urlsplit(html.unescape(href))
            if parts.scheme or parts.netloc:
                continue
            target = (page.parent / unquote(parts.path)).resolve() if parts.path else page
            if not target.exists() or (parts.fragment and target.suffix == ".html"
                                       and parts.fragment not in anchors(target)):
                found["broken internal links"].append(f"{name}: {href}")
        for paragraph in _PARAGRAPH.findall(text):
            plain = html.unescape(_TAG.sub("", paragraph))
            if _RAW_TABLE.search(plain):
                found["raw Markdown tables"].append(f"{name}: {plain[:60]!r}")
        plain_page = html.unescape(_TAG.sub("", text))
        if "<Figure size" in plain_page:
            found["figures shown as text"].append(name)
        for output in _OUTPUT.findall(text):
            for block in _PRE.findall(output):
                found["output lines too wide"] += [
                    f"{name}: {line[:60]!r} ({len(line)} characters)"
                    for line in html.unescape(_TAG.sub("", block)).splitlines()
                    if len(line) > width]
        if forbid and forbid in plain_page:
            found["machine paths"].append(f"{name}: {forbid}")
    return found


def check(book: Path, width: int, forbid: str | None = None,
          chromium: str = "/usr/bin/chromium", screenshots: Path | None = None) -> dict:
    """{"pages": {name: facts}, "defects": {kind: ["page: what", ...]}}."""
    defects = source_defects(book, width, forbid)
    server = http.server.ThreadingHTTPServer(
        ("127.0.0.1", 0), functools.partial(_Quiet, directory=str(book)))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    base = f"http://127.0.0.1:{server.server_address[1]}"

    def route(request_route) -> None:
        url = request_route.request.url
        parts = urlsplit(url)
        if parts.scheme in ("data", "blob") or parts.hostname in LOCAL:
            request_route.continue_()
        else:
            defects["requests off the machine"].append(url)
            request_route.abort()

    def failed(what: str, url: str) -> None:
        if urlsplit(url).hostname in LOCAL and not url.endswith("/favicon.ico"):
            defects["requests failed"].append(f"{url} ({what})")

    found = {}
    try:
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=chromium, headless=True,
                                                 args=["--no-sandbox"])
            page = browser.new_page(viewport={"width": 1280, "height": 900})
            page.route("**/*", route)
            page.on("requestfailed", lambda r: failed(str(r.failure), r.url))
            page.on("response", lambda r: failed(f"HTTP {r.status}", r.url)
                    if r.status >= 400 else None)
            for name in pages_of(book):
                page.goto(f"{base}/{name}", wait_until="load")
                page.wait_for_function(MATHJAX_DONE, timeout=20_000)
                facts = found[name] = page.evaluate(PAGE_FACTS)
                if facts["explore_points"]:
                    facts["explore_moved"] = page.evaluate(EXPLORE_MOVED)
                defects["TeX left raw"] += [name] * facts["raw_tex"]
                defects["roles left raw"] += [f"{name}: {line}" for line in facts["raw_roles"]]
                defects["figures missing"] += [f"{name}: {src}" for src in facts["broken_images"]]
                defects["figures shrunk"] += [f"{name}: {what}" for what in facts["shrunk_images"]]
                defects["figures without a number"] += [name] * facts["unnumbered_images"]
                defects["lines cut by the column"] += [f"{name}: {line!r}"
                                                       for line in facts["cut"]]
                if screenshots is not None:
                    screenshots.mkdir(parents=True, exist_ok=True)
                    page.screenshot(path=str(screenshots / (name.replace("/", "_") + ".png")),
                                    full_page=True)
            browser.close()
    finally:
        server.shutdown()
    return {"pages": found, "defects": defects}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("book", type=Path)
    parser.add_argument("--width", type=int, default=88,
                        help="the widest output line, in characters (default 88)")
    parser.add_argument("--forbid", default=None, help="text no page may hold (a path)")
    parser.add_argument("--chromium", default="/usr/bin/chromium")
    parser.add_argument("--screenshots", type=Path, default=None)
    args = parser.parse_args(argv)
    print(json.dumps(check(args.book, args.width, args.forbid, args.chromium,
                           args.screenshots), indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
