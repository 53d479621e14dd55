"""``calibcourse report`` on 36 ordinary models, judged on data it has not seen (``make bench-panel``).

    OMP_WAIT_POLICY=PASSIVE python bench/bench_report_panel.py [--cases iris_rf,wine_mlp] [--n-boot 1000]
                                                               [--out panel.md]

Six scikit-learn models (logistic regression, random forest, gradient boosting, naive Bayes,
an MLP, and an SVC's decision function) on six data sets (digits, breast cancer, wine, iris,
and two ``make_classification`` tasks), each split 50/25/25 (stratified, seed 0) into
train / calibration / test. The model is fitted on the training part; ``calibcourse report``
runs, as a user runs it, on the model's outputs on the calibration part (``predict_proba``,
or ``decision_function`` for the SVC) with ``--save``; the saved calibrator is then applied
to the outputs on the test part. Beside it, on the same test samples: no calibration (the
model's probabilities; the softmax of the SVC's scores, which is what the report calls "no
calibration"), and scikit-learn's ``CalibratedClassifierCV(FrozenEstimator(model),
method=...)`` fitted on the calibration part, for ``sigmoid``, ``isotonic`` and
``temperature``.

Held-out log loss (``sklearn.metrics.log_loss``) and Brier score (the sum over classes of
the squared errors, averaged over samples: ``sklearn.metrics.brier_score_loss`` for K > 2,
twice it for two classes), and for the recommendation minus no calibration a paired 95 %
bootstrap interval over the test samples (2,000 resamples, percentile). The goals
(issue 48): the recommendation is never worse than no calibration beyond that interval on
either score (its low end is at most 0), and its median held-out log loss over the cases is
at most scikit-learn temperature scaling's.

The models' and the report's seeds are fixed: the numbers repeat on one machine (scikit-learn's
MLP and gradient boosting may differ in the last digits across CPU kinds).
"""
from __future__ import annotations

import argparse
import contextlib
import io
import os
import sys
import tempfile
import time
import warnings

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
os.environ.setdefault("OMP_NUM_THREADS", "1")

import numpy as np  # noqa: E402

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

DATASETS = ("digits", "breast_cancer", "wine", "iris", "mc_binary", "mc_5class")
MODELS = ("lr", "rf", "gb", "nb", "mlp", "svc")
SK_METHODS = ("sigmoid", "isotonic", "temperature")


def sk_methods() -> tuple:
    """The methods of :data:`SK_METHODS` that this scikit-learn has: ``temperature`` came with 1.8, and
    the newest scikit-learn for Python 3.10 is 1.7 (the panel then gives its columns as nan)."""
    import sklearn

    if tuple(int(v) for v in sklearn.__version__.split(".")[:2]) >= (1, 8):
        return SK_METHODS
    return tuple(m for m in SK_METHODS if m != "temperature")


def load(name):
    """``(X, y)`` of a data set of :data:`DATASETS`."""
    import sklearn.datasets as D

    if name == "mc_binary":
        return D.make_classification(n_samples=4000, n_features=20, n_informative=6, n_redundant=4,
                                     flip_y=0.05, class_sep=0.8, random_state=1)
    if name == "mc_5class":
        return D.make_classification(n_samples=30000, n_features=20, n_informative=10, n_redundant=4,
                                     n_classes=5, n_clusters_per_class=2, flip_y=0.02, random_state=0)
    return getattr(D, f"load_{name}")(return_X_y=True)


def model(name):
    """An unfitted scikit-learn model of :data:`MODELS`."""
    from sklearn.ensemble import HistGradientBoostingClassifier, RandomForestClassifier
    from sklearn.linear_model import LogisticRegression
    from sklearn.naive_bayes import GaussianNB
    from sklearn.neural_network import MLPClassifier
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler
    from sklearn.svm import SVC

    return {"lr": lambda: make_pipeline(StandardScaler(), LogisticRegression(max_iter=2000)),
            "rf": lambda: RandomForestClassifier(n_estimators=100, random_state=0, n_jobs=1),
            "gb": lambda: HistGradientBoostingClassifier(random_state=0),
            "nb": lambda: GaussianNB(),
            "mlp": lambda: make_pipeline(StandardScaler(), MLPClassifier(max_iter=500, random_state=0)),
            "svc": lambda: make_pipeline(StandardScaler(), SVC(random_state=0))}[name]()


def split(X, y, seed=0):
    """50 / 25 / 25 stratified: train, calibration, test."""
    from sklearn.model_selection import train_test_split

    Xtr, Xrest, ytr, yrest = train_test_split(X, y, train_size=0.5, stratify=y, random_state=seed)
    Xcal, Xte, ycal, yte = train_test_split(Xrest, yrest, train_size=0.5, stratify=yrest, random_state=seed)
    return Xtr, ytr, Xcal, ycal, Xte, yte


