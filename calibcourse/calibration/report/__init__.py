"""Every measure of one model's predictions (chapter 1), and the report of ``calibcourse report``.

:func:`calibration_report` is one model's measures as a table (pandas). The rest is what the
``calibcourse report`` command (:mod:`calibcourse.calibration.cli`) does with a model's outputs,
in parts a chapter can call: :func:`as_logits_and_probs` reads logits or probabilities (and asks
where the numbers cannot tell), :func:`cross_fit` calibrates every sample out of fold with every
method of :func:`candidate_methods` the data can support (:func:`min_samples`), :func:`choose`
picks the simplest candidate whose out-of-fold NLL and Brier score are not decidedly above the
lowest ones, with the paired intervals of its changes, :func:`report_html` writes the page, and
:func:`save` / :func:`load` keep the recommended calibrator in a JSON file.
"""
from __future__ import annotations

import inspect

from calibcourse.calibration import metrics as M
from calibcourse.calibration import stats
from calibcourse.calibration._validation import check_int, check_labels, check_probs, checked
from calibcourse.calibration.report.choice import (
    KINDS,
    VIEWS,
    Choice,
    as_logits_and_probs,
    candidate_methods,
    check_folds,
    choose,
    cross_fit,
    min_samples,
)
from calibcourse.calibration.report.page import MAX_BOOT_DRAWS, MAX_FIT_ROWS, MAX_FIT_VALUES, report_html
from calibcourse.calibration.report.saved import FORMAT, FittedCalibration, load, save

__all__ = ["calibration_report", "as_logits_and_probs", "candidate_methods", "min_samples", "check_folds",
           "cross_fit", "choose",
           "Choice", "FittedCalibration", "save", "load", "report_html", "VIEWS", "KINDS", "FORMAT",
           "MAX_FIT_ROWS", "MAX_FIT_VALUES", "MAX_BOOT_DRAWS"]


def calibration_report(probs, labels, n_bins: int = 15, name: str = "model", ci: bool = False,
                       n_boot: int = 200, seed: int = 0, sece_bandwidth: float = 0.05):
    """Every measure of :data:`calibcourse.calibration.metrics.MEASURES` for one model, as a one-row pandas DataFrame.

    Parameters
    ----------
    probs : array_like of shape (n, K) or (n,)
        Probabilities: a row per sample that sums to 1, or P(y = 1) of a binary problem.
    labels : array_like of shape (n,)
        Integer class labels (the column indices), or class names (sorted, they name the columns).
    n_bins : int, default=15
        Number of bins.
    name : str, default="model"
        The row's index.
    ci : bool, default=False
        Add ``<measure>_low`` / ``<measure>_high`` for every calibration error: the 95 % interval of
        :func:`calibcourse.calibration.stats.interval`, whose estimate (bias-corrected) replaces the plug-in
        value.
    n_boot : int, default=200
        Resamples of the bootstrap.
    seed : int, default=0
        Seed of the resampling.
    sece_bandwidth : float, default=0.05
        Bandwidth of :func:`sece`.

    Returns
    -------
    pandas.DataFrame
        One row, one column per measure: error, nll, brier, ece, mce, ace, classwise_ece, debiased_ece, sece,
        smooth_ece. Concatenate the rows of several models with ``pandas.concat``.

    Examples
    --------
    >>> import numpy as np
    >>> probs = np.array([[0.9, 0.1], [0.8, 0.2], [0.3, 0.7], [0.4, 0.6]])
    >>> calibration_report(probs, np.array([0, 1, 1, 1]), n_bins=5).columns.tolist()[:5]
    ['error', 'nll', 'brier', 'ece', 'mce']
    >>> rng = np.random.default_rng(0)
    >>> p = rng.dirichlet(np.ones(3) / 3, 300); y = rng.integers(0, 3, 300)
    >>> r = calibration_report(p, y, ci=True, n_boot=20)
    >>> bool(r.loc["model", "ece_low"] <= r.loc["model", "ece"] <= r.loc["model", "ece_high"])
    True
    """
    try:
        import pandas as pd  # optional: only this table needs it
    except ImportError:
        raise ImportError(
            "calibration_report returns a pandas DataFrame: pip install 'calibcourse[table]' (or pandas); "
            "calibcourse report and the rest of the toolkit need no pandas"
        ) from None

    p = check_probs(probs)
    y = check_labels(labels, p.shape[0], 2 if p.ndim == 1 else p.shape[1])
    check_int(n_boot, "n_boot", low=10)
    row = {}
    with checked():  # each measure on the arrays checked once, above
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
