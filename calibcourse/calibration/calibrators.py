"""Post-hoc calibration methods (chapter 3: binary methods; chapter 4: multiclass).

One API for all, in the style of scikit-learn's ``calibration.py``::

    cal = TemperatureScaling().fit(val_logits, val_labels)   # returns self
    probs = cal.predict_proba(test_logits)
    cal.temperature_                                           # fitted attributes end in "_"

Binary methods (:data:`BINARY`: ``HistogramBinning``, ``IsotonicCalibration``,
``BBQ``, ``PlattScaling``) take ``scores`` of shape ``(n,)`` (P(y = 1), or its
logit) and labels in {0, 1}, and ``predict_proba`` returns ``[P(y = 0), P(y = 1)]``
of shape ``(n, 2)``, as scikit-learn's classifiers do (``[:, 1]`` is P(y = 1)).

Multiclass methods (:data:`MULTICLASS`: ``TemperatureScaling``,
``VectorScaling``, ``MatrixScaling``, ``OneVsAll``) take scores of shape
``(n, K)`` and return probabilities of shape ``(n, K)``.
``TemperatureScaling``, ``VectorScaling`` and ``MatrixScaling`` scale logits;
``TemperatureScaling`` also takes the single logit of a sigmoid network, shape
``(n,)``, and then returns shape ``(n, 2)`` too.

scikit-learn's conventions
--------------------------
Every calibrator is a ``sklearn.base.BaseEstimator``: ``get_params(deep=True)``,
``set_params`` and ``sklearn.base.clone`` work (``OneVsAll``'s inner method
included, as ``binary_method__n_bins``), and ``predict_proba`` before ``fit``
raises scikit-learn's ``NotFittedError``. A fitted calibrator has ``classes_``
(``0 .. K - 1``) and ``predict`` (the argmax), so scikit-learn's model-selection
tools (``cross_val_predict``) take it.

What the scores are: ``input_type``
-----------------------------------
The binary methods and ``OneVsAll`` take ``input_type="probabilities"`` (the
default of all of them) or ``input_type="logits"``, and convert with the
sigmoid, the softmax or the logit as they need. Probabilities passed as logits
are an error wherever they can be told apart: scores that all lie in [0, 1]
for a binary method, rows that all lie in [0, 1] and sum to 1 for a
multiclass one.

Inputs may be numpy arrays or torch tensors; a torch input gives a torch output.
"""
from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np
from scipy.special import expit, gammaln, logsumexp
from scipy.special import logit as _logit
from sklearn.base import BaseEstimator
from sklearn.exceptions import NotFittedError
from sklearn.utils.validation import check_is_fitted

from calibcourse.calibration import binning
from calibcourse.calibration import metrics as M
from calibcourse.calibration._validation import (check_choice, check_labels, check_logits, check_n_bins, check_probs,
                                                 check_sample_weight, encode_labels, is_torch, to_numpy, torch_or_none)

__all__ = ["HistogramBinning", "IsotonicCalibration", "BBQ", "PlattScaling", "TemperatureScaling",
           "TemperatureGrid", "VectorScaling", "MatrixScaling", "OneVsAll", "NotFittedError", "INPUT_TYPES", "BINARY",
           "MULTICLASS", "CALIBRATORS"]

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
    if X is None or y is None:
        raise TypeError(f"{cls}.fit() needs the scores and the labels: fit(X, y) or fit(scores, labels)")
    return X, y


def _two_columns(q: np.ndarray) -> np.ndarray:
    """``[1 - q, q]`` of P(y = 1) of shape (n,): the (n, 2) output of a binary ``predict_proba``."""
    return np.stack([1.0 - q, q], axis=1)


