"""``calibcourse report``: cross-fitting against scikit-learn's, the page, --save / load, and bad input."""
import base64
import re

import numpy as np
import pytest

from calibcourse.__main__ import main as calibcourse_main
from calibcourse.calibration import metrics as M
from calibcourse.calibration import report as R
from calibcourse.calibration import stats
from calibcourse.calibration.synthetic import scaled_logits


def binary_logits(n=1200, seed=0):
    rng = np.random.default_rng(seed)
    z = rng.normal(size=n) * 2
    y = (rng.random(n) < 1 / (1 + np.exp(-z))).astype(int)
    return 3 * z, y  # an overconfident sigmoid network


@pytest.mark.parametrize("k", [2, 4])
def test_cross_fit_matches_sklearn_cross_val_predict(k):
    from sklearn.model_selection import StratifiedKFold, check_cv, cross_val_predict

    if k == 2:
        s, y = binary_logits(900, 1)
    else:
        s, y = scaled_logits(900, k, factor=2.0, seed=1)
    z, p, kind = R.as_logits_and_probs(s)
    assert kind == "logits"
    # the folds CalibratedClassifierCV(cv=5) uses for a classifier: StratifiedKFold(5), unshuffled
    cv = check_cv(5, y, classifier=True)
    assert isinstance(cv, StratifiedKFold) and not cv.shuffle
    methods = R.candidate_methods(k)
    oof = R.cross_fit(z, p, y, methods, folds=5)
    for name, (cal, view) in methods.items():
        ref = cross_val_predict(cal, R._compare._view(z, p, view), y, cv=StratifiedKFold(5), method="predict_proba")
        np.testing.assert_allclose(oof[name], ref, atol=1e-12, err_msg=name)


def test_choose_takes_the_simplest_method_not_decidedly_worse_than_the_lowest_ece():
    z, y = scaled_logits(1500, 3, factor=2.5, seed=2)
    z, p, _ = R.as_logits_and_probs(z)
    oof = R.cross_fit(z, p, y, folds=5)
    c = R.choose(p, oof, y, n_boot=200, seed=3)
    eces = {name: M.ece(q, y) for name, q in oof.items()}
    lowest = min(eces, key=eces.get)
    # labels drawn from softmax(z / 2.5): one temperature is the true map, the simplest candidate
    assert c.name == "temperature scaling" == list(oof)[0]
    d = stats.paired_difference(M.ece, oof[c.name], oof[lowest], y, n_boot=200, seed=3, n_bins=15,
                                reliability="top_label")
    assert d.low <= 0 or c.name == lowest  # not decidedly above the lowest ECE
    ref = stats.paired_difference(M.ece, oof[c.name], p, y, n_boot=200, seed=3, n_bins=15, reliability="top_label")
    assert c.ece_change == ref and c.ece_change.high < 0  # a temperature of 2.5 is found and fixed
    assert [r["method"] for r in c.table] == ["uncalibrated", *oof]
    assert c.table[0]["ece"] == pytest.approx(M.ece(p, y), abs=1e-15)


def test_binary_reports_measure_p_of_class_1():
    z, y = binary_logits(800, 4)
    zz, p, _ = R.as_logits_and_probs(z)
    c = R.choose(p, R.cross_fit(zz, p, y, folds=4), y, n_boot=50)
    assert c.table[0]["ece"] == pytest.approx(M.ece(1 / (1 + np.exp(-z)), y), abs=1e-12)  # (n,): P(y = 1)


def test_as_logits_and_probs():
    p = np.array([[0.2, 0.8], [0.6, 0.4]])
    z, q, kind = R.as_logits_and_probs(p)
    assert kind == "probs" and np.allclose(q, p) and np.allclose(M.softmax(z), p)
    z, q, kind = R.as_logits_and_probs(np.array([-1.0, 2.0]))
    assert kind == "logits" and np.allclose(q[:, 1], 1 / (1 + np.exp([1.0, -2.0])))
    z, q, kind = R.as_logits_and_probs(np.array([[0.1, 0.2], [0.3, 0.4]]), kind="logits")  # asked for
    assert kind == "logits" and np.allclose(q, M.softmax(np.array([[0.1, 0.2], [0.3, 0.4]])))


def _png_of(html):
    m = re.search(r'src="data:image/png;base64,([A-Za-z0-9+/=]+)"', html)
    assert m, "no embedded PNG"
    return base64.b64decode(m.group(1))


