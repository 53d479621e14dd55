"""What a model's scores are: probabilities recognised by what they are, logits otherwise, and a
question where the numbers cannot tell."""
from __future__ import annotations

import warnings

import numpy as np

from calibcourse.calibration import metrics as M
from calibcourse.calibration._arrays import softmax_rows, two_columns, two_logits
from calibcourse.calibration._validation import checked

__all__ = ["KINDS", "as_logits_and_probs", "read_scores", "written_decimals", "row_sum_tolerance", "rounding_floor"]

#: The kinds of scores a report takes (``"auto"``: probabilities where they can be told to be, else logits).
KINDS = ("auto", "logits", "probs")

#: The most decimals :func:`written_decimals` looks for (more is full precision for this purpose: the
#: half-units of the 9th decimal of a row of 100 add up to 5e-8, far below the dtype's tolerance)
_MAX_DECIMALS = 8
#: Values looked at to find how many decimals the scores were written with
_SAMPLE = 100_000


def written_decimals(values) -> int | None:
    """The number of decimals the values were written with (rounded to), or None for full precision.

    The smallest ``d`` such that every value is a multiple of ``10**-d`` up to the dtype's
    rounding (up to 8 decimals; float32 values up to 4). Probabilities written to a file with
    two decimals (``0.35``, ``0.60``) give 2, wherever they came from: a ``.csv``, or an array
    that was rounded before it was saved.

    Parameters
    ----------
    values : numpy.ndarray
        The scores (at most 100,000 values are looked at, evenly spaced).

    Returns
    -------
    int or None

    Examples
    --------
    >>> written_decimals(np.array([0.35, 0.6, 0.05])), written_decimals(np.array([0.125, 0.5]))
    (2, 3)
    >>> written_decimals(np.array([1 / 3, 2 / 3])) is None
    True
    """
    v = np.asarray(values).ravel()
    if v.size > _SAMPLE:
        v = v[:: v.size // _SAMPLE]
    v = v.astype(np.float64)
    eps = float(np.finfo(values.dtype).eps) if values.dtype.kind == "f" else float(np.finfo(np.float64).eps)
    for d in range(_MAX_DECIMALS + 1):
        scale = 10.0**d
        if scale * eps > 1e-3:  # beyond the dtype's precision: every value would pass
            return None
        x = v * scale
        if np.all(np.abs(x - np.round(x)) <= max(1e-6, 8 * scale * eps)):
            return d
    return None


def row_sum_tolerance(values, n_classes: int) -> float:
    r"""How far from 1 a row of ``n_classes`` probabilities may sum, given how they were written.

    The dtype's tolerance (:func:`calibcourse.calibration._validation.sum_tolerance`: 1e-3 for
    float32 and float64), or, for values written with ``d`` decimals, ``K`` half-units of the
    last decimal, :math:`K \cdot 0.5 \cdot 10^{-d}`, where that is larger: each of the K
    values of a row is off by at most half a unit of its last decimal.

    Parameters
    ----------
    values : numpy.ndarray
        The probabilities as given.
    n_classes : int
        K.

    Returns
    -------
    float

    Examples
    --------
    >>> p = np.round(np.random.default_rng(0).dirichlet(np.ones(10), 5), 2)
    >>> row_sum_tolerance(p, 10)
    0.05
    """
    from calibcourse.calibration._validation import input_eps, sum_tolerance

    tol = sum_tolerance(input_eps(values), n_classes)
    d = written_decimals(values)
    if d is not None:
        tol = max(tol, n_classes * 0.5 * 10.0**-d * (1 + 1e-9))
    return tol


def rounding_floor(values) -> float | None:
    """What a written 0 stands for, among probabilities written with ``d`` decimals: a quarter of the
    last decimal's unit, the middle of the interval ``[0, 0.5 * 10**-d)`` that rounds to 0 (None for
    full precision, and for whole numbers: 0s and 1s given as probabilities are hard predictions).

    A probability rounded to two decimals (a file, or a random forest of 100 trees, whose
    probabilities are multiples of 0.01) says 0.00 for anything below 0.005; read as exactly 0,
    its logit would be log(1e-12) = -27.6, and a temperature or a Platt map fitted to such logits is
    pulled far from the rest of the data. :func:`as_logits_and_probs` gives it the logit of this
    floor instead (0.0025 for two decimals, a logit about 21.6 higher).

    Parameters
    ----------
    values : numpy.ndarray
        The probabilities as given.

    Returns
    -------
    float or None

    Examples
    --------
    >>> rounding_floor(np.array([[0.0, 0.25, 0.75]])), rounding_floor(np.array([[0.0, 1 / 3, 2 / 3]]))
    (0.0025, None)
    """
    d = written_decimals(values)
    return None if d is None or d == 0 else 0.25 * 10.0**-d  # 0s and 1s only: hard predictions, not rounding


def _rows_sum_to_one(s, scores) -> bool:
    """Whether every row of a score matrix sums to 1, within :func:`row_sum_tolerance`."""
    tol = row_sum_tolerance(scores if isinstance(scores, np.ndarray) else s, s.shape[1])
    return bool(np.all(np.abs(s.sum(1, dtype=np.float64) - 1) <= tol))


def _say(kind_name: str):
    """How a kind is named: ``--kind probs`` on the command line, ``kind='probs'`` in Python."""
    return (lambda k: f"{kind_name} {k}") if kind_name.startswith("--") else (lambda k: f"{kind_name}={k!r}")


def _ask(name: str, kind_name: str, why: str) -> ValueError:
    """The one-line question of :func:`as_logits_and_probs` where the scores cannot be told apart."""
    say = _say(kind_name)
    return ValueError(f"{name}: cannot tell whether these are probabilities or logits ({why}); say which with "
                      f"{say('probs')} or {say('logits')}")


def _detect(s, lo, hi, scores, name, kind_name):
    """``"probs"`` or ``"logits"`` by what the scores are, or the question of :func:`_ask`."""
    if lo < 0 or hi > 1:
        return "logits"  # a probability is never below 0 or above 1
    whole = bool(np.all(s == np.round(s)))
    if whole:  # 0s and 1s only: hard predictions, or integer logits such as [0, 0, 1]
        raise _ask(name, kind_name, "every value is 0 or 1: hard 0/1 probabilities, or whole-number logits")
    if s.ndim == 1:
        return "probs"  # one score in [0, 1] per sample: P(y = 1), as scikit-learn's
    sums = s.sum(1, dtype=np.float64)
    dev = float(np.abs(sums - 1).max())
    tol = row_sum_tolerance(scores if isinstance(scores, np.ndarray) else s, s.shape[1])
    if dev <= tol and tol < 0.5:
        return "probs"
    if dev <= tol:
        why = (f"every value lies in [0, 1], but written with so few decimals that rows summing to "
               f"{sums.min():.3g} to {sums.max():.3g} may be probabilities")
    else:
        lo, hi = f"{sums.min():.4g}", f"{sums.max():.4g}"
        span = f"sum to {lo}" if lo == hi else f"sum to between {lo} and {hi}"
        why = f"every value lies in [0, 1], but the rows {span}, not 1 (within {tol:.2g})"
    raise _ask(name, kind_name, why)


def as_logits_and_probs(scores, kind: str = "auto", name: str = "scores", _probs: bool = True,
                        kind_name: str = "kind"):
    """The logit matrix and the probability matrix, both ``(n, K)``, of a model's outputs.

    Probabilities are recognised by what they are: every value in [0, 1] and, for a matrix,
    every row summing to 1 within what its written precision allows (:func:`row_sum_tolerance`:
    probabilities written with two or three decimals are probabilities). A value below 0 or above
    1 makes them logits. Probabilities written with few decimals give logits for what they say:
    a written 0 counts as a quarter of the last decimal's unit (:func:`rounding_floor`) in the
    logits, not as :math:`10^{-12}`; the probabilities returned are the ones given.
    Where the numbers cannot tell (only 0s and 1s, which may be hard
    predictions or whole-number logits; rows in [0, 1] that do not sum to 1), ``kind="auto"``
    asks in one line (a ``ValueError`` naming ``kind_name``) instead of guessing.

    Parameters
    ----------
    scores : array_like of shape (n, K), (n,) or (n, 1)
        Logits or probabilities; ``(n,)`` is binary: P(y = 1), or the single logit of a sigmoid.
    kind : {"auto", "logits", "probs"}, default="auto"
        What ``scores`` are.
    name : str, default="scores"
        The name of ``scores`` in error messages (e.g. a command-line option).
    kind_name : str, default="kind"
        The name of ``kind`` in the question (the command line's ``--kind``).

    Returns
    -------
    logits : numpy.ndarray of shape (n, K)
        Logits (``log(p + 1e-12)`` for probabilities, :func:`calibcourse.calibration.metrics.probs_to_logits`,
        a written 0 floored first; ``[0, z]`` for a single logit ``z``).
    probs : numpy.ndarray of shape (n, K)
        ``softmax(logits)``, or the probabilities given, each row divided by its sum.
    kind : str
        ``"logits"`` or ``"probs"``: what ``scores`` were taken to be.

    Examples
    --------
    >>> z, p, kind = as_logits_and_probs(np.array([0.2, 0.9]))
    >>> kind, p
    ('probs', array([[0.8, 0.2],
           [0.1, 0.9]]))
    >>> as_logits_and_probs(np.array([[1.0, 0.0], [1 / 3, 2 / 3]]))[0].round(2)  # log(p + 1e-12), as scikit-learn
    array([[  0.  , -27.63],
           [ -1.1 ,  -0.41]])
    >>> as_logits_and_probs(np.array([[1.0, 0.0], [0.25, 0.75]]))[0].round(2)  # two decimals: 0.00 is < 0.005
    array([[-0.  , -5.99],
           [-1.39, -0.29]])
    >>> as_logits_and_probs(np.array([-1.0, 2.0]))[2]
    'logits'
    >>> as_logits_and_probs(np.array([[0.33, 0.33, 0.33], [0.5, 0.25, 0.25]]))[2]  # two decimals: 0.99 is 1
    'probs'
    >>> as_logits_and_probs(np.array([[0, 0, 1], [0, 1, 0]]))
    Traceback (most recent call last):
    ...
    ValueError: scores: cannot tell whether these are probabilities or logits (every value is 0 or 1: hard 0/1
    probabilities, or whole-number logits); say which with kind='probs' or kind='logits'
    """
    return read_scores(scores, kind, name, _probs, kind_name)[:3]


def read_scores(scores, kind: str = "auto", name: str = "scores", _probs: bool = True, kind_name: str = "kind"):
    """:func:`as_logits_and_probs`, and the probabilities as read: a written 0 floored (None where nothing is).

    Parameters
    ----------
    scores, kind, name, kind_name
        As for :func:`as_logits_and_probs`.

    Returns
    -------
    logits, probs, kind
        As :func:`as_logits_and_probs`.
    floor : float or None
        What a written 0 was read as (:func:`rounding_floor`), where one was.
    floored : numpy.ndarray of shape (n, K) or None
        ``softmax(logits)`` where probabilities written with few decimals had a 0
        (:func:`rounding_floor`), else None: what a report compares the calibrators with.

    Examples
    --------
    >>> read_scores(np.array([[1.0, 0.0], [0.25, 0.75]]))[4].round(4)
    array([[0.9975, 0.0025],
           [0.25  , 0.75  ]])
    """
    from scipy.special import expit

    from calibcourse.calibration._validation import check_choice, check_finite, check_logits, check_prob_values

    check_choice(kind, KINDS, "kind")
    told = kind
    if getattr(scores, "ndim", np.ndim(scores)) == 2 and np.shape(scores)[1] == 1:
        scores = scores[:, 0] if hasattr(scores, "shape") else np.asarray(scores)[:, 0]  # a binary model's column
    with checked():  # the type and the shape; the values once, below
        s = check_logits(scores, name, ndim=None, keep_float32=True)
    if s.ndim not in (1, 2) or (s.ndim == 2 and s.shape[1] < 2):
        raise ValueError(f"{name} must have shape (n, K) with K >= 2, or (n,) for a binary model; "
                         f"got shape {s.shape}")
    lo, hi = s.min(), s.max()
    if not (np.isfinite(lo) and np.isfinite(hi)):
        check_finite(s, name)
    if kind == "auto":
        kind = _detect(s, lo, hi, scores, name, kind_name)
    if kind == "probs":
        sums = s.sum(1, dtype=np.float64) if s.ndim == 2 else None
        tol = None if s.ndim == 1 else row_sum_tolerance(scores if isinstance(scores, np.ndarray) else s, s.shape[1])
        if lo < 0 or hi > 1:  # told probabilities, given logits: the option to change is the kind, not the data
            say = _say(kind_name)
            raise ValueError(f"{name} must lie in [0, 1] for {say('probs')}; got values from {lo:g} to {hi:g}: "
                             f"logits? then {say('logits')}, or leave {kind_name} out")
        check_prob_values(s, name, lo, hi, row_sums=sums, tol=tol)
        p = two_columns(s) if s.ndim == 1 else s / sums[:, None]
        floor = rounding_floor(s) if lo == 0 or (s.ndim == 1 and hi == 1) else None
        if floor is None:
            return M.probs_to_logits(p), p, "probs", None, None
        q = np.maximum(two_columns(s), floor)  # a written 0 stands for a value below half a unit of the last decimal
        q = q / q.sum(1, keepdims=True)
        return M.probs_to_logits(q), p, "probs", floor, q
    if told == "logits" and s.ndim == 2 and lo >= 0 and hi <= 1 and _rows_sum_to_one(s, scores):
        say = _say(kind_name)  # (a single logit in [0, 1] is no such coincidence: nothing is said)
        warnings.warn(f"{name}: read as logits, as told, but every value lies in [0, 1] and every row sums to 1, "
                      f"as probabilities do; if they are probabilities, say {say('probs')}", UserWarning, stacklevel=3)
    z = two_logits(s)
    if not _probs:  # the report: probabilities block by block, never the whole matrix
        return z, None, "logits", None, None
    p = two_columns(expit(s)) if s.ndim == 1 else softmax_rows(z)
    return z, p, "logits", None, None


def prob_blocks(z, p):
    """``(start, probabilities of a block of rows as float64)`` over all rows: from the probabilities
    ``p`` when given, else a softmax of each block of the logits ``z``."""
    a = p if p is not None else z
    rows = max(1, 2**20 // (a.shape[1] * 8))
    for i in range(0, a.shape[0], rows):
        if p is not None:
            yield i, p[i: i + rows].astype(np.float64)
        else:
            yield i, softmax_rows(z[i: i + rows].astype(np.float64))
