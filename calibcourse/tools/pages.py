"""The book's pages: which pages ``_toc.yml`` generates from the jupytext sources in ``notebooks/``,
and the fingerprint that decides whether a page executes again (read by :mod:`calibcourse.tools.build`).
"""
from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass
from fnmatch import fnmatch
from pathlib import Path

from calibcourse.tools._layout import GENERATED, LEDGER_PAGE, BuildError

__all__ = ["SOURCES", "FINGERPRINT_SUFFIX", "Page", "toc_entries", "notebook_pages", "page_reads", "fingerprint",
           "fingerprint_path", "is_up_to_date"]

#: the jupytext sources of the generated pages, relative to the root
SOURCES = Path("notebooks")
#: the suffix of the file beside an executed notebook that holds its fingerprint
FINGERPRINT_SUFFIX = ".fingerprint"


@dataclass
class Page:
    """A page of the book generated from a jupytext notebook.

    Attributes
    ----------
    toc_entry : str
        Its entry in ``_toc.yml``, e.g. ``"book/generated/01_theory"``.
    source : pathlib.Path
        The jupytext source, e.g. ``<root>/notebooks/01_theory.md``.
    output : pathlib.Path
        The executed notebook, e.g. ``<root>/book/generated/01_theory.ipynb``.

    Examples
    --------
    >>> Page("book/generated/01_theory", Path("notebooks/01_theory.md"),
    ...      Path("book/generated/01_theory.ipynb")).output.name
    '01_theory.ipynb'
    """

    toc_entry: str   # e.g. book/generated/01_theory
    source: Path     # notebooks/01_theory.md
    output: Path     # book/generated/01_theory.ipynb


# --------------------------------------------------------------------------- table of contents
def toc_entries(toc: dict) -> list[str]:
    """Every ``file`` (and ``root``) of a Jupyter Book 1.x ``_toc.yml``, in reading order.

    Parameters
    ----------
    toc : dict
        A ``_toc.yml`` as ``yaml.safe_load`` reads it.

    Returns
    -------
    list of str
        The entries, in reading order.

    Examples
    --------
    >>> toc = {"root": "book/intro", "parts": [
    ...     {"caption": "Chapters", "chapters": [{"file": "book/generated/01_theory",
    ...                                           "sections": [{"file": "book/notes"}]}]},
    ...     {"caption": "Labs", "chapters": [{"file": "book/generated/labs/lab1_ece"}]}]}
    >>> toc_entries(toc)
    ['book/intro', 'book/generated/01_theory', 'book/notes', 'book/generated/labs/lab1_ece']
    """
    found = [toc["root"]] if "root" in toc else []

    def walk(node):
        if isinstance(node, dict):
            if "file" in node:
                found.append(node["file"])
            for key in ("parts", "chapters", "sections"):
                for child in node.get(key, []) or []:
                    walk(child)
        elif isinstance(node, list):
            for child in node:
                walk(child)

    walk({k: v for k, v in toc.items() if k != "root"})
    return found


def notebook_pages(root: Path) -> list[Page]:
    r"""The pages of ``_toc.yml`` that are generated from jupytext sources in ``notebooks/``.

    Hand-written pages (outside ``book/generated``) and the claims ledger are not among them.

    Parameters
    ----------
    root : pathlib.Path
        The book's root (holds ``_config.yml``, ``_toc.yml``, ``notebooks/``).

    Returns
    -------
    list of Page
        In the order of ``_toc.yml``; a missing ``_toc.yml`` or source raises :class:`BuildError`.

    Examples
    --------
    >>> import tempfile
    >>> root = Path(tempfile.mkdtemp())
    >>> (root / "notebooks").mkdir()
    >>> _ = (root / "notebooks" / "01_theory.md").write_text("# Theory")
    >>> _ = (root / "_toc.yml").write_text("root: book/intro\nchapters:\n"
    ...                                    "- file: book/generated/01_theory\n- file: book/generated/what_held\n")
    >>> [(page.toc_entry, page.source.relative_to(root).as_posix()) for page in notebook_pages(root)]
    [('book/generated/01_theory', 'notebooks/01_theory.md')]
    """
    import yaml

    toc_path = root / "_toc.yml"
    if not toc_path.exists():
        raise BuildError(f"{toc_path} not found: the build reads the table of contents from it")
    toc = yaml.safe_load(toc_path.read_text())
    pages = []
    for entry in toc_entries(toc):
        entry = entry.removesuffix(".ipynb").removesuffix(".md")
        rel = Path(entry)
        if rel == LEDGER_PAGE:
            continue  # written by write_ledger from the executed chapters
        try:
            name = rel.relative_to(GENERATED)
        except ValueError:
            continue  # a hand-written page of book/ (intro, ...)
        source = root / SOURCES / name.with_suffix(".md")
        if not source.exists():
            raise BuildError(f"_toc.yml lists {entry} but its source {source.relative_to(root)} "
                             "does not exist")
        pages.append(Page(entry, source, root / rel.with_suffix(".ipynb")))
    return pages


# --------------------------------------------------------------------------- fingerprints
def _hash_tree(h, base: Path, patterns=("**/*",)) -> None:
    """Hash every file under ``base`` (names and contents), skipping caches and the temporary
    directories of cache writes in progress (``.tmp-*``: a training run may be writing one)."""
    if not base.exists():
        return
    files = set()
    for dirpath, dirnames, filenames in os.walk(base):
        dirnames[:] = [d for d in dirnames if d != "__pycache__" and not d.startswith(".tmp-")]
        for name in filenames:
            p = Path(dirpath) / name
            if p.suffix != ".pyc" and any(fnmatch(name, pat.rsplit("/", 1)[-1]) for pat in patterns):
                files.add(p)
    for p in sorted(files):
        h.update(str(p.relative_to(base)).encode())
        h.update(hashlib.sha256(p.read_bytes()).digest())


