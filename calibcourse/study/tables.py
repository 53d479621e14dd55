"""Summaries of cached runs for the chapters (chapter 2 onwards).

``run_summary`` turns one :class:`~calibcourse.study.results.RunResult` into the
numbers a chapter reports (error, NLL, ECE with a bootstrap interval, MCE, the
temperature fitted on the validation split); ``sweep_table`` aggregates a sweep
over seeds; the post-hoc, seed and paired tables fill the chapters' tables. The claims a
chapter tests live in :mod:`calibcourse.study.ledger`.
"""
from __future__ import annotations


import numpy as np

from calibcourse.calibration import metrics as M
from calibcourse.calibration import stats

__all__ = [
    "run_summary",
    "sweep_table",
    "seed_predictions",
    "fmt_ci",
    "fmt_difference",
    "post_hoc_table",
    "post_hoc_binary",
    "binary_scores",
    "post_hoc_view",
    "post_hoc_binary_view",
    "SEED_MEASURES",
    "seed_table",
    "seeds_view",
    "grid_choice_view",
    "paired_table",
    "comparisons_view",
]


def run_summary(result, n_bins: int = 15, n_boot: int = 1000, seed: int = 0) -> dict:
    """Test-split measures of a run, and the NLL-optimal temperature fitted on its validation split.

    Parameters
    ----------
    result : calibcourse.study.results.RunResult
        A run with ``val`` and ``test`` logits and labels.
    n_bins : int, default=15
        Number of bins.
    n_boot : int, default=1000
        Bootstrap resamples of the ECE's interval.
    seed : int, default=0
        Seed of the resampling.

    Returns
    -------
    dict
        ``error``, ``nll``, ``ece`` (the plug-in test ECE), ``ece_low``, ``ece_high`` (its 95 % interval from
        :func:`calibcourse.calibration.stats.interval`, bias-aware bootstrap), ``ece_plugin`` (the same
        plug-in value, kept for older readers), ``mce`` (plug-in), ``temperature``, ``ece_ts`` (the plug-in
        test ECE after temperature scaling), ``mean_conf``; fractions, NLL in nats.

    Examples
    --------
    >>> from calibcourse.calibration.synthetic import scaled_logits
    >>> from calibcourse.study.results import RunResult
    >>> z, y = scaled_logits(2000, 3, factor=3.0, seed=0)  # overconfident: T* = 3
    >>> r = RunResult({}, None, {"val_logits": z[:1000], "val_labels": y[:1000], "test_logits": z[1000:],
    ...                          "test_labels": y[1000:]})
    >>> s = run_summary(r, n_boot=100)
    >>> round(s["temperature"]), s["ece_ts"] < s["ece"], s["ece_low"] <= s["ece"] <= s["ece_high"]
    (3, True, True)
    >>> s["ece"] == s["ece_plugin"] == M.ece(r.probs("test"), r.labels("test"))
    True
    """
    from calibcourse.calibration.calibrators import TemperatureScaling

    p, y = result.probs("test"), result.labels("test")
    top = {"n_bins": n_bins, "reliability": "top_label"}  # top-label for a sigmoid run's (n,) too
    ci = stats.interval(M.ece, p, y, n_boot=n_boot, seed=seed, **top)
    ts = TemperatureScaling().fit(result.logits("val"), result.labels("val"))
    p_ts = ts.predict_proba(result.logits("test"))
    return {"error": M.error(p, y), "nll": M.nll(p, y), "ece": ci.estimate, "ece_low": ci.low,
            "ece_high": ci.high, "ece_plugin": ci.plugin, "mce": M.mce(p, y, **top),
            "temperature": ts.temperature_, "ece_ts": M.ece(p_ts, y, **top),
            "mean_conf": float(M.top_label(p)[0].mean())}


