"""Meta-regularization (chapter 5; Wang and Golebiowski, arXiv 2303.15057).

A gamma-Net maps the penultimate features of a backbone to one focal-loss gamma
per sample. It is trained *bilevel*: the backbone takes a step on a training
batch with focal loss at those gammas (inner), and the gamma-Net is updated by
the calibration loss (SECE or DECE) of the backbone *after* that step, on a
validation batch (outer), so the outer gradient reaches the gamma-Net through
the inner update.
"""
from __future__ import annotations

import numpy as np
import torch
from torch import nn

from calibcourse.calibration._validation import check_int
from calibcourse.study.training.lookahead import LOOKAHEAD_PARAMS, LOOKAHEADS, lookahead_outer_loss, lookahead_step
from calibcourse.study.training.losses import dece_loss, focal_loss, sece_loss
from calibcourse.study.training.results import meta_count

__all__ = ["GammaNet", "MetaTrainer", "lookahead_outer_loss", "lookahead_step", "permuted_labels", "adam_noise_walk",
           "OUTER_LOSSES",
           "LOOKAHEADS", "LOOKAHEAD_PARAMS", "META_LOSSES", "CONTROLS", "MOMENT_RESETS"]

OUTER_LOSSES = {"sece": sece_loss, "dece": dece_loss}

#: the outer objective: "cal" (the calibration loss alone, the paper) or "ce+cal" (cross-entropy plus
#: ``cal_weight`` times the calibration loss, as meta-calibration)
META_LOSSES = ("cal", "ce+cal")
#: negative controls of the bilevel loop: None (none), "null" (the outer gradient is set to zero:
#: the gamma-Net keeps its initial output), "permuted" (the outer loss sees the validation labels
#: permuted once by the run's seed: not a placebo, since with random labels the meta split looks
#: badly overconfident and the outer gradient pushes gamma up), "placebo" (the outer gradient is
#: replaced by a random direction of the same norm: the gamma-Net takes steps of the same size that
#: carry no information about the meta split; the backbone then trains at whatever gammas these
#: steps give, so its accuracy and calibration move with them)
CONTROLS = (None, "null", "permuted", "placebo")
#: when the meta optimizer's moments are reset: None (never, Adam's usual memory: with beta2 = 0.999
#: its second moment averages about the last 1,000 squared gradients) or "epoch" (at the first outer
#: step of every epoch, so that its steps are scaled by the current epoch's gradients only)
MOMENT_RESETS = (None, "epoch")


