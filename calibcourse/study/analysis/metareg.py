"""The meta-regularization study (2303.15057, Part II's report): the claims its diagnosis registered
before their runs, and the measures its report reads from the gamma-Nets' runs.

:data:`REGISTERED` holds each claim that was declared, with its effect, margin, direction, number of
seeds, the runs it reads and the prediction written down, in a commit of its own before any of those
runs was trained (issue 46):

- ``ch5-collapse-push-up`` and ``ch5-adam-reset`` test why the bounded gamma-Net of the Adam backbone
  (``gamma = 5 sigmoid(.)``, SECE alone, a whole-network Adam look-ahead, meta rate 1e-3) collapses to
  gamma of about 0.02: whether Adam's memory of the early, large hypergradients keeps it there
  (``ch5/diagnosis/bounded logged/s<k>``, ``ch5/diagnosis/bounded reset/s<k>``, k < 5);
- ``ch5-placebo-reported-rate`` runs the placebo at the reported configuration's meta rate 1e-4
  (``ch5/diagnosis/placebo (meta lr 0.0001)/s<k>``, k < 10), against the reported FLgamma-SECE.
"""
from __future__ import annotations

import numpy as np

__all__ = ["REGISTERED", "COLLAPSED_FROM", "COST_MARGIN", "MCE_SIZE", "final_gamma", "gamma_spread",
           "within_seed_spearman", "epoch_window", "calibrated_growth", "underconfident", "reported_runs",
           "reference_comparison", "frozen_share", "paper_claims", "bins_growth", "sigmoid_bound_slope"]

#: the cost claim's margin: FLγ-SECE costs at most 1 point of error against CE (the course's margin)
COST_MARGIN = 0.01
#: Table 1's smallest MCE gain of FLγ-SECE over CE-DECE (Tiny-ImageNet, 9.4 points)
MCE_SIZE = -0.094

#: the first epoch counted as "after the collapse" in the bounded arm: by the end of epoch 10 its mean
#: gamma was below 0.13 in each of the 3 committed seeds (``ch5/diagnosis/bounded``), from about 1
COLLAPSED_FROM = 11

#: claims registered before their runs: id -> what is tested (``effect`` in words, ``null`` and
#: ``direction`` as in :func:`calibcourse.calibration.stats.verdict`, ``n_seeds``, the run-name patterns it
#: reads, the interval, and the prediction as written before the runs)
REGISTERED = {
    "ch5-collapse-push-up": {
        "claim": "after the bounded gamma has collapsed, its hypergradient asks for a larger gamma: over "
                 f"epochs {COLLAPSED_FROM} to 30 fewer than half of the outer steps push the mean gamma down",
        "effect": f"share of outer steps pushing the mean γ down, epochs {COLLAPSED_FROM}-30, minus 0.5",
        "null": 0.0, "direction": "below", "n_seeds": 5,
        "runs": ("ch5/diagnosis/bounded logged/s<k>",),
        "interval": "one-sample t interval over the 5 seeds of each seed's share (hg_down_share, "
                    "averaged over the epochs)",
        "prediction": "If Adam's memory holds the collapsed gamma down (its second moment, beta2 = 0.999, "
                      "about 21 epochs of 47 steps here, still averages the large hypergradients of the "
                      "first epochs, so that later steps are too small to move gamma), the hypergradient "
                      "itself asks for a larger gamma once the network grows overconfident: over epochs "
                      f"{COLLAPSED_FROM} to 30 the share of outer steps pushing gamma down is below 0.5. If it "
                      "is above 0.5, the outer objective itself keeps gamma down, and the memory is not needed "
                      "to explain the collapse.",
    },
    "ch5-adam-reset": {
        "claim": "the bounded gamma's collapse is held in place by the meta optimizer's memory: with Adam's "
                 "moments reset at every epoch, the final mean gamma is more than 0.1 higher",
        "effect": "final mean γ on the test samples, Adam reset each epoch minus no reset (paired by seed)",
        "null": 0.1, "direction": "above", "n_seeds": 5,
        "runs": ("ch5/diagnosis/bounded reset/s<k>", "ch5/diagnosis/bounded logged/s<k>"),
        "interval": "paired t interval over the 5 seeds (seed_t_interval)",
        "prediction": "If Adam's memory of the early hypergradients keeps the collapsed gamma near 0 (and not "
                      "the direction the hypergradient asks for), resetting the meta optimizer's moments at "
                      "every epoch lets its steps follow the current, small hypergradient at full size, and "
                      "the gamma comes back: the final mean gamma of the reset arm lies more than 0.1 above "
                      "the logged arm's (held when the paired interval lies above +0.1). Both arms are the "
                      "same through epoch 1. If the reset arm also ends near 0, the memory does not hold the "
                      "collapse, whatever the push's sign.",
    },
    "ch5-placebo-reported-rate": {
        "claim": "at the reported meta rate 1e-4, the outer gradient's direction is what calibrates: a "
                 "random direction of the same norm ends at a higher test ECE than FLγ-SECE",
        "effect": "ECE(placebo at meta rate 1e-4) - ECE(FLγ-SECE), paired by seed",
        "null": 0.0, "direction": "above", "n_seeds": 10,
        "runs": ("ch5/diagnosis/placebo (meta lr 0.0001)/s<k>", "ch5/reference/FLgamma-SECE (meta lr 0.0001)/s<k>"),
        "interval": "paired seeds and test bootstrap (stats.paired_seeds_difference), seeds 0 to 9",
        "prediction": "If the outer gradient's direction is what calibrates at the reported rate (FLγ-SECE beats "
                      "its frozen control there), a random direction of the same norm ends at a higher test ECE "
                      "than FLγ-SECE over the 10 seeds the frozen control has (held when the paired interval "
                      "lies above 0). If it does not, the gain over the frozen control comes from moving the "
                      "gamma-Net at all, not from what the meta split says.",
    },
}


