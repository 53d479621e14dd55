"""One part of an Adam-backbone run's validation split, and the choices made on the grids' runs.

The rules were fixed before the runs (:mod:`calibcourse.study.runs.experiments.adam`); these
functions recompute each choice from the committed runs, so that a page can show the grid and
say whether the configured value is still the rule's choice.
"""
from __future__ import annotations

from calibcourse.study.runs.experiments import experiments, run
from calibcourse.study.runs.experiments.adam import (
    ADAM_CHOICE_PART,
    ADAM_GRIDS,
    ADAM_MAX_VAL_ERROR_GAP,
    ADAM_META_VAL,
    SGD_LR_GRID,
    grid_label,
)

__all__ = ["adam_part", "adam_choice", "sgd_lr_choice"]


def adam_part(result, part: str, kind: str = "probs"):
    """One part of an Adam-backbone run's validation split: ``"meta"`` (the first :data:`ADAM_META_VAL`
    of it, the gamma-Net's) or ``"posthoc"`` (the rest: temperature scaling's and the baselines' grids').

    Parameters
    ----------
    result : calibcourse.study.training.train.RunResult
        A run of the Adam-backbone study (any method: the parts are positions in the validation split).
    part : {"meta", "posthoc"}
        Which part.
    kind : {"probs", "logits"}, default="probs"
        What to return beside the labels.

    Returns
    -------
    tuple of numpy.ndarray
        :func:`calibcourse.study.training.results.val_part` of the cut.

    Examples
    --------
    >>> r = run("ch5/CE/s0", "ci")
    >>> n = len(r.labels("val"))
    >>> len(adam_part(r, "meta")[1]) + len(adam_part(r, "posthoc")[1]) == n
    True
    """
    from calibcourse.study.training.results import meta_count, val_part

    k = meta_count(len(result.labels("val")), ADAM_META_VAL)
    return val_part(result, part, {"meta": slice(None, k), "posthoc": slice(k, None)}, kind)


def _val_measures(result, part: str) -> dict:
    """A grid run's ``val error`` and ``val ECE`` on one part of its validation split (the choice rules' columns)."""
    from calibcourse.calibration import metrics as M

    p, y = adam_part(result, part)
    return {"val error": M.error(p, y), "val ECE": M.ece(p, y)}


def adam_choice(profile: str) -> dict:
    """Each grid family's value chosen on its part of the validation split (:data:`ADAM_CHOICE_PART`).

    The rule, fixed before the runs: the value with the lowest validation ECE (15 bins) among the
    grid's values whose validation error is within :data:`ADAM_MAX_VAL_ERROR_GAP` of CE's on the same
    part (seed 0); all values when none is. The baselines are measured on the part post-hoc
    calibration uses (``"posthoc"``), the gamma-Nets on their own meta-validation part (``"meta"``),
    so that the post-hoc part is never used to tune a gamma-Net (:func:`adam_part`).

    Parameters
    ----------
    profile : str
        The profile whose grid runs to read (they must be in the cache).

    Returns
    -------
    dict
        ``{family: {"chosen": value, "table": DataFrame, "ce_val_error": float, "part": str}}``;
        the table lists every grid value with its validation error and ECE and whether it is
        eligible.

    Examples
    --------
    >>> from calibcourse.study.runs.experiments import ADAM_CHOSEN
    >>> choice = adam_choice("default")  # the committed grid runs
    >>> {f: c["chosen"] for f, c in choice.items()} == ADAM_CHOSEN, choice["Focal"]["part"]
    (True, 'posthoc')
    """
    import pandas as pd

    from calibcourse.calibration import metrics as M

    ce = run("ch5/CE/s0", profile)
    out = {}
    for family, (param, values, _) in ADAM_GRIDS.items():
        part = ADAM_CHOICE_PART[family]
        ce_err = M.error(*adam_part(ce, part))
        rows = []
        for v in values:
            rows.append({param: v, **_val_measures(run(f"ch5/grid/{grid_label(family, v)}/s0", profile), part)})
        table = pd.DataFrame(rows)
        # "within" includes the gap itself: errors are counts over the same samples, so a difference
        # of exactly 2 points is compared in whole errors, not in floats that round it up or down
        n = len(adam_part(ce, part)[1])
        gap_errors = ((table["val error"] - ce_err) * n).round()
        table["eligible"] = gap_errors <= int(ADAM_MAX_VAL_ERROR_GAP * n + 1e-9)
        pool = table[table["eligible"]] if table["eligible"].any() else table
        out[family] = {"chosen": float(pool.loc[pool["val ECE"].idxmin(), param]), "table": table,
                       "ce_val_error": ce_err, "part": part}
    return out


def sgd_lr_choice(profile: str) -> dict:
    """The learning rate of the SGD-backbone arm chosen on validation (:data:`SGD_LR_GRID`).

    The rule, fixed before the runs: among the profile's grid runs ``ch5/diagnosis/SGD CE lr <rate>/s0``
    (CE under :data:`SGD_BACKBONE`, seed 0), the rate with the lowest validation error on the post-hoc half
    of the validation split (:func:`adam_part`, the half the baselines' grids choose on); a tie goes
    to the lower rate.

    Parameters
    ----------
    profile : str
        The profile whose grid runs to read (they must be in the cache).

    Returns
    -------
    dict
        ``{"chosen": rate, "table": DataFrame}``; the table lists every rate of the profile's grid,
        lowest first, with its validation error and ECE on the post-hoc half.

    Examples
    --------
    >>> from calibcourse.study.runs.experiments import SGD_LR
    >>> choice = sgd_lr_choice("default")  # the committed grid runs
    >>> choice["chosen"] == SGD_LR, list(choice["table"]["lr"])
    (True, [0.01, 0.03, 0.1])
    """
    import pandas as pd

    prefix = "ch5/diagnosis/SGD CE lr "
    grid = sorted((cfg["lr"], name) for name, cfg in experiments(profile).items() if name.startswith(prefix))
    if not grid:
        raise KeyError(f"profile {profile!r} has no run starting with {prefix!r}")
    rows = []
    for lr, name in grid:
        rows.append({SGD_LR_GRID[0]: lr, **_val_measures(run(name, profile), "posthoc")})
    table = pd.DataFrame(rows)
    # idxmin returns the first minimum: the lowest rate among ties (the table is sorted by rate)
    return {"chosen": float(table.loc[table["val error"].idxmin(), SGD_LR_GRID[0]]), "table": table}

