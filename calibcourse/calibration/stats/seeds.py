"""Seeds paired by seed (a difference, a contrast of several arms) and one predictor against several
rivals."""
from __future__ import annotations

from typing import NamedTuple

import numpy as np

from calibcourse.calibration._validation import checked, is_int
from calibcourse.calibration.stats._engine import (
    Difference,
    _check_common,
    _check_metric,
    _check_pair,
    _check_probs_of,
    _check_seed_list,
    _finite,
    _resampler,
    interval_from_replicates,
    resample_indices,
)

__all__ = ["PairedSeeds", "paired_seeds_difference", "paired_seeds_contrast", "RivalsDifference", "rivals_difference"]


# --------------------------------------------------------------------------- seeds paired by seed
class PairedSeeds(NamedTuple):
    """The result of :func:`paired_seeds_difference`: a :class:`Difference`'s first fields, then
    the per-seed differences, the sign count and the two variance parts.

    Attributes
    ----------
    estimate, low, high, level, plugin, n, n_seeds, method
        As in :class:`Difference` (``method`` is ``"paired seeds"``).
    per_seed : numpy.ndarray of shape (n_seeds,)
        ``metric(a_s) - metric(b_s)`` of each seed ``s`` on the full test set.
    n_positive : int
        The seeds where the difference is > 0 ("a is worse in ``n_positive`` of ``n_seeds``
        seeds" for a measure where lower is better).
    v_test, v_seed : float
        The variance of the mean difference from the test samples (bootstrap) and from the seeds
        (the per-seed differences' variance over ``n_seeds``).
    df : float
        The t quantile's degrees of freedom (inf where only the test part is left).
    replicates : numpy.ndarray of shape (n_boot, n_seeds) or None
        Each seed's contrast on each bootstrap resample of the test rows (the same resamples for
        every seed), from which :meth:`subset` rebuilds the interval of any subset of the seeds;
        None where there is no test part (``n_boot=0``) or the result was built by hand.

    Examples
    --------
    >>> d = PairedSeeds(-0.01, -0.02, 0.0, 0.95, -0.01, 1000, 3, "paired seeds",
    ...                 np.array([-0.02, -0.01, 0.0]), 0, 1e-5, 3e-5, 4.0)
    >>> d.per_seed.mean() == d.estimate, d.n_positive
    (np.True_, 0)
    """

    estimate: float
    low: float
    high: float
    level: float
    plugin: float
    n: int
    n_seeds: int
    method: str
    per_seed: np.ndarray
    n_positive: int
    v_test: float
    v_seed: float
    df: float
    replicates: np.ndarray | None = None

    def __repr__(self) -> str:
        """The fields without the replicates (thousands of numbers)."""
        fields = ", ".join(f"{k}={getattr(self, k)!r}" for k in self._fields if k != "replicates")
        return f"PairedSeeds({fields})"

    def subset(self, seeds) -> "PairedSeeds":
        """The same test on some of the seeds only: what :func:`paired_seeds_contrast` gives on
        those seeds' predictions, with the same bootstrap resamples.

        Parameters
        ----------
        seeds : sequence of int
            Positions in :attr:`per_seed` (the order the predictions were given in), at least two.

        Returns
        -------
        PairedSeeds
            The estimate, interval and variance parts of the subset.

        Examples
        --------
        >>> import numpy as np
        >>> from calibcourse.calibration import metrics, stats
        >>> rng = np.random.default_rng(0)
        >>> q = rng.uniform(0.5, 1, 1000); y = (rng.random(1000) < q).astype(int)
        >>> a = [np.clip(q + 0.05 + s, 0, 1) for s in (0.0, 0.01, -0.01, 0.02)]
        >>> b = [np.clip(q + s, 0, 1) for s in (0.0, 0.01, -0.01, 0.02)]
        >>> d = stats.paired_seeds_difference(metrics.brier, a, b, y, n_boot=100)
        >>> late = stats.paired_seeds_difference(metrics.brier, a[2:], b[2:], y, n_boot=100)
        >>> bool(np.allclose(d.subset([2, 3])[:3], late[:3], rtol=1e-12, atol=0)), d.subset([2, 3]).n_seeds
        (True, 2)
        """
        idx = [int(i) for i in seeds]
        if len(idx) < 2 or len(set(idx)) != len(idx) or not all(0 <= i < self.n_seeds for i in idx):
            raise ValueError(f"seeds must be at least two distinct positions in 0..{self.n_seeds - 1}; got {seeds!r}")
        if self.replicates is None and self.v_test > 0:
            raise ValueError("this result keeps no bootstrap replicates, so its test part cannot be split by seed")
        reps = None if self.replicates is None else self.replicates[:, idx]
        return _interval(self.per_seed[idx], reps, self.level, self.n)

    def detectable(self, power: float = 0.8) -> float:
        """As :meth:`Difference.detectable`."""
        return Difference(*self[:8]).detectable(power)

    @property
    def sign_text(self) -> str:
        """``"worse in k of n seeds"`` (the first predictor's measure above the second's)."""
        return f"worse in {self.n_positive} of {self.n_seeds} seed{'s' if self.n_seeds != 1 else ''}"


