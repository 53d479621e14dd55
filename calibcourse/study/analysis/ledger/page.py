"""The claims of every chapter checked, and the book's "What held" page written from them."""
from __future__ import annotations

from calibcourse.calibration import stats

from calibcourse.study.analysis.ledger._texts import (
    CLAIM_KEYS,
    UNDERPOWERED_RATIO,
    _METHOD_TEXT,
    _VERDICT_MARK,
    _scale_limit,
)
from calibcourse.study.analysis.ledger.claims import Claim

__all__ = ["check_claims", "ledger_page"]


def check_claims(claims: list, chapters=None) -> None:
    """Validate a list of claim dicts (``_build/claims.json``): keys, unique ids, chapters the book
    has, verdicts that follow from their intervals by :func:`calibcourse.calibration.stats.verdict`.

    Parameters
    ----------
    claims : list of dict
        As :meth:`Claim.as_dict` writes them.
    chapters : collection of int, optional
        The book's chapter numbers (the build reads them from ``_toc.yml``); a claim of
        another chapter is refused. None: not checked.

    Returns
    -------
    None

    Raises
    ------
    ValueError
        The first problem, naming the claim.

    Examples
    --------
    >>> c = Claim("x", 1, "A", "src", "e", -0.01, -0.02, 0.005, 0.95, 0.0, "below", "held", 100, 1).as_dict()
    >>> check_claims([c])
    Traceback (most recent call last):
        ...
    ValueError: claim 'x': verdict 'held' does not follow from its interval [-0.02, 0.005] against below 0.0
    ('inconclusive')
    >>> check_claims([{**c, "verdict": "inconclusive"}])
    >>> check_claims([{**c, "verdict": "inconclusive"}], chapters={2, 3})
    Traceback (most recent call last):
        ...
    ValueError: claim 'x': chapter 1 is not one of the book's chapters [2, 3]
    """

    seen = set()
    for c in claims:
        missing = [k for k in CLAIM_KEYS if k not in c]
        if missing:
            raise ValueError(f"claim {c.get('id')!r} lacks the keys {missing}")
        if c["id"] in seen:
            raise ValueError(f"claim id {c['id']!r} appears twice")
        if chapters is not None and c["chapter"] not in chapters:
            raise ValueError(f"claim {c['id']!r}: chapter {c['chapter']} is not one of the book's chapters "
                             f"{sorted(chapters)}")
        seen.add(c["id"])
        learns = c.get("learns")
        if learns is not None and learns.get("verdict") != "held" and not c["claim"].startswith("γ-Net inactive"):
            raise ValueError(f"claim {c['id']!r}: its gamma-Net does not beat its frozen control (learns: "
                             f"{learns.get('verdict')!r}), so the claim must say 'γ-Net inactive'")
        if c["verdict"] == "not tested":
            if c["estimate"] is not None or not c.get("why"):
                raise ValueError(f"claim {c['id']!r} is 'not tested' but has numbers or no why")
            continue
        expected = stats.verdict(c["low"], c["high"], null=c["null"], direction=c["direction"])
        if c["verdict"] != expected:
            raise ValueError(f"claim {c['id']!r}: verdict {c['verdict']!r} does not follow from its interval "
                             f"[{c['low']}, {c['high']}] against {c['direction']} {c['null']} ({expected!r})")


