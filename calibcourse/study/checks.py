"""Automatic checks of the students' implementations in the labs (offline, no server).

Each ``check_*`` runs a student's function on fixed cases (edges included:
confidences of exactly 0 and 1, values on bin edges, empty bins, one class)
and random ones, compares it with the reference implementation of
``calibcourse``, prints what passed, what failed with the input that broke it
(for arrays: the first element that differs) and a hint, and returns True when
every case passed, False otherwise. A function that raises is a failure, never
a crash of the check; one that raises ``NotImplementedError`` (the student
edition's stub) is reported once as "not written yet", its cases not run. Where a wrong answer is a known variant (an unweighted average of
the bin gaps for the ECE, a leave-one-out average for the SECE, a temperature
fitted on the test split), the check names it.

Every check takes ``seed``: ``seed=0`` gives the cases a student sees in the
lab; the graded assignments (:mod:`calibcourse.tools.assignments`) run the same check
with another seed, on inputs the student has never seen, so that a function
that special-cases the visible inputs does not earn those points. ``strict=True``
prints nothing and raises :class:`CheckFailure` (an ``AssertionError``) with the
report of the failed cases, the form an autograder's test needs.
"""
from __future__ import annotations

import functools
import re

import numpy as np

from calibcourse.calibration import calibrators as C
from calibcourse.calibration import metrics as M
from calibcourse.calibration.synthetic import scaled_logits

__all__ = ["CheckFailure", "check_ece", "check_mce", "check_reliability_bins", "check_softmax_temperature",
           "check_temperature_scaling", "check_grid_temperature", "check_histogram_binning",
           "check_isotonic", "check_platt", "check_sece", "check_focal_loss", "check_flsd53",
           "check_ece_l2", "check_classwise_ece", "check_nll_temperature", "check_paired_difference"]


class CheckFailure(AssertionError):
    """A check called with ``strict=True`` failed; the message lists the failed cases and why."""


def _kind(label: str) -> str:
    """What kind of case ``label`` names, without its numbers (a hidden case's sizes, bin count or
    parameters are inputs the student does not see): ``"random probabilities, n=300, K=5"`` ->
    ``"random probabilities"``."""
    parts = [re.sub(r"\s*\([^)]*\d[^)]*\)", "", part).strip() for part in label.split(", ")]
    return ", ".join(p for p in parts if p and not re.search(r"\d", p))


class _Report:
    """The cases of one check. A hidden check (``seed`` other than 0) names each case by its kind
    and number only, and says of a failure what went wrong (the function raised, or its result
    differs) and the hint: never the case's inputs or the expected values, which a student would
    otherwise read in the grader's feedback."""

    def __init__(self, name: str, verbose: bool, strict: bool, hidden: bool = False):
        self.name, self.verbose, self.strict, self.hidden = name, verbose, strict, hidden
        self.passed, self.failed, self.lines = 0, 0, []
        self.unfilled = False  # the function raised NotImplementedError: the other cases are not run
        self.not_run = 0  # the cases not run because of it (the one that raised included)

    def _say(self, text: str):
        self.lines.append(text)
        if not self.strict:
            print(text)

    def case(self, label: str, ok: bool, detail: str = "", hint: str = ""):
        if self.hidden:
            kind = _kind(label)
            label = f"hidden case {self.passed + self.failed + 1}" + (f": {kind}" if kind else "")
            raised = re.match(r"the function raised (\w+: .*)", detail or "", re.S)
            # the exception's own words, its numbers masked (a shape or an index would describe the input)
            detail = (f"the function raised {re.sub(r'[0-9]+', 'N', raised.group(1))[:160]}" if raised
                      else "the result differs from the reference implementation's")
        if ok:
            self.passed += 1
            if self.verbose:
                self._say(f"  PASS  {label}")
            return
        self.failed += 1
        self._say(f"  FAIL  {label}")
        if detail:
            self._say("        " + detail.replace("\n", "\n        "))
        if hint:
            self._say(f"        hint: {hint}")

    def done(self) -> bool:
        if self.unfilled and not (self.passed or self.failed):
            summary = f"{self.name}: not written yet, its {self.not_run} cases not run"
        elif self.unfilled:
            summary = (f"{self.name}: {self.passed} passed, {self.failed} failed, then NotImplementedError: "
                       f"{self.not_run} cases not run")
        else:
            verdict = "all passed" if self.failed == 0 else f"{self.failed} failed"
            summary = f"{self.name}: {self.passed} passed, {self.failed} failed -> {verdict}"
        if self.strict:
            if self.failed or self.unfilled:
                raise CheckFailure("\n".join([summary] + self.lines))
            return True
        print(summary)
        return self.failed == 0 and not self.unfilled


def _start(name: str, fn, verbose: bool, strict: bool, seed) -> _Report:
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise ValueError(f"seed must be a non-negative integer; got {seed!r}")
    report = _Report(name, verbose, strict, hidden=seed != 0)
    if not callable(fn):
        report.case("the function to check", False,
                    f"fn must be a function; got {fn!r}",
                    "run the exercise cell that defines it (and keep its name), then this check")
    return report


def _call(report, label, fn, *args, **kwargs):
    if not callable(fn):
        return False, None
    if report.unfilled:
        report.not_run += 1
        return False, None
    try:
        return True, fn(*args, **kwargs)
    except NotImplementedError:
        report.unfilled = True
        report.not_run += 1
        return False, None
    except Exception as exc:  # a bug in the student's code is a failed case, not a crash
        report.case(label, False, f"the function raised {type(exc).__name__}: {exc}")
        return False, None


def _short(a, n=6):
    a = np.asarray(a)
    return np.array2string(a.ravel()[:n], precision=4, separator=", ") + (" ..." if a.size > n else "")


def _as_float_array(got, shape):
    """``got`` as a float array of ``shape``, or a sentence saying why it is not one."""
    try:
        arr = np.asarray(got.detach().cpu() if hasattr(got, "detach") else got, dtype=float)
    except Exception as exc:
        return None, f"the result is not an array of numbers ({type(exc).__name__}: {exc}); got {got!r:.80}"
    if arr.shape != tuple(shape):
        return None, f"expected an array of shape {tuple(shape)}, got shape {arr.shape}"
    return arr, ""


