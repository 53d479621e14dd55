"""Input checks shared by metrics, calibrators and plots.

Every public function validates up front and raises a ``ValueError`` that names
the argument and says what is wrong, in the style of scikit-learn.

Each array is value-checked once (NaN and inf, the range of probabilities, their row sums, the
labels' range), where the user hands it over. A public function that has checked its arrays calls
the toolkit's other public functions on them inside :func:`checked`, where their value checks
are skipped (scikit-learn's ``config_context(assume_finite=True)`` and
``prefer_skip_nested_validation`` work alike): a report, a bootstrap interval or a calibrator's
``fit`` then reads the data once to check it, not once per measure, resample or fold. The
precision of the input (its dtype's epsilon) is read where the data comes in, before any
conversion, so a bfloat16 tensor's rows get bfloat16's tolerance and its float32 copy is never
checked again.
"""
from __future__ import annotations

import contextvars
import numbers
from contextlib import contextmanager

import numpy as np

#: Rows of a probability matrix must sum to 1 within this absolute tolerance, or within
#: ``K * eps`` of the input's dtype where that is larger (:func:`sum_tolerance`). The one
#: tolerance of "these are probabilities": the metrics' checks, the calibrators' and the
#: report's detection of probabilities all use it (probabilities written to a file with four
#: decimals sum to 1 within K * 5e-5).
SUM_TOL = 1e-3

_CHECKED = contextvars.ContextVar("calibcourse_checked", default=False)


@contextmanager
def checked():
    """Inside, the toolkit's public functions take the arrays they are given as checked.

    Their type and shape checks and conversions still run; the value checks (a pass over the
    data: NaN and inf, the range of probabilities, row sums, the labels' range) do not. For the
    toolkit's own public functions, after they have checked their inputs: a caller outside the
    toolkit gets every check.

    Examples
    --------
    >>> with checked():
    ...     assumed_checked()
    True
    >>> assumed_checked()
    False
    """
    token = _CHECKED.set(True)
    try:
        yield
    finally:
        _CHECKED.reset(token)


def assumed_checked() -> bool:
    """Whether the caller is inside :func:`checked` (the value checks are skipped)."""
    return _CHECKED.get()


#: The machine epsilon of the low-precision dtypes that numpy may not know (torch's, ml_dtypes')
_LOW_EPS = {"bfloat16": 2.0**-7, "float16": 2.0**-10}


def input_eps(x) -> float:
    """The machine epsilon of the dtype ``x`` came in (float64's for lists and integers).

    A torch ``bfloat16`` tensor is read as float32 (numpy has no bfloat16), so its precision is
    taken from the input, not from the converted array.
    """
    name = str(getattr(x, "dtype", "")).replace("torch.", "")
    if name in _LOW_EPS:
        return _LOW_EPS[name]
    try:
        dt = np.dtype(getattr(x, "dtype", np.float64))
    except TypeError:
        try:  # a torch dtype: torch.float32 is numpy's "float32"
            dt = np.dtype(name)
        except TypeError:
            return float(np.finfo(np.float64).eps)
    return float(np.finfo(dt).eps) if dt.kind == "f" else float(np.finfo(np.float64).eps)


def sum_tolerance(eps: float, n_classes: int) -> float:
    """How far from 1 a row of ``n_classes`` probabilities of precision ``eps`` may sum.

    ``max(SUM_TOL, n_classes * eps)``: rounding each of the K probabilities of a row to the
    dtype, and summing them in it, moves the sum by at most about ``K * eps`` (float16:
    ``K * 9.8e-4``, bfloat16: ``K * 7.8e-3``); for float32 and float64 the fixed ``SUM_TOL``
    applies up to K = 8,388 and K = 4.5e12.

    Parameters
    ----------
    eps : float
        The machine epsilon of the probabilities' dtype (:func:`input_eps`).
    n_classes : int
        K, the number of columns.

    Returns
    -------
    float
        The absolute tolerance of a row sum.

    Examples
    --------
    >>> sum_tolerance(np.finfo(np.float64).eps, 10), round(sum_tolerance(np.finfo(np.float16).eps, 10), 5)
    (0.001, 0.00977)
    """
    return max(SUM_TOL, n_classes * float(eps))


