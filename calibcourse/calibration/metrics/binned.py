"""The binned calibration errors: ECE, MCE, ACE, the class-wise ECE and the debiased ECE."""
from __future__ import annotations

import numpy as np

from calibcourse.calibration import binning
from calibcourse.calibration._arrays import ece_from_sums as _ece_from_sums
from calibcourse.calibration._arrays import two_columns
from calibcourse.calibration._validation import (
    check_choice,
    check_labels,
    check_probs,
    check_sample_weight,
)
from calibcourse.calibration.metrics._core import NORMS, _binned_error, _positive_class, _prepare, _resolve_reliability

__all__ = ["ece", "mce", "ace", "classwise_ece", "debiased_ece"]


def ece(probs, labels, n_bins: int = 15, strategy: str = "uniform", norm: str = "l1",
        reliability: str | None = None, sample_weight=None) -> float:
    r"""Expected calibration error, top-label by default.

    .. math:: \mathrm{ECE} = \sum_{m=1}^{M} \frac{|B_m|}{n}\,|\mathrm{acc}(B_m) - \mathrm{conf}(B_m)|

    Empty bins contribute nothing. ``norm="l2"`` gives
    :math:`\sqrt{\sum_m \frac{|B_m|}{n}(\mathrm{acc}-\mathrm{conf})^2}`, ``norm="max"`` the MCE;
    ``strategy="quantile"`` the top-label ECE over equal-mass bins (:func:`ace`, Mukhoti et al.'s AdaECE).

    Parameters
    ----------
    probs : array_like of shape (n, K) or (n,)
        Probabilities: a row per sample that sums to 1, or P(y = 1) of a binary problem.
    labels : array_like of shape (n,)
        Integer class labels.
    n_bins : int, default=15
        Number of bins.
    strategy : {"uniform", "quantile"}, default="uniform"
        Equal-width Guo bins or equal-mass bins (:mod:`calibcourse.calibration.binning`).
    norm : {"l1", "l2", "max"}, default="l1"
        The average gap, its root mean square, or the largest gap.
    reliability : {"top_label", "positive_class"}, optional
        What is measured: the predicted class, or P(y = 1) of binary input. By default P(y = 1) for binary
        input of shape (n,), as scikit-learn and torchmetrics, and the predicted class for (n, K)
        (:mod:`calibcourse.calibration.metrics`).
    sample_weight : array_like of shape (n,), optional
        Per-sample weights (finite, >= 0), as scikit-learn's: a sample of weight 2 counts as two.

    Returns
    -------
    float
        The calibration error, in [0, 1].

    Examples
    --------
    >>> probs = np.array([[0.9, 0.1], [0.8, 0.2], [0.3, 0.7], [0.4, 0.6]])
    >>> labels = np.array([0, 1, 1, 1])
    >>> ece(probs, labels, n_bins=5)  # bins (.4, .6], (.6, .8], (.8, 1]: (|1 - .6| + 2 |.5 - .75| + |1 - .9|) / 4
    0.25
    >>> round(ece(probs[:, 1], labels, n_bins=5), 6)  # shape (n,): P(y = 1), as sklearn and torchmetrics
    0.35
    >>> ece(probs[:, 1], labels, n_bins=5, reliability="top_label")  # the top-label view, asked for
    0.25
    >>> ece(probs, labels, n_bins=5, sample_weight=[1, 1, 2, 2]) == ece(probs[[0, 1, 2, 2, 3, 3]],
    ...                                                              labels[[0, 1, 2, 2, 3, 3]], n_bins=5)
    True
    """
    check_choice(norm, NORMS, "norm")
    conf, outcome = _prepare(probs, labels, reliability)
    if sample_weight is None:
        return _binned_error(conf, outcome, n_bins, strategy, norm)
    w = check_sample_weight(sample_weight, conf.shape[0])
    if strategy != "uniform":
        raise ValueError("sample_weight works with strategy='uniform' (equal-mass bins of weighted samples are "
                         "not defined here)")
    _, (sw, sc, so), _ = binning.bin_sums(conf, w, conf * w, outcome * w, n_bins=n_bins, strategy=strategy)
    return _ece_from_sums(sw, sc, so, norm)


