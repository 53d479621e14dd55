"""The runs of each chapter, by profile: the configs the registry
(:func:`calibcourse.study.runs.experiments.experiments`)
puts together."""
from __future__ import annotations

from calibcourse.study.analysis.reference import REF_BACKBONE

#: the chapters' constants, each read as ``experiments.<NAME>``
__all__ = ["CH5_ABLATIONS", "CH5_ABLATION_SEEDS", "CH5_BACKBONE", "CH5_CHOICE_PART", "CH5_CHOSEN", "CH5_DIAGNOSIS",
           "CH5_FIXED_GAMMA", "CH5_GRIDS", "CH5_MAIN_METHODS", "CH5_MAX_VAL_ERROR_GAP", "CH5_META", "CH5_META_GRID",
           "CH5_META_SAFE", "CH5_META_VAL", "CH5_METHODS", "CH5_N_SEEDS", "CH5_PAPER", "CH5_SGD", "CH5_SGD_ARM",
           "CH5_SGD_GRID", "CH5_SGD_LR", "CH5_SGD_N_SEEDS", "CH6_CROSSFIT", "CH6_DATA", "CH6_DROPOUT",
           "CH6_FOCAL_GAMMA", "CH6_METHODS", "CH6_N_SEEDS", "CH6_SHIFT", "DENSENET_WEIGHTS", "HE_CIFAR",
           "META_CIFAR", "N_TEST_MNIST1D", "SEEDS"]

SEEDS = (0, 1, 2)


#: test sequences of MNIST-1D behind the default profile's verdicts (generated, so any size is
#: free; 10,000 lets a paired test resolve differences of a fraction of an ECE point)
N_TEST_MNIST1D = 10_000


def _mnist1d_mlp(depth=4, width=256, epochs=60, seed=0, n_test=None, **extra):
    data = {"name": "mnist1d"} if n_test is None else {"name": "mnist1d", "mnist1d_test": n_test}
    cfg = {"data": data,
           "model": {"name": "mlp", "depth": depth, "width": width, "batch_norm": False},
           "epochs": epochs, "lr": 1e-3, "batch_size": 128, "seed": seed}
    for k, v in extra.items():
        if k == "batch_norm":
            cfg["model"]["batch_norm"] = v
        else:
            cfg[k] = v
    return cfg


def _chapter1(epochs, n_train=None):
    """Chapter 1's MLP 2x512 on the 5000 MNIST digits: 55/5/40 % train/validation/test, so the
    test set (2000 digits) is the one chapter 1's logistic regression is scored on too."""
    data = {"name": "mnist5k", "split": [0.55, 0.05, 0.4]}
    if n_train:
        data["n_train"] = n_train
    return {"ch1/mlp": {"data": data, "model": {"name": "mlp", "depth": 2, "width": 512},
                        "epochs": epochs, "lr": 1e-3, "batch_size": 128, "seed": 0}}


def _chapter2(epochs, seeds, depths, widths, wds, long_epochs, image_epochs, n_train=None, n_test=None):
    runs = {}
    mlp = lambda **kw: _mnist1d_mlp(epochs=epochs, n_test=n_test, **kw)  # noqa: E731
    for s in seeds:
        # sweeps are named by level (1 = smallest), not by one profile's model: the depth and width
        # themselves are read from the configs (:func:`sweep_levels`, :func:`calibcourse.study.runs.labels.sweep_value`)
        for i, d in enumerate(depths, start=1):
            runs[f"ch2/depth/level{i}/s{s}"] = mlp(depth=d, seed=s)
        for i, w in enumerate(widths, start=1):
            runs[f"ch2/width/level{i}/s{s}"] = mlp(depth=2, width=w, seed=s)
        for bn in (False, True):
            runs[f"ch2/batchnorm/{'bn' if bn else 'plain'}/s{s}"] = mlp(depth=4, seed=s, batch_norm=bn)
        for wd in wds:
            runs[f"ch2/weight_decay/{wd:g}/s{s}"] = mlp(depth=4, seed=s, weight_decay=wd)
    # the outputs of the epoch with the lowest validation NLL are kept beside the last epoch's
    runs["ch2/nll_overfit"] = {**_mnist1d_mlp(depth=4, epochs=long_epochs, seed=0, n_test=n_test),
                               "keep_best": "val_nll"}
    img = {"name": "mnist5k", "n_train": n_train}
    # Guo et al.'s Fig. 1: a small classic network against a large modern one (the models: labels)
    runs["ch2/model/small"] = {"data": img, "model": {"name": "lenet5"}, "epochs": image_epochs, "seed": 0}
    runs["ch2/model/large"] = {"data": img, "model": {"name": "cifar_resnet", "depth": 20},
                               "epochs": image_epochs, "seed": 0}
    return runs


