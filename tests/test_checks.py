"""calibcourse.study.course.checks: right implementations pass, wrong ones fail with a reason, unfilled ones
never crash."""
import re

import numpy as np
import pytest
import torch
from scipy.optimize import minimize_scalar

from calibcourse.calibration import calibrators as C
from calibcourse.calibration import metrics as M
from calibcourse.study.course import checks
from calibcourse.study.course.checks._harness import first_failure_stops
from calibcourse.study.training import losses as L


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
    assert checks.check_ece(good_ece, rules=False) is True
    assert checks.check_ece(lambda p, y, n: M.ece(p, y, n_bins=n), rules=False) is True
    assert checks.check_ece(wrong_side_ece, rules=False) is False
    out = capsys.readouterr().out
    assert "FAIL  confidences exactly on bin edges" in out and "closed on the right" in out
    assert checks.check_mce(lambda p, y, n: M.mce(p, y, n_bins=n), rules=False) is True
    assert checks.check_mce(good_ece, rules=False) is False


def test_unfilled_cells_are_failures_not_crashes(capsys):
    for check in (checks.check_ece, checks.check_mce, checks.check_reliability_bins,
                  checks.check_temperature_scaling, checks.check_histogram_binning, checks.check_isotonic,
                  checks.check_sece, checks.check_focal_loss):
        assert check(unfilled) is False
    out = capsys.readouterr().out
    assert out.count(": not written yet, its ") == 8 and "failed" not in out


def test_check_reliability_bins():
    def good(p, y, n):
        rb = M.reliability_bins(p, y, n_bins=n)
        return rb.accuracy, rb.confidence, rb.count
    assert checks.check_reliability_bins(good, rules=False) is True
    assert checks.check_reliability_bins(lambda p, y, n: good(p, y, n + 1), rules=False) is False


def test_check_temperature_scaling_catches_a_fit_on_the_test_set(capsys):
    assert checks.check_temperature_scaling(good_ts, rules=False) is True
    assert checks.check_temperature_scaling(leaky_ts, rules=False) is False
    assert "fitted on the TEST split" in capsys.readouterr().out
    coarse = lambda zv, yv, zt, yt: M.softmax(zt / 2.0)  # a guessed temperature
    assert checks.check_temperature_scaling(coarse, rules=False) is False


def test_check_binning_methods():
    hb = lambda pv, yv, pt, n: C.HistogramBinning(n_bins=n).fit(pv, yv).predict_proba(pt)[:, 1]
    assert checks.check_histogram_binning(hb, rules=False) is True
    assert checks.check_histogram_binning(lambda pv, yv, pt, n: hb(pv, yv, pt, n + 1), rules=False) is False
    iso = lambda pv, yv, pt: C.IsotonicCalibration().fit(pv, yv).predict_proba(pt)[:, 1]
    assert checks.check_isotonic(iso, rules=False) is True
    assert checks.check_isotonic(lambda pv, yv, pt: hb(pv, yv, pt, 10), rules=False) is False


def test_check_sece_and_focal():
    assert checks.check_sece(lambda p, y, h: M.sece(p, y, bandwidth=h, method="exact"), rules=False) is True
    def unnormalized(p, y, h):  # forgets to divide by the kernel sum
        c, pred = p.max(1), p.argmax(1)
        k = np.exp(-((c[:, None] - c[None]) ** 2) / (2 * h * h))
        return np.mean(np.abs(k @ (pred == y) / len(c) - c))
    assert checks.check_sece(unnormalized, rules=False) is False
    assert checks.check_focal_loss(L.focal_loss, rules=False) is True
    assert checks.check_focal_loss(lambda z, y, g: torch.nn.functional.cross_entropy(z, y), rules=False) is False


# ------------------------------------------------------------------ named variants, first differences
def unweighted_ece(probs, labels, n_bins):  # every non-empty bin counts the same
    rb = M.reliability_bins(probs, labels, n_bins=n_bins)
    keep = rb.count > 0
    return float(np.abs(rb.gap[keep]).mean())


def loo_sece(probs, labels, h):  # sample i left out of its own smoothed accuracy
    c, pred = probs.max(1), probs.argmax(1)
    k = np.exp(-((c[:, None] - c[None]) ** 2) / (2 * h * h))
    np.fill_diagonal(k, 0.0)
    with np.errstate(invalid="ignore", divide="ignore"):
        return float(np.mean(np.abs(k @ (pred == labels) / k.sum(1) - c)))


def test_check_ece_names_the_unweighted_average_of_bin_gaps(capsys):
    assert checks.check_ece(unweighted_ece, rules=False) is False
    out = capsys.readouterr().out
    assert "UNWEIGHTED average of |acc - conf|" in out
    checks.check_ece(wrong_side_ece, rules=False)  # a different bug is not called unweighted
    assert "UNWEIGHTED" not in capsys.readouterr().out


def test_check_sece_names_the_leave_one_out_variant(capsys):
    assert checks.check_sece(loo_sece, rules=False) is False
    assert "LEAVE-ONE-OUT variant" in capsys.readouterr().out
    checks.check_sece(lambda p, y, h: M.sece(p, y, bandwidth=h, method="exact") + 0.01, rules=False)
    assert "LEAVE-ONE-OUT" not in capsys.readouterr().out


def test_array_checks_show_the_first_element_that_differs(capsys):
    iso = lambda pv, yv, pt: C.IsotonicCalibration().fit(pv, yv).predict_proba(pt)[:, 1]

    def one_off(pv, yv, pt):
        out = iso(pv, yv, pt).copy()
        out[7] += 0.01
        return out
    assert checks.check_isotonic(one_off, rules=False) is False
    out = capsys.readouterr().out
    pv, yv, pt = checks.lab3._binary_scores(0)
    assert f"1 of {pt.size} values differ; the first at index 7: expected {iso(pv, yv, pt)[7]:.6g}" in out
    assert f"(test score {pt[7]:.6g})" in out
    hb = lambda pv, yv, pt, n: C.HistogramBinning(n_bins=n).fit(pv, yv).predict_proba(pt)[:, 1]
    assert checks.check_histogram_binning(lambda pv, yv, pt, n: hb(pv, yv, pt, n)[::-1], rules=False) is False
    assert "the first at index 0" in capsys.readouterr().out

    def counts_off(p, y, n):
        rb = M.reliability_bins(p, y, n_bins=n)
        count = rb.count.copy()
        count[-1] += 1
        return rb.accuracy, rb.confidence, count
    assert checks.check_reliability_bins(counts_off, rules=False) is False
    assert "count: 1 of 5 values differ; the first at index 4" in capsys.readouterr().out


def test_strict_raises_the_report_and_prints_nothing(capsys):
    assert checks.check_ece(good_ece, strict=True, rules=False) is True
    with pytest.raises(checks.CheckFailure, match="UNWEIGHTED") as err:
        checks.check_ece(unweighted_ece, strict=True, rules=False)
    assert isinstance(err.value, AssertionError) and "check_ece: 1 passed, 5 failed" in str(err.value)
    assert capsys.readouterr().out == ""


