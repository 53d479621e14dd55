"""Post-hoc calibration methods (chapter 3: binary methods; chapter 4: multiclass).

One API for all, in the style of scikit-learn's ``calibration.py``::

    cal = TemperatureScaling().fit(val_logits, val_labels)   # returns self
    probs = cal.predict_proba(test_logits)
    cal.temperature_                                           # fitted attributes end in "_"

Binary methods (``HistogramBinning``, ``IsotonicCalibration``, ``BBQ``,
``PlattScaling``) take ``scores`` of shape ``(n,)`` and labels in {0, 1}, and
``predict_proba`` returns P(y = 1) of shape ``(n,)``. Their ``input`` says what
the scores are: ``"probability"`` of class 1 (the default of the binning
methods) or ``"logit"`` (the default of Platt scaling); each converts with the
sigmoid or the logit as it needs.

Multiclass methods (``TemperatureScaling``, ``VectorScaling``,
``MatrixScaling``, ``OneVsAll``) take logits of shape ``(n, K)`` and return
probabilities of shape ``(n, K)``. ``TemperatureScaling`` also takes the single
logit of a sigmoid network, shape ``(n,)``, and then returns P(y = 1).

Inputs may be numpy arrays or torch tensors; a torch input gives a torch output.
"""
from __future__ import annotations

import math

import numpy as np
from scipy.special import expit, gammaln, logsumexp
from scipy.special import logit as _logit

from . import metrics as M
from ._validation import check_choice, check_labels, check_logits, check_n_bins, is_torch, to_numpy

__all__ = ["HistogramBinning", "IsotonicCalibration", "BBQ", "PlattScaling", "TemperatureScaling",
           "VectorScaling", "MatrixScaling", "OneVsAll", "NotFittedError"]

EPS = 1e-12


class NotFittedError(ValueError, AttributeError):
    """``predict_proba`` was called before ``fit``."""


def _like(out: np.ndarray, ref):
    """Return ``out`` as a torch tensor if ``ref`` is one (same device, float dtype of ref)."""
    if is_torch(ref):
        import torch

        dtype = ref.dtype if ref.is_floating_point() else torch.float64
        return torch.as_tensor(out, dtype=dtype, device=ref.device)
    return out


class _Calibrator:
    _fitted_attr = ""

    def _check_fitted(self):
        if not hasattr(self, self._fitted_attr):
            raise NotFittedError(f"This {type(self).__name__} is not fitted yet; call "
                                 f"fit(scores, labels) on a calibration set first")

    def __repr__(self):
        params = ", ".join(f"{k}={v!r}" for k, v in self.get_params().items())
        return f"{type(self).__name__}({params})"

    def get_params(self) -> dict:
        import inspect

        names = [p for p in inspect.signature(type(self).__init__).parameters if p != "self"]
        return {n: getattr(self, n) for n in names}

    def clone(self, **overrides):
        """An unfitted copy with the same parameters (and ``overrides``)."""
        return type(self)(**{**self.get_params(), **overrides})


# =========================================================================== binary
class _BinaryCalibrator(_Calibrator):
    def _scores(self, scores, name="scores", want="probability") -> np.ndarray:
        s = to_numpy(scores, name)
        if s.ndim == 2 and s.shape[1] == 2 and self.input == "probability":
            s = s[:, 1]  # (n, 2) probabilities: use P(y = 1)
        s = check_logits(s, name, ndim=1)
        if self.input == "probability":
            if s.min() < 0 or s.max() > 1:
                raise ValueError(f"{name} must be probabilities of class 1 in [0, 1] for "
                                 f"input='probability'; got values from {s.min():g} to {s.max():g} "
                                 "(pass input='logit' for real-valued scores)")
            return s if want == "probability" else _logit(np.clip(s, EPS, 1 - EPS))
        return expit(s) if want == "probability" else s

    def _fit_data(self, scores, labels, want="probability"):
        check_choice(self.input, ("probability", "logit"), "input")
        s = self._scores(scores, want=want)
        y = check_labels(labels, s.shape[0], 2)
        if np.unique(y).size < 2:
            raise ValueError(f"labels of the calibration set contain one class only ({y[0]}); "
                             "a binary calibrator needs both classes")
        return s, y


