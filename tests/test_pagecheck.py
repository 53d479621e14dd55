"""The rendered-page check (calibcourse.tools.pagecheck) on tiny hand-made pages: each rule catches
the page that breaks it, and a clean page (typeset math, a loaded image) passes."""
import os
import shutil
import struct
import sysconfig
import zlib
from pathlib import Path

import pytest

from calibcourse.tools import pagecheck

HAVE_BROWSER = bool(shutil.which("chromium") and shutil.which("chromedriver"))
try:
    import selenium  # noqa: F401
except ImportError:  # pragma: no cover
    HAVE_BROWSER = False

if not HAVE_BROWSER and os.environ.get("CI"):  # CI installs them (make test / make check-pages)
    pytest.fail("CI needs chromium, chromium-driver and selenium for the page check", pytrace=False)
browser = pytest.mark.skipif(not HAVE_BROWSER, reason="chromium, chromedriver or selenium not found: the browser "
                             "checks need them (make test installs them with apt-get when run as root)")

MATHJAX = Path(sysconfig.get_paths()["purelib"]) / "sphinx-mathjax-offline" / "static" / "mathjax"


def png_1x1() -> bytes:
    def chunk(kind, data):
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", 1, 1, 8, 2, 0, 0, 0))
            + chunk(b"IDAT", zlib.compress(b"\x00\xff\x00\x00")) + chunk(b"IEND", b""))


def page(body: str, head: str = "") -> str:
    return f"<!DOCTYPE html><html><head><meta charset='utf-8'>{head}</head><body>{body}</body></html>"


def mathjax_head(src: str) -> str:
    return ("<script>window.MathJax = {options: {processHtmlClass: 'math'}};</script>"
            f"<script defer src='{src}'></script>")


@pytest.fixture(scope="module")
def book(tmp_path_factory):
    """A tiny 'built book': a clean index and one page per broken rule."""
    root = tmp_path_factory.mktemp("html")
    (root / "_static").mkdir()
    (root / "_static" / "img.png").write_bytes(png_1x1())
    shutil.copytree(MATHJAX, root / "_static" / "mathjax")  # the book's offline MathJax, fonts included
    head = mathjax_head("_static/mathjax/tex-chtml.js")
    pages = {
        "index.html": page(
            "<h1>Calibration</h1><p>The ECE is <span class='math'>\\(\\sum_m w_m |g_m|\\)</span>, "
            "and <span class='math'>\\[x^2\\]</span>.</p><main><figure><img src='_static/img.png' "
            "alt='a green pixel'><figcaption>Look at the pixel.</figcaption></figure></main>"
            "<pre>print('\\\\(not math\\\\)')</pre><p>warnings are off; see tmp/ and work/</p>",
            head,
        ),
        "raw_math.html": page("<p>The ECE is \\(\\sum_m w_m |g_m|\\) and $$x^2$$.</p>"),
        "broken_image.html": page("<p>A figure:</p><img src='_static/missing.png' alt='missing'>"),
        "alt_is_path.html": page(
            "<main><figure><img src='_static/img.png' alt='../_static/img.png'>"
            "<figcaption>Look.</figcaption></figure></main>"
        ),
        "no_caption.html": page("<main><img src='_static/img.png' alt='a green pixel'></main>"),
        "console_error.html": page("<p>fine</p><script>console.error('boom in the console')</script>"),
        "js_exception.html": page("<p>fine</p><script>const A = 1;</script><script>const A = 2;</script>"),
        "machine_path.html": page("<p>saved to /work/main/_build/x.npz</p>"),
        "path_in_attribute.html": page("<p>ok</p><a href='file:///home/alice/book/x.html'>x</a>"),
        "py_warning.html": page("<pre>/opt/x.py:3: TqdmWarning: IProgress not found</pre>"),
        "traceback.html": page("<div class='output'>Traceback (most recent call last):\n  File x</div>"),
        "stderr_block.html": page("<div class='cell_output'><div class='output stderr'><pre>oops</pre></div></div>"),
        "bare_value.html": page(
            "<div class='cell_output docutils container'><div class='output text_plain "
            "highlight-myst-ansi notranslate'><div class='highlight'><pre>2000</pre></div></div>"
            "<div class='output stream highlight-myst-ansi'><pre>printed on purpose</pre></div></div>"
        ),
    }
    for name, html in pages.items():
        (root / name).write_text(html)
    (root / "_sources").mkdir()
    (root / "_sources" / "ignored.html").write_text(page("\\(raw\\)"))
    problems = pagecheck.check_pages(pagecheck.book_pages(root), root=root, timeout=300)  # a ceiling, not a budget
    by_page = {}
    for p in problems:
        by_page.setdefault(p.page, set()).add(p.rule)
    return root, by_page, problems


