"""Open a built course book in headless chromium and say what each page shows, as JSON.

    .venv-book/bin/python tools/book_check.py BOOK_DIR [--screenshots DIR] [--chromium PATH]

It serves BOOK_DIR on 127.0.0.1 and opens each of its pages (but the index, search and
genindex): every request is routed, and one for any other host is aborted and recorded, so
a page that needs the internet shows as such. Per page: its title, the maths MathJax
typeset (`mjx-container` elements) and any TeX left raw (`$$` or `\\(` in the text), the
images and how many failed to load, the requests that failed. Only the standard library
and playwright: it runs in the book's environment, not the course's.
"""

from __future__ import annotations

import argparse
import functools
import http.server
import json
import sys
import threading
from pathlib import Path
from urllib.parse import urlsplit

from playwright.sync_api import sync_playwright

LOCAL = {"127.0.0.1", "localhost"}
SKIPPED = {"index.html", "search.html", "genindex.html"}
# A page without maths loads no MathJax; one with it is read once MathJax has typeset it.
MATHJAX_DONE = """() => !document.querySelector('script[src*="mathjax"]') || (
    window.MathJax && MathJax.startup && MathJax.startup.promise
    ? MathJax.startup.promise.then(() => true) : false)"""
PAGE_FACTS = """() => ({
  title: document.title,
  maths: document.querySelectorAll('mjx-container').length,
  raw_tex: (document.querySelector('main') || document.body).innerText
             .split('\\n').filter(l => l.includes('$$') || l.includes('\\\\(')).length,
  images: Array.from(document.querySelectorAll('main img')).length,
  broken_images: Array.from(document.querySelectorAll('main img'))
                   .filter(i => !i.complete || i.naturalWidth === 0).length,
  text: (document.querySelector('main') || document.body).innerText.length,
  explore_points: document.querySelectorAll('#ex-plot .ex-point').length,
})"""
# On the interactive figure's page: move the layer control, and say whether the picture and
# its caption followed.
EXPLORE_MOVED = """() => {
  const layer = document.getElementById('ex-layer');
  const before = document.getElementById('ex-caption').textContent;
  layer.value = layer.value === '0' ? '2' : '0';
  layer.dispatchEvent(new Event('input'));
  return {caption_changed: document.getElementById('ex-caption').textContent !== before,
          points: document.querySelectorAll('#ex-plot .ex-point').length};
}"""


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args) -> None:  # no line per request
        pass


def check(book: Path, chromium: str = "/usr/bin/chromium",
          screenshots: Path | None = None) -> dict:
    """{"pages": {name: facts}, "external": [urls aborted], "failed": [requests failed]}."""
    server = http.server.ThreadingHTTPServer(
        ("127.0.0.1", 0), functools.partial(_Quiet, directory=str(book)))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    base = f"http://127.0.0.1:{server.server_address[1]}"
    external: list[str] = []
    failed: list[str] = []

    def route(request_route) -> None:
        url = request_route.request.url
        parts = urlsplit(url)
        if parts.scheme in ("data", "blob") or parts.hostname in LOCAL:
            request_route.continue_()
        else:
            external.append(url)
            request_route.abort()

    pages = sorted(str(p.relative_to(book)) for p in book.rglob("*.html")
                   if p.name not in SKIPPED and "_static" not in p.parts
                   and "_sources" not in p.parts)
    found = {}
    try:
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=chromium, headless=True,
                                                 args=["--no-sandbox"])
            page = browser.new_page(viewport={"width": 1280, "height": 900})
            page.route("**/*", route)
            page.on("requestfailed", lambda r: failed.append(
                f"{r.url} ({r.failure})") if urlsplit(r.url).hostname in LOCAL else None)
            page.on("response", lambda r: failed.append(f"{r.url} (HTTP {r.status})")
                    if r.status >= 400 else None)
            for name in pages:
                page.goto(f"{base}/{name}", wait_until="networkidle")
                page.wait_for_function(MATHJAX_DONE, timeout=20_000)
                page.wait_for_timeout(100)
                found[name] = page.evaluate(PAGE_FACTS)
                if found[name]["explore_points"]:
                    found[name]["explore_moved"] = page.evaluate(EXPLORE_MOVED)
                if screenshots is not None:
                    screenshots.mkdir(parents=True, exist_ok=True)
                    page.screenshot(path=str(screenshots / (name.replace("/", "_") + ".png")),
                                    full_page=True)
            browser.close()
    finally:
        server.shutdown()
    return {"pages": found, "external": external, "failed": failed}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("book", type=Path)
    parser.add_argument("--chromium", default="/usr/bin/chromium")
    parser.add_argument("--screenshots", type=Path, default=None)
    args = parser.parse_args(argv)
    print(json.dumps(check(args.book, args.chromium, args.screenshots), indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
