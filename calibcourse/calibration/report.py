"""Every measure of one model's predictions (chapter 1), and the report of ``calibcourse report``.

:func:`calibration_report` is one model's measures as a table (pandas). The rest is what the
``calibcourse report`` command (:mod:`calibcourse.calibration.cli`) does with a model's outputs,
in parts a chapter can call: :func:`as_logits_and_probs` reads logits or probabilities,
:func:`cross_fit` calibrates every sample out of fold with every method of
:func:`candidate_methods`, :func:`choose` picks the simplest method whose out-of-fold ECE is
not decidedly above the lowest one, with the paired interval of its change, :func:`report_html` writes the
page, and :func:`save` /
:func:`load` keep the recommended calibrator in a JSON file.
"""
from __future__ import annotations

import inspect
import warnings
from typing import NamedTuple

import numpy as np

from calibcourse.calibration import metrics as M
from calibcourse.calibration import stats
from calibcourse.calibration._validation import check_labels, check_probs, encode_labels

#: The calibrators are cross-fitted, compared and fitted on at most this many scores, samples x
#: classes (a stratified, seeded subsample of MAX_FIT_VALUES // K rows: 200,000 for a binary model,
#: 20,000 (MAX_FIT_ROWS) at K = 100; the
#: measures of the model as given use every sample). Measured on 1e5 samples of synthetic models
#: (K = 100 over- and well-calibrated, K = 10 under- and over-confident): the recommendation on the
#: subsample is the one on all samples, and 20,000 labels fix a temperature to about 1 %.
MAX_FIT_VALUES = 400_000
#: ... and at least this many rows, whatever K
MAX_FIT_ROWS = 20_000
#: The bootstraps of the page draw at most this many sample indices each (resamples x samples): at
#: 1e6 samples, 100 resamples instead of 1000 (their intervals are then a fraction of a point wide).
MAX_BOOT_DRAWS = 10**8