class GammaNet(nn.Module):
    r"""Sample-wise focal-loss gamma from penultimate features ``x`` (b, d).

    .. math:: a = xA \in \mathbb R^{b \times k},\quad p = \mathrm{softmax}(a),\quad
              \tilde x = p A^\top \in \mathbb R^{b \times d},\quad
              \gamma = |\tilde x W| / \tau \in \mathbb R^{b}

    ``A`` (d, k) holds ``heads = k`` attention heads, ``W`` (d, 1) is a linear
    layer and ``tau`` a temperature; the absolute value keeps gamma >= 0.
    Calling it on features of shape (b, d) returns the b gammas.

    With ``bound=gamma_max`` the output is bounded instead,

    .. math:: \gamma = \gamma_{\max}\, \sigma(\tilde x W / \tau + b) \in (0, \gamma_{\max}),
              \qquad b_0 = \operatorname{logit}(\gamma_0 / \gamma_{\max}),

    so that gamma cannot drift past ``gamma_max``, ``tau`` scales the logit (it is not absorbed by
    a rescale), and every sample starts near ``init_gamma`` (:math:`\gamma_0`; exactly there when
    :math:`\tilde x W = 0`).

    Parameters
    ----------
    in_features : int
        The size ``d`` of the features, >= 1.
    heads : int, default=8
        The number ``k`` of attention heads, >= 1.
    tau : float, default=1.0
        The temperature, > 0.
    init_gamma : float, default=1.0
        Unbounded: the mean gamma of the first batch (the output is rescaled once, on that batch, to start
        there). Bounded: the gamma of every sample at the start, through the bias ``b``.
    bound : float, optional
        None (default): the paper's unbounded ``|x~W| / tau``. A number ``gamma_max`` > ``init_gamma``:
        ``gamma_max * sigmoid(x~W / tau + b)``, with ``b = logit(init_gamma / gamma_max)`` and no rescale.
    limit : float, optional
        A bound on the paper's own form, kept by :meth:`project_` after each update: ``x~`` is a convex
        combination of the columns of ``A``, so ``gamma <= max_j |A_j . W| / tau`` (times the first
        batch's rescale), and ``W`` is shrunk whenever that exceeds ``limit``. The output stays linear in
        ``W``: unlike the sigmoid of ``bound``, its gradient has the same size at every gamma, so it
        cannot saturate near 0 or near the limit.

    Attributes
    ----------
    A : torch.nn.Parameter of shape (d, k)
        The attention heads.
    W : torch.nn.Parameter of shape (d, 1)
        The linear layer.

    Examples
    --------
    >>> net = GammaNet(in_features=84, heads=4, init_gamma=2.0)
    >>> feats = torch.randn(16, 84, generator=torch.Generator().manual_seed(0))
    >>> gammas = net(feats).detach()
    >>> gammas.shape, round(float(gammas.mean()), 4), bool((gammas >= 0).all())
    (torch.Size([16]), 2.0, True)

    Bounded at 5, starting at 1: the gammas lie in (0, 5), near 1 at the start.

    >>> bounded = GammaNet(in_features=84, heads=4, init_gamma=1.0, bound=5.0)
    >>> g = bounded(feats).detach()
    >>> bool((g > 0).all() and (g < 5).all()), round(float(bounded.b.detach()), 4)   # logit(0.2) = -log 4
    (True, -1.3863)
    """

    def __init__(self, in_features: int, heads: int = 8, tau: float = 1.0, init_gamma: float = 1.0,
                 bound: float | None = None, limit: float | None = None):
        super().__init__()
        if in_features < 1 or heads < 1:
            raise ValueError(f"in_features and heads must be >= 1; got {in_features}, {heads}")
        if not tau > 0:
            raise ValueError(f"tau must be > 0; got {tau}")
        if bound is not None and not (0 < init_gamma < bound):
            raise ValueError(f"bound must exceed init_gamma > 0 (gamma starts inside (0, bound)); "
                             f"got bound={bound!r}, init_gamma={init_gamma!r}")
        if limit is not None and (bound is not None or not limit > init_gamma):
            raise ValueError(f"limit must exceed init_gamma ({init_gamma}) and cannot be combined with bound; "
                             f"got limit={limit!r}, bound={bound!r}")
        self.tau, self.limit = tau, limit
        self.A = nn.Parameter(torch.randn(in_features, heads) / np.sqrt(in_features))
        self.W = nn.Parameter(torch.randn(in_features, 1) / np.sqrt(in_features))
        self.init_gamma = init_gamma
        self.bound = bound
        if bound is not None:  # created only when bounded: the unbounded net's parameters are unchanged
            self.b = nn.Parameter(torch.tensor(float(np.log(init_gamma / (bound - init_gamma)))))
        self._scale = None  # set on the first batch so that mean gamma starts at init_gamma

    def forward(self, x):
        """The per-sample gamma of each row of features ``x``."""
        p = torch.softmax(x @ self.A, dim=1)
        xt = p @ self.A.T
        if self.bound is not None:
            return self.bound * torch.sigmoid((xt @ self.W)[:, 0] / self.tau + self.b)
        g = (xt @ self.W).abs()[:, 0] / self.tau
        if self._scale is None:
            with torch.no_grad():
                self._scale = float(self.init_gamma / g.mean().clamp_min(1e-8))
        return g * self._scale

    @torch.no_grad()
    def project_(self) -> None:
        """Shrink ``W`` so that no sample's gamma can exceed ``limit`` (nothing without a limit)."""
        if self.limit is None or self._scale is None:
            return
        top = float((self.A.T @ self.W).abs().max()) * self._scale / self.tau
        if top > self.limit:
            self.W.mul_(self.limit / top)


