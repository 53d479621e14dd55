"""calibcourse.calibration.calibrators against independent references, known truths and bad input.

The behaviour and bad-input tests run over the registries ``C.BINARY`` and ``C.MULTICLASS``:
a calibrator is tested by being registered.
"""
import math

import numpy as np
import pytest
import torch

from calibcourse.calibration import calibrators as C
from calibcourse.calibration import metrics as M
from calibcourse.calibration.synthetic import scaled_logits


def overconfident(n, k, factor, seed=0, spread=1.5):
    """Labels drawn from softmax(z); the model reports factor * z (overconfident if factor > 1)."""
    return scaled_logits(n, k, factor=factor, spread=spread, seed=seed)


def binary_miscalibrated(n, seed=0):
    """Scores p whose true P(y=1 | p) is p**3: an overconfident-for-positives binary model."""
    rng = np.random.default_rng(seed)
    p = rng.uniform(0.001, 0.999, n)
    y = (rng.random(n) < p**3).astype(int)
    return p, y


def multiclass_input(cls, z):
    """What a registered multiclass calibrator takes by default: logits, or probabilities (input_type)."""
    return M.softmax(z) if getattr(cls(), "input_type", "logits") == "probabilities" else z


# ------------------------------------------------------------------ references
def test_histogram_binning_matches_sklearn_calibration_curve():
    from sklearn.calibration import calibration_curve

    p, y = binary_miscalibrated(3000, 21)
    p[:40] = np.linspace(0, 1, 11).repeat(4)[:40]  # scores on every bin edge, 0 and 1
    for n_bins in (5, 10, 40):
        hb = C.HistogramBinning(n_bins=n_bins).fit(p, y)
        prob_true, prob_pred = calibration_curve(y, p, n_bins=n_bins, strategy="uniform")
        nonempty = hb.bin_counts_ > 0
        np.testing.assert_allclose(hb.bin_values_[nonempty], prob_true, atol=1e-12)
        # each calibration score is mapped to its bin's fraction of positives
        np.testing.assert_allclose(
            np.sort(np.unique(hb.predict_proba(p)[:, 1])), np.sort(np.unique(prob_true)), atol=1e-12
        )


def naive_histogram_binning(p, y, t, edges):
    """theta_m = mean of y over the calibration scores in (edges[m], edges[m+1]] (first bin: [edges[0], ...]);
    an empty bin predicts its midpoint; a new score gets the theta of its bin. A plain loop."""
    out = []
    for s in t:
        for m in range(len(edges) - 1):
            last = m == len(edges) - 2
            if (s <= edges[m + 1] or last) and (s > edges[m] or m == 0):
                inside = [(pi > edges[m] or m == 0) and (pi <= edges[m + 1] or last) for pi in p]
                ys = [yi for yi, ok in zip(y, inside, strict=True) if ok]
                out.append(np.mean(ys) if ys else (edges[m] + edges[m + 1]) / 2)
                break
    return np.array(out)


@pytest.mark.parametrize("strategy", ["uniform", "quantile"])
def test_histogram_binning_matches_a_naive_loop(strategy):
    rng = np.random.default_rng(22)
    p = np.round(rng.uniform(size=300), 2)  # ties and scores on the edges
    y = (rng.random(300) < p).astype(int)
    t = np.r_[np.linspace(0, 1, 101), p[:50]]
    hb = C.HistogramBinning(n_bins=12, strategy=strategy).fit(p, y)
    if strategy == "uniform":
        np.testing.assert_array_equal(hb.bin_edges_, np.linspace(0, 1, 13))
    else:  # equal-mass edges: midpoints between the 25-sample runs of the sorted scores
        s = np.sort(p)
        np.testing.assert_allclose(hb.bin_edges_[1:-1], (s[24:-1:25] + s[25::25]) / 2)
    np.testing.assert_allclose(hb.predict_proba(t)[:, 1], naive_histogram_binning(p, y, t, hb.bin_edges_), atol=1e-12)
    # an empty bin predicts its midpoint
    sparse = C.HistogramBinning(n_bins=4).fit(np.array([0.05, 0.07, 0.91, 0.95]), np.array([0, 1, 1, 1]))
    np.testing.assert_allclose(sparse.predict_proba(np.array([0.3, 0.55, 0.1, 0.99]))[:, 1], [0.375, 0.625, 0.5, 1.0])


def test_isotonic_matches_sklearn_exactly():
    from sklearn.isotonic import IsotonicRegression

    p, y = binary_miscalibrated(800, 1)
    p = np.round(p, 2)  # ties, which both must pool
    ours = C.IsotonicCalibration().fit(p, y)
    ref = IsotonicRegression(out_of_bounds="clip", y_min=0, y_max=1).fit(p, y)
    t = np.linspace(-0.0, 1.0, 2001)
    np.testing.assert_allclose(ours.predict_proba(t)[:, 1], ref.predict(t), atol=1e-12)
    assert np.all(np.diff(ours.y_thresholds_) >= 0)


def test_platt_matches_sklearn_logistic_regression_on_the_logit():
    from sklearn.linear_model import LogisticRegression

    p, y = binary_miscalibrated(2000, 2)
    z = np.log(p / (1 - p))
    ours = C.PlattScaling(input_type="logits").fit(z, y)
    ref = LogisticRegression(C=np.inf, tol=1e-12, max_iter=10000).fit(z[:, None], y)
    assert ours.a_ == pytest.approx(ref.coef_[0, 0], abs=1e-6)
    assert ours.b_ == pytest.approx(ref.intercept_[0], abs=1e-6)
    np.testing.assert_allclose(ours.predict_proba(z), ref.predict_proba(z[:, None]), atol=1e-7)  # both (n, 2)
    # the same model from probabilities, the default input_type
    np.testing.assert_allclose(C.PlattScaling().fit(p, y).predict_proba(p), ours.predict_proba(z), atol=1e-9)