def to_numpy(x, name: str) -> np.ndarray:
    """Return ``x`` (numpy array, torch tensor, list) as a numpy array without copying when possible."""
    if x is None:
        raise ValueError(f"{name} is None; expected an array")
    if hasattr(x, "tocsr") or type(x).__module__.startswith("scipy.sparse"):
        raise TypeError(f"{name}: sparse input is not supported (scores are dense); pass a dense array "
                        "(X.toarray())")
    if hasattr(x, "detach") and hasattr(x, "cpu"):  # torch tensor, no torch import needed
        x = x.detach().cpu()
        if str(x.dtype) == "torch.bfloat16":
            x = x.float()
        x = x.numpy()
    arr = np.asarray(x)
    if arr.dtype.name == "bfloat16":  # ml_dtypes' bfloat16 (jax): numpy computes in float32
        arr = arr.astype(np.float32)
    if arr.dtype == object:
        raise ValueError(f"{name} must be numeric; got an array of Python objects")
    return arr


def check_finite(arr: np.ndarray, name: str) -> None:
    if arr.dtype.kind in "fc" and not np.isfinite(arr).all():
        bad = ~np.isfinite(arr)
        kind = "NaN" if np.isnan(arr[bad]).any() else "inf"
        raise ValueError(f"{name} contains {kind} values ({int(bad.sum())} of {arr.size}); "
                         "calibration measures need finite numbers")


def check_probs(probs, name: str = "probs", allow_1d: bool = True, eps: float | None = None) -> np.ndarray:
    """Validate probabilities; return a float array of shape (n, K) or (n,).

    Shape (n,) is read as the probability of class 1 of a binary problem.
    Rows of an (n, K) array must sum to 1 within :func:`sum_tolerance` of the input's dtype
    (float16 and bfloat16 probabilities are accepted; they are computed on as they come, or
    as float32 for bfloat16). ``eps``: the machine epsilon of the dtype the data came in, where
    ``probs`` is already a converted copy (default: :func:`input_eps` of ``probs``). Inside
    :func:`checked` only the type and shape are checked.
    """
    p = probs_array(probs, name, allow_1d)
    if not _CHECKED.get():
        check_prob_values(p, name, p.min(), p.max(), row_sums=_row_sums if p.ndim == 2 else None,
                          eps=input_eps(probs) if eps is None else eps)
    return p


def probs_array(probs, name: str = "probs", allow_1d: bool = True) -> np.ndarray:
    """The type and shape checks of :func:`check_probs`: a float array of shape (n, K) or (n,), values unchecked."""
    p = to_numpy(probs, name)
    if p.dtype.kind not in "fiub":
        raise ValueError(f"{name} must be a numeric array; got dtype {p.dtype}")
    if p.dtype.kind != "f":
        p = p.astype(np.float64)
    if p.ndim == 1 and not allow_1d:
        raise ValueError(f"{name} must have shape (n, K); got shape {p.shape}")
    if p.ndim not in (1, 2):
        raise ValueError(f"{name} must have shape (n,) for binary or (n, K); got shape {p.shape}")
    if p.shape[0] == 0:
        raise ValueError(f"{name} is empty: at least one sample is needed")
    if p.ndim == 2 and p.shape[1] < 2:
        raise ValueError(f"{name} must have at least 2 columns (classes); got shape {p.shape}")
    return p


