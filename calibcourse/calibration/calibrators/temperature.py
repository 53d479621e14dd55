"""Temperature scaling (chapter 4): the fit of one temperature by NLL, and the grid of temperatures."""
from __future__ import annotations

from typing import NamedTuple

import numpy as np

from calibcourse.calibration import metrics as M
from calibcourse.calibration.calibrators._base import _Calibrator, _like, _multiclass_data
from calibcourse.calibration.calibrators._newton import SUBSAMPLE, Separated, solve_beta

__all__ = ["TemperatureScaling", "TemperatureGrid"]


def _float32(a: np.ndarray) -> np.ndarray:
    return a.astype(np.float32)


def _moments_numpy(a, a_y, w=None):
    """``at(beta) -> (dNLL/dbeta, d2NLL/dbeta2, NLL)`` over ``a`` (rows shifted by their max) and ``a_y`` (the
    label's entry), in ``a``'s dtype (float32 is about twice as fast), block by block in one thread; ``w``:
    row weights summing to 1 (None: the mean)."""
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
    has its optimum at ``T = 0`` and is an error, unless ``targets="platt"``.

    With ``targets="platt"`` each label is replaced by Platt's target, the
    multiclass form of Platt scaling's (and of scikit-learn's sigmoid
    calibration): a sample of class :math:`k` has the target
    :math:`(N_k + 1)/(N_k + 2)` on its class and the rest,
    :math:`1/(N_k + 2)`, spread evenly over the other classes (for two classes,
    exactly Platt's :math:`(N_+ + 1)/(N_+ + 2)` and :math:`1/(N_- + 2)`). The
    optimum is then finite on a separated calibration set too: a small one that
    the model gets all right has a temperature that says "about one error in
    :math:`N_k + 2`", not :math:`T = 0`. On large sets the two fits agree
    (the targets differ from the labels by :math:`1/(N_k + 2)`).

    The passes run in numpy, single-threaded (torch tensors are read as numpy arrays, and the
    probabilities come back as a tensor).

    Parameters
    ----------
    tol : float, default=1e-10
        Tolerance on :math:`\beta = 1/T` (relative when :math:`\beta > 1`).
    max_iter : int, default=200
        Newton steps at most, per stage.
    targets : {"labels", "platt", "auto"}, default="labels"
        Fit the labels (the maximum-likelihood temperature) or Platt's smoothed targets; ``"auto"``:
        the labels, or Platt's targets where the labels are separated (what ``calibcourse report``
        fits: on a small set Platt's targets, which say "one error in :math:`N_k + 2`", pull
        :math:`T` up more than an accurate model deserves).

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
    #: The temperature fitted to logits without signal (with a ``UserWarning``): the logits unchanged.
    NO_SIGNAL_TEMPERATURE = 1.0

    def __init__(self, tol: float = 1e-10, max_iter: int = 200, targets: str = "labels"):
        self.tol = tol
        self.max_iter = max_iter
        self.targets = targets

    def _fit(self, logits, labels, sample_weight):
        from calibcourse.calibration._validation import check_choice
        from calibcourse.calibration.calibrators.binary import TARGETS

        check_choice(self.targets, (*TARGETS, "auto"), "targets")
        z, y, _ = _multiclass_data(logits, labels)
        if self.targets == "platt":
            return self._fit_targets(z, y, sample_weight)
        try:
            return self._fit_labels(z, y, sample_weight)
        except Separated:  # the labels' optimum is T = 0; Platt's targets' is finite
            if self.targets == "auto":
                return self._fit_targets(z, y, sample_weight)
            raise

    def _fit_labels(self, z, y, sample_weight):
        """The maximum-likelihood temperature of the labels (:class:`Separated` where it is 0)."""
        w = None if sample_weight is None else sample_weight / sample_weight.sum()
        live = slice(None) if w is None else w > 0  # rows of weight 0 take no part
        # shift each row by its max: beta * (z - max z) <= 0 never overflows, and the shift
        # cancels in E_q[z] - z_y
        zc = z - z.max(1, keepdims=True)
        zc_y = zc[np.arange(len(y)), y]
        gap = zc.mean(1) - zc_y
        separated = bool((zc_y == 0)[live].all())
        slope0 = float(np.mean(gap)) if w is None else float(np.dot(w, gap))
        if separated:  # the NLL decreases all the way to T = 0
            raise Separated("the optimal temperature is 0: the calibration set is perfectly separated by "
                             "the logits (every label is the argmax)")
        if slope0 >= 0:  # dNLL/dbeta at beta = 0: the NLL is smallest at T = infinity
            self.temperature_ = self._no_signal()
            self.nll_ = M.nll(M.softmax(z / self.temperature_), y, sample_weight=sample_weight)
            return self
        beta, self.nll_ = solve_beta(zc, zc_y, _moments_numpy, _float32, self.tol, self.max_iter, SUBSAMPLE, w)
        self.temperature_ = 1.0 / beta
        return self

    def _no_signal(self) -> float:
        """Warn that the optimum is T = infinity; the temperature returned instead."""
        import warnings

        warnings.warn("the logits carry no signal about the labels: the NLL does not decrease for any "
                      "finite T (its optimum is T = infinity, the uniform prediction); temperature "
                      f"scaling is undefined here and returns T = {self.NO_SIGNAL_TEMPERATURE:g}, the logits "
                      "unchanged", UserWarning, stacklevel=4)
        return self.NO_SIGNAL_TEMPERATURE

    def _fit_targets(self, z, y, sample_weight):
        """The fit on Platt's targets: the label's entry of a row becomes its mean under the targets."""
        k = z.shape[1]
        w = np.ones(len(y)) if sample_weight is None else sample_weight
        counts = np.bincount(y, weights=w, minlength=k)
        on = ((counts + 1.0) / (counts + 2.0))[y]  # the target of the label's class; the rest is shared
        zc = z - z.max(1, keepdims=True)
        zc_y = zc[np.arange(len(y)), y]
        zc_t = on * zc_y + (1.0 - on) / (k - 1) * (zc.sum(1) - zc_y)
        wn = None if sample_weight is None else sample_weight / sample_weight.sum()
        slope0 = float(np.mean(zc.mean(1) - zc_t)) if wn is None else float(np.dot(wn, zc.mean(1) - zc_t))
        if slope0 >= 0:  # no signal even in the targets: T = infinity
            self.temperature_ = self._no_signal()
        else:
            beta, _ = solve_beta(zc, zc_t, _moments_numpy, _float32, self.tol, self.max_iter, SUBSAMPLE, wn)
            self.temperature_ = 1.0 / beta
        self.nll_ = M.nll(M.softmax(z / self.temperature_), y, sample_weight=sample_weight)
        return self

    def _predict_proba(self, logits):
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
