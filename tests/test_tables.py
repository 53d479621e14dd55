"""calibcourse.study.analysis.tables and calibcourse.study.analysis.ledger: what the chapters print is what the
metrics compute."""
import numpy as np
import pandas as pd
import pytest

from calibcourse.calibration import metrics as M
from calibcourse.calibration.calibrators import TemperatureScaling
from calibcourse.study.analysis import ledger as ledgermod
from calibcourse.study.analysis import tables as R
from calibcourse.study.training.results import RunResult


def fake_run(seed, factor, shared_test=False):
    """A run of 600 samples; ``shared_test``: the seed only perturbs the logits, so every seed
    has the same labels (one test set, as the seeds of one configuration)."""
    rng = np.random.default_rng(0 if shared_test else seed)
    z = rng.normal(size=(600, 5)) * 1.5
    q = M.softmax(z)
    y = np.minimum((q.cumsum(1) < rng.random((600, 1))).sum(1), 4)
    if shared_test:
        z = z + 0.3 * np.random.default_rng(seed + 1).normal(size=z.shape)
    return RunResult({}, pd.DataFrame(), {"val_logits": factor * z[:300], "val_labels": y[:300],
                                          "test_logits": factor * z[300:], "test_labels": y[300:]})


def binary_run(seed, n, scale, temperature):
    """A sigmoid run, split in halves: logits ``scale * N(0, 1)``, labels drawn from sigmoid(z / temperature)."""
    from scipy.special import expit

    rng = np.random.default_rng(seed)
    z = rng.normal(size=n) * scale
    y = (rng.random(n) < expit(z / temperature)).astype(int)
    h = n // 2
    return z, y, RunResult({}, pd.DataFrame(), {"val_logits": z[:h], "val_labels": y[:h],
                                                "test_logits": z[h:], "test_labels": y[h:]})


def test_run_summary_matches_metrics_and_temperature():
    r = fake_run(0, 3.0)
    s = R.run_summary(r, n_boot=50)
    p = M.softmax(r.outputs["test_logits"])
    assert s["ece_plugin"] == pytest.approx(M.ece(p, r.labels()))
    assert s["ece"] == s["ece_plugin"]  # one estimator: the table's ECE is the plain one
    assert s["ece_low"] <= s["ece"] <= s["ece_high"]
    assert s["temperature"] == pytest.approx(
        TemperatureScaling().fit(r.outputs["val_logits"], r.labels("val")).temperature_)
    assert s["temperature"] > 1.5 and s["ece_ts"] < s["ece_plugin"]  # both plain estimates


def test_sweep_table_means_and_stds_over_seeds():
    runs = {f"x/{f}/s{s}": fake_run(s, f, shared_test=True) for f in (1.0, 3.0) for s in (0, 1, 2)}
    df = R.sweep_table(runs, key_of=lambda n: float(n.split("/")[1]), n_boot=20)
    assert df.index.tolist() == [1.0, 3.0] and df["n_seeds"].tolist() == [3, 3]
    eces = [M.ece(runs[f"x/3.0/s{s}"].probs("test"), runs[f"x/3.0/s{s}"].labels("test")) for s in (0, 1, 2)]
    assert df.loc[3.0, "ece_plugin"] == pytest.approx(np.mean(eces))
    assert df.loc[3.0, "ece_plugin_std"] == pytest.approx(np.std(eces, ddof=1))
    # the estimate is the plain mean over seeds; the interval is that of the mean over seeds
    assert df.loc[3.0, "ece"] == pytest.approx(np.mean(eces), rel=1e-12)
    from calibcourse.calibration import stats

    probs, y = R.seed_predictions({k: v for k, v in runs.items() if "/3.0/" in k})
    ci = stats.seeds_interval(M.ece, probs, y, n_boot=20)
    assert (df.loc[3.0, "ece"], df.loc[3.0, "ece_low"], df.loc[3.0, "ece_high"]) == pytest.approx(ci[:3])
    assert df.loc[3.0, "ece_low"] <= df.loc[3.0, "ece"] <= df.loc[3.0, "ece_high"]


