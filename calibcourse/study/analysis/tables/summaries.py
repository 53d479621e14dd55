"""One run's numbers, a sweep over seeds, and how a difference or an interval is written."""
from __future__ import annotations

import numpy as np

from calibcourse.calibration import metrics as M
from calibcourse.calibration import stats

__all__ = ["run_summary", "seed_predictions", "sweep_table", "fmt_difference", "fmt_ci", "method_label", "run_classes"]


def run_classes(scores) -> range:
    """The classes of a run's scores: a run's labels are its columns' indices (two classes for one column).

    Passed to a calibrator's ``fit`` (``classes=``), so that a small split that misses a class
    (a smoke run's, a fold's) still names every column.

    Parameters
    ----------
    scores : array_like of shape (n,) or (n, K)
        A run's logits or probabilities.

    Returns
    -------
    range
        ``range(K)``, or ``range(2)`` for one column.

    Examples
    --------
    >>> run_classes(np.zeros((3, 10))), run_classes(np.zeros(3))
    (range(0, 10), range(0, 2))
    """
    scores = np.asarray(scores)
    return range(scores.shape[1]) if scores.ndim == 2 and scores.shape[1] > 1 else range(2)


def run_summary(result, n_bins: int = 15, n_boot: int = 1000, seed: int = 0) -> dict:
    """Test-split measures of a run, and the NLL-optimal temperature fitted on its validation split.

    Parameters
    ----------
    result : calibcourse.study.training.results.RunResult
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
    >>> from calibcourse.study.training.results import RunResult
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
    z = result.logits("val")
    ts = TemperatureScaling().fit(z, result.labels("val"), classes=run_classes(z))
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
    >>> from calibcourse.study.training.results import RunResult
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
    >>> from calibcourse.study.training.results import RunResult
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




def fmt_signed(value: float, digits: int) -> str:
    """``value`` with its sign and ``digits`` decimals; one that rounds to zero has no sign (never ``-0.0``).

    >>> fmt_signed(1.25, 1), fmt_signed(-0.04, 1), fmt_signed(-0.04, 2), fmt_signed(0.0, 1)
    ('+1.2', '0.0', '-0.04', '0.0')
    """
    text = f"{value:+.{digits}f}"
    return text[1:] if float(text) == 0 else text


def fmt_difference(d, scale: float = 100.0, unit: str = "points", digits: int = 1, null: float | None = None,
                   signed: bool = True) -> str:
    """``"+1.2 [+0.5, +1.9] points"``: a difference (:class:`calibcourse.calibration.stats.Difference`) with its
    interval, signed, in percentage points by default.

    The one formatting of an interval in the book: the chapters' tables and prose, the ledger and
    "What held" all print through it, so that one interval never reads two ways. A number that rounds
    to zero has no sign (never ``-0.0``). Given the claim's boundary ``null``, an interval end within one
    display unit of it gets one more decimal, and so do the other two numbers (up to two more), so that
    the reader sees on which side of the boundary the end lies. The same holds for 0, the boundary of every
    signed difference: an end that is not 0 never prints as ``0.0`` (``-0.013`` points reads ``-0.01``, not
    ``0.0``).

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
    null : float, optional
        The boundary a claim tests the interval against (in the numbers' own units, before ``scale``).
    signed : bool, default=True
        Print the signs (False for a quantity that is not a difference, e.g. a temperature).

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
    >>> fmt_difference((0.0047, 0.0001, 0.0093), null=0.01)   # an end 0.07 points from a 1-point margin
    '+0.47 [+0.01, +0.93] points'
    >>> fmt_difference((0.0073, -0.00013, 0.0145), null=0.01)   # an end just below 0 keeps its sign
    '+0.73 [-0.01, +1.45] points'
    >>> fmt_difference((-0.0004, -0.0012, 0.0003), unit="")
    '-0.04 [-0.12, +0.03]'
    """
    est, low, high = (float(v) for v in d[:3])
    base = digits

    def close(boundary, exact):  # an end within one display unit of the boundary (on it: only if exact)
        gaps = [abs(scale * (v - boundary)) for v in (low, high)]
        return any((exact or g > 0) and g < 10 ** -digits for g in gaps)

    while digits < base + 2 and ((null is not None and close(null, True)) or (signed and close(0.0, False))):
        digits += 1
    unit = f" {unit}" if unit else ""

    def f(v):
        return fmt_signed(scale * v, digits) if signed else f"{scale * v:.{digits}f}"

    return f"{f(est)} [{f(low)}, {f(high)}]{unit}"


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


#: the Greek letters that runs' labels spell out (a label is a name in the cache's registry, in ASCII)
_GREEK = {"gamma": "γ", "epsilon": "ε", "alpha": "α"}


def method_label(name: str) -> str:
    """A method's name as a page shows it: a run label's spelled-out Greek letters as letters.

    Parameters
    ----------
    name : str
        A method's label in the run registry, e.g. ``"FLgamma-SECE"``.

    Returns
    -------
    str

    Examples
    --------
    >>> method_label("FLgamma-SECE"), method_label("Focal (gamma 3)"), method_label("CE + TS")
    ('FLγ-SECE', 'Focal (γ 3)', 'CE + TS')
    """
    for word, letter in _GREEK.items():
        name = name.replace(word, letter)
    return name