def test_temperature_matches_brute_force_nll_grid():
    z, y = overconfident(4000, 10, 2.0, seed=3)
    ts = C.TemperatureScaling().fit(z, y)
    coarse = np.arange(0.5, 5.0, 0.01)
    t0 = coarse[np.argmin([M.nll(M.softmax(z / t), y) for t in coarse])]
    fine = np.arange(t0 - 0.01, t0 + 0.01, 1e-5)
    t_best = fine[np.argmin([M.nll(M.softmax(z / t), y) for t in fine])]
    assert ts.temperature_ == pytest.approx(t_best, abs=2e-5)
    assert ts.nll_ == pytest.approx(M.nll(ts.predict_proba(z), y), abs=1e-12)


def exact_temperature_by_bisection(z, y):
    """The root of dNLL/dbeta = mean(E_q[z] - z_y), by bisection in float64 (scipy's logsumexp)."""
    from scipy.special import softmax as sp_softmax

    zy = z[np.arange(len(y)), y]
    lo, hi = 1e-4, 10.0
    while hi - lo > 1e-12 * hi:  # about 44 halvings: beta to 1e-12, T to far below the 1e-6 asserted
        mid = (lo + hi) / 2
        g = np.mean((sp_softmax(mid * z, axis=1) * z).sum(1) - zy)
        lo, hi = (mid, hi) if g < 0 else (lo, mid)
    return 2 / (lo + hi)


@pytest.mark.parametrize("n,k,factor", [(3000, 10, 2.0), (20_000, 100, 7.0), (12_000, 3, 0.4)])
def test_temperature_is_the_exact_optimum_on_every_path(n, k, factor):
    # n > 4 * 2048 takes the subsample start; T* about 7 is the strongly overconfident case;
    # factor 0.4 an underconfident one (T < 1); float32 input as networks give it
    z, y = overconfident(n, k, factor, seed=31, spread=2.0)
    t_ref = exact_temperature_by_bisection(z.astype(np.float32).astype(np.float64), y)
    assert C.TemperatureScaling().fit(z.astype(np.float32), y).temperature_ == pytest.approx(t_ref, abs=1e-6)


def test_temperature_matches_sklearn_calibrated_classifier_cv():
    pytest.importorskip("sklearn.frozen")
    import sklearn

    if tuple(int(v) for v in sklearn.__version__.split(".")[:2]) < (1, 8):  # the newest for Python 3.10 is 1.7
        pytest.skip(f"the reference, scikit-learn's temperature scaling, came with 1.8; this is {sklearn.__version__}")
    from sklearn.base import BaseEstimator, ClassifierMixin
    from sklearn.calibration import CalibratedClassifierCV
    from sklearn.frozen import FrozenEstimator

    z, y = overconfident(3000, 5, 1.7, seed=4)

    class LogitLookup(ClassifierMixin, BaseEstimator):
        """A 'classifier' whose decision function is the precomputed logits of sample i."""

        def fit(self, X, y):
            self.classes_ = np.arange(z.shape[1])
            return self

        def decision_function(self, X):
            return z[X[:, 0].astype(int)]

        def predict(self, X):
            return self.decision_function(X).argmax(1)

    X = np.arange(len(y))[:, None]
    frozen = FrozenEstimator(LogitLookup().fit(X, y))
    cal = CalibratedClassifierCV(frozen, method="temperature", ensemble=False).fit(X, y)
    ref = cal.predict_proba(X)
    ours = C.TemperatureScaling().fit(z, y).predict_proba(z)
    np.testing.assert_allclose(ours, ref, atol=2e-4)


def test_temperature_recovers_known_overconfidence_factor():
    z, y = overconfident(400_000, 10, 2.5, seed=5)
    assert C.TemperatureScaling().fit(z, y).temperature_ == pytest.approx(2.5, abs=1e-2)
    # with soft truth the estimator is exact: labels replicated in proportion to the true probs
    rng = np.random.default_rng(0)
    z0 = rng.normal(size=(300, 4))
    q = M.softmax(z0)
    reps = np.round(q * 1000).astype(int)
    zz = np.repeat(np.repeat(z0, 4, 0), reps.ravel(), 0) * 1.8
    yy = np.repeat(np.tile(np.arange(4), 300), reps.ravel())
    assert C.TemperatureScaling().fit(zz, yy).temperature_ == pytest.approx(1.8, abs=1e-3)


def test_binary_temperature_on_a_sigmoid_logit():
    rng = np.random.default_rng(6)
    z = rng.normal(size=20000) * 2
    y = (rng.random(20000) < 1 / (1 + np.exp(-z))).astype(int)
    ts = C.TemperatureScaling().fit(3 * z, y)
    assert ts.temperature_ == pytest.approx(3.0, rel=0.05)
    p = ts.predict_proba(3 * z)
    assert p.shape == (20000, 2)  # [P(y = 0), P(y = 1)], as scikit-learn
    np.testing.assert_allclose(p[:, 1], 1 / (1 + np.exp(-3 * z / ts.temperature_)))
    np.testing.assert_allclose(p.sum(1), 1.0)


