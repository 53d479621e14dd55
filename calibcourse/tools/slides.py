"""One reveal.js slide deck per chapter, a lecture's worth (``make slides``).

    python -m calibcourse.tools.slides [--profile default]

A chapter's deck is written from its slide source, ``notebooks/slides/<chapter>.md``
(:data:`SOURCES`; the format is :func:`parse_slides`'s): slides of text, math and tables with
the speaker's notes, and the chapter's figures pulled in by their names (``![alt](figure:fig-ch1-bias)``
is the figure that the chapter's code cell names ``fig-ch1-bias``, its caption in the notes). A
chapter without a slide source gets a deck of its cells tagged ``slide``: a markdown cell as its
text, a code cell as its figure with the caption. The decks are built from the executed student
edition (the cells run as ``make book`` runs them, skipped where unchanged), so a figure on a slide
is the figure of the book. Each deck is one HTML file, its figures inside it; reveal.js (with its
speaker-notes plugin) and KaTeX (the math) come from the npm registry, pinned (:data:`PACKAGES`),
and are copied beside the decks, so the decks work offline.

The only coupling between a slide source and its chapter is the figures' names (and any glued
value a source uses): a name the executed chapter lacks stops the build with one line that names
the slide source and the figure, and ``tests/test_lecture_decks.py`` checks every name against the
chapter's source.

Output: ``_build/slides/<chapter>.html`` and ``_build/slides/index.html``.
"""
from __future__ import annotations

import argparse
import ast
import html
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

__all__ = ["PACKAGES", "SLIDES", "SOURCES", "Slide", "parse_slides", "slide_cells", "render_markdown", "deck_html",
           "fetch_assets", "build_slides", "main"]

SLIDES = Path("_build") / "slides"
#: the decks' sources: ``<chapter>.md`` for the chapter ``notebooks/<chapter>.md``
SOURCES = Path("notebooks") / "slides"
#: the npm packages the decks load, pinned, and the folders of each that are copied beside the decks
PACKAGES = {"reveal.js": ("5.2.1", ("dist", "plugin/notes")), "katex": ("0.16.22", ("dist",))}
_CHAPTER = re.compile(r"^\d\d[a-z]?_")
_ROLE = re.compile(r"\{([a-z]+(?::[a-z]+)?)\}`([^`]*)`")
_MAX_CHARS = 900  # of markdown on one slide; a longer cell is split between its list items or paragraphs


def _bib(root: Path) -> dict:
    """``{key: "Guo et al. 2017"}`` from the book's bibliography."""
    from calibcourse.tools.bibliography import read_bib

    return {key: entry.cite for key, entry in read_bib(Path(root) / "book" / "references.bib").items()}


def _glued(nb) -> dict:
    """The values the executed notebook glued: ``{name: value}`` (strings and numbers)."""
    out = {}
    for cell in nb.cells:
        for o in cell.get("outputs", []):
            meta = o.get("metadata", {}).get("scrapbook")
            if meta:
                text = o.get("data", {}).get(meta.get("mime_prefix", "") + "text/plain", "")
                try:
                    out[meta["name"]] = ast.literal_eval(text)
                except (ValueError, SyntaxError):
                    out[meta["name"]] = text
    return out


def _role(name: str, text: str, glued: dict, bib: dict) -> str:
    target = re.match(r"(.*?)\s*<([^>]+)>$", text, flags=re.S)
    if name.startswith("glue"):
        key, _, spec = text.partition(":")
        value = glued.get(key, f"[{key}]")
        try:
            return format(value, spec) if spec else str(value)
        except (ValueError, TypeError):
            return str(value)
    if name.startswith("cite"):
        return "(" + "; ".join(bib.get(k.strip(), k.strip()) for k in text.split(",")) + ")"
    if name == "math":
        return f"${text}$"
    if name in ("func", "mod", "class", "meth", "attr"):
        return f"`{text.lstrip('~').split('.')[-1] if text.startswith('~') else text}`"
    if name == "quote" and target:
        return f"{target.group(1)} ({bib.get(target.group(2), target.group(2))})"
    return target.group(1) if target and target.group(1) else text