def seed_predictions(results: dict, split: str = "test"):
    """``([probs of each run], labels)`` on ``split`` of runs that share it (e.g. the seeds of one
    configuration), for :func:`calibcourse.calibration.stats.seeds_difference`.

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
    >>> from calibcourse.calibration.synthetic import scaled_logits
    >>> from calibcourse.study.results import RunResult
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
        Bootstrap resamples of every interval.

    Returns
    -------
    pandas.DataFrame
        Indexed by the sweep value, sorted: the mean and std over seeds of every measure of
        :func:`run_summary` (columns ``<measure>`` and ``<measure>_std``; ``ece_std`` is the
        spread of the seeds' plug-in ECEs) and ``n_seeds``; ``ece`` is the mean of the seeds'
        plug-in ECEs, ``ece_low`` and ``ece_high`` the 95 % interval of that *mean over seeds*
        (:func:`calibcourse.calibration.stats.seeds_interval`), not averages of per-seed intervals.

    Examples
    --------
    >>> from calibcourse.calibration.synthetic import scaled_logits
    >>> from calibcourse.study.results import RunResult
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




def fmt_difference(d, scale: float = 100.0, unit: str = "points", digits: int = 1) -> str:
    """``"+1.2 [+0.5, +1.9] points"``: a difference (:class:`calibcourse.calibration.stats.Difference`) with its
    interval, signed, in percentage points by default.

    Parameters
    ----------
    d : calibcourse.calibration.stats.Difference or sequence of float
        ``(estimate, low, high, ...)``.
    scale : float, default=100.0
        Multiplies the numbers (100: fractions to percent or percentage points).
    unit : str, default="points"
        Appended after a space (nothing if empty).
    digits : int, default=1
        Decimals.

    Returns
    -------
    str
        The signed estimate and interval.

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


def fmt_ci(value: float, low: float, high: float, scale: float = 100.0, digits: int = 1) -> str:
    """``"4.5 [3.7, 5.6]"``: an estimate and its interval, in percent by default.

    Parameters
    ----------
    value, low, high : float
        The estimate and its interval.
    scale : float, default=100.0
        Multiplies the numbers (100: fractions to percent or percentage points).
    digits : int, default=1
        Decimals.

    Returns
    -------
    str
        The estimate and its interval.

    Examples
    --------
    >>> fmt_ci(0.045, 0.037, 0.056)
    '4.5 [3.7, 5.6]'
    >>> fmt_ci(0.3127, 0.30, 0.33, scale=1, digits=3)
    '0.313 [0.300, 0.330]'
    """
    return f"{scale * value:.{digits}f} [{scale * low:.{digits}f}, {scale * high:.{digits}f}]"


