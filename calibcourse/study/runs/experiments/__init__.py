"""Every training run of the book, by profile: the registry and each study's run configs.

:func:`experiments` (``experiments(profile) -> {name: config}``) is the registry of runs
(:mod:`calibcourse.study.runs.experiments.registry`, with :func:`run`, :func:`runs` and the labels
read from the configs); each study's configs live in a module of their own: ``guo`` (the digits
MLP, Guo et al.'s causes, the binary study, the tutorial's recipe), ``adam`` (the
meta-regularization study's first set-up on an Adam backbone), ``reference`` (the reference
recipe of meta-calibration's loop), ``crossfit`` (calibration without a held-out set), ``shift``
(distribution shift and the letters) and ``full`` (the papers' scale). The names below are all
importable from this package.
"""
from __future__ import annotations

from calibcourse.study.runs.experiments.adam import (
                                                     ADAM_BACKBONE,
                                                     ADAM_CHOICE_PART,
                                                     ADAM_CHOSEN,
                                                     ADAM_GRIDS,
                                                     ADAM_MAIN_METHODS,
                                                     ADAM_MAX_VAL_ERROR_GAP,
                                                     ADAM_META_VAL,
                                                     ADAM_METHODS,
                                                     ADAM_N_SEEDS,
                                                     META_LR_GRID,
                                                     PAPER_DIAGNOSIS,
                                                     PAPER_META,
                                                     PAPER_SETUP,
                                                     SAFE_META,
                                                     SGD_ARM,
                                                     SGD_ARM_SEEDS,
                                                     SGD_BACKBONE,
                                                     SGD_LR,
                                                     SGD_LR_GRID,
)
from calibcourse.study.runs.experiments.crossfit import CROSSFIT
from calibcourse.study.runs.experiments.full import DENSENET_WEIGHTS, HE_CIFAR, META_CIFAR
from calibcourse.study.runs.experiments.guo import N_TEST_MNIST1D, SEEDS
from calibcourse.study.runs.experiments.reference import (
                                                     REF_ARM_LR,
                                                     REF_ARMS,
                                                     REF_BACKBONE,
                                                     REF_CHOSEN,
                                                     REF_CLAIM_SEEDS,
                                                     REF_DEPARTURES,
                                                     REF_FOCAL_GAMMAS,
                                                     REF_GRID_SEEDS,
                                                     REF_MAX_ERROR_GAP,
                                                     REF_META,
                                                     REF_META_LRS,
                                                     REF_N_SEEDS,
                                                     REF_PARTS,
                                                     REF_PLACEBO_LABEL,
                                                     REF_PREDICTIONS,
                                                     REF_SIZE_MEASURED,
                                                     ref_name,
                                                     reference_runs,
)
from calibcourse.study.runs.experiments.registry import (
                                                     data_label,
                                                     data_summary,
                                                     experiments,
                                                     model_label,
                                                     run,
                                                     runs,
                                                     sweep_axis,
                                                     sweep_levels,
                                                     sweep_value,
)
from calibcourse.study.runs.experiments.shift import (
                                                     LETTERS_OOD,
                                                     LETTERS_SEEDS,
                                                     MC_DROPOUT,
                                                     SHIFT_DATA,
                                                     SHIFT_FOCAL_GAMMA,
                                                     SHIFT_METHODS,
                                                     SHIFT_N_SEEDS,
                                                     SHIFT_TESTS,
)
from calibcourse.study.runs.profiles import PROFILES

__all__ = [
    # the registry
    "experiments", "run", "runs", "data_summary", "model_label", "data_label", "sweep_value", "sweep_axis",
    "sweep_levels", "PROFILES",
    # the first studies
    "SEEDS", "N_TEST_MNIST1D",
    # the meta-regularization study on the Adam backbone
    "ADAM_BACKBONE", "ADAM_METHODS", "ADAM_MAIN_METHODS", "ADAM_N_SEEDS", "ADAM_GRIDS", "ADAM_CHOSEN",
    "ADAM_CHOICE_PART", "ADAM_MAX_VAL_ERROR_GAP", "ADAM_META_VAL",
    "META_LR_GRID", "PAPER_META", "PAPER_SETUP", "SAFE_META", "PAPER_DIAGNOSIS", "SGD_BACKBONE",
    "SGD_LR_GRID", "SGD_LR", "SGD_ARM", "SGD_ARM_SEEDS",
    # the reference recipe
    "REF_SIZE_MEASURED", "REF_BACKBONE", "REF_META", "REF_META_LRS", "REF_GRID_SEEDS", "REF_N_SEEDS",
    "REF_CLAIM_SEEDS", "REF_FOCAL_GAMMAS", "REF_ARMS", "REF_ARM_LR", "REF_PLACEBO_LABEL", "REF_PREDICTIONS",
    "REF_CHOSEN", "REF_DEPARTURES", "REF_PARTS", "REF_MAX_ERROR_GAP", "reference_runs", "ref_name",
    # calibration without a held-out set, distribution shift, the letters
    "CROSSFIT", "SHIFT_DATA", "SHIFT_TESTS", "SHIFT_FOCAL_GAMMA", "MC_DROPOUT", "SHIFT_METHODS", "SHIFT_N_SEEDS",
    "LETTERS_OOD", "LETTERS_SEEDS",
    # the papers' scale
    "HE_CIFAR", "META_CIFAR", "DENSENET_WEIGHTS",
]