def test_seeds_give_other_inputs_and_right_answers_pass_on_all(capsys):
    seen = []

    def recording(p, y, n):
        seen.append((p.tobytes(), n))
        return M.ece(p, y, n_bins=n)
    for seed in (0, 0, 12345):
        assert checks.check_ece(recording, seed=seed, rules=False) is True
    k = len(seen) // 3
    assert seen[:k] == seen[k: 2 * k] and not set(seen[:k]) & set(seen[2 * k:])
    for seed in (1, 987654):  # every reference passes its own check on other inputs too
        assert checks.check_temperature_scaling(good_ts, seed=seed, rules=False) is True
        assert checks.check_isotonic(lambda pv, yv, pt: C.IsotonicCalibration().fit(pv, yv).predict_proba(pt)[:, 1],
                                     seed=seed, rules=False) is True
        assert checks.check_sece(lambda p, y, h: M.sece(p, y, bandwidth=h, method="exact"), seed=seed,
                                 rules=False) is True
        assert checks.check_reliability_bins(
            lambda p, y, n: (lambda rb: (rb.accuracy, rb.confidence, rb.count))(M.reliability_bins(p, y, n_bins=n)),
            seed=seed, rules=False) is True
    with pytest.raises(ValueError, match="seed must be an integer >= 0"):
        checks.check_ece(good_ece, seed=-1, rules=False)


def test_not_a_function_and_unfilled_fail_once_with_a_reason(capsys):
    assert checks.check_mce(None, rules=False) is False
    assert "fn must be a function; got None" in capsys.readouterr().out
    assert checks.check_ece(unfilled, rules=False) is False
    out = capsys.readouterr().out
    assert "FAIL" not in out and "failed" not in out
    assert out.strip() == "check_ece: not written yet, its 6 cases not run"
    with pytest.raises(checks.CheckFailure, match="not written yet"):
        checks.check_ece(unfilled, strict=True, rules=False)

    calls = []

    def half_done(p, y, n_bins):  # passes the first case, then raises
        calls.append(1)
        if len(calls) > 1:
            raise NotImplementedError
        return M.ece(p, y, n_bins=n_bins)
    assert checks.check_ece(half_done, rules=False) is False
    out = capsys.readouterr().out
    assert "check_ece: 1 passed, 0 failed, then NotImplementedError: 5 cases not run" in out


# ------------------------------------------------------------------ the checks of the new exercises
def test_check_softmax_temperature():
    assert checks.check_softmax_temperature(lambda z, t: M.softmax(z / t), rules=False) is True
    naive = lambda z, t: np.exp(z / t) / np.exp(z / t).sum(1, keepdims=True)  # overflows at 1000
    with np.errstate(all="ignore"):
        assert checks.check_softmax_temperature(naive, rules=False) is False
    assert checks.check_softmax_temperature(lambda z, t: M.softmax(z * t), rules=False) is False


def test_check_grid_temperature_names_the_nll_optimum(capsys):
    from calibcourse.calibration.calibrators import TemperatureScaling

    def by(column):
        return lambda zv, yv, g, n: TemperatureScaling.grid(zv, yv, g, n_bins=n).best(column)
    assert checks.check_grid_temperature(by("ece"), rules=False) is True
    capsys.readouterr()
    assert checks.check_grid_temperature(by("nll"), rules=False) is False
    assert "your T is the grid's NLL optimum" in capsys.readouterr().out


def test_check_platt_against_sklearn_unpenalized():
    from scipy.special import logit
    from sklearn.linear_model import LogisticRegression

    def sk(pv, yv, pt, C=1e10):
        m = LogisticRegression(C=C, tol=1e-12, max_iter=10000).fit(logit(pv)[:, None], yv)
        return m.predict_proba(logit(pt)[:, None])[:, 1]
    assert checks.check_platt(sk, rules=False) is True
    # sklearn's default penalty
    assert checks.check_platt(lambda pv, yv, pt: sk(pv, yv, pt, C=1.0), rules=False) is False


def test_check_flsd53():
    assert checks.check_flsd53(L.flsd53_loss, rules=False) is True
    assert checks.check_flsd53(lambda z, y: L.focal_loss(z, y, 3.0), rules=False) is False
    assert checks.check_flsd53(lambda z, y: L.flsd53_loss(z, y).item(), rules=False) is False  # not differentiable


# ------------------------------------------------------------------ the labs' fourth graded parts
def good_ece_l2(probs, labels, n_bins):  # loops, independent of calibcourse's binning
    conf, pred = probs.max(1), probs.argmax(1)
    idx = np.searchsorted(np.linspace(0, 1, n_bins + 1)[1:-1], conf, side="left")
    total = sum((idx == m).mean() * ((pred[idx == m] == labels[idx == m]).mean() - conf[idx == m].mean()) ** 2
                for m in range(n_bins) if (idx == m).any())
    return float(np.sqrt(total))


def good_classwise(probs, labels, n_bins):
    edges = np.linspace(0, 1, n_bins + 1)
    per_class = []
    for k in range(probs.shape[1]):
        p, hit = probs[:, k], labels == k
        idx = np.searchsorted(edges[1:-1], p, side="left")
        per_class.append(sum((idx == m).mean() * abs(hit[idx == m].mean() - p[idx == m].mean())
                             for m in range(n_bins) if (idx == m).any()))
    return float(np.mean(per_class))


def top(s, y, n_bins):
    """The top-label ECE of binary scores, through the two-column route (independent of ``reliability=``)."""
    return M.ece(np.c_[1 - s, s], y, n_bins=n_bins)


@pytest.mark.parametrize("seed", [0, 7, 123456])
def test_fourth_parts_pass_independent_implementations_on_every_seed(seed, capsys):
    assert checks.check_ece_l2(good_ece_l2, seed=seed, rules=False) is True
    assert checks.check_classwise_ece(good_classwise, seed=seed, rules=False) is True
    torch_nll = lambda z, y, t: float(torch.nn.functional.cross_entropy(
        torch.as_tensor(z / t, dtype=torch.float64), torch.as_tensor(y)))
    assert checks.check_nll_temperature(torch_nll, seed=seed, rules=False) is True

    def paired(sa, sb, y, idx, n_bins):  # the bootstrap with np.quantile and its own loop, top-label by hand
        reps = np.empty(len(idx))
        for r, i in enumerate(idx):
            reps[r] = top(sa[i], y[i], n_bins) - top(sb[i], y[i], n_bins)
        return (top(sa, y, n_bins) - top(sb, y, n_bins), *np.quantile(reps, [0.025, 0.975]))
    assert checks.check_paired_difference(paired, seed=seed, rules=False) is True