def _first_difference(got, expected, atol, where=None):
    """The first element where ``got`` and ``expected`` differ by more than ``atol`` (NaNs equal),
    as a sentence; ``where(index)`` describes the input at that index. None if none differs."""
    bad = ~np.isclose(got, expected, atol=atol, rtol=0, equal_nan=True)
    if not bad.any():
        return None
    idx = tuple(int(i) for i in np.argwhere(bad)[0])
    at = idx[0] if len(idx) == 1 else idx
    text = (f"{int(bad.sum())} of {bad.size} values differ; the first at index {at}: "
            f"expected {expected[idx]:.6g}, got {got[idx]:.6g}")
    return text + (f" ({where(idx)})" if where else "")


def _close(got, expected, atol):
    try:
        got = got.detach() if hasattr(got, "detach") else got
        return got is not None and abs(float(got) - expected) < atol
    except (TypeError, ValueError):
        return False


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


def _classwise(p, y, n_bins, side):
    """The class-wise ECE with bins closed on the right (``side="left"``) or on the left."""
    out = []
    for k in range(p.shape[1]):
        idx = np.searchsorted(np.linspace(0, 1, n_bins + 1)[1:-1], p[:, k], side=side)
        out.append(np.abs(np.bincount(idx, (y == k) - p[:, k], n_bins)).sum() / len(y))
    return float(np.mean(out))


def _classwise_edge_case(seed):
    """A hidden case for the class-wise ECE: class 0's probability exactly on bin edges (true class 0)
    beside a value inside the same bin (true class 1), so that Guo's bins and bins closed on the left
    give other class-wise ECEs; with random rows around them."""
    rng = np.random.default_rng(700 + seed)
    n_bins = int(rng.integers(4, 11))
    edges = np.linspace(0, 1, n_bins + 1)[1:-1]
    e = np.r_[edges, edges - 0.5 / n_bins]
    rows = np.c_[e, (1 - e) * 0.6, (1 - e) * 0.4]
    labels = np.r_[np.zeros(edges.size, int), np.ones(edges.size, int)]
    z = rng.normal(size=(40, 3)) * 2
    p = np.r_[rows, M.softmax(z)]
    y = np.r_[labels, rng.integers(0, 3, 40)]
    for _ in range(100):   # the random rows' labels redrawn until the two conventions differ
        if abs(_classwise(p, y, n_bins, "left") - _classwise(p, y, n_bins, "right")) > 1e-6:
            break
        y[edges.size * 2:] = rng.integers(0, 3, 40)
    return f"class probabilities exactly on bin edges ({n_bins} bins)", p, y, n_bins


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


def _check_binned(fn, name, reference, verbose, strict, seed, what, hint_text=None, extra=()):
    report = _start(name, fn, verbose, strict, seed)
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
        report.case(label, good, detail, hint)
    return report.done()


def check_ece(fn, verbose: bool = False, *, seed: int = 0, strict: bool = False) -> bool:
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

    Returns
    -------
    bool
        True when every case passed (with ``strict=True``: True, or :class:`CheckFailure`).

    Examples
    --------
    >>> from calibcourse.study import checks
    >>> from calibcourse.calibration import metrics
    >>> checks.check_ece(lambda p, y, n: metrics.ece(p, y, n_bins=n))
    check_ece: 6 passed, 0 failed -> all passed
    True
    >>> def unweighted_ece(p, y, n_bins):        # every non-empty bin counts the same
    ...     rb = metrics.reliability_bins(p, y, n_bins=n_bins)
    ...     return float(np.mean(np.abs(rb.gap[rb.count > 0])))
    >>> checks.check_ece(unweighted_ece)  # doctest: +ELLIPSIS
      FAIL  confidences exactly on bin edges (5 bins), and exactly 1.0
            probs[:, max] = [0.8, 0.6, 0.6, 0.8, 1. , 0.5] ..., labels = [0, 1, 1, 0, 1, 0] ..., n_bins = 5
            expected ECE = 0.085714, got 0.06666666666666665
            your value is the UNWEIGHTED average of |acc - conf| over the non-empty bins: ...
            hint: ECE = sum_m |B_m| / n * |acc(B_m) - conf(B_m)|: weight each bin by its share of samples
    ...
    check_ece: 1 passed, 5 failed -> 5 failed
    False
    """
    return _check_binned(fn, "check_ece", M.ece, verbose, strict, seed, "ECE")


def check_mce(fn, verbose: bool = False, *, seed: int = 0, strict: bool = False) -> bool:
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

    Returns
    -------
    bool
        True when every case passed (with ``strict=True``: True, or :class:`CheckFailure`).

    Examples
    --------
    With ``strict=True``, as an autograder's test calls it, a check prints nothing and returns
    True, or raises with the report:

    >>> from calibcourse.study import checks
    >>> from calibcourse.calibration import metrics
    >>> checks.check_mce(lambda p, y, n: metrics.mce(p, y, n_bins=n), strict=True)
    True
    >>> checks.check_mce(lambda p, y, n: metrics.ece(p, y, n_bins=n), strict=True)
    Traceback (most recent call last):
        ...
    calibcourse.study.checks.CheckFailure: check_mce: 1 passed, 5 failed -> 5 failed
      FAIL  confidences exactly on bin edges (5 bins), and exactly 1.0
    ...
    """
    return _check_binned(fn, "check_mce", M.mce, verbose, strict, seed, "MCE")


