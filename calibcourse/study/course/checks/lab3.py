"""The checks of Lab 3: histogram binning, isotonic regression, Platt scaling, the paired bootstrap."""
from __future__ import annotations

import functools

import numpy as np

from calibcourse.calibration import binning
from calibcourse.calibration import calibrators as C
from calibcourse.calibration import metrics as M
from calibcourse.calibration._arrays import ece_from_sums
from calibcourse.study.course.checks._harness import _as_float_array, _call, _first_difference, _start

__all__ = ["check_histogram_binning", "check_isotonic", "check_platt", "check_paired_difference"]


def _binary_scores(seed, n=600):
    rng = np.random.default_rng(seed)
    p = rng.uniform(0.001, 0.999, n)
    y = (rng.random(n) < p**2).astype(int)
    return p[: n // 2], y[: n // 2], p[n // 2:]


def _check_binary_map(report, label, got, expected, pt, atol, hint):
    arr, why = _as_float_array(got, expected.shape)
    diff = why or _first_difference(arr, expected, atol, lambda i: f"test score {pt[i[0]]:.6g}")
    report.case(label, not diff, diff or "", hint, tol=f"{atol:.0e}, absolute")


def check_histogram_binning(fn, verbose: bool = False, *, seed: int = 0, strict: bool = False,
                            rules: bool = True) -> bool:
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
    >>> from calibcourse.calibration.calibrators import HistogramBinning
    >>> def binning(sv, yv, st, n_bins):
    ...     return HistogramBinning(n_bins=n_bins).fit(sv, yv).predict_proba(st)[:, 1]
    >>> checks.check_histogram_binning(binning, rules=False)
    check_histogram_binning: 3 passed, 0 failed -> all passed
    True
    """
    report = _start("check_histogram_binning", fn, verbose, strict, seed, rules)
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


def check_isotonic(fn, verbose: bool = False, *, seed: int = 0, strict: bool = False, rules: bool = True) -> bool:
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
    rules : bool, default=True
        Fail a function that calls what the exercise does not allow (:mod:`.rules`); False: check
        the numbers only.

    Returns
    -------
    bool
        True when every case passed (with ``strict=True``: True, or :class:`CheckFailure`).

    Examples
    --------
    >>> from sklearn.isotonic import IsotonicRegression
    >>> from calibcourse.study.course import checks
    >>> def isotonic(sv, yv, st):
    ...     return IsotonicRegression(out_of_bounds="clip").fit(sv, yv).predict(st)
    >>> checks.check_isotonic(isotonic, rules=False)
    check_isotonic: 3 passed, 0 failed -> all passed
    True
    """
    report = _start("check_isotonic", fn, verbose, strict, seed, rules)
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


def check_platt(fn, verbose: bool = False, *, seed: int = 0, strict: bool = False, rules: bool = True) -> bool:
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
    >>> from calibcourse.calibration.calibrators import PlattScaling
    >>> def platt(sv, yv, st):
    ...     return PlattScaling(input_type="probabilities").fit(sv, yv).predict_proba(st)[:, 1]
    >>> checks.check_platt(platt, rules=False)
    check_platt: 2 passed, 0 failed -> all passed
    True

    sklearn's ``LogisticRegression`` with its default penalty (``C=1``) is close, but not it:

    >>> from sklearn.linear_model import LogisticRegression
    >>> def penalized(sv, yv, st):
    ...     logit = lambda s: np.log(s / (1 - s))[:, None]
    ...     return LogisticRegression().fit(logit(sv), yv).predict_proba(logit(st))[:, 1]
    >>> checks.check_platt(penalized, rules=False)  # doctest: +ELLIPSIS
      FAIL  random scores, case 1 (a = 1.083, b = -0.935)
            292 of 300 values differ; the first at index 0: expected 0.0830606, got 0.0856098 (test score 0.205199)
            (the tolerance: 1e-04, absolute)
            hint: fit a and b of sigmoid(a * logit(s) + b) by minimizing the NLL without a penalty ...
    ...
    check_platt: 0 passed, 2 failed -> 2 failed
    False
    """
    report = _start("check_platt", fn, verbose, strict, seed, rules)
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
    """``(estimate, low, high)`` of :func:`paired_reference` on case ``i`` of ``seed``."""
    return paired_reference(*_paired_case(seed, i), n_bins)[:3]


def _top_label_eces(p, y, boot_idx, n_bins):
    """``metrics.ece(p[i], y[i], n_bins=n_bins, reliability="top_label")`` for every row ``i`` of ``boot_idx``
    at once: the confidence ``max(p, 1 - p)``, correct when the predicted class (1 above 0.5) is the label,
    binned by the toolkit's bins (each resample a column of one :func:`binning.bin_sums`)."""
    s, labels = p[boot_idx], y[boot_idx]
    conf = np.maximum(s, 1.0 - s)
    outcome = ((s > 0.5).astype(int) == labels).astype(float)
    count, (sum_conf, sum_out), _ = binning.bin_sums(conf.T, conf.T, outcome.T, n_bins=n_bins)
    return ece_from_sums(count, sum_conf, sum_out, "l1")


def paired_reference(pa, pb, y, boot_idx, n_bins):
    """The paired bootstrap of the top-label ECE difference of two binary scores: the reference answer.

    ``(estimate, low, high, replicates)``: the plug-in difference of ``metrics.ece(..., reliability="top_label")``
    on all the samples, the 2.5th and 97.5th percentiles of its recomputation on each row of ``boot_idx``, and
    those recomputations (what :func:`check_paired_difference` grades, and the lab's own table shows).
    """
    def ece(p, labels):
        return M.ece(p, labels, n_bins=n_bins, reliability="top_label")
    est = ece(pa, y) - ece(pb, y)
    reps = _top_label_eces(pa, y, boot_idx, n_bins) - _top_label_eces(pb, y, boot_idx, n_bins)
    lo, hi = np.percentile(reps, [2.5, 97.5])
    return est, float(lo), float(hi), reps


def check_paired_difference(fn, verbose: bool = False, *, seed: int = 0, strict: bool = False,
                            rules: bool = True) -> bool:
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
    >>> def ece(p, y, n_bins):
    ...     return metrics.ece(p, y, n_bins=n_bins, reliability="top_label")
    >>> def paired(sa, sb, y, idx, n_bins):
    ...     d = [ece(sa[i], y[i], n_bins) - ece(sb[i], y[i], n_bins) for i in idx]
    ...     lo, hi = np.percentile(d, [2.5, 97.5])
    ...     return ece(sa, y, n_bins) - ece(sb, y, n_bins), lo, hi
    >>> checks.check_paired_difference(paired, rules=False)
    check_paired_difference: 2 passed, 0 failed -> all passed
    True

    Resampling the two calibrators with different indices loses the pairing:

    >>> def unpaired(sa, sb, y, idx, n_bins):
    ...     d = [ece(sa[i], y[i], n_bins) - ece(sb[j], y[j], n_bins) for i, j in zip(idx, idx[::-1])]
    ...     lo, hi = np.percentile(d, [2.5, 97.5])
    ...     return ece(sa, y, n_bins) - ece(sb, y, n_bins), lo, hi
    >>> checks.check_paired_difference(unpaired, strict=True, rules=False)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
        ...
    calibcourse.study.course.checks.CheckFailure: check_paired_difference: 0 passed, 2 failed -> 2 failed
    ...
    """
    report = _start("check_paired_difference", fn, verbose, strict, seed, rules)
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
        report.case(label, diff is None, diff or "", hint, tol="1e-09, absolute")
    return report.done()
