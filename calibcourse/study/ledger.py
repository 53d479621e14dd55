"""The claims ledger (chapter 1 onwards): every claim a chapter tests, with its effect, interval and verdict.

A claim is declared where it is tested (:meth:`Ledger.claim`); the chapter-end table and the
book's "What held" page (``_build/claims.json``) both read it.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass

from calibcourse.calibration import stats

__all__ = ["Claim", "Ledger", "CLAIM_KEYS", "CLAIMS_GLUE_NAME", "check_claims", "ledger_page",
           "MAX_TEST_FACTOR", "MAX_SEEDS", "UNDERPOWERED_RATIO"]

#: the keys of every claim in ``_build/claims.json``, in order (extra keys follow them)
CLAIM_KEYS = ("id", "chapter", "claim", "source", "effect", "estimate", "low", "high", "level", "null",
              "direction", "verdict", "n_test", "n_seeds")
#: the glue name under which a chapter stores its claims in its executed notebook
CLAIMS_GLUE_NAME = "calibcourse-claims"
#: the most an inconclusive claim's note proposes: this many times the test samples, this many seeds
#: (beyond them, a claim "cannot be decided at this scale")
MAX_TEST_FACTOR, MAX_SEEDS = 10, 100
#: a claim with a margin is underpowered when its detectable effect exceeds the margin this many times
UNDERPOWERED_RATIO = 2.0
#: the kinds of interval, by the interval's ``method`` (:class:`calibcourse.calibration.stats.Difference`)
_METHOD_TEXT = {"hull": "bootstrap hull intervals", "percentile": "bootstrap percentile intervals",
                "bc": "bias-corrected bootstrap intervals", "basic": "basic bootstrap intervals",
                "seeds": "t intervals over two sets of seeds", "paired seeds": "t intervals over seeds paired by seed"}
_VERDICT_MARK = {"held": "held", "not held": "**not held**", "inconclusive": "*inconclusive*",
                 "not tested": "not tested"}


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
        (:func:`calibcourse.study.reference.learns`: ``verdict``, ``ece``, ``gamma``, ``gamma0``). Where its
        verdict is not "held", the claim is about the frozen component and credits no one's method
        (:attr:`credited`).

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

    @property
    def credited(self) -> bool:
        """Whether the verdict credits the source's method: always, unless the claim is about a
        meta-learned component that does not beat its frozen control (``learns`` not held)."""
        return self.learns is None or self.learns.get("verdict") == "held"

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
        return _signed(self.scale * value, self.digits) if self.signed else f"{self.scale * value:.{self.digits}f}"

    def _end(self, value) -> str:
        """An interval end, with one more decimal where it lies within one display unit of ``null``
        (so that the reader sees on which side of it the end lies)."""
        near = self.null is not None and abs(self.scale * (value - self.null)) < 10 ** -self.digits
        digits = self.digits + near
        return _signed(self.scale * value, digits) if self.signed else f"{self.scale * value:.{digits}f}"

    @property
    def interval_text(self) -> str:
        """``"-1.2 [-1.9, -0.5] points"`` (or ``"not tested"``).

        As :func:`calibcourse.study.tables.fmt_difference`, but no number prints as ``-0.0``, and
        an interval end within one display unit of the claim's ``null`` gets one more decimal:

        >>> Claim("c", 5, "costs under 1 point", "s", "d", 0.0048, -0.0001, 0.0097, 0.95, 0.01, "below",
        ...       "held", 5000, 15).interval_text
        '+0.5 [0.0, +0.97] points'
        """
        if self.estimate is None:
            return "not tested"
        unit = f" {self.unit}" if self.unit else ""
        return f"{self.fmt(self.estimate)} [{self._end(self.low)}, {self._end(self.high)}]{unit}"

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
        if isinstance(chapter, bool) or not isinstance(chapter, int) or chapter < 1:
            raise ValueError(f"chapter must be a chapter's number (an integer >= 1); got {chapter!r}")
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
            (:func:`calibcourse.study.reference.learns`). Where that is not "held", the claim is
            restated as ``"γ-Net inactive (focal loss at γ ≈ γ0): ..."`` and credits no method.
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
            if not c.credited:
                c.claim = f"γ-Net inactive (focal loss at γ ≈ {learns['gamma0']:.2g}): {claim}"
        self.claims.append(c)
        if self.glue:
            from calibcourse.study.notebook import glue_value

            glue_value(f"{id}-verdict", c.verdict)
            glue_value(f"{id}-interval", c.interval_text)
            glue_value(f"{id}-detectable", "-" if c.detectable is None else f"{c.scale * c.detectable:.1f}")
        return c

    def __getitem__(self, id: str) -> Claim:
        for c in self.claims:
            if c.id == id:
                return c
        raise KeyError(f"no claim {id!r} in this ledger; declared: {', '.join(c.id for c in self.claims)}")

    def table_markdown(self) -> str:
        """The chapter-end table: claim, source, effect, estimate [interval], verdict."""
        lines = ["| claim | source | effect (what is estimated) | estimate [95 % interval] | verdict (claimed side) |",
                 "|---|---|---|---|---|"]
        for c in self.claims:
            effect = c.effect + (f"; {c.cost}" if c.cost else "")
            verdict = _VERDICT_MARK[c.verdict] + (f" ({c.why})" if c.why else "")
            if c.learns is not None:
                verdict += (f"; the γ-Net learns (against its frozen control: ECE {c.learns['ece']}, final γ "
                            f"{c.learns['gamma']})" if c.credited else
                            f"; **not credited to the paper**: the γ-Net does not beat its frozen control "
                            f"(learns {c.learns['verdict']}: ECE {c.learns['ece']}, final γ {c.learns['gamma']})")
            side = f" ({c.null_text})" if c.null is not None else ""
            lines.append(f"| {c.claim} | {{cite}}`{c.source}` | {effect} | {c.interval_text} | {verdict}{side} |")
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


def _unit(c) -> str:
    """The claim's unit after a space (nothing for a unitless claim)."""
    return f" {c.unit}" if c.unit else ""