def _nine1d(epochs, n_test):
    """Chapter 3's decisive "9 vs not-9" study: a 1-D CNN on MNIST-1D, enough test errors (hundreds)
    to tell the binary calibration methods apart; the same in every profile but ``ci``."""
    data = {"name": "mnist1d", "view": {"one_vs_rest": 9}, "mnist1d_test": n_test}
    return {"ch3/nine1d/cnn": {"data": data, "model": {"name": "cnn1d"}, "epochs": epochs, "seed": 0},
            "ch3/nine1d/sigmoid_overfit": {"data": data, "model": {"name": "cnn1d"}, "loss": "bce",
                                           "epochs": epochs, "seed": 0}}


def _chapter3(epochs, overfit_epochs, n_train=None, backbone_epochs=5, head_epochs=5):
    nine = {"name": "mnist5k", "view": {"one_vs_rest": 9}, "n_train": n_train}
    backbone = {"data": {"name": "mnist5k", "n_train": n_train}, "model": {"name": "lenet5"},
                "epochs": backbone_epochs, "seed": 0}
    return {
        # reference 003's second study: frozen pretrained features, an MLP head with LogSoftmax
        # trained by NLL; here the backbone is LeNet-5 pre-trained on all ten digits and the head
        # learns "4 vs 9" briefly at a small learning rate
        "ch3/frozen_head": {"data": {"name": "mnist5k", "view": {"two_class": [4, 9]}},
                            "model": {"name": "frozen_features", "backbone": backbone, "hidden": 500},
                            "loss": "nll", "epochs": head_epochs, "lr": 1e-4, "seed": 0},
        "ch3/nine/small": {"data": nine, "model": {"name": "lenet5"}, "epochs": epochs, "seed": 0},
        "ch3/nine/large": {"data": nine, "model": {"name": "cifar_resnet", "depth": 20},
                           "epochs": epochs, "seed": 0},
        "ch3/nine/small_sigmoid_overfit": {"data": nine, "model": {"name": "lenet5"}, "loss": "bce",
                                           "epochs": overfit_epochs, "seed": 0},
    }


def _chapter4(epochs, n_test=2000):
    # reference 004's recipe: 1000 calibration samples cut from the test set; the rest of a large
    # generated test set measures the effect (the tutorial measured it on 1000)
    return {"ch4/recipe": {"data": {"name": "mnist1d", "mnist1d_test": n_test},
                           "model": {"name": "mlp", "depth": 4, "width": 256, "batch_norm": False},
                           "epochs": epochs, "seed": 0}}


#: chapter 5's backbone in the default profile: a 1-D CNN on MNIST-1D generated at 7,500 training
#: sequences (6,000 to train, 1,500 to validate) and 5,000 test sequences (10 paired seeds of every
#: main method fit the cache's budget; the seeds, not the test set, decide its comparisons), trained by Adam at a
#: constant learning rate until it fits the training set: about 8 % test error and clearly
#: overconfident under cross-entropy (measured before the chapter was built on it)
CH5_BACKBONE = {"data": {"name": "mnist1d", "mnist1d_train": 7500, "mnist1d_test": 5000},
                "model": {"name": "cnn1d", "channels": 32}, "optimizer": "adam", "lr": 2e-3,
                "batch_size": 128, "epochs": 30}

#: the gamma-Net as the paper states it: SECE outer loss, look-ahead with the real step's
#: update rule (Adam), no cap on gamma and no clipping of the meta-gradient
CH5_META = {"outer": "sece", "heads": 8, "tau": 1.0, "meta_lr": 1e-3, "val_batch": 256, "bandwidth": 0.05,
            "lookahead": "same"}