def test_fourth_parts_catch_wrong_answers(capsys):
    # wrong bins, wrong norm
    assert checks.check_ece_l2(lambda p, y, n: wrong_side_ece(p, y, n) ** 0.5, rules=False) is False
    assert checks.check_ece_l2(lambda p, y, n: M.ece(p, y, n_bins=n), rules=False) is False        # the l1 ECE
    out = capsys.readouterr().out
    assert "SQUARED gaps" in out
    assert checks.check_classwise_ece(lambda p, y, n: M.ece(p, y, n_bins=n), rules=False) is False   # top-label only
    assert "bin p_k (every sample" in capsys.readouterr().out

    def naive_nll(z, y, t):  # log of a softmax that underflows
        e = np.exp(z / t - (z / t).max(1, keepdims=True))
        with np.errstate(divide="ignore"):
            return -np.mean(np.log((e / e.sum(1, keepdims=True))[np.arange(len(y)), y]))
    assert checks.check_nll_temperature(naive_nll, rules=False) is False
    out = capsys.readouterr().out
    assert "underflows" in out and "4 passed, 1 failed" in out
    assert checks.check_nll_temperature(lambda z, y, t: M.nll(M.softmax(z), y), rules=False) is False  # T ignored

    def percentile_90(sa, sb, y, idx, n_bins):
        d = [top(sa[i], y[i], n_bins) - top(sb[i], y[i], n_bins) for i in idx]
        return (top(sa, y, n_bins) - top(sb, y, n_bins), *np.percentile(d, [5, 95]))

    def mean_of_replicates(sa, sb, y, idx, n_bins):
        d = [top(sa[i], y[i], n_bins) - top(sb[i], y[i], n_bins) for i in idx]
        return (np.mean(d), *np.percentile(d, [2.5, 97.5]))

    def unpaired(sa, sb, y, idx, n_bins):
        d = [top(sa[i], y[i], n_bins) - top(sb[j], y[j], n_bins) for i, j in zip(idx, idx[::-1], strict=True)]
        return (top(sa, y, n_bins) - top(sb, y, n_bins), *np.percentile(d, [2.5, 97.5]))
    for wrong, where in ((percentile_90, "low"), (mean_of_replicates, "estimate"), (unpaired, "low")):
        assert checks.check_paired_difference(wrong, rules=False) is False, wrong.__name__
        assert f"({where})" in capsys.readouterr().out, wrong.__name__
    assert checks.check_paired_difference(lambda *a: (0.0, 0.0), rules=False) is False
    assert "expected (estimate, low, high)" in capsys.readouterr().out

    def positive_class(sa, sb, y, idx, n_bins):  # P(1) against the fraction of positives, not chapter 3's
        d = [M.ece(sa[i], y[i], n_bins=n_bins) - M.ece(sb[i], y[i], n_bins=n_bins) for i in idx]
        return (M.ece(sa, y, n_bins=n_bins) - M.ece(sb, y, n_bins=n_bins), *np.percentile(d, [2.5, 97.5]))
    assert checks.check_paired_difference(positive_class, rules=False) is False
    assert "positive class" in capsys.readouterr().out
    assert checks.check_paired_difference(lambda *a: (0.0, 0.0), rules=False) is False
    assert "expected (estimate, low, high)" in capsys.readouterr().out


# ------------------------------------------------------------------ hidden tests against known-wrong answers
def _hidden_seeds(lab, question, n=200):
    """The hidden test's seeds of ``n`` courses (one secret each), as the grader derives them."""
    from calibcourse.tools.assignments import hidden_seed

    return [hidden_seed(lab, question, secret=f"course {i}") for i in range(n)]


def _fails(check, fn, seed, **kwargs):
    """Whether ``fn`` fails ``check``'s hidden test of ``seed`` on its numbers (the rules off: a known-wrong
    answer must fail for being wrong). The check stops at its first failed case: the same verdict, sooner."""
    try:
        with first_failure_stops():
            check(fn, seed=seed, strict=True, rules=kwargs.pop("rules", False), **kwargs)
    except checks.CheckFailure:
        return True
    return False


def _grid(zv, yv, temperatures, n_bins, pick="first", weighted=True, measure="ece"):
    """The hand search written out, every T at once, with Guo's bins (no library): the T of the smallest
    validation ECE, the first one on ties (``pick="last"``: the last one; ``"largest"``: the largest ECE),
    or of the smallest NLL; ``weighted=False``: every non-empty bin counts the same. A course's variants:
    ``measure="equal-mass"`` (the confidences sorted stably, cut as np.array_split cuts them) or ``"l2"``."""
    t = np.asarray(temperatures, dtype=float)
    z = np.asarray(zv, dtype=float)[None] / t[:, None, None]
    z = z - z.max(axis=2, keepdims=True)
    if measure == "nll":
        values = -np.mean(z[:, np.arange(len(yv)), yv] - np.log(np.exp(z).sum(axis=2)), axis=1)
    else:
        p = np.exp(z) / np.exp(z).sum(axis=2, keepdims=True)
        conf, ok = p.max(axis=2), (p.argmax(axis=2) == yv)
        if measure == "equal-mass":
            cut = np.concatenate([np.full(len(c), m) for m, c in enumerate(np.array_split(np.arange(len(yv)), n_bins))])
            idx = np.empty(conf.shape, dtype=int)
            np.put_along_axis(idx, np.argsort(conf, axis=1, kind="stable"), cut[None].repeat(len(t), 0), axis=1)
        else:
            idx = np.searchsorted(np.linspace(0, 1, n_bins + 1)[1:-1], conf, side="left")
        rows = (idx + n_bins * np.arange(len(t))[:, None]).ravel()
        count = np.bincount(rows, minlength=len(t) * n_bins).reshape(len(t), n_bins)
        gap = np.abs(np.bincount(rows, (ok - conf).ravel(), len(t) * n_bins).reshape(len(t), n_bins))
        with np.errstate(invalid="ignore", divide="ignore"):
            mean_gap = np.where(count > 0, gap / count, np.nan)
        if measure == "l2":
            values = (np.nansum(count * mean_gap**2, axis=1) / len(yv) if weighted else
                      np.nanmean(mean_gap**2, axis=1)) ** 0.5
        elif weighted:
            values = gap.sum(axis=1) / len(yv)
        else:
            values = np.nanmean(mean_gap, axis=1)
    if pick == "largest":
        return temperatures[int(np.argmax(values))]
    best = np.flatnonzero(values == values.min())
    return temperatures[int(best[0] if pick == "first" else best[-1])]


GRID_WRONG = {
    "ignores n_bins (always 15)": lambda zv, yv, ts, n_bins: _grid(zv, yv, ts, 15),
    "the NLL optimum": lambda zv, yv, ts, n_bins: _grid(zv, yv, ts, n_bins, measure="nll"),
    "the largest ECE": lambda zv, yv, ts, n_bins: _grid(zv, yv, ts, n_bins, pick="largest"),
    "the last index on ties": lambda zv, yv, ts, n_bins: _grid(zv, yv, ts, n_bins, pick="last"),
    "the unweighted ECE": lambda zv, yv, ts, n_bins: _grid(zv, yv, ts, n_bins, weighted=False),
}


def _nll_naive(z, y, t):  # log of the softmax: -inf where the true class's probability underflows
    e = np.exp(z / t - (z / t).max(1, keepdims=True))
    with np.errstate(divide="ignore"):
        return -np.mean(np.log((e / e.sum(1, keepdims=True))[np.arange(len(y)), y]))


def _nll_right(z, y, t, scale=1.0):
    from scipy.special import log_softmax
    return -np.mean(log_softmax(z / (t * scale), axis=1)[np.arange(len(y)), y])


def _nll_global_max(z, y, t):  # log-sum-exp with one maximum for the whole array, not each row's
    z = np.asarray(z, float) / t
    z = z - z.max()
    with np.errstate(divide="ignore", invalid="ignore"):
        log_p = z - np.log(np.exp(z).sum(axis=1, keepdims=True))
    return -np.mean(log_p[np.arange(len(y)), y])