def _signed(value: float, digits: int) -> str:
    """``value`` with its sign and ``digits`` decimals; one that rounds to zero has no sign (never ``-0.0``).

    >>> _signed(1.25, 1), _signed(-0.04, 1), _signed(-0.04, 2), _signed(0.0, 1)
    ('+1.2', '0.0', '-0.04', '0.0')
    """
    text = f"{value:+.{digits}f}"
    return text[1:] if float(text) == 0 else text


def _side(est: float, null: float, direction: str) -> str:
    """The verdict more data would likely give if the estimate stayed where it is: ``"held"`` when it
    lies on the claimed side of ``null``, else ``"not held"``."""
    below = est < null
    return "held" if below == (direction == "below") else "not held"


def _scale_limit() -> str:
    """What "this scale" is, in words (:data:`MAX_TEST_FACTOR`, :data:`MAX_SEEDS`)."""
    return f"more than {MAX_TEST_FACTOR}x the test samples or more than {MAX_SEEDS} seeds"


def _what_would_decide(est, low, high, null, n_test, n_seeds, direction="below") -> str:
    """For an inconclusive claim: how much more data would decide it, and which way, if the estimate stayed.

    An interval's half-width shrinks like 1/sqrt(n); it excludes ``null`` once it is smaller
    than ``|estimate - null|``, i.e. with (half-width / |estimate - null|)^2 times the data. The
    verdict it would then give is the side of ``null`` the estimate lies on. Beyond
    :data:`MAX_TEST_FACTOR` times the data the claim "cannot be decided at this scale" (the
    size it would need is not worth printing).

    Examples
    --------
    >>> _what_would_decide(0.007, -0.007, 0.02, 0.0, 1000, 1, "above")
    'the estimate lies on the claimed side: about 3,700 test samples would decide it, as held, if the estimate stayed'
    >>> _what_would_decide(0.18, -1.0, 2.3, 0.25, 10000, 1, "above")
    'cannot be decided at this scale: an interval with this centre would exclude the boundary only with more
    than 10x the test samples'
    """
    gap = abs(est - null)
    half = (high - low) / 2
    if gap < 1e-12:
        return "the estimate sits on the boundary: no test set size decides it; a larger effect would"
    factor = (half / gap) ** 2
    if factor > MAX_TEST_FACTOR:
        more = "test samples and seeds" if n_seeds and n_seeds > 1 else "test samples" if n_test else "data"
        return ("cannot be decided at this scale: an interval with this centre would exclude the boundary only "
                f"with more than {MAX_TEST_FACTOR}x the {more}")
    side = _side(est, null, direction)
    where = "the claimed side" if side == "held" else "the other side"
    if n_seeds and n_seeds > 1:
        more = f"about {factor:.1f}x the test samples and seeds"
    elif not n_test:  # the interval's sample size was not given
        more = f"about {factor:.1f}x the data"
    else:
        more = f"about {int(round(n_test * factor, -2)):,} test samples"
    return f"the estimate lies on {where}: {more} would decide it, as {side}, if the estimate stayed"


