"""``calibcourse report`` on the inputs a user has: what the scores are (probabilities written with few
decimals, 0/1 scores, rows that do not sum to 1), files that are not what they say, labels that name
classes, and what ``--save`` keeps and says."""
import re

import numpy as np
import pytest

from calibcourse.__main__ import main as calibcourse_main
from calibcourse.calibration import metrics as M
from calibcourse.calibration import report as R
from calibcourse.calibration.synthetic import scaled_logits


def run(args, capsys):
    """The command's exit status and its stdout / stderr lines; a traceback fails the test."""
    try:
        rc = calibcourse_main(["report", *map(str, args)])
    except BaseException as exc:  # pragma: no cover - what the test is there to catch
        pytest.fail(f"calibcourse report {args} raised {type(exc).__name__}: {exc}")
    out, err = capsys.readouterr()
    return rc, out.strip().splitlines(), err.strip().splitlines()


def _model_outputs(seed=0):
    """A 5-class MLP's probabilities on 1,200 calibration samples (make_classification), and labels."""
    import warnings

    from sklearn.datasets import make_classification
    from sklearn.neural_network import MLPClassifier

    X, y = make_classification(n_samples=2400, n_features=20, n_informative=10, n_classes=5, random_state=seed)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        m = MLPClassifier(hidden_layer_sizes=(32,), max_iter=200, random_state=seed).fit(X[:1200], y[:1200])
    return m.predict_proba(X[1200:]), y[1200:]


# ------------------------------------------------------------------ what the scores are
@pytest.mark.parametrize("k,decimals", [(10, 3), (10, 2), (5, 2), (100, 4), (3, 1)])
def test_rounded_probabilities_are_probabilities(k, decimals):
    rng = np.random.default_rng(k + decimals)
    p = np.round(rng.dirichlet(np.ones(k), 400), decimals)
    assert np.abs(p.sum(1) - 1).max() > 1e-3 or decimals == 4  # beyond the dtype's tolerance
    z, q, kind = R.as_logits_and_probs(p)
    assert kind == "probs" and np.allclose(q, p / p.sum(1, keepdims=True))  # the probabilities as given
    floor = 0.25 * 10.0**-decimals  # a written 0 is below half a unit: its logit is a quarter unit's
    np.testing.assert_allclose(M.softmax(z), np.maximum(p, floor) / np.maximum(p, floor).sum(1, keepdims=True),
                               atol=1e-9)


def test_the_tolerance_is_k_half_units_of_the_last_decimal():
    from calibcourse.calibration.report.scores import row_sum_tolerance, written_decimals

    p = np.round(np.random.default_rng(0).dirichlet(np.ones(10), 50), 3)
    assert written_decimals(p) == 3 and row_sum_tolerance(p, 10) == pytest.approx(10 * 0.0005)
    assert written_decimals(p.astype(np.float32)) == 3  # float32 copies of the same text
    full = np.random.default_rng(0).dirichlet(np.ones(10), 50)
    assert written_decimals(full) is None and row_sum_tolerance(full, 10) == 1e-3
    beyond = p.copy()
    beyond[:, 0] += 0.01  # rows off by 0.01, more than ten half-units of the third decimal
    with pytest.raises(ValueError, match="cannot tell .* sum to between .*kind='probs' or kind='logits'"):
        R.as_logits_and_probs(beyond)


@pytest.mark.parametrize("fmt", ["%.3f", "%.2f"])
def test_two_and_three_decimal_csvs_recommend_what_full_precision_does(tmp_path, capsys, fmt):
    """Issue 48: a 5-class MLP's probabilities written with two decimals were read as logits."""
    p, y = _model_outputs()
    names = {}
    for tag, f in (("full", "%.17g"), ("rounded", fmt)):
        path = tmp_path / f"{tag}.csv"
        np.savetxt(path, np.c_[p, y], delimiter=",", header="p0,p1,p2,p3,p4,label", comments="",
                   fmt=[f] * 5 + ["%d"])
        rc, out, err = run([path, "--out", tmp_path / tag, "--n-boot", "200", "--save", tmp_path / f"{tag}.json"],
                           capsys)
        assert rc == 0 and not err, err
        page = (tmp_path / tag / "index.html").read_text()
        assert "5 classes, probabilities given" in page
        unit = {"%.3f": "0.001", "%.2f": "0.01"}[fmt]
        assert (f"probabilities are multiples of {unit} " in page) == (tag == "rounded"), tag  # and how 0 is read
        names[tag] = R.load(tmp_path / f"{tag}.json").name
    assert names["rounded"] == names["full"], names


