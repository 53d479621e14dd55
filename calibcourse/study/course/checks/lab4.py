"""The checks of Lab 4: SECE, the focal loss, FLSD-53, the class-wise ECE."""
from __future__ import annotations

from functools import partial

import numpy as np

from calibcourse.calibration import metrics as M
from calibcourse.study.course.checks._binned import _check_binned, _random_cases
from calibcourse.study.course.checks._harness import _call, _close, _first_difference, _memo, _start

__all__ = ["check_sece", "check_focal_loss", "check_flsd53", "check_classwise_ece"]


def _classwise(p, y, n_bins, side):
    """The class-wise ECE with bins closed on the right (``side="left"``) or on the left."""
    out = []
    for k in range(p.shape[1]):
        idx = np.searchsorted(np.linspace(0, 1, n_bins + 1)[1:-1], p[:, k], side=side)
        out.append(np.abs(np.bincount(idx, (y == k) - p[:, k], n_bins)).sum() / len(y))
    return float(np.mean(out))


def _classwise_edge_case(seed):
    """A hidden case for the class-wise ECE: class 0's probability exactly on bin edges (true class 0)
    beside a value inside the same bin (true class 1), so that Guo's bins and bins closed on the left
    give other class-wise ECEs; with random rows around them."""
    rng = np.random.default_rng(700 + seed)
    n_bins = int(rng.integers(4, 11))
    edges = np.linspace(0, 1, n_bins + 1)[1:-1]
    e = np.r_[edges, edges - 0.5 / n_bins]
    rows = np.c_[e, (1 - e) * 0.6, (1 - e) * 0.4]
    labels = np.r_[np.zeros(edges.size, int), np.ones(edges.size, int)]
    z = rng.normal(size=(40, 3)) * 2
    p = np.r_[rows, M.softmax(z)]
    y = np.r_[labels, rng.integers(0, 3, 40)]
    for _ in range(100):   # the random rows' labels redrawn until the two conventions differ
        if abs(_classwise(p, y, n_bins, "left") - _classwise(p, y, n_bins, "right")) > 1e-6:
            break
        y[edges.size * 2:] = rng.integers(0, 3, 40)
    return f"class probabilities exactly on bin edges ({n_bins} bins)", p, y, n_bins


def _loo_sece(p, y, h):
    conf, pred = p.max(1), p.argmax(1)
    a = (pred == y).astype(float)
    k = np.exp(-((conf[:, None] - conf[None, :]) ** 2) / (2 * h * h))
    np.fill_diagonal(k, 0.0)
    with np.errstate(invalid="ignore", divide="ignore"):
        return float(np.mean(np.abs(k @ a / k.sum(1) - conf)))


def check_sece(fn, verbose: bool = False, *, seed: int = 0, strict: bool = False, rules: bool = True) -> bool:
    """Check ``fn(probs, labels, bandwidth) -> float``: the SECE of Wang et al. (2023).

    A leave-one-out average (sample i left out of its own smoothed accuracy) is recognized
    and named.

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

    Returns
    -------
    bool
        True when every case passed (with ``strict=True``: True, or :class:`CheckFailure`).

    Examples
    --------
    >>> from calibcourse.study.course import checks
    >>> from calibcourse.calibration import metrics
    >>> checks.check_sece(lambda p, y, h: metrics.sece(p, y, bandwidth=h), verbose=True, rules=False)
      PASS  random probabilities, n=50, K=2, h=0.05
      PASS  random probabilities, n=50, K=2, h=0.2
      PASS  random probabilities, n=300, K=5, h=0.05
      PASS  random probabilities, n=300, K=5, h=0.2
      PASS  random probabilities, n=1000, K=10, h=0.05
      PASS  random probabilities, n=1000, K=10, h=0.2
      PASS  all predictions correct with confidence 1.0, h=0.05
      PASS  all predictions correct with confidence 1.0, h=0.2
    check_sece: 8 passed, 0 failed -> all passed
    True
    """
    report = _start("check_sece", fn, verbose, strict, seed, rules)
    cases = [(l, p, y) for l, p, y in _random_cases(3 + seed)]
    cases.append(("all predictions correct with confidence 1.0", np.tile([1.0, 0.0], (20, 1)), np.zeros(20, int)))
    for label, p, y in cases:
        for h in ((0.05, 0.2) if seed == 0 else (0.03, 0.1)):
            ok, got = _call(report, f"{label}, h={h}", fn, p, y, h)
            if not ok:
                continue
            expected = _memo(("sece", seed, label, h), partial(M.sece, p, y, bandwidth=h, method="exact"))
            detail = f"expected {expected:.6f}, got {got}"
            hint = "SACC_i is the kernel-WEIGHTED AVERAGE of correctness: divide by sum_j K(c_i, c_j)"
            good = _close(got, expected, 1e-6)
            loo = None if good else _loo_sece(p, y, h)
            if not good and _close(got, loo, 1e-6) and abs(loo - expected) > 1e-6:
                detail += ("\nyour value is the LEAVE-ONE-OUT variant: sample i is left out of its own "
                           "SACC_i; the SECE of Wang et al. sums over every j, j = i included (K = 1 there)")
                hint = "keep the diagonal of the kernel matrix"
            report.case(f"{label}, h={h}", good, detail, hint, tol="1e-06, absolute")
    return report.done()


