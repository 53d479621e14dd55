"""What every calibrator shares: scikit-learn's estimator API, the checks of its arguments, torch in
and torch out."""
from __future__ import annotations

import numpy as np
from scipy.special import expit
from scipy.special import logit as _logit
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.utils.validation import check_is_fitted

from calibcourse.calibration._arrays import two_logits
from calibcourse.calibration._labels import encode_labels
from calibcourse.calibration._validation import (
    check_choice,
    check_labels,
    check_logits,
    check_sample_weight,
    checked,
    is_torch,
    label_array,
    to_numpy,
)

EPS = 1e-12
#: What the scores given to a binary method or to ``OneVsAll`` are.
INPUT_TYPES = ("probabilities", "logits")


def _like(out: np.ndarray, ref):
    """Return ``out`` as a torch tensor if ``ref`` is one (same device, float dtype of ref)."""
    if is_torch(ref):
        import torch

        dtype = ref.dtype if ref.is_floating_point() else torch.float64
        return torch.as_tensor(out, dtype=dtype, device=ref.device)
    return out


def _one_column(x):
    """Scores of shape ``(n, 1)`` as ``(n,)`` (scikit-learn's binary ``decision_function`` column); else as given."""
    shape = getattr(x, "shape", None)
    if shape is None and isinstance(x, (list, tuple)):
        shape = np.shape(x)
    if shape is not None and len(shape) == 2 and shape[1] == 1:
        return x[:, 0] if hasattr(x, "shape") else np.asarray(x)[:, 0]
    return x


def _keep_dtype(out, ref):
    """``out`` in the float dtype of a numpy ``ref`` narrower than float64 (float32 in, float32 out)."""
    dt = getattr(ref, "dtype", None)
    if isinstance(ref, np.ndarray) and dt.kind == "f" and dt.itemsize < 8 and isinstance(out, np.ndarray):
        return out.astype(dt, copy=False)
    return out


def _fit_arguments(cls: str, X, y, names: dict):
    """``fit``'s scores and labels, given as ``X``/``y`` (scikit-learn) or ``scores``/``logits``/``labels``."""
    unknown = sorted(set(names) - {"scores", "logits", "labels"})
    if unknown:
        raise TypeError(f"{cls}.fit() got an unexpected keyword argument {unknown[0]!r}")
    for alias in ("scores", "logits"):
        if alias in names:
            if X is not None:
                raise TypeError(f"{cls}.fit() got the scores twice (X and {alias})")
            X = names[alias]
    if "labels" in names:
        if y is not None:
            raise TypeError(f"{cls}.fit() got the labels twice (y and labels)")
        y = names["labels"]
    if X is None:
        raise TypeError(f"{cls}.fit() needs the scores and the labels: fit(X, y) or fit(scores, labels)")
    if y is None:
        raise ValueError(f"{cls} requires y to be passed, but the target y is None: fit(X, y) or fit(scores, labels)")
    return X, y