def check_prob_values(p: np.ndarray, name: str, lo: float, hi: float, row_sums=None, eps: float | None = None,
                      sum_range=None, tol: float | None = None) -> None:
    """The value checks of :func:`check_probs`, from the minimum ``lo``, the maximum ``hi`` and
    the row sums (an array, or a function of ``p`` that computes them; None for shape (n,)).
    ``eps``: the machine epsilon of the input's dtype (default: ``p``'s), for :func:`sum_tolerance`.
    ``sum_range``: the smallest and the largest row sum, where the caller has them already;
    ``row_sums`` is then called only if a row fails (to name it). ``tol``: the tolerance of a row
    sum, where the caller knows better than the dtype (probabilities written with few decimals)."""
    if not (np.isfinite(lo) and np.isfinite(hi)):
        check_finite(p, name)  # names NaN or inf and counts them
    if lo < 0 or hi > 1:
        raise ValueError(f"{name} must lie in [0, 1]; got values from {lo:g} to {hi:g} "
                         "(pass logits through calibcourse.calibration.metrics.softmax first)")
    if row_sums is not None:
        s = None
        if sum_range is None:
            s = row_sums(p) if callable(row_sums) else row_sums
            sum_range = (s.min(), s.max())
        eps = input_eps(p) if eps is None else eps
        k = p.shape[1]
        # the largest |s - 1| from the smallest and the largest sum, in float64: two fast passes
        # (a rounding of s - 1 keeps its order, so the test is the one on every row's |s - 1|)
        worst_dev = max(1.0 - float(sum_range[0]), float(sum_range[1]) - 1.0)
        tol = sum_tolerance(eps, k) if tol is None else tol
        held = next((name for name, e in _LOW_EPS.items() if e == eps), str(p.dtype))
        if worst_dev > tol:
            if s is None:
                s = row_sums(p) if callable(row_sums) else row_sums
            dev = np.abs(s.astype(np.float64) - 1.0)
            worst = int(dev.argmax())
            raise ValueError(f"rows of {name} must sum to 1 (tolerance {tol:g} for {held} with "
                             f"{k} classes); row {worst} sums to {s[worst]:.6g}")


def check_labels(labels, n: int, n_classes: int | None, name: str = "labels") -> np.ndarray:
    """Validate class labels of length ``n``; return them as int64 column indices in ``[0, n_classes)``.

    Integer labels (and whole-number floats, booleans) are the column indices themselves, never
    reinterpreted. Labels that are not numbers (strings, say) name the columns as a calibrator's
    ``classes_`` does: sorted, the i-th label is column i, so each of the ``n_classes`` classes
    must appear (:func:`encode_labels`). Inside :func:`checked` the value checks of numeric labels
    are skipped.

    Examples
    --------
    >>> check_labels([0, 2, 2], 3, 3)
    array([0, 2, 2])
    >>> check_labels(["dog", "cat", "dog"], 3, 2)
    array([1, 0, 1])
    """
    y = label_array(labels, name)
    if y.ndim == 2 and y.shape[1] == 1:
        y = y[:, 0]
    if y.ndim != 1:
        raise ValueError(f"{name} must have shape (n,); got shape {y.shape}")
    if y.shape[0] != n:
        raise ValueError(f"{name} has {y.shape[0]} entries but the predictions have {n}; "
                         "they must have the same length")
    if y.dtype.kind in "US":  # names of classes: sorted, they are the columns (a calibrator's classes_)
        if n_classes is None:
            return np.unique(y, return_inverse=True)[1].astype(np.int64).reshape(-1)
        found = np.unique(y)
        if found.size != n_classes:
            raise ValueError(f"{name} have {found.size} distinct names ({', '.join(map(str, found[:6]))}"
                             f"{', ...' if found.size > 6 else ''}) but the predictions have {n_classes} columns: "
                             "names, sorted, are the columns, so each class must appear; give the columns' "
                             "indices instead")
        return np.searchsorted(found, y).astype(np.int64)
    if y.dtype.kind not in "biuf":
        raise ValueError(f"{name} must be integer class indices or class names; got dtype {y.dtype}")
    if not _CHECKED.get():
        _label_values(y, n_classes, name)
    return y.astype(np.int64, copy=False)