@pytest.mark.parametrize("k", [2, 3])
def test_report_from_an_npz_writes_a_self_contained_page_and_save_load_give_the_same_predictions(tmp_path, k, capsys):
    import calibcourse.calibration as calibration

    z, y = binary_logits(700, 5) if k == 2 else scaled_logits(700, 3, factor=2.0, seed=5)
    np.savez(tmp_path / "outputs.npz", test_logits=z, test_labels=y)
    out, js = tmp_path / "rep", tmp_path / "cal.json"
    rc = calibcourse_main(["report", str(tmp_path / "outputs.npz"), "--out", str(out), "--folds", "4",
                           "--n-boot", "50", "--save", str(js)])
    assert rc == 0
    html = (out / "index.html").read_text()
    assert _png_of(html).startswith(b"\x89PNG")
    assert "<img" in html and 'src="http' not in html and "<link" not in html and "<script" not in html
    for word in ("ECE", "MCE", "ACE", "NLL", "Brier", "95 % interval", "Recommendation"):
        assert word in html
    _, fitted, choice = R.report_html(z, y, folds=4, n_boot=50)
    assert f"Recommendation: {choice.name}" in html
    loaded = calibration.load(js)
    assert loaded.name == choice.name and type(loaded.calibrator) is type(fitted.calibrator)
    np.testing.assert_array_equal(loaded.predict_proba(z), fitted.predict_proba(z))
    assert "recommended" in capsys.readouterr().out


@pytest.mark.parametrize("k", [2, 3])
def test_every_candidate_survives_save_and_load(tmp_path, k):
    from sklearn.base import clone

    s, y = binary_logits(600, 6) if k == 2 else scaled_logits(600, 3, factor=2.0, seed=6)
    z, p, kind = R.as_logits_and_probs(s)
    for name, (cal, view) in R.candidate_methods(k).items():
        fc = R.FittedCalibration(clone(cal).fit(R._compare._view(z, p, view), y), view, kind, name)
        R.save(fc, tmp_path / "c.json")
        back = R.load(tmp_path / "c.json")
        np.testing.assert_array_equal(back.predict_proba(s), fc.predict_proba(s), err_msg=name)
        assert back.calibrator.get_params() == fc.calibrator.get_params() or name.startswith("one-vs-all")


def test_report_from_npy_pair_and_csv_of_probabilities(tmp_path):
    z, y = binary_logits(500, 7)
    p1 = 1 / (1 + np.exp(-z))
    np.save(tmp_path / "s.npy", p1)
    np.save(tmp_path / "y.npy", y)
    assert calibcourse_main(["report", str(tmp_path / "s.npy"), str(tmp_path / "y.npy"), "--out",
                             str(tmp_path / "a"), "--folds", "3", "--n-boot", "20"]) == 0
    assert "probabilities given" in (tmp_path / "a" / "index.html").read_text()
    q = np.stack([1 - p1, p1], 1)
    np.savetxt(tmp_path / "o.csv", np.c_[q, y], delimiter=",", header="p_0,p_1,label", comments="")
    assert calibcourse_main(["report", str(tmp_path / "o.csv"), "--probs-key", "p_", "--out", str(tmp_path / "b"),
                             "--folds", "3", "--n-boot", "20"]) == 0
    assert "2 classes, probabilities given" in (tmp_path / "b" / "index.html").read_text()


@pytest.mark.parametrize("case,pattern", [
    ("lengths", r"test_labels'\] \(--labels-key\) has 299 entries but .*test_logits'\] \(--logits-key\) has 300"),
    ("nan", r"test_logits'\] \(--logits-key\) contains NaN"),
    ("range", r"test_labels'\] \(--labels-key\): 4 distinct values \(0, 1, 2, 3\); the scores \(.*test_logits'\] "
              r"\(--logits-key\)\) have 3 columns"),
    ("one class", r"test_labels'\] \(--labels-key\) contains one class only"),
    ("few", r"--folds = 5, but class 2 of .*test_labels'\] \(--labels-key\) has only 3 samples"),
    ("key", r"--labels-key yy: no such array in outputs.npz; it has test_logits, test_labels"),
])
def test_bad_input_is_a_clear_error_naming_the_argument(tmp_path, capsys, case, pattern):
    z, y = scaled_logits(300, 3, factor=2.0, seed=8)
    if case == "lengths":
        y = y[:-1]
    elif case == "nan":
        z[3, 1] = np.nan
    elif case == "range":
        y[0] = 3
    elif case == "one class":
        y[:] = 1
    elif case == "few":
        y[y == 2] = 0
        y[:3] = 2
    np.savez(tmp_path / "outputs.npz", test_logits=z, test_labels=y)
    args = ["report", str(tmp_path / "outputs.npz"), "--out", str(tmp_path / "r"), "--n-boot", "20"]
    if case == "key":
        args += ["--labels-key", "yy"]
    assert calibcourse_main(args) == 2
    err = capsys.readouterr().err
    assert err.startswith("calibcourse report: error: ") and re.search(pattern, err), err
    assert not (tmp_path / "r").exists()