def test_scores_the_numbers_cannot_tell_are_asked_for_in_one_line(tmp_path, capsys):
    rng = np.random.default_rng(2)
    y = rng.integers(0, 3, 300)
    onehot = np.eye(3, dtype=np.int64)[y]  # hard predictions, or integer logits such as [0, 0, 1]
    onehot[::7] = np.eye(3, dtype=np.int64)[(y[::7] + 1) % 3]
    short = rng.dirichlet(np.ones(3), 300) * 0.9  # rows in [0, 1] summing to 0.9
    for name, s in (("onehot", onehot), ("short", short), ("binary01", (rng.random(300) < 0.5).astype(float))):
        np.savez(tmp_path / f"{name}.npz", scores=s, y=y if s.ndim == 2 else y % 2)
        rc, out, err = run([tmp_path / f"{name}.npz", "--out", tmp_path / name, "--n-boot", "20"], capsys)
        assert rc == 2 and len(err) == 1 and "--kind probs or --kind logits" in err[0], (name, err)
        assert f"{name}.npz['scores'] (--logits-key or --probs-key)" in err[0], err  # neither: it was not told
        assert not (tmp_path / name).exists()
        if name == "short":
            assert "the rows sum to 0.9, not 1" in err[0], err  # all rows 0.9: not "between 0.9 and 0.9"
    rc, out, err = run([tmp_path / "onehot.npz", "--kind", "logits", "--out", tmp_path / "o", "--n-boot", "20"],
                       capsys)
    assert rc == 0 and "logits given" in (tmp_path / "o" / "index.html").read_text()
    rc, out, err = run([tmp_path / "short.npz", "--kind", "probs", "--out", tmp_path / "s"], capsys)
    assert rc == 2 and len(err) == 1 and "must sum to 1" in err[0]


def test_probabilities_told_to_be_logits_are_read_so_and_flagged(tmp_path, capsys):
    """--logits-key on an array of probabilities (or --kind logits) was followed in silence."""
    p, y = _model_outputs(seed=2)
    np.savez(tmp_path / "o.npz", scores=p, y=y)
    rc, out, err = run([tmp_path / "o.npz", "--logits-key", "scores", "--out", tmp_path / "r", "--n-boot", "20"],
                       capsys)
    assert rc == 0 and len(err) == 1, err
    assert re.fullmatch(r"calibcourse report: warning: o\.npz\['scores'\] \(--logits-key\): read as logits, as told, "
                        r"but every value lies in \[0, 1\] and every row sums to 1, as probabilities do; if they are "
                        r"probabilities, say --kind probs", err[0]), err
    page = (tmp_path / "r" / "index.html").read_text()
    assert "logits given" in page and "read as logits, as told" in page
    with pytest.warns(UserWarning, match="read as logits, as told"):
        R.as_logits_and_probs(p, "logits")
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        R.as_logits_and_probs(np.log(p), "logits")  # logits: nothing to say
        R.as_logits_and_probs(p * 0.9, "logits")  # rows of 0.9: not probabilities either
        R.FittedCalibration(None, "probs", "logits", classes=range(5)).predict_proba(p[:1])  # the report settled it
        rc, out, err = run([tmp_path / "o.npz", "--probs-key", "scores", "--out", tmp_path / "q", "--n-boot", "20"],
                           capsys)
    assert rc == 0 and not err, err


