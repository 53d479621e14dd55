"""Chapter 6's study on stored logits, beyond the deployment loop of :mod:`~calibcourse.study.analysis.deployment`:
contrasts averaged over the shifted angles (the fair footing read both ways), whether a temperature lowers
the NLL on data it was not fitted on, how often a temperature reorders two inputs' confidences, the binned
ECE a perfectly calibrated model would show (the reference a recalibration curve is read against), and the
label-shift estimators side by side, each network on its own label-shifted resample.

Nothing here trains.
"""
from __future__ import annotations

import numpy as np

from calibcourse.calibration import metrics as M
from calibcourse.calibration import stats
from calibcourse.calibration._validation import check_int

__all__ = ["LABEL_SHIFT_CALIBRATIONS", "LABEL_SHIFT_ESTIMATORS", "calibrated_reference_ece", "label_shift_comparison",
           "label_shift_resamples", "mean_contrast", "order_reversals", "out_of_fold_nll_change",
           "recalibration_with_reference"]


def mean_contrast(P: dict, a: str, b: str, keys, labels, metric=M.ece, n_boot: int = 1000, seed: int = 0):
    """``metric(a) - metric(b)`` averaged over ``keys`` (angles), paired by seed and sample.

    Parameters
    ----------
    P : dict
        ``P[predictor][key]``: one probability array per seed (:func:`~calibcourse.study.analysis.deployment.
        fair_footing`), every key scored on the same samples.
    a, b : str
        The two predictors.
    keys : sequence
        The keys to average over (the shifted angles, or ``[0]`` for the unrotated digits).
    labels : array_like of shape (n,)
        The samples' labels (the same at every key).
    metric : callable, default=ECE
        ``metric(probs, labels) -> float``.
    n_boot : int, default=1000
        Bootstrap resamples of the samples, one resample shared by every term
        (:func:`calibcourse.calibration.stats.paired_seeds_contrast`).
    seed : int, default=0

    Returns
    -------
    calibcourse.calibration.stats.PairedSeeds
        The mean over seeds, its 95 % interval and the per-seed values.

    Examples
    --------
    >>> from calibcourse.calibration.synthetic import scaled_logits
    >>> z, y = scaled_logits(500, 3, factor=2.0, seed=0)
    >>> P = {"raw": {1: [M.softmax(z)] * 2}, "cool": {1: [M.softmax(z / 2)] * 2}}
    >>> d = mean_contrast(P, "cool", "raw", [1], y, n_boot=0)
    >>> bool(d.estimate < 0)          # the temperature the logits need lowers the ECE
    True
    """
    keys = list(keys)
    k = len(keys)
    if k == 0:
        raise ValueError("keys must name at least one key of P")
    lists = [P[a][x] for x in keys] + [P[b][x] for x in keys]
    return stats.paired_seeds_contrast(metric, lists, [1 / k] * k + [-1 / k] * k, labels, n_boot=n_boot, seed=seed)


def out_of_fold_nll_change(logits, labels, folds: int = 5, seed: int = 0) -> float:
    """What temperature scaling does to the NLL of samples it was not fitted on.

    The check that decides whether a temperature is worth keeping (an averaged ensemble's, say): the
    labelled samples are cut into ``folds`` stratified folds (:func:`calibcourse.calibration.folds.
    fold_indices`, shuffled by ``seed``), each fold's logits are divided by the temperature fitted on
    the other folds, and the NLL of these out-of-fold probabilities is compared with the model's own.
    Below 0, the temperature lowers the NLL where it was not fitted; at or above 0, it does not.

    Parameters
    ----------
    logits : array_like of shape (n, K)
        Logits (log-probabilities of an averaged predictor will do) on labelled samples none of the
        model's networks trained on.
    labels : array_like of shape (n,)
        Their integer labels.
    folds : int, default=5
        At least 2, at most the smallest class's count.
    seed : int, default=0
        The folds' shuffle.

    Returns
    -------
    float
        NLL(out-of-fold temperature) - NLL(no temperature), in nats.

    Examples
    --------
    >>> from calibcourse.calibration.synthetic import scaled_logits
    >>> z, y = scaled_logits(2000, 3, factor=2.0, seed=0)       # twice too confident
    >>> bool(out_of_fold_nll_change(z, y) < -0.01)
    True
    >>> z, y = scaled_logits(2000, 3, factor=1.0, seed=0)       # calibrated: nothing to gain
    >>> bool(abs(out_of_fold_nll_change(z, y)) < 0.002)
    True
    """
    from calibcourse.calibration import calibrators as cal
    from calibcourse.calibration.folds import fold_indices

    z = np.asarray(logits, dtype=np.float64)
    y = np.asarray(labels)
    if z.ndim != 2 or len(z) != len(y):
        raise ValueError(f"logits must have shape (n, K) with one label per row; got {z.shape} and {y.shape}")
    check_int(folds, "folds", low=2)
    oof = np.empty_like(z)
    for train, held in fold_indices(y, folds, seed=seed):
        t = cal.TemperatureScaling().fit(z[train], y[train], classes=range(z.shape[1])).temperature_
        oof[held] = M.softmax(z[held] / t)
    return float(M.nll(oof, y) - M.nll(M.softmax(z), y))