#: the baselines' weight grids (seed 0); each baseline's weight is the one with the lowest
#: validation ECE among the grid's values whose validation error is within
#: CH5_MAX_VAL_ERROR_GAP of CE's (:func:`ch5_choice` recomputes the choice from the runs)
CH5_GRIDS = {
    "Focal": ("gamma", (1.0, 2.0, 3.0), lambda v: {"loss": "focal", "loss_kwargs": {"gamma": v}}),
    "Label smoothing": ("epsilon", (0.01, 0.05, 0.1),
                        lambda v: {"loss": "label_smoothing", "loss_kwargs": {"smoothing": v}}),
    "Mixup": ("alpha", (0.1, 0.2, 0.4), lambda v: {"mixup_alpha": v}),
    "MMCE": ("weight", (1.0, 4.0, 16.0), lambda v: {"loss": "ce_mmce", "loss_kwargs": {"weight": v}}),
    "CE-DECE": ("weight", (0.1, 0.5, 1.0), lambda v: {"loss": "ce_dece", "loss_kwargs": {"weight": v}}),
}
CH5_MAX_VAL_ERROR_GAP = 0.02
#: the weights chosen on the post-hoc half of validation in the default profile (:func:`ch5_choice`
#: on the committed grid runs): the final runs use them, the chapter says whether they are still the
#: grid's choice, and tests/test_experiments.py checks that they are on the committed cache. The
#: choice rests on one seed of each grid value
CH5_CHOSEN = {"Focal": 1.0, "Label smoothing": 0.01, "Mixup": 0.1, "MMCE": 1.0, "CE-DECE": 0.5}


def _grid_label(family: str, value: float) -> str:
    return f"{family} ({CH5_GRIDS[family][0]} {value:g})"


#: the fraction of the validation split, from its start, that the meta-learner sees (``meta_val``):
#: the rest is left to temperature scaling and to the baselines' grids, so that no post-hoc
#: calibration or baseline choice uses data the gamma-Net was trained on
CH5_META_VAL = 0.5

#: the paper's set-up of the gamma-Net as this study first ran it (unbounded, SECE alone, whole-network
#: look-ahead, all of the validation split): the diagnosis's reference arm, ``ch5/diagnosis/paper``
CH5_PAPER = {"loss": "focal", "meta": CH5_META}

#: the gamma-Net with meta-calibration's safeguards (Bohdal et al. 2021), fixed before any of its runs:
#: gamma bounded by 5 (``gamma_bound``, no first-batch rescale), meta-loss cross-entropy plus the
#: calibration loss (weight 1), the look-ahead on the last layer only, and the first half of the
#: validation split for the meta-learner (:data:`CH5_META_VAL`)
CH5_META_SAFE = {**CH5_META, "gamma_bound": 5.0, "meta_loss": "ce+cal", "cal_weight": 1.0,
                 "lookahead_params": "head", "meta_val": CH5_META_VAL}

#: the gamma-Net's tuning budget: like each baseline, one 3-value grid (seed 0), here over the meta
#: learning rate; FLgamma-SECE and FLgamma-DECE each run it
CH5_META_GRID = ("meta lr", (1e-3, 1e-4, 1e-5))


def _meta_safe(outer: str, meta_lr: float) -> dict:
    return {"loss": "focal", "meta": {**CH5_META_SAFE, "outer": outer, "meta_lr": meta_lr}}


CH5_GRIDS["FLgamma-SECE"] = (CH5_META_GRID[0], CH5_META_GRID[1], lambda v: _meta_safe("sece", v))
CH5_GRIDS["FLgamma-DECE"] = (CH5_META_GRID[0], CH5_META_GRID[1], lambda v: _meta_safe("dece", v))
#: the meta learning rate of the reported FLgamma-SECE and FLgamma-DECE: the rule's choice on the
#: grid's default-profile runs (the lowest meta-validation ECE among the rates whose meta-validation
#: error is within CH5_MAX_VAL_ERROR_GAP of CE's); :func:`ch5_choice` recomputes it from the runs
CH5_CHOSEN.update({"FLgamma-SECE": 1e-5, "FLgamma-DECE": 1e-5})
#: where each family's choice is measured: the baselines on the second part of the validation split
#: (the part post-hoc calibration uses too), the gamma-Nets on their own meta-validation part
CH5_CHOICE_PART = {family: "meta" if family.startswith("FLgamma") else "posthoc" for family in CH5_GRIDS}


