"""Training: every network of the book is one run config trained by ``train`` (chapters 1-5).

One declarative run config -> one :class:`RunResult`::

    from calibcourse.study.training.train import train
    result = train({"data": {"name": "mnist1d"}, "model": {"name": "mlp", "depth": 4},
                    "epochs": 30, "seed": 0})
    result.history            # per epoch: train loss, test error, NLL and ECE, val NLL
    result.outputs            # val/test logits and labels of the final epoch

Runs on CUDA when present and on the CPU otherwise (``device="auto"``). The same
config and seed on the same machine give the same numbers. Results are cached
by :mod:`calibcourse.study.runs.cache`.

Optional keys, absent from (and so not hashed in) configs that do not use them:
``augment`` (``{"crop_padding": 4, "hflip": True}``: He et al.'s random crops of padded
images and horizontal flips, drawn on the device), ``amp`` (``True``: mixed precision,
``torch.autocast`` + ``GradScaler``, on CUDA only; ignored on the CPU and by the
meta-learned step), ``milestones`` (the epochs where ``schedule="step"`` divides the
rate by 10; default 50 % and 75 % of ``epochs``), ``warmup`` (``{"epochs": 1, "lr":
0.01}``: that rate for the first epochs, then the config's), ``nesterov`` (default:
Nesterov momentum whenever ``momentum > 0``), ``mixup_alpha`` (train on mixup batches,
:class:`MixupStep`), ``meta`` (the meta-learned gamma-Net of chapter 5, :class:`MetaStep`) and
``keep_best`` (``"val_nll"``: keep the outputs of the epoch with the lowest validation NLL),
``reduction`` (``"sum"``: the training loss summed over the batch, not averaged, as meta-calibration's
code trains), ``clip_grad_norm`` (the backbone's gradient norm clipped to it before each step),
``cross_fit`` (``{"folds": k}``: calibration without a held-out set, chapter 6: ``k`` fold
networks and a final one, trained by :func:`calibcourse.study.training.crossfit.train_cross_fitted`), and
chapter 6's ``shift`` (rotated copies of the test images, stored as the splits ``"shift/<angle>"``:
:mod:`calibcourse.study.training.shift`), ``ood`` (out-of-distribution images scored and stored as the
split ``"ood"``: :func:`calibcourse.study.training.shift.check_ood`), ``mc_dropout`` (the stored outputs
average that many forward passes with dropout on) and ``ensemble`` (that many members trained from derived seeds, their
softmaxes averaged: :mod:`calibcourse.study.training.predictive`; an ensemble does not checkpoint).
A run can checkpoint every few epochs and resume from the checkpoint with the same result as
an uninterrupted run (``train(config, checkpoint=path)``). ``CALIBCOURSE_SMOKE="E:B[:S]"`` caps every run at
``E`` epochs of ``B`` batches of ``S`` samples (the smoke run of the ``full`` profile; its
results are marked ``info["smoke"]`` and never stored in the committed cache).
"""

from __future__ import annotations

import os
import random
import time
from contextvars import ContextVar

import numpy as np

from calibcourse.study.training.config import load_data_splits, normalize_config, smoke_caps
from calibcourse.study.training.provenance import current, numerics, resolve_threads
from calibcourse.study.training.results import RunResult, epoch_measures, predict_logits
from calibcourse.study.training.steps import augment_batch, make_optimizer, make_step

__all__ = ["train", "default_device", "make_model"]


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
        of :data:`calibcourse.study.training.models.MODELS` (or ``frozen_features``) and its arguments.
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

    from calibcourse.study.training.models import FrozenFeatureClassifier, build_model

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
    """The path of the pretrained weights file ``name``: in the ``weights`` folder of
    :func:`calibcourse.study.training.data.data_root`. A missing file raises a
    ``FileNotFoundError`` that names it and says how to get it."""
    from calibcourse.study.training.data import data_root

    folder = str(data_root() / "weights")
    path = os.path.join(folder, name)
    if not os.path.isfile(path):
        source = WEIGHTS_SOURCES.get(name, "the file the config names")
        raise FileNotFoundError(f"weights file {path} not found: download {source} on a machine with "
                                f"internet and put it in {folder} (the weights folder of $CALIBCOURSE_DATA, "
                                "default ~/data); weights are never downloaded during a run")
    return path


