"""One optimisation step of a run, by kind (chapters 2-5): plain, mixup and the meta-learned step.

The losses a config can name (:data:`LOSSES`, extended with :func:`register_loss`), the
optimizer and its schedule, on-device augmentation, and :func:`make_step`, which picks the
step a config asks for (:class:`PlainStep`, :class:`MixupStep`, :class:`MetaStep`).
"""
from __future__ import annotations

import numpy as np

__all__ = ["LOSSES", "register_loss", "Step", "PlainStep", "MixupStep", "MetaStep", "make_step"]


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


def _calibration_losses():
    from calibcourse.study.training import losses as L

    return {"focal": L.focal_loss, "flsd53": L.flsd53_loss, "label_smoothing": L.label_smoothing_loss,
            "ce_mmce": L.ce_mmce_loss, "ce_dece": L.ce_dece_loss}


#: name -> fn(logits, labels, **loss_kwargs) -> scalar loss
LOSSES = {"ce": _ce, "bce": _bce, "nll": _nll, **_calibration_losses()}
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
    >>> from calibcourse.study.training.config import normalize_config
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


def make_optimizer(cfg, model):
    """The optimizer and learning-rate schedule a config names, for ``model``'s parameters."""
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
    #: the config's ``reduction`` (``"sum"``: the loss summed over the batch, as meta-calibration's code
    #: trains) and ``clip_grad_norm`` (the gradient's norm is clipped to it before the step); set by :func:`make_step`
    reduction, clip_grad_norm = "mean", None

    def __init__(self, model, optimizer):
        self.model, self.optimizer = model, optimizer

    def loss(self, xb, yb):
        """The batch's training loss, a scalar tensor to differentiate (subclasses define it)."""
        raise NotImplementedError(f"{type(self).__name__} must define loss(xb, yb) or __call__(xb, yb)")

    def __call__(self, xb, yb) -> float:
        """One optimizer step on the batch ``(xb, yb)`` (mixed precision with a scaler); its loss."""
        import torch

        if self.scaler is None:
            loss = self.loss(xb, yb)
            self.optimizer.zero_grad()
            (loss * len(yb) if self.reduction == "sum" else loss).backward()
            if self.clip_grad_norm is not None:
                torch.nn.utils.clip_grad_norm_(self.model.parameters(), self.clip_grad_norm)
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
        """The configured loss of the batch, on float32 logits."""
        # float32 logits into the loss, also under autocast (the losses' logs and powers need it)
        return self.loss_fn(self.model(xb).float(), yb, **self.loss_kwargs)


