"""Training: every network of the book is one run config trained by ``train`` (chapters 1-5).

One declarative run config -> one :class:`RunResult`::

    from calibcourse.study.train import train
    result = train({"data": {"name": "mnist1d"}, "model": {"name": "mlp", "depth": 4},
                    "epochs": 30, "seed": 0})
    result.history            # per epoch: train loss, test error, NLL and ECE, val NLL
    result.outputs            # val/test logits and labels of the final epoch

Runs on CUDA when present and on the CPU otherwise (``device="auto"``). The same
config and seed on the same machine give the same numbers. Results are cached
by :mod:`calibcourse.study.cache`.

Optional keys, absent from (and so not hashed in) configs that do not use them:
``augment`` (``{"crop_padding": 4, "hflip": True}``: He et al.'s random crops of padded
images and horizontal flips, drawn on the device), ``amp`` (``True``: mixed precision,
``torch.autocast`` + ``GradScaler``, on CUDA only; ignored on the CPU and by the
meta-learned step), ``milestones`` (the epochs where ``schedule="step"`` divides the
rate by 10; default 50 % and 75 % of ``epochs``), ``warmup`` (``{"epochs": 1, "lr":
0.01}``: that rate for the first epochs, then the config's), ``nesterov`` (default:
Nesterov momentum whenever ``momentum > 0``), ``mixup_alpha`` (train on mixup batches,
:class:`MixupStep`), ``meta`` (the meta-learned gamma-Net of chapter 5, :class:`MetaStep`) and
``keep_best`` (``"val_nll"``: keep the outputs of the epoch with the lowest validation NLL).
A run can checkpoint every few epochs and resume from the checkpoint with the same result as
an uninterrupted run (``train(config, checkpoint=path)``). ``CALIBCOURSE_SMOKE="E:B[:S]"`` caps every run at
``E`` epochs of ``B`` batches of ``S`` samples (the smoke run of the ``full`` profile; its
results are marked ``info["smoke"]`` and never stored in the committed cache).
"""
from __future__ import annotations

import copy
import json
import os
import random
import time
from dataclasses import dataclass, field

import numpy as np

from calibcourse.study.provenance import current, resolve_threads

__all__ = ["default_device", "predict_logits", "train", "RunResult", "make_model",
           "make_step", "Step", "PlainStep", "MixupStep", "MetaStep", "DEFAULT_CONFIG", "normalize_config",
           "load_data_splits", "LOSSES", "register_loss"]

DEFAULT_CONFIG = {
    "data": {"name": "mnist1d", "view": None, "split": [0.6, 0.2, 0.2], "val_fraction": 0.2,
             "n_train": None, "seed": 0},
    "model": {"name": "mlp"},
    "loss": "ce",
    "loss_kwargs": {},
    "optimizer": "adam",
    "lr": 1e-3,
    "momentum": 0.9,
    "weight_decay": 0.0,
    "schedule": "none",
    "epochs": 20,
    "batch_size": 128,
    "seed": 0,
    "device": "auto",
    "keep_epoch_logits": False,
}


#: keys a config's ``data`` section may have: the defaults', the size of generated MNIST-1D, and
#: where a full data set lies (``root``; prefer ``$CALIBCOURSE_DATA``: a root in the config is
#: part of its cache key) and whether to fetch it (``download``)
DATA_KEYS = {"name", "view", "split", "val_fraction", "n_train", "seed", "mnist1d_train", "mnist1d_test",
             "root", "download"}
#: keys a config may have that are not filled by default (so older configs keep their cache keys)
OPTIONAL_KEYS = {"meta", "mixup_alpha", "keep_best", "augment", "amp", "milestones", "nesterov", "warmup"}
#: optional keys dropped from the canonical config when they say "off" (``amp: False``,
#: ``augment: None``, ``milestones: None``, ``mixup_alpha: None``, ``meta: {}``): a config that does
#: not use them hashes as if absent
_DROPPED_WHEN_OFF = ("augment", "amp", "milestones", "warmup", "mixup_alpha", "meta")
#: the augmentation keys and what they mean
AUGMENT_KEYS = {"crop_padding": "pixels of padding before a random crop back to the input size",
                "hflip": "flip each image horizontally with probability 1/2"}


def default_device(device: str = "auto"):
    """The torch device a run trains on: CUDA when present for ``"auto"``, else the one named.

    Parameters
    ----------
    device : str, default="auto"
        ``"auto"``, or a torch device name (``"cpu"``, ``"cuda:0"``, ...).

    Returns
    -------
    torch.device

    Examples
    --------
    >>> default_device("cpu")
    device(type='cpu')
    >>> import torch
    >>> default_device().type == ("cuda" if torch.cuda.is_available() else "cpu")
    True
    """
    import torch

    if device == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    return torch.device(device)


# --------------------------------------------------------------------------- config
def _merge(base: dict, over: dict) -> dict:
    out = copy.deepcopy(base)
    for k, v in (over or {}).items():
        out[k] = _merge(out[k], v) if isinstance(v, dict) and isinstance(out.get(k), dict) else v
    return out