def _post_hoc_row(model, method, p, y, n_bins: int, n_boot: int, seed: int, **ece_kwargs) -> dict:
    """The columns :func:`post_hoc_table` and :func:`post_hoc_binary` share, for one calibrated model."""
    ci = stats.interval(M.ece, p, y, n_boot=n_boot, seed=seed, n_bins=n_bins, **ece_kwargs)
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
        Long: columns model, method, ece (plug-in), ece_low, ece_high (its interval,
        :func:`calibcourse.calibration.stats.interval`), ece_plugin (the same value), error, nll
        (fractions, nats); :func:`post_hoc_view` formats it.
    predictions : dict
        Only with ``return_predictions``: ``{(model, method): test probabilities}``.

    Examples
    --------
    An underconfident network (``T* = 1/2``), its temperature fitted on the validation half:

    >>> from calibcourse.calibration.synthetic import scaled_logits
    >>> from calibcourse.study.results import RunResult
    >>> from calibcourse.calibration.calibrators import TemperatureScaling
    >>> z, y = scaled_logits(3000, 4, factor=0.5, seed=2)
    >>> net = RunResult({}, None, dict(val_logits=z[:1500], val_labels=y[:1500], test_logits=z[1500:],
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
        Indexed by (model, method), "uncalibrated" first: ``ece`` (plug-in), ``ece_low``, ``ece_high``
        (:func:`calibcourse.calibration.stats.interval`), ``ece_plugin``, ``mce`` (plug-in), ``nll``, ``error`` (the
        names of :func:`post_hoc_table`, plus ``mce``), ``test_errors``, ``n_test``, ``n_val``;
        :func:`post_hoc_binary_view` formats it.
    predictions : dict
        ``{(model, method): (probs, labels)}`` of the test split.

    Examples
    --------
    >>> import pandas as pd
    >>> from calibcourse.calibration.calibrators import PlattScaling
    >>> from calibcourse.study.results import RunResult
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
    predictions, n_val = {}, {}
    for model_name, r in models.items():
        s_val, y_val, s_test, y_test = score(r, "val"), r.labels("val"), score(r, "test"), r.labels("test")
        n_val[model_name] = len(y_val)
        predictions[(model_name, "uncalibrated")] = (s_test, y_test)
        for method_name, method in methods.items():  # P(y = 1)
            predictions[(model_name, method_name)] = (method.clone().fit(s_val, y_val).predict_proba(s_test)[:, 1],
                                                      y_test)
    return binary_scores(predictions, n_val=n_val, n_bins=n_bins, n_boot=n_boot, seed=seed), predictions


def binary_scores(predictions: dict, n_val: dict | None = None, n_bins: int = 15, n_boot: int = 1000, seed: int = 0):
    """The table of :func:`post_hoc_binary` from test predictions already made: every binary measure, top-label.

    Parameters
    ----------
    predictions : dict
        ``{(model, method): (P(y = 1) on the test split, labels)}``, in the table's order.
    n_val : dict, optional
        ``{model: calibration samples}``, the ``n_val`` column (NaN without it).
    n_bins : int, default=15
        Bins of the ECE and MCE.
    n_boot : int, default=1000
        Bootstrap resamples of each ECE's interval.
    seed : int, default=0
        Seed of the resampling.

    Returns
    -------
    pandas.DataFrame
        The table of :func:`post_hoc_binary`, indexed by (model, method).

    Examples
    --------
    >>> y = np.array([0, 0, 1, 1, 1, 0, 1, 0])
    >>> p = np.array([0.1, 0.6, 0.8, 0.3, 0.9, 0.2, 0.7, 0.4])
    >>> t = binary_scores({("net", "uncalibrated"): (p, y)}, n_val={"net": 100}, n_boot=20)
    >>> t.loc[("net", "uncalibrated"), ["test_errors", "n_test", "n_val"]].tolist()
    [2, 8, 100]
    >>> bool(np.isclose(t.ece.iloc[0], M.ece(p, y, reliability="top_label")))
    True
    """
    import pandas as pd

    if not predictions:
        raise ValueError("predictions is empty: give at least one {(model, method): (probs, labels)}")
    rows = []
    for (model_name, method_name), (p, y) in predictions.items():  # the chapter's table is top-label: asked for
        row = _post_hoc_row(model_name, method_name, p, y, n_bins, n_boot, seed, reliability="top_label")
        rows.append({**row, "mce": M.mce(p, y, n_bins=n_bins, reliability="top_label"),
                     "test_errors": int(round(row["error"] * len(y))), "n_test": len(y),
                     "n_val": (n_val or {}).get(model_name, float("nan"))})
    return pd.DataFrame(rows).set_index(["model", "method"])


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
    ...                   "ece_high": [0.015], "mce": [0.2], "nll": [0.05], "test_errors": [7]}
    ...                  ).set_index(["model", "method"])
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


