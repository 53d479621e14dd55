"""calibcourse.study.training.crossfit: folds, out-of-fold predictions and the cross-fitted run, against
scikit-learn."""
import json

import numpy as np
import pytest
from scipy.special import softmax
from sklearn.calibration import CalibratedClassifierCV
from sklearn.datasets import make_classification
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import StratifiedKFold, cross_val_predict

from calibcourse.calibration.calibrators import TemperatureScaling
from calibcourse.calibration.folds import fold_indices
from calibcourse.study.runs import cache as cachemod
from calibcourse.study.training import crossfit as CF
from calibcourse.study.training import train as T
from calibcourse.study.training.config import normalize_config


@pytest.fixture(scope="module")
def toy():
    X, y = make_classification(600, 8, n_informative=5, n_classes=3, random_state=0)
    return X[:400], y[:400], X[400:], y[400:]


def _lr():
    return LogisticRegression(C=100.0, max_iter=2000)


def test_folds_hold_out_every_sample_once_are_disjoint_stratified_and_deterministic():
    y = np.random.default_rng(1).integers(0, 4, 203)
    folds = fold_indices(y, 5, seed=7)
    held = np.concatenate([h for _, h in folds])
    assert sorted(held.tolist()) == list(range(len(y)))  # each sample held out exactly once
    for train, h in folds:
        assert np.intersect1d(train, h).size == 0 and len(train) + len(h) == len(y)
        # stratified: every class within one sample of its share of the fold
        assert np.all(np.abs(np.bincount(y[h], minlength=4) - np.bincount(y, minlength=4) / 5) < 1)
    again = fold_indices(y, 5, seed=7)
    assert all(np.array_equal(a, b) for f, g in zip(folds, again, strict=True) for a, b in zip(f, g, strict=True))
    other = fold_indices(y, 5, seed=8)
    assert not all(np.array_equal(f[1], g[1]) for f, g in zip(folds, other, strict=True))
    ref = StratifiedKFold(5, shuffle=True, random_state=7).split(np.zeros(len(y)), y)
    assert all(np.array_equal(h, np.sort(rh)) for (_, h), (_, rh) in zip(folds, ref, strict=True))


@pytest.mark.parametrize("bad, match", [(1, "folds must be an integer >= 2"), (2.0, "folds must be an integer"),
                                        (60, "smallest class")])
def test_fold_indices_refuses_bad_folds(bad, match):
    with pytest.raises(ValueError, match=match):
        fold_indices(np.arange(100) % 2, bad, seed=0)


def test_out_of_fold_equals_sklearns_cross_val_predict(toy):
    X, y, _, _ = toy
    cv = StratifiedKFold(5, shuffle=True, random_state=3)
    ref = cross_val_predict(_lr(), X, y, cv=cv, method="decision_function")
    oof = CF.out_of_fold(lambda tr, held: _lr().fit(X[tr], y[tr]).decision_function(X[held]), y, 5, seed=3)
    np.testing.assert_allclose(oof, ref, rtol=0, atol=1e-12)
    with pytest.raises(ValueError, match="one row per held-out sample"):
        CF.out_of_fold(lambda tr, held: np.zeros(3), y, 5, seed=3)


def test_cross_fitting_equals_sklearns_calibrated_classifier_cv_with_temperature_scaling(toy):
    """ensemble=False: one temperature on the out-of-fold logits, applied to a model refitted on the pool."""
    X, y, Xt, _ = toy
    cv = StratifiedKFold(5, shuffle=True, random_state=3)
    oof = CF.out_of_fold(lambda tr, held: _lr().fit(X[tr], y[tr]).decision_function(X[held]), y, 5, seed=3)
    t = TemperatureScaling().fit(oof, y).temperature_
    ours = softmax(_lr().fit(X, y).decision_function(Xt) / t, axis=1)
    ref = CalibratedClassifierCV(_lr(), method="temperature", cv=cv, ensemble=False).fit(X, y)
    np.testing.assert_allclose(ours, ref.predict_proba(Xt), atol=1e-6)
    assert 1 / ref.calibrated_classifiers_[0].calibrators[0].beta_ == pytest.approx(t, rel=1e-4)


def test_the_fold_ensemble_equals_sklearns_calibrated_classifier_cv_with_ensemble_true(toy):
    """ensemble=True: each fold model with the temperature of its own held-out fold, probabilities averaged."""
    X, y, Xt, _ = toy
    cv = StratifiedKFold(5, shuffle=True, random_state=3)
    zs, ts = [], []
    for tr, held in fold_indices(y, 5, seed=3):
        m = _lr().fit(X[tr], y[tr])
        ts.append(TemperatureScaling().fit(m.decision_function(X[held]), y[held]).temperature_)
        zs.append(m.decision_function(Xt))
    ref = CalibratedClassifierCV(_lr(), method="temperature", cv=cv, ensemble=True).fit(X, y)
    np.testing.assert_allclose(CF.ensemble_predict(zs, ts), ref.predict_proba(Xt), atol=1e-6)
    with pytest.raises(ValueError, match="fold_temperatures must be finite and > 0"):
        CF.ensemble_predict(zs, [1.0, 1.0, 1.0, 1.0, 0.0])
    with pytest.raises(ValueError, match=r"fold_logits must be \(k, n, K\)"):
        CF.ensemble_predict(zs[0], ts)