def check_reliability_bins(fn, verbose: bool = False, *, seed: int = 0, strict: bool = False) -> bool:
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

    Returns
    -------
    bool
        True when every case passed (with ``strict=True``: True, or :class:`CheckFailure`).

    Examples
    --------
    >>> from calibcourse.study import checks
    >>> from calibcourse.calibration import metrics
    >>> def per_bin(p, y, n_bins):
    ...     rb = metrics.reliability_bins(p, y, n_bins=n_bins)
    ...     return rb.accuracy, rb.confidence, rb.count
    >>> checks.check_reliability_bins(per_bin)
    check_reliability_bins: 6 passed, 0 failed -> all passed
    True
    """
    report = _start("check_reliability_bins", fn, verbose, strict, seed)
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
                    HINT_EDGES if "edges" in label else hint)
    return report.done()


# ------------------------------------------------------------------ lab 2: temperature scaling
def _logit_cases(seed):
    rng = np.random.default_rng(100 + seed)
    yield "random logits, K=10", rng.normal(size=(200, 10)) * 3, float(rng.choice([0.5, 1.5, 2.0]))
    yield "random logits, K=2", rng.normal(size=(50, 2)) * 4, float(rng.choice([0.25, 3.0]))
    big = rng.normal(size=(20, 5)) * 10
    big[:, 0] += 1000.0 * (1 + seed % 3)  # exp(1000) overflows: subtract the row maximum first
    yield "large logits (about 1000: exp overflows)", big, 0.7
    yield "one sample", rng.normal(size=(1, 4)), 1.0


def check_softmax_temperature(fn, verbose: bool = False, *, seed: int = 0, strict: bool = False) -> bool:
    """Check ``fn(logits, temperature) -> probabilities``: ``softmax(logits / T)`` row by row,
    finite for logits of about 1000.

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

    Returns
    -------
    bool
        True when every case passed (with ``strict=True``: True, or :class:`CheckFailure`).

    Examples
    --------
    >>> from calibcourse.study import checks
    >>> from calibcourse.calibration import metrics
    >>> checks.check_softmax_temperature(lambda z, t: metrics.softmax(z / t))
    check_softmax_temperature: 4 passed, 0 failed -> all passed
    True
    >>> def naive_softmax(z, t):                   # no max subtracted: exp(1000) overflows
    ...     with np.errstate(over="ignore", invalid="ignore"):
    ...         e = np.exp(z / t)
    ...         return e / e.sum(axis=1, keepdims=True)
    >>> checks.check_softmax_temperature(naive_softmax)  # doctest: +ELLIPSIS
      FAIL  large logits (about 1000: exp overflows), T = 0.7
            20 of 100 values differ; the first at index (0, 0): expected 1, got nan (logits of that row ...)
            hint: exp of a logit of 1000 is inf: subtract each row's maximum before exp (it cancels)
    check_softmax_temperature: 3 passed, 1 failed -> 1 failed
    False
    """
    report = _start("check_softmax_temperature", fn, verbose, strict, seed)
    for label, z, t in _logit_cases(seed):
        label = f"{label}, T = {t}"
        ok, got = _call(report, label, fn, z, t)
        if not ok:
            continue
        expected = M.softmax(z / t)
        arr, why = _as_float_array(got, expected.shape)
        diff = why or _first_difference(arr, expected, 1e-9, lambda i: f"logits of that row {_short(z[i[0]])}")
        hint = ("exp of a logit of 1000 is inf: subtract each row's maximum before exp (it cancels)"
                if "large" in label else "divide the logits by T, exponentiate, normalize each row to sum 1")
        report.case(label, not diff, diff or "", hint)
    return report.done()


def _shifted_logits(seed):
    z, y = scaled_logits(1500, 10, factor=1.0, spread=1.5, seed=seed)
    # validation: overconfident by 2.5; test: by 1.5 -- the two splits want different temperatures
    return 2.5 * z[:800], y[:800], 1.5 * z[800:], y[800:]


def check_temperature_scaling(fn, verbose: bool = False, *, seed: int = 0, strict: bool = False) -> bool:
    """Check ``fn(val_logits, val_labels, test_logits, test_labels) -> test probabilities``:
    T fitted by NLL on the validation split only, applied to the test logits.

    The two splits are built to need different temperatures, so fitting on the test split
    (a leak) is told apart from fitting on the validation split.

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

    Returns
    -------
    bool
        True when every case passed (with ``strict=True``: True, or :class:`CheckFailure`).

    Examples
    --------
    >>> from calibcourse.study import checks
    >>> from calibcourse.calibration.calibrators import TemperatureScaling
    >>> def scaled(zv, yv, zt, yt):
    ...     return TemperatureScaling().fit(zv, yv).predict_proba(zt)
    >>> checks.check_temperature_scaling(scaled)
    check_temperature_scaling: 2 passed, 0 failed -> all passed
    True
    >>> def leaky(zv, yv, zt, yt):                 # fitted on the test split
    ...     return TemperatureScaling().fit(zt, yt).predict_proba(zt)
    >>> checks.check_temperature_scaling(leaky)  # doctest: +ELLIPSIS
      FAIL  overconfident logits, case 1
            your probabilities match T = 1.388, fitted on the TEST split; the validation split gives T = 2.524
            hint: fit T on (val_logits, val_labels) only; the test labels are for evaluation
    ...
    check_temperature_scaling: 0 passed, 2 failed -> 2 failed
    False
    """
    report = _start("check_temperature_scaling", fn, verbose, strict, seed)
    for s in (2 * seed, 2 * seed + 1):
        zv, yv, zt, yt = _shifted_logits(s)
        label = f"overconfident logits, case {s - 2 * seed + 1}"
        ok, got = _call(report, label, fn, zv, yv, zt, yt)
        if not ok:
            continue
        ref = C.TemperatureScaling().fit(zv, yv)
        leak = C.TemperatureScaling().fit(zt, yt)
        expected = ref.predict_proba(zt)
        arr, why = _as_float_array(got, expected.shape)
        if arr is not None and np.abs(arr - leak.predict_proba(zt)).max() < 2e-3:
            report.case(label, False, f"your probabilities match T = {leak.temperature_:.3f}, fitted on the "
                        f"TEST split; the validation split gives T = {ref.temperature_:.3f}",
                        "fit T on (val_logits, val_labels) only; the test labels are for evaluation")
            continue
        diff = why or _first_difference(arr, expected, 2e-3)
        report.case(label, not diff, f"expected T = {ref.temperature_:.3f}; {diff}",
                    "minimize the NLL of softmax(z / T) over T > 0 (e.g. scipy.optimize."
                    "minimize_scalar on log T); a grid with a coarse step is not precise enough")
    return report.done()


def check_grid_temperature(fn, verbose: bool = False, *, seed: int = 0, strict: bool = False) -> bool:
    """Check ``fn(val_logits, val_labels, temperatures, n_bins) -> T``: the temperature of
    ``temperatures`` whose ``softmax(val_logits / T)`` has the lowest validation ECE (the first
    one on ties), the hand search. The NLL's optimum on the grid is recognized and named.

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

    Returns
    -------
    bool
        True when every case passed (with ``strict=True``: True, or :class:`CheckFailure`).

    Examples
    --------
    >>> from calibcourse.study import checks
    >>> from calibcourse.calibration import metrics
    >>> def grid_search(zv, yv, temperatures, n_bins):
    ...     eces = [metrics.ece(metrics.softmax(zv / t), yv, n_bins=n_bins) for t in temperatures]
    ...     return temperatures[int(np.argmin(eces))]
    >>> checks.check_grid_temperature(grid_search)
    check_grid_temperature: 2 passed, 0 failed -> all passed
    True
    """
    report = _start("check_grid_temperature", fn, verbose, strict, seed)
    rng = np.random.default_rng(200 + seed)
    cases = [(2 * seed, np.round(np.arange(0.5, 4.01, 0.25), 4), 15, 300),
             (2 * seed + 1, np.round(rng.uniform(0.3, 5.0, 12), 3), 10, 400)]
    if seed:  # a hidden case where the bin count decides the answer: a function that ignores n_bins fails it
        cases.append(_bins_deciding_case(seed))
    for s, grid, n_bins, n in cases:
        zv, yv, _, _ = _shifted_logits(s)
        zv, yv = zv[:n], yv[:n]  # small splits: the ECE and NLL optima differ
        label = f"overconfident logits, {grid.size} temperatures, {n_bins} bins"
        ok, got = _call(report, label, fn, zv, yv, grid, n_bins)
        if not ok:
            continue
        search = C.TemperatureScaling.grid(zv, yv, grid, n_bins=n_bins)
        expected, t_nll = search.best("ece"), search.best("nll")
        detail = f"grid {_short(grid)}; expected T = {expected:g} (validation ECE {search.ece.min():.4f}), got {got}"
        hint = "compute the validation ECE of softmax(val_logits / T) for every T of the grid; return the T of the smallest"
        good = _close(got, expected, 1e-9)
        if not good and _close(got, t_nll, 1e-9):
            detail += "\nyour T is the grid's NLL optimum; this exercise asks for the ECE optimum"
        report.case(label, good, detail, hint)
    return report.done()


@functools.lru_cache(maxsize=512)   # the grader runs one seed's check once; a test runs it for several functions
def _bins_deciding_case(seed):
    """``(logits seed, grid, n_bins, n)`` of a grid search whose ECE optimum at ``n_bins`` differs from the
    optimum at the default 15 bins, at the other counts a student might hard-code and from the NLL
    optimum: the first such candidate, in an order fixed by ``seed`` (deterministic; every seed has one
    within a few tries)."""
    rng = np.random.default_rng(900 + seed)
    grid = np.round(np.arange(0.6, 3.01, 0.15), 4)
    for attempt in range(200):
        s, n, n_bins = int(rng.integers(10**6)), int(rng.choice([200, 250, 300])), int(rng.choice([4, 5, 6, 25, 30]))
        zv, yv, _, _ = _shifted_logits(s)
        zv, yv = zv[:n], yv[:n]
        searches = {b: C.TemperatureScaling.grid(zv, yv, grid, n_bins=b) for b in (n_bins, 10, 15, 20)}
        best = {b: g.best("ece") for b, g in searches.items()}
        if all(best[n_bins] != best[b] for b in (10, 15, 20)) and best[n_bins] != searches[n_bins].best("nll"):
            return s, grid, n_bins, n
    raise RuntimeError(f"no grid case where the bin count decides, for seed {seed}")  # pragma: no cover


# ------------------------------------------------------------------ lab 3: binary calibrators
def _binary_scores(seed, n=600):
    rng = np.random.default_rng(seed)
    p = rng.uniform(0.001, 0.999, n)
    y = (rng.random(n) < p**2).astype(int)
    return p[: n // 2], y[: n // 2], p[n // 2:]


def _check_binary_map(report, label, got, expected, pt, atol, hint):
    arr, why = _as_float_array(got, expected.shape)
    diff = why or _first_difference(arr, expected, atol, lambda i: f"test score {pt[i[0]]:.6g}")
    report.case(label, not diff, diff or "", hint)


def check_histogram_binning(fn, verbose: bool = False, *, seed: int = 0, strict: bool = False) -> bool:
    """Check ``fn(val_scores, val_labels, test_scores, n_bins) -> calibrated test scores``
    (equal-width bins ((m-1)/M, m/M]; an empty bin keeps its midpoint).

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

    Returns
    -------
    bool
        True when every case passed (with ``strict=True``: True, or :class:`CheckFailure`).

    Examples
    --------
    >>> from calibcourse.study import checks
    >>> from calibcourse.calibration.calibrators import HistogramBinning
    >>> def binning(sv, yv, st, n_bins):
    ...     return HistogramBinning(n_bins=n_bins).fit(sv, yv).predict_proba(st)[:, 1]
    >>> checks.check_histogram_binning(binning)
    check_histogram_binning: 3 passed, 0 failed -> all passed
    True
    """
    report = _start("check_histogram_binning", fn, verbose, strict, seed)
    rng = np.random.default_rng(300 + seed)
    bins = (10, 15, 50) if seed == 0 else tuple(int(b) for b in rng.integers(5, 60, 3))
    for i, n_bins in enumerate(bins):
        s = 3 * seed + i
        pv, yv, pt = _binary_scores(s)
        pt = np.r_[pt, [0.0, 1.0], np.linspace(0, 1, n_bins + 1)[1:-1:max(1, n_bins // 4)]]  # ends and edges
        if seed and i == 0:  # hidden: a bin with no validation score, and test scores inside it
            m = int(rng.integers(1, n_bins - 1))
            lo, hi = m / n_bins, (m + 1) / n_bins
            keep = (pv <= lo) | (pv > hi)
            pv, yv = pv[keep], yv[keep]
            pt = np.r_[pt, lo + (hi - lo) * np.array([0.25, 0.5, 0.75])]
        label = f"random scores, case {i + 1}, {n_bins} bins (with scores on bin edges)"
        ok, got = _call(report, label, fn, pv, yv, pt, n_bins)
        if ok:
            expected = C.HistogramBinning(n_bins=n_bins).fit(pv, yv).predict_proba(pt)[:, 1]
            _check_binary_map(report, label, got, expected, pt, 1e-9,
                              "theta_m is the fraction of positives among the validation scores in bin m; "
                              "an empty bin predicts its midpoint; bins are closed on the right")
    return report.done()


def check_isotonic(fn, verbose: bool = False, *, seed: int = 0, strict: bool = False) -> bool:
    """Check ``fn(val_scores, val_labels, test_scores) -> calibrated test scores``:
    a non-decreasing least-squares fit, interpolated linearly and clipped (as sklearn's
    ``IsotonicRegression(out_of_bounds="clip")``).

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

    Returns
    -------
    bool
        True when every case passed (with ``strict=True``: True, or :class:`CheckFailure`).

    Examples
    --------
    >>> from sklearn.isotonic import IsotonicRegression
    >>> from calibcourse.study import checks
    >>> def isotonic(sv, yv, st):
    ...     return IsotonicRegression(out_of_bounds="clip").fit(sv, yv).predict(st)
    >>> checks.check_isotonic(isotonic)
    check_isotonic: 3 passed, 0 failed -> all passed
    True
    """
    report = _start("check_isotonic", fn, verbose, strict, seed)
    for i in range(3):
        pv, yv, pt = _binary_scores(3 * seed + i)
        pv = np.round(pv, 2) if i == 2 else pv  # ties
        if seed:  # hidden: test scores beyond both ends of the validation scores (clipped, not NaN)
            pt = np.r_[pt, pv.min() / 2, (1 + pv.max()) / 2]
        label = f"random scores, case {i + 1}" + (" with ties" if i == 2 else "")
        ok, got = _call(report, label, fn, pv, yv, pt)
        if not ok:
            continue
        expected = C.IsotonicCalibration().fit(pv, yv).predict_proba(pt)[:, 1]
        arr, _ = _as_float_array(got, expected.shape)
        mono = arr is not None and np.all(np.diff(arr[np.argsort(pt)]) >= -1e-12)
        _check_binary_map(report, label, got, expected, pt, 1e-6,
                          "pool adjacent violators until the fitted values are non-decreasing"
                          if not mono else "pool equal scores first; interpolate between thresholds")
    return report.done()


def check_platt(fn, verbose: bool = False, *, seed: int = 0, strict: bool = False) -> bool:
    """Check ``fn(val_scores, val_labels, test_scores) -> calibrated test scores``: Platt
    scaling on the logit of the scores, ``sigmoid(a * logit(s) + b)`` with ``a, b`` minimizing
    the validation NLL (no regularization).

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

    Returns
    -------
    bool
        True when every case passed (with ``strict=True``: True, or :class:`CheckFailure`).

    Examples
    --------
    >>> from calibcourse.study import checks
    >>> from calibcourse.calibration.calibrators import PlattScaling
    >>> def platt(sv, yv, st):
    ...     return PlattScaling(input_type="probabilities").fit(sv, yv).predict_proba(st)[:, 1]
    >>> checks.check_platt(platt)
    check_platt: 2 passed, 0 failed -> all passed
    True

    sklearn's ``LogisticRegression`` with its default penalty (``C=1``) is close, but not it:

    >>> from sklearn.linear_model import LogisticRegression
    >>> def penalized(sv, yv, st):
    ...     logit = lambda s: np.log(s / (1 - s))[:, None]
    ...     return LogisticRegression().fit(logit(sv), yv).predict_proba(logit(st))[:, 1]
    >>> checks.check_platt(penalized)  # doctest: +ELLIPSIS
      FAIL  random scores, case 1 (a = 1.083, b = -0.935)
            292 of 300 values differ; the first at index 0: expected 0.0830606, got 0.0856098 (test score 0.205199)
            hint: fit a and b of sigmoid(a * logit(s) + b) by minimizing the NLL without a penalty ...
    ...
    check_platt: 0 passed, 2 failed -> 2 failed
    False
    """
    report = _start("check_platt", fn, verbose, strict, seed)
    for i in range(2):
        pv, yv, pt = _binary_scores(50 + 2 * seed + i)
        label = f"random scores, case {i + 1}"
        ok, got = _call(report, label, fn, pv, yv, pt)
        if ok:
            cal = C.PlattScaling(input_type="probabilities").fit(pv, yv)
            _check_binary_map(report, f"{label} (a = {cal.a_:.3f}, b = {cal.b_:.3f})", got,
                              cal.predict_proba(pt)[:, 1], pt, 1e-4,
                              "fit a and b of sigmoid(a * logit(s) + b) by minimizing the NLL without a "
                              "penalty (sklearn's LogisticRegression penalizes by default: C=1)")
    return report.done()


# ------------------------------------------------------------------ lab 4: SECE and focal loss
def _loo_sece(p, y, h):
    conf, pred = p.max(1), p.argmax(1)
    a = (pred == y).astype(float)
    k = np.exp(-((conf[:, None] - conf[None, :]) ** 2) / (2 * h * h))
    np.fill_diagonal(k, 0.0)
    with np.errstate(invalid="ignore", divide="ignore"):
        return float(np.mean(np.abs(k @ a / k.sum(1) - conf)))


def check_sece(fn, verbose: bool = False, *, seed: int = 0, strict: bool = False) -> bool:
    """Check ``fn(probs, labels, bandwidth) -> float``: the SECE of Wang et al. (2023).

    A leave-one-out average (sample i left out of its own smoothed accuracy) is recognized
    and named.

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

    Returns
    -------
    bool
        True when every case passed (with ``strict=True``: True, or :class:`CheckFailure`).

    Examples
    --------
    >>> from calibcourse.study import checks
    >>> from calibcourse.calibration import metrics
    >>> checks.check_sece(lambda p, y, h: metrics.sece(p, y, bandwidth=h), verbose=True)
      PASS  random probabilities, n=50, K=2, h=0.05
      PASS  random probabilities, n=50, K=2, h=0.2
      PASS  random probabilities, n=300, K=5, h=0.05
      PASS  random probabilities, n=300, K=5, h=0.2
      PASS  random probabilities, n=1000, K=10, h=0.05
      PASS  random probabilities, n=1000, K=10, h=0.2
      PASS  all predictions correct with confidence 1.0, h=0.05
      PASS  all predictions correct with confidence 1.0, h=0.2
    check_sece: 8 passed, 0 failed -> all passed
    True
    """
    report = _start("check_sece", fn, verbose, strict, seed)
    cases = [(l, p, y) for l, p, y in _random_cases(3 + seed)]
    cases.append(("all predictions correct with confidence 1.0", np.tile([1.0, 0.0], (20, 1)), np.zeros(20, int)))
    for label, p, y in cases:
        for h in ((0.05, 0.2) if seed == 0 else (0.03, 0.1)):
            ok, got = _call(report, f"{label}, h={h}", fn, p, y, h)
            if not ok:
                continue
            expected = M.sece(p, y, bandwidth=h, method="exact")
            detail = f"expected {expected:.6f}, got {got}"
            hint = "SACC_i is the kernel-WEIGHTED AVERAGE of correctness: divide by sum_j K(c_i, c_j)"
            good = _close(got, expected, 1e-6)
            loo = _loo_sece(p, y, h)
            if not good and _close(got, loo, 1e-6) and abs(loo - expected) > 1e-6:
                detail += ("\nyour value is the LEAVE-ONE-OUT variant: sample i is left out of its own "
                           "SACC_i; the SECE of Wang et al. sums over every j, j = i included (K = 1 there)")
                hint = "keep the diagonal of the kernel matrix"
            report.case(f"{label}, h={h}", good, detail, hint)
    return report.done()


def _torch_cases(seed):
    import torch

    g = torch.Generator().manual_seed(seed)
    z = torch.randn(64, 5, generator=g, dtype=torch.float64) * 2
    y = torch.randint(0, 5, (64,), generator=g)
    return z, y


def check_focal_loss(fn, verbose: bool = False, *, seed: int = 0, strict: bool = False) -> bool:
    """Check ``fn(logits, labels, gamma) -> scalar tensor``: the mean focal loss (torch).

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

    Returns
    -------
    bool
        True when every case passed (with ``strict=True``: True, or :class:`CheckFailure`).

    Examples
    --------
    Cross-entropy is the focal loss at ``gamma = 0`` only:

    >>> import torch.nn.functional as F
    >>> from calibcourse.study import checks
    >>> from calibcourse.calibration import losses
    >>> checks.check_focal_loss(lambda z, y, gamma: F.cross_entropy(z, y))
      FAIL  gamma = 1.0
            expected 2.65295854, got 2.8367412651821624
            hint: -(1 - p_t) ** gamma * log(p_t), averaged over the batch, with p_t = softmax(z)[y]
      FAIL  gamma = 3.0
            expected 2.40859456, got 2.8367412651821624
            hint: -(1 - p_t) ** gamma * log(p_t), averaged over the batch, with p_t = softmax(z)[y]
    check_focal_loss: 1 passed, 2 failed -> 2 failed
    False
    >>> checks.check_focal_loss(losses.focal_loss, seed=1)     # other inputs, as the hidden tests
    check_focal_loss: 3 passed, 0 failed -> all passed
    True
    """
    from calibcourse.calibration.losses import focal_loss

    report = _start("check_focal_loss", fn, verbose, strict, seed)
    z, y = _torch_cases(seed)
    for gamma in ((0.0, 1.0, 3.0) if seed == 0 else (0.0, 2.0, 4.5)):
        label = f"gamma = {gamma}" + (" (must equal cross-entropy)" if gamma == 0 else "")
        ok, got = _call(report, label, fn, z, y, gamma)
        if not ok:
            continue
        expected = float(focal_loss(z, y, gamma))
        report.case(label, _close(got, expected, 1e-8), f"expected {expected:.8f}, got {got}",
                    "-(1 - p_t) ** gamma * log(p_t), averaged over the batch, with p_t = softmax(z)[y]")
    return report.done()


def check_flsd53(fn, verbose: bool = False, *, seed: int = 0, strict: bool = False) -> bool:
    """Check ``fn(logits, labels) -> scalar tensor``: FLSD-53 of Mukhoti et al. (2020), the focal
    loss with gamma 5 where p_t < 0.2 and 3 elsewhere; it must be differentiable (its gradient
    is checked too).

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

    Returns
    -------
    bool
        True when every case passed (with ``strict=True``: True, or :class:`CheckFailure`).

    Examples
    --------
    >>> from calibcourse.study import checks
    >>> from calibcourse.calibration import losses
    >>> checks.check_flsd53(losses.flsd53_loss)
    check_flsd53: 2 passed, 0 failed -> all passed
    True
    >>> checks.check_flsd53(lambda z, y: losses.flsd53_loss(z, y).detach())  # doctest: +ELLIPSIS
      FAIL  spread logits: p_t on both sides of 0.2
            the value is right, the gradient is not: the loss cannot be differentiated (RuntimeError: ...)
            hint: compute the loss with torch operations on the logits (no numpy, no float()) so that it trains
    ...
    check_flsd53: 0 passed, 2 failed -> 2 failed
    False
    """
    import torch

    from calibcourse.calibration.losses import flsd53_loss

    report = _start("check_flsd53", fn, verbose, strict, seed)
    z0, y = _torch_cases(seed)
    for scale, label in ((1.0, "spread logits: p_t on both sides of 0.2"),
                         (0.15, "flat logits: p_t near 1/K, gamma 5 for most samples")):
        z = (z0 * scale).clone().requires_grad_(True)
        ok, got = _call(report, label, fn, z, y)
        if not ok:
            continue
        zr = z.detach().clone().requires_grad_(True)
        ref = flsd53_loss(zr, y)
        ref.backward()
        ref = float(ref.detach())
        detail, hint = f"expected {ref:.8f}, got {got}", "gamma_i = 5 if p_t < 0.2 else 3, then the focal loss"
        good = _close(got, ref, 1e-8)
        if good:
            try:
                (grad,) = torch.autograd.grad(got, z)
                gdiff = _first_difference(grad.detach().numpy(), zr.grad.numpy(), 1e-8)
            except Exception as exc:
                gdiff = f"the loss cannot be differentiated ({type(exc).__name__}: {exc})"
            if gdiff:
                good = False
                detail = f"the value is right, the gradient is not: {gdiff}"
                hint = "compute the loss with torch operations on the logits (no numpy, no float()) so that it trains"
        report.case(label, good, detail, hint)
    return report.done()


# ------------------------------------------------------------------ the labs' fourth graded parts
def check_ece_l2(fn, verbose: bool = False, *, seed: int = 0, strict: bool = False) -> bool:
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

    Returns
    -------
    bool
        True when every case passed (with ``strict=True``: True, or :class:`CheckFailure`).

    Examples
    --------
    >>> from calibcourse.study import checks
    >>> from calibcourse.calibration import metrics
    >>> checks.check_ece_l2(lambda p, y, n: metrics.ece(p, y, n_bins=n, norm="l2"))
    check_ece_l2: 6 passed, 0 failed -> all passed
    True
    >>> checks.check_ece_l2(lambda p, y, n: metrics.ece(p, y, n_bins=n) ** 0.5, strict=True)
    Traceback (most recent call last):
        ...
    calibcourse.study.checks.CheckFailure: check_ece_l2: 0 passed, 6 failed -> 6 failed
    ...
    """
    return _check_binned(fn, "check_ece_l2", lambda p, y, n_bins: M.ece(p, y, n_bins=n_bins, norm="l2"),
                         verbose, strict, seed, "l2-ECE",
                         "the square root of the share-weighted sum of the SQUARED gaps of the non-empty bins")


