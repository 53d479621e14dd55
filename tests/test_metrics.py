"""calibcourse.calibration.metrics against independent references, closed forms and bad input."""
import numpy as np
import pytest
import torch
from conftest import make_predictions

from calibcourse.calibration import metrics as M
from calibcourse.calibration.report import calibration_report

CASES = [(200, 2, 0), (1000, 3, 1), (5000, 10, 2), (3000, 100, 3)]


# ------------------------------------------------------------------ peers
@pytest.mark.parametrize("n,k,seed", CASES)
@pytest.mark.parametrize("norm", ["l1", "l2", "max"])
@pytest.mark.parametrize("n_bins", [5, 15, 40])
def test_ece_matches_torchmetrics(n, k, seed, norm, n_bins):
    from torchmetrics.functional.classification import multiclass_calibration_error

    p, y = make_predictions(n, k, seed)
    ref = multiclass_calibration_error(torch.tensor(p), torch.tensor(y), num_classes=k,
                                       n_bins=n_bins, norm=norm).item()
    assert M.ece(p, y, n_bins=n_bins, norm=norm) == pytest.approx(ref, abs=1e-6)


@pytest.mark.parametrize("n,k,seed", CASES)
def test_ece_and_mce_match_netcal(n, k, seed):
    from netcal.metrics import ECE, MCE

    p, y = make_predictions(n, k, seed)
    # netcal reads a two-column input as binary and measures P(y = 1), not the top label
    mode = "positive_class" if k == 2 else "top_label"
    assert M.ece(p, y, n_bins=15, reliability=mode) == pytest.approx(ECE(bins=15).measure(p, y), abs=1e-9)
    assert M.mce(p, y, n_bins=15, reliability=mode) == pytest.approx(MCE(bins=15).measure(p, y), abs=1e-9)


@pytest.mark.parametrize("strategy", ["uniform", "quantile"])
def test_positive_class_reliability_matches_sklearn_calibration_curve(strategy):
    from sklearn.calibration import calibration_curve

    rng = np.random.default_rng(4)
    p1 = rng.beta(2, 3, 4000)
    y = (rng.random(4000) < p1 ** 1.3).astype(int)
    prob_true, prob_pred = calibration_curve(y, p1, n_bins=10, strategy=strategy)
    rb = M.reliability_bins(p1, y, n_bins=10, strategy=strategy, reliability="positive_class")
    keep = rb.count > 0
    np.testing.assert_allclose(rb.accuracy[keep], prob_true, atol=1e-12)
    np.testing.assert_allclose(rb.confidence[keep], prob_pred, atol=1e-12)


@pytest.mark.parametrize("n,k,seed", CASES[:3])
def test_smooth_ece_matches_relplot(n, k, seed):
    import relplot

    p, y = make_predictions(n, k, seed)
    conf, pred = M.top_label(p)
    ref = relplot.smECE(conf, (pred == y).astype(float))
    assert M.smooth_ece(p, y) == pytest.approx(ref, abs=1e-4)


def test_smooth_ece_positive_class_matches_relplot():
    import relplot

    rng = np.random.default_rng(7)
    p1 = rng.uniform(size=3000)
    y = (rng.random(3000) < np.sqrt(p1)).astype(int)
    assert M.smooth_ece(p1, y, reliability="positive_class") == pytest.approx(
        relplot.smECE(p1, y.astype(float)), abs=1e-4)


@pytest.mark.parametrize("n,k,seed", CASES[:3])
def test_debiased_ece_matches_kumar_reference(n, k, seed):
    import calibration as kumar  # uncertainty-calibration, the authors' package

    p, y = make_predictions(n, k, seed)
    ref = kumar.lower_bound_scaling_ce(p, y, p=2, debias=True, num_bins=15, mode="top-label")
    assert M.debiased_ece(p, y, n_bins=15) == pytest.approx(ref, abs=1e-9)
    plug_in = kumar.lower_bound_scaling_ce(p, y, p=2, debias=False, num_bins=15, mode="top-label")
    assert M.ece(p, y, n_bins=15, strategy="quantile", norm="l2") == pytest.approx(plug_in, abs=1e-9)


def test_ace_is_equal_mass_top_label_ece():
    import calibration as kumar

    p, y = make_predictions(2000, 10, 5)
    ref = kumar.lower_bound_scaling_ce(p, y, p=1, debias=False, num_bins=15, mode="top-label")
    assert M.ace(p, y, n_bins=15) == pytest.approx(ref, abs=1e-9)


def naive_classwise_ece(p, y, n_bins):
    total = 0.0
    n, k = p.shape
    edges = np.linspace(0, 1, n_bins + 1)
    for c in range(k):
        for m in range(n_bins):
            lo, hi = edges[m], edges[m + 1]
            inb = (p[:, c] > lo) & (p[:, c] <= hi) if m > 0 else (p[:, c] >= lo) & (p[:, c] <= hi)
            if inb.any():
                total += inb.sum() / n * abs(np.mean(y[inb] == c) - p[inb, c].mean())
    return total / k


@pytest.mark.parametrize("n,k,seed", CASES[:3])
def test_classwise_ece_matches_a_naive_loop(n, k, seed):
    p, y = make_predictions(n, k, seed)
    assert M.classwise_ece(p, y, n_bins=15) == pytest.approx(naive_classwise_ece(p, y, 15), abs=1e-12)


