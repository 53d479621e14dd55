"""Chapter 6's deployment loop on stored logits: every method with and without temperature scaling,
recalibration with labels from the shifted data, out-of-distribution inputs, label shift, and
calibration without a held-out set (the cross-fitted runs against the held-out split).

Nothing here trains: every function reads the logits a run stored (:mod:`calibcourse.study.training.shift`
stores the rotated digits and the out-of-distribution images beside the test split).
"""
from __future__ import annotations

import numpy as np

from calibcourse.calibration import metrics as M
from calibcourse.calibration import stats
from calibcourse.calibration._validation import check_int
from calibcourse.study.analysis.tables import fmt_difference

__all__ = ["LETTERS_CLAIMS", "SHIFT_RUN_OF", "CROSSFIT_ARMS", "CROSSFIT_MEASURES", "brightness_separation",
           "crossfit_arms", "crossfit_comparison", "fair_footing", "label_shift_indices", "ood_metric",
           "recalibration_curve", "with_ood"]

#: chapter 6's methods and the run family each is read from (``ch6/<family>/s<seed>``)
SHIFT_RUN_OF = {"CE": "CE", "Ensemble": "ensemble", "MC dropout": "dropout", "Focal": "focal"}

#: chapter 6's claims on the letters, declared before their runs (``ch6/letters/<family>/s<seed>``,
#: seeds 0-9 of :data:`calibcourse.study.runs.experiments.LETTERS_SEEDS`). They replace the retired
#: ``ch6-ood-ensemble``, ``ch6-ood-ts`` and ``ch6-ood-ts-lower``, whose images of no digit (patches of two
#: photographs) brightness alone told from the digits (AUROC 1.0). Each effect is a difference of OOD
#: AUROCs (the top-label confidence separating the 1,000 clean test digits, group 1, from the 500
#: letters, group 0: :func:`ood_metric`), paired by seed and resampled over both groups' rows by
#: :func:`calibcourse.calibration.stats.paired_seeds_difference` (95 %); "+ TS" is the temperature fitted on
#: the run's own validation split (:func:`fair_footing`). ``null`` and ``direction`` as in
#: :func:`calibcourse.calibration.stats.verdict`; n: 10 seeds, 1,500 test rows. All four are the course's
#: claims. The prediction written with them: the ensemble and MC dropout separate the letters better
#: than CE (both held, as Lakshminarayanan et al. and Ovadia et al. report averaging helps on Not-MNIST),
#: and temperature scaling moves CE's AUROC by less than 0.01 either way (both held)
LETTERS_CLAIMS = {
    "ch6-letters-ensemble": {"a": "Ensemble", "b": "CE", "null": 0.0, "direction": "above",
                             "claim": "a deep ensemble separates the letters from the digits better than CE "
                                      "(a higher OOD AUROC of the confidence)"},
    "ch6-letters-dropout": {"a": "MC dropout", "b": "CE", "null": 0.0, "direction": "above",
                            "claim": "MC dropout separates the letters from the digits better than CE "
                                     "(a higher OOD AUROC of the confidence)"},
    "ch6-letters-ts": {"a": "CE + TS", "b": "CE", "null": 0.01, "direction": "below",
                       "claim": "temperature scaling does not buy detection of the letters: it raises CE's OOD "
                                "AUROC by less than 0.01"},
    "ch6-letters-ts-lower": {"a": "CE + TS", "b": "CE", "null": -0.01, "direction": "above",
                             "claim": "... nor costs it: temperature scaling lowers CE's OOD AUROC by less than "
                                      "0.01 (with the claim above, an equivalence test)"},
}


