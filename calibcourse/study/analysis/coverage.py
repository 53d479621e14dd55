"""How far to trust an estimate: the bias of binned ECE both ways, coverage and false-"held" rates (chapter 1).

:class:`SineMiscalibration` is a binary predictor whose calibration error is known in closed
form, before and after binning: binning *under*-estimates a continuous miscalibration (Kumar
et al. 2019), and :func:`expected_ece` measures the finite-sample ECE, which *over*-estimates
(chapter 1 shows both).

Synthetic predictions with a known population calibration error
(:class:`calibcourse.calibration.synthetic.SyntheticCalibration` and a binary pair with a known equal error)
replicated a few hundred times: how often does an interval of :mod:`calibcourse.calibration.stats` cover
the truth, and how often does :func:`calibcourse.calibration.stats.verdict` say "held" when two predictors
are equally calibrated? ``tests/test_stats.py`` asserts these rates; the appendix on the
intervals' coverage plots them. The bootstrap of an equal-width binned ECE is vectorized
(:func:`calibcourse.calibration.stats.ece_replicates`: the same resamples, the same replicates as
:func:`calibcourse.calibration.stats.interval`, computed all at once), so that the study runs in
seconds.
"""
from __future__ import annotations

import numpy as np

from calibcourse.calibration import metrics as M
from calibcourse.calibration import stats
from calibcourse.calibration._validation import check_int
from calibcourse.calibration.synthetic import SyntheticCalibration

__all__ = ["SineMiscalibration", "expected_ece", "coverage_single", "equally_calibrated_pair",
           "false_held_rate", "PAIR_KINDS", "coverage_paired_seeds"]

PAIR_KINDS = ("shifted", "calibrated")



def _int_abs_sin(x: float) -> float:
    r""":math:`\int_0^x |\sin t|\,dt` for ``x >= 0``: 2 per half period, plus the partial one."""
    k = np.floor(x / np.pi)
    return float(2.0 * k + 1.0 - np.cos(x - k * np.pi))


