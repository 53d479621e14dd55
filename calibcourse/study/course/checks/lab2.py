"""The checks of Lab 2: softmax with a temperature, temperature scaling, the grid search, the NLL.

Each check grades one of a few *variants* of its exercise (``variant=``): the lab as published
asks for the first of each, and a course that sets its own secret hands out other ones
(:data:`VARIANTS`; the hand-out states which), so that the public solution does not pass that
course's tests.
"""
from __future__ import annotations

import functools
import itertools

import numpy as np
from scipy.optimize import minimize_scalar

from calibcourse.calibration import calibrators as C
from calibcourse.calibration import metrics as M
from calibcourse.calibration.synthetic import scaled_logits
from calibcourse.study.course.checks._harness import (
    _as_float_array,
    _call,
    _close,
    _first_difference,
    _memo,
    _short,
    _start,
)

__all__ = ["check_softmax_temperature", "check_temperature_scaling", "check_grid_temperature",
           "check_nll_temperature", "VARIANTS"]

#: each check's variants, the published one first: what the function returns (probabilities or their
#: logarithms), what T minimizes (the NLL or the Brier score), which calibration error the grid
#: minimizes (equal-width bins, equal-mass bins, or the l2 error), the NLL's unit (nats or bits)
VARIANTS = {
    "check_softmax_temperature": ("probabilities", "log-probabilities"),
    "check_temperature_scaling": ("nll", "brier"),
    "check_grid_temperature": ("ece", "equal-mass", "l2"),
    "check_nll_temperature": ("nats", "bits"),
}


def _variant(check: str, variant: str) -> str:
    if variant not in VARIANTS[check]:
        raise ValueError(f"variant must be one of {', '.join(VARIANTS[check])}; got {variant!r}")
    return variant


def _mixed_offsets(rng, n, k, scale):
    """Logits whose rows are shifted by very different amounts (0 to about 1500 divided by the temperature
    ``scale``): exp overflows, and one maximum for the whole array (in place of each row's) underflows the
    rows far below it."""
    z = rng.normal(size=(n, k)) * 5
    offsets = np.r_[0.0, 1500.0, rng.choice([0.0, 300.0, 700.0, 1100.0, 1500.0], n - 2)] * scale
    z[np.arange(n), rng.integers(0, k, n)] += offsets
    return z


def _logit_cases(seed):
    rng = np.random.default_rng(100 + seed)
    yield "random logits, K=10", rng.normal(size=(200, 10)) * 3, float(rng.choice([0.5, 1.5, 2.0]))
    yield "random logits, K=2", rng.normal(size=(50, 2)) * 4, float(rng.choice([0.25, 3.0]))
    t = float(rng.choice([0.7, 1.3]))
    yield "large logits of very different sizes in each row (exp overflows)", _mixed_offsets(rng, 20, 5, t), t
    yield "one sample", rng.normal(size=(1, 4)), 1.0


