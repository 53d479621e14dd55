"""Calibration measures (chapter 1, *Theory*; reused in every later chapter).

A functional core in the style of ``torchmetrics.functional``: every measure
takes ``probs`` and ``labels`` as numpy arrays or torch tensors (or lists) and
returns a Python float. The registries :data:`SCORES`,
:data:`CALIBRATION_ERRORS` and :data:`MEASURES` list them by name (the tests
iterate over them, and :func:`calibcourse.calibration.report.calibration_report` computes them all).

Inputs
------
``probs``
    Shape ``(n, K)``: a probability vector per sample (rows sum to 1 within
    ``calibcourse.calibration._validation.SUM_TOL`` = 1e-4), or shape ``(n,)``: the
    probability of class 1 of a binary problem. Logits go through
    :func:`logits_to_probs` first.
``labels``
    Shape ``(n,)``: integer class indices in ``[0, K)``.

Bins
----
The binned measures bin with :mod:`calibcourse.calibration.binning`: equal-width bins
``((m-1)/M, m/M]`` closed on the right (Guo et al. 2017), a confidence of
exactly 0 in the first bin and exactly 1 in the last. ``torchmetrics`` uses
``[lo, hi)`` instead (and puts a confidence of exactly 1.0 in an extra bin);
``netcal`` uses ``[lo, hi)`` too, and reads a two-column ``(n, 2)`` input as
binary, measuring ``P(y = 1)`` (our ``reliability="positive_class"``). On
inputs with no confidence on an edge all three agree.

What is measured: ``reliability``
---------------------------------
By default (``reliability=None``) a binary input of shape ``(n,)`` is P(y = 1)
and its reliability is measured: confidence ``p`` against the outcome ``y``
(``reliability="positive_class"``, as ``sklearn.calibration.calibration_curve``
and ``torchmetrics``' ``BinaryCalibrationError``), and a matrix ``(n, K)`` is
measured top-label (``reliability="top_label"``, as ``torchmetrics``'
``MulticlassCalibrationError``): confidence ``max_k p_k``, correctness
``[argmax_k p_k == y]``. The top-label view of a binary ``(n,)`` input is asked
for explicitly, ``reliability="top_label"``: ``p`` is then read as the
two-column matrix ``[1 - p, p]``. ``reliability="positive_class"`` also takes
an ``(n, 2)`` matrix (its column 1).
"""
from __future__ import annotations

from collections import namedtuple
from dataclasses import dataclass

import numpy as np

from calibcourse.calibration import binning
from calibcourse.calibration import kernels
from calibcourse.calibration._validation import (
    check_choice,
    check_labels,
    check_logits,
    check_prob_values,
    check_probs,
    check_sample_weight,
    input_eps,
    is_torch,
    probs_array,
    to_numpy,
    torch_or_none,
)

__all__ = [
    "binned_on_confidence",
    "confidence_outcome",
    "softmax",
    "log_softmax",
    "logits_to_probs",
    "probs_to_logits",
    "PROB_EPS",
    "top_label",
    "reliability_bins",
    "ReliabilityBins",
    "ece",
    "mce",
    "ace",
    "classwise_ece",
    "debiased_ece",
    "sece",
    "sece_exact_torch",
    "smooth_ece",
    "smooth_ece_bandwidth",
    "nll",
    "brier",
    "brier_decomposition",
    "BrierDecomposition",
    "error",
    "accuracy",
    "SCORES",
    "CALIBRATION_ERRORS",
    "MEASURES",
    "NORMS",
    "RELIABILITIES",
]

NORMS = ("l1", "l2", "max")
RELIABILITIES = ("top_label", "positive_class")


# --------------------------------------------------------------------------- logits to probabilities
def softmax(logits, axis: int = -1):
    """Numerically stable softmax ``exp(z - max z) / sum exp(z - max z)``.

    Parameters
    ----------
    logits : array_like or torch.Tensor
        Real-valued scores.
    axis : int, default=-1
        The class axis.

    Returns
    -------
    numpy.ndarray or torch.Tensor
        A torch tensor for a torch input (differentiable), a float64 numpy array otherwise.

    Examples
    --------
    >>> softmax(np.array([[0.0, np.log(3.0)]]))
    array([[0.25, 0.75]])
    """
    if is_torch(logits):
        return logits.softmax(dim=axis)
    z = check_logits(logits, "logits", ndim=None)
    z = z - z.max(axis=axis, keepdims=True)
    e = np.exp(z)
    return e / e.sum(axis=axis, keepdims=True)


