"""The checks of Lab 1: the binned measures (per-bin statistics, ECE, MCE, the l2 error), on the cases
of :mod:`calibcourse.study.course.checks._binned` (which Lab 4's class-wise ECE shares)."""
from __future__ import annotations

import numpy as np

from calibcourse.calibration import metrics as M
from calibcourse.study.course.checks._binned import HINT_EDGES, _binned_cases, _check_binned
from calibcourse.study.course.checks._harness import _as_float_array, _call, _first_difference, _start

__all__ = ["HINT_EDGES", "check_ece", "check_mce", "check_reliability_bins", "check_ece_l2"]


def check_ece(fn, verbose: bool = False, *, seed: int = 0, strict: bool = False, rules: bool = True) -> bool:
    """Check ``fn(probs, labels, n_bins) -> float``: top-label ECE with Guo et al.'s bins.

    An unweighted average of the bin gaps (every non-empty bin counting the same) is
    recognized and named.

    Parameters
    ----------
    fn : callable
        The student's function, with the signature above.
    verbose : bool, default=False
        Also print the cases that passed.
    seed : int, default=0
        0: the cases shown in the lab; another value: other inputs (the graded hidden tests).
    strict : bool, default=False
        Print nothing; raise :class:`CheckFailure` with the report if a case fails.
    rules : bool, default=True
        Fail a function that calls what the exercise does not allow (:mod:`.rules`); False: check
        the numbers only.

    Returns
    -------
    bool
        True when every case passed (with ``strict=True``: True, or :class:`CheckFailure`).

    Examples
    --------
    >>> from calibcourse.study.course import checks
    >>> from calibcourse.calibration import metrics
    >>> checks.check_ece(lambda p, y, n: metrics.ece(p, y, n_bins=n), rules=False)
    check_ece: 6 passed, 0 failed -> all passed
    True
    >>> def unweighted_ece(p, y, n_bins):        # every non-empty bin counts the same
    ...     rb = metrics.reliability_bins(p, y, n_bins=n_bins)
    ...     return float(np.mean(np.abs(rb.gap[rb.count > 0])))
    >>> checks.check_ece(unweighted_ece, rules=False)  # doctest: +ELLIPSIS
      FAIL  confidences exactly on bin edges (5 bins), and exactly 1.0
            probs[:, max] = [0.8, 0.6, 0.6, 0.8, 1. , 0.5] ..., labels = [0, 1, 1, 0, 1, 0] ..., n_bins = 5
            expected ECE = 0.085714, got 0.06666666666666665
            your value is the UNWEIGHTED average of |acc - conf| over the non-empty bins: ...
            hint: ECE = sum_m |B_m| / n * |acc(B_m) - conf(B_m)|: weight each bin by its share of samples
    ...
    check_ece: 1 passed, 5 failed -> 5 failed
    False
    """
    return _check_binned(fn, "check_ece", M.ece, verbose, strict, seed, rules, "ECE")


def check_mce(fn, verbose: bool = False, *, seed: int = 0, strict: bool = False, rules: bool = True) -> bool:
    """Check ``fn(probs, labels, n_bins) -> float``: top-label MCE over non-empty bins.

    Parameters
    ----------
    fn : callable
        The student's function, with the signature above.
    verbose : bool, default=False
        Also print the cases that passed.
    seed : int, default=0
        0: the cases shown in the lab; another value: other inputs (the graded hidden tests).
    strict : bool, default=False
        Print nothing; raise :class:`CheckFailure` with the report if a case fails.
    rules : bool, default=True
        Fail a function that calls what the exercise does not allow (:mod:`.rules`); False: check
        the numbers only.

    Returns
    -------
    bool
        True when every case passed (with ``strict=True``: True, or :class:`CheckFailure`).

    Examples
    --------
    With ``strict=True``, as an autograder's test calls it, a check prints nothing and returns
    True, or raises with the report:

    >>> from calibcourse.study.course import checks
    >>> from calibcourse.calibration import metrics
    >>> checks.check_mce(lambda p, y, n: metrics.mce(p, y, n_bins=n), strict=True, rules=False)
    True
    >>> checks.check_mce(lambda p, y, n: metrics.ece(p, y, n_bins=n), strict=True, rules=False)
    Traceback (most recent call last):
        ...
    calibcourse.study.course.checks.CheckFailure: check_mce: 1 passed, 5 failed -> 5 failed
      FAIL  confidences exactly on bin edges (5 bins), and exactly 1.0
    ...
    """
    return _check_binned(fn, "check_mce", M.mce, verbose, strict, seed, rules, "MCE")


