"""A smoke run of a profile: every config trained for a few batches, every page executed and rendered.

    make smoke PROFILE=full      # python -m calibcourse.tools.smoke --profile full [--keep DIR]

What ``PROFILE=full`` needs (the full data sets, a pretrained DenseNet-121, a GPU and about a
hundred GPU-hours) is not on a CI machine, so the smoke run checks everything else:

1. :func:`write_fake_data` writes small files in the real formats to a temporary folder:
   MNIST as the four gzipped IDX files under ``MNIST/raw/`` (as MNIST is distributed),
   CIFAR-10 and CIFAR-100 as their python-version pickles, and a DenseNet-121 state dict
   (random weights) under the name of torchvision's ImageNet file;
2. every config of the profile is trained into a temporary cache with
   ``CALIBCOURSE_SMOKE="1:1:4"`` (one epoch of one batch of at most 4 samples,
   :func:`calibcourse.study.training.config.smoke_caps`; the configs, and so their cache keys, are the real
   ones, so the pages find them);
3. every chapter and lab is executed with ``profile = "full"`` against that cache
   (:mod:`calibcourse.tools.build`, on a copy of the book's sources in the temporary folder; the
   pages' bootstrap and simulation sizes are the ``ci`` profile's, :func:`calibcourse.study.course.notebook.budget`),
   and the book is rendered there.

Nothing is written to ``data/cache`` (a smoke result is refused there,
:meth:`calibcourse.study.runs.cache.Cache.store`) or to the repository's ``_build``. Its numbers mean nothing.
"""
from __future__ import annotations

import argparse
import gzip
import os
import pickle
import shutil
import struct
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from calibcourse.tools._env import environ

__all__ = ["write_fake_data", "smoke", "SMOKE_CAPS", "SIZES"]

#: ``CALIBCOURSE_SMOKE`` of the runs: epochs, batches per epoch, samples per batch (4: a batch that
#: batch norm, the meta-learner's validation batch and the losses accept; the ResNets' meta-steps take
#: half the time of 16 samples')
SMOKE_CAPS = "1:1:4"
#: training / test samples of the small files (evaluating the test splits is most of a smoke
#: run's time: they are small); CIFAR-100's test split holds every class five times, so that the
#: practitioners' page can cross-fit its calibrators on five folds; MNIST's 1,000 training images give a
#: validation split of ten per class, so that chapter 6's fair footing can cross-fit on five folds too
SIZES = {"mnist": (1000, 100), "cifar10": (200, 40), "cifar100": (500, 500)}
REPO = Path(__file__).resolve().parents[2]


def _idx_bytes(array: np.ndarray) -> bytes:
    """An IDX file of unsigned bytes (LeCun's MNIST format): magic 0x0000080N, N sizes, the data."""
    header = struct.pack(">I", 0x0800 + array.ndim) + struct.pack(">" + "I" * array.ndim, *array.shape)
    return header + array.astype(np.uint8).tobytes()


def _balanced_labels(n: int, k: int, rng) -> np.ndarray:
    return rng.permutation(np.arange(n) % k)


def _labels(n: int, k: int, rng, weights=None) -> np.ndarray:
    """Every class once, the rest drawn with probabilities ``weights`` (default: equal shares)."""
    if weights is None:
        return _balanced_labels(n, k, rng)
    p = np.asarray(weights, float)
    rest = rng.choice(k, size=max(0, n - k), p=p / p.sum())
    return rng.permutation(np.concatenate([np.arange(min(n, k)), rest]))


#: CIFAR-10's classes in the small files: cats (3) and birds (2) are 80 % of them, so that chapter
#: 3's cat-vs-bird head has enough validation samples that no bootstrap resample holds one class only
CIFAR10_WEIGHTS = [0.025, 0.025, 0.4, 0.4] + [0.025] * 6