def check_softmax_temperature(fn, verbose: bool = False, *, seed: int = 0, strict: bool = False, rules: bool = True,
                              variant: str = "probabilities") -> bool:
    """Check ``fn(logits, temperature) -> probabilities``: ``softmax(logits / T)`` row by row,
    finite for logits of about 1000 (the variant ``"log-probabilities"``: its logarithm,
    finite where a probability underflows).

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
    rules : bool, default=True
        Fail a function that calls what the exercise does not allow (:mod:`.rules`); False: check
        the numbers only.
    variant : {"probabilities", "log-probabilities"}, default="probabilities"
        What the function returns (:data:`VARIANTS`).

    Returns
    -------
    bool
        True when every case passed (with ``strict=True``: True, or :class:`CheckFailure`).

    Examples
    --------
    >>> from calibcourse.study.course import checks
    >>> def softmax_t(z, t):
    ...     e = np.exp(z / t - (z / t).max(axis=1, keepdims=True))
    ...     return e / e.sum(axis=1, keepdims=True)
    >>> checks.check_softmax_temperature(softmax_t)
    check_softmax_temperature: 4 passed, 0 failed -> all passed
    True
    >>> def naive_softmax(z, t):                   # no max subtracted: exp(1000) overflows
    ...     with np.errstate(over="ignore", invalid="ignore"):
    ...         e = np.exp(z / t)
    ...         return e / e.sum(axis=1, keepdims=True)
    >>> checks.check_softmax_temperature(naive_softmax)  # doctest: +ELLIPSIS
      FAIL  large logits of very different sizes in each row (exp overflows), T = 0.7
            6 of 100 values differ; the first at index (1, 1): expected 1, got nan (logits of that row ...)
            (the tolerance: 1e-09, absolute)
            hint: exp of a logit of 1000 is inf: subtract each row's maximum before exp (it cancels)
    check_softmax_temperature: 3 passed, 1 failed -> 1 failed
    False

    The library's softmax is what the exercise asks for: a function that calls it, however it
    reaches it, fails.

    >>> from calibcourse.calibration import metrics
    >>> checks.check_softmax_temperature(lambda z, t: getattr(metrics, "soft" + "max")(z / t))  # doctest: +ELLIPSIS
      FAIL  random logits, K=10, T = 1.5
            your function calls calibcourse.calibration.metrics.softmax, which this exercise does not allow ...
            hint: write it yourself, with what the exercise's text allows
    check_softmax_temperature: 0 passed, 1 failed, then stopped: ... 3 cases not run
    False
    """
    variant = _variant("check_softmax_temperature", variant)
    report = _start("check_softmax_temperature", fn, verbose, strict, seed, rules)
    logs = variant == "log-probabilities"
    for label, z, t in _logit_cases(seed):
        label = f"{label}, T = {t}"
        ok, got = _call(report, label, fn, z, t)
        if not ok:
            continue
        expected = M.log_softmax(z / t) if logs else M.softmax(z / t)
        arr, why = _as_float_array(got, expected.shape)
        # log-probabilities of -1000 and below: a relative tolerance there
        diff = why or _first_difference(arr, expected, 1e-9, functools.partial(_logits_row, z),
                                        rtol=1e-12 if logs else 0.0)
        if "large" in label:
            hint = ("exp of a logit of 1000 is inf: subtract each row's maximum before exp (it cancels)"
                    + ("; then log softmax = z - max - log(sum exp(z - max)), never the log of a probability "
                       "that underflowed to 0" if logs else ""))
        else:
            hint = ("divide the logits by T, then log softmax = z - max - log(sum exp(z - max)), row by row" if logs
                    else "divide the logits by T, exponentiate, normalize each row to sum 1")
        other = M.softmax(z / t) if logs else M.log_softmax(z / t)
        if diff and not why and np.allclose(arr, other, atol=1e-9, rtol=1e-12):
            diff += ("\nyour values are the probabilities; this exercise asks for their logarithms" if logs else
                     "\nyour values are the LOG-probabilities; this exercise asks for the probabilities")
        report.case(label, not diff, diff or "", hint,
                    tol="1e-09, absolute" + (", or 1e-12 of the value's size where larger" if logs else ""))
    return report.done()


def _shifted_logits(seed):
    z, y = scaled_logits(1500, 10, factor=1.0, spread=1.5, seed=seed)
    # validation: overconfident by 2.5; test: by 1.5 -- the two splits want different temperatures
    return 2.5 * z[:800], y[:800], 1.5 * z[800:], y[800:]


def _fit_temperature(z, y, criterion: str) -> float:
    """The T minimizing the NLL (the library's temperature scaling) or the Brier score of softmax(z / T)."""
    if criterion == "nll":
        return float(C.TemperatureScaling().fit(z, y).temperature_)
    res = minimize_scalar(lambda lt: M.brier(M.softmax(z / np.exp(lt)), y), bounds=(-5, 5), method="bounded",
                          options={"xatol": 1e-10})
    return float(np.exp(res.x))