def _to_markdown(text: str, glued: dict, bib: dict) -> str:
    """MyST markdown as plain markdown: comments, targets and directive fences gone (an admonition's
    title in bold before its body), roles resolved (glued values, citations, numbers)."""
    text = re.sub(r"<!--.*?-->", "", text, flags=re.S)
    text = re.sub(r"(?m)^\([\w-]+\)=\s*$", "", text)  # MyST targets
    text = re.sub(r"(?ms)^```\{admonition\}\s*(.*?)\n(?::\w+:.*?\n)*(.*?)^```\s*$", r"**\1**\n\n\2", text)
    text = re.sub(r"(?ms)^```\{\w[\w-]*\}[^\n]*\n(?::\w+:.*?\n)*(.*?)^```\s*$", r"\1", text)
    return _ROLE.sub(lambda m: _role(m.group(1), m.group(2), glued, bib), text)


def _to_html(text: str) -> str:
    r"""Markdown as HTML, its math kept for KaTeX as ``\(...\)`` and ``\[...\]``."""
    from markdown_it import MarkdownIt

    maths = []

    def keep(m):
        maths.append(m.group(0))
        return f"MATH{len(maths) - 1}MATH"
    text = re.sub(r"\$\$.+?\$\$|\$[^$\n]+?\$", keep, text, flags=re.S)
    out = MarkdownIt("commonmark").enable("table").render(text).strip()

    def back(m):
        src = maths[int(m.group(1))]
        inner = html.escape(src.strip("$"), quote=False)
        return f"\\[{inner}\\]" if src.startswith("$$") else f"\\({inner}\\)"
    return re.sub(r"MATH(\d+)MATH", back, out)


def _inline(text: str) -> str:
    """A heading's text as inline HTML (its math for KaTeX); a leading "1." is the chapter's number, not a list."""
    return re.sub(r"\A<p>(.*)</p>\Z", r"\1", _to_html(re.sub(r"\A(\d+)\. ", r"\1\\. ", text)), flags=re.S)


def render_markdown(text: str, glued=None, bib=None) -> str:
    r"""A chapter's MyST markdown as slide HTML: roles resolved (glued values, citations, numbers),
    directives as their body (an admonition's title in bold), math left as ``\(...\)`` and ``\[...\]``
    for KaTeX in the browser.

    Parameters
    ----------
    text : str
        MyST markdown (a cell of a chapter).
    glued : dict, optional
        The executed chapter's glued values, ``{name: value}``.
    bib : dict, optional
        ``{key: "Guo et al. 2017"}``, for the citations.

    Returns
    -------
    str
        HTML.

    Examples
    --------
    >>> print(render_markdown("An ECE of {glue:text}`ece:.1f` % on $n$ digits {cite}`guo2017calibration`.",
    ...                       {"ece": 2.345}, {"guo2017calibration": "Guo et al. 2017"}))
    <p>An ECE of 2.3 % on \(n\) digits (Guo et al. 2017).</p>
    """
    return _to_html(_to_markdown(text, glued or {}, bib or {}))


def _chunks(text: str) -> list[str]:
    """A long markdown cell split into slide-sized parts, between its top-level items or paragraphs
    (the first line, a heading, stays on the first part)."""
    if len(text) <= _MAX_CHARS:
        return [text]
    blocks = re.split(r"\n(?=- |\n)", text)
    parts, current = [], ""
    for block in blocks:
        if current and len(current) + len(block) > _MAX_CHARS:
            parts.append(current)
            current = ""
        current += ("\n" if current else "") + block
    return parts + [current] if current else parts


def slide_cells(nb) -> list:
    """The cells of an executed chapter tagged ``slide``, each with the section heading above it.

    Parameters
    ----------
    nb : nbformat.NotebookNode
        An executed chapter.

    Returns
    -------
    list of (str, nbformat.NotebookNode)
        ``[(heading, cell)]`` in the chapter's order.

    Examples
    --------
    >>> import nbformat
    >>> new = nbformat.v4
    >>> nb = new.new_notebook(cells=[new.new_markdown_cell("## Bins"), new.new_code_cell("plot()"),
    ...                              new.new_code_cell("plot()", metadata={"tags": ["slide"]})])
    >>> [(heading, cell.source) for heading, cell in slide_cells(nb)]
    [('Bins', 'plot()')]
    """
    out, heading = [], ""
    for cell in nb.cells:
        if cell.cell_type == "markdown":
            found = re.findall(r"(?m)^#{1,3} (.+)$", cell.source)
        else:
            found = []
        if "slide" in cell.get("metadata", {}).get("tags", []):
            out.append((heading, cell))
        if found:
            heading = found[-1]
    return out


