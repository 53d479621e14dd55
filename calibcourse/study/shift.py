"""Test sets under a distribution shift you can dial (chapter 6): the test images rotated.

A run config's optional ``shift`` section, e.g. ``{"kind": "rotate", "levels": [15, 30, 45], "n": 500}``,
asks for the first ``n`` test images rotated by each angle (degrees), as Ovadia et al. (2019)
rotate MNIST: the same digits at every angle, so that measures at two angles are paired sample
by sample. The run stores them beside its test split as ``"shift/<angle>"``
(``result.logits("shift/30")``, ``result.labels("shift/30")``); the clean test set stays ``"test"``.

Rotation is :func:`scipy.ndimage.rotate` about the image centre, without resizing
(``reshape=False``), with linear interpolation (``order=1``), deterministic. Images are rotated
after normalization with the normalized black pixel as the fill: linear interpolation commutes
with the per-channel affine normalization, so this equals normalizing the rotated raw images.
"""
from __future__ import annotations

import numpy as np

__all__ = ["SHIFT_KINDS", "check_shift", "rotate_images", "shifted_sets", "split_name", "shift_levels"]

#: the kinds of shift a config may ask for
SHIFT_KINDS = ("rotate",)


def check_shift(spec) -> dict:
    """Validate a config's ``shift`` section; return it.

    Parameters
    ----------
    spec : dict
        ``{"kind": "rotate", "levels": [angles in degrees, distinct, > 0], "n": images per angle >= 1}``.

    Returns
    -------
    dict
        ``spec`` itself.

    Raises
    ------
    ValueError
        A missing or unknown key, or a value out of range, named in the message.

    Examples
    --------
    >>> check_shift({"kind": "rotate", "levels": [15, 30], "n": 100})["levels"]
    [15, 30]
    >>> check_shift({"kind": "rotate", "levels": [30, 30], "n": 100})
    Traceback (most recent call last):
        ...
    ValueError: shift.levels must be distinct angles in degrees, each in (0, 360), increasing; got [30, 30]
    """
    if not isinstance(spec, dict) or set(spec) != {"kind", "levels", "n"}:
        raise ValueError(f'shift must be a dict {{"kind": "rotate", "levels": [15, 30, ...], "n": 500}}; got {spec!r}')
    if spec["kind"] not in SHIFT_KINDS:
        raise ValueError(f"shift.kind must be one of {', '.join(SHIFT_KINDS)}; got {spec['kind']!r}")
    levels = spec["levels"]
    if (not isinstance(levels, list) or not levels
            or not all(isinstance(a, int) and not isinstance(a, bool) and 0 < a < 360 for a in levels)
            or levels != sorted(set(levels))):
        raise ValueError(f"shift.levels must be distinct angles in degrees, each in (0, 360), increasing; "
                         f"got {levels!r}")
    n = spec["n"]
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise ValueError(f"shift.n must be an integer >= 1; got {n!r}")
    return spec


def split_name(level) -> str:
    """The split a shift level is stored under: ``"shift/<level>"``.

    Parameters
    ----------
    level : int or float
        The shift's intensity (an angle in degrees for ``rotate``).

    Returns
    -------
    str
        The split's name for :meth:`calibcourse.study.results.RunResult.logits`.

    Examples
    --------
    >>> split_name(30)
    'shift/30'
    """
    return f"shift/{level}"


def shift_levels(config: dict) -> list:
    """The shift levels (angles) a run config stores, smallest first; ``[]`` without ``shift``.

    Parameters
    ----------
    config : dict
        A run config.

    Returns
    -------
    list
        Its levels.

    Examples
    --------
    >>> shift_levels({"shift": {"kind": "rotate", "levels": [15, 30], "n": 10}}), shift_levels({})
    ([15, 30], [])
    """
    return list((config.get("shift") or {}).get("levels", []))


def rotate_images(X, angle: float, fill=0.0) -> np.ndarray:
    """Images ``X`` (n, C, H, W) rotated by ``angle`` degrees (counter-clockwise) about their centre.

    Parameters
    ----------
    X : array_like of shape (n, C, H, W)
        The images.
    angle : float
        Degrees; 0 returns a copy of ``X``.
    fill : float or array_like of shape (C,), default=0
        The value of each channel outside the original image (the black pixel; normalized images
        need the normalized black, ``-mean / std``).

    Returns
    -------
    numpy.ndarray
        The rotated images, same shape and dtype as ``X``.

    Examples
    --------
    >>> X = np.zeros((1, 1, 5, 5), dtype=np.float32); X[0, 0, 0, 2] = 1.0   # a dot at the top centre
    >>> np.argwhere(rotate_images(X, 90)[0, 0] == 1.0).tolist()           # now at the left centre
    [[2, 0]]
    >>> bool(np.array_equal(rotate_images(X, 0), X)), rotate_images(X, 90).dtype
    (True, dtype('float32'))
    """
    from scipy import ndimage

    X = np.asarray(X)
    if X.ndim != 4:
        raise ValueError(f"X must be images of shape (n, C, H, W); got shape {X.shape}")
    fill = np.broadcast_to(np.asarray(fill, dtype=np.float64).reshape(-1), (X.shape[1],))
    if angle == 0:
        return X.copy()
    out = np.empty_like(X)
    for c in range(X.shape[1]):
        # axes (2, 1) of (n, H, W): rows are y downwards, so this turns the picture counter-clockwise
        out[:, c] = ndimage.rotate(X[:, c].astype(np.float64), angle, axes=(2, 1), reshape=False, order=1,
                                   mode="constant", cval=float(fill[c]))
    return out


def shifted_sets(X_test, y_test, spec: dict, fill=0.0) -> dict:
    """The shifted test sets a ``shift`` section asks for: ``{"shift/<angle>": (X, y)}``.

    The first ``min(n, len(y_test))`` test images, rotated by each angle; their labels are the
    test labels (a rotated digit keeps its class).

    Parameters
    ----------
    X_test : array_like of shape (n, C, H, W)
        The (normalized) test images.
    y_test : array_like of shape (n,)
        Their labels.
    spec : dict
        The config's ``shift`` section (:func:`check_shift`).
    fill : float or array_like of shape (C,), default=0
        The (normalized) black pixel, as in :func:`rotate_images`.

    Returns
    -------
    dict
        ``{split name: (images, labels)}``, angles in increasing order.

    Examples
    --------
    >>> X = np.arange(2 * 16, dtype=np.float32).reshape(2, 1, 4, 4); y = np.array([3, 7])
    >>> sets = shifted_sets(X, y, {"kind": "rotate", "levels": [90, 180], "n": 1})
    >>> list(sets), sets["shift/90"][0].shape, sets["shift/180"][1].tolist()
    (['shift/90', 'shift/180'], (1, 1, 4, 4), [3])
    >>> bool(np.array_equal(sets["shift/180"][0][0, 0], X[0, 0, ::-1, ::-1]))   # 180 degrees: both axes flipped
    True
    """
    check_shift(spec)
    X_test, y_test = np.asarray(X_test), np.asarray(y_test)
    if len(X_test) != len(y_test):
        raise ValueError(f"X_test and y_test must have the same length; got {len(X_test)} and {len(y_test)}")
    k = min(spec["n"], len(y_test))
    return {split_name(a): (rotate_images(X_test[:k], a, fill), y_test[:k].copy()) for a in spec["levels"]}
