r"""The rendered-page check: every page of the built book, opened in headless Chromium.

``python -m calibcourse.tools.pagecheck [_build/html]`` (``make check-pages``) opens each ``.html``
page of the book (``_static/`` and ``_sources/`` aside) in Debian's ``chromium`` through
Selenium and ``chromium-driver``, waits for MathJax to finish, and reports every breach of
seven rules, one line each:

``math``
    raw TeX left in the text after MathJax ran: ``\(``, ``\[``, ``$$``, ``\begin{`` or a
    ``$`` followed by a backslash, outside code (``pre``/``code``), where TeX is meant literally;
``image``
    an ``<img>`` that did not load (``naturalWidth`` 0);
``figure``
    an image of the page's content without alt text (none, or its own file name, which is
    what myst-nb writes when a cell gives none) or outside a ``<figure>`` with a caption;
``console``
    an error in the browser's console (``console.error``, an uncaught exception, a resource
    that failed to load);
``path``
    an absolute path of the build machine (``/work/``, ``/home/``, ``/root/``, ``/tmp/``,
    ``site-packages``, ...) anywhere in the page's text or in an attribute of its HTML;
``warning``
    a Python warning or traceback in the text (``UserWarning``, ``TqdmWarning: ...``,
    ``Traceback (most recent call last)``), or a cell's stderr output block;
``output``
    a cell's bare ``repr`` output (myst-nb's ``output text_plain`` block): the value of a
    cell's last expression that printed by accident, such as ``2000``, ``True`` or
    ``<Figure size ...>`` (printed text, figures, tables and Markdown are other blocks).

The text is the page's ``textContent`` without scripts and styles, so folded solutions and
collapsed outputs are checked too. It exits 1 when a page breaks a rule.

Why Selenium with Debian's driver: ``chromium`` and ``chromium-driver`` come from one
Debian source package, so their versions always match, and apt installs both with no
browser download (Playwright and ``selenium-manager`` fetch browsers of their own, which
this project's machines cannot); the browser console comes through the driver's standard
``goog:loggingPrefs`` log.
"""
from __future__ import annotations

import argparse
import os
import re
import shutil
import sys
import time
from dataclasses import dataclass
from pathlib import Path

__all__ = ["Problem", "RULES", "text_problems", "book_pages", "check_pages", "main"]

#: The rules a page is checked against.
RULES = ("math", "image", "figure", "console", "path", "warning", "output")

#: Raw TeX that MathJax leaves only when it did not typeset the page.
RAW_TEX = re.compile(r"\\\(|\\\)|\\\[|\\\]|\$\$|\\begin\{|\$\\[A-Za-z]")
#: Absolute paths of a build machine.
MACHINE_PATH = re.compile(r"(?<![\w.])(/work/|/home/|/root/|/tmp/|/private/var/|/usr/lib/python|/opt/conda/)"
                          r"|site-packages|dist-packages|[A-Za-z]:\\Users\\")
#: A Python warning or traceback printed into a page.
PY_WARNING = re.compile(r"\b[A-Z][A-Za-z]*Warning\b|\bWarning: |Traceback \(most recent call last\)")


@dataclass(frozen=True)
class Problem:
    """One breach of a rule on one page.

    Attributes
    ----------
    page : str
        The page, relative to the book's root when the check was given one.
    rule : str
        One of :data:`RULES`.
    detail : str
        What was found, with its context.

    Examples
    --------
    >>> print(Problem("intro.html", "path", "/work/main/data in the text"))
    intro.html: path: /work/main/data in the text
    """

    page: str
    rule: str
    detail: str

    def __str__(self) -> str:
        """``page: rule: detail``."""
        return f"{self.page}: {self.rule}: {self.detail}"


def _context(text: str, match: re.Match, width: int = 40) -> str:
    start, end = max(match.start() - width, 0), min(match.end() + width, len(text))
    return " ".join(text[start:end].split())