def _label_values(y: np.ndarray, n_classes: int | None, name: str) -> None:
    """The value checks of :func:`check_labels`: whole numbers in ``[0, n_classes)``."""
    if y.dtype.kind == "f":
        check_finite(y, name)
        if not np.all(np.equal(np.mod(y, 1), 0)):
            raise ValueError(f"{name} must be integer class indices; got non-integer values "
                             f"such as {y[np.mod(y, 1) != 0][0]!r}")
    if y.dtype.kind == "b" or not y.size:
        return
    lo, hi = y.min(), y.max()
    hint = ("integer labels are the columns' indices here; labels that name classes (1..K, -1/1) are mapped "
            "first, e.g. with numpy.searchsorted(calibrator.classes_, labels)")
    if lo < 0:
        raise ValueError(f"{name} must be >= 0; got {lo:g} ({hint})")
    if n_classes is not None and hi >= n_classes:
        raise ValueError(f"{name} must be < the number of classes ({n_classes}); got {hi:g} ({hint})")


def label_array(labels, name: str = "labels") -> np.ndarray:
    """``labels`` as a numpy array: a torch tensor converted, an array of Python strings (a pandas
    column, say) as a string array, of Python numbers as numbers; anything else is an error."""
    if is_torch(labels):
        return to_numpy(labels, name)
    if labels is None:
        raise ValueError(f"{name} is None; expected an array")
    lab = np.asarray(labels)
    if lab.dtype == object:
        items = lab.ravel().tolist()
        if items and all(isinstance(v, str) for v in items):
            lab = lab.astype(str)
        elif items and all(isinstance(v, numbers.Real) for v in items):
            lab = lab.astype(np.float64)
        else:
            raise ValueError(f"{name} must be class labels (numbers or strings, not a mix of them); got an "
                             "array of Python objects")
    if lab.dtype.kind == "c":
        raise ValueError(f"{name} must be class labels; got complex numbers")
    return lab


def is_int(value, low: int | None = None, high: int | None = None) -> bool:
    """Whether ``value`` is an integer (``int`` or numpy's, not a bool) within ``[low, high]``
    (:func:`check_int`'s test, for a list's elements)."""
    whole = isinstance(value, numbers.Integral) and not isinstance(value, (bool, np.bool_))
    return whole and (low is None or value >= low) and (high is None or value <= high)


def check_int(value, name: str, low: int | None = None, high: int | None = None) -> int:
    """An integer argument within ``[low, high]``, as ``int``: the one integer check of the package.

    Python's ``int`` and numpy's integers are accepted alike (``np.int64(3)`` is 3), a bool or a
    float is not (``True`` and ``3.0`` are refused, as scikit-learn's ``Interval(Integral, ...)``
    refuses them).

    Parameters
    ----------
    value : object
        The argument.
    name : str
        Its name in the message.
    low, high : int, optional
        The smallest and the largest value allowed.

    Returns
    -------
    int

    Examples
    --------
    >>> check_int(np.int64(3), "folds", low=2)
    3
    >>> check_int(3.0, "folds", low=2)
    Traceback (most recent call last):
    ...
    ValueError: folds must be an integer >= 2; got 3.0
    >>> check_int(7, "chapter", low=1, high=6)
    Traceback (most recent call last):
    ...
    ValueError: chapter must be an integer from 1 to 6; got 7
    """
    if is_int(value, low, high):
        return int(value)
    bounds = ("" if low is None and high is None else f" >= {low}" if high is None else f" <= {high}"
              if low is None else f" from {low} to {high}")
    raise ValueError(f"{name} must be an integer{bounds}; got {value!r}")


def check_n_bins(n_bins, name: str = "n_bins") -> int:
    """A number of bins: an integer >= 1 (:func:`check_int`)."""
    return check_int(n_bins, name, low=1)


def check_choice(value, choices, name: str):
    if value not in choices:
        raise ValueError(f"{name} must be one of {', '.join(map(repr, choices))}; got {value!r}")
    return value