def test_classwise_ece_of_binary_is_positive_class_ece():
    rng = np.random.default_rng(3)
    p1 = rng.uniform(0.001, 0.999, 3000)
    y = (rng.random(3000) < p1 ** 2).astype(int)
    assert M.classwise_ece(p1, y, n_bins=10) == pytest.approx(
        M.ece(p1, y, n_bins=10, reliability="positive_class"), abs=1e-12)


def test_nll_brier_error_match_sklearn():
    from sklearn.metrics import accuracy_score, brier_score_loss, log_loss

    p, y = make_predictions(2000, 10, 0)
    assert M.nll(p, y) == pytest.approx(log_loss(y, p, labels=range(10)), rel=1e-10)
    assert M.error(p, y) == pytest.approx(1 - accuracy_score(y, p.argmax(1)))
    onehot = np.eye(10)[y]
    assert M.brier(p, y) == pytest.approx(np.mean(np.sum((p - onehot) ** 2, 1)), rel=1e-12)
    p1 = p[:, 0] / (p[:, 0] + p[:, 1])
    yb = (y % 2).astype(int)
    assert M.brier(p1, yb) == pytest.approx(brier_score_loss(yb, p1), rel=1e-12)
    assert M.nll(p1, yb) == pytest.approx(log_loss(yb, p1), rel=1e-10)


def test_softmax_is_stable_and_matches_scipy():
    from scipy.special import softmax as sp_softmax

    z = np.array([[1000.0, 1001.0, 999.0], [-5.0, 0.0, 5.0]])
    np.testing.assert_allclose(M.softmax(z), sp_softmax(z, axis=1), rtol=1e-12)
    assert np.all(np.isfinite(M.softmax(z)))
    t = torch.tensor(z, requires_grad=True)
    out = M.softmax(t)
    assert isinstance(out, torch.Tensor) and out.requires_grad
    np.testing.assert_allclose(M.log_softmax(z), np.log(sp_softmax(z, axis=1)), rtol=1e-10)


# ------------------------------------------------------------------ conventions and closed forms
def test_bin_edges_are_closed_on_the_right_with_0_and_1_included():
    # 5 bins: (0,.2] (.2,.4] (.4,.6] (.6,.8] (.8,1]; binary positive-class view
    p1 = np.array([0.0, 0.2, 0.4, 0.6, 0.8, 1.0])
    y = np.array([0, 1, 0, 1, 0, 1])
    rb = M.reliability_bins(p1, y, n_bins=5, reliability="positive_class")
    np.testing.assert_array_equal(rb.count, [2, 1, 1, 1, 1])
    np.testing.assert_allclose(rb.confidence, [0.1, 0.4, 0.6, 0.8, 1.0])
    np.testing.assert_allclose(rb.accuracy, [0.5, 0.0, 1.0, 0.0, 1.0])
    # ECE by hand: (2*.4 + .4 + .4 + .8 + 0)/6
    assert M.ece(p1, y, n_bins=5, reliability="positive_class") == pytest.approx(2.4 / 6)
    assert M.mce(p1, y, n_bins=5, reliability="positive_class") == pytest.approx(0.8)


def test_edge_values_differ_from_torchmetrics_convention_as_documented():
    from torchmetrics.functional.classification import binary_calibration_error

    p1 = np.array([0.2, 0.3])
    y = np.array([1, 0])
    ours = M.ece(p1, y, n_bins=5, reliability="positive_class")
    # ours: 0.2 in (0, .2] (gap .8), 0.3 in (.2, .4] (gap .3)
    assert ours == pytest.approx((0.8 + 0.3) / 2)
    # torchmetrics: both in [.2, .4): acc .5, conf .25
    theirs = binary_calibration_error(torch.tensor(p1), torch.tensor(y), n_bins=5).item()
    assert theirs == pytest.approx(0.25)


@pytest.mark.parametrize("name", [m for m in M.MEASURES if m != "brier"])
def test_binary_input_asked_top_label_is_the_two_column_matrix(name):
    # brier is the exception, documented: sklearn's binary Brier score is half the two-column one
    fn = M.MEASURES[name]
    rng = np.random.default_rng(2)
    p1 = rng.uniform(size=500)
    y = rng.integers(0, 2, 500)
    two = np.stack([1 - p1, p1], 1)
    kw = {"reliability": "top_label"} if name in M.CALIBRATION_ERRORS else {}
    assert fn(p1, y, **kw) == pytest.approx(fn(two, y), abs=1e-12)


@pytest.mark.parametrize("name", M.CALIBRATION_ERRORS)
def test_binary_input_of_shape_n_means_p_of_class_1_by_default(name):
    fn = M.CALIBRATION_ERRORS[name]
    rng = np.random.default_rng(12)
    p1 = rng.uniform(size=700)
    y = (rng.random(700) < p1**2).astype(int)
    assert fn(p1, y) == pytest.approx(fn(p1, y, reliability="positive_class"), abs=1e-15)
    assert fn(torch.tensor(p1), torch.tensor(y)) == pytest.approx(fn(p1, y), abs=1e-15)
    assert fn(p1.tolist(), y.tolist()) == pytest.approx(fn(p1, y), abs=1e-15)
    two = np.stack([1 - p1, p1], 1)  # a matrix is still measured top-label by default
    assert fn(two, y) == pytest.approx(fn(two, y, reliability="top_label"), abs=1e-15)