def text_problems(page: str, text: str, prose: str, attributes: str = "") -> list[Problem]:
    r"""The ``math``, ``path`` and ``warning`` problems of one page from its text.

    Parameters
    ----------
    page : str
        The page's name in the report.
    text : str
        All the page's text (code included).
    prose : str
        The text outside code blocks, where raw TeX is an error.
    attributes : str, default=""
        The values of the page's HTML attributes (``src``, ``href``, ``alt``, ...), checked
        for machine paths.

    Returns
    -------
    list of Problem
        At most one problem per rule and distinct match.

    Examples
    --------
    >>> sorted({p.rule for p in text_problems("x.html", "see /work/x", r"a \(b\) c")})
    ['math', 'path']
    >>> text_problems("x.html", "ECE = 2.1 % (warnings are off)", "ECE = 2.1 %")
    []
    """
    found, seen = [], set()

    def add(rule, detail):
        if (rule, detail) not in seen:
            seen.add((rule, detail))
            found.append(Problem(page, rule, detail))

    for m in RAW_TEX.finditer(prose):
        add("math", f"raw TeX {m.group(0)!r} in '{_context(prose, m)}'")
    for where, source in (("text", text), ("HTML attribute", attributes)):
        for m in MACHINE_PATH.finditer(source):
            add("path", f"machine path {m.group(0)!r} in {where} '{_context(source, m)}'")
    for m in PY_WARNING.finditer(text):
        add("warning", f"{m.group(0).strip()!r} in '{_context(text, m)}'")
    return found


def book_pages(html_dir) -> list[Path]:
    """Every ``.html`` page of a built book, ``_static/``, ``_sources/`` and ``_images/`` aside, sorted.

    Parameters
    ----------
    html_dir : path-like
        The built book (``_build/html``); it must hold ``index.html``.

    Returns
    -------
    list of pathlib.Path

    Examples
    --------
    >>> import tempfile
    >>> from pathlib import Path
    >>> root = Path(tempfile.mkdtemp())
    >>> for f in ("index.html", "ch1/theory.html", "_static/x.html"):
    ...     (root / f).parent.mkdir(parents=True, exist_ok=True); _ = (root / f).write_text("<p>")
    >>> _ = (root / "old.html").write_text('<meta http-equiv="Refresh" content="0; url=ch1/theory.html" />')
    >>> [str(p.relative_to(root)) for p in book_pages(root)]  # a redirect stub is not a page
    ['ch1/theory.html', 'index.html']
    >>> book_pages(root / "ch1")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
        ...
    FileNotFoundError: html_dir '...ch1' has no index.html: build the book first (make book)
    """
    root = Path(html_dir)
    if not (root / "index.html").is_file():
        raise FileNotFoundError(f"html_dir {str(root)!r} has no index.html: build the book first (make book)")
    skip = {"_static", "_sources", "_images"}
    pages = (p for p in root.rglob("*.html") if not skip & set(p.relative_to(root).parts[:-1]))
    # a redirect stub (Jupyter Book's index.html) navigates away while it is read: its target is a page
    return sorted(p for p in pages if not _is_redirect(p))


def _is_redirect(path: Path) -> bool:
    text = path.read_text(errors="replace")
    return len(text) < 2000 and 'http-equiv="refresh"' in text.lower()


# JavaScript run in each page --------------------------------------------------------------
_WAIT_JS = """
const done = arguments[arguments.length - 1];
const imgs = Array.from(document.images);
const loaded = Promise.all(imgs.map(img => {
  if (img.loading === "lazy") img.loading = "eager";
  return img.complete ? null : new Promise(ok => { img.onload = img.onerror = ok; });
}));
const math = (window.MathJax && MathJax.startup && MathJax.startup.promise) ? MathJax.startup.promise : null;
Promise.all([loaded, math]).then(() => done("ok"), err => done("MathJax failed: " + err));
"""