def _torch_cases(seed):
    import torch

    g = torch.Generator().manual_seed(seed)
    z = torch.randn(64, 5, generator=g, dtype=torch.float64) * 2
    y = torch.randint(0, 5, (64,), generator=g)
    return z, y


def check_focal_loss(fn, verbose: bool = False, *, seed: int = 0, strict: bool = False, rules: bool = True) -> bool:
    """Check ``fn(logits, labels, gamma) -> scalar tensor``: the mean focal loss (torch).

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

    Returns
    -------
    bool
        True when every case passed (with ``strict=True``: True, or :class:`CheckFailure`).

    Examples
    --------
    Cross-entropy is the focal loss at ``gamma = 0`` only:

    >>> import torch.nn.functional as F
    >>> from calibcourse.study.course import checks
    >>> from calibcourse.study.training import losses
    >>> checks.check_focal_loss(lambda z, y, gamma: F.cross_entropy(z, y))
      FAIL  gamma = 1.0
            expected 2.65295854, got 2.8367412651821624
            (the tolerance: 1e-08, absolute)
            hint: -(1 - p_t) ** gamma * log(p_t), averaged over the batch, with p_t = softmax(z)[y]
      FAIL  gamma = 3.0
            expected 2.40859456, got 2.8367412651821624
            (the tolerance: 1e-08, absolute)
            hint: -(1 - p_t) ** gamma * log(p_t), averaged over the batch, with p_t = softmax(z)[y]
    check_focal_loss: 1 passed, 2 failed -> 2 failed
    False
    >>> checks.check_focal_loss(losses.focal_loss, seed=1, rules=False)     # other inputs, as the hidden tests
    check_focal_loss: 3 passed, 0 failed -> all passed
    True
    """
    from calibcourse.study.training.losses import focal_loss

    report = _start("check_focal_loss", fn, verbose, strict, seed, rules)
    z, y = _torch_cases(seed)
    for gamma in ((0.0, 1.0, 3.0) if seed == 0 else (0.0, 2.0, 4.5)):
        label = f"gamma = {gamma}" + (" (must equal cross-entropy)" if gamma == 0 else "")
        ok, got = _call(report, label, fn, z, y, gamma)
        if not ok:
            continue
        expected = float(focal_loss(z, y, gamma))
        report.case(label, _close(got, expected, 1e-8), f"expected {expected:.8f}, got {got}",
                    "-(1 - p_t) ** gamma * log(p_t), averaged over the batch, with p_t = softmax(z)[y]",
                    tol="1e-08, absolute")
    return report.done()