def order_reversals(logits, temperature: float) -> float:
    """The share of input pairs whose top-label confidences a temperature puts in the other order.

    With two classes the confidence is an increasing function of :math:`|z| / T`: no pair is
    reversed. With more, the confidence depends on every logit and a temperature weighs the gaps
    differently, so some pairs swap. Ties (at either temperature) do not count as reversed.

    Parameters
    ----------
    logits : array_like of shape (n, K)
        Logits of ``n`` inputs (at most a few thousand: every pair is compared).
    temperature : float
        The temperature (> 0).

    Returns
    -------
    float
        Reversed pairs over all ``n (n - 1) / 2`` pairs.

    Examples
    --------
    >>> z = np.array([[3.0, 2.9, -100.0], [2.0, 0.0, 0.0]])
    >>> order_reversals(z, 1.0), order_reversals(z, 100.0)
    (0.0, 1.0)
    >>> order_reversals(np.c_[np.zeros(50), np.linspace(-3, 3, 50)], 2.0)   # two classes: none
    0.0
    """
    z = np.asarray(logits, dtype=np.float64)
    if z.ndim != 2 or len(z) < 2:
        raise ValueError(f"logits must have shape (n, K) with n >= 2; got {z.shape}")
    if not (np.isfinite(temperature) and temperature > 0):
        raise ValueError(f"temperature must be a number > 0; got {temperature!r}")
    c1, c2 = M.softmax(z).max(axis=1), M.softmax(z / temperature).max(axis=1)
    i, j = np.triu_indices(len(z), 1)
    return float(np.mean(np.sign(c1[i] - c1[j]) * np.sign(c2[i] - c2[j]) < 0))


def calibrated_reference_ece(probs, n_bins: int = 15, draws: int = 100, seed: int = 0) -> float:
    """The binned ECE a perfectly calibrated model with these probabilities shows, on average.

    Labels are drawn from the rows of ``probs`` themselves (so the model is calibrated by
    construction) ``draws`` times, and the ECE of ``probs`` against each draw is averaged. On few
    samples it is far above 0: the binned ECE's bias (chapter 1). A measured ECE is read against it:
    what lies above it is miscalibration, what lies below it sampling luck.

    Parameters
    ----------
    probs : array_like of shape (n, K)
        Probabilities (rows sum to 1).
    n_bins : int, default=15
        The ECE's equal-width bins.
    draws : int, default=100
        Label draws averaged.
    seed : int, default=0

    Returns
    -------
    float

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> p = M.softmax(rng.normal(size=(150, 10)) * 3)
    >>> small = calibrated_reference_ece(p)
    >>> big = calibrated_reference_ece(np.tile(p, (40, 1)))
    >>> bool(small > 0.05), bool(big < small / 3)   # 150 samples: several points; 6,000: far fewer
    (True, True)
    """
    p = np.asarray(probs, dtype=np.float64)
    if p.ndim != 2 or len(p) < 1 or np.any(p < 0) or np.abs(p.sum(axis=1) - 1).max() > 1e-6:
        raise ValueError(f"probs must be probabilities of shape (n, K), rows summing to 1; got shape {p.shape}")
    check_int(draws, "draws", low=1)
    rng = np.random.default_rng(seed)
    cum = np.cumsum(p, axis=1)
    out = []
    for _ in range(draws):
        u = rng.random(len(p))[:, None]
        y = np.minimum((u > cum).sum(axis=1), p.shape[1] - 1)
        out.append(M.ece(p, y, n_bins=n_bins))
    return float(np.mean(out))