def check_classwise_ece(fn, verbose: bool = False, *, seed: int = 0, strict: bool = False) -> bool:
    r"""Check ``fn(probs, labels, n_bins) -> float``: the class-wise ECE of Kull et al. (2019),
    the ECE of every class's probability :math:`p_k` against the indicator :math:`y = k`
    (equal-width bins on :math:`p_k`), averaged over the :math:`K` classes.

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

    Returns
    -------
    bool
        True when every case passed (with ``strict=True``: True, or :class:`CheckFailure`).

    Examples
    --------
    >>> from calibcourse.study import checks
    >>> from calibcourse.calibration import metrics
    >>> checks.check_classwise_ece(lambda p, y, n: metrics.classwise_ece(p, y, n_bins=n))
    check_classwise_ece: 6 passed, 0 failed -> all passed
    True

    The top-label ECE is not it:

    >>> checks.check_classwise_ece(lambda p, y, n: metrics.ece(p, y, n_bins=n), strict=True)
    Traceback (most recent call last):
        ...
    calibcourse.study.checks.CheckFailure: check_classwise_ece: 1 passed, 5 failed -> 5 failed
    ...
    """
    return _check_binned(fn, "check_classwise_ece",
                         lambda p, y, n_bins: M.classwise_ece(p, y, n_bins=n_bins),
                         verbose, strict, seed, "class-wise ECE",
                         "for each class k, bin p_k (every sample, not only the top label) against y == k; "
                         "average the K ECEs", extra=[_classwise_edge_case(seed)] if seed else ())


