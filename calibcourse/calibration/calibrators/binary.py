"""The binary calibrators of chapter 3: histogram binning, isotonic regression, BBQ, Platt scaling."""
from __future__ import annotations

import math

import numpy as np
from scipy.special import expit, gammaln, logsumexp

from calibcourse.calibration import binning
from calibcourse.calibration._arrays import two_columns
from calibcourse.calibration._validation import check_choice, check_n_bins
from calibcourse.calibration.calibrators._base import EPS, _BinaryCalibrator, _like

__all__ = ["HistogramBinning", "IsotonicCalibration", "BBQ", "PlattScaling", "TARGETS", "platt_targets"]


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

    def _predict_proba(self, scores):
        p = self._check_scores(scores)
        return _like(two_columns(self.bin_values_[binning.bin_index(p, self.bin_edges_)]), scores)


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

    def _predict_proba(self, scores):
        p = self._check_scores(scores)
        return _like(two_columns(np.interp(p, self.x_thresholds_, self.y_thresholds_)), scores)


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

    def _predict_proba(self, scores):
        p = self._check_scores(scores)
        out = np.zeros_like(p)
        for w, edges, values in zip(self.model_weights_, self.bin_edges_, self.bin_values_, strict=True):
            out += w * values[binning.bin_index(p, edges)]
        return _like(two_columns(out), scores)


def platt_targets(y: np.ndarray, sample_weight=None) -> np.ndarray:
    """Platt's (1999) targets of binary labels ``y``: :math:`(N_+ + 1)/(N_+ + 2)` for a positive,
    :math:`1/(N_- + 2)` for a negative (the counts weighted by ``sample_weight``), as scikit-learn's
    sigmoid calibration takes them: Laplace's rule of succession, so a separable calibration set
    still has a finite fit.

    Parameters
    ----------
    y : numpy.ndarray of shape (n,)
        Checked labels 0 and 1.
    sample_weight : numpy.ndarray of shape (n,), optional
        Weights of the counts.

    Returns
    -------
    numpy.ndarray of shape (n,)

    Examples
    --------
    >>> platt_targets(np.array([1, 1, 0]))
    array([0.75      , 0.75      , 0.33333333])
    """
    w = np.ones(len(y)) if sample_weight is None else sample_weight
    pos, neg = float(np.sum(w[y == 1])), float(np.sum(w[y != 1]))
    return np.where(y == 1, (pos + 1.0) / (pos + 2.0), 1.0 / (neg + 2.0))


#: What a logistic fit of :class:`PlattScaling` (and :class:`~calibcourse.calibration.calibrators.TemperatureScaling`,
#: :class:`~calibcourse.calibration.calibrators.VectorScaling`) takes as its targets: the labels themselves
#: (the maximum-likelihood fit), or Platt's smoothed targets (:func:`platt_targets`).
TARGETS = ("labels", "platt")


def _fit_logistic_1d(z: np.ndarray, y: np.ndarray, tol: float = 1e-12, max_iter: int = 100, w=None):
    """Unregularized (weighted) logistic regression of y (labels, or targets in [0, 1]) on z by Newton's
    method: returns (a, b)."""
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
    1e-12). Probabilities are turned into logits first. With ``targets="platt"``
    the labels are replaced by Platt's targets, :math:`(N_+ + 1)/(N_+ + 2)` for a
    positive and :math:`1/(N_- + 2)` for a negative (:func:`platt_targets`), as in
    Platt's paper and scikit-learn's ``CalibratedClassifierCV(method="sigmoid")``:
    on a small or separable calibration set the fit stays finite instead of
    driving :math:`a` to infinity.

    Parameters
    ----------
    input_type : {"probabilities", "logits"}, default="probabilities"
        What the scores are (:data:`calibcourse.calibration.calibrators.INPUT_TYPES`).
    targets : {"labels", "platt"}, default="labels"
        The labels themselves (the maximum-likelihood fit), or Platt's smoothed targets.

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

    def __init__(self, input_type: str = "probabilities", targets: str = "labels"):
        self.input_type = input_type
        self.targets = targets

    def _fit(self, scores, labels, sample_weight):
        check_choice(self.targets, TARGETS, "targets")
        z, y = self._fit_data(scores, labels, want="logits")
        t = platt_targets(y, sample_weight) if self.targets == "platt" else y.astype(float)
        self.a_, self.b_ = _fit_logistic_1d(z, t, w=sample_weight)
        return self

    def _predict_proba(self, scores):
        z = self._check_scores(scores, want="logits")
        return _like(two_columns(expit(self.a_ * z + self.b_)), scores)
