"""calibcourse.calibration.stats: intervals against closed forms and scipy, the verdict rule, and the coverage
and false-"held" rates of the book's intervals, measured on synthetic predictions with known truth.

The rates asserted here are the ones the appendix on coverage reports (it recomputes them); the tolerances are
wide enough for the Monte-Carlo noise of a few hundred replications (binomial SE about 0.02).
"""
import numpy as np
import pytest
from scipy import stats as sps

from calibcourse.calibration import metrics as M
from calibcourse.calibration import stats
from calibcourse.calibration.synthetic import SyntheticCalibration


# --------------------------------------------------------------------------- the verdict rule
@pytest.mark.parametrize("low, high, null, direction, expected", [
    (-0.3, -0.1, 0.0, "below", "held"),
    (0.1, 0.3, 0.0, "below", "not held"),
    (-0.1, 0.1, 0.0, "below", "inconclusive"),
    (0.1, 0.3, 0.0, "above", "held"),
    (-0.3, -0.1, 0.0, "above", "not held"),
    (-0.5, -0.3, -0.23, "below", "held"),        # "lowers by at least 23 %"
    (-0.2, -0.1, -0.23, "below", "not held"),    # lowers, but by less than claimed
    (-0.3, -0.1, -0.23, "below", "inconclusive"),
    (0.3, 0.6, 0.25, "above", "held"),
    (-0.1, 0.0, 0.0, "below", "inconclusive"),   # touching the null is not "wholly below"
])
def test_verdict_rule(low, high, null, direction, expected):
    assert stats.verdict(low, high, null=null, direction=direction) == expected


@pytest.mark.parametrize("kwargs, match", [
    ({"low": 0.2, "high": 0.1}, "low must not exceed high"),
    ({"low": 0.0, "high": float("nan")}, "high must be a finite number"),
    ({"low": 0.0, "high": 1.0, "direction": "lower"}, "direction must be"),
    ({"low": 0.0, "high": 1.0, "null": None}, "null must be a finite number"),
])
def test_verdict_bad_input(kwargs, match):
    with pytest.raises(ValueError, match=match):
        stats.verdict(**kwargs)


# --------------------------------------------------------------------------- against references
def _paired_binary(n=3000, seed=0):
    rng = np.random.default_rng(seed)
    q = rng.uniform(0.05, 0.95, n)
    y = (rng.random(n) < q).astype(int)
    a = np.clip(q + rng.normal(0, 0.15, n), 0.001, 0.999)
    b = np.clip(q + rng.normal(0, 0.30, n), 0.001, 0.999)
    return a, b, y


def test_paired_error_difference_matches_closed_form():
    """Paired proportions: difference (b - c) / n, Wald variance (b + c - (b - c)^2 / n) / n^2."""
    a, b, y = _paired_binary()
    ea, eb = (a > 0.5) != y, (b > 0.5) != y
    n = len(y)
    nb, nc = int(np.sum(ea & ~eb)), int(np.sum(~ea & eb))
    d = (nb - nc) / n
    se = np.sqrt(nb + nc - (nb - nc) ** 2 / n) / n
    z = sps.norm.ppf(0.975)
    r = stats.paired_difference(M.error, a, b, y, n_boot=4000, seed=1, method="percentile")
    assert r.estimate == pytest.approx(d, abs=1e-12)
    assert r.low == pytest.approx(d - z * se, abs=0.12 * z * se)
    assert r.high == pytest.approx(d + z * se, abs=0.12 * z * se)
    # the error difference is a mean of per-sample terms: no bias to correct
    bc = stats.paired_difference(M.error, a, b, y, n_boot=4000, seed=1)
    assert bc.estimate == pytest.approx(d, abs=0.1 * se)


def test_paired_difference_matches_scipy_bootstrap():
    """The Brier difference with scipy.stats.bootstrap(paired=True) as the reference."""
    a, b, y = _paired_binary(seed=3)
    ta, tb = (a - y) ** 2, (b - y) ** 2
    ref = sps.bootstrap((ta, tb), lambda u, v: np.mean(u) - np.mean(v), paired=True, vectorized=False,
                        n_resamples=3000, method="basic", random_state=0).confidence_interval
    ours = stats.paired_difference(M.brier, a, b, y, n_boot=3000, seed=0, method="basic")
    width = ref.high - ref.low
    assert ours.estimate == pytest.approx(np.mean(ta) - np.mean(tb), abs=1e-12)
    assert ours.low == pytest.approx(ref.low, abs=0.06 * width)
    assert ours.high == pytest.approx(ref.high, abs=0.06 * width)


