"""The instructor kit: the PDF's check (every chapter's title, a figure in each) and the slide decks."""
import re
import shutil
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402
from matplotlib.backends.backend_pdf import PdfPages  # noqa: E402

from calibcourse.tools import pdf as P  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
needs_poppler = pytest.mark.skipif(shutil.which("pdftotext") is None or shutil.which("pdfimages") is None,
                                   reason="pdftotext or pdfimages not found: the PDF checks need poppler-utils "
                                          "(make test installs it with apt-get when run as root)")


def _book(path, pages):
    """A PDF whose pages hold the given lines of text, and an image where asked: [(lines, image?)]."""
    with PdfPages(path) as out:
        for lines, image in pages:
            fig = plt.figure(figsize=(4, 5))
            for k, line in enumerate(lines):
                fig.text(0.1, 0.9 - 0.08 * k, line)
            if image:
                fig.add_axes([0.2, 0.1, 0.5, 0.4]).imshow(np.arange(64.0).reshape(8, 8))
            out.savefig(fig)
            plt.close(fig)
    return path


@needs_poppler
def test_pdf_check_finds_every_chapter_and_its_figures(tmp_path):
    titles = ["1. Alpha and omega", "2. Beta"]
    contents = (["CONTENTS", "1 1. Alpha and omega . . . . . . . . . . 3", "2 2. Beta . . . . . . . . . . . 5"], True)
    good = _book(tmp_path / "good.pdf", [
        contents, (["CHAPTER", "ONE", "1. ALPHA AND OMEGA", "Chapter 2, 2. Beta, comes next."], False),
        (["more of chapter one"], True), (["CHAPTER", "TWO", "2. BETA"], True)])
    assert P.check_pdf(good, titles) == {"1. Alpha and omega": (2, 1), "2. Beta": (4, 1)}
    # the contents' image and the mention of chapter 2 on chapter 1's first page count for neither
    bare = _book(tmp_path / "bare.pdf", [
        contents, (["CHAPTER", "ONE", "1. ALPHA AND OMEGA"], True), (["CHAPTER", "TWO", "2. BETA"], False)])
    with pytest.raises(ValueError, match=r"no figure in chapter '2. Beta' \(pages 3 on\)$"):
        P.check_pdf(bare, titles)
    # a later page of the book that is no checked chapter (a lab, the ledger) lends it no figure
    followed = _book(tmp_path / "followed.pdf", [
        contents, (["CHAPTER", "ONE", "1. ALPHA AND OMEGA"], True), (["CHAPTER", "TWO", "2. BETA"], False),
        (["CHAPTER", "THREE", "LAB 1: MEASURING"], True)])
    with pytest.raises(ValueError, match=r"no figure in chapter '2. Beta' \(pages 3 on\)$"):
        P.check_pdf(followed, titles)
    with pytest.raises(ValueError, match=r"no chapter titled '3. Gamma'"):
        P.check_pdf(good, titles + ["3. Gamma"])
    with pytest.raises(ValueError, match="no such PDF"):
        P.check_pdf(tmp_path / "none.pdf", titles)


def test_the_pdf_checks_the_book_s_chapters():
    titles = P.chapter_titles(ROOT)
    assert [t.split(".")[0] for t in titles] == ["1", "2", "3", "4", "5", "6"], titles   # Part I's six chapters
    assert titles[-1] == "6. Calibration in practice"


@needs_poppler
def test_the_built_pdf_holds_every_chapter_with_a_figure():
    """The book's own PDF, where `make pdf` has built it (CI does: .ci/run)."""
    if not (ROOT / P.PDF).exists():
        pytest.skip("no _build/pdf/calibcourse.pdf: run make pdf")
    report = P.check_pdf(ROOT / P.PDF, P.chapter_titles(ROOT))
    assert all(n >= 1 for _, n in report.values()), report


