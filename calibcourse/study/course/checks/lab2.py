"""The checks of Lab 2: softmax with a temperature, temperature scaling, the grid search, the NLL."""
from __future__ import annotations

import functools

import numpy as np

from calibcourse.calibration import calibrators as C
from calibcourse.calibration import metrics as M
from calibcourse.calibration.synthetic import scaled_logits
from calibcourse.study.course.checks._harness import _as_float_array, _call, _close, _first_difference, _short, _start

__all__ = ["check_softmax_temperature", "check_temperature_scaling", "check_grid_temperature",
           "check_nll_temperature"]


def _logit_cases(seed):
    rng = np.random.default_rng(100 + seed)
    yield "random logits, K=10", rng.normal(size=(200, 10)) * 3, float(rng.choice([0.5, 1.5, 2.0]))
    yield "random logits, K=2", rng.normal(size=(50, 2)) * 4, float(rng.choice([0.25, 3.0]))
    big = rng.normal(size=(20, 5)) * 10
    big[:, 0] += 1000.0 * (1 + seed % 3)  # exp(1000) overflows: subtract the row maximum first
    yield "large logits (about 1000: exp overflows)", big, 0.7
    yield "one sample", rng.normal(size=(1, 4)), 1.0


def check_softmax_temperature(fn, verbose: bool = False, *, seed: int = 0, strict: bool = False) -> bool:
    """Check ``fn(logits, temperature) -> probabilities``: ``softmax(logits / T)`` row by row,
    finite for logits of about 1000.

    Parameters
    ----------
    fn : callable
        The student's function, with the signature above.
    verbose : bool, default=False
        Also print the cases that passed.
    seed : int, default=0
        0: the cases shown in the lab; another value: other inputs (the graded hidden tests).
    strict : bool, default=False
        Print nothing; raise :class:`CheckFailure` with the report if a case fails.

    Returns
    -------
    bool
        True when every case passed (with ``strict=True``: True, or :class:`CheckFailure`).

    Examples
    --------
    >>> from calibcourse.study.course import checks
    >>> from calibcourse.calibration import metrics
    >>> checks.check_softmax_temperature(lambda z, t: metrics.softmax(z / t))
    check_softmax_temperature: 4 passed, 0 failed -> all passed
    True
    >>> def naive_softmax(z, t):                   # no max subtracted: exp(1000) overflows
    ...     with np.errstate(over="ignore", invalid="ignore"):
    ...         e = np.exp(z / t)
    ...         return e / e.sum(axis=1, keepdims=True)
    >>> checks.check_softmax_temperature(naive_softmax)  # doctest: +ELLIPSIS
      FAIL  large logits (about 1000: exp overflows), T = 0.7
            20 of 100 values differ; the first at index (0, 0): expected 1, got nan (logits of that row ...)
            hint: exp of a logit of 1000 is inf: subtract each row's maximum before exp (it cancels)
    check_softmax_temperature: 3 passed, 1 failed -> 1 failed
    False
    """
    report = _start("check_softmax_temperature", fn, verbose, strict, seed)
    for label, z, t in _logit_cases(seed):
        label = f"{label}, T = {t}"
        ok, got = _call(report, label, fn, z, t)
        if not ok:
            continue
        expected = M.softmax(z / t)
        arr, why = _as_float_array(got, expected.shape)
        diff = why or _first_difference(arr, expected, 1e-9, lambda i: f"logits of that row {_short(z[i[0]])}")
        hint = ("exp of a logit of 1000 is inf: subtract each row's maximum before exp (it cancels)"
                if "large" in label else "divide the logits by T, exponentiate, normalize each row to sum 1")
        report.case(label, not diff, diff or "", hint)
    return report.done()


def _shifted_logits(seed):
    z, y = scaled_logits(1500, 10, factor=1.0, spread=1.5, seed=seed)
    # validation: overconfident by 2.5; test: by 1.5 -- the two splits want different temperatures
    return 2.5 * z[:800], y[:800], 1.5 * z[800:], y[800:]