class SineMiscalibration:
    r"""Binary predictions with a known, continuous miscalibration.

    The score is :math:`s \sim U(\text{low}, \text{high})` and
    :math:`P(y = 1 \mid s) = s + a \sin(2\pi (s - \text{low}) / \text{period})`: the gap
    between the frequency and the score changes sign every half period. Its calibration
    error (of :math:`P(y = 1)`, ``reliability="positive_class"``) is known in closed form:

    .. math:: \mathrm{CE}_1 = \mathbb E_s |g(s)|, \qquad
              \mathrm{CE}_2 = \sqrt{\mathbb E_s\, g(s)^2}, \qquad g(s) = a \sin(2\pi (s - \text{low})/\text{period}),

    (:math:`2a/\pi` and :math:`a/\sqrt 2` over whole periods), and so is the population value of
    the binned ECE, :math:`\sum_m P(B_m)\,|\mathbb E[g \mid B_m]|`, which is smaller wherever
    the gap changes sign inside a bin: binning averages gaps of both signs before taking the
    absolute value (Kumar et al. 2019). ``amplitude=0`` is a perfectly calibrated predictor.

    Parameters
    ----------
    amplitude : float, default=0.1
        :math:`a \ge 0`; ``low - a >= 0`` and ``high + a <= 1`` keep the frequency in [0, 1].
    period : float, default=0.1
        Length of one oscillation of the gap on the score axis, > 0.
    low, high : float, default=0.2, 0.8
        The range of the scores, ``0 <= low < high <= 1``.

    Examples
    --------
    >>> sm = SineMiscalibration(amplitude=0.1, period=0.1)
    >>> round(sm.true_ece(), 4)  # 2a / pi over six whole periods
    0.0637
    >>> round(sm.true_binned_ece(n_bins=5), 12)  # each bin of width 0.2 holds two whole periods
    0.0
    """

    def __init__(self, amplitude: float = 0.1, period: float = 0.1, low: float = 0.2, high: float = 0.8):
        if not 0.0 <= low < high <= 1.0:
            raise ValueError(f"low and high must satisfy 0 <= low < high <= 1; got low={low}, high={high}")
        if not period > 0:
            raise ValueError(f"period must be > 0; got {period}")
        if not (amplitude >= 0 and low - amplitude >= 0 and high + amplitude <= 1):
            raise ValueError(f"amplitude must be >= 0 and keep low - amplitude >= 0 and high + amplitude <= 1 "
                             f"(a frequency in [0, 1]); got amplitude={amplitude} with low={low}, high={high}")
        self.amplitude, self.period, self.low, self.high = float(amplitude), float(period), float(low), float(high)

    def _phase(self, s):
        return 2.0 * np.pi * (np.asarray(s, dtype=float) - self.low) / self.period

    def frequency(self, s):
        r""":math:`P(y = 1 \mid s)`, the true calibration curve."""
        return np.asarray(s, dtype=float) + self.amplitude * np.sin(self._phase(s))

    def sample(self, n: int, rng=None):
        """``(scores, labels)``: ``n`` scores and labels drawn with :meth:`frequency`."""
        if n < 1:
            raise ValueError(f"n must be >= 1; got {n}")
        rng = np.random.default_rng(rng)
        s = rng.uniform(self.low, self.high, n)
        return s, (rng.random(n) < self.frequency(s)).astype(int)

    def true_ece(self, norm: str = "l1") -> float:
        r"""The calibration error of the scores, :math:`\mathrm{CE}_1` or :math:`\mathrm{CE}_2`, in closed form."""
        if norm not in ("l1", "l2"):
            raise ValueError(f"norm must be 'l1' or 'l2'; got {norm!r}")
        a, w, scale = self.amplitude, self.high - self.low, self.period / (2.0 * np.pi)
        x = self._phase(self.high)
        if norm == "l1":
            return float(a / w * scale * _int_abs_sin(x))
        return float(np.sqrt(a**2 / w * scale * (x / 2.0 - np.sin(2.0 * x) / 4.0)))

    def true_binned_ece(self, n_bins: int = 15, norm: str = "l1") -> float:
        """The population value of the binned ECE with ``n_bins`` equal-width bins, in closed form.

        What ``metrics.ece(scores, labels, n_bins, norm=norm, reliability="positive_class")``
        tends to as the sample grows; at most :meth:`true_ece`.
        """
        if norm not in ("l1", "l2"):
            raise ValueError(f"norm must be 'l1' or 'l2'; got {norm!r}")
        if int(n_bins) != n_bins or n_bins < 1:
            raise ValueError(f"n_bins must be a positive integer; got {n_bins}")
        edges = np.linspace(0.0, 1.0, int(n_bins) + 1)
        s0 = np.clip(edges[:-1], self.low, self.high)
        s1 = np.clip(edges[1:], self.low, self.high)
        keep = s1 > s0
        s0, s1 = s0[keep], s1[keep]
        mass = (s1 - s0) / (self.high - self.low)
        mean_gap = (self.amplitude * self.period / (2.0 * np.pi) * (np.cos(self._phase(s0)) - np.cos(self._phase(s1)))
                    / (s1 - s0))
        if norm == "l1":
            return float(np.sum(mass * np.abs(mean_gap)))
        return float(np.sqrt(np.sum(mass * mean_gap**2)))


def expected_ece(sample, n: int, n_bins: int = 15, reps: int = 200, seed: int = 0, norm: str = "l1") -> float:
    """The mean binned ECE of ``n`` samples over ``reps`` draws: what one test set reports on average.

    Parameters
    ----------
    sample : callable
        ``sample(n, rng) -> (scores, labels)``, binary scores :math:`P(y = 1)`, e.g.
        :meth:`SineMiscalibration.sample`.
    n : int
        Samples per draw.
    n_bins : int, default=15
    reps : int, default=200
        Number of draws, >= 1.
    seed : int, default=0
    norm : {"l1", "l2"}, default="l1"

    Returns
    -------
    float
        The mean of ``metrics.ece(scores, labels, n_bins, norm=norm,
        reliability="positive_class")`` over the draws.

    Examples
    --------
    >>> calibrated = SineMiscalibration(amplitude=0.0)      # true ECE 0
    >>> expected_ece(calibrated.sample, n=100, reps=50) > 0.05  # the estimate is biased upwards
    True
    """
    if reps < 1:
        raise ValueError(f"reps must be >= 1; got {reps}")
    rng = np.random.default_rng(seed)
    return float(np.mean([M.ece(*sample(n, rng), n_bins=n_bins, norm=norm, reliability="positive_class")
                          for _ in range(reps)]))