def recalibration_with_reference(logits_list, labels, sizes, repeats: int = 20, seed: int = 0, draws: int = 50):
    """:func:`~calibcourse.study.analysis.deployment.recalibration_curve` with, beside each row's ECE, the
    :func:`calibrated_reference_ece` of the same refitted probabilities on the same evaluation samples.

    Parameters
    ----------
    logits_list, labels, sizes, repeats, seed
        As :func:`~calibcourse.study.analysis.deployment.recalibration_curve`.
    draws : int, default=50
        Label draws behind each row's reference.

    Returns
    -------
    curve : pandas.DataFrame
        The curve's rows with a column ``"ECE if calibrated"``.
    evaluation : numpy.ndarray
        The evaluation half's row indices.

    Examples
    --------
    >>> from calibcourse.calibration.synthetic import scaled_logits
    >>> z, y = scaled_logits(400, 4, factor=3.0, seed=0)
    >>> curve, ev = recalibration_with_reference([z], y, sizes=[0, 100], repeats=2, draws=5)
    >>> list(curve.columns[-2:]), len(curve)
    (['Brier', 'ECE if calibrated'], 3)
    """
    from calibcourse.study.analysis.deployment import recalibration_curve

    curve, ev = recalibration_curve(logits_list, labels, sizes, repeats=repeats, seed=seed)
    zs = [np.asarray(z, dtype=np.float64) for z in logits_list]
    curve["ECE if calibrated"] = [
        calibrated_reference_ece(M.softmax(zs[r.network][ev] / r.T), draws=draws, seed=seed + i)
        for i, r in enumerate(curve.itertuples())]
    return curve, ev


#: the calibrations :func:`label_shift_comparison` puts before each estimator: none (the network's
#: softmax), temperature scaling, bias-corrected temperature scaling (Alexandari et al. 2020)
LABEL_SHIFT_CALIBRATIONS = ("none", "TS", "BCTS")
#: the prior estimators: Saerens et al.'s EM, Lipton et al.'s BBSE on predicted classes and on probabilities
LABEL_SHIFT_ESTIMATORS = ("EM", "BBSE", "soft BBSE")


def label_shift_resamples(labels, priors, n: int, n_sets: int, seed: int = 0):
    """One label-shifted resample of a labelled set per network, each drawn on its own.

    Set ``i`` is :func:`~calibcourse.study.analysis.deployment.label_shift_indices` with seed
    ``seed + i`` (``round(n * priors[k])`` rows of class ``k``, without replacement), its rows put in
    class order. Every set then has the same labels, row for row, so that the networks' results on
    their own sets can be paired by row (:func:`calibcourse.calibration.stats.paired_seeds_difference`),
    and the spread over networks includes the draw of the set. The sets come from one labelled set,
    so they overlap where a class has few rows to spare.

    Parameters
    ----------
    labels : array_like of shape (N,)
        The labelled set's labels.
    priors : array_like of shape (K,)
        The class frequencies wanted (sum to 1).
    n : int
        Each set's size (about: rounding per class).
    n_sets : int
        How many sets (one per network).
    seed : int, default=0
        The first set's seed.

    Returns
    -------
    sets : list of numpy.ndarray
        Row indices into ``labels``, one array per set, in class order.
    set_labels : numpy.ndarray
        The labels every set shares.

    Examples
    --------
    >>> y = np.repeat([0, 1, 2], 100)
    >>> sets, ys = label_shift_resamples(y, [0.7, 0.2, 0.1], 100, n_sets=3)
    >>> np.bincount(ys).tolist(), all(np.array_equal(y[s], ys) for s in sets)
    ([70, 20, 10], True)
    >>> len({tuple(s) for s in sets})                   # each set drawn on its own
    3
    """
    from calibcourse.study.analysis.deployment import label_shift_indices

    check_int(n_sets, "n_sets", low=1)
    y = np.asarray(labels)
    sets = []
    for i in range(n_sets):
        idx = label_shift_indices(y, priors, n, seed=seed + i)
        sets.append(idx[np.argsort(y[idx], kind="stable")])
    return sets, y[sets[0]]