def test_integer_logits_and_a_first_row_that_sums_to_one_get_a_page(tmp_path, capsys):
    """Issue 48: the command wrote the page and then crashed in ``fitted.predict_proba(scores[:1])``."""
    rng = np.random.default_rng(1)
    z, y = scaled_logits(400, 3, factor=3.0, seed=1)
    zi = np.round(z).astype(np.int64)
    zi[0] = [0, 0, 1]  # a first row that is a probability vector
    np.savez(tmp_path / "int.npz", scores=zi, y=y)
    rc, out, err = run([tmp_path / "int.npz", "--out", tmp_path / "r", "--n-boot", "50", "--save",
                        tmp_path / "c.json"], capsys)
    assert rc == 0 and not err and "logits given" in (tmp_path / "r" / "index.html").read_text()
    assert R.load(tmp_path / "c.json").predict_proba(zi[:1]).shape == (1, 3)
    p = np.round(rng.dirichlet(np.ones(10), 400), 3)
    p[0] = 0.1
    np.savez(tmp_path / "p.npz", scores=p, y=rng.integers(0, 10, 400))
    rc, out, err = run([tmp_path / "p.npz", "--out", tmp_path / "q", "--n-boot", "50"], capsys)
    assert rc == 0 and not err and "probabilities given" in (tmp_path / "q" / "index.html").read_text()


def test_a_column_of_scores_is_a_binary_model(capsys):
    z, y = scaled_logits(500, 2, factor=2.0, seed=3)
    s = (z[:, 1] - z[:, 0])[:, None]  # scikit-learn's (n, 1) decision_function column
    html, fitted, choice = R.report_html(s, y, folds=3, n_boot=50)
    assert "2 classes, logits given" in html
    np.testing.assert_array_equal(fitted.predict_proba(s), fitted.predict_proba(s[:, 0]))


# ------------------------------------------------------------------ files that are not what they say
BAD_FILES = {
    "empty.csv": (b"", "is empty"),
    "blank.csv": (b"\n\n  \n", "is empty"),
    "binary.csv": (bytes(range(128, 256)) * 4, "not a text .csv"),
    "nul.csv": (b"p0,p1,label\n\x00\x01\x02", "binary data"),
    "ragged.csv": (b"p0,p1,label\n0.2,0.8,1\n0.3,0.7\n0.5,0.5,0\n", "line 3 has 2 fields but the header has 3"),
    "header.csv": (b"p0,p1,label\n", "a header and no rows"),
    "onecol.csv": (b"label\n1\n0\n", "has one column"),
    "text.csv": (b"p0,p1,label\n0.2,0.8,1\n0.3,abc,0\n", "line 3, column 'p1' holds 'abc', not a number"),
    "nolabel.csv": (b"a,b\n0.2,0.8\n0.3,0.7\n", "--labels-key: none of"),
    "bad.npz": (b"not a zip", "is not an .npz file"),
    "bad.txt": (b"1,2,3", "give one .npz, one .csv or two .npy files"),
}


@pytest.mark.parametrize("name", sorted(BAD_FILES))
def test_a_file_that_is_not_what_it_says_is_one_line_naming_it(tmp_path, capsys, name):
    data, pattern = BAD_FILES[name]
    (tmp_path / name).write_bytes(data)
    rc, out, err = run([tmp_path / name, "--out", tmp_path / "r"], capsys)
    assert rc == 2 and len(err) == 1, err
    assert err[0].startswith("calibcourse report: error: ") and re.search(pattern, err[0]), err[0]
    assert (name in err[0] or "--labels-key" in err[0] or "FILE" in err[0]) and "Traceback" not in err[0]


def test_semicolon_and_decimal_comma_csvs_are_read(tmp_path, capsys):
    p = M.softmax(scaled_logits(300, 3, factor=2.0, seed=4)[0])
    y = scaled_logits(300, 3, factor=2.0, seed=4)[1]
    rows = "\n".join(";".join(f"{v:.4f}".replace(".", ",") for v in row) + f";{c}" for row, c in zip(p, y, strict=True))
    (tmp_path / "semi.csv").write_text("p0;p1;p2;label\n" + rows + "\n")
    rc, out, err = run([tmp_path / "semi.csv", "--out", tmp_path / "r", "--n-boot", "20"], capsys)
    assert rc == 0 and not err
    assert "3 classes, probabilities given" in (tmp_path / "r" / "index.html").read_text()