_COLLECT_JS = """
const body = document.body.cloneNode(true);
body.querySelectorAll("script, style, noscript, template").forEach(e => e.remove());
const text = body.textContent;
body.querySelectorAll("pre, code, .highlight").forEach(e => e.remove());
const prose = body.textContent;
const attrs = [];
document.querySelectorAll("*").forEach(e => {
  for (const a of e.attributes) if (!a.name.startsWith("on") && a.name !== "style") attrs.push(a.value);
});
const badImages = Array.from(document.images)
  .filter(i => !i.complete || i.naturalWidth === 0)
  .map(i => i.getAttribute("src") || "(no src)");
const stderr = document.querySelectorAll(".output.stderr, .cell_output .stderr, .output.traceback").length;
const figures = Array.from(document.querySelectorAll("article img, main img")).map(i => {
  const src = i.getAttribute("src") || "";
  const alt = (i.getAttribute("alt") || "").trim();
  const name = src.split("/").pop();
  const noAlt = !alt || alt === src || /\\.(png|jpe?g|svg|gif|webp)$/i.test(alt) || (name && alt.endsWith(name));
  const fig = i.closest("figure");
  const noCaption = !fig || !fig.querySelector("figcaption") || !fig.querySelector("figcaption").textContent.trim();
  return {src: name, noAlt: noAlt, noCaption: noCaption};
}).filter(f => f.noAlt || f.noCaption);
const reprs = Array.from(document.querySelectorAll(".output.text_plain")).map(e => e.textContent.trim().slice(0, 80));
return {text: text, prose: prose, attrs: attrs.join("\\n"), badImages: badImages, stderr: stderr,
        reprs: reprs, figures: figures};
"""


def _driver(chromium: str | None = None, driver: str | None = None):
    try:
        from selenium import webdriver
        from selenium.webdriver.chrome.service import Service
    except ImportError:  # pragma: no cover - installed by requirements-test.txt
        raise RuntimeError("the page check needs selenium (pip install -r requirements-test.txt)") from None
    chromium = chromium or shutil.which("chromium") or shutil.which("chromium-browser")
    driver = driver or shutil.which("chromedriver")
    if not chromium or not driver:
        raise RuntimeError("the page check needs Debian's chromium and chromium-driver: "
                           "apt-get install -y chromium chromium-driver (make check-pages does it)")
    for what, path in (("chromium", chromium), ("driver", driver)):
        if not os.path.isfile(path) or not os.access(path, os.X_OK):
            raise RuntimeError(f"{what} {path!r} is not an executable file")
    opts = webdriver.ChromeOptions()
    opts.binary_location = chromium
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                "--window-size=1200,900", "--allow-file-access-from-files"):
        opts.add_argument(arg)
    opts.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    return webdriver.Chrome(options=opts, service=Service(executable_path=driver))


def _check_one(drv, path: Path, name: str, timeout: float) -> list[Problem]:
    drv.get_log("browser")  # drop what an earlier page left
    drv.get(path.resolve().as_uri())
    drv.set_script_timeout(timeout)
    problems = []
    try:
        state = drv.execute_async_script(_WAIT_JS)
    except Exception as exc:  # a page whose images or MathJax never finish
        state = f"did not finish loading in {timeout:g} s ({type(exc).__name__})"
    if state != "ok":
        problems.append(Problem(name, "math" if "MathJax" in state else "image", state))
    page = drv.execute_script(_COLLECT_JS)
    problems += text_problems(name, page["text"], page["prose"], page["attrs"])
    for src in page["badImages"]:
        problems.append(Problem(name, "image", f"image not loaded: {src}"))
    for f in page["figures"]:
        what = " and ".join(w for w, bad in (("alt text", f["noAlt"]), ("a caption", f["noCaption"])) if bad)
        problems.append(Problem(name, "figure", f"image {f['src']} without {what}"))
    for text in page["reprs"]:
        problems.append(Problem(name, "output", f"a cell's bare value printed: {text!r}"))
    if page["stderr"]:
        problems.append(Problem(name, "warning", f"{page['stderr']} stderr/traceback output block(s) of a cell"))
    for entry in drv.get_log("browser"):
        if entry.get("level") == "SEVERE":
            problems.append(Problem(name, "console", " ".join(str(entry.get("message", "")).split())[:300]))
    return list(dict.fromkeys(problems))  # a resource the page asks for twice fails twice: say it once