#: chapter 5: the train-time methods compared by Wang et al. (2023), same backbone, budget and seeds;
#: FLgamma-SECE and FLgamma-DECE are the gamma-Net with the safeguards at the grid's chosen meta lr
CH5_METHODS = {
    "CE": {},
    **{_grid_label(f, CH5_CHOSEN[f]): CH5_GRIDS[f][2](CH5_CHOSEN[f]) for f in ("Focal",)},
    "FLSD-53": {"loss": "flsd53"},
    **{_grid_label(f, CH5_CHOSEN[f]): CH5_GRIDS[f][2](CH5_CHOSEN[f])
       for f in ("Label smoothing", "Mixup", "MMCE", "CE-DECE")},
    "FLgamma-DECE": CH5_GRIDS["FLgamma-DECE"][2](CH5_CHOSEN["FLgamma-DECE"]),
    "FLgamma-SECE": CH5_GRIDS["FLgamma-SECE"][2](CH5_CHOSEN["FLgamma-SECE"]),
}
#: seeds per method in the default and full profiles (ci: seed 0): 10 for the methods the chapter's
#: verdicts compare (CE + TS is post-hoc on CE's runs; CE-DECE for the MCE claim of Table 1), 5 for
#: the other baselines; CE and FLgamma-SECE 15, because the paper's cost claim (error within 1 point
#: of CE's) was decided on 10 seeds with its interval's upper end 0.05 points from the margin, and
#: retrained on another CPU it was inconclusive
CH5_MAIN_METHODS = ("CE", _grid_label("Focal", CH5_CHOSEN["Focal"]), "FLSD-53", "FLgamma-SECE", "FLgamma-DECE",
                    _grid_label("CE-DECE", CH5_CHOSEN["CE-DECE"]))
CH5_N_SEEDS = {m: 15 if m in ("CE", "FLgamma-SECE") else 10 if m in CH5_MAIN_METHODS else 5 for m in CH5_METHODS}

#: ablations of the paper's set-up (seed 0 each): name -> the config's changes against :data:`CH5_PAPER`
#: (the fixed gamma is the mean gamma that set-up learned over the epochs of seed 0, rounded,
#: checked by the chapter)
CH5_FIXED_GAMMA = 2.0
CH5_ABLATIONS = {
    "fixed gamma": {"loss": "focal", "loss_kwargs": {"gamma": CH5_FIXED_GAMMA}, "meta": None},
    "SGD look-ahead": {"meta": {**CH5_META, "lookahead": "sgd"}},
    "cap 20, clip 1": {"meta": {**CH5_META, "gamma_max": 20.0, "grad_clip": 1.0}},
}
#: the seeds of each ablation (seed 0 unless listed): the cap only acts where gamma grows past it
CH5_ABLATION_SEEDS = {"cap 20, clip 1": (0, 1, 2)}

#: the diagnosis of the paper's set-up: arm -> (the meta section's changes against
#: :data:`CH5_META`, number of seeds). ``null``: the loop runs with a zero outer gradient (the
#: gamma-Net keeps its initial output); ``permuted``: the outer loss on validation labels permuted
#: once by the seed; ``bounded``: gamma = 5 sigmoid(.) from gamma 1, no rescale; then one change each:
#: the meta learning rate, the meta-loss of meta-calibration (CE + SECE), the look-ahead on the last
#: layer. ``paper`` is the set-up itself (the runs this study first reported as FLgamma-SECE).
#: ``bounded logged`` and ``bounded reset`` test why the bounded gamma collapses (5 seeds each,
#: registered with their claims and predictions before their runs,
#: :data:`calibcourse.study.analysis.metareg.REGISTERED`): the bounded arm with the hypergradient logged,
#: and the same with the meta optimizer's Adam state reset at every epoch (``reset_moments``)
CH5_DIAGNOSIS = {
    "paper": ({}, 3),
    "null": ({"control": "null"}, 3),
    "permuted": ({"control": "permuted"}, 3),
    "bounded": ({"gamma_bound": 5.0}, 3),
    "bounded null": ({"gamma_bound": 5.0, "control": "null"}, 3),
    "meta lr 1e-4": ({"meta_lr": 1e-4}, 1),
    "meta lr 1e-5": ({"meta_lr": 1e-5}, 1),
    "CE + SECE": ({"meta_loss": "ce+cal", "cal_weight": 1.0}, 1),
    "last-layer look-ahead": ({"lookahead_params": "head"}, 1),
    "bounded logged": ({"gamma_bound": 5.0, "log_hypergradient": True}, 5),
    "bounded reset": ({"gamma_bound": 5.0, "log_hypergradient": True, "reset_moments": "epoch"}, 5),
}


