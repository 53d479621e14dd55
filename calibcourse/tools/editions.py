"""Two editions from one source (the labs, and the book's solutions).

In a lab's code cells, the lines between ``# BEGIN SOLUTION`` and
``# END SOLUTION`` are the instructor's solution. The student edition replaces
them with ``raise NotImplementedError(...)`` at the same indentation, drops
cells tagged ``solution``, and sets the ``edition`` parameter to "student". The
chapters' exercise solutions (sphinx-exercise's ``{solution}`` blocks, and the
gated ``{solution-start}`` ... ``{solution-end}`` ones whose code cells run with
the page) are neither: both editions keep them, folded.
"""
from __future__ import annotations

import re

__all__ = ["BEGIN", "END", "STUB", "strip_solution", "set_edition", "to_edition"]

#: the markers of a solution in a code cell, and what the student edition puts in its place
BEGIN, END = "# BEGIN SOLUTION", "# END SOLUTION"
STUB = 'raise NotImplementedError("exercise: write your solution here")'


def strip_solution(code: str) -> str:
    """The student version of a code cell's source.

    A nested :data:`BEGIN`, an :data:`END` without :data:`BEGIN` or a :data:`BEGIN` without
    :data:`END` raises ``ValueError`` with the cell.

    Parameters
    ----------
    code : str
        The source of a code cell.

    Returns
    -------
    str
        The source with each solution block replaced by :data:`STUB` at the block's indentation; a cell
        without markers comes back unchanged (but for a trailing newline).

    Examples
    --------
    >>> cell = '''def ece(probs, labels, n_bins):
    ...     # BEGIN SOLUTION
    ...     return metrics.ece(probs, labels, n_bins=n_bins)
    ...     # END SOLUTION'''
    >>> print(strip_solution(cell))
    def ece(probs, labels, n_bins):
        raise NotImplementedError("exercise: write your solution here")
    """
    out, inside = [], False
    for line in code.splitlines():
        stripped = line.strip()
        if stripped == BEGIN:
            if inside:
                raise ValueError(f"nested {BEGIN!r} in cell:\n{code}")
            inside = True
            out.append(line[: len(line) - len(line.lstrip())] + STUB)
        elif stripped == END:
            if not inside:
                raise ValueError(f"{END!r} without {BEGIN!r} in cell:\n{code}")
            inside = False
        elif not inside:
            out.append(line)
    if inside:
        raise ValueError(f"{BEGIN!r} without {END!r} in cell:\n{code}")
    return "\n".join(out)




def _set_edition_parameter(cell, edition: str):
    if "parameters" in cell.get("metadata", {}).get("tags", []):
        cell.source = re.sub(r'edition\s*=\s*"[a-z]+"', f'edition = "{edition}"', cell.source)


def set_edition(nb, edition: str):
    r"""Set ``edition = "<edition>"`` in the notebook's ``parameters`` cell (in place).

    Parameters
    ----------
    nb : nbformat.NotebookNode
        A notebook (e.g. read by jupytext); changed in place.
    edition : str
        The value to set, e.g. ``"student"``.

    Returns
    -------
    nbformat.NotebookNode
        ``nb``.

    Examples
    --------
    >>> import nbformat
    >>> nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(
    ...     'profile = "default"\nedition = "instructor"', metadata={"tags": ["parameters"]})])
    >>> print(set_edition(nb, "student").cells[0].source)
    profile = "default"
    edition = "student"
    """
    for cell in nb.cells:
        if cell.cell_type == "code":
            _set_edition_parameter(cell, edition)
    return nb


def to_edition(nb, edition: str):
    r"""The notebook of ``edition`` ("instructor": markers removed; "student": solutions stubbed).

    The student edition also drops the cells tagged ``solution``; both drop the cells tagged
    ``variant`` (an exercise's other versions, which a course's hand-out may use:
    :mod:`calibcourse.tools.handout`) and set the ``edition`` parameter. The notebook is changed in
    place (and returned).

    Parameters
    ----------
    nb : nbformat.NotebookNode
        A notebook (e.g. read by jupytext); changed in place.
    edition : {"instructor", "student"}
        Which edition.

    Returns
    -------
    nbformat.NotebookNode
        ``nb``.

    Examples
    --------
    >>> import nbformat
    >>> new = nbformat.v4
    >>> def lab():
    ...     return new.new_notebook(cells=[
    ...         new.new_code_cell('edition = "instructor"', metadata={"tags": ["parameters"]}),
    ...         new.new_code_cell("def double(x):\n    # BEGIN SOLUTION\n    return 2 * x\n    # END SOLUTION"),
    ...         new.new_markdown_cell("Why 2?", metadata={"tags": ["solution"]})])
    >>> for cell in to_edition(lab(), "student").cells:
    ...     print(cell.source)
    edition = "student"
    def double(x):
        raise NotImplementedError("exercise: write your solution here")
    >>> for cell in to_edition(lab(), "instructor").cells:
    ...     print(cell.source)
    edition = "instructor"
    def double(x):
        return 2 * x
    Why 2?
    """
    if edition not in ("instructor", "student"):
        raise ValueError(f"edition must be 'instructor' or 'student'; got {edition!r}")
    cells = []
    for cell in nb.cells:
        tags = cell.get("metadata", {}).get("tags", [])
        if (edition == "student" and "solution" in tags) or "variant" in tags:  # a course's variant: not the book's
            continue
        if cell.cell_type == "code":
            if edition == "student":
                cell.source = strip_solution(cell.source)
            else:
                cell.source = "\n".join(ln for ln in cell.source.splitlines() if ln.strip() not in (BEGIN, END))
            _set_edition_parameter(cell, edition)
        cells.append(cell)
    nb.cells = cells
    return nb
