"""The lecture decks: each chapter's slide source carries a 90-minute lecture.

Every chapter of the course has ``notebooks/slides/<chapter>.md``: 15 to 30 slides, the speaker's
notes on most of them, the definitions on slides (chapter 1: ECE, MCE, NLL and the Brier score with
their formulas), and figures pulled in by names that the chapter's source gives its figures. The
decks are rendered here with stand-in figures (the real ones need the executed chapters, ``make
slides``); in headless Chromium every slide fits the 1280x800 frame and KaTeX typesets every formula.
"""
from __future__ import annotations

import base64
import io
import re
import shutil
import subprocess
import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import nbformat  # noqa: E402
import pytest  # noqa: E402

from calibcourse.tools import slides as S  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
#: the six chapters of the course, Part I of the book (one page and one deck each)
CHAPTERS = sorted(p.stem for p in (ROOT / "notebooks").glob("0[1-9]_*.md"))


def source(stem: str) -> str:
    return (ROOT / S.SOURCES / f"{stem}.md").read_text()


def _png(width=8.0, height=5.0) -> str:
    fig, ax = plt.subplots(figsize=(width, height), dpi=100)
    ax.plot([0, 1], [0, 1])
    buf = io.BytesIO()
    fig.savefig(buf, format="png")
    plt.close(fig)
    return base64.b64encode(buf.getvalue()).decode()


def stand_in(names) -> nbformat.NotebookNode:
    """An executed chapter in small: a code cell with a figure and a caption for each name."""
    new, png = nbformat.v4, _png()
    return new.new_notebook(cells=[
        new.new_code_cell("plot()", outputs=[new.new_output("display_data", data={"image/png": png})],
                          metadata={"mystnb": {"figure": {"name": n, "caption": f"Look at {n}."}}})
        for n in names])


def deck(stem: str) -> str:
    text = source(stem)
    return S.deck_html(stand_in(S.figure_names(text)), stem, bib=S._bib(ROOT), source=text, name=stem)


def test_the_six_chapters_each_have_a_slide_source_and_no_source_is_orphaned():
    assert len(CHAPTERS) == 6, CHAPTERS
    sources = {p.stem for p in (ROOT / S.SOURCES).glob("*.md")}
    assert sources == set(CHAPTERS), (sources, CHAPTERS)


@pytest.mark.parametrize("stem", CHAPTERS)
def test_a_deck_holds_a_lecture_with_notes(stem):
    slides = S.parse_slides(source(stem), stem)
    assert 15 <= len(slides) <= 30, f"{stem}: {len(slides)} slides"
    assert all(s.title and s.body for s in slides), [s.title for s in slides if not s.body]
    with_notes = sum(bool(s.notes) for s in slides)
    assert with_notes >= 0.75 * len(slides), f"{stem}: notes on {with_notes} of {len(slides)} slides"
    maths = sum("$$" in s.body for s in slides)
    assert maths >= 4, f"{stem}: {maths} slides with a displayed formula (the definitions and the derivation)"
    html = deck(stem)
    assert html.count("<section") - 1 == len(slides)
    assert html.count('<aside class="notes">') == with_notes
    assert "plugin/notes/notes.js" in html and "RevealNotes" in html


@pytest.mark.parametrize("stem", CHAPTERS)
def test_every_figure_a_deck_asks_for_is_named_in_its_chapter(stem):
    chapter = (ROOT / "notebooks" / f"{stem}.md").read_text()
    named = set(re.findall(r"(?m)^\s*(?:name:|:name:)\s*(fig-[\w-]+)\s*$", chapter))
    missing = [f for f in S.figure_names(source(stem)) if f not in named]
    assert not missing, (f"{S.SOURCES / stem}.md asks for {missing}, which notebooks/{stem}.md no longer names: "
                         f"use one of {sorted(named)}")
    glued = set(re.findall(r"""glue(?:_value)?\(\s*["']([\w-]+)["']""", chapter))
    assert set(S._GLUE.findall(source(stem))) <= glued


def _slide(stem: str, pattern: str) -> str:
    """The body of the first slide of a deck whose body matches ``pattern``."""
    found = [s.body for s in S.parse_slides(source(stem)) if re.search(pattern, s.body)]
    assert found, f"{stem}: no slide matches {pattern!r}"
    return found[0]


def test_chapter_1_s_deck_defines_ece_mce_nll_and_the_brier_score():
    stem = CHAPTERS[0]
    ece = _slide(stem, r"\\mathrm\{ECE\} =")
    assert r"\sum_{m=1}^{M} \frac{|B_m|}{n}" in ece and r"\operatorname{conf}(B_m)" in ece
    assert r"\max" in _slide(stem, r"\\mathrm\{MCE\} =")
    assert r"\log \hat\pi(y_i \mid x_i)" in _slide(stem, r"\\mathrm\{NLL\} =")
    brier = _slide(stem, r"\\mathrm\{BS\} =")
    assert r"\sum_{k=1}^K" in brier and r"\mathbb 1[y_i = k]" in brier
    assert r"\text{reliability}" in _slide(stem, r"\\text\{resolution\}")
    for name in ("Perfect calibration", "Expected calibration error", "Maximum calibration error",
                 "Negative log-likelihood", "The Brier score"):
        assert any(name.lower() in s.title.lower() for s in S.parse_slides(source(stem))), name