def permuted_labels(y, seed: int):
    """The labels ``y`` permuted once by ``seed`` (the ``"permuted"`` control's outer labels).

    Parameters
    ----------
    y : torch.Tensor of shape (n,)
        The labels.
    seed : int
        The permutation is ``torch.randperm(n)`` under ``torch.Generator().manual_seed(seed)``.

    Returns
    -------
    torch.Tensor of shape (n,)
        The same labels in another order: their class counts are kept, their link to the inputs broken.

    Examples
    --------
    >>> permuted_labels(torch.arange(6), seed=0)
    tensor([2, 5, 3, 0, 1, 4])
    """
    perm = torch.randperm(len(y), generator=torch.Generator().manual_seed(int(seed)))
    return y[perm]


def adam_noise_walk(start, steps: int, reps: int, lr: float = 1e-3, betas=(0.9, 0.999),
                    eps: float = 1e-8, seed: int = 0) -> np.ndarray:
    r"""Parameters moved by Adam on pure-noise gradients: what a meta-gradient without signal does.

    Every step draws each gradient coordinate from :math:`\mathcal N(0, 1)`, independently,
    and applies Adam's update (Kingma and Ba, bias-corrected, no weight decay; the rule of
    ``torch.optim.Adam``), to ``reps`` independent copies of the parameters at once.
    Chapter 5's exercise on the gamma-Net's drift simulates a one-feature gamma-Net with it.

    Parameters
    ----------
    start : array-like of shape (p,)
        The initial parameters (the same for every repetition).
    steps : int
        Number of Adam steps, >= 1.
    reps : int
        Number of independent repetitions, >= 1.
    lr : float, default=1e-3
        Adam's learning rate, > 0.
    betas : tuple of two floats, default=(0.9, 0.999)
        Adam's decay rates of the first and second moments, each in [0, 1).
    eps : float, default=1e-8
        Adam's denominator term, >= 0.
    seed : int, default=0
        Seed of the noise (numpy's ``default_rng``).

    Returns
    -------
    numpy.ndarray of shape (steps + 1, reps, p)
        The parameters before the first step (row 0) and after each step.

    Examples
    --------
    The first step moves every coordinate by ``lr`` exactly (up to ``eps``), whatever the
    gradient's size: :math:`\hat m / \sqrt{\hat v} = g / |g|`.

    >>> walk = adam_noise_walk([0.2, 0.2], steps=3, reps=4, lr=1e-3)
    >>> walk.shape
    (4, 4, 2)
    >>> np.allclose(np.abs(walk[1] - walk[0]), 1e-3)
    True
    """
    start = np.asarray(start, dtype=float)
    if start.ndim != 1 or start.size == 0:
        raise ValueError(f"start must be a non-empty 1-D array of parameters; got shape {start.shape}")
    if int(steps) != steps or steps < 1:
        raise ValueError(f"steps must be an integer >= 1; got {steps!r}")
    if int(reps) != reps or reps < 1:
        raise ValueError(f"reps must be an integer >= 1; got {reps!r}")
    if not lr > 0:
        raise ValueError(f"lr must be > 0; got {lr!r}")
    b1, b2 = betas
    if not (0 <= b1 < 1 and 0 <= b2 < 1):
        raise ValueError(f"betas must both lie in [0, 1); got {betas!r}")
    if eps < 0:
        raise ValueError(f"eps must be >= 0; got {eps!r}")
    rng = np.random.default_rng(seed)
    steps, reps = int(steps), int(reps)
    theta = np.tile(start, (reps, 1))
    m, v = np.zeros_like(theta), np.zeros_like(theta)
    out = np.empty((steps + 1, reps, start.size))
    out[0] = theta
    for t in range(1, steps + 1):
        g = rng.standard_normal(theta.shape)
        m = b1 * m + (1 - b1) * g
        v = b2 * v + (1 - b2) * g * g
        theta = theta - lr * (m / (1 - b1 ** t)) / (np.sqrt(v / (1 - b2 ** t)) + eps)
        out[t] = theta
    return out


