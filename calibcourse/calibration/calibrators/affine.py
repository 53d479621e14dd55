"""Vector and matrix scaling (chapter 4) and bias-corrected temperature scaling (chapter 6): an affine map
of the logits fitted by NLL."""
from __future__ import annotations

import numpy as np

from calibcourse.calibration import metrics as M
from calibcourse.calibration.calibrators._base import _Calibrator, _like, _multiclass_data

__all__ = ["VectorScaling", "MatrixScaling", "BiasCorrectedTemperatureScaling", "soft_targets"]


def soft_targets(y: np.ndarray, k: int, sample_weight=None) -> np.ndarray:
    """Platt's targets of multiclass labels, ``(n, K)``: :math:`(N_k + 1)/(N_k + 2)` on the label's
    class :math:`k` and the rest spread evenly over the others (for K = 2, Platt's own).

    Parameters
    ----------
    y : numpy.ndarray of shape (n,)
        Checked integer labels.
    k : int
        The number of classes.
    sample_weight : numpy.ndarray of shape (n,), optional
        Weights of the counts :math:`N_k`.

    Returns
    -------
    numpy.ndarray of shape (n, K)

    Examples
    --------
    >>> soft_targets(np.array([0, 0, 1]), 2)
    array([[0.75      , 0.25      ],
           [0.75      , 0.25      ],
           [0.33333333, 0.66666667]])
    """
    w = np.ones(len(y)) if sample_weight is None else sample_weight
    counts = np.bincount(y, weights=w, minlength=k)
    on = ((counts + 1.0) / (counts + 2.0))[y]
    t = np.repeat(((1.0 - on) / (k - 1))[:, None], k, axis=1)
    t[np.arange(len(y)), y] = on
    return t


def _fit_affine_logits(z, y, mode: str, bias: bool, l2: float = 0.0, off_diagonal: float = 0.0,
                       bias_l2: float = 0.0, tie_weights: bool = False, sample_weight=None, targets=None,
                       anchor: float | None = None, max_iter: int = 2000):
    """Minimize NLL(softmax(W z + b)) (+ penalties) with L-BFGS and an analytic gradient.

    mode "vector": W = diag(w) (or w * I with ``tie_weights``); "matrix": W full.
    Penalties: ``l2 * ||W - I||^2`` (matrix: all entries), ``off_diagonal * sum_{i != j} W_ij^2``
    and ``bias_l2 * ||b||^2`` (the ODIR of Kull et al. 2019), each divided by K^2 or K. Vector
    mode with an ``anchor`` (the weight ``1/T`` of temperature scaling): the penalty is
    ``l2 * ||w / anchor - 1||^2 / K`` and the search starts there. ``targets``: an ``(n, K)``
    matrix of target probabilities instead of the labels (Platt's, :func:`soft_targets`).
    """
    from scipy.optimize import minimize

    n, k = z.shape
    rw = None if sample_weight is None else (sample_weight / sample_weight.mean())[:, None]  # mean 1
    nw = 1 if tie_weights else (k if mode == "vector" else k * k)
    nb = k if bias else 0
    w0 = (np.ones(nw) if anchor is None else np.full(nw, anchor)) if mode == "vector" else np.eye(k).ravel()
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
        per_row = lse - (u[np.arange(n), y] if targets is None else np.einsum("ij,ij->i", targets, u))
        loss = np.mean(per_row) if rw is None else np.mean(rw[:, 0] * per_row)
        if targets is None:
            q[np.arange(n), y] -= 1.0             # q - onehot
        else:
            q -= targets
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
        elif l2 and anchor is not None:  # vector: the weights pulled towards temperature scaling's
            dev = np.diag(W) / anchor - 1.0
            loss += l2 / k * np.sum(dev**2)
            gW = gW + np.diag(2 * l2 / k * dev / anchor)
        if bias and bias_l2:
            loss += bias_l2 / k * np.sum(b**2)
            gb = gb + 2 * bias_l2 / k * b
        if mode == "vector":
            gw = np.array([np.trace(gW)]) if tie_weights else np.diag(gW).copy()
        else:
            gw = gW.ravel()
        return loss, np.concatenate([gw, gb if bias else []])

    res = minimize(f, x0, jac=True, method="L-BFGS-B",
                   options={"maxiter": max_iter, "gtol": 1e-8, "ftol": 1e-12})
    unpenalized = targets is None and not (l2 or off_diagonal or bias_l2)
    if not res.success or (unpenalized and res.fun < 1e-3):
        import warnings

        from sklearn.exceptions import ConvergenceWarning

        why = (f"did not converge in {res.nit} L-BFGS iterations ({res.message})" if not res.success else
               f"drove the calibration set's NLL to {res.fun:.1e}: the logits separate it, and the weights grow "
               f"as far as the optimizer goes (largest {np.abs(res.x).max():.3g})")
        warnings.warn(f"{mode} scaling {why}; the fitted map is unreliable: regularize it (l2=, bias_l2=) or fit "
                      "Platt's targets (targets='platt')", ConvergenceWarning, stacklevel=4)
    W, b = unpack(res.x)
    return W, b, res


