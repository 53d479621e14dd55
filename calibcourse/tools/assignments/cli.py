"""The command line of the graded labs (`make assignments`, `make grade`)."""
from __future__ import annotations

import argparse
import os
import sys

from calibcourse.tools.assignments.authoring import write_assignments
from calibcourse.tools.assignments.batch import grade
from calibcourse.tools.assignments.code_questions import DEFAULT_MEMORY_MB, DEFAULT_TIMEOUT
from calibcourse.tools.assignments.sandbox import kill_tree, limit_self, run_submission

__all__ = ["main"]


def main(argv=None) -> int:
    """Run the command line (``make assignments``, ``make grade``).

    Parameters
    ----------
    argv : list of str, optional
        The arguments (default: the command line's).

    Returns
    -------
    int
        The exit status: 0, or 2 for a bad argument (the reason on stderr).

    Examples
    --------
    >>> import contextlib, sys, tempfile
    >>> with contextlib.redirect_stderr(sys.stdout):
    ...     main(["grade", "--lab", "lab9", "--submissions", tempfile.mkdtemp()])
    error: lab must be one of lab1_ece, lab2_temperature, lab3_binning, lab4_sece_focal; got 'lab9'
    2
    """
    ap = argparse.ArgumentParser(prog="python -m calibcourse.tools.assignments", description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="command", required=True)
    a = sub.add_parser("assign", help="write the assignments under _build/assignments/<lab>/")
    a.add_argument("--lab", action="append", help="only this lab (repeatable)")
    a.add_argument("--out", default=None, help="default _build/assignments")
    a.add_argument("--secret", default=None, help="text the hidden tests' inputs derive from "
                   "(default: $CALIBCOURSE_SECRET, else a fixed one)")
    g = sub.add_parser("grade", help="grade a folder of submissions into _build/grades/<lab>.csv")
    g.add_argument("--lab", required=True)
    g.add_argument("--submissions", required=True)
    g.add_argument("--out", default=None, help="default _build/grades")
    g.add_argument("--timeout", type=float, default=DEFAULT_TIMEOUT, help="seconds per submission")
    g.add_argument("--jobs", type=int, default=2)
    g.add_argument("--memory-mb", type=int, default=DEFAULT_MEMORY_MB)
    r = sub.add_parser("_run")  # one submission, inside its own process (used by grade)
    r.add_argument("submission")
    r.add_argument("private")
    r.add_argument("workdir")
    args = ap.parse_args(argv)
    try:
        if args.command == "assign":
            write_assignments(args.out, args.lab, args.secret)
        elif args.command == "grade":
            grade(args.lab, args.submissions, args.out, args.timeout, args.jobs, args.memory_mb)
        else:
            limit_self()
            try:
                run_submission(args.submission, args.private, args.workdir)
            finally:  # what the submission started and left running, gone before this process ends
                kill_tree(os.getpid(), itself=False)
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