def paired_seeds_difference(metric, probs_a_list, probs_b_list, labels, n_boot: int = 2000,
                            level: float = 0.95, seed: int = 0, **metric_kwargs) -> PairedSeeds:
    r"""Mean over seeds of ``metric(a_s) - metric(b_s)``, the two predictors paired by seed.

    Where both methods of seed ``s`` share what the seed fixes (initialization, data order), the
    comparison is the per-seed difference :math:`d_s` on the same test samples. The estimate is
    their mean :math:`\bar d` (the plug-in value, as every estimate of this module); the interval is

    .. math:: \bar d \pm t_{\nu}\, \sqrt{V_\text{test} + s_d^2 / S},

    with :math:`V_\text{test}` the bootstrap variance of :math:`\bar d` over test samples,
    :math:`s_d^2` the sample variance of the :math:`S` per-seed differences, and
    :math:`\nu` from Welch-Satterthwaite (:math:`S - 1` for the seed part, the bootstrap's
    practically infinite). With ``n_boot=0`` there is no test part and the interval is the paired
    t interval of ``scipy.stats.ttest_rel``; with one seed there is no seed part and it is the
    normal interval of the paired bootstrap. The sign count says in how many seeds ``a`` is above
    ``b``. Unlike :func:`seeds_difference` (two independent sets of seeds, Welch), what the paired
    seeds share cancels in each :math:`d_s`.

    Parameters
    ----------
    metric : callable
        ``metric(probs, labels, **metric_kwargs) -> float``.
    probs_a_list, probs_b_list : list of array-like
        One array of test predictions per seed, seed ``s`` of ``a`` paired with seed ``s`` of ``b``;
        the same number of seeds, all of the same samples.
    labels : array-like of shape (n,)
        The shared test labels.
    n_boot : int, default=2000
        Bootstrap resamples of the test set (0: no test part, the seeds alone).
    level : float, default=0.95
        The interval's coverage.
    seed : int, default=0
        Seed of the bootstrap's resamples.
    **metric_kwargs
        Passed to ``metric``.

    Returns
    -------
    PairedSeeds
        The estimate, interval, per-seed differences, sign count and variance parts.

    Examples
    --------
    >>> import numpy as np
    >>> from calibcourse.calibration import metrics, stats
    >>> rng = np.random.default_rng(0)
    >>> q = rng.uniform(0.5, 1, 3000); y = (rng.random(3000) < q).astype(int)
    >>> shift = [0.0, 0.02, -0.01, 0.01]                               # what each seed shares
    >>> a = [np.clip(q + 0.08 + s, 0, 1) for s in shift]               # overconfident
    >>> b = [np.clip(q + s, 0, 1) for s in shift]
    >>> d = stats.paired_seeds_difference(metrics.ece, a, b, y, n_boot=200, reliability="positive_class")
    >>> d.sign_text, stats.verdict(d.low, d.high, direction="above")
    ('worse in 4 of 4 seeds', 'held')
    """

    _check_metric(metric)
    a_list, y = _check_seed_list(probs_a_list, labels, "probs_a_list")
    b_list = _check_seed_list(probs_b_list, labels, "probs_b_list", y)[0]
    if len(a_list) != len(b_list):
        raise ValueError(f"probs_a_list and probs_b_list must hold the same seeds (paired); got "
                         f"{len(a_list)} and {len(b_list)} seeds")
    if a_list[0].shape != b_list[0].shape:
        raise ValueError(f"probs_a_list and probs_b_list must hold predictions of the same samples; got "
                         f"shapes {a_list[0].shape} and {b_list[0].shape}")
    with checked():  # checked once, above
        return paired_seeds_contrast(metric, [a_list, b_list], (1.0, -1.0), y, n_boot=n_boot, level=level,
                                     seed=seed, **metric_kwargs)