def test_grid_returns_ece_and_nll_per_temperature():
    from scipy.special import softmax
    from sklearn.metrics import log_loss

    z, y = overconfident(2000, 10, 2.0, seed=7)
    g = C.TemperatureScaling.grid(z, y, temperatures=[0.5, 1.0, 2.0, 3.0])
    assert isinstance(g, C.TemperatureGrid) and list(g._fields) == ["temperature", "ece", "nll"]
    np.testing.assert_array_equal(g.temperature, [0.5, 1.0, 2.0, 3.0])
    for i, t in enumerate(g.temperature):  # independent softmax and log loss
        q = softmax(z / t, axis=1)
        assert g.nll[i] == pytest.approx(log_loss(y, q, labels=range(10)), rel=1e-9)
        assert g.ece[i] == pytest.approx(M.ece(q, y), rel=1e-9)
    assert g.best("ece") == g.temperature[np.argmin(g.ece)] and g.best("nll") == g.temperature[np.argmin(g.nll)]
    assert g.best("nll") == 2.0  # these logits are overconfident by a factor of 2 (the generator's)
    # on a tie the first temperature wins, as pandas' idxmin did
    assert C.TemperatureGrid(np.array([1.0, 2.0]), np.array([0.1, 0.1]), np.array([1.0, 1.0])).best() == 1.0
    with pytest.raises(ValueError, match="by must be"):
        g.best("brier")
    with pytest.raises(ValueError, match="temperatures"):
        C.TemperatureScaling.grid(z, y, temperatures=[1.0, -1.0])


def test_matrix_scaling_is_multinomial_logistic_regression_on_the_logits():
    from sklearn.linear_model import LogisticRegression

    z, y = overconfident(3000, 4, 2.0, seed=23)
    z = z + np.array([0.4, 0.0, -0.3, 0.0])  # something for the bias to fix
    ms = C.MatrixScaling().fit(z, y)
    ref = LogisticRegression(C=np.inf, tol=1e-12, max_iter=100_000).fit(z, y)
    np.testing.assert_allclose(ms.predict_proba(z), ref.predict_proba(z), atol=5e-5)
    zt, _ = overconfident(500, 4, 2.0, seed=24)
    np.testing.assert_allclose(ms.predict_proba(zt), ref.predict_proba(zt), atol=5e-5)
    # W and b are identified up to a constant added to every class: compare the differences to class 0
    np.testing.assert_allclose(ms.coef_ - ms.coef_[0], ref.coef_ - ref.coef_[0], atol=5e-4)
    np.testing.assert_allclose(ms.intercept_ - ms.intercept_[0], ref.intercept_ - ref.intercept_[0], atol=5e-4)


def constrained_vector_scaling(z, y, bias=True, tie_weights=False):
    """Vector scaling fitted independently: torch autograd and L-BFGS over (w, b) in float64."""
    k = z.shape[1]
    zt, yt = torch.from_numpy(z), torch.from_numpy(y)
    w = torch.ones(1 if tie_weights else k, dtype=torch.float64, requires_grad=True)
    b = torch.zeros(k, dtype=torch.float64, requires_grad=bias)
    params = [w, b] if bias else [w]
    opt = torch.optim.LBFGS(params, lr=1, max_iter=1000, tolerance_grad=1e-12, tolerance_change=1e-15,
                            line_search_fn="strong_wolfe")

    def closure():
        opt.zero_grad()
        loss = torch.nn.functional.cross_entropy(zt * w + b, yt)
        loss.backward()
        return loss

    opt.step(closure)
    return w.detach().numpy(), b.detach().numpy()


@pytest.mark.parametrize("bias,tie_weights", [(True, False), (False, False), (False, True)])
def test_vector_scaling_matches_a_constrained_fit(bias, tie_weights):
    z, y = overconfident(3000, 5, 2.0, seed=25)
    z = z + np.array([0.5, 0, 0, -0.3, 0])
    vs = C.VectorScaling(bias=bias, tie_weights=tie_weights).fit(z, y)
    w, b = constrained_vector_scaling(z, y, bias=bias, tie_weights=tie_weights)
    np.testing.assert_allclose(vs.coef_, np.broadcast_to(w, (5,)), atol=1e-5)
    np.testing.assert_allclose(vs.intercept_ - vs.intercept_.mean(), b - b.mean(), atol=1e-5)
    if tie_weights:  # one weight and no bias: temperature scaling with w = 1/T
        assert 1 / vs.coef_[0] == pytest.approx(C.TemperatureScaling().fit(z, y).temperature_, abs=1e-5)


def test_bias_corrected_temperature_scaling_is_the_nll_minimum_over_a_temperature_and_biases():
    """An independent computation: NLL(softmax(z / T + b)) minimized by Nelder-Mead over (log T, b[1:])."""
    from scipy.optimize import minimize

    z, y = overconfident(2000, 4, 2.0, seed=27)
    z = z + np.array([0.8, 0, -0.4, 0])
    bcts = C.BiasCorrectedTemperatureScaling().fit(z, y)

    def nll(x):
        return M.nll(M.softmax(z / np.exp(x[0]) + np.r_[0.0, x[1:]]), y)

    res = minimize(nll, np.zeros(4), method="Nelder-Mead", options={"xatol": 1e-8, "fatol": 1e-12, "maxiter": 20000})
    assert bcts.temperature_ == pytest.approx(np.exp(res.x[0]), rel=1e-3)
    np.testing.assert_allclose(bcts.intercept_[1:] - bcts.intercept_[0], res.x[1:], atol=1e-3)
    assert M.nll(bcts.predict_proba(z), y) <= res.fun + 1e-9
    # the biases fix what a temperature cannot; without them it is temperature scaling
    ts = C.TemperatureScaling().fit(z, y)
    assert M.nll(bcts.predict_proba(z), y) < M.nll(ts.predict_proba(z), y)
    plain = C.BiasCorrectedTemperatureScaling(bias=False).fit(z, y)
    assert plain.temperature_ == pytest.approx(ts.temperature_, rel=1e-4)


