"""The book's claims ledger, written from the executed chapters: ``_build/claims.json`` and the
"What held" page (``book/generated/what_held.md``)."""
from __future__ import annotations

import json
import os
from pathlib import Path

from calibcourse.tools._layout import CLAIMS_JSON, LEDGER_PAGE, BuildError

__all__ = ["collect_claims", "write_ledger"]


def collect_claims(pages: list) -> list:
    """The claims every executed chapter published (:meth:`calibcourse.study.analysis.ledger.Ledger.publish`).

    Parameters
    ----------
    pages : list of calibcourse.tools.pages.Page
        The book's pages; one not executed yet has no claim.

    Returns
    -------
    list of dict
        The claims, in the pages' order.

    Examples
    --------
    >>> collect_claims([])
    []
    """
    from calibcourse.study.course.evidence import notebook_claims

    claims = []
    for page in pages:
        if page.output.exists():
            claims.extend(notebook_claims(page.output))
    return claims


def bib_titles(bib: Path) -> dict:
    """``{key: "Guo et al. (2017), On Calibration of Modern Neural Networks"}`` from a .bib file."""
    from calibcourse.tools.bibliography import read_bib

    return {key: entry.reference for key, entry in read_bib(bib).items()}


def write_ledger(root: Path, pages: list, log=print) -> list:
    """Write ``_build/claims.json`` and the "What held" page from the executed chapters.

    The claims are those the chapters published with
    :meth:`calibcourse.study.analysis.ledger.Ledger.publish`; pages not executed yet are left out. Each
    gets its kind and its registration (:func:`calibcourse.tools.registration.registration`: from the
    history, or from ``data/registration.json`` in a clone without one; a claim with no record is
    "not checked", and said so).

    Parameters
    ----------
    root : pathlib.Path
        The book's root (holds ``_config.yml``, ``_toc.yml``, ``notebooks/``).
    pages : list of Page
        The executed pages (:func:`notebook_pages`).
    log : callable, default=print
        Called with each progress line.

    Returns
    -------
    list of dict
        The claims, sorted by chapter and id; an inconsistent ledger raises :class:`BuildError`.

    Examples
    --------
    >>> import tempfile
    >>> root = Path(tempfile.mkdtemp())
    >>> write_ledger(root, [])
    registration: read from data/registration.json (not a git repository)
    claims: 0 -> _build/claims.json (0 held, 0 not held, 0 inconclusive)
    []
    >>> sorted(p.relative_to(root).as_posix() for p in root.rglob("*.*"))
    ['_build/claims.json', 'book/generated/what_held.md']
    """
    from calibcourse.study.analysis.ledger import check_claims, ledger_page, with_registration
    from calibcourse.study.analysis.ledger.reads import CHOICE_CAVEATS, CHOICES, CLAIM_READS
    from calibcourse.tools._history import GitError
    from calibcourse.tools.registration import registration

    root = Path(root).resolve()
    claims = sorted(collect_claims(pages), key=lambda c: (c["chapter"], c["id"]))
    # the book's chapters: its numbered pages (notebooks/01_theory.md is chapter 1)
    chapters = {int(p.source.stem[:2]) for p in pages if p.source.stem[:2].isdigit()}
    try:
        check_claims(claims, chapters=chapters)
    except ValueError as exc:
        raise BuildError(f"the claims ledger is inconsistent: {exc}") from None
    unmapped = [c["id"] for c in claims if c["id"] not in CLAIM_READS]
    if unmapped:
        log(f"registration: not checked for {', '.join(unmapped)}: no entry in "
            "calibcourse/study/analysis/ledger/reads.py (book/guide_contributors.md)")
    try:
        records = registration(root, [c["id"] for c in claims if c["id"] in CLAIM_READS] + list(CHOICES), log=log)
    except (GitError, ValueError) as exc:  # the registration reports; it never stops the book
        log(f"registration: not checked ({exc})")
        records = {}
    claims = with_registration(claims, records)
    if records:
        status = {s: sum(c["registration"] == s for c in claims) for s in ("registered", "post hoc", "amended")}
        log("registration: " + ", ".join(f"{n} {s}" for s, n in status.items())
            + f", {sum(c['registration'] is None for c in claims)} not checked")
    out = root / CLAIMS_JSON
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(claims, indent=1) + "\n")
    os.replace(tmp, out)
    bib = root / "book" / "references.bib"
    page = root / LEDGER_PAGE.with_suffix(".md")
    page.parent.mkdir(parents=True, exist_ok=True)
    docs = {p.stem for p in (root / "notebooks").glob("*.md")}
    choices = {i: {**r, "why_choice": CHOICES[i].why, "caveat": CHOICE_CAVEATS.get(i)} for i, r in records.items()
               if i in CHOICES}
    page.write_text(ledger_page(claims, bib_titles(bib) if bib.exists() else {}, docs=docs, choices=choices))
    from calibcourse.calibration.stats import VERDICTS

    counts = {v: sum(c["verdict"] == v for c in claims) for v in VERDICTS}
    log(f"claims: {len(claims)} -> {CLAIMS_JSON} ({counts['held']} held, {counts['not held']} not held, "
        f"{counts['inconclusive']} inconclusive)")
    return claims