def scores_of(m, X, model_name):
    """What the report is given: probabilities, or the SVC's decision function."""
    return m.decision_function(X) if model_name == "svc" else m.predict_proba(X)


def _softmax(s):
    s = np.asarray(s, dtype=np.float64)
    if s.ndim == 1:
        s = np.stack([np.zeros_like(s), s], 1)
    s = s - s.max(1, keepdims=True)
    e = np.exp(s)
    return e / e.sum(1, keepdims=True)


def per_sample_losses(p, y):
    """Per test sample: the log loss (clipped as scikit-learn's ``log_loss``) and the Brier score."""
    p = np.asarray(p, dtype=np.float64)
    p = p / p.sum(1, keepdims=True)
    eps = np.finfo(np.float64).eps
    ll = -np.log(np.clip(p[np.arange(len(y)), y], eps, 1))
    onehot = np.eye(p.shape[1])[y]
    return ll, ((p - onehot) ** 2).sum(1)


def paired_interval(a, b, n_boot=2000, seed=0):
    """Mean of ``a - b`` and its 95 % percentile bootstrap interval over the samples."""
    d = a - b
    rng = np.random.default_rng(seed)
    means = d[rng.integers(0, len(d), (n_boot, len(d)))].mean(1)
    lo, hi = np.quantile(means, [0.025, 0.975])
    return float(d.mean()), float(lo), float(hi)


def run_report(s_cal, y_cal, folder, n_boot, key, extra=()):
    """``calibcourse report`` on the calibration outputs saved under ``key`` ("probs" or "logits"), as a user
    runs it; (exit status, stdout, stderr)."""
    from calibcourse.calibration.cli import main

    path = os.path.join(folder, "cal.npz")
    np.savez(path, **{key: s_cal, "y": y_cal})
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        rc = main([path, "--out", os.path.join(folder, "rep"), "--save", os.path.join(folder, "cal.json"),
                   "--n-boot", str(n_boot), *extra])
    return rc, out.getvalue(), err.getvalue()


def run_case(data_name, model_name, n_boot=1000, data_cache=None):
    """One case: the held-out scores of the recommendation, of none and of scikit-learn's three."""
    from sklearn.calibration import CalibratedClassifierCV
    from sklearn.frozen import FrozenEstimator

    from calibcourse.calibration import load as load_calibrator

    if data_cache is not None and data_name in data_cache:
        X, y = data_cache[data_name]
    else:
        X, y = load(data_name)
    Xtr, ytr, Xcal, ycal, Xte, yte = split(X, y)
    t0 = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        m = model(model_name).fit(Xtr, ytr)
    t_model = time.perf_counter() - t0
    s_cal, s_te = scores_of(m, Xcal, model_name), scores_of(m, Xte, model_name)
    row = {"case": f"{data_name}_{model_name}", "n_cal": len(ycal), "k": len(np.unique(y))}
    with tempfile.TemporaryDirectory() as d:
        t0 = time.perf_counter()
        rc, out, err = run_report(s_cal, ycal, d, n_boot, "logits" if model_name == "svc" else "probs")
        row["t_report"] = time.perf_counter() - t0
        row["rc"] = rc
        if rc != 0:
            row["error"] = (err.strip().splitlines() or ["?"])[-1]
            return row
        fitted = load_calibrator(os.path.join(d, "cal.json"))
    row["recommended"] = fitted.name or "uncalibrated"
    preds = {"none": _softmax(s_te) if model_name == "svc" else s_te,
             "report": fitted.predict_proba(s_te)}
    for method in sk_methods():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            cc = CalibratedClassifierCV(FrozenEstimator(m), method=method).fit(Xcal, ycal)
        preds[f"sk_{method}"] = cc.predict_proba(Xte)
    losses = {name: per_sample_losses(p, yte) for name, p in preds.items()}
    for name, (ll, br) in losses.items():
        row[f"ll_{name}"], row[f"brier_{name}"] = float(ll.mean()), float(br.mean())
    for method in set(SK_METHODS) - set(sk_methods()):
        row[f"ll_sk_{method}"] = row[f"brier_sk_{method}"] = float("nan")
    for j, score in enumerate(("ll", "brier")):
        row[f"d_{score}"] = paired_interval(losses["report"][j], losses["none"][j])
    row["err_none"] = float(np.mean(preds["none"].argmax(1) != yte))
    row["err_report"] = float(np.mean(np.asarray(preds["report"]).argmax(1) != yte))
    row["t_model"] = t_model
    return row