@dataclass(frozen=True)
class Slide:
    r"""A slide of a slide source: its title, its body and the speaker's notes (markdown, MyST roles
    and math allowed).

    Attributes
    ----------
    title : str
        The ``## `` heading.
    body : str
        What the slide shows.
    notes : str
        What the speaker says (reveal.js's notes: ``s`` opens the speaker view).

    Examples
    --------
    >>> Slide("ECE", "$\\mathrm{ECE}$", "Weigh each gap.").notes
    'Weigh each gap.'
    """

    title: str
    body: str
    notes: str


def parse_slides(text: str, name: str = "slide source") -> list[Slide]:
    r"""The slides of a slide source (``notebooks/slides/<chapter>.md``).

    Slides are separated by a line ``---``; each starts with a ``## `` title; a line ``Note:``
    starts the speaker's notes, which run to the end of the slide. HTML comments are left out (a
    source opens with one that says what the deck is for). ``![alt](figure:NAME)`` on a line of
    its own is the chapter's figure named ``NAME``.

    Parameters
    ----------
    text : str
        The source.
    name : str, default="slide source"
        Its name, for the error message.

    Returns
    -------
    list of Slide

    Examples
    --------
    >>> src = "<!-- a deck -->\n## ECE\n\n$$\\mathrm{ECE} = \\sum_m w_m g_m$$\n\nNote:\nWeigh the gaps.\n---\n## Bias\n"
    >>> [(s.title, s.notes) for s in parse_slides(src)]
    [('ECE', 'Weigh the gaps.'), ('Bias', '')]
    >>> parse_slides("A line without a title")
    Traceback (most recent call last):
    ...
    ValueError: slide source, slide 1: starts with 'A line without a title', not with a '## ' title
    """
    text = re.sub(r"<!--.*?-->", "", text, flags=re.S)
    out = []
    for part in re.split(r"(?m)^---[ \t]*$", text):
        part = part.strip()
        if not part:
            continue
        head = re.match(r"## (.+)(?:\n|\Z)", part)
        if head is None:
            raise ValueError(f"{name}, slide {len(out) + 1}: starts with {part.splitlines()[0][:60]!r}, "
                             f"not with a '## ' title")
        body, _, notes = _split_notes(part[head.end():])
        out.append(Slide(head.group(1).strip(), body.strip(), notes.strip()))
    return out


def _split_notes(text: str) -> tuple[str, str, str]:
    m = re.search(r"(?m)^Note:[ \t]*", text)
    return (text, "", "") if m is None else (text[:m.start()], "Note:", text[m.end():])


_FIGURE = re.compile(r"(?m)^!\[([^\]]*)\]\(figure:([\w.-]+)\)[ \t]*$")
_GLUE = re.compile(r"\{glue(?::\w+)?\}`([^`:]+)")


def figure_names(text: str) -> list[str]:
    r"""The names of the chapter's figures that a slide source pulls in, in order.

    Parameters
    ----------
    text : str
        A slide source.

    Returns
    -------
    list of str

    Examples
    --------
    >>> figure_names("## A\n\n![diagrams](figure:fig-ch1-capacity)\n")
    ['fig-ch1-capacity']
    """
    return [m.group(2) for m in _FIGURE.finditer(text)]


def _figure_cells(nb) -> dict:
    """``{name: cell}``: the executed chapter's code cells whose figure has a MyST name."""
    out = {}
    for cell in nb.cells:
        name = cell.get("metadata", {}).get("mystnb", {}).get("figure", {}).get("name")
        if cell.cell_type == "code" and name:
            out[name] = cell
    return out


def _png(cell) -> str:
    return next((o["data"]["image/png"].strip() for o in cell.get("outputs", []) if "image/png" in o.get("data", {})),
                "")


def _source_sections(source: str, nb, glued: dict, bib: dict, name: str) -> list[str]:
    """The ``<section>`` of each slide of a slide source; a figure or glued value the executed
    chapter lacks is a ``ValueError`` that names it."""
    figures = _figure_cells(nb)
    missing = [f for f in figure_names(source) if f not in figures or not _png(figures[f])]
    if missing:
        raise ValueError(f"{name} asks for the figure {missing[0]!r}, which the executed chapter does not have "
                         f"(its figures: {', '.join(sorted(figures)) or 'none'})")
    unglued = [k for k in _GLUE.findall(source) if k not in glued]
    if unglued:
        raise ValueError(f"{name} uses the glued value {unglued[0]!r}, which the executed chapter does not glue")
    return [_slide_section(slide, figures, glued, bib) for slide in parse_slides(source, name)]


