"""Training: every network of the book is one run config trained by ``train`` (chapters 1-5).

One declarative run config -> one :class:`RunResult`::

    from calibcourse.train import train
    result = train({"data": {"name": "mnist1d"}, "model": {"name": "mlp", "depth": 4},
                    "epochs": 30, "seed": 0})
    result.history            # per epoch: train loss, test error, NLL and ECE, val NLL
    result.outputs            # val/test logits and labels of the final epoch

Runs on CUDA when present and on the CPU otherwise (``device="auto"``). The same
config and seed on the same machine give the same numbers. Results are cached
by :mod:`calibcourse.cache`.
"""
from __future__ import annotations

import copy
import json
import os
import time
from dataclasses import dataclass, field

import numpy as np

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


#: keys a config may have that are not filled by default (so older configs keep their cache keys)
OPTIONAL_KEYS = {"meta", "mixup_alpha", "keep_best"}


def default_device(device: str = "auto"):
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
    """Fill defaults and validate; the result is the canonical form that the cache hashes."""
    if not isinstance(config, dict):
        raise ValueError(f"config must be a dict; got {type(config).__name__}")
    unknown = set(config) - set(DEFAULT_CONFIG) - OPTIONAL_KEYS - {"name"}
    if unknown:
        raise ValueError(f"unknown config keys {sorted(unknown)}; known: {sorted(DEFAULT_CONFIG)}")
    if config.get("keep_best", "val_nll") != "val_nll":
        raise ValueError(f"keep_best must be 'val_nll' (keep the outputs of the epoch with the lowest "
                         f"validation NLL); got {config['keep_best']!r}")
    cfg = _merge(DEFAULT_CONFIG, config)
    cfg.pop("name", None)  # a label for humans, not part of the run
    if cfg["data"]["name"] not in DATASETS:
        raise ValueError(f"data.name must be one of {', '.join(sorted(DATASETS))}; got {cfg['data']['name']!r}")
    from .models import MODELS

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
        if not isinstance(cfg[key], int) or cfg[key] < 1:
            raise ValueError(f"{key} must be an integer >= 1; got {cfg[key]!r}")
    json.dumps(cfg)  # must be JSON-serialisable to be hashed
    return cfg


# --------------------------------------------------------------------------- data
def _pool_split(X, y, fractions, seed):
    from .data import stratified_split

    tr, va, te = stratified_split(y, fractions, seed=seed)
    return X[tr], y[tr], X[va], y[va], X[te], y[te]


def _own_test_split(X, y, Xt, yt, val_fraction, seed):
    from .data import stratified_split

    tr, va = stratified_split(y, (1 - val_fraction, val_fraction), seed=seed)
    return X[tr], y[tr], X[va], y[va], Xt, yt


def _load_mnist5k(d):
    from .data import load_mnist5k

    X, y = load_mnist5k(flatten=False)
    return _pool_split(X, y, d["split"], d["seed"])


def _load_digits(d):
    from .data import load_digits

    X, y = load_digits(flatten=False)
    return _pool_split(X, y, d["split"], d["seed"])


def _load_mnist1d(d):
    from .data import load_mnist1d

    X, y, Xt, yt = load_mnist1d(d.get("mnist1d_train", 4000), d.get("mnist1d_test", 1000))
    return _own_test_split(X, y, Xt, yt, d["val_fraction"], d["seed"])


def _load_full(name):
    def load(d):
        from .data import load_full

        X, y, Xt, yt = load_full(name, d.get("root", "~/data"), download=bool(d.get("download", False)))
        return _own_test_split(X, y, Xt, yt, d["val_fraction"], d["seed"])
    return load


DATASETS = {"mnist5k": _load_mnist5k, "digits": _load_digits, "mnist1d": _load_mnist1d,
            "mnist": _load_full("mnist"), "cifar10": _load_full("cifar10"),
            "cifar100": _load_full("cifar100")}


