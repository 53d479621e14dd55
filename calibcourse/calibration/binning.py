"""Binning of scores in [0, 1]: the one home of bin edges, bin assignment and per-bin sums.

Every binned quantity of the package is computed here: the binned calibration
errors and reliability bins of :mod:`calibcourse.calibration.metrics` (and so the
reliability diagrams of :mod:`calibcourse.calibration.plots` and the graders of
:mod:`calibcourse.study.course.checks`, which compare with them), and the bins that
:class:`~calibcourse.calibration.calibrators.HistogramBinning` and
:class:`~calibcourse.calibration.calibrators.BBQ` fit.

Bin convention (Guo et al. 2017)
--------------------------------
With ``M`` equal-width bins (``strategy="uniform"``), bin ``m`` is
``I_m = ((m-1)/M, m/M]``, closed on the right; a score of exactly 0 goes in the
first bin, exactly 1 in the last. The edges are ``numpy.linspace(0, 1, M + 1)``.

Equal-mass bins (``strategy="quantile"``, the adaptive bins of Nixon et al.
2019) cut the sorted scores into ``M`` runs whose sizes differ by at most one,
as ``numpy.array_split`` does; their edges are the midpoints between runs (0
and 1 at the ends).
"""
from __future__ import annotations

import numpy as np

from calibcourse.calibration._validation import check_choice, check_n_bins

__all__ = ["STRATEGIES", "uniform_edges", "bin_index", "quantile_bins", "assign_bins", "bin_sums"]

#: The two ways to cut [0, 1] into bins.
STRATEGIES = ("uniform", "quantile")


def uniform_edges(n_bins: int) -> np.ndarray:
    """The ``n_bins + 1`` edges of equal-width bins of [0, 1].

    Parameters
    ----------
    n_bins : int
        Number of bins, at least 1.

    Returns
    -------
    numpy.ndarray
        ``numpy.linspace(0, 1, n_bins + 1)``.

    Examples
    --------
    >>> uniform_edges(4)
    array([0.  , 0.25, 0.5 , 0.75, 1.  ])
    """
    return np.linspace(0.0, 1.0, check_n_bins(n_bins) + 1)


def bin_index(x, edges) -> np.ndarray:
    """Index ``m`` of the bin ``(edges[m], edges[m + 1]]`` that holds each score.

    A score at or below ``edges[0]`` goes to the first bin, one above
    ``edges[-1]`` to the last, so every score has a bin.

    Parameters
    ----------
    x : array_like of shape (n,)
        Scores.
    edges : array_like of shape (M + 1,)
        Non-decreasing bin edges.

    Returns
    -------
    numpy.ndarray of shape (n,)
        Integer bin indices in ``[0, M)``.

    Examples
    --------
    >>> bin_index([0.0, 0.25, 0.26, 1.0], uniform_edges(4))
    array([0, 0, 1, 3])
    """
    edges = np.asarray(edges)
    return np.searchsorted(edges[1:-1], x, side="left")


