"""The checks of Lab 1: the binned measures (per-bin statistics, ECE, MCE, the l2 error), and
the cases of inputs they share with Lab 4's class-wise ECE."""
from __future__ import annotations

import numpy as np

from calibcourse.calibration import metrics as M
from calibcourse.study.course.checks._harness import _as_float_array, _call, _close, _first_difference, _short, _start

__all__ = ["HINT_EDGES", "check_ece", "check_mce", "check_reliability_bins", "check_ece_l2"]


# ------------------------------------------------------------------ cases
def _random_cases(seed=0):
    rng = np.random.default_rng(seed)
    for n, k in ((50, 2), (300, 5), (1000, 10)):
        z = rng.normal(size=(n, k)) * 2.5
        p = M.softmax(z)
        y = np.where(rng.random(n) < 0.7, p.argmax(1), rng.integers(0, k, n))
        yield f"random probabilities, n={n}, K={k}", p, y


def _edge_cases(seed=0):
    """Top-label confidences exactly on bin edges and exactly 1.0; all samples in one bin; one class."""
    if seed == 0:  # top-label confidences 0.8, 0.6, 0.6, 0.8, 1.0, 0.5, 0.7 on the edges of 5 bins
        p_edges = np.array([[0.8, 0.2], [0.6, 0.4], [0.4, 0.6], [0.2, 0.8], [0.0, 1.0], [0.5, 0.5], [0.7, 0.3]])
        y_edges, m_edges = np.array([0, 1, 1, 0, 1, 0, 0]), 5
        p_one, y_one = np.tile([0.85, 0.1, 0.05], (20, 1)), np.r_[np.zeros(15, int), np.ones(5, int)]
    else:
        rng = np.random.default_rng(seed)
        m_edges = int(rng.integers(4, 13))
        edges = np.linspace(0.0, 1.0, m_edges + 1)
        c = rng.choice(edges[(edges >= 0.5)], size=int(rng.integers(8, 16)))
        c[:2] = 1.0
        c[2] = edges[-2]   # an edge below 1, whose bin the two conventions fill differently
        # beside every edge value, one inside the bin it closes, (e - 1/M, e]: Guo's bins put the two
        # together, bins closed on the left ([l, u)) apart; labels are drawn until the two conventions
        # give other ECEs, MCEs and l2 errors, so that a function with the wrong edges fails
        inner = np.unique(c) - 0.5 / m_edges
        c = np.r_[c, inner[inner > 0.5]]
        flip = rng.random(c.size) < 0.5
        p_edges = np.where(flip[:, None], np.c_[1 - c, c], np.c_[c, 1 - c])
        for _ in range(500):
            y_edges = rng.integers(0, 2, c.size)
            if _conventions_differ(p_edges, y_edges, m_edges):
                break
        top = float(rng.uniform(0.5, 0.95))
        p_one = np.tile([top, (1 - top) * 0.6, (1 - top) * 0.4], (int(rng.integers(10, 30)), 1))
        y_one = rng.integers(0, 3, p_one.shape[0])
    yield (f"confidences exactly on bin edges ({m_edges} bins), and exactly 1.0", p_edges, y_edges, m_edges)
    yield "every sample in one bin (other bins empty)", p_one, y_one, 10
    rng = np.random.default_rng(1 + seed)
    yield "one class only in the labels", M.softmax(rng.normal(size=(30, 3))), np.zeros(30, int), 15


def _gaps(p, y, n_bins, side):
    """Per-bin weight and |acc - conf| of the top label, bins closed on the right (``side="left"``,
    Guo et al.'s) or on the left (``side="right"``)."""
    conf, ok = p.max(1), (p.argmax(1) == y)
    idx = np.searchsorted(np.linspace(0, 1, n_bins + 1)[1:-1], conf, side=side)
    cnt = np.bincount(idx, minlength=n_bins)
    keep = cnt > 0
    gap = np.abs(np.bincount(idx, ok - conf, n_bins)[keep]) / cnt[keep]
    return cnt[keep] / len(conf), gap


def _summaries(p, y, n_bins, side="left") -> np.ndarray:
    """The ECE, MCE and l2 calibration error of :func:`_gaps`' bins."""
    w, g = _gaps(p, y, n_bins, side)
    return np.array([w @ g, g.max(), np.sqrt(w @ g**2)])


def _conventions_differ(p, y, n_bins) -> bool:
    """Whether bins closed on the left give another ECE, MCE and l2 error than Guo et al.'s."""
    return bool(np.all(np.abs(_summaries(p, y, n_bins, "left") - _summaries(p, y, n_bins, "right")) > 1e-6))


def _binned_cases(seed):
    cases = list(_edge_cases(seed)) + [(l, p, y, 15) for l, p, y in _random_cases(seed)]
    if seed:  # a hidden case at another bin count, where the ECE, MCE and l2 error all differ from 15 bins'
        rng = np.random.default_rng(seed)
        for attempt in range(1, 50):
            label, p, y = list(_random_cases(seed + attempt))[1]
            n_bins = int(rng.choice([5, 7, 8, 12, 20, 25]))
            if np.all(np.abs(_summaries(p, y, n_bins) - _summaries(p, y, 15)) > 1e-6):
                break
        cases.append((f"{label}, {n_bins} bins", p, y, n_bins))
    return cases


# ------------------------------------------------------------------ lab 1: binned measures
HINT_EDGES = ("use Guo et al.'s bins ((m-1)/M, m/M], closed on the right, with a confidence of "
              "exactly 0 in the first bin: np.searchsorted(edges[1:-1], conf, side='left') does it")


def _unweighted_ece(p, y, n_bins):
    rb = M.reliability_bins(p, y, n_bins=n_bins)
    keep = rb.count > 0
    return float(np.mean(np.abs(rb.gap[keep])))


def _check_binned(fn, name, reference, verbose, strict, seed, rules, what, hint_text=None, extra=()):
    report = _start(name, fn, verbose, strict, seed, rules)
    for label, p, y, n_bins in _binned_cases(seed) + list(extra):
        ok, got = _call(report, label, fn, p, y, n_bins)
        if not ok:
            continue
        expected = reference(p, y, n_bins=n_bins)
        good = _close(got, expected, 1e-6) and np.isfinite(float(got))
        hint = HINT_EDGES if "edges" in label else hint_text or (
            "weight each bin's |acc - conf| by its share of samples" if what == "ECE"
            else "take the maximum over non-empty bins only")
        detail = (f"probs[:, max] = {_short(p.max(1))}, labels = {_short(y)}, n_bins = {n_bins}\n"
                  f"expected {what} = {expected:.6f}, got {got}")
        if not good and what == "ECE":
            unweighted = _unweighted_ece(p, y, n_bins)
            if _close(got, unweighted, 1e-6) and abs(unweighted - expected) > 1e-6:
                detail += ("\nyour value is the UNWEIGHTED average of |acc - conf| over the non-empty bins: "
                           "a bin of 2 samples counts as much as a bin of 200")
                hint = "ECE = sum_m |B_m| / n * |acc(B_m) - conf(B_m)|: weight each bin by its share of samples"
        report.case(label, good, detail, hint, tol="1e-06, absolute")
    return report.done()


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