def test_fmt_ci():
    assert R.fmt_ci(0.045, 0.037, 0.056) == "4.5 [3.7, 5.6]"


def test_ledger_verdicts_follow_from_intervals_and_round_trip_through_json():
    import json

    from calibcourse.calibration import stats

    led = ledgermod.Ledger(chapter=3, glue=False)
    led.claim("a", claim="lowers", source="guo2017calibration", effect="d ECE",
              interval=stats.Difference(-0.02, -0.03, -0.01, 0.95, n=100), direction="below")
    led.claim("b", claim="by at least 23 %", source="sharipov2025lecture", effect="relative d ECE",
              interval=stats.Difference(-0.2, -0.3, -0.1, 0.95), null=-0.23, direction="below", scale=100,
              unit="%", n_test=1000)
    led.claim("c", claim="raises", source="guo2017calibration", effect="d MCE",
              interval=stats.Difference(-0.2, -0.3, -0.1, 0.95), direction="above")
    led.claim("d", claim="untestable", source="x", effect="e", why="no data")
    assert [c.verdict for c in led.claims] == ["held", "inconclusive", "not held", "not tested"]
    # an inconclusive claim says what would decide it: half-width 0.1 vs gap 0.03 -> (0.1 / 0.03)^2 = 11x, beyond
    # the 10x the ledger proposes (tests/test_ledger.py tests the texts)
    assert led["b"].why.startswith("cannot be decided at this scale")
    # without a sample size it says by how much the data must grow, not that the estimate sits on the boundary
    e = led.claim("e", claim="lowers", source="x", effect="d", interval=(-0.01, -0.02, 0.01, 0.95))
    assert e.verdict == "inconclusive" and e.why == ("the estimate lies on the claimed side: about 2.2x the data "
                                                     "would decide it, as held, if the estimate stayed")
    led.claims.remove(e)
    claims = json.loads(json.dumps([c.as_dict() for c in led.claims]))
    assert list(claims[0])[:len(ledgermod.CLAIM_KEYS)] == list(ledgermod.CLAIM_KEYS)
    ledgermod.check_claims(claims)
    claims[1]["verdict"] = "held"          # a hand-edited verdict is caught
    with pytest.raises(ValueError, match="does not follow from its interval"):
        ledgermod.check_claims(claims)
    md = led.table_markdown()
    assert (
        md.count("\n") == 5
        and "(> 0)" in md
        and "(< -23 %)" in md
        and "**not held**" in md
        and "{cite}`guo2017calibration`" in md
    )
    page = ledgermod.ledger_page([c.as_dict() for c in led.claims], {"guo2017calibration": "Guo et al."})
    assert (
        "## Guo et al." in page and "2 held" not in page and "1 held, 1 not held, 1 inconclusive, 1 not tested" in page
    )


def test_ledger_rejects_bad_claims():
    from calibcourse.calibration import stats

    led = ledgermod.Ledger(chapter=1, glue=False)
    d = stats.Difference(0.0, -1.0, 1.0, 0.95)
    led.claim("x", claim="c", source="s", effect="e", interval=d)
    with pytest.raises(ValueError, match="declared twice"):
        led.claim("x", claim="c", source="s", effect="e", interval=d)
    with pytest.raises(ValueError, match="why"):
        led.claim("y", claim="c", source="s", effect="e")
    with pytest.raises(ValueError, match="direction"):
        led.claim("z", claim="c", source="s", effect="e", interval=d, direction="lower")
    with pytest.raises(ValueError, match="chapter must be an integer >= 1"):
        ledgermod.Ledger(chapter=0)
    assert ledgermod.Ledger(chapter=7, glue=False).chapter == 7  # the book, not the ledger, knows its chapters
    with pytest.raises(ValueError, match=r"chapter 7 is not one of the book's chapters \[1, 2\]"):
        ledgermod.check_claims(
            [ledgermod.Claim("x", 7, "A", "s", "e", -0.02, -0.03, -0.01, 0.95, 0.0, "below", "held", 10, 1).as_dict()],
            chapters={1, 2},
        )


