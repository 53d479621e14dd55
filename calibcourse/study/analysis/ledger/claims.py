"""A claim and the ledger a chapter declares its claims in."""
from __future__ import annotations

from dataclasses import asdict, dataclass

from calibcourse.calibration import stats
from calibcourse.calibration._validation import check_int
from calibcourse.study.analysis.ledger._texts import (
    _VERDICT_MARK,
    CLAIM_KEYS,
    CLAIMS_GLUE_NAME,
    UNDERPOWERED_RATIO,
    _unit,
    _what_would_decide,
    _what_would_decide_paired,
)
from calibcourse.study.analysis.tables.summaries import fmt_difference, fmt_signed

__all__ = ["Claim", "Ledger"]


@dataclass
class Claim:
    """One claim of a source, tested on one effect (see :meth:`Ledger.claim`).

    Numbers are in the effect's own units (fractions for ECE and error); ``scale`` and
    ``unit`` say how to print them (100 and "points" print 0.012 as "1.2 points").

    Attributes
    ----------
    id, chapter, claim, source, effect
        Its unique id, the chapter that tests it, the claim in words, the bibliography key
        of its source and what is estimated.
    estimate, low, high, level : float or None
        The effect's estimate and interval (None when not tested).
    null, direction
        The claimed side: the effect lies ``direction`` ("below"/"above") ``null``.
    verdict : str
        "held", "not held", "inconclusive" or "not tested" (:func:`calibcourse.calibration.stats.verdict`).
    n_test, n_seeds : int or None
        Test samples and seeds behind the interval.
    section, why, cost : str or None
        The page section that tests it; why it is inconclusive or not tested; what it costs.
    detectable : float or None
        The effect the test detects with 80 % power.
    scale, unit
        How to print the numbers.
    method : str or None
        How the interval was made (the interval's ``method``: ``"hull"``, ``"percentile"``,
        ``"seeds"``, ``"paired seeds"`` ...; None when not known).
    learns : dict or None
        For a claim about a meta-learned component: whether the component beats its frozen control
        (:func:`calibcourse.study.analysis.reference.learns`: ``verdict``, ``ece``, ``gamma``, ``gamma0``). Where its
        verdict is not "held", the claim is about the frozen component and credits no one's method
        (:attr:`credited`).
    seed_splits : list or None
        For an interval over seeds paired by seed (:class:`calibcourse.calibration.stats.PairedSeeds`):
        ``[k, estimate, low, high, estimate, low, high]``, the same test on the first ``k`` seeds and on the
        others, for every ``k`` that leaves two on each side (seeds added after a verdict are reported
        apart from it; the history says which ``k`` was planned, :mod:`calibcourse.tools.registration`).

    Examples
    --------
    >>> c = Claim("ch4-ts", 4, "TS lowers the ECE", "guo2017calibration", "ECE(TS) - ECE(none)",
    ...           -0.03, -0.04, -0.02, 0.95, 0.0, "below", "held", 5000, 1)
    >>> c.interval_text, c.null_text, list(c.as_dict())[:3]
    ('-3.0 [-4.0, -2.0] points', '< 0', ['id', 'chapter', 'claim'])
    """

    id: str
    chapter: int
    claim: str
    source: str
    effect: str
    estimate: float | None
    low: float | None
    high: float | None
    level: float | None
    null: float | None
    direction: str | None
    verdict: str
    n_test: int | None
    n_seeds: int | None
    section: str | None = None
    why: str | None = None
    cost: str | None = None
    detectable: float | None = None
    scale: float = 100.0
    unit: str = "points"
    method: str | None = None
    signed: bool = True
    learns: dict | None = None
    seed_splits: list | None = None

    @property
    def credited(self) -> bool:
        """Whether the verdict credits the source's method: always, unless the claim is about a
        meta-learned component that does not beat its frozen control (``learns`` not held)."""
        return self.learns is None or self.learns.get("verdict") == "held"

    def verdict_text(self) -> str:
        """The verdict as the ledger's tables print it: the verdict, why where undecided, and for a
        meta-learned component the test against its frozen control (and, where it fails, that the claim
        is not credited)."""
        text = _VERDICT_MARK[self.verdict] + (f" ({self.why})" if self.why else "")
        if self.learns is None:
            return text
        ece, gamma = self.learns["ece"], self.learns["gamma"]
        if self.credited:
            return text + f"; the γ-Net learns (against its frozen control: ECE {ece}, final γ {gamma})"
        net = f"{self.learns['net']}'s γ-Net" if self.learns.get("net") else "the γ-Net"
        return (text + f"; **not credited to the paper**: {net} is not shown to beat its frozen control "
                f"(learns {self.learns['verdict']}: ECE {ece}, final γ {gamma})")

    def as_dict(self) -> dict:
        """The claim as ``_build/claims.json`` stores it: :data:`CLAIM_KEYS` first, then the rest."""
        d = asdict(self)
        return {**{k: d[k] for k in CLAIM_KEYS}, **{k: v for k, v in d.items() if k not in CLAIM_KEYS}}

    @property
    def digits(self) -> int:
        """Decimals when printed: 3 for a raw scale (NLL in nats), 1 for percent."""
        return 3 if self.scale == 1 else 1

    def fmt(self, value) -> str:
        """One number of the claim, signed, in its unit's scale (``"-"`` for None; a value that
        rounds to zero has no sign)."""
        if value is None:
            return "-"
        return fmt_signed(self.scale * value, self.digits) if self.signed else f"{self.scale * value:.{self.digits}f}"

    @property
    def interval_text(self) -> str:
        """``"-1.2 [-1.9, -0.5] points"`` (or ``"not tested"``), by
        :func:`calibcourse.study.analysis.tables.fmt_difference` with the claim's boundary: an interval end
        within one display unit of ``null`` gets one more decimal, and so do the other numbers:

        >>> Claim("c", 5, "costs under 1 point", "s", "d", 0.0048, -0.0001, 0.0097, 0.95, 0.01, "below",
        ...       "held", 5000, 15).interval_text
        '+0.48 [-0.01, +0.97] points'
        """
        if self.estimate is None:
            return "not tested"
        return fmt_difference((self.estimate, self.low, self.high), scale=self.scale, unit=self.unit,
                              digits=self.digits, null=self.null, signed=self.signed)

    @property
    def underpowered(self) -> bool:
        """Whether a claim with a margin (a non-zero ``null``) is tested too weakly to decide it:
        its detectable effect is more than :data:`UNDERPOWERED_RATIO` times the margin, so that
        even a true effect of zero would seldom have been told from the margin."""
        return (self.detectable is not None and self.null is not None and self.null != 0
                and self.detectable > UNDERPOWERED_RATIO * abs(self.null))

    @property
    def null_text(self) -> str:
        """The claimed side, e.g. ``"< 0"`` (``"-"`` when not tested)."""
        if self.null is None:
            return "-"
        side = "<" if self.direction == "below" else ">"
        value = f"{self.scale * self.null:.{self.digits}f}".rstrip("0").rstrip(".")
        return f"{side} {value}{'' if self.unit in ('', 'points') else ' ' + self.unit}"


