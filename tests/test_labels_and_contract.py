"""The calibrators as scikit-learn classifiers of a model's scores: one label rule (scikit-learn's), the
metrics taking the same labels, ``score``, ``(n, 1)`` scores, dtypes, a calibration set missing a class,
Platt's targets, regularized vector scaling, and intervals inside their measure's range."""
import warnings

import numpy as np
import pytest

from calibcourse.calibration import calibrators as C
from calibcourse.calibration import metrics as M
from calibcourse.calibration import stats
from calibcourse.calibration.synthetic import scaled_logits


def _fit_input(cls, z):
    """What a registered calibrator takes: P(y = 1) for a binary one, probabilities for OneVsAll, else logits."""
    if cls in C.BINARY.values():
        return M.softmax(z)[:, 1]
    return M.softmax(z) if cls is C.OneVsAll else z


# ------------------------------------------------------------------ labels: scikit-learn's rule
@pytest.mark.parametrize("cls", C.CALIBRATORS.values())
def test_classes_are_the_sorted_labels_and_name_the_columns(cls):
    k = 2 if cls in C.BINARY.values() else 3
    z, y = scaled_logits(600, k, factor=2.0, seed=1)
    s = _fit_input(cls, z)
    ref = cls().fit(s, y)
    for names in (np.array([10, 20, 30])[:k], np.array(["ant", "bee", "cat"])[:k], np.array([-1.0, 1.0, 2.0])[:k]):
        fitted = cls().fit(s, names[y])
        assert fitted.classes_.tolist() == sorted(names.tolist())
        np.testing.assert_allclose(fitted.predict_proba(s), ref.predict_proba(s), atol=1e-12)
        assert fitted.predict(s).tolist() == names[ref.predict_proba(s).argmax(1)].tolist()


def test_integer_labels_are_never_read_by_their_range():
    """Issue 48: labels 1, 2, 3 were class names, and the same labels without a 3 column indices."""
    z, y = scaled_logits(600, 3, factor=2.0, seed=2)
    ts = C.TemperatureScaling().fit(z, y + 1)
    assert ts.classes_.tolist() == [1, 2, 3]
    no3 = y != 2
    with pytest.raises(ValueError, match=r"2 distinct values \(1, 2\) but the scores have 3 columns.*classes="):
        C.TemperatureScaling().fit(z[no3], y[no3] + 1)
    named = C.TemperatureScaling().fit(z[no3], y[no3] + 1, classes=[1, 2, 3])  # maps consistently when told
    codes = C.TemperatureScaling().fit(z[no3], y[no3], classes=range(3))
    assert named.classes_.tolist() == [1, 2, 3] and named.temperature_ == codes.temperature_
    with pytest.raises(ValueError, match=r"2 distinct values \(0, 1\)"):
        C.TemperatureScaling().fit(z[no3], y[no3])  # indices without a 2: not guessed either
    with pytest.raises(ValueError, match="Unknown label type: continuous"):
        C.TemperatureScaling().fit(z, y + 0.5)
    with pytest.raises(ValueError, match="hold 7, which is not one of classes"):
        C.TemperatureScaling().fit(z, np.r_[y[:-1], 7], classes=range(3))


def test_labels_mean_what_the_call_says_whatever_ran_before():
    """No setting changes what labels mean: the course's pages once switched integer labels to indices for
    the whole process (in their setup), so the same fit read them two ways. Labels that are the columns'
    indices, in a set that lacks a class, say so at the call with classes=range(K)."""
    import matplotlib
    from sklearn.exceptions import ConvergenceWarning  # noqa: F401 (setup filters it)

    import calibcourse.calibration as calibration
    from calibcourse.study.course.notebook import setup

    assert not {"set_config", "get_config", "config_context"} & set(dir(calibration))
    z, y = scaled_logits(600, 3, factor=2.0, seed=2)
    no2 = y != 2
    ref = C.TemperatureScaling().fit(z[no2], y[no2], classes=range(3))
    with warnings.catch_warnings(), matplotlib.rc_context():  # what setup sets for a page, undone after
        setup("ci", data="none")
        with pytest.raises(ValueError, match=r"2 distinct values \(0, 1\)"):
            C.TemperatureScaling().fit(z[no2], y[no2])  # a course page's labels are read as anyone's
        with pytest.raises(ValueError, match=r"2 distinct values \(1, 2\)"):
            C.TemperatureScaling().fit(z[no2], y[no2] + 1)
        again = C.TemperatureScaling().fit(z[no2], y[no2], classes=range(3))
    assert again.temperature_ == ref.temperature_ and again.classes_.tolist() == [0, 1, 2]
    assert ref.predict_proba(z).shape == (600, 3)