class HistogramBinning(_BinaryCalibrator):
    r"""Histogram binning (Zadrozny and Elkan 2001).

    Cuts the scores into ``n_bins`` bins and predicts, for every score in bin
    ``m``, the fraction of positives of the calibration samples in it:

    .. math:: \theta_m = \arg\min_\theta \sum_i \mathbb 1(\hat p_i \in B_m)(\theta - y_i)^2
              = \frac{1}{|B_m|}\sum_{i \in B_m} y_i

    ``strategy="uniform"``: equal-width bins ``((m-1)/M, m/M]``;
    ``"quantile"``: equal-mass bins. An empty bin predicts its midpoint.
    Fitted: ``bin_edges_`` (M + 1), ``bin_values_`` (M), ``bin_counts_`` (M).
    """

    _fitted_attr = "bin_values_"

    def __init__(self, n_bins: int = 15, strategy: str = "uniform", input: str = "probability"):
        self.n_bins = n_bins
        self.strategy = strategy
        self.input = input

    def fit(self, scores, labels):
        n_bins = check_n_bins(self.n_bins)
        check_choice(self.strategy, ("uniform", "quantile"), "strategy")
        p, y = self._fit_data(scores, labels)
        if p.shape[0] < n_bins:
            raise ValueError(f"too few samples for the bins asked: {p.shape[0]} samples, "
                             f"n_bins={n_bins}")
        if self.strategy == "uniform":
            edges = np.linspace(0.0, 1.0, n_bins + 1)
        else:
            _, edges = M._quantile_bin_index(p, n_bins)
        idx = np.searchsorted(edges[1:-1], p, side="left")
        counts = np.bincount(idx, minlength=n_bins).astype(float)
        pos = np.bincount(idx, weights=y, minlength=n_bins)
        mid = (edges[:-1] + edges[1:]) / 2
        self.bin_edges_ = edges
        self.bin_counts_ = counts
        with np.errstate(invalid="ignore", divide="ignore"):
            self.bin_values_ = np.where(counts > 0, pos / counts, mid)
        return self

    def predict_proba(self, scores):
        self._check_fitted()
        p = self._scores(scores)
        idx = np.searchsorted(self.bin_edges_[1:-1], p, side="left")
        return _like(self.bin_values_[idx], scores)


def _pool_adjacent_violators(y: np.ndarray, w: np.ndarray) -> np.ndarray:
    """Weighted least-squares non-decreasing fit to ``y`` (already ordered by score)."""
    values, weights, sizes = [], [], []
    for yi, wi in zip(y, w):
        values.append(yi)
        weights.append(wi)
        sizes.append(1)
        while len(values) > 1 and values[-2] > values[-1]:  # pool the violating pair
            v2, w2, s2 = values.pop(), weights.pop(), sizes.pop()
            v1, w1, s1 = values.pop(), weights.pop(), sizes.pop()
            values.append((v1 * w1 + v2 * w2) / (w1 + w2))
            weights.append(w1 + w2)
            sizes.append(s1 + s2)
    return np.repeat(values, sizes)


class IsotonicCalibration(_BinaryCalibrator):
    r"""Isotonic regression (Zadrozny and Elkan 2002) by pool-adjacent-violators.

    The non-decreasing step function :math:`f` minimizing
    :math:`\sum_i (f(\hat p_i) - y_i)^2`: histogram binning whose bin edges and
    values are both learned, under :math:`\theta_1 \le \dots \le \theta_M`.
    Equal scores are pooled first; between fitted points ``predict_proba``
    interpolates linearly and outside them it clips (as scikit-learn's
    ``IsotonicRegression(out_of_bounds="clip")``, which this matches exactly).
    Fitted: ``x_thresholds_``, ``y_thresholds_``.
    """

    _fitted_attr = "y_thresholds_"

    def __init__(self, input: str = "probability"):
        self.input = input

    def fit(self, scores, labels):
        p, y = self._fit_data(scores, labels)
        x_unique, inverse = np.unique(p, return_inverse=True)
        w = np.bincount(inverse).astype(float)
        y_mean = np.bincount(inverse, weights=y) / w
        fitted = _pool_adjacent_violators(y_mean, w)
        self.x_thresholds_ = x_unique
        self.y_thresholds_ = fitted
        return self

    def predict_proba(self, scores):
        self._check_fitted()
        p = self._scores(scores)
        return _like(np.interp(p, self.x_thresholds_, self.y_thresholds_), scores)