def test_relative_change_and_fast_paths_agree_with_the_plain_metric():
    a, b, y = _paired_binary(seed=4)
    rel = stats.paired_difference(M.ece, a, b, y, n_boot=200, relative=True, method="percentile",
                                  reliability="positive_class")
    expected = M.ece(a, y, reliability="positive_class") / M.ece(b, y, reliability="positive_class") - 1
    assert rel.estimate == pytest.approx(expected, rel=1e-12)
    # the fast resampling paths give the metric exactly on any resample
    idx = np.random.default_rng(0).integers(0, len(y), len(y))
    probs = np.stack([1 - a, a], 1)
    for metric, kw in ((M.ece, {}), (M.mce, {}), (M.nll, {}), (M.brier, {}), (M.error, {}),
                       (M.ece, {"n_bins": 7, "norm": "l2"})):
        full, f = stats._engine._resampler(metric, probs, y, kw)
        assert f(idx) == pytest.approx(metric(probs[idx], y[idx], **kw), rel=1e-10, abs=1e-12)


def test_interval_contains_its_estimate_and_corrects_the_bias():
    """A perfectly calibrated predictor (true ECE 0): the plug-in ECE and the percentile interval
    sit above the truth; the default estimate is the plug-in ECE itself, the corrected estimate
    (only when asked) is lower, and each stays inside its own interval."""
    sc = SyntheticCalibration(power=1.0)
    pc_misses = 0
    for seed in range(20):
        p, y = sc.sample(1000, seed=seed)
        plain = stats.interval(M.ece, p, y, n_boot=200, seed=seed)
        assert plain.estimate == plain.plugin == M.ece(p, y)
        assert plain.low <= plain.estimate <= plain.high
        bc = stats.interval(M.ece, p, y, n_boot=200, seed=seed, bias_corrected=True)
        assert bc.low <= bc.estimate <= bc.high
        assert 0 <= bc.estimate < bc.plugin == plain.estimate
        pc = stats.interval(M.ece, p, y, n_boot=200, seed=seed, method="percentile")
        assert pc.estimate == bc.plugin
        pc_misses += pc.low > 0
    assert pc_misses == 20


def test_paired_estimate_is_the_plain_difference_by_default():
    """The issue's example: the default estimate is ``ece(a) - ece(b)`` exactly, not the
    bias-corrected ``2 * plugin - mean(replicates)``, which is only returned when asked."""
    a, b, y = _paired_binary(seed=5)
    kw = {"reliability": "positive_class"}
    plain = M.ece(a, y, **kw) - M.ece(b, y, **kw)
    d = stats.paired_difference(M.ece, a, b, y, n_boot=300, seed=2, **kw)
    assert d.estimate == plain and d.plugin == plain
    assert d.low <= d.estimate <= d.high
    reps = [M.ece(a[i], y[i], **kw) - M.ece(b[i], y[i], **kw) for i in stats.resample_indices(len(y), 300, 2)]
    bc = stats.paired_difference(M.ece, a, b, y, n_boot=300, seed=2, bias_corrected=True, **kw)
    assert bc.estimate == pytest.approx(2 * plain - np.mean(reps), rel=1e-9)
    assert bc.low <= bc.estimate <= bc.high
    # the hull interval is the same with or without the corrected estimate, when it holds it
    assert (d.low, d.high) == pytest.approx((min(d.low, bc.estimate), max(d.high, bc.estimate)))
    # the plug-in ratio, and the hull of the bootstrap of that plug-in ratio
    rel = stats.paired_difference(M.ece, a, b, y, n_boot=300, seed=2, relative=True, **kw)
    ratio_reps = np.array([M.ece(a[i], y[i], **kw) / M.ece(b[i], y[i], **kw) - 1
                           for i in stats.resample_indices(len(y), 300, 2)])
    q_lo, q_hi = np.quantile(ratio_reps, [0.025, 0.975])
    r = M.ece(a, y, **kw) / M.ece(b, y, **kw) - 1
    assert rel.estimate == pytest.approx(r, rel=1e-12)
    assert rel.low == pytest.approx(min(q_lo, 2 * r - q_hi, r))
    assert rel.high == pytest.approx(max(q_hi, 2 * r - q_lo, r))


