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
from ._docs import document
from .data import SyntheticCalibration

__all__ = ["coverage_single", "equally_calibrated_pair", "false_held_rate", "PAIR_KINDS"]

PAIR_KINDS = ("shifted", "calibrated")

#: the arguments of the replications
_N = ("n", "int", "Test samples per replication.")
_REPS = ("reps", "int", "Number of replications (replication ``r`` draws with seed ``r``, or ``10_000 + r``).")
_METHOD = ("method", '{"hull", "bc", "basic", "percentile"}, default="hull"',
           "The interval's method (:data:`calibcourse.stats.METHODS`).")
_N_BOOT = ("n_boot", "int, default=200", "Bootstrap resamples per interval.")


@document(("power", "float", "Of :class:`~calibcourse.data.SyntheticCalibration`: 1 is perfectly "
                            "calibrated, 2 overconfident (true ECE 11 %)."),
          _N, _REPS, _METHOD, _N_BOOT, "n_bins",
          returns=("float", "The fraction of the replications whose interval holds the truth, in [0, 1]."))
def coverage_single(power: float, n: int, reps: int, method: str = "hull", n_boot: int = 200,
                    n_bins: int = 15) -> float:
    """Fraction of ``reps`` replications whose ECE interval covers the population binned ECE.

    Predictions of :class:`~calibcourse.data.SyntheticCalibration` with ``power`` (1:
    perfectly calibrated, 2: overconfident, true ECE 11 %), ``n`` samples each.

    Examples
    --------
    A perfectly calibrated model (true ECE 0): the percentile interval never covers the
    truth, the default hull interval does most of the time.

    >>> from calibcourse.coverage import coverage_single
    >>> coverage_single(1.0, 500, 10, method="percentile", n_boot=50)
    0.0
    >>> coverage_single(1.0, 500, 10, n_boot=50)
    0.7
    """
    sc = SyntheticCalibration(power=power)
    truth = sc.true_binned_ece(n_bins)
    hits = 0
    for r in range(reps):
        p, y = sc.sample(n, seed=10_000 + r)
        d = stats.interval(M.ece, p, y, n_boot=n_boot, seed=r, method=method, n_bins=n_bins)
        hits += d.low <= truth <= d.high
    return hits / reps


@document(("kind", '{"shifted", "calibrated"}', "Which pair (see above; :data:`PAIR_KINDS`)."),
          ("n", "int", "Number of samples."),
          ("seed", "int", "Seed of the draw."))
def equally_calibrated_pair(kind: str, n: int, seed: int):
    """Two binary predictors of the same samples with the same true (binned) ECE, and the labels.

    The true P(y = 1) of a sample is ``q``, uniform in [0.2, 0.8].
    ``"shifted"``: ``q + 0.05`` (always 0.05 too high) and ``q - 0.05`` (always 0.05 too
    low), true ECE 0.05 each;
    ``"calibrated"``: both perfectly calibrated, ``q`` itself and ``q`` coarsened to 4 values
    (the mean of the truth in its coarse bin), so that their estimators' biases differ.

    Returns
    -------
    p_a, p_b : numpy.ndarray of shape (n,)
        P(y = 1) of each predictor, measured with ``reliability="positive_class"``.
    labels : numpy.ndarray of shape (n,)
        The labels, 0 or 1.

    Examples
    --------
    >>> from calibcourse import metrics
    >>> a, b, y = equally_calibrated_pair("calibrated", 6, seed=0)
    >>> a.round(3), b
    (array([0.582, 0.362, 0.225, 0.21 , 0.688, 0.748]), array([0.575, 0.425, 0.275, 0.275, 0.725, 0.725]))
    >>> a, b, y = equally_calibrated_pair("shifted", 100_000, seed=0)
    >>> [round(metrics.ece(p, y, reliability="positive_class"), 3) for p in (a, b)]
    [0.049, 0.051]
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


@document(("kind", '{"shifted", "calibrated"}', "The pair of :func:`equally_calibrated_pair`."),
          _N, _REPS, _METHOD, _N_BOOT,
          returns=("float", 'The fraction of the replications whose verdict on the paired ECE difference '
                            'is "held" (either side), in [0, 1].'))
def false_held_rate(kind: str, n: int, reps: int, method: str = "hull", n_boot: int = 200) -> float:
    """How often the verdict is "held", in either direction, for two equally calibrated predictors.

    The nominal rate of a 95 % interval is 5 % (2.5 % on each side).

    Examples
    --------
    Two calibrated predictors whose ECE estimators are biased differently: the
    percentile interval declares a difference far more often than the hull interval.

    >>> false_held_rate("calibrated", 500, 10, method="percentile", n_boot=50)
    0.3
    >>> false_held_rate("calibrated", 500, 10, n_boot=50)
    0.1
    """
    held = 0
    for r in range(reps):
        a, b, y = equally_calibrated_pair(kind, n, r)
        d = stats.paired_difference(M.ece, a, b, y, n_boot=n_boot, seed=r, method=method,
                                    reliability="positive_class")
        held += stats.verdict(d.low, d.high, direction="below") == "held"
        held += stats.verdict(d.low, d.high, direction="above") == "held"
    return held / reps
