"""The Newton solver of temperature scaling's NLL in beta = 1/T, on any array library's sums.

The toolkit's :class:`~calibcourse.calibration.calibrators.TemperatureScaling` runs it on numpy's
sums; the study's cross-fitted runs run it on torch's
(:func:`calibcourse.study.training.crossfit.temperature_torch`, training code), so that a run's
stored temperatures come from the arithmetic it was trained with. One solver, two kinds of sums.
"""
from __future__ import annotations

import numpy as np

__all__ = ["Separated", "SUBSAMPLE", "newton_in_beta", "solve_beta"]

#: rows of the subsample that finds Newton's starting point
SUBSAMPLE = 2048


class Separated(ValueError):
    """The NLL keeps decreasing as T -> 0: every label is the argmax."""


def newton_in_beta(moments, beta: float, tol: float, max_iter: int):
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
            raise Separated("the optimal temperature is 0: the calibration set is perfectly "
                             "separated by the logits (every label is the argmax)")
        step = abs(new - beta)
        beta = new
        if step < tol * max(1.0, beta) or hi - lo < tol:
            break
    return beta, nll


def solve_beta(zc, zc_y, moments, float32, tol: float, max_iter: int, subsample: int = SUBSAMPLE, w=None):
    """The NLL-optimal ``beta = 1/T`` and the NLL there, from row-shifted logits ``zc`` (float64), the
    label's entries ``zc_y`` and row weights ``w`` (sum 1, or None).

    ``moments(a, a_y, w)`` makes the function ``at(beta) -> (dNLL/dbeta, d2NLL/dbeta2, NLL)`` of
    :func:`newton_in_beta` over arrays of one library; ``float32(a)`` is ``a`` in float32 (the first
    stage's cheaper passes). A start from every stride-th row, then float32 until the step is below
    1e-4, then float64 to ``tol``.
    """
    zc32, zc_y32 = float32(zc), float32(zc_y)
    beta = 1.0
    stride = len(zc_y) // subsample
    if stride >= 4:  # a starting point from every stride-th row: a few cheap passes instead of full ones
        try:
            ws = None if w is None else w[::stride] / w[::stride].sum()
            beta, _ = newton_in_beta(moments(zc32[::stride], zc_y32[::stride], ws), beta, 1e-3, max_iter)
        except Separated:
            beta = 1.0
    try:  # float32 until the step is below 1e-4, then float64 (float32 brackets may be off by rounding)
        beta, _ = newton_in_beta(moments(zc32, zc_y32, w), beta, 1e-4, max_iter)
        beta, nll = newton_in_beta(moments(zc, zc_y, w), beta, tol, max_iter)
    except Separated as exc:
        raise Separated(str(exc)) from None
    return beta, nll