def final_gamma(result) -> float:
    """The last epoch's mean gamma on the test samples of a gamma-Net's run.

    Parameters
    ----------
    result : calibcourse.study.training.results.RunResult
        A run with a gamma-Net (its history has ``gamma_mean``).

    Returns
    -------
    float

    Examples
    --------
    >>> import pandas as pd
    >>> from calibcourse.study.training.results import RunResult
    >>> final_gamma(RunResult({}, pd.DataFrame({"gamma_mean": [1.0, 0.5, 0.25]}), {}))
    0.25
    """
    h = result.history
    if h is None or "gamma_mean" not in getattr(h, "columns", ()):
        raise ValueError("result has no gamma-Net: its history lacks gamma_mean")
    return float(h["gamma_mean"].iloc[-1])


def _ece_pct(result, labels) -> float:
    from calibcourse.calibration import metrics as M

    return 100 * float(M.ece(result.probs("test"), labels))


def gamma_spread(runs: dict, frozen: dict, labels, baseline: dict | None = None) -> dict:
    """Where a meta-learned gamma-Net ends, seed by seed, against where its frozen control ends.

    Parameters
    ----------
    runs : dict
        ``{seed: RunResult}`` of the meta-learned configuration.
    frozen : dict
        ``{seed: RunResult}`` of its frozen control (meta rate 0); its seeds need not be the same.
    labels : array_like of shape (n,)
        The test labels every run shares.
    baseline : dict, optional
        ``{seed: RunResult}`` of a method without a gamma-Net (CE) on the seeds of ``runs``: the
        comparison for the seeds that have no frozen control.

    Returns
    -------
    dict
        ``mean``, ``sd`` (ddof 1), ``min``, ``max`` and ``n`` of the final mean gammas of ``runs``;
        ``frozen_min`` and ``frozen_max`` of the control's; ``below``: the seeds of ``runs`` whose final
        gamma lies below the control's lowest; ``below_ece``: their mean test ECE in percent (NaN when
        none); ``frozen_ece``: the control's mean test ECE in percent (over its own seeds);
        ``below_frozen``: the seeds of ``below`` the control has, and ``below_frozen_ece`` its mean ECE on
        them (NaN when none); with ``baseline``, ``below_baseline_ece``: the baseline's mean ECE on the
        seeds of ``below`` (NaN when none).

    Examples
    --------
    >>> import pandas as pd
    >>> from calibcourse.study.training.results import RunResult
    >>> y = np.array([0, 1, 1, 0])
    >>> z = np.array([[2.0, 0.0], [0.0, 1.0], [3.0, 0.0], [0.0, 2.0]])
    >>> run = lambda g: RunResult({}, pd.DataFrame({"gamma_mean": [1.0, g]}),
    ...                           {"test_logits": z, "test_labels": y})
    >>> out = gamma_spread({0: run(0.5), 1: run(3.0), 2: run(4.0)}, {0: run(1.0), 1: run(2.0)}, y)
    >>> out["below"], out["frozen_min"], round(out["mean"], 2), out["below_frozen"]
    ([0], 1.0, 2.5, [0])
    """
    g = {s: final_gamma(r) for s, r in runs.items()}
    g0 = np.array([final_gamma(r) for r in frozen.values()])
    if not g or not g0.size:
        raise ValueError("runs and frozen must each hold at least one seed")
    v = np.array(list(g.values()))
    below = sorted(s for s, x in g.items() if x < g0.min())
    y = np.asarray(labels)

    def ece(group, seeds):
        return float(np.mean([_ece_pct(group[s], y) for s in seeds])) if seeds else float("nan")

    out = {"mean": float(v.mean()), "sd": float(v.std(ddof=1)) if v.size > 1 else float("nan"),
           "min": float(v.min()), "max": float(v.max()), "n": int(v.size),
           "frozen_min": float(g0.min()), "frozen_max": float(g0.max()), "below": below,
           "below_ece": ece(runs, below), "frozen_ece": float(np.mean([_ece_pct(r, y) for r in frozen.values()])),
           "below_frozen": [s for s in below if s in frozen]}
    out["below_frozen_ece"] = ece(frozen, out["below_frozen"])
    if baseline is not None:
        missing = [s for s in below if s not in baseline]
        if missing:
            raise ValueError(f"baseline lacks the seeds {missing}")
        out["below_baseline_ece"] = ece(baseline, below)
    return out


