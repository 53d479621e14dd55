"""Class labels, scikit-learn's way: the sorted unique labels (or the ``classes`` given) name the score
columns in order (:func:`encode_labels`); labels that are the columns' indices, where a set may lack a
class, are said so at the call, with ``classes=range(K)``: no setting changes what labels mean."""
from __future__ import annotations

import numpy as np

from calibcourse.calibration._validation import assumed_checked, check_labels, label_array

__all__ = ["encode_labels"]

def encode_labels(labels, n: int, n_classes: int, name: str = "labels", classes=None):
    """Class labels as indices ``0..K-1`` of the score columns, and ``classes_``: scikit-learn's rule.

    ``classes_`` is the sorted unique labels (or the sorted ``classes`` given), and the score
    columns are in that order: the i-th class names column i. Any sortable labels work (integers,
    whole-number floats, booleans, strings); integers are not read by their range, so labels
    ``1, 2, 3`` of three columns are the classes 1, 2 and 3 whether or not a 3 is present: a class
    absent from the labels must be named with ``classes`` (``classes=range(K)`` where the labels
    are the columns' indices), else the labels do not say which column is whose.

    Parameters
    ----------
    labels : array_like of shape (n,)
        The labels.
    n : int
        The number of samples the scores have.
    n_classes : int
        K, the number of score columns.
    name : str, default="labels"
        Their name in error messages.
    classes : array_like of shape (K,), optional
        Every class, when some may be absent from ``labels``.

    Returns
    -------
    y : numpy.ndarray of int64
        The column index of each label.
    classes : numpy.ndarray
        ``classes_``: the class of each column.

    Examples
    --------
    >>> encode_labels(["no", "yes", "no"], 3, 2)
    (array([0, 1, 0]), array(['no', 'yes'], dtype='<U3'))
    >>> encode_labels([-1, 1, 1], 3, 2)[0]
    array([0, 1, 1])
    >>> encode_labels([0, 2, 2], 3, 3, classes=[0, 1, 2])
    (array([0, 2, 2]), array([0, 1, 2]))
    >>> encode_labels([1, 2, 2], 3, 3)
    Traceback (most recent call last):
    ...
    ValueError: labels have 2 distinct values (1, 2) but the scores have 3 columns: the sorted labels name the
    columns, so every class must appear; name them all with classes=[...] (classes=range(3) if the labels are the
    columns' indices)
    """
    lab = label_array(labels, name)
    if lab.ndim == 2 and lab.shape[1] == 1:  # a column vector, as scikit-learn's column_or_1d takes it
        lab = lab[:, 0]
    if lab.ndim != 1 or lab.shape[0] != n:
        if lab.dtype.kind in "iubf":
            check_labels(lab, n, None, name)  # its message for a wrong length or shape
        raise ValueError(f"{name} must have shape ({n},), one label per sample; got shape {lab.shape}")
    if lab.dtype.kind not in "iubfUS":
        raise ValueError(f"{name} must be class labels (numbers or strings); got dtype {lab.dtype}")
    if not assumed_checked():
        _class_values(lab, name)
    if classes is not None:
        return _encode_with_classes(lab, n_classes, name, classes)
    if lab.dtype.kind in "iu" and n and lab.min() == 0 and lab.max() == n_classes - 1:  # the common case, fast
        counts = np.bincount(lab.astype(np.int64), minlength=n_classes)
        if (counts > 0).all():
            return lab.astype(np.int64, copy=False), np.arange(n_classes, dtype=lab.dtype)
    try:
        found, y = np.unique(lab, return_inverse=True)
    except TypeError as exc:
        raise ValueError(f"{name} must be sortable class labels; {exc}") from None
    if found.size != n_classes:
        shown = ", ".join(map(str, found[:6])) + (", ..." if found.size > 6 else "")
        if found.size == 1:
            raise ValueError(f"{name} contain one class only ({shown}); calibration needs at least two")
        raise ValueError(f"{name} have {found.size} distinct values ({shown}) but the scores have {n_classes} "
                         f"columns: the sorted labels name the columns, so every class must appear; name them all "
                         f"with classes=[...] (classes=range({n_classes}) if the labels are the columns' indices)")
    return y.astype(np.int64).reshape(-1), found


def _class_values(lab: np.ndarray, name: str) -> None:
    """The value checks of :func:`encode_labels`: float labels finite and whole (a class, not a target)."""
    if lab.dtype.kind == "f":
        if not np.isfinite(lab).all():
            raise ValueError(f"{name} contain NaN or infinite values")
        frac = lab != np.round(lab)
        if frac.any():
            raise ValueError(f"{name} must be class labels; got non-integer values such as {lab[frac][0].item()!r} "
                             "(Unknown label type: continuous)")


def _encode_with_classes(lab: np.ndarray, n_classes: int, name: str, classes):
    """:func:`encode_labels` with every class named: ``classes`` sorted are the columns."""
    cls = label_array(classes, "classes")
    if cls.ndim != 1 or cls.size != n_classes:
        raise ValueError(f"classes must name the {n_classes} classes of the score columns; got shape {cls.shape}")
    found = np.unique(cls)
    if found.size != cls.size:
        raise ValueError(f"classes must name each class once; got {cls.tolist()}")
    if (found.dtype.kind in "US") != (lab.dtype.kind in "US"):
        raise ValueError(f"{name} and classes must both be numbers or both be strings; got {lab.dtype} and "
                         f"{found.dtype}")
    idx = np.clip(np.searchsorted(found, lab), 0, found.size - 1)
    unknown = found[idx] != lab
    if unknown.any():
        raise ValueError(f"{name} hold {lab[unknown][0].item()!r}, which is not one of classes {found.tolist()}")
    return idx.astype(np.int64), found