def _nll_clipped(z, y, t, how="clip"):  # the naive NLL with the log's argument kept above 0
    p = _softmax_t(z, t)[np.arange(len(y)), y]
    return -np.mean(np.log(np.clip(p, 1e-12, None) if how == "clip" else p + 1e-12))


NLL_WRONG = {
    "log of an underflowing softmax": _nll_naive,
    "forgets the temperature": lambda z, y, t: _nll_right(z, y, 1.0),
    "the sum, not the mean": lambda z, y, t: len(y) * _nll_right(z, y, t),
    "one maximum for the whole array": _nll_global_max,
    "the softmax clipped at 1e-12": _nll_clipped,
    "log(p + 1e-12)": lambda z, y, t: _nll_clipped(z, y, t, how="add"),
}


def _bin_stats(p, y, n_bins, side="left", shift=0):
    """(accuracy, confidence, count) per top-label bin: Guo et al.'s bins ((l, u], side="left") written
    out, or a student's mistake (bins closed on the left, side="right"; every sample one bin up)."""
    conf, ok = p.max(1), (p.argmax(1) == y)
    idx = np.clip(np.searchsorted(np.linspace(0, 1, n_bins + 1)[1:-1], conf, side=side) + shift, 0, n_bins - 1)
    cnt = np.bincount(idx, minlength=n_bins).astype(float)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.bincount(idx, ok, n_bins) / cnt, np.bincount(idx, conf, n_bins) / cnt, cnt


def _summary(acc, conf, cnt, weighted=True, l2=False, worst=False):
    keep = cnt > 0
    g = np.abs(acc[keep] - conf[keep])
    if worst:
        return float(g.max())
    w = cnt[keep] / cnt.sum() if weighted else np.full(keep.sum(), 1 / keep.sum())
    return float(np.sqrt(np.sum(w * g**2))) if l2 else float(np.sum(w * g))


LAB1 = {
    "q1": (checks.check_reliability_bins, _bin_stats, {
        "bins closed on the left": lambda p, y, n: _bin_stats(p, y, n, side="right"),
        "ignores n_bins": lambda p, y, n: _bin_stats(p, y, 15),
        "fractions, not counts": lambda p, y, n: (lambda a, c, k: (a, c, k / k.sum()))(*_bin_stats(p, y, n)),
        "every sample one bin up": lambda p, y, n: _bin_stats(p, y, n, shift=1)}),
    "q2": (checks.check_ece, lambda p, y, n: _summary(*_bin_stats(p, y, n)), {
        "unweighted": lambda p, y, n: _summary(*_bin_stats(p, y, n), weighted=False),
        "bins closed on the left": lambda p, y, n: _summary(*_bin_stats(p, y, n, side="right")),
        "ignores n_bins": lambda p, y, n: _summary(*_bin_stats(p, y, 15))}),
    "q3": (checks.check_mce, lambda p, y, n: _summary(*_bin_stats(p, y, n), worst=True), {
        "bins closed on the left": lambda p, y, n: _summary(*_bin_stats(p, y, n, side="right"), worst=True),
        "ignores n_bins": lambda p, y, n: _summary(*_bin_stats(p, y, 15), worst=True),
        "the ECE": lambda p, y, n: _summary(*_bin_stats(p, y, n))}),
    "q4": (checks.check_ece_l2, lambda p, y, n: _summary(*_bin_stats(p, y, n), l2=True), {
        "no square root": lambda p, y, n: _summary(*_bin_stats(p, y, n), l2=True) ** 2,
        "unweighted": lambda p, y, n: _summary(*_bin_stats(p, y, n), weighted=False, l2=True),
        "ignores n_bins": lambda p, y, n: _summary(*_bin_stats(p, y, 15), l2=True),
        "bins closed on the left": lambda p, y, n: _summary(*_bin_stats(p, y, n, side="right"), l2=True)}),
}
def _softmax_t(z, t, scale=None, axis=1, shift=True, dtype=float):
    """softmax(z / T) written out; or a mistake: z * scale, over the samples (axis=0), no maximum subtracted
    (shift=False), one maximum for the whole array (shift="global"), in float32 (dtype)."""
    z = np.asarray(z, dtype=dtype) / dtype(t) if scale is None else np.asarray(z, dtype=dtype) * scale
    if shift == "global":
        z = z - z.max()
    elif shift:
        z = z - z.max(axis=axis, keepdims=True)
    with np.errstate(over="ignore", invalid="ignore"):   # without the shift, exp(1000) overflows
        e = np.exp(z)
        return e / e.sum(axis=axis, keepdims=True)


def _t_nll(z, y):
    from scipy.optimize import minimize_scalar
    from scipy.special import log_softmax

    nll = lambda lt: -np.mean(log_softmax(z / np.exp(lt), axis=1)[np.arange(len(y)), y])  # noqa: E731
    return float(np.exp(minimize_scalar(nll, bounds=(-5, 5), method="bounded", options={"xatol": 1e-10}).x))


LAB2 = {
    "q1": (checks.check_softmax_temperature, _softmax_t, {
        "no max shift (overflows)": lambda z, t: _softmax_t(z, t, shift=False),
        "ignores T": lambda z, t: _softmax_t(z, 1.0),
        "multiplies by T": lambda z, t: _softmax_t(z, t, scale=t),
        "normalizes over the samples": lambda z, t: _softmax_t(z, t, axis=0),
        "one maximum for the whole array": lambda z, t: _softmax_t(z, t, shift="global"),
        "in float32": lambda z, t: _softmax_t(z, t, dtype=np.float32)}),
    "q2": (checks.check_temperature_scaling, lambda zv, yv, zt, yt: _softmax_t(zt, _t_nll(zv, yv)), {
        "fitted on the test split": lambda zv, yv, zt, yt: _softmax_t(zt, _t_nll(zt, yt)),
        "no calibration": lambda zv, yv, zt, yt: _softmax_t(zt, 1.0),
        "T multiplies": lambda zv, yv, zt, yt: _softmax_t(zt, 1.0, scale=_t_nll(zv, yv))}),
}
def _hist_binning(sv, yv, st, n_bins, side="left", empty="midpoint"):
    """Histogram binning written out: bins ((m-1)/M, m/M], an empty bin predicts its midpoint."""
    edges = np.linspace(0, 1, n_bins + 1)
    iv, it = (np.searchsorted(edges[1:-1], x, side=side) for x in (sv, st))
    cnt = np.bincount(iv, minlength=n_bins)
    with np.errstate(invalid="ignore"):
        mean = np.bincount(iv, yv, n_bins) / cnt
    return np.where(cnt > 0, mean, (edges[:-1] + edges[1:]) / 2 if empty == "midpoint" else 0.0)[it]


def _isotonic(sv, yv, st, oob="clip", increasing=True):
    from sklearn.isotonic import IsotonicRegression

    return IsotonicRegression(out_of_bounds=oob, increasing=increasing).fit(sv, yv).predict(st)


def _isotonic_steps(sv, yv, st):   # the fitted staircase without the interpolation between thresholds
    from sklearn.isotonic import IsotonicRegression

    m = IsotonicRegression(out_of_bounds="clip").fit(sv, yv)
    return m.y_thresholds_[np.clip(np.searchsorted(m.X_thresholds_, st, side="right") - 1, 0, None)]


