"""Array helpers the toolkit's modules share: a blockwise softmax, and a binary model's (n,) scores as
the (n, 2) matrix of its two classes. They take checked arrays (no validation)."""
from __future__ import annotations

import numpy as np

__all__ = ["softmax_rows", "two_columns", "two_logits"]


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