def test_seeds_estimate_is_the_plain_mean_by_default():
    rng = np.random.default_rng(3)
    q = rng.uniform(0.5, 1, 2000)
    y = (rng.random(2000) < q).astype(int)
    runs = [np.clip(q + s, 0, 1) for s in (0.05, 0.07, 0.09)]
    r = stats.seeds_interval(M.ece, runs, y, n_boot=100, reliability="positive_class")
    mean = np.mean([M.ece(p, y, reliability="positive_class") for p in runs])
    assert r.estimate == pytest.approx(mean, rel=1e-12)
    assert r.low <= r.estimate <= r.high
    bc = stats.seeds_interval(M.ece, runs, y, n_boot=100, bias_corrected=True,
                              reliability="positive_class")
    kw = {"reliability": "positive_class"}
    reps = [np.mean([M.ece(p[i], y[i], **kw) for p in runs]) for i in stats.resample_indices(len(y), 100, 0)]
    assert bc.estimate == pytest.approx(2 * mean - np.mean(reps), rel=1e-9)
    assert bc.plugin == r.estimate and bc.low <= bc.estimate <= bc.high
    m = stats.seeds_interval(M.mce, runs, y, n_boot=100, reliability="positive_class")
    assert m.estimate == pytest.approx(np.mean([M.mce(p, y, reliability="positive_class") for p in runs]))


def test_bootstrap_statistic_of_a_mean_matches_the_t_interval():
    x = np.random.default_rng(2).normal(3.0, 2.0, 500)
    r = stats.bootstrap_statistic(np.mean, x, n_boot=4000, method="percentile")
    lo, hi = sps.t.interval(0.95, len(x) - 1, loc=x.mean(), scale=sps.sem(x))
    assert r.low == pytest.approx(lo, abs=0.1 * (hi - lo))
    assert r.high == pytest.approx(hi, abs=0.1 * (hi - lo))


def test_seeds_interval_is_the_t_interval_when_the_test_set_adds_nothing():
    """Error rates of seeds evaluated on a huge test set: the seed part dominates."""
    rng = np.random.default_rng(0)
    n, k = 200_000, 3
    y = np.zeros(n, dtype=int)
    errs = [0.10, 0.12, 0.14]
    probs = []
    for e in errs:
        p = np.full(n, 0.2)
        p[rng.random(n) < e] = 0.8      # predicted class 1 (wrong) on about a fraction e
        probs.append(p)
    r = stats.seeds_interval(M.error, probs, y, n_boot=50)
    per_seed = np.array([M.error(p, y) for p in probs])
    lo, hi = sps.t.interval(0.95, k - 1, loc=per_seed.mean(), scale=per_seed.std(ddof=1) / np.sqrt(k))
    assert r.n_seeds == k
    assert r.low == pytest.approx(lo, abs=0.02 * (hi - lo))
    assert r.high == pytest.approx(hi, abs=0.02 * (hi - lo))


def test_detectable_effect_is_2_8_standard_errors():
    d = stats.Difference(0.0, -1.96, 1.96, 0.95)
    assert d.detectable(0.8) == pytest.approx(1.96 + 0.8416, abs=1e-3)