def load_data_splits(data_cfg: dict):
    """Train / validation (calibration) / test arrays for a config's ``data`` section.

    Applies the view (``{"one_vs_rest": 9}`` or ``{"two_class": [3, 2]}``), an
    optional stratified subsample of the training split (``n_train``) and
    normalisation with statistics of the training split only.
    """
    from .data import normalize, one_vs_rest, stratified_split, two_class_subset

    d = _merge(DEFAULT_CONFIG["data"], data_cfg)
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
    Xtr, Xva, Xte, _ = normalize(Xtr, Xva, Xte, axis=axis)
    return Xtr, ytr, Xva, yva, Xte, yte


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
    from . import losses as L

    return {"focal": L.focal_loss, "flsd53": L.flsd53_loss, "label_smoothing": L.label_smoothing_loss,
            "ce_mmce": L.ce_mmce_loss, "ce_dece": L.ce_dece_loss}


#: name -> fn(logits, labels, **loss_kwargs) -> scalar loss
LOSSES = {"ce": _ce, "bce": _bce, "nll": _nll, **_chapter5_losses()}


def register_loss(name: str, fn) -> None:
    """Make ``fn(logits, labels, **kwargs)`` available to run configs as ``loss=name``."""
    LOSSES[name] = fn


# --------------------------------------------------------------------------- results
@dataclass
class RunResult:
    """What a run produces: the history per epoch, the outputs, and facts about the run.

    ``model`` is the trained network when the run was just trained, ``None`` when it was
    read from the cache (which stores outputs, not weights).
    """

    config: dict
    history: "object"  # pandas DataFrame
    outputs: dict = field(default_factory=dict)  # name -> numpy array
    info: dict = field(default_factory=dict)
    model: "object" = field(default=None, repr=False, compare=False)

    def logits(self, split: str = "test"):
        """Logits of a split ("val", "test", or another stored set such as "best_test"): (n, K),
        or (n,) for a single sigmoid logit."""
        if f"{split}_logits" not in self.outputs:
            stored = sorted(k[: -len("_logits")] for k in self.outputs if k.endswith("_logits"))
            raise KeyError(f"split {split!r} has no logits in this run; stored: {', '.join(stored)}")
        return self.outputs[f"{split}_logits"]

    def probs(self, split: str = "test"):
        """Probabilities of a split: :func:`calibcourse.metrics.logits_to_probs` of its logits."""
        from .metrics import logits_to_probs

        return logits_to_probs(self.logits(split))

    def labels(self, split: str = "test"):
        return self.outputs[f"{split}_labels"]


def predict_logits(model, X, batch_size: int = 2048) -> np.ndarray:
    """Logits of ``model`` on ``X`` (array or tensor) as float64 numpy, in eval mode, without
    gradients; a single logit per sample comes back as shape (n,)."""
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
    from . import metrics as M

    p = M.logits_to_probs(z)  # log-probabilities (loss "nll") pass through softmax unchanged
    return {"error": M.error(p, y), "nll": M.nll(p, y), "ece": M.ece(p, y)}


# --------------------------------------------------------------------------- the model factory
def make_model(cfg: dict, input_shape, num_classes: int, device):
    """The network a normalized run config asks for, on ``device``.

    ``input_shape`` (of one sample) and ``num_classes`` fill the model's arguments that the
    config leaves out. ``frozen_features`` trains (or loads) its backbone first, freezes it
    and puts a new MLP head on it (chapter 3).
    """
    import torch

    from .models import FrozenFeatureClassifier, build_model

    kwargs = {k: v for k, v in cfg["model"].items() if k != "name"}
    kwargs.setdefault("num_classes", num_classes)
    if cfg["model"]["name"] != "frozen_features":
        return build_model(cfg["model"]["name"], input_shape=input_shape, **kwargs).to(device)
    spec = kwargs.pop("backbone")
    if "pretrained" in spec:  # e.g. {"pretrained": {"name": "densenet121", "weights_path": ...}}
        pre = dict(spec["pretrained"])
        backbone = build_model(pre.pop("name"), **pre)
    else:  # the run config of a backbone trained here first
        backbone = train(spec, progress=False).model.cpu()
    model = FrozenFeatureClassifier(backbone, feature_dim=backbone.head.in_features,
                                    num_classes=kwargs["num_classes"], hidden=kwargs.get("hidden", 500)).to(device)
    torch.manual_seed(cfg["seed"])  # the rest of the run does not depend on how long the backbone trained
    return model


