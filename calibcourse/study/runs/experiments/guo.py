"""The runs of the course's first studies: the digits MLP, Guo et al. (2017)'s causes, the binary study, the tutorial.

Each function returns ``{name: config}`` for one study at a profile's scale; the registry
(:func:`calibcourse.study.runs.experiments.experiments`) puts them together.
"""
from __future__ import annotations

#: the module's configs; its run builders (``..._runs``) are the registry's, not an API
__all__ = ["SEEDS", "N_TEST_MNIST1D"]

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


def digits_mlp_runs(epochs, n_train=None):
    """The first network's run (``ch1/mlp``): an MLP 2x512 on the 5000 MNIST digits, 55/5/40 %
    train/validation/test, so that its test set (2000 digits) is the one the logistic regression
    beside it is scored on too."""
    data = {"name": "mnist5k", "split": [0.55, 0.05, 0.4]}
    if n_train:
        data["n_train"] = n_train
    return {"ch1/mlp": {"data": data, "model": {"name": "mlp", "depth": 2, "width": 512},
                        "epochs": epochs, "lr": 1e-3, "batch_size": 128, "seed": 0}}


def causes_runs(epochs, seeds, depths, widths, wds, long_epochs, image_epochs, n_train=None, n_test=None):
    """Guo et al. (2017)'s causes of miscalibration (``ch2/...``): sweeps of depth, width, batch norm and
    weight decay (an MLP on MNIST-1D, per seed), a long run past the validation NLL's minimum, and a small
    classic network against a large modern one."""
    runs = {}
    mlp = lambda **kw: _mnist1d_mlp(epochs=epochs, n_test=n_test, **kw)  # noqa: E731
    for s in seeds:
        # sweeps are named by level (1 = smallest), not by one profile's model: the depth and width
        # themselves are read from the configs (``sweep_levels``, :func:`calibcourse.study.runs.labels.sweep_value`)
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


def nine1d_runs(epochs, n_test):
    """The binary study's decisive "9 vs not-9" runs (``ch3/nine1d/...``): a 1-D CNN on MNIST-1D, enough
    test errors (hundreds) to tell the binary calibration methods apart; the same in every profile but ``ci``."""
    data = {"name": "mnist1d", "view": {"one_vs_rest": 9}, "mnist1d_test": n_test}
    return {"ch3/nine1d/cnn": {"data": data, "model": {"name": "cnn1d"}, "epochs": epochs, "seed": 0},
            "ch3/nine1d/sigmoid_overfit": {"data": data, "model": {"name": "cnn1d"}, "loss": "bce",
                                           "epochs": epochs, "seed": 0}}


def binary_runs(epochs, overfit_epochs, n_train=None, backbone_epochs=5, head_epochs=5):
    """The binary study on the 5000 MNIST digits (``ch3/...``): "9 vs not-9" by a small and a large network
    and by an over-trained sigmoid network, and a head trained on frozen features ("4 vs 9")."""
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


def tutorial_recipe_runs(epochs, n_test=2000):
    """The temperature-scaling tutorial's recipe (``ch4/recipe``): an MLP on MNIST-1D."""
    # reference 004's recipe: 1000 calibration samples cut from the test set; the rest of a large
    # generated test set measures the effect (the tutorial measured it on 1000)
    return {"ch4/recipe": {"data": {"name": "mnist1d", "mnist1d_test": n_test},
                           "model": {"name": "mlp", "depth": 4, "width": 256, "batch_norm": False},
                           "epochs": epochs, "seed": 0}}