def normalize_config(config: dict) -> dict:
    """Fill defaults and validate; the result is the canonical form that the cache hashes.

    Parameters
    ----------
    config : dict
        A run config: any keys of :data:`DEFAULT_CONFIG` (nested sections are merged
        key by key), the optional keys of the module docstring, and ``name`` (a label
        for humans, dropped).

    Returns
    -------
    dict
        A new dict with every default filled in and the optional keys that say "off"
        removed, so that configs that mean the same run are equal.

    Raises
    ------
    ValueError
        An unknown key or a value out of range, named in the message.

    Examples
    --------
    >>> cfg = normalize_config({"model": {"name": "mlp", "depth": 2}, "epochs": 5, "amp": False})
    >>> cfg["epochs"], cfg["model"], cfg["loss"], cfg["data"]["name"], "amp" in cfg
    (5, {'name': 'mlp', 'depth': 2}, 'ce', 'mnist1d', False)
    >>> normalize_config({"epoch": 5})
    Traceback (most recent call last):
        ...
    ValueError: unknown config keys ['epoch']; known: [...]
    """
    if not isinstance(config, dict):
        raise ValueError(f"config must be a dict; got {type(config).__name__}")
    unknown = set(config) - set(DEFAULT_CONFIG) - OPTIONAL_KEYS - {"name"}
    if unknown:
        raise ValueError(f"unknown config keys {sorted(unknown)}; known: "
                         f"{sorted(set(DEFAULT_CONFIG) | OPTIONAL_KEYS | {'name'})}")
    if not isinstance(config.get("data", {}), dict):
        raise ValueError(f'data must be a dict like {{"name": "digits"}}; got {config["data"]!r}')
    unknown = set(config.get("data", {})) - DATA_KEYS
    if unknown:
        raise ValueError(f"unknown keys {sorted(unknown)} in data; known: {sorted(DATA_KEYS)}")
    if config.get("keep_best", "val_nll") != "val_nll":
        raise ValueError(f"keep_best must be 'val_nll' (keep the outputs of the epoch with the lowest "
                         f"validation NLL); got {config['keep_best']!r}")
    cfg = _merge(DEFAULT_CONFIG, config)
    cfg.pop("name", None)  # a label for humans, not part of the run
    for key in _DROPPED_WHEN_OFF:
        if key in cfg and (cfg[key] is None or cfg[key] is False or cfg[key] == {}):
            del cfg[key]
    _check_recipe_keys(cfg)
    if cfg["data"]["name"] not in DATASETS:
        raise ValueError(f"data.name must be one of {', '.join(sorted(DATASETS))}; got {cfg['data']['name']!r}")
    from calibcourse.study.models import MODELS

    if cfg["model"].get("name") not in set(MODELS) | {"frozen_features"}:
        raise ValueError(f"model.name must be one of {', '.join(sorted(set(MODELS) | {'frozen_features'}))}; "
                         f"got {cfg['model'].get('name')!r}")
    if cfg["model"]["name"] == "frozen_features" and not isinstance(cfg["model"].get("backbone"), dict):
        raise ValueError("model.backbone must be the run config of the backbone, or "
                         "{'pretrained': {'name': ..., 'weights_path': ...}}, for 'frozen_features'")
    if cfg["loss"] not in LOSSES:
        raise ValueError(f"loss must be one of {', '.join(sorted(LOSSES))}; got {cfg['loss']!r}")
    if cfg["optimizer"] not in ("adam", "sgd"):
        raise ValueError(f"optimizer must be 'adam' or 'sgd'; got {cfg['optimizer']!r}")
    if cfg["schedule"] not in ("none", "cosine", "step"):
        raise ValueError(f"schedule must be 'none', 'cosine' or 'step'; got {cfg['schedule']!r}")
    for key in ("epochs", "batch_size"):
        if not isinstance(cfg[key], int) or isinstance(cfg[key], bool) or cfg[key] < 1:
            raise ValueError(f"{key} must be an integer >= 1; got {cfg[key]!r}")
    for key, positive in (("lr", True), ("weight_decay", False), ("momentum", False), ("mixup_alpha", True)):
        v = cfg.get(key)
        if v is None:  # an optional key that is off (dropped above)
            continue
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not (v > 0 if positive else v >= 0):
            raise ValueError(f"{key} must be a number {'> 0' if positive else '>= 0'}; got {v!r}")
    _check_step_loss(cfg)
    json.dumps(cfg)  # must be JSON-serialisable to be hashed
    return cfg


def _check_step_loss(cfg: dict) -> None:
    """The loss a step trains with must be the config's: mixup trains with cross-entropy, the
    meta-learned step with the gamma-Net's focal loss; a config that names another is refused."""
    if cfg.get("meta") and cfg.get("mixup_alpha"):
        raise ValueError("meta and mixup_alpha cannot be combined: a run has one per-batch step")
    for key, loss in (("mixup_alpha", "ce"), ("meta", "focal")):
        if cfg.get(key) and (cfg["loss"] != loss or cfg["loss_kwargs"]):
            raise ValueError(f"a config with {key} trains with loss {loss!r} (its step's own) and no loss_kwargs; "
                             f"got loss={cfg['loss']!r}, loss_kwargs={cfg['loss_kwargs']!r}")


def _check_recipe_keys(cfg: dict) -> None:
    """Validate ``augment``, ``amp`` and ``milestones`` (when present)."""
    aug = cfg.get("augment")
    if aug is not None:
        if not isinstance(aug, dict) or set(aug) - set(AUGMENT_KEYS):
            raise ValueError(f"augment must be a dict with keys among {sorted(AUGMENT_KEYS)}; got {aug!r}")
        pad = aug.get("crop_padding", 0)
        if not isinstance(pad, int) or pad < 0:
            raise ValueError(f"augment.crop_padding must be an integer >= 0; got {pad!r}")
    if "nesterov" in cfg and not isinstance(cfg["nesterov"], bool):
        raise ValueError(f"nesterov must be True or False; got {cfg['nesterov']!r}")
    if "amp" in cfg and cfg["amp"] is not True:
        raise ValueError(f"amp must be True (mixed precision on CUDA) or absent; got {cfg['amp']!r}")
    warm = cfg.get("warmup")
    if warm is not None and (not isinstance(warm, dict) or set(warm) != {"epochs", "lr"}
                             or not isinstance(warm["epochs"], int) or not 0 < warm["epochs"] < cfg["epochs"]
                             or not warm["lr"] > 0):
        raise ValueError(f"warmup must be {{'epochs': k, 'lr': rate}} with 0 < k < epochs; got {warm!r}")
    ms = cfg.get("milestones")
    if ms is not None:
        if cfg["schedule"] != "step":
            raise ValueError(f"milestones need schedule='step'; got schedule={cfg['schedule']!r}")
        if (not isinstance(ms, list) or not all(isinstance(m, int) and 0 < m < cfg["epochs"] for m in ms)
                or ms != sorted(set(ms))):
            raise ValueError(f"milestones must be increasing epochs in (0, epochs={cfg['epochs']}); got {ms!r}")


# --------------------------------------------------------------------------- data
def _pool_split(X, y, fractions, seed):
    from calibcourse.study.data import stratified_split

    tr, va, te = stratified_split(y, fractions, seed=seed)
    return X[tr], y[tr], X[va], y[va], X[te], y[te]


def _own_test_split(X, y, Xt, yt, val_fraction, seed):
    from calibcourse.study.data import stratified_split

    tr, va = stratified_split(y, (1 - val_fraction, val_fraction), seed=seed)
    return X[tr], y[tr], X[va], y[va], Xt, yt


def _load_mnist5k(d):
    from calibcourse.study.data import load_mnist5k

    X, y = load_mnist5k(flatten=False)
    return _pool_split(X, y, d["split"], d["seed"])


def _load_digits(d):
    from calibcourse.study.data import load_digits

    X, y = load_digits(flatten=False)
    return _pool_split(X, y, d["split"], d["seed"])


def _load_mnist1d(d):
    from calibcourse.study.data import load_mnist1d

    X, y, Xt, yt = load_mnist1d(d.get("mnist1d_train", 4000), d.get("mnist1d_test", 1000))
    return _own_test_split(X, y, Xt, yt, d["val_fraction"], d["seed"])


def _load_full(name):
    def load(d):
        from calibcourse.study.data import load_full

        # the root is where this machine keeps the data, not part of the run: configs leave it out
        # (a ``data.root`` would enter the cache key) and machines set $CALIBCOURSE_DATA
        root = d.get("root") or os.environ.get("CALIBCOURSE_DATA") or "~/data"
        # a smoke run reads small files in the real format: torchvision's md5 check would reject them
        X, y, Xt, yt = load_full(name, root, download=bool(d.get("download", False)), verify=smoke_caps() is None)
        return _own_test_split(X, y, Xt, yt, d["val_fraction"], d["seed"])
    return load


DATASETS = {"mnist5k": _load_mnist5k, "digits": _load_digits, "mnist1d": _load_mnist1d,
            "mnist": _load_full("mnist"), "cifar10": _load_full("cifar10"),
            "cifar100": _load_full("cifar100")}