def fair_footing(runs: dict, seeds, splits, methods=SHIFT_RUN_OF, prefix: str = "ch6"):
    """Every method with and without temperature scaling fitted on its own validation split.

    Parameters
    ----------
    runs : dict
        ``{"<prefix>/<family>/s<seed>": RunResult}``.
    seeds : sequence of int
        The seeds, paired across methods.
    splits : dict
        ``{key: (split name, rows)}``: which stored logits to score under ``key`` (e.g. an angle),
        ``rows`` a slice or index array of that split (the clean test split's first digits are the
        ones rotated).
    methods : dict, default=SHIFT_RUN_OF
        ``{method: run family}``.
    prefix : str, default="ch6"
        The runs' names start ``<prefix>/<family>/s<seed>`` (``"ch6/letters"`` for the letters' runs).

    Returns
    -------
    P : dict
        ``P[name][key]``: one probability array per seed, for ``name`` each method and each method
        ``+ " + TS"``.
    temperatures : dict
        ``{method: [fitted temperature per seed]}``.

    Examples
    --------
    >>> from calibcourse.calibration.synthetic import scaled_logits
    >>> from calibcourse.study.training.results import RunResult
    >>> z, y = scaled_logits(4000, 3, factor=2.0, seed=0)
    >>> r = RunResult({}, None, {"val_logits": z, "val_labels": y, "test_logits": z, "test_labels": y})
    >>> P, T = fair_footing({"ch6/CE/s0": r}, [0], {0: ("test", slice(None))}, {"CE": "CE"})
    >>> sorted(P), round(T["CE"][0])     # the logits were made 2x too confident
    (['CE', 'CE + TS'], 2)
    """
    from calibcourse.calibration import calibrators as cal

    P, temperatures = {}, {}
    for m, family in methods.items():
        P[m], P[f"{m} + TS"], temperatures[m] = {k: [] for k in splits}, {k: [] for k in splits}, []
        for s in seeds:
            r = runs[f"{prefix}/{family}/s{s}"]
            zv = r.logits("val").astype(np.float64)
            ts = cal.TemperatureScaling().fit(zv, r.labels("val"), classes=range(zv.shape[1]))
            temperatures[m].append(float(ts.temperature_))
            for key, (split, rows) in splits.items():
                z = r.logits(split)[rows].astype(np.float64)
                P[m][key].append(M.softmax(z))
                P[f"{m} + TS"][key].append(ts.predict_proba(z))
    return P, temperatures