def _logit(s):
    s = np.clip(s, 1e-12, 1 - 1e-12)
    return np.log(s / (1 - s))


def _platt(sv, yv, st, feature=_logit, C=np.inf):
    """Platt scaling written out: a logistic regression on one feature, fitted by Newton's method (with
    scikit-learn's penalty w**2 / (2 C) on the slope where C is finite; none by default)."""
    from scipy.special import expit

    X, y = np.c_[feature(sv), np.ones(len(sv))], np.asarray(yv, float)
    penalty = np.array([0.0 if np.isinf(C) else 1.0 / C, 0.0])
    w = np.zeros(2)
    for _ in range(100):
        q = expit(X @ w)
        step = np.linalg.solve((X * (q * (1 - q))[:, None]).T @ X + np.diag(penalty), X.T @ (q - y) + penalty * w)
        w -= step
        if np.abs(step).max() < 1e-13:
            break
    return expit(w[0] * feature(st) + w[1])


LAB3 = {
    "q1": (checks.check_histogram_binning, _hist_binning, {
        "bins closed on the left": lambda sv, yv, st, n: _hist_binning(sv, yv, st, n, side="right"),
        "an empty bin predicts 0": lambda sv, yv, st, n: _hist_binning(sv, yv, st, n, empty="zero"),
        "ignores n_bins": lambda sv, yv, st, n: _hist_binning(sv, yv, st, 15)}),
    "q2": (checks.check_isotonic, _isotonic, {
        "NaN outside the fitted range": lambda sv, yv, st: _isotonic(sv, yv, st, oob="nan"),
        "non-increasing": lambda sv, yv, st: _isotonic(sv, yv, st, increasing=False),
        "steps, not interpolation": _isotonic_steps}),
    "q3": (checks.check_platt, _platt, {
        "on the scores, not their logit": lambda sv, yv, st: _platt(sv, yv, st, feature=lambda s: s),
        "scikit-learn's default regularization": lambda sv, yv, st: _platt(sv, yv, st, C=1.0),
        "a bias alone (a = 1)": lambda sv, yv, st: 1 / (1 + np.exp(-(_logit(st) + _logit(yv.mean()))))}),
    "q4": (checks.check_paired_difference, lambda sa, sb, y, idx, n: _paired(sa, sb, y, idx, n), {
        "unpaired: other rows for the second calibrator": lambda sa, sb, y, idx, n: _paired(sa, sb, y, idx, n,
                                                                                             pair=False),
        "the positive class's ECE": lambda sa, sb, y, idx, n: _paired(sa, sb, y, idx, n, top=False),
        "a 90 % interval": lambda sa, sb, y, idx, n: _paired(sa, sb, y, idx, n, pct=(5, 95)),
        "the resamples' mean as the estimate": lambda sa, sb, y, idx, n: _paired(sa, sb, y, idx, n, mean=True)}),
}


def _eces(s, y, idx, n_bins, top=True):
    """The ECE of binary scores ``s`` on every row of ``idx`` at once (Guo's bins): top-label (the
    confidence max(s, 1 - s), the class s > 0.5) or of P(1) against the positives."""
    S, Y = s[idx], y[idx]
    conf, ok = (np.maximum(S, 1 - S), ((S > 0.5).astype(int) == Y)) if top else (S, Y.astype(float))
    b = np.searchsorted(np.linspace(0, 1, n_bins + 1)[1:-1], conf, side="left")
    rows = b + n_bins * np.arange(S.shape[0])[:, None]
    gap = np.bincount(rows.ravel(), (ok - conf).ravel(), S.shape[0] * n_bins).reshape(S.shape[0], n_bins)
    return np.abs(gap).sum(1) / S.shape[1]


def _paired(sa, sb, y, idx, n_bins, pair=True, top=True, pct=(2.5, 97.5), mean=False):
    """The paired bootstrap of an ECE difference, vectorized over the resamples."""
    every = np.arange(y.size)[None]
    d = _eces(sa, y, idx, n_bins, top) - _eces(sb, y, idx if pair else idx[::-1], n_bins, top)
    est = d.mean() if mean else (_eces(sa, y, every, n_bins, top) - _eces(sb, y, every, n_bins, top))[0]
    lo, hi = np.percentile(d, pct)
    return float(est), float(lo), float(hi)
def _sece(p, y, h, leave_one_out=False, box=False):
    """SECE written out: the Gaussian-kernel smoothed accuracy at each top-label confidence."""
    p = np.asarray(p, dtype=float)
    conf, right = p.max(1), (p.argmax(1) == y).astype(float)
    k = np.subtract.outer(conf, conf)
    if box:
        k = (np.abs(k) <= h).astype(float)
    else:  # exp(-(c_i - c_j)^2 / (2 h^2)), in place: n^2 values
        np.square(k, out=k)
        k *= -0.5 / h**2
        np.exp(k, out=k)
    if leave_one_out:
        np.fill_diagonal(k, 0.0)
    return float(np.mean(np.abs(k @ right / k.sum(1) - conf)))


def _focal(z, y, gamma, total=False, sign=1.0):
    logp = torch.log_softmax(z, dim=1).gather(1, y[:, None])[:, 0]
    loss = -((1 - logp.exp()) ** (sign * gamma)) * logp
    return loss.sum() if total else loss.mean()


def _flsd(z, y, low=3.0, high=5.0, threshold=0.2):
    logp = torch.log_softmax(z, dim=1).gather(1, y[:, None])[:, 0]
    pt = logp.exp()
    gamma = torch.where(pt < threshold, torch.full_like(pt, high), torch.full_like(pt, low))
    return (-((1 - pt) ** gamma) * logp).mean()


def _classwise(p, y, n_bins, side="left", total=False):
    p = np.asarray(p, dtype=float)
    per_class = []
    for k in range(p.shape[1]):
        idx = np.searchsorted(np.linspace(0, 1, n_bins + 1)[1:-1], p[:, k], side=side)
        per_class.append(np.abs(np.bincount(idx, (y == k) - p[:, k], n_bins)).sum() / len(y))
    return float(np.sum(per_class) if total else np.mean(per_class))