def coverage_single(power: float, n: int, reps: int, method: str = "hull", n_boot: int = 200,
                    n_bins: int = 15) -> float:
    """Fraction of ``reps`` replications whose ECE interval covers the population binned ECE.

    Predictions of :class:`~calibcourse.calibration.synthetic.SyntheticCalibration` with ``power`` (1:
    perfectly calibrated, 2: overconfident, true ECE 11 %), ``n`` samples each.

    Parameters
    ----------
    power : float
        Of :class:`~calibcourse.calibration.synthetic.SyntheticCalibration`: 1 is perfectly calibrated, 2
        overconfident (true ECE 11 %).
    n : int
        Test samples per replication.
    reps : int
        Number of replications (replication ``r`` draws with seed ``r``, or ``10_000 + r``).
    method : {"hull", "bc", "basic", "percentile"} or a sequence of them, default="hull"
        The interval's method (:data:`calibcourse.calibration.stats.METHODS`); several give a rate each, from
        the same replications and resamples.
    n_boot : int, default=200
        Bootstrap resamples per interval.
    n_bins : int, default=15
        Number of bins.

    Returns
    -------
    float or dict
        The fraction of the replications whose interval holds the truth, in [0, 1]; ``{method: fraction}`` for
        a sequence of methods.

    Examples
    --------
    A perfectly calibrated model (true ECE 0): the percentile interval never covers the
    truth, the default hull interval does most of the time.

    >>> from calibcourse.study.analysis.coverage import coverage_single
    >>> coverage_single(1.0, 500, 10, method="percentile", n_boot=50)
    0.0
    >>> coverage_single(1.0, 500, 10, n_boot=50)
    0.7
    """
    sc = SyntheticCalibration(power=power)
    truth = sc.true_binned_ece(n_bins)
    methods = [method] if isinstance(method, str) else list(method)
    hits = dict.fromkeys(methods, 0)
    for r in range(reps):
        p, y = sc.sample(n, seed=10_000 + r)
        plugin, reps_ = stats.ece_replicates(*M.confidence_outcome(p, y), n_boot=n_boot, seed=r, n_bins=n_bins)
        for m in methods:
            d = stats.interval_from_replicates(plugin, reps_, 0.95, m, n, lower=0.0)  # as stats.interval
            hits[m] += d.low <= truth <= d.high
    rates = {m: h / reps for m, h in hits.items()}
    return rates[method] if isinstance(method, str) else rates


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

    Parameters
    ----------
    kind : {"shifted", "calibrated"}
        Which pair (see above; :data:`PAIR_KINDS`).
    n : int
        Number of samples.
    seed : int
        Seed of the draw.

    Examples
    --------
    >>> from calibcourse.calibration import metrics
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