def post_hoc_view(long, methods, digits: int = 2, error: bool = False):
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
    error : bool, default=False
        Also show the test error: the index becomes (model, measure), the ``ECE (%)`` row of each
        model (with its interval) followed by its ``error (%)`` row (a method that moves the argmax
        shows it there).

    Returns
    -------
    pandas.DataFrame
        Indexed by model (in the order of ``long``), or by (model, measure) with ``error``; one
        string column per method.

    Examples
    --------
    >>> import pandas as pd
    >>> long = pd.DataFrame({"model": ["m", "m"], "method": ["TS", "none"], "ece": [0.01, 0.05],
    ...                      "ece_low": [0.005, 0.04], "ece_high": [0.02, 0.06]})
    >>> post_hoc_view(long, ["none", "TS"]).loc["m"].tolist()
    ['5.00 [4.00, 6.00]', '1.00 [0.50, 2.00]']
    >>> view = post_hoc_view(long.assign(error=[0.2, 0.2]), ["none", "TS"], error=True)
    >>> view.index.tolist(), view.loc[("m", "error (%)")].tolist()
    ([('m', 'ECE (%)'), ('m', 'error (%)')], ['20.00', '20.00'])
    """
    import pandas as pd

    cells = long.assign(cell=[fmt_ci(e, lo, hi, digits=digits)
                              for e, lo, hi in zip(long["ece"], long["ece_low"], long["ece_high"])])
    view = cells.pivot(index="model", columns="method", values="cell")[list(methods)]
    view.columns.name = "test ECE (%) [95 % interval]"
    order = list(dict.fromkeys(long["model"]))
    view = view.reindex(order)
    if not error:
        return view
    ece_name = "ECE (%)"
    errors = (long.assign(cell=[f"{100 * e:.{digits}f}" for e in long["error"]])
              .pivot(index="model", columns="method", values="cell")[list(methods)].reindex(order))
    both = pd.concat({ece_name: view, "error (%)": errors}, names=["measure", "model"])
    both = both.swaplevel().reindex(pd.MultiIndex.from_product([order, [ece_name, "error (%)"]],
                                                               names=["model", "measure"]))
    both.columns.name = None
    return both


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
        ``{method: [probabilities of each seed]}``, for :func:`calibcourse.calibration.stats.seeds_difference`.

    Examples
    --------
    >>> import pandas as pd
    >>> from calibcourse.study.results import RunResult
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
            raise ValueError(
                f"post_hoc[{name!r}] calibrates {base!r}, which is not one of methods: {', '.join(methods)}"
            )
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
        :func:`calibcourse.study.experiments.ch5_choice` returns (each table with the grid parameter's
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
        parts.append(
            pd.DataFrame(
                {
                    "baseline": family,
                    "value": [f"{param} {v:g}" for v in t[param]],
                    "val error (%)": (100 * t["val error"]).round(2).to_numpy(),
                    "val ECE (%)": (100 * t["val ECE"]).round(2).to_numpy(),
                    "eligible": t["eligible"].to_numpy(),
                    "chosen": np.where(np.isclose(t[param], c["chosen"]), "<-", ""),
                }
            )
        )
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
        ``{label: metric}`` compared by :func:`calibcourse.calibration.stats.paired_difference` (default: ECE and
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
        ``{(name, seed, label): calibcourse.calibration.stats.Difference}``.

    Examples
    --------
    >>> import pandas as pd
    >>> from calibcourse.study.results import RunResult
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
    unit, and the verdict of "A is below B" (:func:`calibcourse.calibration.stats.verdict`).

    Parameters
    ----------
    tests : dict
        ``{(measure, A, B): calibcourse.calibration.stats.Difference}``.
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


# --------------------------------------------------------------------------- chapter 5: seed-paired
def _final_mean_gamma(result) -> float:
    """The last epoch's mean gamma on the test samples (NaN for a run without a gamma-Net)."""
    h = result.history
    if h is None or "gamma_mean" not in getattr(h, "columns", ()):
        return float("nan")
    return float(h["gamma_mean"].iloc[-1])