def _exact_nll(z, y, t):
    return float(-np.mean(M.log_softmax(np.asarray(z, float) / t)[np.arange(len(y)), y]))


def check_nll_temperature(fn, verbose: bool = False, *, seed: int = 0, strict: bool = False) -> bool:
    r"""Check ``fn(logits, labels, temperature) -> float``: the mean negative log-likelihood
    :math:`-\frac1n\sum_i \log \mathrm{softmax}(z_i / T)_{y_i}`, finite where a true class's
    probability underflows to 0 (log-sum-exp, not ``log(softmax)``).

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

    Returns
    -------
    bool
        True when every case passed (with ``strict=True``: True, or :class:`CheckFailure`).

    Examples
    --------
    >>> from scipy.special import log_softmax
    >>> from calibcourse.study import checks
    >>> def nll(z, y, t):
    ...     return -np.mean(log_softmax(z / t, axis=1)[np.arange(len(y)), y])
    >>> checks.check_nll_temperature(nll)
    check_nll_temperature: 4 passed, 0 failed -> all passed
    True

    The log of the softmax underflows where the true class is far behind:

    >>> def naive(z, y, t):
    ...     e = np.exp(z / t - (z / t).max(1, keepdims=True))
    ...     with np.errstate(divide="ignore"):  # log(0) of an underflowed probability: -inf
    ...         return -np.mean(np.log((e / e.sum(1, keepdims=True))[np.arange(len(y)), y]))
    >>> checks.check_nll_temperature(naive)  # doctest: +ELLIPSIS
      FAIL  large logits, the true class far behind (its softmax underflows to 0)
            expected NLL = 266.26..., got inf
            hint: log softmax(z)_y = z_y - max(z) - log(sum_j exp(z_j - max(z))): never take the log of a probability that may be 0
    check_nll_temperature: 3 passed, 1 failed -> 1 failed
    False
    """
    report = _start("check_nll_temperature", fn, verbose, strict, seed)
    rng = np.random.default_rng(400 + seed)
    z10, y10 = scaled_logits(300, 10, factor=2.0, spread=1.5, seed=seed)
    z2 = rng.normal(size=(60, 2)) * 3
    y2 = rng.integers(0, 2, 60)
    t_big = float(rng.choice([1.0, 1.5])) if seed else 1.0
    big = rng.normal(size=(30, 4)) * 5
    # the gap is 800 after the division by T, at every T: exp(-800) underflows to 0 in float64
    big[:, 0] += 800.0 * t_big
    y_big = np.r_[np.zeros(20, int), rng.integers(1, 4, 10)]  # the last ten: the true class far behind
    cases = [("overconfident logits, K=10, T=1", z10, y10, 1.0),
             ("overconfident logits, K=10, T=2.5", z10, y10, 2.5),
             ("random logits, K=2, T=0.5", z2, y2, 0.5),
             ("large logits, the true class far behind (its softmax underflows to 0)", big, y_big, t_big)]
    for label, z, y, t in cases:
        ok, got = _call(report, label, fn, z, y, t)
        if not ok:
            continue
        expected = _exact_nll(z, y, t)
        good = _close(got, expected, 1e-6 * max(1.0, abs(expected)))
        hint = ("log softmax(z)_y = z_y - max(z) - log(sum_j exp(z_j - max(z))): never take the log of a "
                "probability that may be 0" if "underflows" in label else
                "average -log softmax(z / T)[y] over the samples (divide the logits by T first)")
        report.case(label, good, f"expected NLL = {expected:.6f}, got {got}", hint)
    return report.done()


