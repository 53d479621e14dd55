"""Synthetic predictions whose calibration is known (chapter 1): the truth every estimator is checked against.

``SyntheticCalibration`` draws confidences and correctness from a known calibration curve
(its true and binned ECE in closed form); ``scaled_logits`` draws labels from ``softmax(z)``
while the model reports ``factor * z``, so the best temperature is ``factor``.
"""
from __future__ import annotations

import numpy as np

from calibcourse.calibration._validation import check_int

__all__ = ["SyntheticCalibration", "scaled_logits"]


class SyntheticCalibration:
    r"""Predictions whose true calibration curve is known (chapter 4: the bias of binned ECE).

    The top-label confidence is :math:`c = 1/K + (1 - 1/K) B`, :math:`B \sim
    \mathrm{Beta}(a, b)`, and the prediction is correct with probability
    :math:`P(\text{correct} \mid c) = c^{\,\text{power}}` (``power = 1``:
    perfectly calibrated; ``> 1``: overconfident; ``< 1``: underconfident), plus
    ``amplitude`` :math:`\cdot \sin(2\pi c / \text{period})` if given (clipped to [0, 1]): a
    miscalibration that changes sign every half period, over- and underconfident in turn.
    The true ECE is :math:`\mathbb E_c |P(\text{correct} \mid c) - c|`, computed by
    quadrature in :meth:`true_ece`.

    Parameters
    ----------
    n_classes : int, default=10
        The number of classes ``K``, at least 2.
    a, b : float, default=5.0, 1.0
        The parameters of the Beta distribution of :math:`B`, > 0.
    power : float, default=1.0
        The exponent of the true calibration curve, > 0.
    amplitude : float, default=0.0
        Amplitude of a sine added to the calibration curve, >= 0 (0: none).
    period : float, default=0.1
        Its period on the confidence axis, > 0: the miscalibration changes sign every half period.

    Examples
    --------
    >>> from calibcourse.calibration import metrics
    >>> sc = SyntheticCalibration(power=2.0)       # overconfident
    >>> round(sc.true_ece(), 4), round(sc.true_binned_ece(15), 4)
    (0.1114, 0.1114)
    >>> probs, labels = sc.sample(100_000, seed=0)
    >>> probs.shape, round(metrics.ece(probs, labels), 4)   # the estimate, from a sample
    ((100000, 10), 0.1122)
    >>> SyntheticCalibration(power=1.0).true_ece()           # perfectly calibrated
    0.0
    """

    def __init__(self, n_classes: int = 10, a: float = 5.0, b: float = 1.0, power: float = 1.0,
                 amplitude: float = 0.0, period: float = 0.1):
        if n_classes < 2:
            raise ValueError(f"n_classes must be >= 2; got {n_classes}")
        if not (a > 0 and b > 0 and power > 0):
            raise ValueError(f"a, b and power must be > 0; got {a}, {b}, {power}")
        if not (amplitude >= 0 and period > 0):
            raise ValueError(f"amplitude must be >= 0 and period > 0; got {amplitude}, {period}")
        self.n_classes, self.a, self.b, self.power = n_classes, a, b, power
        self.amplitude, self.period = amplitude, period

    def true_accuracy_given_confidence(self, c):
        """P(correct | confidence ``c``): ``c ** power``, plus the sine term when ``amplitude`` is set
        (clipped to [0, 1]), as a numpy array of ``c``'s shape."""
        c = np.asarray(c, dtype=float)
        if not self.amplitude:
            return c ** self.power
        return np.clip(c ** self.power + self.amplitude * np.sin(2 * np.pi * c / self.period), 0.0, 1.0)

    def _quad_points(self, lo: float = 0.0, hi: float = 1.0):
        """Break points of the quadrature in u in (lo, hi): the sine's zeros, where |gap| has kinks."""
        if not self.amplitude:
            return None
        k = self.n_classes
        u = (np.arange(0.0, 1.0 + 1e-12, self.period / 2) - 1.0 / k) / (1 - 1.0 / k)
        u = u[(u > lo) & (u < hi)]
        return list(u) if len(u) else None

    def sample(self, n: int, seed: int = 0):
        """``probs`` (n, K) whose max is c, and ``labels``: correct with probability
        :meth:`true_accuracy_given_confidence` of c.

        Parameters
        ----------
        n : int
            Number of samples, at least 1.
        seed : int, default=0
            Seed of the draw.

        Returns
        -------
        probs : numpy.ndarray of shape (n, K)
            The predicted class (uniform among the K) gets ``c``, every other class ``(1 - c) / (K - 1)``.
        labels : numpy.ndarray of shape (n,)
            The predicted class with probability :meth:`true_accuracy_given_confidence` of ``c``, else
            another class chosen uniformly.
        """
        if n < 1:
            raise ValueError(f"n must be >= 1; got {n}")
        rng = np.random.default_rng(seed)
        k = self.n_classes
        c = 1.0 / k + (1.0 - 1.0 / k) * rng.beta(self.a, self.b, n)
        pred = rng.integers(0, k, n)
        probs = np.repeat(((1.0 - c) / (k - 1))[:, None], k, axis=1)
        probs[np.arange(n), pred] = c
        correct = rng.random(n) < self.true_accuracy_given_confidence(c)
        other = (pred + rng.integers(1, k, n)) % k  # a uniformly chosen wrong class
        labels = np.where(correct, pred, other)
        return probs, labels

    def true_binned_ece(self, n_bins: int = 15) -> float:
        r"""The population value of the binned top-label ECE with ``n_bins`` equal-width bins.

        :math:`\sum_m |\int_{B_m} (P(\text{correct} \mid c) - c)\, dF(c)|`: what
        :func:`calibcourse.calibration.metrics.ece`
        estimates, at most :meth:`true_ece` (gaps of opposite sign inside a bin cancel).

        Parameters
        ----------
        n_bins : int, default=15
            Number of equal-width bins, at least 1.

        Returns
        -------
        float
            The binned ECE of the population, in [0, 1].
        """
        from scipy import integrate, stats

        if n_bins < 1:
            raise ValueError(f"n_bins must be >= 1; got {n_bins}")
        k = self.n_classes
        lo = 1.0 / k
        edges = np.linspace(0.0, 1.0, n_bins + 1)
        total = 0.0
        for a, b in zip(edges[:-1], edges[1:], strict=True):
            ua, ub = max((a - lo) / (1 - lo), 0.0), max((b - lo) / (1 - lo), 0.0)
            if ub <= ua:
                continue
            val, _ = integrate.quad(lambda u: (self.true_accuracy_given_confidence(lo + (1 - lo) * u)
                                               - (lo + (1 - lo) * u)) * stats.beta.pdf(u, self.a, self.b),
                                    ua, min(ub, 1.0), limit=200, points=self._quad_points(ua, min(ub, 1.0)))
            total += abs(val)
        return float(total)

    def true_ece(self) -> float:
        r"""The population top-label ECE :math:`\int |P(\text{correct} \mid c) - c|\, dF(c)`.

        Returns
        -------
        float
            The ECE, in [0, 1].
        """
        from scipy import integrate, stats

        k = self.n_classes
        lo = 1.0 / k

        def integrand(u):
            c = lo + (1 - lo) * u
            return abs(self.true_accuracy_given_confidence(c) - c) * stats.beta.pdf(u, self.a, self.b)

        val, _ = integrate.quad(integrand, 0.0, 1.0, limit=200, points=self._quad_points())
        return float(val)