def test_choose_takes_a_more_flexible_map_when_the_simplest_is_decidedly_worse():
    z, y = scaled_logits(3000, 3, factor=1.0, seed=4)  # calibrated logits ...
    shifted = z + np.array([2.0, 0.0, -2.0])          # ... reported with a per-class offset
    zz, p, _ = R.as_logits_and_probs(shifted)
    oof = R.cross_fit(zz, p, y, folds=5)
    c = R.choose(p, oof, y, n_boot=200, seed=1)
    d = stats.paired_difference(M.ece, oof["temperature scaling"], oof[c.name], y, n_boot=200, seed=1,
                                n_bins=15, reliability="top_label")
    assert c.name != "temperature scaling" and d.low > 0  # one temperature cannot undo an offset


# ---------------------------------------------------------------- ordinary model outputs
def _forest(loader, seed=0):
    from sklearn.ensemble import RandomForestClassifier
    from sklearn.model_selection import train_test_split

    X, y = loader(return_X_y=True)
    Xtr, Xte, ytr, yte = train_test_split(X, y, test_size=0.5, random_state=seed, stratify=y)
    return RandomForestClassifier(random_state=seed).fit(Xtr, ytr).predict_proba(Xte), yte


def test_the_report_is_written_for_an_accurate_forest_whose_folds_are_separated(tmp_path, capsys):
    from sklearn.datasets import load_wine

    p, y = _forest(load_wine)
    assert (M.error(p, y) < 0.05) and (p == 0).any()  # accurate, with exact zeros
    np.savez(tmp_path / "wine.npz", probs=p, y=y)
    assert calibcourse_main(["report", str(tmp_path / "wine.npz"), "--out", str(tmp_path / "r"), "--n-boot", "50",
                             "--save", str(tmp_path / "cal.json")]) == 0
    page = (tmp_path / "r" / "index.html").read_text()
    # a separated fold is reported, and temperature scaling is fitted there (Platt's targets), not dropped
    assert "it separates them" in page and "not fitted" not in page
    assert '<tr class=best><td>temperature scaling' in page or "<td>temperature scaling</td>" in page
    loaded = R.load(tmp_path / "cal.json")
    if loaded.name == "uncalibrated":
        np.testing.assert_allclose(loaded.predict_proba(p), p / p.sum(1, keepdims=True))


def test_one_error_in_600_gets_a_page_not_an_abort():
    rng = np.random.default_rng(0)
    y = rng.integers(0, 3, 600)
    z = rng.normal(size=(600, 3))
    z[np.arange(600), y] += 8
    z[0] = np.roll([10.0, 0.0, 0.0], (y[0] + 1) % 3)  # the one error
    assert M.error(M.softmax(z), y) == pytest.approx(1 / 600)
    with pytest.raises(ValueError, match="perfectly separated"):
        from calibcourse.calibration.calibrators import TemperatureScaling

        TemperatureScaling().fit(z[1:], y[1:])  # what one fold meets
    html, fitted, choice = R.report_html(z, y, folds=5, n_boot=50)
    assert html.startswith("<!DOCTYPE html>") and choice.table[0]["method"] == "uncalibrated"


@pytest.mark.parametrize("loader", ["breast_cancer", "wine", pytest.param("digits", marks=pytest.mark.slow)])
def test_the_recommendation_is_never_worse_than_none_on_all_three_measures(loader):
    import sklearn.datasets as D
    from sklearn.naive_bayes import GaussianNB

    X, y = getattr(D, f"load_{loader}")(return_X_y=True)
    models = [_forest(getattr(D, f"load_{loader}"))]
    half = len(y) // 2
    models.append((GaussianNB().fit(X[half:], y[half:]).predict_proba(X[:half]), y[:half]))  # exact 0s and 1s
    for p, yy in models:
        z, q, _ = R.as_logits_and_probs(p)
        oof = R.cross_fit(z, q, yy, folds=3, skipped={})
        c = R.choose(q, oof, yy, n_boot=100)
        rows = {r["method"]: r for r in c.table}
        assert rows["uncalibrated"]["ece"] == pytest.approx(M.ece(q, yy, reliability="positive_class" if q.shape[1] == 2
                                                                  else "top_label"))
        chosen, none = rows[c.name], rows["uncalibrated"]
        assert not all(chosen[m] > none[m] for m in ("ece", "nll", "brier")), (loader, c.name, chosen, none)
        assert chosen["brier"] <= none["brier"]


def test_probabilities_become_logits_as_scikit_learn_takes_them():

    p = np.array([[1.0, 0.0, 0.0], [1 / 7, 2 / 7, 4 / 7]])
    z, q, kind = R.as_logits_and_probs(p)  # full precision: no rounding to read
    np.testing.assert_allclose(z, np.log(p + 1e-12))  # scikit-learn's log(p + 1e-12), not -690 for a zero
    assert kind == "probs" and z.min() > -28