def page_reads(source: Path) -> list[str]:
    r"""The pages a page reads when it executes: ``calibcourse: reads: [...]`` in its front matter.

    A report of Part II reads the claims its chapters published in their executed notebooks
    (:func:`calibcourse.study.course.evidence.published_claims`); it is executed again whenever one
    of those pages' sources changes (:func:`fingerprint`).

    Parameters
    ----------
    source : pathlib.Path
        A jupytext MyST source.

    Returns
    -------
    list of str
        Page names, e.g. ``["01_theory"]``; empty when it reads none.

    Examples
    --------
    >>> import tempfile
    >>> p = Path(tempfile.mkdtemp()) / "report.md"
    >>> _ = p.write_text("---\ncalibcourse:\n  reads: [01_theory, 02_causes]\n---\n# A report\n")
    >>> page_reads(p)
    ['01_theory', '02_causes']
    """
    import re

    import yaml

    m = re.match(r"---\n(.*?)\n---\n", Path(source).read_text(), flags=re.S)
    meta = (yaml.safe_load(m.group(1)) if m else None) or {}
    return [str(name) for name in (meta.get("calibcourse") or {}).get("reads", [])]


def fingerprint(page: Page, params: dict, root: Path, package_dir: Path | None = None) -> str:
    r"""sha256 of the page source, the package, requirements.txt, data/ and the parameters, and
    the sources of the pages it reads (:func:`page_reads`).

    Parameters
    ----------
    page : Page
        The page.
    params : dict
        Its parameters, ``{"profile": ..., "edition": ...}``.
    root : pathlib.Path
        The book's root (holds ``_config.yml``, ``_toc.yml``, ``notebooks/``).
    package_dir : pathlib.Path, optional
        The package's folder (default ``root/calibcourse``); its ``.py`` files are hashed.

    Returns
    -------
    str
        The hex digest.

    Examples
    --------
    >>> import tempfile
    >>> root = Path(tempfile.mkdtemp())
    >>> (root / "notebooks").mkdir()
    >>> page = Page("book/generated/ch", root / "notebooks" / "ch.md", root / "book" / "generated" / "ch.ipynb")
    >>> _ = page.source.write_text("# A chapter")
    >>> fp = fingerprint(page, {"profile": "ci"}, root)
    >>> fp == fingerprint(page, {"profile": "ci"}, root), fp == fingerprint(page, {"profile": "default"}, root)
    (True, False)
    >>> (root / "data").mkdir()
    >>> _ = (root / "data" / "new.csv").write_text("1,2")             # a change in data/ re-executes
    >>> fp == fingerprint(page, {"profile": "ci"}, root)
    False
    >>> _ = page.source.write_text("---\ncalibcourse:\n  reads: [other]\n---\n# A report")
    >>> _ = (root / "notebooks" / "other.md").write_text("# A chapter")
    >>> fp = fingerprint(page, {"profile": "ci"}, root)
    >>> _ = (root / "notebooks" / "other.md").write_text("# A chapter, changed")  # a page it reads
    >>> fp == fingerprint(page, {"profile": "ci"}, root)
    False
    """
    h = hashlib.sha256()
    h.update(page.source.read_bytes())
    for name in page_reads(page.source):   # what the pages it reads executed from
        read = root / SOURCES / f"{name}.md"
        if not read.exists():
            raise BuildError(f"{page.source.relative_to(root)} reads the page {name}, whose source "
                             f"{read.relative_to(root)} does not exist")
        h.update(read.read_bytes())
    h.update(json.dumps(params, sort_keys=True).encode())
    _hash_tree(h, package_dir or root / "calibcourse", ("**/*.py",))
    req = root / "requirements.txt"
    if req.exists():
        h.update(req.read_bytes())
    _hash_tree(h, root / "data")
    return h.hexdigest()


def fingerprint_path(page: Page) -> Path:
    """Where the fingerprint of ``page``'s last successful execution is kept, beside its notebook.

    Parameters
    ----------
    page : Page
        The page.

    Returns
    -------
    pathlib.Path
        Its executed notebook's path with :data:`FINGERPRINT_SUFFIX` added.

    Examples
    --------
    >>> fingerprint_path(Page("book/generated/ch", Path("notebooks/ch.md"), Path("book/generated/ch.ipynb"))).name
    'ch.ipynb.fingerprint'
    """
    return page.output.with_name(page.output.name + FINGERPRINT_SUFFIX)


def is_up_to_date(page: Page, fp: str) -> bool:
    r"""Whether ``page``'s executed notebook exists and was executed at the fingerprint ``fp``.

    Parameters
    ----------
    page : Page
        The page.
    fp : str
        Its fingerprint now (:func:`fingerprint`).

    Returns
    -------
    bool
        True when the notebook need not execute again.

    Examples
    --------
    >>> import tempfile
    >>> out = Path(tempfile.mkdtemp()) / "ch.ipynb"
    >>> page = Page("book/generated/ch", Path("notebooks/ch.md"), out)
    >>> _ = out.write_text("{}"); _ = fingerprint_path(page).write_text("abc\n")
    >>> is_up_to_date(page, "abc"), is_up_to_date(page, "abd")
    (True, False)
    """
    f = fingerprint_path(page)
    return page.output.exists() and f.exists() and f.read_text().strip() == fp
