"""The ``calibcourse`` command (also ``python -m calibcourse``).

    calibcourse report OUTPUTS [options]      a calibration report of a model's outputs
                                              (:mod:`calibcourse.calibration.cli`; needs no torch)
    calibcourse list|verify|clear|compact|train|status ...
                                              the study's result cache and run grid
                                              (:mod:`calibcourse.tools.cli`)

Each sub-command imports only its own layer, so ``calibcourse report`` works where only
``calibcourse.calibration``'s dependencies are installed.
"""
from __future__ import annotations

import sys

__all__ = ["main"]


def main(argv=None) -> int:
    """Run the ``calibcourse`` command with ``argv`` (default: ``sys.argv[1:]``); its exit status.

    Parameters
    ----------
    argv : list of str, optional
        The arguments after the program's name.

    Returns
    -------
    int

    Examples
    --------
    >>> main(["verify", "--root", "/nonexistent/calibcourse-cache"])
    0 good, 0 bad entries in /nonexistent/calibcourse-cache
    0
    """
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["report"]:
        from calibcourse.calibration.cli import main as report_main

        return report_main(argv[1:])
    from calibcourse.tools.cli import main as study_main

    return study_main(argv)


if __name__ == "__main__":
    sys.exit(main())
