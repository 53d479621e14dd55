"""Intervals of one predictor, of two on the same test samples, and over seeds."""
from __future__ import annotations

import numpy as np

from calibcourse.calibration import metrics as M
from calibcourse.calibration._validation import checked
from calibcourse.calibration.stats._engine import (
    Difference,
    _check_bias_corrected,
    _check_common,
    _check_metric,
    _check_pair,
    _check_probs_of,
    _check_seed_list,
    _finite,
    _resampler,
    interval_from_replicates,
    metric_range,
    resample_indices,
)

__all__ = ["interval", "paired_difference", "seeds_difference", "seeds_interval", "bootstrap_statistic"]


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
    with checked():  # the metric on the checked arrays and their resamples
        plugin, f = _resampler(metric, p, y, metric_kwargs)
        reps = [f(i) for i in resample_indices(len(y), n_boot, seed)]
    low, high = metric_range(metric)
    return interval_from_replicates(plugin, reps, level, method, len(y), lower=low, bias_corrected=bias_corrected,
                                    upper=high)


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
    pb = _check_probs_of(probs_b, y, "probs_b")
    if pa.shape != pb.shape:
        raise ValueError(f"probs_a and probs_b must have the same shape (the same samples); got "
                         f"{pa.shape} and {pb.shape}")
    stat = _relative if relative else np.subtract
    with checked():
        va, fa = _resampler(metric, pa, y, metric_kwargs)
        vb, fb = _resampler(metric, pb, y, metric_kwargs)
        reps = [stat(fa(i), fb(i)) for i in resample_indices(len(y), n_boot, seed)]
    low, high = (-1.0, None) if relative else metric_range(metric, difference=True)
    return interval_from_replicates(stat(va, vb), reps, level, method, len(y), lower=low,
                                    bias_corrected=bias_corrected, upper=high)


def _relative(a, b):
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.float64(a) / np.float64(b) - 1.0


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
    _check_metric(metric)
    _check_common(n_boot, level, "hull")
    correctable = not (relative and probs_b_list is not None) and not (
        metric is M.mce or metric_kwargs.get("norm") == "max")
    bias_corrected = _check_bias_corrected(bias_corrected, metric, metric_kwargs,
                                           relative and probs_b_list is not None)
    a_list, y = _check_seed_list(probs_a_list, labels, "probs_a_list")
    b_list = None if probs_b_list is None else _check_seed_list(probs_b_list, labels, "probs_b_list", y)[0]
    if b_list is not None and a_list[0].shape != b_list[0].shape:
        raise ValueError(f"probs_a_list and probs_b_list must hold predictions of the same samples; got "
                         f"shapes {a_list[0].shape} and {b_list[0].shape}")
    with checked():
        return _seeds_difference(metric, a_list, b_list, y, n_boot, level, seed, relative, bias_corrected,
                                 correctable, metric_kwargs)


def _seeds_difference(metric, a_list, b_list, y, n_boot, level, seed, relative, bias_corrected, correctable,
                      metric_kwargs) -> Difference:
    """:func:`seeds_difference` on checked arrays."""
    from scipy.stats import t as student_t

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
             for vals, g in zip((va, vb), grads, strict=True) if len(vals) > 1]
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
    lower, upper = ((-1.0, None) if relative else metric_range(metric, difference=True)) if fb else metric_range(metric)
    est = centre if bias_corrected else plugin
    low, high = min(centre - half, plugin), max(centre + half, plugin)
    if lower is not None:
        est, low = max(est, lower), max(low, lower)
    if upper is not None:
        est, high = min(est, upper), min(high, upper)
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
