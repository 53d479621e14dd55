"""Stratified folds: the one splitter of cross-fitting, for a report's calibrators and for the study's
cross-fitted networks."""
from __future__ import annotations

import numpy as np

from calibcourse.calibration._validation import assumed_checked, check_int

__all__ = ["fold_indices"]


def fold_indices(y, folds: int, seed: int | None = None) -> list:
    """The stratified folds of labels ``y``: ``[(train, held), ...]``, one pair per fold.

    scikit-learn's ``StratifiedKFold(folds)``: every sample is held out by exactly one fold and
    each fold keeps the class proportions. ``seed=None`` keeps the order of ``y`` (no shuffle):
    the folds of ``CalibratedClassifierCV(cv=folds)``, so that a report's out-of-fold predictions
    are scikit-learn's. An integer ``seed`` shuffles first (``shuffle=True, random_state=seed``):
    the folds then do not depend on the order of the pool, and the same ``y``, ``folds`` and
    ``seed`` give the same folds (the study's cross-fitted networks).

    Parameters
    ----------
    y : array_like of shape (n,)
        Integer labels.
    folds : int
        Number of folds, at least 2 and at most the size of the smallest class.
    seed : int, optional
        Seed of the shuffle; None: no shuffle.

    Returns
    -------
    list of (numpy.ndarray, numpy.ndarray)
        For each fold, the sorted indices it trains on and the sorted indices it holds out.

    Examples
    --------
    >>> y = np.array([0, 0, 0, 0, 1, 1, 1, 1])
    >>> for train, held in fold_indices(y, 2, seed=0):
    ...     print(train, held)
    [0 1 5 7] [2 3 4 6]
    [2 3 4 6] [0 1 5 7]
    >>> [held.tolist() for _, held in fold_indices(y, 2)]  # unshuffled: in the order of y
    [[0, 1, 4, 5], [2, 3, 6, 7]]
    >>> fold_indices(y, 5, seed=0)
    Traceback (most recent call last):
        ...
    ValueError: folds must be at most the size of the smallest class (4); got 5
    """
    from sklearn.model_selection import StratifiedKFold

    y = np.asarray(y)
    if y.ndim != 1 or len(y) == 0:
        raise ValueError(f"y must be a non-empty 1-D array of labels; got shape {y.shape}")
    check_int(folds, "folds", low=2)
    if not assumed_checked():
        smallest = int(np.unique(y, return_counts=True)[1].min())
        if folds > smallest:
            raise ValueError(f"folds must be at most the size of the smallest class ({smallest}); got {folds}")
    shuffled = seed is not None
    splitter = StratifiedKFold(n_splits=int(folds), shuffle=shuffled,
                               random_state=check_int(seed, "seed", low=0) if shuffled else None)
    return [(np.sort(tr), np.sort(held)) for tr, held in splitter.split(np.zeros(len(y)), y)]
