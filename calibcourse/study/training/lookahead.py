"""The differentiable look-ahead of chapter 5's bilevel loop: the backbone's parameters after one
(or a few) steps on a training batch, kept as functions of the gamma-Net that weighted the step.

:func:`lookahead_step` writes an optimizer's next update (plain SGD, SGD with momentum, Adam) in
differentiable torch operations; :func:`lookahead_outer_loss` takes the step (of the whole backbone
or of its last layer) and evaluates the outer loss on a validation batch. The meta-learner that uses
them is :class:`calibcourse.study.training.meta.MetaTrainer`.
"""
from __future__ import annotations

import torch
from torch.func import functional_call

from calibcourse.study.training.losses import focal_loss, sece_loss

__all__ = ["lookahead_step", "lookahead_outer_loss", "LOOKAHEADS", "LOOKAHEAD_PARAMS"]

#: how the look-ahead moves the backbone: "sgd" (a plain gradient step at the optimizer's learning
#: rate) or "same" (the real step's own update rule and state: Adam, or SGD with momentum)
LOOKAHEADS = ("sgd", "same")
#: which parameters the look-ahead steps: "all" (the paper) or "head" (the last layer, as meta-calibration)
LOOKAHEAD_PARAMS = ("all", "head")


def _safe_sqrt(v):
    # sqrt with a finite gradient at 0 (torch's is inf, and inf * 0 = NaN where a gradient is 0)
    return torch.sqrt(v.clamp_min(torch.finfo(v.dtype).tiny))


def lookahead_step(params: dict, grads, optimizer=None, lr: float | None = None) -> dict:
    r"""The parameters after one differentiable update ``theta' = theta - step(g)``.

    ``optimizer=None``: plain SGD, :math:`\theta' = \theta - \eta g` at ``lr``. With an
    optimizer (``torch.optim.Adam`` or ``torch.optim.SGD``): the update it would make next,
    from its hyperparameters and current state, written in differentiable torch operations,
    so that :math:`\theta'` keeps the graph of ``grads``. For Adam at step :math:`t`:

    .. math:: m = \beta_1 m_{t-1} + (1-\beta_1) g,\quad v = \beta_2 v_{t-1} + (1-\beta_2) g^2,\quad
              \theta' = \theta - \eta\, \frac{m / (1-\beta_1^t)}{\sqrt{v / (1-\beta_2^t)} + \epsilon}

    (``weight_decay`` adds :math:`\lambda\theta` to :math:`g` first, as torch does).

    Parameters
    ----------
    params : dict of str to torch.Tensor
        The parameters, e.g. ``dict(model.named_parameters())``.
    grads : sequence of torch.Tensor
        Their gradients, in the same order (with ``create_graph=True`` for a second-order gradient).
    optimizer : torch.optim.Adam or torch.optim.SGD, optional
        The optimizer that holds ``params`` (its first parameter group is read); None: plain SGD.
    lr : float, optional
        The learning rate of plain SGD; needed when ``optimizer`` is None.

    Returns
    -------
    dict of str to torch.Tensor
        The stepped parameters, under the same names; the optimizer's state is not changed.

    Examples
    --------
    >>> w = torch.nn.Parameter(torch.tensor([1.0, -2.0]))
    >>> g = torch.tensor([0.5, -0.1])
    >>> lookahead_step({"w": w}, [g], lr=0.1)["w"]            # w - 0.1 * g
    tensor([ 0.9500, -1.9900], grad_fn=<SubBackward0>)

    With an optimizer it is the step the optimizer would take (Adam's first step: ``lr`` times
    the sign of ``g``):

    >>> opt = torch.optim.Adam([w], lr=0.1)
    >>> ahead = lookahead_step({"w": w}, [g], optimizer=opt)["w"]
    >>> w.grad = g
    >>> opt.step()
    >>> bool(torch.allclose(ahead, w)), w.detach()
    (True, tensor([ 0.9000, -1.9000]))
    """
    if optimizer is None:
        if lr is None:
            raise ValueError("lr is needed for the plain SGD look-ahead (optimizer=None)")
        return {name: p - lr * g for (name, p), g in zip(params.items(), grads, strict=True)}
    group = optimizer.param_groups[0]
    lr, wd = group["lr"], group.get("weight_decay", 0.0)
    out = {}
    for (name, p), g in zip(params.items(), grads, strict=True):
        state = optimizer.state.get(p, {})
        if wd:
            g = g + wd * p
        if isinstance(optimizer, torch.optim.Adam):
            if group.get("amsgrad") or group.get("maximize"):
                raise ValueError("the look-ahead supports plain Adam (no amsgrad, no maximize)")
            b1, b2 = group["betas"]
            t = int(state["step"]) + 1 if "step" in state else 1
            m = (1 - b1) * g + (b1 * state["exp_avg"] if "exp_avg" in state else 0)
            v = (1 - b2) * g * g + (b2 * state["exp_avg_sq"] if "exp_avg_sq" in state else 0)
            step = (m / (1 - b1 ** t)) / (_safe_sqrt(v / (1 - b2 ** t)) + group["eps"])
        elif isinstance(optimizer, torch.optim.SGD):
            mu, damp = group["momentum"], group["dampening"]
            step = g
            if mu:
                buf = state.get("momentum_buffer")
                buf = g if buf is None else mu * buf + (1 - damp) * g
                step = g + mu * buf if group["nesterov"] else buf
        else:
            raise ValueError(f"the look-ahead supports Adam and SGD; got {type(optimizer).__name__}")
        out[name] = p - lr * step
    return out


