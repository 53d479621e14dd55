"""The course's schedule: one table of weeks, chapters, labs, times and due work.

The schedule page of the book (``book/schedule.md``, written by :func:`write_page`) and the
banner at the top of every lab (:func:`lab_banner`) are made from :data:`WEEKS`; nothing
else states a lab's number, its time or when it is due.

    python -m calibcourse.study.schedule      # rewrite book/schedule.md
"""
from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path


__all__ = ["Week", "WEEKS", "LABS", "lab_week", "lab_number", "lab_title", "lab_banner", "schedule_page",
           "write_page", "PAGE"]

#: the schedule page, relative to the repository root
PAGE = Path("book") / "schedule.md"


@dataclass(frozen=True)
class Week:
    """One week of the course.

    Attributes
    ----------
    number : int
        The week, from 1.
    chapter : str
        The chapter read this week (its page name, e.g. ``"01_theory"``).
    chapter_title : str
        Its title.
    reading_minutes : int
        The time to read it and do its exercises and quiz.
    lab : str or None
        The lab handed out this week (its page name, e.g. ``"lab1_ece"``), or None.
    lab_title : str
        The lab's title (without "Lab n: "), or "".
    lab_minutes : tuple of int
        The lab's time, ``(least, most)`` minutes, or ``()``.
    due : str
        What is handed in at the end of this week.
    needs : str
        What a student needs to know before the week.

    Examples
    --------
    >>> WEEKS[0].number, WEEKS[0].lab
    (1, 'lab1_ece')
    """

    number: int
    chapter: str
    chapter_title: str
    reading_minutes: int
    lab: str | None = None
    lab_title: str = ""
    lab_minutes: tuple = ()
    due: str = ""
    needs: str = ""


#: the course, one week a chapter; a lab is handed out with its chapter and due a week later
WEEKS = (
    Week(1, "01_theory", "What calibration is, and how we measure it", 120,
         "lab1_ece", "measuring calibration", (75, 90), "nothing (Lab 1 is due at the end of week 2)",
         "probability (conditional expectation, binomial), softmax and cross-entropy, numpy"),
    Week(2, "02_causes", "What makes networks miscalibrated", 120,
         "lab2_temperature", "temperature scaling against a hand search", (60, 80), "Lab 1",
         "chapter 1; training a network (Adam or SGD, weight decay, batch normalization)"),
    Week(3, "03_binary", "Calibrating a binary classifier", 120,
         "lab3_binning", "binary calibrators, compared with intervals", (75, 90), "Lab 2",
         "chapters 1 and 2; logistic regression, maximum likelihood"),
    Week(4, "04_multiclass", "Calibrating a multiclass network", 110,
         "lab4_sece_focal", "multiclass measures and calibrating losses", (75, 90), "Lab 3",
         "chapter 3; fitting parameters by minimizing the NLL; PyTorch autograd"),
    Week(5, "05_meta_regularization", "Calibration at training time: meta-regularization", 120,
         None, "", (), "Lab 4",
         "chapters 1 to 4; PyTorch autograd (the chapter introduces the bilevel optimization it uses)"),
    Week(6, "06_practice", "Calibration in practice: distribution shift and scarce labels", 120,
         None, "", (), "nothing",
         "chapters 1, 4 and 5 (ECE, NLL, Brier score; temperature scaling; comparisons paired by seed)"),
)

#: the labs in order
LABS = tuple(w.lab for w in WEEKS if w.lab)


def _check_lab(lab: str) -> Week:
    for week in WEEKS:
        if week.lab == lab:
            return week
    raise ValueError(f"lab must be one of {', '.join(LABS)}; got {lab!r}")


def lab_week(lab: str) -> Week:
    """The week a lab is handed out.

    Parameters
    ----------
    lab : str
        The lab's page name, e.g. ``"lab1_ece"``.

    Returns
    -------
    Week
        The week it is handed out; an unknown lab raises ``ValueError``.

    Examples
    --------
    >>> lab_week("lab3_binning").number
    3
    >>> lab_week("lab9")
    Traceback (most recent call last):
        ...
    ValueError: lab must be one of lab1_ece, lab2_temperature, lab3_binning, lab4_sece_focal; got 'lab9'
    """
    return _check_lab(lab)


