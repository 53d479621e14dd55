"""How far to trust an interval: coverage and false-"held" rates, measured (chapter 1).

Synthetic predictions with a known population calibration error
(:class:`calibcourse.data.SyntheticCalibration` and a binary pair with a known equal error)
replicated a few hundred times: how often does an interval of :mod:`calibcourse.stats` cover
the truth, and how often does :func:`calibcourse.stats.verdict` say "held" when two predictors
are equally calibrated? ``tests/test_stats.py`` asserts these rates; chapter 1 plots them.
"""
from __future__ import annotations

import numpy as np

from . import metrics as M
from . import stats
from .data import SyntheticCalibration

__all__ = ["coverage_single", "equally_calibrated_pair", "false_held_rate", "PAIR_KINDS"]

PAIR_KINDS = ("shifted", "calibrated")


def coverage_single(power: float, n: int, reps: int, method: str = "hull", n_boot: int = 200,
                    n_bins: int = 15) -> float:
    """Fraction of ``reps`` replications whose ECE interval covers the population binned ECE.

    Predictions of :class:`~calibcourse.data.SyntheticCalibration` with ``power`` (1:
    perfectly calibrated, 2: overconfident, true ECE 11 %), ``n`` samples each.

    Examples
    --------
    >>> from calibcourse.coverage import coverage_single
    >>> coverage_single(1.0, 500, 5, method="percentile", n_boot=50)   # never covers 0
    0.0
    """
    sc = SyntheticCalibration(power=power)
    truth = sc.true_binned_ece(n_bins)
    hits = 0
    for r in range(reps):
        p, y = sc.sample(n, seed=10_000 + r)
        d = stats.interval(M.ece, p, y, n_boot=n_boot, seed=r, method=method, n_bins=n_bins)
        hits += d.low <= truth <= d.high
    return hits / reps


def equally_calibrated_pair(kind: str, n: int, seed: int):
    """Two binary predictors of the same samples with the same true (binned) ECE, and the labels.

    ``"shifted"``: one overconfident, one underconfident by 0.05 (true ECE 0.05 each);
    ``"calibrated"``: both perfectly calibrated, one continuous and one coarsened to 4 values
    (the mean of the truth in its coarse bin), so that their estimators' biases differ.
    Returns ``(p_a, p_b, labels)``: P(y = 1) of each, measured with
    ``reliability="positive_class"``.
    """
    if kind not in PAIR_KINDS:
        raise ValueError(f"kind must be one of {', '.join(PAIR_KINDS)}; got {kind!r}")
    rng = np.random.default_rng(seed)
    q = rng.uniform(0.2, 0.8, n)
    y = (rng.random(n) < q).astype(int)
    if kind == "shifted":
        return q + 0.05, q - 0.05, y
    coarse = 0.2 + 0.15 * (np.minimum(np.floor((q - 0.2) / 0.15), 3) + 0.5)
    return q, coarse, y


def false_held_rate(kind: str, n: int, reps: int, method: str = "hull", n_boot: int = 200) -> float:
    """How often the verdict is "held", in either direction, for two equally calibrated predictors.

    The nominal rate of a 95 % interval is 5 % (2.5 % on each side).
    """
    held = 0
    for r in range(reps):
        a, b, y = equally_calibrated_pair(kind, n, r)
        d = stats.paired_difference(M.ece, a, b, y, n_boot=n_boot, seed=r, method=method,
                                    reliability="positive_class")
        held += stats.verdict(d.low, d.high, direction="below") == "held"
        held += stats.verdict(d.low, d.high, direction="above") == "held"
    return held / reps