def test_the_metrics_take_the_labels_a_calibrator_takes():
    z, y = scaled_logits(500, 3, factor=2.0, seed=3)
    names = np.array(["ant", "bee", "cat"])[y]
    fitted = C.TemperatureScaling().fit(z, names)
    q = fitted.predict_proba(z)
    for metric in (M.ece, M.mce, M.nll, M.brier, M.error, M.classwise_ece, M.smooth_ece):
        assert metric(q, names) == metric(q, y), metric.__name__
    assert stats.interval(M.ece, q, names, n_boot=20) == stats.interval(M.ece, q, y, n_boot=20)
    assert M.nll(q, names.astype(object)) == M.nll(q, y)  # a pandas column of strings is an object array
    assert M.ece(q, y) == M.ece(q, y.astype(float))  # integer labels, as numbers of any dtype, are indices
    with pytest.raises(ValueError, match="must be < the number of classes"):
        M.ece(q, y + 1)  # indices, not names: never shifted
    with pytest.raises(ValueError, match="2 distinct names .* 3 columns"):
        M.ece(q, ["ant", "bee"] * 250)


# ------------------------------------------------------------------ scikit-learn's classifier contract
def test_score_is_the_mean_log_likelihood_and_model_selection_uses_it():
    from sklearn.base import is_classifier
    from sklearn.model_selection import GridSearchCV, cross_val_score

    rng = np.random.default_rng(4)
    p = rng.uniform(0, 1, 900)
    y = (rng.random(900) < p**2).astype(int)
    hb = C.HistogramBinning().fit(p, y)
    assert is_classifier(hb) and all(is_classifier(cls()) for cls in C.CALIBRATORS.values())
    assert hb.score(p, y) == pytest.approx(-M.nll(hb.predict_proba(p), y), rel=1e-12)
    w = rng.uniform(0.5, 2, 900)
    assert hb.score(p, y, sample_weight=w) == pytest.approx(-M.nll(hb.predict_proba(p), y, sample_weight=w))
    search = GridSearchCV(C.HistogramBinning(), {"n_bins": [2, 10, 300]}).fit(p, y)  # no scoring= needed
    assert search.best_params_["n_bins"] == 10  # 2 bins underfit p**2, 300 bins overfit 720 samples
    assert np.isfinite(cross_val_score(C.PlattScaling(), p, y, cv=3)).all()


@pytest.mark.parametrize("cls", C.CALIBRATORS.values())
def test_float32_in_float32_out_and_a_column_of_scores(cls):
    k = 2 if cls in C.BINARY.values() else 3
    z, y = scaled_logits(400, k, factor=2.0, seed=5)
    s = _fit_input(cls, z)
    fitted = cls().fit(s.astype(np.float32), y)
    assert fitted.predict_proba(s.astype(np.float32)).dtype == np.float32
    assert cls().fit(s, y).predict_proba(s).dtype == np.float64
    if s.ndim == 1:  # scikit-learn's (n, 1) column of a binary model is its (n,) scores
        col = cls().fit(s[:, None], y)
        np.testing.assert_array_equal(col.predict_proba(s[:, None]), cls().fit(s, y).predict_proba(s))


def test_a_single_logit_column_is_a_sigmoid_network():
    z, y = scaled_logits(400, 2, factor=2.0, seed=6)
    z1 = z[:, 1] - z[:, 0]
    ts = C.TemperatureScaling().fit(z1[:, None], y)
    assert ts.temperature_ == pytest.approx(C.TemperatureScaling().fit(z1, y).temperature_, rel=1e-12)
    assert ts.predict_proba(z1[:, None]).shape == (400, 2)


