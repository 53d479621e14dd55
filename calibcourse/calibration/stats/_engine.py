"""The bootstrap engine every interval uses: the checks of the arguments, the fast resampling of a
measure's per-sample terms, the interval from the replicates, the verdict."""
from __future__ import annotations

from typing import NamedTuple

import numpy as np

from calibcourse.calibration import binning
from calibcourse.calibration import metrics as M
from calibcourse.calibration._arrays import ece_from_sums, two_columns
from calibcourse.calibration._validation import check_int, check_labels, check_probs

#: what :func:`verdict` returns (the claims ledger counts and tallies them in this order)
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
    check_int(n_boot, "n_boot", low=10)
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


def _check_probs_of(probs, y, name):
    """Probabilities of the samples whose checked labels are ``y``, checked (the labels are not again)."""
    try:
        p = check_probs(probs)
        if p.shape[0] != y.shape[0] or (p.ndim == 2 and y.size and y.max() >= p.shape[1]):
            check_labels(y, p.shape[0], 2 if p.ndim == 1 else p.shape[1])  # its message
    except ValueError as e:
        raise ValueError(f"{name}: {e}") from None
    return p


def _check_seed_list(probs_list, labels, name, y=None):
    """The checked arrays of ``probs_list`` and the checked labels (``y``, where they are already)."""
    if isinstance(probs_list, np.ndarray) or not hasattr(probs_list, "__len__") or len(probs_list) < 1:
        raise ValueError(f"{name} must be a list with one array of probabilities per seed")
    if y is None:
        first, y = _check_pair(probs_list[0], labels, f"{name}[0]")
    else:
        first = _check_probs_of(probs_list[0], y, f"{name}[0]")
    out = [first] + [_check_probs_of(p, y, f"{name}[{s}]") for s, p in enumerate(probs_list) if s]
    if len({p.shape for p in out}) > 1:
        raise ValueError(f"every array of {name} must have the same shape (the same test samples); got "
                         f"{sorted({p.shape for p in out})}")
    return out, y


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
        p2 = two_columns(p)
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


def ece_replicates(conf, outcome, n_boot: int, seed: int, n_bins: int = 15):
    """The equal-width binned ECE (L1) of ``(conf, outcome)`` and of its bootstrap resamples, all at once.

    The resamples are :func:`resample_indices`' (those of :func:`interval` with the same
    ``seed``); every sample keeps its bin in every resample, so a resample's per-bin sums are
    a weighted count, and the errors come from the toolkit's one ECE sum. A simulation that
    needs thousands of intervals (the intervals' coverage study) runs in seconds.

    Parameters
    ----------
    conf, outcome : numpy.ndarray of shape (n,)
        Confidences in [0, 1] and outcomes 0/1 (:func:`calibcourse.calibration.metrics.confidence_outcome`),
        checked.
    n_boot : int
        Number of resamples.
    seed : int
        Seed of the resampling.
    n_bins : int, default=15
        Equal-width bins.

    Returns
    -------
    plugin : float
        ``metrics.ece`` of the data.
    reps : numpy.ndarray of shape (n_boot,)
        ``metrics.ece`` of each resample.

    Examples
    --------
    >>> from calibcourse.calibration import metrics, stats
    >>> rng = np.random.default_rng(0)
    >>> c = rng.uniform(0.5, 1, 300); o = (rng.random(300) < c).astype(float)
    >>> plugin, reps = stats.ece_replicates(c, o, n_boot=20, seed=3)
    >>> idx = list(stats.resample_indices(300, 20, 3))
    >>> loop = [metrics.ece(c[i], o[i].astype(int), reliability="positive_class") for i in idx]
    >>> bool(np.allclose(reps, loop, rtol=0, atol=1e-12)), plugin == metrics.ece(c, o.astype(int))
    (True, True)
    """
    conf = np.asarray(conf, dtype=np.float64)
    outcome = np.asarray(outcome, dtype=np.float64)
    n = len(conf)
    b, _ = binning.assign_bins(conf, n_bins=n_bins)
    idx = np.stack(list(resample_indices(n, n_boot, seed)))  # (n_boot, n)
    flat = (np.arange(n_boot)[:, None] * n_bins + b[idx]).ravel()
    size = n_boot * n_bins

    def sums(weights):
        return np.bincount(flat, weights=weights, minlength=size).reshape(n_boot, n_bins)

    reps = ece_from_sums(sums(None), sums(conf[idx].ravel()), sums(outcome[idx].ravel()), "l1")
    full = [np.bincount(b, weights=w, minlength=n_bins) for w in (None, conf, outcome)]
    return ece_from_sums(*full, "l1"), reps


def _finite(reps) -> np.ndarray:
    """The finite bootstrap replicates; an error if fewer than 10 are."""
    reps = np.asarray(reps, dtype=float)
    reps = reps[np.isfinite(reps)]
    if reps.size < 10:
        raise ValueError("fewer than 10 bootstrap replicates were finite; the statistic is undefined "
                         "on most resamples (e.g. a relative change of a measure that is 0)")
    return reps


def metric_range(metric, difference: bool = False):
    """The range ``(low, high)`` of a measure of :mod:`calibcourse.calibration.metrics` (None where
    unbounded or unknown); of a difference of two values of it with ``difference``.

    Every calibration error, the error and the accuracy lie in [0, 1], the Brier score in [0, 2],
    the NLL in [0, inf). An interval is clipped to its measure's range: the basic half of the
    default "hull" interval, twice the estimate minus a bootstrap quantile, can leave it (an MCE of 0.77 with a
    bootstrap quantile of 0.4 would give 1.14).

    Examples
    --------
    >>> from calibcourse.calibration import metrics as M
    >>> metric_range(M.mce), metric_range(M.brier, difference=True), metric_range(M.nll)
    ((0.0, 1.0), (-2.0, 2.0), (0.0, None))
    """
    from calibcourse.calibration import metrics as M

    fn = getattr(metric, "func", metric)  # a functools.partial of a measure
    if fn in (*M.CALIBRATION_ERRORS.values(), M.error, M.accuracy):
        low, high = 0.0, 1.0
    elif fn is M.brier:
        low, high = 0.0, 2.0
    else:
        low, high = 0.0, None
    if difference:
        return (None, None) if high is None else (-high, high)
    return low, high


def interval_from_replicates(plugin, reps, level, method, n, lower=None, bias_corrected=False,
                             upper=None) -> Difference:
    """The estimate (plug-in unless ``bias_corrected``) and the interval of ``method`` from the
    bootstrap replicates of the plug-in quantity; clipped to ``[lower, upper]`` where given."""
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
    if upper is not None:
        est, low, high = min(est, upper), min(low, upper), min(high, upper)
    return Difference(float(est), float(low), float(high), float(level), float(plugin), int(n), 1, method)


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