CFG = {"data": {"name": "mnist1d", "mnist1d_train": 150, "mnist1d_test": 60, "seed": 2},
       "model": {"name": "mlp", "depth": 1, "width": 32}, "epochs": 6, "batch_size": 25, "seed": 2,
       "cross_fit": {"folds": 3}}


@pytest.fixture
def one_thread():
    """train()'s thread policy for the direct calls of ``_train`` below: the threads decide a CPU run's last bits."""
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


def test_the_cross_fitted_run_trains_each_fold_without_its_fold_and_the_final_network_on_the_pool(monkeypatch,
                                                                                                   one_thread):
    calls, real = [], T._train

    def spy(config, *args, data=None, **kw):
        calls.append(data)
        return real(config, *args, data=data, **kw)

    monkeypatch.setattr(T, "_train", spy)
    r = T.train(CFG, progress=False)
    assert len(calls) == 4 and r.info["trainings"] == 4
    rows = lambda a: {x.tobytes() for x in a}  # noqa: E731  (MNIST-1D sequences are distinct)
    pool = np.concatenate(calls[-1][:1])
    assert len(rows(pool)) == len(pool) == r.info["n_pool"] == 150
    held_rows = set()
    for Xtr, _, Xho, _, _, _, _ in calls[:-1]:
        assert not rows(Xtr) & rows(Xho)  # a fold network never sees the fold it predicts
        assert rows(Xtr) | rows(Xho) == rows(pool)
        assert not held_rows & rows(Xho)
        held_rows |= rows(Xho)
    assert held_rows == rows(pool)  # every pool sample is held out once
    # the outputs are closed forms of the networks': one temperature on the out-of-fold logits ...
    monkeypatch.setattr(T, "_train", real)
    base = {k: v for k, v in CFG.items() if k != "cross_fit"}
    folds = [real(base, False, None, 1, data=d) for d in calls[:-1]]
    oof_z = np.concatenate([f.logits("val") for f in folds])
    oof_y = np.concatenate([f.labels("val") for f in folds])
    t = TemperatureScaling().fit(oof_z, oof_y).temperature_
    assert float(r.outputs["temperature"]) == pytest.approx(t, rel=1e-9)
    ts = [TemperatureScaling().fit(f.logits("val"), f.labels("val")).temperature_ for f in folds]
    np.testing.assert_allclose(r.outputs["fold_temperatures"], ts, rtol=1e-9)
    # ... applied to the network trained on the whole pool, whose float32 logits are stored as they are
    final = real(base, False, None, 1, data=calls[-1])
    assert r.logits("test").dtype == np.float32
    np.testing.assert_array_equal(r.logits("test").astype(np.float64), final.logits("test"))
    assert r.history["val_nll"].isna().all() and len(r.history) == CFG["epochs"]
    # and the fold networks' own test logits, for the fold ensemble (scikit-learn's ensemble=True)
    assert r.outputs["fold_test_logits"].shape == (3, 60, 10) and r.outputs["fold_test_logits"].dtype == np.float32
    for f, z in zip(folds, r.outputs["fold_test_logits"], strict=True):
        np.testing.assert_array_equal(z.astype(np.float64), f.logits("test"))


def test_cross_fit_is_an_optional_key_that_leaves_every_committed_key_as_it_was():
    """Every committed entry's config still hashes to its folder's name, and ``cross_fit: None`` to
    the key of the config without it."""
    cache = cachemod.Cache(cachemod.REPOSITORY_CACHE)
    keys = cache.keys()
    assert keys
    for key in keys:
        cfg = json.loads((cache.path(key) / "manifest.json").read_text())["config"]
        assert cachemod.config_key(cfg) == key
        if "cross_fit" not in cfg:
            assert cachemod.config_key({**cfg, "cross_fit": None}) == key
    base = {k: v for k, v in CFG.items() if k != "cross_fit"}
    assert cachemod.config_key(CFG) != cachemod.config_key(base) and "cross_fit" not in normalize_config(base)


@pytest.mark.parametrize("change, match", [
    ({"cross_fit": {"folds": 1}}, "cross_fit.folds must be an integer >= 2"),
    ({"cross_fit": {"k": 5}}, "cross_fit must be"),
    ({"cross_fit": {"folds": 5}, "keep_best": "val_nll"}, "cannot be combined with keep_best"),
    ({"cross_fit": {"folds": 5}, "keep_epoch_logits": True}, "keep_epoch_logits"),
])
def test_bad_cross_fit_configs_are_refused(change, match):
    with pytest.raises(ValueError, match=match):
        normalize_config({**CFG, **change})


