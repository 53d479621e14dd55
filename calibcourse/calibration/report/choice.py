"""What ``calibcourse report`` does before its page: cross-fit every candidate calibrator the data can
support, and choose, by both proper scores out of fold, the simplest one not decidedly worse."""
from __future__ import annotations

from calibcourse.calibration._validation import check_labels, check_probs, checked
from calibcourse.calibration.report._compare import Choice, _choose, _cross_fit, _fold_counts
from calibcourse.calibration.report.scores import KINDS, as_logits_and_probs

__all__ = ["VIEWS", "KINDS", "as_logits_and_probs", "candidate_methods", "min_samples", "check_folds", "cross_fit",
           "Choice", "choose"]

#: What a calibrator of :func:`candidate_methods` takes from the scores: the logit matrix, the single
#: logit of class 1 (binary), the probability matrix, or P(y = 1) (binary).
VIEWS = ("logits", "logit1", "probs", "prob1")


def min_samples(name: str, n_classes: int) -> int:
    """The calibration samples a candidate of :func:`candidate_methods` needs before it is offered.

    About 20 samples per value the map fits: temperature and Platt scaling (one and two values)
    are offered at any size; vector scaling (``2K`` values) from ``20 K``; a binned or isotonic
    map of P(y = 1) (about 15 steps) from 300; a one-vs-all map (one per class, each of whose
    positives are about ``n / K``) from ``max(300, 100 K)``. Below these the comparison of
    the flexible maps is noise: on the 37 to 44 samples of the iris and wine sets one-vs-all
    isotonic regression had a held-out log loss ten times the model's own (issue 48).

    Parameters
    ----------
    name : str
        A method of :func:`candidate_methods`.
    n_classes : int
        K.

    Returns
    -------
    int

    Examples
    --------
    >>> min_samples("temperature scaling", 10), min_samples("vector scaling", 10), min_samples("BBQ", 2)
    (0, 200, 300)
    >>> min_samples("one-vs-all isotonic", 10)
    1000
    """
    if name in ("temperature scaling", "Platt scaling"):
        return 0
    if name == "vector scaling":
        return 20 * n_classes
    if name.startswith("one-vs-all"):
        return max(300, 100 * n_classes)
    return 300


def candidate_methods(n_classes: int, n_samples: int | None = None) -> dict:
    """The post-hoc calibrators a report compares, the simplest first: ``{name: (unfitted calibrator, view)}``.

    Binary: temperature scaling, Platt scaling, isotonic regression, histogram binning and
    BBQ. Multiclass: temperature scaling, vector scaling, and one-vs-all isotonic regression
    and histogram binning (matrix scaling is left out: its ``K^2`` weights are identified only
    up to a shared row, and need far more data than the rest). Temperature scaling fits the
    labels, or Platt's targets on a fold the model separates perfectly (``targets="auto"``:
    the labels' optimum there is ``T = 0``); Platt scaling fits Platt's targets, as Platt and
    scikit-learn do; vector scaling is pulled towards temperature scaling, with penalties that
    fall as ``1 / n`` (a prior of about one sample's weight: the class weights within about
    50 % of ``1/T``, the biases within about 1), which keep it finite on a separated fold too.
    ``view`` is one of :data:`VIEWS`: what the calibrator takes.

    Parameters
    ----------
    n_classes : int
        K, at least 2.
    n_samples : int, optional
        The calibration samples: the methods that need more (:func:`min_samples`) are left out,
        and it sets vector scaling's penalties (default: all methods, penalties for 1,000 samples).

    Returns
    -------
    dict

    Examples
    --------
    >>> list(candidate_methods(2))
    ['temperature scaling', 'Platt scaling', 'isotonic regression', 'histogram binning', 'BBQ']
    >>> list(candidate_methods(10))
    ['temperature scaling', 'vector scaling', 'one-vs-all isotonic', 'one-vs-all histogram binning']
    >>> list(candidate_methods(3, n_samples=44))
    ['temperature scaling']
    """
    from calibcourse.calibration import calibrators as C

    n = 1000 if n_samples is None else max(int(n_samples), 1)
    if n_classes == 2:
        methods = {"temperature scaling": (C.TemperatureScaling(targets="auto"), "logits"),
                   # the logit of P(y = 1), a written 0 floored (report.scores.rounding_floor)
                   "Platt scaling": (C.PlattScaling(input_type="logits", targets="platt"), "logit1"),
                   "isotonic regression": (C.IsotonicCalibration(), "prob1"),
                   "histogram binning": (C.HistogramBinning(), "prob1"),
                   "BBQ": (C.BBQ(), "prob1")}
    else:
        vs = C.VectorScaling(l2=2.0 * n_classes / n, bias_l2=0.5 * n_classes / n)
        methods = {"temperature scaling": (C.TemperatureScaling(targets="auto"), "logits"),
                   "vector scaling": (vs, "logits"),
                   "one-vs-all isotonic": (C.OneVsAll(C.IsotonicCalibration()), "probs"),
                   "one-vs-all histogram binning": (C.OneVsAll(C.HistogramBinning()), "probs")}
    if n_samples is None:
        return methods
    return {name: m for name, m in methods.items() if n_samples >= min_samples(name, n_classes)}


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
        ``{name: (calibrator, view)}``; default :func:`candidate_methods` for ``n`` samples.
    folds : int, default=5
        The number of folds.
    skipped : dict, optional
        Filled with ``{name: why}`` for every method that could not be fitted on some fold: such
        a method is left out of the result instead of stopping the comparison (the report's
        own candidates fit every fold: a separated one included).
    progress : bool, default=False
        A progress bar over the folds on stderr (tqdm, where installed).

    Returns
    -------
    dict
        ``{name: out-of-fold probabilities of shape (n, K)}`` of every method fitted on every fold.

    Examples
    --------
    >>> from calibcourse.calibration import metrics as M
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
    methods = candidate_methods(p.shape[1], len(y)) if methods is None else methods
    return _cross_fit(z, p, y, methods, folds, skipped, progress)


