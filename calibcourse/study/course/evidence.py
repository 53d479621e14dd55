"""The claims a Part I chapter tested, as a Part II report shows them (the study's reports, Part II).

A chapter declares and tests its claims (:class:`calibcourse.study.analysis.ledger.Ledger`) and
publishes them in its executed notebook; a report of Part II reads them back from there
(:func:`published_claims`), so that the chapter's sentence, the report's table and the "What held"
page show one computation. A report names the chapters it reads in its front matter
(``calibcourse: reads: [01_theory, ...]``): the book build then executes it again whenever one of
them changes.
"""
from __future__ import annotations

import ast
import json
from pathlib import Path

from calibcourse.study.analysis.ledger import CLAIMS_GLUE_NAME, Claim

__all__ = ["notebook_claims", "published_claims", "claims_table", "registration_sentence", "undecided_list",
           "GENERATED"]

#: where the book build writes the executed pages, relative to the book's root
GENERATED = Path("book") / "generated"


def notebook_claims(path) -> list:
    """The claims one executed notebook published (:meth:`Ledger.publish`), as dicts.

    Parameters
    ----------
    path : str or pathlib.Path
        An executed notebook (``.ipynb``).

    Returns
    -------
    list of dict
        In the order the notebook declared them; none if it published none.

    Examples
    --------
    >>> import nbformat, tempfile, pathlib
    >>> nb = nbformat.v4.new_notebook()
    >>> nb.cells.append(nbformat.v4.new_code_cell("", outputs=[nbformat.v4.new_output(
    ...     "display_data", data={"application/papermill.record/text/plain": repr('[{"id": "x"}]')},
    ...     metadata={"scrapbook": {"name": "calibcourse-claims"}})]))
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "page.ipynb"
    >>> nbformat.write(nb, path)
    >>> notebook_claims(path)
    [{'id': 'x'}]
    """
    import nbformat

    claims = []
    nb = nbformat.read(Path(path), as_version=4)
    for cell in nb.cells:
        for out in cell.get("outputs", []):
            if out.get("metadata", {}).get("scrapbook", {}).get("name") != CLAIMS_GLUE_NAME:
                continue
            raw = out["data"].get("application/papermill.record/text/plain")
            claims.extend(json.loads(ast.literal_eval(raw)))
    return claims


def published_claims(pages, sources=None, root=".") -> list:
    """The claims that the executed pages ``pages`` published, optionally of some sources only.

    Parameters
    ----------
    pages : list of str
        Page names, e.g. ``["01_theory", "02_causes"]``; each must have been executed
        (``book/generated/<name>.ipynb`` under ``root``).
    sources : collection of str, optional
        Keep the claims of these bibliography keys (e.g. ``{"guo2017calibration"}``); default all.
    root : str or pathlib.Path, default="."
        The book's root (a page executes with the root as its working directory).

    Returns
    -------
    list of dict
        In the pages' order; a page not executed raises ``FileNotFoundError`` naming it.

    Examples
    --------
    >>> published_claims(["no_such_page"], root="/tmp")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
        ...
    FileNotFoundError: .../book/generated/no_such_page.ipynb: the page no_such_page has not been executed ...
    """
    claims = []
    for name in pages:
        path = Path(root) / GENERATED / f"{name}.ipynb"
        if not path.exists():
            raise FileNotFoundError(f"{path}: the page {name} has not been executed (python -m "
                                    "calibcourse.tools.build executes the chapters before the reports that read them)")
        claims += [c for c in notebook_claims(path) if sources is None or c["source"] in sources]
    return claims


def _claim(d: dict) -> Claim:
    return Claim(**{k: d.get(k) for k in Claim.__dataclass_fields__ if k in d})


def _level(c: Claim) -> str:
    return "" if c.level is None or abs(c.level - 0.95) < 1e-9 else f" ({100 * c.level:.3g} % interval)"


