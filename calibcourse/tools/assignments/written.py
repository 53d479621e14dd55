"""The labs' written questions: their rubrics, the students' answers and the marks an instructor gives.

A written question is a markdown cell that starts ``**Question N** (written, P points)``;
under it the lab has an answer cell (tagged ``answer``) for the student, and the
instructor's cell (tagged ``solution``) with the model answer and a rubric, a table of
``| points | what earns them |`` rows whose points add up to P.

:func:`calibcourse.tools.assignments.grade` cannot mark prose. It writes a marking sheet,
``_build/grades/<lab>-written.csv``: one row per submission, the student's answer to each
written question beside one column per rubric line, headed by its points and its text
(``q5.1 (of 1): Explains that ...``), so that the sheet is marked without the solution
notebook beside it. The instructor
fills the marks in, from the rubric, and runs ``make grade`` again: the marks are checked
(:func:`read_marks`) and land in the grades CSV (one column per written question, and
``written``), its ``total``, and the feedback. A sheet's marks are never overwritten; a
new submission gets a new row.
"""
from __future__ import annotations

import csv
import os
import re
from dataclasses import dataclass
from pathlib import Path

__all__ = ["WrittenQuestion", "written_questions", "answers", "sheet_columns", "read_marks", "write_sheet"]

_PROMPT = re.compile(r"(?m)^\*\*Question (\d+)\*\* \(written, (\d+(?:\.\d+)?) points?\)")
_RUBRIC_ROW = re.compile(r"^\|\s*(\d+(?:\.\d+)?)\s*\|\s*(.+?)\s*\|\s*$")
#: what an answer cell says before the student writes in it (ours, and otter-grader's)
PLACEHOLDERS = ("Double-click this cell and write your answer here", "_Type your answer here, replacing this text._")


@dataclass(frozen=True)
class WrittenQuestion:
    """A written question of a lab.

    Attributes
    ----------
    name : str
        ``"q5"``: ``q`` and the question's number in the lab (code exercises are ``q1`` to ``q4``).
    points : float
        Its points, as the prompt states them.
    prompt : str
        The prompt's text.
    rubric : tuple of (float, str)
        The rubric's lines: points and what earns them; their points add up to ``points``.

    Examples
    --------
    >>> WrittenQuestion("q5", 2.0, "**Question 5** ...", ((1.0, "Says why."), (1.0, "Says how."))).number
    5
    """

    name: str
    points: float
    prompt: str
    rubric: tuple

    @property
    def number(self) -> int:
        """The question's number (``q5`` -> 5)."""
        return int(self.name[1:])


def _rubric(text: str) -> tuple:
    rows = []
    for line in text[text.index("**Rubric"):].splitlines() if "**Rubric" in text else ():
        m = _RUBRIC_ROW.match(line.strip())
        if m:
            rows.append((float(m.group(1)), m.group(2)))
    return tuple(rows)


def written_questions(nb) -> list[WrittenQuestion]:
    r"""The written questions of a lab notebook (read by jupytext), in order.

    Parameters
    ----------
    nb : nbformat.NotebookNode
        A lab notebook, the instructor's (its ``solution`` cells hold the rubrics).

    Returns
    -------
    list of WrittenQuestion
        A question without a rubric, or whose rubric's points do not add up to its own, raises
        ``ValueError`` naming it.

    Examples
    --------
    >>> import nbformat
    >>> new = nbformat.v4
    >>> nb = new.new_notebook(cells=[
    ...     new.new_markdown_cell("**Question 5** (written, 2 points). Why?"),
    ...     new.new_markdown_cell("*Your answer.*", metadata={"tags": ["answer"]}),
    ...     new.new_markdown_cell("**Rubric (2 points).**\n\n| Points | What |\n| --- | --- |\n"
    ...                           "| 1 | Says why. |\n| 1 | Says how. |", metadata={"tags": ["solution"]})])
    >>> q = written_questions(nb)[0]
    >>> q.name, q.points, q.rubric
    ('q5', 2.0, ((1.0, 'Says why.'), (1.0, 'Says how.')))
    """
    out = []
    for i, cell in enumerate(nb.cells):
        m = _PROMPT.search(cell.source) if cell.cell_type == "markdown" else None
        if not m:
            continue
        name, points = f"q{m.group(1)}", float(m.group(2))
        rubric = ()
        for later in nb.cells[i + 1:]:
            tags = later.get("metadata", {}).get("tags", [])
            if "answer" in tags:
                continue
            if "solution" not in tags:
                break
            rubric += _rubric(later.source)
        if not rubric:
            raise ValueError(
                f"written question {m.group(1)}: no rubric (a table of points in the solution cell under it)"
            )
        if abs(sum(p for p, _ in rubric) - points) > 1e-9:
            raise ValueError(f"written question {m.group(1)}: its rubric's points add up to "
                             f"{sum(p for p, _ in rubric):g}, its prompt says {points:g}")
        out.append(WrittenQuestion(name, points, cell.source, rubric))
    return out