def within_seed_spearman(runs: dict, labels) -> dict:
    """How a gamma-Net's final gammas follow the difficulty of the test samples: Spearman's rank
    correlation of each sample's gamma with its true-class probability, within each seed and pooled.

    Pooling seeds whose gammas sit at different levels mixes the between-seed differences into the
    correlation (Simpson's paradox); the within-seed correlations are the per-sample structure.

    Parameters
    ----------
    runs : dict
        ``{seed: RunResult}`` of gamma-Net runs keeping ``test_gammas`` in their outputs.
    labels : array_like of shape (n,)
        The test labels every run shares.

    Returns
    -------
    dict
        ``per_seed`` (array, one correlation per seed), ``mean``, ``positive`` (seeds with a positive
        correlation: easier samples get the larger gamma), ``n`` and ``pooled`` (all seeds' samples
        together).

    Examples
    --------
    Two seeds whose gammas rise with the probability of the true class, at different levels:

    >>> import pandas as pd
    >>> from calibcourse.study.training.results import RunResult
    >>> y = np.zeros(4, dtype=int)
    >>> p1 = np.array([0.9, 0.8, 0.7, 0.6]); p2 = p1 - 0.5
    >>> z = lambda p: np.log(np.stack([p, 1 - p], axis=1))
    >>> a = RunResult({}, pd.DataFrame(), {"test_logits": z(p1), "test_labels": y, "test_gammas": p1})
    >>> b = RunResult({}, pd.DataFrame(), {"test_logits": z(p2), "test_labels": y, "test_gammas": p2 + 5})
    >>> out = within_seed_spearman({0: a, 1: b}, y)
    >>> out["mean"], out["positive"], round(out["pooled"], 2)
    (1.0, 2, -0.52)
    """
    from scipy.stats import spearmanr

    y = np.asarray(labels)
    if not runs:
        raise ValueError("runs must hold at least one seed")
    g, p = [], []
    for r in runs.values():
        g.append(np.asarray(r.outputs["test_gammas"], dtype=float))
        p.append(r.probs("test")[np.arange(len(y)), y])
    rho = np.array([spearmanr(a, b)[0] for a, b in zip(g, p, strict=True)])
    return {"per_seed": rho, "mean": float(rho.mean()), "positive": int(np.sum(rho > 0)), "n": int(rho.size),
            "pooled": float(spearmanr(np.concatenate(g), np.concatenate(p))[0])}


