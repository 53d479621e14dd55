"""The course's schedule: one table of weeks, chapters, labs, times and due work.

The schedule page of the book (``book/schedule.md``, written by :func:`write_page`), the
banner at the top of every lab (:func:`lab_banner`), and the time and lab sentences of every
chapter's opening box (:func:`chapter_time_sentence`, :func:`chapter_lab_sentence`, pasted
verbatim; a test compares) are made from :data:`WEEKS` and :data:`LAB_TABLE`; nothing else
states a week's time, a lab's number, the chapter it follows, its time or when it is due.

    python -m calibcourse.study.course.schedule      # rewrite book/schedule.md
"""
from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path

__all__ = ["Week", "Lab", "WEEKS", "LAB_TABLE", "LABS", "LECTURE_MINUTES", "lab_number", "lab_title",
           "lab_banner", "chapter_time_sentence", "chapter_lab_sentence", "schedule_page", "write_page", "PAGE",
           "STUDY"]

#: the schedule page, relative to the repository root
PAGE = Path("book") / "schedule.md"
#: the lecture on a chapter, in class (a semester's week: a lecture and a lab session)
LECTURE_MINUTES = 90


@dataclass(frozen=True)
class Week:
    """One week of the course: the chapter read that week.

    Attributes
    ----------
    number : int
        The week, from 1.
    chapter : str
        The chapter read this week (its page name, e.g. ``"01_theory"``).
    chapter_title : str
        Its title.
    study_minutes : int
        A student's own time on it after the lecture: reading it, its self-check quiz, and its warm-up
        and derivation exercises.
    optional_minutes : int
        The time its optional exercises take: the others (coding, open questions).
    needs : str
        What a student needs to know before the week.
    also : tuple of (str, str, int)
        Further pages read the same week, after the chapter: ``(page name, title, minutes)``.
    evidence : tuple of (str, str)
        The reports of Part II (the study) that hold the evidence for the chapter's results:
        ``(page name, title)``. Optional reading, for an instructor or a researcher; not counted in
        the week's time.

    Examples
    --------
    >>> WEEKS[0].number, WEEKS[0].chapter
    (1, '01_theory')
    """

    number: int
    chapter: str
    chapter_title: str
    study_minutes: int
    optional_minutes: int
    needs: str = ""
    also: tuple = ()
    evidence: tuple = ()


@dataclass(frozen=True)
class Lab:
    """One lab: the chapter whose material it practises, when it is handed out and due, its time.

    Attributes
    ----------
    name : str
        Its page name, e.g. ``"lab1_ece"``.
    title : str
        Its title (without "Lab n: ").
    topics : str
        What it implements, in a few words (the chapters' lab sentence quotes it).
    chapter : int
        The chapter it follows: the one that teaches what it practises.
    out : int
        The week it is handed out (the week of that chapter or a later one).
    due : int
        The week at whose end it is due (after ``out``).
    minutes : tuple of int
        Its time, ``(least, most)`` minutes.

    Examples
    --------
    >>> LAB_TABLE[1].name, LAB_TABLE[1].chapter, LAB_TABLE[1].out, LAB_TABLE[1].due
    ('lab2_temperature', 3, 3, 4)
    """

    name: str
    title: str
    topics: str
    chapter: int
    out: int
    due: int
    minutes: tuple


#: the reproduction reports of Part II, the study: ``{page name: title}``
STUDY = {
    "study_guo2017": "Guo et al. (2017) and the lecture's MNIST practical",
    "study_temperature": "Temperature scaling: a student project and a tutorial",
    "study_metareg": "Meta-regularization",
    "study_shift": "Distribution shift",
}


def _evidence(*names):
    return tuple((name, STUDY[name]) for name in names)