def lab_number(lab: str) -> int:
    """The lab's number.

    Parameters
    ----------
    lab : str
        The lab's page name.

    Returns
    -------
    int
        Its number, from 1.

    Examples
    --------
    >>> lab_number("lab2_temperature")
    2
    """
    _check_lab(lab)
    return LABS.index(lab) + 1


def lab_title(lab: str) -> str:
    """The lab's title, as its page and the schedule write it.

    Parameters
    ----------
    lab : str
        The lab's page name.

    Returns
    -------
    str
        ``"Lab n: title"``.

    Examples
    --------
    >>> lab_title("lab1_ece")
    'Lab 1: measuring calibration'
    """
    return f"Lab {lab_number(lab)}: {_check_lab(lab).lab_title}"


def _due_week(lab: str) -> int:
    name = f"Lab {lab_number(lab)}"
    return next(w.number for w in WEEKS if w.due == name)


def lab_banner(lab: str) -> str:
    """The line at the top of a lab: its week, its time and when it is due.

    Parameters
    ----------
    lab : str
        The lab's page name.

    Returns
    -------
    str
        One line of Markdown.

    Examples
    --------
    >>> print(lab_banner("lab1_ece"))
    Week 1 of the {doc}`schedule </book/schedule>`, with chapter 1. About 75 to 90 minutes of work. Due at the end of week 2.
    """
    week = _check_lab(lab)
    lo, hi = week.lab_minutes
    chapter = int(week.chapter[:2])
    return (f"Week {week.number} of the {{doc}}`schedule </book/schedule>`, with chapter {chapter}. "
            f"About {lo} to {hi} minutes of work. Due at the end of week {_due_week(lab)}.")


def _hours(minutes: int) -> str:
    h, m = divmod(minutes, 60)
    return f"{h} h {m:02d}" if m else f"{h} h"


def schedule_page() -> str:
    """The schedule page: one row a week, with its chapter, lab, times and due work.

    Returns
    -------
    str
        The Markdown of ``book/schedule.md``.

    Examples
    --------
    >>> print(schedule_page().splitlines()[0])
    # Schedule
    """
    rows = ["| Week | Read | Lab (handed out) | Time | Due at the end of the week | Needs |",
            "| --- | --- | --- | --- | --- | --- |"]
    for w in WEEKS:
        chapter = f"{{doc}}`Chapter {int(w.chapter[:2])}: {w.chapter_title} </book/generated/{w.chapter}>`"
        lab = f"{{doc}}`{lab_title(w.lab)} </book/generated/labs/{w.lab}>`" if w.lab else "none"
        time = f"reading {_hours(w.reading_minutes)}"
        if w.lab:
            time += f"; lab {w.lab_minutes[0]} to {w.lab_minutes[1]} min"
        rows.append(f"| {w.number} | {chapter} | {lab} | {time} | {w.due} | {w.needs} |")
    total = sum(w.reading_minutes for w in WEEKS) + sum(sum(w.lab_minutes) / 2 for w in WEEKS if w.lab)
    return "\n".join([
        "# Schedule", "",
        f"The course takes {len(WEEKS)} weeks, one chapter a week. Each of the first {len(LABS)} chapters "
        "comes with a lab, handed out with it and due at the end of the next week; the last week "
        "has no new lab and collects the last one. The times are estimates for a student who "
        "has read the chapter: the reading includes the chapter's exercises and its self-check quiz. "
        "In a semester, a week is two 90-minute slots, a lecture on the chapter and a lab session; "
        "the rest is the student's own work.",
        "", *rows, "",
        f"In all, about {round(total / 60)} hours of work.",
        "", "How to get the labs, run them on your machine and hand them in: {doc}`setup </book/setup>`.", ""])


def write_page(root=".") -> Path:
    """Write :func:`schedule_page` to ``root/book/schedule.md``.

    Parameters
    ----------
    root : str or path, default='.'
        The repository root.

    Returns
    -------
    pathlib.Path
        The page written.

    Examples
    --------
    >>> import tempfile
    >>> write_page(tempfile.mkdtemp()).name
    'schedule.md'
    """
    path = Path(root) / PAGE
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(schedule_page())
    return path


if __name__ == "__main__":
    print(write_page(sys.argv[1] if len(sys.argv) > 1 else "."))