def test_vector_and_matrix_scaling_reduce_calibration_nll_in_nested_order():
    z, y = overconfident(3000, 5, 2.0, seed=9)
    z = z + np.array([0.5, 0, 0, -0.3, 0])  # a class bias for vector/matrix scaling to fix
    nll0 = M.nll(M.softmax(z), y)
    ts = M.nll(C.TemperatureScaling().fit(z, y).predict_proba(z), y)
    vs = M.nll(C.VectorScaling().fit(z, y).predict_proba(z), y)
    ms = M.nll(C.MatrixScaling().fit(z, y).predict_proba(z), y)
    assert nll0 > ts >= vs - 1e-9 >= ms - 2e-9


@pytest.mark.slow  # about 10 s on an idle machine: make test, not make test-fast
def test_matrix_scaling_overfits_small_calibration_set_with_many_classes():
    z, y = overconfident(6000, 100, 2.0, seed=10)
    zc, yc, zt, yt = z[:500], y[:500], z[500:], y[500:]
    assert np.unique(yc).size < 100  # some of the 100 classes are absent: named with classes=
    with pytest.raises(ValueError, match="classes=range"):
        C.TemperatureScaling().fit(zc, yc)
    ts = C.TemperatureScaling().fit(zc, yc, classes=range(100))
    from sklearn.exceptions import ConvergenceWarning

    with pytest.warns(ConvergenceWarning, match="matrix scaling"):  # it separates 500 samples of 100 classes
        ms = C.MatrixScaling().fit(zc, yc, classes=range(100))
    assert M.nll(ms.predict_proba(zc), yc) < M.nll(ts.predict_proba(zc), yc)     # better on cal
    assert M.nll(ms.predict_proba(zt), yt) > M.nll(ts.predict_proba(zt), yt)     # worse on test
    # regularization towards vector scaling (ODIR) reins it in
    reg = C.MatrixScaling(off_diagonal=100.0, bias_l2=1.0).fit(zc, yc, classes=range(100))
    assert M.nll(reg.predict_proba(zt), yt) < M.nll(ms.predict_proba(zt), yt)


def test_bbq_hand_worked_tiny_case():
    p = np.array([0.1, 0.4, 0.6, 0.9])
    y = np.array([0, 0, 1, 1])
    bbq = C.BBQ(n_bins=[1, 2]).fit(p, y)
    lg = math.lgamma
    # one bin: midpoint .5, N'/B = 2, alpha = beta = 1, 2 positives of 4
    s1 = lg(2) - lg(6) + lg(3) - lg(1) + lg(3) - lg(1)
    # two bins split at .5: midpoints .25 and .75, N'/B = 1
    s2 = 2 * (lg(1) - lg(3) + lg(2.75) - lg(0.75))
    w2 = 1 / (1 + math.exp(s1 - s2))
    np.testing.assert_allclose(bbq.log_scores_, [s1, s2], atol=1e-12)
    assert bbq.model_weights_[1] == pytest.approx(w2, abs=1e-12)
    expected_low = (1 - w2) * 0.5 + w2 * (0 + 0.25) / 3
    expected_high = (1 - w2) * 0.5 + w2 * (2 + 0.75) / 3
    np.testing.assert_allclose(bbq.predict_proba(np.array([0.2, 0.8]))[:, 1], [expected_low, expected_high],
                               atol=1e-12)


def test_bbq_agrees_with_netcal_within_tolerance():
    from netcal.binning import BBQ as NetcalBBQ

    p, y = binary_miscalibrated(3000, 11)
    t = np.linspace(0.01, 0.99, 500)
    ours = C.BBQ().fit(p, y).predict_proba(t)[:, 1]
    ref = NetcalBBQ().fit(p, y).transform(t)
    # netcal scores equal-width models by BIC, the paper (and we) equal-frequency ones by BDeu:
    # the two averages differ in detail, not in shape
    assert np.mean(np.abs(ours - ref)) < 0.03
    assert np.abs(ours - t**3).mean() < 0.05


def test_one_vs_all_is_per_class_isotonic_then_normalized():
    from sklearn.isotonic import IsotonicRegression

    z, y = overconfident(2000, 4, 2.0, seed=15)
    p = M.softmax(z)
    zt, _ = overconfident(300, 4, 2.0, seed=16)
    pt = M.softmax(zt)
    q = np.stack([IsotonicRegression(out_of_bounds="clip", y_min=0, y_max=1).fit(p[:, k], y == k).predict(pt[:, k])
                  for k in range(4)], 1)
    s = q.sum(1, keepdims=True)
    expected = np.where(s > 0, q / np.where(s > 0, s, 1), 0.25)
    ova = C.OneVsAll(C.IsotonicCalibration()).fit(p, y)
    np.testing.assert_allclose(ova.predict_proba(pt), expected, atol=1e-12)
    # from logits, the same model
    np.testing.assert_allclose(C.OneVsAll(C.IsotonicCalibration(), input_type="logits").fit(z, y).predict_proba(zt),
                               expected, atol=1e-12)
    assert [c.input_type for c in ova.calibrators_] == ["probabilities"] * 4


