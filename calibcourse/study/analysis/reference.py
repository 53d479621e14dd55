"""What the reference recipe's runs show: their validation parts, the grid's choice, the frozen-control test.

The recipe itself, its runs and the values fixed before them are registered with the runs
(:mod:`calibcourse.study.runs.experiments.reference`). Here: the three parts of a run's
validation split (:func:`ref_part`), the rule that chooses the meta learning rate on a selection
split the gamma-Net never sees (:func:`ref_choice`), and the test of whether the gamma-Net learns
at all, against its frozen control (:func:`learns`, :func:`learns_runs`, :func:`seed_t_interval`).
"""
from __future__ import annotations

import numpy as np

from calibcourse.study.runs.experiments.reference import (
    REF_FOCAL_GAMMAS,
    REF_GRID_SEEDS,
    REF_MAX_ERROR_GAP,
    REF_META,
    REF_META_LRS,
    REF_PARTS,
    ref_name,
)

__all__ = ["ref_part", "ref_choice", "learns", "learns_runs", "seed_t_interval", "seed_interval"]


def ref_part(result, part: str, kind: str = "probs"):
    """One third of a reference run's validation split (:data:`REF_PARTS`): ``"meta"``, ``"posthoc"``
    or ``"selection"``.

    Parameters
    ----------
    result : calibcourse.study.training.train.RunResult
        A reference run.
    part : {"meta", "posthoc", "selection"}
        Which third.
    kind : {"probs", "logits"}, default="probs"
        What to return beside the labels.

    Returns
    -------
    tuple of numpy.ndarray
        ``(probs or logits, labels)``.

    Examples
    --------
    >>> from calibcourse.study.runs.experiments import run
    >>> r = run(ref_name("CE"), "ci")
    >>> [len(ref_part(r, part)[1]) for part in REF_PARTS], len(r.labels("val"))
    ([100, 100, 100], 300)
    """
    from calibcourse.study.training.results import meta_count, val_part

    # the meta-learner's part, as MetaTrainer cuts it; the rest in two halves
    n = len(result.labels("val"))
    k = meta_count(n, REF_META["meta_val"])
    m = k + (n - k) // 2
    parts = dict(zip(REF_PARTS, (slice(None, k), slice(k, m), slice(m, None)), strict=True))
    return val_part(result, part, parts, kind)


def _family_values(family: str):
    if family == "Focal":
        return REF_FOCAL_GAMMAS, lambda v: ref_name(f"Focal (gamma {v:g})")[:-3], ref_name("CE")[:-3]
    return REF_META_LRS, lambda v: ref_name(family, v)[:-3], ref_name(family, 0.0)[:-3]


def ref_choice(results: dict, family: str, seeds=REF_GRID_SEEDS) -> dict:
    """The value of ``family``'s grid chosen on the selection split, by the rule fixed before the runs
    (:data:`REF_MAX_ERROR_GAP`).

    Parameters
    ----------
    results : dict
        ``{run name: RunResult}`` holding the grid's runs (and CE's, for ``"Focal"``).
    family : {"FLgamma-SECE", "FLgamma-DECE", "Focal"}
        The grid: the gamma-Net's meta learning rate, or focal loss's gamma.
    seeds : sequence of int
        The grid's seeds.

    Returns
    -------
    dict
        ``{"chosen": value, "table": DataFrame, "reference_error": float, "fallback": bool}``: per value,
        the mean selection error and ECE over the seeds and whether the value is eligible; the reference's
        mean selection error; whether no value was eligible, so that the rule fell back to the lowest mean
        ECE over every value.

    Examples
    --------
    >>> from calibcourse.study.runs.experiments import runs
    >>> grid = ref_choice(runs("ch5/reference/", "ci"), "FLgamma-SECE", seeds=(0,))
    >>> list(grid["table"]["value"]), grid["chosen"] in REF_META_LRS, grid["fallback"]
    ([0.0, 0.0001, 0.001, 0.01], True, False)
    """
    import pandas as pd

    from calibcourse.calibration import metrics as M

    values, prefix, reference = _family_values(family)

    def measures(pre):
        rows = [ref_part(results[f"{pre}/s{s}"], "selection") for s in seeds]
        return float(np.mean([M.error(p, y) for p, y in rows])), float(np.mean([M.ece(p, y) for p, y in rows]))

    ref_error = measures(reference)[0]
    table = pd.DataFrame([(v, *measures(prefix(v))) for v in values], columns=["value", "error", "ECE"])
    table["eligible"] = table["error"] <= ref_error + REF_MAX_ERROR_GAP + 1e-12
    fallback = not table["eligible"].any()   # no value within the gap: the lowest ECE over them all
    pool = table if fallback else table[table["eligible"]]
    return {"chosen": float(pool.loc[pool["ECE"].idxmin(), "value"]), "table": table, "reference_error": ref_error,
            "fallback": bool(fallback)}