@pytest.mark.parametrize("norm", ["l1", "l2", "max"])
@pytest.mark.parametrize("n_bins", [5, 15, 40])
def test_binary_ece_of_shape_n_matches_torchmetrics_binary_calibration_error(norm, n_bins):
    from torchmetrics.functional.classification import binary_calibration_error

    rng = np.random.default_rng(n_bins)
    p1 = rng.uniform(0.001, 0.999, 3000)
    p1 = p1[np.abs(p1 * n_bins - np.round(p1 * n_bins)) > 1e-9]  # off the edges, where the conventions differ
    y = (rng.random(p1.size) < p1**1.5).astype(int)
    ref = binary_calibration_error(torch.tensor(p1), torch.tensor(y), n_bins=n_bins, norm=norm).item()
    assert M.ece(p1, y, n_bins=n_bins, norm=norm) == pytest.approx(ref, abs=1e-6)  # no reliability= needed


@pytest.mark.parametrize("strategy", ["uniform", "quantile"])
def test_binary_reliability_bins_of_shape_n_match_sklearn_calibration_curve_by_default(strategy):
    from sklearn.calibration import calibration_curve

    rng = np.random.default_rng(5)
    p1 = rng.beta(2, 3, 4000)
    y = (rng.random(4000) < p1 ** 1.3).astype(int)
    prob_true, prob_pred = calibration_curve(y, p1, n_bins=10, strategy=strategy)
    rb = M.reliability_bins(p1, y, n_bins=10, strategy=strategy)
    keep = rb.count > 0
    np.testing.assert_allclose(rb.accuracy[keep], prob_true, atol=1e-12)
    np.testing.assert_allclose(rb.confidence[keep], prob_pred, atol=1e-12)


@pytest.mark.parametrize("name", M.CALIBRATION_ERRORS)
def test_every_calibration_error_takes_reliability(name):
    fn = M.CALIBRATION_ERRORS[name]
    rng = np.random.default_rng(8)
    p1 = rng.uniform(size=600)
    y = (rng.random(600) < p1**2).astype(int)
    two = np.stack([1 - p1, p1], 1)
    pos = fn(p1, y, reliability="positive_class")
    assert pos == pytest.approx(fn(two, y, reliability="positive_class"), abs=1e-12)
    if name != "classwise_ece":  # class-wise over [1 - p, p] is the positive-class error already
        assert pos != pytest.approx(fn(p1, y, reliability="top_label"), abs=1e-4), "P(y = 1) is not the top label"
    if name in ("sece", "smooth_ece"):  # kernel measures: the mirrored problem (1 - p, 1 - y) has the same error
        assert pos == pytest.approx(fn(1 - p1, 1 - y, reliability="positive_class"), abs=1e-9)
    assert fn(p1, y, reliability="top_label") == pytest.approx(fn(two, y), abs=1e-12)
    assert fn(p1, y) == pytest.approx(pos, abs=1e-15)  # (n,) means P(y = 1) unless asked
    with pytest.raises(ValueError, match="positive_class.*binary"):
        fn(GOOD_P, GOOD_Y, reliability="positive_class")
    with pytest.raises(ValueError, match="reliability must be one of"):
        fn(p1, y, reliability="class1")


def test_reliability_of_ace_and_classwise_ece():
    rng = np.random.default_rng(9)
    p1 = rng.uniform(size=1000)
    y = (rng.random(1000) < p1**2).astype(int)
    assert M.ace(p1, y, reliability="positive_class") == pytest.approx(
        M.ece(p1, y, strategy="quantile", reliability="positive_class"), abs=1e-15)
    assert M.ace(p1, y, reliability="positive_class") != pytest.approx(M.ace(p1, y, reliability="top_label"), abs=1e-3)
    assert M.classwise_ece(p1, y, n_bins=10, reliability="positive_class") == pytest.approx(
        M.ece(p1, y, n_bins=10, reliability="positive_class"), abs=1e-15)


def test_constant_predictor_ece_is_gap_to_accuracy():
    n = 1000
    y = np.r_[np.ones(700, int), np.zeros(300, int)]
    p1 = np.full(n, 0.83)
    for bins in (1, 10, 15, 100):
        assert M.ece(p1, y, n_bins=bins, reliability="positive_class") == pytest.approx(0.13)
        assert M.mce(p1, y, n_bins=bins, reliability="positive_class") == pytest.approx(0.13)
    probs = np.tile([0.83, 0.1, 0.07], (n, 1))
    labels = np.where(np.arange(n) < 700, 0, 1)
    assert M.ece(probs, labels) == pytest.approx(0.13)


def test_perfectly_calibrated_predictor_ece_tends_to_zero():
    rng = np.random.default_rng(0)
    values = []
    for n in (1000, 10000, 100000):
        c = rng.uniform(size=n)
        a = (rng.uniform(size=n) < c).astype(int)
        values.append(M.ece(c, a, n_bins=15, reliability="positive_class"))
    assert values[0] > values[1] > values[2]
    assert values[2] < 0.01
    # debiased l2 stays near zero already at small n
    c = rng.uniform(size=1000)
    a = (rng.uniform(size=1000) < c).astype(int)
    assert M.debiased_ece(c, a, reliability="positive_class") < M.ece(
        c, a, norm="l2", strategy="quantile", reliability="positive_class")