def label_shift_comparison(networks, target_labels, true_priors):
    """Every label-shift estimator after every calibration, network by network.

    Parameters
    ----------
    networks : list of tuple
        One ``(cal_logits, cal_labels, target_logits)`` per network: its labelled calibration data
        (of the training distribution) and its logits on the label-shifted samples.
    target_labels : array_like of shape (n,)
        The shifted samples' labels (only to score).
    true_priors : array_like of shape (K,)
        The priors the shifted samples were drawn with.

    Returns
    -------
    pandas.DataFrame
        A row per (network, calibration, estimator): ``network``, ``calibration``
        (:data:`LABEL_SHIFT_CALIBRATIONS`), ``estimator`` (:data:`LABEL_SHIFT_ESTIMATORS`),
        ``prior error`` (the summed absolute error of the estimated priors), ``NLL`` and ``error``
        of the corrected predictions, ``NLL as deployed`` (before the correction), and ``failed``:
        why an estimator gave no estimate (BBSE on a confusion matrix it cannot invert; its numbers
        are then NaN), empty otherwise.

    Examples
    --------
    >>> from calibcourse.calibration.synthetic import scaled_logits
    >>> z, y = scaled_logits(3000, 3, factor=1.0, spread=2.0, seed=0)
    >>> rows = np.r_[np.flatnonzero(y[1000:] == 0)[:300], np.flatnonzero(y[1000:] == 1)[:100]] + 1000
    >>> t = label_shift_comparison([(z[:1000], y[:1000], z[rows])], y[rows], [0.75, 0.25, 0.0001])
    >>> len(t), bool(t["prior error"].max() < 0.3)
    (9, True)
    """
    import pandas as pd

    from calibcourse.calibration import calibrators as cal
    from calibcourse.calibration import priors

    yt = np.asarray(target_labels)
    truth = np.asarray(true_priors, dtype=np.float64)
    rows = []
    for i, (zc, yc, zt) in enumerate(networks):
        zc, zt, yc = np.asarray(zc, dtype=np.float64), np.asarray(zt, dtype=np.float64), np.asarray(yc)
        k = zc.shape[1]
        pi0 = np.bincount(yc, minlength=k) / len(yc)
        fitted = {"none": None, "TS": cal.TemperatureScaling().fit(zc, yc, classes=range(k)),  # indices
                  "BCTS": cal.BiasCorrectedTemperatureScaling().fit(zc, yc, classes=range(k))}
        for name in LABEL_SHIFT_CALIBRATIONS:
            f = fitted[name]
            pc, pt = (M.softmax(zc), M.softmax(zt)) if f is None else (f.predict_proba(zc), f.predict_proba(zt))
            for est in LABEL_SHIFT_ESTIMATORS:
                row = {"network": i, "calibration": name, "estimator": est, "prior error": np.nan, "NLL": np.nan,
                       "error": np.nan, "NLL as deployed": M.nll(pt, yt), "failed": ""}
                try:
                    if est == "EM":
                        e, adjusted = priors.em_priors(pt, pi0)
                    else:
                        e, adjusted = priors.bbse_priors(pc, yc, pt, soft=est == "soft BBSE")
                except ValueError as exc:     # BBSE's confusion matrix singular: a class never predicted
                    row["failed"] = str(exc)
                else:
                    row.update({"prior error": float(np.abs(e - truth).sum()), "NLL": M.nll(adjusted, yt),
                                "error": M.error(adjusted, yt)})
                rows.append(row)
    return pd.DataFrame(rows)