@functools.lru_cache(maxsize=64)  # the grader runs one seed's check once; a test runs it for several functions
def _scaling_case(s, criterion):
    zv, yv, zt, yt = _shifted_logits(s)
    return {c: (_fit_temperature(zv, yv, c), _fit_temperature(zt, yt, c)) for c in dict.fromkeys((criterion, "nll"))}


def check_temperature_scaling(fn, verbose: bool = False, *, seed: int = 0, strict: bool = False, rules: bool = True,
                              variant: str = "nll") -> bool:
    """Check ``fn(val_logits, val_labels, test_logits, test_labels) -> test probabilities``:
    T fitted by NLL (the variant ``"brier"``: by the Brier score) on the validation split only,
    applied to the test logits.

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
    rules : bool, default=True
        Fail a function that calls what the exercise does not allow (:mod:`.rules`); False: check
        the numbers only.
    variant : {"nll", "brier"}, default="nll"
        What T minimizes on the validation split (:data:`VARIANTS`).

    Returns
    -------
    bool
        True when every case passed (with ``strict=True``: True, or :class:`CheckFailure`).

    Examples
    --------
    >>> from scipy.optimize import minimize_scalar
    >>> from calibcourse.study.course import checks
    >>> from calibcourse.calibration import metrics
    >>> def fit(z, y):
    ...     nll = lambda lt: metrics.nll(metrics.softmax(z / np.exp(lt)), y)
    ...     return np.exp(minimize_scalar(nll, bounds=(-4, 4), method="bounded", options={"xatol": 1e-9}).x)
    >>> def scaled(zv, yv, zt, yt):
    ...     return metrics.softmax(zt / fit(zv, yv))
    >>> checks.check_temperature_scaling(scaled)
    check_temperature_scaling: 2 passed, 0 failed -> all passed
    True
    >>> def leaky(zv, yv, zt, yt):                 # fitted on the test split
    ...     return metrics.softmax(zt / fit(zt, yt))
    >>> checks.check_temperature_scaling(leaky)  # doctest: +ELLIPSIS
      FAIL  overconfident logits, case 1
            your probabilities match T = 1.388, fitted on the TEST split; the validation split gives T = 2.524
            (the tolerance: 2e-03, absolute)
            hint: fit T on (val_logits, val_labels) only; the test labels are for evaluation
    ...
    check_temperature_scaling: 0 passed, 2 failed -> 2 failed
    False
    """
    variant = _variant("check_temperature_scaling", variant)
    report = _start("check_temperature_scaling", fn, verbose, strict, seed, rules)
    what = "the NLL" if variant == "nll" else "the Brier score"
    for s in (2 * seed, 2 * seed + 1):
        zv, yv, zt, yt = _shifted_logits(s)
        label = f"overconfident logits, case {s - 2 * seed + 1}"
        ok, got = _call(report, label, fn, zv, yv, zt, yt)
        if not ok:
            continue
        temps = _scaling_case(s, variant)
        t_val, t_test = temps[variant]
        expected = M.softmax(zt / t_val)
        arr, why = _as_float_array(got, expected.shape)
        if arr is not None and np.abs(arr - M.softmax(zt / t_test)).max() < 2e-3:
            report.case(label, False, f"your probabilities match T = {t_test:.3f}, fitted on the "
                        f"TEST split; the validation split gives T = {t_val:.3f}",
                        "fit T on (val_logits, val_labels) only; the test labels are for evaluation",
                        tol="2e-03, absolute")
            continue
        diff = why or _first_difference(arr, expected, 2e-3)
        if diff and not why and variant != "nll" and np.abs(arr - M.softmax(zt / temps["nll"][0])).max() < 2e-3:
            diff += f"\nyour T minimizes the NLL; this exercise asks for the T that minimizes {what}"
        report.case(label, not diff, f"expected T = {t_val:.3f}; {diff}",
                    f"minimize {what} of softmax(z / T) over T > 0 (e.g. scipy.optimize."
                    "minimize_scalar on log T); a grid with a coarse step is not precise enough", tol="2e-03, absolute")
    return report.done()


