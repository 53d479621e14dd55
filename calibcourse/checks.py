"""Automatic checks of the students' implementations in the labs (offline, no server).

Each ``check_*`` runs a student's function on fixed cases (edges included:
confidences of exactly 0 and 1, values on bin edges, empty bins, one class)
and random ones, compares it with the reference implementation of
``calibcourse``, prints what passed, what failed with the input that broke it
and a hint, and returns True when every case passed, False otherwise. A
function that raises (``NotImplementedError`` in the student edition) is a
failure, never a crash of the check.
"""
from __future__ import annotations

import numpy as np

from . import calibrators as C
from . import metrics as M

__all__ = ["check_ece", "check_mce", "check_reliability_bins", "check_temperature_scaling",
           "check_histogram_binning", "check_isotonic", "check_sece", "check_focal_loss"]


class _Report:
    def __init__(self, name: str, verbose: bool):
        self.name, self.verbose, self.passed, self.failed = name, verbose, 0, 0

    def case(self, label: str, ok: bool, detail: str = "", hint: str = ""):
        if ok:
            self.passed += 1
            if self.verbose:
                print(f"  PASS  {label}")
        else:
            self.failed += 1
            print(f"  FAIL  {label}")
            if detail:
                print("        " + detail.replace("\n", "\n        "))
            if hint:
                print(f"        hint: {hint}")

    def done(self) -> bool:
        verdict = "all passed" if self.failed == 0 else f"{self.failed} failed"
        print(f"{self.name}: {self.passed} passed, {self.failed} failed -> {verdict}")
        return self.failed == 0


def _call(report, label, fn, *args, **kwargs):
    try:
        return True, fn(*args, **kwargs)
    except NotImplementedError:
        report.case(label, False, "the function raises NotImplementedError",
                    "fill in the exercise cell, then run it again before this check")
        return False, None
    except Exception as exc:  # a bug in the student's code is a failed case, not a crash
        report.case(label, False, f"the function raised {type(exc).__name__}: {exc}")
        return False, None


def _short(a, n=6):
    a = np.asarray(a)
    return np.array2string(a.ravel()[:n], precision=4, separator=", ") + (" ..." if a.size > n else "")


def _random_cases(seed=0):
    rng = np.random.default_rng(seed)
    for n, k in ((50, 2), (300, 5), (1000, 10)):
        z = rng.normal(size=(n, k)) * 2.5
        p = M.softmax(z)
        y = np.where(rng.random(n) < 0.7, p.argmax(1), rng.integers(0, k, n))
        yield f"random probabilities, n={n}, K={k}", p, y


def _edge_cases():
    # top-label confidences 0.8, 0.6, 0.6, 0.8, 1.0, 0.5, 0.7: on the edges of 5 bins, and exactly 1.0
    yield "confidences exactly on bin edges (5 bins), and exactly 1.0", \
        np.array([[0.8, 0.2], [0.6, 0.4], [0.4, 0.6], [0.2, 0.8], [0.0, 1.0], [0.5, 0.5], [0.7, 0.3]]), \
        np.array([0, 1, 1, 0, 1, 0, 0]), 5
    yield "every sample in one bin (other bins empty)", np.tile([0.85, 0.1, 0.05], (20, 1)), \
        np.r_[np.zeros(15, int), np.ones(5, int)], 10
    yield "one class only in the labels", M.softmax(np.random.default_rng(1).normal(size=(30, 3))), \
        np.zeros(30, int), 15


def _check_binned(fn, name, reference, verbose, what):
    report = _Report(name, verbose)
    hint_edges = ("use Guo et al.'s bins ((m-1)/M, m/M], closed on the right, with a confidence of "
                  "exactly 0 in the first bin: np.searchsorted(edges[1:-1], conf, side='left') does it")
    for label, p, y, n_bins in list(_edge_cases()) + [(l, p, y, 15) for l, p, y in _random_cases()]:
        ok, got = _call(report, label, fn, p, y, n_bins)
        if not ok:
            continue
        expected = reference(p, y, n_bins=n_bins)
        good = got is not None and np.isfinite(float(got)) and abs(float(got) - expected) < 1e-6
        report.case(label, good, f"probs[:, max] = {_short(p.max(1))}, labels = {_short(y)}, n_bins = {n_bins}\n"
                    f"expected {what} = {expected:.6f}, got {got}",
                    hint_edges if "edges" in label else "weight each bin's |acc - conf| by its share of samples"
                    if what == "ECE" else "take the maximum over non-empty bins only")
    return report.done()