def false_held_rate(kind: str, n: int, reps: int, method: str = "hull", n_boot: int = 200) -> float:
    """How often the verdict is "held", in either direction, for two equally calibrated predictors.

    The nominal rate of a 95 % interval is 5 % (2.5 % on each side).

    Parameters
    ----------
    kind : {"shifted", "calibrated"}
        The pair of :func:`equally_calibrated_pair`.
    n : int
        Test samples per replication.
    reps : int
        Number of replications (replication ``r`` draws with seed ``r``, or ``10_000 + r``).
    method : {"hull", "bc", "basic", "percentile"} or a sequence of them, default="hull"
        The interval's method (:data:`calibcourse.calibration.stats.METHODS`); several give a rate each, from
        the same replications and resamples.
    n_boot : int, default=200
        Bootstrap resamples per interval.

    Returns
    -------
    float or dict
        The fraction of the replications whose verdict on the paired ECE difference is "held" (either side),
        in [0, 1]; ``{method: fraction}`` for a sequence of methods.

    Examples
    --------
    Two calibrated predictors whose ECE estimators are biased differently: the
    percentile interval declares a difference far more often than the hull interval.

    >>> false_held_rate("calibrated", 500, 10, method="percentile", n_boot=50)
    0.3
    >>> false_held_rate("calibrated", 500, 10, n_boot=50)
    0.1
    >>> false_held_rate("calibrated", 500, 10, method=("percentile", "hull"), n_boot=50)
    {'percentile': 0.3, 'hull': 0.1}
    """
    methods = [method] if isinstance(method, str) else list(method)
    held = dict.fromkeys(methods, 0)
    for r in range(reps):
        a, b, y = equally_calibrated_pair(kind, n, r)
        yf = y.astype(np.float64)
        va, ra = stats.ece_replicates(a, yf, n_boot=n_boot, seed=r)
        vb, rb = stats.ece_replicates(b, yf, n_boot=n_boot, seed=r)
        for m in methods:
            d = stats.interval_from_replicates(va - vb, ra - rb, 0.95, m, n)   # as stats.paired_difference
            held[m] += stats.verdict(d.low, d.high, direction="below") == "held"
            held[m] += stats.verdict(d.low, d.high, direction="above") == "held"
    rates = {m: h / reps for m, h in held.items()}
    return rates[method] if isinstance(method, str) else rates


def coverage_paired_seeds(n_seeds: int, n: int, reps: int, shift: float = 0.1, spread: float = 0.02,
                          n_boot: int = 200) -> float:
    """Fraction of ``reps`` replications whose seed-paired interval covers the true mean difference.

    The interval is :func:`calibcourse.calibration.stats.paired_seeds_difference` (the t interval
    of the seed-paired claims) of the Brier score. In each replication the true P(y = 1) of a
    sample is ``q``, uniform in [0.2, 0.8], ``n`` test samples; predictor ``b`` is ``q`` itself,
    and seed ``s`` of predictor ``a`` is ``q + c_s`` with ``c_s`` drawn from a normal with mean
    ``shift`` and standard deviation ``spread`` (what the seed changes). The Brier score of
    ``q + c`` exceeds that of ``q`` by ``c^2`` in the population, so the true mean difference
    over seeds is ``shift^2 + spread^2``; the per-seed differences vary with the seed and the
    test samples add their own noise, shared by the seeds.

    Parameters
    ----------
    n_seeds : int
        Seeds per replication (at least 2).
    n : int
        Test samples per replication.
    reps : int
        Number of replications (replication ``r`` draws with seed ``20_000 + r``).
    shift, spread : float, default=0.1, 0.02
        The mean and standard deviation of the per-seed shift ``c_s`` (``shift + 5 spread``
        at most 0.2, so that no prediction leaves [0, 1]).
    n_boot : int, default=200
        Bootstrap resamples of the test set per interval.

    Returns
    -------
    float
        The fraction of the replications whose interval holds the truth, in [0, 1].

    Examples
    --------
    >>> from calibcourse.study.analysis.coverage import coverage_paired_seeds
    >>> coverage_paired_seeds(3, 500, 10, n_boot=50)
    1.0
    """
    check_int(n_seeds, "n_seeds", low=2)
    if not 0 <= shift + 5 * spread <= 0.2 or spread < 0:
        raise ValueError(f"shift + 5 spread must lie in [0, 0.2] and spread >= 0; got shift={shift}, spread={spread}")
    truth = shift ** 2 + spread ** 2
    hits = 0
    for r in range(reps):
        rng = np.random.default_rng(20_000 + r)
        q = rng.uniform(0.2, 0.8, n)
        y = (rng.random(n) < q).astype(int)
        a = [np.clip(q + c, 0, 1) for c in rng.normal(shift, spread, n_seeds)]
        d = stats.paired_seeds_difference(M.brier, a, [q] * n_seeds, y, n_boot=n_boot, seed=r)
        hits += d.low <= truth <= d.high
    return hits / reps
