"""Summaries of cached runs for the chapters (chapter 2 onwards).

``run_summary`` turns one :class:`~calibcourse.train.RunResult` into the
numbers a chapter reports (error, NLL, ECE with a bootstrap interval, MCE, the
temperature fitted on the validation split); ``sweep_table`` aggregates a sweep
over seeds; the claims ledger (:class:`Ledger`, :class:`Claim`) holds every claim a chapter tests: its
effect, interval and verdict, declared where it is tested; the chapter-end table and the
book's "What held" page (``_build/claims.json``) both read it.
"""
from __future__ import annotations

import inspect
from dataclasses import asdict, dataclass

import numpy as np

from . import metrics as M
from . import stats
from ._docs import document
from ._validation import check_labels, check_probs

__all__ = ["calibration_report", "run_summary", "sweep_table", "seed_predictions", "fmt_ci", "fmt_difference", "post_hoc_table", "post_hoc_binary",
           "post_hoc_view", "post_hoc_binary_view", "SEED_MEASURES", "seed_table", "seeds_view", "grid_choice_view", "paired_table",
           "comparisons_view", "Claim", "Ledger",
           "CLAIM_KEYS", "CLAIMS_GLUE_NAME", "check_claims", "ledger_page"]


@document(("result", "calibcourse.train.RunResult", "A run with ``val`` and ``test`` logits and labels."),
          "n_bins", ("n_boot", "int, default=1000", "Bootstrap resamples of the ECE's interval."), "seed",
          returns=("dict", "``error``, ``nll``, ``ece``, ``ece_low``, ``ece_high`` (95 % interval of "
                           ":func:`calibcourse.stats.interval`: bias-corrected ECE, bias-aware bootstrap "
                           "interval), ``ece_plugin`` (the plain estimate), ``mce``, ``temperature``, ``ece_ts`` "
                           "(the plain test ECE after temperature scaling: compare it with ``ece_plugin``), "
                           "``mean_conf``; fractions, NLL in nats."))
def run_summary(result, n_bins: int = 15, n_boot: int = 1000, seed: int = 0) -> dict:
    """Test-split measures of a run, and the NLL-optimal temperature fitted on its validation split.

    Examples
    --------
    >>> from calibcourse.data import scaled_logits
    >>> from calibcourse.train import RunResult
    >>> z, y = scaled_logits(2000, 3, factor=3.0, seed=0)  # overconfident: T* = 3
    >>> r = RunResult({}, None, {"val_logits": z[:1000], "val_labels": y[:1000], "test_logits": z[1000:],
    ...                          "test_labels": y[1000:]})
    >>> s = run_summary(r, n_boot=100)
    >>> round(s["temperature"]), s["ece_ts"] < s["ece_plugin"], s["ece_low"] <= s["ece"] <= s["ece_high"]
    (3, True, True)
    """
    from .calibrators import TemperatureScaling

    p, y = result.probs("test"), result.labels("test")
    ci = stats.interval(M.ece, p, y, n_boot=n_boot, seed=seed, n_bins=n_bins)
    ts = TemperatureScaling().fit(result.logits("val"), result.labels("val"))
    p_ts = ts.predict_proba(result.logits("test"))
    return {"error": M.error(p, y), "nll": M.nll(p, y), "ece": ci.estimate, "ece_low": ci.low,
            "ece_high": ci.high, "ece_plugin": ci.plugin, "mce": M.mce(p, y, n_bins=n_bins),
            "temperature": ts.temperature_, "ece_ts": M.ece(p_ts, y, n_bins=n_bins),
            "mean_conf": float(M.top_label(p)[0].mean())}


def seed_predictions(results: dict, split: str = "test"):
    """``([probs of each run], labels)`` on ``split`` of runs that share it (e.g. the seeds of one
    configuration), for :func:`calibcourse.stats.seeds_difference`.

    Parameters
    ----------
    results : dict
        ``{run name: RunResult}``, all with the same labels on ``split``.
    split : str, default="test"
        The split.

    Returns
    -------
    probs : list of numpy.ndarray
        The probabilities of every run, in the order of ``results``.
    labels : numpy.ndarray
        The shared labels.

    Raises
    ------
    ValueError
        ``results`` is empty, or a run has other labels (it names the run).

    Examples
    --------
    >>> from calibcourse.data import scaled_logits
    >>> from calibcourse.train import RunResult
    >>> z, y = scaled_logits(1000, 3, factor=1.0, seed=0)
    >>> runs = {f"s{s}": RunResult({}, None, {"test_logits": (2 + s) * z, "test_labels": y}) for s in range(2)}
    >>> probs, labels = seed_predictions(runs)
    >>> len(probs), probs[0].shape, labels.shape
    (2, (1000, 3), (1000,))
    """
    found = list(results.values())
    if not found:
        raise ValueError(f"results is empty: no run to take {split} predictions from")
    y = found[0].labels(split)
    for name, r in results.items():
        if not np.array_equal(r.labels(split), y):
            raise ValueError(f"run {name!r} has another {split} set than {next(iter(results))!r}; seeds of one "
                             "configuration must share it")
    return [r.probs(split) for r in found], y


