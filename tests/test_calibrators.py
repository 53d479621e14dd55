"""calibcourse.calibrators against independent references, known truths and bad input."""
import math

import numpy as np
import pytest
import torch

from calibcourse import calibrators as C
from calibcourse import metrics as M


def sample_labels(probs, rng):
    u = rng.random((probs.shape[0], 1))
    return np.minimum((probs.cumsum(1) < u).sum(1), probs.shape[1] - 1)


def overconfident(n, k, factor, seed=0, spread=1.5):
    """Labels drawn from softmax(z); the model reports factor * z (overconfident if factor > 1)."""
    rng = np.random.default_rng(seed)
    z = rng.normal(size=(n, k)) * spread
    y = sample_labels(M.softmax(z), rng)
    return factor * z, y


def binary_miscalibrated(n, seed=0):
    """Scores p whose true P(y=1 | p) is p**3: an overconfident-for-positives binary model."""
    rng = np.random.default_rng(seed)
    p = rng.uniform(0.001, 0.999, n)
    y = (rng.random(n) < p**3).astype(int)
    return p, y


# ------------------------------------------------------------------ references
def test_isotonic_matches_sklearn_exactly():
    from sklearn.isotonic import IsotonicRegression

    p, y = binary_miscalibrated(800, 1)
    p = np.round(p, 2)  # ties, which both must pool
    ours = C.IsotonicCalibration().fit(p, y)
    ref = IsotonicRegression(out_of_bounds="clip", y_min=0, y_max=1).fit(p, y)
    t = np.linspace(-0.0, 1.0, 2001)
    np.testing.assert_allclose(ours.predict_proba(t), ref.predict(t), atol=1e-12)
    assert np.all(np.diff(ours.y_thresholds_) >= 0)


def test_platt_matches_sklearn_logistic_regression_on_the_logit():
    from sklearn.linear_model import LogisticRegression

    p, y = binary_miscalibrated(2000, 2)
    z = np.log(p / (1 - p))
    ours = C.PlattScaling(input_type="logits").fit(z, y)
    ref = LogisticRegression(C=np.inf, tol=1e-12, max_iter=10000).fit(z[:, None], y)
    assert ours.a_ == pytest.approx(ref.coef_[0, 0], abs=1e-6)
    assert ours.b_ == pytest.approx(ref.intercept_[0], abs=1e-6)
    np.testing.assert_allclose(ours.predict_proba(z), ref.predict_proba(z[:, None])[:, 1], atol=1e-7)
    # the same model from probabilities
    np.testing.assert_allclose(C.PlattScaling().fit(p, y).predict_proba(p),
                               ours.predict_proba(z), atol=1e-9)


def test_temperature_matches_brute_force_nll_grid():
    z, y = overconfident(4000, 10, 2.0, seed=3)
    ts = C.TemperatureScaling().fit(z, y)
    coarse = np.arange(0.5, 5.0, 0.01)
    t0 = coarse[np.argmin([M.nll(M.softmax(z / t), y) for t in coarse])]
    fine = np.arange(t0 - 0.01, t0 + 0.01, 1e-5)
    t_best = fine[np.argmin([M.nll(M.softmax(z / t), y) for t in fine])]
    assert ts.temperature_ == pytest.approx(t_best, abs=2e-5)
    assert ts.nll_ == pytest.approx(M.nll(ts.predict_proba(z), y), abs=1e-12)


def test_temperature_matches_sklearn_calibrated_classifier_cv():
    pytest.importorskip("sklearn.frozen")
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
    assert p.shape == (20000,)
    np.testing.assert_allclose(p, 1 / (1 + np.exp(-3 * z / ts.temperature_)))


def test_grid_returns_ece_and_nll_per_temperature():
    z, y = overconfident(2000, 10, 2.0, seed=7)
    df = C.TemperatureScaling.grid(z, y, temperatures=[0.5, 1.0, 2.0, 3.0])
    assert list(df.columns) == ["temperature", "ece", "nll"]
    assert df.loc[1, "ece"] == pytest.approx(M.ece(M.softmax(z), y))
    assert df.loc[2, "nll"] == pytest.approx(M.nll(M.softmax(z / 2.0), y))
    with pytest.raises(ValueError, match="temperatures"):
        C.TemperatureScaling.grid(z, y, temperatures=[1.0, -1.0])


def test_tied_vector_scaling_without_bias_is_temperature_scaling():
    z, y = overconfident(3000, 10, 2.0, seed=8)
    ts = C.TemperatureScaling().fit(z, y)
    vs = C.VectorScaling(tie_weights=True, bias=False).fit(z, y)
    assert 1 / vs.coef_[0] == pytest.approx(ts.temperature_, abs=1e-5)