def _is_placeholder(text: str) -> bool:
    return not text.strip() or any(p in text for p in PLACEHOLDERS)


def answers(nb, qs: list[WrittenQuestion]) -> dict:
    r"""A submission's answer to each written question: the markdown under its prompt.

    The answer is the markdown cells after the prompt up to the next code cell, the next part's
    bold title or the next prompt; an answer cell left as handed out counts as no answer.

    Parameters
    ----------
    nb : nbformat.NotebookNode
        A submission (the student edition of ``make labs``, or otter-grader's student notebook).
    qs : list of WrittenQuestion
        The lab's written questions.

    Returns
    -------
    dict
        ``{name: text}``, ``""`` for a question without an answer (or whose prompt is missing).

    Examples
    --------
    >>> import nbformat
    >>> new = nbformat.v4
    >>> q = WrittenQuestion("q5", 2.0, "", ((2.0, "Right."),))
    >>> nb = new.new_notebook(cells=[new.new_markdown_cell("**Question 5** (written, 2 points). Why?"),
    ...                              new.new_markdown_cell("Because the bins are few."),
    ...                              new.new_code_cell("x = 1")])
    >>> answers(nb, [q])
    {'q5': 'Because the bins are few.'}
    """
    out = {}
    cells = nb.get("cells", [])
    for q in qs:
        start = next((i for i, c in enumerate(cells) if c.get("cell_type") == "markdown"
                      and re.search(rf"(?m)^\*\*Question {q.number}\*\*", c.get("source", ""))), None)
        parts = []
        for cell in cells[start + 1:] if start is not None else ():
            text = re.sub(r"<!--.*?-->", "", cell.get("source", ""), flags=re.S)  # otter's question markers
            if cell.get("cell_type") != "markdown" or re.search(r"(?m)^\*\*(Question \d+|\d+\.)", text):
                break
            if not _is_placeholder(text):
                parts.append(re.sub(rf"^\*\*Your answer to question {q.number}\.\*\*\s*", "", text.strip()))
        out[q.name] = "\n\n".join(parts)
    return out


def _line_key(q: WrittenQuestion, k: int) -> str:
    """``q5.1 (of 1)``: the start of a rubric line's column, which names it."""
    return f"{q.name}.{k} (of {q.rubric[k - 1][0]:g})"


def sheet_columns(qs: list[WrittenQuestion]) -> list[str]:
    """The marking sheet's columns: ``file``, then for each question one per rubric line, headed by
    its points and its text (``q5.1 (of 1): Says why.``), and its answer (``q5 answer``).

    Parameters
    ----------
    qs : list of WrittenQuestion
        The lab's written questions.

    Returns
    -------
    list of str

    Examples
    --------
    >>> sheet_columns([WrittenQuestion("q5", 2.0, "", ((1.0, "Says why."), (1.0, "Says how.")))])
    ['file', 'q5.1 (of 1): Says why.', 'q5.2 (of 1): Says how.', 'q5 answer']
    """
    cols = ["file"]
    for q in qs:
        cols += [f"{_line_key(q, k)}: {text}" for k, (_, text) in enumerate(q.rubric, 1)] + [f"{q.name} answer"]
    return cols


def _sheet_layout(header: list[str], qs: list[WrittenQuestion]):
    """Each of :func:`sheet_columns`' columns found in a sheet's ``header``: ``{column: index}``, a rubric
    line's column found by its start (``q5.1 (of 1)``: a sheet written before the lines' text was in the
    headers, or whose headers a spreadsheet cut, reads the same); None where one is missing."""
    found = {}
    for col in sheet_columns(qs):
        key = col.split(": ", 1)[0] if re.match(r"q\d+\.\d+ \(of ", col) else col
        where = [i for i, h in enumerate(header) if h.strip() == col or h.strip().split(":", 1)[0].strip() == key]
        if len(where) != 1:
            return None
        found[col] = where[0]
    return found