def paired_seeds_contrast(metric, probs_lists, weights, labels, n_boot: int = 2000, level: float = 0.95,
                          seed: int = 0, **metric_kwargs) -> PairedSeeds:
    r"""Mean over seeds of a contrast :math:`d_s = \sum_j w_j\,\mathrm{metric}(P_{js})` of predictors paired by seed.

    :func:`paired_seeds_difference` is the contrast ``(1, -1)`` of two predictors. A difference of
    differences, ``(1, -1, -1, 1)``, asks whether a gain changes between two conditions: e.g.
    ``ECE(CE) - ECE(CE + TS)`` on shifted test images minus the same on the clean ones (chapter 6).
    Every predictor must score the same samples in the same order (a rotated test image keeps its
    row), so that one bootstrap resample of the rows is applied to all of them; the interval is
    built as in :func:`paired_seeds_difference` (test part plus seed part, Welch-Satterthwaite).

    Parameters
    ----------
    metric : callable
        ``metric(probs, labels, **metric_kwargs) -> float``.
    probs_lists : list of lists of array-like
        ``probs_lists[j][s]``: predictor ``j``'s test predictions of seed ``s``; every predictor the
        same number of seeds, every array of the same samples.
    weights : sequence of float
        One weight per predictor.
    labels : array-like of shape (n,)
        The shared test labels.
    n_boot : int, default=2000
        Bootstrap resamples of the test rows (0: no test part, the seeds alone).
    level : float, default=0.95
        The interval's coverage.
    seed : int, default=0
        Seed of the bootstrap's resamples.
    **metric_kwargs
        Passed to ``metric``.

    Returns
    -------
    PairedSeeds
        The estimate, interval, per-seed contrasts, sign count (contrasts > 0) and variance parts.

    Examples
    --------
    >>> import numpy as np
    >>> from calibcourse.calibration import metrics, stats
    >>> rng = np.random.default_rng(0)
    >>> q = rng.uniform(0.5, 1, 2000); y = (rng.random(2000) < q).astype(int)
    >>> over = lambda d: [np.clip(q + d + s, 0, 1) for s in (0.0, 0.01, -0.01)]   # three seeds
    >>> # the gain of a fix is 0.10 in one condition and 0.02 in the other: the gain shrinks
    >>> d = stats.paired_seeds_contrast(metrics.brier, [over(0.1), over(0.0), over(0.02), over(0.0)],
    ...                                 (1, -1, -1, 1), y, n_boot=200)
    >>> bool(d.estimate > 0), d.n_seeds, stats.verdict(d.low, d.high, direction="above")
    (True, 3, 'held')
    """
    _check_metric(metric)
    if not (is_int(n_boot) and (n_boot == 0 or n_boot >= 10)):
        raise ValueError(f"n_boot must be 0 (no test part) or an integer >= 10; got {n_boot!r}")
    _check_common(10, level, "hull")
    if isinstance(probs_lists, np.ndarray) or not hasattr(probs_lists, "__len__") or len(probs_lists) < 1:
        raise ValueError("probs_lists must be a list with one list of per-seed predictions per predictor")
    w = np.asarray(weights, dtype=float)
    if w.shape != (len(probs_lists),) or not np.all(np.isfinite(w)):
        raise ValueError(f"weights must hold one finite number per predictor ({len(probs_lists)}); got {weights!r}")
    first, y = _check_seed_list(probs_lists[0], labels, "probs_lists[0]")
    lists = [first] + [_check_seed_list(p, labels, f"probs_lists[{j}]", y)[0]
                       for j, p in enumerate(probs_lists) if j]
    if len({len(x) for x in lists}) > 1:
        raise ValueError(f"every predictor must hold the same seeds (paired); got {[len(x) for x in lists]} seeds")
    if len({x[0].shape for x in lists}) > 1:
        raise ValueError(f"every predictor must hold predictions of the same samples; got shapes "
                         f"{[x[0].shape for x in lists]}")
    with checked():
        return _contrast(metric, lists, w, y, n_boot, level, seed, metric_kwargs)