def epoch_window(history, column: str, first: int, last: int | None = None, how: str = "mean") -> float:
    """A per-epoch quantity of a run's history over the epochs ``first`` to ``last`` (inclusive).

    The diagnosis's logs are per epoch, and an arm whose outer loop starts late logs 0 before it
    starts: its averages are over its active epochs only.

    Parameters
    ----------
    history : pandas.DataFrame
        A run's history, with an ``epoch`` column (1 first).
    column : str
        The quantity, e.g. ``"hg_down_share"`` or ``"step_dgamma"``.
    first : int
        The first epoch counted.
    last : int, optional
        The last epoch counted (default: the run's last).
    how : {"mean", "sum", "min"}, default="mean"
        The mean over the window, the sum (the change of the mean gamma the steps made, for
        ``step_dgamma``), or the smallest value (how far ``gamma_mean`` dips).

    Returns
    -------
    float

    Examples
    --------
    >>> import pandas as pd
    >>> h = pd.DataFrame({"epoch": [1, 2, 3, 4], "hg_down_share": [0.0, 0.0, 0.5, 0.7]})
    >>> epoch_window(h, "hg_down_share", 3), epoch_window(h, "hg_down_share", 1)
    (0.6, 0.3)
    >>> epoch_window(h, "hg_down_share", 3, how="min")
    0.5
    """
    if how not in ("mean", "sum", "min"):
        raise ValueError(f"how must be 'mean', 'sum' or 'min'; got {how!r}")
    if column not in history.columns:
        raise ValueError(f"the history has no column {column!r}; it has {', '.join(history.columns)}")
    last = int(history["epoch"].max()) if last is None else last
    window = history.loc[(history["epoch"] >= first) & (history["epoch"] <= last), column]
    if window.empty:
        raise ValueError(f"no epoch between {first} and {last} in the history")
    return float(getattr(window, how)())


def calibrated_growth(probs, bins=(10, 1000), reps: int = 20, seed: int = 0, metric=None) -> float:
    """How much the binned ECE of a *perfectly calibrated* model with these confidences grows between
    two numbers of bins: the part of a measured growth that is the estimator's, not the model's.

    Each repetition keeps the predictions and confidences and draws whether each prediction is right
    with probability equal to its confidence (a model calibrated by construction), then measures
    ``metric`` at both numbers of bins; the mean over repetitions is returned.

    Parameters
    ----------
    probs : array_like of shape (n, k)
        The model's probabilities.
    bins : tuple of two int, default=(10, 1000)
        The numbers of equal-width bins; the growth is the second's value minus the first's.
    reps : int, default=20
        Repetitions of the draw, >= 1.
    seed : int, default=0
        Seed of the draws.
    metric : callable, optional
        ``metric(probs, labels, n_bins=...)``; default the toolkit's binned ECE.

    Returns
    -------
    float
        The mean growth, as a fraction.

    Examples
    --------
    One confidence for every sample fills one bin at any number of bins: no growth.

    >>> p = np.tile([0.7, 0.2, 0.1], (500, 1))
    >>> calibrated_growth(p, reps=3)
    0.0
    """
    from calibcourse.calibration import metrics as M
    from calibcourse.calibration._validation import check_int

    metric = M.ece if metric is None else metric
    check_int(reps, "reps", low=1)
    p = np.asarray(probs, dtype=float)
    if p.ndim != 2 or p.shape[1] < 2:
        raise ValueError(f"probs must be an (n, k) array with k >= 2; got shape {p.shape}")
    conf, pred = M.top_label(p)
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(reps):
        right = rng.random(len(conf)) < conf
        y = np.where(right, pred, (pred + 1) % p.shape[1])  # a wrong label where the draw says wrong
        out.append(metric(p, y, n_bins=bins[1]) - metric(p, y, n_bins=bins[0]))
    return float(np.mean(out))


def underconfident(probs, labels) -> bool:
    """Whether a model's mean top-label confidence lies below its accuracy on these samples.

    Parameters
    ----------
    probs : array_like of shape (n, k)
        The probabilities.
    labels : array_like of shape (n,)
        The true classes.

    Returns
    -------
    bool

    Examples
    --------
    >>> underconfident(np.array([[0.6, 0.4], [0.3, 0.7]]), np.array([0, 1]))
    True
    """
    from calibcourse.calibration import metrics as M

    conf, pred = M.top_label(np.asarray(probs, dtype=float))
    return bool(conf.mean() < np.mean(pred == np.asarray(labels)))


