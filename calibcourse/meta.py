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
from torch.func import functional_call

from .losses import dece_loss, focal_loss, sece_loss

__all__ = ["GammaNet", "MetaTrainer", "lookahead_outer_loss", "OUTER_LOSSES"]

OUTER_LOSSES = {"sece": sece_loss, "dece": dece_loss}


class GammaNet(nn.Module):
    r"""Sample-wise focal-loss gamma from penultimate features ``x`` (b, d).

    .. math:: a = xA \in \mathbb R^{b \times k},\quad p = \mathrm{softmax}(a),\quad
              \tilde x = p A^\top \in \mathbb R^{b \times d},\quad
              \gamma = |\tilde x W| / \tau \in \mathbb R^{b}

    ``A`` (d, k) holds ``heads = k`` attention heads, ``W`` (d, 1) is a linear
    layer and ``tau`` a temperature; the absolute value keeps gamma >= 0.
    """

    def __init__(self, in_features: int, heads: int = 8, tau: float = 1.0, init_gamma: float = 1.0):
        super().__init__()
        if in_features < 1 or heads < 1:
            raise ValueError(f"in_features and heads must be >= 1; got {in_features}, {heads}")
        if not tau > 0:
            raise ValueError(f"tau must be > 0; got {tau}")
        self.tau = tau
        self.A = nn.Parameter(torch.randn(in_features, heads) / np.sqrt(in_features))
        self.W = nn.Parameter(torch.randn(in_features, 1) / np.sqrt(in_features))
        self.init_gamma = init_gamma
        self._scale = None  # set on the first batch so that mean gamma starts at init_gamma

    def forward(self, x):
        p = torch.softmax(x @ self.A, dim=1)
        xt = p @ self.A.T
        g = (xt @ self.W).abs()[:, 0] / self.tau
        if self._scale is None:
            with torch.no_grad():
                self._scale = float(self.init_gamma / g.mean().clamp_min(1e-8))
        return g * self._scale


def lookahead_outer_loss(model, gamma_net, x_train, y_train, x_val, y_val, inner_lr: float,
                         outer=sece_loss):
    """The outer objective: calibration loss on ``(x_val, y_val)`` of the backbone after one
    SGD step of focal loss at the gamma-Net's gammas on ``(x_train, y_train)``.

    Differentiable with respect to the gamma-Net's parameters (second-order, through the
    inner gradient, via ``torch.func.functional_call``).
    """
    params = dict(model.named_parameters())
    feats = model.features(x_train)
    gammas = gamma_net(feats.detach())
    inner = focal_loss(model.head(feats), y_train, gammas)
    grads = torch.autograd.grad(inner, list(params.values()), create_graph=True)
    stepped = {name: p - inner_lr * g for (name, p), g in zip(params.items(), grads)}
    return outer(functional_call(model, stepped, (x_val,)), y_val)


class MetaTrainer:
    """One bilevel step per training batch; used by :func:`calibcourse.train.train` when a
    run config has a ``meta`` section::

        "meta": {"outer": "sece", "heads": 8, "tau": 1.0, "meta_lr": 1e-3,
                 "val_batch": 256, "bandwidth": 0.05, "gamma_max": 20, "grad_clip": 1.0}

    ``gamma_max`` caps the gammas of the inner step and ``grad_clip`` the norm of the
    gamma-Net's gradient (neither is in the paper; both keep the DECE outer loss, whose
    soft bins have steep gradients, from diverging).
    """

    def __init__(self, model, X_val, y_val, outer: str = "sece", heads: int = 8, tau: float = 1.0,
                 meta_lr: float = 1e-3, val_batch: int = 256, bandwidth: float = 0.05,
                 init_gamma: float = 1.0, gamma_max: float | None = None, grad_clip: float | None = None,
                 seed: int = 0):
        if outer not in OUTER_LOSSES:
            raise ValueError(f"meta.outer must be one of {', '.join(OUTER_LOSSES)}; got {outer!r}")
        first = next(model.parameters())
        self.model = model
        self.gamma_net = GammaNet(model.head.in_features, heads=heads, tau=tau,
                                  init_gamma=init_gamma).to(first.device, first.dtype)
        self.opt = torch.optim.Adam(self.gamma_net.parameters(), lr=meta_lr)
        self.X_val, self.y_val = X_val, y_val
        self.val_batch = val_batch
        self.gamma_max, self.grad_clip = gamma_max, grad_clip
        self.gen = torch.Generator().manual_seed(seed + 1)
        base = OUTER_LOSSES[outer]
        self.outer = (lambda z, y: base(z, y, bandwidth=bandwidth)) if outer == "sece" else base

    def step(self, xb, yb, optimizer) -> float:
        dev = xb.device
        idx = torch.randint(0, len(self.y_val), (self.val_batch,), generator=self.gen)
        xv, yv = self.X_val[idx].to(dev), self.y_val[idx].to(dev)
        inner_lr = optimizer.param_groups[0]["lr"]
        # outer: update the gamma-Net through a one-step look-ahead of the backbone
        outer_loss = lookahead_outer_loss(self.model, self.gamma_net, xb, yb, xv, yv, inner_lr, self.outer)
        self.opt.zero_grad()
        outer_loss.backward(inputs=list(self.gamma_net.parameters()))
        if self.grad_clip is not None:
            torch.nn.utils.clip_grad_norm_(self.gamma_net.parameters(), self.grad_clip)
        self.opt.step()
        # inner: the real backbone step, focal loss at the updated gammas
        feats = self.model.features(xb)
        with torch.no_grad():
            gammas = self.gamma_net(feats.detach())
            if self.gamma_max is not None:
                gammas = gammas.clamp(max=self.gamma_max)
        loss = focal_loss(self.model.head(feats), yb, gammas)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        return float(loss.detach())

    @torch.no_grad()
    def gammas(self, X, batch: int = 2048) -> np.ndarray:
        """The gamma-Net's gammas on ``X`` (e.g. the test split), as numpy."""
        dev = next(self.model.parameters()).device
        self.model.eval()
        out = [self.gamma_net(self.model.features(X[i: i + batch].to(dev))).cpu() for i in range(0, len(X), batch)]
        self.model.train()
        return torch.cat(out).numpy()
