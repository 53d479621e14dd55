"""Calibration measures (chapter 1, *Theory*; reused in every later chapter).

A functional core in the style of ``torchmetrics.functional``: every function
takes ``probs`` and ``labels`` as numpy arrays or torch tensors (or lists) and
returns a Python float.

Inputs
------
``probs``
    Shape ``(n, K)``: a probability vector per sample (rows sum to 1 within
    ``calibcourse._validation.SUM_TOL`` = 1e-4), or shape ``(n,)``: the
    probability of class 1 of a binary problem.
``labels``
    Shape ``(n,)``: integer class indices in ``[0, K)``.

Bin convention (Guo et al. 2017)
--------------------------------
With ``M`` equal-width bins, bin ``m`` is ``I_m = ((m-1)/M, m/M]``, closed on
the right; a confidence of exactly 0 goes in the first bin, exactly 1 in the
last. The edges are ``numpy.linspace(0, 1, M + 1)``. ``torchmetrics`` uses
``[lo, hi)`` instead (and puts a confidence of exactly 1.0 in an extra bin);
``netcal`` uses ``[lo, hi)`` too, and reads a two-column ``(n, 2)`` input as
binary, measuring ``P(y = 1)`` (our ``reliability="positive_class"``). On inputs with no confidence on an edge all
three agree.

Binary input ``(n,)``
---------------------
``reliability="top_label"`` (the default) measures the calibration of the
predicted class: confidence ``max(p, 1 - p)``, correctness ``[pred == y]``,
exactly as for the two-column matrix ``[1 - p, p]``.
``reliability="positive_class"`` measures the reliability of ``P(y = 1)``:
confidence ``p`` against the outcome ``y`` (the curve of
``sklearn.calibration.calibration_curve``).
"""
from __future__ import annotations

from collections import namedtuple
from dataclasses import dataclass

import numpy as np

from ._validation import (check_choice, check_labels, check_logits, check_n_bins, check_probs,
                          is_torch, to_numpy)

__all__ = [
    "softmax", "log_softmax", "top_label", "reliability_bins", "ReliabilityBins", "ece", "mce",
    "ace", "classwise_ece", "sece", "sece_exact_torch", "smooth_ece", "debiased_ece", "nll",
    "brier", "error", "accuracy", "bootstrap_ci", "BootstrapCI", "calibration_report",
]

STRATEGIES = ("uniform", "quantile")
NORMS = ("l1", "l2", "max")
RELIABILITIES = ("top_label", "positive_class")


# --------------------------------------------------------------------------- helpers
def softmax(logits, axis: int = -1):
    """Numerically stable softmax ``exp(z - max z) / sum exp(z - max z)``.

    Returns a torch tensor for a torch input (differentiable), a float64 numpy
    array otherwise.
    """
    if is_torch(logits):
        return logits.softmax(dim=axis)
    z = check_logits(logits, "logits", ndim=None)
    z = z - z.max(axis=axis, keepdims=True)
    e = np.exp(z)
    return e / e.sum(axis=axis, keepdims=True)


def log_softmax(logits, axis: int = -1):
    """Stable ``z - logsumexp(z)``; torch in, torch out."""
    if is_torch(logits):
        return logits.log_softmax(dim=axis)
    z = check_logits(logits, "logits", ndim=None)
    z = z - z.max(axis=axis, keepdims=True)
    return z - np.log(np.exp(z).sum(axis=axis, keepdims=True))


def _prepare(probs, labels, reliability: str = "top_label"):
    """Validate and reduce to (confidence, outcome, probs2d, labels)."""
    check_choice(reliability, RELIABILITIES, "reliability")
    p = check_probs(probs)
    n_classes = 2 if p.ndim == 1 else p.shape[1]
    y = check_labels(labels, p.shape[0], n_classes)
    if reliability == "positive_class":
        if p.ndim == 2:
            if p.shape[1] != 2:
                raise ValueError("reliability='positive_class' needs binary input: probs of shape "
                                 f"(n,) or (n, 2); got shape {p.shape}")
            p = p[:, 1]
        return p.astype(np.float64, copy=False), y.astype(np.float64)
    conf, pred = top_label(p)
    return conf, (pred == y).astype(np.float64)