def _slide_section(slide, figures: dict, glued: dict, bib: dict) -> str:
    """One slide's ``<section>``: its body with its figures (their captions go to the speaker notes)."""
    shown, captions = [], []

    def keep(m):
        cell = figures[m.group(2)]
        shown.append(f'<img alt="{html.escape(m.group(1) or "figure")}" src="data:image/png;base64,{_png(cell)}">')
        caption = cell.get("metadata", {}).get("mystnb", {}).get("figure", {}).get("caption", "")
        if caption:
            captions.append(caption)
        return f"\n\nFIGURE{len(shown) - 1}FIGURE\n\n"
    body = _FIGURE.sub(keep, slide.body)
    body = _to_html(_to_markdown(body, glued, bib))
    body = re.sub(r"<p>FIGURE(\d+)FIGURE</p>", lambda m: shown[int(m.group(1))], body)
    notes = slide.notes + "".join(f"\n\n*The book's caption:* {c}" for c in captions)
    aside = f'<aside class="notes">{_to_html(_to_markdown(notes, glued, bib))}</aside>' if notes.strip() else ""
    kind = "figure" if shown else "text"
    return f'<section class="{kind}"><h2>{_inline(slide.title)}</h2>{body}{aside}</section>'


def _figure(cell, glued, bib) -> str:
    parts = []
    for o in cell.get("outputs", []):
        data = o.get("data", {})
        if "image/png" in data:
            parts.append(f'<img alt="figure" src="data:image/png;base64,{data["image/png"].strip()}">')
    caption = cell.get("metadata", {}).get("mystnb", {}).get("figure", {}).get("caption", "")
    if caption:
        parts.append(f'<div class="caption">{render_markdown(caption, glued, bib)}</div>')
    return "\n".join(parts)


def deck_html(nb, title: str, glued=None, bib=None, assets: str = "assets", source=None,
              name: str = "slide source") -> str:
    r"""The reveal.js deck of an executed chapter: a title slide, then the slides of its slide source
    (:func:`parse_slides`), or, without one, a slide per marked cell.

    Parameters
    ----------
    nb : nbformat.NotebookNode
        The executed chapter (its figures and glued values are the deck's).
    title : str
        The chapter's title.
    glued : dict, optional
        Its glued values (default: read from ``nb``).
    bib : dict, optional
        ``{key: "Guo et al. 2017"}``, for the citations.
    assets : str, default="assets"
        Where reveal.js and KaTeX are, relative to the deck (:func:`fetch_assets`).
    source : str, optional
        The chapter's slide source; its figures are the executed chapter's (a ``ValueError`` names
        one that it lacks).
    name : str, default="slide source"
        The source's name, for that error.

    Returns
    -------
    str
        The deck, one HTML file: its figures inside it, reveal.js and KaTeX loaded from ``assets``.

    Examples
    --------
    >>> import nbformat
    >>> nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell(
    ...     "## Key takeaways\n\n- Bins hide gaps.", metadata={"tags": ["slide"]})])
    >>> deck = deck_html(nb, "9. A chapter")
    >>> deck.count("<section"), "<li>Bins hide gaps.</li>" in deck
    (2, True)
    >>> deck = deck_html(nb, "9. A chapter", source="## The ECE\n\n$$\\sum_m$$\n\nNote:\nWeigh the gaps.")
    >>> deck.count("<section"), '<aside class="notes"><p>Weigh the gaps.</p></aside>' in deck
    (2, True)
    """
    glued, bib = glued if glued is not None else _glued(nb), bib or {}
    sections = [f'<section class="title"><h1>{_inline(title)}</h1>'
                f"<p>calibcourse: calibration of neural networks</p></section>"]
    if source is not None:
        sections += _source_sections(source, nb, glued, bib, name)
    for heading, cell in slide_cells(nb) if source is None else []:
        if cell.cell_type == "markdown":
            source = cell.source.strip()
            own = re.match(r"#{1,3} (.+)|```\{admonition\}\s*(.+)", source)
            name = (own.group(1) or own.group(2)).strip() if own else heading
            if own and own.group(1):
                source = source[own.end():]
            elif own:  # the admonition alone, its title the slide's
                fence = re.search(r"(?m)^```\s*$", source)
                source = source[source.index("\n") + 1: fence.start() if fence else None]
                source = re.sub(r"(?m)^:\w+:.*\n", "", source)
            text = re.split(r"(?m)^## ", _to_markdown(source, glued, bib))[0]  # up to the next heading
            for k, part in enumerate(_chunks(text.strip())):
                head = _inline(name) + (" (continued)" if k else "")
                sections.append(f"<section><h2>{head}</h2>{_to_html(part)}</section>")
        else:
            sections.append(f"<section><h3>{_inline(heading)}</h3>{_figure(cell, glued, bib)}</section>")
    body = "\n".join(sections)
    return f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>{html.escape(title)}</title>