#: the course, one chapter of Part I a week; Part II (the study) is optional reading
WEEKS = (
    Week(1, "01_theory", "What calibration is, and how we measure it", 180, 60,
         "probability (conditional expectation, binomial), softmax and cross-entropy, numpy",
         evidence=_evidence("study_guo2017")),
    Week(2, "02_causes", "What makes networks miscalibrated", 180, 90,
         "chapter 1; training a network (Adam or SGD, weight decay, batch normalization)",
         evidence=_evidence("study_guo2017")),
    Week(3, "03_binary", "Calibrating a binary classifier", 180, 60,
         "chapters 1 and 2; logistic regression, maximum likelihood",
         evidence=_evidence("study_guo2017", "study_temperature")),
    Week(4, "04_multiclass", "Calibrating a multiclass network", 180, 60,
         "chapter 3; fitting parameters by minimizing the NLL; PyTorch autograd",
         evidence=_evidence("study_guo2017", "study_temperature")),
    Week(5, "05_meta_regularization", "Calibration at training time: meta-regularization", 210, 90,
         "chapters 1 to 4; PyTorch autograd (the chapter introduces the bilevel optimization it uses)",
         evidence=_evidence("study_metareg")),
    Week(6, "06_practice", "Calibration in practice", 180, 60,
         "chapters 1, 4 and 5 (ECE, NLL, Brier score; temperature scaling; comparisons paired by seed)",
         evidence=_evidence("study_shift")),
)

#: the labs, in the order they are handed out; each comes no earlier than the chapter that teaches it
#: (chapter 3 teaches fitting a temperature by NLL against an ECE grid search, and the binary
#: calibrators; chapter 5 the SECE and the focal losses) and is due at the end of the next week
LAB_TABLE = (
    Lab("lab1_ece", "measuring calibration", r"per-bin statistics, ECE, MCE and the $\ell_2$ calibration error",
        1, 1, 2, (75, 90)),
    Lab("lab2_temperature", "temperature scaling against a hand search",
        "softmax with a temperature, temperature scaling by NLL, the ECE grid search", 3, 3, 4, (60, 80)),
    Lab("lab3_binning", "binary calibrators, compared with intervals",
        "histogram binning, isotonic regression, Platt scaling, a paired bootstrap", 3, 4, 5, (75, 90)),
    Lab("lab4_sece_focal", "multiclass measures and calibrating losses",
        "SECE, class-wise ECE, focal loss, FLSD-53", 5, 5, 6, (75, 90)),
)

#: the labs in order
LABS = tuple(lab.name for lab in LAB_TABLE)


def _check_lab(lab: str) -> Lab:
    for entry in LAB_TABLE:
        if entry.name == lab:
            return entry
    raise ValueError(f"lab must be one of {', '.join(LABS)}; got {lab!r}")


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
    return f"Lab {lab_number(lab)}: {_check_lab(lab).title}"


def lab_banner(lab: str) -> str:
    """The line at the top of a lab: the chapter it follows, its week, its time and when it is due.

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
    Plain Markdown, no MyST role: the hand-out shows it in Jupyter, where a role would stay raw text.

    >>> print(lab_banner("lab3_binning"))
    Week 4 of the course's schedule; it practises chapter 3. About 75 to 90 minutes of work. Due at the end of week 5.
    """
    entry = _check_lab(lab)
    lo, hi = entry.minutes
    return (f"Week {entry.out} of the course's schedule; it practises chapter {entry.chapter}. "
            f"About {lo} to {hi} minutes of work. Due at the end of week {entry.due}.")


def _fixed_hours(minutes: int) -> str:
    hours = minutes / 60
    return f"{{fixed}}`{hours:g}` hour" + ("" if hours == 1 else "s")