def sweep_table(results: dict, key_of, n_boot: int = 1000):
    """Aggregate ``{run name: RunResult}`` over seeds.

    Parameters
    ----------
    results : dict
        ``{run name: RunResult}``; the runs of one sweep value share a test set.
    key_of : callable
        ``key_of(name)`` gives the sweep value of a run (e.g. its depth).
    n_boot : int, default=1000
        Bootstrap resamples of every interval (and of each seed's bias-corrected ECE).

    Returns
    -------
    pandas.DataFrame
        Indexed by the sweep value, sorted: the mean and std over seeds of every measure of
        :func:`run_summary` (columns ``<measure>`` and ``<measure>_std``; ``ece_std`` is the
        spread of the seeds' bias-corrected ECEs) and ``n_seeds``; ``ece``, ``ece_low`` and
        ``ece_high`` are the estimate and 95 % interval of the *mean over seeds*
        (:func:`calibcourse.stats.seeds_interval`), not averages of per-seed intervals.

    Examples
    --------
    >>> from calibcourse.data import scaled_logits
    >>> from calibcourse.train import RunResult
    >>> z, y = scaled_logits(2000, 3, factor=1.0, seed=0)
    >>> def run(factor, seed):  # each seed adds noise of its own to the same samples' logits
    ...     zz = factor * z + 0.1 * np.random.default_rng(seed).normal(size=z.shape)
    ...     return RunResult({}, None, {"val_logits": zz[:1000], "val_labels": y[:1000],
    ...                                 "test_logits": zz[1000:], "test_labels": y[1000:]})
    >>> runs = {f"f{f}/s{s}": run(f, s) for f in (1.0, 3.0) for s in (0, 1, 2)}
    >>> t = sweep_table(runs, key_of=lambda n: float(n[1:4]), n_boot=100)
    >>> t.index.tolist(), t["n_seeds"].tolist(), t["temperature"].round().tolist()
    ([1.0, 3.0], [3, 3], [1.0, 3.0])
    >>> bool(t.loc[3.0, "ece_low"] <= t.loc[3.0, "ece"] <= t.loc[3.0, "ece_high"])
    True
    """
    import pandas as pd

    groups: dict = {}
    for name, r in results.items():
        groups.setdefault(key_of(name), {})[name] = r
    rows = []
    for value, group in groups.items():
        per_run = pd.DataFrame([run_summary(r, n_boot=n_boot) for r in group.values()])
        per_run = per_run.drop(columns=["ece_low", "ece_high"])  # per-seed intervals: not aggregated
        row = {"value": value, "n_seeds": len(group)}
        for col in per_run.columns:
            row[col] = per_run[col].mean()
            row[f"{col}_std"] = per_run[col].std(ddof=1) if len(group) > 1 else np.nan
        probs, y = seed_predictions(group)
        ci = stats.seeds_interval(M.ece, probs, y, n_boot=n_boot)
        row.update({"ece": ci.estimate, "ece_low": ci.low, "ece_high": ci.high})
        rows.append(row)
    return pd.DataFrame(rows).set_index("value").sort_index()


#: the arguments of the formatters
_SCALE = ("scale", "float, default=100.0", "Multiplies the numbers (100: fractions to percent or percentage points).")
_DIGITS = ("digits", "int, default=1", "Decimals.")


@document(("d", "calibcourse.stats.Difference or sequence of float", "``(estimate, low, high, ...)``."), _SCALE,
          ("unit", 'str, default="points"', "Appended after a space (nothing if empty)."), _DIGITS,
          returns=("str", "The signed estimate and interval."))
def fmt_difference(d, scale: float = 100.0, unit: str = "points", digits: int = 1) -> str:
    """``"+1.2 [+0.5, +1.9] points"``: a difference (:class:`calibcourse.stats.Difference`) with its
    interval, signed, in percentage points by default.

    Examples
    --------
    >>> fmt_difference((-0.012, -0.019, -0.005))
    '-1.2 [-1.9, -0.5] points'
    >>> fmt_difference((0.05, 0.01, 0.09), scale=1, unit="nats", digits=2)
    '+0.05 [+0.01, +0.09] nats'
    """
    unit = f" {unit}" if unit else ""
    f = lambda v: f"{scale * v:+.{digits}f}"  # noqa: E731
    return f"{f(d[0])} [{f(d[1])}, {f(d[2])}]{unit}"


@document(("value, low, high", "float", "The estimate and its interval."), _SCALE, _DIGITS,
          returns=("str", "The estimate and its interval."))
def fmt_ci(value: float, low: float, high: float, scale: float = 100.0, digits: int = 1) -> str:
    """``"4.5 [3.7, 5.6]"``: an estimate and its interval, in percent by default.

    Examples
    --------
    >>> fmt_ci(0.045, 0.037, 0.056)
    '4.5 [3.7, 5.6]'
    >>> fmt_ci(0.3127, 0.30, 0.33, scale=1, digits=3)
    '0.313 [0.300, 0.330]'
    """
    return f"{scale * value:.{digits}f} [{scale * low:.{digits}f}, {scale * high:.{digits}f}]"


def _post_hoc_row(model, method, p, y, n_bins: int, n_boot: int, seed: int) -> dict:
    """The columns :func:`post_hoc_table` and :func:`post_hoc_binary` share, for one calibrated model."""
    ci = stats.interval(M.ece, p, y, n_boot=n_boot, seed=seed, n_bins=n_bins)
    return {"model": model, "method": method, "ece": ci.estimate, "ece_low": ci.low, "ece_high": ci.high,
            "ece_plugin": ci.plugin, "error": M.error(p, y), "nll": M.nll(p, y)}


def post_hoc_table(models: dict, methods: dict, n_bins: int = 15, n_boot: int = 200, seed: int = 0,
                   return_predictions: bool = False):
    """Guo et al.'s Table 1 for our runs: test ECE of every post-hoc method, fitted on validation.

    Parameters
    ----------
    models : dict
        ``{row name: RunResult}``.
    methods : dict
        ``{column name: calibrator or None}`` (None: uncalibrated). Each calibrator is cloned
        and fitted on the run's validation logits and labels.
    n_bins : int, default=15
        Bins of the ECE.
    n_boot : int, default=200
        Bootstrap resamples of each ECE's interval.
    seed : int, default=0
        Seed of the resampling.
    return_predictions : bool, default=False
        Also return the test probabilities of every (model, method), so that a comparison
        reuses the fitted methods instead of fitting them again.

    Returns
    -------
    table : pandas.DataFrame
        Long: columns model, method, ece, ece_low, ece_high (:func:`calibcourse.stats.interval`),
        ece_plugin, error, nll (fractions, nats); :func:`post_hoc_view` formats it.
    predictions : dict
        Only with ``return_predictions``: ``{(model, method): test probabilities}``.

    Examples
    --------
    An underconfident network (``T* = 1/2``), its temperature fitted on the validation half:

    >>> from calibcourse import data, train
    >>> from calibcourse.calibrators import TemperatureScaling
    >>> z, y = data.scaled_logits(3000, 4, factor=0.5, seed=2)
    >>> net = train.RunResult({}, None, dict(val_logits=z[:1500], val_labels=y[:1500], test_logits=z[1500:],
    ...                                      test_labels=y[1500:]))
    >>> table = post_hoc_table({"net": net}, {"none": None, "TS": TemperatureScaling()}, n_boot=50)
    >>> table[["model", "method"]].values.tolist(), bool(table.ece[1] < table.ece[0])
    ([['net', 'none'], ['net', 'TS']], True)
    >>> bool(table.error[0] == table.error[1])  # a temperature keeps every argmax
    True
    """
    import pandas as pd

    rows, predictions = [], {}
    for model_name, r in models.items():
        z_val, y_val = r.logits("val"), r.labels("val")
        z_test, y_test = r.logits("test"), r.labels("test")
        for method_name, method in methods.items():
            p = M.logits_to_probs(z_test) if method is None else method.clone().fit(z_val, y_val).predict_proba(z_test)
            predictions[(model_name, method_name)] = p
            rows.append(_post_hoc_row(model_name, method_name, p, y_test, n_bins, n_boot, seed))
    return (pd.DataFrame(rows), predictions) if return_predictions else pd.DataFrame(rows)