def test_the_command_line_lists_report_first_and_says_one_line_for_a_bad_out(tmp_path, capsys):
    assert calibcourse_main(["--help"]) == 0
    out = capsys.readouterr().out
    assert out.index("report") < out.index("train") and "list" in out
    z, y = scaled_logits(300, 3, factor=2.0, seed=0)
    np.savez(tmp_path / "o.npz", logits=z, y=y)
    (tmp_path / "afile").write_text("")
    assert (
        calibcourse_main(["report", str(tmp_path / "o.npz"), "--out", str(tmp_path / "afile"), "--n-boot", "20"]) == 2
    )
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "is a file, not a folder" in err[0]


def test_the_page_s_measures_are_the_toolkit_s_on_every_sample(monkeypatch):
    z, y = scaled_logits(3000, 4, factor=2.0, seed=4)
    monkeypatch.setattr(R.page, "MAX_FIT_ROWS", 1000)  # the calibrators on a subsample, the measures on all
    monkeypatch.setattr(R.page, "MAX_FIT_VALUES", 4000)
    html, fitted, choice = R.report_html(z.astype(np.float32), y, folds=3, n_boot=50)
    p = M.softmax(z.astype(np.float32).astype(np.float64))
    for label, value in (("ECE", M.ece(p, y)), ("MCE", M.mce(p, y)), ("ACE", M.ace(p, y)), ("error", M.error(p, y))):
        assert f"<td>{label}</td><td>{100 * value:.2f} %</td>" in html, label
    for label, value in (("NLL", M.nll(p, y)), ("Brier", M.brier(p, y))):
        assert f"<td>{label}</td><td>{value:.4f}" in html, label
    assert "stratified subsample of 1,000 of the 3,000 samples" in html
    assert sum(r["method"] == "uncalibrated" for r in choice.table) == 1


@pytest.mark.slow  # about 10 s on an idle machine: make test, not make test-fast
def test_a_subsample_recommends_what_all_samples_do(monkeypatch):
    for factor, k in ((2.5, 10), (1.0, 10), (0.6, 10)):
        z, y = scaled_logits(8000, k, factor=factor, seed=5)
        full = R.report_html(z, y, folds=3, n_boot=100)[2].name
        monkeypatch.setattr(R.page, "MAX_FIT_ROWS", 2000)
        monkeypatch.setattr(R.page, "MAX_FIT_VALUES", 2000)
        part = R.report_html(z, y, folds=3, n_boot=100)[2].name
        monkeypatch.undo()
        assert part == full, (factor, k, full, part)


def test_files_a_user_really_has_get_a_page_or_one_line(tmp_path, capsys):
    rng = np.random.default_rng(0)
    z = rng.uniform(0, 1, 400)  # a sigmoid network's logits that happen to lie in [0, 1]
    y = (rng.random(400) < 1 / (1 + np.exp(-(4 * z - 2)))).astype(int)
    np.savez(tmp_path / "b.npz", logits=z, y=y)
    assert calibcourse_main(["report", str(tmp_path / "b.npz"), "--kind", "logits", "--out", str(tmp_path / "rb"),
                             "--n-boot", "20"]) == 0
    page = (tmp_path / "rb" / "index.html").read_text()
    assert "logits given" in page and "Platt scaling: not fitted" not in page  # --kind logits is obeyed
    (tmp_path / "bad.npz").write_text("not a zip")
    assert calibcourse_main(["report", str(tmp_path / "bad.npz"), "--out", str(tmp_path / "rn")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == ["calibcourse report: error: FILE bad.npz is not an .npz file: numpy.savez writes a zip archive, "
                   "and this is none"]
    p = M.softmax(scaled_logits(300, 2, factor=2.0, seed=0)[0])
    labels = np.where(scaled_logits(300, 2, factor=2.0, seed=0)[1] == 1, "dog", "cat")
    rows = "\n".join(f"{a:.6f},{b:.6f},{c}" for (a, b), c in zip(p, labels, strict=True))
    (tmp_path / "s.csv").write_text("p0,p1,label\n" + rows + "\n")
    assert calibcourse_main(["report", str(tmp_path / "s.csv"), "--labels-key", "label", "--out", str(tmp_path / "rs"),
                             "--n-boot", "20"]) == 0  # string labels: the sorted labels are the columns
    assert "cat, dog, the score columns in order" in (tmp_path / "rs" / "index.html").read_text()


def test_the_long_steps_show_progress_only_when_asked(capfd):
    z, y = scaled_logits(1200, 3, factor=2.0, seed=0)
    R.report_html(z, y, folds=3, n_boot=20)
    assert capfd.readouterr().err == ""
    R.report_html(z, y, folds=3, n_boot=20, progress=True)  # the command line asks when stderr is a terminal
    err = capfd.readouterr().err
    assert "cross-fitting the calibrators" in err and "intervals of the measures" in err