def check_pages(pages, root=None, timeout: float = 30.0, chromium: str | None = None,
                driver: str | None = None) -> list[Problem]:
    r"""Open each page in one headless Chromium and return every problem found.

    Parameters
    ----------
    pages : iterable of path-like
        The HTML files.
    root : path-like, optional
        Pages are named relative to it in the report (default: their full path).
    timeout : float, default=30.0
        Seconds a page may take to load its images and typeset its math.
    chromium, driver : str, optional
        The browser and ``chromedriver`` executables (default: found on ``PATH``).

    Returns
    -------
    list of Problem

    Examples
    --------
    A page whose TeX no MathJax typeset and whose image does not load (starts Chromium:
    about a second; the missing file is also the browser console's error):

    >>> import tempfile
    >>> from pathlib import Path
    >>> root = Path(tempfile.mkdtemp())
    >>> _ = (root / "page.html").write_text(
    ...     '<html><body><p>ECE = \(\sum_m |B_m|\)</p>'
    ...     '<figure><img src="missing.png" alt="a diagram"><figcaption>Look.</figcaption></figure></body></html>')
    >>> [problem.rule for problem in check_pages([root / "page.html"], root=root, timeout=120)]
    ['math', 'math', 'image', 'console']
    """
    pages = [Path(p) for p in pages]
    drv = _driver(chromium, driver)
    try:
        problems = []
        for path in pages:
            name = str(path.relative_to(root)) if root is not None else str(path)
            problems += _check_one(drv, path, name, timeout)
        return problems
    finally:
        drv.quit()


def main(argv=None) -> int:
    """The command line (``make check-pages``): check every page under ``html_dir``.

    Parameters
    ----------
    argv : list of str, optional
        ``[html_dir] [--timeout SECONDS]`` (default: the command line's; ``html_dir`` defaults
        to ``_build/html``).

    Returns
    -------
    int
        0 when every page passes, 1 when a page breaks a rule (one line per problem), 2 when
        the pages or the browser cannot be found (the reason on stderr).

    Examples
    --------
    >>> import contextlib, sys, tempfile
    >>> with contextlib.redirect_stderr(sys.stdout):
    ...     main([tempfile.mkdtemp()])  # doctest: +ELLIPSIS
    pagecheck: html_dir '...' has no index.html: build the book first (make book)
    2
    """
    parser = argparse.ArgumentParser(prog="python -m calibcourse.tools.pagecheck",
                                     description="Check every page of the built book in headless Chromium.")
    parser.add_argument("html_dir", nargs="?", default="_build/html")
    parser.add_argument("--timeout", type=float, default=30.0, help="seconds per page (default 30)")
    args = parser.parse_args(argv)
    start = time.perf_counter()
    try:
        pages = book_pages(args.html_dir)
        problems = check_pages(pages, root=args.html_dir, timeout=args.timeout)
    except (FileNotFoundError, RuntimeError) as exc:
        print(f"pagecheck: {exc}", file=sys.stderr)
        return 2
    for p in problems:
        print(p)
    bad = len({p.page for p in problems})
    print(f"pagecheck: {len(pages)} pages checked in {time.perf_counter() - start:.1f} s: "
          f"{len(pages) - bad} passed, {bad} failed ({len(problems)} problems)")
    return 1 if problems else 0


if __name__ == "__main__":  # pragma: no cover
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    sys.exit(main())