def lookahead_outer_loss(model, gamma_net, x_train, y_train, x_val, y_val, inner_lr: float | None = None,
                         outer=sece_loss, optimizer=None, gamma_max: float | None = None, params: str = "all",
                         reduction: str = "mean", more=()):
    """The outer objective: calibration loss on ``(x_val, y_val)`` of the backbone after one
    step of focal loss at the gamma-Net's gammas on ``(x_train, y_train)``.

    The step is plain SGD at ``inner_lr`` (``optimizer=None``) or the update rule of
    ``optimizer`` with its current state (:func:`lookahead_step`). Differentiable with
    respect to the gamma-Net's parameters (second-order, through the inner gradient, via
    ``torch.func.functional_call``). The backbone's parameters are not changed.

    Parameters
    ----------
    model : torch.nn.Module
        The backbone: a model of :mod:`calibcourse.study.training.models` (``features(x)`` and ``head``).
    gamma_net : calibcourse.study.training.meta.GammaNet
        Maps the backbone's features to one gamma per sample.
    x_train : torch.Tensor
        The training batch's inputs.
    y_train : torch.Tensor of shape (n,)
        Its labels.
    x_val : torch.Tensor
        The validation batch's inputs.
    y_val : torch.Tensor of shape (m,)
        Its labels.
    inner_lr : float, optional
        The learning rate of the plain SGD look-ahead (``optimizer=None``).
    outer : callable, default=sece_loss
        ``outer(logits, labels) -> scalar``, the calibration loss (:data:`OUTER_LOSSES`).
    optimizer : torch.optim.Adam or torch.optim.SGD, optional
        The backbone's optimizer: the look-ahead takes its step (:func:`lookahead_step`).
    gamma_max : float, optional
        Caps the gammas, as in the real step.
    params : {"all", "head"}, default="all"
        Which parameters the look-ahead steps: the whole backbone, or its last layer only (``"head"``, as
        meta-calibration does); the others keep their values.
    reduction : {"mean", "sum"}, default="mean"
        The inner loss over the batch: its mean, or its sum (meta-calibration's code, whose plain SGD
        look-ahead then takes a step ``len(x_train)`` times larger).
    more : sequence of (torch.Tensor, torch.Tensor), optional
        Further training batches: the look-ahead takes one more plain SGD step of the last layer on
        each (a K-step look-ahead with K = 1 + ``len(more)``; ``params="head"`` and ``optimizer=None`` only).

    Returns
    -------
    torch.Tensor
        A scalar, differentiable with respect to the gamma-Net's parameters.

    Examples
    --------
    >>> from calibcourse.study.training.models import MLP
    >>> from calibcourse.study.training.meta import GammaNet
    >>> gen = torch.Generator().manual_seed(0)
    >>> model = MLP(in_features=5, num_classes=3, width=8, depth=1)
    >>> gamma_net = GammaNet(in_features=8, heads=2)
    >>> x, y = torch.randn(32, 5, generator=gen), torch.randint(0, 3, (32,), generator=gen)
    >>> loss = lookahead_outer_loss(model, gamma_net, x[:16], y[:16], x[16:], y[16:], inner_lr=0.5)
    >>> loss.shape, loss.requires_grad
    (torch.Size([]), True)
    >>> loss.backward(inputs=list(gamma_net.parameters()))    # the hypergradient
    >>> gamma_net.A.grad.shape, gamma_net.W.grad.shape
    (torch.Size([8, 2]), torch.Size([8, 1]))
    """
    if params not in LOOKAHEAD_PARAMS:
        raise ValueError(f"params must be one of {', '.join(LOOKAHEAD_PARAMS)}; got {params!r}")
    if reduction not in ("mean", "sum"):
        raise ValueError(f"reduction must be 'mean' or 'sum'; got {reduction!r}")
    head = params == "head"
    if more and (not head or optimizer is not None):
        raise ValueError(
            "a look-ahead of several steps steps the last layer by plain SGD (params='head', no optimizer)"
        )
    params = {n: p for n, p in model.named_parameters() if not head or n.startswith("head.")}

    def inner_loss(logits, y, gammas):
        if gamma_max is not None:
            gammas = gammas.clamp(max=gamma_max)
        loss = focal_loss(logits, y, gammas)
        return loss * len(y) if reduction == "sum" else loss

    feats = model.features(x_train)
    inner = inner_loss(model.head(feats), y_train, gamma_net(feats.detach()))
    grads = torch.autograd.grad(inner, list(params.values()), create_graph=True)
    stepped = lookahead_step(params, grads, optimizer, lr=inner_lr)
    if not head:
        return outer(functional_call(model, stepped, (x_val,)), y_val)

    def head_call(ps, f):  # the features do not move: the last layer alone, at the stepped weights
        return functional_call(model.head, {n[len("head."):]: p for n, p in ps.items()}, (f,))

    for xk, yk in more:
        with torch.no_grad():
            fk = model.features(xk)
        grads = torch.autograd.grad(inner_loss(head_call(stepped, fk), yk, gamma_net(fk)), list(stepped.values()),
                                    create_graph=True)
        stepped = lookahead_step(stepped, grads, lr=inner_lr)
    return outer(head_call(stepped, model.features(x_val)), y_val)