#: the diagnosis's backbone-optimizer arm: the papers' recipe for the backbone (Mukhoti et al.
#: 2020, Bohdal et al. 2021, Wang and Golebiowski 2023; :data:`META_CIFAR`): SGD with momentum 0.9 (not
#: Nesterov), weight decay 5e-4 and the step schedule (the rate divided by 10 at 50 % and 75 % of the
#: epochs), the default backbone's data, epochs and batch otherwise (:data:`CH5_BACKBONE`); the gamma-Net's
#: own meta optimizer is unchanged
CH5_SGD = {"optimizer": "sgd", "momentum": 0.9, "nesterov": False, "weight_decay": 5e-4, "schedule": "step"}
#: its learning rate, by a rule fixed before any of its runs: CE under :data:`CH5_SGD` at each rate of
#: this grid (seed 0, runs ``ch5/diagnosis/SGD CE lr <rate>/s0``), the rate with the lowest validation
#: error on the post-hoc half of the validation split (the half the baselines' grids choose on,
#: :func:`ch5_val_part`); a tie goes to the lower rate. :func:`ch5_sgd_choice` recomputes it
CH5_SGD_GRID = ("lr", (0.01, 0.03, 0.1))
#: the rule's choice on the default profile's grid runs (validation error 31.2, 12.3 and 3.7 % on the
#: post-hoc half at 0.01, 0.03 and 0.1); :func:`ch5_sgd_choice` recomputes it, tests/test_experiments.py
#: checks it on the committed cache. The full profile's backbone already trains with the papers' recipe
#: at their rate (:data:`META_CIFAR`), so there the grid is that rate alone and the arm's runs are the main runs
CH5_SGD_LR = 0.1
#: the arm itself, 5 seeds paired with each other and with the main runs (``ch5/diagnosis/<arm>/s<k>``):
#: the reported CE and FLgamma-SECE (:data:`CH5_METHODS`) with the backbone of :data:`CH5_SGD` at
#: :data:`CH5_SGD_LR`. The prediction, written before its runs: if the Adam backbone (a constant rate,
#: no weight decay) is why FLgamma-SECE does not calibrate better than CE + TS here, then with the
#: papers' SGD backbone FLgamma-SECE's test ECE minus CE + TS's (temperature fitted on each SGD CE
#: seed's post-hoc half) is below 0 over the 5 paired seeds (the interval of
#: :func:`calibcourse.calibration.stats.paired_seeds_difference` below 0: "held"); its error beside it
CH5_SGD_ARM = {"SGD CE": "CE", "SGD FLgamma-SECE": "FLgamma-SECE"}
CH5_SGD_N_SEEDS = 5


#: chapter 6's cross-fitting: chapter 5's reference backbone (the 1-D CNN with the meta-calibration code's
#: SGD recipe, :data:`calibcourse.study.analysis.reference.REF_BACKBONE`) at pools where its error is useful
#: (at most 10 %: measured before the runs, seed 0: 8.1 % at 2,500, 3.4 % at 5,000), its own test set
#: of 1,000 sequences, 10 seeds
CH6_CROSSFIT = {"sizes": (2500, 5000), "seeds": 10, "n_test": 1000, "folds": 5, "val_fraction": 0.2}


def _chapter6_crossfit(sizes, seeds, n_test, epochs=None, folds=5, val_fraction=0.2):
    """Chapter 6's calibration without a held-out set: at each pool size ``n`` and seed, a held-out run
    (train on 1 - ``val_fraction`` of the pool, temperature from the rest: ``ch6/heldout/n<n>/s<seed>``)
    and a cross-fitted run of the same pool (``folds`` fold networks and a final one on the whole pool:
    ``ch6/crossfit/n<n>/s<seed>``, :mod:`calibcourse.study.training.crossfit`), every network with the recipe of
    :data:`calibcourse.study.analysis.reference.REF_BACKBONE` (``epochs`` to shorten it). The seed also draws the
    held-out split and the folds."""
    runs = {}
    for n in sizes:
        for s in seeds:
            d = {**REF_BACKBONE["data"], "mnist1d_train": n, "mnist1d_test": n_test, "val_fraction": val_fraction,
                 "seed": s}
            cfg = {**REF_BACKBONE, "data": d, **({"epochs": epochs} if epochs else {}), "seed": s}
            runs[f"ch6/heldout/n{n}/s{s}"] = cfg
            runs[f"ch6/crossfit/n{n}/s{s}"] = {**cfg, "cross_fit": {"folds": folds}}
    return runs


def _ch6_crossfit_default():
    c = CH6_CROSSFIT
    return _chapter6_crossfit(c["sizes"], range(c["seeds"]), c["n_test"], folds=c["folds"],
                              val_fraction=c["val_fraction"])