def _check_meta(*, control, reset_moments, horizon, start_epoch, lookahead, lookahead_params, has_train, meta_lr,
                meta_loss, cal_weight, meta_val, gamma_bound, init_gamma, outer, gamma_max) -> None:
    """The values of a run config's ``meta`` section that :class:`MetaTrainer` takes: each named in the
    message where it is out of range."""
    if control not in CONTROLS:
        raise ValueError(f"meta.control must be one of None, null, permuted, placebo; got {control!r}")
    if reset_moments not in MOMENT_RESETS:
        raise ValueError(f"meta.reset_moments must be None or 'epoch'; got {reset_moments!r}")
    for key, v in (("horizon", horizon), ("start_epoch", start_epoch)):
        check_int(v, f"meta.{key}", low=1)
    if horizon > 1 and (lookahead != "sgd" or lookahead_params != "head" or not has_train):
        raise ValueError("meta.horizon > 1 needs the plain SGD look-ahead of the last layer "
                         "(lookahead='sgd', lookahead_params='head') and the training split")
    if not meta_lr >= 0:
        raise ValueError(f"meta.meta_lr must be >= 0 (0: the frozen control); got {meta_lr!r}")
    if meta_loss not in META_LOSSES:
        raise ValueError(f"meta.meta_loss must be one of {', '.join(META_LOSSES)}; got {meta_loss!r}")
    if not cal_weight >= 0:
        raise ValueError(f"meta.cal_weight must be >= 0; got {cal_weight!r}")
    if lookahead_params not in LOOKAHEAD_PARAMS:
        raise ValueError(f"meta.lookahead_params must be one of {', '.join(LOOKAHEAD_PARAMS)}; "
                         f"got {lookahead_params!r}")
    if meta_val is not None and not 0 < meta_val < 1:
        raise ValueError(f"meta.meta_val must be a fraction in (0, 1) or None; got {meta_val!r}")
    if gamma_bound is not None and not gamma_bound > init_gamma:
        raise ValueError(f"meta.gamma_bound must exceed init_gamma ({init_gamma}); got {gamma_bound!r}")
    if outer not in OUTER_LOSSES:
        raise ValueError(f"meta.outer must be one of {', '.join(OUTER_LOSSES)}; got {outer!r}")
    if lookahead not in LOOKAHEADS:
        raise ValueError(f"meta.lookahead must be one of {', '.join(LOOKAHEADS)}; got {lookahead!r}")
    if gamma_max is not None and not gamma_max > 0:
        raise ValueError(f"meta.gamma_max must be > 0 or None; got {gamma_max!r}")


