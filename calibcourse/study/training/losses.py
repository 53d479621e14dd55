"""Train-time calibration losses (chapter 5).

Every loss takes ``logits`` (n, K) and integer ``labels`` (n,) as torch tensors
and returns a scalar (the mean over the batch) that can be back-propagated.
"""
from __future__ import annotations

import torch
import torch.nn.functional as F

__all__ = ["focal_loss", "flsd53_loss", "label_smoothing_loss", "mixup_batch", "mixup_loss",
           "mmce_penalty", "ce_mmce_loss", "dece_loss", "ce_dece_loss", "gaussian_kernel_sums", "sece_exact_torch",
           "sece_loss"]




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

    Parameters
    ----------
    logits : torch.Tensor of shape (n, K)
        Logits of a batch.
    labels : torch.Tensor of shape (n,)
        Integer class labels in ``[0, K)``.
    gamma : float or torch.Tensor of shape (n,), default=0.0
        The focusing parameter, >= 0: one for the batch, or one per sample (as the gamma-Net of chapter 5
        produces); ``gamma = 0`` is exactly cross-entropy.

    Returns
    -------
    torch.Tensor
        A scalar: the mean over the batch, differentiable with respect to ``logits``.

    Examples
    --------
    >>> z = torch.tensor([[2.0, 0.0], [0.0, 1.0], [1.0, 1.0]])
    >>> y = torch.tensor([0, 1, 0])
    >>> bool(focal_loss(z, y) == F.cross_entropy(z, y))       # gamma = 0: cross-entropy
    True
    >>> round(float(F.cross_entropy(z, y)), 4), round(float(focal_loss(z, y, gamma=2.0)), 4)
    (0.3778, 0.0659)

    Confident right predictions weigh less: with ``gamma=2`` the sample with
    ``p_y = 0.88`` counts ``(1 - 0.88)^2 = 0.014`` times its cross-entropy.
    A gamma per sample:

    >>> round(float(focal_loss(z, y, gamma=torch.tensor([0.0, 0.0, 5.0]))), 4)
    0.154
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
    :math:`\gamma_i = 5` where :math:`p_{i,y_i} < 0.2`, else 3 (``p`` not back-propagated into gamma).

    Parameters
    ----------
    logits : torch.Tensor of shape (n, K)
        Logits of a batch.
    labels : torch.Tensor of shape (n,)
        Integer class labels in ``[0, K)``.

    Returns
    -------
    torch.Tensor
        A scalar: the mean over the batch, differentiable with respect to ``logits``.

    Examples
    --------
    >>> z = torch.tensor([[3.0, 0.0, 0.0], [0.0, 0.0, 3.0]])
    >>> y = torch.tensor([0, 0])          # p_y = 0.91 (gamma 3) and 0.045 (gamma 5)
    >>> bool(flsd53_loss(z, y) == focal_loss(z, y, torch.tensor([3.0, 5.0])))
    True
    """
    _check(logits, labels)
    with torch.no_grad():
        pt = F.softmax(logits, dim=1).gather(1, labels[:, None])[:, 0]
        gamma = torch.where(pt < 0.2, torch.full_like(pt, 5.0), torch.full_like(pt, 3.0))
    return focal_loss(logits, labels, gamma)


def label_smoothing_loss(logits, labels, smoothing: float = 0.1):
    r"""Cross-entropy against smoothed targets :math:`(1-\epsilon)\,\mathbb 1[k = y] + \epsilon / K`.

    Parameters
    ----------
    logits : torch.Tensor of shape (n, K)
        Logits of a batch.
    labels : torch.Tensor of shape (n,)
        Integer class labels in ``[0, K)``.
    smoothing : float, default=0.1
        The weight :math:`\epsilon` of the uniform target, in [0, 1).

    Returns
    -------
    torch.Tensor
        A scalar: the mean over the batch, differentiable with respect to ``logits``.

    Examples
    --------
    >>> z = torch.tensor([[4.0, 0.0], [0.0, 4.0]])
    >>> y = torch.tensor([0, 1])
    >>> target = torch.tensor([[0.95, 0.05], [0.05, 0.95]])   # (1 - 0.1) * one-hot + 0.1 / 2
    >>> ref = -(target * F.log_softmax(z, dim=1)).sum(1).mean()
    >>> bool(torch.isclose(label_smoothing_loss(z, y, smoothing=0.1), ref))
    True
    """
    _check(logits, labels)
    if not 0 <= smoothing < 1:
        raise ValueError(f"smoothing must be in [0, 1); got {smoothing}")
    return F.cross_entropy(logits, labels, label_smoothing=smoothing)


def mixup_batch(x, labels, alpha: float = 0.2, generator=None):
    r"""Mixup (Zhang et al. 2018; for calibration Thulasidasan et al. 2019).

    :math:`\tilde x = \lambda x + (1-\lambda) x_{\pi}`, :math:`\lambda \sim \mathrm{Beta}(\alpha, \alpha)`
    for a random permutation :math:`\pi` of the batch; train with :func:`mixup_loss`.

    Parameters
    ----------
    x : torch.Tensor of shape (n, ...)
        A batch of inputs.
    labels : torch.Tensor of shape (n,)
        Their labels.
    alpha : float, default=0.2
        The parameter of the Beta distribution, > 0 (small: ``lam`` near 0 or 1).
    generator : torch.Generator, optional
        Draws the permutation; ``lam`` is drawn from torch's global generator (seeded by
        :func:`calibcourse.study.training.train.train`).

    Returns
    -------
    x_mixed : torch.Tensor of shape (n, ...)
        The mixed inputs.
    labels : torch.Tensor of shape (n,)
        The labels given (of the first input of each mix).
    labels_permuted : torch.Tensor of shape (n,)
        The labels of the second input of each mix.
    lam : float
        The weight :math:`\lambda` of the first input.

    Examples
    --------
    >>> x = torch.arange(8.0).reshape(4, 2)
    >>> y = torch.tensor([0, 1, 2, 3])
    >>> xm, ya, yb, lam = mixup_batch(x, y, alpha=0.4, generator=torch.Generator().manual_seed(1))
    >>> yb                       # the labels of the partners: a permutation
    tensor([1, 3, 2, 0])
    >>> bool(torch.allclose(xm, lam * x + (1 - lam) * x[yb]))
    True
    >>> loss = mixup_loss(torch.zeros(4, 4), ya, yb, lam)   # uniform predictions: log 4
    >>> round(float(loss), 4)
    1.3863
    """
    if alpha <= 0:
        raise ValueError(f"alpha must be > 0; got {alpha}")
    lam = float(torch.distributions.Beta(alpha, alpha).sample())  # torch's global RNG, seeded by train()
    perm = torch.randperm(x.shape[0], generator=generator).to(x.device)
    return lam * x + (1 - lam) * x[perm], labels, labels[perm], lam


def mixup_loss(logits, labels_a, labels_b, lam: float):
    r""":math:`\lambda\,\mathrm{CE}(z, y_a) + (1 - \lambda)\,\mathrm{CE}(z, y_b)`.

    Parameters
    ----------
    logits : torch.Tensor of shape (n, K)
        Logits of the mixed batch.
    labels_a : torch.Tensor of shape (n,)
        The labels of the first inputs of the mixes.
    labels_b : torch.Tensor of shape (n,)
        The labels of the second inputs.
    lam : float
        The weight of the first inputs (from :func:`mixup_batch`).

    Returns
    -------
    torch.Tensor
        A scalar: the mean over the batch, differentiable with respect to ``logits``.

    Examples
    --------
    >>> z = torch.tensor([[2.0, 0.0], [0.0, 2.0]])
    >>> ya, yb = torch.tensor([0, 1]), torch.tensor([1, 0])
    >>> bool(mixup_loss(z, ya, yb, 1.0) == F.cross_entropy(z, ya))
    True
    >>> round(float(mixup_loss(z, ya, yb, 0.5)), 4)     # half right, half wrong
    1.1269
    """
    return lam * F.cross_entropy(logits, labels_a) + (1 - lam) * F.cross_entropy(logits, labels_b)


def mmce_penalty(logits, labels, bandwidth: float = 0.4):
    r"""Maximum mean calibration error (Kumar, Sarawagi and Jain 2018).

    .. math:: \mathrm{MMCE}^2 = \frac{1}{n^2}\sum_{i,j} (c_i - r_i)(c_j - r_j)\,k(r_i, r_j),\quad
              k(r, r') = e^{-|r - r'| / w}

    with confidences :math:`r_i = \max_k p_{ik}` and correctness :math:`c_i`.

    Parameters
    ----------
    logits : torch.Tensor of shape (n, K)
        Logits of a batch.
    labels : torch.Tensor of shape (n,)
        Integer class labels in ``[0, K)``.
    bandwidth : float, default=0.4
        The width ``w`` of the Laplacian kernel.

    Returns
    -------
    torch.Tensor
        A scalar: :math:`\sqrt{\mathrm{MMCE}^2}` (at least :math:`10^{-6}`, so that its gradient stays finite).

    Examples
    --------
    All samples at confidence ``r`` (the kernel is 1): MMCE is the gap ``|accuracy - r|``.

    >>> z = torch.log(torch.tensor([[0.8, 0.2]] * 4))   # confidence 0.8
    >>> y = torch.tensor([0, 0, 0, 1])                   # accuracy 0.75
    >>> print(f"{float(mmce_penalty(z, y)):.4f}")
    0.0500
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
    """Cross-entropy plus ``weight`` times :func:`mmce_penalty` (the MMCE baseline).

    Parameters
    ----------
    logits : torch.Tensor of shape (n, K)
        Logits of a batch.
    labels : torch.Tensor of shape (n,)
        Integer class labels in ``[0, K)``.
    weight : float, default=2.0
        The weight of the penalty.
    bandwidth : float, default=0.4
        The kernel width of :func:`mmce_penalty`.

    Returns
    -------
    torch.Tensor
        A scalar: the mean over the batch, differentiable with respect to ``logits``.

    Examples
    --------
    >>> z = torch.log(torch.tensor([[0.8, 0.2]] * 4))
    >>> y = torch.tensor([0, 0, 0, 1])
    >>> bool(torch.isclose(ce_mmce_loss(z, y), F.cross_entropy(z, y) + 2.0 * mmce_penalty(z, y)))
    True
    """
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

    Parameters
    ----------
    logits : torch.Tensor of shape (n, K)
        Logits of a batch.
    labels : torch.Tensor of shape (n,)
        Integer class labels in ``[0, K)``.
    n_bins : int, default=15
        Number of bins.
    bin_temperature : float, default=0.01
        The temperature :math:`\tau_b` of the soft bins.
    accuracy_temperature : float, default=0.01
        The temperature :math:`\tau_a` of the soft correctness.

    Returns
    -------
    torch.Tensor
        A scalar in [0, 1], differentiable with respect to ``logits``.

    Examples
    --------
    Confidences away from the bin edges: DECE is close to the binned ECE.

    >>> from calibcourse.calibration.metrics import ece
    >>> p = torch.tensor([[0.9, 0.1]] * 5 + [[0.3, 0.7]] * 5)
    >>> y = torch.tensor([0, 0, 0, 1, 1, 1, 1, 1, 1, 0])
    >>> print(f"{float(dece_loss(torch.log(p), y)):.4f}, {ece(p, y):.4f}")
    0.2000, 0.2000
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
    """Cross-entropy plus ``weight`` times :func:`dece_loss`.

    Parameters
    ----------
    logits : torch.Tensor of shape (n, K)
        Logits of a batch.
    labels : torch.Tensor of shape (n,)
        Integer class labels in ``[0, K)``.
    weight : float, default=1.0
        The weight of :func:`dece_loss`.
    **dece_kwargs
        Passed to :func:`dece_loss` (``n_bins``, the temperatures).

    Returns
    -------
    torch.Tensor
        A scalar: the mean over the batch, differentiable with respect to ``logits``.

    Examples
    --------
    >>> z = torch.tensor([[2.0, 0.0], [0.0, 1.0], [1.0, 0.5]])
    >>> y = torch.tensor([0, 1, 1])
    >>> loss = ce_dece_loss(z, y, weight=0.5, n_bins=10)
    >>> bool(torch.isclose(loss, F.cross_entropy(z, y) + 0.5 * dece_loss(z, y, n_bins=10)))
    True
    """
    return F.cross_entropy(logits, labels) + weight * dece_loss(logits, labels, **dece_kwargs)