def check_temperature_scaling(fn, verbose: bool = False, *, seed: int = 0, strict: bool = False) -> bool:
    """Check ``fn(val_logits, val_labels, test_logits, test_labels) -> test probabilities``:
    T fitted by NLL on the validation split only, applied to the test logits.

    The two splits are built to need different temperatures, so fitting on the test split
    (a leak) is told apart from fitting on the validation split.

    Parameters
    ----------
    fn : callable
        The student's function, with the signature above.
    verbose : bool, default=False
        Also print the cases that passed.
    seed : int, default=0
        0: the cases shown in the lab; another value: other inputs (the graded hidden tests).
    strict : bool, default=False
        Print nothing; raise :class:`CheckFailure` with the report if a case fails.

    Returns
    -------
    bool
        True when every case passed (with ``strict=True``: True, or :class:`CheckFailure`).

    Examples
    --------
    >>> from calibcourse.study.course import checks
    >>> from calibcourse.calibration.calibrators import TemperatureScaling
    >>> def scaled(zv, yv, zt, yt):
    ...     return TemperatureScaling().fit(zv, yv).predict_proba(zt)
    >>> checks.check_temperature_scaling(scaled)
    check_temperature_scaling: 2 passed, 0 failed -> all passed
    True
    >>> def leaky(zv, yv, zt, yt):                 # fitted on the test split
    ...     return TemperatureScaling().fit(zt, yt).predict_proba(zt)
    >>> checks.check_temperature_scaling(leaky)  # doctest: +ELLIPSIS
      FAIL  overconfident logits, case 1
            your probabilities match T = 1.388, fitted on the TEST split; the validation split gives T = 2.524
            hint: fit T on (val_logits, val_labels) only; the test labels are for evaluation
    ...
    check_temperature_scaling: 0 passed, 2 failed -> 2 failed
    False
    """
    report = _start("check_temperature_scaling", fn, verbose, strict, seed)
    for s in (2 * seed, 2 * seed + 1):
        zv, yv, zt, yt = _shifted_logits(s)
        label = f"overconfident logits, case {s - 2 * seed + 1}"
        ok, got = _call(report, label, fn, zv, yv, zt, yt)
        if not ok:
            continue
        ref = C.TemperatureScaling().fit(zv, yv)
        leak = C.TemperatureScaling().fit(zt, yt)
        expected = ref.predict_proba(zt)
        arr, why = _as_float_array(got, expected.shape)
        if arr is not None and np.abs(arr - leak.predict_proba(zt)).max() < 2e-3:
            report.case(label, False, f"your probabilities match T = {leak.temperature_:.3f}, fitted on the "
                        f"TEST split; the validation split gives T = {ref.temperature_:.3f}",
                        "fit T on (val_logits, val_labels) only; the test labels are for evaluation")
            continue
        diff = why or _first_difference(arr, expected, 2e-3)
        report.case(label, not diff, f"expected T = {ref.temperature_:.3f}; {diff}",
                    "minimize the NLL of softmax(z / T) over T > 0 (e.g. scipy.optimize."
                    "minimize_scalar on log T); a grid with a coarse step is not precise enough")
    return report.done()


def check_grid_temperature(fn, verbose: bool = False, *, seed: int = 0, strict: bool = False) -> bool:
    """Check ``fn(val_logits, val_labels, temperatures, n_bins) -> T``: the temperature of
    ``temperatures`` whose ``softmax(val_logits / T)`` has the lowest validation ECE (the first
    one on ties), the hand search. The NLL's optimum on the grid is recognized and named.

    Parameters
    ----------
    fn : callable
        The student's function, with the signature above.
    verbose : bool, default=False
        Also print the cases that passed.
    seed : int, default=0
        0: the cases shown in the lab; another value: other inputs (the graded hidden tests).
    strict : bool, default=False
        Print nothing; raise :class:`CheckFailure` with the report if a case fails.

    Returns
    -------
    bool
        True when every case passed (with ``strict=True``: True, or :class:`CheckFailure`).

    Examples
    --------
    >>> from calibcourse.study.course import checks
    >>> from calibcourse.calibration import metrics
    >>> def grid_search(zv, yv, temperatures, n_bins):
    ...     eces = [metrics.ece(metrics.softmax(zv / t), yv, n_bins=n_bins) for t in temperatures]
    ...     return temperatures[int(np.argmin(eces))]
    >>> checks.check_grid_temperature(grid_search)
    check_grid_temperature: 2 passed, 0 failed -> all passed
    True
    """
    report = _start("check_grid_temperature", fn, verbose, strict, seed)
    rng = np.random.default_rng(200 + seed)
    cases = [(2 * seed, np.round(np.arange(0.5, 4.01, 0.25), 4), 15, 300),
             (2 * seed + 1, np.round(rng.uniform(0.3, 5.0, 12), 3), 10, 400)]
    if seed:  # a hidden case where the bin count decides the answer: a function that ignores n_bins fails it
        cases.append(_bins_deciding_case(seed))
    for s, grid, n_bins, n in cases:
        zv, yv, _, _ = _shifted_logits(s)
        zv, yv = zv[:n], yv[:n]  # small splits: the ECE and NLL optima differ
        label = f"overconfident logits, {grid.size} temperatures, {n_bins} bins"
        ok, got = _call(report, label, fn, zv, yv, grid, n_bins)
        if not ok:
            continue
        search = C.TemperatureScaling.grid(zv, yv, grid, n_bins=n_bins)
        expected, t_nll = search.best("ece"), search.best("nll")
        detail = f"grid {_short(grid)}; expected T = {expected:g} (validation ECE {search.ece.min():.4f}), got {got}"
        hint = ("compute the validation ECE of softmax(val_logits / T) for every T of the grid; "
                "return the T of the smallest")
        good = _close(got, expected, 1e-9)
        if not good and _close(got, t_nll, 1e-9):
            detail += "\nyour T is the grid's NLL optimum; this exercise asks for the ECE optimum"
        report.case(label, good, detail, hint)
    return report.done()


