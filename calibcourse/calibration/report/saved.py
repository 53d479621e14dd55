"""The recommended calibrator kept in a JSON file: :func:`save` and :func:`load`."""
from __future__ import annotations

import warnings

import numpy as np

from calibcourse.calibration._validation import checked
from calibcourse.calibration.report._compare import _view
from calibcourse.calibration.report.choice import VIEWS
from calibcourse.calibration.report.scores import as_logits_and_probs

__all__ = ["FittedCalibration", "FORMAT", "save", "load"]


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
    classes : array_like of shape (K,), optional
        The class of each score column (the labels the report was given, sorted); default
        ``0..K-1``, with ``K`` from the calibrator where it has one.
    n_fit, n_total : int, optional
        The samples it was fitted on, and the report's samples (more where the calibrators were
        fitted on a subsample).

    Attributes
    ----------
    classes_ : numpy.ndarray
        ``classes``: ``predict`` returns them, and new scores must have one column per class.

    Examples
    --------
    >>> from calibcourse.calibration.calibrators import TemperatureScaling
    >>> from calibcourse.calibration.synthetic import scaled_logits
    >>> z, y = scaled_logits(500, 3, factor=2.0, seed=0)
    >>> fc = FittedCalibration(TemperatureScaling().fit(z, y), "logits", "logits", classes=["a", "b", "c"])
    >>> fc.predict_proba(z[:2]).shape, fc.predict(z[:2])
    ((2, 3), array(['c', 'c'], dtype='<U1'))
    """

    def __init__(self, calibrator, view: str, kind: str, name: str = "", classes=None, n_fit=None, n_total=None):
        if view not in VIEWS:
            raise ValueError(f"view must be one of {VIEWS}; got {view!r}")
        self.calibrator, self.view, self.kind, self.name = calibrator, view, kind, name
        if classes is None and calibrator is not None:
            k = 2 if view in ("logit1", "prob1") else getattr(calibrator, "n_features_in_", None)
            classes = None if k is None else np.arange(k)
        self.classes_ = None if classes is None else np.asarray(classes)
        self.n_fit, self.n_total = n_fit, n_total

    def predict_proba(self, scores):
        """Calibrated probabilities of shape (n, K) of new scores, of the kind the report was given.

        Parameters
        ----------
        scores : array_like of shape (n, K) or (n,)
            Logits or probabilities, as given to the report: one column per class of ``classes_``
            (``(n,)`` for a binary model).

        Returns
        -------
        numpy.ndarray of shape (n, K)
            The columns in the order of ``classes_``.
        """
        self._check_columns(np.shape(scores))  # before their values: a slice of the columns does not sum to 1
        with warnings.catch_warnings():  # the kind was settled by the report: a row of logits may sum to 1
            warnings.filterwarnings("ignore", message=".*read as logits, as told", category=UserWarning)
            z, p, _ = as_logits_and_probs(scores, self.kind)
        self._check_columns(z.shape)
        if self.calibrator is None:  # the report recommended no calibration
            return p
        with checked():  # the scores are checked, and their kind is known: a row of logits in [0, 1] is no error
            return np.asarray(self.calibrator.predict_proba(_view(z, p, self.view)))

    def _check_columns(self, shape) -> None:
        """One column per class of ``classes_`` (``(n,)`` or ``(n, 1)``: a binary model's)."""
        if self.classes_ is None or len(shape) != 2 or shape[1] == 1:
            return
        if shape[1] != len(self.classes_):
            raise ValueError(f"scores have {shape[1]} classes but this calibration was fitted on "
                             f"{len(self.classes_)} ({', '.join(map(str, self.classes_[:6]))}"
                             f"{', ...' if len(self.classes_) > 6 else ''}): give the model's outputs, one column "
                             "per class, as the report had them")

    def predict(self, scores):
        """The class of highest calibrated probability, of ``classes_``.

        Parameters
        ----------
        scores : array_like of shape (n, K) or (n,)
            As for :meth:`predict_proba`.

        Returns
        -------
        numpy.ndarray of shape (n,)
        """
        idx = self.predict_proba(scores).argmax(1)
        return idx if self.classes_ is None else self.classes_[idx]

    def score(self, scores, labels, sample_weight=None) -> float:
        """The mean log-likelihood of the labels under the calibrated probabilities (higher is better).

        The calibrators' ``score`` (scikit-learn's ``GridSearchCV`` maximises it): minus the NLL.

        Parameters
        ----------
        scores : array_like of shape (n, K) or (n,)
            As for :meth:`predict_proba`.
        labels : array_like of shape (n,)
            Labels of ``classes_``.
        sample_weight : array_like of shape (n,), optional
            Weights of the samples.

        Returns
        -------
        float
        """
        from calibcourse.calibration import metrics as M
        from calibcourse.calibration._labels import encode_labels

        q = self.predict_proba(scores)
        y, _ = encode_labels(labels, q.shape[0], q.shape[1],
                             classes=range(q.shape[1]) if self.classes_ is None else self.classes_)
        return -M.nll(q, y, sample_weight=sample_weight)

    def __repr__(self):
        """The calibrator, its view of the scores and their kind."""
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
           "classes": None if fitted.classes_ is None else _encode(fitted.classes_),
           "fitted_on": fitted.n_fit, "samples": fitted.n_total, "calibrator": _encode(fitted.calibrator)}
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
    classes = doc.get("classes")
    return FittedCalibration(_decode(doc["calibrator"]), doc["view"], doc["kind"], doc.get("name", ""),
                             classes=None if classes is None else _decode(classes), n_fit=doc.get("fitted_on"),
                             n_total=doc.get("samples"))
