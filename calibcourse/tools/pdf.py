r"""The book as one PDF (``make pdf``): Jupyter Book's LaTeX builder, then a check of what it holds.

    python -m calibcourse.tools.pdf [--profile default] [--check-only]

The student edition's pages (executed as ``make book`` executes them, skipped where unchanged)
are typeset by ``jupyter-book build --builder pdflatex`` with XeLaTeX (the text has Greek
letters, minus signs and arrows that pdfLaTeX cannot set) and Debian's TeX Live
(``make pdf`` installs the packages with apt where they are missing); nothing is downloaded
at build time. Two departures from Jupyter Book's defaults, both for LaTeX's sake:

- figures are placed where they stand (``figure_align: H``): a floating figure inside an
  exercise's solution box stops LaTeX ("Not in outer par mode");
- Jupyter Book's LaTeX class asks for the ``bbm`` package (double-struck digits), which Debian
  ships only in its 1.4 GB ``texlive-fonts-extra``; the book never uses it, and a stand-in
  package maps its one command to ``amssymb``'s ``\mathbb``.

The PDF lands in ``_build/pdf/calibcourse.pdf`` and is then checked (:func:`check_pdf`): every
chapter's title is in it, each with at least one figure before the next chapter starts.
"""
from __future__ import annotations

import argparse
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

__all__ = ["PDF", "chapter_titles", "check_pdf", "build_pdf", "main"]

PDF = Path("_build") / "pdf" / "calibcourse.pdf"
_STAGE = Path("_build") / "pdf" / "stage"
_BBM = r"""\NeedsTeXFormat{LaTeX2e}
\ProvidesPackage{bbm}[2026/11/27 calibcourse stand-in for the bbm fonts]
\RequirePackage{amssymb}
\providecommand{\mathbbm}[1]{\mathbb{#1}}
"""
#: chapter pages: the lectures of notebooks/ whose name starts with their number (01_theory, ..., 06_practice)
_CHAPTER = re.compile(r"^\d\d[a-z]?_")


def chapter_titles(root) -> list[str]:
    """The titles of the book's chapters (the first heading of each lecture page), in the book's order.

    Parameters
    ----------
    root : str or path
        The book's root (holds ``_toc.yml`` and ``notebooks/``).

    Returns
    -------
    list of str
        One title per lecture page of ``_toc.yml`` (``notebooks/01_theory.md``, ...).

    Examples
    --------
    >>> chapter_titles(Path(__file__).resolve().parents[2])[:2]
    ['1. What calibration is, and how we measure it', '2. What makes networks miscalibrated']
    """
    from calibcourse.tools.build import notebook_pages

    titles = []
    for page in notebook_pages(Path(root)):
        if _CHAPTER.match(page.source.name):
            heading = re.search(r"(?m)^# (.+)$", page.source.read_text())
            if heading:
                titles.append(heading.group(1).strip())
    return titles


def _squash(text: str) -> str:
    """Letters and digits only, lower case: a title as it reads in any line breaking or font."""
    return re.sub(r"[^0-9a-z]+", "", text.replace("\u2019", "'").lower())


def _tool(name: str) -> str:
    path = shutil.which(name)
    if path is None:
        raise RuntimeError(f"{name} not found: it is in Debian's poppler-utils (make pdf installs it)")
    return path


def check_pdf(pdf, titles) -> dict:
    """Where each chapter starts in ``pdf`` and how many images it holds (poppler's ``pdftotext``
    and ``pdfimages``).

    A chapter starts on the page that opens with "CHAPTER", its number in words and its title
    (Jupyter Book's LaTeX class sets each page of the table of contents as a chapter); it ends
    where the next chapter of the book starts, one of ``titles`` or not.

    Parameters
    ----------
    pdf : path
        The PDF.
    titles : list of str
        The chapters' titles (:func:`chapter_titles`).

    Returns
    -------
    dict
        ``{title: (first page, number of images)}``; a title not found, or a chapter without an
        image, raises ``ValueError`` naming them.

    Examples
    --------
    >>> check_pdf("_build/pdf/calibcourse.pdf", chapter_titles("."))  # doctest: +SKIP
    {'1. What calibration is, and how we measure it': (11, 5), ...}
    """
    pdf = Path(pdf)
    if not pdf.is_file():
        raise ValueError(f"{pdf}: no such PDF (run make pdf)")
    text = subprocess.run([_tool("pdftotext"), str(pdf), "-"], capture_output=True, text=True, check=True).stdout
    pages = text.split("\f")
    # a chapter's first page opens with "CHAPTER <number>" and its title (Jupyter Book's LaTeX class);
    # the contents (dot leaders) and the landing page's list of chapters do not
    body = [_squash(page) if page.lstrip().startswith("CHAPTER") else "" for page in pages]
    listing = subprocess.run([_tool("pdfimages"), "-list", str(pdf)], capture_output=True, text=True,
                             check=True).stdout.splitlines()[2:]
    # page, num, type, ...: a figure with transparency is an image and its soft mask; count the images
    image_pages = [int(f[0]) for f in (line.split() for line in listing) if len(f) > 2 and f[0].isdigit()
                   and f[2] == "image"]
    starts, missing = {}, []
    for title in titles:
        head = re.compile(rf"chapter[a-z]+{re.escape(_squash(title))}")
        found = next((i + 1 for i, page in enumerate(body) if head.match(page)), None)
        if found is None:
            missing.append(title)
        else:
            starts[title] = found
    # a chapter ends where the next chapter of the book starts, a checked one or not (the ledger, a lab)
    chapter_starts = [i + 1 for i, page in enumerate(body) if page] + [len(pages) + 1]
    report = {}
    for title, first in starts.items():
        end = min(p for p in chapter_starts if p > first)
        report[title] = (first, sum(first <= p < end for p in image_pages))
    bare = [t for t, (_, n) in report.items() if n == 0]
    problems = ([f"no chapter titled {t!r}" for t in missing]
                + [f"no figure in chapter {t!r} (pages {report[t][0]} on)" for t in bare])
    if problems:
        raise ValueError(f"{pdf}: " + "; ".join(problems))
    return {t: report[t] for t in titles}


