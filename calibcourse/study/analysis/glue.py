"""Numbers into prose: a chapter glues a value where it computes it, and its prose formats it
(``{glue:text}`name:.2f```). Its home is here, below the ledger that glues its claims; the pages
import it with their setup from :mod:`calibcourse.study.course.notebook`."""
from __future__ import annotations

import numpy as np

__all__ = ["glue_value"]


def glue_value(name: str, value):
    """``myst_nb.glue`` a number or string for use in prose as ``{glue:text}`name:.2f```.

    The format is chosen in the prose, not here. numpy scalars are converted to
    Python numbers first (myst-nb cannot format their ``repr``) and booleans to
    "yes" / "no"; nothing is displayed in the cell.

    Parameters
    ----------
    name : str
        An experiment name, e.g. ``"ch2/model/small"``.
    value : number, str, bool or numpy scalar
        What to glue.

    Returns
    -------
    int, float or str
        The value as glued.

    Examples
    --------
    >>> glue_value("n_test", np.int64(1000))  # outside a notebook nothing is recorded
    1000
    """
    from myst_nb import glue

    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, bool):
        value = "yes" if value else "no"
    glue(name, value, display=False)
    return value