def reported_runs(ref_all: dict, chosen: dict | None = None) -> dict:
    """The reference recipe's reported methods, by the name a page gives them: ``{name: {seed: RunResult}}``
    (CE, focal loss at the chosen gamma, CE-DECE, the frozen control, FLγ-DECE and FLγ-SECE at their chosen
    meta rates), each run's validation split cut to temperature scaling's third (``ref_part``).

    Parameters
    ----------
    ref_all : dict
        ``{run name: RunResult}`` of the runs named ``ch5/reference/...``.
    chosen : dict, optional
        The chosen values (default :data:`calibcourse.study.runs.experiments.reference.REF_CHOSEN`).

    Returns
    -------
    dict
        Names ``"CE"``, ``"Focal (gamma g)"``, ``"CE-DECE"``, ``"frozen control"``, ``"FLgamma-DECE"``,
        ``"FLgamma-SECE"``, in that order; each method's seeds in increasing order.

    Examples
    --------
    >>> from calibcourse.study.runs.experiments import runs
    >>> methods = reported_runs(runs("ch5/reference/", "ci"))
    >>> list(methods), len(methods["CE"][0].labels("val"))
    (['CE', 'Focal (gamma 3)', 'CE-DECE', 'frozen control', 'FLgamma-DECE', 'FLgamma-SECE'], 100)
    """
    from dataclasses import replace

    from calibcourse.study.analysis.reference import ref_part
    from calibcourse.study.runs.experiments.reference import REF_CHOSEN

    chosen = {**REF_CHOSEN, **(chosen or {})}
    focal = f"Focal (gamma {chosen['Focal']:g})"
    labels = {"CE": "CE", focal: focal, "CE-DECE": "CE-DECE (weight 0.5)",
              "frozen control": "FLgamma-SECE (meta lr 0)",
              "FLgamma-DECE": f"FLgamma-DECE (meta lr {chosen['FLgamma-DECE']:g})",
              "FLgamma-SECE": f"FLgamma-SECE (meta lr {chosen['FLgamma-SECE']:g})"}

    def posthoc(r):
        z, y = ref_part(r, "posthoc", kind="logits")
        return replace(r, outputs={**r.outputs, "val_logits": z, "val_labels": y})

    out = {}
    for name, label in labels.items():
        prefix = f"ch5/reference/{label}/s"
        seeds = sorted(int(n[len(prefix):]) for n in ref_all if n.startswith(prefix))
        if not seeds:
            raise ValueError(f"no run named {prefix}<seed> in ref_all")
        out[name] = {s: posthoc(ref_all[f"{prefix}{s}"]) for s in seeds}
    return out


def reference_comparison(methods: dict, n_boot: int, seed: int = 0) -> dict:
    """The reference recipe's comparison, paired by seed: every measure per seed (with CE + TS, the
    temperature fitted on each CE seed's post-hoc third), and the paired tests the claims read.

    Parameters
    ----------
    methods : dict
        :func:`reported_runs`'s output.
    n_boot : int
        Bootstrap resamples of the test samples behind each paired interval.
    seed : int, default=0
        Seed of the bootstraps.

    Returns
    -------
    dict
        ``per_seed`` (:func:`calibcourse.study.analysis.tables.seed_table`'s table), ``P`` (``{name: {seed:
        probabilities}}``), ``y`` (the test labels), ``focal`` (focal loss's name) and ``tests``:
        ``{(measure, A, B): PairedSeeds}`` for FLγ-SECE against CE, CE + TS, focal loss, FLγ-DECE and the
        frozen control (ECE and error), its MCE against CE-DECE, its NLL against CE, and the frozen
        control's ECE and error against CE.

    Examples
    --------
    >>> from calibcourse.study.runs.experiments import runs
    >>> cmp = reference_comparison(reported_runs(runs("ch5/reference/", "ci")), n_boot=0)
    >>> sorted(cmp["P"])[:3], ("ECE", "FLgamma-SECE", "CE + TS") in cmp["tests"]
    (['CE', 'CE + TS', 'CE-DECE'], True)
    """
    from calibcourse.calibration import calibrators as cal
    from calibcourse.calibration import metrics as M
    from calibcourse.calibration import stats
    from calibcourse.study.analysis.tables import seed_table

    per_seed, probs = seed_table(methods, post_hoc={"CE + TS": ("CE", cal.TemperatureScaling())})
    P = {name: dict(zip(per_seed.loc[per_seed["method"] == name, "seed"], p, strict=True)) for name, p in probs.items()}
    y = next(iter(next(iter(methods.values())).values())).labels("test")
    focal = next(m for m in methods if m.startswith("Focal"))

    def compare(metric, a, b):
        common = sorted(set(P[a]) & set(P[b]))
        return stats.paired_seeds_difference(metric, [P[a][s] for s in common], [P[b][s] for s in common], y,
                                             n_boot=n_boot, seed=seed)

    tests = {}
    for b in ("CE", "CE + TS", focal, "FLgamma-DECE", "frozen control"):
        tests[("ECE", "FLgamma-SECE", b)] = compare(M.ece, "FLgamma-SECE", b)
        tests[("Error", "FLgamma-SECE", b)] = compare(M.error, "FLgamma-SECE", b)
    tests[("MCE", "FLgamma-SECE", "CE-DECE")] = compare(M.mce, "FLgamma-SECE", "CE-DECE")
    tests[("NLL", "FLgamma-SECE", "CE")] = compare(M.nll, "FLgamma-SECE", "CE")
    tests[("ECE", "frozen control", "CE")] = compare(M.ece, "frozen control", "CE")
    tests[("Error", "frozen control", "CE")] = compare(M.error, "frozen control", "CE")
    return {"per_seed": per_seed, "P": P, "y": y, "focal": focal, "tests": tests}