def _criterion(zv, yv, grid, n_bins, variant, weighted=True):
    """The validation calibration error of softmax(zv / T) for every T of ``grid``: the ECE of equal-width
    bins (``"ece"``), of equal-mass bins (``"equal-mass"``) or the l2 error (``"l2"``); ``weighted=False``:
    every non-empty bin counts the same (a known mistake)."""
    out = np.empty(len(grid))
    for i, t in enumerate(grid):
        p = M.softmax(zv / t)
        if weighted:
            out[i] = M.ece(p, yv, n_bins=n_bins, strategy="quantile" if variant == "equal-mass" else "uniform",
                           norm="l2" if variant == "l2" else "l1")
        else:
            rb = M.reliability_bins(p, yv, n_bins=n_bins, strategy="quantile" if variant == "equal-mass" else "uniform")
            gap = np.abs(rb.gap[rb.count > 0])
            out[i] = np.sqrt(np.mean(gap**2)) if variant == "l2" else np.mean(gap)
    return out


def _first_best(grid, values) -> float:
    return float(grid[int(np.argmin(values))])


def _grid_cases(seed):
    """The cases of a seed, made as they are reached: ``(label, logits, labels, grid, n_bins)``: two
    overconfident splits; uninformative logits (each row's logits equal: every T gives the same error,
    so the answer is the grid's first T); and, for a hidden seed, a case that a function which ignores
    ``n_bins``, averages the bins unweighted, minimizes another variant's error or picks the NLL's
    optimum gets wrong (:func:`_deciding_plan`)."""
    rng = np.random.default_rng(200 + seed)
    plans = [(2 * seed, np.round(np.arange(0.5, 4.01, 0.25), 4), 15, 300),
             (2 * seed + 1, np.round(rng.uniform(0.3, 5.0, 12), 3), 10, 400)]
    for s, grid, n_bins, n in plans:
        zv, yv, _, _ = _shifted_logits(s)
        # small splits: the ECE and NLL optima differ
        yield f"overconfident logits, {grid.size} temperatures, {n_bins} bins", zv[:n], yv[:n], grid, n_bins
    k, n = int(rng.integers(3, 8)), int(rng.integers(40, 120))
    flat = np.repeat(rng.normal(size=(n, 1)) * 3, k, axis=1)  # softmax(z / T) = 1/K at every T
    grid = np.round(rng.permutation(np.r_[rng.uniform(0.3, 5.0, 9), 1.0]), 3)
    yield ("uninformative logits (every T gives the same error: the first T is the answer), "
           f"{grid.size} temperatures", flat, rng.integers(0, k, n), grid, 10)


def _screen_with(conf, ok, zv, yv, grid, n_bins, variant, weighted=True):
    """:func:`_screen_conf` as :func:`_rivals` calls an error, on confidences computed once for every T."""
    return _screen_conf(conf, ok, n_bins, variant, weighted)


def _grid_answers(zv, yv, grid, n_bins, variant):
    """The grid's T by the variant's error, by the NLL, and by the ECE (None where the variant is the ECE)."""
    return (_first_best(grid, _criterion(zv, yv, grid, n_bins, variant)),
            C.TemperatureScaling.grid(zv, yv, grid, n_bins=n_bins).best("nll"),
            _first_best(grid, _criterion(zv, yv, grid, n_bins, "ece")) if variant != "ece" else None)


def _logits_row(z, i) -> str:
    """The row of the logits where the first difference is (``i``: its index), for the report."""
    return f"logits of that row {_short(z[i[0]])}"


