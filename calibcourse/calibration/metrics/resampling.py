"""What :mod:`calibcourse.calibration.stats` resamples: a measure as a function of the
confidences and outcomes, which it draws once."""
from __future__ import annotations

from calibcourse.calibration.metrics._core import _binned_error, _prepare
from calibcourse.calibration.metrics.binned import ace, ece, mce

__all__ = ["binned_on_confidence", "confidence_outcome"]


def binned_on_confidence(metric, **metric_kwargs):
    """For ``ece``, ``mce`` and ``ace``: the same measure as a function of (confidence, outcome).

    Binned top-label measures depend on the predictions only through each sample's confidence
    and outcome; resampling those two arrays is what makes bootstraps fast
    (:mod:`calibcourse.calibration.stats`).

    Parameters
    ----------
    metric : callable
        A measure of this module.
    **metric_kwargs
        Its keyword arguments (``n_bins``, ``strategy``, ``norm``, ``reliability``).

    Returns
    -------
    callable or None
        ``f(confidence, outcome) -> float`` equal to ``metric(probs, labels, **metric_kwargs)``
        on the arrays of :func:`confidence_outcome`, or None where there is no such form.

    Examples
    --------
    >>> import numpy as np
    >>> p = np.array([[0.9, 0.1], [0.3, 0.7], [0.6, 0.4]]); y = np.array([0, 0, 0])
    >>> f = binned_on_confidence(ece, n_bins=5)
    >>> bool(np.isclose(f(*confidence_outcome(p, y)), ece(p, y, n_bins=5)))
    True
    """
    return _binned_from_conf(metric, metric_kwargs)


def confidence_outcome(probs, labels, reliability: str | None = None):
    """Validate; return the float64 arrays (confidence, outcome) that ``reliability`` measures.

    Parameters
    ----------
    probs, labels : array-like
        As every measure of this module takes them.
    reliability : {"top_label", "positive_class"}, optional
        Top-label confidence and correctness, or P(y = 1) and y; by default P(y = 1) for
        binary input of shape (n,), top-label for (n, K).

    Returns
    -------
    tuple of numpy.ndarray
        ``(confidence, outcome)``, both of shape (n,).

    Examples
    --------
    >>> import numpy as np
    >>> confidence_outcome(np.array([[0.8, 0.2], [0.4, 0.6]]), np.array([0, 0]))
    (array([0.8, 0.6]), array([1., 0.]))
    """
    return _prepare(probs, labels, reliability)


def _binned_from_conf(metric, kwargs):
    """For ece/mce/ace: a function of (confidence, outcome) giving the same value, else None."""
    if metric not in (ece, mce, ace):
        return None
    kw = dict(kwargs)
    kw.pop("reliability", None)
    n_bins = kw.pop("n_bins", 15)
    strategy = kw.pop("strategy", "quantile" if metric is ace else "uniform")
    norm = kw.pop("norm", "max" if metric is mce else "l1")
    if kw or (metric is ace and strategy != "quantile") or (metric is mce and norm != "max"):
        return None
    return lambda c, o: _binned_error(c, o, n_bins, strategy, norm)