def mce(probs, labels, n_bins: int = 15, strategy: str = "uniform",
        reliability: str | None = None, sample_weight=None) -> float:
    r"""Maximum calibration error :math:`\max_m |\mathrm{acc}(B_m) - \mathrm{conf}(B_m)|` over non-empty bins.

    Parameters
    ----------
    probs : array_like of shape (n, K) or (n,)
        Probabilities: a row per sample that sums to 1, or P(y = 1) of a binary problem.
    labels : array_like of shape (n,)
        Integer class labels.
    n_bins : int, default=15
        Number of bins.
    strategy : {"uniform", "quantile"}, default="uniform"
        Equal-width Guo bins or equal-mass bins (:mod:`calibcourse.calibration.binning`).
    reliability : {"top_label", "positive_class"}, optional
        What is measured: the predicted class, or P(y = 1) of binary input. By default P(y = 1) for binary
        input of shape (n,), as scikit-learn and torchmetrics, and the predicted class for (n, K)
        (:mod:`calibcourse.calibration.metrics`).

    sample_weight : array_like of shape (n,), optional
        Per-sample weights (finite, >= 0), as scikit-learn's: a sample of weight 2 counts as two.

    Returns
    -------
    float
        ``ece(..., norm="max")``.

    Examples
    --------
    >>> probs = np.array([[0.9, 0.1], [0.8, 0.2], [0.3, 0.7], [0.4, 0.6]])
    >>> mce(probs, np.array([0, 1, 1, 1]), n_bins=5)
    0.4
    """
    return ece(probs, labels, n_bins=n_bins, strategy=strategy, norm="max", reliability=reliability,
               sample_weight=sample_weight)


def ace(probs, labels, n_bins: int = 15, norm: str = "l1", reliability: str | None = None) -> float:
    """Top-label ECE over equal-mass bins: Mukhoti et al.'s (2020) AdaECE.

    Each of the ``n_bins`` bins holds the same number of samples (``strategy="quantile"``),
    so the bins are narrow where the confidences crowd and no bin is nearly empty. This is
    the *top-label* measure that Mukhoti et al. call AdaECE. Nixon et al.'s (2019) "adaptive
    calibration error" (ACE) uses the same equal-mass bins but over *every* class's
    probability, averaged over the classes: a classwise measure, which
    ``classwise_ece(probs, labels, strategy="quantile")`` computes (their thresholding of
    small probabilities aside). The book's tables label this function's value "ACE".

    Parameters
    ----------
    probs : array_like of shape (n, K) or (n,)
        Probabilities: a row per sample that sums to 1, or P(y = 1) of a binary problem.
    labels : array_like of shape (n,)
        Integer class labels.
    n_bins : int, default=15
        Number of bins.
    norm : {"l1", "l2", "max"}, default="l1"
        The average gap, its root mean square, or the largest gap.
    reliability : {"top_label", "positive_class"}, optional
        What is measured: the predicted class, or P(y = 1) of binary input. By default P(y = 1) for binary
        input of shape (n,), as scikit-learn and torchmetrics, and the predicted class for (n, K)
        (:mod:`calibcourse.calibration.metrics`).

    Returns
    -------
    float
        ``ece(..., strategy="quantile")``.

    Examples
    --------
    >>> probs = np.array([[0.9, 0.1], [0.8, 0.2], [0.3, 0.7], [0.4, 0.6]])
    >>> round(ace(probs, np.array([0, 1, 1, 1]), n_bins=2), 6)  # bins {.6, .7} and {.8, .9}
    0.35
    """
    return ece(probs, labels, n_bins=n_bins, strategy="quantile", norm=norm, reliability=reliability)