def test_more_bad_inputs_are_one_line_each(tmp_path, capsys):
    z, y = scaled_logits(300, 3, factor=2.0, seed=8)
    np.savez(tmp_path / "o.npz", logits=z, y=y)
    np.save(tmp_path / "s.npy", z)
    np.save(tmp_path / "y.npy", y[:-1])
    np.savez(tmp_path / "frac.npz", logits=z, y=y + 0.5)
    np.savez(tmp_path / "shift.npz", logits=z, y=np.where(y == 2, 1, y) + 1)  # labels 1, 2 of three columns
    np.savez(tmp_path / "str.npz", logits=z, y=np.array(["a", "b"])[y % 2])
    cases = [
        ([tmp_path / "nothere.npz"], "no such file"),
        ([tmp_path], "is a folder"),
        ([tmp_path / "s.npy", tmp_path / "y.npy"], "299 entries"),
        ([tmp_path / "frac.npz"], "Unknown label type: continuous"),
        ([tmp_path / "shift.npz"], r"2 distinct values \(1, 2\); the scores \(.*\) have 3 columns"),
        ([tmp_path / "str.npz"], r"2 distinct values \(a, b\); the scores \(.*\) have 3 columns"),
        ([tmp_path / "o.npz", "--folds", "1"], "--folds must be an integer >= 2"),
        ([tmp_path / "o.npz", "--labels-key", "nope"], "--labels-key nope: no such array"),
        ([tmp_path / "o.npz", "--n-boot", "5"], "--n-boot must be >= 10"),
        ([tmp_path / "o.npz", "--kind", "probs"], r"must lie in \[0, 1\] for --kind probs; got values from .*: "
                                                  r"logits\? then --kind logits, or leave --kind out$"),
    ]
    for args, pattern in cases:
        rc, out, err = run([*args, "--out", tmp_path / "r"], capsys)
        assert rc == 2 and len(err) == 1 and re.search(pattern, err[0]), (args, err)


# ------------------------------------------------------------------ labels and --save
def test_save_keeps_the_class_names_and_checks_the_columns(tmp_path, capsys):
    z, y = scaled_logits(600, 3, factor=2.0, seed=5)
    names = np.array(["ant", "bee", "cat"])[y]
    np.savez(tmp_path / "o.npz", logits=z, y=names)
    rc, out, err = run([tmp_path / "o.npz", "--out", tmp_path / "r", "--n-boot", "50", "--save",
                        tmp_path / "c.json"], capsys)
    assert rc == 0
    fitted = R.load(tmp_path / "c.json")
    assert fitted.classes_.tolist() == ["ant", "bee", "cat"]
    assert fitted.predict(z).tolist() == np.array(["ant", "bee", "cat"])[fitted.predict_proba(z).argmax(1)].tolist()
    if fitted.calibrator is not None:
        assert fitted.calibrator.classes_.tolist() == ["ant", "bee", "cat"]
    with pytest.raises(ValueError, match="scores have 2 classes but this calibration was fitted on 3"):
        fitted.predict_proba(z[:, :2])
    # the same labels as codes give the same calibration
    np.savez(tmp_path / "codes.npz", logits=z, y=y)
    run([tmp_path / "codes.npz", "--out", tmp_path / "r2", "--n-boot", "50", "--save", tmp_path / "c2.json"], capsys)
    np.testing.assert_allclose(R.load(tmp_path / "c2.json").predict_proba(z), fitted.predict_proba(z))


def test_a_no_calibration_file_checks_the_columns_too(tmp_path, capsys):
    z, y = scaled_logits(800, 10, factor=1.0, seed=6)  # calibrated already
    np.savez(tmp_path / "o.npz", logits=z, y=y)
    rc, out, err = run([tmp_path / "o.npz", "--out", tmp_path / "r", "--n-boot", "50", "--save",
                        tmp_path / "c.json"], capsys)
    fitted = R.load(tmp_path / "c.json")
    assert fitted.name == "uncalibrated" and "no calibration" in out[-1]
    np.testing.assert_allclose(fitted.predict_proba(z), M.softmax(z))
    with pytest.raises(ValueError, match="scores have 5 classes but this calibration was fitted on 10"):
        fitted.predict_proba(np.full((4, 5), 0.2))