def frozen_share(cmp: dict, n_boot: int, seed: int = 0) -> dict:
    """FLγ-SECE's ECE gain over CE split in two on the seeds its frozen control ran: the part the frozen
    control already gets (frozen control - CE) and the part the meta-learning adds (FLγ-SECE - frozen
    control). All three contrasts are paired on the same seeds and test samples, so their estimates add
    up; the pooled FLγ-SECE - CE of the claims runs over more seeds and is not the total here.

    Parameters
    ----------
    cmp : dict
        :func:`reference_comparison`'s output.
    n_boot : int
        Bootstrap resamples of the test samples behind each interval.
    seed : int, default=0
        Seed of the bootstraps.

    Returns
    -------
    dict
        ``seeds`` (the frozen control's, shared by the three), ``total`` (FLγ-SECE - CE), ``frozen`` (frozen
        control - CE) and ``learned`` (FLγ-SECE - frozen control), each a
        :class:`calibcourse.calibration.stats.PairedSeeds`; ``share``: ``frozen`` over ``total``.

    Examples
    --------
    >>> from calibcourse.study.runs.experiments import runs
    >>> out = frozen_share(reference_comparison(reported_runs(runs("ch5/reference/", "ci")), n_boot=0), n_boot=0)
    >>> out["seeds"], round(out["frozen"].estimate + out["learned"].estimate - out["total"].estimate, 12)
    ([0], 0.0)
    """
    from calibcourse.calibration import metrics as M
    from calibcourse.calibration import stats

    P, y = cmp["P"], cmp["y"]
    seeds = sorted(set(P["frozen control"]) & set(P["FLgamma-SECE"]) & set(P["CE"]))
    if not seeds:
        raise ValueError("the frozen control shares no seed with FLγ-SECE and CE")

    def contrast(a, b):
        return stats.paired_seeds_difference(M.ece, [P[a][s] for s in seeds], [P[b][s] for s in seeds], y,
                                             n_boot=n_boot, seed=seed)

    out = {"seeds": seeds, "total": contrast("FLgamma-SECE", "CE"), "frozen": contrast("frozen control", "CE"),
           "learned": contrast("FLgamma-SECE", "frozen control")}
    out["share"] = float(out["frozen"].estimate / out["total"].estimate) if out["total"].estimate else float("nan")
    return out


def sigmoid_bound_slope(gamma, bound: float = 5.0):
    """The slope of a sigmoid-bounded gamma, ``gamma = bound * sigmoid(u)``, in its input ``u``, at a
    gamma: ``bound * sigmoid'(u) = gamma * (1 - gamma / bound)``.

    Parameters
    ----------
    gamma : float or array_like
        Gammas in ``(0, bound)``.
    bound : float, default=5.0
        The bound (the Adam backbone's gamma-Nets: 5).

    Returns
    -------
    float or numpy.ndarray

    Examples
    --------
    At gamma 1 the slope is 0.8; at gamma 0.02, where the bounded gamma collapsed, about 40 times smaller:

    >>> round(float(sigmoid_bound_slope(1.0)), 3), round(float(sigmoid_bound_slope(1.0) / sigmoid_bound_slope(0.02)))
    (0.8, 40)
    """
    g = np.asarray(gamma, dtype=float)
    if np.any((g <= 0) | (g >= bound)):
        raise ValueError(f"gamma must lie strictly between 0 and the bound {bound:g}")
    return g * (1 - g / bound)


def _growth(metric):
    def growth(p, y):
        return metric(p, y, n_bins=1000) - metric(p, y, n_bins=10)
    return growth