def check_ece(fn, verbose: bool = False) -> bool:
    """Check ``fn(probs, labels, n_bins) -> float``: top-label ECE with Guo et al.'s bins."""
    return _check_binned(fn, "check_ece", M.ece, verbose, "ECE")


def check_mce(fn, verbose: bool = False) -> bool:
    """Check ``fn(probs, labels, n_bins) -> float``: top-label MCE over non-empty bins."""
    return _check_binned(fn, "check_mce", M.mce, verbose, "MCE")


def check_reliability_bins(fn, verbose: bool = False) -> bool:
    """Check ``fn(probs, labels, n_bins) -> (accuracy, confidence, count)`` per bin
    (NaN, or anything, for the accuracy and confidence of an empty bin; count 0)."""
    report = _Report("check_reliability_bins", verbose)
    for label, p, y, n_bins in list(_edge_cases()) + [(l, p, y, 15) for l, p, y in _random_cases()]:
        ok, got = _call(report, label, fn, p, y, n_bins)
        if not ok:
            continue
        rb = M.reliability_bins(p, y, n_bins=n_bins)
        try:
            acc, conf, count = (np.asarray(a, dtype=float) for a in got)
            nonempty = rb.count > 0
            good = (np.array_equal(count, rb.count) and np.allclose(acc[nonempty], rb.accuracy[nonempty])
                    and np.allclose(conf[nonempty], rb.confidence[nonempty]))
        except Exception as exc:
            good = False
            count = f"unreadable result ({exc})"
        report.case(label, good, f"expected counts {rb.count.astype(int).tolist()}, got {count}",
                    "return three arrays of length n_bins: accuracy, mean confidence and count per bin")
    return report.done()


def _shifted_logits(seed):
    rng = np.random.default_rng(seed)
    z = rng.normal(size=(1500, 10)) * 1.5
    p = M.softmax(z)
    y = np.minimum((p.cumsum(1) < rng.random((1500, 1))).sum(1), 9)
    # validation: overconfident by 2.5; test: by 1.5 -- the two splits want different temperatures
    return 2.5 * z[:800], y[:800], 1.5 * z[800:], y[800:]


def check_temperature_scaling(fn, verbose: bool = False) -> bool:
    """Check ``fn(val_logits, val_labels, test_logits, test_labels) -> test probabilities``:
    T fitted by NLL on the validation split only, applied to the test logits.

    The two splits are built to need different temperatures, so fitting on the test split
    (a leak) is told apart from fitting on the validation split.
    """
    report = _Report("check_temperature_scaling", verbose)
    for seed in (0, 1):
        zv, yv, zt, yt = _shifted_logits(seed)
        label = f"overconfident logits, seed {seed}"
        ok, got = _call(report, label, fn, zv, yv, zt, yt)
        if not ok:
            continue
        ref = C.TemperatureScaling().fit(zv, yv)
        leak = C.TemperatureScaling().fit(zt, yt)
        expected = ref.predict_proba(zt)
        try:
            got = np.asarray(got, dtype=float)
            good = got.shape == expected.shape and np.abs(got - expected).max() < 2e-3
            leaked = got.shape == expected.shape and np.abs(got - leak.predict_proba(zt)).max() < 2e-3
        except Exception:
            good, leaked = False, False
        if leaked:
            report.case(label, False, f"your probabilities match T = {leak.temperature_:.3f}, fitted on the "
                        f"TEST split; the validation split gives T = {ref.temperature_:.3f}",
                        "fit T on (val_logits, val_labels) only; the test labels are for evaluation")
        else:
            report.case(label, good, f"expected T = {ref.temperature_:.3f} (test probabilities "
                        f"{_short(expected[0])}), got {_short(got[0]) if hasattr(got, 'shape') else got}",
                        "minimize the NLL of softmax(z / T) over T > 0 (e.g. scipy.optimize."
                        "minimize_scalar on log T); a grid with a coarse step is not precise enough")
    return report.done()