def test_one_vs_all_row_of_zeros_becomes_uniform():
    p = np.array([[0.9, 0.05, 0.05], [0.05, 0.9, 0.05], [0.05, 0.05, 0.9], [0.6, 0.2, 0.2], [0.2, 0.6, 0.2],
                  [0.2, 0.2, 0.6]])
    y = np.array([0, 1, 2, 1, 2, 0])  # the middle scores of every class are wrong: their calibrated value is 0
    ova = C.OneVsAll(C.HistogramBinning(n_bins=2)).fit(p, y)
    np.testing.assert_allclose(ova.predict_proba(np.array([[0.4, 0.3, 0.3]])), [[1 / 3, 1 / 3, 1 / 3]])


# ------------------------------------------------------------------ every registered calibrator
def test_registries_name_every_calibrator_once():
    assert set(C.BINARY) | set(C.MULTICLASS) == set(C.CALIBRATORS)
    assert not set(C.BINARY) & set(C.MULTICLASS)
    public = {
        getattr(C, n)
        for n in C.__all__
        if isinstance(getattr(C, n), type) and n not in ("NotFittedError", "TemperatureGrid")
    }
    assert public == set(C.CALIBRATORS.values()), "a public calibrator is missing from the registries"


@pytest.mark.parametrize("cls", list(C.BINARY.values()) + [C.OneVsAll])
def test_one_vocabulary_for_what_the_scores_are(cls):
    import inspect

    param = inspect.signature(cls).parameters["input_type"]
    assert param.default == "probabilities" and C.INPUT_TYPES == ("probabilities", "logits")
    assert "input" not in inspect.signature(cls).parameters


@pytest.mark.parametrize("cls", C.BINARY.values())
def test_every_binary_method_lowers_heldout_ece_from_probabilities_or_logits(cls):
    p, y = binary_miscalibrated(6000, 12)
    cal = cls().fit(p[:3000], y[:3000])
    before = M.ece(p[3000:], y[3000:], reliability="positive_class")
    after = M.ece(cal.predict_proba(p[3000:]), y[3000:], reliability="positive_class")
    assert after < before / 2
    z = np.log(p / (1 - p))
    from_logits = cls(input_type="logits").fit(z[:3000], y[:3000]).predict_proba(z[3000:])
    np.testing.assert_allclose(from_logits, cal.predict_proba(p[3000:]), atol=1e-9)


@pytest.mark.parametrize("cls", C.MULTICLASS.values())
def test_every_multiclass_method_lowers_heldout_ece(cls):
    z, y = overconfident(8000, 5, 2.5, seed=13)
    s = multiclass_input(cls, z)
    cal = cls().fit(s[:4000], y[:4000])
    before = M.ece(M.softmax(z[4000:]), y[4000:])
    q = cal.predict_proba(s[4000:])
    assert q.shape == (4000, 5) and np.all(q >= 0)
    np.testing.assert_allclose(q.sum(1), 1.0, atol=1e-9)
    assert M.ece(q, y[4000:]) < before / 2


def test_accuracy_unchanged_by_ts_and_monotone_vector_scaling():
    z, y = overconfident(3000, 10, 2.0, seed=14)
    base = M.softmax(z).argmax(1)
    assert np.array_equal(C.TemperatureScaling().fit(z, y).predict_proba(z).argmax(1), base)
    vs = C.VectorScaling(tie_weights=True, bias=False).fit(z, y)
    assert np.array_equal(vs.predict_proba(z).argmax(1), base)


@pytest.mark.parametrize("cls", C.CALIBRATORS.values())
def test_torch_in_torch_out_and_the_same_numbers(cls):
    if cls in C.BINARY.values():
        s, y = binary_miscalibrated(1000, 16)
    else:
        z, y = overconfident(1000, 3, 2.0, seed=16)
        s = multiclass_input(cls, z)
    ref = cls().fit(s, y).predict_proba(s)
    st = torch.tensor(s, dtype=torch.float64)
    out = cls().fit(st, torch.tensor(y)).predict_proba(st)
    assert isinstance(out, torch.Tensor) and out.dtype == torch.float64
    np.testing.assert_allclose(out.numpy(), ref, atol=1e-9)


@pytest.mark.parametrize("cls", C.CALIBRATORS.values())
def test_params_clone_and_repr(cls):
    cal = cls()
    params = cal.get_params()
    assert set(params) == set(__import__("inspect").signature(cls).parameters)
    assert repr(cal).startswith(f"{cls.__name__}(") and cal.clone().get_params() == params
    if "input_type" in params:
        assert cal.clone(input_type="logits").input_type == "logits" and cal.input_type == "probabilities"


# ------------------------------------------------------------------ bad input
@pytest.mark.parametrize("cls", C.CALIBRATORS.values())
def test_predict_before_fit_is_a_clear_error(cls):
    scores = np.array([0.2, 0.8]) if cls in C.BINARY.values() else np.array([[0.2, 0.8], [0.6, 0.4]])
    with pytest.raises(C.NotFittedError, match=f"This {cls.__name__} is not fitted yet"):
        cls().predict_proba(scores)