@functools.lru_cache(maxsize=512)   # the grader runs one seed's check once; a test runs it for several functions
def _bins_deciding_case(seed):
    """``(logits seed, grid, n_bins, n)`` of a grid search whose ECE optimum at ``n_bins`` differs from the
    optimum at the default 15 bins, at the other counts a student might hard-code and from the NLL
    optimum: the first such candidate, in an order fixed by ``seed`` (deterministic; every seed has one
    within a few tries)."""
    rng = np.random.default_rng(900 + seed)
    grid = np.round(np.arange(0.6, 3.01, 0.15), 4)
    for attempt in range(200):
        s, n, n_bins = int(rng.integers(10**6)), int(rng.choice([200, 250, 300])), int(rng.choice([4, 5, 6, 25, 30]))
        zv, yv, _, _ = _shifted_logits(s)
        zv, yv = zv[:n], yv[:n]
        searches = {b: C.TemperatureScaling.grid(zv, yv, grid, n_bins=b) for b in (n_bins, 10, 15, 20)}
        best = {b: g.best("ece") for b, g in searches.items()}
        if all(best[n_bins] != best[b] for b in (10, 15, 20)) and best[n_bins] != searches[n_bins].best("nll"):
            return s, grid, n_bins, n
    raise RuntimeError(f"no grid case where the bin count decides, for seed {seed}")  # pragma: no cover


def _exact_nll(z, y, t):
    return float(-np.mean(M.log_softmax(np.asarray(z, float) / t)[np.arange(len(y)), y]))


def check_nll_temperature(fn, verbose: bool = False, *, seed: int = 0, strict: bool = False) -> bool:
    r"""Check ``fn(logits, labels, temperature) -> float``: the mean negative log-likelihood
    :math:`-\frac1n\sum_i \log \mathrm{softmax}(z_i / T)_{y_i}`, finite where a true class's
    probability underflows to 0 (log-sum-exp, not ``log(softmax)``).

    Parameters
    ----------
    fn : callable
        The student's function, with the signature above.
    verbose : bool, default=False
        Also print the cases that passed.
    seed : int, default=0
        0: the cases shown in the lab; another value: other inputs (the graded hidden tests).
    strict : bool, default=False
        Print nothing; raise :class:`CheckFailure` with the report if a case fails.

    Returns
    -------
    bool
        True when every case passed (with ``strict=True``: True, or :class:`CheckFailure`).

    Examples
    --------
    >>> from scipy.special import log_softmax
    >>> from calibcourse.study.course import checks
    >>> def nll(z, y, t):
    ...     return -np.mean(log_softmax(z / t, axis=1)[np.arange(len(y)), y])
    >>> checks.check_nll_temperature(nll)
    check_nll_temperature: 4 passed, 0 failed -> all passed
    True

    The log of the softmax underflows where the true class is far behind:

    >>> def naive(z, y, t):
    ...     e = np.exp(z / t - (z / t).max(1, keepdims=True))
    ...     with np.errstate(divide="ignore"):  # log(0) of an underflowed probability: -inf
    ...         return -np.mean(np.log((e / e.sum(1, keepdims=True))[np.arange(len(y)), y]))
    >>> checks.check_nll_temperature(naive)  # doctest: +ELLIPSIS
      FAIL  large logits, the true class far behind (its softmax underflows to 0)
            expected NLL = 266.26..., got inf
            hint: log softmax(z)_y = z_y - max(z) - log(sum_j exp(z_j - max(z))): never take the log of a
            probability that may be 0
    check_nll_temperature: 3 passed, 1 failed -> 1 failed
    False
    """
    report = _start("check_nll_temperature", fn, verbose, strict, seed)
    rng = np.random.default_rng(400 + seed)
    z10, y10 = scaled_logits(300, 10, factor=2.0, spread=1.5, seed=seed)
    z2 = rng.normal(size=(60, 2)) * 3
    y2 = rng.integers(0, 2, 60)
    t_big = float(rng.choice([1.0, 1.5])) if seed else 1.0
    big = rng.normal(size=(30, 4)) * 5
    # the gap is 800 after the division by T, at every T: exp(-800) underflows to 0 in float64
    big[:, 0] += 800.0 * t_big
    y_big = np.r_[np.zeros(20, int), rng.integers(1, 4, 10)]  # the last ten: the true class far behind
    cases = [("overconfident logits, K=10, T=1", z10, y10, 1.0),
             ("overconfident logits, K=10, T=2.5", z10, y10, 2.5),
             ("random logits, K=2, T=0.5", z2, y2, 0.5),
             ("large logits, the true class far behind (its softmax underflows to 0)", big, y_big, t_big)]
    for label, z, y, t in cases:
        ok, got = _call(report, label, fn, z, y, t)
        if not ok:
            continue
        expected = _exact_nll(z, y, t)
        good = _close(got, expected, 1e-6 * max(1.0, abs(expected)))
        hint = ("log softmax(z)_y = z_y - max(z) - log(sum_j exp(z_j - max(z))): never take the log of a "
                "probability that may be 0" if "underflows" in label else
                "average -log softmax(z / T)[y] over the samples (divide the logits by T first)")
        report.case(label, good, f"expected NLL = {expected:.6f}, got {got}", hint)
    return report.done()
