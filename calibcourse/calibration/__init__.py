"""The practitioner's toolkit: calibration measures, calibrators, statistics and figures.

Importing it (or any of its modules) needs numpy, scipy, scikit-learn and
matplotlib only, never torch; torch tensors are accepted where torch is installed.
``load`` reads a calibrator written by ``calibcourse report --save``
(:func:`calibcourse.calibration.report.load`). The toolkit has no global settings: what a call
does depends on its arguments only (labels that are the columns' indices, where a set may lack a
class, are said so with ``fit(..., classes=range(K))``).
"""
__all__ = ["load"]


def __getattr__(name):
    if name == "load":  # imported on first use: `import calibcourse.calibration` stays light
        from calibcourse.calibration.report import load

        return load
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