def _check_penalties(cal, names, y, k, sample_weight):
    """Check the penalties ``names`` (numbers >= 0), ``targets`` and ``max_iter`` of ``cal``; the
    target matrix (None: the labels)."""
    from calibcourse.calibration._validation import check_choice, check_int
    from calibcourse.calibration.calibrators.binary import TARGETS

    for name in names:
        v = getattr(cal, name)
        if not (isinstance(v, (int, float, np.number)) and np.isfinite(v) and v >= 0):
            raise ValueError(f"{name} must be a number >= 0; got {v!r}")
    check_choice(cal.targets, TARGETS, "targets")
    check_int(cal.max_iter, "max_iter", low=1)
    return soft_targets(y, k, sample_weight) if cal.targets == "platt" else None


class _AffineLogitScaling(_Calibrator):
    """Shared by vector and matrix scaling: ``softmax(transform(z))`` of fitted ``coef_``, ``intercept_``."""

    _fitted_attr = "coef_"

    def _predict_proba(self, logits):
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

    Unregularized, its ``2K`` parameters overfit a small calibration set, and on
    a separated one (every label the argmax) the weights grow without bound: the
    optimizer then stops at its iteration limit with a ``ConvergenceWarning``.
    ``l2 > 0`` fits temperature scaling first (``targets="auto"``) and pulls the
    weights towards its :math:`1/T` (the penalty ``l2 * ||w T - 1||^2 / K``, which
    does not depend on the logits' scale), and ``bias_l2`` pulls the biases
    towards 0: with both, the optimum is finite on a separated set too.
    ``targets="platt"`` fits Platt's targets (:func:`soft_targets`) instead of the
    labels. ``calibcourse report`` fits both penalties, falling as the
    calibration set grows.

    Parameters
    ----------
    bias : bool, default=True
        Fit the bias ``b`` (else ``b = 0``).
    tie_weights : bool, default=False
        One weight shared by all classes. ``tie_weights=True, bias=False`` is temperature scaling with :math:`w = 1/T`.
    l2 : float, default=0.0
        Penalty ``l2 * ||w T - 1||^2 / K`` on the weights, relative to temperature scaling's ``1/T``.
    bias_l2 : float, default=0.0
        Penalty ``bias_l2 * ||b||^2 / K``.
    targets : {"labels", "platt"}, default="labels"
        Fit the labels or Platt's smoothed targets.
    max_iter : int, default=2000
        L-BFGS iterations at most; a fit that needs more warns (``ConvergenceWarning``).

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

    def __init__(self, bias: bool = True, tie_weights: bool = False, l2: float = 0.0, bias_l2: float = 0.0,
                 targets: str = "labels", max_iter: int = 2000):
        self.bias = bias
        self.tie_weights = tie_weights
        self.l2 = l2
        self.bias_l2 = bias_l2
        self.targets = targets
        self.max_iter = max_iter

    def _fit(self, logits, labels, sample_weight):
        z, y, _ = _multiclass_data(logits, labels)
        targets = _check_penalties(self, ("l2", "bias_l2"), y, z.shape[1], sample_weight)
        anchor = None
        if self.l2 or self.targets == "platt":  # start from (and shrink towards) temperature scaling's 1/T
            from calibcourse.calibration.calibrators.temperature import TemperatureScaling

            ts = TemperatureScaling(targets="auto").fit(z, y, sample_weight=sample_weight, classes=range(z.shape[1]))
            anchor = 1.0 / ts.temperature_
        W, b, self.result_ = _fit_affine_logits(z, y, "vector", self.bias, l2=self.l2, bias_l2=self.bias_l2,
                                                tie_weights=self.tie_weights, sample_weight=sample_weight,
                                                targets=targets, anchor=anchor, max_iter=self.max_iter)
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
    targets : {"labels", "platt"}, default="labels"
        Fit the labels or Platt's smoothed targets.
    max_iter : int, default=2000
        L-BFGS iterations at most; a fit that needs more warns (``ConvergenceWarning``).

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

    def __init__(self, l2: float = 0.0, off_diagonal: float = 0.0, bias_l2: float = 0.0, targets: str = "labels",
                 max_iter: int = 2000):
        self.l2 = l2
        self.off_diagonal = off_diagonal
        self.bias_l2 = bias_l2
        self.targets = targets
        self.max_iter = max_iter

    def _fit(self, logits, labels, sample_weight):
        z, y, _ = _multiclass_data(logits, labels)
        targets = _check_penalties(self, ("l2", "off_diagonal", "bias_l2"), y, z.shape[1], sample_weight)
        W, b, self.result_ = _fit_affine_logits(z, y, "matrix", True, l2=self.l2,
                                                off_diagonal=self.off_diagonal, bias_l2=self.bias_l2,
                                                sample_weight=sample_weight, targets=targets,
                                                max_iter=self.max_iter)
        self.coef_, self.intercept_ = W, b
        return self

    def _transform(self, z):
        return z @ self.coef_.T + self.intercept_


class BiasCorrectedTemperatureScaling(_AffineLogitScaling):
    r"""Bias-corrected temperature scaling (Alexandari et al. 2020): :math:`\hat q = \sigma_{SM}(z / T + b)`.

    One temperature for every class and one bias per class, minimizing NLL (convex in
    :math:`(1/T, b)`; L-BFGS with an analytic gradient): :class:`VectorScaling` with its weights tied.
    The biases correct a network that over- or under-predicts some classes, which a temperature
    cannot. Alexandari et al. found EM's prior correction under label shift
    (:func:`calibcourse.calibration.priors.em_priors`) hard to beat on probabilities calibrated this
    way; with plain temperature scaling it was less reliable. A bias can change the predicted class.

    Parameters
    ----------
    bias : bool, default=True
        Fit the biases; ``False`` is plain temperature scaling (for a paired comparison).

    Attributes
    ----------
    temperature_ : float
        The fitted temperature :math:`T`.
    coef_ : numpy.ndarray of shape (K,)
        :math:`1 / T`, once per class (as :class:`VectorScaling` stores its weights).
    intercept_ : numpy.ndarray of shape (K,)
        The biases :math:`b` (defined up to a constant added to all; the fit starts at 0).
    result_ : scipy.optimize.OptimizeResult
        The optimizer's report.

    Examples
    --------
    Logits twice too confident, with class 0's logit raised by 1: the fit undoes both.

    >>> from calibcourse.calibration.synthetic import scaled_logits
    >>> z, y = scaled_logits(20000, 3, factor=2.0, spread=1.0, seed=0)
    >>> cal = BiasCorrectedTemperatureScaling().fit(z + [1.0, 0.0, 0.0], y)
    >>> round(cal.temperature_, 1), (cal.intercept_ - cal.intercept_[1]).round(1)
    (2.0, array([-0.5,  0. ,  0. ]))
    """

    #: it has no ``max_iter``, so scikit-learn's check of ``n_iter_`` does not apply, and passes
    EXPECTED_FAILED_CHECKS = {name: why for name, why in _Calibrator.EXPECTED_FAILED_CHECKS.items()
                              if name != "check_non_transformer_estimators_n_iter"}

    def __init__(self, bias: bool = True):
        self.bias = bias

    def _fit(self, logits, labels, sample_weight):
        z, y, _ = _multiclass_data(logits, labels)
        W, b, self.result_ = _fit_affine_logits(z, y, "vector", bool(self.bias), tie_weights=True,
                                                sample_weight=sample_weight)
        self.coef_ = np.diag(W).copy()
        self.intercept_ = b
        self.temperature_ = float(1.0 / self.coef_[0])
        return self

    def _transform(self, z):
        return z * self.coef_ + self.intercept_
