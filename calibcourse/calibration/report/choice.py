"""What ``calibcourse report`` does before its page: read logits or probabilities, cross-fit every
candidate calibrator, choose the simplest one that is not decidedly worse."""
from __future__ import annotations

from typing import NamedTuple

import numpy as np

from calibcourse.calibration import metrics as M
from calibcourse.calibration import stats
from calibcourse.calibration._validation import check_int, check_labels, check_probs, checked
from calibcourse.calibration._arrays import softmax_rows, two_columns, two_logits
from calibcourse.calibration.folds import fold_indices

__all__ = ["VIEWS", "KINDS", "as_logits_and_probs", "candidate_methods", "check_folds", "cross_fit", "Choice",
           "choose"]

#: What a calibrator of :func:`candidate_methods` takes from the scores: the logit matrix, the single
#: logit of class 1 (binary), the probability matrix, or P(y = 1) (binary).
VIEWS = ("logits", "logit1", "probs", "prob1")
#: The kinds of scores a report takes (``"auto"``: probabilities where they can be, else logits).
KINDS = ("auto", "logits", "probs")


def as_logits_and_probs(scores, kind: str = "auto", name: str = "scores", _probs: bool = True):
    """The logit matrix and the probability matrix, both ``(n, K)``, of a model's outputs.

    Parameters
    ----------
    scores : array_like of shape (n, K) or (n,)
        Logits or probabilities; ``(n,)`` is binary: P(y = 1), or the single logit of a sigmoid.
    kind : {"auto", "logits", "probs"}, default="auto"
        What ``scores`` are; ``"auto"``: probabilities if every value lies in [0, 1] (and, for a
        matrix, every row sums to 1), else logits.
    name : str, default="scores"
        The name of ``scores`` in error messages (e.g. a command-line option).

    Returns
    -------
    logits : numpy.ndarray of shape (n, K)
        Logits (``log(p + 1e-12)`` for probabilities, :func:`calibcourse.calibration.metrics.probs_to_logits`;
        ``[0, z]`` for a single logit ``z``).
    probs : numpy.ndarray of shape (n, K)
        ``softmax(logits)``, or the probabilities given.
    kind : str
        ``"logits"`` or ``"probs"``: what ``scores`` were taken to be.

    Examples
    --------
    >>> z, p, kind = as_logits_and_probs(np.array([0.2, 0.9]))
    >>> kind, p
    ('probs', array([[0.8, 0.2],
           [0.1, 0.9]]))
    >>> as_logits_and_probs(np.array([[1.0, 0.0]]))[0].round(2)  # log(p + 1e-12), as scikit-learn
    array([[  0.  , -27.63]])
    >>> as_logits_and_probs(np.array([-1.0, 2.0]))[2]
    'logits'
    """
    from scipy.special import expit

    from calibcourse.calibration._validation import (check_choice, check_finite, check_logits, check_prob_values,
                                                     input_eps, sum_tolerance)

    check_choice(kind, KINDS, "kind")
    with checked():  # the type and the shape; the values once, below
        s = check_logits(scores, name, ndim=None, keep_float32=True)
    if s.ndim not in (1, 2) or (s.ndim == 2 and s.shape[1] < 2):
        raise ValueError(f"{name} must have shape (n, K) with K >= 2, or (n,) for a binary model; "
                         f"got shape {s.shape}")
    lo, hi = s.min(), s.max()
    in_unit = lo >= 0 and hi <= 1
    # the row sums, only where they decide or are checked (not a pass over logits given as logits)
    sums = s.sum(1, dtype=np.float64) if s.ndim == 2 and (kind == "probs" or (kind == "auto" and in_unit)) else None
    if kind == "auto":  # probabilities by the same test as check_probs: in [0, 1], rows summing to 1
        tol = sum_tolerance(input_eps(scores), s.shape[1] if s.ndim == 2 else 2)
        kind = "probs" if in_unit and (sums is None or np.abs(sums - 1).max() <= tol) else "logits"
    if kind == "probs":
        check_prob_values(s, name, lo, hi, row_sums=sums, eps=input_eps(scores))
        p = two_columns(s) if s.ndim == 1 else s / sums[:, None]
        return M.probs_to_logits(p), p, "probs"
    if not (np.isfinite(lo) and np.isfinite(hi)):
        check_finite(s, name)
    z = two_logits(s)
    if not _probs:  # the report: probabilities block by block, never the whole matrix
        return z, None, "logits"
    p = two_columns(expit(s)) if s.ndim == 1 else softmax_rows(z)
    return z, p, "logits"