def claims_table(claims, chapter_links: bool = True, registration=None) -> str:
    """A Part II report's table of claims: chapter, claim, effect, estimate with its interval, verdict.

    Every interval is printed with one level: the ledger's 95 %, or the level it carries, said in
    the row.

    Parameters
    ----------
    claims : list of dict
        As :func:`published_claims` returns them.
    chapter_links : bool, default=True
        Link the chapter number to the section that teaches the claim (its ``section`` label).
    registration : bool, default=False
        Say in the verdict's cell whether the claim was *registered* before its runs, *post hoc* or
        *amended* (the claims' ``registration``, as
        :func:`calibcourse.study.analysis.ledger.with_registration` adds it; *not checked* where
        the history holds no record of the claim).

    Returns
    -------
    str
        A MyST table (with a ``{ref}`` link per claim to its row in "What held").

    Examples
    --------
    >>> c = Claim("ch4-x", 4, "TS lowers the ECE", "guo2017calibration", "ECE(TS) - ECE(none)",
    ...           -0.03, -0.04, -0.02, 0.95, 0.0, "below", "held", 5000, 1)
    >>> for cell in claims_table([c.as_dict()], chapter_links=False).splitlines()[-1].split(" | "):
    ...     print(cell)
    | 4
    TS lowers the ECE ({ref}`ch4-x <claim-ch4-x>`)
    ECE(TS) - ECE(none) (5,000 test, 1 seed)
    -3.0 [-4.0, -2.0] points
    held (< 0) |
    >>> tagged = {**c.as_dict(), "registration": "post hoc"}
    >>> claims_table([tagged], chapter_links=False, registration=True).splitlines()[-1].split(" | ")[-1]
    'held (< 0); *post hoc* |'
    """
    dated = bool(registration)
    lines = ["| ch. | claim | effect (test samples, seeds) | estimate [interval], 95 % unless said | "
             f"verdict (claimed side){'; registration' if dated else ''} |",
             "|---|---|---|---|---|"]
    for d in claims:
        c = _claim(d)
        where = f"{{ref}}`{c.chapter} <{c.section}>`" if chapter_links and c.section else str(c.chapter)
        sizes = f" ({c.n_test:,} test, {c.n_seeds} seed{'s' if c.n_seeds != 1 else ''})" if c.n_test else ""
        effect = c.effect + sizes + (f"; {c.cost}" if c.cost else "")
        side = f" ({c.null_text})" if c.null is not None else ""
        status = f"; *{d.get('registration') or 'not checked'}*" if dated else ""
        lines.append(f"| {where} | {c.claim} ({{ref}}`{c.id} <claim-{c.id}>`) | {effect} | "
                     f"{c.interval_text}{_level(c)} | {c.verdict_text()}{side}{status} |")
    return "\n".join(lines)


def registration_sentence(claims) -> str:
    """How many of a report's claims were registered before their runs, in a sentence.

    Parameters
    ----------
    claims : list of dict
        As :func:`calibcourse.study.analysis.ledger.with_registration` returns them.

    Returns
    -------
    str
        One sentence of plain text (a page glues it with ``{glue:text}``), for the report's
        "Registered claims and verdicts".

    Examples
    --------
    >>> tagged = [{"registration": "registered"}, {"registration": "post hoc"}, {"registration": "amended"}]
    >>> print(registration_sentence(tagged))  # doctest: +NORMALIZE_WHITESPACE
    Only 1 of them was registered, declared in a commit before the first of its runs; the
    others were declared after their runs existed (post hoc) or changed after (amended).
    >>> print(registration_sentence(tagged[:1]))
    It was registered, declared in a commit before the first of its runs.
    """
    n, reg = len(claims), sum(c.get("registration") == "registered" for c in claims)

    def before(k):
        return f"declared in a commit before the first of {'its' if k == 1 else 'their'} runs"

    def late(k):
        return (f"declared after {'its' if k == 1 else 'their'} runs existed (post hoc) or changed after "
                "(amended)")

    if reg == n:
        return f"It was registered, {before(1)}." if n == 1 else f"All of them were registered, {before(n)}."
    if reg == 0:
        return f"None of them was registered, {before(1)}: {'it was' if n == 1 else 'all were'} {late(n)}."
    rest = n - reg
    return (f"Only {reg} of them {'was' if reg == 1 else 'were'} registered, {before(reg)}; the "
            f"{'other was' if rest == 1 else 'others were'} {late(rest)}.")


def undecided_list(claims) -> str:
    """What would decide each claim that its test left undecided (inconclusive or not tested).

    Parameters
    ----------
    claims : list of dict
        As :func:`published_claims` returns them.

    Returns
    -------
    str
        A Markdown list, one item per undecided claim (its ``why``), or one sentence when none is.

    Examples
    --------
    >>> c = Claim("ch2-x", 2, "BN worsens calibration", "guo2017calibration", "ECE(BN) - ECE(plain)",
    ...           0.001, -0.002, 0.004, 0.95, 0.0, "above", "inconclusive", 5000, 5, why="more seeds")
    >>> print(undecided_list([c.as_dict()]))
    - **BN worsens calibration** (chapter 2, +0.1 [-0.2, +0.4] points): more seeds.
    >>> print(undecided_list([]))
    Every claim of this report was decided: none is inconclusive or untested.
    """
    items = []
    for d in claims:
        c = _claim(d)
        if c.verdict in ("inconclusive", "not tested"):
            items.append(f"- **{c.claim}** (chapter {c.chapter}, {c.interval_text}{_level(c)}): "
                         f"{(c.why or 'no note').rstrip('.')}.")
    return "\n".join(items) or "Every claim of this report was decided: none is inconclusive or untested."