def chapter_time_sentence(chapter: int) -> str:
    r"""The sentence a chapter's opening box says about its time, from :data:`WEEKS`.

    Every chapter says it the same way: the lecture in class, the student's own time on the reading,
    the quiz and the warm-up and derivation exercises, and the optional coding and open exercises apart.

    Parameters
    ----------
    chapter : int
        The chapter, from 1.

    Returns
    -------
    str
        One or two sentences of MyST Markdown (numbers marked ``{fixed}``); the chapters paste it
        verbatim, just before their lab sentence, and a test checks that they do.

    Examples
    --------
    >>> print(chapter_time_sentence(1))
    **Time.** A {fixed}`90`-minute lecture, then about {fixed}`3` hours on your own: the reading, the quiz, and
    the warm-up and derivation exercises. The other exercises (coding, open questions) are optional, about
    {fixed}`1` hour more.
    >>> chapter_time_sentence(0)
    Traceback (most recent call last):
        ...
    ValueError: chapter must be one of 1 to 6; got 0
    """
    w = _check_chapter(chapter)
    return (f"**Time.** A {{fixed}}`{LECTURE_MINUTES}`-minute lecture, then about {_fixed_hours(w.study_minutes)} "
            "on your own: the reading, the quiz, and the warm-up and derivation exercises. The other exercises "
            f"(coding, open questions) are optional, about {_fixed_hours(w.optional_minutes)} more.")


def _check_chapter(chapter) -> Week:
    if isinstance(chapter, bool) or chapter not in range(1, len(WEEKS) + 1):
        raise ValueError(f"chapter must be one of 1 to {len(WEEKS)}; got {chapter!r}")
    return WEEKS[chapter - 1]


def chapter_lab_sentence(chapter: int) -> str:
    r"""The sentence a chapter's opening box says about its lab, from :data:`LAB_TABLE`.

    Parameters
    ----------
    chapter : int
        The chapter, from 1.

    Returns
    -------
    str
        One or two sentences of MyST Markdown (numbers marked ``{fixed}``, lab links relative to
        a chapter's page); the chapters paste it verbatim and a test checks that they do.

    Examples
    --------
    >>> print(chapter_lab_sentence(1))
    **Lab.** {doc}`Lab 1 <labs/lab1_ece>` (per-bin statistics, ECE, MCE and the $\ell_2$ calibration error)
    follows this chapter: handed out in week {fixed}`1`, about {fixed}`75` to {fixed}`90` minutes, due at the
    end of week {fixed}`2`.
    >>> print(chapter_lab_sentence(2))
    **Lab.** No lab follows this chapter.
    >>> chapter_lab_sentence(7)
    Traceback (most recent call last):
        ...
    ValueError: chapter must be one of 1 to 6; got 7
    """
    _check_chapter(chapter)

    def link(e):
        return f"{{doc}}`Lab {lab_number(e.name)} <labs/{e.name}>`"

    def when(e):
        return (f"handed out in week {{fixed}}`{e.out}`, about {{fixed}}`{e.minutes[0]}` to "
                f"{{fixed}}`{e.minutes[1]}` minutes, due at the end of week {{fixed}}`{e.due}`")

    mine = [e for e in LAB_TABLE if e.chapter == chapter]
    week = WEEKS[chapter - 1].number
    earlier = [e for e in LAB_TABLE if e.out == week and e.chapter != chapter]
    if not mine:
        text = "**Lab.** No lab follows this chapter."
    elif len(mine) == 1:
        text = f"**Lab.** {link(mine[0])} ({mine[0].topics}) follows this chapter: {when(mine[0])}."
    else:
        text = ("**Labs.** Two labs follow this chapter: "
                + "; ".join(f"{link(e)} ({e.topics}), {when(e)}" for e in mine) + ".")
    if len(mine) > 2:
        raise AssertionError("LAB_TABLE: at most two labs follow a chapter")
    for e in earlier:
        text += (f" {link(e)}, handed out this week, practises "
                 f"chapter {{fixed}}`{e.chapter}`.")
    return text


def _hours(minutes: int) -> str:
    h, m = divmod(round(minutes), 60)
    return f"{h} h {m:02d}" if m else f"{h} h"