def log_softmax(logits, axis: int = -1):
    """Numerically stable ``z - logsumexp(z)``.

    Parameters
    ----------
    logits : array_like or torch.Tensor
        Real-valued scores.
    axis : int, default=-1
        The class axis.

    Returns
    -------
    numpy.ndarray or torch.Tensor
        Log-probabilities; torch in, torch out.

    Examples
    --------
    >>> np.exp(log_softmax(np.array([[0.0, np.log(3.0)]])))
    array([[0.25, 0.75]])
    """
    if is_torch(logits):
        return logits.log_softmax(dim=axis)
    z = check_logits(logits, "logits", ndim=None)
    z = z - z.max(axis=axis, keepdims=True)
    return z - np.log(np.exp(z).sum(axis=axis, keepdims=True))


def logits_to_probs(logits):
    """The probabilities a network's logits stand for: the one conversion every caller uses.

    Parameters
    ----------
    logits : array_like or torch.Tensor of shape (n, K) or (n,)
        ``(n, K)``: the logits of a softmax output (log-probabilities too: their softmax is themselves).
        ``(n,)``: the single logit of a sigmoid output.

    Returns
    -------
    numpy.ndarray or torch.Tensor
        ``softmax(logits)`` over the classes, of shape ``(n, K)``; or ``sigmoid(logits)``, the probability of
        class 1, of shape ``(n,)`` (never a softmax across the samples). Torch in, torch out.

    Examples
    --------
    >>> logits_to_probs(np.array([0.0, np.log(3.0)]))  # two samples of a sigmoid network
    array([0.5 , 0.75])
    >>> logits_to_probs(np.array([[0.0, np.log(3.0)]]))  # one sample of a two-class softmax
    array([[0.25, 0.75]])
    """
    if is_torch(logits):
        return logits.sigmoid() if logits.ndim == 1 else logits.softmax(dim=-1)
    from scipy.special import expit

    z = check_logits(logits, "logits", ndim=None)
    if z.ndim > 2:
        raise ValueError(f"logits must have shape (n, K) or (n,); got shape {z.shape}")
    return expit(z) if z.ndim == 1 else softmax(z)


# --------------------------------------------------------------------------- what is measured
#: What a probability of exactly 0 becomes before its log is taken: scikit-learn's ``log(p + 1e-12)``
#: (``CalibratedClassifierCV`` on a classifier's ``predict_proba``), so an exact zero is about -27.6,
#: not -690.
PROB_EPS = 1e-12


def probs_to_logits(probs):
    """Logits of checked probabilities ``(n, K)``: ``log(p + 1e-12)``, as scikit-learn takes them.

    Every conversion of probabilities to logits in the toolkit goes through here. A softmax of
    the result gives back the probabilities up to about ``K * 1e-12``; a model that says 0 for a
    class becomes a logit of about -27.6, so that a temperature fitted on it stays of the order
    of the model's own scale.

    Parameters
    ----------
    probs : numpy.ndarray of shape (n, K)
        Probabilities (rows summing to 1), already validated.

    Returns
    -------
    numpy.ndarray of shape (n, K)

    Examples
    --------
    >>> probs_to_logits(np.array([[1.0, 0.0]])).round(2)
    array([[  0.  , -27.63]])
    """
    return np.log(probs + PROB_EPS)


def _resolve_reliability(reliability, probs) -> str:
    """``reliability``, checked; None becomes "positive_class" for (n,) input, "top_label" otherwise."""
    if reliability is None:
        ndim = getattr(probs, "ndim", None)
        return "positive_class" if (np.ndim(probs) if ndim is None else ndim) == 1 else "top_label"
    return check_choice(reliability, RELIABILITIES, "reliability")


def _prepare(probs, labels, reliability: str | None = None):
    """Validate; return the float64 (confidence, outcome) pair that ``reliability`` measures."""
    reliability = _resolve_reliability(reliability, probs)
    if reliability == "positive_class":
        p = check_probs(probs)
        y = check_labels(labels, p.shape[0], 2 if p.ndim == 1 else p.shape[1])
        return _positive_class(p).astype(np.float64, copy=False), y.astype(np.float64)
    p, conf, pred = _checked_top_label(probs)
    y = check_labels(labels, p.shape[0], 2 if p.ndim == 1 else p.shape[1])
    return conf, (pred == y).astype(np.float64)


