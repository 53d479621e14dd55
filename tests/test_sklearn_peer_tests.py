"""scikit-learn's own tests of isotonic regression and the calibration curve (sklearn/tests/test_isotonic.py,
test_calibration.py, version 1.9), adapted to the toolkit.

Our isotonic calibrator maps probabilities in [0, 1] to P(y = 1) with binary labels, so each test keeps
scikit-learn's structure on such data and takes scikit-learn's ``IsotonicRegression(out_of_bounds="clip")``
as the reference; where we differ on purpose (Platt's targets), the test says so and asserts our
documented behaviour. torchmetrics' calibration-error tests are adapted in tests/test_metrics.py.
"""
import numpy as np
import pytest
from sklearn.isotonic import IsotonicRegression
from sklearn.utils import shuffle

from calibcourse.calibration import calibrators as C
from calibcourse.calibration import metrics as M


def _ours(x, y, w=None):
    return C.IsotonicCalibration().fit(np.asarray(x, float), np.asarray(y), sample_weight=w)


def _theirs(x, y, w=None):
    return IsotonicRegression(out_of_bounds="clip", y_min=0, y_max=1).fit(x, y, sample_weight=w)


def test_permutation_invariance():  # test_isotonic.py::test_permutation_invariance
    x = np.array([1, 2, 3, 4, 5, 6, 7]) / 8
    y = np.array([0, 1, 1, 0, 0, 1, 1])
    w = np.array([1, 2, 3, 4, 5, 6, 7], dtype=float)
    x_s, y_s, w_s = shuffle(x, y, w, random_state=0)
    np.testing.assert_array_equal(_ours(x, y, w).predict_proba(x), _ours(x_s, y_s, w_s).predict_proba(x))


@pytest.mark.parametrize("x,y", [([1, 1, 2, 3, 4, 5], [0, 1, 0, 1, 1, 1]),   # ties on the minimum
                                 ([1, 2, 3, 4, 5, 5], [0, 0, 1, 0, 1, 0])])  # ties on the maximum
def test_isotonic_regression_ties(x, y):  # test_isotonic.py::test_isotonic_regression_ties_min / _max
    x = np.array(x) / 6
    np.testing.assert_allclose(_ours(x, y).predict_proba(x)[:, 1], _theirs(x, y).predict(x), atol=1e-12)


def test_isotonic_sample_weight():  # test_isotonic.py::test_isotonic_sample_weight
    x = np.array([1, 2, 3, 4, 5, 6, 7]) / 8
    y = np.array([0, 1, 1, 0, 0, 1, 1])
    w = np.array([1, 2, 3, 4, 5, 6, 7], dtype=float)
    np.testing.assert_allclose(_ours(x, y, w).predict_proba(x)[:, 1], _theirs(x, y, w).predict(x), atol=1e-12)


def test_isotonic_regression_oob_clip():  # test_isotonic.py::test_isotonic_regression_oob_clip
    rng = np.random.default_rng(0)
    x = rng.uniform(0.2, 0.8, 40)
    y = (rng.random(40) < x).astype(int)
    fitted = _ours(x, y)
    outside = fitted.predict_proba(np.array([0.0, 1.0]))[:, 1]
    inside = fitted.predict_proba(x)[:, 1]
    assert outside.max() == inside.max() and outside.min() == inside.min()


def test_isotonic_duplicate_min_entry():  # test_isotonic.py::test_isotonic_duplicate_min_entry
    x, y = np.array([0.0, 0.0, 1.0]), np.array([0, 0, 1])
    assert np.isfinite(_ours(x, y).predict_proba(x)).all()


def test_isotonic_zero_weight_loop():  # test_isotonic.py::test_isotonic_zero_weight_loop
    rng = np.random.RandomState(42)
    x = np.linspace(0.05, 0.95, 50)
    y = (rng.uniform(size=50) < x).astype(int)
    w = rng.uniform(size=50)
    w[5:8] = 0
    ours = _ours(x, y, w)
    np.testing.assert_allclose(ours.predict_proba(x)[:, 1], _theirs(x, y, w).predict(x), atol=1e-12)