<meta name="viewport" content="width=device-width, initial-scale=1.0">
<link rel="stylesheet" href="{assets}/reveal.js/dist/reveal.css">
<link rel="stylesheet" href="{assets}/reveal.js/dist/theme/white.css">
<link rel="stylesheet" href="{assets}/katex/dist/katex.min.css">
<style>
.reveal {{ font-size: 30px; }}
.reveal h1, .reveal h2, .reveal h3 {{ text-transform: none; }}
.reveal h1 {{ font-size: 1.7em; }} .reveal h2 {{ font-size: 1.25em; }} .reveal h3 {{ font-size: 1.0em; }}
.reveal section {{ text-align: left; }}
.reveal section.title {{ padding-top: 220px; }}
.reveal section img {{ display: block; margin: 0 auto; max-height: 540px; max-width: 100%; }}
.reveal section.figure img {{ width: 100%; height: 430px; max-height: none; object-fit: contain; }}
.reveal section.figure h2 + img {{ height: 610px; }}
.reveal .caption {{ font-size: 0.55em; line-height: 1.3; }}
.reveal ul, .reveal ol {{ display: block; }}
.reveal li, .reveal p {{ font-size: 0.8em; line-height: 1.35; }}
.reveal table {{ font-size: 0.5em; }}
.reveal section.text li, .reveal section.text p {{ font-size: 0.95em; }}
.reveal section.text table {{ font-size: 0.8em; }}
.reveal .katex-display {{ margin: 0.5em 0; }}
</style></head>
<body><div class="reveal"><div class="slides">
{body}
</div></div>
<script src="{assets}/reveal.js/dist/reveal.js"></script>
<script src="{assets}/reveal.js/plugin/notes/notes.js"></script>
<script src="{assets}/katex/dist/katex.min.js"></script>
<script src="{assets}/katex/dist/contrib/auto-render.min.js"></script>
<script>
renderMathInElement(document.body, {{delimiters: [{{left: "\\\\[", right: "\\\\]", display: true}},
                                              {{left: "\\\\(", right: "\\\\)", display: false}}]}});
Reveal.initialize({{hash: true, slideNumber: true, center: false, width: 1280, height: 800, margin: 0.06,
                   plugins: [RevealNotes]}});