# ------------------------------------------------------------------ slides
def _chapter():
    """An executed chapter in small: marked and unmarked cells, a glued value, math, a figure."""
    import base64
    import io

    import nbformat

    new = nbformat.v4
    fig, ax = plt.subplots(figsize=(2, 2))
    ax.plot([0, 1], [0, 1])
    buf = io.BytesIO()
    fig.savefig(buf, format="png")
    plt.close(fig)
    png = base64.b64encode(buf.getvalue()).decode()
    glue = new.new_output("display_data", data={"application/papermill.record/text/plain": "0.0734"},
                          metadata={"scrapbook": {"name": "ece", "mime_prefix": "application/papermill.record/"}})
    figure = new.new_output("display_data", data={"image/png": png, "text/plain": "<Figure>"})
    long_list = "\n".join(f"- takeaway number {k}: " + "words " * 40 for k in range(6))
    return new.new_notebook(cells=[
        new.new_markdown_cell("# 9. A chapter\n\nIntroduction, not on a slide."),
        new.new_code_cell("glue('ece', 0.0734)", outputs=[glue]),
        new.new_markdown_cell("```{admonition} In this chapter\n:class: tip\n**You will learn** $\\hat p$.\n```\n\n"
                              "Prose after the box.", metadata={"tags": ["slide"]}),
        new.new_markdown_cell("## The $\\gamma$ section\n\nAn ECE of {glue:text}`ece:.3f` {cite}`guo2017calibration`."),
        new.new_code_cell("plot()", outputs=[figure], metadata={"tags": ["slide"], "mystnb": {"figure": {
            "caption": "Look at the diagonal, for $p = 0.5$."}}}),
        new.new_code_cell("plot()", outputs=[figure]),
        new.new_markdown_cell("## Key takeaways\n\n" + long_list + "\n\n## Self-check quiz\n\nQuestion 1.",
                              metadata={"tags": ["slide"]})])


def test_a_deck_holds_the_marked_cells_only_with_their_figures_and_glued_values():
    from calibcourse.tools import slides as S

    deck = S.deck_html(_chapter(), "9. A chapter", bib=S._bib(ROOT))
    sections = deck.count("<section")
    # the title, the goals box (not the prose after it), one figure, the takeaways split in parts; no quiz
    assert deck.count('<img alt="figure" src="data:image/png;base64,') == 1
    assert "<h2>In this chapter</h2>" in deck and "Prose after the box" not in deck and "Introduction" not in deck
    assert "<h3>The \\(\\gamma\\) section</h3>" in deck and "Look at the diagonal, for \\(p = 0.5\\)" in deck
    assert "<h2>Key takeaways (continued)</h2>" in deck and "Self-check quiz" not in deck
    assert "takeaway number 5" in deck and sections >= 5
    assert ":class:" not in deck and "{glue" not in deck and "$" not in deck.split("<script")[0]
    # offline: every file the deck loads is beside it, none from a network
    loaded = re.findall(r'(?:src|href)="([^"]+)"', deck)
    assert loaded and not [u for u in loaded if re.match(r"(https?:)?//", u)]
    assert {u for u in loaded if not u.startswith("data:")} == {
        "assets/reveal.js/dist/reveal.css",
        "assets/reveal.js/dist/theme/white.css",
        "assets/katex/dist/katex.min.css",
        "assets/reveal.js/dist/reveal.js",
        "assets/reveal.js/plugin/notes/notes.js",
        "assets/katex/dist/katex.min.js",
        "assets/katex/dist/contrib/auto-render.min.js",
    }


def test_glued_numbers_and_citations_render_as_the_book_renders_them():
    from calibcourse.tools import slides as S

    html = S.render_markdown("{glue:text}`ece:.2f` %, {fixed}`15` bins, {cite}`guo2017calibration`, "
                             "{quote}`16.53 % <guo2017calibration>`, {func}`~calibcourse.calibration.metrics.ece`",
                             {"ece": 7.345}, S._bib(ROOT))
    assert html == ("<p>7.34 %, 15 bins, (Guo et al. 2017), 16.53 % (Guo et al. 2017), <code>ece</code></p>"), html


@pytest.mark.skipif(shutil.which("npm") is None or shutil.which("chromium") is None,
                    reason="npm or chromium not found: the slide check needs both (make slides and make test "
                           "install them with apt-get when run as root)")
def test_a_deck_runs_offline_in_headless_chromium(tmp_path):
    """reveal.js and KaTeX fetched from the npm registry into the deck's folder: the deck loads nothing else,
    reveal.js lays out its slides and KaTeX typesets the math."""
    from calibcourse.tools import pagecheck
    from calibcourse.tools import slides as S

    S.fetch_assets(tmp_path / "assets", log=lambda *_: None)
    deck = tmp_path / "deck.html"
    deck.write_text(S.deck_html(_chapter(), "9. A chapter", bib=S._bib(ROOT)))
    drv = pagecheck._driver()
    try:
        drv.get(deck.resolve().as_uri() + "#/1")
        assert drv.execute_script("return Reveal.isReady() && Reveal.getTotalSlides()") >= 5
        assert drv.execute_script("return document.querySelectorAll('.katex').length") >= 3
        text = drv.execute_script("return document.body.innerText")
        assert "\\(" not in text and "\\hat" not in text
        loaded = drv.execute_script(
            "return Array.from(document.querySelectorAll('script[src], link[href][rel=stylesheet], img'))"
            ".map(e => e.src || e.href)")
        assert loaded and all(u.startswith("file:") or u.startswith("data:") for u in loaded), loaded
        errors = [e for e in drv.get_log("browser") if e["level"] == "SEVERE"]
        assert not errors, errors
    finally:
        drv.quit()
