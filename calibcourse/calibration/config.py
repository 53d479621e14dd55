"""The toolkit's global configuration, scikit-learn's way: :func:`set_config`, :func:`get_config` and
:func:`config_context`.

One setting so far, ``integer_labels``: how a calibrator reads integer labels. By default
(``"sorted"``) it follows scikit-learn's rule, the sorted unique labels are the classes, so a
calibration set that lacks a class needs ``classes=``. A program whose labels are always the score
columns' indices ``0..K-1`` (torch's convention; the course's pages, whose runs' labels are class
indices by construction) may say so once, ``set_config(integer_labels="indices")``: integer labels
are then read as ``classes=range(K)`` every time, whatever classes a set happens to hold, and a
label outside ``0..K-1`` is an error. Strings are names either way. The setting holds for the
process; :func:`config_context` sets it for a ``with`` block only.
"""
from __future__ import annotations

from contextlib import contextmanager

__all__ = ["INTEGER_LABELS", "get_config", "set_config", "config_context"]

#: How integer labels are read: ``"sorted"`` (scikit-learn's rule: the sorted unique labels are the
#: classes) or ``"indices"`` (the score columns' indices, ``classes=range(K)``)
INTEGER_LABELS = ("sorted", "indices")

_CONFIG = {"integer_labels": "sorted"}


def get_config() -> dict:
    """The current values of the toolkit's settings.

    Returns
    -------
    dict
        ``{"integer_labels": ...}``, a copy: change a setting with :func:`set_config`.

    Examples
    --------
    >>> get_config()
    {'integer_labels': 'sorted'}
    """
    return dict(_CONFIG)


def set_config(integer_labels: str | None = None) -> None:
    """Set the toolkit's settings for the process; a setting left at None keeps its value.

    Parameters
    ----------
    integer_labels : {"sorted", "indices"}, optional
        How a calibrator reads integer labels (:data:`INTEGER_LABELS`): ``"sorted"``, scikit-learn's
        rule (the sorted unique labels are the classes: a set that lacks a class needs ``classes=``),
        or ``"indices"``, the score columns' indices (as with ``classes=range(K)``).

    Returns
    -------
    None

    Examples
    --------
    >>> from calibcourse.calibration.calibrators import TemperatureScaling
    >>> from calibcourse.calibration.synthetic import scaled_logits
    >>> z, y = scaled_logits(300, 3, factor=2.0, seed=0)
    >>> set_config(integer_labels="indices")
    >>> TemperatureScaling().fit(z[y != 1], y[y != 1]).classes_  # no label 1: still three columns
    array([0, 1, 2])
    >>> set_config(integer_labels="sorted")  # scikit-learn's rule again
    >>> set_config(integer_labels="names")
    Traceback (most recent call last):
    ...
    ValueError: integer_labels must be one of 'sorted', 'indices'; got 'names'
    """
    if integer_labels is not None:
        if integer_labels not in INTEGER_LABELS:
            raise ValueError(f"integer_labels must be one of {', '.join(map(repr, INTEGER_LABELS))}; "
                             f"got {integer_labels!r}")
        _CONFIG["integer_labels"] = integer_labels


@contextmanager
def config_context(*, integer_labels: str | None = None):
    """The toolkit's settings changed inside a ``with`` block, restored after it.

    Parameters
    ----------
    integer_labels : {"sorted", "indices"}, optional
        As in :func:`set_config`.

    Returns
    -------
    contextmanager
        Nothing is bound by ``as``.

    Examples
    --------
    >>> with config_context(integer_labels="indices"):
    ...     get_config()["integer_labels"]
    'indices'
    >>> get_config()["integer_labels"]
    'sorted'
    """
    before = get_config()
    set_config(integer_labels=integer_labels)
    try:
        yield
    finally:
        _CONFIG.update(before)