def _chapter5(ci=False, base=None, sgd_grid=CH5_SGD_GRID[1], sgd_lr=CH5_SGD_LR, **base_changes):
    """Chapter 5's runs; ``ci``: seed 0 of everything; ``sgd_grid`` and ``sgd_lr``: the learning rates
    of the SGD-backbone arm's grid and of the arm itself (:data:`CH5_SGD_ARM`)."""
    base = {**CH5_BACKBONE, **(base or {}), **base_changes}
    seeds = lambda n: (0,) if ci else tuple(range(n))  # noqa: E731
    runs = {}
    for method, extra in CH5_METHODS.items():
        for s in seeds(CH5_N_SEEDS[method]):
            runs[f"ch5/{method}/s{s}"] = {**base, **extra, "seed": s}
    for family, (_, values, make) in CH5_GRIDS.items():
        for v in values:
            runs[f"ch5/grid/{_grid_label(family, v)}/s0"] = {**base, **make(v), "seed": 0}
    for name, change in CH5_ABLATIONS.items():
        for s in [s for s in CH5_ABLATION_SEEDS.get(name, (0,)) if not ci or s == 0]:
            cfg = {**base, **CH5_PAPER, **change, "seed": s}
            runs[f"ch5/ablation/{name}/s{s}"] = {k: v for k, v in cfg.items() if v is not None}
    for arm, (change, n) in CH5_DIAGNOSIS.items():
        for s in seeds(n):
            runs[f"ch5/diagnosis/{arm}/s{s}"] = {**base, **CH5_PAPER, "meta": {**CH5_META, **change}, "seed": s}
    # the chosen rate's seed 0 is the same config as the arm's SGD CE seed 0 (one cache entry)
    for lr in sgd_grid:
        runs[f"ch5/diagnosis/SGD CE lr {lr:g}/s0"] = {**base, **CH5_SGD, "lr": lr, "seed": 0}
    for arm, method in CH5_SGD_ARM.items():
        for s in seeds(CH5_SGD_N_SEEDS):
            runs[f"ch5/diagnosis/{arm}/s{s}"] = {**base, **CH5_METHODS[method], **CH5_SGD, "lr": sgd_lr, "seed": s}
    # the SGD arm's FLgamma-SECE with its gamma-Net frozen (meta lr 0): the control its credit is tested against
    for s in seeds(CH5_SGD_N_SEEDS):
        cfg = {**base, **CH5_METHODS["FLgamma-SECE"], **CH5_SGD, "lr": sgd_lr, "seed": s}
        runs[f"ch5/diagnosis/SGD FLgamma-SECE frozen/s{s}"] = {**cfg, "meta": {**cfg["meta"], "meta_lr": 0.0}}
    return runs


#: chapter 6's shifted test sets: the first 300 test digits rotated by each angle (degrees), like
#: Ovadia et al. (2019)'s rotated MNIST (their angles go in 15-degree steps to 180; here to 90,
#: where LeNet-5's error is already above 80 %); 300 digits per angle keep the cache's budget. ``ood``:
#: 500 images of no digit (patches of scikit-learn's two sample photographs,
#: :func:`calibcourse.study.training.shift.ood_images`), stored as the split ``"ood"``
CH6_SHIFT = {"kind": "rotate", "levels": [15, 30, 45, 60, 75, 90], "n": 300, "ood": 500}
#: focal loss with a fixed gamma (Mukhoti et al.'s FL-3, the fixed-gamma baseline of chapter 5's paper)
CH6_FOCAL_GAMMA = 3.0
#: MC dropout: the probability of each dropout layer of LeNet-5 (before each fully connected layer)
#: and the forward passes averaged at prediction time (our choices, fixed before any run)
CH6_DROPOUT = {"p": 0.25, "passes": 20}
#: chapter 6's methods under shift (run names ``ch6/<method>/s<seed>``): what each adds to the backbone;
#: CE + TS is post-hoc on the CE runs (fitted on their validation split), no run of its own. Member 0
#: of ``ch6/ensemble/s<k>`` is the network of ``ch6/CE/s<k>``
#: (:func:`calibcourse.study.training.predictive.member_seed`)
CH6_METHODS = {
    "CE": {},
    "ensemble": {"ensemble": 5},
    "dropout": {"model": {"name": "lenet5", "dropout": CH6_DROPOUT["p"]}, "mc_dropout": CH6_DROPOUT["passes"]},
    "focal": {"loss": "focal", "loss_kwargs": {"gamma": CH6_FOCAL_GAMMA}},
}
CH6_N_SEEDS = 5


