"""Issue 48's findings on ``calibcourse report`` and the toolkit, one check each (the panel's are in
``bench/bench_report_panel.py``).

    OMP_WAIT_POLICY=PASSIVE python bench/repro_issue48.py

Each line says what was tried and what happened: ``ok`` where the toolkit does what the issue
asks, ``FOUND`` where the issue's finding is still there. Runs in about a minute.
"""
from __future__ import annotations

import contextlib
import io
import os
import sys
import tempfile
import traceback
import warnings

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
import numpy as np  # noqa: E402

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
sys.path.insert(0, os.path.dirname(__file__))

RESULTS = []


def check(what, fn):
    """Run ``fn() -> (ok, detail)`` and print one line."""
    try:
        ok, detail = fn()
    except Exception as exc:  # a finding that raises is a finding
        ok, detail = False, f"raised {type(exc).__name__}: {str(exc).splitlines()[0][:150]}"
    RESULTS.append(ok)
    print(f"{'ok   ' if ok else 'FOUND'} {what}: {detail}", flush=True)


def cli(args):
    """``calibcourse report args``: (exit status, stdout, stderr, whether a traceback escaped)."""
    from calibcourse.calibration.cli import main

    out, err = io.StringIO(), io.StringIO()
    tb = False
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            rc = main(list(args))
        except SystemExit as e:
            rc = e.code
        except Exception:
            traceback.print_exc()
            rc, tb = "traceback", True
    return rc, out.getvalue(), err.getvalue(), tb


def rounded_k10():
    from calibcourse.calibration.report import as_logits_and_probs

    rng = np.random.default_rng(0)
    kinds = []
    for _ in range(200):
        p = np.round(rng.dirichlet(np.ones(10), 300), 3)
        kinds.append(as_logits_and_probs(p)[2])
    n = sum(k == "probs" for k in kinds)
    return n == 200, f"{n} of 200 random K = 10 sets written with three decimals read as probabilities"