def check_reliability_bins(fn, verbose: bool = False, *, seed: int = 0, strict: bool = False,
                           rules: bool = True) -> bool:
    """Check ``fn(probs, labels, n_bins) -> (accuracy, confidence, count)`` per bin
    (NaN, or anything, for the accuracy and confidence of an empty bin; count 0).

    Parameters
    ----------
    fn : callable
        The student's function, with the signature above.
    verbose : bool, default=False
        Also print the cases that passed.
    seed : int, default=0
        0: the cases shown in the lab; another value: other inputs (the graded hidden tests).
    strict : bool, default=False
        Print nothing; raise :class:`CheckFailure` with the report if a case fails.
    rules : bool, default=True
        Fail a function that calls what the exercise does not allow (:mod:`.rules`); False: check
        the numbers only.

    Returns
    -------
    bool
        True when every case passed (with ``strict=True``: True, or :class:`CheckFailure`).

    Examples
    --------
    >>> from calibcourse.study.course import checks
    >>> from calibcourse.calibration import metrics
    >>> def per_bin(p, y, n_bins):
    ...     rb = metrics.reliability_bins(p, y, n_bins=n_bins)
    ...     return rb.accuracy, rb.confidence, rb.count
    >>> checks.check_reliability_bins(per_bin, rules=False)
    check_reliability_bins: 6 passed, 0 failed -> all passed
    True
    """
    report = _start("check_reliability_bins", fn, verbose, strict, seed, rules)
    hint = "return three arrays of length n_bins: accuracy, mean confidence and count per bin"
    for label, p, y, n_bins in _binned_cases(seed):
        ok, got = _call(report, label, fn, p, y, n_bins)
        if not ok:
            continue
        rb = M.reliability_bins(p, y, n_bins=n_bins)
        try:
            acc, conf, count = got
        except Exception as exc:
            report.case(label, False, f"expected (accuracy, confidence, count); got {got!r:.80} ({exc})", hint)
            continue
        problems = []
        nonempty = rb.count > 0
        for what, arr, ref in (("count", count, rb.count), ("accuracy", acc, rb.accuracy),
                               ("confidence", conf, rb.confidence)):
            arr, why = _as_float_array(arr, (n_bins,))
            if arr is None:
                problems.append(f"{what}: {why}")
                continue
            if what != "count":  # empty bins: anything goes
                arr, ref = np.where(nonempty, arr, 0.0), np.where(nonempty, ref, 0.0)
            diff = _first_difference(arr, ref, 1e-8, lambda i, e=rb.edges: f"bin ({e[i[0]]:.4g}, {e[i[0] + 1]:.4g}]")
            if diff:
                problems.append(f"{what}: {diff}")
        report.case(label, not problems, f"n_bins = {n_bins}; " + "\n".join(problems),
                    HINT_EDGES if "edges" in label else hint, tol="1e-08, absolute")
    return report.done()


def check_ece_l2(fn, verbose: bool = False, *, seed: int = 0, strict: bool = False, rules: bool = True) -> bool:
    r"""Check ``fn(probs, labels, n_bins) -> float``: the top-label l2 calibration error with
    Guo et al.'s bins, :math:`\sqrt{\sum_m \frac{|B_m|}{n}(\mathrm{acc}(B_m) - \mathrm{conf}(B_m))^2}`.

    Parameters
    ----------
    fn : callable
        The student's function, with the signature above.
    verbose : bool, default=False
        Also print the cases that passed.
    seed : int, default=0
        0: the cases shown in the lab; another value: other inputs (the graded hidden tests).
    strict : bool, default=False
        Print nothing; raise :class:`CheckFailure` with the report if a case fails.
    rules : bool, default=True
        Fail a function that calls what the exercise does not allow (:mod:`.rules`); False: check
        the numbers only.

    Returns
    -------
    bool
        True when every case passed (with ``strict=True``: True, or :class:`CheckFailure`).

    Examples
    --------
    >>> from calibcourse.study.course import checks
    >>> from calibcourse.calibration import metrics
    >>> checks.check_ece_l2(lambda p, y, n: metrics.ece(p, y, n_bins=n, norm="l2"), rules=False)
    check_ece_l2: 6 passed, 0 failed -> all passed
    True
    >>> checks.check_ece_l2(lambda p, y, n: metrics.ece(p, y, n_bins=n) ** 0.5, strict=True, rules=False)
    Traceback (most recent call last):
        ...
    calibcourse.study.course.checks.CheckFailure: check_ece_l2: 0 passed, 6 failed -> 6 failed
    ...
    """
    return _check_binned(fn, "check_ece_l2", lambda p, y, n_bins: M.ece(p, y, n_bins=n_bins, norm="l2"),
                         verbose, strict, seed, rules, "l2-ECE",
                         "the square root of the share-weighted sum of the SQUARED gaps of the non-empty bins")