def _contrast(metric, lists, w, y, n_boot, level, seed, metric_kwargs) -> PairedSeeds:
    """:func:`paired_seeds_contrast` on checked arrays."""
    fs = [[_resampler(metric, p, y, metric_kwargs) for p in x] for x in lists]
    k = len(lists[0])

    def contrast(values):  # sum_j w_j v_j, the first term as it is (so that (1, -1) is exactly a - b)
        out = values[0] if w[0] == 1 else w[0] * values[0]
        for wj, v in zip(w[1:], values[1:], strict=True):
            out = out - v if wj == -1 else out + (v if wj == 1 else wj * v)
        return out

    per_seed = np.array([contrast([fs[j][s][0] for j in range(len(fs))]) for s in range(k)], dtype=float)
    reps = None
    if n_boot:  # the same resamples for every seed of every predictor: row i, column s
        reps = np.array([[contrast([fs[j][s][1](i) for j in range(len(fs))]) for s in range(k)]
                         for i in resample_indices(len(y), n_boot, seed)], dtype=float)
    return _interval(per_seed, reps, level, len(y))


def _interval(per_seed, reps, level, n) -> PairedSeeds:
    """The interval of :func:`paired_seeds_contrast` from the per-seed contrasts and their bootstrap
    replicates (``(n_boot, k)``, or None for no test part)."""
    from scipy.stats import norm
    from scipy.stats import t as student_t

    k = len(per_seed)
    plugin = float(per_seed.mean())
    v_test = float(_finite(reps.mean(axis=1)).var(ddof=1)) if reps is not None else 0.0
    est = plugin
    v_seed = float(per_seed.var(ddof=1) / k) if k > 1 else 0.0
    total = v_test + v_seed
    if v_seed > 0:
        df = total ** 2 / (v_seed ** 2 / (k - 1))
        q = student_t.ppf(0.5 + level / 2, df)
    else:
        df, q = float("inf"), norm.ppf(0.5 + level / 2)
    half = q * np.sqrt(total)
    return PairedSeeds(float(est), float(est - half), float(est + half), float(level), plugin, int(n), k,
                       "paired seeds", per_seed, int(np.sum(per_seed > 0)), v_test, v_seed, float(df), reps)




