"""Train-time calibration losses (chapter 5).

Every loss takes ``logits`` (n, K) and integer ``labels`` (n,) as torch tensors
and returns a scalar (the mean over the batch) that can be back-propagated.
"""
from __future__ import annotations

import torch
import torch.nn.functional as F

__all__ = ["focal_loss", "flsd53_loss", "label_smoothing_loss", "mixup_batch", "mixup_loss",
           "mmce_penalty", "ce_mmce_loss", "dece_loss", "ce_dece_loss", "sece_loss"]


def _check(logits, labels):
    if logits.ndim != 2:
        raise ValueError(f"logits must have shape (n, K); got {tuple(logits.shape)}")
    if labels.ndim != 1 or labels.shape[0] != logits.shape[0]:
        raise ValueError(f"labels must have shape ({logits.shape[0]},); got {tuple(labels.shape)}")
    if labels.numel() and (labels.min() < 0 or labels.max() >= logits.shape[1]):
        raise ValueError(f"labels must be in [0, {logits.shape[1]}); got {int(labels.min())}..{int(labels.max())}")


def focal_loss(logits, labels, gamma=0.0):
    r"""Focal loss (Lin et al. 2017; for calibration Mukhoti et al. 2020).

    .. math:: \mathrm{FL} = -\frac1n \sum_i (1 - p_{i,y_i})^{\gamma_i} \log p_{i,y_i}

    ``gamma``: a number or a tensor of shape (n,) (one per sample, as the
    gamma-Net of chapter 5 produces); ``gamma = 0`` is exactly cross-entropy.
    """
    _check(logits, labels)
    logp = F.log_softmax(logits, dim=1).gather(1, labels[:, None])[:, 0]
    if not torch.is_tensor(gamma):
        if gamma < 0:
            raise ValueError(f"gamma must be >= 0; got {gamma}")
        if gamma == 0:
            return -logp.mean()
        gamma = torch.as_tensor(gamma, dtype=logits.dtype, device=logits.device)
    elif gamma.ndim == 1 and gamma.shape[0] != logits.shape[0]:
        raise ValueError(f"gamma must be a number or have shape ({logits.shape[0]},); got {tuple(gamma.shape)}")
    pt = logp.exp()
    # (1 - p)^gamma computed as exp(gamma * log1p(-p)), with 0^0 = 1 where p_t = 1. The clamp to
    # the largest float below 1 keeps log1p finite at p_t = 1, so that the branch torch.where
    # discards has a finite gradient (inf * 0 would turn the whole gradient into NaN).
    below_one = 1 - torch.finfo(pt.dtype).eps / 2
    weight = torch.where(pt < 1, torch.exp(gamma * torch.log1p(-pt.clamp(max=below_one))),
                         (gamma == 0).to(logits.dtype) if torch.is_tensor(gamma) else torch.zeros_like(pt))
    return -(weight * logp).mean()


def flsd53_loss(logits, labels):
    r"""Sample-dependent focal loss FLSD-53 (Mukhoti et al. 2020):
    :math:`\gamma_i = 5` where :math:`p_{i,y_i} < 0.2`, else 3 (``p`` not back-propagated into gamma)."""
    _check(logits, labels)
    with torch.no_grad():
        pt = F.softmax(logits, dim=1).gather(1, labels[:, None])[:, 0]
        gamma = torch.where(pt < 0.2, torch.full_like(pt, 5.0), torch.full_like(pt, 3.0))
    return focal_loss(logits, labels, gamma)


def label_smoothing_loss(logits, labels, smoothing: float = 0.1):
    r"""Cross-entropy against smoothed targets :math:`(1-\epsilon)\,\mathbb 1[k = y] + \epsilon / K`."""
    _check(logits, labels)
    if not 0 <= smoothing < 1:
        raise ValueError(f"smoothing must be in [0, 1); got {smoothing}")
    return F.cross_entropy(logits, labels, label_smoothing=smoothing)


def mixup_batch(x, labels, alpha: float = 0.2, generator=None):
    r"""Mixup (Zhang et al. 2018; for calibration Thulasidasan et al. 2019).

    Returns ``(x_mixed, labels, labels_permuted, lam)`` with
    :math:`\tilde x = \lambda x + (1-\lambda) x_{\pi}`, :math:`\lambda \sim \mathrm{Beta}(\alpha, \alpha)`;
    train with :func:`mixup_loss`.
    """
    if alpha <= 0:
        raise ValueError(f"alpha must be > 0; got {alpha}")
    lam = float(torch.distributions.Beta(alpha, alpha).sample())  # torch's global RNG, seeded by train()
    perm = torch.randperm(x.shape[0], generator=generator).to(x.device)
    return lam * x + (1 - lam) * x[perm], labels, labels[perm], lam