@pytest.mark.parametrize("call, match", [
    (lambda p, y: stats.interval("ece", p, y), "metric must be callable"),
    (lambda p, y: stats.interval(M.ece, p, y, n_boot=5), "n_boot must be an integer >= 10"),
    (lambda p, y: stats.interval(M.ece, p, y, level=95), "level must be in"),
    (lambda p, y: stats.interval(M.ece, p, y, method="bca"), "method must be one of"),
    (lambda p, y: stats.paired_difference(M.ece, p, p[:10], y), "probs_b"),
    (lambda p, y: stats.paired_difference(M.ece, p, p[:, :2], y), "probs_b"),
    (lambda p, y: stats.seeds_difference(M.ece, p, [p], y), "probs_a_list must be a list"),
    (lambda p, y: stats.seeds_difference(M.ece, [p, p[:10]], [p], y), r"probs_a_list\[1\]"),
    # a bias correction means nothing for a maximum or a ratio
    (lambda p, y: stats.interval(M.mce, p, y, bias_corrected=True), "maximum"),
    (lambda p, y: stats.interval(M.ece, p, y, norm="max", bias_corrected=True), "maximum"),
    (lambda p, y: stats.paired_difference(M.ece, p, p, y, relative=True, bias_corrected=True), "ratio"),
    (lambda p, y: stats.paired_difference(M.mce, p, p, y, bias_corrected=True), "maximum"),
    (lambda p, y: stats.seeds_difference(M.ece, [p], [p], y, relative=True, bias_corrected=True), "ratio"),
    (lambda p, y: stats.interval(M.ece, p, y, bias_corrected="yes"), "bias_corrected must be"),
])
def test_bad_input_names_the_argument(call, match):
    p, y = SyntheticCalibration().sample(100, seed=0)
    with pytest.raises(ValueError, match=match):
        call(p, y)


# --------------------------------------------------------------------------- coverage, measured
from calibcourse.study.analysis.coverage import coverage_single, false_held_rate  # noqa: E402


@pytest.mark.slow  # a coverage simulation: make test, not make test-fast
def test_coverage_of_the_single_ece_interval():
    # clearly overconfident (true ECE 11 %) and mildly so (2.5 %): nominal coverage
    assert coverage_single(2.0, 1000, 150, "hull") >= 0.90
    assert coverage_single(1.2, 1000, 100, "hull") >= 0.88
    # perfectly calibrated: the percentile bootstrap never covers 0, the default often does
    assert coverage_single(1.0, 1000, 100, "percentile") <= 0.02
    assert coverage_single(1.0, 1000, 100, "hull") >= 0.5


@pytest.mark.slow  # a coverage simulation: make test, not make test-fast
def test_false_held_rate_of_paired_verdicts():
    """Two-sided rate of 'held' for equally calibrated predictors (nominal 5 % at level 0.95).

    The percentile interval is anti-conservative when the two estimators' biases differ; the
    bias-corrected basic interval when the gaps are comparable to the noise (measured: 21 % at
    n = 1000); the default hull of the two stays near the nominal rate in both.
    """
    assert false_held_rate("shifted", 1000, 150, "hull") <= 0.10
    assert false_held_rate("calibrated", 1000, 100, "hull") <= 0.10
    assert false_held_rate("calibrated", 1000, 100, "percentile") >= 0.2


# ------------------------------------------------------------------ seeds paired by seed
def _paired_seed_predictions(n_seeds=6, n=2000, seed=0):
    rng = np.random.default_rng(seed)
    q = rng.uniform(0.5, 1, n)
    y = (rng.random(n) < q).astype(int)
    shared = rng.uniform(0.0, 0.06, n_seeds)               # what a seed fixes for both methods (overconfidence)
    a = [np.clip(q + 0.03 + s + rng.normal(0, 0.003), 0, 1) for s in shared]
    b = [np.clip(q + s, 0, 1) for s in shared]
    return a, b, y


def test_paired_seeds_without_test_part_is_scipys_paired_t_interval():
    a, b, y = _paired_seed_predictions()
    d = stats.paired_seeds_difference(M.ece, a, b, y, n_boot=0, reliability="positive_class")
    va = [M.ece(p, y, reliability="positive_class") for p in a]
    vb = [M.ece(p, y, reliability="positive_class") for p in b]
    ci = sps.ttest_rel(va, vb).confidence_interval(0.95)
    assert d.estimate == pytest.approx(np.mean(va) - np.mean(vb), rel=1e-12)
    assert (d.low, d.high) == pytest.approx((ci.low, ci.high), rel=1e-10)
    assert d.df == pytest.approx(len(a) - 1) and d.v_test == 0.0
    np.testing.assert_allclose(d.per_seed, np.subtract(va, vb), rtol=1e-12)
    assert d.n_positive == int(np.sum(np.subtract(va, vb) > 0)) and d.sign_text.endswith(f"of {len(a)} seeds")


