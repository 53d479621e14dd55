"""Tables over seeds (chapters 5 and 6): each method's measures per seed, the grid's choice, the
paired comparisons."""
from __future__ import annotations

import numpy as np

from calibcourse.calibration import metrics as M
from calibcourse.study.analysis.tables.summaries import method_label, run_classes

__all__ = ["SEED_MEASURES", "seed_table", "seeds_view", "grid_choice_view"]


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
    >>> from calibcourse.study.training.results import RunResult
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
                    z = r.logits("val")
                    fitted = calibrator.clone().fit(z, r.labels("val"), classes=run_classes(z))
                    add(name, seed, fitted.predict_proba(r.logits(split)), float("nan"))
    return pd.DataFrame(rows), probs


def seeds_view(per_seed, digits: int = 2):
    """:func:`seed_table` as a page shows it: a row per method (its name as :func:`method_label` writes it),
    its number of seeds, each measure as "mean ± std" over seeds (the mean alone for a single seed), the
    training time per epoch as a mean (blank for a post-hoc row).

    Parameters
    ----------
    per_seed : pandas.DataFrame
        The first table of :func:`seed_table`.
    digits : int, default=2
        Decimals.

    Returns
    -------
    pandas.DataFrame
        Indexed by method, in the order of ``per_seed``: ``seeds`` (a count), then strings.

    Examples
    --------
    >>> import pandas as pd
    >>> per_seed = pd.DataFrame({"method": ["CE", "CE"], "seed": [0, 1], "ECE (%)": [4.0, 6.0],
    ...                          "train s/epoch": [0.5, 0.7]})
    >>> view = seeds_view(per_seed)
    >>> int(view.loc["CE", "seeds"]), view.loc["CE"].tolist()[1:]
    (2, ['5.00 ± 1.41', '0.60'])
    """
    import pandas as pd

    order = list(dict.fromkeys(per_seed["method"]))
    cols = [c for c in per_seed.columns if c not in ("method", "seed", "train s/epoch")]
    g = per_seed.groupby("method", sort=False)
    mean, std = g[cols].mean().loc[order], g[cols].std(ddof=1).loc[order]  # NaN for a single seed
    shown = pd.DataFrame({"seeds": g.size().loc[order].to_numpy(),
                          **{c: [f"{m:.{digits}f}" + ("" if np.isnan(s) else f" ± {s:.{digits}f}")
                                 for m, s in zip(mean[c], std[c], strict=True)] for c in cols}},
                         index=pd.Index([method_label(m) for m in order], name="method"))
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
        :func:`calibcourse.study.analysis.adam.adam_choice` returns (each table with the grid parameter's
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
    [['Focal', 'γ 1', 3.0, ''], ['Focal', 'γ 3', 1.0, '<-']]
    """
    import pandas as pd

    parts = []
    for family, c in choice.items():
        param, t = params[family], c["table"]
        parts.append(
            pd.DataFrame(
                {
                    "baseline": method_label(family),
                    "value": [method_label(f"{param} {v:g}") for v in t[param]],
                    "val error (%)": (100 * t["val error"]).round(2).to_numpy(),
                    "val ECE (%)": (100 * t["val ECE"]).round(2).to_numpy(),
                    "eligible": t["eligible"].to_numpy(),
                    "chosen": np.where(np.isclose(t[param], c["chosen"]), "<-", ""),
                }
            )
        )
    return pd.concat(parts, ignore_index=True).set_index(["baseline", "value"])
