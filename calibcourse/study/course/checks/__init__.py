"""Automatic checks of the students' implementations in the labs (offline, no server).

Each ``check_*`` runs a student's function on fixed cases (edges included:
confidences of exactly 0 and 1, values on bin edges, empty bins, one class)
and random ones, compares it with the reference implementation of
``calibcourse``, prints what passed, what failed with the input that broke it
(for arrays: the first element that differs) and a hint, and returns True when
every case passed, False otherwise. A function that raises is a failure, never
a crash of the check; one that raises ``NotImplementedError`` (the student
edition's stub) is reported once as "not written yet", its cases not run. Where a wrong answer is a known
variant (an unweighted average of
the bin gaps for the ECE, a leave-one-out average for the SECE, a temperature
fitted on the test split), the check names it.

Every check takes ``seed``: ``seed=0`` gives the cases a student sees in the
lab; the graded assignments (:mod:`calibcourse.tools.assignments`) run the same check
with another seed, on inputs the student has never seen, so that a function
that special-cases the visible inputs does not earn those points. ``strict=True``
prints nothing and raises :class:`CheckFailure` (an ``AssertionError``) with the
report of the failed cases, the form an autograder's test needs. A numeric case's
report states the tolerance that decides it.

Every check also enforces its exercise's rules (``rules=True``, the default;
:mod:`.rules`): a function that calls what the exercise asks it to write (the
library's version, or scipy's, scikit-learn's or torch's equivalent), by whatever
route, fails the check, in the notebook and in every graded test alike.
``rules=False`` checks the numbers only. Lab 2's checks grade one of a few
variants of their exercise (``variant=``, :data:`.lab2.VARIANTS`), which a course
chooses by its secret.
"""
from __future__ import annotations

from calibcourse.study.course.checks._harness import CheckFailure, graded
from calibcourse.study.course.checks.lab1 import check_ece, check_ece_l2, check_mce, check_reliability_bins
from calibcourse.study.course.checks.lab2 import (
    check_grid_temperature,
    check_nll_temperature,
    check_softmax_temperature,
    check_temperature_scaling,
)
from calibcourse.study.course.checks.lab3 import (
    check_histogram_binning,
    check_isotonic,
    check_paired_difference,
    check_platt,
)
from calibcourse.study.course.checks.lab4 import check_classwise_ece, check_flsd53, check_focal_loss, check_sece

CheckFailure.__module__ = __name__  # its public name, in tracebacks and the docs

__all__ = ["CheckFailure", "graded", "check_ece", "check_mce", "check_reliability_bins", "check_softmax_temperature",
           "check_temperature_scaling", "check_grid_temperature", "check_histogram_binning",
           "check_isotonic", "check_platt", "check_sece", "check_focal_loss", "check_flsd53",
           "check_ece_l2", "check_classwise_ece", "check_nll_temperature", "check_paired_difference"]