def gaussian_kernel_sums(points, centers, weights, bandwidth: float):
    r"""Dense Gaussian kernel sums :math:`S_{ic} = \sum_j e^{-(t_i - x_j)^2 / 2h^2}\,w_{jc}` (torch).

    Parameters
    ----------
    points : torch.Tensor of shape (m,)
        Where to evaluate, :math:`t_i`.
    centers : torch.Tensor of shape (n,)
        The scores :math:`x_j`. Gradients flow through ``points`` and ``centers``.
    weights : torch.Tensor of shape (n, c)
        ``c`` weights per score, summed in one matrix product.
    bandwidth : float
        The kernel's standard deviation ``h``.

    Returns
    -------
    torch.Tensor of shape (m, c)
        The sums. Memory is ``m * n``: chunk ``points`` for large inputs.

    Examples
    --------
    >>> x = torch.tensor([0.2, 0.4], dtype=torch.float64)
    >>> w = torch.stack([torch.tensor([1.0, 0.0], dtype=torch.float64), torch.ones(2, dtype=torch.float64)], 1)
    >>> gaussian_kernel_sums(torch.tensor([0.3], dtype=torch.float64), x, w, 0.1)
    tensor([[0.6065, 1.2131]], dtype=torch.float64)
    """
    scale = -0.5 / bandwidth**2
    return torch.exp((points[:, None] - centers[None, :]).square() * scale) @ weights