def _binary_scores(seed, n=600):
    rng = np.random.default_rng(seed)
    p = rng.uniform(0.001, 0.999, n)
    y = (rng.random(n) < p**2).astype(int)
    return p[: n // 2], y[: n // 2], p[n // 2:]


def check_histogram_binning(fn, verbose: bool = False) -> bool:
    """Check ``fn(val_scores, val_labels, test_scores, n_bins) -> calibrated test scores``
    (equal-width bins ((m-1)/M, m/M]; an empty bin keeps its midpoint)."""
    report = _Report("check_histogram_binning", verbose)
    for seed, n_bins in ((0, 10), (1, 15), (2, 50)):
        pv, yv, pt = _binary_scores(seed)
        pt = np.r_[pt, [0.0, 0.1, 0.5, 1.0]]  # bin edges and the ends
        label = f"random scores, seed {seed}, {n_bins} bins (with scores on bin edges)"
        ok, got = _call(report, label, fn, pv, yv, pt, n_bins)
        if not ok:
            continue
        expected = C.HistogramBinning(n_bins=n_bins).fit(pv, yv).predict_proba(pt)
        good = np.shape(got) == expected.shape and np.allclose(np.asarray(got, float), expected, atol=1e-9)
        report.case(label, good, f"expected {_short(expected[-4:])} for scores [0, 0.1, 0.5, 1], "
                    f"got {_short(np.asarray(got)[-4:]) if np.shape(got) == expected.shape else np.shape(got)}",
                    "theta_m is the fraction of positives among the validation scores in bin m; "
                    "an empty bin predicts its midpoint")
    return report.done()


def check_isotonic(fn, verbose: bool = False) -> bool:
    """Check ``fn(val_scores, val_labels, test_scores) -> calibrated test scores``:
    a non-decreasing least-squares fit, interpolated linearly and clipped (as sklearn's
    ``IsotonicRegression(out_of_bounds="clip")``)."""
    report = _Report("check_isotonic", verbose)
    for seed in (0, 1, 2):
        pv, yv, pt = _binary_scores(seed)
        pv = np.round(pv, 2) if seed == 2 else pv  # ties
        label = f"random scores, seed {seed}" + (" with ties" if seed == 2 else "")
        ok, got = _call(report, label, fn, pv, yv, pt)
        if not ok:
            continue
        expected = C.IsotonicCalibration().fit(pv, yv).predict_proba(pt)
        good = np.shape(got) == expected.shape and np.allclose(np.asarray(got, float), expected, atol=1e-6)
        mono = np.shape(got) == expected.shape and np.all(np.diff(np.asarray(got, float)[np.argsort(pt)]) >= -1e-12)
        report.case(label, good, f"expected {_short(expected)}, got {_short(got) if np.size(got) else got}",
                    "pool adjacent violators until the fitted values are non-decreasing"
                    if not mono else "pool equal scores first; interpolate between thresholds")
    return report.done()


def check_sece(fn, verbose: bool = False) -> bool:
    """Check ``fn(probs, labels, bandwidth) -> float``: the SECE of Wang et al. (2023)."""
    report = _Report("check_sece", verbose)
    cases = [(l, p, y) for l, p, y in _random_cases(3)]
    cases.append(("all predictions correct with confidence 1.0", np.tile([1.0, 0.0], (20, 1)), np.zeros(20, int)))
    for label, p, y in cases:
        for h in (0.05, 0.2):
            ok, got = _call(report, f"{label}, h={h}", fn, p, y, h)
            if not ok:
                continue
            expected = M.sece(p, y, bandwidth=h, method="exact")
            good = got is not None and abs(float(got) - expected) < 1e-6
            report.case(f"{label}, h={h}", good, f"expected {expected:.6f}, got {got}",
                        "SACC_i is the kernel-WEIGHTED AVERAGE of correctness: divide by sum_j K(c_i, c_j)")
    return report.done()


def check_focal_loss(fn, verbose: bool = False) -> bool:
    """Check ``fn(logits, labels, gamma) -> scalar tensor``: the mean focal loss (torch)."""
    import torch

    from .losses import focal_loss

    report = _Report("check_focal_loss", verbose)
    g = torch.Generator().manual_seed(0)
    z = torch.randn(64, 5, generator=g, dtype=torch.float64) * 2
    y = torch.randint(0, 5, (64,), generator=g)
    for gamma in (0.0, 1.0, 3.0):
        label = f"gamma = {gamma}" + (" (must equal cross-entropy)" if gamma == 0 else "")
        ok, got = _call(report, label, fn, z, y, gamma)
        if not ok:
            continue
        expected = float(focal_loss(z, y, gamma))
        good = got is not None and abs(float(got) - expected) < 1e-8
        report.case(label, good, f"expected {expected:.8f}, got {got}",
                    "-(1 - p_t) ** gamma * log(p_t), averaged over the batch, with p_t = softmax(z)[y]")
    return report.done()