def test_vector_and_matrix_scaling_reduce_calibration_nll_in_nested_order():
    z, y = overconfident(3000, 5, 2.0, seed=9)
    z = z + np.array([0.5, 0, 0, -0.3, 0])  # a class bias for vector/matrix scaling to fix
    nll0 = M.nll(M.softmax(z), y)
    ts = M.nll(C.TemperatureScaling().fit(z, y).predict_proba(z), y)
    vs = M.nll(C.VectorScaling().fit(z, y).predict_proba(z), y)
    ms = M.nll(C.MatrixScaling().fit(z, y).predict_proba(z), y)
    assert nll0 > ts >= vs - 1e-9 >= ms - 2e-9


def test_matrix_scaling_overfits_small_calibration_set_with_many_classes():
    z, y = overconfident(6000, 100, 2.0, seed=10)
    zc, yc, zt, yt = z[:500], y[:500], z[500:], y[500:]
    ts = C.TemperatureScaling().fit(zc, yc)
    ms = C.MatrixScaling().fit(zc, yc)
    assert M.nll(ms.predict_proba(zc), yc) < M.nll(ts.predict_proba(zc), yc)     # better on cal
    assert M.nll(ms.predict_proba(zt), yt) > M.nll(ts.predict_proba(zt), yt)     # worse on test
    # regularization towards vector scaling (ODIR) reins it in
    reg = C.MatrixScaling(off_diagonal=100.0, bias_l2=1.0).fit(zc, yc)
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
    np.testing.assert_allclose(bbq.predict_proba(np.array([0.2, 0.8])), [expected_low, expected_high],
                               atol=1e-12)


def test_bbq_agrees_with_netcal_within_tolerance():
    from netcal.binning import BBQ as NetcalBBQ

    p, y = binary_miscalibrated(3000, 11)
    t = np.linspace(0.01, 0.99, 500)
    ours = C.BBQ().fit(p, y).predict_proba(t)
    ref = NetcalBBQ().fit(p, y).transform(t)
    # netcal scores equal-width models by BIC, the paper (and we) equal-frequency ones by BDeu:
    # the two averages differ in detail, not in shape
    assert np.mean(np.abs(ours - ref)) < 0.03
    assert np.abs(ours - t**3).mean() < 0.05


# ------------------------------------------------------------------ behaviour
@pytest.mark.parametrize("make", [
    lambda: C.HistogramBinning(), lambda: C.HistogramBinning(strategy="quantile"),
    lambda: C.IsotonicCalibration(), lambda: C.BBQ(), lambda: C.PlattScaling(),
])
def test_every_binary_method_lowers_heldout_ece(make):
    p, y = binary_miscalibrated(6000, 12)
    cal = make().fit(p[:3000], y[:3000])
    before = M.ece(p[3000:], y[3000:], reliability="positive_class")
    after = M.ece(cal.predict_proba(p[3000:]), y[3000:], reliability="positive_class")
    assert after < before / 2


@pytest.mark.parametrize("make", [
    lambda: C.TemperatureScaling(), lambda: C.VectorScaling(), lambda: C.MatrixScaling(),
    lambda: C.OneVsAll(C.HistogramBinning(), input_type="logits"),
    lambda: C.OneVsAll(C.IsotonicCalibration(), input_type="logits"),
    lambda: C.OneVsAll(C.BBQ(), input_type="logits"), lambda: C.OneVsAll(C.PlattScaling(), input_type="logits"),
])
def test_every_multiclass_method_lowers_heldout_ece(make):
    z, y = overconfident(8000, 5, 2.5, seed=13)
    cal = make().fit(z[:4000], y[:4000])
    before = M.ece(M.softmax(z[4000:]), y[4000:])
    after = M.ece(cal.predict_proba(z[4000:]), y[4000:])
    assert after < before / 2


def test_accuracy_unchanged_by_ts_and_monotone_vector_scaling():
    z, y = overconfident(3000, 10, 2.0, seed=14)
    base = M.softmax(z).argmax(1)
    assert np.array_equal(C.TemperatureScaling().fit(z, y).predict_proba(z).argmax(1), base)
    vs = C.VectorScaling(tie_weights=True, bias=False).fit(z, y)
    assert np.array_equal(vs.predict_proba(z).argmax(1), base)


def test_one_vs_all_rows_sum_to_one():
    z, y = overconfident(2000, 4, 2.0, seed=15)
    q = C.OneVsAll(C.IsotonicCalibration(), input_type="logits").fit(z, y).predict_proba(z)
    np.testing.assert_allclose(q.sum(1), 1.0)
    assert len(C.OneVsAll(C.BBQ(), input_type="logits").fit(z, y).calibrators_) == 4