def top_label(probs):
    """Return ``(confidence, predicted class)``: ``max_k p_k`` and ``argmax_k p_k``.

    For binary ``(n,)`` input: ``max(p, 1 - p)`` and ``[p > 0.5]`` (ties go to
    class 0, as ``argmax`` of ``[1 - p, p]`` does).
    """
    p = to_numpy(probs, "probs")
    if p.ndim == 1:
        return np.maximum(p, 1.0 - p).astype(np.float64), (p > 0.5).astype(np.int64)
    if p.dtype in (np.float32, np.float64) and p.flags.c_contiguous:
        import torch  # one multi-threaded pass for max and argmax (first maximum on ties, as numpy)

        conf, pred = torch.from_numpy(p).max(dim=1)
        return conf.double().numpy(), pred.numpy()
    pred = p.argmax(axis=1)
    conf = np.take_along_axis(p, pred[:, None], axis=1)[:, 0]
    return conf.astype(np.float64), pred


def _uniform_bin_index(conf: np.ndarray, n_bins: int) -> np.ndarray:
    """Index of the Guo bin ((m-1)/M, m/M] of each confidence; 0 goes to bin 0."""
    edges = np.linspace(0.0, 1.0, n_bins + 1)
    return np.searchsorted(edges[1:-1], conf, side="left")