def learns(results: dict, family: str, meta_lr: float, seeds, frozen_family: str = "FLgamma-SECE",
           n_boot: int = 1000) -> dict:
    """Whether the gamma-Net of ``family`` at ``meta_lr`` beats its frozen control (meta lr 0, same seeds):
    :func:`learns_runs` on the reference runs ``ref_name(family, meta_lr, s)`` against
    ``ref_name(frozen_family, 0, s)``.

    Parameters
    ----------
    results : dict
        ``{run name: RunResult}`` with the runs of both.
    family : {"FLgamma-SECE", "FLgamma-DECE"}
        The gamma-Net.
    meta_lr : float
        The reported configuration's rate.
    seeds : sequence of int
        The seeds both share.
    frozen_family : str, default="FLgamma-SECE"
        Whose rate-0 runs are the control (the same network for both families).
    n_boot : int, default=1000
        Bootstrap resamples of the test set for the ECE interval.

    Returns
    -------
    dict
        As :func:`learns_runs`, and ``net``: the gamma-Net's name as a page writes it.

    Examples
    --------
    >>> from calibcourse.study.runs.experiments import REF_CHOSEN, REF_N_SEEDS, runs
    >>> out = learns(runs("ch5/reference/", "default"), "FLgamma-SECE", REF_CHOSEN["FLgamma-SECE"],
    ...              range(REF_N_SEEDS), n_boot=100)
    >>> sorted(out), out["n_seeds"], out["net"]
    (['ece', 'gamma', 'gamma0', 'meta_lr', 'moves', 'n_seeds', 'net', 'verdict'], 10, 'FLγ-SECE')
    """
    from calibcourse.study.analysis.tables import method_label

    seeds = list(seeds)
    out = learns_runs([results[ref_name(family, meta_lr, s)] for s in seeds],
                      [results[ref_name(frozen_family, 0.0, s)] for s in seeds], meta_lr, n_boot=n_boot)
    return {**out, "net": method_label(family)}


def seed_t_interval(differences, level: float = 0.95) -> tuple:
    """The mean of per-seed differences with its paired t interval: ``(estimate, low, high)``.

    For a quantity measured once per run (a final mean gamma, a share of steps), paired by seed;
    it is the interval of ``scipy.stats.ttest_1samp`` on the differences.

    Parameters
    ----------
    differences : array-like of shape (S,)
        One difference per seed, S >= 2.
    level : float, default=0.95
        The interval's coverage.

    Returns
    -------
    tuple of float

    Examples
    --------
    >>> [round(v, 3) for v in seed_t_interval([1.0, 2.0, 3.0])]
    [2.0, -0.484, 4.484]
    >>> seed_t_interval([1.0])
    Traceback (most recent call last):
        ...
    ValueError: differences must hold at least 2 seeds; got 1
    """
    from scipy.stats import t as student_t

    d = np.asarray(differences, dtype=float).ravel()
    if d.size < 2:
        raise ValueError(f"differences must hold at least 2 seeds; got {d.size}")
    half = float(student_t.ppf(0.5 + level / 2, d.size - 1) * d.std(ddof=1) / np.sqrt(d.size))
    return (float(d.mean()), float(d.mean()) - half, float(d.mean()) + half)