def classwise_ece(probs, labels, n_bins: int = 15, strategy: str = "uniform", norm: str = "l1",
                  reliability: str | None = None) -> float:
    r"""Class-wise ECE (Kull et al. 2019): the ECE of every class's probability, averaged.

    .. math:: \mathrm{cwECE} = \frac1K \sum_{k=1}^K \sum_{m=1}^M \frac{|B_{mk}|}{n}
              |\mathrm{freq}_k(B_{mk}) - \mathrm{conf}_k(B_{mk})|

    where ``B_mk`` bins the samples by ``p_k`` and ``freq_k`` is the fraction of
    them whose label is ``k``.

    Parameters
    ----------
    probs : array_like of shape (n, K) or (n,)
        Probabilities: a row per sample that sums to 1, or P(y = 1) of a binary problem.
    labels : array_like of shape (n,)
        Integer class labels.
    n_bins : int, default=15
        Number of bins.
    strategy : {"uniform", "quantile"}, default="uniform"
        Equal-width Guo bins or equal-mass bins (:mod:`calibcourse.calibration.binning`).
    norm : {"l1", "l2", "max"}, default="l1"
        The average gap, its root mean square, or the largest gap.
    reliability : {"top_label", "positive_class"}, optional
        What is measured: the predicted class, or P(y = 1) of binary input. By default P(y = 1) for binary
        input of shape (n,), as scikit-learn and torchmetrics, and the predicted class for (n, K)
        (:mod:`calibcourse.calibration.metrics`).

    Returns
    -------
    float
        The class-wise calibration error.

    Examples
    --------
    >>> probs = np.array([[0.9, 0.1], [0.8, 0.2], [0.3, 0.7], [0.4, 0.6]])
    >>> classwise_ece(probs, np.array([0, 1, 1, 1]), n_bins=5)  # (0.4 for class 0 + 0.35 for class 1) / 2
    0.375
    """
    check_choice(norm, NORMS, "norm")
    reliability = _resolve_reliability(reliability, probs)
    p = check_probs(probs)
    y = check_labels(labels, p.shape[0], 2 if p.ndim == 1 else p.shape[1])
    if reliability == "positive_class":
        return _binned_error(_positive_class(p).astype(np.float64), y.astype(np.float64), n_bins, strategy, norm)
    p = two_columns(p)
    n, k = p.shape
    onehot = np.zeros((n, k))
    onehot[np.arange(n), y] = 1.0
    count, (sc, so), _ = binning.bin_sums(p, p, onehot, n_bins=n_bins, strategy=strategy)
    return float(np.mean([_ece_from_sums(count[c], sc[c], so[c], norm) for c in range(k)]))


def debiased_ece(probs, labels, n_bins: int = 15, strategy: str = "quantile",
                 reliability: str | None = None) -> float:
    r"""Debiased l2 calibration error (Kumar, Liang and Ma 2019).

    .. math:: \widehat{\mathrm{CE}}^2 = \sum_m \frac{|B_m|}{n}\Big[(\mathrm{acc}(B_m)-\mathrm{conf}(B_m))^2
              - \frac{\mathrm{acc}(B_m)(1-\mathrm{acc}(B_m))}{|B_m|-1}\Big]

    returned as :math:`\sqrt{\max(\widehat{\mathrm{CE}}^2, 0)}`; bins with fewer
    than 2 samples contribute 0. Compare with ``ece(..., norm="l2")``, its
    plug-in (upward-biased) version.

    Parameters
    ----------
    probs : array_like of shape (n, K) or (n,)
        Probabilities: a row per sample that sums to 1, or P(y = 1) of a binary problem.
    labels : array_like of shape (n,)
        Integer class labels.
    n_bins : int, default=15
        Number of bins.
    strategy : {"uniform", "quantile"}, default="quantile"
        Equal-mass bins by default, as in the paper.
    reliability : {"top_label", "positive_class"}, optional
        What is measured: the predicted class, or P(y = 1) of binary input. By default P(y = 1) for binary
        input of shape (n,), as scikit-learn and torchmetrics, and the predicted class for (n, K)
        (:mod:`calibcourse.calibration.metrics`).

    Returns
    -------
    float
        The debiased l2 error, >= 0.

    Examples
    --------
    >>> conf, outcome = np.full(6, 0.9), np.array([1, 1, 1, 0, 0, 0])
    >>> round(debiased_ece(conf, outcome, n_bins=1, reliability="positive_class"), 4)  # sqrt(.4^2 - .25 / 5)
    0.3317
    >>> round(ece(conf, outcome, n_bins=1, norm="l2", reliability="positive_class"), 4)
    0.4
    """
    conf, outcome = _prepare(probs, labels, reliability)
    count, (sc, so), _ = binning.bin_sums(conf, conf, outcome, n_bins=n_bins, strategy=strategy)
    ok = count >= 2
    c = count[ok]
    acc = so[ok] / c
    gap2 = (acc - sc[ok] / c) ** 2 - acc * (1 - acc) / (c - 1)
    est = np.sum(c * gap2) / count.sum()
    return float(np.sqrt(max(est, 0.0)))
