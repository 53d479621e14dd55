"""The ``calibcourse`` command (also ``python -m calibcourse``).

    calibcourse report OUTPUTS [options]      a calibration report of a model's outputs
                                              (:mod:`calibcourse.calibration.cli`; needs no torch)
    calibcourse labs [--out DIR] [options]    the labs' notebooks, as handed out
                                              (:mod:`calibcourse.tools.handout`; needs no torch)
    calibcourse list|verify|clear|compact|train|status ...
                                              the study's result cache and run grid
                                              (:mod:`calibcourse.tools.cli`)

Each sub-command imports only its own layer, so ``calibcourse report`` works where only
``calibcourse.calibration``'s dependencies are installed.
"""
from __future__ import annotations

import sys

__all__ = ["main", "USAGE"]

USAGE = """usage: calibcourse COMMAND [options]     (calibcourse COMMAND --help for its options)

The toolkit (needs no torch):
  report OUTPUTS...    a calibration report of a model's logits or probabilities and labels:
                       measures with intervals, the post-hoc calibrators compared out of fold,
                       a recommendation (--save keeps it as JSON)

The course's labs (pip install ".[labs]"):
  labs [--out DIR]     write the labs' notebooks, as handed out, to DIR (default ./labs)

The course's result cache and run grid (pip install ".[study]"):
  list | verify | clear | compact      the cache's entries
  train PROFILE | status PROFILE       train a profile's missing runs; what is done, stale or missing"""


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
    >>> main(["--help"])  # doctest: +ELLIPSIS
    usage: calibcourse COMMAND [options] ...
    <BLANKLINE>
    The toolkit (needs no torch):
      report OUTPUTS...    a calibration report ...
    0
    """
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] in ("-h", "--help"):
        print(USAGE)
        return 0 if argv else 2
    if argv[:1] == ["report"]:
        from calibcourse.calibration.cli import main as report_main

        return report_main(argv[1:])
    if argv[:1] == ["labs"]:
        from calibcourse.tools.handout import main as labs_main

        return labs_main(argv[1:])
    from calibcourse.tools.cli import main as study_main

    return study_main(argv)


if __name__ == "__main__":
    sys.exit(main())