def test_one_vs_all_fits_a_calibration_set_missing_a_class_as_scikit_learn_does():
    """Issue 48: one-vs-all refused it; scikit-learn fits it (its classes come from the model)."""
    from sklearn.isotonic import IsotonicRegression

    z, y = scaled_logits(900, 3, factor=2.0, seed=7)
    p = M.softmax(z)
    keep = y != 2
    with pytest.raises(ValueError, match="classes="):
        C.OneVsAll(C.IsotonicCalibration()).fit(p[keep], y[keep])
    ova = C.OneVsAll(C.IsotonicCalibration()).fit(p[keep], y[keep], classes=range(3))
    assert ova.calibrators_[2] is None and ova.absent_value_ == 1 / (keep.sum() + 2)
    # scikit-learn's per-class isotonic maps for the classes it has, the Laplace constant for the absent one
    cols = [IsotonicRegression(out_of_bounds="clip").fit(p[keep, j], y[keep] == j).predict(p[:, j]) for j in (0, 1)]
    raw = np.c_[cols[0], cols[1], np.full(len(y), ova.absent_value_)]
    np.testing.assert_allclose(ova.predict_proba(p), raw / raw.sum(1, keepdims=True), atol=1e-12)


# ------------------------------------------------------------------ Platt's targets, temperature, vector scaling
def test_platt_targets_are_scikit_learn_s_sigmoid_calibration():
    from sklearn.calibration import CalibratedClassifierCV
    from sklearn.datasets import load_breast_cancer
    from sklearn.frozen import FrozenEstimator
    from sklearn.model_selection import train_test_split
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler
    from sklearn.svm import SVC

    X, y = load_breast_cancer(return_X_y=True)
    Xa, Xb, ya, yb = train_test_split(X, y, train_size=0.5, random_state=0, stratify=y)
    svc = make_pipeline(StandardScaler(), SVC(random_state=0)).fit(Xa, ya)
    sk = CalibratedClassifierCV(FrozenEstimator(svc), method="sigmoid").fit(Xb, yb).predict_proba(Xa)
    ours = C.PlattScaling(input_type="logits", targets="platt").fit(svc.decision_function(Xb), yb)
    np.testing.assert_allclose(ours.predict_proba(svc.decision_function(Xa)), sk, atol=1e-6)
    plain = C.PlattScaling(input_type="logits").fit(svc.decision_function(Xb), yb)
    assert abs(plain.a_) > abs(ours.a_)  # the labels pull harder than the smoothed targets


def test_temperature_on_platt_targets_minimizes_their_cross_entropy():
    from scipy.optimize import minimize_scalar
    from scipy.special import log_softmax

    z, y = scaled_logits(300, 4, factor=3.0, seed=8)
    from calibcourse.calibration.calibrators.affine import soft_targets

    t = soft_targets(y, 4)
    res = minimize_scalar(lambda T: -np.mean(np.sum(t * log_softmax(z / T, axis=1), 1)), bounds=(0.05, 50),
                          method="bounded", options={"xatol": 1e-10})
    assert C.TemperatureScaling(targets="platt").fit(z, y).temperature_ == pytest.approx(res.x, rel=1e-6)
    assert C.TemperatureScaling(targets="auto").fit(z, y).temperature_ == C.TemperatureScaling().fit(z, y).temperature_


def test_a_separated_set_gets_a_finite_temperature_with_auto_targets():
    rng = np.random.default_rng(9)
    y = rng.integers(0, 3, 60)
    z = rng.normal(size=(60, 3))
    z[np.arange(60), y] += 4  # every label the argmax
    with pytest.raises(ValueError, match="perfectly separated"):
        C.TemperatureScaling().fit(z, y)
    ts = C.TemperatureScaling(targets="auto").fit(z, y)
    assert ts.temperature_ == C.TemperatureScaling(targets="platt").fit(z, y).temperature_
    assert 0.05 < ts.temperature_ < 20 and ts.get_params()["targets"] == "auto"