def _chapter6_shift(data, epochs, seeds, shift=None, ensemble=None, passes=None, prefix="ch6", ood=None,
                    **base_extra):
    """Chapter 6's runs under shift: every method of :data:`CH6_METHODS` on LeNet-5, paired by seed, named
    ``<prefix>/<method>/s<seed>``; ``shift`` (the rotated test sets) and ``ood`` (an out-of-distribution
    set, :func:`calibcourse.study.training.shift.check_ood`) where given."""
    runs = {}
    scored = {**({"shift": shift} if shift is not None else {}), **({"ood": ood} if ood is not None else {})}
    for method, extra in CH6_METHODS.items():
        extra = {**extra, **({"ensemble": ensemble} if ensemble and "ensemble" in extra else {}),
                 **({"mc_dropout": passes} if passes and "mc_dropout" in extra else {})}
        for s in seeds:
            runs[f"{prefix}/{method}/s{s}"] = {"data": data, "model": {"name": "lenet5"}, "epochs": epochs,
                                               "lr": 1e-3, "batch_size": 128, **scored, **base_extra, **extra,
                                               "seed": s}
    return runs


#: chapter 6's out-of-distribution runs (``ch6/letters/<method>/s<seed>``): the methods of
#: :data:`CH6_METHODS` with the recipe of the runs under shift, scored on the clean test digits and on
#: 500 letters A-J drawn like MNIST digits (:func:`calibcourse.study.training.shift.ood_letters`, the
#: Not-MNIST idea) instead of the photographs' patches, which brightness alone told from the digits.
#: No rotated digits (the runs under shift have them), so 10 seeds fit the cache (about 80 KiB a run)
CH6_LETTERS = {"kind": "letters", "n": 500}
CH6_LETTERS_SEEDS = 10


#: chapter 6's data in the default profile: the 5000 MNIST digits, 70/10/20 % train/validation/test
CH6_DATA = {"name": "mnist5k", "split": [0.7, 0.1, 0.2]}


HE_CIFAR = {"optimizer": "sgd", "lr": 0.1, "momentum": 0.9, "nesterov": False, "weight_decay": 1e-4,
            "batch_size": 128, "epochs": 164, "schedule": "step",
            "augment": {"crop_padding": 4, "hflip": True}, "amp": True}
#: Wang and Golebiowski (2023, arXiv 2303.15057) train with Bohdal et al. (2021)'s defaults on a ResNet-18;
#: those follow Mukhoti et al. (2020): SGD 0.1, momentum 0.9, weight decay 5e-4, batch 128, 350 epochs,
#: the rate divided by 10 at epochs 150 and 250, crops and flips. Read from the papers' setup
#: sections, not from their code; Nesterov off (not stated: our choice)
META_CIFAR = {"optimizer": "sgd", "lr": 0.1, "momentum": 0.9, "nesterov": False, "weight_decay": 5e-4,
              "batch_size": 128, "epochs": 350, "schedule": "step", "milestones": [150, 250],
              "augment": {"crop_padding": 4, "hflip": True}, "amp": True}
#: the pretrained backbone of chapter 3's frozen-feature head (reference 003): torchvision's ImageNet
#: DenseNet-121, read from the ``weights`` folder of ``$CALIBCOURSE_DATA`` (default ``~/data/weights``),
#: never downloaded
DENSENET_WEIGHTS = "densenet121-a639ec97.pth"