def test_every_profile_but_ci_cross_fits_the_default_profiles_small_pools():
    """Cross-fitting is about scarce labels: the full profile runs the default's pools (the same
    configs, so the same cache entries), and the chapter reads the same names everywhere."""
    from calibcourse.study.runs.experiments import experiments

    default, full = experiments("default"), experiments("full")
    names = {n for n in default if n.startswith(("ch6/heldout/", "ch6/crossfit/"))}
    assert {"ch6/heldout/n2500/s9", "ch6/crossfit/n5000/s0"} <= names
    assert all(full[n] == default[n] for n in names)
    assert default["ch6/crossfit/n2500/s0"]["cross_fit"] == {"folds": 5}
    # the networks are chapter 5's reference backbone (a useful error, not an MLP at 60 % error)
    from calibcourse.study.runs.experiments import REF_BACKBONE
    cfg = default["ch6/heldout/n2500/s0"]
    assert cfg["model"] == REF_BACKBONE["model"] and cfg["optimizer"] == REF_BACKBONE["optimizer"]


def test_crossfit_comparison_pairs_by_size_and_seed_and_matches_a_paired_t_interval():
    """Per (size, seed) the held-out arm is TS fitted on its validation split and the cross-fitted arm the
    stored temperature; with no bootstrap the interval is scipy's paired t interval over seeds."""
    from scipy.stats import ttest_rel

    from calibcourse.calibration import metrics as M
    from calibcourse.calibration.synthetic import scaled_logits
    from calibcourse.study.analysis.deployment import CROSSFIT_ARMS, crossfit_comparison
    from calibcourse.study.training.results import RunResult

    zt, yt = scaled_logits(800, 4, factor=2.5, seed=100)
    heldout, crossfit, ref = {}, {}, []
    for s in range(4):
        z, y = scaled_logits(300, 4, factor=2.5, seed=s)
        shift = np.random.default_rng(s).normal(0, 0.3, zt.shape)
        heldout[f"ch6/heldout/n300/s{s}"] = RunResult({}, None, {"val_logits": z, "val_labels": y,
                                                                 "test_logits": zt + shift, "test_labels": yt})
        t_cf = 2.0 + 0.2 * s
        crossfit[f"ch6/crossfit/n300/s{s}"] = RunResult({}, None, {"test_logits": (zt - shift).astype(np.float32),
                                                                   "test_labels": yt, "temperature": np.array(t_cf)})
        p_ho = TemperatureScaling().fit(z, y).predict_proba(zt + shift)
        p_cf = softmax((zt - shift).astype(np.float32).astype(np.float64) / t_cf, axis=1)
        ref.append((M.ece(p_cf, yt), M.ece(p_ho, yt)))
    per_seed, summary, diff, tests = crossfit_comparison(heldout, crossfit, n_boot=0)
    d = tests[(300, CROSSFIT_ARMS[1], "ECE (%)")]
    a, b = np.array(ref).T
    np.testing.assert_allclose(d.per_seed, a - b, atol=1e-12)
    ci = ttest_rel(a, b).confidence_interval(0.95)
    assert (d.estimate, d.low, d.high) == pytest.approx(((a - b).mean(), ci.low, ci.high), abs=1e-10)
    assert per_seed.loc[per_seed["arm"] == CROSSFIT_ARMS[1], "T"].tolist() == pytest.approx([2.0, 2.2, 2.4, 2.6])
    assert list(summary.index) == [(300, CROSSFIT_ARMS[0]), (300, CROSSFIT_ARMS[1])]
    with pytest.raises(ValueError, match="same \\(pool size, seed\\) pairs"):
        crossfit_comparison(heldout, dict(list(crossfit.items())[:3]), n_boot=0)
    with pytest.raises(ValueError, match="must end in n<pool size>/s<seed>"):
        crossfit_comparison({"ch6/heldout/s0": heldout["ch6/heldout/n300/s0"]}, crossfit, n_boot=0)


@pytest.mark.parametrize("k,factor,n", [(2, 0.5, 3000), (10, 2.5, 20000), (100, 1.7, 5000)])
def test_the_runs_temperature_in_torch_is_the_toolkits_in_numpy(k, factor, n):
    """A cross-fitted run fits its temperatures in torch (training code); the toolkit's numpy fit finds
    the same optimum, to 1e-12, and so does a bounded search of the NLL (scipy)."""
    from scipy.optimize import minimize_scalar

    from calibcourse.calibration import metrics as M
    from calibcourse.calibration.synthetic import scaled_logits

    z, y = scaled_logits(n, k, factor=factor, seed=k)
    t_torch = CF.temperature_torch(z, y)
    assert t_torch == pytest.approx(TemperatureScaling().fit(z, y).temperature_, rel=1e-12)
    ref = minimize_scalar(lambda t: M.nll(M.softmax(z / t), y), bounds=(0.05, 20), method="bounded",
                          options={"xatol": 1e-9}).x
    assert t_torch == pytest.approx(ref, rel=1e-6)
    with pytest.raises(ValueError, match="perfectly separated"):
        CF.temperature_torch(z, z.argmax(1))