def check_flsd53(fn, verbose: bool = False, *, seed: int = 0, strict: bool = False, rules: bool = True) -> bool:
    """Check ``fn(logits, labels) -> scalar tensor``: FLSD-53 of Mukhoti et al. (2020), the focal
    loss with gamma 5 where p_t < 0.2 and 3 elsewhere; it must be differentiable (its gradient
    is checked too).

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

    Returns
    -------
    bool
        True when every case passed (with ``strict=True``: True, or :class:`CheckFailure`).

    Examples
    --------
    >>> from calibcourse.study.course import checks
    >>> from calibcourse.study.training import losses
    >>> checks.check_flsd53(losses.flsd53_loss, rules=False)
    check_flsd53: 2 passed, 0 failed -> all passed
    True
    >>> checks.check_flsd53(lambda z, y: losses.flsd53_loss(z, y).detach(), rules=False)  # doctest: +ELLIPSIS
      FAIL  spread logits: p_t on both sides of 0.2
            the value is right, the gradient is not: the loss cannot be differentiated (RuntimeError: ...)
            hint: compute the loss with torch operations on the logits (no numpy, no float()) so that it trains
    ...
    check_flsd53: 0 passed, 2 failed -> 2 failed
    False
    """
    import torch

    from calibcourse.study.training.losses import flsd53_loss

    report = _start("check_flsd53", fn, verbose, strict, seed, rules)
    z0, y = _torch_cases(seed)
    for scale, label in ((1.0, "spread logits: p_t on both sides of 0.2"),
                         (0.15, "flat logits: p_t near 1/K, gamma 5 for most samples")):
        z = (z0 * scale).clone().requires_grad_(True)
        ok, got = _call(report, label, fn, z, y)
        if not ok:
            continue
        zr = z.detach().clone().requires_grad_(True)
        ref = flsd53_loss(zr, y)
        ref.backward()
        ref = float(ref.detach())
        detail, hint = f"expected {ref:.8f}, got {got}", "gamma_i = 5 if p_t < 0.2 else 3, then the focal loss"
        good = _close(got, ref, 1e-8)
        if good:
            try:
                (grad,) = torch.autograd.grad(got, z)
                gdiff = _first_difference(grad.detach().numpy(), zr.grad.numpy(), 1e-8)
            except Exception as exc:
                gdiff = f"the loss cannot be differentiated ({type(exc).__name__}: {exc})"
            if gdiff:
                good = False
                detail = f"the value is right, the gradient is not: {gdiff}"
                hint = "compute the loss with torch operations on the logits (no numpy, no float()) so that it trains"
        report.case(label, good, detail, hint, tol="1e-08, absolute")
    return report.done()


def check_classwise_ece(fn, verbose: bool = False, *, seed: int = 0, strict: bool = False, rules: bool = True) -> bool:
    r"""Check ``fn(probs, labels, n_bins) -> float``: the class-wise ECE of Kull et al. (2019),
    the ECE of every class's probability :math:`p_k` against the indicator :math:`y = k`
    (equal-width bins on :math:`p_k`), averaged over the :math:`K` classes.

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

    Returns
    -------
    bool
        True when every case passed (with ``strict=True``: True, or :class:`CheckFailure`).

    Examples
    --------
    >>> from calibcourse.study.course import checks
    >>> from calibcourse.calibration import metrics
    >>> checks.check_classwise_ece(lambda p, y, n: metrics.classwise_ece(p, y, n_bins=n), rules=False)
    check_classwise_ece: 6 passed, 0 failed -> all passed
    True

    The top-label ECE is not it:

    >>> checks.check_classwise_ece(lambda p, y, n: metrics.ece(p, y, n_bins=n), strict=True, rules=False)
    Traceback (most recent call last):
        ...
    calibcourse.study.course.checks.CheckFailure: check_classwise_ece: 1 passed, 5 failed -> 5 failed
    ...
    """
    return _check_binned(fn, "check_classwise_ece",
                         lambda p, y, n_bins: M.classwise_ece(p, y, n_bins=n_bins),
                         verbose, strict, seed, rules, "class-wise ECE",
                         "for each class k, bin p_k (every sample, not only the top label) against y == k; "
                         "average the K ECEs", extra=[_classwise_edge_case(seed)] if seed else ())
