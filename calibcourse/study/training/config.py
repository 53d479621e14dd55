"""A run config (chapter 2): its defaults, its validation, and the data it names.

Every network of the book is one declarative config (:mod:`calibcourse.study.runs.experiments`);
:func:`normalize_config` fills the defaults and refuses what the training loop would ignore or
misread, so that one run has one canonical config and one cache key
(:func:`calibcourse.study.runs.cache.config_key`). :func:`load_data_splits` turns the config's
``data`` section into train / validation / test arrays. ``CALIBCOURSE_SMOKE="E:B[:S]"``
(:func:`smoke_caps`) caps every run for the smoke run of a profile.
"""
from __future__ import annotations

import copy
import json
import os

from calibcourse.calibration._validation import check_int, is_int
from calibcourse.study.training.steps import LOSSES

__all__ = ["DEFAULT_CONFIG", "normalize_config", "load_data_splits", "DATASETS"]


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
OPTIONAL_KEYS = {"meta", "mixup_alpha", "keep_best", "augment", "amp", "milestones", "nesterov", "warmup",
                 "cross_fit", "shift", "ood", "ensemble", "mc_dropout", "reduction", "clip_grad_norm"}
#: optional keys dropped from the canonical config when they say "off" (``amp: False``,
#: ``augment: None``, ``milestones: None``, ``mixup_alpha: None``, ``meta: {}``, ``cross_fit: None``,
#: ``shift: None``, ...): a config that does not use them hashes as if absent
_DROPPED_WHEN_OFF = ("augment", "amp", "milestones", "warmup", "mixup_alpha", "meta", "cross_fit", "shift", "ood",
                     "ensemble", "mc_dropout")
#: the augmentation keys and what they mean
AUGMENT_KEYS = {"crop_padding": "pixels of padding before a random crop back to the input size",
                "hflip": "flip each image horizontally with probability 1/2"}


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
    _check_given_keys(config)
    cfg = _merge(DEFAULT_CONFIG, config)
    cfg.pop("name", None)  # a label for humans, not part of the run
    for key in _DROPPED_WHEN_OFF:
        if key in cfg and (cfg[key] is None or cfg[key] is False or cfg[key] == {}):
            del cfg[key]
    _check_recipe_keys(cfg)
    _check_prediction_keys(cfg)
    _check_names(cfg)
    _check_numbers(cfg)
    _check_step_loss(cfg)
    _check_cross_fit(cfg)
    json.dumps(cfg)  # must be JSON-serialisable to be hashed
    return cfg


def _check_given_keys(config) -> None:
    """The keys of the config as given: a dict, no unknown key (nor in ``data``), ``keep_best`` as known."""
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


def _check_names(cfg: dict) -> None:
    """The data set, the model, the loss, the optimizer and the schedule are ones this package has."""
    if cfg["data"]["name"] not in DATASETS:
        raise ValueError(f"data.name must be one of {', '.join(sorted(DATASETS))}; got {cfg['data']['name']!r}")
    from calibcourse.study.training.models import MODELS

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


def _check_numbers(cfg: dict) -> None:
    """The epochs and batch size (integers >= 1), the rates and weights, the reduction, the clipping."""
    for key in ("epochs", "batch_size"):
        check_int(cfg[key], key, low=1)
    for key, positive in (("lr", True), ("weight_decay", False), ("momentum", False), ("mixup_alpha", True)):
        v = cfg.get(key)
        if v is None:  # an optional key that is off (dropped above)
            continue
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not (v > 0 if positive else v >= 0):
            raise ValueError(f"{key} must be a number {'> 0' if positive else '>= 0'}; got {v!r}")
    if cfg.get("reduction", "sum") != "sum":
        raise ValueError(f"reduction must be 'sum' (absent: the batch's mean); got {cfg['reduction']!r}")
    clip = cfg.get("clip_grad_norm")
    if clip is not None and (isinstance(clip, bool) or not isinstance(clip, (int, float)) or not clip > 0):
        raise ValueError(f"clip_grad_norm must be a number > 0; got {clip!r}")


def _check_step_loss(cfg: dict) -> None:
    """The loss a step trains with must be the config's: mixup trains with cross-entropy, the
    meta-learned step with the gamma-Net's focal loss; a config that names another is refused."""
    if cfg.get("meta") and cfg.get("mixup_alpha"):
        raise ValueError("meta and mixup_alpha cannot be combined: a run has one per-batch step")
    for key, loss in (("mixup_alpha", "ce"), ("meta", "focal")):
        if cfg.get(key) and (cfg["loss"] != loss or cfg["loss_kwargs"]):
            raise ValueError(f"a config with {key} trains with loss {loss!r} (its step's own) and no loss_kwargs; "
                             f"got loss={cfg['loss']!r}, loss_kwargs={cfg['loss_kwargs']!r}")