def diagnosis_table(arms: dict, reference: dict, labels, n_boot: int = 200, seed: int = 0,
                    reference_name: str = "CE"):
    """Arms of a diagnosis against a reference method, paired by seed (chapter 5's diagnosis).

    Every arm's seed ``s`` is compared with the reference's seed ``s`` on the same test samples
    by :func:`calibcourse.calibration.stats.paired_seeds_difference` (test error and 15-bin ECE):
    the mean of the per-seed differences, its 95 % interval and the sign count.

    Parameters
    ----------
    arms : dict
        ``{arm: {seed: RunResult}}``; at least one arm, each with at least one seed.
    reference : dict
        ``{seed: RunResult}`` of the reference method; it must hold every seed of every arm.
    labels : array_like of shape (n,)
        The test labels every run shares.
    n_boot : int, default=200
        Bootstrap resamples of the test samples (0: the seeds alone).
    seed : int, default=0
        Seed of the bootstrap.
    reference_name : str, default="CE"
        The reference's name in the column titles.

    Returns
    -------
    table : pandas.DataFrame
        Indexed by arm: ``seeds``, ``Error (%)`` and ``ECE (%)`` (means over the arm's seeds),
        ``final mean γ`` (mean over seeds of the last epoch's mean gamma; NaN without a
        gamma-Net), then for error and ECE the difference to the reference in points with its
        interval and the sign count (``"worse in k of n seeds"``).
    tests : dict
        ``{(arm, "Error" or "ECE"): calibcourse.calibration.stats.PairedSeeds}``.

    Examples
    --------
    >>> import pandas as pd
    >>> from calibcourse.study.results import RunResult
    >>> rng = np.random.default_rng(0)
    >>> y = rng.integers(0, 3, 600)
    >>> def fake(scale, s):
    ...     z = np.eye(3)[y] * 2 + np.random.default_rng(s).normal(size=(600, 3))
    ...     return RunResult({}, pd.DataFrame(), {"test_logits": scale * z, "test_labels": y})
    >>> ce = {s: fake(4.0, s) for s in range(3)}          # overconfident
    >>> arm = {s: fake(2.0, s) for s in range(3)}         # the same argmax, calibrated
    >>> table, tests = diagnosis_table({"soft": arm}, ce, y, n_boot=50)
    >>> int(table.loc["soft", "seeds"]), tests[("soft", "Error")].estimate
    (3, 0.0)
    >>> table.loc["soft", "ECE: seeds"]
    'worse in 0 of 3 seeds'
    """
    import pandas as pd

    if not isinstance(arms, dict) or not arms:
        raise ValueError(f"arms must be a non-empty dict {{arm: {{seed: RunResult}}}}; got {arms!r}")
    if not isinstance(reference, dict) or not reference:
        raise ValueError(f"reference must be a non-empty dict {{seed: RunResult}}; got {reference!r}")
    y = np.asarray(labels)
    rows, tests = [], {}
    for arm, by_seed in arms.items():
        if not isinstance(by_seed, dict) or not by_seed:
            raise ValueError(f"arms[{arm!r}] must be a non-empty dict {{seed: RunResult}}; got {by_seed!r}")
        missing = [s for s in by_seed if s not in reference]
        if missing:
            raise ValueError(f"reference has no seed {missing[0]!r} of arm {arm!r}: the comparison is paired "
                             f"by seed; reference holds seeds {sorted(reference)}")
        order = sorted(by_seed)
        for s in order:
            for who, r in ((arm, by_seed[s]), (reference_name, reference[s])):
                if not np.array_equal(r.labels(), y):
                    raise ValueError(f"labels differ from the test labels of {who!r}, seed {s}: the runs must "
                                     "share one test set")
        p_arm = [by_seed[s].probs() for s in order]
        p_ref = [reference[s].probs() for s in order]
        row = {"arm": arm, "seeds": len(order),
               "Error (%)": 100 * float(np.mean([M.error(p, y) for p in p_arm])),
               "ECE (%)": 100 * float(np.mean([M.ece(p, y) for p in p_arm])),
               "final mean γ": float(np.mean([_final_mean_gamma(by_seed[s]) for s in order]))}
        for label, metric in (("Error", M.error), ("ECE", M.ece)):
            d = stats.paired_seeds_difference(metric, p_arm, p_ref, y, n_boot=n_boot, seed=seed)
            tests[(arm, label)] = d
            row[f"{label} - {reference_name} (points)"] = fmt_difference(d, unit="", digits=2)
            row[f"{label}: seeds"] = d.sign_text
        rows.append(row)
    return pd.DataFrame(rows).set_index("arm"), tests