def _paired_case(seed, i):
    """Case ``i`` of the paired-bootstrap check: a nearly calibrated and an overconfident score of the
    same test samples, their labels and the bootstrap's resampled indices (fresh arrays on each call)."""
    pv, yv, pt = _binary_scores(700 + 2 * seed + i, n=800)
    rng = np.random.default_rng(900 + 2 * seed + i)
    y = (rng.random(pt.size) < pt ** 1.5).astype(int)
    sa = np.clip(pt ** 1.5 + rng.normal(0, 0.02, pt.size), 0, 1)   # nearly calibrated
    sb = pt.copy()                                                 # overconfident in the positives
    idx = rng.integers(0, pt.size, size=(int(rng.integers(150, 250)), pt.size))
    return sa, sb, y, idx


@functools.lru_cache(maxsize=8)  # the grader checks a seed once; a test checks several functions on it
def _paired_expected(seed, i, n_bins):
    """``(estimate, low, high)`` of :func:`_paired_reference` on case ``i`` of ``seed``."""
    return _paired_reference(*_paired_case(seed, i), n_bins)[:3]


def _paired_reference(pa, pb, y, boot_idx, n_bins):
    """The paired bootstrap of the top-label ECE difference of two binary scores (chapter 3's convention)."""
    def ece(p, labels):
        return M.ece(p, labels, n_bins=n_bins, reliability="top_label")
    est = ece(pa, y) - ece(pb, y)
    reps = np.array([ece(pa[i], y[i]) - ece(pb[i], y[i]) for i in boot_idx])
    lo, hi = np.percentile(reps, [2.5, 97.5])
    return est, float(lo), float(hi), reps