def _separated_svc_scores():
    from sklearn.datasets import load_iris
    from sklearn.model_selection import train_test_split
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler
    from sklearn.svm import SVC

    X, y = load_iris(return_X_y=True)  # split 50 / 25 / 25 as the panel (bench/bench_report_panel.py)
    Xa, Xr, ya, yr = train_test_split(X, y, train_size=0.5, random_state=0, stratify=y)
    Xb, Xt, yb, yt = train_test_split(Xr, yr, train_size=0.5, random_state=0, stratify=yr)
    svc = make_pipeline(StandardScaler(), SVC(random_state=0)).fit(Xa, ya)
    return svc.decision_function(Xb), yb, svc.decision_function(Xt), yt


def test_vector_scaling_warns_where_it_diverges_and_is_finite_regularized():
    """Issue 48: on an SVC's scores of iris vector scaling reached weights of 397 without a word."""
    zc, yc, zt, yt = _separated_svc_scores()
    from sklearn.exceptions import ConvergenceWarning

    with pytest.warns(ConvergenceWarning, match="separate|did not converge"):
        C.VectorScaling().fit(zc, yc)
    k, n = 3, len(yc)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no warning
        reg = C.VectorScaling(l2=2 * k / n, bias_l2=0.5 * k / n).fit(zc, yc)
    assert reg.result_.success and reg.result_.nit < 200 and np.abs(reg.coef_).max() < 20
    ts = C.TemperatureScaling(targets="auto").fit(zc, yc)
    # pulled towards temperature scaling's 1 / T: a penalty 1000 times stronger is temperature scaling
    strong = C.VectorScaling(l2=1000.0, bias_l2=1000.0).fit(zc, yc)
    np.testing.assert_allclose(strong.coef_, 1 / ts.temperature_, rtol=1e-2)
    with pytest.warns(ConvergenceWarning):
        plain = C.VectorScaling().fit(zc, yc)
    assert M.nll(reg.predict_proba(zt), yt) < M.nll(plain.predict_proba(zt), yt)


def test_regularized_vector_scaling_weights_are_repetitions():
    zc, yc, _, _ = _separated_svc_scores()
    w = np.random.default_rng(10).integers(0, 3, len(yc))
    rep = np.repeat(np.arange(len(yc)), w)
    cal = C.VectorScaling(l2=0.1, bias_l2=0.05)
    a, b = cal.fit(zc, yc, sample_weight=w.astype(float)), C.VectorScaling(l2=0.1, bias_l2=0.05).fit(zc[rep], yc[rep])
    np.testing.assert_allclose(a.predict_proba(zc), b.predict_proba(zc), atol=1e-6)


# ------------------------------------------------------------------ intervals inside the range
def test_no_calibration_error_interval_leaves_its_range():
    """Issue 48: MCE 76.90 % [0.70, 153.11] on 37 samples."""
    rng = np.random.default_rng(11)
    clipped = 0
    for seed in range(20):
        p = rng.dirichlet(np.ones(3) * 0.3, 37)
        y = rng.integers(0, 3, 37)
        for metric in (M.mce, M.ece, M.ace, M.classwise_ece, M.error):
            r = stats.interval(metric, p, y, n_boot=200, seed=seed)
            assert 0 <= r.low <= r.estimate <= r.high <= 1, (metric.__name__, r)
            clipped += metric is M.mce and r.high == 1.0
        d = stats.paired_difference(M.mce, p, rng.dirichlet(np.ones(3), 37), y, n_boot=200)
        assert -1 <= d.low <= d.high <= 1
        b = stats.interval(M.brier, p, y, n_boot=200)
        assert 0 <= b.low <= b.high <= 2
    assert clipped > 0  # the basic half alone would have left [0, 1]


def test_the_page_s_intervals_stay_in_range(capsys):
    import re

    from calibcourse.calibration import report as R

    rng = np.random.default_rng(12)
    p = rng.dirichlet(np.ones(3) * 0.3, 37)
    y = rng.integers(0, 3, 37)
    while np.bincount(y, minlength=3).min() < 5:
        y = rng.integers(0, 3, 37)
    html = R.report_html(p, y, n_boot=300)[0]
    ends = [float(v) for a, b in re.findall(r"\[(-?[\d.]+), (-?[\d.]+)\] %", html) for v in (a, b)]
    assert ends and min(ends) >= 0 and max(ends) <= 100
    assert "Few samples" in html and "37 labelled samples" in html