def sece_exact_torch(confidence, correct, bandwidth: float = 0.05, chunk: int = 1024):
    r"""Exact, differentiable SECE in torch (:func:`sece_loss`), O(n^2) in chunks.

    .. math:: \mathrm{SACC}_i = \frac{\sum_j K(c_i, c_j)\,a_j}{\sum_j K(c_i, c_j)},\quad
              K(c_i, c_j) = e^{-(c_i - c_j)^2 / 2h^2},\quad
              \mathrm{SECE} = \frac1n \sum_i |\mathrm{SACC}_i - c_i|

    Parameters
    ----------
    confidence : torch.Tensor of shape (n,)
        Top-label confidences; gradients flow through them.
    correct : torch.Tensor of shape (n,)
        1 where the prediction is correct, else 0.
    bandwidth : float, default=0.05
        The kernel bandwidth ``h``.
    chunk : int, default=1024
        Rows of the ``n x n`` kernel matrix held in memory at once.

    Returns
    -------
    torch.Tensor
        A scalar (0-dimensional) tensor.

    Examples
    --------
    >>> c = torch.tensor([0.6, 0.9], dtype=torch.float64)
    >>> float(sece_exact_torch(c, torch.tensor([1.0, 1.0], dtype=torch.float64)))  # mean of 1 - c
    0.25
    """
    c = confidence.reshape(-1)
    a = correct.reshape(-1).to(c.dtype)
    rhs = torch.stack([a, torch.ones_like(a)], dim=1)  # numerator and denominator in one matmul
    total = c.new_zeros(())
    for start in range(0, c.shape[0], chunk):
        ci = c[start: start + chunk]
        num_den = gaussian_kernel_sums(ci, c, rhs, bandwidth)
        total = total + (num_den[:, 0] / num_den[:, 1] - ci).abs().sum()
    return total / c.shape[0]


