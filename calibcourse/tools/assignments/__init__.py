"""The labs as graded assignments: otter-grader builds them, ``make grade`` grades a folder.

The package, by what it does: :mod:`.code_questions` (a lab's graded code questions, what each may
not use, the hidden tests' seeds), :mod:`.written` (the written questions, their rubrics and
marks), :mod:`.authoring` (the otter-grader assignment), :mod:`.sandbox` (one submission in its
own process and kernel), :mod:`.batch` (a folder graded: the grades CSV, the feedback) and
:mod:`.cli` (the command line).

    python -m calibcourse.tools.assignments assign [--lab LAB ...] [--out DIR] [--secret TEXT]
    python -m calibcourse.tools.assignments grade --lab LAB --submissions DIR [--timeout S] [--jobs N]

**One source per lab.** In a lab's jupytext source (``notebooks/labs/<lab>.md``) a code
cell tagged ``exercise`` with a ``points: [public, hidden]`` metadata entry is a graded
question: it defines one function between ``# BEGIN SOLUTION`` / ``# END SOLUTION``, and a
later cell checks it with ``checks.check_<name>(<function>)``. The student's and the
instructor's notebooks are :func:`calibcourse.tools.handout.lab_notebook`'s, the notebooks
``make labs`` writes; :func:`master_notebook` turns the same source into an otter-grader
master notebook, from which ``otter assign`` writes the autograder archive. A question's
public test is the lab's own check, as the student sees it; its hidden test runs the same
check with another ``seed`` (other inputs, derived from a secret), so special-casing the
visible inputs earns only the public point. A course's secret also chooses its variants of
the graded functions where a lab has them (:func:`calibcourse.tools.handout.course_variant`).

**What an exercise may not call.** Each check enforces its exercise's rules
(:mod:`calibcourse.study.course.checks.rules`): a function that calls the library's own
version of what it asks for, or scipy's, scikit-learn's or torch's equivalent, by whatever
route, fails the check. The public and the hidden tests are checks, so the rules hold
alike in the notebook, in :func:`grade`, in ``otter run`` and on Gradescope, and give the
same points. The hand-out states each exercise's rules under its prompt.

**Grading** (:func:`grade`) runs every submission in its own process and its own
temporary folder, with a wall-clock limit: the notebook's cells run in a fresh kernel (the
``parameters`` cell overridden to the fast ``ci`` profile: the graded checks do not depend
on it), each question is graded by otter's test files right after the last cell that
defines its function, and the points are saved after each question, so a submission cut
at the limit keeps what it earned so far. No Docker and no network: the code runs as the
user who grades (the Instructors' guide says what that does not protect against).
"""
from __future__ import annotations

from calibcourse.tools.assignments.authoring import master_notebook, write_assignment, write_assignments
from calibcourse.tools.assignments.batch import grade
from calibcourse.tools.assignments.cli import main
from calibcourse.tools.assignments.code_questions import (
                                                          ALWAYS_FORBIDDEN,
                                                          DEFAULT_MEMORY_MB,
                                                          DEFAULT_SECRET,
                                                          DEFAULT_TIMEOUT,
                                                          GRADE_PROFILE,
                                                          Question,
                                                          forbidden_uses,
                                                          hidden_seed,
                                                          lab_sources,
                                                          questions,
)
from calibcourse.tools.assignments.sandbox import cell_names

__all__ = ["Question", "questions", "forbidden_uses", "ALWAYS_FORBIDDEN", "hidden_seed", "lab_sources",
           "master_notebook", "write_assignment", "write_assignments", "grade", "main", "cell_names",
           "GRADE_PROFILE", "DEFAULT_TIMEOUT", "DEFAULT_MEMORY_MB", "DEFAULT_SECRET"]
