r"""Gaussian kernel smoothing of scores in [0, 1]: the numerics of the kernel measures and curves.

The kernel calibration measures of :mod:`calibcourse.calibration.metrics` (SECE of Wang et
al. 2023, smECE of Błasiok and Nakkiran 2023) and the smoothed reliability
curve of :mod:`calibcourse.calibration.plots` all smooth weights placed at scores
:math:`x_j \in [0, 1]` with a Gaussian kernel
:math:`K_h(t, x) = e^{-(t - x)^2 / 2h^2}`. Two ways to do it live here:

* dense: every pair ``(t_i, x_j)``, exact: :func:`kernel_regression` (the differentiable
  torch version that training uses is :func:`calibcourse.study.training.losses.gaussian_kernel_sums`);
* on a grid: linear binning of the scores onto ``linspace(0, 1, grid)``
  (:func:`linear_binning`), then an FFT convolution, O(n + grid log grid):
  :func:`gaussian_smooth` (kernel truncated at 8h, zero outside [0, 1]) and
  :func:`reflected_gaussian_smooth` (reflected at 0 and 1, as relplot 1.0).

:func:`fixed_point_bandwidth` is the bisection that picks smECE's bandwidth.
"""
from __future__ import annotations

import numpy as np

__all__ = ["kernel_regression", "linear_binning", "gaussian_smooth",
           "reflected_gaussian_smooth", "fixed_point_bandwidth"]


def kernel_regression(t, x, y, bandwidth: float, min_density: float = 1e-8):
    r"""Nadaraya-Watson estimate of :math:`E[y \mid x = t]` with a Gaussian kernel, exact (dense).

    .. math:: \hat m(t) = \frac{\sum_j K_h(t, x_j)\, y_j}{\sum_j K_h(t, x_j)}

    Returns
    -------
    estimate : numpy.ndarray of shape (m,)
        :math:`\hat m(t)`, NaN where there is no data.
    density : numpy.ndarray of shape (m,)
        The kernel sums :math:`\sum_j K_h(t, x_j)`.

    Parameters
    ----------
    t : array_like of shape (m,)
        Where to evaluate.
    x : array_like of shape (n,)
        Scores.
    y : array_like of shape (n,)
        Values to average (e.g. 0/1 correctness).
    bandwidth : float
        The kernel's standard deviation ``h``.
    min_density : float, default=1e-8
        Where the kernel sum :math:`\sum_j K_h(t, x_j)` is at or below this, the estimate is NaN (no data near ``t``).

    Examples
    --------
    >>> est, den = kernel_regression([0.0, 0.5, 1.0], [0.1, 0.9], [0.0, 1.0], bandwidth=0.1)
    >>> est.round(4)
    array([0. , 0.5, 1. ])
    """
    t, x, y = (np.asarray(v, dtype=np.float64) for v in (t, x, y))
    k = np.exp((t[:, None] - x[None, :]) ** 2 * (-0.5 / bandwidth**2))
    num, den = (k @ np.stack([y, np.ones_like(y)], 1)).T
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(den > min_density, num / den, np.nan), den


def _grid_position(x: np.ndarray, grid: int):
    """The grid cell ``lo`` of each x on ``linspace(0, 1, grid)`` and its fraction ``frac`` towards ``lo + 1``."""
    pos = x * (grid - 1)
    lo = np.clip(pos.astype(np.int64), 0, grid - 2)
    return lo, pos - lo


def linear_binning(x, weights, grid: int) -> list[np.ndarray]:
    """Spread each weight onto the two nearest nodes of ``linspace(0, 1, grid)``, in proportion to the distance.

    Parameters
    ----------
    x : numpy.ndarray of shape (n,)
        Scores in [0, 1].
    weights : sequence of numpy.ndarray of shape (n,)
        Weights, one value per score; each gives one result.
    grid : int
        Number of nodes of the grid ``linspace(0, 1, grid)``.

    Returns
    -------
    list of numpy.ndarray of shape (grid,)
        The mass on each node, one array per weight (each sums to its weight's sum).

    Examples
    --------
    >>> linear_binning(np.array([0.25]), [np.array([1.0])], grid=3)
    [array([0.5, 0.5, 0. ])]
    """
    lo, frac = _grid_position(np.asarray(x), grid)
    return [np.bincount(lo, weights=(1 - frac) * w, minlength=grid)
            + np.bincount(lo + 1, weights=frac * w, minlength=grid) for w in weights]