def post_hoc_binary(models: dict, methods: dict, score, n_bins: int = 15, n_boot: int = 1000, seed: int = 0):
    """Chapter 3's table: every binary calibrator fitted on each run's validation split, scored on test.

    Parameters
    ----------
    models : dict
        ``{row name: RunResult}`` of binary runs.
    methods : dict
        ``{column name: binary calibrator}``, each cloned and fitted per run.
    score : callable
        ``score(result, split)`` gives the score a calibrator takes (e.g. P(positive)); the test
        split's score is also the "uncalibrated" row, so it must be a probability.
    n_bins : int, default=15
        Bins of the ECE and MCE.
    n_boot : int, default=1000
        Bootstrap resamples of each ECE's interval.
    seed : int, default=0
        Seed of the resampling.

    Returns
    -------
    table : pandas.DataFrame
        Indexed by (model, method), "uncalibrated" first: ``ece``, ``ece_low``, ``ece_high``
        (:func:`calibcourse.stats.interval`), ``ece_plugin``, ``mce``, ``nll``, ``error`` (the
        names of :func:`post_hoc_table`, plus ``mce``), ``test_errors``, ``n_test``, ``n_val``;
        :func:`post_hoc_binary_view` formats it.
    predictions : dict
        ``{(model, method): (probs, labels)}`` of the test split.

    Examples
    --------
    >>> import pandas as pd
    >>> from calibcourse.calibrators import PlattScaling
    >>> from calibcourse.train import RunResult
    >>> rng = np.random.default_rng(0)
    >>> z = rng.normal(size=2000); y = (rng.random(2000) < 1 / (1 + np.exp(-z))).astype(int)
    >>> r = RunResult({}, pd.DataFrame(), {"val_logits": 3 * z[:1000], "val_labels": y[:1000],
    ...                                    "test_logits": 3 * z[1000:], "test_labels": y[1000:]})
    >>> from scipy.special import expit
    >>> table, preds = post_hoc_binary({"net": r}, {"Platt": PlattScaling()},
    ...                                score=lambda r, split: expit(r.logits(split)), n_boot=50)
    >>> table.index.tolist(), bool(table.nll["net", "Platt"] < table.nll["net", "uncalibrated"])
    ([('net', 'uncalibrated'), ('net', 'Platt')], True)
    """
    import pandas as pd

    rows, predictions = [], {}
    for model_name, r in models.items():
        s_val, y_val, s_test, y_test = score(r, "val"), r.labels("val"), score(r, "test"), r.labels("test")
        outputs = {"uncalibrated": s_test}
        for method_name, method in methods.items():
            outputs[method_name] = method.clone().fit(s_val, y_val).predict_proba(s_test)
        for method_name, p in outputs.items():
            row = _post_hoc_row(model_name, method_name, p, y_test, n_bins, n_boot, seed)
            rows.append({**row, "mce": M.mce(p, y_test, n_bins=n_bins), "test_errors": int(round(row["error"] * len(y_test))),
                         "n_test": len(y_test), "n_val": len(y_val)})
            predictions[(model_name, method_name)] = (p, y_test)
    return pd.DataFrame(rows).set_index(["model", "method"]), predictions


def post_hoc_binary_view(table, digits: int = 2):
    """:func:`post_hoc_binary`'s table for the page: units in the headers, the ECE with its interval.

    Parameters
    ----------
    table : pandas.DataFrame
        The table of :func:`post_hoc_binary`.
    digits : int, default=2
        Decimals of the ECE and MCE.

    Returns
    -------
    pandas.DataFrame
        Columns ``test errors``, ``ECE (%) [95 % interval]``, ``MCE (%)``, ``NLL (nats)``
        (strings); the index stays (model, method).

    Examples
    --------
    >>> import pandas as pd
    >>> t = pd.DataFrame({"model": ["m"], "method": ["isotonic"], "ece": [0.0123], "ece_low": [0.01],
    ...                   "ece_high": [0.015], "mce": [0.2], "nll": [0.05], "test_errors": [7]}).set_index(["model", "method"])
    >>> post_hoc_binary_view(t).iloc[0, 1:].tolist()
    ['1.23 [1.00, 1.50]', '20.00', '0.0500']
    """
    import pandas as pd

    return pd.DataFrame({
        "test errors": table["test_errors"],
        "ECE (%) [95 % interval]": [fmt_ci(e, lo, hi, digits=digits)
                                    for e, lo, hi in zip(table["ece"], table["ece_low"], table["ece_high"])],
        "MCE (%)": [f"{100 * v:.{digits}f}" for v in table["mce"]],
        "NLL (nats)": [f"{v:.4f}" for v in table["nll"]],
    }, index=table.index)