def _config(root: Path, stage: Path) -> Path:
    """``_config.yml`` with the LaTeX settings of the PDF (written beside the stage)."""
    import yaml

    config = yaml.safe_load((root / "_config.yml").read_text())
    (stage / "bbm.sty").write_text(_BBM)
    config["latex"] = {"latex_engine": "xelatex", "use_jupyterbook_latex": True,
                       "latex_documents": {"targetname": "calibcourse.tex"}}
    sphinx = config.setdefault("sphinx", {}).setdefault("config", {})
    sphinx.update({"latex_use_xindy": False, "latex_elements": {"figure_align": "H"},
                   "latex_additional_files": [str(stage / "bbm.sty")]})
    path = stage / "_config.yml"
    path.write_text(yaml.safe_dump(config, sort_keys=False))
    return path


def build_pdf(root, profile: str = "default", log=print) -> Path:
    """Execute the student edition's pages where needed, typeset them, check the PDF.

    Parameters
    ----------
    root : str or path
        The book's root.
    profile : {"ci", "default", "full"}, default="default"
        The profile the pages are executed with.
    log : callable, default=print
        Called with the summary line.

    Returns
    -------
    pathlib.Path
        ``root/_build/pdf/calibcourse.pdf``; a failed build raises
        :class:`calibcourse.tools.build.BuildError` with LaTeX's first errors, a PDF that lacks a
        chapter or a chapter's figures ``ValueError``.

    Examples
    --------
    Skipped in the doctests: it executes the book and runs LaTeX (about half a minute after
    ``make book``).

    >>> build_pdf(".")  # doctest: +SKIP
    pdf: 226 pages, 8 chapters, each with its figures, built in 22.4 s -> .../_build/pdf/calibcourse.pdf
    PosixPath('.../_build/pdf/calibcourse.pdf')
    """
    from calibcourse.tools import build

    root = Path(root).resolve()
    start = time.perf_counter()
    build.prepare_pages(root, profile, "student")
    stage = root / _STAGE
    shutil.rmtree(stage, ignore_errors=True)
    stage.mkdir(parents=True)
    jb = Path(sys.executable).with_name("jupyter-book")
    cmd = [str(jb) if jb.exists() else "jupyter-book", "build", str(root), "--all", "--builder", "pdflatex",
           "--path-output", str(stage), "--config", str(_config(root, stage))]
    proc = subprocess.run(cmd, cwd=root, capture_output=True, text=True)
    log_path = root / "_build" / "pdf" / "latex.log"
    log_path.write_text(proc.stdout + proc.stderr)
    made = stage / "_build" / "latex" / "calibcourse.pdf"
    if proc.returncode != 0 or not made.exists():
        errors = [ln for ln in (proc.stdout + proc.stderr).splitlines() if ln.startswith("!")][:10]
        raise build.BuildError(f"the LaTeX build failed (exit {proc.returncode}); full log in {log_path}:\n"
                               + "\n".join("    " + ln for ln in errors))
    out = root / PDF
    shutil.copy(made, out)
    report = check_pdf(out, chapter_titles(root))
    pages = len(subprocess.run([_tool("pdftotext"), str(out), "-"], capture_output=True, text=True).stdout
                .split("\f")) - 1
    log(f"pdf: {pages} pages, {len(report)} chapters, each with its figures, built in "
        f"{time.perf_counter() - start:.1f} s -> {out}")
    return out


def main(argv=None) -> int:
    """``make pdf``: build and check the PDF (``--check-only``: check the one built).

    Parameters
    ----------
    argv : list of str, optional
        The arguments (default: the command line's).

    Returns
    -------
    int
        0, or 1 when the build or the check failed (the reason on stderr, one line).

    Examples
    --------
    >>> import contextlib, sys, tempfile
    >>> with contextlib.redirect_stderr(sys.stdout):
    ...     main(["--check-only", "--root", tempfile.mkdtemp()])  # doctest: +ELLIPSIS
    pdf: ... not found: the build reads the table of contents from it
    1
    """
    from calibcourse.tools.build import BuildError

    ap = argparse.ArgumentParser(prog="python -m calibcourse.tools.pdf", description=__doc__.split("\n")[0])
    ap.add_argument("--profile", default="default", choices=("ci", "default", "full"))
    ap.add_argument("--root", default=".")
    ap.add_argument("--check-only", action="store_true", help="only check _build/pdf/calibcourse.pdf")
    args = ap.parse_args(argv)
    root = Path(args.root).resolve()
    try:
        if args.check_only:
            for title, (first, n) in check_pdf(root / PDF, chapter_titles(root)).items():
                print(f"{title}: page {first}, {n} images")
        else:
            build_pdf(root, args.profile)
    except (BuildError, ValueError, RuntimeError) as exc:
        print(f"pdf: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
