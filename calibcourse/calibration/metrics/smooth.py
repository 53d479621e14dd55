"""The calibration errors without bins: SECE (a Gaussian kernel) and smooth ECE (Blasiok and
Nakkiran's smoothed, debiased estimate)."""
from __future__ import annotations

import numpy as np

from calibcourse.calibration import kernels
from calibcourse.calibration._validation import check_choice
from calibcourse.calibration.metrics._core import _prepare

__all__ = ["sece", "smooth_ece_bandwidth", "smooth_ece"]


def _sece_exact(c: np.ndarray, a: np.ndarray, bandwidth: float, chunk: int = 1024) -> float:
    """SECE summed over all n^2 pairs, ``chunk`` rows of the kernel matrix at a time (the differentiable
    torch version that training uses is :func:`calibcourse.study.training.losses.sece_exact_torch`)."""
    total = 0.0
    for start in range(0, c.shape[0], chunk):
        ci = c[start: start + chunk]
        k = np.exp((ci[:, None] - c[None, :]) ** 2 * (-0.5 / bandwidth**2))
        total += np.abs(k @ a / k.sum(1) - ci).sum()
    return total / c.shape[0]


def _default_sece_grid(bandwidth: float) -> int:
    """Grid of SECE's fast path: spacing at most h/40, at least 4096 nodes."""
    return int(max(4096, np.ceil(40.0 / bandwidth)))


def sece(probs, labels, bandwidth: float = 0.05, method: str = "auto",
         reliability: str | None = None) -> float:
    r"""Smooth ECE of the meta-regularization paper (Wang et al. 2023).

    .. math:: \mathrm{SACC}_i = \frac{\sum_j K(c_i, c_j)\,\mathbb 1[\hat y_j = y_j]}{\sum_j K(c_i, c_j)},\quad
              \mathrm{SECE} = \frac1n \sum_i |\mathrm{SACC}_i - c_i|

    with the Gaussian kernel :math:`K(c_i, c_j) = \exp(-(c_i-c_j)^2 / 2h^2)` of
    bandwidth ``h`` over top-label confidences ``c``.

    Parameters
    ----------
    probs : array_like of shape (n, K) or (n,)
        Probabilities: a row per sample that sums to 1, or P(y = 1) of a binary problem.
    labels : array_like of shape (n,)
        Integer class labels.
    bandwidth : float, default=0.05
        The kernel bandwidth ``h`` > 0.
    method : {"auto", "exact", "fast"}, default="auto"
        ``"exact"`` sums all n^2 pairs; ``"fast"`` bins onto a grid of spacing at
        most h/40 and convolves by FFT (:func:`calibcourse.calibration.kernels.gaussian_smooth`; error below
        1e-5 for h >= 0.01, tested against exact on n = 20,000); ``"auto"`` is exact below 2,000 samples.
    reliability : {"top_label", "positive_class"}, optional
        What is measured: the predicted class, or P(y = 1) of binary input. By default P(y = 1) for binary
        input of shape (n,), as scikit-learn and torchmetrics, and the predicted class for (n, K)
        (:mod:`calibcourse.calibration.metrics`).

    Returns
    -------
    float
        The SECE, in [0, 1].

    Examples
    --------
    >>> probs = np.array([[0.9, 0.1], [0.8, 0.2], [0.3, 0.7], [0.4, 0.6]])
    >>> round(sece(probs, np.array([0, 1, 1, 1])), 4)
    0.2998
    """
    if not (np.isfinite(bandwidth) and bandwidth > 0):
        raise ValueError(f"bandwidth must be a positive number; got {bandwidth!r}")
    check_choice(method, ("auto", "exact", "fast"), "method")
    conf, outcome = _prepare(probs, labels, reliability)
    if method == "exact" or (method == "auto" and conf.shape[0] < 2000):
        return float(_sece_exact(conf, outcome, bandwidth))
    grid = _default_sece_grid(bandwidth)
    num, den = kernels.gaussian_smooth(conf, [outcome, np.ones_like(conf)], bandwidth, grid)
    t = np.linspace(0.0, 1.0, grid)
    sacc = np.interp(conf, t, num) / np.interp(conf, t, den)
    return float(np.mean(np.abs(sacc - conf)))