def write_fake_data(root, seed: int = 0, sizes: dict | None = None) -> Path:
    """Write small MNIST, CIFAR-10 and CIFAR-100 files in their real formats under ``root``.

    Labels: MNIST's and CIFAR-100's balanced, CIFAR-10's mostly cats and birds
    (:data:`CIFAR10_WEIGHTS`), every class in every training split (CIFAR-100: 5 of each, so that
    the 10 % validation split holds every class, as chapter 4's one-vs-all calibrators need).
    Each class has a fixed random image (its template), every image of the class is that
    template plus a little noise.

    Parameters
    ----------
    root : path-like
        The folder (created if needed): ``MNIST/raw/*.gz``, ``cifar-10-batches-py/``,
        ``cifar-100-python/`` land in it, where :func:`calibcourse.study.training.downloads.load_full` looks.
    seed : int, default=0
        Seed of the images and labels.
    sizes : dict, optional
        ``{name: (training samples, test samples)}`` replacing entries of :data:`SIZES`.

    Returns
    -------
    pathlib.Path
        ``root``.

    Examples
    --------
    >>> import tempfile
    >>> from calibcourse.study.training.downloads import load_full
    >>> root = write_fake_data(tempfile.mkdtemp())
    >>> [a.shape for a in load_full("cifar100", root, verify=False)]
    [(500, 3, 32, 32), (500,), (500, 3, 32, 32), (500,)]
    """
    sizes = {**SIZES, **(sizes or {})}
    root = Path(root)
    rng = np.random.default_rng(seed)

    def images(labels, templates):
        """Each class a fixed random template, each image its class's template plus a little noise."""
        noise = rng.integers(-12, 13, (len(labels), *templates.shape[1:]))
        return np.clip(templates[labels] + noise, 0, 255).astype(np.uint8)

    raw = root / "MNIST" / "raw"
    raw.mkdir(parents=True, exist_ok=True)
    mnist_templates = rng.integers(0, 256, (10, 28, 28))
    for split, n in zip(("train", "t10k"), sizes["mnist"], strict=True):
        labels = _balanced_labels(n, 10, rng)
        for kind, arr in (("images-idx3-ubyte", images(labels, mnist_templates)), ("labels-idx1-ubyte", labels)):
            (raw / f"{split}-{kind}.gz").write_bytes(gzip.compress(_idx_bytes(arr)))
    for name, k in (("cifar10", 10), ("cifar100", 100)):
        n_train, n_test = sizes[name]
        folder = root / ("cifar-10-batches-py" if k == 10 else "cifar-100-python")
        folder.mkdir(parents=True, exist_ok=True)
        templates = rng.integers(0, 256, (k, 3072))
        key = "labels" if k == 10 else "fine_labels"
        weights = CIFAR10_WEIGHTS if k == 10 else None
        train_labels = _labels(n_train, k, rng, weights)
        parts = ([(f"data_batch_{i}", part) for i, part in enumerate(np.array_split(np.arange(n_train), 5), 1)]
                 if k == 10 else [("train", np.arange(n_train))])
        for file, idx in parts:
            batch = {"data": images(train_labels[idx], templates), key: train_labels[idx].tolist()}
            if k == 100:
                batch["coarse_labels"] = (train_labels[idx] // 5).tolist()
            (folder / file).write_bytes(pickle.dumps(batch))
        test_labels = _labels(n_test, k, rng, weights)
        test = {"data": images(test_labels, templates), key: test_labels.tolist()}
        if k == 100:
            test["coarse_labels"] = (test_labels // 5).tolist()
        (folder / ("test_batch" if k == 10 else "test")).write_bytes(pickle.dumps(test))
        meta = {"label_names": [f"class {i}" for i in range(10)]} if k == 10 else {
            "fine_label_names": [f"class {i}" for i in range(100)],
            "coarse_label_names": [f"superclass {i}" for i in range(20)]}
        (folder / ("batches.meta" if k == 10 else "meta")).write_bytes(pickle.dumps(meta))
    return root


def _write_fake_weights(folder: Path) -> None:
    """Random weights of torchvision's DenseNet-121 under the name of its ImageNet file."""
    import torch
    from torchvision.models import densenet121

    from calibcourse.study.runs.experiments import DENSENET_WEIGHTS

    folder.mkdir(parents=True, exist_ok=True)
    torch.manual_seed(0)
    torch.save(densenet121(weights=None).state_dict(), folder / DENSENET_WEIGHTS)


def copy_book(dest: Path) -> Path:
    """The book's sources (``_config.yml``, ``_toc.yml``, ``book/`` without its generated pages,
    ``notebooks/``) copied to ``dest``, so that the smoke build writes nothing into the repository."""
    dest.mkdir(parents=True, exist_ok=True)
    for f in ("_config.yml", "_toc.yml"):
        shutil.copy(REPO / f, dest / f)
    shutil.copytree(REPO / "book", dest / "book", ignore=shutil.ignore_patterns("generated", "_build"))
    shutil.copytree(REPO / "notebooks", dest / "notebooks", ignore=shutil.ignore_patterns(".ipynb_checkpoints"))
    return dest


def _train_part(configs: dict, root: str, threads: int) -> int:
    from calibcourse.study.runs.cache import Cache
    from calibcourse.tools.grid import train_serial

    return train_serial(configs, Cache(root), checkpoint_every=1, log=lambda line: None, threads=threads)


def _train_in_parts(configs: dict, root, parts: int) -> None:
    """Train ``configs`` in ``parts`` processes of one thread each (small batches use one core
    best), every ``parts``-th run in the same process."""
    from concurrent.futures import ProcessPoolExecutor
    from multiprocessing import get_context

    items = list(configs.items())
    if parts <= 1:
        _train_part(configs, str(root), os.cpu_count() or 1)
        return
    with ProcessPoolExecutor(parts, mp_context=get_context("spawn")) as pool:
        futures = [pool.submit(_train_part, dict(items[i::parts]), str(root), 1) for i in range(parts)]
        for f in futures:
            f.result()


def smoke(profile: str = "full", workdir=None, html: bool = True, processes: int | None = None, log=print) -> Path:
    """Run the smoke run of ``profile`` in ``workdir`` (a new temporary folder when None).

    Small files in the real formats (:func:`write_fake_data`) and random weights stand in for
    the data sets and the pretrained weights; every run of the profile trains capped at
    :data:`SMOKE_CAPS` (``CALIBCOURSE_SMOKE``); every page is executed against those runs
    and the book rendered. Nothing is written into the repository or the committed cache.
    It sets ``CALIBCOURSE_SMOKE``, ``CALIBCOURSE_DATA``,
    ``CALIBCOURSE_CACHE``, ``CALIBCOURSE_QUIET``, ``OMP_WAIT_POLICY`` and ``PYTHONPATH`` in
    this process's environment while it runs (the pages' kernels inherit them) and restores
    them afterwards.

    Parameters
    ----------
    profile : str, default="full"
        One of :data:`calibcourse.study.runs.profiles.PROFILES`.
    workdir : path-like, optional
        Where everything goes (default: a new temporary folder).
    html : bool, default=True
        Render the book after executing its pages.
    processes : int, optional
        Processes the runs train in (default: one per core, at most 2).
    log : callable, default=print
        Where the progress lines go.

    Returns
    -------
    pathlib.Path
        The folder: ``data/`` (with ``data/weights/``), ``cache/``, ``book/`` (with ``book/_build/html``).

    Raises
    ------
    calibcourse.tools.build.BuildError
        A page failed; the error of a run that fails is raised as it is.

    Examples
    --------
    ``make smoke PROFILE=full`` runs ``smoke("full")`` (minutes). A bad profile stops at once:

    >>> smoke("fulll")
    Traceback (most recent call last):
        ...
    ValueError: ...
    """
    from calibcourse.study.runs.experiments import experiments
    from calibcourse.study.runs.profiles import check_profile
    from calibcourse.tools import build

    check_profile(profile)
    processes = processes or min(2, os.cpu_count() or 1)
    work = Path(workdir or tempfile.mkdtemp(prefix="calibcourse-smoke-")).resolve()
    env = {"CALIBCOURSE_SMOKE": SMOKE_CAPS, "CALIBCOURSE_DATA": str(work / "data"),
           "CALIBCOURSE_CACHE": str(work / "cache"),
           "CALIBCOURSE_QUIET": "1", "OMP_WAIT_POLICY": "PASSIVE",
           # the executed pages import this checkout's package
           "PYTHONPATH": os.pathsep.join([str(REPO)] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep)
                                                        if p])}
    with environ(**env):  # this process's environment is restored after: the work folder may be removed next
        start = time.perf_counter()
        write_fake_data(work / "data")
        _write_fake_weights(work / "data" / "weights")
        log(f"smoke {profile}: small files in the real formats under {work} ({time.perf_counter() - start:.1f} s)")
        t = time.perf_counter()
        configs = experiments(profile)
        _train_in_parts(configs, work / "cache", parts=processes)
        log(f"smoke {profile}: {len(configs)} runs trained ({SMOKE_CAPS} epochs:batches:samples, {processes} "
            f"processes) in {time.perf_counter() - t:.1f} s")
        t = time.perf_counter()
        root = copy_book(work / "book")
        build.execute_book(root, profile=profile, force=True, log=log)
        build.write_ledger(root, build.notebook_pages(root), log=log)
        if html:
            build.build_html(root, log=log)
        log(f"smoke {profile}: pages executed{' and rendered' if html else ''} in {time.perf_counter() - t:.1f} s; "
            f"done in {time.perf_counter() - start:.1f} s")
    return work


def main(argv=None) -> int:
    from calibcourse.study.runs.profiles import PROFILES
    from calibcourse.tools.build import BuildError

    ap = argparse.ArgumentParser(prog="python -m calibcourse.tools.smoke", description=__doc__.split("\n")[0])
    ap.add_argument("--profile", default="full", choices=PROFILES)
    ap.add_argument("--keep", metavar="DIR", default=None,
                    help="work in DIR and keep it (default: a temporary folder, removed afterwards)")
    ap.add_argument("--no-html", action="store_true", help="execute the pages only")
    args = ap.parse_args(argv)
    work = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="calibcourse-smoke-"))
    try:
        smoke(args.profile, work, html=not args.no_html)
    except BuildError as exc:
        print(f"\nSMOKE FAILED: {exc}", file=sys.stderr)
        return 1
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