def load_data_splits(data_cfg: dict, return_stats: bool = False):
    """Train / validation (calibration) / test arrays for a config's ``data`` section.

    Applies the view (``{"one_vs_rest": 9}`` or ``{"two_class": [3, 2]}``), an
    optional stratified subsample of the training split (``n_train``) and
    normalisation with statistics of the training split only (``return_stats=True``
    appends them, ``(mean, std)``). The full data sets are read from
    ``data.root``, else the environment variable ``CALIBCOURSE_DATA``, else ``~/data``.

    Parameters
    ----------
    data_cfg : dict
        The ``data`` section of a run config; missing keys take the values of
        ``DEFAULT_CONFIG["data"]``.
    return_stats : bool, default=False
        Also return the training split's normalisation statistics.

    Returns
    -------
    tuple of numpy.ndarray
        ``(X_train, y_train, X_val, y_val, X_test, y_test)``, and ``(mean, std)`` last
        when ``return_stats``.

    Examples
    --------
    >>> Xtr, ytr, Xva, yva, Xte, yte = load_data_splits({"name": "digits", "view": {"one_vs_rest": 9}})
    >>> Xtr.shape, sorted(set(ytr.tolist())), len(ytr) + len(yva) + len(yte)
    ((1078, 1, 8, 8), [0, 1], 1797)
    >>> bool(abs(Xtr.mean()) < 1e-6)  # standardized with the training split's statistics
    True
    """
    from calibcourse.study.data import normalize, one_vs_rest, stratified_split, two_class_subset

    d = _merge(DEFAULT_CONFIG["data"], data_cfg)
    if d["name"] not in DATASETS:
        raise ValueError(f"data.name must be one of {', '.join(sorted(DATASETS))}; got {d['name']!r}")
    Xtr, ytr, Xva, yva, Xte, yte = DATASETS[d["name"]](d)
    view = d.get("view")
    if view:
        if "one_vs_rest" in view:
            pos = view["one_vs_rest"]
            ytr, yva, yte = one_vs_rest(ytr, pos), one_vs_rest(yva, pos), one_vs_rest(yte, pos)
        elif "two_class" in view:
            Xtr, ytr = two_class_subset(Xtr, ytr, view["two_class"])
            Xva, yva = two_class_subset(Xva, yva, view["two_class"])
            Xte, yte = two_class_subset(Xte, yte, view["two_class"])
        else:
            raise ValueError(f"data.view must be {{'one_vs_rest': k}} or {{'two_class': [a, b]}}; got {view!r}")
    if d.get("n_train"):
        frac = min(1.0, d["n_train"] / len(ytr))
        if frac < 1.0:
            keep, _ = stratified_split(ytr, (frac, 1 - frac), seed=d["seed"])
            Xtr, ytr = Xtr[keep], ytr[keep]
    axis = (0, 2, 3) if Xtr.ndim == 4 else None
    Xtr, Xva, Xte, stats = normalize(Xtr, Xva, Xte, axis=axis)
    return (Xtr, ytr, Xva, yva, Xte, yte) + ((stats,) if return_stats else ())


# --------------------------------------------------------------------------- losses
def _ce(logits, y, **kw):
    import torch.nn.functional as F

    return F.cross_entropy(logits, y, **kw)


def _bce(logits, y, **kw):
    import torch.nn.functional as F

    return F.binary_cross_entropy_with_logits(logits.reshape(-1), y.float(), **kw)


def _nll(log_probs, y, **kw):
    import torch.nn.functional as F

    return F.nll_loss(log_probs, y, **kw)


def _chapter5_losses():
    from calibcourse.calibration import losses as L

    return {"focal": L.focal_loss, "flsd53": L.flsd53_loss, "label_smoothing": L.label_smoothing_loss,
            "ce_mmce": L.ce_mmce_loss, "ce_dece": L.ce_dece_loss}


#: name -> fn(logits, labels, **loss_kwargs) -> scalar loss
LOSSES = {"ce": _ce, "bce": _bce, "nll": _nll, **_chapter5_losses()}
_BUILTIN_LOSSES = frozenset(LOSSES)


def register_loss(name: str, fn) -> None:
    """Make ``fn(logits, labels, **kwargs)`` available to run configs as ``loss=name``.

    Parameters
    ----------
    name : str
        The name configs use (``"loss": name``); not one of the built-in losses. The cache
        keys a run by this name, not by the function: give a changed loss a new name.
    fn : callable
        ``fn(logits, labels, **loss_kwargs) -> scalar tensor``, differentiable in ``logits``.

    Returns
    -------
    None

    Examples
    --------
    >>> import torch.nn.functional as F
    >>> register_loss("ce_smooth_01", lambda z, y, **kw: F.cross_entropy(z, y, label_smoothing=0.1))
    >>> normalize_config({"loss": "ce_smooth_01"})["loss"]
    'ce_smooth_01'
    >>> del LOSSES["ce_smooth_01"]
    >>> register_loss("ce", lambda z, y, **kw: 0)
    Traceback (most recent call last):
        ...
    ValueError: 'ce' is a built-in loss; register yours under a new name
    """
    if not isinstance(name, str) or not name:
        raise ValueError(f"name must be a non-empty string; got {name!r}")
    if name in _BUILTIN_LOSSES:
        raise ValueError(f"{name!r} is a built-in loss; register yours under a new name")
    if not callable(fn):
        raise ValueError(f"fn must be callable fn(logits, labels, **kwargs); got {type(fn).__name__}")
    LOSSES[name] = fn


# --------------------------------------------------------------------------- results
@dataclass
class RunResult:
    """What a run produces: the history per epoch, the outputs, and facts about the run.

    Attributes
    ----------
    config : dict
        The normalized run config (:func:`normalize_config`).
    history : pandas.DataFrame
        One row per epoch: ``epoch``, ``train_loss``, ``val_error``, ``val_nll``,
        ``test_error``, ``test_nll``, ``test_ece``, and the step's own columns (the gamma-Net's
        gammas in chapter 5).
    outputs : dict of str to numpy.ndarray
        ``val_logits``, ``val_labels``, ``test_logits``, ``test_labels`` of the kept epoch,
        and what the config asks for beyond them; read them with :meth:`logits`,
        :meth:`probs` and :meth:`labels`.
    info : dict
        Facts about the run: device, wall time, parameters, split sizes.
    provenance : dict
        What decides its last bits (:func:`calibcourse.study.provenance.current`: torch, threads,
        CPU capability, device, code fingerprint); empty for a cache entry that recorded none.
    model : torch.nn.Module or None
        The trained network when the run was just trained, ``None`` when it was read from
        the cache (which stores outputs, not weights).

    Examples
    --------
    >>> z = np.array([[2.0, 0.0], [0.0, 1.0]])
    >>> r = RunResult(config={}, history=None, outputs={"test_logits": z, "test_labels": np.array([0, 1])})
    >>> r.probs("test").round(3), r.labels("test")
    (array([[0.881, 0.119],
           [0.269, 0.731]]), array([0, 1]))
    >>> r.logits("val")
    Traceback (most recent call last):
        ...
    KeyError: "split 'val' has no logits in this run; stored: test"
    """

    config: dict
    history: "object"  # pandas DataFrame
    outputs: dict = field(default_factory=dict)  # name -> numpy array
    info: dict = field(default_factory=dict)
    provenance: dict = field(default_factory=dict)
    model: "object" = field(default=None, repr=False, compare=False)

    def logits(self, split: str = "test"):
        """Logits of a split ("val", "test", or another stored set such as "best_test"): (n, K),
        or (n,) for a single sigmoid logit ("epoch_test", kept with ``keep_epoch_logits``: one
        such array per epoch)."""
        return self._stored(split, "logits")

    def probs(self, split: str = "test"):
        """Probabilities of a split: :func:`calibcourse.calibration.metrics.logits_to_probs` of its logits."""
        from calibcourse.calibration.metrics import logits_to_probs

        return logits_to_probs(self.logits(split))

    def labels(self, split: str = "test"):
        """Integer labels of a split, in the order of its logits."""
        return self._stored(split, "labels")

    def _stored(self, split: str, kind: str):
        """``outputs["<split>_<kind>"]``, or a KeyError that names the splits stored with that kind."""
        key = f"{split}_{kind}"
        if key not in self.outputs:
            stored = sorted(k[: -len(kind) - 1] for k in self.outputs if k.endswith(f"_{kind}"))
            raise KeyError(f"split {split!r} has no {kind} in this run; stored: {', '.join(stored)}")
        return self.outputs[key]