def post_hoc_view(long, methods, digits: int = 2):
    """:func:`post_hoc_table`'s long table as Guo et al.'s Table 1: a row per model, a column per method
    (in the order of ``methods``), each cell the test ECE in percent with its 95 % interval.

    Parameters
    ----------
    long : pandas.DataFrame
        The table of :func:`post_hoc_table`.
    methods : sequence of str
        The columns, in order.
    digits : int, default=2
        Decimals.

    Returns
    -------
    pandas.DataFrame
        Indexed by model (in the order of ``long``), one string column per method.

    Examples
    --------
    >>> import pandas as pd
    >>> long = pd.DataFrame({"model": ["m", "m"], "method": ["TS", "none"], "ece": [0.01, 0.05],
    ...                      "ece_low": [0.005, 0.04], "ece_high": [0.02, 0.06]})
    >>> post_hoc_view(long, ["none", "TS"]).loc["m"].tolist()
    ['5.00 [4.00, 6.00]', '1.00 [0.50, 2.00]']
    """
    cells = long.assign(cell=[fmt_ci(e, lo, hi, digits=digits)
                              for e, lo, hi in zip(long["ece"], long["ece_low"], long["ece_high"])])
    view = cells.pivot(index="model", columns="method", values="cell")[list(methods)]
    view.columns.name = "test ECE (%) [95 % interval]"
    return view.reindex(list(dict.fromkeys(long["model"])))


#: the measures of :func:`seed_table`, with their units: name -> (function of (probs, labels), scale)
SEED_MEASURES = {"Error (%)": (M.error, 100.0), "NLL (nats)": (M.nll, 1.0), "ECE (%)": (M.ece, 100.0),
                 "MCE (%)": (M.mce, 100.0), "ACE (%)": (M.ace, 100.0), "Classwise ECE (%)": (M.classwise_ece, 100.0)}


def _s_per_epoch(result) -> float:
    """Training time per epoch (the steps only) of a run, or NaN when the run does not record it."""
    t, epochs = result.info.get("step_time_s"), result.config.get("epochs")
    return float(t) / float(epochs) if t is not None and epochs else float("nan")


def seed_table(methods: dict, post_hoc: dict | None = None, split: str = "test"):
    """Every measure of :data:`SEED_MEASURES` for every seed of every method (chapter 5's comparison).

    Parameters
    ----------
    methods : dict
        ``{method: {seed: RunResult}}``; every run shares one test set.
    post_hoc : dict, optional
        ``{name: (method, calibrator)}``: a post-hoc row, e.g. ``{"CE + TS": ("CE", TemperatureScaling())}``,
        the calibrator cloned and fitted on each seed's validation logits of ``method``.
    split : str, default="test"
        The split measured.

    Returns
    -------
    per_seed : pandas.DataFrame
        A row per (method, seed): the measures (columns ``Error (%)``, ``NLL (nats)``, ``ECE (%)``, ...)
        and ``train s/epoch`` (NaN for a post-hoc row); methods in the order given, each post-hoc row
        after its method.
    probs : dict
        ``{method: [probabilities of each seed]}``, for :func:`calibcourse.stats.seeds_difference`.

    Examples
    --------
    >>> import pandas as pd
    >>> from calibcourse.train import RunResult
    >>> z = np.array([[2.0, 0.0], [0.0, 1.0], [3.0, 0.0], [0.0, 2.0]]); y = np.array([0, 1, 1, 1])
    >>> run = RunResult({}, pd.DataFrame(), {"val_logits": z, "val_labels": y, "test_logits": z, "test_labels": y})
    >>> per_seed, probs = seed_table({"CE": {0: run}})
    >>> per_seed.loc[0, "method"], float(per_seed.loc[0, "Error (%)"]), len(probs["CE"])
    ('CE', 25.0, 1)
    """
    import pandas as pd

    post_hoc = post_hoc or {}
    for name, (base, _) in post_hoc.items():
        if base not in methods:
            raise ValueError(f"post_hoc[{name!r}] calibrates {base!r}, which is not one of methods: {', '.join(methods)}")
    y = None
    rows, probs = [], {}

    def add(method, seed, p, s_epoch):
        probs.setdefault(method, []).append(p)
        rows.append({"method": method, "seed": seed,
                     **{k: scale * fn(p, y) for k, (fn, scale) in SEED_MEASURES.items()}, "train s/epoch": s_epoch})

    for method, by_seed in methods.items():
        for seed, r in by_seed.items():
            if y is None:
                y = r.labels(split)
            elif not np.array_equal(r.labels(split), y):
                raise ValueError(f"run {method!r}, seed {seed} has another {split} set than the first run; "
                                 "the methods must share one")
            add(method, seed, r.probs(split), _s_per_epoch(r))
        for name, (base, calibrator) in post_hoc.items():
            if base == method:
                for seed, r in by_seed.items():
                    fitted = calibrator.clone().fit(r.logits("val"), r.labels("val"))
                    add(name, seed, fitted.predict_proba(r.logits(split)), float("nan"))
    return pd.DataFrame(rows), probs


def seeds_view(per_seed, digits: int = 2):
    """:func:`seed_table` as a page shows it: a row per method, each measure as "mean ± std" over seeds
    (the mean alone for a single seed), the training time per epoch as a mean (blank for a post-hoc row).

    Parameters
    ----------
    per_seed : pandas.DataFrame
        The first table of :func:`seed_table`.
    digits : int, default=2
        Decimals.

    Returns
    -------
    pandas.DataFrame
        Indexed by method, in the order of ``per_seed``; strings.

    Examples
    --------
    >>> import pandas as pd
    >>> per_seed = pd.DataFrame({"method": ["CE", "CE"], "seed": [0, 1], "ECE (%)": [4.0, 6.0],
    ...                          "train s/epoch": [0.5, 0.7]})
    >>> seeds_view(per_seed).loc["CE"].tolist()
    ['5.00 ± 1.41', '0.60']
    """
    import pandas as pd

    order = list(dict.fromkeys(per_seed["method"]))
    cols = [c for c in per_seed.columns if c not in ("method", "seed", "train s/epoch")]
    g = per_seed.groupby("method", sort=False)
    mean, std = g[cols].mean().loc[order], g[cols].std(ddof=1).loc[order]  # NaN for a single seed
    shown = pd.DataFrame({c: [f"{m:.{digits}f}" + ("" if np.isnan(s) else f" ± {s:.{digits}f}")
                              for m, s in zip(mean[c], std[c])] for c in cols},
                         index=pd.Index(order, name="method"))
    if "train s/epoch" in per_seed:
        t = g["train s/epoch"].mean().loc[order]
        shown["train s/epoch"] = t.map(lambda v: "" if np.isnan(v) else f"{v:.2f}").to_numpy()
    return shown