@pytest.mark.parametrize("cls", C.CALIBRATORS.values())
def test_sklearn_conventions_clone_get_set_params_not_fitted(cls):
    from sklearn.base import clone
    from sklearn.exceptions import NotFittedError
    from sklearn.utils.validation import check_is_fitted

    assert C.NotFittedError is NotFittedError  # scikit-learn's own class: `except NotFittedError` catches ours
    cal = cls()
    with pytest.raises(NotFittedError):
        check_is_fitted(cal)
    twin = clone(cal)
    assert twin is not cal and type(twin) is cls and twin.get_params(deep=True) == cal.get_params(deep=True)
    if cls in C.BINARY.values():
        s, y = binary_miscalibrated(600, 31)
    else:
        z, y = overconfident(600, 3, 2.0, seed=31)
        s = multiclass_input(cls, z)
    fitted = cls().fit(s, y)
    check_is_fitted(fitted)
    again = clone(fitted)  # unfitted, same parameters
    with pytest.raises(NotFittedError):
        again.predict_proba(s)
    np.testing.assert_allclose(again.fit(s, y).predict_proba(s), fitted.predict_proba(s), atol=1e-12)
    name = next(iter(cal.get_params()))
    value = cal.get_params()[name]
    assert cal.set_params(**{name: value}) is cal
    with pytest.raises(ValueError, match="Invalid parameter"):
        cal.set_params(no_such_parameter=1)


def test_one_vs_all_clones_its_inner_calibrator():
    from sklearn.base import clone

    ova = C.OneVsAll(C.HistogramBinning(n_bins=7))
    deep = ova.get_params(deep=True)
    assert deep["binary_method__n_bins"] == 7 and "binary_method__n_bins" not in ova.get_params(deep=False)
    twin = clone(ova)
    assert twin.binary_method is not ova.binary_method and twin.binary_method.n_bins == 7
    twin.set_params(binary_method__n_bins=4)
    assert twin.binary_method.n_bins == 4 and ova.binary_method.n_bins == 7


@pytest.mark.parametrize("cls", C.BINARY.values())
def test_binary_predict_proba_has_two_columns_like_sklearn(cls):
    from sklearn.linear_model import LogisticRegression

    p, y = binary_miscalibrated(800, 32)
    q = cls().fit(p, y).predict_proba(p)
    ref = LogisticRegression().fit(p[:, None], y).predict_proba(p[:, None])
    assert q.shape == ref.shape == (800, 2)
    np.testing.assert_allclose(q.sum(1), 1.0, atol=1e-12)
    # the (n, 2) output is accepted back as input (its column 1 is P(y = 1))
    np.testing.assert_allclose(cls().fit(q, y).predict_proba(q), cls().fit(q[:, 1], y).predict_proba(q[:, 1]))


@pytest.mark.parametrize("cls", C.BINARY.values())
def test_binary_bad_input(cls):
    good = np.array([0.1, 0.4, 0.6, 0.9, 0.3, 0.7] * 5)
    yb = np.array([0, 0, 1, 1, 0, 1] * 5)
    with pytest.raises(ValueError, match="scores contains NaN"):
        cls().fit(np.r_[good[:-1], np.nan], yb)
    with pytest.raises(ValueError, match="labels have 3 distinct values .* 2 columns"):
        cls().fit(good, np.r_[yb[:-1], 2])
    with pytest.raises(ValueError, match="one class only"):
        cls().fit(good, np.zeros_like(yb))
    with pytest.raises(ValueError, match="labels has 29 entries"):
        cls().fit(good, yb[:-1])
    with pytest.raises(ValueError, match="scores must have shape"):
        cls().fit(good.reshape(6, 5), yb)
    with pytest.raises(ValueError, match=r"probabilities of class 1 in \[0, 1\].*input_type='logits'"):
        cls().fit(good * 3, yb)   # logits given as probabilities
    with pytest.raises(ValueError, match=r"scores all lie in \[0, 1\].*input_type='probabilities'"):
        cls(input_type="logits").fit(good, yb)  # probabilities given as logits
    with pytest.raises(ValueError, match="input_type must be one of 'probabilities', 'logits'"):
        cls(input_type="probability").fit(good, yb)


def test_too_few_samples_for_the_bins():
    with pytest.raises(ValueError, match="too few samples for the bins asked"):
        C.HistogramBinning(n_bins=50).fit(np.linspace(0.1, 0.9, 20), np.arange(20) % 2)
    with pytest.raises(ValueError, match="n_bins must be an integer >= 1"):
        C.HistogramBinning(n_bins=0).fit(np.linspace(0.1, 0.9, 20), np.arange(20) % 2)


@pytest.mark.parametrize("cls", C.MULTICLASS.values())
def test_multiclass_bad_input(cls):
    z, y = overconfident(200, 3, 2.0, seed=17)
    s = multiclass_input(cls, z)
    name = "probabilities" if s is not z else "logits"
    bad = s.copy()
    bad[3, 1] = np.inf
    with pytest.raises(ValueError, match=f"{name} contains inf"):
        cls().fit(bad, y)
    with pytest.raises(ValueError, match="labels have 4 distinct values .* 3 columns"):
        cls().fit(s, np.r_[y[:-1], 3])
    with pytest.raises(ValueError, match="one class only|lack classes"):
        cls().fit(s, np.zeros_like(y))
    with pytest.raises(ValueError, match="labels has 199 entries"):
        cls().fit(s, y[:-1])
    fitted = cls().fit(s, y)
    with pytest.raises(ValueError, match="must have shape|classes but the calibrator"):
        wrong = {C.TemperatureScaling: np.zeros((5, 2, 2)), C.OneVsAll: np.full((5, 4), 0.25)}.get(
            cls, np.zeros((5, 4))
        )
        fitted.predict_proba(wrong)


@pytest.mark.parametrize("cls", [C.TemperatureScaling, C.VectorScaling, C.MatrixScaling,
                                 C.BiasCorrectedTemperatureScaling, lambda: C.OneVsAll(input_type="logits")])