@pytest.mark.parametrize("name", M.MEASURES)
def test_torch_and_numpy_inputs_agree(name):
    fn = M.MEASURES[name]
    p, y = make_predictions(800, 5, 1)
    assert fn(torch.tensor(p), torch.tensor(y)) == pytest.approx(fn(p, y), abs=1e-12)
    assert fn(p.tolist(), y.tolist()) == pytest.approx(fn(p, y), abs=1e-12)
    pf = torch.tensor(p, dtype=torch.float32)
    assert fn(pf, torch.tensor(y)) == pytest.approx(fn(p, y), abs=1e-5)


def test_quantile_bins_have_equal_mass():
    p, y = make_predictions(1003, 10, 9)
    rb = M.reliability_bins(p, y, n_bins=10, strategy="quantile")
    assert sorted(set(rb.count.tolist())) == [100.0, 101.0]
    assert np.all(np.diff(rb.edges) >= 0)


# ------------------------------------------------------------------ SECE
def naive_sece(conf, correct, h):
    k = np.exp(-((conf[:, None] - conf[None, :]) ** 2) / (2 * h * h))
    return np.mean(np.abs(k @ correct / k.sum(1) - conf))


def test_sece_exact_matches_naive_formula():
    p, y = make_predictions(700, 4, 0)
    conf, pred = M.top_label(p)
    for h in (0.02, 0.05, 0.2):
        assert M.sece(p, y, bandwidth=h, method="exact") == pytest.approx(
            naive_sece(conf, (pred == y).astype(float), h), abs=1e-12)


def test_sece_fast_path_within_1e7_of_exact():
    p, y = make_predictions(5000, 10, 11)  # the error is about 1e-8 here (2e-9 at n = 20,000)
    for h in (0.02, 0.05):
        exact = M.sece(p, y, bandwidth=h, method="exact")
        fast = M.sece(p, y, bandwidth=h, method="fast")
        assert abs(exact - fast) < 1e-7


def test_sece_rejects_bad_bandwidth():
    p, y = make_predictions(50, 3, 0)
    for h in (0, -0.1, float("nan")):
        with pytest.raises(ValueError, match="bandwidth"):
            M.sece(p, y, bandwidth=h)


# ------------------------------------------------------------------ intervals and report
def test_calibration_report_has_every_measure():
    p, y = make_predictions(500, 4, 0)
    df = calibration_report(p, y, name="m", ci=True, n_boot=20)
    for col in ("error", "nll", "brier", "ece", "mce", "ace", "classwise_ece", "debiased_ece",
                "sece", "smooth_ece", "ece_low", "ece_high"):
        assert col in df.columns
    # with intervals, each calibration error is stats.interval's (bias-corrected) estimate and interval
    from calibcourse.calibration import stats
    r = stats.interval(M.ece, p, y, n_boot=20, seed=0, n_bins=15)
    assert (df.loc["m", "ece"], df.loc["m", "ece_low"], df.loc["m", "ece_high"]) == pytest.approx(
        (r.estimate, r.low, r.high), abs=1e-15)
    assert df.loc["m", "ece_low"] <= df.loc["m", "ece"] <= df.loc["m", "ece_high"]
    assert calibration_report(p, y).loc["model", "ece"] == pytest.approx(M.ece(p, y), abs=1e-15)
    with pytest.raises(ValueError, match="n_boot"):
        calibration_report(p, y, ci=True, n_boot=1)


# ------------------------------------------------------------------ bad input
GOOD_P = np.array([[0.7, 0.2, 0.1], [0.1, 0.8, 0.1]])
GOOD_Y = np.array([0, 1])


@pytest.mark.parametrize("probs,labels,match", [
    (np.array([[np.nan, 0.5, 0.5], [0.1, 0.8, 0.1]]), GOOD_Y, "probs contains NaN"),
    (np.array([[np.inf, 0.5, 0.5], [0.1, 0.8, 0.1]]), GOOD_Y, "probs contains inf"),
    (np.array([[1.2, -0.1, -0.1], [0.1, 0.8, 0.1]]), GOOD_Y, r"probs must lie in \[0, 1\]"),
    (np.array([[0.7, 0.2, 0.2], [0.1, 0.8, 0.1]]), GOOD_Y, "rows of probs must sum to 1.*row 0"),
    (GOOD_P, np.array([0, 3]), "labels must be < the number of classes"),
    (GOOD_P, np.array([0, -1]), "labels must be >= 0"),
    (GOOD_P, np.array([0.0, 0.5]), "labels must be integer"),
    (GOOD_P, np.array(["a", "b"]), "labels have 2 distinct names .* 3 columns"),
    (GOOD_P, np.array([0, 1, 1]), "labels has 3 entries but the predictions have 2"),
    (np.zeros((0, 3)), np.zeros(0, int), "probs is empty"),
    (np.zeros((2, 2, 2)), GOOD_Y, "probs must have shape"),
    (np.ones((2, 1)), GOOD_Y, "at least 2 columns"),
    (np.array([0.2, 0.7]), np.array([0, 2]), "labels must be < the number of classes \\(2\\)"),
    (GOOD_P, np.array([[0, 1], [1, 0]]), "labels must have shape"),
])
@pytest.mark.parametrize("name", M.MEASURES)
def test_bad_input_raises_clear_error(name, probs, labels, match):
    with pytest.raises(ValueError, match=match):
        M.MEASURES[name](probs, labels)


@pytest.mark.parametrize("n_bins", [0, -3, 2.5, "10", True])
def test_bad_n_bins(n_bins):
    with pytest.raises(ValueError, match="n_bins"):
        M.ece(GOOD_P, GOOD_Y, n_bins=n_bins)