def _predictive_outputs(cfg: dict, model, X: dict, stats, labels: dict) -> dict:
    """Chapter 6's outputs of a trained network: the shifted test sets' logits and labels (``shift``, with
    its out-of-distribution images where it asks for them, or ``ood``'s), and with ``mc_dropout`` every
    split's logits replaced by the MC-dropout average (seeded by the run's seed). ``stats``: the inputs'
    (mean, std)."""
    if not cfg.get("shift") and not cfg.get("ood") and not cfg.get("mc_dropout"):
        return {}
    from calibcourse.study.training.predictive import STORED_DTYPE, mc_dropout_logits
    from calibcourse.study.training.shift import OOD_LABEL, OOD_SPLIT, ood_images, ood_set, shifted_sets

    out, sets = {}, dict(X)
    mean, std = (np.asarray(v, dtype=np.float64) for v in stats)
    # a smoke run (CALIBCOURSE_SMOKE) scores as many out-of-distribution images as test images: its small
    # files' test split, not the 10,000 letters a real run draws
    n_ood = (lambda n: min(n, len(labels["test"]))) if smoke_caps() else (lambda n: n)
    shifted = {}
    if cfg.get("shift"):
        shifted = shifted_sets(X["test"], labels["test"], cfg["shift"], fill=(-mean / std).reshape(-1))
        if cfg["shift"].get("ood"):
            m = n_ood(cfg["shift"]["ood"])
            shifted[OOD_SPLIT] = (ood_images(m, X["test"].shape[1:], mean, std), np.full(m, OOD_LABEL))
    if cfg.get("ood"):
        shifted[OOD_SPLIT] = ood_set({**cfg["ood"], "n": n_ood(cfg["ood"]["n"])}, X["test"].shape[1:], mean, std)
    for name, (Xs, ys) in shifted.items():
        sets[name] = Xs
        out[f"{name}_labels"] = ys
        # the network computes in float32: its logits are stored as float32 without loss
        out[f"{name}_logits"] = predict_logits(model, Xs).astype(np.float32)
    if cfg.get("mc_dropout"):
        for name, Xs in sets.items():
            out[f"{name}_logits"] = mc_dropout_logits(model, Xs, cfg["mc_dropout"], seed=cfg["seed"]).astype(
                STORED_DTYPE
            )
    return out


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


#: set by ``train(..., perturb_init=True)`` for the runs it starts (fold and ensemble members too)
_PERTURB_INIT = ContextVar("perturb_init", default=False)