def mixup_loss(logits, labels_a, labels_b, lam: float):
    r""":math:`\lambda\,\mathrm{CE}(z, y_a) + (1 - \lambda)\,\mathrm{CE}(z, y_b)`."""
    return lam * F.cross_entropy(logits, labels_a) + (1 - lam) * F.cross_entropy(logits, labels_b)


def mmce_penalty(logits, labels, bandwidth: float = 0.4):
    r"""Maximum mean calibration error (Kumar, Sarawagi and Jain 2018).

    .. math:: \mathrm{MMCE}^2 = \frac{1}{n^2}\sum_{i,j} (c_i - r_i)(c_j - r_j)\,k(r_i, r_j),\quad
              k(r, r') = e^{-|r - r'| / 0.4}

    with confidences :math:`r_i = \max_k p_{ik}` and correctness :math:`c_i`;
    returns :math:`\sqrt{\mathrm{MMCE}^2}`.
    """
    _check(logits, labels)
    p = F.softmax(logits, dim=1)
    r, pred = p.max(dim=1)
    c = (pred == labels).to(p.dtype)
    d = c - r
    k = torch.exp(-(r[:, None] - r[None, :]).abs() / bandwidth)
    mmce2 = (d[:, None] * d[None, :] * k).mean()
    return torch.sqrt(mmce2.clamp_min(1e-12))


def ce_mmce_loss(logits, labels, weight: float = 2.0, bandwidth: float = 0.4):
    """Cross-entropy plus ``weight`` times :func:`mmce_penalty` (the MMCE baseline)."""
    return F.cross_entropy(logits, labels) + weight * mmce_penalty(logits, labels, bandwidth)


def dece_loss(logits, labels, n_bins: int = 15, bin_temperature: float = 0.01,
              accuracy_temperature: float = 0.01):
    r"""Differentiable ECE (after Bohdal, Yang and Hospedales 2021), simplified.

    Soft bin membership of a confidence :math:`r` by the differentiable binning of
    Yang et al. (2018): :math:`o_m(r) = \mathrm{softmax}_m((w_m r + b_m)/\tau_b)`
    with :math:`w_m = m` and :math:`b_m = -\sum_{j<m} e_j` for the inner edges
    :math:`e_j`; soft correctness :math:`a_i = \mathrm{softmax}(z_i/\tau_a)_{y_i}`
    (a tempered argmax, where Bohdal et al. use differentiable sorting). Then

    .. math:: \mathrm{DECE} = \sum_m \frac{|B_m|}{n} |\mathrm{acc}(B_m) - \mathrm{conf}(B_m)|
              = \frac1n \sum_m \Big|\sum_i o_m(r_i)(a_i - r_i)\Big|
    """
    _check(logits, labels)
    p = F.softmax(logits, dim=1)
    r = p.max(dim=1).values
    edges = torch.linspace(0, 1, n_bins + 1, dtype=logits.dtype, device=logits.device)[1:-1]
    w = torch.arange(1, n_bins + 1, dtype=logits.dtype, device=logits.device)
    b = torch.cat([torch.zeros(1, dtype=logits.dtype, device=logits.device), -torch.cumsum(edges, 0)])
    o = F.softmax((r[:, None] * w + b) / bin_temperature, dim=1)            # (n, M)
    a = F.softmax(logits / accuracy_temperature, dim=1).gather(1, labels[:, None])[:, 0]
    return (o * (a - r)[:, None]).sum(0).abs().sum() / logits.shape[0]


def ce_dece_loss(logits, labels, weight: float = 1.0, **dece_kwargs):
    """Cross-entropy plus ``weight`` times :func:`dece_loss`."""
    return F.cross_entropy(logits, labels) + weight * dece_loss(logits, labels, **dece_kwargs)


def sece_loss(logits, labels, bandwidth: float = 0.05):
    r"""SECE of Wang et al. (2023) as a loss: the exact differentiable
    :func:`calibcourse.metrics.sece_exact_torch` on top-label confidences
    (gradients flow through the confidences; correctness is a constant)."""
    from .metrics import sece_exact_torch

    _check(logits, labels)
    p = F.softmax(logits, dim=1)
    r, pred = p.max(dim=1)
    return sece_exact_torch(r, (pred == labels).to(p.dtype), bandwidth=bandwidth)