def test_bad_choices_name_the_argument():
    with pytest.raises(ValueError, match="strategy"):
        M.ece(GOOD_P, GOOD_Y, strategy="equal")
    with pytest.raises(ValueError, match="norm"):
        M.ece(GOOD_P, GOOD_Y, norm="l3")
    with pytest.raises(ValueError, match="reliability"):
        M.ece(GOOD_P, GOOD_Y, reliability="class1")
    with pytest.raises(ValueError, match="positive_class.*binary"):
        M.ece(GOOD_P, GOOD_Y, reliability="positive_class")


def test_float32_softmax_is_accepted_and_measured_as_in_float64():
    g = torch.Generator().manual_seed(0)
    z = torch.randn(5000, 100, generator=g, dtype=torch.float64) * 5
    y = torch.randint(0, 100, (5000,), generator=g)
    p64 = torch.softmax(z, 1)
    p32 = torch.softmax(z.float(), 1)  # float32 rows sum to 1 within ~1e-6, far inside SUM_TOL
    assert (p32.double().sum(1) - 1).abs().max() > 1e-8, "the test needs rows that are not exactly normalized"
    for fn in (M.ece, M.mce, M.ace, M.classwise_ece, M.nll, M.brier):
        assert fn(p32, y) == pytest.approx(fn(p64, y), abs=1e-5), fn.__name__
    assert M.ece(p32, y) > 0.1  # a sharp, wrong-by-construction model: far from 0


def test_logits_to_probs_sigmoid_for_one_logit_softmax_for_a_row():
    from scipy.special import expit
    from scipy.special import softmax as sp_softmax

    z1 = np.array([-3.0, 0.0, 0.5, 4.0])  # four samples of a sigmoid network, not one softmax row
    np.testing.assert_allclose(M.logits_to_probs(z1), expit(z1), rtol=1e-15)
    assert M.logits_to_probs(z1).sum() != pytest.approx(1.0)
    z2 = np.random.default_rng(0).normal(size=(6, 3)) * 4
    np.testing.assert_allclose(M.logits_to_probs(z2), sp_softmax(z2, axis=1), rtol=1e-12)
    t = torch.tensor(z1, requires_grad=True)
    out = M.logits_to_probs(t)
    assert isinstance(out, torch.Tensor) and out.requires_grad
    np.testing.assert_allclose(out.detach().numpy(), expit(z1), rtol=1e-12)
    with pytest.raises(ValueError, match="logits contains NaN"):
        M.logits_to_probs(np.array([0.0, np.nan]))
    with pytest.raises(ValueError, match="logits must have shape"):
        M.logits_to_probs(np.zeros((2, 2, 2)))


def test_reliability_bins_in_the_order_the_labs_return():
    import dataclasses

    assert [f.name for f in dataclasses.fields(M.ReliabilityBins)] == ["accuracy", "confidence", "count", "edges"]
    p, y = make_predictions(300, 4, 3)
    acc, conf, count, edges = dataclasses.astuple(M.reliability_bins(p, y, n_bins=7))
    assert count.sum() == 300 and len(acc) == len(conf) == 7 and len(edges) == 8


def test_measure_registries_are_the_report_columns():
    assert set(M.MEASURES) == set(M.SCORES) | set(M.CALIBRATION_ERRORS)
    p, y = make_predictions(200, 3, 4)
    df = calibration_report(p, y)
    assert list(df.columns) == list(M.MEASURES)
    for name, fn in M.MEASURES.items():
        assert df.loc["model", name] == pytest.approx(fn(p, y, **({"n_bins": 15} if name in (
            "ece", "mce", "ace", "classwise_ece", "debiased_ece") else {})), abs=1e-15)


def test_logits_with_nan_are_rejected_by_softmax():
    with pytest.raises(ValueError, match="logits contains NaN"):
        M.softmax(np.array([[0.0, np.nan]]))


@pytest.mark.parametrize("k", [3, 30, 200])  # below and above the classes where the checks and the top label fuse
def test_wide_inputs_are_checked_and_measured_like_narrow_ones(k):
    p, y = make_predictions(3000, k, 12, dtype=np.float32)
    p[:5] = 1.0 / k  # ties: the first maximum is the prediction, as numpy's argmax
    conf, correct = M.confidence_outcome(p, y)
    np.testing.assert_array_equal(conf, p.max(1).astype(np.float64))
    np.testing.assert_array_equal(correct, (p.argmax(1) == y).astype(float))
    assert M.accuracy(p, y) == np.mean(p.argmax(1) == y)
    bad = p.copy()
    bad[7, 1] = np.nan
    with pytest.raises(ValueError, match=r"probs contains NaN values \(1 of"):
        M.ece(bad, y)
    bad = p.copy()
    bad[9, 0] -= 0.5  # a negative entry or a row that does not sum to 1
    with pytest.raises(ValueError, match=r"probs must lie in \[0, 1\]|rows of probs must sum to 1.*row 9"):
        M.ece(bad, y)
    bad = p.astype(np.float64)
    bad[11] *= 1.01
    with pytest.raises(ValueError, match="rows of probs must sum to 1 .*row 11 sums to 1.01"):
        M.ece(bad, y)
    bad = np.asfortranarray(p)  # not C-contiguous: the plain path
    assert M.ece(bad, y) == M.ece(p, y)


