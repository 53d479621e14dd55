"""The ledger's constants and the texts of an inconclusive claim: how far the estimate is from
the null, and what would decide it (more test samples, more seeds)."""
from __future__ import annotations

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




def _unit(c) -> str:
    """The claim's unit after a space (nothing for a unitless claim)."""
    return f" {c.unit}" if c.unit else ""


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