def ledger_page(claims: list, titles: dict | None = None) -> str:
    """The "What held" page (MyST): every claim of every chapter, grouped by source.

    Parameters
    ----------
    claims : list of dict
        Every claim of the book (``_build/claims.json``).
    titles : dict, optional
        ``{source key: section title}``; default: the key.

    Returns
    -------
    str
        The page's MyST source.

    Examples
    --------
    >>> c = Claim("x", 4, "TS lowers the ECE", "guo2017calibration", "ECE(TS) - ECE(none)",
    ...           -0.03, -0.04, -0.02, 0.95, 0.0, "below", "held", 5000, 1)
    >>> page = ledger_page([c.as_dict()], titles={"guo2017calibration": "Guo et al. (2017)"})
    >>> for line in (next(l for l in page.splitlines() if l.startswith("In this build")), page.splitlines()[-1]):
    ...     print(line)
    In this build: 1 held, 0 not held, 0 inconclusive, 0 not tested.
    | 4 | TS lowers the ECE | ECE(TS) - ECE(none) (5,000 test, 1 seed) | -3.0 [-4.0, -2.0] points | held (< 0) | - |
    """
    counts = {v: sum(c["verdict"] == v for c in claims) for v in _VERDICT_MARK}
    tested = len(claims) - counts["not tested"]
    decided = counts["held"] + counts["not held"]
    methods = {}
    for c in claims:
        if c["verdict"] != "not tested":
            kind = _METHOD_TEXT.get(c.get("method"), "other intervals")
            methods[kind] = methods.get(kind, 0) + 1
    kinds = "; ".join(f"{k}: {n}" for k, n in sorted(methods.items(), key=lambda kv: -kv[1]))
    lines = [
        "# What held",
        "",
        "Every claim the book tests, grouped by the paper or document that makes it. Each effect is "
        "estimated with a 95 % interval; the verdict follows from the interval by one rule "
        "({func}`calibcourse.calibration.stats.verdict`): **held** when the whole interval lies on the side the claim "
        "states, **not held** when it lies wholly on the other side, *inconclusive* when it contains "
        "the boundary. A claim with a size is tested on its size. The intervals are of several kinds "
        f"({kinds}); the appendix {{ref}}`appendix-coverage` says which and how far each is checked. "
        "An interval end close to the boundary is printed with one more decimal, so that its side shows. "
        "The same list is in `_build/claims.json`.",
        "",
        "*Detects* is the smallest true effect the test finds with 80 % probability. Where a verdict is "
        "inconclusive, its note says what would decide it and which verdict that would likely be if the "
        "estimate stayed where it is: more test samples where the test samples make most of the interval's "
        "variance, more seeds where the seed spread does (for a claim compared over seeds, no test set, however "
        "large, shrinks the seed part), or both; or that it cannot be decided at this scale, when it would "
        f'take {_scale_limit()}. A claim with a margin ("less than 1 point") whose test detects only '
        f"effects more than {UNDERPOWERED_RATIO:g} times the margin is marked *underpowered*: even a true "
        "effect of zero would seldom have been told apart from the margin.",
        "",
        f"Each verdict is a separate test at the 95 % level, not corrected for the {tested} tests on this page. "
        "If every tested effect sat exactly on its boundary, each interval would still exclude the boundary "
        f"with probability 5 %, so about {0.05 * tested:.0f} of the {decided} decided verdicts could be decided "
        "by chance alone. A reader who wants a family-wise guarantee can apply Holm's procedure: order the "
        f"claims by p-value and require the first to be decided at level 1 - 0.05/{tested}, the next at "
        f"1 - 0.05/{max(tested - 1, 1)}, and so on. The ledger stores each claim's 95 % interval, not a p-value "
        "or the interval at other levels, so this page does not apply it.",
        "",
        f"In this build: {counts['held']} held, {counts['not held']} not held, "
        f"{counts['inconclusive']} inconclusive, {counts['not tested']} not tested.",
        "",
    ]
    by_source: dict = {}
    for c in claims:
        by_source.setdefault(c["source"], []).append(c)
    for source, group in by_source.items():
        title = (titles or {}).get(source, source)
        lines += [f"## {title}", "", f"{{cite:p}}`{source}`", "",
                  "| ch. | claim | effect (test samples, seeds) | estimate [interval] | verdict (claimed side) | "
                  "detects (80 %) |", "|---|---|---|---|---|---|"]
        for d in sorted(group, key=lambda d: d["chapter"]):
            c = Claim(**{k: d.get(k) for k in Claim.__dataclass_fields__ if k in d})
            where = f"{{ref}}`{c.chapter} <{c.section}>`" if c.section else str(c.chapter)
            verdict = c.verdict_text()
            detects = "-" if c.detectable is None else f"{c.scale * c.detectable:.{c.digits}f} {c.unit}".strip()
            detects += " (*underpowered*)" if c.underpowered else ""
            side = f" ({c.null_text})" if c.null is not None else ""
            sizes = f" ({c.n_test:,} test, {c.n_seeds} seed{'s' if c.n_seeds != 1 else ''})" if c.n_test else ""
            effect = c.effect + sizes + (f"; {c.cost}" if c.cost else "")
            lines.append(f"| {where} | {c.claim} | {effect} | {c.interval_text} | {verdict}{side} | {detects} |")
        lines.append("")
    return "\n".join(lines)