def test_probabilities_passed_as_logits_are_an_error(cls):
    z, y = overconfident(300, 4, 2.0, seed=26)
    with pytest.raises(ValueError, match="look like probabilities, not logits"):
        cls().fit(M.softmax(z), y)
    fitted = cls().fit(z, y)
    with pytest.raises(ValueError, match="look like probabilities, not logits"):
        fitted.predict_proba(M.softmax(z))
    fitted.predict_proba(M.log_softmax(z))  # log-probabilities are logits


def test_one_vs_all_rejects_a_multiclass_method():
    z, y = overconfident(200, 3, 2.0, seed=18)
    with pytest.raises(ValueError, match="binary_method must be a binary calibrator"):
        C.OneVsAll(C.TemperatureScaling()).fit(M.softmax(z), y)


@pytest.mark.parametrize("case", ["anti-correlated", "independent", "constant"])
def test_temperature_scaling_without_signal_warns_and_returns_the_documented_finite_t(case):
    rng = np.random.default_rng(0)
    z = rng.normal(size=(500, 3))
    if case == "anti-correlated":
        y = z.argmin(1)  # the NLL only grows as T decreases from infinity
    elif case == "independent":
        z, y = z * 1e-3, rng.integers(0, 3, 500)
        z[:, 0] -= 1.0  # a constant bias against class 0, the most frequent label: worse than no information
        y[:250] = 0
    else:
        z, y = np.tile([0.3, 0.3, 0.1], (500, 1)), rng.integers(0, 3, 500)  # an untrained network
    slope0 = np.mean((z - z.max(1, keepdims=True)).mean(1) - (z - z.max(1, keepdims=True))[np.arange(500), y])
    assert slope0 >= 0  # dNLL/dbeta at beta = 0: no finite T lowers the NLL
    with pytest.warns(UserWarning, match="no signal"):
        ts = C.TemperatureScaling().fit(z, y)
    assert ts.temperature_ == C.TemperatureScaling.NO_SIGNAL_TEMPERATURE == 1.0
    np.testing.assert_allclose(ts.predict_proba(z), M.softmax(z))
    assert ts.nll_ == pytest.approx(M.nll(M.softmax(z), y), abs=1e-12)


def test_temperature_scaling_of_separated_logits_is_an_error():
    rng = np.random.default_rng(1)
    z = rng.normal(size=(20_000, 3))
    with pytest.raises(ValueError, match="perfectly separated"):
        C.TemperatureScaling().fit(z, z.argmax(1))


# ---------------------------------------------------------------- scikit-learn's conventions
def _data(cls, n=600, seed=0):
    rng = np.random.default_rng(seed)
    if cls in C.BINARY.values():
        z = rng.normal(size=n) * 2
        y = (rng.random(n) < 1 / (1 + np.exp(-z / 2))).astype(int)
        return 1 / (1 + np.exp(-z)), y
    z, y = scaled_logits(n, 4, factor=2.0, seed=seed)
    return (M.softmax(z) if cls is C.OneVsAll else z), y


@pytest.mark.parametrize("cls", [c for c in C.CALIBRATORS.values() if c is not C.BBQ])
def test_integer_sample_weights_are_repeated_samples(cls):
    s, y = _data(cls)
    w = np.random.default_rng(1).integers(0, 4, len(y))
    weighted = cls().fit(s, y, sample_weight=w)
    repeated = cls().fit(np.repeat(s, w, axis=0), np.repeat(y, w))
    test = _data(cls, 50, seed=2)[0]
    np.testing.assert_allclose(weighted.predict_proba(test), repeated.predict_proba(test), atol=2e-6)
    unit = cls().fit(s, y, sample_weight=np.ones(len(y)))
    np.testing.assert_allclose(unit.predict_proba(test), cls().fit(s, y).predict_proba(test), atol=1e-9)


def test_bbq_weights_count_in_its_bins_and_ones_change_nothing():
    s, y = _data(C.BBQ)
    test = _data(C.BBQ, 50, seed=2)[0]
    np.testing.assert_allclose(C.BBQ().fit(s, y, sample_weight=np.ones(len(y))).predict_proba(test),
                               C.BBQ().fit(s, y).predict_proba(test), rtol=1e-12)
    w = np.where(y == 1, 5.0, 1.0)  # positives weigh more: every bin's estimate rises
    assert (C.BBQ().fit(s, y, sample_weight=w).predict_proba(test)[:, 1]
            >= C.BBQ().fit(s, y).predict_proba(test)[:, 1] - 1e-12).all()


def test_measures_take_sample_weight_as_scikit_learn_does():
    from sklearn.metrics import brier_score_loss, log_loss

    z, y = scaled_logits(500, 3, factor=2.0, seed=0)
    p = M.softmax(z)
    w = np.random.default_rng(0).integers(0, 4, len(y)).astype(float)
    assert M.nll(p, y, sample_weight=w) == pytest.approx(log_loss(y, p, sample_weight=w), rel=1e-12)
    pb, yb = p[:, 1] / p[:, :2].sum(1), (y == 1).astype(int)
    assert M.brier(pb, yb, sample_weight=w) == pytest.approx(brier_score_loss(yb, pb, sample_weight=w), rel=1e-12)
    for fn in (M.ece, M.mce, M.brier, M.nll):
        assert fn(p, y, sample_weight=w) == pytest.approx(
            fn(np.repeat(p, w.astype(int), 0), np.repeat(y, w.astype(int))), rel=1e-12, abs=1e-15
        ), fn.__name__
    with pytest.raises(ValueError, match="sample_weight must have shape"):
        M.ece(p, y, sample_weight=w[:-1])
    with pytest.raises(ValueError, match="finite and >= 0"):
        M.nll(p, y, sample_weight=-w)


