"""The proper scores (NLL, Brier and Murphy's decomposition of it), accuracy and error."""
from __future__ import annotations

from collections import namedtuple

import numpy as np

from calibcourse.calibration import binning
from calibcourse.calibration._arrays import two_columns
from calibcourse.calibration._validation import (
    check_labels,
    check_probs,
    check_sample_weight,
)
from calibcourse.calibration.metrics._core import _checked_top_label

__all__ = ["nll", "brier", "brier_decomposition", "accuracy", "error"]


def _probs2d(probs):
    return two_columns(check_probs(probs))


def nll(probs, labels, eps: float = 1e-12, sample_weight=None) -> float:
    r"""Negative log-likelihood :math:`-\frac1n\sum_i \log p_{i, y_i}`.

    Parameters
    ----------
    probs : array_like of shape (n, K) or (n,)
        Probabilities: a row per sample that sums to 1, or P(y = 1) of a binary problem.
    labels : array_like of shape (n,)
        Integer class labels.
    eps : float, default=1e-12
        ``p_{i, y_i}`` is clipped below at ``eps`` (a certain mistake costs ``-log(eps)``, not infinity).
    sample_weight : array_like of shape (n,), optional
        Per-sample weights (finite, >= 0), as scikit-learn's: a sample of weight 2 counts as two.

    Returns
    -------
    float
        The mean NLL (natural log): ``sklearn.metrics.log_loss``'s wherever every
        :math:`p_{i, y_i} \ge` 1e-12 (below it, log_loss clips at the dtype's machine
        epsilon instead, e.g. 36.04 nats for a float64 zero where this gives 27.63).

    Examples
    --------
    >>> round(nll(np.array([[0.5, 0.5], [0.2, 0.8]]), np.array([0, 1])), 4)  # -(log .5 + log .8) / 2
    0.4581
    """
    p = _probs2d(probs)
    y = check_labels(labels, p.shape[0], p.shape[1])
    py = p[np.arange(p.shape[0]), y].astype(np.float64)
    w = check_sample_weight(sample_weight, p.shape[0])
    return float(-np.average(np.log(np.maximum(py, eps)), weights=w))


def brier(probs, labels, sample_weight=None) -> float:
    r"""Brier score.

    Parameters
    ----------
    probs : array_like of shape (n, K) or (n,)
        Probabilities: a row per sample that sums to 1, or P(y = 1) of a binary problem.
    labels : array_like of shape (n,)
        Integer class labels.

    sample_weight : array_like of shape (n,), optional
        Per-sample weights (finite, >= 0), as scikit-learn's: a sample of weight 2 counts as two.

    Returns
    -------
    float
        Multiclass ``(n, K)``: :math:`\frac1n\sum_i\sum_k (p_{ik} - [y_i = k])^2` (Brier 1950). Binary
        ``(n,)``: :math:`\frac1n\sum_i (p_i - y_i)^2`, as ``sklearn.metrics.brier_score_loss`` (half the
        two-column value).

    Examples
    --------
    >>> round(brier(np.array([[0.5, 0.5], [0.2, 0.8]]), np.array([0, 1])), 6)  # (.5 + .08) / 2
    0.29
    >>> round(brier(np.array([0.5, 0.8]), np.array([0, 1])), 6)
    0.145
    """
    p = check_probs(probs)
    if p.ndim == 1:
        y = check_labels(labels, p.shape[0], 2)
        return float(np.average((p - y) ** 2, weights=check_sample_weight(sample_weight, p.shape[0])))
    y = check_labels(labels, p.shape[0], p.shape[1])
    sq = np.sum(p.astype(np.float64) ** 2, axis=1) - 2 * p[np.arange(p.shape[0]), y] + 1.0
    return float(np.average(sq, weights=check_sample_weight(sample_weight, p.shape[0])))


BrierDecomposition = namedtuple("BrierDecomposition", ["reliability", "resolution", "uncertainty"])
BrierDecomposition.__doc__ = """Murphy's terms of the Brier score (a named tuple).

Attributes
----------
reliability : float
    The squared calibration error term (0 is best).
resolution : float
    How far the forecasts separate the samples from the base rate (higher is better).
uncertainty : float
    The Brier score of always forecasting the base rate; the labels' alone.

Examples
--------
>>> d = BrierDecomposition(0.01, 0.2, 0.9)
>>> round(d.reliability - d.resolution + d.uncertainty, 6)  # about the Brier score
0.71
"""