def test_a_saved_calibration_of_probabilities_names_a_wrong_column_count_and_scores(tmp_path, capsys):
    """Four of a 5-class model's probability columns were refused for not summing to 1, not for being four."""
    p, y = _model_outputs(seed=1)
    names = np.array(["ant", "bee", "cat", "dog", "eel"])[y]
    np.savez(tmp_path / "o.npz", probs=p, y=names)
    rc, out, err = run([tmp_path / "o.npz", "--out", tmp_path / "r", "--n-boot", "50", "--save",
                        tmp_path / "c.json"], capsys)
    fitted = R.load(tmp_path / "c.json")
    four = p[:, :4] / p[:, :4].sum(1, keepdims=True)
    for scores in (p[:, :4], four):
        with pytest.raises(ValueError, match="scores have 4 classes but this calibration was fitted on 5 .ant, bee"):
            fitted.predict_proba(scores)
    q = fitted.predict_proba(p)
    assert fitted.score(p, names) == pytest.approx(-M.nll(q, y), rel=1e-12)  # scikit-learn's score: the mean LL
    assert fitted.score(p, names) > fitted.score(p, np.roll(names, 1))
    with pytest.raises(ValueError, match="both be numbers or both be strings"):
        fitted.score(p, y)  # the names it was fitted on, not their codes


def test_a_save_or_out_path_that_cannot_be_written_is_named_before_the_work(tmp_path, capsys):
    """--save into a path under a file failed after the whole comparison, with no option named."""
    z, y = scaled_logits(300, 3, factor=2.0, seed=8)
    np.savez(tmp_path / "o.npz", logits=z, y=y)
    (tmp_path / "afile").write_text("x")
    for extra, pattern in ((["--save", tmp_path / "afile" / "c.json"], r"^calibcourse report: error: --save .*afile "
                                                                         r"is a file, not a folder$"),
                           (["--save", tmp_path], r"--save .* is a folder: name the JSON file"),
                           (["--out", tmp_path / "afile" / "r"], r"--out .*afile is a file, not a folder")):
        args = [tmp_path / "o.npz", "--out", tmp_path / "r", "--n-boot", "20", *extra]
        rc, out, err = run(args, capsys)
        assert rc == 2 and len(err) == 1 and re.search(pattern, err[0]) and not out, (extra, err)
        assert not (tmp_path / "r").exists()  # said before the comparison, which wrote nothing
    rc, out, err = run([tmp_path / "o.npz", "--out", tmp_path / "r", "--n-boot", "20", "--save",
                        tmp_path / "new" / "sub" / "c.json"], capsys)  # missing folders are made, as --out's
    assert rc == 0 and R.load(tmp_path / "new" / "sub" / "c.json").classes_.tolist() == [0, 1, 2]


def test_save_says_what_it_was_fitted_on(tmp_path, capsys, monkeypatch):
    """Issue 48: at 1e6 rows it said 'fitted on all 1000000 samples' and fitted on 20,000."""
    z, y = scaled_logits(3000, 3, factor=2.5, seed=7)
    np.savez(tmp_path / "o.npz", logits=z, y=y)
    monkeypatch.setattr(R.page, "MAX_FIT_ROWS", 1000)
    monkeypatch.setattr(R.page, "MAX_FIT_VALUES", 3000)
    rc, out, err = run([tmp_path / "o.npz", "--out", tmp_path / "r", "--n-boot", "50", "--save",
                        tmp_path / "c.json"], capsys)
    assert rc == 0 and out[-1].endswith("fitted on a stratified subsample of 1000 of the 3000 samples"), out
    page = (tmp_path / "r" / "index.html").read_text()
    assert "fitted on the subsample of 1,000 of the 3,000 samples" in page and "fitted on all the data" not in page
    saved = R.load(tmp_path / "c.json")
    assert (saved.n_fit, saved.n_total) == (1000, 3000)