class _Calibrator(ClassifierMixin, BaseEstimator):
    """The interface every calibrator implements (the docstrings of ``fit`` and ``predict_proba`` live here).

    A calibrator is a scikit-learn classifier of the scores: ``is_classifier`` is True, ``classes_``
    and ``predict`` are scikit-learn's, and :meth:`score` is the mean log-likelihood of the labels
    (higher is better), so that ``GridSearchCV`` without ``scoring`` picks the best-calibrated map.
    """

    _fitted_attr = ""
    #: whether the scores' columns are the classes (multiclass methods): ``predict_proba`` then
    #: refuses another column count than ``fit`` saw (``n_features_in_``)
    _columns_are_classes = True

    def fit(self, X=None, y=None, sample_weight=None, classes=None, **names):
        """Fit the calibration map on a calibration (validation) set.

        scikit-learn's names (``X``, ``y``) and the toolkit's (``scores``, ``logits``,
        ``labels``) are both accepted, by position or by keyword.

        Parameters
        ----------
        X : array_like or torch.Tensor
            The scores. Binary methods: shape ``(n,)`` (or ``(n, 1)``), of the class's ``input_type``.
            Multiclass methods: logits of shape ``(n, K)`` (``OneVsAll``: probabilities or logits, by
            ``input_type``).
        y : array_like of shape (n,)
            Class labels, scikit-learn's way: the sorted unique labels are ``classes_``, and the
            score columns are in that order (integers ``0..K-1``, ``{1, 2}``, ``{-1, 1}``, strings).
            Integers are not read by their range: a class absent from ``y`` must be named with ``classes``.
        sample_weight : array_like of shape (n,), optional
            Per-sample weights (finite, >= 0), as scikit-learn's: a sample of weight 2 counts as two.
        classes : array_like of shape (K,), optional
            Every class, sorted in the order of the score columns, where ``y`` may lack some
            (a small calibration set): ``classes=range(K)`` for labels that are the columns' indices.
        **names
            ``scores=`` or ``logits=`` for ``X``, ``labels=`` for ``y``.

        Returns
        -------
        self
            The fitted calibrator, with ``classes_`` and ``n_features_in_`` (the scores' columns).
        """
        scores, labels = _fit_arguments(type(self).__name__, X, y, names)
        scores = _one_column(scores)
        k = self._n_classes(scores)  # the scores are checked first: their errors come before the labels'
        s = to_numpy(scores, "scores")
        n = s.shape[0]
        labels = label_array(labels, "labels")
        if labels.ndim == 2 and labels.shape[1] == 1:
            import warnings

            from sklearn.exceptions import DataConversionWarning

            warnings.warn("A column-vector y was passed when a 1d array was expected: its column is taken "
                          "(y.ravel())", DataConversionWarning, stacklevel=2)
        codes, classes = encode_labels(labels, n, k, classes=classes)
        if np.unique(codes).size < 2:
            raise ValueError(f"labels of the calibration set contain one class only ({classes[codes[0]]}); "
                             "a calibrator needs at least two")
        w = check_sample_weight(sample_weight, n)
        with checked():  # the scores, the labels and the weights are checked: _fit does not check them again
            self._fit(scores, codes, w)
        self.classes_ = classes
        self.n_features_in_ = 1 if s.ndim == 1 else int(s.shape[1])
        return self

    def predict_proba(self, X):
        """Calibrated probabilities of new scores.

        Parameters
        ----------
        X : array_like or torch.Tensor
            Scores of the kind and shape given to :meth:`fit` (``(n, 1)`` is read as ``(n,)``).

        Returns
        -------
        numpy.ndarray or torch.Tensor
            Probabilities of shape ``(n, K)``, the columns in the order of ``classes_``; ``(n, 2)``,
            ``[P(y = 0), P(y = 1)]``, for a binary method (and for a single sigmoid logit), as
            scikit-learn. Torch in, torch out; float32 in, float32 out.
        """
        X = _one_column(X)
        self._check_fitted(X)
        return _keep_dtype(self._predict_proba(X), X)

    def _predict_proba(self, scores):
        raise NotImplementedError

    def score(self, X, y, sample_weight=None):
        """The mean log-likelihood of the labels under the calibrated probabilities (higher is better).

        Minus the NLL (:func:`calibcourse.calibration.metrics.nll`, clipped at 1e-12): what
        ``GridSearchCV`` and ``cross_val_score`` maximize when no ``scoring`` is given (a
        calibrator leaves the accuracy, a classifier's usual score, mostly as it is).

        Parameters
        ----------
        X : array_like or torch.Tensor
            Scores, as for :meth:`predict_proba`.
        y : array_like of shape (n,)
            Labels, of ``classes_``.
        sample_weight : array_like of shape (n,), optional
            Per-sample weights.

        Returns
        -------
        float
        """
        from calibcourse.calibration import metrics as M

        p = np.asarray(to_numpy(self.predict_proba(X), "probabilities"), dtype=np.float64)
        lab = label_array(y, "y")
        if lab.ndim == 2 and lab.shape[1] == 1:
            lab = lab[:, 0]
        codes = np.clip(np.searchsorted(self.classes_, lab), 0, len(self.classes_) - 1)
        if lab.shape != (p.shape[0],) or (self.classes_[codes] != lab).any():
            raise ValueError(f"y must hold one label of classes_ {self.classes_.tolist()} per sample")
        return -M.nll(p / p.sum(1, keepdims=True), codes, sample_weight=sample_weight)

    #: scikit-learn's ``check_estimator`` checks that cannot apply to a calibrator of a model's
    #: scores, each with its reason (``tests/test_calibrators.py`` runs the rest, which pass)
    EXPECTED_FAILED_CHECKS = {
        **{name: "X's columns are the classes: y with 3 classes needs 3 columns of scores" for name in (
            "check_estimators_overwrite_params", "check_estimators_fit_returns_self", "check_readonly_memmap_input",
            "check_all_zero_sample_weights_error", "check_classifiers_classes", "check_estimators_dtypes",
            "check_estimators_nan_inf", "check_estimators_pickle", "check_n_features_in_after_fitting",
            "check_non_transformer_estimators_n_iter", "check_pipeline_consistency",
            "check_positive_only_tag_during_fit", "check_sample_weight_equivalence_on_dense_data")},
        "check_classifiers_train": "a calibrator re-maps a model's scores, one column per class: on arbitrary "
                                   "features it is no classifier of its own",
        "check_dtype_object": "scores are numbers; an array of Python objects is refused, not converted",
        "check_estimators_empty_data_messages":
            "a model's scores have at least 2 columns (classes); the message says so",
        "check_fit2d_predict1d": "a 1-D X is a sigmoid network's single logit, not a row to reshape",
    }

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = False
        tags.input_tags.allow_nan = False
        return tags

    def _n_classes(self, scores) -> int:
        """K of valid logits ``scores``: their columns, or 2 for a sigmoid network's ``(n,)``."""
        return int(_multiclass_data(scores, None)[0].shape[1])

    def _fit(self, scores, labels, sample_weight):
        raise NotImplementedError

    def predict(self, scores):
        """The class of highest calibrated probability, as scikit-learn's ``predict``.

        Parameters
        ----------
        scores : array_like or torch.Tensor
            Of the kind and shape given to :meth:`fit`.

        Returns
        -------
        numpy.ndarray or torch.Tensor of shape (n,)
            ``classes_[predict_proba(scores).argmax(1)]``: the labels ``fit`` was given
            (class indices for labels ``0..K-1``).
        """
        idx = self.predict_proba(scores).argmax(1)
        classes = getattr(self, "classes_", None)
        if classes is None or (classes.dtype.kind in "iu" and np.array_equal(classes, np.arange(len(classes)))):
            return idx
        return classes[to_numpy(idx, "indices")]

    def _check_fitted(self, scores=None):
        check_is_fitted(self, self._fitted_attr,
                        msg=f"This {type(self).__name__} is not fitted yet; call fit(scores, labels) on a "
                            "calibration set first")
        n_in = getattr(self, "n_features_in_", None)
        if scores is not None and n_in is not None and self._columns_are_classes:
            shape = tuple(scores.shape) if is_torch(scores) else np.asarray(scores).shape
            width = 1 if len(shape) == 1 else shape[1]
            if width != n_in:
                raise ValueError(f"X has {width} features, but {type(self).__name__} is expecting {n_in} features "
                                 f"as input: the scores have {width} classes but the calibrator was fitted on {n_in} "
                                 "(one column per class, as in fit)")

    def clone(self, **overrides):
        """An unfitted copy with the same parameters, some of them replaced.

        Parameters
        ----------
        **overrides
            Parameters to change in the copy.

        Returns
        -------
        calibrator
            A new, unfitted instance of the same class.
        """
        from sklearn.base import clone

        return clone(self).set_params(**overrides)