def _full():
    """The papers' scale (needs the data sets under ``$CALIBCOURSE_DATA`` or ``~/data``, and a GPU).

    Chapter 2 repeats Guo et al.'s Fig. 1-3 on CIFAR-100 with He et al.'s recipe (:data:`HE_CIFAR`):
    depth (ResNet-20/32/56/110), width (ResNet-14 at 1, 2, 4, 8 times 16-32-64 filters; Guo et al.
    vary the filters of a ResNet-14), batch norm (ResNet-110 with and without; Guo et al. use a
    6-layer ConvNet, ours keeps one architecture; without BN at learning rate 0.01, our choice, since
    a plain ResNet-110 diverges at 0.1) and weight decay (ResNet-110; 0 to 1e-2), a 500-epoch
    ResNet-110 (Fig. 3: the rate divided at epochs 250 and 375) and LeNet-5 against ResNet-110
    (Fig. 1; LeNet-5 with the same schedule at learning rate 0.01, our choice). Chapter 3: full
    MNIST "9 vs not-9" with LeNet-5 and ResNet-18 (Adam 1e-3, 20 and 40 epochs: reference 003's
    tutorial does not state a schedule, our choice) and the frozen DenseNet-121 on CIFAR-10 cat vs
    bird. Chapter 4: reference 004's ResNet-18 on CIFAR-100, trained here with :data:`HE_CIFAR`
    (the tutorial loads pretrained weights). Chapter 5: ResNet-18 on CIFAR-10 with
    :data:`META_CIFAR`, every method of :data:`CH5_METHODS` on it (the SGD-backbone arm,
    :data:`CH5_SGD_ARM`, is then the main runs under its own names: that recipe is already the papers').
    Chapter 6: LeNet-5 on MNIST
    under rotation, every method of :data:`CH6_METHODS`, the 10,000 test digits at every angle.
    """
    c100, c10 = {"name": "cifar100", "val_fraction": 0.1}, {"name": "cifar10", "val_fraction": 0.1}

    def he(model, data=c100, seed=0, **extra):
        return {"data": data, "model": model, "seed": seed, **HE_CIFAR, **extra}

    def resnet(depth=110, width=1.0, bn=True, **extra):
        model = {"name": "cifar_resnet", "depth": depth, "width": width, "batch_norm": bn}
        # He et al. warm ResNet-110 up at 0.01 for about 400 iterations (one epoch here) before 0.1
        warm = {"warmup": {"epochs": 1, "lr": 0.01}} if depth >= 110 and "lr" not in extra else {}
        return he(model, **warm, **extra)

    runs = {}
    for s in SEEDS:
        for i, d in enumerate((20, 32, 56, 110), start=1):
            runs[f"ch2/depth/level{i}/s{s}"] = resnet(depth=d, seed=s)
        for i, w in enumerate((1, 2, 4, 8), start=1):
            runs[f"ch2/width/level{i}/s{s}"] = resnet(depth=14, width=w, seed=s)
        for bn in (False, True):
            runs[f"ch2/batchnorm/{'bn' if bn else 'plain'}/s{s}"] = resnet(
                seed=s, bn=bn, **({} if bn else {"lr": 0.01})
            )
        for wd in (0.0, 1e-4, 1e-3, 1e-2):
            runs[f"ch2/weight_decay/{wd:g}/s{s}"] = resnet(seed=s, weight_decay=wd)
    runs["ch2/nll_overfit"] = {**resnet(epochs=500), "keep_best": "val_nll"}
    runs["ch2/model/small"] = he({"name": "lenet5"}, lr=0.01)
    runs["ch2/model/large"] = resnet()
    full_nine = {"name": "mnist", "view": {"one_vs_rest": 9}, "val_fraction": 0.1}
    runs["ch3/nine/small"] = {"data": full_nine, "model": {"name": "lenet5"}, "epochs": 20, "seed": 0}
    runs["ch3/nine/large"] = {"data": full_nine, "model": {"name": "resnet18"}, "epochs": 20, "seed": 0, "amp": True}
    runs["ch3/nine/small_sigmoid_overfit"] = {"data": full_nine, "model": {"name": "lenet5"}, "loss": "bce",
                                              "epochs": 40, "seed": 0}
    # reference 003 froze torchvision's ImageNet DenseNet-121 and trained an MLP head on cat vs bird
    backbone = {"pretrained": {"name": "densenet121", "weights": DENSENET_WEIGHTS, "num_classes": 2}}
    runs["ch3/frozen_head"] = {"data": {"name": "cifar10", "view": {"two_class": [3, 2]}, "val_fraction": 0.1},
                               "model": {"name": "frozen_features", "backbone": backbone, "hidden": 500},
                               "loss": "nll", "epochs": 5, "lr": 1e-4, "seed": 0}
    runs.update(_nine1d(epochs=100, n_test=N_TEST_MNIST1D))
    runs["ch4/recipe"] = he({"name": "resnet18"})
    # the SGD arm's grid as in every profile (the chapters read the same names): its 0.1 is the recipe's own
    runs.update(_chapter5(base={"data": c10, "model": {"name": "resnet18"}, **META_CIFAR},
                          sgd_lr=META_CIFAR["lr"]))
    # chapter 6's cross-fitting is about scarce labels: the default profile's pools, in every profile
    runs.update(_ch6_crossfit_default())
    # chapter 6: LeNet-5 on full MNIST, its 10,000 test digits rotated by every angle, and the letters
    mnist = {"name": "mnist", "val_fraction": 0.1}
    runs.update(_chapter6_shift(mnist, epochs=20, seeds=range(CH6_N_SEEDS), shift={**CH6_SHIFT, "n": 10_000}))
    runs.update(_chapter6_shift(mnist, epochs=20, seeds=range(CH6_LETTERS_SEEDS), prefix="ch6/letters",
                                ood={**CH6_LETTERS, "n": 10_000}))
    return runs