# ------------------------------------------------------------------ low precision
@pytest.mark.parametrize("k", [10, 100, 1000])
def test_float16_and_bfloat16_softmax_outputs_are_accepted(k):
    """A network's float16/bfloat16 softmax (torch, as autocast gives it) sums to 1 only within its dtype."""
    rng = np.random.default_rng(k)
    n = 2000
    feats = torch.tensor(rng.normal(size=(n, 64)), dtype=torch.float32)
    torch.manual_seed(k)  # before the layer is made: its weights must not depend on the tests run before
    head = torch.nn.Linear(64, k)
    with torch.no_grad():
        logits = 3 * head(feats)
    y = torch.tensor(rng.integers(0, k, n))
    p64 = logits.double().softmax(1).numpy()
    for dtype in (torch.float16, torch.bfloat16):
        p_low = logits.to(dtype).softmax(1)  # computed in the low dtype, as a mixed-precision network does
        dev = (p_low.double().sum(1) - 1).abs().max().item()
        if dtype is torch.float16:
            assert dev > 1e-4  # the old fixed tolerance refused it
        from calibcourse.calibration._validation import input_eps, sum_tolerance
        assert dev <= sum_tolerance(input_eps(p_low), k)
        for fn in (M.ece, M.mce, M.nll, M.brier, M.accuracy, M.classwise_ece):
            ref = fn(p64, y.numpy())
            got = fn(p_low, y)
            assert np.isfinite(got)
            assert got == pytest.approx(ref, abs=0.02 if dtype is torch.float16 else 0.05)
        p_np16 = p_low.float().numpy().astype(np.float16) if dtype is torch.float16 else None
        if p_np16 is not None:  # a numpy float16 array too
            assert M.ece(p_np16, y.numpy()) == pytest.approx(M.ece(p_low, y), abs=1e-9)
    if k <= 100:  # (K * eps is 0.98 for float16 at K = 1000: rows are then hardly checked)
        with pytest.raises(ValueError, match="must sum to 1"):  # a row off by more than its dtype allows
            bad = logits.to(torch.float16).softmax(1)
            bad[0] *= 1.2
            M.ece(bad, y)


@pytest.mark.parametrize("dtype", ["float16 numpy", "bfloat16 torch"])
def test_low_precision_probabilities_through_stats_and_calibrators(dtype):
    """float16 and bfloat16 softmax outputs of random logits: the metrics, the intervals of stats
    (which convert bfloat16 to float32 and check the copy again, row sums included) and the calibrators."""
    from calibcourse.calibration import calibrators as C
    from calibcourse.calibration import stats

    rng = np.random.default_rng(5)
    n, k = 3000, 100
    logits = torch.tensor(rng.normal(size=(n, k)) * 3, dtype=torch.float32)
    y = rng.integers(0, k, n)
    if dtype == "bfloat16 torch":
        p_low = logits.to(torch.bfloat16).softmax(1)
        dev = (p_low.double().sum(1) - 1).abs().max().item()
    else:
        p_low = logits.softmax(1).numpy().astype(np.float16)
        dev = np.abs(p_low.astype(np.float64).sum(1) - 1).max()
    assert dev > 1e-4  # beyond float32's tolerance: refused if checked as float32
    p64 = logits.double().softmax(1).numpy()
    e = M.ece(p_low, y)
    assert e == pytest.approx(M.ece(p64, y), abs=0.01)
    r = stats.interval(M.ece, p_low, y, n_boot=50)
    assert r.estimate == e and r.low <= e <= r.high
    cw = stats.interval(M.classwise_ece, p_low, y, n_boot=10)  # no fast path: the metric on each resample
    assert cw.estimate == M.classwise_ece(p_low, y)
    d = stats.paired_difference(M.ece, p_low, p64, y, n_boot=50)
    assert d.estimate == e - M.ece(p64, y)
    assert stats.interval(M.nll, p_low, y, n_boot=50).estimate == pytest.approx(M.nll(p_low, y), rel=1e-12)

    def as64(a):  # torch in, torch out (of the input's dtype)
        return a.double().numpy() if torch.is_tensor(a) else np.asarray(a, dtype=np.float64)

    ova = C.OneVsAll(C.HistogramBinning()).fit(p_low, y)
    q = ova.predict_proba(p_low)
    assert as64(q).shape == (n, k) and np.allclose(as64(q).sum(1), 1, atol=0.05)
    assert M.ece(q, y) == pytest.approx(M.ece(ova.predict_proba(p64), y), abs=0.01)  # its rows are accepted
    y2 = (y % 2).astype(int)
    two = logits[:, :2]
    p2 = two.to(torch.bfloat16).softmax(1) if dtype == "bfloat16 torch" else two.softmax(1).numpy().astype(np.float16)
    for method in (C.HistogramBinning(), C.IsotonicCalibration(), C.PlattScaling()):
        got = as64(method.fit(p2, y2).predict_proba(p2))
        assert got.shape == (n, 2) and np.all(np.isfinite(got)) and np.allclose(got.sum(1), 1, atol=0.01)


