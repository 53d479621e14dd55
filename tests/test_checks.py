"""calibcourse.checks: right implementations pass, wrong ones fail with a reason, unfilled ones never crash."""
import numpy as np
import pytest
import torch
from scipy.optimize import minimize_scalar

from calibcourse import calibrators as C
from calibcourse import checks
from calibcourse import losses as L
from calibcourse import metrics as M


# ------------------------------------------------------------------ what a student might write
def ece_from_bin_index(idx, conf, pred, labels, n_bins):
    total = 0.0
    for m in range(n_bins):
        inb = idx == m
        if inb.any():
            total += inb.mean() * abs((pred[inb] == labels[inb]).mean() - conf[inb].mean())
    return total


def good_ece(probs, labels, n_bins):
    conf, pred = probs.max(1), probs.argmax(1)
    edges = np.linspace(0, 1, n_bins + 1)
    return ece_from_bin_index(np.searchsorted(edges[1:-1], conf, side="left"), conf, pred, labels, n_bins)


def wrong_side_ece(probs, labels, n_bins):  # bins [lo, hi), the classic off-by-edge bug
    conf, pred = probs.max(1), probs.argmax(1)
    idx = np.minimum((conf * n_bins).astype(int), n_bins - 1)
    return ece_from_bin_index(idx, conf, pred, labels, n_bins)


def unfilled(*args, **kwargs):
    raise NotImplementedError


def fit_t(z, y):
    nll = lambda logt: M.nll(M.softmax(z / np.exp(logt)), y)
    return float(np.exp(minimize_scalar(nll, bounds=(-3, 3), method="bounded",
                                        options={"xatol": 1e-8}).x))


def good_ts(zv, yv, zt, yt):
    return M.softmax(zt / fit_t(zv, yv))


def leaky_ts(zv, yv, zt, yt):  # fits on the test split
    return M.softmax(zt / fit_t(zt, yt))


def test_check_ece_and_mce_pass_right_and_catch_wrong_bins(capsys):
    assert checks.check_ece(good_ece) is True
    assert checks.check_ece(lambda p, y, n: M.ece(p, y, n_bins=n)) is True
    assert checks.check_ece(wrong_side_ece) is False
    out = capsys.readouterr().out
    assert "FAIL  confidences exactly on bin edges" in out and "closed on the right" in out
    assert checks.check_mce(lambda p, y, n: M.mce(p, y, n_bins=n)) is True
    assert checks.check_mce(good_ece) is False


def test_unfilled_cells_are_failures_not_crashes(capsys):
    for check in (checks.check_ece, checks.check_mce, checks.check_reliability_bins,
                  checks.check_temperature_scaling, checks.check_histogram_binning, checks.check_isotonic,
                  checks.check_sece, checks.check_focal_loss):
        assert check(unfilled) is False
    out = capsys.readouterr().out
    assert "NotImplementedError" in out and "fill in the exercise cell" in out


def test_check_reliability_bins():
    def good(p, y, n):
        rb = M.reliability_bins(p, y, n_bins=n)
        return rb.accuracy, rb.confidence, rb.count
    assert checks.check_reliability_bins(good) is True
    assert checks.check_reliability_bins(lambda p, y, n: good(p, y, n + 1)) is False


def test_check_temperature_scaling_catches_a_fit_on_the_test_set(capsys):
    assert checks.check_temperature_scaling(good_ts) is True
    assert checks.check_temperature_scaling(leaky_ts) is False
    assert "fitted on the TEST split" in capsys.readouterr().out
    coarse = lambda zv, yv, zt, yt: M.softmax(zt / 2.0)  # a guessed temperature
    assert checks.check_temperature_scaling(coarse) is False


def test_check_binning_methods():
    hb = lambda pv, yv, pt, n: C.HistogramBinning(n_bins=n).fit(pv, yv).predict_proba(pt)
    assert checks.check_histogram_binning(hb) is True
    assert checks.check_histogram_binning(lambda pv, yv, pt, n: hb(pv, yv, pt, n + 1)) is False
    iso = lambda pv, yv, pt: C.IsotonicCalibration().fit(pv, yv).predict_proba(pt)
    assert checks.check_isotonic(iso) is True
    assert checks.check_isotonic(lambda pv, yv, pt: hb(pv, yv, pt, 10)) is False


def test_check_sece_and_focal():
    assert checks.check_sece(lambda p, y, h: M.sece(p, y, bandwidth=h, method="exact")) is True
    def unnormalized(p, y, h):  # forgets to divide by the kernel sum
        c, pred = p.max(1), p.argmax(1)
        k = np.exp(-((c[:, None] - c[None]) ** 2) / (2 * h * h))
        return np.mean(np.abs(k @ (pred == y) / len(c) - c))
    assert checks.check_sece(unnormalized) is False
    assert checks.check_focal_loss(L.focal_loss) is True
    assert checks.check_focal_loss(lambda z, y, g: torch.nn.functional.cross_entropy(z, y)) is False