def test_chapter_5_and_6_decks_cover_their_lectures():
    titles5 = " ".join(s.title + s.body for s in S.parse_slides(source(CHAPTERS[4])))
    for topic in ("focal loss", "sample-wise", r"\gamma$-Net", "SECE", "bilevel", "frozen control"):
        assert topic.lower() in titles5.lower(), topic
    text6 = " ".join(s.title + s.body for s in S.parse_slides(source(CHAPTERS[5])))
    for topic in ("Kinds of shift", "ensembles", "MC dropout", "temperature scaling under shift", "label shift",
                  "EM", "BBSE", "cross-fitted", "checklist"):
        assert topic.lower() in text6.lower(), topic


def test_a_source_that_breaks_the_format_or_its_chapter_is_one_clear_line():
    with pytest.raises(ValueError, match=r"x\.md, slide 2: starts with 'text without a title'"):
        S.parse_slides("## One\n\nBody.\n---\ntext without a title\n", "x.md")
    with pytest.raises(ValueError, match=r"x\.md asks for the figure 'fig-gone', which the executed chapter"):
        S.deck_html(stand_in(["fig-here"]), "A", source="## A\n\n![a](figure:fig-gone)\n", name="x.md")
    with pytest.raises(ValueError, match=r"x\.md uses the glued value 'ece'"):
        S.deck_html(stand_in([]), "A", source="## A\n\nAn ECE of {glue:text}`ece:.1f` %.\n", name="x.md")


def test_a_figure_brings_its_caption_into_the_notes(tmp_path):
    html = S.deck_html(stand_in(["fig-a"]), "A", source="## A\n\n![diagrams](figure:fig-a)\n\nNote:\nPoint at it.\n")
    section = re.search(r'<section class="figure">.*?</section>', html, flags=re.S).group(0)
    assert '<img alt="diagrams" src="data:image/png;base64,' in section
    assert re.search(r'<aside class="notes"><p>Point at it.</p>\s*<p><em>The book\'s caption:</em> Look at fig-a.</p>',
                     section), section


def test_make_slides_stops_on_a_slide_source_of_no_chapter_before_executing_anything(tmp_path):
    (tmp_path / "notebooks" / "slides").mkdir(parents=True)
    (tmp_path / "notebooks" / "01_a.md").write_text("# 1. A\n")
    (tmp_path / "notebooks" / "slides" / "02_b.md").write_text("## B\n\nBody.\n")
    (tmp_path / "_toc.yml").write_text("root: book/intro\nchapters:\n- file: book/generated/01_a\n")
    proc = subprocess.run([sys.executable, "-m", "calibcourse.tools.slides", "--root", str(tmp_path)],
                          capture_output=True, text=True, cwd=ROOT)
    assert proc.returncode == 1
    assert proc.stderr.strip() == ("slides: notebooks/slides/02_b.md is the slide source of no chapter "
                                   "(no notebooks/02_b.md in _toc.yml)"), proc.stderr
    assert not (tmp_path / "book").exists()


@pytest.mark.skipif(shutil.which("npm") is None or shutil.which("chromium") is None
                    or shutil.which("chromedriver") is None,
                    reason="npm, chromium and chromium-driver (make slides and make test install them)")
def test_every_slide_fits_its_frame_and_its_math_is_typeset_in_headless_chromium(tmp_path):
    from calibcourse.tools import pagecheck

    S.fetch_assets(tmp_path / "assets", log=lambda *_: None)
    for stem in CHAPTERS:
        (tmp_path / f"{stem}.html").write_text(deck(stem))
    drv = pagecheck._driver()
    try:
        for stem in CHAPTERS:
            drv.get((tmp_path / f"{stem}.html").resolve().as_uri() + "#/2")
            assert drv.execute_script("return Reveal.isReady() && Reveal.getTotalSlides()") >= 16
            heights = drv.execute_script("""
                return Array.from(document.querySelectorAll('.reveal .slides > section')).map(s => {
                    const shown = s.style.display; s.style.display = 'block';
                    const h = s.scrollHeight; s.style.display = shown; return h; });""")
            too_tall = [(k, h) for k, h in enumerate(heights) if h > 760]
            assert not too_tall, f"{stem}: slides taller than the 800-pixel frame: {too_tall}"
            assert drv.execute_script("return document.querySelectorAll('.katex-error').length") == 0
            shown = drv.execute_script("return document.querySelector('.reveal .slides').innerText")
            assert "$" not in shown and "\\(" not in shown, stem
            assert drv.execute_script("return typeof Reveal.getPlugin('notes')") == "object"
            errors = [e for e in drv.get_log("browser") if e["level"] == "SEVERE"]
            assert not errors, (stem, errors)
    finally:
        drv.quit()