def recalibration_curve(logits_list, labels, sizes, repeats: int = 20, seed: int = 0):
    """Temperature scaling refitted on ``n`` labelled samples of the shifted data, as ``n`` grows.

    The samples are cut once (``seed``) into a labelled pool and an evaluation half, the same for
    every network. For each network (one seed's logits), each size ``n`` and each repeat, ``n``
    samples are drawn from the pool without replacement (stratification is impossible without
    knowing the deployed classes), a temperature is fitted on them, and the evaluation half is
    scored. ``n = 0`` is no refit (the temperature the caller passes in with ``logits_list``
    already applied, or 1). A draw whose every label is the argmax has no finite temperature (the
    fit would drive it to 0): it keeps the input's (``refitted`` False), as a practitioner would.

    Parameters
    ----------
    logits_list : list of array_like of shape (n, K)
        Each network's logits on the same shifted samples (already divided by its in-distribution
        temperature where the curve starts from CE + TS).
    labels : array_like of shape (n,)
        Their labels.
    sizes : sequence of int
        Labelled samples to refit on (each at most the pool's size, ``n // 2``).
    repeats : int, default=20
        Draws per size and network.
    seed : int, default=0
        The pool/evaluation cut and the draws.

    Returns
    -------
    curve : pandas.DataFrame
        A row per (network, size, repeat): ``network``, ``n``, ``repeat``, ``T`` (refitted, times
        the input's), ``refitted``, ``ECE``, ``NLL``, ``Brier`` on the evaluation half.
    evaluation : numpy.ndarray
        The evaluation half's row indices.

    Examples
    --------
    >>> from calibcourse.calibration.synthetic import scaled_logits
    >>> z, y = scaled_logits(600, 4, factor=3.0, seed=0)      # three times too confident
    >>> curve, ev = recalibration_curve([z], y, sizes=[0, 100], repeats=3)
    >>> curve.groupby("n")["T"].mean().round(0).tolist(), len(ev)
    ([1.0, 3.0], 300)
    """
    import pandas as pd

    y = np.asarray(labels)
    order = np.random.default_rng(seed).permutation(len(y))
    pool, ev = order[: len(y) // 2], np.sort(order[len(y) // 2:])
    for j, n in enumerate(sizes):
        check_int(n, f"sizes[{j}] (at most the labelled pool's {len(pool)})", low=0, high=len(pool))
    rng = np.random.default_rng(seed + 1)
    rows = []
    for i, z in enumerate(logits_list):
        z = np.asarray(z, dtype=np.float64)
        for n in sizes:
            for r in range(repeats if n else 1):
                t, fitted = 1.0, False
                if n:
                    pick = rng.choice(pool, size=int(n), replace=False)
                    t, fitted = _refit(z[pick], y[pick])
                p = M.softmax(z[ev] / t)
                rows.append({"network": i, "n": int(n), "repeat": r, "T": t, "refitted": fitted,
                             "ECE": M.ece(p, y[ev]), "NLL": M.nll(p, y[ev]), "Brier": M.brier(p, y[ev])})
    return pd.DataFrame(rows), ev


def _refit(z, y):
    """A temperature fitted on a few labelled samples, or (1.0, False) where none is defined: every label
    the argmax (the optimum is T -> 0) or no signal at all (T -> infinity; the toolkit warns and keeps 1)."""
    import warnings

    from calibcourse.calibration import calibrators as cal

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            t = float(cal.TemperatureScaling().fit(z, y, classes=range(z.shape[1])).temperature_)  # indices
        except ValueError as e:
            if "optimal temperature is 0" not in str(e):
                raise
            return 1.0, False
    if any("carry no signal" in str(w.message) for w in caught):
        return 1.0, False
    return t, True


def with_ood(probs_in, probs_out):
    """One array of in-distribution then out-of-distribution probabilities, and its group labels
    (1 in distribution, 0 out): the input :func:`ood_metric` scores, so that the bootstrap of
    :mod:`calibcourse.calibration.stats` resamples both groups' rows.

    Parameters
    ----------
    probs_in, probs_out : array_like of shape (n_in, K) and (n_out, K)
        A model's probabilities on inputs of its classes and on inputs of no class.

    Returns
    -------
    probs : numpy.ndarray of shape (n_in + n_out, K)
    group : numpy.ndarray of shape (n_in + n_out,)
        1 for the rows of ``probs_in``, 0 for those of ``probs_out``.

    Examples
    --------
    >>> p, g = with_ood(np.full((2, 3), 1 / 3), np.full((1, 3), 1 / 3))
    >>> p.shape, g.tolist()
    ((3, 3), [1, 1, 0])
    """
    a, b = np.asarray(probs_in), np.asarray(probs_out)
    return np.concatenate([a, b]), np.r_[np.ones(len(a), dtype=np.int64), np.zeros(len(b), dtype=np.int64)]


def ood_metric(probs, group) -> float:
    """How well the top-label confidence separates in-distribution (``group`` 1) from
    out-of-distribution (0) inputs: :func:`calibcourse.calibration.selective.auroc` (1: perfectly,
    0.5: not at all). A ``metric(probs, labels)`` for :mod:`calibcourse.calibration.stats`.

    Parameters
    ----------
    probs : array_like of shape (n, K)
        Probabilities, in-distribution and out-of-distribution rows together (:func:`with_ood`).
    group : array_like of shape (n,)
        1 for an in-distribution row, 0 for an out-of-distribution one.

    Returns
    -------
    float

    Examples
    --------
    >>> p, g = with_ood([[0.9, 0.1], [0.8, 0.2]], [[0.5, 0.5]])
    >>> ood_metric(p, g)
    1.0
    """
    from calibcourse.calibration.selective import auroc, confidence

    c, g = confidence(probs), np.asarray(group)
    return auroc(c[g == 1], c[g == 0])


#: the trivial pixel statistics :func:`brightness_separation` scores: name -> function of raw images
#: (n, pixels) in [0, 1]: the mean intensity, the share of near-black pixels (below 0.1), the share of
#: saturated pixels (above 0.99: the stroke's core) and the ink area (the share above 0.5)
BRIGHTNESS_FEATURES = {"mean intensity": lambda X: X.mean(axis=1),
                       "near-black fraction": lambda X: (X < 0.1).mean(axis=1),
                       "saturated fraction": lambda X: (X > 0.99).mean(axis=1),
                       "ink area": lambda X: (X > 0.5).mean(axis=1)}


def brightness_separation(images_in, images_out) -> dict:
    """How well a trivial pixel statistic tells two image sets apart: the AUROC of each feature.

    A test of an out-of-distribution set itself: if a feature as crude as the mean intensity or the
    share of saturated pixels separates it from the in-distribution images, a detector that does no
    better than that feature says little about the network. Each AUROC is taken in the direction
    that separates better (``max(a, 1 - a)``: 0.5 is no separation, 1 perfect); the largest is the
    baseline a detector is read against.

    Parameters
    ----------
    images_in, images_out : array_like of shape (n_in, ...) and (n_out, ...)
        Raw images with pixels in [0, 1] (black 0), before any normalization.

    Returns
    -------
    dict
        ``{feature: AUROC}`` for each feature of :data:`BRIGHTNESS_FEATURES`.

    Examples
    --------
    >>> dark, bright = np.zeros((5, 4, 4)), np.ones((5, 4, 4))
    >>> brightness_separation(dark, bright)["mean intensity"]
    1.0
    >>> rng = np.random.default_rng(0)
    >>> a = brightness_separation(rng.random((400, 16)), rng.random((400, 16)))["mean intensity"]
    >>> bool(0.5 <= a < 0.6)
    True
    >>> faint, stark = np.full((5, 4, 4), 0.6), np.full((5, 4, 4), 0.6)
    >>> stark[:, 0, :] = 1.0                       # the same ink, but a saturated row
    >>> brightness_separation(faint, stark)["saturated fraction"]
    1.0
    """
    from calibcourse.calibration.selective import auroc

    a = np.asarray(images_in, dtype=np.float64)
    b = np.asarray(images_out, dtype=np.float64)
    if len(a) < 1 or len(b) < 1 or a.shape[1:] != b.shape[1:]:
        raise ValueError(f"images_in and images_out must be non-empty image sets of one shape; got {a.shape} "
                         f"and {b.shape}")
    a, b = a.reshape(len(a), -1), b.reshape(len(b), -1)
    out = {}
    for name, f in BRIGHTNESS_FEATURES.items():
        v = auroc(f(a), f(b))
        out[name] = float(max(v, 1 - v))
    return out


def label_shift_indices(labels, priors, n: int, seed: int = 0) -> np.ndarray:
    """Rows of a labelled set whose class frequencies follow ``priors``: a label-shifted test set.

    ``round(n * priors[k])`` rows of class ``k`` are drawn without replacement (``seed``); the
    inputs of each class are the set's own, so only the priors change.

    Parameters
    ----------
    labels : array_like of shape (N,)
        The set's labels.
    priors : array_like of shape (K,)
        The wanted class frequencies (sum to 1).
    n : int
        The shifted set's size (about: rounding per class).
    seed : int, default=0

    Returns
    -------
    numpy.ndarray
        Row indices, sorted.

    Examples
    --------
    >>> y = np.repeat([0, 1, 2], 100)
    >>> idx = label_shift_indices(y, [0.7, 0.2, 0.1], 100)
    >>> np.bincount(y[idx]).tolist()
    [70, 20, 10]
    """
    y = np.asarray(labels)
    pri = np.asarray(priors, dtype=np.float64)
    if pri.ndim != 1 or abs(pri.sum() - 1) > 1e-6 or pri.min() < 0:
        raise ValueError(f"priors must be class frequencies summing to 1; got {np.round(pri, 4).tolist()}")
    rng = np.random.default_rng(seed)
    out = []
    for k, q in enumerate(pri):
        rows = np.flatnonzero(y == k)
        want = int(round(n * q))
        if want > len(rows):
            raise ValueError(f"class {k} has {len(rows)} rows; priors {q:.3f} of n = {n} needs {want}")
        out.append(rng.choice(rows, size=want, replace=False))
    return np.sort(np.concatenate(out))


#: chapter 6's ways to calibrate without a held-out set, against the held-out split (the first): the
#: cross-fitted temperature (one final network on the whole pool, its temperature from the out-of-fold
#: logits: scikit-learn's ``ensemble=False``) and the fold ensemble (the k fold networks, each with the
#: temperature of its own held-out fold, probabilities averaged: ``ensemble=True``, no final network).
#: The names the tables give them (:func:`crossfit_comparison`)
CROSSFIT_ARMS = ("held-out split + TS", "cross-fitted TS", "fold ensemble")
#: the measures :func:`crossfit_comparison` compares: name -> (function of (probs, labels), scale)
CROSSFIT_MEASURES = {"Error (%)": (M.error, 100.0), "ECE (%)": (M.ece, 100.0), "NLL (nats)": (M.nll, 1.0),
                     "Brier": (M.brier, 1.0)}


def crossfit_arms(heldout, crossfit) -> dict:
    """The test probabilities of one seed's arms of chapter 6 (:data:`CROSSFIT_ARMS`).

    Parameters
    ----------
    heldout : calibcourse.study.training.results.RunResult
        A run trained on part of the pool; temperature scaling is fitted on its validation split.
    crossfit : calibcourse.study.training.results.RunResult
        The cross-fitted run of the same pool (:mod:`calibcourse.study.training.crossfit`): its final network's
        test logits divided by the temperature fitted on the out-of-fold logits (scikit-learn's
        ``CalibratedClassifierCV(ensemble=False)``); where it stored its fold networks' test logits
        (``fold_test_logits``), also the fold ensemble (``ensemble=True``,
        :func:`calibcourse.study.training.crossfit.ensemble_predict`).

    Returns
    -------
    dict
        ``{arm: test probabilities}``, in the order of :data:`CROSSFIT_ARMS` (the fold ensemble where
        stored), then ``"temperatures"``: the fitted temperatures ``(held-out, cross-fitted, mean of
        the folds')``.

    Examples
    --------
    >>> from calibcourse.calibration.synthetic import scaled_logits
    >>> from calibcourse.study.training.results import RunResult
    >>> z, y = scaled_logits(3000, 3, factor=2.0, seed=0)
    >>> h = RunResult({}, None, {"val_logits": z[:1000], "val_labels": y[:1000], "test_logits": z[2000:],
    ...                          "test_labels": y[2000:]})
    >>> c = RunResult({}, None, {"test_logits": z[2000:], "test_labels": y[2000:], "temperature": np.array(2.0)})
    >>> arms = crossfit_arms(h, c)
    >>> list(arms)[:2] == list(CROSSFIT_ARMS[:2]), round(arms["temperatures"][0], 1)
    (True, 2.0)
    >>> bool(np.allclose(arms["cross-fitted TS"], M.logits_to_probs(z[2000:] / 2)))
    True
    """
    from scipy.special import softmax

    from calibcourse.calibration.calibrators import TemperatureScaling
    from calibcourse.study.training.crossfit import ensemble_predict

    if not np.array_equal(heldout.labels("test"), crossfit.labels("test")):
        raise ValueError("heldout and crossfit must be scored on the same test samples (paired)")
    zv = heldout.logits("val")
    ts = TemperatureScaling().fit(zv, heldout.labels("val"), classes=range(zv.shape[1]))
    t = float(crossfit.outputs["temperature"])
    z = np.asarray(crossfit.logits("test"), dtype=np.float64)
    out = {CROSSFIT_ARMS[0]: ts.predict_proba(heldout.logits("test")), CROSSFIT_ARMS[1]: softmax(z / t, axis=1)}
    temps = [float(ts.temperature_), t]
    if "fold_test_logits" in crossfit.outputs:
        folds_t = np.asarray(crossfit.outputs["fold_temperatures"], dtype=np.float64)
        out[CROSSFIT_ARMS[2]] = ensemble_predict(crossfit.outputs["fold_test_logits"], folds_t)
        temps.append(float(folds_t.mean()))
    out["temperatures"] = tuple(temps)
    return out


def crossfit_comparison(heldout: dict, crossfit: dict, n_boot: int = 1000, seed: int = 0):
    """Chapter 6: cross-fitting against a held-out split of the same pool, per pool size, paired by seed.

    Parameters
    ----------
    heldout, crossfit : dict
        ``{run name: RunResult}`` of the two arms, named ``<prefix>/n<pool size>/s<seed>``
        (``ch6/heldout/n500/s0`` and ``ch6/crossfit/n500/s0``): runs with the same ``n<size>/s<seed>``
        are paired, and the seeds of one size share their test samples.
    n_boot : int, default=1000
        Bootstrap resamples of the test samples behind each interval
        (:func:`calibcourse.calibration.stats.paired_seeds_difference`).
    seed : int, default=0
        Seed of the resampling.

    Returns
    -------
    per_seed : pandas.DataFrame
        A row per (pool size, seed, arm): ``n``, ``seed``, ``arm`` and the measures of
        :data:`CROSSFIT_MEASURES` and the fitted temperature ``T``.
    summary : pandas.DataFrame
        Indexed by (pool size, arm): each measure as "mean ± std" over the seeds.
    differences : pandas.DataFrame
        Indexed by (pool size, arm, measure) for the cross-fitted arm: its measure minus the held-out
        arm's with its 95 % interval, and the seeds where it is higher (``"worse in k of n seeds"``).
    tests : dict
        ``{(n, arm, measure): stats.PairedSeeds}`` behind ``differences``.

    Examples
    --------
    >>> from calibcourse.calibration.synthetic import scaled_logits
    >>> from calibcourse.study.training.results import RunResult
    >>> def pair(s):
    ...     z, y = scaled_logits(3000, 3, factor=2.0, seed=s)
    ...     zt, yt = scaled_logits(1000, 3, factor=2.0, seed=99)
    ...     h = RunResult({}, None, {"val_logits": z[:400], "val_labels": y[:400], "test_logits": zt,
    ...                              "test_labels": yt})
    ...     c = RunResult({}, None, {"test_logits": zt, "test_labels": yt, "temperature": np.array(2.0)})
    ...     return h, c
    >>> runs = {s: pair(s) for s in range(3)}
    >>> per_seed, summary, diff, tests = crossfit_comparison({f"h/n500/s{s}": runs[s][0] for s in runs},
    ...                                                      {f"c/n500/s{s}": runs[s][1] for s in runs}, n_boot=0)
    >>> len(per_seed), list(summary.index.get_level_values("arm").unique()) == list(CROSSFIT_ARMS[:2])
    (6, True)
    >>> d = tests[(500, "cross-fitted TS", "Error (%)")]   # the same network: no difference in error
    >>> float(d.estimate), diff.loc[(500, "cross-fitted TS", "Error (%)"), "seeds above held-out"]
    (0.0, 'worse in 0 of 3 seeds')
    """
    import re

    import pandas as pd

    def by_tail(results, which):
        out = {}
        for name, r in results.items():
            m = re.search(r"n(\d+)/s(\d+)$", name)
            if m is None:
                raise ValueError(f"{which} run names must end in n<pool size>/s<seed>; got {name!r}")
            out[(int(m.group(1)), int(m.group(2)))] = r
        return out

    if not heldout:
        raise ValueError("heldout is empty: no run to compare")
    h, c = by_tail(heldout, "heldout"), by_tail(crossfit, "crossfit")
    if set(h) != set(c):
        raise ValueError(f"heldout and crossfit must hold the same (pool size, seed) pairs; only in one: "
                         f"{sorted(set(h) ^ set(c))}")
    rows, probs, labels = [], {}, {}
    for n, s in sorted(h):
        y = h[(n, s)].labels("test")
        if n in labels and not np.array_equal(labels[n], y):
            raise ValueError(f"the seeds of pool size {n} must share one test set; seed {s} has another")
        labels[n] = y
        arms = crossfit_arms(h[(n, s)], c[(n, s)])
        # two temperatures, or three with the folds' mean (the fold ensemble): the arms that have one
        temps = dict(zip(CROSSFIT_ARMS, arms.pop("temperatures"), strict=False))
        for arm, p in arms.items():
            probs.setdefault((n, arm), []).append(p)
            rows.append({"n": n, "seed": s, "arm": arm,
                         **{k: scale * fn(p, y) for k, (fn, scale) in CROSSFIT_MEASURES.items()},
                         "T": temps.get(arm, np.nan)})
    per_seed = pd.DataFrame(rows)
    g = per_seed.groupby(["n", "arm"], sort=False)
    cols = list(CROSSFIT_MEASURES) + ["T"]
    mean, std = g[cols].mean(), g[cols].std(ddof=1)
    summary = pd.DataFrame({c_: [("" if np.isnan(m) else f"{m:.2f}") + ("" if np.isnan(sd) else f" ± {sd:.2f}")
                                 for m, sd in zip(mean[c_], std[c_], strict=True)] for c_ in cols}, index=mean.index)
    tests, diff_rows = {}, []
    for n in labels:
        for arm in [a for a in CROSSFIT_ARMS[1:] if (n, a) in probs]:
            for measure, (fn, scale) in CROSSFIT_MEASURES.items():
                d = stats.paired_seeds_difference(fn, probs[(n, arm)], probs[(n, CROSSFIT_ARMS[0])], labels[n],
                                                  n_boot=n_boot, seed=seed)
                tests[(n, arm, measure)] = d
                diff_rows.append({"n": n, "arm": arm, "measure": measure,
                                  "minus held-out [95 % interval]": fmt_difference(
                                      d, scale=scale, unit={"NLL (nats)": "nats", "Brier": ""}.get(measure, "points"),
                                      digits=3 if scale == 1 else 2),
                                  "seeds above held-out": d.sign_text})
    differences = pd.DataFrame(diff_rows).set_index(["n", "arm", "measure"])
    return per_seed, summary, differences, tests