def _fmt_row(r):
    if r["rc"] != 0:
        return f"| {r['case']} | {r['n_cal']} | error: {r.get('error', '')} |" + " |" * 11
    flags = "".join(("L" if r["d_ll"][1] > 0 else "") + ("B" if r["d_brier"][1] > 0 else ""))
    return (f"| {r['case']} | {r['n_cal']} | {r['recommended']} | "
            f"{r['ll_none']:.4f} | **{r['ll_report']:.4f}** | {r['ll_sk_sigmoid']:.4f} | {r['ll_sk_isotonic']:.4f} | "
            f"{r['ll_sk_temperature']:.4f} | {r['d_ll'][0]:+.4f} [{r['d_ll'][1]:+.4f}, {r['d_ll'][2]:+.4f}] | "
            f"{r['brier_none']:.4f} | **{r['brier_report']:.4f}** | {r['brier_sk_temperature']:.4f} | "
            f"{r['d_brier'][0]:+.4f} [{r['d_brier'][1]:+.4f}, {r['d_brier'][2]:+.4f}] | {flags or '-'} |")


def table(rows) -> str:
    """The panel's markdown table and its summary."""
    head = ("| case | n cal | recommended | log loss: none | report | sk sigmoid | sk isotonic | sk temperature | "
            "report - none [95 %] | Brier: none | report | sk temperature | report - none [95 %] | worse |\n"
            "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    lines = [head] + [_fmt_row(r) for r in rows]
    ok = [r for r in rows if r["rc"] == 0]
    worse_ll = [r["case"] for r in ok if r["d_ll"][1] > 0]
    worse_br = [r["case"] for r in ok if r["d_brier"][1] > 0]
    med = {name: float(np.median([r[f"ll_{name}"] for r in ok])) for name in
           ("none", "report", "sk_sigmoid", "sk_isotonic", "sk_temperature")}
    medb = {name: float(np.median([r[f"brier_{name}"] for r in ok])) for name in
            ("none", "report", "sk_sigmoid", "sk_isotonic", "sk_temperature")}
    wins = sum(r["ll_report"] < r["ll_sk_temperature"] - 1e-12 for r in ok)
    losses = sum(r["ll_report"] > r["ll_sk_temperature"] + 1e-12 for r in ok)
    lines += [
        "",
        f"{len(ok)} of {len(rows)} cases reported (exit status 0). Worse than no calibration beyond the held-out "
        f"interval: log loss {len(worse_ll)} ({', '.join(worse_ll) or 'none'}), Brier {len(worse_br)} "
        f"({', '.join(worse_br) or 'none'}).",
        "Median held-out log loss: " + ", ".join(f"{k} {v:.4f}" for k, v in med.items()) + ".",
        "Median held-out Brier: " + ", ".join(f"{k} {v:.4f}" for k, v in medb.items()) + ".",
        f"Report against scikit-learn temperature on held-out log loss: lower in {wins}, higher in {losses}, "
        f"equal in {len(ok) - wins - losses}.",
    ]
    if set(sk_methods()) != set(SK_METHODS):
        lines.append(f"This scikit-learn has no {', '.join(sorted(set(SK_METHODS) - set(sk_methods())))} "
                     "calibration (1.8 and later): its columns are nan.")
    return "\n".join(lines)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cases", default=None, help="comma-separated data_model names (default: all 36)")
    ap.add_argument("--n-boot", type=int, default=1000, help="the report's --n-boot (default: its default, 1000)")
    ap.add_argument("--out", default=None, help="also write the table to this markdown file")
    args = ap.parse_args(argv)
    names = [f"{d}_{m}" for d in DATASETS for m in MODELS]
    if args.cases:
        names = args.cases.split(",")
    start, rows, cache = time.perf_counter(), [], {}
    for name in names:
        data_name, model_name = name.rsplit("_", 1)
        if data_name not in cache:
            cache[data_name] = load(data_name)
        r = run_case(data_name, model_name, args.n_boot, cache)
        rows.append(r)
        print(f"{name}: {r.get('recommended', r.get('error'))} (report {r['t_report']:.1f} s)", file=sys.stderr,
              flush=True)
    text = table(rows)
    total = time.perf_counter() - start
    text += (f"\nWall time {total:.0f} s for {len(rows)} cases (reports: "
             f"{sum(r['t_report'] for r in rows):.0f} s), OMP_WAIT_POLICY=PASSIVE.")
    print(text)
    if args.out:
        with open(args.out, "w") as f:
            f.write(text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
