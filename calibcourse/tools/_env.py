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


def in_pinned_process(module: str, argv: list, profile: str):
    """Run ``python -m module argv`` again in a process with the pinned numerics environment
    (:data:`calibcourse.study.training.provenance.PINNED_ENV`) when ``profile`` trains pinned and this
    process was not started so; return its exit status, or None when this process may go on.

    torch reads its kernel set, MKL and oneDNN their code paths, when torch is first imported,
    so a pinned run cannot be had by setting the variables in a running process.

    Examples
    --------
    >>> in_pinned_process("calibcourse.tools.cli", ["status", "default"], "default") is None
    True
    """
    import subprocess
    import sys

    from calibcourse.study.training.provenance import PINNED_ENV, PINNED_PROFILES, pinned_environ

    if profile not in PINNED_PROFILES or all(os.environ.get(k) == v for k, v in PINNED_ENV.items()):
        return None
    return subprocess.run([sys.executable, "-m", module, *argv], env=pinned_environ()).returncode