class _Calibrator(BaseEstimator):
    """The interface every calibrator implements (the docstrings of ``fit`` and ``predict_proba`` live here)."""

    _fitted_attr = ""
    #: whether the scores' columns are the classes (multiclass methods): ``predict_proba`` then
    #: refuses another column count than ``fit`` saw (``n_features_in_``)
    _columns_are_classes = True

    def fit(self, X=None, y=None, sample_weight=None, **names):
        """Fit the calibration map on a calibration (validation) set.

        scikit-learn's names (``X``, ``y``) and the toolkit's (``scores``, ``logits``,
        ``labels``) are both accepted, by position or by keyword.

        Parameters
        ----------
        X : array_like or torch.Tensor
            The scores. Binary methods: shape ``(n,)``, of the class's ``input_type``. Multiclass methods:
            logits of shape ``(n, K)`` (``OneVsAll``: probabilities or logits, by ``input_type``).
        y : array_like of shape (n,)
            Class labels: integers ``0..K-1`` (the score columns), or any sortable labels
            (``{1, 2}``, ``{-1, 1}``, strings) naming every class once, the sorted labels in the
            order of the columns. ``classes_`` holds them, and ``predict`` returns them.
        sample_weight : array_like of shape (n,), optional
            Per-sample weights (finite, >= 0), as scikit-learn's: a sample of weight 2 counts as two.
        **names
            ``scores=`` or ``logits=`` for ``X``, ``labels=`` for ``y``.

        Returns
        -------
        self
            The fitted calibrator, with ``classes_`` and ``n_features_in_`` (the scores' columns).
        """
        scores, labels = _fit_arguments(type(self).__name__, X, y, names)
        k = self._n_classes(scores)  # the scores are checked first: their errors come before the labels'
        s = to_numpy(scores, "scores")
        n = s.shape[0]
        codes, classes = encode_labels(labels, n, k)
        w = check_sample_weight(sample_weight, n)
        self._fit(scores, codes, w)
        self.classes_ = classes
        self.n_features_in_ = 1 if s.ndim == 1 else int(s.shape[1])
        return self

    #: scikit-learn's ``check_estimator`` checks that cannot apply to a calibrator of a model's
    #: scores, each with its reason (``tests/test_calibrators.py`` runs the rest, which pass)
    EXPECTED_FAILED_CHECKS = {
        "check_estimators_overwrite_params": "X's columns are the classes: y with 3 classes needs 3 columns of scores",
        "check_estimators_fit_returns_self": "X's columns are the classes: y with 3 classes needs 3 columns of scores",
        "check_readonly_memmap_input": "X's columns are the classes: y with 3 classes needs 3 columns of scores",
        "check_dtype_object": "scores are numbers; an array of Python objects is refused, not converted",
        "check_estimators_empty_data_messages":
            "a model's scores have at least 2 columns (classes); the message says so",
        "check_fit2d_1feature": "one column of scores is no classifier's output; (n,) is a sigmoid's single logit",
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

    def predict_proba(self, scores):
        """Calibrated probabilities of new scores.


        Parameters
        ----------
        scores : array_like or torch.Tensor
            Of the kind and shape given to :meth:`fit`.

        Returns
        -------
        numpy.ndarray or torch.Tensor
            Probabilities of shape ``(n, K)``; ``(n, 2)``, ``[P(y = 0), P(y = 1)]``, for a binary method (and
            for a single sigmoid logit), as scikit-learn. Torch in, torch out.

        """
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
            shape = np.shape(scores)
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


# =========================================================================== binary
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


class HistogramBinning(_BinaryCalibrator):
    r"""Histogram binning (Zadrozny and Elkan 2001).

    Cuts the scores into ``n_bins`` bins (:mod:`calibcourse.calibration.binning`: Guo's bins
    :math:`B_m = (a_m, a_{m+1}]`, closed on the right, a score of exactly 0 in the
    first) and predicts, for every score in bin ``m``, the fraction of positives of
    the calibration samples in it (an empty bin predicts its midpoint):

    .. math:: \theta_m = \arg\min_\theta \sum_i \mathbb 1(\hat p_i \in B_m)(\theta - y_i)^2
              = \frac{1}{|B_m|}\sum_{i \in B_m} y_i

    Parameters
    ----------
    n_bins : int, default=15
        Number of bins.
    strategy : {"uniform", "quantile"}, default="uniform"
        Equal-width Guo bins or equal-mass bins (:mod:`calibcourse.calibration.binning`).
    input_type : {"probabilities", "logits"}, default="probabilities"
        What the scores are (:data:`calibcourse.calibration.calibrators.INPUT_TYPES`).

    Attributes
    ----------
    bin_edges_ : numpy.ndarray of shape (n_bins + 1,)
        The bin edges.
    bin_values_ : numpy.ndarray of shape (n_bins,)
        :math:`\theta_m`, the prediction of each bin.
    bin_counts_ : numpy.ndarray of shape (n_bins,)
        Calibration samples per bin (their weights' sum, with ``sample_weight``).

    Examples
    --------
    >>> p = np.array([0.1, 0.2, 0.3, 0.6, 0.7, 0.9])
    >>> y = np.array([0, 0, 1, 1, 1, 1])
    >>> hb = HistogramBinning(n_bins=2).fit(p, y)
    >>> hb.bin_values_
    array([0.33333333, 1.        ])
    >>> hb.predict_proba(np.array([0.05, 0.5, 0.95]))[:, 1]  # P(y = 1); column 0 is P(y = 0)
    array([0.33333333, 0.33333333, 1.        ])
    """

    _fitted_attr = "bin_values_"

    def __init__(self, n_bins: int = 15, strategy: str = "uniform", input_type: str = "probabilities"):
        self.n_bins = n_bins
        self.strategy = strategy
        self.input_type = input_type

    def _fit(self, scores, labels, sample_weight):
        n_bins = check_n_bins(self.n_bins)
        check_choice(self.strategy, binning.STRATEGIES, "strategy")
        p, y = self._fit_data(scores, labels)
        w = np.ones_like(p) if sample_weight is None else sample_weight
        if p.shape[0] < n_bins:
            raise ValueError(f"too few samples for the bins asked: {p.shape[0]} samples, "
                             f"n_bins={n_bins}")
        edges = binning.assign_bins(p, n_bins, self.strategy)[1]
        # calibration scores are binned by the edges, as new scores will be (ties on an edge go below)
        idx = binning.bin_index(p, edges)
        counts = np.bincount(idx, weights=w, minlength=n_bins)
        pos = np.bincount(idx, weights=w * y, minlength=n_bins)
        mid = (edges[:-1] + edges[1:]) / 2
        self.bin_edges_ = edges
        self.bin_counts_ = counts
        with np.errstate(invalid="ignore", divide="ignore"):
            self.bin_values_ = np.where(counts > 0, pos / counts, mid)
        return self

    def predict_proba(self, scores):
        self._check_fitted()
        p = self._check_scores(scores)
        return _like(_two_columns(self.bin_values_[binning.bin_index(p, self.bin_edges_)]), scores)


def _pool_adjacent_violators(y: np.ndarray, w: np.ndarray) -> np.ndarray:
    """Weighted least-squares non-decreasing fit to ``y`` (already ordered by score): scikit-learn's
    compiled pool-adjacent-violators (``sklearn.isotonic.isotonic_regression``)."""
    from sklearn.isotonic import isotonic_regression

    return isotonic_regression(np.asarray(y, dtype=np.float64), sample_weight=np.asarray(w, dtype=np.float64),
                               increasing=True)


class IsotonicCalibration(_BinaryCalibrator):
    r"""Isotonic regression (Zadrozny and Elkan 2002) by pool-adjacent-violators.

    The non-decreasing step function :math:`f` minimizing
    :math:`\sum_i (f(\hat p_i) - y_i)^2`: histogram binning whose bin edges and
    values are both learned, under :math:`\theta_1 \le \dots \le \theta_M`.
    Exactly equal scores are pooled first; between fitted points ``predict_proba``
    interpolates linearly and outside them it clips, as scikit-learn's
    ``IsotonicRegression(out_of_bounds="clip")`` does. The two agree wherever no two
    distinct scores lie within 1e-15 of each other; scikit-learn merges such scores
    (``_make_unique``), this keeps them apart (``tests/test_calibrators.py`` checks both).

    Parameters
    ----------
    input_type : {"probabilities", "logits"}, default="probabilities"
        What the scores are (:data:`calibcourse.calibration.calibrators.INPUT_TYPES`).

    Attributes
    ----------
    x_thresholds_ : numpy.ndarray
        The distinct calibration scores, increasing.
    y_thresholds_ : numpy.ndarray
        The fitted non-decreasing values at ``x_thresholds_``.

    Examples
    --------
    >>> iso = IsotonicCalibration().fit(np.array([0.1, 0.4, 0.6, 0.9]), np.array([0, 1, 0, 1]))
    >>> iso.y_thresholds_
    array([0. , 0.5, 0.5, 1. ])
    >>> iso.predict_proba(np.array([0.0, 0.25, 1.0]))
    array([[1.  , 0.  ],
           [0.75, 0.25],
           [0.  , 1.  ]])
    """

    _fitted_attr = "y_thresholds_"

    def __init__(self, input_type: str = "probabilities"):
        self.input_type = input_type

    def _fit(self, scores, labels, sample_weight):
        p, y = self._fit_data(scores, labels)
        if sample_weight is not None:  # a sample of weight 0 is no sample
            keep = sample_weight > 0
            p, y, sample_weight = p[keep], y[keep], sample_weight[keep]
        x_unique, inverse = np.unique(p, return_inverse=True)
        w = np.bincount(inverse, weights=sample_weight).astype(float)
        y_mean = np.bincount(inverse, weights=y if sample_weight is None else sample_weight * y) / w
        fitted = _pool_adjacent_violators(y_mean, w)
        self.x_thresholds_ = x_unique
        self.y_thresholds_ = fitted
        return self

    def predict_proba(self, scores):
        self._check_fitted()
        p = self._check_scores(scores)
        return _like(_two_columns(np.interp(p, self.x_thresholds_, self.y_thresholds_)), scores)


class BBQ(_BinaryCalibrator):
    r"""Bayesian Binning into Quantiles (Naeini, Cooper and Hauskrecht 2015).

    Averages equal-frequency histogram-binning models with ``B`` bins, for
    every ``B`` from :math:`\lfloor N^{1/3}/C \rfloor` to
    :math:`\lceil C N^{1/3} \rceil` (or the ``n_bins`` given), each
    weighted by its Bayesian (BDeu) score

    .. math:: P(D \mid M) = \prod_{b=1}^{B}
              \frac{\Gamma(\tfrac{N'}{B})}{\Gamma(N_b + \tfrac{N'}{B})}
              \frac{\Gamma(m_b + \alpha_b)}{\Gamma(\alpha_b)}
              \frac{\Gamma(n_b + \beta_b)}{\Gamma(\beta_b)},\quad
              \alpha_b = \tfrac{N'}{B} p_b,\ \beta_b = \tfrac{N'}{B}(1 - p_b)

    where bin ``b`` holds ``m_b`` positives and ``n_b`` negatives, ``p_b`` is
    its midpoint and ``N' = prior_strength``; models have a uniform prior. A
    model predicts the posterior mean :math:`(m_b + \alpha_b) / (N_b + N'/B)`
    of the bin a score falls in.

    Parameters
    ----------
    n_bins : int or sequence of int, optional
        The numbers of bins of the models; by default the paper's range above.
    C : float, default=10.0
        The paper's constant of the range of ``B``.
    prior_strength : float, default=2.0
        ``N'``, the equivalent sample size of the Beta priors (2 in the paper).
    input_type : {"probabilities", "logits"}, default="probabilities"
        What the scores are (:data:`calibcourse.calibration.calibrators.INPUT_TYPES`).

    Attributes
    ----------
    n_bins_ : list of int
        ``B`` of each model.
    bin_edges_, bin_values_ : list of numpy.ndarray
        The edges and predictions of each model.
    log_scores_ : numpy.ndarray
        The log BDeu score of each model.
    model_weights_ : numpy.ndarray
        The posterior weight of each model (summing to 1).

    Examples
    --------
    >>> bbq = BBQ(n_bins=[1, 2]).fit(np.array([0.1, 0.4, 0.6, 0.9]), np.array([0, 0, 1, 1]))
    >>> bbq.model_weights_.round(3)  # two bins explain the data better than one
    array([0.072, 0.928])
    """

    _fitted_attr = "model_weights_"

    def __init__(self, n_bins=None, C: float = 10.0, prior_strength: float = 2.0,
                 input_type: str = "probabilities"):
        self.n_bins = n_bins
        self.C = C
        self.prior_strength = prior_strength
        self.input_type = input_type

    def _model_range(self, n: int):
        if self.n_bins is not None:
            bins = [check_n_bins(b, "n_bins") for b in np.atleast_1d(self.n_bins)]
        else:
            root = n ** (1.0 / 3.0)
            lo = max(1, int(math.floor(root / self.C)))
            hi = int(math.ceil(root * self.C))
            bins = list(range(lo, hi + 1))
        bins = [b for b in bins if b <= n]
        if not bins:
            raise ValueError(f"too few samples for the bins asked: {n} samples, n_bins={self.n_bins}")
        return bins

    def _fit(self, scores, labels, sample_weight):
        if not (self.prior_strength > 0):
            raise ValueError(f"prior_strength must be > 0; got {self.prior_strength!r}")
        p, y = self._fit_data(scores, labels)
        n = p.shape[0]
        w = np.ones_like(p) if sample_weight is None else sample_weight  # the bins stay the samples' quantiles
        self.n_bins_, self.bin_edges_, self.bin_values_, log_scores = [], [], [], []
        order = np.argsort(p, kind="stable")  # one sort for every model's bins
        for b in self._model_range(n):
            idx, edges = binning.quantile_bins(p, b, order=order)
            n_b = np.bincount(idx, weights=w, minlength=b)
            m_b = np.bincount(idx, weights=w * y, minlength=b)
            mid = (edges[:-1] + edges[1:]) / 2
            a0 = self.prior_strength / b
            alpha, beta = a0 * mid, a0 * (1 - mid)
            alpha, beta = np.maximum(alpha, EPS), np.maximum(beta, EPS)
            log_score = np.sum(gammaln(a0) - gammaln(n_b + a0) + gammaln(m_b + alpha) - gammaln(alpha)
                               + gammaln(n_b - m_b + beta) - gammaln(beta))
            self.n_bins_.append(b)
            self.bin_edges_.append(edges)
            self.bin_values_.append((m_b + alpha) / (n_b + a0))
            log_scores.append(log_score)
        log_scores = np.array(log_scores)
        w = np.exp(log_scores - logsumexp(log_scores))
        self.log_scores_ = log_scores
        self.model_weights_ = w / w.sum()
        return self

    def predict_proba(self, scores):
        self._check_fitted()
        p = self._check_scores(scores)
        out = np.zeros_like(p)
        for w, edges, values in zip(self.model_weights_, self.bin_edges_, self.bin_values_):
            out += w * values[binning.bin_index(p, edges)]
        return _like(_two_columns(out), scores)


def _fit_logistic_1d(z: np.ndarray, y: np.ndarray, tol: float = 1e-12, max_iter: int = 100, w=None):
    """Unregularized (weighted) logistic regression of y on z by Newton's method: returns (a, b)."""
    X = np.stack([z, np.ones_like(z)], 1)
    theta = np.zeros(2)
    w = np.full(len(y), 1.0 / len(y)) if w is None else w / w.sum()

    def loss(t):
        u = X @ t
        return np.sum(w * (np.logaddexp(0, u) - y * u))

    for _ in range(max_iter):
        q = expit(X @ theta)
        grad = X.T @ (w * (q - y))
        hess = (X * (w * q * (1 - q))[:, None]).T @ X + 1e-12 * np.eye(2)
        step = np.linalg.solve(hess, grad)
        t, f0 = 1.0, loss(theta)
        while loss(theta - t * step) > f0 + 1e-4 * t * grad @ (-step) and t > 1e-10:
            t /= 2  # backtracking keeps Newton safe when the classes are nearly separable
        theta = theta - t * step
        if np.max(np.abs(t * step)) < tol:
            break
    return float(theta[0]), float(theta[1])


class PlattScaling(_BinaryCalibrator):
    r"""Platt scaling (Platt 1999): :math:`\hat q = \sigma(a z + b)`.

    ``a`` and ``b`` minimize the NLL of the calibration labels, i.e. an
    unregularized logistic regression on the logit ``z`` (Newton's method, to
    1e-12). Probabilities are turned into logits first.

    Parameters
    ----------
    input_type : {"probabilities", "logits"}, default="probabilities"
        What the scores are (:data:`calibcourse.calibration.calibrators.INPUT_TYPES`).

    Attributes
    ----------
    a_, b_ : float
        The slope and intercept on the logit.

    Examples
    --------
    >>> z = np.array([-2.0, -1.0, 1.0, 2.0, -0.5, 0.5])
    >>> y = np.array([0, 0, 1, 1, 1, 0])
    >>> platt = PlattScaling(input_type="logits").fit(z, y)
    >>> round(platt.a_, 4), round(platt.b_, 4)
    (1.3511, 0.0)
    >>> PlattScaling().fit(z, y)
    Traceback (most recent call last):
    ...
    ValueError: scores must be probabilities of class 1 in [0, 1] for input_type='probabilities'; got values
    from -2 to 2 (pass input_type='logits' for real-valued scores)
    """

    _fitted_attr = "a_"

    def __init__(self, input_type: str = "probabilities"):
        self.input_type = input_type

    def _fit(self, scores, labels, sample_weight):
        z, y = self._fit_data(scores, labels, want="logits")
        self.a_, self.b_ = _fit_logistic_1d(z, y.astype(float), w=sample_weight)
        return self

    def predict_proba(self, scores):
        self._check_fitted()
        z = self._check_scores(scores, want="logits")
        return _like(_two_columns(expit(self.a_ * z + self.b_)), scores)


# =========================================================================== multiclass
def _multiclass_data(logits, labels, name="logits"):
    z = check_logits(logits, name, ndim=None, reject_probabilities=True)
    binary = z.ndim == 1
    if binary:
        z = np.stack([np.zeros_like(z), z], 1)  # sigmoid(z) = softmax([0, z])[1]
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


class _Separated(ValueError):
    """The NLL keeps decreasing as T -> 0: every label is the argmax."""


def _newton_in_beta(moments, beta: float, tol: float, max_iter: int):
    """Safeguarded Newton on the convex NLL(beta) from ``beta``: returns (beta, NLL at the last evaluation).

    ``moments(beta) -> (dNLL/dbeta, d2NLL/dbeta2, NLL)``. g < 0 left of the optimum and
    g > 0 right of it bracket it; a Newton step that leaves the bracket is replaced by
    bisection (or by quadrupling while there is no upper end). Stops when a step is below
    ``tol * max(1, beta)`` or the bracket is narrower than ``tol``.
    """
    lo, hi, nll = 0.0, np.inf, np.nan
    for _ in range(max_iter):
        g, h, nll = moments(beta)
        if h > 0 and abs(g / h) < tol * max(1.0, beta):  # converged: take the last, tiny Newton step
            return beta - g / h, nll
        if g < 0:
            lo = beta
        else:
            hi = beta
        new = beta - g / h if h > 0 else np.inf
        if not (lo < new < hi):
            new = beta * 4 if hi == np.inf else (lo + hi) / 2
        if new > 1e12:
            raise _Separated("the optimal temperature is 0: the calibration set is perfectly "
                             "separated by the logits (every label is the argmax)")
        step = abs(new - beta)
        beta = new
        if step < tol * max(1.0, beta) or hi - lo < tol:
            break
    return beta, nll


def _moments_torch(a, a_y, w=None):
    """``at(beta) -> (dNLL/dbeta, d2NLL/dbeta2, NLL)`` over the torch tensors ``a`` (rows shifted by
    their max) and ``a_y`` (the label's entry), computed in ``a``'s dtype (float32 is ~2x faster);
    ``w``: row weights summing to 1 (None: the mean)."""
    import torch

    wt = None if w is None else torch.as_tensor(w, dtype=torch.float64)

    def mean(x):
        return float(x.double().mean()) if wt is None else float((x.double() * wt).sum())

    rows = max(1, 2**18 // a.shape[1])  # a block of rows whose temporaries stay in the cache
    buf = torch.empty(min(rows, a.shape[0]), a.shape[1], dtype=a.dtype)
    sums = torch.empty(3, a.shape[0], dtype=a.dtype)

    def at(beta):
        for i in range(0, a.shape[0], rows):  # s_j = sum_k a^j exp(beta a), j = 0, 1, 2, per row
            blk = a[i: i + rows]
            q = buf[: blk.shape[0]]
            torch.mul(blk, beta, out=q).exp_()
            torch.sum(q, 1, out=sums[0, i: i + rows])
            torch.sum(q.mul_(blk), 1, out=sums[1, i: i + rows])
            torch.sum(q.mul_(blk), 1, out=sums[2, i: i + rows])
        s = sums[0]
        m1, m2 = sums[1] / s, sums[2] / s
        return mean(m1 - a_y), mean(m2 - m1 * m1), mean(s.log() - beta * a_y)
    return at


def _moments_numpy(a, a_y, w=None):
    """:func:`_moments_torch` in numpy (one thread), block by block."""
    rows = max(1, 2**18 // a.shape[1])
    sums = np.empty((3, a.shape[0]), dtype=a.dtype)

    def mean(x):
        x = x.astype(np.float64)
        return float(np.mean(x)) if w is None else float(np.dot(w, x))

    def at(beta):
        for i in range(0, a.shape[0], rows):
            blk = a[i: i + rows]
            q = np.exp(blk * a.dtype.type(beta))
            sums[0, i: i + rows] = q.sum(1)
            q *= blk
            sums[1, i: i + rows] = q.sum(1)
            q *= blk
            sums[2, i: i + rows] = q.sum(1)
        s = sums[0]
        m1, m2 = sums[1] / s, sums[2] / s
        return mean(m1 - a_y), mean(m2 - m1 * m1), mean(np.log(s) - beta * a_y)
    return at


def _solve_beta(zc, zc_y, tol: float, max_iter: int, subsample: int, w=None):
    """The NLL-optimal ``beta = 1/T`` and the NLL there, from row-shifted logits ``zc`` (float64, torch
    or numpy: the same steps in either), the label's entries ``zc_y`` and row weights ``w`` (sum 1, or None)."""
    if isinstance(zc, np.ndarray):
        moments, zc32, zc_y32 = _moments_numpy, zc.astype(np.float32), zc_y.astype(np.float32)
    else:
        moments, zc32, zc_y32 = _moments_torch, zc.float(), zc_y.float()
    beta = 1.0
    stride = len(zc_y) // subsample
    if stride >= 4:  # a starting point from every stride-th row: a few cheap passes instead of full ones
        try:
            ws = None if w is None else w[::stride] / w[::stride].sum()
            beta, _ = _newton_in_beta(moments(zc32[::stride], zc_y32[::stride], ws), beta, 1e-3, max_iter)
        except _Separated:
            beta = 1.0
    try:  # float32 until the step is below 1e-4, then float64 (float32 brackets may be off by rounding)
        beta, _ = _newton_in_beta(moments(zc32, zc_y32, w), beta, 1e-4, max_iter)
        beta, nll = _newton_in_beta(moments(zc, zc_y, w), beta, tol, max_iter)
    except _Separated as exc:
        raise ValueError(str(exc)) from None
    return beta, nll


class TemperatureScaling(_Calibrator):
    r"""Temperature scaling (Guo et al. 2017): :math:`\hat q = \sigma_{SM}(z / T)`.

    One ``T > 0`` for all classes, minimizing the NLL of the calibration set.
    In :math:`\beta = 1/T` the NLL
    :math:`\frac1n\sum_i [\log\sum_k e^{\beta z_{ik}} - \beta z_{iy_i}]` is
    convex, with derivative :math:`\frac1n\sum_i (\mathbb E_{q_i}[z_i] - z_{iy_i})`
    and second derivative :math:`\frac1n\sum_i \mathrm{Var}_{q_i}[z_i] \ge 0`;
    it is solved exactly by safeguarded Newton steps inside a bracket, not by a
    few LBFGS steps: first on an evenly spaced subsample of at most 2048
    rows (a starting point), then in float32 on all rows, then in float64 to
    ``tol``. The argmax, and so the accuracy, does not change.

    Logits of shape ``(n,)`` are the single logit of a sigmoid network:
    :math:`\hat q = \sigma(z / T)`.

    Logits that carry no signal about the labels (the NLL's slope at
    :math:`\beta = 0` is not negative, e.g. an untrained network's) have their
    optimum at :math:`T = \infty`, the uniform prediction: ``fit`` then warns
    (``UserWarning``) and returns :attr:`NO_SIGNAL_TEMPERATURE` = 1, the logits
    unchanged. A perfectly separated calibration set (every label the argmax)
    has its optimum at ``T = 0`` and is an error.

    The passes run in numpy, single-threaded, unless the logits are a torch tensor or
    the caller asked for torch (:func:`calibcourse.calibration._validation.use_torch`);
    both give the same temperature (to 1e-12).

    Parameters
    ----------
    tol : float, default=1e-10
        Tolerance on :math:`\beta = 1/T` (relative when :math:`\beta > 1`).
    max_iter : int, default=200
        Newton steps at most, per stage.

    Attributes
    ----------
    temperature_ : float
        The fitted temperature ``T``.
    nll_ : float
        The calibration set's NLL at ``T``.

    Examples
    --------
    >>> from calibcourse.calibration.synthetic import scaled_logits
    >>> z3, y = scaled_logits(2000, 5, factor=3.0, seed=0)  # a network three times overconfident
    >>> ts = TemperatureScaling().fit(z3, y)
    >>> round(ts.temperature_, 2)  # the true 3, estimated from 2000 labels
    2.95
    >>> ts.predict_proba(z3[:1]).round(3), M.softmax(z3[:1] / 3).round(3)  # about the true probabilities
    (array([[0.192, 0.13 , 0.421, 0.186, 0.07 ]]), array([[0.193, 0.131, 0.418, 0.187, 0.072]]))
    """

    _fitted_attr = "temperature_"
    #: rows of the subsample that finds the starting point
    _SUBSAMPLE = 2048
    #: The temperature fitted to logits without signal (with a ``UserWarning``): the logits unchanged.
    NO_SIGNAL_TEMPERATURE = 1.0

    def __init__(self, tol: float = 1e-10, max_iter: int = 200):
        self.tol = tol
        self.max_iter = max_iter

    def _fit(self, logits, labels, sample_weight):
        z, y, _ = _multiclass_data(logits, labels)
        w = None if sample_weight is None else sample_weight / sample_weight.sum()
        live = slice(None) if w is None else w > 0  # rows of weight 0 take no part
        # torch runs the passes where the caller handed torch tensors or asked for it (use_torch); else numpy
        torch = torch_or_none()
        if torch is None and is_torch(logits):
            import torch
        # shift each row by its max: beta * (z - max z) <= 0 never overflows, and the shift
        # cancels in E_q[z] - z_y
        if torch is not None:
            zt = torch.from_numpy(z)
            zc = zt - zt.max(1, keepdim=True).values
            zc_y = zc[torch.arange(len(y)), torch.from_numpy(y)]
            gap = (zc.mean(1) - zc_y).double().numpy()
            separated = bool((zc_y.numpy() == 0)[live].all())
        else:
            zc = z - z.max(1, keepdims=True)
            zc_y = zc[np.arange(len(y)), y]
            gap = zc.mean(1) - zc_y
            separated = bool((zc_y == 0)[live].all())
        slope0 = float(np.mean(gap)) if w is None else float(np.dot(w, gap))
        if separated:  # the NLL decreases all the way to T = 0
            raise ValueError("the optimal temperature is 0: the calibration set is perfectly separated by "
                             "the logits (every label is the argmax)")
        if slope0 >= 0:  # dNLL/dbeta at beta = 0: the NLL is smallest at T = infinity
            import warnings

            warnings.warn("the logits carry no signal about the labels: the NLL does not decrease for any "
                          "finite T (its optimum is T = infinity, the uniform prediction); temperature "
                          f"scaling is undefined here and returns T = {self.NO_SIGNAL_TEMPERATURE:g}, the logits "
                          "unchanged", UserWarning, stacklevel=4)
            self.temperature_ = self.NO_SIGNAL_TEMPERATURE
            self.nll_ = M.nll(M.softmax(z / self.temperature_), y, sample_weight=sample_weight)
            return self
        beta, self.nll_ = _solve_beta(zc, zc_y, self.tol, self.max_iter, self._SUBSAMPLE, w)
        self.temperature_ = 1.0 / beta
        return self

    def predict_proba(self, logits):
        self._check_fitted(logits)
        z = _multiclass_data(logits, None)[0]
        q = M.softmax(z / self.temperature_)
        return _like(q, logits)

    @staticmethod
    def grid(logits, labels, temperatures=None, n_bins: int = 15) -> "TemperatureGrid":
        """ECE and NLL of ``softmax(z / T)`` for every T of ``temperatures``: the hand search.

        Note that the ECE-optimal T of a grid is fitted to a biased, noisy
        objective; the NLL-optimal T is what ``fit`` finds exactly. The grid
        computes; a table of a result ``g`` is ``pandas.DataFrame(g._asdict())``.

        Parameters
        ----------
        logits : array_like of shape (n, K) or (n,)
            Logits (or one sigmoid logit per sample).
        labels : array_like of shape (n,)
            Integer class labels.
        temperatures : sequence of float, optional
            Positive temperatures; default 0.25 to 5 in steps of 0.05.
        n_bins : int, default=15
            Number of bins.

        Returns
        -------
        TemperatureGrid
            Arrays ``temperature``, ``ece``, ``nll``, one entry per temperature; ``best("ece")`` is the hand
            search's choice.

        Examples
        --------
        >>> z = np.array([[2.0, 0.0], [0.0, 2.0], [2.0, 0.0], [0.0, 1.0]])
        >>> g = TemperatureScaling.grid(z, np.array([0, 1, 1, 1]), temperatures=[0.5, 1.0, 2.0])
        >>> g.temperature, g.nll.round(3)
        (array([0.5, 1. , 2. ]), array([1.045, 0.674, 0.603]))
        >>> g.best("nll"), g.best("ece")
        (2.0, 2.0)
        """
        z, y, _ = _multiclass_data(logits, labels)
        ts = np.round(np.arange(0.25, 5.0001, 0.05), 4) if temperatures is None else np.asarray(temperatures, float)
        if ts.ndim != 1 or ts.size == 0 or np.any(~np.isfinite(ts)) or np.any(ts <= 0):
            raise ValueError("temperatures must be a non-empty 1-D sequence of positive numbers")
        ece, nll = np.empty(ts.size), np.empty(ts.size)
        for i, t in enumerate(ts):
            q = M.softmax(z / t)
            ece[i], nll[i] = M.ece(q, y, n_bins=n_bins), M.nll(q, y)
        return TemperatureGrid(temperature=ts.copy(), ece=ece, nll=nll)


class TemperatureGrid(NamedTuple):
    """The validation ECE and NLL over a grid of temperatures (:meth:`TemperatureScaling.grid`).

    Attributes
    ----------
    temperature : numpy.ndarray of shape (m,)
        The temperatures, in the order given.
    ece : numpy.ndarray of shape (m,)
        Top-label ECE of ``softmax(z / T)`` (a fraction, not percent).
    nll : numpy.ndarray of shape (m,)
        Mean negative log-likelihood in nats.

    Examples
    --------
    >>> g = TemperatureGrid(np.array([1.0, 2.0]), np.array([0.10, 0.05]), np.array([0.9, 0.7]))
    >>> g.best("ece"), g.best("nll")
    (2.0, 2.0)
    """

    temperature: np.ndarray
    ece: np.ndarray
    nll: np.ndarray

    def best(self, by: str = "ece") -> float:
        """The temperature with the smallest ``by`` (the first one on ties).

        Parameters
        ----------
        by : {"ece", "nll"}, default="ece"
            The column to minimize.

        Returns
        -------
        float
            That temperature.
        """
        if by not in ("ece", "nll"):
            raise ValueError(f"by must be 'ece' or 'nll', got {by!r}")
        return float(self.temperature[int(np.argmin(getattr(self, by)))])


def _fit_affine_logits(z, y, mode: str, bias: bool, l2: float = 0.0, off_diagonal: float = 0.0,
                       bias_l2: float = 0.0, tie_weights: bool = False, sample_weight=None):
    """Minimize NLL(softmax(W z + b)) (+ penalties) with L-BFGS and an analytic gradient.

    mode "vector": W = diag(w) (or w * I with ``tie_weights``); "matrix": W full.
    Penalties: ``l2 * ||W - I||^2`` (matrix: all entries), ``off_diagonal * sum_{i != j} W_ij^2``
    and ``bias_l2 * ||b||^2`` (the ODIR of Kull et al. 2019), each divided by K^2 or K.
    """
    from scipy.optimize import minimize

    n, k = z.shape
    rw = None if sample_weight is None else (sample_weight / sample_weight.mean())[:, None]  # mean 1
    nw = 1 if tie_weights else (k if mode == "vector" else k * k)
    nb = k if bias else 0
    w0 = np.ones(nw) if mode == "vector" else np.eye(k).ravel()
    x0 = np.concatenate([w0, np.zeros(nb)])
    eye = np.eye(k)
    off = 1.0 - eye

    def unpack(x):
        w = x[:nw]
        b = x[nw:] if bias else np.zeros(k)
        if mode == "vector":
            W = np.diag(np.full(k, w[0]) if tie_weights else w)
        else:
            W = w.reshape(k, k)
        return W, b

    vector = mode == "vector"

    def f(x):
        W, b = unpack(x)
        u = z * np.diag(W) + b if vector else z @ W.T + b  # a diagonal W scales the columns
        m = u.max(1, keepdims=True)
        q = np.exp(u - m)
        s = q.sum(1, keepdims=True)
        q /= s
        lse = m[:, 0] + np.log(s[:, 0])
        per_row = lse - u[np.arange(n), y]
        loss = np.mean(per_row) if rw is None else np.mean(rw[:, 0] * per_row)
        q[np.arange(n), y] -= 1.0                 # q - onehot
        d = q / n if rw is None else q * (rw / n)  # dL/du
        gb = d.sum(0)
        if vector:  # only the diagonal of dL/dW is needed
            gdiag = np.einsum("ij,ij->j", d, z)
            gW = np.diag(gdiag)
        else:
            gW = d.T @ z                          # dL/dW
        if mode == "matrix":
            loss += l2 / k**2 * np.sum((W - eye) ** 2) + off_diagonal / (k * (k - 1)) * np.sum((W * off) ** 2)
            gW = gW + 2 * l2 / k**2 * (W - eye) + 2 * off_diagonal / (k * (k - 1)) * W * off
        if bias and bias_l2:
            loss += bias_l2 / k * np.sum(b**2)
            gb = gb + 2 * bias_l2 / k * b
        if mode == "vector":
            gw = np.array([np.trace(gW)]) if tie_weights else np.diag(gW).copy()
        else:
            gw = gW.ravel()
        return loss, np.concatenate([gw, gb if bias else []])

    res = minimize(f, x0, jac=True, method="L-BFGS-B",
                   options={"maxiter": 2000, "gtol": 1e-8, "ftol": 1e-12})
    W, b = unpack(res.x)
    return W, b, res


class _AffineLogitScaling(_Calibrator):
    """Shared by vector and matrix scaling: ``softmax(transform(z))`` of fitted ``coef_``, ``intercept_``."""

    _fitted_attr = "coef_"

    def predict_proba(self, logits):
        self._check_fitted(logits)
        z = _multiclass_data(logits, None)[0]
        if z.shape[1] != self.coef_.shape[0]:
            raise ValueError(f"logits have {z.shape[1]} classes but the calibrator was fitted on "
                             f"{self.coef_.shape[0]}")
        q = M.softmax(self._transform(z))
        return _like(q, logits)


class VectorScaling(_AffineLogitScaling):
    r"""Vector scaling (Guo et al. 2017): :math:`\hat q = \sigma_{SM}(w \odot z + b)`.

    A weight per class and a bias per class, minimizing NLL (convex; L-BFGS
    with an analytic gradient). Positive weights keep the order of each logit
    but, unlike TS, may change the argmax.

    Parameters
    ----------
    bias : bool, default=True
        Fit the bias ``b`` (else ``b = 0``).
    tie_weights : bool, default=False
        One weight shared by all classes. ``tie_weights=True, bias=False`` is temperature scaling with :math:`w = 1/T`.

    Attributes
    ----------
    coef_ : numpy.ndarray of shape (K,)
        The weights ``w``.
    intercept_ : numpy.ndarray of shape (K,)
        The biases ``b``.
    result_ : scipy.optimize.OptimizeResult
        The optimizer's report.

    Examples
    --------
    >>> from calibcourse.calibration.synthetic import scaled_logits
    >>> z2, y = scaled_logits(2000, 3, factor=2.0, spread=1.0, seed=0)
    >>> VectorScaling(tie_weights=True, bias=False).fit(z2, y).coef_.round(1)  # w = 1/T
    array([0.5, 0.5, 0.5])
    """

    def __init__(self, bias: bool = True, tie_weights: bool = False):
        self.bias = bias
        self.tie_weights = tie_weights

    def _fit(self, logits, labels, sample_weight):
        z, y, _ = _multiclass_data(logits, labels)
        W, b, self.result_ = _fit_affine_logits(z, y, "vector", self.bias, tie_weights=self.tie_weights,
                                                sample_weight=sample_weight)
        self.coef_ = np.diag(W).copy()
        self.intercept_ = b
        return self

    def _transform(self, z):
        return z * self.coef_ + self.intercept_


class MatrixScaling(_AffineLogitScaling):
    r"""Matrix scaling (Guo et al. 2017): :math:`\hat q = \sigma_{SM}(W z + b)`.

    ``K^2 + K`` parameters fitted by NLL (convex; L-BFGS from ``W = I``).
    Unregularized it is a multinomial logistic regression on the logits, and
    overfits small calibration sets with many classes (Guo et al., Table 1,
    CIFAR-100).

    Parameters
    ----------
    l2 : float, default=0.0
        Penalty ``l2 * ||W - I||^2 / K^2``.
    off_diagonal : float, default=0.0
        The ODIR penalty of Kull et al. (2019), ``off_diagonal * sum_{i != j} W_ij^2 / (K(K-1))``.
    bias_l2 : float, default=0.0
        Penalty ``bias_l2 * ||b||^2 / K``.

    Attributes
    ----------
    coef_ : numpy.ndarray of shape (K, K)
        ``W``.
    intercept_ : numpy.ndarray of shape (K,)
        ``b``.
    result_ : scipy.optimize.OptimizeResult
        The optimizer's report.

    Examples
    --------
    A network twice overconfident (:func:`~calibcourse.calibration.synthetic.scaled_logits`): ``W`` about ``I / 2``.

    >>> from calibcourse.calibration.synthetic import scaled_logits
    >>> W = MatrixScaling().fit(*scaled_logits(3000, 3, factor=2.0, spread=1.0, seed=0)).coef_
    >>> (W - W[0]).round(1)  # W is identified up to a row added to every row: about I / 2 - (I / 2)[0]
    array([[ 0. ,  0. ,  0. ],
           [-0.5,  0.5,  0. ],
           [-0.5,  0. ,  0.5]])
    """

    def __init__(self, l2: float = 0.0, off_diagonal: float = 0.0, bias_l2: float = 0.0):
        self.l2 = l2
        self.off_diagonal = off_diagonal
        self.bias_l2 = bias_l2

    def _fit(self, logits, labels, sample_weight):
        for name in ("l2", "off_diagonal", "bias_l2"):
            v = getattr(self, name)
            if not (np.isfinite(v) and v >= 0):
                raise ValueError(f"{name} must be a number >= 0; got {v!r}")
        z, y, _ = _multiclass_data(logits, labels)
        W, b, self.result_ = _fit_affine_logits(z, y, "matrix", True, l2=self.l2,
                                                off_diagonal=self.off_diagonal, bias_l2=self.bias_l2,
                                                sample_weight=sample_weight)
        self.coef_, self.intercept_ = W, b
        return self

    def _transform(self, z):
        return z @ self.coef_.T + self.intercept_


class OneVsAll(_Calibrator):
    r"""Guo et al.'s multiclass extension of a binary method.

    For each class ``k`` a copy of ``binary_method`` is fitted on the
    probability :math:`\hat p_k` against :math:`\mathbb 1[y = k]`; the
    calibrated vector :math:`[\hat q^{(1)}, \dots, \hat q^{(K)}]` is then
    divided by its sum (a row whose calibrated values are all 0 becomes
    uniform). The predicted class may change.

    Parameters
    ----------
    binary_method : binary calibrator, default=HistogramBinning()
        One of :data:`BINARY` (its own ``input_type`` is overridden: it gets probabilities).
    input_type : {"probabilities", "logits"}, default="probabilities"
        What the scores are (:data:`calibcourse.calibration.calibrators.INPUT_TYPES`).

    Attributes
    ----------
    calibrators_ : list
        The fitted binary calibrator of each class.

    Examples
    --------
    >>> probs = np.array([[0.7, 0.2, 0.1], [0.1, 0.8, 0.1], [0.2, 0.2, 0.6], [0.6, 0.3, 0.1],
    ...                   [0.3, 0.4, 0.3], [0.1, 0.1, 0.8]])
    >>> ova = OneVsAll(IsotonicCalibration()).fit(probs, np.array([0, 1, 2, 1, 1, 2]))
    >>> ova.predict_proba(probs[:2])
    array([[1., 0., 0.],
           [0., 1., 0.]])
    """

    _fitted_attr = "calibrators_"

    #: its X is probabilities (rows in [0, 1] summing to 1) by default: the checks that feed it
    #: arbitrary real features cannot apply (``input_type="logits"`` takes logits instead)
    EXPECTED_FAILED_CHECKS = {
        **_Calibrator.EXPECTED_FAILED_CHECKS,
        **{name: "X is a matrix of probabilities (rows in [0, 1] summing to 1); the check feeds arbitrary "
                 "real features" for name in (
            "check_all_zero_sample_weights_error", "check_complex_data", "check_dict_unchanged",
            "check_dont_overwrite_parameters", "check_estimators_dtypes", "check_estimators_nan_inf",
            "check_estimators_pickle", "check_f_contiguous_array_estimator", "check_fit2d_1sample",
            "check_fit_check_is_fitted", "check_fit_idempotent", "check_fit_score_takes_y",
            "check_methods_sample_order_invariance", "check_methods_subset_invariance", "check_n_features_in",
            "check_n_features_in_after_fitting", "check_pipeline_consistency", "check_positive_only_tag_during_fit",
            "check_sample_weight_equivalence_on_dense_data", "check_sample_weights_list",
            "check_sample_weights_not_an_array", "check_sample_weights_not_overwritten",
            "check_sample_weights_pandas_series", "check_sample_weights_shape")},
    }

    def __init__(self, binary_method=None, input_type: str = "probabilities"):
        self.binary_method = binary_method
        self.input_type = input_type

    def _n_classes(self, scores) -> int:
        return int(self._probs(scores).shape[1])

    def _probs(self, scores):
        check_choice(self.input_type, INPUT_TYPES, "input_type")
        if self.input_type == "logits":
            return M.softmax(check_logits(scores, "logits", reject_probabilities=True))
        return check_probs(scores, "probabilities", allow_1d=False).astype(np.float64)

    def _fit(self, scores, labels, sample_weight):
        method = self.binary_method if self.binary_method is not None else HistogramBinning()
        if not isinstance(method, _BinaryCalibrator):
            raise ValueError("binary_method must be a binary calibrator such as HistogramBinning(), "
                             f"IsotonicCalibration(), BBQ() or PlattScaling(); got {method!r}")
        p = self._probs(scores)
        y = check_labels(labels, p.shape[0], p.shape[1])
        missing = sorted(set(range(p.shape[1])) - set(np.unique(y).tolist()))
        if missing:
            raise ValueError(f"labels of the calibration set lack classes {missing[:10]}: a one-vs-all "
                             "calibrator needs positives and negatives of every class")
        self.calibrators_ = [method.clone(input_type="probabilities").fit(p[:, k], (y == k).astype(int),
                                                                           sample_weight=sample_weight)
                             for k in range(p.shape[1])]
        return self

    def predict_proba(self, scores):
        self._check_fitted(scores)
        p = self._probs(scores)
        if p.shape[1] != len(self.calibrators_):
            raise ValueError(f"scores have {p.shape[1]} classes but the calibrator was fitted on "
                             f"{len(self.calibrators_)}")
        q = np.stack([c.predict_proba(p[:, k])[:, 1] for k, c in enumerate(self.calibrators_)], 1)
        s = q.sum(1, keepdims=True)
        q = np.where(s > 0, q / np.where(s > 0, s, 1), 1.0 / q.shape[1])
        return _like(q, scores)


#: Every binary calibrator: ``name -> class`` (scores of shape (n,), ``[P(y = 0), P(y = 1)]`` of shape
#: (n, 2) out). The tests run every registered calibrator through the same checks.
BINARY = {"histogram_binning": HistogramBinning, "isotonic": IsotonicCalibration, "bbq": BBQ,
          "platt": PlattScaling}
#: Every multiclass calibrator: ``name -> class`` (scores of shape (n, K), probabilities (n, K) out).
MULTICLASS = {"temperature": TemperatureScaling, "vector": VectorScaling, "matrix": MatrixScaling,
              "one_vs_all": OneVsAll}
#: All calibrators.
CALIBRATORS = {**BINARY, **MULTICLASS}