def sece_loss(logits, labels, bandwidth: float = 0.05):
    r"""SECE of Wang et al. (2023) as a loss: the exact differentiable
    :func:`sece_exact_torch` on top-label confidences
    (gradients flow through the confidences; correctness is a constant).

    Parameters
    ----------
    logits : torch.Tensor of shape (n, K)
        Logits of a batch.
    labels : torch.Tensor of shape (n,)
        Integer class labels in ``[0, K)``.
    bandwidth : float
        The kernel's standard deviation ``h``.

    Returns
    -------
    torch.Tensor
        A scalar: the SECE of the batch, differentiable with respect to ``logits``.

    Examples
    --------
    The same value as the metric :func:`calibcourse.calibration.metrics.sece` of the probabilities:

    >>> from calibcourse.calibration.metrics import sece
    >>> z = torch.tensor([[2.0, 0.0], [0.0, 1.0], [1.0, 0.5], [3.0, 0.0]], requires_grad=True)
    >>> y = torch.tensor([0, 1, 1, 0])
    >>> loss = sece_loss(z, y, bandwidth=0.1)
    >>> round(float(loss.detach()), 6) == round(sece(torch.softmax(z, 1).detach(), y, bandwidth=0.1), 6)
    True
    >>> loss.backward(); z.grad.shape
    torch.Size([4, 2])
    """
    _check(logits, labels)
    p = F.softmax(logits, dim=1)
    r, pred = p.max(dim=1)
    return sece_exact_torch(r, (pred == labels).to(p.dtype), bandwidth=bandwidth)