def seed_paired_view(tests: dict, units: dict | None = None, nulls: dict | None = None):
    """Seed-paired comparisons as a table: A - B with its 95 % interval, the sign count and the
    verdict of "A - B lies below its bound" (chapter 5's comparison; :func:`comparisons_view`
    without seeds).

    Parameters
    ----------
    tests : dict
        ``{(measure, A, B): calibcourse.calibration.stats.PairedSeeds}``.
    units : dict, optional
        ``{measure: (scale, unit)}``; by default NLL in nats (scale 1), every other measure in
        percentage points.
    nulls : dict, optional
        ``{(measure, A, B): bound or None}``: the bound a row's claim puts on A - B (a claim with a
        size, e.g. 0.01 for "costs less than 1 point"); None for a row that is the cost of another
        and tests nothing (its verdict is blank). Every other row is tested against 0.

    Returns
    -------
    pandas.DataFrame
        Indexed by (measure, A, B): ``A - B [95 % interval]``, ``A above B in`` (``"worse in k
        of n seeds"``: the seeds where A's measure is higher), ``claim: A - B below`` (the bound,
        in the row's unit) and ``verdict``.

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> y = rng.integers(0, 2, 500)
    >>> a = [np.eye(2)[y] * 0.6 + 0.2 for _ in range(3)]   # correct at confidence 0.8
    >>> b = [np.eye(2)[y] * 0.9 + 0.05 for _ in range(3)]  # correct at confidence 0.95
    >>> d = stats.paired_seeds_difference(M.ece, a, b, y, n_boot=0)
    >>> seed_paired_view({("ECE", "A", "B"): d}).loc[("ECE", "A", "B")].tolist()
    ['+15.00 [+15.00, +15.00] points', 'worse in 3 of 3 seeds', '0', 'not held']
    >>> seed_paired_view({("ECE", "A", "B"): d}, nulls={("ECE", "A", "B"): 0.2}).iloc[0, 2:].tolist()
    ['+20.00', 'held']
    """
    import pandas as pd

    if not isinstance(tests, dict) or not tests:
        raise ValueError(f"tests must be a non-empty dict {{(measure, A, B): PairedSeeds}}; got {tests!r}")
    units = {"NLL": (1.0, "nats"), **(units or {})}
    rows = []
    for key, d in tests.items():
        if not (isinstance(key, tuple) and len(key) == 3):
            raise ValueError(f"tests' keys must be (measure, A, B); got {key!r}")
        if not hasattr(d, "n_positive"):
            raise ValueError(f"tests[{key!r}] must be a stats.PairedSeeds (paired_seeds_difference); "
                             f"got {type(d).__name__}")
        measure, a, b = key
        scale, unit = units.get(measure, (100.0, "points"))
        digits = 3 if scale == 1 else 2
        null = (nulls or {}).get(key, 0.0)
        rows.append(
            {
                "measure": measure,
                "A": a,
                "B": b,
                "A - B [95 % interval]": fmt_difference(d, scale=scale, unit=unit, digits=digits),
                "A above B in": d.sign_text,
                "claim: A - B below": "" if null is None else ("0" if null == 0 else f"{scale * null:+.{digits}f}"),
                "verdict": "" if null is None else stats.verdict(d.low, d.high, null=null),
            }
        )
    return pd.DataFrame(rows).set_index(["measure", "A", "B"])


__all__ += ["diagnosis_table", "seed_paired_view"]
