"""Environment variables set for the length of a block, then restored (the run grid, the smoke run)."""
from __future__ import annotations

import os
from contextlib import contextmanager


@contextmanager
def environ(**values):
    """Set the environment variables ``values`` (``None``: leave that one alone) inside the block,
    and put back what was there before, unset ones unset, when it ends (also on an error).

    Examples
    --------
    >>> with environ(CALIBCOURSE_EXAMPLE="1"):
    ...     os.environ["CALIBCOURSE_EXAMPLE"]
    '1'
    >>> "CALIBCOURSE_EXAMPLE" in os.environ
    False
    """
    values = {k: str(v) for k, v in values.items() if v is not None}
    saved = {k: os.environ.get(k) for k in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