# --------------------------------------------------------------------------- one predictor against several
class RivalsDifference(NamedTuple):
    r"""The result of :func:`rivals_difference`: an interval for ``metric(a)`` minus the *best* rival's, with
    the per-rival intervals it is built from.

    Attributes
    ----------
    estimate, low, high, level, plugin, n, n_seeds, method
        As in :class:`Difference`: the effect :math:`\max_j [\mathrm{metric}(a) - \mathrm{metric}(b_j)]`
        and its interval (``method`` is ``"rivals, Bonferroni"``).
    per_rival : dict
        ``{rival: Difference}``, ``metric(a) - metric(rival)`` at ``level`` (the upper ends).
    adjusted : dict
        ``{rival: Difference}``, the same at the Bonferroni level ``1 - (1 - level) / k`` (the lower ends).
    closest : str
        The rival with the largest upper end (the one that decides "held").
    better : tuple of str
        The rivals whose adjusted interval lies wholly above 0: reliably better than ``a`` on a
        measure where lower is better.

    Examples
    --------
    >>> d = Difference(-0.01, -0.02, 0.0, 0.95)
    >>> r = RivalsDifference(-0.01, -0.03, 0.0, 0.95, -0.01, 100, 1, "rivals, Bonferroni",
    ...                      {"b": d}, {"b": d}, "b", ())
    >>> r.closest, r[:4]
    ('b', (-0.01, -0.03, 0.0, 0.95))
    """

    estimate: float
    low: float
    high: float
    level: float
    plugin: float
    n: int
    n_seeds: int
    method: str
    per_rival: dict
    adjusted: dict
    closest: str
    better: tuple

    def detectable(self, power: float = 0.8) -> float:
        """As :meth:`Difference.detectable`, of the closest rival's difference."""
        return self.per_rival[self.closest].detectable(power)

    def decisive(self) -> tuple:
        """The one rival whose interval decides the verdict, and that interval, at one level.

        The effect's interval ``[low, high]`` joins a lower end at the Bonferroni level to an upper
        end at ``level``: two levels in one interval, which a table headed "95 % interval" misreads.
        This is the single comparison that gives the same verdict, with both ends at one level:

        * where every rival's interval lies below 0 (held): the closest rival, at ``level``;
        * where some rival is reliably better (not held): the rival whose Bonferroni lower end is
          largest, at the Bonferroni level;
        * otherwise (inconclusive): the closest rival at the Bonferroni level, which contains 0 (its
          upper end is at least its upper end at ``level``, at least 0; its lower end is at most the
          largest Bonferroni lower end, at most 0).

        Returns
        -------
        tuple of (str, Difference)
            The rival and ``metric(a) - metric(rival)`` with its interval (``level`` says which).

        Examples
        --------
        >>> import numpy as np
        >>> from calibcourse.calibration import metrics, stats
        >>> rng = np.random.default_rng(0)
        >>> q = rng.uniform(0.5, 1, 4000); y = (rng.random(4000) < q).astype(int)
        >>> d = stats.rivals_difference(metrics.ece, np.clip(q + 0.1, 0, 1), {"calibrated": q,
        ...                             "+0.05": np.clip(q + 0.05, 0, 1)}, y, n_boot=200,
        ...                             reliability="positive_class")
        >>> rival, one = d.decisive()
        >>> rival, round(one.level, 3), stats.verdict(one.low, one.high) == stats.verdict(d.low, d.high)
        ('calibrated', 0.975, True)
        """
        if all(d.high < 0 for d in self.per_rival.values()):
            return self.closest, self.per_rival[self.closest]
        if self.better:
            rival = max(self.better, key=lambda r: self.adjusted[r].low)
            return rival, self.adjusted[rival]
        return self.closest, self.adjusted[self.closest]