def test_post_hoc_table_fits_on_validation_and_scores_on_test():
    from calibcourse.calibration import calibrators as C

    r = fake_run(3, 3.0)
    df = R.post_hoc_table({"m": r}, {"uncalibrated": None, "TS": C.TemperatureScaling()}, n_boot=20)
    assert df["method"].tolist() == ["uncalibrated", "TS"]
    ts = C.TemperatureScaling().fit(r.outputs["val_logits"], r.labels("val"))
    expected = M.ece(ts.predict_proba(r.outputs["test_logits"]), r.labels())
    assert df.loc[1, "ece_plugin"] == pytest.approx(expected)
    assert df.loc[1, "ece_low"] <= df.loc[1, "ece"] <= df.loc[1, "ece_high"]
    assert df.loc[1, "ece_plugin"] < df.loc[0, "ece_plugin"]


def test_post_hoc_table_reads_a_binary_run_through_the_sigmoid():
    """One logit per sample is P(y = 1) = sigmoid(z), never a softmax across samples."""
    from scipy.special import expit

    z, y, r = binary_run(0, 400, scale=2, temperature=1)
    df = R.post_hoc_table({"m": r}, {"uncalibrated": None}, n_boot=20)
    assert df.loc[0, "nll"] == pytest.approx(M.nll(expit(z[200:]), y[200:]))


def _binary_predictions(r, methods):
    """``{(model, method): (P(y = 1) on test, labels)}``: each calibrator fitted on the run's validation split,
    as chapter 3 makes them for :func:`binary_scores`."""
    y_val, y_test = r.labels("val"), r.labels("test")
    out = {("m", "uncalibrated"): (r.probs("test"), y_test)}
    for name, cal in methods.items():
        out[("m", name)] = (cal.clone().fit(r.probs("val"), y_val).predict_proba(r.probs("test"))[:, 1], y_test)
    return out


def test_binary_scores_measure_each_prediction_top_label_with_its_interval():
    from scipy.special import expit

    from calibcourse.calibration import calibrators as C

    z, y, r = binary_run(1, 600, scale=3, temperature=2)
    preds = _binary_predictions(r, {"isotonic": C.IsotonicCalibration()})
    table = R.binary_scores(preds, n_val={"m": 300}, n_boot=20)
    assert table.index.tolist() == [("m", "uncalibrated"), ("m", "isotonic")]
    assert table.loc[("m", "isotonic"), "nll"] == pytest.approx(M.nll(*preds[("m", "isotonic")]))
    row = table.loc[("m", "uncalibrated")]
    assert row["mce"] == pytest.approx(M.mce(expit(z[300:]), y[300:], reliability="top_label"))  # chapter 3's view
    assert row["test_errors"] == int(round(M.error(expit(z[300:]), y[300:]) * 300))
    assert row["ece_low"] <= row["ece"] <= row["ece_high"]
    assert row["ece_plugin"] == pytest.approx(M.ece(expit(z[300:]), y[300:], reliability="top_label"))


def test_post_hoc_table_returns_the_predictions_it_scored():
    from calibcourse.calibration import calibrators as C

    r = fake_run(3, 3.0)
    df, preds = R.post_hoc_table({"m": r}, {"uncalibrated": None, "TS": C.TemperatureScaling()}, n_boot=20,
                                 return_predictions=True)
    ts = C.TemperatureScaling().fit(r.outputs["val_logits"], r.labels("val"))
    np.testing.assert_allclose(preds[("m", "TS")], ts.predict_proba(r.outputs["test_logits"]))
    np.testing.assert_allclose(preds[("m", "uncalibrated")], M.softmax(r.outputs["test_logits"]))
    assert df.loc[1, "ece_plugin"] == pytest.approx(M.ece(preds[("m", "TS")], r.labels()))
    view = R.post_hoc_view(df, ["TS", "uncalibrated"])
    assert list(view.columns) == ["TS", "uncalibrated"] and view.columns.name.startswith("test ECE (%)")
    assert view.loc["m", "TS"] == R.fmt_ci(df.loc[1, "ece"], df.loc[1, "ece_low"], df.loc[1, "ece_high"], digits=2)