def read_marks(path, qs: list[WrittenQuestion]) -> dict:
    r"""The marks of a filled marking sheet: ``{file: {name: [mark or None per rubric line]}}``.

    A blank cell is a line not marked yet. A mark that is not a number from 0 to its line's
    points, a sheet whose columns are not the lab's, or a file named twice raises
    ``ValueError`` with one line naming the sheet, the row and the column.

    Parameters
    ----------
    path : path
        The sheet, ``_build/grades/<lab>-written.csv``.
    qs : list of WrittenQuestion
        The lab's written questions.

    Returns
    -------
    dict
        ``{file: {name: [mark or None per rubric line]}}``.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> q = WrittenQuestion("q5", 2.0, "", ((1.0, "a"), (1.0, "b")))
    >>> p = pathlib.Path(tempfile.mkdtemp()) / "lab1_ece-written.csv"
    >>> _ = p.write_text("file,q5.1 (of 1): a,q5.2 (of 1): b,q5 answer\nalice.ipynb,1,0.5,...\nbob.ipynb,,,...\n")
    >>> read_marks(p, [q])
    {'alice.ipynb': {'q5': [1.0, 0.5]}, 'bob.ipynb': {'q5': [None, None]}}
    >>> _ = p.write_text("file,q5.1 (of 1): a,q5.2 (of 1): b,q5 answer\nalice.ipynb,2,1,...\n")
    >>> read_marks(p, [q])
    Traceback (most recent call last):
        ...
    ValueError: lab1_ece-written.csv, row 2 (alice.ipynb), column 'q5.1 (of 1)': 2 is more than the line's 1 point
    """
    path = Path(path)
    with open(path, newline="") as f:
        rows = list(csv.reader(f))
    cols = sheet_columns(qs)
    layout = _sheet_layout(rows[0], qs) if rows else None
    if layout is None:
        raise ValueError(f"{path.name}: its columns must be {', '.join(cols)} (the marking sheet `make grade` "
                         f"writes); delete it to get a new one")
    out = {}
    for r, row in enumerate(rows[1:], 2):
        if not any(cell.strip() for cell in row):
            continue
        row = {col: row[i] if i < len(row) else "" for col, i in layout.items()}
        name = row["file"].strip()
        where = f"{path.name}, row {r} ({name or 'no file name'})"
        if not name:
            raise ValueError(f"{where}: the file column is empty")
        if name in out:
            raise ValueError(f"{where}: {name} has an earlier row too")
        out[name] = {}
        for q in qs:
            marks = []
            for k, (most, _) in enumerate(q.rubric, 1):
                col = next(c for c in cols if c.startswith(_line_key(q, k) + ":"))
                text = row[col].strip()
                col = _line_key(q, k)  # named short in a message
                if not text:
                    marks.append(None)
                    continue
                try:
                    mark = float(text)
                except ValueError:
                    raise ValueError(f"{where}, column '{col}': {text!r} is not a number") from None
                if not 0 <= mark <= most:
                    raise ValueError(f"{where}, column '{col}': {text} is "
                                     + (f"more than the line's {most:g} point{'s' if most != 1 else ''}" if mark > most
                                        else "below 0"))
                marks.append(mark)
            out[name][q.name] = marks
    return out


def write_sheet(path, qs: list[WrittenQuestion], submitted: dict, marks: dict) -> None:
    """Write the marking sheet (atomically): a row per file of ``submitted`` (``{file: answers}``), with
    the marks of ``marks`` kept (and the rows of files graded before kept as they are).

    Parameters
    ----------
    path : path
        The sheet.
    qs : list of WrittenQuestion
        The lab's written questions.
    submitted : dict
        ``{file: {name: answer}}`` of the submissions graded now.
    marks : dict
        ``{file: {name: [mark or None per line]}}`` read from the sheet before (:func:`read_marks`).

    Returns
    -------
    None

    Examples
    --------
    >>> import tempfile, pathlib
    >>> q = WrittenQuestion("q5", 1.0, "", ((1.0, "Right."),))
    >>> p = pathlib.Path(tempfile.mkdtemp()) / "lab1_ece-written.csv"
    >>> write_sheet(p, [q], {"bob.ipynb": {"q5": "Because."}}, {"alice.ipynb": {"q5": [1.0]}})
    >>> print(p.read_text().strip())
    file,q5.1 (of 1): Right.,q5 answer
    alice.ipynb,1,
    bob.ipynb,,Because.
    """
    path = Path(path)
    cols = sheet_columns(qs)
    names = list(dict.fromkeys([*marks, *submitted]))
    old = {}  # the answers of the files graded before, as the sheet holds them
    if path.exists():
        with open(path, newline="") as f:
            rows = list(csv.reader(f))
        layout = _sheet_layout(rows[0], qs) if rows else None
        old = {} if layout is None else {r[layout["file"]]: {c: r[i] if i < len(r) else "" for c, i in layout.items()}
                                         for r in rows[1:] if r}
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(cols)
        for name in names:
            row = [name]
            for q in qs:
                got = marks.get(name, {}).get(q.name, [None] * len(q.rubric))
                row += ["" if m is None else f"{m:g}" for m in got]
                row.append(submitted[name].get(q.name, "") if name in submitted
                           else old.get(name, {}).get(f"{q.name} answer", ""))
            w.writerow(row)
    os.replace(tmp, path)


def mark_of(marks: list):
    """A question's mark: the sum of its lines', or None while a line is not marked."""
    return None if any(m is None for m in marks) else float(sum(marks))