def rivals_difference(metric, probs_a, rivals: dict, labels, n_boot: int = 2000, level: float = 0.95,
                      seed: int = 0, **metric_kwargs) -> RivalsDifference:
    r"""Is ``a`` better than *every* rival? ``metric(a)`` minus the best rival's, on the same test samples.

    The effect is :math:`\theta = \max_j \theta_j` with :math:`\theta_j = \mathrm{metric}(a) -
    \mathrm{metric}(b_j)` (population values): below 0 when ``a`` beats every rival on a measure where
    lower is better. Its interval is

    .. math:: \Big[\max_j L_j^{(k)},\; \max_j U_j\Big],

    with :math:`U_j` the upper end of the paired interval of :math:`\theta_j` at ``level``
    (:func:`paired_difference`) and :math:`L_j^{(k)}` the lower end at the Bonferroni level
    :math:`1 - (1 - \text{level}) / k` for :math:`k` rivals. :func:`verdict` with ``direction="below"``
    then reads it as

    * **held** iff every rival's interval lies below 0 (an *intersection-union* test: "better than
      each" is rejected unless each comparison is, so no multiplicity correction is needed);
    * **not held** iff some rival's Bonferroni-adjusted interval lies above 0 (that rival is reliably
      better, corrected for having looked at :math:`k` of them);
    * **inconclusive** otherwise.

    Both ends are valid bounds for :math:`\theta` (one-sided, at ``(1 - level) / 2`` each): the upper
    because the rival that attains the maximum has its own bound, the lower because every rival's
    adjusted bound holds at once. Choosing the rival by its test score and testing it on the same
    samples (the winner's curse) is what this replaces. Every rival is evaluated on the same
    bootstrap resamples.

    Parameters
    ----------
    metric : callable
        ``metric(probs, labels, **metric_kwargs) -> float``.
    probs_a : array-like
        The predictor under test.
    rivals : dict
        ``{name: probs}``, at least one rival, each of the shape of ``probs_a`` (the same samples).
    labels : array-like of shape (n,)
        The labels of those samples.
    n_boot, level, seed
        As in :func:`paired_difference`.
    **metric_kwargs
        Passed to ``metric``.

    Returns
    -------
    RivalsDifference
        The effect's estimate (the largest plug-in difference) and interval, and every rival's
        intervals at both levels.

    Examples
    --------
    A calibrated predictor against two overconfident ones, then against a better one:

    >>> import numpy as np
    >>> from calibcourse.calibration import metrics, stats
    >>> rng = np.random.default_rng(0)
    >>> q = rng.uniform(0.5, 1, 4000); y = (rng.random(4000) < q).astype(int)
    >>> worse = {"+0.05": np.clip(q + 0.05, 0, 1), "+0.10": np.clip(q + 0.10, 0, 1)}
    >>> d = stats.rivals_difference(metrics.ece, q, worse, y, n_boot=200, reliability="positive_class")
    >>> d.closest, stats.verdict(d.low, d.high)
    ('+0.05', 'held')
    >>> d = stats.rivals_difference(metrics.ece, np.clip(q + 0.1, 0, 1), {"calibrated": q, **worse}, y,
    ...                             n_boot=200, reliability="positive_class")
    >>> d.better, stats.verdict(d.low, d.high)
    (('calibrated', '+0.05'), 'not held')
    """
    _check_metric(metric)
    _check_common(n_boot, level, "hull")
    if not isinstance(rivals, dict) or not rivals:
        raise ValueError(f"rivals must be a non-empty dict {{name: probs}}; got {type(rivals).__name__}")
    pa, y = _check_pair(probs_a, labels, "probs_a")
    checked_rivals = {}
    for name, probs in rivals.items():
        pb = checked_rivals[name] = _check_probs_of(probs, y, f"rivals[{name!r}]")
        if pb.shape != pa.shape:
            raise ValueError(f"rivals[{name!r}] must have the shape of probs_a (the same samples); got "
                             f"{pb.shape} and {pa.shape}")
    with checked():
        return _rivals(metric, pa, checked_rivals, y, n_boot, level, seed, metric_kwargs)


def _rivals(metric, pa, rivals, y, n_boot, level, seed, metric_kwargs) -> RivalsDifference:
    """:func:`rivals_difference` on checked arrays."""
    va, fa = _resampler(metric, pa, y, metric_kwargs)
    idx = list(resample_indices(len(y), n_boot, seed))
    reps_a = np.array([fa(i) for i in idx])
    k = len(rivals)
    adjusted_level = 1 - (1 - level) / k
    per_rival, adjusted = {}, {}
    for name, pb in rivals.items():
        vb, fb = _resampler(metric, pb, y, metric_kwargs)
        reps = reps_a - np.array([fb(i) for i in idx])
        per_rival[name] = interval_from_replicates(va - vb, reps, level, "hull", len(y))
        adjusted[name] = interval_from_replicates(va - vb, reps, adjusted_level, "hull", len(y))
    closest = max(per_rival, key=lambda r: per_rival[r].high)
    est = max(d.estimate for d in per_rival.values())
    low = max(d.low for d in adjusted.values())
    better = tuple(r for r in rivals if adjusted[r].low > 0)
    return RivalsDifference(float(est), float(low), float(per_rival[closest].high), float(level), float(est),
                            int(len(y)), 1, "rivals, Bonferroni", per_rival, adjusted, closest, better)