def _multiclass_data(logits, labels, name="logits"):
    z = check_logits(logits, name, ndim=None, reject_probabilities=True)
    binary = z.ndim == 1
    if binary:
        z = two_logits(z)
    if z.ndim != 2 or z.shape[1] < 2:
        raise ValueError(f"{name} must have shape (n, K) with K >= 2, or (n,) for one sigmoid "
                         f"logit; got shape {to_numpy(logits, name).shape}")
    if labels is None:
        return z, None, binary
    y = check_labels(labels, z.shape[0], z.shape[1])
    if np.unique(y).size < 2:
        raise ValueError(f"labels of the calibration set contain one class only ({y[0]}); "
                         "a calibrator needs at least two")
    return z, y, binary


class _BinaryCalibrator(_Calibrator):
    _columns_are_classes = False  # (n,) and (n, 2) probabilities are the same input

    def __sklearn_tags__(self):
        # X is one score per sample, shape (n,): scikit-learn's estimator checks, written for
        # feature matrices, declare themselves inapplicable (SkipTestWarning)
        tags = super().__sklearn_tags__()
        tags.input_tags.one_d_array = True
        tags.input_tags.two_d_array = False
        return tags

    def _n_classes(self, scores) -> int:
        self._check_scores(scores)
        return 2

    def _check_scores(self, scores, want="probabilities") -> np.ndarray:
        """Validated scores of shape (n,), converted to ``want`` (probabilities or logits)."""
        check_choice(self.input_type, INPUT_TYPES, "input_type")
        s = to_numpy(scores, "scores")
        if s.ndim == 2 and s.shape[1] == 2 and self.input_type == "probabilities":
            s = s[:, 1]  # (n, 2) probabilities: use P(y = 1)
        s = check_logits(s, "scores", ndim=1, reject_probabilities=self.input_type == "logits")
        if self.input_type == "probabilities":
            if s.min() < 0 or s.max() > 1:
                raise ValueError(f"scores must be probabilities of class 1 in [0, 1] for "
                                 f"input_type='probabilities'; got values from {s.min():g} to {s.max():g} "
                                 "(pass input_type='logits' for real-valued scores)")
            return s if want == "probabilities" else _logit(np.clip(s, EPS, 1 - EPS))
        return expit(s) if want == "probabilities" else s

    def _fit_data(self, scores, labels, want="probabilities"):
        s = self._check_scores(scores, want=want)
        y = check_labels(labels, s.shape[0], 2)
        if np.unique(y).size < 2:
            raise ValueError(f"labels of the calibration set contain one class only ({y[0]}); "
                             "a binary calibrator needs both classes")
        return s, y
