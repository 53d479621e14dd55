"""The practitioner's toolkit: calibration measures, calibrators, statistics and figures.

Importing it (or any of its modules) needs numpy, scipy, scikit-learn and
matplotlib only, never torch; torch tensors are accepted where torch is installed.
``load`` reads a calibrator written by ``calibcourse report --save``
(:func:`calibcourse.calibration.report.load`); ``set_config``, ``get_config`` and
``config_context`` are the toolkit's settings (:mod:`calibcourse.calibration.config`).
"""
from calibcourse.calibration.config import config_context, get_config, set_config

__all__ = ["config_context", "get_config", "set_config", "load"]


def __getattr__(name):
    if name == "load":  # imported on first use: `import calibcourse.calibration` stays light
        from calibcourse.calibration.report import load

        return load
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
