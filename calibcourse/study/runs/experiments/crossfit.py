"""The runs of calibration without a held-out set: held-out against cross-fitted temperature scaling."""
from __future__ import annotations

from calibcourse.study.runs.experiments.reference import REF_BACKBONE

#: the module's configs; its run builders (``..._runs``) are the registry's, not an API
__all__ = ["CROSSFIT"]

#: cross-fitting's study: the reference recipe's backbone (the 1-D CNN with the meta-calibration code's
#: SGD recipe, :data:`~calibcourse.study.runs.experiments.reference.REF_BACKBONE`) at pools where its
#: error is useful (at most 10 %: measured before the runs, seed 0: 8.1 % at 2,500, 3.4 % at 5,000), its own test set
#: of 1,000 sequences, 10 seeds
CROSSFIT = {"sizes": (2500, 5000), "seeds": 10, "n_test": 1000, "folds": 5, "val_fraction": 0.2}


def crossfit_runs(sizes, seeds, n_test, epochs=None, folds=5, val_fraction=0.2):
    """Calibration without a held-out set: at each pool size ``n`` and seed, a held-out run
    (train on 1 - ``val_fraction`` of the pool, temperature from the rest: ``ch6/heldout/n<n>/s<seed>``)
    and a cross-fitted run of the same pool (``folds`` fold networks and a final one on the whole pool:
    ``ch6/crossfit/n<n>/s<seed>``, :mod:`calibcourse.study.training.crossfit`), every network with the
    recipe of :data:`~calibcourse.study.runs.experiments.reference.REF_BACKBONE` (``epochs`` to shorten it).
    The seed also draws the held-out split and the folds."""
    runs = {}
    for n in sizes:
        for s in seeds:
            d = {**REF_BACKBONE["data"], "mnist1d_train": n, "mnist1d_test": n_test, "val_fraction": val_fraction,
                 "seed": s}
            cfg = {**REF_BACKBONE, "data": d, **({"epochs": epochs} if epochs else {}), "seed": s}
            runs[f"ch6/heldout/n{n}/s{s}"] = cfg
            runs[f"ch6/crossfit/n{n}/s{s}"] = {**cfg, "cross_fit": {"folds": folds}}
    return runs


def crossfit_default_runs():
    """:func:`crossfit_runs` at the scale of :data:`CROSSFIT`, the same in the default and full profiles."""
    c = CROSSFIT
    return crossfit_runs(c["sizes"], range(c["seeds"]), c["n_test"], folds=c["folds"],
                         val_fraction=c["val_fraction"])

