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

__all__ = ["REGISTERED", "COLLAPSED_FROM", "final_gamma", "gamma_spread", "within_seed_spearman", "epoch_window",
           "calibrated_growth", "underconfident"]

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


def gamma_spread(runs: dict, frozen: dict, labels) -> dict:
    """Where a meta-learned gamma-Net ends, seed by seed, against where its frozen control ends.

    Parameters
    ----------
    runs : dict
        ``{seed: RunResult}`` of the meta-learned configuration.
    frozen : dict
        ``{seed: RunResult}`` of its frozen control (meta rate 0); its seeds need not be the same.
    labels : array_like of shape (n,)
        The test labels every run shares.

    Returns
    -------
    dict
        ``mean``, ``sd`` (ddof 1), ``min``, ``max`` and ``n`` of the final mean gammas of ``runs``;
        ``frozen_min`` and ``frozen_max`` of the control's; ``below``: the seeds of ``runs`` whose final
        gamma lies below the control's lowest; ``below_ece``: their mean test ECE in percent (NaN when
        none); ``frozen_ece``: the control's mean test ECE in percent.

    Examples
    --------
    >>> import pandas as pd
    >>> from calibcourse.study.training.results import RunResult
    >>> y = np.array([0, 1, 1, 0])
    >>> z = np.array([[2.0, 0.0], [0.0, 1.0], [3.0, 0.0], [0.0, 2.0]])
    >>> run = lambda g: RunResult({}, pd.DataFrame({"gamma_mean": [1.0, g]}),
    ...                           {"test_logits": z, "test_labels": y})
    >>> out = gamma_spread({0: run(0.5), 1: run(3.0), 2: run(4.0)}, {0: run(1.0), 1: run(2.0)}, y)
    >>> out["below"], out["frozen_min"], round(out["mean"], 2)
    ([0], 1.0, 2.5)
    """
    g = {s: final_gamma(r) for s, r in runs.items()}
    g0 = np.array([final_gamma(r) for r in frozen.values()])
    if not g or not g0.size:
        raise ValueError("runs and frozen must each hold at least one seed")
    v = np.array(list(g.values()))
    below = sorted(s for s, x in g.items() if x < g0.min())
    y = np.asarray(labels)
    return {"mean": float(v.mean()), "sd": float(v.std(ddof=1)) if v.size > 1 else float("nan"),
            "min": float(v.min()), "max": float(v.max()), "n": int(v.size),
            "frozen_min": float(g0.min()), "frozen_max": float(g0.max()), "below": below,
            "below_ece": float(np.mean([_ece_pct(runs[s], y) for s in below])) if below else float("nan"),
            "frozen_ece": float(np.mean([_ece_pct(r, y) for r in frozen.values()]))}


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
    rho = np.array([spearmanr(a, b)[0] for a, b in zip(g, p)])
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
    how : {"mean", "sum"}, default="mean"
        The mean over the window, or the sum (the change of the mean gamma the steps made, for
        ``step_dgamma``).

    Returns
    -------
    float

    Examples
    --------
    >>> import pandas as pd
    >>> h = pd.DataFrame({"epoch": [1, 2, 3, 4], "hg_down_share": [0.0, 0.0, 0.5, 0.7]})
    >>> epoch_window(h, "hg_down_share", 3), epoch_window(h, "hg_down_share", 1)
    (0.6, 0.3)
    """
    if how not in ("mean", "sum"):
        raise ValueError(f"how must be 'mean' or 'sum'; got {how!r}")
    if column not in history.columns:
        raise ValueError(f"the history has no column {column!r}; it has {', '.join(history.columns)}")
    last = int(history["epoch"].max()) if last is None else last
    window = history.loc[(history["epoch"] >= first) & (history["epoch"] <= last), column]
    if window.empty:
        raise ValueError(f"no epoch between {first} and {last} in the history")
    return float(window.mean() if how == "mean" else window.sum())


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
