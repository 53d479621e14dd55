"""The one home of the descriptions of parameters that many functions share.

Docstrings of the package are numpydoc. A parameter that many functions take
(``probs``, ``labels``, ``n_bins``, ``reliability``, ``config``, ...) is described
once in :data:`PARAMETERS`; :func:`document` writes the ``Parameters`` and
``Returns`` sections of a function's docstring from it (before ``Examples``), so
that the description reads the same everywhere and is written once.
"""
from __future__ import annotations

# numpydoc: "name : type", then the description indented
_SHARED = """
probs : array_like of shape (n, K) or (n,)
    Probabilities: a row per sample that sums to 1, or P(y = 1) of a binary problem.
labels : array_like of shape (n,)
    Integer class labels.
n_bins : int, default=15
    Number of bins.
strategy : {"uniform", "quantile"}, default="uniform"
    Equal-width Guo bins or equal-mass bins (:mod:`calibcourse.calibration.binning`).
reliability : {"top_label", "positive_class"}, optional
    What is measured: the predicted class, or P(y = 1) of binary input. By default P(y = 1) for
    binary input of shape (n,), as scikit-learn and torchmetrics, and the predicted class for
    (n, K) (:mod:`calibcourse.calibration.metrics`).
norm : {"l1", "l2", "max"}, default="l1"
    The average gap, its root mean square, or the largest gap.
seed : int, default=0
    Seed of the resampling.
x : numpy.ndarray of shape (n,)
    Scores in [0, 1].
weights : sequence of numpy.ndarray of shape (n,)
    Weights, one value per score; each gives one result.
bandwidth : float
    The kernel's standard deviation ``h``.
grid : int
    Number of nodes of the grid ``linspace(0, 1, grid)``.
input_type : {"probabilities", "logits"}, default="probabilities"
    What the scores are (:data:`calibcourse.calibration.calibrators.INPUT_TYPES`).
config : dict
    A run config (see :func:`calibcourse.study.config.normalize_config`).
progress : bool, optional
    Show a progress bar while training (default: unless ``CALIBCOURSE_QUIET`` is set).
profile : str
    One of :data:`calibcourse.study.profiles.PROFILES`.
name : str
    An experiment name, e.g. ``"ch2/model/small"``.
ax : matplotlib Axes, optional
    Where to draw (default: a new figure).
title : str, optional
    Title of the figure.
"""


def _parse(text: str) -> dict:
    """``{name: (type, description)}`` of numpydoc parameter entries."""
    entries = {}
    for line in text.strip().splitlines():
        if line.startswith(" "):
            typ, desc = entries[name]
            entries[name] = (typ, (desc + " " + line.strip()).strip())
        else:
            name, typ = line.split(" : ", 1)
            entries[name] = (typ, "")
    return entries


#: name -> (type, description) of the parameters that several functions share
PARAMETERS = _parse(_SHARED)


#: numpydoc sections that come after Parameters and Returns
_LATER = ("Attributes", "Raises", "Warns", "See Also", "Notes", "References", "Examples")


def _section(title: str, entries) -> list[str]:
    lines = [title, "-" * len(title)]
    for head, text in entries:
        lines.append(head)
        lines.extend("    " + line for line in text.split("\n"))
    return lines


def document(*params, returns=None):
    """Decorator: write the ``Parameters`` (and ``Returns``) sections of a docstring.

    Parameters
    ----------
    *params : str or (str, str, str)
        The parameters in the order of the signature: the name of one of
        :data:`PARAMETERS`, or ``(name, type, description)`` for a parameter
        of this function alone (type ``""`` for ``**kwargs``).
    returns : (str, str), optional
        Type and description of what the function returns.

    Returns
    -------
    callable
        A decorator that inserts the sections before the docstring's
        ``Attributes``, ``Raises``, ... or ``Examples`` (or at its end) and
        returns the function (or class).

    Examples
    --------
    >>> @document("probs", ("scale", "float", "A factor."), returns=("float", "Zero."))
    ... def zero(probs, scale):
    ...     '''Always zero.'''
    ...     return 0.0
    >>> print(zero.__doc__)
    Always zero.
    <BLANKLINE>
        Parameters
        ----------
        probs : array_like of shape (n, K) or (n,)
            Probabilities: a row per sample that sums to 1, or P(y = 1) of a binary problem.
        scale : float
            A factor.
    <BLANKLINE>
        Returns
        -------
        float
            Zero.
    <BLANKLINE>
    """
    entries = []
    for p in params:
        name, typ, text = (p, *PARAMETERS[p]) if isinstance(p, str) else p
        entries.append((f"{name} : {typ}" if typ else name, text))  # no type: e.g. **kwargs

    def decorate(obj):
        lines = (obj.__doc__ or "").split("\n")
        body = [ln for ln in lines[1:] if ln.strip()]
        indent = min((len(ln) - len(ln.lstrip()) for ln in body), default=4)
        new = (_section("Parameters", entries) + [""]) if entries else []
        if returns is not None:
            new += _section("Returns", [returns]) + [""]
        new = [(" " * indent + ln) if ln else "" for ln in new]
        at = next((i for i, ln in enumerate(lines) if ln.strip() in _LATER), None)
        if at is None:  # at the end, before the closing quotes' indentation
            tail = lines[-1] if len(lines) > 1 and not lines[-1].strip() else None
            lines = (lines[:-1] if tail is not None else lines) + [""] + new + [tail if tail is not None else ""]
        else:
            lines = lines[:at] + new + lines[at:]
        obj.__doc__ = "\n".join(lines)
        return obj

    return decorate