def check_logits(logits, name: str = "logits", ndim: int | None = 2,
                 reject_probabilities: bool = False, keep_float32: bool = False) -> np.ndarray:
    """Validate real-valued scores (logits); return float64 (float32 kept with ``keep_float32``).
    ``ndim=None`` accepts any rank >= 1.

    With ``reject_probabilities``, scores that can be told to be probabilities are
    an error: a vector ``(n,)`` whose values all lie in [0, 1], or a matrix
    ``(n, K)`` whose rows all lie in [0, 1] and sum to 1 (within ``SUM_TOL``).
    """
    z = to_numpy(logits, name)
    if z.dtype.kind == "c":
        raise ValueError(f"{name}: Complex data not supported; scores are real numbers")
    if z.dtype.kind not in "fiu":
        raise ValueError(f"{name} must be a numeric array; got dtype {z.dtype}")
    if not (keep_float32 and z.dtype == np.float32):
        z = z.astype(np.float64, copy=False)
    if ndim is None and z.ndim == 0:
        raise ValueError(f"{name} must be an array; got a scalar")
    if ndim is not None and z.ndim != ndim:
        shape = "(n, K)" if ndim == 2 else "(n,)"
        raise ValueError(f"{name} must have shape {shape}; got shape {z.shape}")
    if z.shape[0] == 0:
        raise ValueError(f"{name} is empty: at least one sample is needed")
    if not _CHECKED.get():
        _logit_values(z, name, reject_probabilities)
    return z


def _logit_values(z: np.ndarray, name: str, reject_probabilities: bool) -> None:
    """The value checks of :func:`check_logits`: finite, and (``reject_probabilities``) not probabilities."""
    lo, hi = z.min(), z.max()
    if not (np.isfinite(lo) and np.isfinite(hi)):
        check_finite(z, name)  # names NaN or inf and counts them
    if reject_probabilities and lo >= 0 and hi <= 1:
        if z.ndim == 1:
            raise ValueError(f"{name} all lie in [0, 1], as probabilities do, but logits were expected; "
                             "give probabilities of class 1 to a calibrator with input_type='probabilities'")
        if z.ndim == 2 and np.abs(_row_sums(z) - 1.0).max() <= SUM_TOL:
            raise ValueError(f"{name} look like probabilities, not logits: every row lies in [0, 1] and "
                             "sums to 1; pass the network's logits (or numpy.log of the probabilities)")


def _row_sums(a: np.ndarray) -> np.ndarray:
    """The sums of the rows of ``a``, in float64."""
    return a.sum(axis=1, dtype=np.float64)


def is_torch(x) -> bool:
    return type(x).__module__.startswith("torch")


def check_sample_weight(sample_weight, n: int, name: str = "sample_weight"):
    """Validate per-sample weights of length ``n`` (finite, >= 0, a positive sum); None stays None.

    Examples
    --------
    >>> check_sample_weight([1, 2, 0], 3)
    array([1., 2., 0.])
    >>> check_sample_weight([1, -1], 2)
    Traceback (most recent call last):
    ...
    ValueError: sample_weight must be finite and >= 0; its smallest value is -1
    """
    if sample_weight is None:
        return None
    w = to_numpy(sample_weight, name)
    if w.ndim != 1 or w.shape[0] != n:
        raise ValueError(f"{name} must have shape ({n},), one weight per sample; got shape {w.shape}")
    if not np.issubdtype(w.dtype, np.number) or np.issubdtype(w.dtype, np.complexfloating):
        raise ValueError(f"{name} must be real numbers; got dtype {w.dtype}")
    w = w.astype(np.float64)
    if not _CHECKED.get():
        _weight_values(w, name)
    return w


def _weight_values(w: np.ndarray, name: str) -> None:
    """The value checks of :func:`check_sample_weight`: finite, >= 0, a positive sum."""
    if not np.isfinite(w).all() or (w < 0).any():
        bad = w[~np.isfinite(w)][0] if not np.isfinite(w).all() else w.min()
        raise ValueError(f"{name} must be finite and >= 0; its smallest value is {bad:g}")
    if not w.sum() > 0:
        raise ValueError(f"{name} sums to zero (every weight is zero): at least one sample needs a positive weight")