def paper_claims(cmp: dict, learns: dict, n_boot: int, reps: int = 10, focal_fallback: bool = False) -> list:
    """The paper's claims as chapter 5's study tests them: the keyword arguments of
    :meth:`calibcourse.study.analysis.ledger.Ledger.claim` for each, in the ledger's order.

    Each claim about FLγ-SECE carries its gamma-Net's test against its frozen control (``learns``); the
    comparison of FLγ-SECE with FLγ-DECE carries the test of the first of the two not shown to learn.
    ``ch5-bins`` is not tested: the growth of the binned ECE from 10 to 1000 bins is mostly the
    estimator's (:func:`calibrated_growth`, a perfectly calibrated model at each network's confidences,
    against the growth measured), so a difference between two methods' growth says little about them.

    Parameters
    ----------
    cmp : dict
        :func:`reference_comparison`'s output.
    learns : dict
        ``{"FLgamma-SECE": ..., "FLgamma-DECE": ...}``: each gamma-Net's
        :func:`calibcourse.study.analysis.reference.learns`.
    n_boot : int
        Bootstrap resamples behind the growth's paired interval.
    reps : int, default=10
        Repetitions of :func:`calibrated_growth` per seed.
    focal_fallback : bool, default=False
        Whether focal loss's gamma is the tuning rule's fallback (no gamma met the error rule,
        :func:`calibcourse.study.analysis.reference.ref_choice`): the comparison's effect says so.

    Returns
    -------
    list of dict
        One dict of keyword arguments per claim (``ch5-bins``'s ``why`` quotes :func:`bins_growth`).

    Examples
    --------
    >>> from calibcourse.study.runs.experiments import runs
    >>> from calibcourse.study.analysis.reference import learns as learns_test
    >>> ref = runs("ch5/reference/", "ci")
    >>> cmp = reference_comparison(reported_runs(ref), n_boot=0)
    >>> ln = {f: learns_test(ref, f, lr, [0], n_boot=0) for f, lr in (("FLgamma-SECE", 1e-4),
    ...       ("FLgamma-DECE", 1e-3))}
    >>> [c["id"] for c in paper_claims(cmp, ln, n_boot=0, reps=1)][:3]
    ['ch5-sece-vs-ce', 'ch5-sece-vs-ts', 'ch5-sece-vs-focal']
    """
    from calibcourse.calibration import metrics as M
    from calibcourse.calibration import stats
    from calibcourse.study.analysis.reference import REF_MAX_ERROR_GAP

    tests, P, y, focal = cmp["tests"], cmp["P"], cmp["y"], cmp["focal"]
    n_test = len(y)
    common = sorted(set(P["FLgamma-SECE"]) & set(P["CE"]))
    sece, ce = [P["FLgamma-SECE"][s] for s in common], [P["CE"][s] for s in common]
    observed, simulated = (bins_growth(cmp, reps)[k] for k in ("observed", "simulated"))
    mce_growth = stats.paired_seeds_difference(_growth(M.mce), sece, ce, y, n_boot=n_boot, seed=0)
    gamma_focal = focal.split("gamma ")[1].rstrip(")")
    sece_learns = learns["FLgamma-SECE"]
    both = next((learns[f] for f in ("FLgamma-SECE", "FLgamma-DECE") if learns[f]["verdict"] != "held"), sece_learns)
    cedece_error = 100 * float(np.mean([M.error(p, y) for p in P["CE-DECE"].values()]))
    ce_error = 100 * float(np.mean([M.error(p, y) for p in P["CE"].values()]))
    base = {"source": "wang2023metareg", "n_test": n_test, "section": "sec-metareg-comparison"}
    cost = lambda b: "error change " + _fmt(tests[("Error", "FLgamma-SECE", b)])  # noqa: E731
    return [
        {**base, "id": "ch5-sece-vs-ce", "claim": "FLγ-SECE has a lower ECE than CE (Table 1)",
         "effect": "ECE(FLγ-SECE) - ECE(CE)", "interval": tests[("ECE", "FLgamma-SECE", "CE")],
         "cost": cost("CE"), "learns": sece_learns},
        {**base, "id": "ch5-sece-vs-ts", "claim": "FLγ-SECE has a lower ECE than CE + TS (Table 1)",
         "effect": "ECE(FLγ-SECE) - ECE(CE + TS)", "interval": tests[("ECE", "FLgamma-SECE", "CE + TS")],
         "cost": cost("CE + TS"), "learns": sece_learns},
        {**base, "id": "ch5-sece-vs-focal", "claim": "FLγ-SECE has a lower ECE than focal loss (Table 1)",
         "effect": f"ECE(FLγ-SECE) - ECE(focal, γ = {gamma_focal})" + (
             f"; γ = {gamma_focal} is the tuning rule's fallback: no γ kept the error within "
             f"{100 * REF_MAX_ERROR_GAP:g} point of CE's" if focal_fallback else ""),
         "interval": tests[("ECE", "FLgamma-SECE", focal)],
         "cost": cost(focal), "learns": sece_learns},
        {**base, "id": "ch5-sece-vs-dece", "claim": "FLγ-SECE has a lower ECE than FLγ-DECE (Table 1: on CIFAR-10 "
         "and Tiny-ImageNet; on CIFAR-100 FLγ-DECE's is lower)", "effect": "ECE(FLγ-SECE) - ECE(FLγ-DECE)",
         "interval": tests[("ECE", "FLgamma-SECE", "FLgamma-DECE")], "learns": both},
        {**base, "id": "ch5-mce-vs-cedece", "claim": "FLγ-SECE's MCE is at least 9.4 points below CE-DECE's (Table 1: "
         "18.6, 15.1 and 9.4 points below on CIFAR-10, CIFAR-100 and Tiny-ImageNet); tested here against a "
         f"CE-DECE baseline that is broken in this recipe ({cedece_error:.1f} % error, CE {ce_error:.1f} %)",
         "effect": "MCE(FLγ-SECE) - MCE(CE-DECE)", "interval": tests[("MCE", "FLgamma-SECE", "CE-DECE")],
         "null": MCE_SIZE, "learns": sece_learns},
        {**base, "id": "ch5-nll", "claim": "FLγ-SECE has a lower NLL than CE (Table 1)",
         "effect": "NLL(FLγ-SECE) - NLL(CE)", "interval": tests[("NLL", "FLgamma-SECE", "CE")], "scale": 1,
         "unit": "", "learns": sece_learns},
        {**base, "id": "ch5-error-cost", "claim": "FLγ-SECE costs less than 1 point of error against CE (this "
         "course's margin; Table 1: +0.6, +1.1 and +0.7 points on CIFAR-10, CIFAR-100 and Tiny-ImageNet)",
         "effect": "error(FLγ-SECE) - error(CE)", "interval": tests[("Error", "FLgamma-SECE", "CE")],
         "null": COST_MARGIN, "learns": sece_learns},
        {**base, "id": "ch5-bins", "claim": "FLγ-SECE's ECE grows less than CE's from 10 to 1000 bins (Fig. 5)",
         "effect": "growth(FLγ-SECE) - growth(CE)", "interval": None, "section": "sec-metareg-bins",
         "learns": sece_learns, "n_seeds": len(common),
         "why": "not testable this way: the growth of the binned ECE with the number of bins is the "
                f"estimator's: FLγ-SECE's growth minus CE's is {observed:+.2f} points, and a perfectly "
                "calibrated model drawn at each network's own confidences gives "
                f"{simulated:+.2f}; a debiased calibration measure would test it"},
        {**base, "id": "ch5-bins-mce", "claim": "FLγ-SECE's MCE grows less than CE's from 10 to 1000 bins (Fig. 5)",
         "effect": "MCE growth(FLγ-SECE) - MCE growth(CE)", "interval": mce_growth, "section": "sec-metareg-bins",
         "learns": sece_learns},
    ]