def grid_choice_view(choice: dict, params: dict):
    """The weight grids of chapter 5's baselines and the value chosen on validation, one row per value.

    Parameters
    ----------
    choice : dict
        ``{family: {"chosen": value, "table": DataFrame}}`` as
        :func:`calibcourse.experiments.ch5_choice` returns (each table with the grid parameter's
        column, ``val error``, ``val ECE`` as fractions and ``eligible``).
    params : dict
        ``{family: parameter name}``.

    Returns
    -------
    pandas.DataFrame
        Indexed by (baseline, value); columns ``val error (%)``, ``val ECE (%)``, ``eligible``,
        ``chosen`` ("<-" on the chosen value).

    Examples
    --------
    >>> import pandas as pd
    >>> t = pd.DataFrame({"gamma": [1.0, 3.0], "val error": [0.05, 0.06], "val ECE": [0.03, 0.01],
    ...                   "eligible": [True, True]})
    >>> v = grid_choice_view({"Focal": {"chosen": 3.0, "table": t}}, {"Focal": "gamma"})
    >>> v[["val ECE (%)", "chosen"]].reset_index().values.tolist()
    [['Focal', 'gamma 1', 3.0, ''], ['Focal', 'gamma 3', 1.0, '<-']]
    """
    import pandas as pd

    parts = []
    for family, c in choice.items():
        param, t = params[family], c["table"]
        parts.append(pd.DataFrame({
            "baseline": family, "value": [f"{param} {v:g}" for v in t[param]],
            "val error (%)": (100 * t["val error"]).round(2).to_numpy(), "val ECE (%)": (100 * t["val ECE"]).round(2).to_numpy(),
            "eligible": t["eligible"].to_numpy(), "chosen": np.where(np.isclose(t[param], c["chosen"]), "<-", "")}))
    return pd.concat(parts, ignore_index=True).set_index(["baseline", "value"])


def paired_table(pairs: dict, labels, measures: dict | None = None, reference: str = "reference",
                 n_boot: int = 1000, seed: int = 0, extra=None):
    """Runs against a reference run on the same test samples, one row each (chapter 5's ablations).

    Parameters
    ----------
    pairs : dict
        ``{(name, seed): (result, reference_result)}``.
    labels : array_like of shape (n,)
        The shared test labels.
    measures : dict, optional
        ``{label: metric}`` compared by :func:`calibcourse.stats.paired_difference` (default: ECE and
        error); each gives a column ``"<label> - <reference> (points)"`` with its 95 % interval.
    reference : str
        The reference's name in those columns.
    n_boot, seed
        The bootstrap of the paired intervals.
    extra : callable, optional
        ``extra(result, reference_result) -> dict`` of more columns (e.g. the final mean gamma).

    Returns
    -------
    table : pandas.DataFrame
        Indexed by (name, seed): ``Error (%)``, ``ECE (%)``, ``MCE (%)``, the differences,
        ``train s/epoch`` and the ``extra`` columns.
    tests : dict
        ``{(name, seed, label): calibcourse.stats.Difference}``.

    Examples
    --------
    >>> import pandas as pd
    >>> from calibcourse.train import RunResult
    >>> rng = np.random.default_rng(0)
    >>> z = rng.normal(size=(400, 3)); y = rng.integers(0, 3, 400)
    >>> run = lambda zz: RunResult({}, pd.DataFrame(), {"test_logits": zz, "test_labels": y})
    >>> table, tests = paired_table({("half", 0): (run(z / 2), run(z))}, y, reference="full", n_boot=50)
    >>> list(table.columns)[:4]
    ['Error (%)', 'ECE (%)', 'MCE (%)', 'ECE - full (points)']
    >>> tests[("half", 0, "Error")].estimate  # the same argmax: no change of error
    0.0
    """
    import pandas as pd

    measures = measures or {"ECE": M.ece, "Error": M.error}
    y = np.asarray(labels)
    rows, tests = [], {}
    for (name, s), (r, ref) in pairs.items():
        p, p_ref = r.probs(), ref.probs()
        row = {"name": name, "seed": s, "Error (%)": 100 * M.error(p, y), "ECE (%)": 100 * M.ece(p, y),
               "MCE (%)": 100 * M.mce(p, y)}
        for label, metric in measures.items():
            d = stats.paired_difference(metric, p, p_ref, y, n_boot=n_boot, seed=seed)
            tests[(name, s, label)] = d
            row[f"{label} - {reference} (points)"] = fmt_difference(d, unit="", digits=2)
        row["train s/epoch"] = _s_per_epoch(r)
        if extra is not None:
            row.update(extra(r, ref))
        rows.append(row)
    return pd.DataFrame(rows).set_index(["name", "seed"]), tests


def comparisons_view(tests: dict, units: dict | None = None):
    """Paired comparisons as a table: the difference A - B with its 95 % interval in the measure's
    unit, and the verdict of "A is below B" (:func:`calibcourse.stats.verdict`).

    Parameters
    ----------
    tests : dict
        ``{(measure, A, B): calibcourse.stats.Difference}``.
    units : dict, optional
        ``{measure: (scale, unit)}``; by default NLL in nats (scale 1) and every other measure
        in percentage points.

    Returns
    -------
    pandas.DataFrame
        Indexed by (measure, A, B): ``A - B [95 % interval]`` and ``verdict (A below B)``.

    Examples
    --------
    >>> d = stats.Difference(-0.012, -0.02, -0.004, 0.95, n=1000)
    >>> comparisons_view({("ECE", "A", "B"): d}).loc[("ECE", "A", "B")].tolist()
    ['-1.20 [-2.00, -0.40] points', 'held']
    """
    import pandas as pd

    units = {"NLL": (1.0, "nats"), **(units or {})}
    rows = []
    for (measure, a, b), d in tests.items():
        scale, unit = units.get(measure, (100.0, "points"))
        rows.append({"measure": measure, "A": a, "B": b,
                     "A - B [95 % interval]": fmt_difference(d, scale=scale, unit=unit, digits=3 if scale == 1 else 2),
                     "verdict (A below B)": stats.verdict(d.low, d.high)})
    return pd.DataFrame(rows).set_index(["measure", "A", "B"])