def _prob_blocks(z, p):
    """``(start, probabilities of a block of rows as float64)`` over all rows: from the probabilities
    ``p`` when given, else a softmax of each block of the logits ``z``."""
    a = p if p is not None else z
    rows = max(1, 2**20 // (a.shape[1] * 8))
    for i in range(0, a.shape[0], rows):
        if p is not None:
            yield i, p[i: i + rows].astype(np.float64)
        else:
            yield i, softmax_rows(z[i: i + rows].astype(np.float64))


def _view(logits, probs, view: str):
    if view == "logits":
        return logits
    if view == "logit1":
        return logits[:, 1] - logits[:, 0]
    if view == "probs":
        return probs
    return probs[:, 1]


def candidate_methods(n_classes: int) -> dict:
    """The post-hoc calibrators a report compares: ``{name: (unfitted calibrator, view)}``.

    Binary: temperature scaling, Platt scaling, isotonic regression, histogram binning and
    BBQ. Multiclass: temperature scaling, vector scaling, and one-vs-all isotonic regression
    and histogram binning (matrix scaling is left out: unregularized, its ``K^2`` weights are
    identified only up to a shared row, and L-BFGS needs thousands of steps per fold).
    ``view`` is one of :data:`VIEWS`: what the calibrator takes.

    Parameters
    ----------
    n_classes : int
        K, at least 2.

    Returns
    -------
    dict

    Examples
    --------
    >>> list(candidate_methods(2))
    ['temperature scaling', 'Platt scaling', 'isotonic regression', 'histogram binning', 'BBQ']
    >>> list(candidate_methods(10))
    ['temperature scaling', 'vector scaling', 'one-vs-all isotonic', 'one-vs-all histogram binning']
    """
    from calibcourse.calibration import calibrators as C

    if n_classes == 2:
        return {"temperature scaling": (C.TemperatureScaling(), "logits"),
                "Platt scaling": (C.PlattScaling(), "prob1"),  # logit(P(y = 1)) is the logit: any scale
                "isotonic regression": (C.IsotonicCalibration(), "prob1"),
                "histogram binning": (C.HistogramBinning(), "prob1"),
                "BBQ": (C.BBQ(), "prob1")}
    methods = {"temperature scaling": (C.TemperatureScaling(), "logits"),
               "vector scaling": (C.VectorScaling(), "logits")}
    methods["one-vs-all isotonic"] = (C.OneVsAll(C.IsotonicCalibration()), "probs")
    methods["one-vs-all histogram binning"] = (C.OneVsAll(C.HistogramBinning()), "probs")
    return methods


def check_folds(labels, n_classes: int, folds: int, name: str = "labels", folds_name: str = "folds"):
    """Validate labels for a cross-fitted comparison: two classes at least, each with ``folds`` samples.

    Parameters
    ----------
    labels : array_like of shape (n,)
        Integer class labels (already of the right length).
    n_classes : int
        K.
    folds : int
        The number of folds, at least 2.
    name, folds_name : str
        The names of the two in error messages.

    Returns
    -------
    numpy.ndarray
        The labels, int64.

    Examples
    --------
    >>> check_folds([0, 1, 1, 0, 1], 2, folds=3)
    Traceback (most recent call last):
    ...
    ValueError: folds = 3, but class 0 of labels has only 2 samples: every class needs at least one sample per
    fold (lower folds or add samples)
    """
    return _fold_counts(check_labels(labels, len(labels), n_classes, name), n_classes, folds, name, folds_name)


def _fold_counts(y: np.ndarray, n_classes: int, folds: int, name: str = "labels", folds_name: str = "folds"):
    """:func:`check_folds` on checked labels ``y``: two classes at least, each with ``folds`` samples."""
    check_int(folds, folds_name, low=2)
    counts = np.bincount(y, minlength=n_classes)
    present = np.flatnonzero(counts)
    if present.size < 2:
        raise ValueError(f"{name} contain one class only ({present[0] if present.size else '-'}): "
                         "calibration needs at least two")
    if present.size < n_classes:
        missing = np.flatnonzero(counts == 0)[:10].tolist()
        raise ValueError(f"{name} lack classes {missing} of the {n_classes} the scores have: every class "
                         "needs samples to calibrate on")
    worst = int(np.argmin(counts))
    if counts[worst] < folds:
        raise ValueError(f"{folds_name} = {folds}, but class {worst} of {name} has only {counts[worst]} samples: "
                         "every class needs at least one sample per fold (lower folds or add samples)")
    return y


def cross_fit(logits, probs, labels, methods: dict | None = None, folds: int = 5, skipped: dict | None = None,
              progress: bool = False) -> dict:
    """Out-of-fold calibrated probabilities of every method: each sample calibrated by a map fitted without it.

    The folds are scikit-learn's ``StratifiedKFold(folds)`` (no shuffling,
    :func:`calibcourse.calibration.folds.fold_indices`), the ones
    ``CalibratedClassifierCV(cv=folds, ensemble=False)`` gets its out-of-fold predictions
    from; a method is cloned and fitted on the other ``folds - 1`` folds, then predicts its fold.

    Parameters
    ----------
    logits, probs : numpy.ndarray of shape (n, K)
        From :func:`as_logits_and_probs`.
    labels : array_like of shape (n,)
        Integer class labels.
    methods : dict, optional
        ``{name: (calibrator, view)}``; default :func:`candidate_methods`.
    folds : int, default=5
        The number of folds.
    skipped : dict, optional
        Filled with ``{name: why}`` for every method that could not be fitted on some fold (a
        temperature on a perfectly separated fold, say): such a method is left out of the
        result instead of stopping the comparison.
    progress : bool, default=False
        A progress bar over the folds on stderr (tqdm, where installed).

    Returns
    -------
    dict
        ``{name: out-of-fold probabilities of shape (n, K)}`` of every method fitted on every fold.

    Examples
    --------
    >>> from calibcourse.calibration.synthetic import scaled_logits
    >>> z, y = scaled_logits(600, 3, factor=2.0, seed=0)
    >>> z, p, _ = as_logits_and_probs(z)
    >>> oof = cross_fit(z, p, y, folds=3)
    >>> oof["temperature scaling"].shape, M.ece(oof["temperature scaling"], y) < M.ece(p, y)
    ((600, 3), True)
    """
    from calibcourse.calibration._validation import check_logits

    z = check_logits(logits, "logits", keep_float32=True)
    p = check_probs(probs, "probs", allow_1d=False)
    if z.shape != p.shape:
        raise ValueError(f"logits and probs must be of the same samples and classes; got {z.shape} and {p.shape}")
    y = check_folds(labels, p.shape[1], folds)
    return _cross_fit(z, p, y, methods, folds, skipped, progress)


def _cross_fit(logits, probs, y, methods, folds, skipped, progress) -> dict:
    """:func:`cross_fit` on checked arrays (the calibrators do not check each fold again)."""
    methods = candidate_methods(probs.shape[1]) if methods is None else methods
    out = {name: np.empty_like(probs, dtype=np.float64) for name in methods}
    failed = {} if skipped is None else skipped
    with checked():  # the labels are checked, every class holds at least `folds` samples
        splits = fold_indices(y, folds)
        for i, (train, test) in enumerate(_progress(splits, folds, "cross-fitting the calibrators", progress),
                                          start=1):
            _fit_fold(logits, probs, y, methods, failed, out, train, test, f"fold {i} of {folds}")
    return {name: q for name, q in out.items() if name not in failed}


def _fit_fold(logits, probs, y, methods, failed, out, train, test, fold: str) -> None:
    """Fit every method not failed yet on ``train``; its probabilities of ``test`` into ``out``."""
    from sklearn.base import clone

    for name, (cal, view) in methods.items():
        if name in failed:
            continue
        try:
            fitted = clone(cal).fit(_view(logits[train], probs[train], view), y[train])
        except ValueError as exc:  # a map this fold cannot identify: the method is left out, with why
            failed[name] = f"not fitted on {fold}: {exc}"
            continue
        out[name][test] = fitted.predict_proba(_view(logits[test], probs[test], view))


class Choice(NamedTuple):
    """The recommendation of :func:`choose`.

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
        ``brier``, ``error``.

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


def choose(probs, oof: dict, labels, n_bins: int = 15, n_boot: int = 1000, seed: int = 0) -> Choice:
    """The simplest candidate not decidedly worse than the lowest out-of-fold ECE, no calibration included.

    The candidates are the model as given ("uncalibrated", no parameter) and the methods in
    their order (:func:`candidate_methods`: from temperature scaling, one parameter, to the
    per-class maps). The first candidate whose ECE minus the lowest one has a paired 95 %
    interval that does not lie wholly above 0 is recommended: a calibrator must beat the model
    as given by more than the noise to be recommended, and a more flexible map must beat a
    simpler one (the binned ECE favours the binning methods, which fit the very bins it is
    measured on). Only calibrators whose out-of-fold Brier score is at most the model's own are
    candidates (a lower binned ECE bought with a higher Brier score is a loss of the model's
    ranking, which the ECE of a small set rewards), so a calibrator whose out-of-fold ECE, NLL
    and Brier score are all worse than the model's own is never recommended.

    Binary models are measured on P(y = 1) (``reliability="positive_class"``), others top-label.

    Parameters
    ----------
    probs : numpy.ndarray of shape (n, K)
        The uncalibrated probabilities.
    oof : dict
        ``{name: out-of-fold probabilities}`` of :func:`cross_fit`.
    labels : array_like of shape (n,)
        Integer class labels.
    n_bins : int, default=15
        Bins of the ECE.
    n_boot : int, default=1000
        Bootstrap resamples of the intervals.
    seed : int, default=0
        Seed of the resampling.

    Returns
    -------
    Choice
        ``name`` is ``"uncalibrated"`` when no calibrator is decidedly better than none.

    Examples
    --------
    >>> from calibcourse.calibration.synthetic import scaled_logits
    >>> z, y = scaled_logits(900, 3, factor=2.5, seed=1)
    >>> z, p, _ = as_logits_and_probs(z)
    >>> c = choose(p, cross_fit(z, p, y, folds=3), y, n_boot=100)
    >>> c.name in candidate_methods(3), bool(c.ece_change.high < 0)
    (True, True)
    >>> z, y = scaled_logits(900, 3, factor=1.0, seed=1)  # calibrated already
    >>> z, p, _ = as_logits_and_probs(z)
    >>> choose(p, cross_fit(z, p, y, folds=3), y, n_boot=100).name
    'uncalibrated'
    """
    probs = check_probs(probs, "probs", allow_1d=False)
    y = check_labels(labels, probs.shape[0], probs.shape[1])
    oof = {name: check_probs(q, f"oof[{name!r}]", allow_1d=False) for name, q in oof.items()}
    for name, q in oof.items():
        if q.shape != probs.shape:
            raise ValueError(f"oof[{name!r}] has shape {q.shape} and probs {probs.shape}: the same samples needed")
    with checked():  # each array checked once, above
        return _choose(probs, oof, y, n_bins, n_boot, seed)


def _choose(probs, oof: dict, y, n_bins: int, n_boot: int, seed: int) -> Choice:
    """:func:`choose` on checked arrays."""
    kw = {"n_bins": n_bins, "reliability": "positive_class" if probs.shape[1] == 2 else "top_label"}
    candidates = {"uncalibrated": probs, **oof}
    table = []
    for name, q in candidates.items():
        ci = stats.interval(M.ece, q, y, n_boot=n_boot, seed=seed, **kw)
        table.append({"method": name, "ece": ci.plugin, "ece_low": ci.low, "ece_high": ci.high,
                      "nll": M.nll(q, y), "brier": M.brier(q, y), "error": M.error(q, y)})
    rows = {r["method"]: r for r in table}
    # a calibrator that raises the Brier score (a proper score: calibration and refinement together)
    # trades the model's ranking for a lower binned ECE, which small sets favour: not a candidate
    eligible = [name for name in candidates if rows[name]["brier"] <= rows["uncalibrated"]["brier"]]
    lowest = min(eligible, key=lambda name: rows[name]["ece"])
    best = lowest
    for name in eligible:  # the simplest first: none, then the methods in their order
        if name == lowest:
            break
        d = stats.paired_difference(M.ece, candidates[name], candidates[lowest], y, n_boot=n_boot, seed=seed, **kw)
        if stats.verdict(d.low, d.high, null=0.0, direction="above") != "held":
            best = name
            break
    if all(rows[best][m] > rows["uncalibrated"][m] for m in ("ece", "nll", "brier")):
        best = "uncalibrated"  # worse than none on every measure: never recommended
    d_ece = stats.paired_difference(M.ece, candidates[best], probs, y, n_boot=n_boot, seed=seed, **kw)
    d_err = stats.paired_difference(M.error, candidates[best], probs, y, n_boot=n_boot, seed=seed)
    return Choice(best, d_ece, d_err, table)


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