class BBQ(_BinaryCalibrator):
    r"""Bayesian Binning into Quantiles (Naeini, Cooper and Hauskrecht 2015).

    Averages equal-frequency histogram-binning models with ``B`` bins, for
    every ``B`` from :math:`\lfloor N^{1/3}/C \rfloor` to
    :math:`\lceil C N^{1/3} \rceil` (``C = 10``; or the ``n_bins`` given), each
    weighted by its Bayesian (BDeu) score

    .. math:: P(D \mid M) = \prod_{b=1}^{B}
              \frac{\Gamma(\tfrac{N'}{B})}{\Gamma(N_b + \tfrac{N'}{B})}
              \frac{\Gamma(m_b + \alpha_b)}{\Gamma(\alpha_b)}
              \frac{\Gamma(n_b + \beta_b)}{\Gamma(\beta_b)},\quad
              \alpha_b = \tfrac{N'}{B} p_b,\ \beta_b = \tfrac{N'}{B}(1 - p_b)

    where bin ``b`` holds ``m_b`` positives and ``n_b`` negatives, ``p_b`` is
    its midpoint and ``N' = prior_strength`` (2 in the paper); models have a
    uniform prior. A model predicts the posterior mean
    :math:`(m_b + \alpha_b) / (N_b + N'/B)` of the bin a score falls in.
    Fitted: ``n_bins_`` (B of each model), ``bin_edges_``, ``bin_values_``
    (lists, one array per model) and ``model_weights_`` (summing to 1).
    """

    _fitted_attr = "model_weights_"

    def __init__(self, n_bins=None, C: float = 10.0, prior_strength: float = 2.0,
                 input: str = "probability"):
        self.n_bins = n_bins
        self.C = C
        self.prior_strength = prior_strength
        self.input = input

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

    def fit(self, scores, labels):
        if not (self.prior_strength > 0):
            raise ValueError(f"prior_strength must be > 0; got {self.prior_strength!r}")
        p, y = self._fit_data(scores, labels)
        n = p.shape[0]
        self.n_bins_, self.bin_edges_, self.bin_values_, log_scores = [], [], [], []
        for b in self._model_range(n):
            idx, edges = M._quantile_bin_index(p, b)
            n_b = np.bincount(idx, minlength=b).astype(float)
            m_b = np.bincount(idx, weights=y, minlength=b)
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
        p = self._scores(scores)
        out = np.zeros_like(p)
        for w, edges, values in zip(self.model_weights_, self.bin_edges_, self.bin_values_):
            out += w * values[np.searchsorted(edges[1:-1], p, side="left")]
        return _like(out, scores)