def _what_would_decide_paired(d, null: float, direction: str = "below") -> str:
    r"""For an inconclusive seed-paired claim (:func:`calibcourse.calibration.stats.paired_seeds_difference`):
    what would decide it, and which way, if the mean difference stayed.

    The interval's half-width is :math:`q\sqrt{V_\text{test} + s_d^2/S}`. More test samples shrink only
    :math:`V_\text{test}`, more seeds only :math:`s_d^2/S`. With :math:`g` the gap to ``null`` and
    :math:`(g/z)^2` the variance that would put ``null`` outside the interval: more test samples alone
    can decide it only where the seed part is below it, more seeds alone only where the test part is
    (then the number of seeds is the smallest :math:`S'` with
    :math:`t_{S'-1}^2 (V_\text{test} + s_d^2/S') < g^2`, the t quantile of the seeds alone:
    conservative); where neither can, it takes both. What needs more than
    :data:`MAX_TEST_FACTOR` times the test samples or :data:`MAX_SEEDS` seeds "cannot be decided at
    this scale". The verdict it would give is the side of ``null`` the mean difference lies on.

    Examples
    --------
    >>> from types import SimpleNamespace as NS
    >>> seeds = NS(estimate=0.01, level=0.95, n=10000, n_seeds=3, v_test=1e-6, v_seed=4e-5,
    ...            per_seed=[0.0, 0.01, 0.02], n_positive=2)
    >>> _what_would_decide_paired(seeds, 0.0, "above")
    'the seed spread dominates (98 % of the variance); about 8 seeds would decide it, as held, if the mean
    difference stayed; more test data cannot (positive in 2 of 3 seeds)'
    >>> test = NS(estimate=0.01, level=0.95, n=2000, n_seeds=10, v_test=4e-5, v_seed=1e-6,
    ...           per_seed=[0.01] * 10, n_positive=10)
    >>> _what_would_decide_paired(test, 0.0, "below")
    'the test samples dominate (98 % of the variance); about 3,200 test samples would decide it, as not held,
    if the mean difference stayed; more seeds cannot (positive in 10 of 10 seeds)'
    >>> both = NS(estimate=0.08, level=0.95, n=5000, n_seeds=5, v_test=4.6e-3, v_seed=2.4e-3,
    ...           per_seed=[0.08] * 5, n_positive=4)   # an MCE: wide on both counts
    >>> _what_would_decide_paired(both, 0.0, "below")
    'the test samples give 66 % of the variance, the seeds 34 %, and neither alone can be reduced enough:
    about 22 seeds with 5x the test samples (25,000) would decide it, as not held, if the mean difference
    stayed (positive in 4 of 5 seeds)'
    """
    from scipy.stats import norm

    gap = abs(d.estimate - null)
    # neutral words: for a claim on the "above" side (an AUROC, an interaction) a positive difference is good
    signs = f" (positive in {d.n_positive} of {d.n_seeds} seeds)"
    if gap < 1e-12:
        return "the estimate sits on the boundary: neither more seeds nor more test data decides it" + signs
    outcome = f"as {_side(d.estimate, null, direction)}, if the mean difference stayed"
    z = norm.ppf(0.5 + d.level / 2)
    target = (gap / z) ** 2  # the variance of the mean that would put null outside the interval, many seeds
    total = d.v_test + d.v_seed
    share = d.v_seed / total if total > 0 else 0.0
    shares = (f"the seed spread dominates ({100 * share:.0f} % of the variance)" if share >= 0.5 else
              f"the test samples dominate ({100 * (1 - share):.0f} % of the variance)")
    seeds = _seeds_needed(d, gap, 1) if target > d.v_test else None
    factor = _test_factor(d, gap)
    seeds_ok = seeds is not None and seeds <= MAX_SEEDS
    test_ok = factor is not None and factor <= MAX_TEST_FACTOR
    if seeds_ok and test_ok:
        return (f"{shares}; about {seeds} seeds, or about {int(round(d.n * factor, -2)):,} test samples, would "
                f"decide it, {outcome}" + signs)
    if seeds_ok:
        return f"{shares}; about {seeds} seeds would decide it, {outcome}; more test data cannot" + signs
    if test_ok:
        return (f"{shares}; about {int(round(d.n * factor, -2)):,} test samples would decide it, {outcome}; "
                "more seeds cannot" + signs)
    if seeds is None and factor is None:  # neither part alone can be reduced enough
        both = _both(d, gap)
        if both is not None:
            return (f"the test samples give {100 * (1 - share):.0f} % of the variance, the seeds {100 * share:.0f} %, "
                    f"and neither alone can be reduced enough: {both}, {outcome}" + signs)
    return f"cannot be decided at this scale: it would take {_scale_limit()}" + signs