# --------------------------------------------------------------------------- the claims ledger
#: the keys of every claim in ``_build/claims.json``, in order (extra keys follow them)
CLAIM_KEYS = ("id", "chapter", "claim", "source", "effect", "estimate", "low", "high", "level", "null",
              "direction", "verdict", "n_test", "n_seeds")
#: the glue name under which a chapter stores its claims in its executed notebook
CLAIMS_GLUE_NAME = "calibcourse-claims"
_VERDICT_MARK = {"held": "held", "not held": "**not held**", "inconclusive": "*inconclusive*",
                 "not tested": "not tested"}


@dataclass
class Claim:
    """One claim of a source, tested on one effect (see :meth:`Ledger.claim`).

    Numbers are in the effect's own units (fractions for ECE and error); ``scale`` and
    ``unit`` say how to print them (100 and "points" print 0.012 as "1.2 points").

    Attributes
    ----------
    id, chapter, claim, source, effect
        Its unique id, the chapter that tests it, the claim in words, the bibliography key
        of its source and what is estimated.
    estimate, low, high, level : float or None
        The effect's estimate and interval (None when not tested).
    null, direction
        The claimed side: the effect lies ``direction`` ("below"/"above") ``null``.
    verdict : str
        "held", "not held", "inconclusive" or "not tested" (:func:`calibcourse.stats.verdict`).
    n_test, n_seeds : int or None
        Test samples and seeds behind the interval.
    section, why, cost : str or None
        The page section that tests it; why it is inconclusive or not tested; what it costs.
    detectable : float or None
        The effect the test detects with 80 % power.
    scale, unit
        How to print the numbers.

    Examples
    --------
    >>> c = Claim("ch4-ts", 4, "TS lowers the ECE", "guo2017calibration", "ECE(TS) - ECE(none)",
    ...           -0.03, -0.04, -0.02, 0.95, 0.0, "below", "held", 5000, 1)
    >>> c.interval_text, c.null_text, list(c.as_dict())[:3]
    ('-3.0 [-4.0, -2.0] points', '< 0', ['id', 'chapter', 'claim'])
    """

    id: str
    chapter: int
    claim: str
    source: str
    effect: str
    estimate: float | None
    low: float | None
    high: float | None
    level: float | None
    null: float | None
    direction: str | None
    verdict: str
    n_test: int | None
    n_seeds: int | None
    section: str | None = None
    why: str | None = None
    cost: str | None = None
    detectable: float | None = None
    scale: float = 100.0
    unit: str = "points"

    def as_dict(self) -> dict:
        """The claim as ``_build/claims.json`` stores it: :data:`CLAIM_KEYS` first, then the rest."""
        d = asdict(self)
        return {**{k: d[k] for k in CLAIM_KEYS}, **{k: v for k, v in d.items() if k not in CLAIM_KEYS}}

    @property
    def digits(self) -> int:
        """Decimals when printed: 3 for a raw scale (NLL in nats), 1 for percent."""
        return 3 if self.scale == 1 else 1

    def fmt(self, value) -> str:
        """One number of the claim, signed, in its unit's scale (``"-"`` for None)."""
        return "-" if value is None else f"{self.scale * value:+.{self.digits}f}"

    @property
    def interval_text(self) -> str:
        """``"-1.2 [-1.9, -0.5] points"`` (or ``"not tested"``)."""
        if self.estimate is None:
            return "not tested"
        return fmt_difference((self.estimate, self.low, self.high), self.scale, self.unit, self.digits)

    @property
    def null_text(self) -> str:
        """The claimed side, e.g. ``"< 0"`` (``"-"`` when not tested)."""
        if self.null is None:
            return "-"
        side = "<" if self.direction == "below" else ">"
        value = f"{self.scale * self.null:.{self.digits}f}".rstrip("0").rstrip(".")
        return f"{side} {value}{'' if self.unit in ('', 'points') else ' ' + self.unit}"