def predict_logits(model, X, batch_size: int = 2048) -> np.ndarray:
    """Logits of ``model`` on ``X`` (array or tensor) as float64 numpy, in eval mode, without
    gradients; a single logit per sample comes back as shape (n,).

    Parameters
    ----------
    model : torch.nn.Module
        The network; its parameters' device is where the batches go. Left in eval mode.
    X : array_like or torch.Tensor
        Inputs, first axis the samples.
    batch_size : int, default=2048
        Samples per forward pass.

    Returns
    -------
    numpy.ndarray of shape (n, K) or (n,)
        float64 logits.

    Examples
    --------
    >>> import torch
    >>> lin = torch.nn.Linear(3, 1)
    >>> with torch.no_grad():
    ...     _ = lin.weight.fill_(1.0), lin.bias.fill_(0.5)
    >>> predict_logits(lin, np.ones((4, 3)), batch_size=3)
    array([3.5, 3.5, 3.5, 3.5])
    """
    import torch

    dev = next(model.parameters()).device
    model.eval()
    X = X if torch.is_tensor(X) else torch.as_tensor(np.asarray(X), dtype=torch.float32)
    out = []
    with torch.no_grad():
        for i in range(0, len(X), batch_size):
            out.append(model(X[i: i + batch_size].to(dev)).double().cpu())
    z = torch.cat(out).numpy()
    return z[:, 0] if z.ndim == 2 and z.shape[1] == 1 else z


def _scores(z, y):
    from calibcourse.calibration import metrics as M

    p = M.logits_to_probs(z)  # log-probabilities (loss "nll") pass through softmax unchanged
    # top-label also for a sigmoid network's P(y = 1) of shape (n,), as every cached history holds it
    return {"error": M.error(p, y), "nll": M.nll(p, y), "ece": M.ece(p, y, reliability="top_label")}


# --------------------------------------------------------------------------- the model factory
def make_model(cfg: dict, input_shape, num_classes: int, device):
    """The network a normalized run config asks for, on ``device``.

    ``input_shape`` (of one sample) and ``num_classes`` fill the model's arguments that the
    config leaves out. ``frozen_features`` trains (or loads) its backbone first, freezes it
    and puts a new MLP head on it (chapter 3).

    Parameters
    ----------
    cfg : dict
        A normalized run config (:func:`normalize_config`); its ``model`` section names one
        of :data:`calibcourse.study.models.MODELS` (or ``frozen_features``) and its arguments.
    input_shape : tuple of int
        The shape of one sample, e.g. ``(40,)`` or ``(1, 28, 28)``.
    num_classes : int
        Outputs of the network, unless the config sets ``num_classes``.
    device : torch.device or str
        Where the network is put.

    Returns
    -------
    torch.nn.Module

    Examples
    --------
    >>> cfg = normalize_config({"model": {"name": "mlp", "depth": 2, "width": 8}})
    >>> net = make_model(cfg, (40,), 10, "cpu")
    >>> import torch
    >>> net(torch.zeros(5, 40)).shape
    torch.Size([5, 10])
    """
    import torch

    from calibcourse.study.models import FrozenFeatureClassifier, build_model

    kwargs = {k: v for k, v in cfg["model"].items() if k != "name"}
    kwargs.setdefault("num_classes", num_classes)
    if cfg["model"]["name"] != "frozen_features":
        return build_model(cfg["model"]["name"], input_shape=input_shape, **kwargs).to(device)
    spec = kwargs.pop("backbone")
    if "pretrained" in spec:  # e.g. {"pretrained": {"name": "densenet121", "weights": "densenet121-a639ec97.pth"}}
        pre = dict(spec["pretrained"])
        if "weights" in pre:  # a file name, looked up on this machine: the folder is not part of the key
            pre["weights_path"] = weights_file(pre.pop("weights"))
        backbone = build_model(pre.pop("name"), **pre)
    else:  # the run config of a backbone trained here first
        backbone = train(spec, progress=False).model.cpu()
    model = FrozenFeatureClassifier(backbone, feature_dim=backbone.head.in_features,
                                    num_classes=kwargs["num_classes"], hidden=kwargs.get("hidden", 500)).to(device)
    torch.manual_seed(cfg["seed"])  # the rest of the run does not depend on how long the backbone trained
    return model


#: where the pretrained weights files the configs name come from (they are never downloaded here)
WEIGHTS_SOURCES = {
    "densenet121-a639ec97.pth": "torchvision's ImageNet DenseNet-121 "
                                "(https://download.pytorch.org/models/densenet121-a639ec97.pth)",
}


def weights_file(name: str) -> str:
    """The path of the pretrained weights file ``name``: under the environment variable
    ``CALIBCOURSE_WEIGHTS``, else ``~/data/weights``. A missing file raises a
    ``FileNotFoundError`` that names it and says how to get it."""
    folder = os.path.expanduser(os.environ.get("CALIBCOURSE_WEIGHTS") or "~/data/weights")
    path = os.path.join(folder, name)
    if not os.path.isfile(path):
        source = WEIGHTS_SOURCES.get(name, "the file the config names")
        raise FileNotFoundError(f"weights file {path} not found: download {source} on a machine with "
                                f"internet and put it in {folder} (or point CALIBCOURSE_WEIGHTS at its "
                                "folder); weights are never downloaded during a run")
    return path