def test_isotonic_thresholds():  # test_isotonic.py::test_isotonic_thresholds (increasing)
    rng = np.random.RandomState(42)
    x = rng.uniform(size=30)
    y = (rng.uniform(size=30) < 0.5).astype(int)
    fitted = _ours(x, y)
    xt, yt = fitted.x_thresholds_, fitted.y_thresholds_
    assert xt.shape == yt.shape and np.isin(xt, x).all()
    assert yt.max() <= y.max() and yt.min() >= y.min() and (np.diff(yt) >= 0).all()
    # we keep every distinct score as a threshold; scikit-learn drops the redundant ones in a flat run
    assert xt.shape[0] == np.unique(x).shape[0] >= IsotonicRegression().fit(x, y).X_thresholds_.shape[0]


def test_calibration_curve():  # test_calibration.py::test_calibration_curve
    from sklearn.calibration import calibration_curve

    y_true = np.array([0, 0, 0, 1, 1, 1])
    y_pred = np.array([0.0, 0.1, 0.2, 0.8, 0.9, 1.0])
    rb = M.reliability_bins(y_pred, y_true, n_bins=2)
    np.testing.assert_allclose(rb.accuracy, [0, 1])
    np.testing.assert_allclose(rb.confidence, [0.1, 0.9])
    np.testing.assert_allclose(rb.accuracy, calibration_curve(y_true, y_pred, n_bins=2)[0])
    with pytest.raises(ValueError):
        M.reliability_bins(np.array([-0.1]), np.array([1]))
    y_true2 = np.array([0, 0, 0, 0, 1, 1])
    y_pred2 = np.array([0.0, 0.1, 0.2, 0.5, 0.9, 1.0])
    rq = M.reliability_bins(y_pred2, y_true2, n_bins=2, strategy="quantile")
    np.testing.assert_allclose(rq.accuracy, [0, 2 / 3])
    np.testing.assert_allclose(rq.confidence, [0.1, 0.8])
    with pytest.raises(ValueError, match="strategy"):
        M.reliability_bins(y_pred2, y_true2, strategy="percentile")


def test_sigmoid_calibration_differs_on_purpose_in_its_targets():  # test_calibration.py::test_sigmoid_calibration
    """scikit-learn fits Platt's smoothed targets, (N+ + 1)/(N+ + 2) and 1/(N- + 2); we fit the labels
    themselves (maximum likelihood) by default, as the practitioners' guide's table says, and Platt's
    targets with targets="platt" (what calibcourse report fits): then the two agree."""
    from sklearn.calibration import _sigmoid_calibration
    from sklearn.linear_model import LogisticRegression

    rng = np.random.default_rng(1)
    z = rng.normal(size=300) * 2
    y = (rng.random(300) < 1 / (1 + np.exp(-1.5 * z + 0.3))).astype(int)
    ours = C.PlattScaling(input_type="logits").fit(z, y)
    mle = LogisticRegression(C=np.inf, tol=1e-12, max_iter=1000).fit(z[:, None], y)
    assert ours.a_ == pytest.approx(mle.coef_[0, 0], rel=1e-6) and ours.b_ == pytest.approx(mle.intercept_[0], rel=1e-5)
    a_sk, b_sk = _sigmoid_calibration(z, y)  # P = 1 / (1 + exp(a z + b)), on the smoothed targets
    assert abs(-a_sk - ours.a_) > 1e-4  # not the same fit
    platt = C.PlattScaling(input_type="logits", targets="platt").fit(z, y)
    assert platt.a_ == pytest.approx(-a_sk, rel=1e-5) and platt.b_ == pytest.approx(-b_sk, rel=1e-5, abs=1e-6)