def _seed_splits(interval) -> list | None:
    """``[[k, first k seeds' estimate, low, high, the other seeds' estimate, low, high], ...]`` for every
    ``k`` that leaves at least two seeds on each side (None unless the interval can be split by seed:
    :meth:`calibcourse.calibration.stats.PairedSeeds.subset`)."""
    if not hasattr(interval, "subset") or interval.n_seeds < 4:
        return None
    if getattr(interval, "replicates", None) is None and interval.v_test > 0:
        return None
    n, splits = interval.n_seeds, []
    for k in range(2, n - 1):
        head, tail = interval.subset(range(k)), interval.subset(range(k, n))
        splits.append([k, *(float(v) for v in head[:3]), *(float(v) for v in tail[:3])])
    return splits


class Ledger:
    """The claims a chapter tests, declared where they are tested (every numbered chapter).

    Each :meth:`claim` computes its verdict from its interval with
    :func:`calibcourse.calibration.stats.verdict` (no verdict is written by hand), glues
    ``<id>-verdict``, ``<id>-interval`` and ``<id>-detectable`` for the prose, and is stored;
    :meth:`table` renders the chapter-end table and :meth:`publish` stores the claims in the
    executed notebook, from which the book build writes ``_build/claims.json`` and the
    "What held" page.

    Parameters
    ----------
    chapter : int
        The number of the chapter whose claims it holds (the book's chapters are its
        numbered pages; the build refuses a claim of a chapter the book does not have).
    glue : bool, default=True
        Glue each claim's verdict, interval and detectable effect into the executing notebook
        (False outside a notebook).

    Examples
    --------
    >>> from calibcourse.calibration import stats
    >>> ledger = Ledger(chapter=4, glue=False)
    >>> c = ledger.claim("ch4-ts", claim="TS lowers the ECE", source="guo2017calibration",
    ...                  effect="ECE(TS) - ECE(uncalibrated)",
    ...                  interval=stats.Difference(-0.03, -0.04, -0.02, 0.95, n=5000),
    ...                  direction="below", n_test=5000, n_seeds=1)
    >>> c.verdict, c.interval_text
    ('held', '-3.0 [-4.0, -2.0] points')
    """

    def __init__(self, chapter: int, glue: bool = True):
        check_int(chapter, "chapter", low=1)
        self.chapter, self.glue, self.claims = chapter, glue, []

    def claim(self, id: str, claim: str, source: str, effect: str, interval=None, null: float = 0.0,
              direction: str = "below", n_test: int | None = None, n_seeds: int | None = None,
              section: str | None = None, why: str | None = None, cost: str | None = None,
              scale: float = 100.0, unit: str = "points", signed: bool = True, learns: dict | None = None) -> Claim:
        """Declare and test one claim; return it.

        Parameters
        ----------
        id : str
            Unique in the book, e.g. ``"ch2-depth"``.
        claim, source, effect : str
            The claim in words (with its size, if it has one), the bibliography key of the
            paper or reference document that makes it, and what is estimated, in words.
        interval : calibcourse.calibration.stats.Difference or None
            The effect's estimate and interval; None for a claim with no numeric test (then
            ``why`` must say why) -- its verdict is ``"not tested"``.
        null, direction
            As in :func:`calibcourse.calibration.stats.verdict`: the claim says the effect lies
            ``direction`` ("below" / "above") ``null`` (0, or the claimed size).
        n_test, n_seeds : int
            Test samples and seeds behind the interval (default: the interval's own).
        section : str
            The MyST label of the section that tests it (the "What held" page links to it).
        cost : str
            What the effect costs, in words with its numbers (e.g. the error change).
        scale, unit
            How to print the effect (100, "points": percentage points).
        signed : bool, default=True
            Print the effect with its sign, as a difference; False for a quantity that is not one
            (a fitted temperature).
        learns : dict, optional
            For a claim about a meta-learned component, its test against the frozen control
            (:func:`calibcourse.study.analysis.reference.learns`). Where that is not "held", the claim is
            restated and credits no method: ``"γ-Net inactive (focal loss at γ ≈ γ0): ..."`` (``"γ-Net
            inactive (FLγ-DECE's: focal loss ..."`` where the test names its ``net``), or, where the test says
            its γ ``moves`` away from the control's, ``"γ-Net active but not shown to help (FLγ-DECE's final γ
            +3.9 [...] against its frozen control's; <note>): ..."``.
        """

        if any(c.id == id for c in self.claims):
            raise ValueError(f"claim id {id!r} is declared twice")
        for name, v in (("id", id), ("claim", claim), ("source", source), ("effect", effect)):
            if not isinstance(v, str) or not v.strip():
                raise ValueError(f"{name} must be a non-empty string; got {v!r}")
        if interval is None:
            if not why:
                raise ValueError(f"claim {id!r} has no interval: say in why= why it is not tested")
            c = Claim(id, self.chapter, claim, source, effect, None, None, None, None, None, None,
                      "not tested", n_test, n_seeds, section, why, cost, None, scale, unit, None, signed)
        else:
            est, low, high, level = (float(v) for v in interval[:4])
            v = stats.verdict(low, high, null=null, direction=direction)
            detect = interval.detectable() if hasattr(interval, "detectable") else None
            n_test = int(n_test if n_test is not None else getattr(interval, "n", 0))
            n_seeds = int(n_seeds if n_seeds is not None else getattr(interval, "n_seeds", 1))
            method = getattr(interval, "method", None)
            c = Claim(id, self.chapter, claim, source, effect, est, low, high, level, float(null), direction,
                      v, n_test, n_seeds, section, why, cost, detect, scale, unit, method, signed)
            c.seed_splits = _seed_splits(interval)
            if v == "inconclusive" and not why:
                if hasattr(interval, "v_seed"):  # seeds paired by seed (stats.paired_seeds_difference)
                    c.why = _what_would_decide_paired(interval, float(null), direction)
                else:
                    c.why = _what_would_decide(est, low, high, float(null), n_test, n_seeds, direction)
                if c.underpowered:
                    amount = lambda v: f"{c.scale * v:.{c.digits}f}{_unit(c)}"  # noqa: E731
                    c.why = (f"underpowered: it detects {amount(detect)}, {detect / abs(null):.1f}x its margin of "
                             f"{amount(abs(null))}; " + c.why)
        if learns is not None:
            if learns.get("verdict") not in _VERDICT_MARK:
                raise ValueError(f"claim {id!r}: learns must carry a verdict; got {learns!r}")
            c.learns = dict(learns)
            if not c.credited and learns.get("moves"):  # its γ moved away from the control's: active, no gain shown
                whose = f"{learns['net']}'s" if learns.get("net") else "its"
                note = f"; {learns['note']}" if learns.get("note") else ""
                c.claim = (f"γ-Net active but not shown to help ({whose} final γ {learns['gamma']} against its "
                           f"frozen control's{note}): {claim}")
            elif not c.credited:
                whose = f"{learns['net']}'s: " if learns.get("net") else ""
                c.claim = f"γ-Net inactive ({whose}focal loss at γ ≈ {learns['gamma0']:.2g}): {claim}"
        self.claims.append(c)
        if self.glue:
            from calibcourse.study.analysis.glue import glue_value

            glue_value(f"{id}-verdict", c.verdict)
            glue_value(f"{id}-interval", c.interval_text)
            glue_value(f"{id}-detectable", "-" if c.detectable is None else f"{c.scale * c.detectable:.1f}")
        return c

    def __getitem__(self, id: str) -> Claim:
        """The claim with this id (``KeyError`` if none)."""
        for c in self.claims:
            if c.id == id:
                return c
        raise KeyError(f"no claim {id!r} in this ledger; declared: {', '.join(c.id for c in self.claims)}")

    def table_markdown(self) -> str:
        """The chapter-end table: claim, source, effect, estimate [interval], verdict."""
        lines = ["| claim | source | effect (what is estimated) | estimate [interval] | verdict (claimed side) |",
                 "|---|---|---|---|---|"]
        for c in self.claims:
            effect = c.effect + (f"; {c.cost}" if c.cost else "")
            verdict = c.verdict_text()
            side = f" ({c.null_text})" if c.null is not None else ""
            estimate = c.interval_text + (f" ({100 * c.level:.0f} %)" if c.level is not None else "")
            lines.append(f"| {c.claim} | {{cite}}`{c.source}` | {effect} | {estimate} | {verdict}{side} |")
        return "\n".join(lines)

    def table(self):
        """The chapter-end table, for display (a ``Markdown`` object rendered as MyST); also
        :meth:`publish`-es the claims."""
        from IPython.display import Markdown

        self.publish()
        return Markdown(self.table_markdown())

    def publish(self) -> None:
        """Store the claims in the executed notebook (glue ``calibcourse-claims``, not displayed)."""
        import json

        if self.glue:
            from myst_nb import glue

            glue(CLAIMS_GLUE_NAME, json.dumps([c.as_dict() for c in self.claims]), display=False)