def test_paired_seeds_with_one_seed_is_the_paired_bootstrap():
    a, b, y = _paired_seed_predictions(n_seeds=1)
    d = stats.paired_seeds_difference(M.ece, a, b, y, n_boot=400, seed=3, reliability="positive_class")
    ref = stats.paired_difference(M.ece, a[0], b[0], y, n_boot=400, seed=3, reliability="positive_class")
    # the same plug-in estimate; a normal interval of the same replicates
    assert d.estimate == pytest.approx(ref.estimate, rel=1e-10) and d.v_seed == 0.0 and np.isinf(d.df)
    basic = stats.paired_difference(M.ece, a[0], b[0], y, n_boot=400, seed=3, method="basic",
                                    reliability="positive_class")
    assert (d.high - d.low) == pytest.approx(basic.high - basic.low, rel=0.15)


def test_paired_seeds_interval_adds_both_parts_and_is_narrower_than_unpaired():
    a, b, y = _paired_seed_predictions()
    d = stats.paired_seeds_difference(M.ece, a, b, y, n_boot=300, reliability="positive_class")
    seeds_only = stats.paired_seeds_difference(M.ece, a, b, y, n_boot=0, reliability="positive_class")
    assert d.v_test > 0 and d.v_seed == pytest.approx(seeds_only.v_seed)
    assert (d.high - d.low) > (seeds_only.high - seeds_only.low)
    welch = stats.seeds_difference(M.ece, a, b, y, n_boot=300, reliability="positive_class")
    assert (d.high - d.low) < (welch.high - welch.low)   # what the seeds share cancels when paired
    assert d.sign_text == "worse in 6 of 6 seeds"


def test_paired_seeds_rejects_unpaired_input():
    a, b, y = _paired_seed_predictions()
    with pytest.raises(ValueError, match="same seeds"):
        stats.paired_seeds_difference(M.ece, a, b[:-1], y)
    with pytest.raises(ValueError, match="n_boot must be 0"):
        stats.paired_seeds_difference(M.ece, a, b, y, n_boot=5)


def test_the_ledger_says_more_seeds_not_more_data_when_the_seed_spread_dominates():
    from calibcourse.study.analysis.ledger import Ledger

    rng = np.random.default_rng(5)
    n = 20000
    q = rng.uniform(0.5, 1, n)
    y = (rng.random(n) < q).astype(int)
    # three seeds whose effect varies a lot from seed to seed: undecided, and only seeds would help
    a = [np.clip(q + s, 0, 1) for s in (0.0, 0.03, 0.06)]
    b = [np.clip(q + 0.02, 0, 1)] * 3
    d = stats.paired_seeds_difference(M.ece, a, b, y, n_boot=200, reliability="positive_class")
    assert d.v_seed > d.v_test
    c = Ledger(5, glue=False).claim("x", "a is worse calibrated", "wang2023", "ECE(a) - ECE(b)", d,
                                    direction="above")
    assert c.verdict == "inconclusive" and c.n_seeds == 3
    assert "seeds would decide it" in c.why and "more test data cannot" in c.why and "of 3 seeds" in c.why
    # the number of seeds it names does decide it at the same mean difference and spread
    k = int(c.why.split("about ")[1].split(" seeds")[0])
    s2 = d.v_seed * d.n_seeds
    assert sps.t.ppf(0.975, k - 1) * np.sqrt(d.v_test + s2 / k) < abs(d.estimate)
    assert sps.t.ppf(0.975, k - 2) * np.sqrt(d.v_test + s2 / (k - 1)) >= abs(d.estimate)


# --------------------------------------------------------------------------- one against every rival
def _rival_setup():
    rng = np.random.default_rng(3)
    q = rng.uniform(0.4, 1, 3000)
    y = (rng.random(3000) < q).astype(int)
    return q, y