def test_torch_in_torch_out():
    z, y = overconfident(1000, 3, 2.0, seed=16)
    zt = torch.tensor(z, dtype=torch.float32)
    ts = C.TemperatureScaling().fit(zt, torch.tensor(y))
    out = ts.predict_proba(zt)
    assert isinstance(out, torch.Tensor) and out.dtype == torch.float32
    np.testing.assert_allclose(out.numpy(), C.TemperatureScaling().fit(z, y).predict_proba(z), atol=1e-5)
    p = torch.rand(500, dtype=torch.float64)
    yb = (torch.rand(500, dtype=torch.float64) < p).long()
    assert isinstance(C.HistogramBinning().fit(p, yb).predict_proba(p), torch.Tensor)


# ------------------------------------------------------------------ bad input
ALL = [C.HistogramBinning, C.IsotonicCalibration, C.BBQ, C.PlattScaling, C.TemperatureScaling,
       C.VectorScaling, C.MatrixScaling, C.OneVsAll]


@pytest.mark.parametrize("cls", ALL)
def test_predict_before_fit_is_a_clear_error(cls):
    with pytest.raises(C.NotFittedError, match=f"This {cls.__name__} is not fitted yet"):
        cls().predict_proba(np.array([[0.2, 0.8], [0.6, 0.4]]) if cls in ALL[4:] else np.array([0.2, 0.8]))


BINARY = [C.HistogramBinning, C.IsotonicCalibration, C.BBQ, C.PlattScaling]
MULTI = [C.TemperatureScaling, C.VectorScaling, C.MatrixScaling, C.OneVsAll]


@pytest.mark.parametrize("cls", BINARY)
def test_binary_bad_input(cls):
    good = np.array([0.1, 0.4, 0.6, 0.9, 0.3, 0.7] * 5)
    yb = np.array([0, 0, 1, 1, 0, 1] * 5)
    with pytest.raises(ValueError, match="scores contains NaN"):
        cls().fit(np.r_[good[:-1], np.nan], yb)
    with pytest.raises(ValueError, match="labels must be < the number of classes"):
        cls().fit(good, np.r_[yb[:-1], 2])
    with pytest.raises(ValueError, match="one class only"):
        cls().fit(good, np.zeros_like(yb))
    with pytest.raises(ValueError, match="labels has 29 entries"):
        cls().fit(good, yb[:-1])
    with pytest.raises(ValueError, match="scores must have shape"):
        cls().fit(good.reshape(6, 5), yb)
    if cls is not C.PlattScaling:
        with pytest.raises(ValueError, match=r"probabilities of class 1 in \[0, 1\]"):
            cls().fit(good * 3, yb)
    with pytest.raises(ValueError, match="input_type must be one of"):
        cls(input_type="score").fit(good, yb)


def test_too_few_samples_for_the_bins():
    with pytest.raises(ValueError, match="too few samples for the bins asked"):
        C.HistogramBinning(n_bins=50).fit(np.linspace(0.1, 0.9, 20), np.arange(20) % 2)
    with pytest.raises(ValueError, match="n_bins must be >= 1"):
        C.HistogramBinning(n_bins=0).fit(np.linspace(0.1, 0.9, 20), np.arange(20) % 2)


@pytest.mark.parametrize("cls", MULTI)
def test_multiclass_bad_input(cls):
    z, y = overconfident(200, 3, 2.0, seed=17)
    bad = z.copy()
    bad[3, 1] = np.inf
    with pytest.raises(ValueError, match="logits contains inf"):
        cls().fit(bad, y)
    with pytest.raises(ValueError, match="labels must be < the number of classes"):
        cls().fit(z, np.r_[y[:-1], 3])
    with pytest.raises(ValueError, match="one class only|lack classes"):
        cls().fit(z, np.zeros_like(y))
    with pytest.raises(ValueError, match="labels has 199 entries"):
        cls().fit(z, y[:-1])
    fitted = cls().fit(z, y)
    with pytest.raises(ValueError, match="logits must have shape|classes but the calibrator"):
        fitted.predict_proba(np.zeros((5, 4)) if cls is not C.TemperatureScaling else np.zeros((5, 2, 2)))


def test_one_vs_all_rejects_a_multiclass_method():
    z, y = overconfident(200, 3, 2.0, seed=18)
    with pytest.raises(ValueError, match="binary_method must be a binary calibrator"):
        C.OneVsAll(C.TemperatureScaling()).fit(z, y)


def test_temperature_scaling_without_signal_is_an_error():
    rng = np.random.default_rng(0)
    z = rng.normal(size=(500, 3))
    y = z.argmin(1)  # anti-correlated: NLL only grows with any T > 0 in the useful direction
    with pytest.raises(ValueError, match="no signal"):
        C.TemperatureScaling().fit(z, y)
