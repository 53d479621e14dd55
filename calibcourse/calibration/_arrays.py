"""Array helpers the toolkit's modules share: a blockwise softmax, a binary model's (n,) scores as
the (n, 2) matrix of its two classes, and the binned calibration error from per-bin sums (of one
binning, or of many bootstrap resamples at once). They take checked arrays (no validation)."""
from __future__ import annotations

import numpy as np

__all__ = ["softmax_rows", "two_columns", "two_logits", "ece_from_sums"]


def softmax_rows(z: np.ndarray) -> np.ndarray:
    """Softmax over the columns of checked logits ``(n, K)``, in their dtype (float32 stays float32),
    a block of rows at a time (no temporary of the matrix's size): the kernel of :func:`softmax`."""
    out = np.empty_like(z)
    rows = max(1, 2**20 // (z.shape[1] * z.itemsize))
    for i in range(0, z.shape[0], rows):
        blk = out[i: i + rows]
        np.subtract(z[i: i + rows], z[i: i + rows].max(1, keepdims=True), out=blk)
        np.exp(blk, out=blk)
        blk /= blk.sum(1, keepdims=True)
    return out


def two_columns(p: np.ndarray) -> np.ndarray:
    """``[1 - p, p]`` of P(y = 1) of shape (n,); a matrix ``(n, K)`` as it is. The one (n,) to (n, 2)."""
    return np.stack([1.0 - p, p], axis=1) if p.ndim == 1 else p


def two_logits(z: np.ndarray) -> np.ndarray:
    """``[0, z]`` of a sigmoid's single logit of shape (n,) (``sigmoid(z) = softmax([0, z])[1]``); a
    matrix ``(n, K)`` as it is."""
    return np.stack([np.zeros_like(z), z], axis=1) if z.ndim == 1 else z


def ece_from_sums(count, sum_conf, sum_out, norm: str):
    """The binned calibration error in ``norm`` from the per-bin count and sums of confidence and
    outcome: the one ECE sum of the toolkit (every binned measure and the bootstrap's replicates).

    For ``"l1"`` the arrays may hold many binnings at once, the bins on the last axis (one row per
    bootstrap resample): the result is then an array, one error per row.
    """
    n = count.sum(axis=-1)
    absgap_mass = np.abs(sum_out - sum_conf)  # |B_m| * |acc - conf|
    if norm == "l1":
        e = absgap_mass.sum(axis=-1) / n
        return float(e) if np.ndim(e) == 0 else e
    nonempty = count > 0
    gap = absgap_mass[nonempty] / count[nonempty]
    if norm == "l2":
        return float(np.sqrt(np.sum(count[nonempty] * gap**2) / n))
    return float(gap.max())