LAB4 = {
    "q1": (checks.check_sece, _sece, {
        "leave-one-out": lambda p, y, h: _sece(p, y, h, leave_one_out=True),
        "a box kernel": lambda p, y, h: _sece(p, y, h, box=True),
        "ignores the bandwidth": lambda p, y, h: _sece(p, y, 0.05)}),
    "q2": (checks.check_focal_loss, _focal, {
        "the sum, not the mean": lambda z, y, g: _focal(z, y, g, total=True),
        "plain cross-entropy": lambda z, y, g: torch.nn.functional.cross_entropy(z, y),
        "(1 - p)^(-gamma)": lambda z, y, g: _focal(z, y, g, sign=-1.0)}),
    "q3": (checks.check_flsd53, _flsd, {
        "the two gammas swapped": lambda z, y: _flsd(z, y, low=5.0, high=3.0),
        "gamma 3 everywhere": lambda z, y: _flsd(z, y, high=3.0),
        "the threshold at 0.5": lambda z, y: _flsd(z, y, threshold=0.5)}),
    "q4": (checks.check_classwise_ece, _classwise, {
        "the top-label ECE": lambda p, y, n: M.ece(p, y, n_bins=n),
        "summed over the classes": lambda p, y, n: _classwise(p, y, n, total=True),
        "ignores n_bins": lambda p, y, n: _classwise(p, y, 15),
        "bins closed on the left": lambda p, y, n: _classwise(p, y, n, side="right")}),
}
HIDDEN_CASES = [("lab1_ece", q, *LAB1[q]) for q in LAB1] + [("lab2_temperature", q, *LAB2[q]) for q in LAB2] + [
    ("lab3_binning", q, *LAB3[q]) for q in LAB3] + [("lab4_sece_focal", q, *LAB4[q]) for q in LAB4] + [
    ("lab2_temperature", "q3", checks.check_grid_temperature,
     _grid, GRID_WRONG),
    ("lab2_temperature", "q4", checks.check_nll_temperature, _nll_right, NLL_WRONG)]


def _log_softmax_t(z, t, shift=True, dtype=float, scale=None):
    """log softmax(z / T) written out; or a mistake, as :func:`_softmax_t`'s."""
    z = np.asarray(z, dtype=dtype) / dtype(t) if scale is None else np.asarray(z, dtype=dtype) * scale
    z = z - (z.max() if shift == "global" else z.max(axis=1, keepdims=True) if shift else 0)
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        return z - np.log(np.exp(z).sum(axis=1, keepdims=True))


def _t_brier(z, y):
    onehot = np.eye(z.shape[1])[y]
    brier = lambda lt: np.mean(np.sum((_softmax_t(z, np.exp(lt)) - onehot) ** 2, axis=1))  # noqa: E731
    return float(np.exp(minimize_scalar(brier, bounds=(-5, 5), method="bounded", options={"xatol": 1e-10}).x))


BITS = np.log(2.0)
#: a course's variants of Lab 2 (checks.lab2.VARIANTS): (question, check, variant, right, known-wrong answers)
VARIANT_CASES = [
    ("q1", checks.check_softmax_temperature, "log-probabilities", _log_softmax_t, {
        "the log of the softmax (underflows)": lambda z, t: np.log(_softmax_t(z, t)),
        "one maximum for the whole array": lambda z, t: _log_softmax_t(z, t, shift="global"),
        "no max shift (overflows)": lambda z, t: _log_softmax_t(z, t, shift=False),
        "ignores T": lambda z, t: _log_softmax_t(z, 1.0),
        "multiplies by T": lambda z, t: _log_softmax_t(z, t, scale=t),
        "in float32": lambda z, t: _log_softmax_t(z, t, dtype=np.float32)}),
    ("q2", checks.check_temperature_scaling, "brier", lambda zv, yv, zt, yt: _softmax_t(zt, _t_brier(zv, yv)), {
        "fitted on the test split": lambda zv, yv, zt, yt: _softmax_t(zt, _t_brier(zt, yt)),
        "no calibration": lambda zv, yv, zt, yt: _softmax_t(zt, 1.0),
        "T multiplies": lambda zv, yv, zt, yt: _softmax_t(zt, 1.0, scale=_t_brier(zv, yv))}),
    ("q3", checks.check_grid_temperature, "equal-mass",
     lambda zv, yv, ts, n: _grid(zv, yv, ts, n, measure="equal-mass"), {
        "the last index on ties": lambda zv, yv, ts, n: _grid(zv, yv, ts, n, pick="last", measure="equal-mass"),
        "ignores n_bins (always 15)": lambda zv, yv, ts, n: _grid(zv, yv, ts, 15, measure="equal-mass"),
        "the largest error": lambda zv, yv, ts, n: _grid(zv, yv, ts, n, pick="largest", measure="equal-mass"),
        "the NLL optimum": lambda zv, yv, ts, n: _grid(zv, yv, ts, n, measure="nll")}),
    ("q3", checks.check_grid_temperature, "l2", lambda zv, yv, ts, n: _grid(zv, yv, ts, n, measure="l2"), {
        "the last index on ties": lambda zv, yv, ts, n: _grid(zv, yv, ts, n, pick="last", measure="l2"),
        "unweighted": lambda zv, yv, ts, n: _grid(zv, yv, ts, n, weighted=False, measure="l2"),
        "ignores n_bins (always 15)": lambda zv, yv, ts, n: _grid(zv, yv, ts, 15, measure="l2"),
        "the NLL optimum": lambda zv, yv, ts, n: _grid(zv, yv, ts, n, measure="nll")}),
    ("q4", checks.check_nll_temperature, "bits", lambda z, y, t: _nll_right(z, y, t) / BITS, {
        "log of an underflowing softmax": lambda z, y, t: _nll_naive(z, y, t) / BITS,
        "one maximum for the whole array": lambda z, y, t: _nll_global_max(z, y, t) / BITS,
        "the softmax clipped at 1e-12": lambda z, y, t: _nll_clipped(z, y, t) / BITS,
        "forgets the temperature": lambda z, y, t: _nll_right(z, y, 1.0) / BITS,
        "log10": lambda z, y, t: _nll_right(z, y, t) / np.log(10.0),
        "the sum, not the mean": lambda z, y, t: len(y) * _nll_right(z, y, t) / BITS}),
]


@pytest.mark.parametrize("question, check, variant, right, wrong", VARIANT_CASES,
                         ids=[f"{c[1].__name__} {c[2]}" for c in VARIANT_CASES])
def test_a_course_s_variant_catches_its_known_wrong_answers_on_every_seed(question, check, variant, right, wrong):
    """A course with its own secret grades Lab 2's variants (tools.handout.course_variant): each variant's
    hidden test is as strong as the published exercise's, every known-wrong answer of it failing on every one
    of 200 courses' secrets and an independent right answer passing on all of them (the published solution,
    wrong for every variant, is tests/test_labs.py's)."""
    seeds = _hidden_seeds("lab2_temperature", question)
    passed = {name: [] for name in wrong}
    for s in seeds:
        assert not _fails(check, right, s, variant=variant), s
        for name, fn in wrong.items():
            with np.errstate(all="ignore"):
                if not _fails(check, fn, s, variant=variant):
                    passed[name].append(s)
    for name, seeds_passed in passed.items():
        assert not seeds_passed, f"{name!r} passes the hidden test on {len(seeds_passed)} of {len(seeds)} seeds"


@pytest.mark.parametrize("lab, question, check, right, wrong", HIDDEN_CASES,
                         ids=[f"{c[0]} {c[1]} {c[2].__name__}" for c in HIDDEN_CASES])
def test_hidden_tests_catch_known_wrong_answers_on_every_seed(lab, question, check, right, wrong):
    """The hidden tests are at least as strong as the public checks: each known-wrong answer (at least
    three per graded part) fails the hidden test, and so loses its points, on every one of 200 courses'
    secret seeds, and an independent right answer passes on all of them. (Before: the naive NLL passed
    Lab 2's hidden test on 112 of 200 seeds, a grid search that ignores n_bins on 35 of 60, and Lab 1's
    ECE with bins closed on the left on most seeds, a histogram binning whose empty bins predict 0 on 176 of
    200, a class-wise ECE with bins closed on the left on 68 of 200.)"""
    seeds = _hidden_seeds(lab, question)
    passed = {name: [] for name in wrong}
    for s in seeds:  # seed by seed: a check's reference for a seed is computed once (checks caches it)
        assert not _fails(check, right, s), s
        for name, fn in wrong.items():
            if not _fails(check, fn, s):
                passed[name].append(s)
    for name, seeds_passed in passed.items():
        assert not seeds_passed, f"{name!r} passes the hidden test on {len(seeds_passed)} of {len(seeds)} seeds"