def scaled_logits(n: int, n_classes: int = 10, factor: float = 2.0, spread: float = 1.5, seed: int = 0):
    """Logits of a model that is miscalibrated by a known temperature (the package's examples, tests, benchmarks).

    True logits ``z ~ spread * N(0, 1)`` per class, a label drawn from ``softmax(z)`` for each
    sample, and the model reports ``factor * z``: overconfident for ``factor > 1``,
    underconfident below 1. Temperature scaling's population optimum is ``T = factor``.

    Parameters
    ----------
    n : int
        Samples, at least 1.
    n_classes : int, default=10
        Classes, at least 2.
    factor : float, default=2.0
        What the model multiplies the true logits by, > 0.
    spread : float, default=1.5
        Standard deviation of the true logits, > 0.
    seed : int, default=0
        Seed of the logits and the labels (the same seed gives the same samples for every
        ``factor``).

    Returns
    -------
    logits : numpy.ndarray of shape (n, n_classes)
    labels : numpy.ndarray of shape (n,)

    Examples
    --------
    >>> from calibcourse.calibration.calibrators import TemperatureScaling
    >>> z, y = scaled_logits(20_000, n_classes=5, factor=3.0, seed=0)
    >>> z.shape, y[:6]
    ((20000, 5), array([2, 1, 3, 3, 1, 0]))
    >>> round(TemperatureScaling().fit(z, y).temperature_, 1)
    3.0
    """
    check_int(n, "n", low=1)
    check_int(n_classes, "n_classes", low=2)
    if not (factor > 0 and spread > 0):
        raise ValueError(f"factor and spread must be > 0; got {factor!r}, {spread!r}")
    rng = np.random.default_rng(seed)
    z = rng.normal(size=(n, n_classes)) * spread
    from calibcourse.calibration.metrics import softmax

    q = softmax(z)
    u = rng.random((n, 1))
    y = np.minimum((q.cumsum(axis=1) < u).sum(axis=1), n_classes - 1)
    return factor * z, y