def test_the_precision_is_read_where_the_data_comes_in():
    """The row sums' tolerance follows the dtype the caller hands over: a bfloat16 tensor gets
    bfloat16's, a float32 copy of it float32's (no guess from the bits). stats, a report's table
    and a calibrator check the tensor once, at its own precision, and never their float32 copy."""
    from calibcourse.calibration import stats
    from calibcourse.calibration._validation import check_probs, to_numpy
    from calibcourse.calibration.report import calibration_report

    torch.manual_seed(0)
    bf = (3 * torch.randn(500, 100)).to(torch.bfloat16).softmax(1)
    y = torch.randint(0, 100, (500,))
    copy = to_numpy(bf, "probs")  # float32, every value a bfloat16 number
    assert copy.dtype == np.float32 and np.abs(copy.astype(np.float64).sum(1) - 1).max() > 1e-3
    with pytest.raises(ValueError, match=r"tolerance 0.001 for float32 with 100 classes\); row"):
        check_probs(copy)
    e = M.ece(bf, y)
    renormalized = copy.astype(np.float64) / copy.sum(1, keepdims=True, dtype=np.float64)
    assert e == pytest.approx(M.ece(renormalized, y), abs=0.01)
    assert stats.interval(M.ece, bf, y, n_boot=10).estimate == e
    assert calibration_report(bf, y)["ece"].iloc[0] == e
    bad = bf.clone()
    bad[3] = 0  # off by more than bfloat16 allows (100 * 2**-7 = 0.78)
    with pytest.raises(ValueError, match=r"tolerance 0.78125 for bfloat16 with 100 classes\); row 3 sums to 0"):
        M.ece(bad, y)
    with pytest.raises(ValueError, match=r"probs: rows of probs must sum to 1 \(tolerance 0.78125 for bfloat16"):
        stats.interval(M.ece, bad, y, n_boot=10)


def test_sum_tolerance_follows_the_dtype():
    from calibcourse.calibration._validation import input_eps, sum_tolerance

    assert input_eps(np.zeros(2, np.float16)) == np.finfo(np.float16).eps
    assert input_eps(torch.zeros(2, dtype=torch.bfloat16)) == 2.0 ** -7
    assert input_eps([0.5, 0.5]) == np.finfo(np.float64).eps
    assert sum_tolerance(np.finfo(np.float64).eps, 1000) == 1e-3
    assert sum_tolerance(2.0 ** -10, 100) == pytest.approx(100 * 2.0 ** -10)
    p = np.array([[0.5, 0.5015]])  # off by 1.5e-3: too far for float64, within float16's 2 * eps
    with pytest.raises(ValueError, match="tolerance 0.001"):
        M.ece(p, [0])
    assert M.ece(p.astype(np.float16), [0]) == pytest.approx(0.5015, abs=1e-3)
    rounded = np.round(np.random.default_rng(0).dirichlet(np.ones(10), 1000), 4)  # written with 4 decimals
    assert np.abs(rounded.sum(1) - 1).max() > 1e-4  # the old tolerance refused these
    assert 0 <= M.ece(rounded, np.zeros(1000, int)) <= 1


# ------------------------------------------------------------------ without torch
NO_TORCH = r"""
import sys, warnings
import importlib.abc


class NoTorch(importlib.abc.MetaPathFinder):  # torch "not installed": any `import torch` raises
    def find_spec(self, name, path=None, target=None):  # (sys.modules["torch"] = None trips scipy's
        if name == "torch" or name.startswith("torch."):  # array-API helpers, which look torch up there)
            raise ModuleNotFoundError(f"No module named {name!r} (blocked by the test)")


sys.meta_path.insert(0, NoTorch())
import numpy as np
import calibcourse.calibration
from calibcourse.calibration import metrics as M, calibrators as C, stats, kernels, plots
from calibcourse.calibration.synthetic import scaled_logits
rng = np.random.default_rng(0)
z, y = scaled_logits(3000, 5, factor=2.0, seed=0)
p = M.softmax(z)
out = {"ece": M.ece(p, y), "sece": M.sece(p[:500], y[:500]), "top": M.top_label(p)[0].sum(),
       "T": C.TemperatureScaling().fit(z, y).temperature_,
       "ci": stats.interval(M.ece, p, y, n_boot=50).estimate,
       "kr": float(np.nansum(kernels.kernel_regression([0.5, 0.9], p.max(1), (p.argmax(1) == y), 0.05)[0]))}
with warnings.catch_warnings():
    warnings.simplefilter("error")
    for name in ("HistogramBinning", "IsotonicCalibration", "PlattScaling", "BBQ"):
        getattr(C, name)().fit(p[:, 1], (y == 1).astype(int)).predict_proba(p[:, 1])
try:
    from calibcourse.calibration.report import calibration_report
    out["report_ece"] = float(calibration_report(p, y)["ece"].iloc[0])
except ImportError as e:  # pandas is optional for the toolkit
    out["report_ece"] = repr(e)
assert not any(m == "torch" or m.startswith("torch.") for m in sys.modules), "torch was imported"
print(repr({k: v if isinstance(v, str) else float(v) for k, v in out.items()}))
"""


def test_the_toolkit_runs_without_torch():
    import ast
    import os
    import subprocess
    import sys

    from calibcourse.calibration.synthetic import scaled_logits

    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    res = subprocess.run([sys.executable, "-c", NO_TORCH], capture_output=True, text=True, env=env, timeout=300)
    assert res.returncode == 0, res.stderr[-3000:]
    out = ast.literal_eval(res.stdout.strip().splitlines()[-1])
    z, y = scaled_logits(3000, 5, factor=2.0, seed=0)
    _compare_without_torch(out, z, y, M.softmax(z))  # the same numbers where torch is installed