def bins_growth(cmp: dict, reps: int = 10) -> dict:
    """FLγ-SECE's growth of the binned ECE from 10 to 1000 bins minus CE's, measured and for perfectly
    calibrated models at the same confidences (:func:`calibrated_growth`), in points, over the seeds the
    two share (the mean of the per-seed differences).

    Parameters
    ----------
    cmp : dict
        :func:`reference_comparison`'s output.
    reps : int, default=10
        Repetitions of :func:`calibrated_growth` per seed (seeded by the seed).

    Returns
    -------
    dict
        ``observed``, ``simulated`` (points) and ``n_seeds``.

    Examples
    --------
    >>> from calibcourse.study.runs.experiments import runs
    >>> out = bins_growth(reference_comparison(reported_runs(runs("ch5/reference/", "ci")), n_boot=0), reps=1)
    >>> sorted(out), out["n_seeds"]
    (['n_seeds', 'observed', 'simulated'], 1)
    """
    from calibcourse.calibration import metrics as M

    P, y = cmp["P"], cmp["y"]
    common = sorted(set(P["FLgamma-SECE"]) & set(P["CE"]))
    pairs = [(s, P["FLgamma-SECE"][s], P["CE"][s]) for s in common]
    g = _growth(M.ece)
    observed = 100 * float(np.mean([g(a, y) - g(b, y) for _, a, b in pairs]))
    simulated = 100 * float(np.mean([calibrated_growth(a, reps=reps, seed=s) - calibrated_growth(b, reps=reps, seed=s)
                                     for s, a, b in pairs]))
    return {"observed": observed, "simulated": simulated, "n_seeds": len(common)}


def _fmt(d) -> str:
    from calibcourse.study.analysis.tables import fmt_difference

    return fmt_difference(d, digits=2)