def _optimizer(cfg, model):
    import torch

    params = [p for p in model.parameters() if p.requires_grad]
    if cfg["optimizer"] == "adam":
        opt = torch.optim.Adam(params, lr=cfg["lr"], weight_decay=cfg["weight_decay"])
    else:
        opt = torch.optim.SGD(params, lr=cfg["lr"], momentum=cfg["momentum"],
                              weight_decay=cfg["weight_decay"], nesterov=cfg.get("nesterov", cfg["momentum"] > 0))
    sched, epochs = None, cfg["epochs"]
    if cfg["schedule"] == "cosine":
        sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=epochs)
    elif cfg["schedule"] == "step":  # He et al. / Guo et al.: divide by 10 at 50 % and 75 % of training
        milestones = cfg.get("milestones") or [epochs // 2, (3 * epochs) // 4]
        sched = torch.optim.lr_scheduler.MultiStepLR(opt, milestones, 0.1)
    return opt, sched


# --------------------------------------------------------------------------- augmentation on the device
def augment_batch(xb, spec: dict, generator, fill=None):
    """Random crops of padded images and horizontal flips of a batch ``xb`` (n, C, H, W), on its device.

    He et al. (2016)'s CIFAR augmentation, which Guo et al. (2017) train with: pad each image
    by ``spec["crop_padding"]`` pixels on every side (with ``fill``, one value per channel:
    the normalized value of a black pixel; zeros when None), cut a random H x W window, and
    flip it horizontally with probability 1/2 (``spec["hflip"]``). The random draws come from
    ``generator`` (a CPU ``torch.Generator``, so that a run is reproducible and resumable on
    any device); the crop is one gather on the device.
    """
    import torch

    n, c, h, w = xb.shape
    pad, flip = int(spec.get("crop_padding", 0)), bool(spec.get("hflip", False))
    dev = xb.device
    oy = torch.randint(0, 2 * pad + 1, (n,), generator=generator)
    ox = torch.randint(0, 2 * pad + 1, (n,), generator=generator)
    flips = torch.rand(n, generator=generator) < 0.5 if flip else torch.zeros(n, dtype=torch.bool)
    if pad:
        fill_t = (torch.zeros(c, dtype=xb.dtype) if fill is None else torch.as_tensor(fill, dtype=xb.dtype))
        padded = fill_t.to(dev).view(1, c, 1, 1).expand(n, c, h + 2 * pad, w + 2 * pad).clone()
        padded[:, :, pad: pad + h, pad: pad + w] = xb
    else:
        padded = xb
    rows = (oy[:, None] + torch.arange(h)[None, :]).to(dev)
    cols = ox[:, None] + torch.arange(w)[None, :]
    cols = torch.where(flips[:, None], cols.flip(1), cols).to(dev)
    out = padded[torch.arange(n, device=dev)[:, None, None], :, rows[:, :, None], cols[:, None, :]]
    return out.permute(0, 3, 1, 2).contiguous()


# --------------------------------------------------------------------------- per-batch step strategies
class Step:
    """One training step on a batch, the part of a run that differs between methods.

    ``step(xb, yb)`` updates the network and returns the batch's training loss; after
    every epoch ``epoch_end(epoch, X_test, test_logits, y_test)`` may return extra history
    columns, and ``outputs(X_test)`` extra arrays for :attr:`RunResult.outputs`. A new
    method subclasses it and defines :meth:`loss` (or ``__call__`` for a step that is not
    one gradient step on one loss), and :func:`make_step` returns it for its configs.

    Parameters
    ----------
    model : torch.nn.Module
        The network being trained.
    optimizer : torch.optim.Optimizer
        Its optimizer.

    Examples
    --------
    >>> import torch
    >>> class SquaredLogits(Step):  # a toy method: shrink the logits
    ...     def loss(self, xb, yb):
    ...         return self.model(xb).pow(2).mean()
    >>> torch.manual_seed(0) and None
    >>> net = torch.nn.Linear(2, 2)
    >>> step = SquaredLogits(net, torch.optim.SGD(net.parameters(), lr=0.1))
    >>> x, y = torch.ones(4, 2), torch.zeros(4, dtype=torch.long)
    >>> first = step(x, y)
    >>> step(x, y) < first
    True
    """

    #: a ``torch.amp.GradScaler`` when the run trains in mixed precision (set by :func:`train`)
    scaler = None

    def __init__(self, model, optimizer):
        self.model, self.optimizer = model, optimizer

    def loss(self, xb, yb):
        """The batch's training loss, a scalar tensor to differentiate (subclasses define it)."""
        raise NotImplementedError(f"{type(self).__name__} must define loss(xb, yb) or __call__(xb, yb)")

    def __call__(self, xb, yb) -> float:
        import torch

        if self.scaler is None:
            loss = self.loss(xb, yb)
            self.optimizer.zero_grad()
            loss.backward()
            self.optimizer.step()
            return float(loss.detach())
        with torch.autocast(device_type=xb.device.type, dtype=torch.float16):
            loss = self.loss(xb, yb)
        self.optimizer.zero_grad()
        self.scaler.scale(loss).backward()
        self.scaler.step(self.optimizer)
        self.scaler.update()
        return float(loss.detach())

    def epoch_end(self, epoch, X_test, test_logits, y_test) -> dict:
        """Extra history columns after ``epoch`` (none for a plain step)."""
        return {}

    def outputs(self, X_test) -> dict:
        """Extra arrays for :attr:`RunResult.outputs` at the end of the run (none for a plain step)."""
        return {}

    def state_dict(self) -> dict:
        """What a checkpoint needs beyond the model and the optimizer (nothing for a plain step)."""
        return {}

    def load_state_dict(self, state: dict) -> None:
        """Restore what :meth:`state_dict` returned (nothing for a plain step)."""


class PlainStep(Step):
    """Gradient step on ``loss_fn(model(x), y, **loss_kwargs)`` (every loss of :data:`LOSSES`).

    Parameters
    ----------
    model, optimizer
        As for :class:`Step`.
    loss_fn : callable
        ``loss_fn(logits, labels, **loss_kwargs) -> scalar tensor``; it gets float32 logits,
        also under mixed precision.
    loss_kwargs : dict, optional
        Its keyword arguments (the config's ``loss_kwargs``, e.g. focal loss's ``gamma``).

    Examples
    --------
    >>> import torch
    >>> torch.manual_seed(0) and None
    >>> net = torch.nn.Linear(3, 2)
    >>> step = PlainStep(net, torch.optim.SGD(net.parameters(), lr=0.5), LOSSES["focal"], {"gamma": 2.0})
    >>> x, y = torch.randn(8, 3), torch.randint(0, 2, (8,))
    >>> losses = [step(x, y) for _ in range(20)]
    >>> losses[-1] < losses[0]
    True
    """

    def __init__(self, model, optimizer, loss_fn, loss_kwargs=None):
        super().__init__(model, optimizer)
        self.loss_fn, self.loss_kwargs = loss_fn, dict(loss_kwargs or {})

    def loss(self, xb, yb):
        # float32 logits into the loss, also under autocast (the losses' logs and powers need it)
        return self.loss_fn(self.model(xb).float(), yb, **self.loss_kwargs)


class MixupStep(Step):
    """Gradient step on the mixup loss of a mixed batch (``mixup_alpha`` in the config).

    Each batch is mixed with a permutation of itself, ``lam ~ Beta(alpha, alpha)``
    (:func:`calibcourse.calibration.losses.mixup_batch`), and the loss is ``lam`` CE on one label plus
    ``1 - lam`` CE on the other (:func:`calibcourse.calibration.losses.mixup_loss`).

    Parameters
    ----------
    model, optimizer
        As for :class:`Step`.
    alpha : float
        The Beta distribution's parameter.
    generator : torch.Generator
        Draws ``lam`` and the permutation (the run's own, so that a resumed run draws the same).

    Examples
    --------
    >>> import torch
    >>> torch.manual_seed(0) and None
    >>> net = torch.nn.Linear(3, 2)
    >>> step = MixupStep(net, torch.optim.SGD(net.parameters(), lr=0.1), alpha=0.2,
    ...                  generator=torch.Generator().manual_seed(0))
    >>> loss = step(torch.randn(8, 3), torch.randint(0, 2, (8,)))
    >>> isinstance(loss, float) and loss > 0
    True
    """

    def __init__(self, model, optimizer, alpha, generator):
        super().__init__(model, optimizer)
        self.alpha, self.generator = alpha, generator

    def loss(self, xb, yb):
        from calibcourse.calibration.losses import mixup_batch, mixup_loss

        xm, ya, yb2, lam = mixup_batch(xb, yb, self.alpha, generator=self.generator)
        return mixup_loss(self.model(xm).float(), ya, yb2, lam)


class MetaStep(Step):
    """The bilevel step of chapter 5 (:class:`calibcourse.study.meta.MetaTrainer`, the ``meta``
    section of the config), logging the gamma-Net's gammas on the test split every epoch.

    Its history columns: ``gamma_mean``, ``gamma_std``, ``gamma_q10``, ``gamma_median``,
    ``gamma_q90`` (and ``gamma_capped`` with a cap); its outputs: ``gamma_hist`` (a histogram
    per epoch over :attr:`GAMMA_BINS`), ``test_gammas``, and the gammas and true-class
    probabilities of every test sample at four epochs (``snapshot_*``).

    Parameters
    ----------
    model, optimizer
        As for :class:`Step`.
    X_val, y_val : torch.Tensor
        The validation split the meta-objective (SECE) is measured on.
    seed : int
        Seed of the gamma-Net and of its validation batches.
    epochs : int
        The run's epochs (to place the four snapshots).
    **meta
        The config's ``meta`` section, passed to :class:`calibcourse.study.meta.MetaTrainer`.

    Examples
    --------
    >>> import torch
    >>> torch.manual_seed(0) and None
    >>> from calibcourse.study.models import MLP
    >>> net = MLP(in_features=4, num_classes=3, width=8, depth=1)  # features, then a linear ``head``
    >>> Xv, yv = torch.randn(32, 4), torch.randint(0, 3, (32,))
    >>> step = MetaStep(net, torch.optim.Adam(net.parameters(), 1e-2), Xv, yv, seed=0, epochs=2)
    >>> loss = step(torch.randn(16, 4), torch.randint(0, 3, (16,)))
    >>> X_test = torch.randn(10, 4)
    >>> row = step.epoch_end(1, X_test, net(X_test).detach().numpy(), np.zeros(10, dtype=int))
    >>> sorted(row)
    ['gamma_mean', 'gamma_median', 'gamma_q10', 'gamma_q90', 'gamma_std']
    >>> step.outputs(X_test)["test_gammas"].shape
    (10,)
    """

    #: histogram bins of the gammas per epoch (values above 10 land in the last bin)
    GAMMA_BINS = np.linspace(0, 10, 41)

    def __init__(self, model, optimizer, X_val, y_val, seed, epochs, **meta):
        super().__init__(model, optimizer)
        from calibcourse.study.meta import MetaTrainer

        self.trainer = MetaTrainer(model, X_val, y_val, seed=seed, **meta)
        self.hist = []
        # gammas and the true-class probability of every test sample at four epochs
        self.snapshot_epochs = sorted({1, max(1, epochs // 4), max(1, epochs // 2), epochs})
        self.snapshots = {"gammas": [], "p_true": []}

    def __call__(self, xb, yb) -> float:
        return self.trainer.step(xb, yb, self.optimizer)

    def epoch_end(self, epoch, X_test, test_logits, y_test) -> dict:
        from calibcourse.calibration.metrics import softmax

        g = self.trainer.gammas(X_test)
        self.hist.append(np.histogram(np.clip(g, 0, 10), bins=self.GAMMA_BINS)[0])
        q10, q50, q90 = np.quantile(g, [0.1, 0.5, 0.9])
        row = {"gamma_mean": float(g.mean()), "gamma_std": float(g.std()), "gamma_q10": float(q10),
               "gamma_median": float(q50), "gamma_q90": float(q90)}
        if self.trainer.gamma_max is not None:
            row["gamma_capped"] = float(np.mean(g >= self.trainer.gamma_max))
        if epoch in self.snapshot_epochs and test_logits.ndim == 2:
            p_true = softmax(test_logits)[np.arange(len(y_test)), y_test]
            self.snapshots["gammas"].append(g.astype(np.float32))
            self.snapshots["p_true"].append(p_true.astype(np.float32))
        return row

    def state_dict(self) -> dict:
        t = self.trainer
        return {"gamma_net": t.gamma_net.state_dict(), "gamma_scale": t.gamma_net._scale,
                "meta_optimizer": t.opt.state_dict(), "meta_generator": t.gen.get_state(),
                "hist": list(self.hist), "snapshots": {k: list(v) for k, v in self.snapshots.items()}}

    def load_state_dict(self, state: dict) -> None:
        t = self.trainer
        t.gamma_net.load_state_dict(state["gamma_net"])
        t.gamma_net._scale = state["gamma_scale"]
        t.opt.load_state_dict(state["meta_optimizer"])
        t.gen.set_state(state["meta_generator"])
        self.hist = list(state["hist"])
        self.snapshots = {k: list(v) for k, v in state["snapshots"].items()}

    def outputs(self, X_test) -> dict:
        out = {"gamma_hist": np.stack(self.hist), "gamma_bins": self.GAMMA_BINS,
               "test_gammas": self.trainer.gammas(X_test)}
        if self.snapshots["gammas"]:
            out.update({"snapshot_epochs": np.array(self.snapshot_epochs),
                        "snapshot_test_gammas": np.stack(self.snapshots["gammas"]),
                        "snapshot_test_p_true": np.stack(self.snapshots["p_true"])})
        return out


def make_step(cfg: dict, model, optimizer, X_val, y_val, generator) -> Step:
    """The per-batch step strategy of a normalized run config: meta-learned (``meta``),
    mixup (``mixup_alpha``) or a plain gradient step on ``loss``.

    Parameters
    ----------
    cfg : dict
        A normalized run config.
    model : torch.nn.Module
        The network (:func:`make_model`).
    optimizer : torch.optim.Optimizer
        Its optimizer.
    X_val, y_val : numpy.ndarray
        The validation split (the meta-learned step's objective).
    generator : torch.Generator
        The run's generator for mixup's draws.

    Returns
    -------
    Step
        A :class:`MetaStep`, :class:`MixupStep` or :class:`PlainStep`.

    Examples
    --------
    >>> import torch
    >>> net = torch.nn.Linear(3, 2)
    >>> opt = torch.optim.SGD(net.parameters(), lr=0.1)
    >>> Xv, yv = np.zeros((4, 3), np.float32), np.zeros(4, np.int64)
    >>> for extra in ({}, {"mixup_alpha": 0.2}, {"loss": "focal", "loss_kwargs": {"gamma": 3.0}}):
    ...     step = make_step(normalize_config(extra), net, opt, Xv, yv, torch.Generator())
    ...     print(type(step).__name__, getattr(step, "loss_kwargs", ""))
    PlainStep {}
    MixupStep
    PlainStep {'gamma': 3.0}
    """
    import torch

    if cfg.get("meta"):
        return MetaStep(model, optimizer, torch.from_numpy(X_val), torch.from_numpy(y_val), seed=cfg["seed"],
                        epochs=cfg["epochs"], **cfg["meta"])
    if cfg.get("mixup_alpha"):
        return MixupStep(model, optimizer, cfg["mixup_alpha"], generator)
    return PlainStep(model, optimizer, LOSSES[cfg["loss"]], cfg["loss_kwargs"])


# --------------------------------------------------------------------------- the loop
def smoke_caps():
    """``(epochs, batches, samples)`` from the environment variable ``CALIBCOURSE_SMOKE="E:B[:S]"``, or None.

    Set by the smoke run of the ``full`` profile (:mod:`calibcourse.tools.smoke`): every run trains at
    most ``E`` epochs of at most ``B`` batches of at most ``S`` samples (default: the config's
    batch size), so that each config is exercised in seconds.
    """
    raw = os.environ.get("CALIBCOURSE_SMOKE")
    if not raw:
        return None
    try:
        caps = [int(v) for v in raw.split(":")]
        if len(caps) not in (2, 3) or min(caps) < 1:
            raise ValueError
    except ValueError:
        raise ValueError(f"CALIBCOURSE_SMOKE must be 'EPOCHS:BATCHES' or 'EPOCHS:BATCHES:SAMPLES', each >= 1; "
                         f"got {raw!r}") from None
    return caps[0], caps[1], (caps[2] if len(caps) == 3 else None)


def _rng_state(dev, gens: dict) -> dict:
    import torch

    return {"torch": torch.get_rng_state(), "numpy": np.random.get_state(), "python": random.getstate(),
            "cuda": torch.cuda.get_rng_state(dev) if dev.type == "cuda" else None,
            **{name: g.get_state() for name, g in gens.items()}}


def _set_rng_state(state: dict, dev, gens: dict) -> None:
    import torch

    torch.set_rng_state(state["torch"])
    np.random.set_state(state["numpy"])
    random.setstate(state["python"])
    if state["cuda"] is not None and dev.type == "cuda":
        torch.cuda.set_rng_state(state["cuda"], dev)
    for name, g in gens.items():
        g.set_state(state[name])


def _save_checkpoint(path, state: dict) -> None:
    """Write a checkpoint atomically: a temporary file in the same folder, then a rename."""
    import torch

    path = os.fspath(path)
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    tmp = f"{path}.tmp-{os.getpid()}"
    torch.save(state, tmp)
    os.replace(tmp, path)


def train(config: dict, progress: bool | None = None, checkpoint=None, checkpoint_every: int = 5,
          threads: int | None = None, on_checkpoint=None) -> RunResult:
    """Train one run config; return its :class:`RunResult`.

    The config names the data, the model (:func:`make_model`), the optimizer and the
    per-batch step (:func:`make_step`); the loop is the same for every method.
    The run sets torch's intra-op threads to ``threads`` (the thread policy of
    :mod:`calibcourse.study.provenance`: 1 unless the caller says otherwise), whatever the caller's
    torch setting was: they decide a CPU run's last bits. The caller's setting is restored
    afterwards, and the result records the run's provenance. Chapters read runs through
    :mod:`calibcourse.study.cache`, which trains a config only when its result is not stored.

    Parameters
    ----------
    config : dict
        A run config (:func:`normalize_config` fills the defaults and validates it).
    progress : bool, optional
        A tqdm bar over epochs (default on unless the environment variable
        ``CALIBCOURSE_QUIET`` is set).
    checkpoint : str or path-like, optional
        A file; every ``checkpoint_every`` epochs the model, optimizer, scheduler, gradient
        scaler, the step's own state, the history and every random state (torch, CUDA,
        numpy, Python, the data-order and augmentation generators) are written there
        atomically, and a run that finds the file resumes after its epoch: the result
        equals an uninterrupted run's. The caller removes the file once the result is
        stored (:meth:`calibcourse.study.cache.Cache.get_or_train` does).
    checkpoint_every : int, default=5
        Epochs between checkpoints.
    threads : int or None, default=None
        Torch's intra-op threads while the run trains; None means
        :data:`calibcourse.study.provenance.DEFAULT_THREADS` (1).
    on_checkpoint : callable, optional
        Called with the epoch right after each checkpoint is written (the run grid's
        preemption drill kills its job there: :class:`calibcourse.tools.grid.TrainJob`).

    Returns
    -------
    RunResult
        The history, the outputs of the final epoch (or of the epoch with the lowest
        validation NLL with ``keep_best``), the facts of the run, its provenance and the
        trained model.

    Examples
    --------
    >>> r = train({"data": {"name": "digits", "n_train": 300}, "model": {"name": "mlp", "depth": 1, "width": 16},
    ...            "epochs": 2, "seed": 0}, progress=False)
    >>> list(r.history.columns)
    ['epoch', 'train_loss', 'val_error', 'val_nll', 'test_error', 'test_nll', 'test_ece']
    >>> r.logits("test").shape, r.provenance["threads"]
    ((359, 10), 1)
    >>> again = train(r.config, progress=False)  # the same config and seed: the same numbers
    >>> bool(np.array_equal(again.logits("test"), r.logits("test")))
    True
    """
    import torch

    threads = resolve_threads(threads)
    before = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        return _train(config, progress, checkpoint, checkpoint_every, on_checkpoint)
    finally:
        torch.set_num_threads(before)


def _train(config: dict, progress: bool | None, checkpoint, checkpoint_every: int, on_checkpoint=None) -> RunResult:
    import pandas as pd
    import torch
    from tqdm.auto import tqdm

    cfg = normalize_config(config)
    caps = smoke_caps()
    # the loop, the schedule and the step see the capped epochs; the result keeps the config
    run_cfg = cfg if caps is None else {**cfg, "epochs": min(cfg["epochs"], caps[0])}
    if caps is not None and "milestones" in run_cfg:
        run_cfg["milestones"] = [m for m in run_cfg["milestones"] if m < run_cfg["epochs"]] or None
    if caps is not None and caps[2] and run_cfg.get("meta"):  # the meta-learner's validation batch too
        run_cfg["meta"] = {**run_cfg["meta"], "val_batch": min(run_cfg["meta"].get("val_batch", 256), caps[2])}
    max_batches, max_rows = (None, None) if caps is None else caps[1:]
    if progress is None:
        progress = not os.environ.get("CALIBCOURSE_QUIET")
    start = time.perf_counter()
    torch.manual_seed(cfg["seed"])
    np.random.seed(cfg["seed"])
    dev = default_device(cfg["device"])
    Xtr, ytr, Xva, yva, Xte, yte, (mean, std) = load_data_splits(cfg["data"], return_stats=True)
    num_classes = 1 if cfg["loss"] == "bce" else int(max(ytr.max(), yte.max()) + 1)
    model = make_model(cfg, Xtr.shape[1:], num_classes, dev)
    opt, sched = _optimizer(run_cfg, model)
    Xtr_t, ytr_t = torch.from_numpy(Xtr), torch.from_numpy(ytr)
    Xva_t, Xte_t = torch.from_numpy(Xva), torch.from_numpy(Xte)
    gen = torch.Generator().manual_seed(cfg["seed"])
    step = make_step(run_cfg, model, opt, Xva, yva, gen)
    gens = {"data": gen}
    augment = cfg.get("augment")
    if augment:
        if Xtr.ndim != 4:
            raise ValueError(f"augment needs images (n, C, H, W); data {cfg['data']['name']!r} has shape {Xtr.shape}")
        # the data sets fit in GPU memory: move the training split once, augment each batch there
        Xtr_t, ytr_t = Xtr_t.to(dev), ytr_t.to(dev)
        aug_gen = torch.Generator().manual_seed(cfg["seed"] + 2)
        gens["augment"] = aug_gen
        fill = (-np.asarray(mean) / np.asarray(std)).reshape(-1)  # a black pixel, normalized
    if cfg.get("amp") and dev.type == "cuda" and not cfg.get("meta"):
        step.scaler = torch.amp.GradScaler("cuda")
    has_bn = any(isinstance(m, torch.nn.BatchNorm1d | torch.nn.BatchNorm2d) for m in model.modules())
    rows, epoch_logits, step_time, best, first = [], {"val": [], "test": []}, 0.0, {}, 1
    if checkpoint is not None and os.path.isfile(checkpoint):
        state = torch.load(checkpoint, map_location=dev, weights_only=False)
        if state["config"] != cfg:
            raise ValueError(f"checkpoint {checkpoint} belongs to another config; remove it")
        model.load_state_dict(state["model"])
        opt.load_state_dict(state["optimizer"])
        if sched is not None:
            sched.load_state_dict(state["scheduler"])
        if step.scaler is not None and state["scaler"] is not None:
            step.scaler.load_state_dict(state["scaler"])
        step.load_state_dict(state["step"])
        _set_rng_state(state["rng"], dev, gens)
        rows, best, epoch_logits = state["rows"], state["best"], state["epoch_logits"]
        step_time, first = state["step_time"], state["epoch"] + 1
    bar = tqdm(range(first, run_cfg["epochs"] + 1), disable=not progress, leave=False,
               desc=f"{cfg['model']['name']} on {cfg['data']['name']}")
    zva = zte = None
    warmup = cfg.get("warmup")
    for epoch in bar:
        if warmup and epoch <= warmup["epochs"] + 1:
            # He et al.'s ResNet-110: a smaller rate until training starts to converge, then the schedule's
            for group in opt.param_groups:
                group["lr"] = warmup["lr"] if epoch <= warmup["epochs"] else run_cfg["lr"]
        model.train()
        perm = torch.randperm(len(ytr_t), generator=gen)
        total, seen = 0.0, 0
        t0 = time.perf_counter()
        for n_batch, i in enumerate(range(0, len(perm), cfg["batch_size"])):
            if max_batches is not None and n_batch >= max_batches:
                break
            b = perm[i: i + cfg["batch_size"]][:max_rows]
            if len(b) < 2 and has_bn:
                continue  # a batch of one breaks batch norm
            xb, yb = Xtr_t[b.to(Xtr_t.device)].to(dev), ytr_t[b.to(ytr_t.device)].to(dev)
            if augment:
                xb = augment_batch(xb, augment, aug_gen, fill)
            total += step(xb, yb) * len(b)
            seen += len(b)
        step_time += time.perf_counter() - t0
        if not np.isfinite(total):
            raise FloatingPointError(f"training diverged in epoch {epoch}: the training loss is {total}; "
                                     "lower the learning rate or regularize")
        if sched is not None:
            sched.step()
        zva, zte = predict_logits(model, Xva_t), predict_logits(model, Xte_t)
        s_te, s_va = _scores(zte, yte), _scores(zva, yva)
        rows.append({"epoch": epoch, "train_loss": total / max(seen, 1), "val_error": s_va["error"],
                     "val_nll": s_va["nll"], "test_error": s_te["error"], "test_nll": s_te["nll"],
                     "test_ece": s_te["ece"], **step.epoch_end(epoch, Xte_t, zte, yte)})
        if cfg.get("keep_best") == "val_nll" and s_va["nll"] < best.get("val_nll", np.inf):
            # early stopping on the validation NLL, kept beside the final epoch (chapter 2)
            best = {"val_nll": s_va["nll"], "epoch": epoch, "val_logits": zva, "test_logits": zte}
        if cfg["keep_epoch_logits"]:
            epoch_logits["val"].append(zva.astype(np.float32))
            epoch_logits["test"].append(zte.astype(np.float32))
        bar.set_postfix(err=f"{s_te['error']:.3f}", ece=f"{s_te['ece']:.3f}")
        if checkpoint is not None and epoch % max(1, checkpoint_every) == 0 and epoch < run_cfg["epochs"]:
            _save_checkpoint(checkpoint, {
                "config": cfg, "epoch": epoch, "model": model.state_dict(), "optimizer": opt.state_dict(),
                "scheduler": sched.state_dict() if sched is not None else None,
                "scaler": step.scaler.state_dict() if step.scaler is not None else None,
                "step": step.state_dict(), "rng": _rng_state(dev, gens), "rows": rows, "best": best,
                "epoch_logits": epoch_logits, "step_time": step_time})
            if on_checkpoint is not None:
                on_checkpoint(epoch)
    outputs = {"val_logits": zva, "val_labels": yva, "test_logits": zte, "test_labels": yte,
               **step.outputs(Xte_t)}
    if best:
        outputs.update({"best_val_logits": best["val_logits"], "best_test_logits": best["test_logits"],
                        "best_epoch": np.array(best["epoch"])})
    if cfg["keep_epoch_logits"]:
        outputs["epoch_val_logits"] = np.stack(epoch_logits["val"])
        outputs["epoch_test_logits"] = np.stack(epoch_logits["test"])
    info = {"device": str(dev),
            "wall_time_s": round(time.perf_counter() - start, 3),
            "step_time_s": round(step_time, 3),
            "n_parameters": int(sum(p.numel() for p in model.parameters())),
            "n_train": int(len(ytr)), "n_val": int(len(yva)), "n_test": int(len(yte))}
    if first > 1:
        info["resumed_at_epoch"] = first
    if caps is not None:
        info["smoke"] = (f"{run_cfg['epochs']} epochs of at most {max_batches} batches"
                         + (f" of at most {max_rows} samples" if max_rows else ""))
    provenance = current(threads=torch.get_num_threads(), device=dev)
    return RunResult(cfg, pd.DataFrame(rows), outputs, info, provenance=provenance, model=model)