__all__ = ["calibration_report", "as_logits_and_probs", "candidate_methods", "check_folds", "cross_fit", "choose",
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
        Integer class labels.
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


# =========================================================================== calibcourse report
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

    from calibcourse.calibration._validation import check_choice, check_logits

    check_choice(kind, KINDS, "kind")
    s = check_logits(scores, name, ndim=None, keep_float32=True)
    if s.ndim not in (1, 2) or (s.ndim == 2 and s.shape[1] < 2):
        raise ValueError(f"{name} must have shape (n, K) with K >= 2, or (n,) for a binary model; "
                         f"got shape {s.shape}")
    if kind == "auto":
        in_unit = s.min() >= 0 and s.max() <= 1
        kind = "probs" if in_unit and (s.ndim == 1 or np.abs(s.sum(1) - 1).max() <= 1e-3) else "logits"
    if kind == "probs":
        p = check_probs(s, name)
        p = np.stack([1 - p, p], 1) if p.ndim == 1 else p / p.sum(1, keepdims=True)
        return M.probs_to_logits(p), p, "probs"
    z = np.stack([np.zeros_like(s), s], 1) if s.ndim == 1 else s
    if not _probs:  # the report: probabilities block by block, never the whole matrix
        return z, None, "logits"
    p = np.stack([1 - expit(s), expit(s)], 1) if s.ndim == 1 else _softmax_rows(z)
    return z, p, "logits"


def _softmax_rows(z: np.ndarray) -> np.ndarray:
    """Softmax of checked logits, in their dtype (float32 stays float32), a block of rows at a time."""
    out = np.empty_like(z)
    rows = max(1, 2**20 // (z.shape[1] * z.itemsize))
    for i in range(0, z.shape[0], rows):
        blk = out[i: i + rows]
        np.subtract(z[i: i + rows], z[i: i + rows].max(1, keepdims=True), out=blk)
        np.exp(blk, out=blk)
        blk /= blk.sum(1, keepdims=True)
    return out


def _prob_blocks(z, p):
    """``(start, probabilities of a block of rows as float64)`` over all rows: from the probabilities
    ``p`` when given, else a softmax of each block of the logits ``z``."""
    a = p if p is not None else z
    rows = max(1, 2**20 // (a.shape[1] * 8))
    for i in range(0, a.shape[0], rows):
        if p is not None:
            yield i, p[i: i + rows].astype(np.float64)
        else:
            yield i, _softmax_rows(z[i: i + rows].astype(np.float64))


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
    y = check_labels(labels, len(labels), n_classes, name)
    if isinstance(folds, bool) or not isinstance(folds, (int, np.integer)) or folds < 2:
        raise ValueError(f"{folds_name} must be an integer >= 2; got {folds!r}")
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

    The folds are scikit-learn's ``StratifiedKFold(folds)`` (no shuffling), the ones
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
    from sklearn.base import clone
    from sklearn.model_selection import StratifiedKFold

    k = probs.shape[1]
    y = check_folds(labels, k, folds)
    methods = candidate_methods(k) if methods is None else methods
    out = {name: np.empty_like(probs, dtype=np.float64) for name in methods}
    failed = {} if skipped is None else skipped
    splits = StratifiedKFold(n_splits=folds).split(np.zeros(len(y)), y)
    for i, (train, test) in enumerate(_progress(splits, folds, "cross-fitting the calibrators", progress), start=1):
        for name, (cal, view) in methods.items():
            if name in failed:
                continue
            try:
                fitted = clone(cal).fit(_view(logits[train], probs[train], view), y[train])
            except ValueError as exc:  # a map this fold cannot identify: the method is left out, with why
                failed[name] = f"not fitted on fold {i} of {folds}: {exc}"
                continue
            out[name][test] = fitted.predict_proba(_view(logits[test], probs[test], view))
    return {name: q for name, q in out.items() if name not in failed}


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
    y = check_labels(labels, probs.shape[0], probs.shape[1])
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


# --------------------------------------------------------------------------- save and load
class FittedCalibration:
    """A calibrator fitted by ``calibcourse report --save``, with the conversion of the scores it was fitted on.

    Parameters
    ----------
    calibrator : calibrator or None
        A fitted calibrator of :mod:`calibcourse.calibration.calibrators`; None where the
        report recommended none (``predict_proba`` then returns the probabilities as given).
    view : str
        One of :data:`VIEWS`: what it takes of the scores.
    kind : {"logits", "probs"}
        What the scores were (new scores must be the same kind).
    name : str, default=""
        The method's name in the report.

    Examples
    --------
    >>> from calibcourse.calibration.calibrators import TemperatureScaling
    >>> from calibcourse.calibration.synthetic import scaled_logits
    >>> z, y = scaled_logits(500, 3, factor=2.0, seed=0)
    >>> fc = FittedCalibration(TemperatureScaling().fit(z, y), "logits", "logits")
    >>> fc.predict_proba(z[:2]).shape
    (2, 3)
    """

    def __init__(self, calibrator, view: str, kind: str, name: str = ""):
        if view not in VIEWS:
            raise ValueError(f"view must be one of {VIEWS}; got {view!r}")
        self.calibrator, self.view, self.kind, self.name = calibrator, view, kind, name

    def predict_proba(self, scores):
        """Calibrated probabilities of shape (n, K) of new scores, of the kind the report was given.

        Parameters
        ----------
        scores : array_like of shape (n, K) or (n,)
            Logits or probabilities, as given to the report.

        Returns
        -------
        numpy.ndarray of shape (n, K)
        """
        z, p, _ = as_logits_and_probs(scores, self.kind)
        if self.calibrator is None:  # the report recommended no calibration
            return p
        return np.asarray(self.calibrator.predict_proba(_view(z, p, self.view)))

    def __repr__(self):
        return f"FittedCalibration({self.calibrator!r}, view={self.view!r}, kind={self.kind!r})"


def _encode(v):
    from sklearn.base import BaseEstimator

    if isinstance(v, BaseEstimator):
        return {"__calibrator__": type(v).__name__,
                "params": {k: _encode(p) for k, p in v.get_params(deep=False).items()},
                "fitted": {k: _encode(a) for k, a in vars(v).items()
                           if k.endswith("_") and not k.startswith("_") and k != "result_"}}
    if isinstance(v, np.ndarray):
        return {"__ndarray__": v.tolist(), "dtype": str(v.dtype)}
    if isinstance(v, (list, tuple)):
        return [_encode(x) for x in v]
    if isinstance(v, np.generic):
        return v.item()
    if v is None or isinstance(v, (bool, int, float, str)):
        return v
    raise TypeError(f"cannot write {type(v).__name__} to JSON")


def _decode(v):
    from calibcourse.calibration import calibrators as C

    if isinstance(v, list):
        return [_decode(x) for x in v]
    if isinstance(v, dict) and "__ndarray__" in v:
        return np.asarray(v["__ndarray__"], dtype=v["dtype"])
    if isinstance(v, dict) and "__calibrator__" in v:
        classes = {cls.__name__: cls for cls in C.CALIBRATORS.values()}
        if v["__calibrator__"] not in classes:
            raise ValueError(f"unknown calibrator {v['__calibrator__']!r} in the file")
        cal = classes[v["__calibrator__"]](**{k: _decode(p) for k, p in v["params"].items()})
        for k, a in v["fitted"].items():
            setattr(cal, k, _decode(a))
        return cal
    return v


#: The format of the files of :func:`save` (written in them; :func:`load` checks it).
FORMAT = "calibcourse-calibrator/1"


def save(fitted: FittedCalibration, path) -> None:
    """Write a fitted calibration to a JSON file that :func:`load` reads back.

    Parameters
    ----------
    fitted : FittedCalibration
        The calibrator and the conversion of its scores.
    path : str or os.PathLike
        The file to write.

    Returns
    -------
    None

    Examples
    --------
    >>> import tempfile, os
    >>> from calibcourse.calibration.calibrators import PlattScaling
    >>> fc = FittedCalibration(PlattScaling().fit([0.2, 0.4, 0.7, 0.9], [0, 1, 0, 1]), "prob1", "probs")
    >>> path = os.path.join(tempfile.mkdtemp(), "cal.json")
    >>> save(fc, path)
    >>> load(path).calibrator.a_ == fc.calibrator.a_
    True
    """
    import json

    doc = {"format": FORMAT, "name": fitted.name, "view": fitted.view, "kind": fitted.kind,
           "calibrator": _encode(fitted.calibrator)}
    with open(path, "w") as f:
        json.dump(doc, f, indent=1)


def load(path) -> FittedCalibration:
    """Read a calibration written by :func:`save` (``calibcourse report --save``).

    Parameters
    ----------
    path : str or os.PathLike
        The JSON file.

    Returns
    -------
    FittedCalibration
        ``.predict_proba(scores)`` calibrates new scores of the kind the report was given;
        ``.calibrator`` is the fitted calibrator itself.

    Examples
    --------
    >>> import tempfile, os
    >>> from calibcourse.calibration.calibrators import IsotonicCalibration
    >>> fc = FittedCalibration(IsotonicCalibration().fit([0.1, 0.4, 0.6, 0.9], [0, 1, 0, 1]), "prob1", "probs")
    >>> path = os.path.join(tempfile.mkdtemp(), "cal.json")
    >>> save(fc, path)
    >>> load(path).predict_proba(np.array([0.25, 0.75]))
    array([[0.75, 0.25],
           [0.25, 0.75]])
    """
    import json

    with open(path) as f:
        doc = json.load(f)
    if not isinstance(doc, dict) or doc.get("format") != FORMAT:
        raise ValueError(f"{path} is not a calibrator file of calibcourse (format {FORMAT!r})")
    return FittedCalibration(_decode(doc["calibrator"]), doc["view"], doc["kind"], doc.get("name", ""))


# --------------------------------------------------------------------------- the HTML page
def _bin_band(conf, outcome, n_bins, n_boot, seed, level=0.95):
    """Per non-empty bin: mean confidence, frequency and its bootstrap percentile interval."""
    from calibcourse.calibration import binning

    idx = binning.bin_index(conf, binning.uniform_edges(n_bins))
    rows = []
    for m in range(n_bins):
        sel = idx == m
        if not sel.any():
            continue
        o = outcome[sel]
        if o.size >= 2 and np.ptp(o) > 0:
            r = stats.bootstrap_statistic(np.mean, o, n_boot=n_boot, level=level, seed=seed + m,
                                          method="percentile")
            lo, hi = r.low, r.high
        else:
            lo = hi = float(o.mean())
        rows.append((float(conf[sel].mean()), float(o.mean()), lo, hi, int(sel.sum())))
    return np.array(rows)


def _reliability_png(panels: dict, reliability: str, n_bins: int, n_boot: int, seed: int) -> str:
    """Reliability diagrams with a bootstrap band, side by side; a base64 PNG."""
    import base64
    import io

    import matplotlib

    matplotlib.use("Agg", force=False)
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(2, len(panels), figsize=(4.4 * len(panels), 5.8), squeeze=False,
                             gridspec_kw={"height_ratios": [3, 1]}, sharex=True)
    for j, (title, (conf, outcome)) in enumerate(panels.items()):
        b = _bin_band(conf, outcome, n_bins, n_boot, seed)
        ax = axes[0, j]
        ax.plot([0, 1], [0, 1], "--", color="gray", lw=1, label="perfect calibration")
        ax.fill_between(b[:, 0], b[:, 2], b[:, 3], color="C0", alpha=0.25, label="95 % bootstrap band")
        ax.plot(b[:, 0], b[:, 1], "o-", color="C0", ms=4, label="observed frequency")
        ax.set(xlim=(0, 1), ylim=(0, 1), title=title,
               ylabel="fraction of positives" if reliability == "positive_class" else "accuracy")
        ax.legend(loc="upper left", fontsize=7)
        h = axes[1, j]
        h.hist(conf, bins=np.linspace(0, 1, n_bins + 1), color="gray", edgecolor="black", lw=0.5)
        h.set(yscale="log", xlabel="P(y = 1)" if reliability == "positive_class" else "confidence",
              ylabel="samples")
    fig.tight_layout()
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=110)
    plt.close(fig)
    return base64.b64encode(buf.getvalue()).decode("ascii")


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


def _fit_rows(y, cap: int, seed: int):
    """Indices of a stratified, seeded subsample of ``cap`` rows, sorted; None when ``len(y) <= cap``."""
    if len(y) <= cap:
        return None
    from sklearn.model_selection import train_test_split

    idx = np.arange(len(y))
    try:
        sub = train_test_split(idx, train_size=cap, stratify=y, random_state=seed)[0]
    except ValueError:  # a class too rare to stratify: a plain random subsample
        sub = np.random.default_rng(seed).choice(idx, cap, replace=False)
    return np.sort(sub)


def _per_sample(z, p, y, reliability: str):
    """One pass over the rows, block by block: each sample's confidence and outcome (what the binned
    measures bin), NLL, Brier and error terms. No full-size copy of the scores is made."""
    n = len(y)
    conf, outcome = np.empty(n), np.empty(n)
    means = {"NLL": (M.nll, np.empty(n)), "Brier": (M.brier, np.empty(n)), "error": (M.error, np.empty(n))}
    for i, pk in _prob_blocks(z, p):
        j = slice(i, i + len(pk))
        conf[j], outcome[j] = M.confidence_outcome(pk, y[j], reliability)
        for metric, terms in means.values():  # the terms the bootstrap engine resamples, over the columns
            terms[j] = stats.per_sample_terms(metric, pk, y[j], {})
    return conf, outcome, {key: terms for key, (_, terms) in means.items()}


def _measure_rows(per_sample, n_bins: int, n_boot: int, seed: int, progress: bool = False) -> list:
    """The page's table of the model as given: each measure and its bootstrap interval, every measure
    on the same resamples of the per-sample quantities of :func:`_per_sample`."""
    conf, outcome, means = per_sample
    binned = {"ECE": M.binned_on_confidence(M.ece, n_bins=n_bins), "MCE": M.binned_on_confidence(M.mce, n_bins=n_bins),
              "ACE": M.binned_on_confidence(M.ace, n_bins=n_bins)}
    reps = {key: [] for key in (*binned, *means)}
    for idx in _progress(
        stats.resample_indices(len(conf), n_boot, seed), n_boot, "intervals of the measures", progress
    ):
        c, o = conf[idx], outcome[idx]
        for key, f in binned.items():
            reps[key].append(f(c, o))
        for key, t in means.items():
            reps[key].append(float(t[idx].mean()))
    rows = []
    for key in reps:
        plugin = binned[key](conf, outcome) if key in binned else float(means[key].mean())
        r = stats.interval_from_replicates(plugin, reps[key], 0.95, "hull", len(conf), lower=0.0)
        if key in ("NLL", "Brier"):
            unit, f = (" nats" if key == "NLL" else ""), (lambda v: f"{v:.4f}")
        else:
            unit, f = " %", _pct
        rows.append((key, f"{f(r.plugin)}{unit}", f"[{f(r.low)}, {f(r.high)}]{unit}"))
    return rows


def _pct(x):
    return f"{100 * x:.2f}"


def report_html(scores, labels, kind: str = "auto", folds: int = 5, n_bins: int = 15, n_boot: int = 1000,
                seed: int = 0, title: str = "Calibration report", names: dict | None = None, progress: bool = False):
    """The calibration report of a model's outputs: an HTML page and the recommended calibration.

    The page holds (PNG figures embedded, no other file needed) the reliability diagrams
    with a 95 % bootstrap band before and after the recommended calibrator (out of fold);
    ECE, MCE, ACE, NLL and Brier with 95 % intervals (:func:`calibcourse.calibration.stats.interval`);
    every calibrator of :func:`candidate_methods` compared by :func:`cross_fit`; and the
    recommended one (:func:`choose`) with the paired interval of its ECE change and of its
    error change (the cost).

    Parameters
    ----------
    scores : array_like of shape (n, K) or (n,)
        Logits or probabilities of a model on labelled data (a validation or test set).
    labels : array_like of shape (n,)
        Integer class labels.
    kind : {"auto", "logits", "probs"}, default="auto"
        What ``scores`` are (:func:`as_logits_and_probs`).
    folds : int, default=5
        Folds of the cross-fitting.
    n_bins : int, default=15
        Bins of the ECE, MCE and ACE and of the diagrams.
    n_boot : int, default=1000
        Bootstrap resamples of every interval.
    seed : int, default=0
        Seed of the resampling.
    title : str, default="Calibration report"
        The page's title.
    names : dict, optional
        ``{"scores": ..., "labels": ..., "folds": ...}``: how the arguments are called in error
        messages (the command line passes its options).
    progress : bool, default=False
        Progress bars on stderr for the long steps (tqdm, where installed); the command line
        shows them when stderr is a terminal.

    Returns
    -------
    html : str
        The page.
    fitted : FittedCalibration
        The recommended calibrator, fitted on all the data.
    choice : Choice
        The comparison.

    Examples
    --------
    >>> from calibcourse.calibration.synthetic import scaled_logits
    >>> z, y = scaled_logits(600, 3, factor=2.0, seed=0)
    >>> html, fitted, choice = report_html(z, y, folds=3, n_boot=50)
    >>> html.startswith("<!DOCTYPE html>"), "data:image/png;base64," in html, fitted.name == choice.name
    (True, True, True)
    """
    import html as H

    from sklearn.base import clone

    names = {"scores": "scores", "labels": "labels", "folds": "folds", **(names or {})}
    z, p, kind = as_logits_and_probs(scores, kind, names["scores"], _probs=False)
    n, k = z.shape
    try:
        y, classes = encode_labels(labels, n, k, names["labels"])
    except ValueError as e:
        raise ValueError(str(e).replace("the predictions have", f"{names['scores']} has")) from None
    y = check_folds(y, k, folds, names["labels"], names["folds"])
    reliability = "positive_class" if k == 2 else "top_label"
    methods = candidate_methods(k)
    skipped = {}
    sub = _fit_rows(y, max(MAX_FIT_ROWS, MAX_FIT_VALUES // k), seed)  # the calibrators' samples: all, or a subsample
    zs, ys = (z, y) if sub is None else (z[sub], y[sub])
    zs = zs.astype(np.float64)
    if p is None:  # logits given: their probabilities, for the subsample only
        ps = _softmax_rows(zs)
    else:
        ps = (p if sub is None else p[sub]).astype(np.float64)
    with warnings.catch_warnings(record=True) as caught:  # a calibrator's warnings go on the page
        warnings.simplefilter("always")
        oof = cross_fit(zs, ps, ys, methods, folds, skipped=skipped, progress=progress)
    notes = sorted({str(w.message) for w in caught})
    fit_boot = min(n_boot, max(100, MAX_BOOT_DRAWS // len(ys)))  # the comparisons' bootstraps, bounded
    choice = choose(ps, oof, ys, n_bins=n_bins, n_boot=fit_boot, seed=seed)
    fitted = FittedCalibration(None, "probs", kind, "uncalibrated")
    if choice.name != "uncalibrated":
        cal, view = methods[choice.name]
        try:
            fitted = FittedCalibration(clone(cal).fit(_view(zs, ps, view), ys), view, kind, choice.name)
        except ValueError as exc:  # every fold fitted, all the data cannot: keep the model as given
            skipped[choice.name] = f"not fitted on all the data: {exc}"
            choice = choice._replace(name="uncalibrated", ece_change=stats.paired_difference(
                M.ece, ps, ps, ys, n_boot=fit_boot, seed=seed, n_bins=n_bins, reliability=reliability),
                error_change=stats.paired_difference(M.error, ps, ps, ys, n_boot=fit_boot, seed=seed))

    boot = min(n_boot, max(100, MAX_BOOT_DRAWS // n))  # the bootstraps over all n samples, bounded
    per_sample = _per_sample(z, p, y, reliability)
    rows = _measure_rows(per_sample, n_bins, boot, seed, progress=progress)
    panels = {"uncalibrated": per_sample[:2]}
    if choice.name != "uncalibrated":
        panels[f"{choice.name} (out of fold)"] = M.confidence_outcome(oof[choice.name], ys, reliability)
    png = _reliability_png(panels, reliability, n_bins, min(boot, 500), seed)
    fit_note = ("" if sub is None else f" They are cross-fitted, compared and fitted on a stratified subsample of "
                f"{len(ys):,} of the {n:,} samples (enough to fix a temperature to about 1 %); the measures of the "
                "model as given use every sample.")
    what = ("P(y = 1) against the fraction of positives (binary: the reliability of class 1)"
            if k == 2 else "top-label confidence against accuracy")
    de, dr = choice.ece_change, choice.error_change
    verdict = stats.verdict(de.low, de.high, direction="below")
    sentence = {"held": "lowers the ECE: the interval of the change lies below 0",
                "not held": "does not lower the ECE here: the interval of the change lies above 0",
                "inconclusive": "may not lower the ECE: the interval of the change contains 0"}[verdict]
    cmp_rows = "".join(
        f"<tr{' class=best' if r['method'] == choice.name else ''}><td>{H.escape(r['method'])}</td>"
        f"<td>{_pct(r['ece'])}</td><td>[{_pct(r['ece_low'])}, {_pct(r['ece_high'])}]</td>"
        f"<td>{r['nll']:.4f}</td><td>{r['brier']:.4f}</td><td>{_pct(r['error'])}</td></tr>" for r in choice.table)
    meas_rows = "".join(f"<tr><td>{a}</td><td>{b}</td><td>{c}</td></tr>" for a, b, c in rows)
    if choice.name == "uncalibrated":
        advice = (
            "<p>No calibrator is decidedly better than the model as given: each one's out-of-fold ECE is "
            "above the lowest by more than the noise allows, or its Brier score is above the model's own "
            "(it would trade the model's ranking for a lower binned ECE). Keep the model's probabilities "
            "(<code>--save</code> writes this "
            "choice, and the saved file passes scores through unchanged).</p>"
        )
    else:
        advice = f"""<p>{H.escape(choice.name).capitalize()} is the simplest candidate, no calibration included,
whose out-of-fold ECE is not decidedly above the lowest (paired interval), and {sentence}
(<code>--save</code> writes it fitted on all the data). Out of fold, its ECE changes by
<b>{_pct(de.plugin)} points</b> [{_pct(de.low)}, {_pct(de.high)}] and the error by
<b>{_pct(dr.plugin)} points</b> [{_pct(dr.low)}, {_pct(dr.high)}] (paired intervals, the same samples
before and after).</p>"""
    left_out = "".join(f"<li>{H.escape(name)}: {H.escape(why)}</li>" for name, why in skipped.items())
    if left_out:
        left_out = f"<p>Left out of the comparison:</p><ul>{left_out}</ul>"
    if notes:
        left_out += "<p>Said while fitting the calibrators:</p><ul>" + "".join(
            f"<li>{H.escape(note)}</li>" for note in notes) + "</ul>"
    page = f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>{H.escape(title)}</title>
<style>body{{font-family:sans-serif;max-width:60em;margin:2em auto;line-height:1.4}}
table{{border-collapse:collapse;margin:1em 0}}td,th{{border:1px solid #bbb;padding:.25em .6em;text-align:right}}
td:first-child,th:first-child{{text-align:left}}tr.best{{background:#e8f4e8;font-weight:bold}}
img{{max-width:100%}}.note{{color:#555;font-size:.9em}}</style></head><body>
<h1>{H.escape(title)}</h1>
<p>{n:,} samples, {k} classes{
        ""
        if classes.dtype.kind in "iu" and classes[0] == 0 and classes[-1] == k - 1
        else " (" + H.escape(", ".join(map(str, classes))) + ", the score columns in order)"
    }, {"probabilities" if kind == "probs" else "logits"} given. Measured: {what};
{n_bins} equal-width bins; intervals are 95 % bootstrap intervals ({boot} resamples of the {n:,} samples{
        "" if boot == n_boot else f", at most {MAX_BOOT_DRAWS:.0e} draws"
    }; {fit_boot} for the comparisons).{fit_note}</p>
<h2>Recommendation: {"no calibration" if choice.name == "uncalibrated" else H.escape(choice.name)}</h2>
{advice}
<h2>Reliability diagrams</h2>
<img alt="Reliability diagrams before and after the recommended calibrator, with 95 % bootstrap bands"
 src="data:image/png;base64,{png}">
<h2>The model as given</h2>
<table><tr><th>measure</th><th>value</th><th>95 % interval</th></tr>{meas_rows}</table>
<h2>Post-hoc calibrators, cross-fitted</h2>
<p class="note">Each sample is calibrated by a map fitted on the other {folds - 1} of {folds} stratified folds
(scikit-learn's <code>StratifiedKFold</code>, as <code>CalibratedClassifierCV(ensemble=False)</code>),
so the numbers are out of sample. ECE in %, NLL in nats, error in %.</p>
<table><tr><th>method</th><th>ECE</th><th>95 % interval</th><th>NLL</th><th>Brier</th><th>error</th></tr>
{cmp_rows}</table>
{left_out}
</body></html>
"""
    return page, fitted, choice