def quantile_bins(x, n_bins: int, order=None) -> tuple[np.ndarray, np.ndarray]:
    """Equal-mass bins: the sorted scores cut into ``n_bins`` runs of sizes as ``numpy.array_split``.

    Returns
    -------
    index : numpy.ndarray of shape (n,)
        The run (bin) of each score. Tied scores on a boundary between runs are
        split between them, so that every bin has its share of the samples.
    edges : numpy.ndarray of shape (n_bins + 1,)
        0, the midpoints between consecutive runs, and 1 (1 for the missing
        inner edges when there are fewer scores than bins).

    Parameters
    ----------
    x : numpy.ndarray of shape (n,)
        Scores in [0, 1].
    n_bins : int
        Number of bins, at least 1.
    order : numpy.ndarray of shape (n,), optional
        ``numpy.argsort(x, kind="stable")``, when the caller bins the same scores many times.

    Examples
    --------
    >>> index, edges = quantile_bins(np.array([0.9, 0.1, 0.2, 0.4]), 2)
    >>> index
    array([1, 0, 0, 1])
    >>> edges
    array([0. , 0.3, 1. ])
    """
    n_bins = check_n_bins(n_bins)
    x = np.asarray(x)
    n = x.shape[0]
    order = np.argsort(x, kind="stable") if order is None else order
    sizes = np.full(n_bins, n // n_bins)
    sizes[: n % n_bins] += 1
    index = np.empty(n, dtype=np.int64)
    index[order] = np.repeat(np.arange(n_bins), sizes)
    ends = np.cumsum(sizes)
    s = x[order]
    inner = [(s[e - 1] + s[e]) / 2 for e in ends[:-1] if 0 < e < n]
    inner = inner + [1.0] * (n_bins - 1 - len(inner))
    return index, np.concatenate([[0.0], inner, [1.0]])


def assign_bins(x, n_bins: int = 15, strategy: str = "uniform") -> tuple[np.ndarray, np.ndarray]:
    """The bin of every score and the bin edges, for either strategy.

    Returns
    -------
    index : numpy.ndarray of shape (n,)
        Integer bin indices in ``[0, n_bins)``.
    edges : numpy.ndarray of shape (n_bins + 1,)
        The bin edges.

    Parameters
    ----------
    x : numpy.ndarray of shape (n,)
        Scores in [0, 1].
    n_bins : int, default=15
        Number of bins.
    strategy : {"uniform", "quantile"}, default="uniform"
        Equal-width Guo bins or equal-mass bins (:mod:`calibcourse.calibration.binning`).

    Examples
    --------
    >>> assign_bins(np.array([0.1, 0.5, 0.7]), n_bins=2)[0]
    array([0, 0, 1])
    >>> assign_bins(np.array([0.1, 0.5, 0.7]), n_bins=2, strategy="quantile")[0]
    array([0, 0, 1])
    """
    n_bins = check_n_bins(n_bins)
    check_choice(strategy, STRATEGIES, "strategy")
    if strategy == "quantile":
        return quantile_bins(x, n_bins)
    return _uniform_index(np.asarray(x, dtype=np.float64), n_bins), uniform_edges(n_bins)


#: Scores binned per chunk by :func:`_uniform_index`: its temporaries (128 KiB each) stay in the L2 cache
_INDEX_CHUNK = 2**14


def _uniform_index(x: np.ndarray, n_bins: int) -> np.ndarray:
    """``bin_index(x, uniform_edges(n_bins))`` by arithmetic: a few vectorized passes instead of a binary search.

    The candidate ``ceil(x * n_bins) - 1`` is the bin unless ``x * n_bins`` lies within rounding
    of an integer, where ``numpy.linspace``'s edge and the product may disagree by an ulp: those
    few scores are placed by the edges themselves (a binary search). Long inputs go through in
    chunks that stay in the cache.
    """
    out = np.empty(x.shape[0], dtype=np.int64)
    edges = _LazyEdges(n_bins)
    for i in range(0, x.shape[0], _INDEX_CHUNK):
        _uniform_index_into(x[i: i + _INDEX_CHUNK], edges, out[i: i + _INDEX_CHUNK])
    return out


class _LazyEdges:
    """The inner edges of ``uniform_edges(n_bins)``, made once, when a score first needs them."""

    def __init__(self, n_bins: int):
        self.n_bins, self._inner = n_bins, None

    def inner(self) -> np.ndarray:
        if self._inner is None:
            self._inner = uniform_edges(self.n_bins)[1:-1]
        return self._inner


def _uniform_index_into(x: np.ndarray, edges: _LazyEdges, out: np.ndarray) -> None:
    n_bins = edges.n_bins
    c = np.multiply(x, n_bins)
    up = np.ceil(c)
    with np.errstate(invalid="ignore"):              # an infinite score: its candidate is clipped below
        c -= up                                      # in (-1, 0]: how far below the next integer
    c += 0.5
    np.abs(c, out=c)                                 # 0.5 at an integer, 0 half-way between two
    np.clip(up, 1, n_bins, out=up)
    np.subtract(up, 1, out=out, casting="unsafe")    # the candidate bin
    # x * n_bins and the edge m / n_bins (as linspace makes it) are each off by a few ulps of
    # n_bins: within 64 times that of an integer, the edges decide
    near = c > 0.5 - 64 * np.finfo(np.float64).eps * max(n_bins, 1)
    if near.any():
        at = np.flatnonzero(near)
        out[at] = np.searchsorted(edges.inner(), x[at], side="left")


def _uniform_bin_sums(x: np.ndarray, weights, n_bins: int):
    """:func:`bin_sums` of long scores on uniform bins, chunk by chunk: each chunk's bin
    indices are made and counted while they are in the cache, never stored at full length."""
    x = np.asarray(x, dtype=np.float64)
    weights = [np.asarray(w).ravel() for w in weights]  # as the whole-array path: raveled, summed in float64
    count = np.zeros(n_bins)
    sums = [np.zeros(n_bins) for _ in weights]
    index = np.empty(min(_INDEX_CHUNK, x.shape[0]), dtype=np.int64)
    edges = _LazyEdges(n_bins)
    for i in range(0, x.shape[0], _INDEX_CHUNK):
        xc = x[i: i + _INDEX_CHUNK]
        ic = index[: xc.shape[0]]
        _uniform_index_into(xc, edges, ic)
        count += np.bincount(ic, minlength=n_bins)
        for total, w in zip(sums, weights, strict=True):
            total += np.bincount(ic, weights=np.asarray(w[i: i + _INDEX_CHUNK], dtype=np.float64),
                                 minlength=n_bins)
    return count, sums


def bin_sums(x, *weights, n_bins: int = 15, strategy: str = "uniform"):
    """Count and weight sums per bin of ``x``: the statistics every binned measure is made of.

    Parameters
    ----------
    x : numpy.ndarray of shape (n,) or (n, K)
        Scores in [0, 1]. A matrix is binned column by column (the class-wise
        measures): every column gets its own ``n_bins`` bins.
    *weights : numpy.ndarray, each of the shape of ``x``
        Values to sum per bin (e.g. the scores themselves and the outcomes).
    n_bins : int, default=15
        Number of bins, at least 1.
    strategy : {"uniform", "quantile"}, default="uniform"
        Equal-width Guo bins or equal-mass bins.

    Returns
    -------
    count : numpy.ndarray of shape (n_bins,) or (K, n_bins)
        Number of scores per bin (float).
    sums : list of numpy.ndarray
        One array of the shape of ``count`` per weight: its sum per bin.
    edges : numpy.ndarray of shape (n_bins + 1,), or (K, n_bins + 1) for quantile bins of a matrix
        The bin edges.

    Examples
    --------
    >>> conf = np.array([0.1, 0.3, 0.8, 0.9])
    >>> correct = np.array([0.0, 1.0, 1.0, 1.0])
    >>> count, (sum_conf, sum_correct), edges = bin_sums(conf, conf, correct, n_bins=2)
    >>> count, sum_conf, sum_correct
    (array([2., 2.]), array([0.4, 1.7]), array([1., 2.]))
    """
    n_bins = check_n_bins(n_bins)
    check_choice(strategy, STRATEGIES, "strategy")
    x = np.asarray(x)
    for j, w in enumerate(weights):
        if np.size(w) != x.size:
            raise ValueError(f"weights[{j}] must have one value per score, {x.size}; got {np.size(w)}")
    if x.ndim == 2 and strategy == "quantile":
        per_column = [bin_sums(x[:, c], *(w[:, c] for w in weights), n_bins=n_bins, strategy=strategy)
                      for c in range(x.shape[1])]
        count = np.stack([col[0] for col in per_column])
        sums = [np.stack([col[1][i] for col in per_column]) for i in range(len(weights))]
        return count, sums, np.stack([col[2] for col in per_column])
    if x.ndim == 1 and strategy == "uniform" and x.shape[0] > _INDEX_CHUNK:
        return (*_uniform_bin_sums(x, weights, n_bins), uniform_edges(n_bins))
    index, edges = assign_bins(x.ravel(), n_bins, strategy)
    shape = (n_bins,)
    if x.ndim == 2:  # column c's bins are n_bins * c ... n_bins * (c + 1) - 1
        index = (index.reshape(x.shape) + n_bins * np.arange(x.shape[1])).ravel()
        shape = (x.shape[1], n_bins)
    size = int(np.prod(shape))
    count = np.bincount(index, minlength=size).astype(np.float64).reshape(shape)
    sums = [np.bincount(index, weights=np.asarray(w, dtype=np.float64).ravel(), minlength=size).reshape(shape)
            for w in weights]
    return count, sums, edges