class MetaTrainer:
    """One bilevel step per training batch; used by :func:`calibcourse.study.training.train.train` when a
    run config has a ``meta`` section::

        "meta": {"outer": "sece", "heads": 8, "tau": 1.0, "meta_lr": 1e-3, "val_batch": 256,
                 "bandwidth": 0.05, "lookahead": "same", "gamma_max": None, "grad_clip": None}

    The options of the diagnosis (each off by default, so a config without them trains as before):
    ``gamma_bound`` (a bounded gamma-Net, :class:`GammaNet`'s ``bound``), ``control`` (the
    controls ``"null"``, ``"permuted"`` and ``"placebo"``, :data:`CONTROLS`), ``meta_loss`` with
    ``cal_weight`` (:data:`META_LOSSES`), ``lookahead_params`` (:data:`LOOKAHEAD_PARAMS`),
    ``meta_val`` (the meta-learner uses only the first ``meta_val`` fraction of the validation
    split; the rest is left to post-hoc calibration and the baselines' choices) and
    ``reset_moments`` (:data:`MOMENT_RESETS`).

    ``lookahead``: ``"same"`` steps the look-ahead with the real step's update rule and state
    (Adam when the run trains with Adam), ``"sgd"`` with a plain gradient step at the same
    learning rate (the default, for configs written before the choice existed).
    ``gamma_max`` caps the gammas (of the look-ahead and of the real step) and ``grad_clip``
    the norm of the gamma-Net's gradient; neither is in the paper. ``init_gamma`` rescales the
    gamma-Net's output once, on its first batch, so that the mean gamma starts there.

    Parameters
    ----------
    model : torch.nn.Module
        The backbone (``features(x)`` and ``head``), trained by :meth:`step`.
    X_val : torch.Tensor
        Validation inputs; each step draws ``val_batch`` of them (with replacement).
    y_val : torch.Tensor of shape (n,)
        Their labels.
    outer : {"sece", "dece"}, default="sece"
        The calibration loss of the outer step (:data:`OUTER_LOSSES`).
    heads, tau, init_gamma
        Of the :class:`GammaNet`.
    meta_lr : float, default=1e-3
        Learning rate of the gamma-Net's Adam.
    val_batch : int, default=256
        Validation samples per outer step.
    bandwidth : float, default=0.05
        The SECE's bandwidth (``outer="sece"``).
    gamma_max : float, optional
        Cap on the gammas.
    grad_clip : float, optional
        Cap on the norm of the gamma-Net's gradient.
    lookahead : {"sgd", "same"}, default="sgd"
        How the look-ahead steps (:data:`LOOKAHEADS`).
    seed : int, default=0
        Seed of the draws of validation batches (and of the ``"permuted"`` control's permutation).
    gamma_bound : float, optional
        ``None``: the paper's unbounded gamma-Net; a number: ``gamma_bound * sigmoid(.)``.
    control : {None, "null", "permuted", "placebo"}, default=None
        ``"null"``: the loop runs but the gamma-Net's gradient is set to zero before each step, so it
        keeps its initial output; ``"permuted"``: the outer loss sees the validation labels permuted
        once by ``seed`` (:func:`permuted_labels`); ``"placebo"``: the outer gradient is replaced by a
        random direction of the same norm (:data:`CONTROLS`).
    meta_loss : {"cal", "ce+cal"}, default="cal"
        The outer objective: the calibration loss alone, or cross-entropy plus ``cal_weight`` times it.
    cal_weight : float, default=1.0
        The calibration loss's weight with ``meta_loss="ce+cal"``.
    lookahead_params : {"all", "head"}, default="all"
        Which parameters the look-ahead steps (:func:`lookahead_outer_loss`).
    meta_val : float, optional
        In (0, 1): the fraction of the validation split, from its start, that the meta-learner uses.
    gamma_limit : float, optional
        The paper's gamma-Net kept below this by projection (:class:`GammaNet`'s ``limit``).
    horizon : int, default=1
        Plain SGD steps of the last layer in the look-ahead: the first on the batch, the others on
        training batches drawn from ``X_train`` (short-horizon bias, Wu et al. 2018).
    start_epoch : int, default=1
        The first epoch with outer updates; before it the gamma-Net keeps its initial output (:attr:`epoch`
        is set by the caller).
    reset_moments : {None, "epoch"}, default=None
        Reset the meta optimizer's state (Adam's moments and step count) at the first outer step of
        every epoch (:data:`MOMENT_RESETS`); None keeps Adam's memory over the whole run.
    log_hypergradient : bool, default=False
        Keep, per outer step, the first-order change of the batch's mean gamma that the outer gradient
        asks for (:attr:`push`; before clipping, also under a zero meta learning rate).
    reduction : {"mean", "sum"}, default="mean"
        The training loss over a batch, in the look-ahead and in the real step (the config's ``reduction``).
    clip_grad_norm : float, optional
        Clip the backbone's gradient norm in the real step (the config's ``clip_grad_norm``).
    X_train, y_train : torch.Tensor, optional
        The training split, for ``horizon > 1``.

    Attributes
    ----------
    gamma_net : GammaNet
        The gamma-Net, on the backbone's device and dtype.
    opt : torch.optim.Adam
        Its optimizer.

    Examples
    --------
    >>> from calibcourse.study.training.models import MLP
    >>> gen = torch.Generator().manual_seed(0)
    >>> X, y = torch.randn(64, 5, generator=gen), torch.randint(0, 3, (64,), generator=gen)
    >>> model = MLP(in_features=5, num_classes=3, width=8, depth=1)
    >>> trainer = MetaTrainer(model, X[48:], y[48:], heads=2, val_batch=16, init_gamma=2.0)
    >>> opt = torch.optim.Adam(model.parameters(), lr=1e-2)
    >>> for i in range(0, 48, 16):                  # three training batches
    ...     loss = trainer.step(X[i:i + 16], y[i:i + 16], opt)
    >>> isinstance(loss, float), trainer.gammas(X).shape
    (True, (64,))
    """

    def __init__(self, model, X_val, y_val, outer: str = "sece", heads: int = 8, tau: float = 1.0,
                 meta_lr: float = 1e-3, val_batch: int = 256, bandwidth: float = 0.05,
                 init_gamma: float = 1.0, gamma_max: float | None = None, grad_clip: float | None = None,
                 lookahead: str = "sgd", seed: int = 0, gamma_bound: float | None = None, control: str | None = None,
                 meta_loss: str = "cal", cal_weight: float = 1.0, lookahead_params: str = "all",
                 meta_val: float | None = None, gamma_limit: float | None = None, horizon: int = 1,
                 start_epoch: int = 1, log_hypergradient: bool = False, reduction: str = "mean",
                 clip_grad_norm: float | None = None, X_train=None, y_train=None, reset_moments: str | None = None):
        _check_meta(control=control, reset_moments=reset_moments, horizon=horizon, start_epoch=start_epoch,
                    lookahead=lookahead, lookahead_params=lookahead_params, has_train=X_train is not None,
                    meta_lr=meta_lr, meta_loss=meta_loss, cal_weight=cal_weight, meta_val=meta_val,
                    gamma_bound=gamma_bound, init_gamma=init_gamma, outer=outer, gamma_max=gamma_max)
        first = next(model.parameters())
        self.model = model
        self.gamma_net = GammaNet(model.head.in_features, heads=heads, tau=tau, init_gamma=init_gamma,
                                  bound=gamma_bound, limit=gamma_limit).to(first.device, first.dtype)
        self.opt = torch.optim.Adam(self.gamma_net.parameters(), lr=meta_lr)
        if meta_val is not None:  # the first part of the validation split; the rest is post-hoc calibration's
            n_meta = meta_count(len(y_val), meta_val)
            if not 0 < n_meta < len(y_val):
                raise ValueError(f"meta.meta_val={meta_val} leaves no sample on one side of {len(y_val)}")
            X_val, y_val = X_val[:n_meta], y_val[:n_meta]
        if control == "permuted":
            y_val = permuted_labels(y_val, seed)
        self.X_val, self.y_val = X_val, y_val
        self.control, self.lookahead_params = control, lookahead_params
        self.val_batch = val_batch
        self.gamma_max, self.grad_clip, self.lookahead = gamma_max, grad_clip, lookahead
        self.gen = torch.Generator().manual_seed(seed + 1)
        # the placebo's directions and the K-step look-ahead's batches: their own streams, so that the
        # validation batches are the same draws as in the run without them
        self.gen_extra = torch.Generator().manual_seed(seed + 3)
        self.horizon, self.start_epoch, self.epoch = horizon, start_epoch, 1
        self.reduction, self.clip_grad_norm = reduction, clip_grad_norm
        self.X_train, self.y_train = X_train, y_train
        #: the epoch whose first outer step last reset the meta optimizer (``reset_moments="epoch"``)
        self.reset_moments, self._reset_epoch = reset_moments, None
        #: per outer step of the current epoch (with ``log_hypergradient``): the first-order change of the
        #: training batch's mean gamma that the outer gradient asks for, ``-g . d(mean gamma)/d(theta)``
        self.push = [] if log_hypergradient else None
        #: per outer step (with ``log_hypergradient``): the change of the batch's mean gamma the step made
        self.moved = [] if log_hypergradient else None
        base = OUTER_LOSSES[outer]
        cal = (lambda z, y: base(z, y, bandwidth=bandwidth)) if outer == "sece" else base
        if meta_loss == "ce+cal":
            self.outer = lambda z, y: torch.nn.functional.cross_entropy(z, y) + cal_weight * cal(z, y)
        else:
            self.outer = cal

    def step(self, xb, yb, optimizer) -> float:
        """One outer update of the gamma-Net, then one real step of the backbone.

        Parameters
        ----------
        xb : torch.Tensor
            A training batch's inputs.
        yb : torch.Tensor of shape (n,)
            Its labels.
        optimizer : torch.optim.Optimizer
            The backbone's optimizer (its learning rate is the look-ahead's; with
            ``lookahead="same"`` it must be Adam or SGD).

        Returns
        -------
        float
            The backbone's focal loss on the batch, at the updated gammas, before its step.
        """
        if self.epoch >= self.start_epoch:  # before start_epoch the gamma-Net keeps its initial output
            self._outer_step(xb, yb, optimizer)
        # inner: the real backbone step, focal loss at the updated gammas
        feats = self.model.features(xb)
        with torch.no_grad():
            gammas = self.gamma_net(feats.detach())
            if self.gamma_max is not None:
                gammas = gammas.clamp(max=self.gamma_max)
        loss = focal_loss(self.model.head(feats), yb, gammas)
        optimizer.zero_grad()
        (loss * len(yb) if self.reduction == "sum" else loss).backward()
        if self.clip_grad_norm is not None:
            torch.nn.utils.clip_grad_norm_(self.model.parameters(), self.clip_grad_norm)
        optimizer.step()
        return float(loss.detach())

    def _outer_step(self, xb, yb, optimizer) -> None:
        """Update the gamma-Net through a look-ahead of the backbone (one step, or ``horizon``)."""
        dev = xb.device
        idx = torch.randint(0, len(self.y_val), (self.val_batch,), generator=self.gen)
        xv, yv = self.X_val[idx].to(dev), self.y_val[idx].to(dev)
        more = []
        for _ in range(self.horizon - 1):
            k = torch.randint(0, len(self.y_train), (len(yb),), generator=self.gen_extra)
            more.append((self.X_train[k].to(dev), self.y_train[k].to(dev)))
        same = self.lookahead == "same"
        outer_loss = lookahead_outer_loss(self.model, self.gamma_net, xb, yb, xv, yv,
                                          inner_lr=optimizer.param_groups[0]["lr"], outer=self.outer,
                                          optimizer=optimizer if same else None, gamma_max=self.gamma_max,
                                          params=self.lookahead_params, reduction=self.reduction, more=more)
        params = list(self.gamma_net.parameters())
        self.opt.zero_grad()
        outer_loss.backward(inputs=params)
        if self.control == "null":  # the loop runs, the outer gradient is zero: Adam's step is exactly 0
            for p in params:
                p.grad.zero_()
        elif self.control == "placebo":  # a random direction of the outer gradient's norm
            norm = torch.sqrt(sum((p.grad.double() ** 2).sum() for p in params))
            noise = [torch.randn(p.shape, generator=self.gen_extra).to(p) for p in params]
            scale = norm / torch.sqrt(sum((n.double() ** 2).sum() for n in noise))
            for p, n in zip(params, noise, strict=True):
                p.grad.copy_(n * scale.to(n))
        if self.push is not None:
            with torch.no_grad():
                feats = self.model.features(xb)
            with torch.enable_grad():
                before = self.gamma_net(feats).mean()
                dmean = torch.autograd.grad(before, params)
            self.push.append(-float(sum((p.grad * d).sum() for p, d in zip(params, dmean, strict=True))))
        if self.grad_clip is not None:
            torch.nn.utils.clip_grad_norm_(self.gamma_net.parameters(), self.grad_clip)
        if self.reset_moments == "epoch" and self._reset_epoch != self.epoch:
            self.opt.state.clear()  # Adam starts again: step count 0, both moments 0
            self._reset_epoch = self.epoch
        self.opt.step()
        self.gamma_net.project_()
        if self.push is not None:  # the change of the batch's mean gamma that the step (Adam's) made
            with torch.no_grad():
                self.moved.append(float(self.gamma_net(feats).mean() - before))

    @torch.no_grad()
    def gammas(self, X, batch: int = 2048) -> np.ndarray:
        """The gamma-Net's gammas on ``X`` (e.g. the test split), as numpy.

        Parameters
        ----------
        X : torch.Tensor
            Inputs of the backbone.
        batch : int, default=2048
            Samples per forward pass.

        Returns
        -------
        numpy.ndarray of shape (len(X),)
            One gamma per sample (uncapped by ``gamma_max``). The backbone is put back in
            training mode afterwards.
        """
        dev = next(self.model.parameters()).device
        self.model.eval()
        out = [self.gamma_net(self.model.features(X[i: i + batch].to(dev))).cpu() for i in range(0, len(X), batch)]
        self.model.train()
        return torch.cat(out).numpy()
