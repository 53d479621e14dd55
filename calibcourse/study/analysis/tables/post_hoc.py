"""The post-hoc tables (chapters 3 and 4): every calibrator on every network, with intervals."""
from __future__ import annotations

from calibcourse.calibration import metrics as M
from calibcourse.calibration import stats
from calibcourse.study.analysis.tables.summaries import fmt_ci, run_classes

__all__ = ["post_hoc_table", "binary_scores", "post_hoc_binary_view", "post_hoc_view"]


def _post_hoc_row(model, method, p, y, n_bins: int, n_boot: int, seed: int, **ece_kwargs) -> dict:
    """The columns :func:`post_hoc_table` and :func:`binary_scores` share, for one calibrated model."""
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
    >>> from calibcourse.study.training.results import RunResult
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
            p = (M.logits_to_probs(z_test) if method is None
                 else method.clone().fit(z_val, y_val, classes=run_classes(z_val)).predict_proba(z_test))
            predictions[(model_name, method_name)] = p
            rows.append(_post_hoc_row(model_name, method_name, p, y_test, n_bins, n_boot, seed))
    return (pd.DataFrame(rows), predictions) if return_predictions else pd.DataFrame(rows)


def binary_scores(predictions: dict, n_val: dict | None = None, n_bins: int = 15, n_boot: int = 1000, seed: int = 0):
    """The table of :func:`binary_scores` from test predictions already made: every binary measure, top-label.

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
        The table of :func:`binary_scores`, indexed by (model, method).

    Examples
    --------
    >>> import numpy as np
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
    """:func:`binary_scores`'s table for the page: units in the headers, the ECE with its interval.

    Parameters
    ----------
    table : pandas.DataFrame
        The table of :func:`binary_scores`.
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
        "ECE (%) [95 % interval]": [fmt_ci(e, lo, hi, digits=digits) for e, lo, hi
                                    in zip(table["ece"], table["ece_low"], table["ece_high"], strict=True)],
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
                              for e, lo, hi in zip(long["ece"], long["ece_low"], long["ece_high"], strict=True)])
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