def gaussian_smooth(x, weights, bandwidth: float, grid: int) -> list[np.ndarray]:
    r"""Gaussian kernel sums :math:`\sum_j w_j e^{-(t - x_j)^2 / 2h^2}` at ``t = linspace(0, 1, grid)``, fast.

    Linear binning of the scores onto the grid, then an FFT convolution with the
    kernel truncated at :math:`8h` (no reflection: mass beyond 0 and 1 is lost,
    as in the dense sum). The error against the dense sum is of the order of the
    squared grid spacing over :math:`h^2`.

    Parameters
    ----------
    x : numpy.ndarray of shape (n,)
        Scores in [0, 1].
    weights : sequence of numpy.ndarray of shape (n,)
        Weights, one value per score; each gives one result.
    bandwidth : float
        The kernel's standard deviation ``h``.
    grid : int
        Number of nodes of the grid ``linspace(0, 1, grid)``.

    Returns
    -------
    list of numpy.ndarray of shape (grid,)
        The kernel sums on the grid, one array per weight.

    Examples
    --------
    >>> x = np.array([0.3, 0.5])
    >>> (s,) = gaussian_smooth(x, [np.ones(2)], bandwidth=0.1, grid=1001)
    >>> float(s[400].round(4))  # at t = 0.4 each score is one bandwidth away: 2 * exp(-1/2)
    1.2131
    """
    from scipy.signal import fftconvolve

    delta = 1.0 / (grid - 1)
    half = int(np.ceil(8 * bandwidth / delta))
    taps = np.exp(-0.5 * ((np.arange(-half, half + 1) * delta) / bandwidth) ** 2)
    return [fftconvolve(g, taps, mode="full")[half: half + grid] for g in linear_binning(x, weights, grid)]


def reflected_gaussian_smooth(x, weights, sigma: float, grid: int, at) -> list[np.ndarray]:
    """Gaussian kernel smoothing reflected at 0 and 1, discretized as relplot 1.0 does.

    The grid masses of :func:`linear_binning` are mirrored at both ends of
    [0, 1], convolved (FFT) with the normalized Gaussian density of standard
    deviation ``sigma`` sampled on the grid, and interpolated linearly at ``at``.

    Parameters
    ----------
    x : numpy.ndarray of shape (n,)
        Scores in [0, 1].
    weights : sequence of numpy.ndarray of shape (n,)
        Weights, one value per score; each gives one result.
    sigma : float
        The kernel's standard deviation.
    grid : int
        Number of nodes of the grid ``linspace(0, 1, grid)``.
    at : numpy.ndarray of shape (m,)
        Points of [0, 1] where the smoothed weights are returned.

    Returns
    -------
    list of numpy.ndarray of shape (m,)
        The smoothed weights at ``at``, one array per weight.

    Examples
    --------
    >>> (d,) = reflected_gaussian_smooth(np.array([0.5]), [np.ones(1)], sigma=0.1, grid=1001,
    ...                                  at=np.array([0.5]))
    >>> float(d[0].round(3))  # the Gaussian density at its mean, 1 / (sqrt(2 pi) 0.1)
    3.989
    """
    from scipy.signal import fftconvolve

    ker = np.exp(-((np.linspace(0, 1, grid) - 0.5) ** 2) / (2 * sigma**2)) / (np.sqrt(2 * np.pi) * sigma)
    lo, frac = _grid_position(np.asarray(at), grid)
    out = []
    for g in linear_binning(x, weights, grid):
        ext = np.concatenate([g[::-1][:-1], g, g[::-1][1:]])
        conv = fftconvolve(ext, ker, mode="valid")[grid // 2: grid // 2 + grid]
        out.append(conv[lo] * (1 - frac) + conv[lo + 1] * frac)
    return out


def fixed_point_bandwidth(measure_at, eps: float = 1e-3, refine: int = 10) -> float:
    r"""The bandwidth :math:`\sigma^*` with :math:`\sigma^* = f(\sigma^*)`, by bisection on (0, 1].

    Used by smECE, whose bandwidth is the fixed point of its own value. A
    :math:`\sigma` counts as below the fixed point when :math:`\sigma < \epsilon`
    or :math:`\sigma < f(\sigma)`; after ``refine`` halvings the upper end of the
    bracket is returned (1 when 1 is already below it).

    Parameters
    ----------
    measure_at : callable
        ``f(sigma) -> float``.
    eps : float, default=1e-3
        Smallest bandwidth considered.
    refine : int, default=10
        Number of bisection steps (the bracket shrinks to :math:`2^{-\mathrm{refine}}`).

    Returns
    -------
    float
        The bandwidth.

    Examples
    --------
    >>> fixed_point_bandwidth(lambda s: 0.25, refine=20)  # sigma = 0.25 is the fixed point
    0.25
    """
    def below(s):
        return s < eps or s < measure_at(s)

    if below(1.0):
        return 1.0
    hi, lo = 1.0, 0.0
    for _ in range(refine):
        mid = (hi + lo) / 2
        if below(mid):
            lo = mid
        else:
            hi = mid
    return hi