def test_post_hoc_binary_view_states_units_and_matches_the_table():
    from calibcourse.calibration import calibrators as C

    _, _, r = binary_run(2, 600, scale=3, temperature=2)
    table = R.binary_scores(_binary_predictions(r, {"Platt": C.PlattScaling()}), n_val={"m": 300}, n_boot=20)
    view = R.post_hoc_binary_view(table)
    assert list(view.columns) == ["test errors", "ECE (%) [95 % interval]", "MCE (%)", "NLL (nats)"]
    row = table.loc[("m", "Platt")]
    assert view.loc[("m", "Platt"), "MCE (%)"] == f"{100 * row['mce']:.2f}"
    assert view.loc[("m", "Platt"), "ECE (%) [95 % interval]"].startswith(f"{100 * row['ece']:.2f} [")


def test_seed_table_measures_every_seed_and_fits_post_hoc_rows_on_validation():
    from calibcourse.calibration import calibrators as C

    ce = {s: fake_run(s, 3.0, shared_test=True) for s in (0, 1, 2)}
    soft = {s: fake_run(s, 1.0, shared_test=True) for s in (0, 1, 2)}
    for s in soft:
        soft[s].info.update(step_time_s=6.0); soft[s].config.update(epochs=3)
    per_seed, probs = R.seed_table({"CE": ce, "soft": soft}, post_hoc={"CE + TS": ("CE", C.TemperatureScaling())})
    assert per_seed["method"].tolist() == ["CE"] * 3 + ["CE + TS"] * 3 + ["soft"] * 3
    y = ce[0].labels()
    ts1 = C.TemperatureScaling().fit(ce[1].logits("val"), ce[1].labels("val")).predict_proba(ce[1].logits())
    np.testing.assert_allclose(probs["CE + TS"][1], ts1)
    row = per_seed[(per_seed["method"] == "CE + TS") & (per_seed["seed"] == 1)].iloc[0]
    assert row["ECE (%)"] == pytest.approx(100 * M.ece(ts1, y))
    assert row["NLL (nats)"] == pytest.approx(M.nll(ts1, y))
    assert row["Classwise ECE (%)"] == pytest.approx(100 * M.classwise_ece(ts1, y))
    assert np.isnan(row["train s/epoch"]) and (per_seed.loc[per_seed["method"] == "soft", "train s/epoch"] == 2.0).all()
    view = R.seeds_view(per_seed)
    assert view["seeds"].tolist() == [3, 3, 3]
    ece_ce = per_seed.loc[per_seed["method"] == "CE", "ECE (%)"]
    assert view.loc["CE", "ECE (%)"] == f"{ece_ce.mean():.2f} ± {ece_ce.std(ddof=1):.2f}"
    assert view.loc["CE + TS", "train s/epoch"] == "" and view.loc["soft", "train s/epoch"] == "2.00"
    renamed = per_seed.replace({"method": {"soft": "FLgamma-SECE"}})
    assert R.seeds_view(renamed).index.tolist() == ["CE", "CE + TS", "FLγ-SECE"]  # a page's names, not the registry's
    one = R.seeds_view(per_seed[per_seed["seed"] == 0])  # one seed: no spread to show
    assert one.loc["CE", "ECE (%)"] == f"{ece_ce.iloc[0]:.2f}"
    with pytest.raises(ValueError, match="not one of methods"):
        R.seed_table({"CE": ce}, post_hoc={"x": ("focal", C.TemperatureScaling())})
    with pytest.raises(ValueError, match="another test set"):
        R.seed_table({"a": {0: fake_run(0, 1.0)}, "b": {0: fake_run(1, 1.0)}})