def _compare_without_torch(out, z, y, p):
    from calibcourse.calibration import calibrators as C
    from calibcourse.calibration import kernels, stats

    assert out["ece"] == pytest.approx(M.ece(p, y), abs=1e-12)
    assert out["sece"] == pytest.approx(M.sece(p[:500], y[:500]), abs=1e-12)
    assert out["top"] == pytest.approx(M.top_label(p)[0].sum(), rel=1e-12)
    assert out["T"] == pytest.approx(C.TemperatureScaling().fit(z, y).temperature_, rel=1e-12)
    assert out["ci"] == pytest.approx(stats.interval(M.ece, p, y, n_boot=50).estimate, abs=1e-12)
    kr = np.nansum(kernels.kernel_regression([0.5, 0.9], p.max(1), (p.argmax(1) == y), 0.05)[0])
    assert out["kr"] == pytest.approx(kr, rel=1e-12)
    assert out["report_ece"] == pytest.approx(calibration_report(p, y)["ece"].iloc[0], abs=1e-12)


def test_the_toolkit_computes_in_numpy_torch_tensors_too(monkeypatch):
    """Every pass runs in numpy, one thread (issue 50: torch's thread pool gave no gain a user would
    see, bench/bench_torch_path.py in the history); a tensor is read as an array and comes back a tensor."""
    import torch

    from calibcourse.calibration import calibrators as C
    from calibcourse.calibration.synthetic import scaled_logits

    z, y = scaled_logits(3000, 5, factor=2.0, seed=0)
    calls = []
    real = torch.from_numpy
    monkeypatch.setattr(torch, "from_numpy", lambda a: calls.append(a.shape) or real(a))
    t_numpy = C.TemperatureScaling().fit(z, y).temperature_
    M.ece(M.softmax(z), y), M.top_label(M.softmax(z)), M.sece(M.softmax(z)[:500], y[:500], method="exact")
    zt, yt = real(z), real(y)
    fitted = C.TemperatureScaling().fit(zt, yt)
    assert calls == [], "a pass went through torch"
    assert fitted.temperature_ == t_numpy  # the same arithmetic, bit for bit
    q = fitted.predict_proba(zt)
    assert isinstance(q, torch.Tensor) and q.dtype == zt.dtype


# ------------------------------------------------------------------ the blocked pass of wide matrices
def _wide(n=40000, k=30, seed=0, dtype=np.float32):
    """A matrix wide enough for the blocked pass (K >= 24) and long enough for several blocks."""
    p, y = make_predictions(n, k, seed)
    p = p.astype(dtype)
    assert k >= M._core._BLOCKED_FROM_CLASSES and n * k * p.itemsize > 2 * M._core._BLOCK_BYTES
    return p, y


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
def test_blocked_pass_gives_what_the_row_by_row_path_gives(dtype):
    p, y = _wide(dtype=dtype)
    ref = np.asfortranarray(p)  # not C-contiguous: the unblocked path (check_probs, then top_label)
    for measure in (M.ece, M.mce, M.accuracy):
        assert measure(p, y) == pytest.approx(measure(ref, y), rel=1e-12, abs=1e-15)
    p[7, :] = 1.0 / p.shape[1]  # a tie: the first maximum is the prediction, as numpy's argmax
    conf, pred = M.top_label(np.asfortranarray(p))
    _, conf_b, pred_b = M._core._checked_top_label(p)
    assert pred_b[7] == 0 and np.array_equal(pred_b, pred) and np.array_equal(conf_b, conf)


@pytest.mark.parametrize("bad,message", [(np.nan, "NaN"), (-0.25, r"\[0, 1\]"), (1.5, r"\[0, 1\]")])
def test_blocked_pass_refuses_bad_values_in_a_late_block(bad, message):
    p, y = _wide()
    p[-3, 4] = bad  # in the last block
    with pytest.raises(ValueError, match=message):
        M.ece(p, y)


def test_blocked_pass_accepts_negative_zero_and_names_a_row_that_does_not_sum_to_one():
    p, y = _wide()
    p[11000, 0] = 0.0
    ref = M.ece(p.copy() / p.sum(1, keepdims=True), y)
    q = p / p.sum(1, keepdims=True)
    q[
        11000, 0
    ] = -0.0  # a negative zero is a zero: its bit pattern reads as larger than 1.0's, the exact check clears it
    assert M.ece(q, y) == ref
    q[12345] *= 1.01
    with pytest.raises(ValueError, match="row 12345 sums to 1.01"):
        M.ece(q, y)


@pytest.mark.parametrize("dtype", [">f4", ">f8", np.longdouble])
def test_blocked_pass_checks_values_of_any_byte_order_and_precision(dtype):
    """The bit-pattern check orders like the values only for native floats: the others are checked exactly."""
    n, k = 20000, 32
    p, y = np.full((n, k), 1 / k, dtype=dtype), np.zeros(n, dtype=int)  # 1/32's low bytes are zero
    assert M.ece(p, y) == pytest.approx(M.ece(np.asfortranarray(p), y), rel=1e-12)
    p[n - 2] = 0
    p[n - 2, :3] = [2.0, -0.5, -0.5]  # a bad row in the last block whose sum is still 1
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        M.ece(p, y)


def test_input_eps_reads_torch_dtypes_as_their_numpy_namesakes():
    import torch

    from calibcourse.calibration._validation import input_eps
    for dtype, eps in [(torch.float32, np.finfo(np.float32).eps), (torch.float64, np.finfo(np.float64).eps),
                       (torch.float16, 2.0**-10), (torch.bfloat16, 2.0**-7), (torch.int64, np.finfo(np.float64).eps)]:
        assert input_eps(torch.zeros(2, dtype=dtype)) == eps, dtype