@pytest.mark.parametrize("lab, question, check, right, wrong", HIDDEN_CASES,
                         ids=[f"{c[0]} {c[1]} {c[2].__name__}" for c in HIDDEN_CASES])
def test_hidden_reports_show_no_inputs_or_expected_values(lab, question, check, right, wrong):
    """What a student reads of a failed hidden test (the grader's feedback prints it): the case's kind,
    what went wrong and the hint, and no number but the cases' indices and counts, so neither a hidden
    input (a size, a bin count, a temperature) nor an expected value; the public report shows both."""
    seed = _hidden_seeds(lab, question)[0]
    for name, fn in wrong.items():
        with pytest.raises(checks.CheckFailure) as hidden:
            check(fn, seed=seed, strict=True, rules=False)
        text = str(hidden.value)
        assert "FAIL  hidden case" in text and "expected" not in text, (name, text)
        body = "\n".join(line for line in text.splitlines() if not line.strip().startswith("hint:"))
        # the tolerance that decides a numeric case is stated: a fixed number of the check, no input
        differs = [line for line in text.splitlines() if "differs from the reference implementation's" in line]
        assert all("by more than the tolerance (" in line for line in differs), (name, text)
        stray = re.findall(r"\d+(?:\.\d+)?", re.sub(r"hidden case \d+|\d+ passed|\d+ failed|check_\w+|"
                                                     r"the tolerance \([^)]*\)|float32|float64", "", body))
        assert not stray, (name, stray, text)  # the hints are fixed sentences, the same for every case
        try:  # the public check of the same answer names the input and the expected value, and the tolerance
            check(fn, seed=0, strict=True, rules=False)
        except checks.CheckFailure as public:
            assert "expected" in str(public) or "differ" in str(public) or "match" in str(public), str(public)
            if differs:  # a numeric case failed the hidden test: the public one that fails says its tolerance
                assert "(the tolerance: " in str(public) or "raised" in str(public), (name, str(public))


# ------------------------------------------------------------------ the rules: what an exercise may not call
def _helper_softmax(z):  # a helper in another module that hands over the library's answer
    return M.softmax(z)


def _exec_softmax():  # code made at run time: the call is what counts, not how it is written
    namespace = {"metrics": M}
    exec("def f(z, t):\n    return getattr(metrics, 'soft' + 'max')(z / t)", namespace)
    return namespace["f"]


def _torch_nll(z, y, t, how):
    zt, yt = torch.as_tensor(np.asarray(z, float) / t), torch.as_tensor(y)
    if how == "cross_entropy":
        return float(torch.nn.functional.cross_entropy(zt, yt))
    if how == "module":
        return float(torch.nn.CrossEntropyLoss()(zt, yt))
    if how == "logsumexp":
        return float((torch.logsumexp(zt, 1) - zt[torch.arange(len(y)), yt]).mean())
    return float(-zt.log_softmax(1)[torch.arange(len(y)), yt].mean())


def _scipy_nll(z, y, t, how):
    from scipy.special import log_softmax, logsumexp
    z = np.asarray(z, float) / t
    if how == "logsumexp":
        return float(np.mean(logsumexp(z, axis=1) - z[np.arange(len(y)), y]))
    return float(-np.mean(log_softmax(z, axis=1)[np.arange(len(y)), y]))


def _sums(p, y, n_bins):
    """(count, sum of confidences, sum of outcomes) per top-label bin, Guo's bins, written with numpy."""
    conf, ok = p.max(1), (p.argmax(1) == y).astype(float)
    idx = np.searchsorted(np.linspace(0, 1, n_bins + 1)[1:-1], conf, side="left")
    return (np.bincount(idx, minlength=n_bins).astype(float), np.bincount(idx, conf, n_bins),
            np.bincount(idx, ok, n_bins))


def _binned(sums):
    """binning.bin_sums' (count, [sum of scores, sum of outcomes], edges) as ece_from_sums takes them."""
    count, (sum_conf, sum_out), _ = sums
    return count, sum_conf, sum_out


def _pava_isotonic(sv, yv, st):
    """Isotonic regression by scipy's compiled PAVA (scipy.optimize._pava_pybind), interpolated as sklearn's."""
    from scipy.optimize._pava_pybind import pava

    x, inv = np.unique(np.asarray(sv, dtype=float), return_inverse=True)
    count = np.bincount(inv).astype(float)
    fitted = pava(np.bincount(inv, np.asarray(yv, dtype=float)) / count, count, np.zeros(len(x) + 1, dtype=np.intp))[0]
    return np.interp(np.asarray(st, dtype=float), x, fitted)