def seed_interval(differences, level: float = 0.95) -> tuple:
    """:func:`seed_t_interval`, or an unbounded interval where there is one seed (the ci profile).

    Parameters
    ----------
    differences : array-like of shape (S,)
        One difference per seed, S >= 1.
    level : float, default=0.95
        The interval's coverage.

    Returns
    -------
    tuple of float
        ``(estimate, low, high)``; ``low`` and ``high`` are infinite for one seed.

    Examples
    --------
    >>> [round(v, 3) for v in seed_interval([1.0, 2.0, 3.0])]
    [2.0, -0.484, 4.484]
    >>> seed_interval([1.5])
    (1.5, -inf, inf)
    """
    d = np.asarray(differences, dtype=float).ravel()
    return seed_t_interval(d, level) if d.size > 1 else (float(d.mean()), -np.inf, np.inf)

def learns_runs(runs, frozen_runs, meta_lr: float, n_boot: int = 1000) -> dict:
    """Whether meta-learned runs beat their frozen controls (meta lr 0), paired by seed.

    Two paired intervals over the seeds: the test ECE of the runs minus their controls'
    (:func:`calibcourse.calibration.stats.paired_seeds_difference`, test samples and seeds), and the final
    mean gamma on the test split minus the control's (a paired t interval over the seeds). The verdict
    is the ECE interval's against 0 ("held": lower), and "not held" whenever the meta rate is 0 (the
    configuration is its own control).

    Parameters
    ----------
    runs, frozen_runs : sequence of RunResult
        Seed ``s`` of the meta-learned configuration and of its frozen control, in the same order, on
        the same test samples.
    meta_lr : float
        The meta-learned configuration's rate.
    n_boot : int, default=1000
        Bootstrap resamples of the test set for the ECE interval.

    Returns
    -------
    dict
        ``{"verdict", "ece", "gamma", "moves", "gamma0", "meta_lr", "n_seeds"}``: the verdict, both intervals
        as text, whether the final gamma's interval excludes 0 (the gamma-Net ends somewhere else than its
        control: it is active, whether or not it helps), the control's mean final gamma, the rate and the
        number of seeds.

    Examples
    --------
    A configuration at rate 0 is its own control, whatever its numbers:

    >>> from calibcourse.study.runs.experiments import runs
    >>> rs = runs("ch5/reference/FLgamma-SECE (meta lr 0)/", "default")
    >>> a = [rs[ref_name("FLgamma-SECE", 0.0, s)] for s in range(3)]
    >>> learns_runs(a, a, meta_lr=0.0, n_boot=100)["verdict"]
    'not held'
    """
    from calibcourse.calibration import metrics as M
    from calibcourse.calibration import stats
    from calibcourse.study.analysis.tables import fmt_difference

    a, b = list(runs), list(frozen_runs)
    if len(a) != len(b) or len(a) < 1:
        raise ValueError(f"runs and frozen_runs must pair at least 1 seed; got {len(a)} and {len(b)}")
    y = a[0].labels("test")
    ece = stats.paired_seeds_difference(M.ece, [r.probs("test") for r in a], [r.probs("test") for r in b], y,
                                        n_boot=n_boot)
    final = lambda rs: np.array([float(r.history["gamma_mean"].iloc[-1]) for r in rs])  # noqa: E731
    d = final(a) - final(b)
    verdict = "not held" if meta_lr == 0 else stats.verdict(ece.low, ece.high, null=0.0, direction="below")
    interval = seed_t_interval(d) if len(d) > 1 else None
    gamma = (fmt_difference(interval, scale=1, unit="", digits=2) if interval is not None
             else f"{d[0]:+.2f} (one seed, no interval)")
    moves = interval is not None and not interval[1] <= 0 <= interval[2]
    return {"verdict": verdict, "ece": fmt_difference(ece), "gamma": gamma, "moves": bool(moves),
            "gamma0": float(final(b).mean()), "meta_lr": float(meta_lr), "n_seeds": len(a)}