#: From this many classes on, the checks and the top label are one numpy pass over row blocks
#: (torch's max over a row is slower than numpy's argmax there; below it, torch is faster)
_BLOCKED_FROM_CLASSES = 24
_BLOCK_BYTES = 2**20  # 1 MiB: a block is read from memory once and worked on in the L2 (or L3) cache


def _checked_top_label(probs):
    """``p = check_probs(probs)`` and ``top_label(p)``: (p, confidence, predicted class).

    For a wide float matrix the value checks (range and row sums) and the top label are
    computed block by block, each block of rows read from memory once; only the outputs the
    caller keeps are allocated at full length (fresh pages cost as much as a pass).
    """
    p = probs_array(probs)
    if not (p.ndim == 2 and p.shape[1] >= _BLOCKED_FROM_CLASSES and p.flags.c_contiguous):
        p = check_probs(p, eps=input_eps(probs))
        return (p, *top_label(p))
    n, k = p.shape
    rows = max(1, _BLOCK_BYTES // (k * p.itemsize))
    starts = np.arange(rows) * k  # where each row of a block starts in the flat array
    ones = np.ones(k, dtype=p.dtype)
    top_buf, sum_buf = np.empty(rows, dtype=p.dtype), np.empty(rows, dtype=_sum_dtype(p.dtype))
    conf, pred = np.empty(n, dtype=np.float64), np.empty(n, dtype=np.intp)
    blocks = -(-n // rows)
    bits_max, sum_lo, sum_hi = np.empty(blocks, dtype=np.uint64), np.empty(blocks), np.empty(blocks)
    # the bit patterns as unsigned integers order like the values in [0, 1] only in native byte order
    bitwise = p.dtype.isnative and p.dtype.itemsize in _UINT_OF
    flat, bits = p.reshape(-1), (p.view(_UINT_OF[p.dtype.itemsize]) if bitwise else None)
    for j, i in enumerate(range(0, n, rows)):  # each block is read from memory once, then worked on in cache
        b, top = p[i: i + rows], pred[i: i + rows]
        m = len(top)
        b.argmax(axis=1, out=top)
        np.take(flat, starts[:m] + (top + i * k), out=top_buf[:m])  # the top, not a second max
        conf[i: i + m] = top_buf[:m]
        if bitwise:
            bits_max[j] = bits[i: i + rows].max()  # one integer max checks 0 <= p <= 1 and NaN (below)
        s = _row_sums_into(b, ones, sum_buf[:m])
        sum_lo[j], sum_hi[j] = s.min(), s.max()
    # A float in [0, 1] has its bit pattern, read as an unsigned integer, at most that of 1.0;
    # a negative value, NaN or a value above 1 has a larger one (-0.0 too: the exact check clears it).
    in_range = bitwise and int(bits_max.max()) <= int(np.ones(1, dtype=p.dtype).view(bits.dtype)[0])
    lo, hi = (0.0, 1.0) if in_range else (p.min(), p.max())
    check_prob_values(p, "probs", lo, hi, row_sums=lambda q: _block_row_sums(q, rows),
                      sum_range=(sum_lo.min(), sum_hi.max()), eps=input_eps(probs))
    return p, conf, pred.astype(np.int64, copy=False)


_UINT_OF = {2: np.uint16, 4: np.uint32, 8: np.uint64}


def _sum_dtype(dtype) -> type:
    """The dtype of row sums: the input's for float32 and float64, float64 for the others (float16
    sums in float16 lose digits)."""
    return dtype.type if dtype in (np.float32, np.float64) else np.float64


def _row_sums_into(b: np.ndarray, ones: np.ndarray, out: np.ndarray) -> np.ndarray:
    """A block's row sums into ``out`` (of :func:`_sum_dtype`): for float32 and float64 a
    matrix-vector product with ``ones``, the fastest row sums."""
    if out.dtype == b.dtype:
        return np.matmul(b, ones, out=out)
    return b.sum(axis=1, dtype=np.float64, out=out)


def _block_row_sums(p: np.ndarray, rows: int) -> np.ndarray:
    """Every row's sum, block by block as :func:`_checked_top_label` computes them (only to name a
    row that fails: the same calls give the same sums)."""
    ones = np.ones(p.shape[1], dtype=p.dtype)
    sums = np.empty(p.shape[0], dtype=_sum_dtype(p.dtype))
    for i in range(0, p.shape[0], rows):
        _row_sums_into(p[i: i + rows], ones, sums[i: i + rows])
    return sums


def _positive_class(p: np.ndarray) -> np.ndarray:
    """P(y = 1) of validated binary probabilities, shape (n,) or (n, 2)."""
    if p.ndim == 2:
        if p.shape[1] != 2:
            raise ValueError("reliability='positive_class' needs binary input: probs of shape "
                             f"(n,) or (n, 2); got shape {p.shape}")
        return p[:, 1]
    return p


def top_label(probs):
    """The top-label confidence and the predicted class of every sample.

    Returns
    -------
    confidence : numpy.ndarray of shape (n,)
        ``max_k p_k`` (float64); ``max(p, 1 - p)`` for binary ``(n,)`` input.
    predicted : numpy.ndarray of shape (n,)
        ``argmax_k p_k`` (first maximum on ties); ``[p > 0.5]`` for binary
        input (a tie goes to class 0, as ``argmax`` of ``[1 - p, p]`` does).

    Parameters
    ----------
    probs : array_like of shape (n, K) or (n,)
        Probabilities: a row per sample that sums to 1, or P(y = 1) of a binary problem.

    Examples
    --------
    >>> top_label(np.array([[0.2, 0.8], [0.5, 0.5]]))
    (array([0.8, 0.5]), array([1, 0]))
    >>> top_label(np.array([0.3, 0.9]))
    (array([0.7, 0.9]), array([0, 1]))
    """
    p = to_numpy(probs, "probs")
    if p.ndim == 1:
        return np.maximum(p, 1.0 - p).astype(np.float64), (p > 0.5).astype(np.int64)
    torch = torch_or_none() if p.dtype in (np.float32, np.float64) and p.flags.c_contiguous else None
    if torch is not None:  # one multi-threaded pass for max and argmax (first maximum on ties, as numpy)
        conf, pred = torch.from_numpy(p).max(dim=1)
        return conf.double().numpy(), pred.numpy()
    pred = p.argmax(axis=1)
    conf = np.take_along_axis(p, pred[:, None], axis=1)[:, 0]
    return conf.astype(np.float64), pred


@dataclass
class ReliabilityBins:
    """Per-bin statistics of a reliability diagram, in the order the labs return them.

    Attributes
    ----------
    accuracy : numpy.ndarray of shape (M,)
        ``acc(B_m)``, the fraction of correct predictions (or of positives) in
        bin ``m``; NaN for an empty bin.
    confidence : numpy.ndarray of shape (M,)
        ``conf(B_m)``, the mean confidence in bin ``m``; NaN for an empty bin.
    count : numpy.ndarray of shape (M,)
        ``|B_m|`` (float).
    edges : numpy.ndarray of shape (M + 1,)
        The bin edges.

    Examples
    --------
    >>> rb = reliability_bins(np.array([0.1, 0.3, 0.9]), np.array([0, 1, 1]), n_bins=2,
    ...                       reliability="positive_class")
    >>> rb.accuracy, rb.confidence, rb.count
    (array([0.5, 1. ]), array([0.2, 0.9]), array([2., 1.]))
    >>> rb.gap, rb.weight
    (array([0.3, 0.1]), array([0.66666667, 0.33333333]))
    """

    accuracy: np.ndarray
    confidence: np.ndarray
    count: np.ndarray
    edges: np.ndarray

    @property
    def gap(self) -> np.ndarray:
        """``acc(B_m) - conf(B_m)`` (NaN for an empty bin)."""
        return self.accuracy - self.confidence

    @property
    def weight(self) -> np.ndarray:
        """``|B_m| / n``."""
        return self.count / self.count.sum()


def reliability_bins(probs, labels, n_bins: int = 15, strategy: str = "uniform",
                     reliability: str | None = None) -> ReliabilityBins:
    """acc(B_m), conf(B_m) and |B_m| of every bin B_m (Guo et al. 2017, section 2).

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

    Returns
    -------
    ReliabilityBins
        ``accuracy``, ``confidence``, ``count`` and ``edges`` of the bins.

    Examples
    --------
    >>> probs = np.array([[0.9, 0.1], [0.8, 0.2], [0.3, 0.7], [0.4, 0.6]])
    >>> rb = reliability_bins(probs, np.array([0, 1, 1, 1]), n_bins=5)
    >>> rb.count
    array([0., 0., 1., 2., 1.])
    """
    conf, outcome = _prepare(probs, labels, reliability)
    count, (sc, so), edges = binning.bin_sums(conf, conf, outcome, n_bins=n_bins, strategy=strategy)
    with np.errstate(invalid="ignore", divide="ignore"):
        return ReliabilityBins(accuracy=so / count, confidence=sc / count, count=count, edges=edges)


def _ece_from_sums(count, sum_conf, sum_out, norm: str) -> float:
    """The binned calibration error in ``norm`` from the per-bin count and sums of confidence and outcome."""
    n = count.sum()
    absgap_mass = np.abs(sum_out - sum_conf)  # |B_m| * |acc - conf|
    if norm == "l1":
        return float(absgap_mass.sum() / n)
    nonempty = count > 0
    gap = absgap_mass[nonempty] / count[nonempty]
    if norm == "l2":
        return float(np.sqrt(np.sum(count[nonempty] * gap**2) / n))
    return float(gap.max())


def _binned_error(conf, outcome, n_bins, strategy, norm) -> float:
    count, (sc, so), _ = binning.bin_sums(conf, conf, outcome, n_bins=n_bins, strategy=strategy)
    return _ece_from_sums(count, sc, so, norm)


# --------------------------------------------------------------------------- binned measures
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
    if p.ndim == 1:
        p = np.stack([1.0 - p, p], axis=1)
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


# --------------------------------------------------------------------------- kernel measures
def sece_exact_torch(confidence, correct, bandwidth: float = 0.05, chunk: int = 1024):
    r"""Exact, differentiable SECE in torch (the loss of chapter 5), O(n^2) in chunks.

    .. math:: \mathrm{SACC}_i = \frac{\sum_j K(c_i, c_j)\,a_j}{\sum_j K(c_i, c_j)},\quad
              K(c_i, c_j) = e^{-(c_i - c_j)^2 / 2h^2},\quad
              \mathrm{SECE} = \frac1n \sum_i |\mathrm{SACC}_i - c_i|

    Parameters
    ----------
    confidence : torch.Tensor of shape (n,)
        Top-label confidences; gradients flow through them.
    correct : torch.Tensor of shape (n,)
        1 where the prediction is correct, else 0.
    bandwidth : float, default=0.05
        The kernel bandwidth ``h``.
    chunk : int, default=1024
        Rows of the ``n x n`` kernel matrix held in memory at once.

    Returns
    -------
    torch.Tensor
        A scalar (0-dimensional) tensor.

    Examples
    --------
    >>> import torch
    >>> c = torch.tensor([0.6, 0.9], dtype=torch.float64)
    >>> float(sece_exact_torch(c, torch.tensor([1.0, 1.0], dtype=torch.float64)))  # mean of 1 - c
    0.25
    """
    import torch

    c = confidence.reshape(-1)
    a = correct.reshape(-1).to(c.dtype)
    rhs = torch.stack([a, torch.ones_like(a)], dim=1)  # numerator and denominator in one matmul
    total = c.new_zeros(())
    for start in range(0, c.shape[0], chunk):
        ci = c[start: start + chunk]
        num_den = kernels.gaussian_kernel_sums(ci, c, rhs, bandwidth)
        total = total + (num_den[:, 0] / num_den[:, 1] - ci).abs().sum()
    return total / c.shape[0]


def _sece_exact_numpy(c: np.ndarray, a: np.ndarray, bandwidth: float, chunk: int = 1024) -> float:
    """:func:`sece_exact_torch` in numpy, for where torch is not installed."""
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
        ``"exact"`` sums all n^2 pairs (:func:`sece_exact_torch`); ``"fast"`` bins onto a grid of spacing at
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
        torch = torch_or_none()
        if torch is None:  # the same sums in numpy
            return float(_sece_exact_numpy(conf, outcome, bandwidth))
        return float(sece_exact_torch(torch.from_numpy(conf), torch.from_numpy(outcome), bandwidth))
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


# --------------------------------------------------------------------------- proper scores
def _probs2d(probs):
    p = check_probs(probs)
    return np.stack([1.0 - p, p], axis=1) if p.ndim == 1 else p


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
SCORES = {"error": error, "nll": nll, "brier": brier}
#: Every calibration error: ``name -> fn(probs, labels, ..., reliability=...) -> float``.
CALIBRATION_ERRORS = {"ece": ece, "mce": mce, "ace": ace, "classwise_ece": classwise_ece,
                      "debiased_ece": debiased_ece, "sece": sece, "smooth_ece": smooth_ece}
#: Every measure of this module, in the column order of :func:`calibcourse.calibration.report.calibration_report`.
MEASURES = {**SCORES, **CALIBRATION_ERRORS}


# ------------------------------------------------------ resampling helpers (calibcourse.calibration.stats)
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