def _routes():
    """Per check, ways to hand over the library's (or an equivalent library's) answer instead of writing it."""
    import functools

    import scipy.special as sp
    from scipy.special._logsumexp import _logsumexp
    from sklearn.isotonic import IsotonicRegression
    from sklearn.linear_model import LogisticRegression
    from sklearn.metrics import log_loss
    from sklearn.utils.extmath import softmax as sk_softmax

    from calibcourse.calibration import binning, kernels
    from calibcourse.calibration._arrays import ece_from_sums, softmax_rows
    sm = M.softmax  # an alias
    return {
        checks.check_softmax_temperature: {
            "np.exp(metrics.log_softmax(z / T))": lambda z, t: np.exp(M.log_softmax(z / t)),
            "getattr(metrics, 'soft' + 'max')": lambda z, t: getattr(M, "soft" + "max")(z / t),
            "an alias of metrics.softmax": lambda z, t: sm(z / t),
            "functools.partial(metrics.softmax)": lambda z, t: functools.partial(M.softmax, axis=1)(z / t),
            "a helper in another module": lambda z, t: _helper_softmax(z / t),
            "code made by exec": _exec_softmax(),
            "metrics.logits_to_probs": lambda z, t: M.logits_to_probs(z / t),
            "scipy.special.softmax": lambda z, t: sp.softmax(z / t, axis=1),
            "np.exp(scipy.special.log_softmax)": lambda z, t: np.exp(sp.log_softmax(z / t, axis=1)),
            "scikit-learn's softmax": lambda z, t: sk_softmax(np.array(z / t)),
            "torch.softmax": lambda z, t: torch.softmax(torch.as_tensor(z / t), 1).numpy(),
            "Tensor.log_softmax().exp()": lambda z, t: torch.as_tensor(z / t).log_softmax(1).exp().numpy(),
            "nn.Softmax": lambda z, t: torch.nn.Softmax(dim=1)(torch.as_tensor(z / t)).numpy(),
            "the toolkit's private softmax": lambda z, t: softmax_rows(np.asarray(z / t, dtype=float)),
            "scipy's private logsumexp": lambda z, t: np.exp(z / t - np.reshape(_logsumexp(
                np.asarray(z / t, dtype=float), None, axis=1, return_sign=False, xp=np), (-1, 1)))},
        checks.check_temperature_scaling: {
            "TemperatureScaling": lambda zv, yv, zt, yt: C.TemperatureScaling().fit(zv, yv).predict_proba(zt),
            "getattr(calibrators, ...)": lambda zv, yv, zt, yt: getattr(C, "Temperature" + "Scaling")().fit(
                zv, yv).predict_proba(zt)},
        checks.check_grid_temperature: {
            "TemperatureScaling.grid": lambda zv, yv, ts, n: C.TemperatureScaling.grid(zv, yv, ts, n_bins=n).best()},
        checks.check_nll_temperature: {
            "torch's cross_entropy": lambda z, y, t: _torch_nll(z, y, t, "cross_entropy"),
            "nn.CrossEntropyLoss": lambda z, y, t: _torch_nll(z, y, t, "module"),
            "torch.logsumexp": lambda z, y, t: _torch_nll(z, y, t, "logsumexp"),
            "Tensor.log_softmax": lambda z, y, t: _torch_nll(z, y, t, "log_softmax"),
            "scipy.special.log_softmax": lambda z, y, t: _scipy_nll(z, y, t, "log_softmax"),
            "scipy.special.logsumexp": lambda z, y, t: _scipy_nll(z, y, t, "logsumexp"),
            "metrics.nll": lambda z, y, t: M.nll(M.softmax(z / t), y),
            "np.log(np.exp(metrics.log_softmax))": lambda z, y, t: -np.mean(
                np.log(np.exp(M.log_softmax(z / t)))[np.arange(len(y)), y]),
            "scikit-learn's log_loss": lambda z, y, t: log_loss(y, _softmax_t(z, t), labels=np.arange(z.shape[1]))},
        checks.check_ece: {
            "getattr(metrics, 'e' + 'ce')": lambda p, y, n: getattr(M, "e" + "ce")(p, y, n_bins=n),
            "the toolkit's ECE of per-bin sums": lambda p, y, n: float(ece_from_sums(*_sums(p, y, n), "l1")),
            "binning.uniform_edges": lambda p, y, n: good_ece(p, y, n) + 0 * binning.uniform_edges(n).sum()},
        checks.check_histogram_binning: {
            "HistogramBinning": lambda sv, yv, st, n: C.HistogramBinning(n_bins=n).fit(sv, yv).predict_proba(st)[:, 1],
            "metrics.reliability_bins' bin means": lambda sv, yv, st, n: np.nan_to_num(M.reliability_bins(
                sv, yv, n_bins=n, reliability="positive_class").accuracy, nan=0.5)[
                np.searchsorted(np.linspace(0, 1, n + 1)[1:-1], st, side="left")]},
        checks.check_isotonic: {
            "scikit-learn's IsotonicRegression": lambda sv, yv, st: IsotonicRegression(out_of_bounds="clip").fit(
                sv, yv).predict(st),
            "scipy's compiled pool-adjacent-violators": _pava_isotonic},
        checks.check_platt: {
            "scikit-learn's LogisticRegression": lambda sv, yv, st: LogisticRegression(C=1e10).fit(
                _logit(sv)[:, None], yv).predict_proba(_logit(st)[:, None])[:, 1]},
        checks.check_sece: {
            "metrics.sece": lambda p, y, h: M.sece(p, y, bandwidth=h, method="exact"),
            "the kernel regression under metrics.sece": lambda p, y, h: float(np.mean(np.abs(
                kernels.kernel_regression(p.max(1), p.max(1), (p.argmax(1) == y).astype(float), h)[0] - p.max(1))))},
        checks.check_focal_loss: {"the course's focal loss": L.focal_loss},
        checks.check_classwise_ece: {
            "metrics.classwise_ece": lambda p, y, n: M.classwise_ece(p, y, n_bins=n),
            "binning.bin_sums and the ECE of per-bin sums": lambda p, y, n: float(np.mean([
                ece_from_sums(*_binned(binning.bin_sums(p[:, k], p[:, k], (y == k).astype(float), n_bins=n)), "l1")
                for k in range(p.shape[1])]))},
    }


def test_a_call_the_exercise_forbids_fails_the_check_whatever_its_route(capsys):
    """The rules watch what the function calls, not how it is spelled: every route to the library's answer (or
    an equivalent's) fails the check shown in the notebook, and names what it called; the same numbers
    written with numpy pass."""
    for check, routes in _routes().items():
        for name, fn in routes.items():
            with np.errstate(all="ignore"):
                assert check(fn) is False, (check.__name__, name)
            out = capsys.readouterr().out
            assert "which this exercise does not allow" in out and "then stopped" in out, (check.__name__, name, out)
    assert checks.check_softmax_temperature(lambda z, t: _softmax_t(z, t)) is True
    assert checks.check_nll_temperature(_nll_right) is False  # scipy.special.log_softmax is not allowed there
    assert "scipy.special.log_softmax" in capsys.readouterr().out
    assert checks.check_grid_temperature(_grid) is True
    assert checks.check_ece(good_ece) is True
    assert checks.check_ece(good_ece, rules=False) is True


@pytest.mark.parametrize("check", list(_routes()), ids=lambda c: c.__name__)
def test_a_forbidden_route_fails_the_hidden_test_on_every_seed(check):
    """The graded tests run the same check, so a route to the library's answer loses the hidden points on every
    one of 200 courses' seeds too (and says why, in words that name no input)."""
    lab, question = next((lab, q) for lab, q, c, *_ in HIDDEN_CASES if c is check)
    routes = _routes()[check]
    for seed in _hidden_seeds(lab, question):
        for fn in routes.values():
            with pytest.raises(checks.CheckFailure, match="which this exercise does not allow"):
                with np.errstate(all="ignore"):
                    check(fn, seed=seed, strict=True)


def test_the_watch_cannot_be_turned_off_from_inside():
    import sys
    import threading

    def sneaky(z, t):
        sys.setprofile(None)  # the watch off, then the library's answer
        return M.softmax(z / t)

    def threaded(z, t):
        out = {}
        worker = threading.Thread(target=lambda: out.update(p=M.softmax(z / t)))
        worker.start()
        worker.join()
        return out["p"]
    for fn, what in ((sneaky, "sys.setprofile"), (threaded, "calibcourse.calibration.metrics.softmax")):
        with pytest.raises(checks.CheckFailure, match=what):
            checks.check_softmax_temperature(fn, strict=True)
    assert sys.getprofile() is None and threading.getprofile() is None


def test_the_paired_check_s_bootstrap_is_the_library_s_ece_on_every_resample():
    """The paired check computes its reference's resamples at once; each equals metrics.ece on that resample."""
    from calibcourse.study.course.checks import lab3

    for seed, i, n_bins in ((0, 0, 15), (7, 1, 10)):
        sa, sb, y, idx = lab3._paired_case(seed, i)
        looped = np.array([M.ece(sa[r], y[r], n_bins=n_bins, reliability="top_label") for r in idx[:40]])
        assert np.allclose(lab3._top_label_eces(sa, y, idx[:40], n_bins), looped, rtol=0, atol=1e-14)
