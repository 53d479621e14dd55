"""Summaries of cached runs for the chapters (chapter 2 onwards).

``run_summary`` turns one :class:`~calibcourse.train.RunResult` into the
numbers a chapter reports (error, NLL, ECE with a bootstrap interval, MCE, the
temperature fitted on the validation split); ``sweep_table`` aggregates a sweep
over seeds; ``claims_table`` renders the table each chapter ends with.
"""
from __future__ import annotations

import numpy as np

from . import metrics as M

__all__ = ["run_summary", "sweep_table", "claims_table", "fmt_ci"]


def run_summary(result, n_bins: int = 15, n_boot: int = 200, seed: int = 0) -> dict:
    """Test-split measures of a run, and the NLL-optimal temperature fitted on its validation split.

    Keys: error, nll, ece, ece_low, ece_high (95 % percentile bootstrap), mce,
    temperature, ece_ts (test ECE after temperature scaling), mean_conf.
    """
    from .calibrators import TemperatureScaling

    p, y = result.probs("test"), result.labels("test")
    ci = M.bootstrap_ci(M.ece, p, y, n_boot=n_boot, seed=seed, n_bins=n_bins)
    ts = TemperatureScaling().fit(result.outputs["val_logits"], result.labels("val"))
    p_ts = ts.predict_proba(result.outputs["test_logits"])
    return {"error": M.error(p, y), "nll": M.nll(p, y), "ece": ci.estimate, "ece_low": ci.low,
            "ece_high": ci.high, "mce": M.mce(p, y, n_bins=n_bins), "temperature": ts.temperature_,
            "ece_ts": M.ece(p_ts, y, n_bins=n_bins), "mean_conf": float(M.top_label(p)[0].mean())}


def sweep_table(results: dict, key_of, n_boot: int = 200):
    """Aggregate ``{run name: RunResult}`` over seeds.

    ``key_of(name)`` gives the sweep value of a run (e.g. its depth). Returns a
    DataFrame indexed by that value with the mean and std over seeds of every
    measure of :func:`run_summary` (columns ``<measure>`` and ``<measure>_std``)
    and ``n_seeds``.
    """
    import pandas as pd

    rows = []
    for name, r in results.items():
        rows.append({"value": key_of(name), **run_summary(r, n_boot=n_boot)})
    df = pd.DataFrame(rows)
    g = df.groupby("value", sort=True)
    out = g.mean()
    std = g.std(ddof=1).add_suffix("_std")
    out = pd.concat([out, std], axis=1)
    out["n_seeds"] = g.size()
    return out


def fmt_ci(value: float, low: float, high: float, scale: float = 100.0, digits: int = 1) -> str:
    """``"4.5 [3.7, 5.6]"``: an estimate and its interval, in percent by default."""
    return f"{scale * value:.{digits}f} [{scale * low:.{digits}f}, {scale * high:.{digits}f}]"


def claims_table(rows) -> str:
    """Markdown table of (claim, source, measured, held) rows, the end of every chapter."""
    lines = ["| claim | source | what we measured | held at our scale? |", "|---|---|---|---|"]
    for claim, source, measured, held in rows:
        verdict = held if isinstance(held, str) else ("yes" if held else "no")
        lines.append(f"| {claim} | {source} | {measured} | {verdict} |")
    return "\n".join(lines)


def post_hoc_table(models: dict, methods: dict, n_bins: int = 15, n_boot: int = 200, seed: int = 0):
    """Guo et al.'s Table 1 for our runs: test ECE of every post-hoc method, fitted on validation.

    ``models = {row name: RunResult}``, ``methods = {column name: calibrator or None}``
    (None: uncalibrated). Each calibrator is cloned and fitted on the run's
    validation logits and labels. Returns a long DataFrame with columns
    model, method, ece, ece_low, ece_high, error, nll.
    """
    import pandas as pd

    rows = []
    for model_name, r in models.items():
        z_val, y_val = r.outputs["val_logits"], r.labels("val")
        z_test, y_test = r.outputs["test_logits"], r.labels("test")
        for method_name, method in methods.items():
            p = M.softmax(z_test) if method is None else method.clone().fit(z_val, y_val).predict_proba(z_test)
            ci = M.bootstrap_ci(M.ece, p, y_test, n_boot=n_boot, seed=seed, n_bins=n_bins)
            rows.append({"model": model_name, "method": method_name, "ece": ci.estimate, "ece_low": ci.low,
                         "ece_high": ci.high, "error": M.error(p, y_test), "nll": M.nll(p, y_test)})
    return pd.DataFrame(rows)