class MixupStep(Step):
    """Gradient step on the mixup loss of a mixed batch (``mixup_alpha`` in the config).

    Each batch is mixed with a permutation of itself, ``lam ~ Beta(alpha, alpha)``
    (:func:`calibcourse.study.training.losses.mixup_batch`), and the loss is ``lam`` CE on one label plus
    ``1 - lam`` CE on the other (:func:`calibcourse.study.training.losses.mixup_loss`).

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
        """The mixup loss of the batch mixed with a permutation of itself."""
        from calibcourse.study.training.losses import mixup_batch, mixup_loss

        xm, ya, yb2, lam = mixup_batch(xb, yb, self.alpha, generator=self.generator)
        return mixup_loss(self.model(xm).float(), ya, yb2, lam)


class MetaStep(Step):
    """The bilevel step of chapter 5 (:class:`calibcourse.study.training.meta.MetaTrainer`, the ``meta``
    section of the config), logging the gamma-Net's gammas on the test split every epoch.

    Its history columns: ``gamma_mean``, ``gamma_std``, ``gamma_q10``, ``gamma_median``,
    ``gamma_q90`` (and ``gamma_capped`` with a cap; with ``log_hypergradient`` the diagnosis's
    ``hg_push_mean``, ``hg_push_snr``, ``hg_down_share``, ``step_dgamma`` and ``meta_overconfidence``);
    its outputs: ``gamma_hist`` (a histogram per epoch over :attr:`GAMMA_BINS`), ``test_gammas``, and,
    when the meta section says ``"snapshots": True``, the gammas and true-class probabilities of every
    test sample at four epochs (``snapshot_*``: no page reads them, and they would fill the cache).

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
        The config's ``meta`` section, passed to :class:`calibcourse.study.training.meta.MetaTrainer`.

    Examples
    --------
    >>> import torch
    >>> torch.manual_seed(0) and None
    >>> from calibcourse.study.training.models import MLP
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
        from calibcourse.study.training.meta import MetaTrainer

        #: the config's ``snapshots`` (default False: the per-epoch summaries only, the cache's budget); True
        #: also keeps every test sample's gamma and true-class probability at four epochs
        self.keep_snapshots = meta.pop("snapshots", False)
        self.trainer = MetaTrainer(model, X_val, y_val, seed=seed, **meta)
        self.trainer.epoch = 1
        self.hist = []
        # gammas and the true-class probability of every test sample at four epochs
        self.snapshot_epochs = sorted({1, max(1, epochs // 4), max(1, epochs // 2), epochs})
        self.snapshots = {"gammas": [], "p_true": []}

    def __call__(self, xb, yb) -> float:
        """One bilevel step on the batch: the gamma-Net's, then the network's; its loss."""
        return self.trainer.step(xb, yb, self.optimizer)

    def epoch_end(self, epoch, X_test, test_logits, y_test) -> dict:
        """The epoch's gamma summaries on the test split (and the hypergradient's, where logged)."""
        from calibcourse.calibration.metrics import softmax

        g = self.trainer.gammas(X_test)
        self.hist.append(np.histogram(np.clip(g, 0, 10), bins=self.GAMMA_BINS)[0])
        q10, q50, q90 = np.quantile(g, [0.1, 0.5, 0.9])
        row = {"gamma_mean": float(g.mean()), "gamma_std": float(g.std()), "gamma_q10": float(q10),
               "gamma_median": float(q50), "gamma_q90": float(q90)}
        if self.trainer.gamma_max is not None:
            row["gamma_capped"] = float(np.mean(g >= self.trainer.gamma_max))
        if self.trainer.push is not None:
            row.update(self._diagnosis())
        self.trainer.epoch = epoch + 1
        if self.keep_snapshots and epoch in self.snapshot_epochs and test_logits.ndim == 2:
            p_true = softmax(test_logits)[np.arange(len(y_test)), y_test]
            self.snapshots["gammas"].append(g.astype(np.float32))
            self.snapshots["p_true"].append(p_true.astype(np.float32))
        return row

    def _diagnosis(self) -> dict:
        """The epoch's hypergradient (its first-order push on the batch's mean gamma, ``-g . d(mean gamma)/d(theta)``:
        mean, signal-to-noise ratio, share of steps that push gamma down), the change of the mean gamma the
        meta optimizer's steps made over the epoch (``step_dgamma``), and the sign of miscalibration on the
        meta split (confidence - accuracy: > 0 overconfident)."""
        import torch

        t, push, moved = self.trainer, np.asarray(self.trainer.push, dtype=float), np.asarray(self.trainer.moved)
        t.push, t.moved = [], []
        row = {"step_dgamma": float(moved.sum()), "hg_push_mean": float(push.mean()) if push.size else 0.0,
               "hg_push_snr": float(push.mean() / (push.std(ddof=1) / np.sqrt(push.size)))
               if push.size > 1 and push.std() > 0 else 0.0,
               "hg_down_share": float(np.mean(push < 0)) if push.size else 0.0}
        self.model.eval()
        with torch.no_grad():
            p = torch.softmax(self.model(t.X_val), dim=1)
        self.model.train()
        conf, pred = p.max(dim=1)
        row["meta_overconfidence"] = float(conf.mean() - (pred == t.y_val).double().mean())
        return row

    def state_dict(self) -> dict:
        """The meta-learner's state: epoch, gamma-Net, its optimizer and generator, the logs."""
        t = self.trainer
        return {"epoch": t.epoch, "gamma_net": t.gamma_net.state_dict(), "gamma_scale": t.gamma_net._scale,
                "meta_optimizer": t.opt.state_dict(), "meta_generator": t.gen.get_state(),
                "hist": list(self.hist), "snapshots": {k: list(v) for k, v in self.snapshots.items()}}

    def load_state_dict(self, state: dict) -> None:
        """Restore the meta-learner's state of :meth:`state_dict`."""
        t = self.trainer
        t.gamma_net.load_state_dict(state["gamma_net"])
        t.gamma_net._scale = state["gamma_scale"]
        t.opt.load_state_dict(state["meta_optimizer"])
        t.gen.set_state(state["meta_generator"])
        t.epoch = state.get("epoch", 1)
        self.hist = list(state["hist"])
        self.snapshots = {k: list(v) for k, v in state["snapshots"].items()}

    def outputs(self, X_test) -> dict:
        """The gamma histograms, the test gammas and their snapshots."""
        out = {"gamma_hist": np.stack(self.hist), "gamma_bins": self.GAMMA_BINS,
               "test_gammas": self.trainer.gammas(X_test)}
        if self.snapshots["gammas"]:
            out.update({"snapshot_epochs": np.array(self.snapshot_epochs),
                        "snapshot_test_gammas": np.stack(self.snapshots["gammas"]),
                        "snapshot_test_p_true": np.stack(self.snapshots["p_true"])})
        return out


def make_step(cfg: dict, model, optimizer, X_val, y_val, generator, X_train=None, y_train=None) -> Step:
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
    X_train, y_train : numpy.ndarray, optional
        The training split (a meta-learned step with a look-ahead of several steps draws its batches there).

    Returns
    -------
    Step
        A :class:`MetaStep`, :class:`MixupStep` or :class:`PlainStep`.

    Examples
    --------
    >>> import torch
    >>> net = torch.nn.Linear(3, 2)
    >>> from calibcourse.study.training.config import normalize_config
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

    backbone = {"reduction": cfg.get("reduction", "mean"), "clip_grad_norm": cfg.get("clip_grad_norm")}
    if cfg.get("meta"):
        extra = {k: v for k, v in backbone.items() if k in cfg}
        if cfg["meta"].get("horizon", 1) > 1:
            extra.update(X_train=torch.from_numpy(X_train), y_train=torch.from_numpy(y_train))
        return MetaStep(model, optimizer, torch.from_numpy(X_val), torch.from_numpy(y_val), seed=cfg["seed"],
                        epochs=cfg["epochs"], **cfg["meta"], **extra)
    if cfg.get("mixup_alpha"):
        step = MixupStep(model, optimizer, cfg["mixup_alpha"], generator)
    else:
        step = PlainStep(model, optimizer, LOSSES[cfg["loss"]], cfg["loss_kwargs"])
    step.reduction, step.clip_grad_norm = backbone["reduction"], backbone["clip_grad_norm"]
    return step
