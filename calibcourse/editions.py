"""Two editions from one source (the labs, and the book's solutions).

In a lab's code cells, the lines between ``# BEGIN SOLUTION`` and
``# END SOLUTION`` are the instructor's solution. The student edition replaces
them with ``raise NotImplementedError(...)`` at the same indentation, drops
cells tagged ``solution``, and sets the ``edition`` parameter to "student". In
the book, sphinx-exercise's ``hide_solutions`` hides the ``{solution}`` blocks
of the student build (``make book EDITION=student``).
"""
from __future__ import annotations

import re
from pathlib import Path

BEGIN, END = "# BEGIN SOLUTION", "# END SOLUTION"
STUB = 'raise NotImplementedError("exercise: write your solution here")'


def strip_solution(code: str) -> str:
    """The student version of a code cell's source."""
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
    """Set ``edition = "<edition>"`` in the notebook's ``parameters`` cell (in place)."""
    for cell in nb.cells:
        if cell.cell_type == "code":
            _set_edition_parameter(cell, edition)
    return nb


def to_edition(nb, edition: str):
    """Return the notebook of ``edition`` ("instructor": markers removed; "student": solutions stubbed)."""
    if edition not in ("instructor", "student"):
        raise ValueError(f"edition must be 'instructor' or 'student'; got {edition!r}")
    cells = []
    for cell in nb.cells:
        tags = cell.get("metadata", {}).get("tags", [])
        if edition == "student" and "solution" in tags:
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


def write_labs(root, out_dir=None) -> list[Path]:
    """Write every lab of ``notebooks/labs/`` as unexecuted .ipynb, one folder per edition."""
    import jupytext
    import nbformat

    root = Path(root)
    out_dir = Path(out_dir or root / "_build" / "labs")
    written = []
    for src in sorted((root / "notebooks" / "labs").glob("*.md")):
        for edition in ("student", "instructor"):
            nb = to_edition(jupytext.read(src), edition)
            nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
            nb.metadata.pop("jupytext", None)
            dest = out_dir / edition / (src.stem + ".ipynb")
            dest.parent.mkdir(parents=True, exist_ok=True)
            nbformat.write(nb, dest)
            written.append(dest)
    return written