def choose(probs, oof: dict, labels, n_bins: int = 15, n_boot: int = 1000, seed: int = 0) -> Choice:
    """The simplest candidate not decidedly worse, out of fold, on either proper score (NLL and Brier).

    The candidates are the model as given ("uncalibrated", no parameter) and the methods in
    their order (:func:`candidate_methods`: from temperature scaling, one parameter, to the
    per-class maps). Each is judged by both proper scores out of fold, the NLL and the Brier
    score (which reward calibration and the ranking of the classes together, so that a map that
    flattens the model's distinctions to lower a binned ECE is not rewarded), with paired 95 %
    bootstrap intervals on the same samples:

    1. a calibrator decidedly worse than the model as given on either score (its interval
       wholly above 0) is out;
    2. of the rest, the lowest NLL and the lowest Brier score are found;
    3. the first candidate, simplest first, whose NLL and Brier score are each not decidedly
       above those lowest ones (the intervals contain 0) is recommended: a more flexible map
       must beat a simpler one by more than the noise. If none is (the lowest NLL and the
       lowest Brier belong to different candidates, each decidedly better than the other on its
       own score), the lowest NLL is.

    The ECE, with its interval, is reported and not chosen on: a binned measure, it favours the
    binning methods, which fit the very bins it is measured on. Binary models are measured on
    P(y = 1) (``reliability="positive_class"``), others top-label.

    Parameters
    ----------
    probs : numpy.ndarray of shape (n, K)
        The uncalibrated probabilities.
    oof : dict
        ``{name: out-of-fold probabilities}`` of :func:`cross_fit`, simplest first.
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
    >>> c.name, bool(c.nll_change.high < 0)
    ('temperature scaling', True)
    >>> z, y = scaled_logits(900, 3, factor=1.0, seed=1)  # calibrated already
    >>> z, p, _ = as_logits_and_probs(z)
    >>> choose(p, cross_fit(z, p, y, folds=3), y, n_boot=100).name
    'uncalibrated'
    """
    probs = check_probs(probs, "probs", allow_1d=False)
    y = check_labels(labels, probs.shape[0], probs.shape[1])
    if not isinstance(oof, dict):
        raise ValueError(f"oof must be a dict {{name: out-of-fold probabilities}}, as cross_fit returns; got "
                         f"{type(oof).__name__}")
    oof = {name: check_probs(q, f"oof[{name!r}]", allow_1d=False) for name, q in oof.items()}
    for name, q in oof.items():
        if q.shape != probs.shape:
            raise ValueError(f"oof[{name!r}] has shape {q.shape} and probs {probs.shape}: the same samples needed")
    with checked():  # each array checked once, above
        return _choose(probs, oof, y, n_bins, n_boot, seed)