def _fit_logistic_1d(z: np.ndarray, y: np.ndarray, tol: float = 1e-12, max_iter: int = 100):
    """Unregularized logistic regression of y on z by Newton's method: returns (a, b)."""
    X = np.stack([z, np.ones_like(z)], 1)
    theta = np.zeros(2)

    def loss(t):
        u = X @ t
        return np.mean(np.logaddexp(0, u) - y * u)

    for _ in range(max_iter):
        q = expit(X @ theta)
        grad = X.T @ (q - y) / len(y)
        hess = (X * (q * (1 - q))[:, None]).T @ X / len(y) + 1e-12 * np.eye(2)
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
    1e-12). With ``input="probability"`` the scores are turned into logits
    first. Fitted: ``a_``, ``b_``.
    """

    _fitted_attr = "a_"

    def __init__(self, input: str = "logit"):
        self.input = input

    def fit(self, scores, labels):
        z, y = self._fit_data(scores, labels, want="logit")
        self.a_, self.b_ = _fit_logistic_1d(z, y.astype(float))
        return self

    def predict_proba(self, scores):
        self._check_fitted()
        z = self._scores(scores, want="logit")
        return _like(expit(self.a_ * z + self.b_), scores)


# =========================================================================== multiclass
def _multiclass_data(logits, labels, name="logits"):
    z = check_logits(logits, name, ndim=None)
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


class TemperatureScaling(_Calibrator):
    r"""Temperature scaling (Guo et al. 2017): :math:`\hat q = \sigma_{SM}(z / T)`.

    One ``T > 0`` for all classes, minimizing the NLL of the calibration set.
    In :math:`\beta = 1/T` the NLL
    :math:`\frac1n\sum_i [\log\sum_k e^{\beta z_{ik}} - \beta z_{iy_i}]` is
    convex, with derivative :math:`\frac1n\sum_i (\mathbb E_{q_i}[z_i] - z_{iy_i})`
    and second derivative :math:`\frac1n\sum_i \mathrm{Var}_{q_i}[z_i] \ge 0`;
    it is solved by safeguarded Newton steps inside a bracket, to ``tol`` in
    :math:`\beta` (1e-10 by default), not by a few LBFGS steps. The argmax, and
    so the accuracy, does not change.

    Logits of shape ``(n,)`` are the single logit of a sigmoid network:
    :math:`\hat q = \sigma(z / T)`. Fitted: ``temperature_``.
    """

    _fitted_attr = "temperature_"

    def __init__(self, tol: float = 1e-10, max_iter: int = 200):
        self.tol = tol
        self.max_iter = max_iter

    def fit(self, logits, labels):
        import torch

        z, y, _ = _multiclass_data(logits, labels)
        # shift each row by its max: beta * (z - max z) <= 0 never overflows, and the shift
        # cancels in E_q[z] - z_y; torch runs the passes over the (n, K) array on every core
        zt = torch.from_numpy(z)
        zc = zt - zt.max(1, keepdim=True).values
        zc_y = zc[torch.arange(len(y)), torch.from_numpy(y)]
        data = {torch.float64: (zc, zc * zc, zc_y)}
        data[torch.float32] = tuple(t.float() for t in data[torch.float64])

        def grad_hess(beta, dtype):
            """dNLL/dbeta, d2NLL/dbeta2 and NLL at beta; float32 is 6x faster (vectorized exp)."""
            a, a2, a_y = data[dtype]
            q = torch.exp(a * beta)
            s = q.sum(1)
            m1 = (q * a).sum(1) / s
            m2 = (q * a2).sum(1) / s
            nll = float((s.log() - beta * a_y).double().mean())
            return float((m1 - a_y).double().mean()), float((m2 - m1 * m1).double().mean()), nll

        if float((zc.mean(1) - zc_y).mean()) >= 0:  # dNLL/dbeta at beta = 0
            raise ValueError("the logits carry no signal about the labels (the NLL does not decrease "
                             "for any T > 0): temperature scaling is undefined here")
        # safeguarded Newton on the convex NLL(beta): g < 0 left of the optimum, g > 0 right of it;
        # float32 steps until the step is below 1e-6, then float64 steps to `tol`
        lo, hi, beta, dtype = 0.0, np.inf, 1.0, torch.float32
        for _ in range(self.max_iter):
            g, h, nll = grad_hess(beta, dtype)
            if g < 0:
                lo = beta
            else:
                hi = beta
            new = beta - g / h if h > 0 else np.inf
            if not (lo < new < hi):
                new = beta * 4 if hi == np.inf else (lo + hi) / 2
            if new > 1e12:
                raise ValueError("the optimal temperature is 0: the calibration set is perfectly "
                                 "separated by the logits (every label is the argmax)")
            step = abs(new - beta)
            beta = new
            if dtype == torch.float32 and step < 1e-6 * max(1.0, beta):
                dtype, lo, hi = torch.float64, 0.0, np.inf  # float32 brackets may be off by rounding
                continue
            if dtype == torch.float64 and (step < self.tol * max(1.0, beta) or hi - lo < self.tol):
                break
        self.nll_ = nll
        self.beta_ = beta
        self.temperature_ = 1.0 / beta
        return self

    def predict_proba(self, logits):
        self._check_fitted()
        z, _, binary = _multiclass_data(logits, None)
        q = M.softmax(z / self.temperature_)
        return _like(q[:, 1] if binary else q, logits)

    @staticmethod
    def grid(logits, labels, temperatures=None, n_bins: int = 15):
        """ECE and NLL of ``softmax(z / T)`` for every T of ``temperatures``: the hand search.

        Returns a DataFrame with columns ``temperature``, ``ece``, ``nll``
        (default grid: 0.25 to 5 in steps of 0.05). Note that the ECE-optimal T
        of a grid is fitted to a biased, noisy objective; the NLL-optimal T is
        what ``fit`` finds exactly.
        """
        import pandas as pd

        z, y, binary = _multiclass_data(logits, labels)
        ts = np.round(np.arange(0.25, 5.0001, 0.05), 4) if temperatures is None else np.asarray(temperatures, float)
        if ts.ndim != 1 or ts.size == 0 or np.any(~np.isfinite(ts)) or np.any(ts <= 0):
            raise ValueError("temperatures must be a non-empty 1-D sequence of positive numbers")
        rows = []
        for t in ts:
            q = M.softmax(z / t)
            qq = q[:, 1] if binary else q
            rows.append({"temperature": float(t), "ece": M.ece(qq, y, n_bins=n_bins),
                         "nll": M.nll(qq, y)})
        return pd.DataFrame(rows)


def _fit_affine_logits(z, y, mode: str, bias: bool, l2: float = 0.0, off_diagonal: float = 0.0,
                       bias_l2: float = 0.0, tie_weights: bool = False):
    """Minimize NLL(softmax(W z + b)) (+ penalties) with L-BFGS and an analytic gradient.

    mode "vector": W = diag(w) (or w * I with ``tie_weights``); "matrix": W full.
    Penalties: ``l2 * ||W - I||^2`` (matrix: all entries), ``off_diagonal * sum_{i != j} W_ij^2``
    and ``bias_l2 * ||b||^2`` (the ODIR of Kull et al. 2019), each divided by K^2 or K.
    """
    from scipy.optimize import minimize

    n, k = z.shape
    onehot = np.zeros((n, k))
    onehot[np.arange(n), y] = 1.0
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

    def f(x):
        W, b = unpack(x)
        u = z @ W.T + b
        lse = logsumexp(u, axis=1, keepdims=True)
        q = np.exp(u - lse)
        loss = np.mean(lse[:, 0] - np.sum(u * onehot, 1))
        d = (q - onehot) / n                      # dL/du
        gW = d.T @ z                              # dL/dW
        gb = d.sum(0)
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
        self._check_fitted()
        z, _, binary = _multiclass_data(logits, None)
        if z.shape[1] != self.coef_.shape[0]:
            raise ValueError(f"logits have {z.shape[1]} classes but the calibrator was fitted on "
                             f"{self.coef_.shape[0]}")
        q = M.softmax(self._transform(z))
        return _like(q[:, 1] if binary else q, logits)


class VectorScaling(_AffineLogitScaling):
    r"""Vector scaling (Guo et al. 2017): :math:`\hat q = \sigma_{SM}(w \odot z + b)`.

    A weight per class and a bias per class, minimizing NLL (convex; L-BFGS
    with an analytic gradient). ``tie_weights=True, bias=False`` is one shared
    weight and no bias: temperature scaling with :math:`w = 1/T`. Positive
    weights keep the order of each logit but, unlike TS, may change the
    argmax. Fitted: ``coef_`` (K,), ``intercept_`` (K,).
    """

    def __init__(self, bias: bool = True, tie_weights: bool = False):
        self.bias = bias
        self.tie_weights = tie_weights

    def fit(self, logits, labels):
        z, y, _ = _multiclass_data(logits, labels)
        W, b, self.result_ = _fit_affine_logits(z, y, "vector", self.bias, tie_weights=self.tie_weights)
        self.coef_ = np.diag(W).copy()
        self.intercept_ = b
        return self

    def _transform(self, z):
        return z * self.coef_ + self.intercept_


class MatrixScaling(_AffineLogitScaling):
    r"""Matrix scaling (Guo et al. 2017): :math:`\hat q = \sigma_{SM}(W z + b)`.

    ``K^2 + K`` parameters fitted by NLL (convex; L-BFGS from ``W = I``),
    optionally regularized by ``l2 * ||W - I||^2 / K^2`` and the ODIR penalty
    of Kull et al. (2019), ``off_diagonal * sum_{i != j} W_ij^2 / (K(K-1))``
    plus ``bias_l2 * ||b||^2 / K``. Unregularized it overfits small
    calibration sets with many classes (Guo et al., Table 1, CIFAR-100).
    Fitted: ``coef_`` (K, K), ``intercept_`` (K,).
    """

    def __init__(self, l2: float = 0.0, off_diagonal: float = 0.0, bias_l2: float = 0.0):
        self.l2 = l2
        self.off_diagonal = off_diagonal
        self.bias_l2 = bias_l2

    def fit(self, logits, labels):
        for name in ("l2", "off_diagonal", "bias_l2"):
            v = getattr(self, name)
            if not (np.isfinite(v) and v >= 0):
                raise ValueError(f"{name} must be a number >= 0; got {v!r}")
        z, y, _ = _multiclass_data(logits, labels)
        W, b, self.result_ = _fit_affine_logits(z, y, "matrix", True, l2=self.l2,
                                                off_diagonal=self.off_diagonal, bias_l2=self.bias_l2)
        self.coef_, self.intercept_ = W, b
        return self

    def _transform(self, z):
        return z @ self.coef_.T + self.intercept_


class OneVsAll(_Calibrator):
    r"""Guo et al.'s multiclass extension of a binary method.

    For each class ``k`` a copy of ``binary_method`` is fitted on the softmax
    probability :math:`\hat p_k` against :math:`\mathbb 1[y = k]`; the
    calibrated vector :math:`[\hat q^{(1)}, \dots, \hat q^{(K)}]` is then
    divided by its sum. The predicted class may change. ``input="logits"``
    (default) or ``"probabilities"``. A row whose calibrated values are all 0
    becomes uniform. Fitted: ``calibrators_`` (one per class).
    """

    _fitted_attr = "calibrators_"

    def __init__(self, binary_method=None, input: str = "logits"):
        self.binary_method = binary_method
        self.input = input

    def _probs(self, scores):
        check_choice(self.input, ("logits", "probabilities"), "input")
        if self.input == "logits":
            z = check_logits(scores, "logits")
            return M.softmax(z)
        from ._validation import check_probs

        return check_probs(scores, "probabilities", allow_1d=False).astype(np.float64)

    def fit(self, scores, labels):
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
        self.calibrators_ = [method.clone(input="probability").fit(p[:, k], (y == k).astype(int))
                             for k in range(p.shape[1])]
        return self

    def predict_proba(self, scores):
        self._check_fitted()
        p = self._probs(scores)
        if p.shape[1] != len(self.calibrators_):
            raise ValueError(f"scores have {p.shape[1]} classes but the calibrator was fitted on "
                             f"{len(self.calibrators_)}")
        q = np.stack([c.predict_proba(p[:, k]) for k, c in enumerate(self.calibrators_)], 1)
        s = q.sum(1, keepdims=True)
        q = np.where(s > 0, q / np.where(s > 0, s, 1), 1.0 / q.shape[1])
        return _like(q, scores)