def mlp_two_decimals():
    from sklearn.datasets import make_classification
    from sklearn.neural_network import MLPClassifier

    X, y = make_classification(n_samples=2400, n_features=20, n_informative=10, n_classes=5, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        m = MLPClassifier(max_iter=300, random_state=0).fit(X[:1200], y[:1200])
    p = m.predict_proba(X[1200:])
    d = tempfile.mkdtemp()
    pages = {}
    for tag, q in (("full", p), ("2dp", np.round(p, 2))):
        path = os.path.join(d, f"{tag}.csv")
        np.savetxt(path, np.c_[q, y[1200:]], delimiter=",", header="p0,p1,p2,p3,p4,label", comments="",
                   fmt=["%.17g" if tag == "full" else "%.2f"] * 5 + ["%d"])
        rc, out, err, tb = cli([path, "--out", os.path.join(d, tag), "--n-boot", "100"])
        page = open(os.path.join(d, tag, "index.html")).read() if rc == 0 else ""
        pages[tag] = (rc, out.strip(), "probabilities given" in page)
    ok = pages["2dp"][2] and pages["2dp"][0] == 0
    rc, said, probs = pages["2dp"]
    return ok, f"two decimals: exit {rc}, read as probabilities: {probs}; {said[:110]}"


def first_row_sums_to_one():
    rng = np.random.default_rng(1)
    p = np.round(rng.dirichlet(np.ones(10), 400), 3)
    p[0] = 0.1
    y = rng.integers(0, 10, 400)
    d = tempfile.mkdtemp()
    np.savez(os.path.join(d, "o.npz"), scores=p, y=y)
    rc, out, err, tb = cli([os.path.join(d, "o.npz"), "--out", os.path.join(d, "r"), "--n-boot", "50"])
    return not tb and len(err.strip().splitlines()) <= 1, f"exit {rc}, traceback: {tb}; {(err or out).strip()[-120:]}"


def integer_logits():
    rng = np.random.default_rng(2)
    y = rng.integers(0, 3, 300)
    z = np.zeros((300, 3), dtype=np.int64)
    z[np.arange(300), y] = 1
    z[::7] = rng.integers(0, 2, (len(z[::7]), 3))
    z[0] = [0, 0, 1]
    d = tempfile.mkdtemp()
    np.savez(os.path.join(d, "o.npz"), scores=z, y=y)
    rc, out, err, tb = cli([os.path.join(d, "o.npz"), "--out", os.path.join(d, "r"), "--n-boot", "50"])
    return not tb and rc == 2 and "--kind" in err, f"exit {rc}, traceback: {tb}; {(err or out).strip()[-140:]}"


def rows_summing_to_09():
    rng = np.random.default_rng(3)
    p = rng.dirichlet(np.ones(4), 300) * 0.9
    y = rng.integers(0, 4, 300)
    d = tempfile.mkdtemp()
    np.savez(os.path.join(d, "o.npz"), scores=p, y=y)
    rc, out, err, tb = cli([os.path.join(d, "o.npz"), "--out", os.path.join(d, "r"), "--n-boot", "50"])
    return rc == 2 and "--kind" in err, f"exit {rc}; {(err or out).strip()[-140:]}"


def _panel_case(data, mdl):
    import bench_report_panel as P

    X, y = P.load(data)
    Xtr, ytr, Xcal, ycal, Xte, yte = P.split(X, y)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        m = P.model(mdl).fit(Xtr, ytr)
    return P.scores_of(m, Xcal, mdl), ycal, P.scores_of(m, Xte, mdl), yte, m


def breast_cancer_lr_folds():
    from calibcourse.calibration import metrics as M
    from calibcourse.calibration import report as R

    s, y, *_ = _panel_case("breast_cancer", "lr")
    z, p, _ = R.as_logits_and_probs(s, "probs")
    oof = R.cross_fit(z, p, y, folds=5, skipped={})
    html, fitted, choice = R.report_html(s, y, kind="probs", n_boot=200)
    nll_ts = M.nll(oof["temperature scaling"], y) if "temperature scaling" in oof else float("nan")
    worse = nll_ts > M.nll(p, y) * 1.5
    ok = not (choice.name == "temperature scaling" and worse)
    return ok, (f"out-of-fold NLL of temperature scaling {nll_ts:.4f} against the model's {M.nll(p, y):.4f}; "
                f"recommended: {choice.name}")


def vector_scaling_diverges():
    from calibcourse.calibration.calibrators import VectorScaling

    s, y, *_ = _panel_case("iris", "svc")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        vs = VectorScaling().fit(s, y)
    big = float(np.abs(vs.coef_).max())
    warned = any("converge" in str(w.message) or "separate" in str(w.message) for w in caught)
    return big < 50 or warned, f"iris_svc: largest weight {big:.1f}, success={vs.result_.success}, warned={warned}"


def platt_targets():
    import bench_report_panel as P
    from sklearn.calibration import CalibratedClassifierCV
    from sklearn.frozen import FrozenEstimator

    from calibcourse.calibration.calibrators import PlattScaling

    X, y = P.load("breast_cancer")
    Xtr, ytr, Xcal, ycal, Xte, yte = P.split(X, y)
    m = P.model("svc").fit(Xtr, ytr)
    kw = {"targets": "platt"} if "targets" in PlattScaling().get_params() else {}
    ours = PlattScaling(input_type="logits", **kw).fit(m.decision_function(Xcal), ycal)
    sk = CalibratedClassifierCV(FrozenEstimator(m), method="sigmoid").fit(Xcal, ycal).predict_proba(Xte)
    gap = float(np.abs(ours.predict_proba(m.decision_function(Xte)) - sk).max())
    return gap < 1e-4, f"Platt on an SVC's decision values (breast cancer): max |ours - scikit-learn's| = {gap:.1e}"


def mce_interval():
    s, y, *_ = _panel_case("iris", "mlp")
    d = tempfile.mkdtemp()
    np.savez(os.path.join(d, "o.npz"), probs=s, y=y)
    rc, out, err, tb = cli([os.path.join(d, "o.npz"), "--out", os.path.join(d, "r"), "--n-boot", "500"])
    import re

    page = open(os.path.join(d, "r", "index.html")).read()
    highs = [float(h) for h in re.findall(r"\[(-?[\d.]+), (-?[\d.]+)\] %", page) for h in h]
    return max(highs) <= 100 and min(highs) >= 0, f"iris_mlp: interval ends from {min(highs)} to {max(highs)} %"


def labels_shifted():
    from calibcourse.calibration.calibrators import TemperatureScaling
    from calibcourse.calibration.synthetic import scaled_logits

    z, y = scaled_logits(300, 3, factor=2.0, seed=0)
    a = TemperatureScaling().fit(z, y + 1).classes_.tolist()
    y2 = y.copy()
    y2[y2 == 2] = 1
    try:
        b = TemperatureScaling().fit(z, y2 + 1).classes_.tolist()
    except ValueError as e:
        b = f"refused ({str(e)[:60]}...)"
    return isinstance(b, str) or b == a, f"labels 1, 2, 3: classes_ {a}; labels 1, 2 (no 3): {b}"


def fractional_labels():
    from calibcourse.calibration.calibrators import TemperatureScaling
    from calibcourse.calibration.synthetic import scaled_logits

    z, y = scaled_logits(300, 3, factor=2.0, seed=0)
    try:
        c = TemperatureScaling().fit(z, y + 0.5).classes_.tolist()
    except ValueError as e:
        return True, f"refused: {str(e)[:100]}"
    return False, f"labels 0.5, 1.5, 2.5 taken as class names {c}"


def metrics_string_labels():
    from calibcourse.calibration import metrics as M

    p = np.array([[0.8, 0.2], [0.3, 0.7], [0.6, 0.4]])
    e = M.ece(p, np.array(["cat", "dog", "cat"]))
    ref = M.ece(p, np.array([0, 1, 0]))
    return e == ref, f"ece with labels cat/dog {e:.4f}, with 0/1 {ref:.4f}"


def save_keeps_names():
    from calibcourse.calibration import load
    from calibcourse.calibration.synthetic import scaled_logits

    z, y = scaled_logits(400, 2, factor=2.0, seed=0)
    names = np.where(y == 1, "dog", "cat")
    d = tempfile.mkdtemp()
    np.savez(os.path.join(d, "o.npz"), logits=z, y=names)
    rc, *_ = cli([os.path.join(d, "o.npz"), "--out", os.path.join(d, "r"), "--n-boot", "50", "--save",
                  os.path.join(d, "c.json")])
    f = load(os.path.join(d, "c.json"))
    classes = getattr(f, "classes_", None)
    pred = f.predict(z[:3]).tolist() if hasattr(f, "predict") else "no predict"
    ok = classes is not None and list(classes) == ["cat", "dog"] and pred != "no predict"
    return ok, f"string-labelled --save: classes_ {None if classes is None else list(classes)}, predict {pred}"


def uncalibrated_checks_columns():
    from calibcourse.calibration import load
    from calibcourse.calibration.synthetic import scaled_logits

    z, y = scaled_logits(600, 10, factor=1.0, seed=0)  # calibrated already: "no calibration"
    d = tempfile.mkdtemp()
    np.savez(os.path.join(d, "o.npz"), logits=z, y=y)
    cli([os.path.join(d, "o.npz"), "--out", os.path.join(d, "r"), "--n-boot", "50", "--save",
         os.path.join(d, "c.json")])
    f = load(os.path.join(d, "c.json"))
    try:
        f.predict_proba(np.full((4, 5), 0.2))
    except ValueError as e:
        return True, f"{f.name}: 5 columns refused: {str(e)[:90]}"
    return False, f"{f.name}: a file fitted on 10 classes accepts 5 columns"


def save_says_subsample():
    from calibcourse.calibration.report import page
    from calibcourse.calibration.synthetic import scaled_logits

    z, y = scaled_logits(3000, 3, factor=2.0, seed=0)
    d = tempfile.mkdtemp()
    np.savez(os.path.join(d, "o.npz"), logits=z, y=y)
    old = page.MAX_FIT_ROWS, page.MAX_FIT_VALUES
    page.MAX_FIT_ROWS, page.MAX_FIT_VALUES = 1000, 3000
    try:
        rc, out, err, tb = cli([os.path.join(d, "o.npz"), "--out", os.path.join(d, "r"), "--n-boot", "50",
                                "--save", os.path.join(d, "c.json")])
    finally:
        page.MAX_FIT_ROWS, page.MAX_FIT_VALUES = old
    said = out.strip().splitlines()[-1]
    return "all 3000" not in said, f"fitted on a subsample of 1,000 of 3,000; the command said: {said}"


def contract_gaps():
    from sklearn.base import is_classifier
    from sklearn.model_selection import GridSearchCV

    from calibcourse.calibration.calibrators import HistogramBinning, OneVsAll, TemperatureScaling
    from calibcourse.calibration.synthetic import scaled_logits

    z, y = scaled_logits(300, 3, factor=2.0, seed=0)
    out = []
    ok = True
    try:
        GridSearchCV(HistogramBinning(), {"n_bins": [5, 10]}).fit(np.random.default_rng(0).random(200),
                                                                  np.arange(200) % 2)
        out.append("GridSearchCV ok")
    except Exception as e:
        ok = False
        out.append(f"GridSearchCV: {type(e).__name__}")
    out.append(f"is_classifier {is_classifier(TemperatureScaling())}")
    ok &= is_classifier(TemperatureScaling())
    try:
        HistogramBinning().fit(np.random.default_rng(0).random((50, 1)), np.arange(50) % 2)
        out.append("(n, 1) ok")
    except ValueError:
        ok = False
        out.append("(n, 1) refused")
    dt = TemperatureScaling().fit(z.astype(np.float32), y).predict_proba(z.astype(np.float32)).dtype
    out.append(f"float32 in: {dt} out")
    ok &= dt == np.float32
    p = np.exp(z) / np.exp(z).sum(1, keepdims=True)
    keep = y != 2
    try:
        kw = {"classes": [0, 1, 2]}
        try:
            OneVsAll().fit(p[keep], y[keep], **kw)
        except TypeError:
            OneVsAll().fit(p[keep], y[keep])
        out.append("OvA missing class fitted")
    except ValueError:
        ok = False
        out.append("OvA missing class refused")
    return ok, "; ".join(out)


def csv_messages():
    d = tempfile.mkdtemp()
    files = {"empty.csv": b"", "binary.csv": bytes(range(128, 256)) * 4,
             "semi.csv": b"p0;p1;p2;label\n0.2;0.3;0.5;1\n0.1;0.1;0.8;2\n0.6;0.2;0.2;0\n",
             "ragged.csv": b"p0,p1,label\n0.2,0.8,1\n0.3,0.7\n0.5,0.5,0\n"}
    bad = []
    for name, data in files.items():
        with open(os.path.join(d, name), "wb") as f:
            f.write(data)
        rc, out, err, tb = cli([os.path.join(d, name), "--out", os.path.join(d, "r" + name)])
        lines = err.strip().splitlines()
        clear = not tb and len(lines) == 1 and name in lines[0]
        if not clear:
            bad.append(f"{name}: {'traceback' if tb else (lines or ['?'])[-1][:70]}")
    return not bad, "; ".join(bad) or "each one line naming the file"


def main():
    for what, fn in (("rounded probabilities (K = 10, three decimals)", rounded_k10),
                     ("a 5-class MLP's probabilities with two decimals", mlp_two_decimals),
                     ("a first row that sums to 1", first_row_sums_to_one),
                     ("integer scores of 0 and 1", integer_logits),
                     ("rows in [0, 1] summing to 0.9 under an unknown key", rows_summing_to_09),
                     ("breast_cancer_lr: a fold's temperature", breast_cancer_lr_folds),
                     ("vector scaling on iris_svc", vector_scaling_diverges),
                     ("Platt's targets", platt_targets),
                     ("MCE interval within [0, 100] %", mce_interval),
                     ("shifted labels", labels_shifted),
                     ("fractional labels", fractional_labels),
                     ("metrics with string labels", metrics_string_labels),
                     ("--save keeps class names", save_keeps_names),
                     ("a 'no calibration' file checks columns", uncalibrated_checks_columns),
                     ("--save says what it was fitted on", save_says_subsample),
                     ("score, is_classifier, (n, 1), dtype, a missing class", contract_gaps),
                     ("CSV messages", csv_messages)):
        check(what, fn)
    print(f"{sum(RESULTS)} of {len(RESULTS)} ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
