"""The runs under distribution shift and out of distribution: LeNet-5's methods on rotated digits and letters."""
from __future__ import annotations

#: the module's configs; its run builders (``..._runs``) are the registry's, not an API
__all__ = ["SHIFT_DATA", "SHIFT_TESTS", "SHIFT_FOCAL_GAMMA", "MC_DROPOUT", "SHIFT_METHODS", "SHIFT_N_SEEDS",
           "LETTERS_OOD", "LETTERS_SEEDS"]

#: the shifted test sets: the first 300 test digits rotated by each angle (degrees), like
#: Ovadia et al. (2019)'s rotated MNIST (their angles go in 15-degree steps to 180; here to 90,
#: where LeNet-5's error is already above 80 %); 300 digits per angle keep the cache's budget. ``ood``:
#: 500 images of no digit (patches of scikit-learn's two sample photographs,
#: :func:`calibcourse.study.training.shift.ood_images`), stored as the split ``"ood"``
SHIFT_TESTS = {"kind": "rotate", "levels": [15, 30, 45, 60, 75, 90], "n": 300, "ood": 500}
#: focal loss with a fixed gamma (Mukhoti et al.'s FL-3, the fixed-gamma baseline of the meta-regularization paper)
SHIFT_FOCAL_GAMMA = 3.0
#: MC dropout: the probability of each dropout layer of LeNet-5 (before each fully connected layer)
#: and the forward passes averaged at prediction time (our choices, fixed before any run)
MC_DROPOUT = {"p": 0.25, "passes": 20}
#: the methods under shift (run names ``ch6/<method>/s<seed>``): what each adds to the backbone;
#: CE + TS is post-hoc on the CE runs (fitted on their validation split), no run of its own. Member 0
#: of ``ch6/ensemble/s<k>`` is the network of ``ch6/CE/s<k>``
#: (:func:`calibcourse.study.training.predictive.member_seed`)
SHIFT_METHODS = {
    "CE": {},
    "ensemble": {"ensemble": 5},
    "dropout": {"model": {"name": "lenet5", "dropout": MC_DROPOUT["p"]}, "mc_dropout": MC_DROPOUT["passes"]},
    "focal": {"loss": "focal", "loss_kwargs": {"gamma": SHIFT_FOCAL_GAMMA}},
}
SHIFT_N_SEEDS = 5


def shift_runs(data, epochs, seeds, shift=None, ensemble=None, passes=None, prefix="ch6", ood=None,
              **base_extra):
    """The runs under shift: every method of :data:`SHIFT_METHODS` on LeNet-5, paired by seed, named
    ``<prefix>/<method>/s<seed>``; ``shift`` (the rotated test sets) and ``ood`` (an out-of-distribution
    set, :func:`calibcourse.study.training.shift.check_ood`) where given."""
    runs = {}
    scored = {**({"shift": shift} if shift is not None else {}), **({"ood": ood} if ood is not None else {})}
    for method, extra in SHIFT_METHODS.items():
        extra = {**extra, **({"ensemble": ensemble} if ensemble and "ensemble" in extra else {}),
                 **({"mc_dropout": passes} if passes and "mc_dropout" in extra else {})}
        for s in seeds:
            runs[f"{prefix}/{method}/s{s}"] = {"data": data, "model": {"name": "lenet5"}, "epochs": epochs,
                                               "lr": 1e-3, "batch_size": 128, **scored, **base_extra, **extra,
                                               "seed": s}
    return runs


#: the out-of-distribution runs (``ch6/letters/<method>/s<seed>``): the methods of
#: :data:`SHIFT_METHODS` with the recipe of the runs under shift, scored on the clean test digits and on
#: 500 letters A-J drawn like MNIST digits (:func:`calibcourse.study.training.shift.ood_letters`, the
#: Not-MNIST idea) instead of the photographs' patches, which brightness alone told from the digits.
#: No rotated digits (the runs under shift have them), so 10 seeds fit the cache (about 80 KiB a run)
LETTERS_OOD = {"kind": "letters", "n": 500}
LETTERS_SEEDS = 10


#: the runs' data in the default profile: the 5000 MNIST digits, 70/10/20 % train/validation/test
SHIFT_DATA = {"name": "mnist5k", "split": [0.7, 0.1, 0.2]}

