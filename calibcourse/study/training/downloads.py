"""The full data sets (MNIST, CIFAR-10, CIFAR-100), read from their files under
:func:`calibcourse.study.training.data.data_root`, checked, and explained where missing.

The ``full`` profile's chapters train on them; the embedded data sets of the other profiles are in
:mod:`calibcourse.study.training.data`.
"""
from __future__ import annotations

import numpy as np

__all__ = ["load_full", "DatasetNotFoundError", "required_files",
           "check_available", "CIFAR10_CLASSES"]

CIFAR10_CLASSES = ("airplane", "automobile", "bird", "cat", "deer", "dog", "frog", "horse", "ship", "truck")

_HOW_TO_GET = {
    "mnist": "the four files train-images-idx3-ubyte, train-labels-idx1-ubyte, t10k-images-idx3-ubyte, "
             "t10k-labels-idx1-ubyte (or the same names with .gz, as MNIST is distributed) in {root}/MNIST/raw/, "
             "as torchvision.datasets.MNIST stores them; or call with download=True on a machine with internet",
    "cifar10": "the extracted python version cifar-10-batches-py/ (data_batch_1..5, test_batch, "
               "batches.meta) in {root}/; or call with download=True on a machine with internet",
    "cifar100": "the extracted python version cifar-100-python/ (train, test, meta) in {root}/; or call "
                "with download=True on a machine with internet",
}


#: where the full data sets are published
_SOURCES = {"mnist": "https://ossci-datasets.s3.amazonaws.com/mnist/ (torchvision's mirror of LeCun et al.'s files)",
            "cifar10": "https://www.cs.toronto.edu/~kriz/cifar-10-python.tar.gz (extract it)",
            "cifar100": "https://www.cs.toronto.edu/~kriz/cifar-100-python.tar.gz (extract it)"}


class DatasetNotFoundError(FileNotFoundError):
    """A full data set is not on disk where it was looked for."""


_MNIST_FILES = ("train-images-idx3-ubyte", "train-labels-idx1-ubyte", "t10k-images-idx3-ubyte",
                "t10k-labels-idx1-ubyte")
_CIFAR_FILES = {"cifar10": ("cifar-10-batches-py", [f"data_batch_{i}" for i in range(1, 6)]
                            + ["test_batch", "batches.meta"]),
                "cifar100": ("cifar-100-python", ["train", "test", "meta"])}




def required_files(name: str, root="~/data") -> list:
    """The files :func:`load_full` reads for data set ``name`` under ``root``.

    MNIST's IDX files may also be there gzipped, as MNIST is distributed.

    Parameters
    ----------
    name : {"mnist", "cifar10", "cifar100"}
        The data set.
    root : str or path, default='~/data'
        The folder that holds the data set (``~`` is expanded).

    Returns
    -------
    list of str
        Absolute paths, in the order the loader reads them.

    Examples
    --------
    >>> [p.split("/")[-2:] for p in required_files("cifar10", "/data")][:2]
    [['cifar-10-batches-py', 'data_batch_1'], ['cifar-10-batches-py', 'data_batch_2']]
    >>> required_files("svhn")
    Traceback (most recent call last):
    ...
    ValueError: name must be one of 'mnist', 'cifar10', 'cifar100'; got 'svhn'
    """
    import os

    root = os.path.abspath(os.path.expanduser(str(root)))
    if name == "mnist":
        return [os.path.join(root, "MNIST", "raw", f) for f in _MNIST_FILES]
    if name in _CIFAR_FILES:
        folder, files = _CIFAR_FILES[name]
        return [os.path.join(root, folder, f) for f in files]
    raise ValueError(f"name must be one of {', '.join(map(repr, _HOW_TO_GET))}; got {name!r}")


def check_available(name: str, root="~/data") -> None:
    """Raise :class:`DatasetNotFoundError` naming the first missing file of data set ``name``.

    The message says where the file is expected and where to get it; a full-profile run calls
    this before it trains anything.

    Parameters
    ----------
    name : {"mnist", "cifar10", "cifar100"}
        The data set.
    root : str or path, default='~/data'
        The folder that holds the data set (``~`` is expanded).

    Returns
    -------
    None
        When every file is there.

    Examples
    --------
    >>> import tempfile
    >>> try:
    ...     check_available("cifar100", tempfile.mkdtemp())
    ... except DatasetNotFoundError as err:
    ...     print(str(err).split(";")[0].rsplit("/", 2)[-2:])
    ['cifar-100-python', 'train not found']
    """
    import os

    for path in required_files(name, root):
        if not (os.path.isfile(path) or (name == "mnist" and os.path.isfile(path + ".gz"))):
            root_abs = os.path.abspath(os.path.expanduser(str(root)))
            raise DatasetNotFoundError(f"{name}: {path} not found; expected "
                                       f"{_HOW_TO_GET[name].format(root=root_abs)}. Get it from "
                                       f"{_SOURCES[name]} on a machine with internet; "
                                       "CALIBCOURSE_DATA names the folder that holds the data sets")


def _gunzip_mnist(raw: str) -> None:
    """Decompress MNIST's distributed ``*.gz`` files next to themselves where the IDX file is missing
    (what torchvision's download does; its loader reads the decompressed files only)."""
    import gzip
    import os
    import shutil

    for f in _MNIST_FILES:
        path = os.path.join(raw, f)
        if not os.path.isfile(path) and os.path.isfile(path + ".gz"):
            tmp = f"{path}.tmp-{os.getpid()}"
            with gzip.open(path + ".gz", "rb") as src, open(tmp, "wb") as dst:
                shutil.copyfileobj(src, dst)
            os.replace(tmp, path)


def _torchvision_dataset(name: str, root, train: bool, download: bool, verify: bool):
    import os

    from torchvision import datasets

    root = os.path.abspath(os.path.expanduser(str(root)))
    cls = {"mnist": datasets.MNIST, "cifar10": datasets.CIFAR10, "cifar100": datasets.CIFAR100}[name]
    if name == "mnist" and os.path.isdir(os.path.join(root, "MNIST", "raw")):
        _gunzip_mnist(os.path.join(root, "MNIST", "raw"))
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

    ``download=True`` fetches the data set (needs internet); otherwise a missing data set
    raises :class:`DatasetNotFoundError` saying where it was looked for and what is
    expected there.

    Parameters
    ----------
    name : {"mnist", "cifar10", "cifar100"}
        The data set.
    root : str or path, default='~/data'
        The folder that holds the data set (``~`` is expanded).
    download : bool, default=False
        Fetch the data set first if it is missing (needs internet).
    verify : bool, default=True
        Check the md5 of the CIFAR files (False: only that they exist).

    Returns
    -------
    tuple of numpy.ndarray
        ``X_train, y_train, X_test, y_test``: float32 images in [0, 1] of shape (n, C, H, W) and int64 labels.

    Examples
    --------
    >>> import tempfile
    >>> load_full("mnist", tempfile.mkdtemp())  # doctest: +ELLIPSIS
    Traceback (most recent call last):
        ...
    calibcourse.study.training.downloads.DatasetNotFoundError: mnist not found under ...train-images-idx3-ubyte...
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
