"""The report's comparison on checked arrays: cross-fitting the candidate calibrators and choosing one.

:mod:`calibcourse.calibration.report.choice` checks what it is handed, then calls these; the page
(:mod:`calibcourse.calibration.report.page`) calls them on the arrays it has checked itself.
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np

from calibcourse.calibration import metrics as M
from calibcourse.calibration import stats
from calibcourse.calibration._validation import check_int, checked
from calibcourse.calibration.folds import fold_indices


def _view(logits, probs, view: str):
    if view == "logits":
        return logits
    if view == "logit1":
        return logits[:, 1] - logits[:, 0]
    if view == "probs":
        return probs
    return probs[:, 1]


def _fold_counts(y: np.ndarray, n_classes: int, folds: int, name: str = "labels", folds_name: str = "folds",
                 classes=None):
    """:func:`~calibcourse.calibration.report.choice.check_folds` on checked labels ``y``: two classes at
    least, each with ``folds`` samples (``classes``: how to call them in messages, default their indices)."""
    check_int(folds, folds_name, low=2)
    counts = np.bincount(y, minlength=n_classes)
    present = np.flatnonzero(counts)
    call = (lambda j: j) if classes is None else (lambda j: classes[j])
    if present.size < 2:
        raise ValueError(f"{name} contain one class only ({call(present[0]) if present.size else '-'}): "
                         "calibration needs at least two")
    if present.size < n_classes:
        missing = [call(j) for j in np.flatnonzero(counts == 0)[:10]]
        raise ValueError(f"{name} lack classes {missing} of the {n_classes} the scores have: every class "
                         "needs samples to calibrate on")
    worst = int(np.argmin(counts))
    if counts[worst] < folds:
        raise ValueError(f"{folds_name} = {folds}, but class {call(worst)} of {name} has only {counts[worst]} "
                         "samples: every class needs at least one sample per fold (lower folds or add samples)")
    return y


def _cross_fit(logits, probs, y, methods, folds, skipped, progress, separated: list | None = None) -> dict:
    """:func:`~calibcourse.calibration.report.choice.cross_fit` on checked arrays and its ``methods`` (the
    calibrators do not check each fold again); ``separated``
    is filled with the folds whose training part the model separates (every label its argmax)."""
    out = {name: np.empty_like(probs, dtype=np.float64) for name in methods}
    failed = {} if skipped is None else skipped
    right = probs.argmax(1) == y
    with checked():  # the labels are checked, every class holds at least `folds` samples
        splits = fold_indices(y, folds)
        for i, (train, test) in enumerate(_progress(splits, folds, "cross-fitting the calibrators", progress),
                                          start=1):
            if separated is not None and right[train].all():
                separated.append(i)
            _fit_fold(logits, probs, y, methods, failed, out, train, test, f"fold {i} of {folds}")
    return {name: q for name, q in out.items() if name not in failed}


def _fit_fold(logits, probs, y, methods, failed, out, train, test, fold: str) -> None:
    """Fit every method not failed yet on ``train``; its probabilities of ``test`` into ``out``."""
    from sklearn.base import clone

    k = probs.shape[1]
    for name, (cal, view) in methods.items():
        if name in failed:
            continue
        try:
            fitted = clone(cal).fit(_view(logits[train], probs[train], view), y[train], classes=range(k))
        except ValueError as exc:  # a map this fold cannot identify: the method is left out, with why
            failed[name] = f"not fitted on {fold}: {exc}"
            continue
        out[name][test] = fitted.predict_proba(_view(logits[test], probs[test], view))


class Choice(NamedTuple):
    """The recommendation of :func:`~calibcourse.calibration.report.choice.choose`.

    Attributes
    ----------
    name : str
        The recommended method.
    ece_change : Difference
        Its out-of-fold ECE minus the uncalibrated ECE on the same samples (paired; negative is better).
    error_change : Difference
        The same for the classification error: the cost.
    table : list of dict
        Per method (uncalibrated first): ``method``, ``ece``, ``ece_low``, ``ece_high``, ``nll``,
        ``brier``, ``error``, and ``nll_change`` and ``brier_change``: the paired differences
        from the model as given.
    nll_change, brier_change : Difference, optional
        The recommended method's out-of-fold NLL and Brier score minus the model's (paired).
    rejected : dict, optional
        ``{method: why}`` for every simpler method passed over: the measure, the rival and the
        paired interval that decided it.

    Examples
    --------
    >>> from calibcourse.calibration.stats import Difference
    >>> c = Choice("Platt scaling", Difference(-0.02, -0.03, -0.01, 0.95), Difference(0.0, -0.001, 0.001, 0.95), [])
    >>> c.name, c.ece_change.high < 0
    ('Platt scaling', True)
    """

    name: str
    ece_change: object
    error_change: object
    table: list
    nll_change: object = None
    brier_change: object = None
    rejected: dict = {}


class _Paired:
    """Paired bootstrap differences of the per-sample means (NLL, Brier) of every candidate at once: the
    resamples of :func:`calibcourse.calibration.stats.paired_difference` with the same seed."""

    def __init__(self, terms: dict, metric, n_boot: int, seed: int):
        self.names = list(terms)
        t = np.stack([terms[k] for k in self.names])
        self.n = t.shape[1]
        self.means = t.mean(1)
        self.reps = np.stack([t[:, i].mean(1) for i in stats.resample_indices(self.n, n_boot, seed)])
        self.bounds = stats.metric_range(metric, difference=True)

    def __call__(self, a: str, b: str):
        i, j = self.names.index(a), self.names.index(b)
        return stats.interval_from_replicates(self.means[i] - self.means[j], self.reps[:, i] - self.reps[:, j],
                                              0.95, "hull", self.n, lower=self.bounds[0], upper=self.bounds[1])

    def value(self, name: str) -> float:
        return float(self.means[self.names.index(name)])


def _worse(d) -> bool:
    """Decidedly worse: the paired interval of (candidate - rival) lies wholly above 0."""
    return stats.verdict(d.low, d.high, null=0.0, direction="above") == "held"


def _fmt(d, unit: str = "") -> str:
    return f"{d.estimate:+.4f} [{d.low:+.4f}, {d.high:+.4f}]{unit}"


def _choose(probs, oof: dict, y, n_bins: int, n_boot: int, seed: int) -> Choice:
    """:func:`~calibcourse.calibration.report.choice.choose` on checked arrays."""
    kw = {"n_bins": n_bins, "reliability": "positive_class" if probs.shape[1] == 2 else "top_label"}
    candidates = {"uncalibrated": probs, **oof}
    scores = {key: _Paired({name: stats.per_sample_terms(metric, q, y, {}) for name, q in candidates.items()},
                           metric, n_boot, seed) for key, metric in (("NLL", M.nll), ("Brier", M.brier))}
    table = []
    for name, q in candidates.items():
        ci = stats.interval(M.ece, q, y, n_boot=n_boot, seed=seed, **kw)
        table.append({"method": name, "ece": ci.plugin, "ece_low": ci.low, "ece_high": ci.high,
                      "nll": scores["NLL"].value(name), "brier": scores["Brier"].value(name), "error": M.error(q, y),
                      "nll_change": scores["NLL"](name, "uncalibrated"),
                      "brier_change": scores["Brier"](name, "uncalibrated")})
    rows = {r["method"]: r for r in table}
    rejected = {}
    safe = []
    for name in candidates:  # 1. not decidedly worse than the model as given
        worse = [key for key in scores if _worse(rows[name][f"{key.lower()}_change"])]
        if worse:
            key = worse[0]
            rejected[name] = f"{key} is decidedly above the model's own: {_fmt(rows[name][f'{key.lower()}_change'])}"
        else:
            safe.append(name)
    best = {key: min(safe, key=s.value) for key, s in scores.items()}  # 2. the lowest of each score
    chosen = None
    for name in safe:  # 3. the simplest not decidedly above either lowest
        worse = [(key, scores[key](name, best[key])) for key in scores if name != best[key]]
        worse = [(key, d) for key, d in worse if _worse(d)]
        if not worse:
            chosen = name
            break
        key, d = worse[0]
        rejected[name] = f"{key} is decidedly above that of {best[key]}: {_fmt(d)}"
    if chosen is None:  # the two scores disagree, each decidedly: the lower NLL
        chosen = best["NLL"]
    rejected = {name: why for name, why in rejected.items()
                if list(candidates).index(name) < list(candidates).index(chosen)}
    d_ece = stats.paired_difference(M.ece, candidates[chosen], probs, y, n_boot=n_boot, seed=seed, **kw)
    d_err = stats.paired_difference(M.error, candidates[chosen], probs, y, n_boot=n_boot, seed=seed)
    return Choice(chosen, d_ece, d_err, table, rows[chosen]["nll_change"], rows[chosen]["brier_change"], rejected)


def _progress(iterable, total: int, desc: str, on: bool):
    """``iterable`` with a tqdm bar on stderr when ``on`` (a plain line per stage where tqdm is missing)."""
    if not on:
        return iterable
    try:
        from tqdm.auto import tqdm
    except ImportError:
        import sys

        print(f"calibcourse report: {desc} ...", file=sys.stderr, flush=True)
        return iterable
    return tqdm(iterable, total=total, desc=desc, leave=False)