@browser
def test_clean_page_passes(book):
    _, by_page, problems = book
    assert "index.html" not in by_page, [str(p) for p in problems if p.page == "index.html"]


@browser
@pytest.mark.parametrize("name, rule", [
    ("raw_math.html", "math"), ("broken_image.html", "image"), ("console_error.html", "console"),
    ("js_exception.html", "console"), ("machine_path.html", "path"), ("path_in_attribute.html", "path"),
    ("py_warning.html", "warning"), ("traceback.html", "warning"), ("stderr_block.html", "warning"),
    ("bare_value.html", "output"), ("alt_is_path.html", "figure"), ("no_caption.html", "figure"),
])
def test_each_broken_page_is_caught(book, name, rule):
    _, by_page, _ = book
    assert rule in by_page.get(name, set()), by_page


@browser
def test_only_the_broken_rule_is_reported(book):
    _, by_page, _ = book
    assert by_page["raw_math.html"] == {"math"}
    assert by_page["broken_image.html"] <= {"image", "console"}  # Chromium logs the failed load too
    assert by_page["machine_path.html"] == {"path"}
    assert by_page["bare_value.html"] == {"output"}
    assert by_page["alt_is_path.html"] == by_page["no_caption.html"] == {"figure"}


@browser
def test_main_exit_status_and_summary(book, capsys):
    root, _, _ = book
    assert pagecheck.main([str(root)]) == 1
    out = capsys.readouterr().out
    assert "raw_math.html: math" in out and "13 pages checked" in out and "1 passed, 12 failed" in out


def test_a_named_browser_or_driver_that_is_not_there_is_a_clear_error(tmp_path):
    with pytest.raises(RuntimeError, match="chromium .* is not an executable file"):
        pagecheck.check_pages([], chromium=str(tmp_path / "chromium"), driver=str(tmp_path / "chromedriver"))


def test_book_pages_skips_static_and_needs_index(tmp_path):
    with pytest.raises(FileNotFoundError, match="html_dir"):
        pagecheck.book_pages(tmp_path)
    (tmp_path / "index.html").write_text("x")
    (tmp_path / "_static").mkdir()
    (tmp_path / "_static" / "macros.html").write_text("x")
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "b.html").write_text("x")
    assert [p.relative_to(tmp_path).as_posix() for p in pagecheck.book_pages(tmp_path)] == ["a/b.html", "index.html"]


@pytest.mark.parametrize("text, prose, rules", [
    ("", "a \\(x\\) b", {"math"}),
    ("", "$$x$$", {"math"}),
    ("", "costs $\\alpha$", {"math"}),
    ("", "\\begin{align}", {"math"}),
    ("in /tmp/x", "", {"path"}),
    ("lib/python3.11/site-packages/x.py", "", {"path"}),
    ("C:\\Users\\me", "", {"path"}),
    ("UserWarning: careful", "", {"warning"}),
    ("Warning: x", "", {"warning"}),
    ("Traceback (most recent call last):", "", {"warning"}),
    ("ECE 4.4 % [3.9, 5.0], a warning in prose, a work/ folder, 5 $ each", "ECE 4.4 % [3.9, 5.0] costs 5 $", set()),
])
def test_text_rules(text, prose, rules):
    assert {p.rule for p in pagecheck.text_problems("p.html", text, prose)} == rules


def test_attribute_paths():
    assert [p.rule for p in pagecheck.text_problems("p.html", "", "", "src=/root/x.png")] == ["path"]


def test_sphinxext_keeps_one_of_each_script():
    # sphinx_thebe registers its inline config twice (at two priorities): a SyntaxError in every page
    from sphinx.builders.html._assets import _JavaScript

    from calibcourse.tools.sphinxext import dedupe_assets

    thebe = "const THEBE_JS_URL = 'x'"
    ctx = {"script_files": [_JavaScript(None, body=thebe, priority=500), _JavaScript("a.js"),
                            _JavaScript("", body=thebe, priority=500), _JavaScript(None, body=thebe, priority=501),
                            _JavaScript("a.js", **{"async": "async"})]}
    dedupe_assets(None, "page", "page.html", ctx, None)
    assert [str(e) for e in ctx["script_files"]] == [str(_JavaScript(None, body=thebe, priority=500)),
                                                     str(_JavaScript("a.js")),
                                                     str(_JavaScript("a.js", **{"async": "async"}))]
