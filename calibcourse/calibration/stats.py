r"""The statistics of comparisons (chapter 1 introduces them; every chapter's verdicts use them).

A study's claim is a statement about an *effect*: "temperature scaling lowers the ECE",
"deeper networks are worse calibrated". This module turns an effect into an interval and an
interval into a verdict, the same way everywhere:

* :func:`interval` -- one measure of one predictor, ``metric(probs, labels)``;
* :func:`paired_difference` -- ``metric(a) - metric(b)`` of two predictors **on the same test
  samples** (or the relative change ``metric(a) / metric(b) - 1`` with ``relative=True``);
* :func:`seeds_difference` / :func:`seeds_interval` -- the same for the **mean over training
  seeds**;
* :func:`verdict` -- ``"held"``, ``"not held"`` or ``"inconclusive"`` from an interval.

What the intervals cover
------------------------
Binned calibration errors are biased: the plug-in ECE of a finite test set sits above the
ECE of the population (noise in a bin's accuracy only ever adds to ``|acc - conf|``) unless
the gaps are large. A percentile bootstrap inherits the bias twice: resampling adds the same
noise again, so the bootstrap distribution sits *above* the estimate, and the interval can
exclude the estimate it was built around, or, for a perfectly calibrated model, the truth in
every case. The bootstrap's own estimate of that bias, :math:`\bar\theta^* - \hat\theta`,
is right only in part: near a zero gap it catches about 40 % of it. So

* every function reports the **plug-in** value as ``estimate`` by default
  (``metrics.ece(a, y) - metrics.ece(b, y)`` exactly for a paired difference), so that a
  table, a figure and a sentence that compute the same quantity print the same number;
  the bias-corrected estimate :math:`\tilde\theta = 2\hat\theta - \bar\theta^*` only
  with ``bias_corrected=True``, and never for a maximum (the MCE, ``norm="max"``) or a
  ratio (``relative=True``), where it has no meaning;
* the default ``method="hull"`` interval is the hull of the percentile interval
  :math:`[q_{\alpha/2}, q_{1-\alpha/2}]` and the basic (bias-moving) interval
  :math:`[2\hat\theta - q_{1-\alpha/2}, 2\hat\theta - q_{\alpha/2}]`, both from the
  bootstrap of the plug-in quantity: the two differ by twice the estimated bias, and where
  the bias estimate is unreliable neither side can be trusted alone. The plug-in estimate
  lies inside by construction (and so does the bias-corrected one when it is asked for).

Measured on synthetic predictions with known truth (``tests/test_stats.py``, the book's appendix on coverage), at
n = 1000 and level 0.95: coverage of the population binned ECE 0.95 for a true ECE of 11 % and
of 2.5 %, 0.64 for a perfectly calibrated model (the percentile interval: 0.0); the rate of
"held" for two equally calibrated predictors 4-6 % against the nominal 5 % (percentile: up to
23 %; ``"bc"`` alone up to 21 %). What is covered is the population value of the *same
estimator's target*: for ``metrics.ece`` with 15 equal-width bins, the binned calibration error
:math:`\sum_m |P(\text{correct}, B_m) - E[c; B_m]|`, which can sit *below* the continuous ECE
(binning averages gaps of opposite sign). ``method`` ``"bc"`` (the basic interval, widened to
hold the bias-corrected estimate), ``"basic"`` and ``"percentile"`` are there for comparison.

Seeds
-----
:func:`seeds_difference` estimates the mean over seeds and adds two independent sources of
variation: which test samples were drawn (a joint bootstrap of the shared test set, the seeds
held fixed) and which seeds were trained (the spread of the per-seed estimates, divided by the
number of seeds). The interval is :math:`\tilde\theta \pm t_\nu \sqrt{V_\text{test} +
V_\text{seed}}` with Welch-Satterthwaite degrees of freedom for the seed part (widened to hold
the plug-in mean :math:`\hat\theta`, the default estimate; :math:`\hat\theta` itself is the
centre for a maximum or a ratio): with 3 seeds it is wide, as it should be. The seed spread also contains the
test-sample noise that is not
shared between seeds, so the interval is conservative. Averaging the endpoints of per-seed
intervals, which is not an interval for anything, is what this replaces.
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np

from calibcourse.calibration import metrics as M
from calibcourse.calibration._validation import check_labels, check_probs

__all__ = ["Difference", "interval", "paired_difference", "seeds_difference", "seeds_interval",
           "bootstrap_statistic", "verdict", "per_sample_terms", "VERDICTS", "DIRECTIONS", "METHODS"]

VERDICTS = ("held", "not held", "inconclusive")
DIRECTIONS = ("below", "above")
METHODS = ("hull", "bc", "basic", "percentile")


class Difference(NamedTuple):
    """An estimate and its interval: ``Difference(estimate, low, high, level)``.

    Also used for a single measure (then it is the measure, not a difference).
    ``plugin`` is the plain estimate on the full data (``estimate`` is the same number
    unless a bias-corrected estimate was asked for); ``n`` the test samples, ``n_seeds``
    the seeds behind it.

    Attributes
    ----------
    estimate : float
        The estimate: the plug-in value, or the bias-corrected one where
        ``bias_corrected=True`` asked for it.
    low, high : float
        The interval.
    level : float
        Its coverage, e.g. 0.95.
    plugin : float, default=nan
        The plain estimate on the full data.
    n : int, default=0
        The number of test samples.
    n_seeds : int, default=1
        The number of training seeds behind it.
    method : str, default="hull"
        How the interval was made: one of :data:`METHODS`, or ``"seeds"``
        (:func:`seeds_difference`).

    Examples
    --------
    >>> d = Difference(estimate=-0.020, low=-0.031, high=-0.009, level=0.95)
    >>> verdict(d.low, d.high, direction="below")
    'held'
    >>> print(f"{d.detectable():.4f}")     # the smallest effect found 80 % of the time
    0.0157
    """

    estimate: float
    low: float
    high: float
    level: float
    plugin: float = float("nan")
    n: int = 0
    n_seeds: int = 1
    method: str = "hull"

    def detectable(self, power: float = 0.8) -> float:
        """The smallest true effect this test detects with probability ``power``.

        Treats the interval as estimate +- z * SE (two-sided at ``level``); the minimal
        detectable effect is (z_{1-alpha/2} + z_power) * SE.

        Parameters
        ----------
        power : float, default=0.8
            The probability of detecting it, in (0, 1).

        Returns
        -------
        float
            The effect, in the unit of the estimate.
        """
        from scipy.stats import norm

        if not 0 < power < 1:
            raise ValueError(f"power must be in (0, 1); got {power!r}")
        z = norm.ppf(0.5 + self.level / 2)
        se = (self.high - self.low) / (2 * z)
        return float((z + norm.ppf(power)) * se)


# --------------------------------------------------------------------------- checks
def _check_common(n_boot, level, method):
    if isinstance(n_boot, bool) or not isinstance(n_boot, (int, np.integer)) or n_boot < 10:
        raise ValueError(f"n_boot must be an integer >= 10; got {n_boot!r}")
    if not (isinstance(level, (float, int)) and 0 < level < 1):
        raise ValueError(f"level must be in (0, 1); got {level!r}")
    if method not in METHODS:
        raise ValueError(f"method must be one of {', '.join(METHODS)}; got {method!r}")


def _check_metric(metric):
    if not callable(metric):
        raise ValueError(f"metric must be callable, e.g. calibcourse.calibration.metrics.ece; got {metric!r}")


def _check_bias_corrected(bias_corrected, metric=None, metric_kwargs=None, relative=False):
    """``bias_corrected`` as a bool; an error where a bias correction has no meaning."""
    if not isinstance(bias_corrected, (bool, np.bool_)):
        raise ValueError(f"bias_corrected must be True or False; got {bias_corrected!r}")
    if not bias_corrected:
        return False
    if relative:
        raise ValueError("bias_corrected=True is not defined for a ratio (relative=True): the "
                         "bias correction of a ratio has no meaning; report the plug-in ratio")
    if metric is M.mce or (metric_kwargs or {}).get("norm") == "max":
        raise ValueError("bias_corrected=True is not defined for a maximum (the MCE): the bias "
                         "correction of a maximum has no meaning; report the plug-in MCE")
    return True


def _check_pair(probs, labels, name="probs"):
    try:
        p = check_probs(probs)
        y = check_labels(labels, p.shape[0], 2 if p.ndim == 1 else p.shape[1])
    except ValueError as e:
        raise ValueError(f"{name}: {e}") from None
    return p, y


# --------------------------------------------------------------------------- fast resampling
def per_sample_terms(metric, p, y, kwargs):
    """Per-sample terms whose mean is ``metric(p, y, **kwargs)`` (error, NLL, Brier), else None.

    What the bootstrap resamples for these means; it takes checked arrays (no validation).

    Parameters
    ----------
    metric : callable
        :func:`calibcourse.calibration.metrics.error`, ``nll`` or ``brier``; any other gives None.
    p : numpy.ndarray of shape (n, K) or (n,)
        Checked probabilities.
    y : numpy.ndarray of shape (n,)
        Checked integer labels.
    kwargs : dict
        The metric's keyword arguments (``nll``'s ``eps`` only; any other gives None).

    Returns
    -------
    numpy.ndarray of shape (n,) or None

    Examples
    --------
    >>> import numpy as np
    >>> from calibcourse.calibration import metrics
    >>> p, y = np.array([[0.9, 0.1], [0.4, 0.6]]), np.array([0, 0])
    >>> t = per_sample_terms(metrics.brier, p, y, {})
    >>> t.round(2).tolist(), bool(np.isclose(t.mean(), metrics.brier(p, y)))
    ([0.02, 0.72], True)
    """
    if metric is M.error and not kwargs:
        return (M.top_label(p)[1] != y).astype(np.float64)
    if metric is M.nll and set(kwargs) <= {"eps"}:
        p2 = np.stack([1 - p, p], 1) if p.ndim == 1 else p
        return -np.log(np.maximum(p2[np.arange(len(y)), y].astype(np.float64), kwargs.get("eps", 1e-12)))
    if metric is M.brier and not kwargs:
        if p.ndim == 1:
            return (p.astype(np.float64) - y) ** 2
        p64 = p.astype(np.float64)
        return np.sum(p64 ** 2, axis=1) - 2 * p64[np.arange(len(y)), y] + 1.0
    return None


def _resampler(metric, p, y, kwargs):
    """``f(idx)``: the metric on the resample ``idx`` (fast paths checked against the metric)."""
    full = float(metric(p, y, **kwargs))
    binned = M.binned_on_confidence(metric, **kwargs)
    fast = None
    if binned is not None:
        conf, outcome = M.confidence_outcome(p, y, kwargs.get("reliability"))

        def fast(i):
            return binned(conf[i], outcome[i])
    else:
        terms = per_sample_terms(metric, p, y, kwargs)
        if terms is not None:
            def fast(i):
                return float(terms[i].mean())
    if fast is not None and abs(fast(np.arange(len(y))) - full) <= 1e-9 * max(1.0, abs(full)):
        return full, fast
    return full, lambda i: float(metric(p[i], y[i], **kwargs))


# --------------------------------------------------------------------------- the interval
def resample_indices(n: int, n_boot: int, seed: int):
    """``n_boot`` bootstrap resamples (index arrays) of ``n`` samples, from ``seed``."""
    rng = np.random.default_rng(seed)
    for _ in range(n_boot):
        yield rng.integers(0, n, n)


def _finite(reps) -> np.ndarray:
    """The finite bootstrap replicates; an error if fewer than 10 are."""
    reps = np.asarray(reps, dtype=float)
    reps = reps[np.isfinite(reps)]
    if reps.size < 10:
        raise ValueError("fewer than 10 bootstrap replicates were finite; the statistic is undefined "
                         "on most resamples (e.g. a relative change of a measure that is 0)")
    return reps


def interval_from_replicates(plugin, reps, level, method, n, lower=None, bias_corrected=False) -> Difference:
    """The estimate (plug-in unless ``bias_corrected``) and the interval of ``method`` from the
    bootstrap replicates of the plug-in quantity."""
    reps = _finite(reps)
    alpha = (1 - level) / 2
    q_lo, q_hi = np.quantile(reps, [alpha, 1 - alpha])
    corrected = 2 * plugin - reps.mean()
    if method == "percentile":
        low, high = q_lo, q_hi
    elif method == "hull":
        # holds the plug-in value by construction (see the module docstring)
        low, high = min(q_lo, 2 * plugin - q_hi, plugin), max(q_hi, 2 * plugin - q_lo, plugin)
    else:
        low, high = 2 * plugin - q_hi, 2 * plugin - q_lo
        if method == "bc":
            low, high = min(low, corrected), max(high, corrected)
    est = corrected if bias_corrected else plugin
    if bias_corrected and method != "percentile":
        low, high = min(low, est), max(high, est)
    if lower is not None:
        est, low, high = max(est, lower), max(low, lower), max(high, lower)
    return Difference(float(est), float(low), float(high), float(level), float(plugin), int(n), 1, method)


def interval(metric, probs, labels, n_boot: int = 2000, level: float = 0.95, seed: int = 0,
             method: str = "hull", bias_corrected: bool = False, **metric_kwargs) -> Difference:
    r"""Bootstrap interval of one measure of one predictor.

    Parameters
    ----------
    metric : callable
        ``metric(probs, labels, **metric_kwargs) -> float``, e.g. :func:`calibcourse.calibration.metrics.ece`.
    probs, labels : array-like
        As every function of :mod:`calibcourse.calibration.metrics` takes them.
    n_boot : int
        Bootstrap resamples of the test samples (>= 10).
    level : float
        Coverage of the interval, in (0, 1).
    seed : int
        Seed of the resampling.
    method : {"hull", "bc", "basic", "percentile"}
        The interval. ``"hull"`` (default): the hull of the percentile and basic intervals
        (see the module docstring), which holds the estimate.
    bias_corrected : bool, default=False
        Report the bias-corrected estimate :math:`2\hat\theta - \bar\theta^*` instead of
        the plug-in value ``metric(probs, labels)`` (the interval is widened to hold it,
        except for ``"percentile"``). An error for a maximum (``metrics.mce``,
        ``norm="max"``), whose bias correction has no meaning.
    **metric_kwargs
        Passed to ``metric`` (``n_bins=``, ``reliability=``, ...).

    Returns
    -------
    Difference
        ``(estimate, low, high, level)``: ``estimate`` is ``metric(probs, labels)`` exactly
        unless ``bias_corrected``; ``plugin`` is always that value. Clipped below at 0
        (every measure of the module is non-negative).

    Examples
    --------
    >>> import numpy as np
    >>> from calibcourse.calibration import metrics, stats
    >>> rng = np.random.default_rng(0)
    >>> p = rng.uniform(0.5, 1, 4000); y = (rng.random(4000) < p).astype(int)
    >>> r = stats.interval(metrics.ece, p, y, n_boot=200, reliability="positive_class")
    >>> r.estimate == metrics.ece(p, y, reliability="positive_class"), r.low <= r.estimate <= r.high
    (True, True)
    >>> bc = stats.interval(metrics.ece, p, y, n_boot=200, bias_corrected=True,
    ...                     reliability="positive_class")
    >>> bool(bc.estimate < bc.plugin == r.estimate)   # the noise's share taken out
    True
    """
    _check_metric(metric)
    _check_common(n_boot, level, method)
    bias_corrected = _check_bias_corrected(bias_corrected, metric, metric_kwargs)
    p, y = _check_pair(probs, labels)
    plugin, f = _resampler(metric, p, y, metric_kwargs)
    reps = [f(i) for i in resample_indices(len(y), n_boot, seed)]
    return interval_from_replicates(plugin, reps, level, method, len(y), lower=0.0, bias_corrected=bias_corrected)


def paired_difference(metric, probs_a, probs_b, labels, n_boot: int = 2000, level: float = 0.95,
                      seed: int = 0, relative: bool = False, method: str = "hull",
                      bias_corrected: bool = False, **metric_kwargs) -> Difference:
    """Difference ``metric(a) - metric(b)`` of two predictors on the same test samples.

    Both predictors are evaluated on the same resample of the test samples in every
    bootstrap replicate (a paired bootstrap), so that what the two share (the hard samples,
    the label noise) cancels in the difference.

    Parameters
    ----------
    metric : callable
        ``metric(probs, labels, **metric_kwargs) -> float``.
    probs_a, probs_b : array-like
        Predictions of the two predictors on the same samples, same shape.
    labels : array-like of shape (n,)
        The labels of those samples.
    n_boot, level, seed, method
        As in :func:`interval`.
    relative : bool
        If True, the relative change ``metric(a) / metric(b) - 1`` (e.g. -0.23 for "lowers
        the ECE by 23 %").
    bias_corrected : bool, default=False
        Report the bias-corrected difference instead of the plug-in one; an error for a
        ratio (``relative=True``) or a maximum (the MCE).
    **metric_kwargs
        Passed to ``metric``.

    Returns
    -------
    Difference
        ``(estimate, low, high, level)``: ``estimate`` is ``metric(a, y) - metric(b, y)``
        exactly (``metric(a, y) / metric(b, y) - 1`` with ``relative``) unless
        ``bias_corrected``; the interval comes from the bootstrap of that plug-in quantity.

    Examples
    --------
    >>> import numpy as np
    >>> from calibcourse.calibration import metrics, stats
    >>> rng = np.random.default_rng(0)
    >>> q = rng.uniform(0.5, 1, 5000); y = (rng.random(5000) < q).astype(int)
    >>> d = stats.paired_difference(metrics.ece, q, np.clip(q + 0.1, 0, 1), y, n_boot=200,
    ...                             reliability="positive_class")
    >>> stats.verdict(d.low, d.high, direction="below")   # the calibrated predictor is better
    'held'
    >>> a = metrics.ece(q, y, reliability="positive_class")
    >>> b = metrics.ece(np.clip(q + 0.1, 0, 1), y, reliability="positive_class")
    >>> d.estimate == a - b                                 # the plug-in difference, exactly
    True
    """
    _check_metric(metric)
    _check_common(n_boot, level, method)
    bias_corrected = _check_bias_corrected(bias_corrected, metric, metric_kwargs, relative)
    pa, y = _check_pair(probs_a, labels, "probs_a")
    pb, _ = _check_pair(probs_b, labels, "probs_b")
    if pa.shape != pb.shape:
        raise ValueError(f"probs_a and probs_b must have the same shape (the same samples); got "
                         f"{pa.shape} and {pb.shape}")
    va, fa = _resampler(metric, pa, y, metric_kwargs)
    vb, fb = _resampler(metric, pb, y, metric_kwargs)
    stat = _relative if relative else np.subtract
    reps = [stat(fa(i), fb(i)) for i in resample_indices(len(y), n_boot, seed)]
    return interval_from_replicates(stat(va, vb), reps, level, method, len(y), lower=-1.0 if relative else None,
                   bias_corrected=bias_corrected)


def _relative(a, b):
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.float64(a) / np.float64(b) - 1.0


def _check_seed_list(probs_list, labels, name):
    if isinstance(probs_list, np.ndarray) or not hasattr(probs_list, "__len__") or len(probs_list) < 1:
        raise ValueError(f"{name} must be a list with one array of probabilities per seed")
    out = [_check_pair(p, labels, f"{name}[{s}]")[0] for s, p in enumerate(probs_list)]
    if len({p.shape for p in out}) > 1:
        raise ValueError(f"every array of {name} must have the same shape (the same test samples); got "
                         f"{sorted({p.shape for p in out})}")
    return out


def seeds_difference(metric, probs_a_list, probs_b_list, labels, n_boot: int = 2000, level: float = 0.95,
                     seed: int = 0, relative: bool = False, bias_corrected: bool = False,
                     **metric_kwargs) -> Difference:
    r"""Mean over seeds of ``metric(a_s)``, minus the mean over seeds of ``metric(b_s)``.

    The two predictors were trained with several seeds each and evaluated on one shared test
    set. The estimate is the plug-in difference of the means over seeds (bias-corrected as in
    :func:`interval` only with ``bias_corrected=True``); the interval adds the
    test-sample variance (a joint bootstrap of the test set, the same resample for every seed
    of both predictors) and the seed variance (sample variance of the per-seed values over the
    number of seeds, for each predictor), with a t quantile and Welch-Satterthwaite degrees of
    freedom. See the module docstring for why.

    Parameters
    ----------
    metric : callable
        ``metric(probs, labels, **metric_kwargs) -> float``.
    probs_a_list, probs_b_list : list of array-like
        One array of test predictions per seed; ``probs_b_list=None`` gives the interval of
        the mean of ``a`` alone (see :func:`seeds_interval`).
    labels : array-like of shape (n,)
        The shared test labels.
    n_boot, level, seed : as in :func:`interval`.
    relative : bool
        The relative change ``mean_a / mean_b - 1`` instead of the difference.
    bias_corrected : bool, default=False
        Report the bias-corrected estimate; an error for a ratio or a maximum.
    **metric_kwargs
        Passed to ``metric``.

    Returns
    -------
    Difference
        With ``n_seeds`` the smaller number of seeds of the two. The interval is centred on
        the bias-corrected estimate and widened to hold the plug-in one (centred on the
        plug-in estimate for a ratio or a maximum).

    Examples
    --------
    >>> import numpy as np
    >>> from calibcourse.calibration import metrics, stats
    >>> rng = np.random.default_rng(0)
    >>> q = rng.uniform(0.5, 1, 3000); y = (rng.random(3000) < q).astype(int)
    >>> a = [np.clip(q + s, 0, 1) for s in (0.08, 0.1, 0.12)]   # three overconfident seeds
    >>> b = [np.clip(q + s, 0, 1) for s in (0.0, 0.01, -0.01)]  # three calibrated ones
    >>> d = stats.seeds_difference(metrics.ece, a, b, y, n_boot=200, reliability="positive_class")
    >>> d.n_seeds, stats.verdict(d.low, d.high, direction="above")
    (3, 'held')
    """
    from scipy.stats import t as student_t

    _check_metric(metric)
    _check_common(n_boot, level, "hull")
    correctable = not (relative and probs_b_list is not None) and not (
        metric is M.mce or metric_kwargs.get("norm") == "max")
    bias_corrected = _check_bias_corrected(bias_corrected, metric, metric_kwargs,
                                           relative and probs_b_list is not None)
    a_list = _check_seed_list(probs_a_list, labels, "probs_a_list")
    b_list = None if probs_b_list is None else _check_seed_list(probs_b_list, labels, "probs_b_list")
    if b_list is not None and a_list[0].shape != b_list[0].shape:
        raise ValueError(f"probs_a_list and probs_b_list must hold predictions of the same samples; got "
                         f"shapes {a_list[0].shape} and {b_list[0].shape}")
    y = _check_pair(a_list[0], labels)[1]
    fa = [_resampler(metric, p, y, metric_kwargs) for p in a_list]
    fb = [] if b_list is None else [_resampler(metric, p, y, metric_kwargs) for p in b_list]
    va = np.array([v for v, _ in fa])
    vb = np.array([v for v, _ in fb])

    def combine(ma, mb):
        if b_list is None:
            return ma
        return _relative(ma, mb) if relative else ma - mb

    plugin = combine(va.mean(), vb.mean() if fb else None)
    n = len(y)
    reps = _finite([combine(np.mean([f(i) for _, f in fa]), np.mean([f(i) for _, f in fb]) if fb else None)
                    for i in resample_indices(n, n_boot, seed)])
    centre = 2 * plugin - reps.mean() if correctable else plugin
    v_test = reps.var(ddof=1)
    # seed variance of each mean, times the squared derivative of the effect with respect to that
    # mean (a difference: +1 and -1; a relative change a / b - 1, by the delta method: 1 / b, -a / b^2)
    grads = (1.0, -1.0) if not (relative and fb) else (1.0 / vb.mean(), -va.mean() / vb.mean() ** 2)
    parts = [(g ** 2 * vals.var(ddof=1) / len(vals), len(vals) - 1)
             for vals, g in zip((va, vb), grads) if len(vals) > 1]
    v_seed = sum(v for v, _ in parts)
    if v_seed > 0:
        total = v_test + v_seed
        # Welch-Satterthwaite; the bootstrap part has (practically) infinite degrees of freedom
        df = total ** 2 / sum(v ** 2 / d for v, d in parts)
        q = student_t.ppf(0.5 + level / 2, df)
    else:
        from scipy.stats import norm

        total = v_test
        q = norm.ppf(0.5 + level / 2)
    half = q * np.sqrt(total)
    k = min(len(va), len(vb)) if fb else len(va)
    lower = (-1.0 if relative else None) if fb else 0.0
    est = centre if bias_corrected else plugin
    low, high = min(centre - half, plugin), max(centre + half, plugin)
    if lower is not None:
        est, low = max(est, lower), max(low, lower)
    return Difference(float(est), float(low), float(high), float(level), float(plugin), int(n), int(k),
                      "seeds")


def seeds_interval(metric, probs_list, labels, n_boot: int = 2000, level: float = 0.95, seed: int = 0,
                   bias_corrected: bool = False, **metric_kwargs) -> Difference:
    """Interval of the mean over seeds of one measure (see :func:`seeds_difference`).

    Parameters
    ----------
    metric : callable
        ``metric(probs, labels, **metric_kwargs) -> float``.
    probs_list : list of array-like
        One array of test predictions per seed, all of the same samples.
    labels : array-like of shape (n,)
        The shared test labels.
    n_boot, level, seed, bias_corrected
        As in :func:`interval`.
    **metric_kwargs
        Passed to ``metric``.

    Returns
    -------
    Difference
        The mean over seeds of the plug-in values (bias-corrected only when asked) and its
        interval (test-sample and seed variance), clipped below at 0; ``n_seeds`` is ``len(probs_list)``,
        ``method`` ``"seeds"``.

    Examples
    --------
    >>> import numpy as np
    >>> from calibcourse.calibration import metrics, stats
    >>> rng = np.random.default_rng(1)
    >>> q = rng.uniform(0.5, 1, 3000); y = (rng.random(3000) < q).astype(int)
    >>> r = stats.seeds_interval(metrics.error, [q, q, q], y, n_boot=100)
    >>> bool(r.low <= r.estimate <= r.high), r.n_seeds, r.method
    (True, 3, 'seeds')
    """
    return seeds_difference(metric, probs_list, None, labels, n_boot=n_boot, level=level, seed=seed,
                            bias_corrected=bias_corrected, **metric_kwargs)


def bootstrap_statistic(statistic, *arrays, n_boot: int = 2000, level: float = 0.95, seed: int = 0,
                        method: str = "hull", bias_corrected: bool = False) -> Difference:
    """Interval of any statistic of a sample: ``statistic(*resampled arrays) -> float``.

    The arrays share their first axis (the samples) and are resampled jointly, e.g. the
    temperature fitted on a calibration set: ``bootstrap_statistic(lambda z, y:
    TemperatureScaling().fit(z, y).temperature_, logits, labels)``.

    Parameters
    ----------
    statistic : callable
        ``statistic(*arrays) -> float``.
    *arrays : array-like
        The data, one row per sample, all of the same length.
    n_boot, level, seed, method, bias_corrected
        As in :func:`interval` (``statistic`` must not be a maximum or a ratio where
        ``bias_corrected`` is set).

    Returns
    -------
    Difference
        The statistic on the full data (``plugin``, also the ``estimate`` unless
        ``bias_corrected``) and the interval of ``method``; not clipped.

    Examples
    --------
    >>> import numpy as np
    >>> from calibcourse.calibration import stats
    >>> x = np.random.default_rng(0).normal(1.0, 1.0, 400)
    >>> r = stats.bootstrap_statistic(np.mean, x, n_boot=500, method="percentile")
    >>> bool(r.low < 1.0 < r.high)
    True
    """
    _check_common(n_boot, level, method)
    bias_corrected = _check_bias_corrected(bias_corrected)
    if not arrays:
        raise ValueError("bootstrap_statistic needs at least one array")
    arrays = [np.asarray(a) for a in arrays]
    n = len(arrays[0])
    if any(len(a) != n for a in arrays):
        raise ValueError(f"the arrays must share their first axis; got lengths {[len(a) for a in arrays]}")
    plugin = float(statistic(*arrays))
    reps = [float(statistic(*(a[i] for a in arrays))) for i in resample_indices(n, n_boot, seed)]
    return interval_from_replicates(plugin, reps, level, method, n, bias_corrected=bias_corrected)


# --------------------------------------------------------------------------- the rule
def verdict(low: float, high: float, null: float = 0.0, direction: str = "below") -> str:
    """The verdict on a claim from the interval of its effect.

    Parameters
    ----------
    low, high : float
        The interval of the effect.
    null : float
        The boundary the claim is tested against: 0 for "lowers" / "raises", the claimed
        effect size for a claim with a size (e.g. -0.23 for "lowers the ECE by at least 23 %").
    direction : {"below", "above"}
        The side of ``null`` on which the claim says the effect lies.

    Returns
    -------
    str
        ``"held"`` if the whole interval lies on the claimed side of ``null``, ``"not held"``
        if it lies wholly on the other side, ``"inconclusive"`` otherwise (the interval
        contains ``null``).

    Examples
    --------
    >>> from calibcourse.calibration.stats import verdict
    >>> verdict(-0.03, -0.01), verdict(0.01, 0.02), verdict(-0.01, 0.02)
    ('held', 'not held', 'inconclusive')
    >>> verdict(0.3, 0.5, null=0.25, direction="above")
    'held'
    """
    if direction not in DIRECTIONS:
        raise ValueError(f"direction must be 'below' or 'above'; got {direction!r}")
    for name, v in (("low", low), ("high", high), ("null", null)):
        if not isinstance(v, (int, float, np.floating, np.integer)) or not np.isfinite(v):
            raise ValueError(f"{name} must be a finite number; got {v!r}")
    if low > high:
        raise ValueError(f"low must not exceed high; got low={low}, high={high}")
    below, above = high < null, low > null
    if direction == "below":
        return "held" if below else "not held" if above else "inconclusive"
    return "held" if above else "not held" if below else "inconclusive"


# --------------------------------------------------------------------------- seeds paired by seed
class PairedSeeds(NamedTuple):
    """The result of :func:`paired_seeds_difference`: a :class:`Difference`'s first fields, then
    the per-seed differences, the sign count and the two variance parts.

    Attributes
    ----------
    estimate, low, high, level, plugin, n, n_seeds, method
        As in :class:`Difference` (``method`` is ``"paired seeds"``).
    per_seed : numpy.ndarray of shape (n_seeds,)
        ``metric(a_s) - metric(b_s)`` of each seed ``s`` on the full test set.
    n_positive : int
        The seeds where the difference is > 0 ("a is worse in ``n_positive`` of ``n_seeds``
        seeds" for a measure where lower is better).
    v_test, v_seed : float
        The variance of the mean difference from the test samples (bootstrap) and from the seeds
        (the per-seed differences' variance over ``n_seeds``).
    df : float
        The t quantile's degrees of freedom (inf where only the test part is left).

    Examples
    --------
    >>> d = PairedSeeds(-0.01, -0.02, 0.0, 0.95, -0.01, 1000, 3, "paired seeds",
    ...                 np.array([-0.02, -0.01, 0.0]), 0, 1e-5, 3e-5, 4.0)
    >>> d.per_seed.mean() == d.estimate, d.n_positive
    (np.True_, 0)
    """

    estimate: float
    low: float
    high: float
    level: float
    plugin: float
    n: int
    n_seeds: int
    method: str
    per_seed: np.ndarray
    n_positive: int
    v_test: float
    v_seed: float
    df: float

    def detectable(self, power: float = 0.8) -> float:
        """As :meth:`Difference.detectable`."""
        return Difference(*self[:8]).detectable(power)

    @property
    def sign_text(self) -> str:
        """``"worse in k of n seeds"`` (the first predictor's measure above the second's)."""
        return f"worse in {self.n_positive} of {self.n_seeds} seed{'s' if self.n_seeds != 1 else ''}"


def paired_seeds_difference(metric, probs_a_list, probs_b_list, labels, n_boot: int = 2000,
                            level: float = 0.95, seed: int = 0, **metric_kwargs) -> PairedSeeds:
    r"""Mean over seeds of ``metric(a_s) - metric(b_s)``, the two predictors paired by seed.

    Where both methods of seed ``s`` share what the seed fixes (initialization, data order), the
    comparison is the per-seed difference :math:`d_s` on the same test samples. The estimate is
    their mean :math:`\bar d` (the plug-in value, as every estimate of this module); the interval is

    .. math:: \bar d \pm t_{\nu}\, \sqrt{V_\text{test} + s_d^2 / S},

    with :math:`V_\text{test}` the bootstrap variance of :math:`\bar d` over test samples,
    :math:`s_d^2` the sample variance of the :math:`S` per-seed differences, and
    :math:`\nu` from Welch-Satterthwaite (:math:`S - 1` for the seed part, the bootstrap's
    practically infinite). With ``n_boot=0`` there is no test part and the interval is the paired
    t interval of ``scipy.stats.ttest_rel``; with one seed there is no seed part and it is the
    normal interval of the paired bootstrap. The sign count says in how many seeds ``a`` is above
    ``b``. Unlike :func:`seeds_difference` (two independent sets of seeds, Welch), what the paired
    seeds share cancels in each :math:`d_s`.

    Parameters
    ----------
    metric : callable
        ``metric(probs, labels, **metric_kwargs) -> float``.
    probs_a_list, probs_b_list : list of array-like
        One array of test predictions per seed, seed ``s`` of ``a`` paired with seed ``s`` of ``b``;
        the same number of seeds, all of the same samples.
    labels : array-like of shape (n,)
        The shared test labels.
    n_boot : int, default=2000
        Bootstrap resamples of the test set (0: no test part, the seeds alone).
    level : float, default=0.95
        The interval's coverage.
    seed : int, default=0
        Seed of the bootstrap's resamples.
    **metric_kwargs
        Passed to ``metric``.

    Returns
    -------
    PairedSeeds
        The estimate, interval, per-seed differences, sign count and variance parts.

    Examples
    --------
    >>> import numpy as np
    >>> from calibcourse.calibration import metrics, stats
    >>> rng = np.random.default_rng(0)
    >>> q = rng.uniform(0.5, 1, 3000); y = (rng.random(3000) < q).astype(int)
    >>> shift = [0.0, 0.02, -0.01, 0.01]                               # what each seed shares
    >>> a = [np.clip(q + 0.08 + s, 0, 1) for s in shift]               # overconfident
    >>> b = [np.clip(q + s, 0, 1) for s in shift]
    >>> d = stats.paired_seeds_difference(metrics.ece, a, b, y, n_boot=200, reliability="positive_class")
    >>> d.sign_text, stats.verdict(d.low, d.high, direction="above")
    ('worse in 4 of 4 seeds', 'held')
    """

    _check_metric(metric)
    a_list = _check_seed_list(probs_a_list, labels, "probs_a_list")
    b_list = _check_seed_list(probs_b_list, labels, "probs_b_list")
    if len(a_list) != len(b_list):
        raise ValueError(f"probs_a_list and probs_b_list must hold the same seeds (paired); got "
                         f"{len(a_list)} and {len(b_list)} seeds")
    if a_list[0].shape != b_list[0].shape:
        raise ValueError(f"probs_a_list and probs_b_list must hold predictions of the same samples; got "
                         f"shapes {a_list[0].shape} and {b_list[0].shape}")
    return paired_seeds_contrast(metric, [a_list, b_list], (1.0, -1.0), labels, n_boot=n_boot, level=level,
                                 seed=seed, **metric_kwargs)


def paired_seeds_contrast(metric, probs_lists, weights, labels, n_boot: int = 2000, level: float = 0.95,
                          seed: int = 0, **metric_kwargs) -> PairedSeeds:
    r"""Mean over seeds of a contrast :math:`d_s = \sum_j w_j\,\mathrm{metric}(P_{js})` of predictors paired by seed.

    :func:`paired_seeds_difference` is the contrast ``(1, -1)`` of two predictors. A difference of
    differences, ``(1, -1, -1, 1)``, asks whether a gain changes between two conditions: e.g.
    ``ECE(CE) - ECE(CE + TS)`` on shifted test images minus the same on the clean ones (chapter 6).
    Every predictor must score the same samples in the same order (a rotated test image keeps its
    row), so that one bootstrap resample of the rows is applied to all of them; the interval is
    built as in :func:`paired_seeds_difference` (test part plus seed part, Welch-Satterthwaite).

    Parameters
    ----------
    metric : callable
        ``metric(probs, labels, **metric_kwargs) -> float``.
    probs_lists : list of lists of array-like
        ``probs_lists[j][s]``: predictor ``j``'s test predictions of seed ``s``; every predictor the
        same number of seeds, every array of the same samples.
    weights : sequence of float
        One weight per predictor.
    labels : array-like of shape (n,)
        The shared test labels.
    n_boot : int, default=2000
        Bootstrap resamples of the test rows (0: no test part, the seeds alone).
    level : float, default=0.95
        The interval's coverage.
    seed : int, default=0
        Seed of the bootstrap's resamples.
    **metric_kwargs
        Passed to ``metric``.

    Returns
    -------
    PairedSeeds
        The estimate, interval, per-seed contrasts, sign count (contrasts > 0) and variance parts.

    Examples
    --------
    >>> import numpy as np
    >>> from calibcourse.calibration import metrics, stats
    >>> rng = np.random.default_rng(0)
    >>> q = rng.uniform(0.5, 1, 2000); y = (rng.random(2000) < q).astype(int)
    >>> over = lambda d: [np.clip(q + d + s, 0, 1) for s in (0.0, 0.01, -0.01)]   # three seeds
    >>> # the gain of a fix is 0.10 in one condition and 0.02 in the other: the gain shrinks
    >>> d = stats.paired_seeds_contrast(metrics.brier, [over(0.1), over(0.0), over(0.02), over(0.0)],
    ...                                 (1, -1, -1, 1), y, n_boot=200)
    >>> bool(d.estimate > 0), d.n_seeds, stats.verdict(d.low, d.high, direction="above")
    (True, 3, 'held')
    """
    from scipy.stats import norm
    from scipy.stats import t as student_t

    _check_metric(metric)
    if isinstance(n_boot, bool) or not isinstance(n_boot, (int, np.integer)) or not (n_boot == 0 or n_boot >= 10):
        raise ValueError(f"n_boot must be 0 (no test part) or an integer >= 10; got {n_boot!r}")
    _check_common(10, level, "hull")
    if isinstance(probs_lists, np.ndarray) or not hasattr(probs_lists, "__len__") or len(probs_lists) < 1:
        raise ValueError("probs_lists must be a list with one list of per-seed predictions per predictor")
    w = np.asarray(weights, dtype=float)
    if w.shape != (len(probs_lists),) or not np.all(np.isfinite(w)):
        raise ValueError(f"weights must hold one finite number per predictor ({len(probs_lists)}); got {weights!r}")
    lists = [_check_seed_list(p, labels, f"probs_lists[{j}]") for j, p in enumerate(probs_lists)]
    if len({len(x) for x in lists}) > 1:
        raise ValueError(f"every predictor must hold the same seeds (paired); got {[len(x) for x in lists]} seeds")
    if len({x[0].shape for x in lists}) > 1:
        raise ValueError(f"every predictor must hold predictions of the same samples; got shapes "
                         f"{[x[0].shape for x in lists]}")
    y = _check_pair(lists[0][0], labels)[1]
    fs = [[_resampler(metric, p, y, metric_kwargs) for p in x] for x in lists]
    k = len(lists[0])

    def contrast(values):  # sum_j w_j v_j, the first term as it is (so that (1, -1) is exactly a - b)
        out = values[0] if w[0] == 1 else w[0] * values[0]
        for wj, v in zip(w[1:], values[1:]):
            out = out - v if wj == -1 else out + (v if wj == 1 else wj * v)
        return out

    per_seed = np.array([contrast([fs[j][s][0] for j in range(len(fs))]) for s in range(k)], dtype=float)
    plugin = float(per_seed.mean())
    if n_boot:
        reps = _finite([np.mean([contrast([fs[j][s][1](i) for j in range(len(fs))]) for s in range(k)])
                        for i in resample_indices(len(y), n_boot, seed)])
        v_test = float(reps.var(ddof=1))  # the same resamples for every seed of every predictor
    else:
        v_test = 0.0
    est = plugin
    v_seed = float(per_seed.var(ddof=1) / k) if k > 1 else 0.0
    total = v_test + v_seed
    if v_seed > 0:
        df = total ** 2 / (v_seed ** 2 / (k - 1))
        q = student_t.ppf(0.5 + level / 2, df)
    else:
        df, q = float("inf"), norm.ppf(0.5 + level / 2)
    half = q * np.sqrt(total)
    return PairedSeeds(float(est), float(est - half), float(est + half), float(level), plugin, int(len(y)), k,
                       "paired seeds", per_seed, int(np.sum(per_seed > 0)), v_test, v_seed, float(df))


__all__ += ["PairedSeeds", "paired_seeds_difference", "paired_seeds_contrast"]


# --------------------------------------------------------------------------- one predictor against several
class RivalsDifference(NamedTuple):
    r"""The result of :func:`rivals_difference`: an interval for ``metric(a)`` minus the *best* rival's, with
    the per-rival intervals it is built from.

    Attributes
    ----------
    estimate, low, high, level, plugin, n, n_seeds, method
        As in :class:`Difference`: the effect :math:`\max_j [\mathrm{metric}(a) - \mathrm{metric}(b_j)]`
        and its interval (``method`` is ``"rivals, Bonferroni"``).
    per_rival : dict
        ``{rival: Difference}``, ``metric(a) - metric(rival)`` at ``level`` (the upper ends).
    adjusted : dict
        ``{rival: Difference}``, the same at the Bonferroni level ``1 - (1 - level) / k`` (the lower ends).
    closest : str
        The rival with the largest upper end (the one that decides "held").
    better : tuple of str
        The rivals whose adjusted interval lies wholly above 0: reliably better than ``a`` on a
        measure where lower is better.

    Examples
    --------
    >>> d = Difference(-0.01, -0.02, 0.0, 0.95)
    >>> r = RivalsDifference(-0.01, -0.03, 0.0, 0.95, -0.01, 100, 1, "rivals, Bonferroni",
    ...                      {"b": d}, {"b": d}, "b", ())
    >>> r.closest, r[:4]
    ('b', (-0.01, -0.03, 0.0, 0.95))
    """

    estimate: float
    low: float
    high: float
    level: float
    plugin: float
    n: int
    n_seeds: int
    method: str
    per_rival: dict
    adjusted: dict
    closest: str
    better: tuple

    def detectable(self, power: float = 0.8) -> float:
        """As :meth:`Difference.detectable`, of the closest rival's difference."""
        return self.per_rival[self.closest].detectable(power)


def rivals_difference(metric, probs_a, rivals: dict, labels, n_boot: int = 2000, level: float = 0.95,
                      seed: int = 0, **metric_kwargs) -> RivalsDifference:
    r"""Is ``a`` better than *every* rival? ``metric(a)`` minus the best rival's, on the same test samples.

    The effect is :math:`\theta = \max_j \theta_j` with :math:`\theta_j = \mathrm{metric}(a) -
    \mathrm{metric}(b_j)` (population values): below 0 when ``a`` beats every rival on a measure where
    lower is better. Its interval is

    .. math:: \Big[\max_j L_j^{(k)},\; \max_j U_j\Big],

    with :math:`U_j` the upper end of the paired interval of :math:`\theta_j` at ``level``
    (:func:`paired_difference`) and :math:`L_j^{(k)}` the lower end at the Bonferroni level
    :math:`1 - (1 - \text{level}) / k` for :math:`k` rivals. :func:`verdict` with ``direction="below"``
    then reads it as

    * **held** iff every rival's interval lies below 0 (an *intersection-union* test: "better than
      each" is rejected unless each comparison is, so no multiplicity correction is needed);
    * **not held** iff some rival's Bonferroni-adjusted interval lies above 0 (that rival is reliably
      better, corrected for having looked at :math:`k` of them);
    * **inconclusive** otherwise.

    Both ends are valid bounds for :math:`\theta` (one-sided, at ``(1 - level) / 2`` each): the upper
    because the rival that attains the maximum has its own bound, the lower because every rival's
    adjusted bound holds at once. Choosing the rival by its test score and testing it on the same
    samples (the winner's curse) is what this replaces. Every rival is evaluated on the same
    bootstrap resamples.

    Parameters
    ----------
    metric : callable
        ``metric(probs, labels, **metric_kwargs) -> float``.
    probs_a : array-like
        The predictor under test.
    rivals : dict
        ``{name: probs}``, at least one rival, each of the shape of ``probs_a`` (the same samples).
    labels : array-like of shape (n,)
        The labels of those samples.
    n_boot, level, seed
        As in :func:`paired_difference`.
    **metric_kwargs
        Passed to ``metric``.

    Returns
    -------
    RivalsDifference
        The effect's estimate (the largest plug-in difference) and interval, and every rival's
        intervals at both levels.

    Examples
    --------
    A calibrated predictor against two overconfident ones, then against a better one:

    >>> import numpy as np
    >>> from calibcourse.calibration import metrics, stats
    >>> rng = np.random.default_rng(0)
    >>> q = rng.uniform(0.5, 1, 4000); y = (rng.random(4000) < q).astype(int)
    >>> worse = {"+0.05": np.clip(q + 0.05, 0, 1), "+0.10": np.clip(q + 0.10, 0, 1)}
    >>> d = stats.rivals_difference(metrics.ece, q, worse, y, n_boot=200, reliability="positive_class")
    >>> d.closest, stats.verdict(d.low, d.high)
    ('+0.05', 'held')
    >>> d = stats.rivals_difference(metrics.ece, np.clip(q + 0.1, 0, 1), {"calibrated": q, **worse}, y,
    ...                             n_boot=200, reliability="positive_class")
    >>> d.better, stats.verdict(d.low, d.high)
    (('calibrated', '+0.05'), 'not held')
    """
    _check_metric(metric)
    _check_common(n_boot, level, "hull")
    if not isinstance(rivals, dict) or not rivals:
        raise ValueError(f"rivals must be a non-empty dict {{name: probs}}; got {type(rivals).__name__}")
    pa, y = _check_pair(probs_a, labels, "probs_a")
    va, fa = _resampler(metric, pa, y, metric_kwargs)
    idx = list(resample_indices(len(y), n_boot, seed))
    reps_a = np.array([fa(i) for i in idx])
    k = len(rivals)
    adjusted_level = 1 - (1 - level) / k
    per_rival, adjusted = {}, {}
    for name, probs in rivals.items():
        pb, _ = _check_pair(probs, labels, f"rivals[{name!r}]")
        if pb.shape != pa.shape:
            raise ValueError(f"rivals[{name!r}] must have the shape of probs_a (the same samples); got "
                             f"{pb.shape} and {pa.shape}")
        vb, fb = _resampler(metric, pb, y, metric_kwargs)
        reps = reps_a - np.array([fb(i) for i in idx])
        per_rival[name] = interval_from_replicates(va - vb, reps, level, "hull", len(y))
        adjusted[name] = interval_from_replicates(va - vb, reps, adjusted_level, "hull", len(y))
    closest = max(per_rival, key=lambda r: per_rival[r].high)
    est = max(d.estimate for d in per_rival.values())
    low = max(d.low for d in adjusted.values())
    better = tuple(r for r in rivals if adjusted[r].low > 0)
    return RivalsDifference(float(est), float(low), float(per_rival[closest].high), float(level), float(est),
                            int(len(y)), 1, "rivals, Bonferroni", per_rival, adjusted, closest, better)


__all__ += ["RivalsDifference", "rivals_difference"]
