"""calibcourse.report: what the chapters print is what the metrics compute."""
import numpy as np
import pandas as pd
import pytest

from calibcourse import metrics as M
from calibcourse import report as R
from calibcourse.calibrators import TemperatureScaling
from calibcourse.train import RunResult


def fake_run(seed, factor):
    rng = np.random.default_rng(seed)
    z = rng.normal(size=(600, 5)) * 1.5
    q = M.softmax(z)
    y = np.minimum((q.cumsum(1) < rng.random((600, 1))).sum(1), 4)
    return RunResult({}, pd.DataFrame(), {"val_logits": factor * z[:300], "val_labels": y[:300],
                                          "test_logits": factor * z[300:], "test_labels": y[300:]})


def test_run_summary_matches_metrics_and_temperature():
    r = fake_run(0, 3.0)
    s = R.run_summary(r, n_boot=50)
    p = M.softmax(r.outputs["test_logits"])
    assert s["ece"] == pytest.approx(M.ece(p, r.labels()))
    assert s["ece_low"] <= s["ece_high"]
    assert s["temperature"] == pytest.approx(
        TemperatureScaling().fit(r.outputs["val_logits"], r.labels("val")).temperature_)
    assert s["temperature"] > 1.5 and s["ece_ts"] < s["ece"]


def test_sweep_table_means_and_stds_over_seeds():
    runs = {f"x/{f}/s{s}": fake_run(s, f) for f in (1.0, 3.0) for s in (0, 1, 2)}
    df = R.sweep_table(runs, key_of=lambda n: float(n.split("/")[1]), n_boot=20)
    assert df.index.tolist() == [1.0, 3.0] and df["n_seeds"].tolist() == [3, 3]
    eces = [R.run_summary(runs[f"x/3.0/s{s}"], n_boot=20)["ece"] for s in (0, 1, 2)]
    assert df.loc[3.0, "ece"] == pytest.approx(np.mean(eces))
    assert df.loc[3.0, "ece_std"] == pytest.approx(np.std(eces, ddof=1))


def test_claims_table_and_fmt_ci():
    t = R.claims_table([("a", "b", "c", True), ("d", "e", "f", "partly")])
    assert t.splitlines()[2] == "| a | b | c | yes |" and t.splitlines()[3].endswith("| partly |")
    assert R.fmt_ci(0.045, 0.037, 0.056) == "4.5 [3.7, 5.6]"


def test_post_hoc_table_fits_on_validation_and_scores_on_test():
    from calibcourse import calibrators as C

    r = fake_run(3, 3.0)
    df = R.post_hoc_table({"m": r}, {"uncalibrated": None, "TS": C.TemperatureScaling()}, n_boot=20)
    assert df["method"].tolist() == ["uncalibrated", "TS"]
    ts = C.TemperatureScaling().fit(r.outputs["val_logits"], r.labels("val"))
    expected = M.ece(ts.predict_proba(r.outputs["test_logits"]), r.labels())
    assert df.loc[1, "ece"] == pytest.approx(expected)
    assert df.loc[1, "ece"] < df.loc[0, "ece"]