def train(config: dict, progress: bool | None = None, checkpoint=None, checkpoint_every: int = 5,
          threads: int | None = None, on_checkpoint=None, perturb_init: bool = False) -> RunResult:
    """Train one run config; return its :class:`RunResult`.

    The config names the data, the model (:func:`make_model`), the optimizer and the
    per-batch step (:func:`make_step`); the loop is the same for every method.
    The run sets torch's intra-op threads to ``threads`` (the thread policy of
    :mod:`calibcourse.study.training.provenance`: 1 unless the caller says otherwise), whatever the caller's
    torch setting was: they decide a CPU run's last bits. The caller's setting is restored
    afterwards, and the result records the run's provenance. Chapters read runs through
    :mod:`calibcourse.study.runs.cache`, which trains a config only when its result is not stored.

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
        stored (:meth:`calibcourse.study.runs.cache.Cache.get_or_train` does).
    checkpoint_every : int, default=5
        Epochs between checkpoints.
    threads : int or None, default=None
        Torch's intra-op threads while the run trains; None means
        :data:`calibcourse.study.training.provenance.DEFAULT_THREADS` (1).
    on_checkpoint : callable, optional
        Called with the epoch right after each checkpoint is written (the run grid's
        preemption drill kills its job there: :class:`calibcourse.tools.grid.TrainJob`).
    perturb_init : bool, default=False
        Move every non-zero initial weight of the network one float up (``torch.nextafter``)
        before training: the same run with a last-bit difference, as another CPU would give it.
        How far that moves the run's printed measures says whether its training amplifies
        noise (:func:`calibcourse.study.runs.stability.stability`); never for a stored result.

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
    # pinned numerics (provenance.PINNED_ENV): oneDNN's kernels pick their blocking by the CPU's
    # caches, so its convolutions fall back to torch's own (im2col and MKL's reproducible GEMM)
    mkldnn = torch.backends.mkldnn.enabled
    torch.backends.mkldnn.enabled = mkldnn and numerics(threads) != "pinned"
    token = _PERTURB_INIT.set(bool(perturb_init))
    try:
        if config.get("cross_fit"):  # k fold networks and a final one (chapter 6): their own module
            from calibcourse.study.training.crossfit import train_cross_fitted

            result = train_cross_fitted(config, lambda cfg, data: _train(cfg, progress, None, checkpoint_every,
                                                                         data=data))
        elif normalize_config(config).get("ensemble"):
            from calibcourse.study.training.predictive import train_ensemble

            result = train_ensemble(normalize_config(config),
                                    lambda member: _train(member, progress, None, checkpoint_every))
        else:
            result = _train(config, progress, checkpoint, checkpoint_every, on_checkpoint)
        if perturb_init:
            result.info["perturbed_init"] = True
        return result
    finally:
        _PERTURB_INIT.reset(token)
        torch.backends.mkldnn.enabled = mkldnn
        torch.set_num_threads(before)


def _train(config: dict, progress: bool | None, checkpoint, checkpoint_every: int, on_checkpoint=None,
           data=None) -> RunResult:
    """One network's run: set it up, resume it from its checkpoint if there is one, train its epochs
    (checkpointing every ``checkpoint_every``), and return its outputs. ``data``: the splits a
    cross-fitted run hands its fold networks (:mod:`calibcourse.study.training.crossfit`)."""
    from tqdm.auto import tqdm

    cfg = normalize_config(config)
    run_cfg, caps = _smoke_capped(cfg)
    if progress is None:
        progress = not os.environ.get("CALIBCOURSE_QUIET")
    start = time.perf_counter()
    run = _Run(cfg, run_cfg, data)
    first = run.resume(checkpoint) if checkpoint is not None and os.path.isfile(checkpoint) else 1
    bar = tqdm(range(first, run_cfg["epochs"] + 1), disable=not progress, leave=False,
               desc=f"{cfg['model']['name']} on {cfg['data']['name']}")
    for epoch in bar:
        train_loss = run.train_epoch(epoch, caps)
        test = run.evaluate(epoch, train_loss)
        bar.set_postfix(err=f"{test['error']:.3f}", ece=f"{test['ece']:.3f}")
        if checkpoint is not None and epoch % max(1, checkpoint_every) == 0 and epoch < run_cfg["epochs"]:
            run.save(checkpoint, epoch)
            if on_checkpoint is not None:
                on_checkpoint(epoch)
    return run.result(start, first, caps)


def _smoke_capped(cfg: dict):
    """The config the loop runs (``CALIBCOURSE_SMOKE``'s caps on the epochs, the milestones and the
    meta-learner's validation batch; the result keeps the config itself) and the caps, or None."""
    caps = smoke_caps()
    if caps is None:
        return cfg, None
    run_cfg = {**cfg, "epochs": min(cfg["epochs"], caps[0])}
    if "milestones" in run_cfg:
        run_cfg["milestones"] = [m for m in run_cfg["milestones"] if m < run_cfg["epochs"]] or None
    if caps[2] and run_cfg.get("meta"):
        run_cfg["meta"] = {**run_cfg["meta"], "val_batch": min(run_cfg["meta"].get("val_batch", 256), caps[2])}
    return run_cfg, caps


def _perturb_init(model) -> None:
    """Move every non-zero weight of ``model`` one float up (``train(..., perturb_init=True)``)."""
    import torch

    with torch.no_grad():
        for p in model.parameters():
            p.copy_(torch.where(p != 0, torch.nextafter(p, torch.full_like(p, float("inf"))), p))


class _Run:
    """One network's run, in the order its random numbers are drawn: the seeds, the data, the model,
    the optimizer and the per-batch step, the augmentation; then its epochs, each a pass over the
    training split and a measure of the validation and test splits."""

    def __init__(self, cfg: dict, run_cfg: dict, data=None):
        import torch

        self.cfg, self.run_cfg = cfg, run_cfg
        torch.manual_seed(cfg["seed"])
        np.random.seed(cfg["seed"])
        self.dev = default_device(cfg["device"])
        self.Xtr, self.ytr, self.Xva, self.yva, self.Xte, self.yte, self.stats = (
            data or load_data_splits(cfg["data"], return_stats=True))
        self._network()
        self._augmentation()
        self.rows, self.epoch_logits, self.step_time, self.best = [], {"val": [], "test": []}, 0.0, {}
        self.zva = self.zte = None

    def _network(self) -> None:
        """The model, its optimizer and schedule, the data-order generator and the per-batch step."""
        import torch

        cfg = self.cfg
        num_classes = 1 if cfg["loss"] == "bce" else int(max(self.ytr.max(), self.yte.max()) + 1)
        self.model = make_model(cfg, self.Xtr.shape[1:], num_classes, self.dev)
        if _PERTURB_INIT.get():
            _perturb_init(self.model)
        self.opt, self.sched = make_optimizer(self.run_cfg, self.model)
        self.Xtr_t, self.ytr_t = torch.from_numpy(self.Xtr), torch.from_numpy(self.ytr)
        self.Xva_t, self.Xte_t = torch.from_numpy(self.Xva), torch.from_numpy(self.Xte)
        self.gen = torch.Generator().manual_seed(cfg["seed"])
        self.step = make_step(self.run_cfg, self.model, self.opt, self.Xva, self.yva, self.gen, self.Xtr, self.ytr)
        self.gens = {"data": self.gen}

    def _augmentation(self) -> None:
        """Random crops and flips drawn on the device (``augment``), the gradient scaler of mixed
        precision (``amp``, CUDA only), and whether the model has batch norm."""
        import torch

        cfg = self.cfg
        self.augment, self.aug_gen, self.fill = cfg.get("augment"), None, None
        if self.augment:
            if self.Xtr.ndim != 4:
                raise ValueError(f"augment needs images (n, C, H, W); data {cfg['data']['name']!r} has shape "
                                 f"{self.Xtr.shape}")
            # the data sets fit in GPU memory: move the training split once, augment each batch there
            self.Xtr_t, self.ytr_t = self.Xtr_t.to(self.dev), self.ytr_t.to(self.dev)
            self.aug_gen = torch.Generator().manual_seed(cfg["seed"] + 2)
            self.gens["augment"] = self.aug_gen
            mean, std = self.stats
            self.fill = (-np.asarray(mean) / np.asarray(std)).reshape(-1)  # a black pixel, normalized
        if cfg.get("amp") and self.dev.type == "cuda" and not cfg.get("meta"):
            self.step.scaler = torch.amp.GradScaler("cuda")
        self.has_bn = any(isinstance(m, torch.nn.BatchNorm1d | torch.nn.BatchNorm2d) for m in self.model.modules())

    def resume(self, path) -> int:
        """Restore the run from its checkpoint (every state and random state); the first epoch to train."""
        import torch

        state = torch.load(path, map_location=self.dev, weights_only=False)
        if state["config"] != self.cfg:
            raise ValueError(f"checkpoint {path} belongs to another config; remove it")
        self.model.load_state_dict(state["model"])
        self.opt.load_state_dict(state["optimizer"])
        if self.sched is not None:
            self.sched.load_state_dict(state["scheduler"])
        if self.step.scaler is not None and state["scaler"] is not None:
            self.step.scaler.load_state_dict(state["scaler"])
        self.step.load_state_dict(state["step"])
        _set_rng_state(state["rng"], self.dev, self.gens)
        self.rows, self.best, self.epoch_logits = state["rows"], state["best"], state["epoch_logits"]
        self.step_time = state["step_time"]
        return state["epoch"] + 1

    def _warm_up(self, epoch: int) -> None:
        """He et al.'s ResNet-110: a smaller rate until training starts to converge, then the schedule's."""
        warmup = self.cfg.get("warmup")
        if warmup and epoch <= warmup["epochs"] + 1:
            for group in self.opt.param_groups:
                group["lr"] = warmup["lr"] if epoch <= warmup["epochs"] else self.run_cfg["lr"]

    def _batches(self, perm, caps):
        """The index batches of one epoch, in the order ``perm`` draws them (the smoke caps' batches and
        rows at most; a batch of one is skipped where batch norm would break on it)."""
        max_batches, max_rows = (None, None) if caps is None else caps[1:]
        size = self.cfg["batch_size"]
        for n_batch, i in enumerate(range(0, len(perm), size)):
            if max_batches is not None and n_batch >= max_batches:
                return
            b = perm[i: i + size][:max_rows]
            if len(b) < 2 and self.has_bn:
                continue
            yield b

    def train_epoch(self, epoch: int, caps) -> float:
        """One pass over the training split in a new random order; the mean training loss."""
        import torch

        self._warm_up(epoch)
        self.model.train()
        perm = torch.randperm(len(self.ytr_t), generator=self.gen)
        total, seen = 0.0, 0
        t0 = time.perf_counter()
        for b in self._batches(perm, caps):
            xb, yb = self.Xtr_t[b.to(self.Xtr_t.device)].to(self.dev), self.ytr_t[b.to(self.ytr_t.device)].to(self.dev)
            if self.augment:
                xb = augment_batch(xb, self.augment, self.aug_gen, self.fill)
            total += self.step(xb, yb) * len(b)
            seen += len(b)
        self.step_time += time.perf_counter() - t0
        if not np.isfinite(total):
            raise FloatingPointError(f"training diverged in epoch {epoch}: the training loss is {total}; "
                                     "lower the learning rate or regularize")
        if self.sched is not None:
            self.sched.step()
        return total / max(seen, 1)

    def evaluate(self, epoch: int, train_loss: float) -> dict:
        """The epoch's row of the history (and the logits ``keep_best`` and ``keep_epoch_logits`` keep);
        the test split's measures."""
        self.zva, self.zte = predict_logits(self.model, self.Xva_t), predict_logits(self.model, self.Xte_t)
        s_te, s_va = epoch_measures(self.zte, self.yte), epoch_measures(self.zva, self.yva)
        self.rows.append({"epoch": epoch, "train_loss": train_loss, "val_error": s_va["error"],
                          "val_nll": s_va["nll"], "test_error": s_te["error"], "test_nll": s_te["nll"],
                          "test_ece": s_te["ece"], **self.step.epoch_end(epoch, self.Xte_t, self.zte, self.yte)})
        if self.cfg.get("keep_best") == "val_nll" and s_va["nll"] < self.best.get("val_nll", np.inf):
            # early stopping on the validation NLL, kept beside the final epoch (chapter 2)
            self.best = {"val_nll": s_va["nll"], "epoch": epoch, "val_logits": self.zva, "test_logits": self.zte}
        if self.cfg["keep_epoch_logits"]:
            self.epoch_logits["val"].append(self.zva.astype(np.float32))
            self.epoch_logits["test"].append(self.zte.astype(np.float32))
        return s_te

    def save(self, path, epoch: int) -> None:
        """Checkpoint the run after ``epoch``: every state a resumed run needs to equal this one."""
        sched, scaler = self.sched, self.step.scaler
        _save_checkpoint(path, {
            "config": self.cfg, "epoch": epoch, "model": self.model.state_dict(), "optimizer": self.opt.state_dict(),
            "scheduler": sched.state_dict() if sched is not None else None,
            "scaler": scaler.state_dict() if scaler is not None else None,
            "step": self.step.state_dict(), "rng": _rng_state(self.dev, self.gens), "rows": self.rows,
            "best": self.best, "epoch_logits": self.epoch_logits, "step_time": self.step_time})

    def _outputs(self) -> dict:
        """The final epoch's logits and labels, the step's own outputs, the predictive ones (shift, OOD,
        MC dropout), the kept best epoch's and every epoch's logits where the config asks."""
        outputs = {"val_logits": self.zva, "val_labels": self.yva, "test_logits": self.zte, "test_labels": self.yte,
                   **self.step.outputs(self.Xte_t)}
        outputs.update(_predictive_outputs(self.cfg, self.model, {"val": self.Xva, "test": self.Xte},
                                           stats=self.stats, labels={"val": self.yva, "test": self.yte}))
        if self.best:
            outputs.update({"best_val_logits": self.best["val_logits"], "best_test_logits": self.best["test_logits"],
                            "best_epoch": np.array(self.best["epoch"])})
        if self.cfg["keep_epoch_logits"]:
            outputs["epoch_val_logits"] = np.stack(self.epoch_logits["val"])
            outputs["epoch_test_logits"] = np.stack(self.epoch_logits["test"])
        return outputs

    def result(self, start: float, first: int, caps) -> RunResult:
        """The run's :class:`RunResult`: history, outputs, the facts of the run and its provenance."""
        import pandas as pd
        import torch

        outputs = self._outputs()
        info = {"device": str(self.dev),
                "wall_time_s": round(time.perf_counter() - start, 3),
                "step_time_s": round(self.step_time, 3),
                "n_parameters": int(sum(p.numel() for p in self.model.parameters())),
                "n_train": int(len(self.ytr)), "n_val": int(len(self.yva)), "n_test": int(len(self.yte))}
        if first > 1:
            info["resumed_at_epoch"] = first
        if caps is not None:
            info["smoke"] = (f"{self.run_cfg['epochs']} epochs of at most {caps[1]} batches"
                             + (f" of at most {caps[2]} samples" if caps[2] else ""))
        provenance = current(threads=torch.get_num_threads(), device=self.dev)
        return RunResult(self.cfg, pd.DataFrame(self.rows), outputs, info, provenance=provenance, model=self.model)