def brier_decomposition(probs, labels, n_bins: int = 15):
    r"""Murphy's (1973) decomposition of the Brier score, from equal-width bins of each class's probability.

    For each class :math:`k` (the single column of a binary ``(n,)`` input), bin the samples by
    :math:`p_k` into :math:`B_{mk}`, with mean forecast :math:`\bar p_{mk}`, frequency
    :math:`\bar o_{mk}` of class :math:`k` in the bin and base rate :math:`\bar o_k`:

    .. math:: \mathrm{REL} = \sum_k \sum_m \tfrac{|B_{mk}|}{n}(\bar p_{mk} - \bar o_{mk})^2, \quad
              \mathrm{RES} = \sum_k \sum_m \tfrac{|B_{mk}|}{n}(\bar o_{mk} - \bar o_k)^2, \quad
              \mathrm{UNC} = \sum_k \bar o_k (1 - \bar o_k).

    Reliability is a squared, classwise calibration error (0 is best); resolution, how far the
    forecasts sort the samples away from the base rate (higher is better); uncertainty depends
    on the labels only. :func:`brier` equals REL - RES + UNC exactly when every bin holds a
    single forecast value; otherwise the spread of the forecasts within the bins makes up the
    (small) difference.

    Parameters
    ----------
    probs : array_like of shape (n, K) or (n,)
        Probabilities: a row per sample that sums to 1, or P(y = 1) of a binary problem.
    labels : array_like of shape (n,)
        Integer class labels.
    n_bins : int, default=15
        Number of bins.

    Returns
    -------
    BrierDecomposition
        ``(reliability, resolution, uncertainty)``, each >= 0.

    Examples
    --------
    >>> p, y = np.array([0.1, 0.1, 0.9, 0.9]), np.array([0, 1, 1, 1])
    >>> d = brier_decomposition(p, y, n_bins=10)   # bins {.1, .1} and {.9, .9}
    >>> [round(v, 6) for v in d]                     # (.4^2 + .1^2) / 2, (.25^2 + .25^2) / 2, .75 * .25
    [0.085, 0.0625, 0.1875]
    >>> round(d.reliability - d.resolution + d.uncertainty, 6) == round(brier(p, y), 6)
    True
    """
    p = check_probs(probs)
    if p.ndim == 1:
        y = check_labels(labels, p.shape[0], 2)
        p2, onehot = p[:, None].astype(np.float64), y[:, None].astype(np.float64)
    else:
        y = check_labels(labels, p.shape[0], p.shape[1])
        p2 = p.astype(np.float64)
        onehot = np.zeros_like(p2)
        onehot[np.arange(p2.shape[0]), y] = 1.0
    n = p2.shape[0]
    count, (sp, so), _ = binning.bin_sums(p2, p2, onehot, n_bins=n_bins, strategy="uniform")
    base = onehot.mean(axis=0)
    with np.errstate(invalid="ignore", divide="ignore"):
        pbar, obar = sp / count, so / count
    ok = count > 0
    rel = float(np.sum((count * (pbar - obar) ** 2)[ok]) / n)
    res = float(np.sum((count * (obar - base[:, None]) ** 2)[ok]) / n)
    return BrierDecomposition(rel, res, float(np.sum(base * (1 - base))))


def accuracy(probs, labels) -> float:
    """Fraction of samples whose predicted (argmax) class equals the label.

    Parameters
    ----------
    probs : array_like of shape (n, K) or (n,)
        Probabilities: a row per sample that sums to 1, or P(y = 1) of a binary problem.
    labels : array_like of shape (n,)
        Integer class labels.

    Returns
    -------
    float
        The accuracy, in [0, 1].

    Examples
    --------
    >>> accuracy(np.array([[0.9, 0.1], [0.4, 0.6]]), np.array([0, 0]))
    0.5
    """
    p, _, pred = _checked_top_label(probs)
    y = check_labels(labels, p.shape[0], 2 if p.ndim == 1 else p.shape[1])
    return float(np.mean(pred == y))


def error(probs, labels) -> float:
    """Classification error: the fraction of samples whose predicted class is not the label.

    Parameters
    ----------
    probs : array_like of shape (n, K) or (n,)
        Probabilities: a row per sample that sums to 1, or P(y = 1) of a binary problem.
    labels : array_like of shape (n,)
        Integer class labels.

    Returns
    -------
    float
        The error rate ``1 - accuracy``, in [0, 1].

    Examples
    --------
    >>> error(np.array([0.2, 0.9, 0.7, 0.6]), np.array([1, 1, 0, 1]))  # binary: predicted 1 when p > 0.5
    0.5
    """
    return 1.0 - accuracy(probs, labels)


#: The proper scores and the error: ``name -> fn(probs, labels) -> float``.