def _test_factor(d, gap: float):
    r"""How many times the test samples (the seeds as they are) would put a null ``gap`` away outside the
    interval of :func:`calibcourse.calibration.stats.paired_seeds_contrast`, whose half-width is
    :math:`q\sqrt{V}` with :math:`V = V_\text{test}/m + s_d^2/S` and :math:`q` the t quantile of
    Satterthwaite's :math:`V^2 / ((s_d^2/S)^2/(S-1))` degrees of freedom; None beyond
    :data:`MAX_TEST_FACTOR` (the smallest factor on a grid of 1 % steps)."""
    import numpy as np
    from scipy.stats import norm
    from scipy.stats import t as student_t

    def half(m):
        v = d.v_test / m + d.v_seed
        if d.v_seed <= 0:
            return norm.ppf(0.5 + d.level / 2) * np.sqrt(v)
        df = v ** 2 / (d.v_seed ** 2 / (d.n_seeds - 1))
        return student_t.ppf(0.5 + d.level / 2, df) * np.sqrt(v)

    if d.v_test <= 0:
        return None
    return next((float(m) for m in np.exp(np.arange(0.0, np.log(MAX_TEST_FACTOR) + 1e-9, 0.01))
                 if half(m) < gap), None)


def _seeds_needed(d, gap: float, more_test: float):
    r"""The smallest number of seeds S' (up to 1,000) whose interval, with ``more_test`` times the test
    samples, would exclude a null ``gap`` away: :math:`t_{S'-1}^2 (V_\text{test}/m + s_d^2/S') < \text{gap}^2`;
    None if none does."""
    from scipy.stats import t as student_t

    s2 = d.v_seed * d.n_seeds  # the per-seed differences' variance
    q2 = lambda k: student_t.ppf(0.5 + d.level / 2, k - 1) ** 2  # noqa: E731
    return next((k for k in range(2, 1001) if q2(k) * (d.v_test / more_test + s2 / k) < gap ** 2), None)


def _both(d, gap: float):
    """What decides a claim that needs more seeds and more test data: the fewest seeds (at most
    :data:`MAX_SEEDS`) with 2, 5 or :data:`MAX_TEST_FACTOR` times the test samples (the first that
    suffices); None if none does."""
    for m in (2, 5, MAX_TEST_FACTOR):
        seeds = _seeds_needed(d, gap, m)
        if seeds is not None and seeds <= MAX_SEEDS:
            return f"about {seeds} seeds with {m}x the test samples ({d.n * m:,}) would decide it"
    return None


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
            verdict = _VERDICT_MARK[c.verdict] + (f" ({c.why})" if c.why else "")
            if c.learns is not None:
                verdict += (f"; the γ-Net learns (against its frozen control: ECE {c.learns['ece']}, final γ "
                            f"{c.learns['gamma']})" if c.credited else
                            f"; **not credited to the paper**: the γ-Net does not beat its frozen control "
                            f"(learns {c.learns['verdict']}: ECE {c.learns['ece']}, final γ {c.learns['gamma']})")
            detects = "-" if c.detectable is None else f"{c.scale * c.detectable:.{c.digits}f} {c.unit}".strip()
            detects += " (*underpowered*)" if c.underpowered else ""
            side = f" ({c.null_text})" if c.null is not None else ""
            sizes = f" ({c.n_test:,} test, {c.n_seeds} seed{'s' if c.n_seeds != 1 else ''})" if c.n_test else ""
            effect = c.effect + sizes + (f"; {c.cost}" if c.cost else "")
            lines.append(f"| {where} | {c.claim} | {effect} | {c.interval_text} | {verdict}{side} | {detects} |")
        lines.append("")
    return "\n".join(lines)