def schedule_page() -> str:
    """The schedule page: one row a week, with its chapter, lecture, own work, lab and due work; then what
    each week needs and where the evidence for its chapter is.

    Returns
    -------
    str
        The Markdown of ``book/schedule.md``.

    Examples
    --------
    >>> print(schedule_page().splitlines()[0])
    # Schedule
    """
    # five short columns: the table fits the text column of a laptop's screen (1200 px)
    rows = ["| Week | Chapter | Lecture | On your own | Lab handed out | Due at the end |",
            "| --- | --- | --- | --- | --- | --- |"]
    for w in WEEKS:
        number = int(w.chapter[:2])
        chapter = f"{{doc}}`{number}. {w.chapter_title} </book/generated/{w.chapter}>`"
        chapter += "".join(f", then {{doc}}`{title} </book/generated/{name}>`" for name, title, _ in w.also)
        out = [e for e in LAB_TABLE if e.out == w.number]
        due = [e for e in LAB_TABLE if e.due == w.number]
        lab = "; ".join(f"{{doc}}`{lab_title(e.name)} </book/generated/labs/{e.name}>`"
                        + ("" if e.chapter == number else f" (on chapter {e.chapter})")
                        + f", {e.minutes[0]} to {e.minutes[1]} min" for e in out) or "none"
        own = _hours(w.study_minutes + sum(m for _, _, m in w.also)) + f" (+ {_hours(w.optional_minutes)} optional)"
        due_text = ", ".join(f"Lab {lab_number(e.name)}" for e in due) or "nothing"
        rows.append(f"| {w.number} | {chapter} | {_hours(LECTURE_MINUTES)} | {own} | {lab} | {due_text} |")
    needs = [f"- **Week {w.number}.** Needs {w.needs}. Evidence: "
             + (", ".join(f"{{doc}}`{title} </book/generated/{name}>`" for name, title in w.evidence) or "none")
             + "." for w in WEEKS]
    lectures = len(WEEKS) * LECTURE_MINUTES
    own_work = sum(w.study_minutes + sum(m for _, _, m in w.also) for w in WEEKS)
    labs = 30 * round(sum(sum(e.minutes) / 2 for e in LAB_TABLE) / 30)   # the labs' middle times, to half an hour
    optional = sum(w.optional_minutes for w in WEEKS)
    return "\n".join(
        [
            "# Schedule",
            "",
            f"The course takes {len(WEEKS)} weeks, one chapter a week, and {len(LABS)} labs. In a semester, a "
            f"week is two 90-minute slots, a lecture on the chapter and a lab session; the rest is the "
            "student's own work. *On your own* is the time after the lecture for reading the chapter, its "
            "self-check quiz and its warm-up and derivation exercises; the other exercises (coding, open "
            "questions) are optional, and their time is given apart. A lab is handed out in the week of the "
            "chapter that teaches what it practises, or later, and is due at the end of the next week; the "
            "last week has no new lab and collects the last one. The times are estimates.",
            "",
            *rows,
            "",
            f"In all, about {round((lectures + own_work + labs) / 60)} hours of work: {_hours(lectures)} of "
            f"lectures, {_hours(own_work)} on your own and about {_hours(labs)} of labs, and {_hours(optional)} more "
            "for the optional exercises.",
            "",
            "## What each week needs",
            "",
            "What a student should know before the week, and the reports of Part II that hold the evidence "
            "for the chapter's results.",
            "",
            *needs,
            "",
            "The course is Part I of the book. Part II, the study, is optional reading: one reproduction "
            "report per source, with the set-up, every claim tested and its verdict, and the diagnosis where "
            "a method fails. It is where an instructor preparing a lecture, or a student who wants to know "
            "where a chapter's sentence comes from, finds the evidence. It is not in the times above.",
            "",
            "How to get the labs, run them on your machine and hand them in: {doc}`setup </book/setup>`.",
            "",
        ]
    )


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