def _quantile_bin_index(conf: np.ndarray, n_bins: int) -> tuple[np.ndarray, np.ndarray]:
    """Equal-mass bins: sorted confidences cut in ``n_bins`` runs of sizes as ``np.array_split``.

    Returns the bin index of each sample and the edges (midpoints between runs,
    0 and 1 at the ends).
    """
    n = conf.shape[0]
    order = np.argsort(conf, kind="stable")
    sizes = np.full(n_bins, n // n_bins)
    sizes[: n % n_bins] += 1
    idx = np.empty(n, dtype=np.int64)
    idx[order] = np.repeat(np.arange(n_bins), sizes)
    ends = np.cumsum(sizes)
    s = conf[order]
    inner = [(s[e - 1] + s[e]) / 2 for e in ends[:-1] if 0 < e < n]
    inner = inner + [1.0] * (n_bins - 1 - len(inner))
    return idx, np.concatenate([[0.0], inner, [1.0]])


def _bin_sums(conf: np.ndarray, outcome: np.ndarray, n_bins: int, strategy: str):
    n_bins = check_n_bins(n_bins)
    check_choice(strategy, STRATEGIES, "strategy")
    if strategy == "uniform":
        idx = _uniform_bin_index(conf, n_bins)
        edges = np.linspace(0.0, 1.0, n_bins + 1)
    else:
        idx, edges = _quantile_bin_index(conf, n_bins)
    count = np.bincount(idx, minlength=n_bins).astype(np.float64)
    sum_conf = np.bincount(idx, weights=conf, minlength=n_bins)
    sum_out = np.bincount(idx, weights=outcome, minlength=n_bins)
    return count, sum_conf, sum_out, edges


@dataclass
class ReliabilityBins:
    """Per-bin statistics of a reliability diagram.

    ``accuracy[m] = acc(B_m)``, ``confidence[m] = conf(B_m)`` (NaN for an empty
    bin), ``count[m] = |B_m|``, ``edges`` the ``M + 1`` bin edges.
    """

    edges: np.ndarray
    count: np.ndarray
    confidence: np.ndarray
    accuracy: np.ndarray

    @property
    def gap(self) -> np.ndarray:
        """``acc(B_m) - conf(B_m)`` (NaN for an empty bin)."""
        return self.accuracy - self.confidence

    @property
    def weight(self) -> np.ndarray:
        """``|B_m| / n``."""
        return self.count / self.count.sum()


def reliability_bins(probs, labels, n_bins: int = 15, strategy: str = "uniform",
                     reliability: str = "top_label") -> ReliabilityBins:
    """acc(B_m) and conf(B_m) for each bin B_m (Guo et al. 2017, section 2)."""
    conf, outcome = _prepare(probs, labels, reliability)
    count, sc, so, edges = _bin_sums(conf, outcome, n_bins, strategy)
    with np.errstate(invalid="ignore", divide="ignore"):
        return ReliabilityBins(edges=edges, count=count, confidence=sc / count, accuracy=so / count)


def _ece_from_sums(count, sum_conf, sum_out, norm: str) -> float:
    n = count.sum()
    absgap_mass = np.abs(sum_out - sum_conf)  # |B_m| * |acc - conf|
    if norm == "l1":
        return float(absgap_mass.sum() / n)
    nonempty = count > 0
    gap = absgap_mass[nonempty] / count[nonempty]
    if norm == "l2":
        return float(np.sqrt(np.sum(count[nonempty] * gap**2) / n))
    return float(gap.max())


# --------------------------------------------------------------------------- binned measures
def ece(probs, labels, n_bins: int = 15, strategy: str = "uniform", norm: str = "l1",
        reliability: str = "top_label") -> float:
    r"""Expected calibration error, top-label by default.

    .. math:: \mathrm{ECE} = \sum_{m=1}^{M} \frac{|B_m|}{n}\,|\mathrm{acc}(B_m) - \mathrm{conf}(B_m)|

    ``norm="l2"`` gives :math:`\sqrt{\sum_m \frac{|B_m|}{n}(\mathrm{acc}-\mathrm{conf})^2}`,
    ``norm="max"`` the MCE. ``strategy="uniform"``: equal-width Guo bins
    ``((m-1)/M, m/M]``; ``"quantile"``: equal-mass bins (the adaptive ECE of
    Nixon et al. 2019). Empty bins contribute nothing.
    """
    check_choice(norm, NORMS, "norm")
    conf, outcome = _prepare(probs, labels, reliability)
    return _ece_from_sums(*_bin_sums(conf, outcome, n_bins, strategy)[:3], norm)


def mce(probs, labels, n_bins: int = 15, strategy: str = "uniform",
        reliability: str = "top_label") -> float:
    r"""Maximum calibration error :math:`\max_m |\mathrm{acc}(B_m) - \mathrm{conf}(B_m)|` over non-empty bins."""
    return ece(probs, labels, n_bins=n_bins, strategy=strategy, norm="max", reliability=reliability)


def ace(probs, labels, n_bins: int = 15, norm: str = "l1") -> float:
    """Adaptive calibration error: top-label ECE over equal-mass bins (Nixon et al. 2019)."""
    return ece(probs, labels, n_bins=n_bins, strategy="quantile", norm=norm)


def classwise_ece(probs, labels, n_bins: int = 15, strategy: str = "uniform",
                  norm: str = "l1") -> float:
    r"""Class-wise ECE (Kull et al. 2019): the ECE of every class's probability, averaged.

    .. math:: \mathrm{cwECE} = \frac1K \sum_{k=1}^K \sum_{m=1}^M \frac{|B_{mk}|}{n}
              |\mathrm{freq}_k(B_{mk}) - \mathrm{conf}_k(B_{mk})|

    where ``B_mk`` bins the samples by ``p_k`` and ``freq_k`` is the fraction of
    them whose label is ``k``. Binary ``(n,)`` input is read as ``[1 - p, p]``.
    """
    check_choice(norm, NORMS, "norm")
    p = check_probs(probs)
    if p.ndim == 1:
        p = np.stack([1.0 - p, p], axis=1)
    n, k = p.shape
    y = check_labels(labels, n, k)
    n_bins = check_n_bins(n_bins)
    check_choice(strategy, STRATEGIES, "strategy")
    onehot = np.zeros((n, k))
    onehot[np.arange(n), y] = 1.0
    if strategy == "uniform":
        idx = _uniform_bin_index(p.ravel(), n_bins).reshape(n, k) + n_bins * np.arange(k)
        count = np.bincount(idx.ravel(), minlength=k * n_bins).reshape(k, n_bins).astype(float)
        sc = np.bincount(idx.ravel(), weights=p.ravel(), minlength=k * n_bins).reshape(k, n_bins)
        so = np.bincount(idx.ravel(), weights=onehot.ravel(), minlength=k * n_bins).reshape(k, n_bins)
        return float(np.mean([_ece_from_sums(count[c], sc[c], so[c], norm) for c in range(k)]))
    per_class = [_ece_from_sums(*_bin_sums(p[:, c].astype(np.float64), onehot[:, c], n_bins,
                                           strategy)[:3], norm) for c in range(k)]
    return float(np.mean(per_class))


def debiased_ece(probs, labels, n_bins: int = 15, strategy: str = "quantile",
                 reliability: str = "top_label") -> float:
    r"""Debiased l2 calibration error (Kumar, Liang and Ma 2019).

    .. math:: \widehat{\mathrm{CE}}^2 = \sum_m \frac{|B_m|}{n}\Big[(\mathrm{acc}(B_m)-\mathrm{conf}(B_m))^2
              - \frac{\mathrm{acc}(B_m)(1-\mathrm{acc}(B_m))}{|B_m|-1}\Big]

    returned as :math:`\sqrt{\max(\widehat{\mathrm{CE}}^2, 0)}`; bins with fewer
    than 2 samples contribute 0. Equal-mass bins by default, as in the paper.
    Compare with ``ece(..., norm="l2")``, its plug-in (upward-biased) version.
    """
    conf, outcome = _prepare(probs, labels, reliability)
    count, sc, so, _ = _bin_sums(conf, outcome, n_bins, strategy)
    ok = count >= 2
    c = count[ok]
    acc = so[ok] / c
    gap2 = (acc - sc[ok] / c) ** 2 - acc * (1 - acc) / (c - 1)
    est = np.sum(c * gap2) / count.sum()
    return float(np.sqrt(max(est, 0.0)))


# --------------------------------------------------------------------------- kernel measures
def _default_sece_grid(bandwidth: float) -> int:
    return int(max(4096, np.ceil(40.0 / bandwidth)))


def _gauss_smooth_on_grid(x: np.ndarray, weights_list, bandwidth: float, grid: int):
    """Gaussian-kernel sums ``sum_j w_j exp(-(t - x_j)^2 / 2h^2)`` on ``linspace(0, 1, grid)``.

    Linear binning of the samples onto the grid, then an FFT convolution.
    """
    from scipy.signal import fftconvolve

    delta = 1.0 / (grid - 1)
    pos = x * (grid - 1)
    lo = np.clip(pos.astype(np.int64), 0, grid - 2)
    frac = pos - lo
    half = int(np.ceil(8 * bandwidth / delta))
    taps = np.exp(-0.5 * ((np.arange(-half, half + 1) * delta) / bandwidth) ** 2)
    out = []
    for w in weights_list:
        g = np.bincount(lo, weights=(1 - frac) * w, minlength=grid) \
            + np.bincount(lo + 1, weights=frac * w, minlength=grid)
        out.append(fftconvolve(g, taps, mode="full")[half: half + grid])
    return out


def sece_exact_torch(confidence, correct, bandwidth: float = 0.05, chunk: int = 1024):
    r"""Exact, differentiable SECE in torch (the loss of chapter 5), O(n^2) in chunks.

    .. math:: \mathrm{SACC}_i = \frac{\sum_j K(c_i, c_j)\,a_j}{\sum_j K(c_i, c_j)},\quad
              K(c_i, c_j) = e^{-(c_i - c_j)^2 / 2h^2},\quad
              \mathrm{SECE} = \frac1n \sum_i |\mathrm{SACC}_i - c_i|

    ``confidence`` (n,) tensor (gradients flow through it), ``correct`` (n,) 0/1.
    """
    import torch

    c = confidence.reshape(-1)
    a = correct.reshape(-1).to(c.dtype)
    rhs = torch.stack([a, torch.ones_like(a)], dim=1)  # numerator and denominator in one matmul
    scale = -0.5 / bandwidth**2
    total = c.new_zeros(())
    for start in range(0, c.shape[0], chunk):
        ci = c[start: start + chunk]
        k = torch.exp((ci[:, None] - c[None, :]).square() * scale)
        num_den = k @ rhs
        total = total + (num_den[:, 0] / num_den[:, 1] - ci).abs().sum()
    return total / c.shape[0]


def sece(probs, labels, bandwidth: float = 0.05, method: str = "auto",
         reliability: str = "top_label") -> float:
    r"""Smooth ECE of the meta-regularization paper (Wang et al. 2023).

    .. math:: \mathrm{SACC}_i = \frac{\sum_j K(c_i, c_j)\,\mathbb 1[\hat y_j = y_j]}{\sum_j K(c_i, c_j)},\quad
              \mathrm{SECE} = \frac1n \sum_i |\mathrm{SACC}_i - c_i|

    with the Gaussian kernel :math:`K(c_i, c_j) = \exp(-(c_i-c_j)^2 / 2h^2)` of
    bandwidth ``h`` over top-label confidences ``c``. ``method="exact"`` sums all
    n^2 pairs (torch, chunked); ``"fast"`` bins onto a grid of spacing at most
    h/40 and convolves by FFT (error below 1e-5 for h >= 0.01, tested against
    exact on n = 20,000); ``"auto"`` is exact below 2,000 samples.
    """
    if not (np.isfinite(bandwidth) and bandwidth > 0):
        raise ValueError(f"bandwidth must be a positive number; got {bandwidth!r}")
    check_choice(method, ("auto", "exact", "fast"), "method")
    conf, outcome = _prepare(probs, labels, reliability)
    if method == "exact" or (method == "auto" and conf.shape[0] < 2000):
        import torch

        return float(sece_exact_torch(torch.from_numpy(conf), torch.from_numpy(outcome), bandwidth))
    grid = _default_sece_grid(bandwidth)
    num, den = _gauss_smooth_on_grid(conf, [outcome, np.ones_like(conf)], bandwidth, grid)
    t = np.linspace(0.0, 1.0, grid)
    sacc = np.interp(conf, t, num) / np.interp(conf, t, den)
    return float(np.mean(np.abs(sacc - conf)))


def _smece_at(f: np.ndarray, r: np.ndarray, sigma: float) -> float:
    """smECE at bandwidth sigma, discretized as relplot 1.0 does (reflected Gaussian kernel)."""
    from scipy.signal import fftconvolve

    ev = max(round(10 / sigma), 200)
    t = np.linspace(0.0, 1.0, ev)
    e = max(2000, round(20 / sigma)) // 2 + 1  # grid of the kernel smoother
    pos = f * (e - 1)
    lo = np.clip(pos.astype(np.int64), 0, e - 2)
    frac = pos - lo
    ker = np.exp(-((np.linspace(0, 1, e) - 0.5) ** 2) / (2 * sigma**2)) / (np.sqrt(2 * np.pi) * sigma)

    def smooth(w):
        g = np.bincount(lo, weights=(1 - frac) * w, minlength=e) \
            + np.bincount(lo + 1, weights=frac * w, minlength=e)
        ext = np.concatenate([g[::-1][:-1], g, g[::-1][1:]])
        conv = fftconvolve(ext, ker, mode="valid")[e // 2: e // 2 + e]
        ti = np.clip((t * (e - 1)).astype(np.int64), 0, e - 2)
        res = t * (e - 1) - ti
        return conv[ti] * (1 - res) + conv[ti + 1] * res

    num = smooth(r)
    den = smooth(np.ones_like(f)) + 1e-4
    return float(np.sum(np.abs(num)) / np.sum(den))


def smooth_ece(probs, labels, reliability: str = "top_label", return_bandwidth: bool = False,
               eps: float = 1e-3, refine: int = 10):
    r"""SmoothECE of Błasiok and Nakkiran (2023) with its fixed-point bandwidth.

    .. math:: \mathrm{smECE}_\sigma = \int_0^1 |\hat r_\sigma(t)|\,\hat\delta_\sigma(t)\,dt

    where :math:`\hat r_\sigma` is the reflected-Gaussian kernel regression of the
    residual ``c - a`` and :math:`\hat\delta_\sigma` the kernel density of the
    confidences; the bandwidth is the fixed point ``sigma* = smECE_sigma*``,
    found by ``refine`` steps of bisection (as ``relplot.smECE``, which this
    matches to 1e-4; ``refine=20`` pins sigma* to 1e-6). Binary ``(n,)`` input
    with ``reliability="positive_class"`` measures ``P(y = 1)`` directly.
    """
    conf, outcome = _prepare(probs, labels, reliability)
    r = conf - outcome

    def below_fixed_point(s):
        return s < eps or s < _smece_at(conf, r, s)

    if below_fixed_point(1.0):
        sigma = 1.0
    else:
        hi, lo = 1.0, 0.0
        for _ in range(refine):
            mid = (hi + lo) / 2
            if below_fixed_point(mid):
                lo = mid
            else:
                hi = mid
        sigma = hi
    value = _smece_at(conf, r, sigma)
    return (value, sigma) if return_bandwidth else value


# --------------------------------------------------------------------------- proper scores
def _probs2d(probs):
    p = check_probs(probs)
    return np.stack([1.0 - p, p], axis=1) if p.ndim == 1 else p


def nll(probs, labels, eps: float = 1e-12) -> float:
    r"""Negative log-likelihood :math:`-\frac1n\sum_i \log p_{i, y_i}`, with p clipped below at ``eps``."""
    p = _probs2d(probs)
    y = check_labels(labels, p.shape[0], p.shape[1])
    py = p[np.arange(p.shape[0]), y].astype(np.float64)
    return float(-np.mean(np.log(np.maximum(py, eps))))


def brier(probs, labels) -> float:
    r"""Brier score.

    Multiclass ``(n, K)``: :math:`\frac1n\sum_i\sum_k (p_{ik} - [y_i = k])^2` (Brier 1950).
    Binary ``(n,)``: :math:`\frac1n\sum_i (p_i - y_i)^2`, as ``sklearn.metrics.brier_score_loss``
    (half the two-column value).
    """
    p = check_probs(probs)
    if p.ndim == 1:
        y = check_labels(labels, p.shape[0], 2)
        return float(np.mean((p - y) ** 2))
    y = check_labels(labels, p.shape[0], p.shape[1])
    sq = np.sum(p.astype(np.float64) ** 2, axis=1) - 2 * p[np.arange(p.shape[0]), y] + 1.0
    return float(np.mean(sq))


def accuracy(probs, labels) -> float:
    """Fraction of samples whose argmax class equals the label."""
    p = check_probs(probs)
    y = check_labels(labels, p.shape[0], 2 if p.ndim == 1 else p.shape[1])
    return float(np.mean(top_label(p)[1] == y))


def error(probs, labels) -> float:
    """Classification error ``1 - accuracy``."""
    return 1.0 - accuracy(probs, labels)


# --------------------------------------------------------------------------- intervals, reports
BootstrapCI = namedtuple("BootstrapCI", ["estimate", "low", "high", "level"])


def bootstrap_ci(metric, probs, labels, n_boot: int = 1000, level: float = 0.95, seed: int = 0,
                 **metric_kwargs) -> BootstrapCI:
    """Percentile bootstrap interval of ``metric(probs, labels, **metric_kwargs)``.

    Resamples the n (prediction, label) pairs with replacement ``n_boot`` times;
    returns ``BootstrapCI(estimate, low, high, level)`` where ``estimate`` is the
    metric on the full data.
    """
    if not callable(metric):
        raise ValueError(f"metric must be callable, e.g. calibcourse.metrics.ece; got {metric!r}")
    if isinstance(n_boot, bool) or not isinstance(n_boot, (int, np.integer)) or n_boot < 2:
        raise ValueError(f"n_boot must be an integer >= 2; got {n_boot!r}")
    if not (0 < level < 1):
        raise ValueError(f"level must be in (0, 1); got {level!r}")
    p = check_probs(probs)
    y = check_labels(labels, p.shape[0], 2 if p.ndim == 1 else p.shape[1])
    estimate = float(metric(p, y, **metric_kwargs))
    rng = np.random.default_rng(seed)
    n = p.shape[0]
    stats = np.empty(n_boot)
    fast = _binned_from_conf(metric, metric_kwargs)
    if fast is not None:  # binned top-label measures depend on (confidence, outcome) only
        conf, outcome = _prepare(p, y, metric_kwargs.get("reliability", "top_label"))
        for b in range(n_boot):
            i = rng.integers(0, n, n)
            stats[b] = fast(conf[i], outcome[i])
    else:
        for b in range(n_boot):
            i = rng.integers(0, n, n)
            stats[b] = metric(p[i], y[i], **metric_kwargs)
    alpha = (1 - level) / 2
    low, high = np.quantile(stats, [alpha, 1 - alpha])
    return BootstrapCI(estimate, float(low), float(high), level)


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
    return lambda c, o: _ece_from_sums(*_bin_sums(c, o, n_bins, strategy)[:3], norm)


def calibration_report(probs, labels, n_bins: int = 15, name: str = "model", ci: bool = False,
                       n_boot: int = 200, seed: int = 0, sece_bandwidth: float = 0.05):
    """All measures of this module for one model, as a one-row pandas DataFrame.

    Columns: error, nll, brier, ece, mce, ace, classwise_ece, debiased_ece,
    sece, smooth_ece. With ``ci=True`` each calibration measure also gets
    ``<name>_low`` / ``<name>_high`` (95% percentile bootstrap). Concatenate
    the rows of several models with ``pandas.concat``.
    """
    import pandas as pd

    p = check_probs(probs)
    y = check_labels(labels, p.shape[0], 2 if p.ndim == 1 else p.shape[1])
    fns = {
        "error": (error, {}), "nll": (nll, {}), "brier": (brier, {}),
        "ece": (ece, {"n_bins": n_bins}), "mce": (mce, {"n_bins": n_bins}),
        "ace": (ace, {"n_bins": n_bins}), "classwise_ece": (classwise_ece, {"n_bins": n_bins}),
        "debiased_ece": (debiased_ece, {"n_bins": n_bins}),
        "sece": (sece, {"bandwidth": sece_bandwidth}), "smooth_ece": (smooth_ece, {}),
    }
    row = {}
    for key, (fn, kw) in fns.items():
        if ci and key not in ("error", "nll", "brier"):
            r = bootstrap_ci(fn, p, y, n_boot=n_boot, seed=seed, **kw)
            row[key], row[key + "_low"], row[key + "_high"] = r.estimate, r.low, r.high
        else:
            row[key] = fn(p, y, **kw)
    return pd.DataFrame([row], index=pd.Index([name], name="model"))