def _smece_at(f: np.ndarray, r: np.ndarray, sigma: float) -> float:
    """smECE at bandwidth sigma, discretized as relplot 1.0 does (reflected Gaussian kernel)."""
    t = np.linspace(0.0, 1.0, max(round(10 / sigma), 200))
    grid = max(2000, round(20 / sigma)) // 2 + 1  # grid of the kernel smoother
    num, den = kernels.reflected_gaussian_smooth(f, [r, np.ones_like(f)], sigma, grid, at=t)
    return float(np.sum(np.abs(num)) / np.sum(den + 1e-4))


def smooth_ece_bandwidth(probs, labels, reliability: str | None = None, eps: float = 1e-3,
                         refine: int = 10) -> float:
    r"""The bandwidth :math:`\sigma^*` at which :func:`smooth_ece` evaluates: the fixed point ``sigma = smECE_sigma``.

    Parameters
    ----------
    probs : array_like of shape (n, K) or (n,)
        Probabilities: a row per sample that sums to 1, or P(y = 1) of a binary problem.
    labels : array_like of shape (n,)
        Integer class labels.
    reliability : {"top_label", "positive_class"}, optional
        What is measured: the predicted class, or P(y = 1) of binary input. By default P(y = 1) for binary
        input of shape (n,), as scikit-learn and torchmetrics, and the predicted class for (n, K)
        (:mod:`calibcourse.calibration.metrics`).
    eps : float, default=1e-3
        Smallest bandwidth considered.
    refine : int, default=10
        Bisection steps (``relplot.smECE``'s default; 20 pins sigma* to 1e-6).

    Returns
    -------
    float
        :math:`\sigma^*` in (0, 1].

    Examples
    --------
    >>> probs = np.array([[0.9, 0.1], [0.8, 0.2], [0.3, 0.7], [0.4, 0.6]])
    >>> smooth_ece_bandwidth(probs, np.array([0, 1, 1, 1]))
    0.138671875
    """
    conf, outcome = _prepare(probs, labels, reliability)
    r = conf - outcome
    return kernels.fixed_point_bandwidth(lambda s: _smece_at(conf, r, s), eps=eps, refine=refine)


def smooth_ece(probs, labels, reliability: str | None = None, eps: float = 1e-3, refine: int = 10) -> float:
    r"""SmoothECE of Błasiok and Nakkiran (2023) with its fixed-point bandwidth.

    .. math:: \mathrm{smECE}_\sigma = \int_0^1 |\hat r_\sigma(t)|\,\hat\delta_\sigma(t)\,dt

    where :math:`\hat r_\sigma` is the reflected-Gaussian kernel regression of the
    residual ``c - a`` and :math:`\hat\delta_\sigma` the kernel density of the
    confidences (:func:`calibcourse.calibration.kernels.reflected_gaussian_smooth`); the
    bandwidth is the fixed point ``sigma* = smECE_sigma*``
    (:func:`smooth_ece_bandwidth`). Matches ``relplot.smECE`` to 1e-4.

    Parameters
    ----------
    probs : array_like of shape (n, K) or (n,)
        Probabilities: a row per sample that sums to 1, or P(y = 1) of a binary problem.
    labels : array_like of shape (n,)
        Integer class labels.
    reliability : {"top_label", "positive_class"}, optional
        What is measured: the predicted class, or P(y = 1) of binary input. By default P(y = 1) for binary
        input of shape (n,), as scikit-learn and torchmetrics, and the predicted class for (n, K)
        (:mod:`calibcourse.calibration.metrics`).
    eps : float, default=1e-3
        Smallest bandwidth considered.
    refine : int, default=10
        Bisection steps for the bandwidth (``refine=20`` pins sigma* to 1e-6).

    Returns
    -------
    float
        smECE at :math:`\sigma^*`.

    Examples
    --------
    >>> probs = np.array([[0.9, 0.1], [0.8, 0.2], [0.3, 0.7], [0.4, 0.6]])
    >>> round(smooth_ece(probs, np.array([0, 1, 1, 1])), 4)
    0.1377
    """
    conf, outcome = _prepare(probs, labels, reliability)
    r = conf - outcome
    sigma = kernels.fixed_point_bandwidth(lambda s: _smece_at(conf, r, s), eps=eps, refine=refine)
    return _smece_at(conf, r, sigma)