@pytest.mark.parametrize("cls", C.CALIBRATORS.values())
def test_any_sortable_labels_come_back_from_predict(cls):
    s, y = _data(cls)
    names = np.array(["ant", "bee", "cat", "dog"])[: 2 if cls in C.BINARY.values() else 4]
    fitted = cls().fit(X=s, y=names[y])  # scikit-learn's argument names
    np.testing.assert_array_equal(fitted.classes_, names)
    by_index = cls().fit(s, y)
    np.testing.assert_array_equal(fitted.predict(s), names[by_index.predict(s)])
    np.testing.assert_allclose(fitted.predict_proba(s), by_index.predict_proba(s))
    if cls in C.BINARY.values():
        assert cls().fit(s, np.where(y == 1, 1, -1)).classes_.tolist() == [-1, 1]
        assert cls().fit(s, y + 1).classes_.tolist() == [1, 2]
    with pytest.raises(ValueError, match="distinct values"):
        cls().fit(s, np.where(y == 0, "a", "b") if len(names) > 2 else np.array(["a", "b", "c"])[np.arange(len(y)) % 3])


@pytest.mark.parametrize("cls", C.MULTICLASS.values())
def test_a_wrong_class_count_raises_also_after_save_and_load(cls, tmp_path):
    from calibcourse.calibration import report as R

    s, y = _data(cls)
    fitted = cls().fit(s, y)
    assert fitted.n_features_in_ == 4
    with pytest.raises(ValueError, match="3 classes but the calibrator was fitted on 4"):
        fitted.predict_proba(s[:, :3] if cls is not C.OneVsAll else s[:, :3] / s[:, :3].sum(1, keepdims=True))
    view = "probs" if cls is C.OneVsAll else "logits"
    R.save(R.FittedCalibration(fitted, view, "logits" if view == "logits" else "probs"), tmp_path / "c.json")
    loaded = R.load(tmp_path / "c.json")
    assert loaded.calibrator.n_features_in_ == 4
    with pytest.raises(ValueError, match="fitted on 4"):
        loaded.calibrator.predict_proba(
            s[:, :3] if cls is not C.OneVsAll else s[:, :3] / s[:, :3].sum(1, keepdims=True)
        )


def test_the_docstrings_as_claims_hold_where_they_say():
    from sklearn.isotonic import IsotonicRegression
    from sklearn.metrics import log_loss

    rng = np.random.default_rng(3)
    p = rng.uniform(0.01, 0.99, 400)
    y = (rng.random(400) < p).astype(int)
    iso = C.IsotonicCalibration().fit(p, y)
    ref = IsotonicRegression(out_of_bounds="clip").fit(p, y)
    q = rng.uniform(0, 1, 200)
    np.testing.assert_allclose(iso.predict_proba(q)[:, 1], ref.predict(q), atol=1e-12)  # scores apart: equal
    close = np.r_[p, np.nextafter(p[:50], 1)]  # distinct scores one float apart: scikit-learn merges them
    yc = np.r_[y, 1 - y[:50]]
    assert np.unique(close).size == 450
    assert np.abs(C.IsotonicCalibration().fit(close, yc).predict_proba(close)[:, 1]
                  - IsotonicRegression(out_of_bounds="clip").fit(close, yc).predict(close)).max() > 0.01
    pp = np.c_[1 - p, p]
    assert M.nll(pp, y) == pytest.approx(log_loss(y, pp), rel=1e-12)  # every p_y >= 1e-12: equal
    zero = np.array([[1.0, 0.0], [0.5, 0.5]])
    assert M.nll(zero, [1, 0]) == pytest.approx((27.631021 + np.log(2)) / 2, rel=1e-6)
    assert log_loss([1, 0], zero) == pytest.approx((-np.log(np.finfo(float).eps) + np.log(2)) / 2, rel=1e-6)


def test_bbq_and_histogram_binning_are_not_monotone_isotonic_is():
    """Chapter 3 says so: on data whose frequency falls and then rises, only isotonic regression
    stays non-decreasing."""
    rng = np.random.default_rng(0)
    p = np.sort(rng.uniform(0, 1, 600))
    y = (rng.random(600) < np.where(p < 0.5, 0.8 - p, p)).astype(int)
    grid = np.linspace(0, 1, 101)
    for cls, monotone in ((C.BBQ, False), (C.HistogramBinning, False), (C.IsotonicCalibration, True)):
        steps = np.diff(cls().fit(p, y).predict_proba(grid)[:, 1])
        assert (steps.min() >= -1e-12) == monotone, (cls.__name__, steps.min())


@pytest.mark.parametrize("cls", C.CALIBRATORS.values())
def test_scikit_learn_s_estimator_checks_pass_or_are_declared_with_a_reason(cls):
    import warnings

    from sklearn.utils.estimator_checks import check_estimator

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        results = check_estimator(cls(), expected_failed_checks=cls.EXPECTED_FAILED_CHECKS, on_fail=None)
    status = {}
    for r in results:
        status.setdefault(r["check_name"], set()).add(r["status"])
    failed = {name for name, st in status.items() if "failed" in st}
    assert not failed, f"{cls.__name__}: undeclared failures {sorted(failed)}"
    if cls in C.BINARY.values():  # (n,) scores: the feature-matrix checks declare themselves inapplicable
        assert any("Can't test estimator" in str(w.message) for w in caught)
        return
    stale = {name for name in cls.EXPECTED_FAILED_CHECKS if status.get(name) == {"passed"}}
    assert not stale, f"{cls.__name__}: declared as failing but passing {sorted(stale)}"
    assert sum("passed" in st for st in status.values()) >= 15