</script>
</body></html>
"""


def fetch_assets(dest: Path, log=print) -> Path:
    """Copy the pinned reveal.js and KaTeX into ``dest`` (from ``npm pack``, the registry's tarballs),
    unless they are there already.

    Parameters
    ----------
    dest : path
        The folder (``_build/slides/assets``); it holds ``reveal.js/dist``, ``reveal.js/plugin/notes``,
        ``katex/dist`` and a ``VERSIONS`` file (the packages, their versions and the folders copied).
    log : callable, default=print
        Called with a line when the packages were fetched.

    Returns
    -------
    pathlib.Path
        ``dest``; ``RuntimeError`` when npm is missing or the registry cannot be reached.

    Examples
    --------
    Skipped in the doctests: it asks the npm registry (about a second).

    >>> fetch_assets(Path("_build/slides/assets"))  # doctest: +SKIP
    slides: reveal.js 5.2.1 and KaTeX 0.16.22 copied to _build/slides/assets
    PosixPath('_build/slides/assets')
    """
    dest = Path(dest)
    marker = dest / "VERSIONS"
    wanted = "".join(f"{name}@{version} {' '.join(keep)}\n" for name, (version, keep) in PACKAGES.items())
    if marker.exists() and marker.read_text() == wanted:
        return dest
    npm = shutil.which("npm")
    if npm is None:
        raise RuntimeError("npm not found: make slides installs Debian's npm with apt")
    shutil.rmtree(dest, ignore_errors=True)
    dest.mkdir(parents=True)
    with tempfile.TemporaryDirectory(prefix="calibcourse-npm-") as tmp:
        specs = [f"{name}@{version}" for name, (version, _) in PACKAGES.items()]
        proc = subprocess.run([npm, "pack", *specs, "--silent", "--pack-destination", tmp],
                              capture_output=True, text=True)
        if proc.returncode != 0:
            raise RuntimeError(f"npm pack {' '.join(specs)} failed: {proc.stderr.strip()[-300:]}")
        for name, (version, keep) in PACKAGES.items():
            (tarball,) = Path(tmp).glob(f"{name}-{version}.tgz")
            with tarfile.open(tarball) as tar:
                members = [m for m in tar.getmembers() if m.isfile()
                           and any(m.name.startswith(f"package/{k}/") for k in keep)]
                for m in members:
                    m.name = m.name.removeprefix("package/")
                tar.extractall(dest / name, members=members, filter="data")
    marker.write_text(wanted)
    log(f"slides: reveal.js {PACKAGES['reveal.js'][0]} and KaTeX {PACKAGES['katex'][0]} copied to {dest}")
    return dest


def build_slides(root, profile: str = "default", log=print) -> list[Path]:
    """Execute the student edition where needed, then write a deck per chapter and an index: from the
    chapter's slide source (:data:`SOURCES`) where it has one, else from its cells tagged ``slide``.

    Parameters
    ----------
    root : str or path
        The book's root.
    profile : {"ci", "default", "full"}, default="default"
        The profile the pages are executed with.
    log : callable, default=print
        Called with each progress line.

    Returns
    -------
    list of pathlib.Path
        The decks, ``root/_build/slides/<chapter>.html``. A slide source that names no chapter of
        the table of contents, or that cannot be parsed, is a ``ValueError`` before anything runs.

    Examples
    --------
    Skipped in the doctests: it executes the book (seconds after ``make book``).

    >>> build_slides(".")  # doctest: +SKIP
    slides: 8 decks (130 slides) in 2.3 s -> .../_build/slides/index.html
    """
    import nbformat

    from calibcourse.tools import build

    root = Path(root).resolve()
    start = time.perf_counter()
    chapters = [page for page in build.notebook_pages(root) if _CHAPTER.match(page.source.name)]
    sources = {path.stem: path for path in sorted((root / SOURCES).glob("*.md"))}
    for stem, path in sources.items():
        if stem not in {page.source.stem for page in chapters}:
            raise ValueError(f"{SOURCES / path.name} is the slide source of no chapter (no notebooks/{stem}.md "
                             f"in _toc.yml)")
        parse_slides(path.read_text(), str(SOURCES / path.name))
    build.prepare_pages(root, profile, "student")
    out = root / SLIDES
    fetch_assets(out / "assets", log)
    bib = _bib(root)
    decks = []
    for page in chapters:
        nb = nbformat.read(root / (page.toc_entry + ".ipynb"), as_version=4)
        title = re.search(r"(?m)^# (.+)$", page.source.read_text()).group(1).strip()
        path = out / f"{page.source.stem}.html"
        src = sources.get(page.source.stem)
        deck = deck_html(nb, title, bib=bib, source=src.read_text() if src else None,
                         name=str(SOURCES / src.name) if src else "")
        path.write_text(deck)
        decks.append((title, path, deck.count("<section") - 1))  # the slides after the title
    items = "\n".join(f'<li><a href="{p.name}">{html.escape(t)}</a> ({n} slides)</li>' for t, p, n in decks)
    (out / "index.html").write_text(f'<!doctype html><html lang="en"><head><meta charset="utf-8">'
                                    f"<title>calibcourse: slides</title></head><body><h1>Slides</h1>"
                                    f"<ul>\n{items}\n</ul></body></html>\n")
    log(f"slides: {len(decks)} decks ({sum(n for *_, n in decks)} slides) in {time.perf_counter() - start:.1f} s "
        f"-> {out / 'index.html'}")
    return [p for _, p, _ in decks]


def main(argv=None) -> int:
    """``make slides``.

    Parameters
    ----------
    argv : list of str, optional
        The arguments (default: the command line's).

    Returns
    -------
    int
        0, or 1 when the build failed (the reason on stderr, one line).

    Examples
    --------
    >>> import contextlib, sys, tempfile
    >>> with contextlib.redirect_stderr(sys.stdout):
    ...     main(["--root", tempfile.mkdtemp()])  # doctest: +ELLIPSIS
    slides: ... not found: the build reads the table of contents from it
    1
    """
    from calibcourse.tools.build import BuildError

    ap = argparse.ArgumentParser(prog="python -m calibcourse.tools.slides", description=__doc__.split("\n")[0])
    ap.add_argument("--profile", default="default", choices=("ci", "default", "full"))
    ap.add_argument("--root", default=".")
    args = ap.parse_args(argv)
    try:
        build_slides(Path(args.root), args.profile)
    except (BuildError, RuntimeError, ValueError) as exc:
        print(f"slides: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