def test_rivals_difference_is_built_from_each_rivals_paired_interval_at_both_levels():
    q, y = _rival_setup()
    a = np.clip(q + 0.03, 0, 1)
    rivals = {"calibrated": q, "worse": np.clip(q + 0.08, 0, 1), "under": np.clip(q - 0.04, 0, 1)}
    kw = dict(n_boot=300, reliability="positive_class")
    d = stats.rivals_difference(M.ece, a, rivals, y, **kw)
    plain = {r: stats.paired_difference(M.ece, a, p, y, **kw) for r, p in rivals.items()}
    bonf = {r: stats.paired_difference(M.ece, a, p, y, level=1 - 0.05 / 3, **kw) for r, p in rivals.items()}
    assert d.high == max(x.high for x in plain.values())
    assert d.low == max(x.low for x in bonf.values())
    assert d.estimate == max(M.ece(a, y, reliability="positive_class") - M.ece(p, y, reliability="positive_class")
                             for p in rivals.values())
    assert d.low <= d.estimate <= d.high
    # the verdict is the intersection-union / Bonferroni rule
    iut = all(x.high < 0 for x in plain.values())
    some_better = any(x.low > 0 for x in bonf.values())
    expected = "held" if iut else "not held" if some_better else "inconclusive"
    assert stats.verdict(d.low, d.high) == expected == "not held"
    assert d.better == tuple(r for r in rivals if bonf[r].low > 0) and "calibrated" in d.better


def test_rivals_difference_needs_every_rival_beaten_to_hold():
    q, y = _rival_setup()
    kw = dict(n_boot=300, reliability="positive_class")
    far = {"+0.06": np.clip(q + 0.06, 0, 1), "+0.12": np.clip(q + 0.12, 0, 1)}
    d = stats.rivals_difference(M.ece, q, far, y, **kw)
    assert stats.verdict(d.low, d.high) == "held" and d.closest == "+0.06"
    # a rival equal to the predictor itself: it cannot be beaten, nor does it beat it
    tie = stats.rivals_difference(M.ece, q, {**far, "itself": q.copy()}, y, **kw)
    assert stats.verdict(tie.low, tie.high) == "inconclusive" and tie.closest == "itself"
    assert tie.better == ()


def test_rivals_decisive_comparison_has_one_level_and_the_same_verdict():
    """The composite interval joins a Bonferroni lower end to a 95 % upper end; decisive() gives one
    rival's interval at one level, with the verdict of the composite, in each of the three cases."""
    q, y = _rival_setup()
    kw = dict(n_boot=300, reliability="positive_class")
    cases = {"held": (q, {"+0.06": np.clip(q + 0.06, 0, 1), "+0.12": np.clip(q + 0.12, 0, 1)}),
             "not held": (np.clip(q + 0.03, 0, 1), {"calibrated": q, "worse": np.clip(q + 0.08, 0, 1)}),
             "inconclusive": (q, {"itself": q.copy(), "+0.06": np.clip(q + 0.06, 0, 1)})}
    for expected, (a, rivals) in cases.items():
        d = stats.rivals_difference(M.ece, a, rivals, y, **kw)
        rival, one = d.decisive()
        assert stats.verdict(d.low, d.high) == expected == stats.verdict(one.low, one.high), expected
        bonferroni = 1 - 0.05 / len(rivals)
        # both ends from one paired interval, at the level it carries
        own = stats.paired_difference(M.ece, a, rivals[rival], y, level=one.level, **kw)
        assert (one.low, one.high) == pytest.approx((own.low, own.high)), expected
        assert one.level == pytest.approx(0.95 if expected == "held" else bonferroni), expected
    # the mixed interval really has two levels: its lower end is not the 95 % lower end of its rival
    d = stats.rivals_difference(M.ece, *cases["not held"], y, **kw)
    assert d.low != d.per_rival[d.decisive()[0]].low


def test_rivals_difference_rejects_bad_rivals():
    q, y = _rival_setup()
    with pytest.raises(ValueError, match="rivals must be a non-empty dict"):
        stats.rivals_difference(M.ece, q, {}, y, n_boot=50)
    with pytest.raises(ValueError, match=r"rivals\['short'\]"):
        stats.rivals_difference(M.ece, q, {"short": q[:10]}, y, n_boot=50)