class Ledger:
    """The claims a chapter tests, declared where they are tested (chapters 1-5).

    Each :meth:`claim` computes its verdict from its interval with
    :func:`calibcourse.stats.verdict` (no verdict is written by hand), glues
    ``<id>-verdict``, ``<id>-interval`` and ``<id>-detectable`` for the prose, and is stored;
    :meth:`table` renders the chapter-end table and :meth:`publish` stores the claims in the
    executed notebook, from which the book build writes ``_build/claims.json`` and the
    "What held" page.

    Parameters
    ----------
    chapter : int
        The chapter (1-5) whose claims it holds.
    glue : bool, default=True
        Glue each claim's verdict, interval and detectable effect into the executing notebook
        (False outside a notebook).

    Examples
    --------
    >>> from calibcourse import report, stats
    >>> ledger = report.Ledger(chapter=4, glue=False)
    >>> c = ledger.claim("ch4-ts", claim="TS lowers the ECE", source="guo2017calibration",
    ...                  effect="ECE(TS) - ECE(uncalibrated)",
    ...                  interval=stats.Difference(-0.03, -0.04, -0.02, 0.95, n=5000),
    ...                  direction="below", n_test=5000, n_seeds=1)
    >>> c.verdict, c.interval_text
    ('held', '-3.0 [-4.0, -2.0] points')
    """

    def __init__(self, chapter: int, glue: bool = True):
        if chapter not in (1, 2, 3, 4, 5):
            raise ValueError(f"chapter must be 1-5; got {chapter!r}")
        self.chapter, self.glue, self.claims = chapter, glue, []

    def claim(self, id: str, claim: str, source: str, effect: str, interval=None, null: float = 0.0,
              direction: str = "below", n_test: int | None = None, n_seeds: int | None = None,
              section: str | None = None, why: str | None = None, cost: str | None = None,
              scale: float = 100.0, unit: str = "points") -> Claim:
        """Declare and test one claim; return it.

        Parameters
        ----------
        id : str
            Unique in the book, e.g. ``"ch2-depth"``.
        claim, source, effect : str
            The claim in words (with its size, if it has one), the bibliography key of the
            paper or reference document that makes it, and what is estimated, in words.
        interval : calibcourse.stats.Difference or None
            The effect's estimate and interval; None for a claim with no numeric test (then
            ``why`` must say why) -- its verdict is ``"not tested"``.
        null, direction
            As in :func:`calibcourse.stats.verdict`: the claim says the effect lies
            ``direction`` ("below" / "above") ``null`` (0, or the claimed size).
        n_test, n_seeds : int
            Test samples and seeds behind the interval (default: the interval's own).
        section : str
            The MyST label of the section that tests it (the "What held" page links to it).
        cost : str
            What the effect costs, in words with its numbers (e.g. the error change).
        scale, unit
            How to print the effect (100, "points": percentage points).
        """

        if any(c.id == id for c in self.claims):
            raise ValueError(f"claim id {id!r} is declared twice")
        for name, v in (("id", id), ("claim", claim), ("source", source), ("effect", effect)):
            if not isinstance(v, str) or not v.strip():
                raise ValueError(f"{name} must be a non-empty string; got {v!r}")
        if interval is None:
            if not why:
                raise ValueError(f"claim {id!r} has no interval: say in why= why it is not tested")
            c = Claim(id, self.chapter, claim, source, effect, None, None, None, None, None, None,
                      "not tested", n_test, n_seeds, section, why, cost, None, scale, unit)
        else:
            est, low, high, level = (float(v) for v in interval[:4])
            v = stats.verdict(low, high, null=null, direction=direction)
            detect = interval.detectable() if hasattr(interval, "detectable") else None
            n_test = int(n_test if n_test is not None else getattr(interval, "n", 0))
            n_seeds = int(n_seeds if n_seeds is not None else getattr(interval, "n_seeds", 1))
            if v == "inconclusive" and not why:
                why = _what_would_decide(est, low, high, float(null), n_test, n_seeds)
            c = Claim(id, self.chapter, claim, source, effect, est, low, high, level, float(null), direction,
                      v, n_test, n_seeds, section, why, cost, detect, scale, unit)
        self.claims.append(c)
        if self.glue:
            from .notebook import glue_value

            glue_value(f"{id}-verdict", c.verdict)
            glue_value(f"{id}-interval", c.interval_text)
            glue_value(f"{id}-detectable", "-" if c.detectable is None else f"{c.scale * c.detectable:.1f}")
        return c

    def __getitem__(self, id: str) -> Claim:
        for c in self.claims:
            if c.id == id:
                return c
        raise KeyError(f"no claim {id!r} in this ledger; declared: {', '.join(c.id for c in self.claims)}")

    def table_markdown(self) -> str:
        """The chapter-end table: claim, source, effect, estimate [interval], verdict."""
        lines = ["| claim | source | effect (what is estimated) | estimate [95 % interval] | verdict (claimed side) |",
                 "|---|---|---|---|---|"]
        for c in self.claims:
            effect = c.effect + (f"; {c.cost}" if c.cost else "")
            verdict = _VERDICT_MARK[c.verdict] + (f" ({c.why})" if c.why else "")
            side = f" ({c.null_text})" if c.null is not None else ""
            lines.append(f"| {c.claim} | {{cite}}`{c.source}` | {effect} | {c.interval_text} | {verdict}{side} |")
        return "\n".join(lines)

    def table(self):
        """The chapter-end table, for display (a ``Markdown`` object rendered as MyST); also
        :meth:`publish`-es the claims."""
        from IPython.display import Markdown

        self.publish()
        return Markdown(self.table_markdown())

    def publish(self) -> None:
        """Store the claims in the executed notebook (glue ``calibcourse-claims``, not displayed)."""
        import json

        if self.glue:
            from myst_nb import glue

            glue(CLAIMS_GLUE_NAME, json.dumps([c.as_dict() for c in self.claims]), display=False)


def _what_would_decide(est, low, high, null, n_test, n_seeds) -> str:
    """For an inconclusive claim: how much more data would decide it, if the estimate held.

    An interval's half-width shrinks like 1/sqrt(n); it excludes ``null`` once it is smaller
    than ``|estimate - null|``, i.e. with (half-width / |estimate - null|)^2 times the data.
    """
    gap = abs(est - null)
    half = (high - low) / 2
    if gap < 1e-12:
        return "the estimate sits on the boundary: no test set size decides it; a larger effect would"
    factor = (half / gap) ** 2
    if n_seeds and n_seeds > 1:
        return f"about {factor:.1f}x the test samples and seeds would decide it, if the estimate held"
    if not n_test:  # the interval's sample size was not given
        return f"about {factor:.1f}x the data would decide it, if the estimate held"
    return f"about {int(round(n_test * factor, -2)):,} test samples would decide it, if the estimate held"


def check_claims(claims: list) -> None:
    """Validate a list of claim dicts (``_build/claims.json``): keys, unique ids, verdicts that
    follow from their intervals by :func:`calibcourse.stats.verdict`.

    Parameters
    ----------
    claims : list of dict
        As :meth:`Claim.as_dict` writes them.

    Returns
    -------
    None

    Raises
    ------
    ValueError
        The first problem, naming the claim.

    Examples
    --------
    >>> c = Claim("x", 1, "A", "src", "e", -0.01, -0.02, 0.005, 0.95, 0.0, "below", "held", 100, 1).as_dict()
    >>> check_claims([c])
    Traceback (most recent call last):
        ...
    ValueError: claim 'x': verdict 'held' does not follow from its interval [-0.02, 0.005] against below 0.0 ('inconclusive')
    >>> check_claims([{**c, "verdict": "inconclusive"}])
    """

    seen = set()
    for c in claims:
        missing = [k for k in CLAIM_KEYS if k not in c]
        if missing:
            raise ValueError(f"claim {c.get('id')!r} lacks the keys {missing}")
        if c["id"] in seen:
            raise ValueError(f"claim id {c['id']!r} appears twice")
        seen.add(c["id"])
        if c["verdict"] == "not tested":
            if c["estimate"] is not None or not c.get("why"):
                raise ValueError(f"claim {c['id']!r} is 'not tested' but has numbers or no why")
            continue
        expected = stats.verdict(c["low"], c["high"], null=c["null"], direction=c["direction"])
        if c["verdict"] != expected:
            raise ValueError(f"claim {c['id']!r}: verdict {c['verdict']!r} does not follow from its interval "
                             f"[{c['low']}, {c['high']}] against {c['direction']} {c['null']} ({expected!r})")