def check_paired_difference(fn, verbose: bool = False, *, seed: int = 0, strict: bool = False) -> bool:
    r"""Check ``fn(scores_a, scores_b, labels, boot_idx, n_bins) -> (estimate, low, high)``: the
    paired bootstrap of the difference of two calibrators' ECE on the same test samples.

    ``estimate`` is the plug-in difference ``ece(scores_a) - ece(scores_b)`` on all the
    samples; ``low`` and ``high`` are the 2.5th and 97.5th percentiles (``np.percentile``'s
    default interpolation) of that difference recomputed on each row of ``boot_idx`` (a
    ``(B, n)`` array of resampled indices: the same indices for both calibrators, the pairing).
    The ECE is the top-label one of chapter 3, ``metrics.ece(scores, labels, n_bins=n_bins,
    reliability="top_label")``: the confidence is ``max(p, 1 - p)``, correct when the predicted
    class is the label.

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

    Returns
    -------
    bool
        True when every case passed (with ``strict=True``: True, or :class:`CheckFailure`).

    Examples
    --------
    >>> from calibcourse.study import checks
    >>> from calibcourse.calibration import metrics
    >>> def ece(p, y, n_bins):
    ...     return metrics.ece(p, y, n_bins=n_bins, reliability="top_label")
    >>> def paired(sa, sb, y, idx, n_bins):
    ...     d = [ece(sa[i], y[i], n_bins) - ece(sb[i], y[i], n_bins) for i in idx]
    ...     lo, hi = np.percentile(d, [2.5, 97.5])
    ...     return ece(sa, y, n_bins) - ece(sb, y, n_bins), lo, hi
    >>> checks.check_paired_difference(paired)
    check_paired_difference: 2 passed, 0 failed -> all passed
    True

    Resampling the two calibrators with different indices loses the pairing:

    >>> def unpaired(sa, sb, y, idx, n_bins):
    ...     d = [ece(sa[i], y[i], n_bins) - ece(sb[j], y[j], n_bins) for i, j in zip(idx, idx[::-1])]
    ...     lo, hi = np.percentile(d, [2.5, 97.5])
    ...     return ece(sa, y, n_bins) - ece(sb, y, n_bins), lo, hi
    >>> checks.check_paired_difference(unpaired, strict=True)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
        ...
    calibcourse.study.checks.CheckFailure: check_paired_difference: 0 passed, 2 failed -> 2 failed
    ...
    """
    report = _start("check_paired_difference", fn, verbose, strict, seed)
    for i, n_bins in enumerate((15, 10)):
        sa, sb, y, idx = _paired_case(seed, i)
        label = f"two calibrators on {y.size} samples, {idx.shape[0]} bootstrap resamples, {n_bins} bins"
        ok, got = _call(report, label, fn, sa, sb, y, idx, n_bins)
        if not ok:
            continue
        est, lo, hi = _paired_expected(seed, i, n_bins)
        arr, why = _as_float_array(got, (3,))
        if arr is None:
            report.case(label, False, f"expected (estimate, low, high): {why}",
                        "return a tuple of three numbers")
            continue
        diff = _first_difference(arr, np.array([est, lo, hi]), 1e-9,
                                 lambda j: ("estimate", "low", "high")[j[0]])
        positive = M.ece(sa, y, n_bins=n_bins) - M.ece(sb, y, n_bins=n_bins)
        hint = ("that is the ECE of P(1) against the fraction of positives (the positive class); measure the "
                'top-label ECE, reliability="top_label", as chapter 3 does'
                if diff is not None and abs(arr[0] - positive) < 1e-9 else
                "estimate: the difference of the two ECEs on all samples; low, high: percentiles 2.5 and "
                "97.5 of the difference recomputed on each row of boot_idx, the same rows for both")
        report.case(label, diff is None, diff or "", hint)
    return report.done()
