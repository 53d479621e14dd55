"""What every measure shares: logits to probabilities, what is measured (top label or positive
class), the checked confidences and outcomes, the reliability bins."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from calibcourse.calibration import binning
from calibcourse.calibration._arrays import ece_from_sums as _ece_from_sums
from calibcourse.calibration._arrays import softmax_rows
from calibcourse.calibration._validation import (
    assumed_checked,
    check_choice,
    check_labels,
    check_logits,
    check_prob_values,
    check_probs,
    input_eps,
    is_torch,
    probs_array,
    to_numpy,
)

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
    if z.ndim == 2 and axis in (-1, 1):
        return softmax_rows(z)
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
    if assumed_checked():
        return (p, *top_label(p))
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


def _binned_error(conf, outcome, n_bins, strategy, norm) -> float:
    count, (sc, so), _ = binning.bin_sums(conf, conf, outcome, n_bins=n_bins, strategy=strategy)
    return _ece_from_sums(count, sc, so, norm)