def ledger_page(claims: list, titles: dict | None = None) -> str:
    """The "What held" page (MyST): every claim of every chapter, grouped by source.

    Parameters
    ----------
    claims : list of dict
        Every claim of the book (``_build/claims.json``).
    titles : dict, optional
        ``{source key: section title}``; default: the key.

    Returns
    -------
    str
        The page's MyST source.

    Examples
    --------
    >>> c = Claim("x", 4, "TS lowers the ECE", "guo2017calibration", "ECE(TS) - ECE(none)",
    ...           -0.03, -0.04, -0.02, 0.95, 0.0, "below", "held", 5000, 1)
    >>> page = ledger_page([c.as_dict()], titles={"guo2017calibration": "Guo et al. (2017)"})
    >>> for line in (page.splitlines()[4], page.splitlines()[-1]):
    ...     print(line)
    In this build: 1 held, 0 not held, 0 inconclusive, 0 not tested.
    | 4 | TS lowers the ECE | ECE(TS) - ECE(none) (5,000 test, 1 seed) | -3.0 [-4.0, -2.0] points | held (< 0) | - |
    """
    counts = {v: sum(c["verdict"] == v for c in claims) for v in _VERDICT_MARK}
    lines = ["# What held", "",
             "Every claim the book tests, grouped by the paper or document that makes it. Each effect is "
             "estimated with a 95 % interval (paired on the same test samples, and over seeds where a claim "
             "is about training); the verdict follows from the interval by one rule "
             "({func}`calibcourse.stats.verdict`): **held** when the whole interval lies on the side the claim "
             "states, **not held** when it lies wholly on the other side, *inconclusive* when it contains "
             "the boundary. A claim with a size is tested on its size. *Detects* is the smallest true "
             "effect the test finds with 80 % probability: where a verdict is inconclusive, it says how "
             "large an effect this data could have shown, and a test set (detects / wanted)^2 times larger "
             "would resolve an effect of the wanted size. The same list is in `_build/claims.json`.", "",
             f"In this build: {counts['held']} held, {counts['not held']} not held, "
             f"{counts['inconclusive']} inconclusive, {counts['not tested']} not tested.", ""]
    by_source: dict = {}
    for c in claims:
        by_source.setdefault(c["source"], []).append(c)
    for source, group in by_source.items():
        title = (titles or {}).get(source, source)
        lines += [f"## {title}", "", f"{{cite:p}}`{source}`", "",
                  "| ch. | claim | effect (test samples, seeds) | estimate [interval] | verdict (claimed side) | "
                  "detects (80 %) |", "|---|---|---|---|---|---|"]
        for d in sorted(group, key=lambda d: d["chapter"]):
            c = Claim(**{k: d.get(k) for k in Claim.__dataclass_fields__ if k in d})
            where = f"{{ref}}`{c.chapter} <{c.section}>`" if c.section else str(c.chapter)
            verdict = _VERDICT_MARK[c.verdict] + (f" ({c.why})" if c.why else "")
            detects = "-" if c.detectable is None else f"{c.scale * c.detectable:.{c.digits}f} {c.unit}".strip()
            side = f" ({c.null_text})" if c.null is not None else ""
            sizes = f" ({c.n_test:,} test, {c.n_seeds} seed{'s' if c.n_seeds != 1 else ''})" if c.n_test else ""
            effect = c.effect + sizes + (f"; {c.cost}" if c.cost else "")
            lines.append(f"| {where} | {c.claim} | {effect} | {c.interval_text} | {verdict}{side} | {detects} |")
        lines.append("")
    return "\n".join(lines)


@document("probs", "labels", "n_bins",
          ("name", 'str, default="model"', "The row's index."),
          ("ci", "bool, default=False",
           "Add ``<measure>_low`` / ``<measure>_high`` for every calibration error: the 95 % interval "
           "of :func:`calibcourse.stats.interval`, whose estimate (bias-corrected) replaces the plug-in value."),
          ("n_boot", "int, default=200", "Resamples of the bootstrap."),
          "seed",
          ("sece_bandwidth", "float, default=0.05", "Bandwidth of :func:`sece`."),
          returns=("pandas.DataFrame",
                   "One row, one column per measure: error, nll, brier, ece, mce, ace, classwise_ece, "
                   "debiased_ece, sece, smooth_ece. Concatenate the rows of several models with "
                   "``pandas.concat``."))
def calibration_report(probs, labels, n_bins: int = 15, name: str = "model", ci: bool = False,
                       n_boot: int = 200, seed: int = 0, sece_bandwidth: float = 0.05):
    """Every measure of :data:`calibcourse.metrics.MEASURES` for one model, as a one-row pandas DataFrame.

    Examples
    --------
    >>> probs = np.array([[0.9, 0.1], [0.8, 0.2], [0.3, 0.7], [0.4, 0.6]])
    >>> calibration_report(probs, np.array([0, 1, 1, 1]), n_bins=5).columns.tolist()[:5]
    ['error', 'nll', 'brier', 'ece', 'mce']
    >>> rng = np.random.default_rng(0)
    >>> p = rng.dirichlet(np.ones(3) / 3, 300); y = rng.integers(0, 3, 300)
    >>> r = calibration_report(p, y, ci=True, n_boot=20)
    >>> bool(r.loc["model", "ece_low"] <= r.loc["model", "ece"] <= r.loc["model", "ece_high"])
    True
    """
    import pandas as pd

    p = check_probs(probs)
    y = check_labels(labels, p.shape[0], 2 if p.ndim == 1 else p.shape[1])
    if isinstance(n_boot, bool) or not isinstance(n_boot, (int, np.integer)) or n_boot < 10:
        raise ValueError(f"n_boot must be an integer >= 10; got {n_boot!r}")
    row = {}
    for key, fn in M.MEASURES.items():
        params = inspect.signature(fn).parameters
        kw = {"n_bins": n_bins} if "n_bins" in params else {}
        if "bandwidth" in params:
            kw["bandwidth"] = sece_bandwidth
        if ci and key in M.CALIBRATION_ERRORS:
            r = stats.interval(fn, p, y, n_boot=n_boot, seed=seed, **kw)
            row[key], row[key + "_low"], row[key + "_high"] = r.estimate, r.low, r.high
        else:
            row[key] = fn(p, y, **kw)
    return pd.DataFrame([row], index=pd.Index([name], name="model"))