def _optimizer(cfg, model):
    import torch

    params = [p for p in model.parameters() if p.requires_grad]
    if cfg["optimizer"] == "adam":
        opt = torch.optim.Adam(params, lr=cfg["lr"], weight_decay=cfg["weight_decay"])
    else:
        opt = torch.optim.SGD(params, lr=cfg["lr"], momentum=cfg["momentum"],
                              weight_decay=cfg["weight_decay"], nesterov=cfg["momentum"] > 0)
    sched, epochs = None, cfg["epochs"]
    if cfg["schedule"] == "cosine":
        sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=epochs)
    elif cfg["schedule"] == "step":  # Guo et al.: divide by 10 at 50 % and 75 % of training
        sched = torch.optim.lr_scheduler.MultiStepLR(opt, [epochs // 2, (3 * epochs) // 4], 0.1)
    return opt, sched


# --------------------------------------------------------------------------- per-batch step strategies
class Step:
    """One training step on a batch, the part of a run that differs between methods.

    ``step(xb, yb)`` updates the network and returns the batch's training loss; after
    every epoch ``epoch_end(epoch, X_test, test_logits, y_test)`` may return extra history
    columns, and ``outputs(X_test)`` extra arrays for :attr:`RunResult.outputs`.
    """

    def __init__(self, model, optimizer):
        self.model, self.optimizer = model, optimizer

    def loss(self, xb, yb):
        raise NotImplementedError

    def __call__(self, xb, yb) -> float:
        loss = self.loss(xb, yb)
        self.optimizer.zero_grad()
        loss.backward()
        self.optimizer.step()
        return float(loss.detach())

    def epoch_end(self, epoch, X_test, test_logits, y_test) -> dict:
        return {}

    def outputs(self, X_test) -> dict:
        return {}


class PlainStep(Step):
    """Gradient step on ``loss_fn(model(x), y, **loss_kwargs)`` (every loss of :data:`LOSSES`)."""

    def __init__(self, model, optimizer, loss_fn, loss_kwargs=None):
        super().__init__(model, optimizer)
        self.loss_fn, self.loss_kwargs = loss_fn, dict(loss_kwargs or {})

    def loss(self, xb, yb):
        return self.loss_fn(self.model(xb), yb, **self.loss_kwargs)


class MixupStep(Step):
    """Gradient step on the mixup loss of a mixed batch (``mixup_alpha`` in the config)."""

    def __init__(self, model, optimizer, alpha, generator):
        super().__init__(model, optimizer)
        self.alpha, self.generator = alpha, generator

    def loss(self, xb, yb):
        from .losses import mixup_batch, mixup_loss

        xm, ya, yb2, lam = mixup_batch(xb, yb, self.alpha, generator=self.generator)
        return mixup_loss(self.model(xm), ya, yb2, lam)


class MetaStep(Step):
    """The bilevel step of chapter 5 (:class:`calibcourse.meta.MetaTrainer`, the ``meta``
    section of the config), logging the gamma-Net's gammas on the test split every epoch."""

    #: histogram bins of the gammas per epoch (values above 10 land in the last bin)
    GAMMA_BINS = np.linspace(0, 10, 41)

    def __init__(self, model, optimizer, X_val, y_val, seed, epochs, **meta):
        super().__init__(model, optimizer)
        from .meta import MetaTrainer

        self.trainer = MetaTrainer(model, X_val, y_val, seed=seed, **meta)
        self.hist = []
        # gammas and the true-class probability of every test sample at four epochs
        self.snapshot_epochs = sorted({1, max(1, epochs // 4), max(1, epochs // 2), epochs})
        self.snapshots = {"gammas": [], "p_true": []}

    def __call__(self, xb, yb) -> float:
        return self.trainer.step(xb, yb, self.optimizer)

    def epoch_end(self, epoch, X_test, test_logits, y_test) -> dict:
        from .metrics import softmax

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
    mixup (``mixup_alpha``) or a plain gradient step on ``loss``."""
    import torch

    if cfg.get("meta"):
        return MetaStep(model, optimizer, torch.from_numpy(X_val), torch.from_numpy(y_val), seed=cfg["seed"],
                        epochs=cfg["epochs"], **cfg["meta"])
    if cfg.get("mixup_alpha"):
        return MixupStep(model, optimizer, cfg["mixup_alpha"], generator)
    return PlainStep(model, optimizer, LOSSES[cfg["loss"]], cfg["loss_kwargs"])


# --------------------------------------------------------------------------- the loop
#: intra-op threads of every run on the CPU. How a sum is split over threads changes its last
#: bits, and training amplifies them: the same config trained with 1 and with 2 threads ends with
#: logits that differ by whole units. Every CPU run uses this one number, whatever the machine or
#: the number of parallel jobs (which is how the cores are used), so a run's entry is the same
#: wherever and however it is trained.
CPU_THREADS = 1


def train(config: dict, progress: bool | None = None) -> RunResult:
    """Train one run config from scratch; return its :class:`RunResult`.

    The config names the data, the model (:func:`make_model`), the optimizer and the
    per-batch step (:func:`make_step`); the loop is the same for every method.
    ``progress``: a tqdm bar over epochs (default on unless the environment variable
    ``CALIBCOURSE_QUIET`` is set). On the CPU the run uses :data:`CPU_THREADS` threads
    (the caller's setting is restored afterwards).
    """
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(CPU_THREADS)
    try:
        return _train(config, progress)
    finally:
        torch.set_num_threads(before)


def _train(config: dict, progress: bool | None) -> RunResult:
    import pandas as pd
    import torch
    from tqdm.auto import tqdm

    cfg = normalize_config(config)
    if progress is None:
        progress = not os.environ.get("CALIBCOURSE_QUIET")
    start = time.perf_counter()
    torch.manual_seed(cfg["seed"])
    np.random.seed(cfg["seed"])
    dev = default_device(cfg["device"])
    Xtr, ytr, Xva, yva, Xte, yte = load_data_splits(cfg["data"])
    num_classes = 1 if cfg["loss"] == "bce" else int(max(ytr.max(), yte.max()) + 1)
    model = make_model(cfg, Xtr.shape[1:], num_classes, dev)
    opt, sched = _optimizer(cfg, model)
    Xtr_t, ytr_t = torch.from_numpy(Xtr), torch.from_numpy(ytr)
    Xva_t, Xte_t = torch.from_numpy(Xva), torch.from_numpy(Xte)
    gen = torch.Generator().manual_seed(cfg["seed"])
    step = make_step(cfg, model, opt, Xva, yva, gen)
    has_bn = any(isinstance(m, torch.nn.BatchNorm1d | torch.nn.BatchNorm2d) for m in model.modules())
    rows, epoch_logits, step_time, best = [], {"val": [], "test": []}, 0.0, {}
    bar = tqdm(range(1, cfg["epochs"] + 1), disable=not progress, leave=False,
               desc=f"{cfg['model']['name']} on {cfg['data']['name']}")
    for epoch in bar:
        model.train()
        perm = torch.randperm(len(ytr_t), generator=gen)
        total, seen = 0.0, 0
        t0 = time.perf_counter()
        for i in range(0, len(perm), cfg["batch_size"]):
            b = perm[i: i + cfg["batch_size"]]
            if len(b) < 2 and has_bn:
                continue  # a batch of one breaks batch norm
            total += step(Xtr_t[b].to(dev), ytr_t[b].to(dev)) * len(b)
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
    outputs = {"val_logits": zva, "val_labels": yva, "test_logits": zte, "test_labels": yte,
               **step.outputs(Xte_t)}
    if best:
        outputs.update({"best_val_logits": best["val_logits"], "best_test_logits": best["test_logits"],
                        "best_epoch": np.array(best["epoch"])})
    if cfg["keep_epoch_logits"]:
        outputs["epoch_val_logits"] = np.stack(epoch_logits["val"])
        outputs["epoch_test_logits"] = np.stack(epoch_logits["test"])
    info = {"device": str(dev), "cpu_threads": torch.get_num_threads(),
            "wall_time_s": round(time.perf_counter() - start, 3),
            "step_time_s": round(step_time, 3),
            "n_parameters": int(sum(p.numel() for p in model.parameters())),
            "n_train": int(len(ytr)), "n_val": int(len(yva)), "n_test": int(len(yte))}
    return RunResult(cfg, pd.DataFrame(rows), outputs, info, model=model)