def _check_prediction_keys(cfg: dict) -> None:
    """Validate chapter 6's ``shift`` (:func:`calibcourse.study.training.shift.check_shift`), ``ood``
    (:func:`calibcourse.study.training.shift.check_ood`), ``ensemble`` (members) and ``mc_dropout`` (forward
    passes) when present."""
    if "shift" in cfg:
        from calibcourse.study.training.shift import check_shift

        check_shift(cfg["shift"])
    if "ood" in cfg:
        from calibcourse.study.training.shift import check_ood

        check_ood(cfg["ood"])
        if "ood" in (cfg.get("shift") or {}):
            raise ValueError("a config stores one out-of-distribution set: give ood or shift.ood, not both")
    for key, what in (("ensemble", "members"), ("mc_dropout", "forward passes with dropout on")):
        v = cfg.get(key)
        if v is not None:
            check_int(v, f"{key} ({what})", low=1)


def _check_cross_fit(cfg: dict) -> None:
    """``cross_fit`` (chapter 6, :mod:`calibcourse.study.training.crossfit`): ``{"folds": k}`` with k >= 2, on a
    run whose validation split joins its training split as the pool the folds cut; the run's own
    outputs are its final network's, so it keeps no best epoch and no per-epoch logits."""
    cf = cfg.get("cross_fit")
    if cf is None:
        return
    if not isinstance(cf, dict) or set(cf) != {"folds"}:
        raise ValueError(f'cross_fit must be {{"folds": k}}; got {cf!r}')
    k = cf["folds"]
    check_int(k, "cross_fit.folds", low=2)
    for key in ("keep_best", "meta"):
        if cfg.get(key):
            raise ValueError(f"cross_fit cannot be combined with {key}: the folds replace the validation split")
    if cfg["keep_epoch_logits"]:
        raise ValueError("cross_fit cannot be combined with keep_epoch_logits")


def _check_recipe_keys(cfg: dict) -> None:
    """Validate ``augment``, ``amp`` and ``milestones`` (when present)."""
    aug = cfg.get("augment")
    if aug is not None:
        if not isinstance(aug, dict) or set(aug) - set(AUGMENT_KEYS):
            raise ValueError(f"augment must be a dict with keys among {sorted(AUGMENT_KEYS)}; got {aug!r}")
        pad = aug.get("crop_padding", 0)
        check_int(pad, "augment.crop_padding", low=0)
    if "nesterov" in cfg and not isinstance(cfg["nesterov"], bool):
        raise ValueError(f"nesterov must be True or False; got {cfg['nesterov']!r}")
    if "amp" in cfg and cfg["amp"] is not True:
        raise ValueError(f"amp must be True (mixed precision on CUDA) or absent; got {cfg['amp']!r}")
    warm = cfg.get("warmup")
    if warm is not None and (not isinstance(warm, dict) or set(warm) != {"epochs", "lr"}
                             or not is_int(warm["epochs"], low=1, high=cfg["epochs"] - 1)
                             or not warm["lr"] > 0):
        raise ValueError(f"warmup must be {{'epochs': k, 'lr': rate}} with 0 < k < epochs; got {warm!r}")
    ms = cfg.get("milestones")
    if ms is not None:
        if cfg["schedule"] != "step":
            raise ValueError(f"milestones need schedule='step'; got schedule={cfg['schedule']!r}")
        if (not isinstance(ms, list) or not all(is_int(m, 1, cfg["epochs"] - 1) for m in ms)
                or ms != sorted(set(ms))):
            raise ValueError(f"milestones must be increasing epochs in (0, epochs={cfg['epochs']}); got {ms!r}")


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


# --------------------------------------------------------------------------- data
def _pool_split(X, y, fractions, seed):
    from calibcourse.study.training.data import stratified_split

    tr, va, te = stratified_split(y, fractions, seed=seed)
    return X[tr], y[tr], X[va], y[va], X[te], y[te]


def _own_test_split(X, y, Xt, yt, val_fraction, seed):
    from calibcourse.study.training.data import stratified_split

    tr, va = stratified_split(y, (1 - val_fraction, val_fraction), seed=seed)
    return X[tr], y[tr], X[va], y[va], Xt, yt


def _load_mnist5k(d):
    from calibcourse.study.training.data import load_mnist5k

    X, y = load_mnist5k(flatten=False)
    return _pool_split(X, y, d["split"], d["seed"])


def _load_digits(d):
    from calibcourse.study.training.data import load_digits

    X, y = load_digits(flatten=False)
    return _pool_split(X, y, d["split"], d["seed"])


def _load_mnist1d(d):
    from calibcourse.study.training.data import load_mnist1d

    X, y, Xt, yt = load_mnist1d(d.get("mnist1d_train", 4000), d.get("mnist1d_test", 1000))
    return _own_test_split(X, y, Xt, yt, d["val_fraction"], d["seed"])


def _load_full(name):
    def load(d):
        from calibcourse.study.training.data import data_root
        from calibcourse.study.training.downloads import load_full

        root = data_root(d.get("root"))
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
    from calibcourse.study.training.data import normalize, one_vs_rest, stratified_split, two_class_subset

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