def _screen_conf(conf, ok, n_bins, variant, weighted=True):
    g, n = conf.shape
    if variant == "equal-mass":
        sizes = np.full(n_bins, n // n_bins)
        sizes[: n % n_bins] += 1
        idx = np.empty((g, n), dtype=np.int64)
        np.put_along_axis(idx, np.argsort(conf, axis=1, kind="stable"), np.repeat(np.arange(n_bins), sizes)[None],
                          axis=1)
    else:
        idx = np.searchsorted(np.linspace(0, 1, n_bins + 1)[1:-1], conf, side="left")
    flat = (idx + n_bins * np.arange(g)[:, None]).ravel()
    gap = np.bincount(flat, (ok[None] - conf).ravel(), g * n_bins).reshape(g, n_bins)
    count = np.bincount(flat, minlength=g * n_bins).reshape(g, n_bins)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean_gap = np.abs(gap) / count
    if not weighted:
        return np.nanmean(mean_gap**2, axis=1) ** 0.5 if variant == "l2" else np.nanmean(mean_gap, axis=1)
    if variant == "l2":
        return np.sqrt(np.nansum(count * mean_gap**2, axis=1) / n)
    return np.abs(gap).sum(axis=1) / n


def _rivals(zv, yv, grid, n_bins, variant, error):
    """The grid's optimum under ``error(zv, yv, grid, n_bins, variant, weighted)`` and the optima a wrong
    answer would give: 10, 15 or 20 bins, the published variant's error, the unweighted average, the NLL."""
    best = _first_best(grid, error(zv, yv, grid, n_bins, variant))
    others = [_first_best(grid, error(zv, yv, grid, b, variant)) for b in (10, 15, 20)]
    if variant != "ece":  # the published variant's answer (a copied public solution) is wrong here
        others.append(_first_best(grid, error(zv, yv, grid, n_bins, "ece")))
    if variant != "equal-mass":  # equal-mass bins hold (nearly) equal counts: weights change nothing
        others.append(_first_best(grid, error(zv, yv, grid, n_bins, variant, False)))
    if error is not _criterion:  # the quick screen: the NLL at every T at once
        zt = zv[None] / grid[:, None, None]
        top = zt.max(axis=2, keepdims=True)
        nll = np.mean(np.log(np.exp(zt - top).sum(axis=2)) + top[..., 0] - zt[:, np.arange(len(yv)), yv], axis=1)
        others.append(_first_best(grid, nll))
    else:
        others.append(C.TemperatureScaling.grid(zv, yv, grid, n_bins=n_bins).best("nll"))
    return best, others


@functools.lru_cache(maxsize=1024)   # the grader runs one seed's check once; a test runs it for several functions
def _deciding_plan(seed, variant):
    """``(logits seed, grid, n_bins, n)`` of a grid search whose optimum at ``n_bins`` differs from the
    optimum at the counts a student might hard-code (10, 15, 20), from the NLL's, from the unweighted
    average's and from the published variant's: the first such candidate, in an order fixed by ``seed``
    (deterministic; every seed has one within a few dozen tries)."""
    rng = np.random.default_rng(900 + seed)
    grid = np.round(np.arange(0.6, 3.01, 0.15), 4)
    for _ in range(300):
        s, n, n_bins = int(rng.integers(10**6)), int(rng.choice([200, 250, 300])), int(rng.choice([4, 5, 6, 25, 30]))
        zv, yv = _plan_logits(s, n)
        d = zv - zv.max(axis=1, keepdims=True)
        conf, ok = 1.0 / np.exp(d[None] / grid[:, None, None]).sum(axis=2), (zv.argmax(axis=1) == yv).astype(float)
        # the confidences computed once for every error
        best, others = _rivals(zv, yv, grid, n_bins, variant, functools.partial(_screen_with, conf, ok))
        if best in others:
            continue
        best, others = _rivals(zv, yv, grid, n_bins, variant, _criterion)  # confirmed with the library's ECE
        if best not in others:
            return s, grid, n_bins, n
    raise RuntimeError(f"no grid case where the bin count decides, for seed {seed}")  # pragma: no cover


def _plan_logits(s, n):
    """A small overconfident validation split (by 2.5), for the search of a deciding case."""
    z, y = scaled_logits(n, 10, factor=1.0, spread=1.5, seed=s)
    return 2.5 * z, y


def _deciding_case(seed, variant):
    s, grid, n_bins, n = _deciding_plan(seed, variant)
    zv, yv = _plan_logits(s, n)
    return f"overconfident logits, {grid.size} temperatures, {n_bins} bins", zv, yv, grid, n_bins


_GRID_WHAT = {"ece": "ECE (equal-width bins)", "equal-mass": "ECE with equal-mass bins", "l2": "l2 calibration error"}


def check_grid_temperature(fn, verbose: bool = False, *, seed: int = 0, strict: bool = False, rules: bool = True,
                           variant: str = "ece") -> bool:
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
    rules : bool, default=True
        Fail a function that calls what the exercise does not allow (:mod:`.rules`); False: check
        the numbers only.
    variant : {"ece", "equal-mass", "l2"}, default="ece"
        The error the grid minimizes: the ECE of ``n_bins`` equal-width bins, of ``n_bins``
        equal-mass bins, or the l2 calibration error of equal-width bins (:data:`VARIANTS`).

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
    check_grid_temperature: 3 passed, 0 failed -> all passed
    True
    """
    variant = _variant("check_grid_temperature", variant)
    report = _start("check_grid_temperature", fn, verbose, strict, seed, rules)
    what = _GRID_WHAT[variant]
    # the deciding case: in every hidden test, and in a course's variant's visible check too (where the
    # published variant's answer must fail in sight)
    deciding = [lambda: _deciding_case(seed, variant)] if seed or variant != "ece" else []
    for case in itertools.chain(_grid_cases(seed), deciding):
        if callable(case):  # the hidden case that takes a search: made only if it runs
            if report.stopped():
                report.not_run += 1
                continue
            case = case()
        label, zv, yv, grid, n_bins = case
        ok, got = _call(report, label, fn, zv, yv, grid, n_bins)
        if not ok:
            continue
        expected, t_nll, t_ece = _memo(("grid", seed, variant, label, grid.tobytes(), n_bins),
                                       functools.partial(_grid_answers, zv, yv, grid, n_bins, variant))
        detail = f"grid {_short(grid)}; expected T = {expected:g}, got {got}"
        hint = (f"compute the validation {what} of softmax(val_logits / T) for every T of the grid; "
                "return the T of the smallest (the first one on ties)")
        good = _close(got, expected, 1e-9)
        if not good and _close(got, t_nll, 1e-9):
            detail += f"\nyour T is the grid's NLL optimum; this exercise asks for the optimum of the {what}"
        elif not good and variant != "ece" and _close(got, t_ece, 1e-9):
            detail += f"\nyour T is the optimum of the {_GRID_WHAT['ece']}; this exercise asks for the {what}'s"
        elif not good and "uninformative" in label:
            detail += "\nevery T of this grid gives the same error: the first one is the answer"
        report.case(label, good, detail, hint, tol="1e-09, absolute")
    return report.done()


def _exact_nll(z, y, t):
    return float(-np.mean(M.log_softmax(np.asarray(z, float) / t)[np.arange(len(y)), y]))


def check_nll_temperature(fn, verbose: bool = False, *, seed: int = 0, strict: bool = False, rules: bool = True,
                          variant: str = "nats") -> bool:
    r"""Check ``fn(logits, labels, temperature) -> float``: the mean negative log-likelihood
    :math:`-\frac1n\sum_i \log \mathrm{softmax}(z_i / T)_{y_i}` (in nats; the variant ``"bits"``:
    in bits, the logarithm to base 2), finite where a true class's probability underflows to 0
    (log-sum-exp, not ``log(softmax)``).

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
    rules : bool, default=True
        Fail a function that calls what the exercise does not allow (:mod:`.rules`); False: check
        the numbers only.
    variant : {"nats", "bits"}, default="nats"
        The NLL's unit (:data:`VARIANTS`).

    Returns
    -------
    bool
        True when every case passed (with ``strict=True``: True, or :class:`CheckFailure`).

    Examples
    --------
    >>> from calibcourse.study.course import checks
    >>> def nll(z, y, t):
    ...     z = z / t
    ...     z = z - z.max(axis=1, keepdims=True)
    ...     log_p = z - np.log(np.exp(z).sum(axis=1, keepdims=True))
    ...     return -np.mean(log_p[np.arange(len(y)), y])
    >>> checks.check_nll_temperature(nll)
    check_nll_temperature: 5 passed, 0 failed -> all passed
    True

    The log of the softmax underflows where the true class is far behind:

    >>> def naive(z, y, t):
    ...     e = np.exp(z / t - (z / t).max(1, keepdims=True))
    ...     with np.errstate(divide="ignore"):  # log(0) of an underflowed probability: -inf
    ...         return -np.mean(np.log((e / e.sum(1, keepdims=True))[np.arange(len(y)), y]))
    >>> checks.check_nll_temperature(naive)  # doctest: +ELLIPSIS
      FAIL  large logits, the true class far behind (its softmax underflows to 0)
            expected NLL = 266.26..., got inf
            (the tolerance: 1e-06 of the NLL, at least 1e-06)
            hint: log softmax(z)_y = z_y - max(z) - log(sum_j exp(z_j - max(z))): never take the log of a
            probability that may be 0
    check_nll_temperature: 4 passed, 1 failed -> 1 failed
    False
    """
    variant = _variant("check_nll_temperature", variant)
    report = _start("check_nll_temperature", fn, verbose, strict, seed, rules)
    unit = np.log(2.0) if variant == "bits" else 1.0
    rng = np.random.default_rng(400 + seed)
    z10, y10 = scaled_logits(300, 10, factor=2.0, spread=1.5, seed=seed)
    z2 = rng.normal(size=(60, 2)) * 3
    y2 = rng.integers(0, 2, 60)
    t_big = float(rng.choice([1.0, 1.5])) if seed else 1.0
    big = rng.normal(size=(30, 4)) * 5
    # the gap is 800 after the division by T, at every T: exp(-800) underflows to 0 in float64
    big[:, 0] += 800.0 * t_big
    y_big = np.r_[np.zeros(20, int), rng.integers(1, 4, 10)]  # the last ten: the true class far behind
    t_mixed = float(rng.choice([0.8, 1.0, 1.25]))
    mixed = _mixed_offsets(rng, 24, 4, t_mixed)
    cases = [("overconfident logits, K=10, T=1", z10, y10, 1.0),
             ("overconfident logits, K=10, T=2.5", z10, y10, 2.5),
             ("random logits, K=2, T=0.5", z2, y2, 0.5),
             ("large logits, the true class far behind (its softmax underflows to 0)", big, y_big, t_big),
             ("large logits of very different sizes in each row", mixed, mixed.argmax(1), t_mixed)]
    for label, z, y, t in cases:
        ok, got = _call(report, label, fn, z, y, t)
        if not ok:
            continue
        expected = _exact_nll(z, y, t) / unit
        good = _close(got, expected, 1e-6 * max(1.0, abs(expected)))
        if "underflows" in label:
            hint = ("log softmax(z)_y = z_y - max(z) - log(sum_j exp(z_j - max(z))): never take the log of a "
                    "probability that may be 0")
        elif "sizes" in label:
            hint = "subtract each ROW's maximum (one maximum for the whole array underflows the rows far below it)"
        else:
            hint = "average -log softmax(z / T)[y] over the samples (divide the logits by T first)"
        detail = f"expected NLL = {expected:.6f}" + (" bits" if variant == "bits" else "") + f", got {got}"
        if not good and variant == "bits" and _close(got, expected * unit, 1e-6 * max(1.0, abs(expected))):
            detail += "\nyour value is in nats (natural logarithm); this exercise asks for bits (divide by log 2)"
        elif not good and variant == "nats" and _close(got, expected / np.log(2.0), 1e-6 * max(1.0, abs(expected))):
            detail += "\nyour value is in bits; this exercise asks for nats (the natural logarithm)"
        report.case(label, good, detail, hint, tol="1e-06 of the NLL, at least 1e-06")
    return report.done()
