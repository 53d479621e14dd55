"""The labs as handed out: one notebook per lab and edition, the same from every command that writes it.

``make labs``, ``calibcourse labs --out DIR``, ``make assignments`` (its ``student/`` and ``solution/``
notebooks) and the book's download button all write :func:`lab_notebook`'s notebook, byte for byte: the
student edition (each exercise's solution replaced by a stub, the model answers and rubrics removed) or
the instructor's (the solutions, the model answers, the rubrics). Under each graded exercise's prompt the
hand-out states its points and its rules (what the function may not call: :mod:`calibcourse.study.course.
checks.rules`); each written question is marked for otter-grader's PDF of the answers.

**A course's version.** A course that sets its own secret (``CALIBCOURSE_SECRET``, or ``--secret``)
gets its own hidden tests (:func:`calibcourse.tools.assignments.hidden_seed`) and, where a lab offers
them, its own variants of the graded functions (:func:`course_variant`): the exercise's text, its
solution and its check's ``variant=`` are the variant's, from the cells of the lab's source tagged
``variant``, and a box at the top of the hand-out says that this version differs from the book's. The
published lab (the default secret) is the book's.

    calibcourse labs --out DIR [--lab LAB ...] [--edition student|instructor] [--secret TEXT]
"""
from __future__ import annotations

import argparse
import hashlib
import os
import re
import sys
from pathlib import Path

from calibcourse.tools.assignments.code_questions import DEFAULT_SECRET, Question, lab_sources, questions
from calibcourse.tools.assignments.written import written_questions
from calibcourse.tools.editions import to_edition

__all__ = ["VARIANTS", "course_variant", "course_version", "prompt_rules", "lab_notebook", "write_labs",
           "write_editions", "main", "secret_from_env"]


def _variants() -> dict:
    from calibcourse.study.course.checks import lab2

    return dict(lab2.VARIANTS)


#: each check's variants, the published one first (the checks that have none are not listed)
VARIANTS = _variants()
#: the markers of a written question for otter-grader's PDF of the answers
BEGIN_QUESTION, END_QUESTION = "<!-- BEGIN QUESTION -->", "<!-- END QUESTION -->"


def secret_from_env(secret: str | None = None) -> str:
    """``secret``, else ``$CALIBCOURSE_SECRET``, else :data:`DEFAULT_SECRET` (the published lab).

    Parameters
    ----------
    secret : str or None, default=None

    Returns
    -------
    str

    Examples
    --------
    >>> secret_from_env("my course 2026")
    'my course 2026'
    """
    return secret if secret is not None else os.environ.get("CALIBCOURSE_SECRET") or DEFAULT_SECRET


def course_variant(lab: str, check: str, secret: str = DEFAULT_SECRET) -> str | None:
    """The variant of ``check``'s exercise that the course of ``secret`` hands out.

    The published lab (:data:`DEFAULT_SECRET`) has the first variant of each exercise; any other
    secret has one of the others, chosen by the sha256 of the secret, the lab and the check, so that a
    copy of the published solution is wrong for every other course.

    Parameters
    ----------
    lab : str
        The lab, e.g. ``"lab2_temperature"``.
    check : str
        The check of the exercise, e.g. ``"check_grid_temperature"``.
    secret : str, default=DEFAULT_SECRET
        The course's secret.

    Returns
    -------
    str or None
        The variant; None where the exercise has no variants.

    Examples
    --------
    >>> course_variant("lab2_temperature", "check_grid_temperature")
    'ece'
    >>> course_variant("lab2_temperature", "check_grid_temperature", secret="my course 2026")
    'l2'
    >>> course_variant("lab1_ece", "check_ece", secret="my course 2026") is None
    True
    """
    variants = VARIANTS.get(check)
    if not variants:
        return None
    if secret == DEFAULT_SECRET:
        return variants[0]
    digest = hashlib.sha256(f"{secret}/{lab}/{check}/variant".encode()).digest()
    return variants[1 + int.from_bytes(digest[:4], "big") % (len(variants) - 1)]


def _variant_cells(nb, i) -> list:
    """The cells tagged ``variant`` right after cell ``i`` (an exercise): each variant's prompt and solution."""
    out = []
    for cell in nb.cells[i + 1:]:
        if "variant" not in cell.get("metadata", {}).get("tags", []):
            break
        out.append(cell)
    return out


def course_version(nb, lab: str, secret: str = DEFAULT_SECRET):
    """The lab (a notebook read by jupytext, solution markers intact) as the course of ``secret`` hands it
    out: each graded exercise in the course's variant (its prompt, its solution, its check's
    ``variant=``), the variant cells dropped, and a box that says which exercises differ from the book's.

    Parameters
    ----------
    nb : nbformat.NotebookNode
        The lab's source, read by jupytext; changed in place.
    lab : str
        Its name.
    secret : str, default=DEFAULT_SECRET
        The course's secret.

    Returns
    -------
    nbformat.NotebookNode
        ``nb``.

    Examples
    --------
    >>> import jupytext
    >>> src = lab_sources()[1]
    >>> nb = course_version(jupytext.read(src), src.stem, secret="my course 2026")
    >>> any("variant=" in c.source for c in nb.cells)
    True
    """
    import nbformat

    qs = questions(nb)
    graded = [i for i, c in enumerate(nb.cells) if "points" in c.get("metadata", {})]
    changed = []
    for q, i in zip(qs, graded, strict=True):
        variant = course_variant(lab, q.check, secret)
        cells = _variant_cells(nb, i)
        if variant is None or variant == VARIANTS[q.check][0]:
            continue
        mine = [c for c in cells if c.metadata.get("variant") == variant]
        prompt = [c for c in mine if c.cell_type == "markdown"]
        code = [c for c in mine if c.cell_type == "code"]
        if len(prompt) != 1 or len(code) != 1:
            raise ValueError(f"{lab}, {q.name}: the variant {variant!r} of {q.check} needs one markdown and one code "
                             f"cell tagged variant (with variant: {variant}) after the exercise; found "
                             f"{len(prompt)} and {len(code)}")
        nb.cells[i - 1].source = prompt[0].source
        nb.cells[i].source = code[0].source
        for cell in nb.cells[i + 1:]:  # the check's call: the course's variant
            call = re.compile(rf"(checks\.{q.check}\(\s*{q.function}\b)")
            if cell.cell_type == "code" and call.search(cell.source):
                cell.source = call.sub(rf'\1, variant="{variant}"', cell.source)
                break
        changed.append((q, variant))
    nb.cells = [c for c in nb.cells if "variant" not in c.get("metadata", {}).get("tags", [])]
    if changed:
        where = next((k + 1 for k, c in enumerate(nb.cells) if c.cell_type == "markdown" and "Graded parts" in
                      c.source), 0)
        nums = [_number(q) for q, _ in changed]
        if len(nums) > 2 and all(n.isdigit() for n in nums) and [int(n) for n in nums] == list(
                range(int(nums[0]), int(nums[-1]) + 1)):
            names = f"{nums[0]} to {nums[-1]}"
        else:
            names = ", ".join(nums[:-1]) + (" and " if len(nums) > 1 else "") + nums[-1]
        nb.cells.insert(where, nbformat.v4.new_markdown_cell(
            f"**Your course's version of this lab.** Exercise{'s' if len(changed) > 1 else ''} {names} "
            f"{'differ' if len(changed) > 1 else 'differs'} from the lab published in the course's book: follow "
            "the text of this notebook, and its checks, not the book's. The rest is the book's (the results "
            "a lab prints for you to compare with are those of the book's exercises)."))
    return nb


def _number(q: Question) -> str:
    num = q.title.partition(". ")[0]
    return num if num.isdigit() else q.title


def prompt_rules(q: Question) -> str:
    """The sentence under a graded exercise's prompt: its points, and what the function may not call.

    Parameters
    ----------
    q : Question

    Returns
    -------
    str

    Examples
    --------
    >>> import jupytext
    >>> q = questions(jupytext.read(lab_sources()[0]))[1]
    >>> print(prompt_rules(q))  # doctest: +NORMALIZE_WHITESPACE
    *3 points: 1 for the check below, 2 for hidden tests that run the same check on inputs you do not
    see. Not allowed in this function, directly or through another function: any function of the
    course's package, `calibcourse` (`metrics`, `binning` and its other modules); other calibration
    libraries. Write it with numpy. A function that calls one of them earns no points: the check below
    says so.*
    """
    from calibcourse.study.course.checks.rules import rules_of

    return (f"*{q.points:g} points: {q.public:g} for the check below, {q.hidden:g} for hidden tests "
            f"that run the same check on inputs you do not see. {rules_of(q.check).describe()} A function that "
            "calls one of them earns no points: the check below says so.*")


def lab_notebook(src, edition: str = "student", secret: str = DEFAULT_SECRET):
    """The notebook of the lab ``src`` as handed out: the edition asked for, the course's version.

    Parameters
    ----------
    src : str or path
        The lab's jupytext source, ``notebooks/labs/<lab>.md``.
    edition : {"student", "instructor"}, default="student"
        The student's notebook (stubs in place of the solutions, no model answer or rubric) or the
        instructor's.
    secret : str, default=DEFAULT_SECRET
        The course's secret: it chooses the variants (:func:`course_version`).

    Returns
    -------
    nbformat.NotebookNode
        Unexecuted; cell ids numbered, so that every command writes the same bytes.

    Examples
    --------
    >>> nb = lab_notebook(lab_sources()[0])
    >>> sum("earns no points: the check below says so" in c.source for c in nb.cells)
    4
    >>> any("BEGIN SOLUTION" in c.source or "Rubric" in c.source for c in nb.cells)
    False
    """
    import jupytext

    src = Path(src)
    nb = course_version(jupytext.read(src), src.stem, secret)
    qs = questions(nb)
    graded = [i for i, c in enumerate(nb.cells) if "points" in c.get("metadata", {})]
    for q, i in zip(qs, graded, strict=True):
        prompt = nb.cells[i - 1]
        if prompt.cell_type != "markdown":
            raise ValueError(f"{src.name}, {q.name}: a graded exercise follows the markdown cell of its prompt")
        prompt.source = prompt.source.rstrip() + "\n\n" + prompt_rules(q)
        for key in ("points",):
            nb.cells[i].metadata.pop(key, None)
    _mark_written(nb)
    nb = to_edition(nb, edition)
    nb.metadata = {"kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"},
                   "language_info": {"name": "python"}, "otter": {"assignment_name": src.stem}}
    for k, cell in enumerate(nb.cells):
        cell.id = f"{src.stem.split('_')[0]}-{k:03d}"
        if cell.cell_type == "code":
            cell.outputs, cell.execution_count = [], None
    return nb


def _mark_written(nb):
    """otter-grader's markers around each written question (its prompt, the answer cell, the model answer):
    Gradescope's autograder puts what lies between them in the PDF of the answers."""
    import nbformat

    prompts = {w.prompt for w in written_questions(nb)}
    cells = []
    inside = False
    for cell in nb.cells:
        tags = cell.get("metadata", {}).get("tags", [])
        if inside and not ({"answer", "solution"} & set(tags)):
            cells.append(nbformat.v4.new_markdown_cell(END_QUESTION))
            inside = False
        if cell.cell_type == "markdown" and cell.source in prompts:
            cell.source = f"{BEGIN_QUESTION}\n\n{cell.source}"
            inside = True
        cells.append(cell)
    if inside:
        cells.append(nbformat.v4.new_markdown_cell(END_QUESTION))
    nb.cells = cells


def write_labs(out_dir, labs=None, edition: str = "student", secret: str = DEFAULT_SECRET, root=None,
               log=None) -> list[Path]:
    """Write :func:`lab_notebook` of each lab to ``out_dir/<lab>.ipynb``.

    Parameters
    ----------
    out_dir : str or path
        The folder.
    labs : list of str, optional
        The labs (default: all).
    edition : {"student", "instructor"}, default="student"
    secret : str, default=DEFAULT_SECRET
        The course's secret (:func:`course_version`).
    root : str or path, optional
        The repository whose labs to write (default: this package's, :func:`lab_sources`).
    log : callable, optional
        Called with each path written.

    Returns
    -------
    list of pathlib.Path

    Examples
    --------
    >>> import tempfile
    >>> [p.name for p in write_labs(tempfile.mkdtemp(), ["lab1_ece"])]
    ['lab1_ece.ipynb']
    """
    import nbformat

    sources = {p.stem: p for p in (lab_sources(root) if root else lab_sources())}
    unknown = sorted(set(labs or ()) - set(sources))
    if unknown:
        raise ValueError(f"labs must be among {', '.join(sources)}; got {', '.join(unknown)}")
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    written = []
    for name in labs or sources:
        path = out_dir / f"{name}.ipynb"
        nbformat.write(lab_notebook(sources[name], edition, secret), path)
        written.append(path)
        if log:
            log(path)
    return written


def write_editions(root, out_dir=None, editions=("student",), secret=None) -> list[Path]:
    r"""Write every lab of ``root/notebooks/labs/`` as handed out, one folder per edition: ``make labs``.

    ``make labs`` (``python -m calibcourse.tools.build --labs``) writes the student edition alone, so
    the path the setup page gives students writes no solution; ``make labs EDITION=instructor``
    writes the instructor edition. The notebooks are those ``make assignments`` hands out, byte for
    byte.

    Parameters
    ----------
    root : str or path
        The repository root: the labs are ``root/notebooks/labs/*.md``.
    out_dir : str or path, optional
        Where to write (default ``root/_build/labs``).
    editions : tuple of str, default=("student",)
        The editions to write: ``"student"``, ``"instructor"``.
    secret : str, optional
        The course's secret (default ``$CALIBCOURSE_SECRET``, else the published lab's).

    Returns
    -------
    list of pathlib.Path
        The notebooks written, ``out_dir/<edition>/<lab>.ipynb``.

    Examples
    --------
    >>> import tempfile
    >>> root = Path(tempfile.mkdtemp())
    >>> (root / "notebooks" / "labs").mkdir(parents=True)
    >>> _ = (root / "notebooks" / "labs" / "lab0_demo.md").write_text("# A lab\n")
    >>> [str(p.relative_to(root)) for p in write_editions(root)]
    ['_build/labs/student/lab0_demo.ipynb']
    >>> [str(p.relative_to(root)) for p in write_editions(root, editions=("instructor",))]
    ['_build/labs/instructor/lab0_demo.ipynb']
    """
    root = Path(root)
    out_dir = Path(out_dir or root / "_build" / "labs")
    return [path for edition in editions
            for path in write_labs(out_dir / edition, edition=edition, secret=secret_from_env(secret), root=root)]


def main(argv=None) -> int:
    """``calibcourse labs``: write the labs' notebooks, as handed out, to a folder.

    Parameters
    ----------
    argv : list of str, optional
        The arguments after ``labs`` (default: the command line's).

    Returns
    -------
    int
        The exit status: 0, or 2 for a bad argument (the reason on stderr).

    Examples
    --------
    >>> import tempfile
    >>> out = tempfile.mkdtemp()
    >>> main(["--out", out, "--lab", "lab1_ece"])  # doctest: +ELLIPSIS
    wrote .../lab1_ece.ipynb
    0
    """
    ap = argparse.ArgumentParser(prog="calibcourse labs", description="write the labs' notebooks (the hand-outs)")
    ap.add_argument("--out", default="labs", help="the folder (default: ./labs)")
    ap.add_argument("--lab", action="append", help="only this lab (repeatable)")
    ap.add_argument("--edition", default="student", choices=("student", "instructor"))
    ap.add_argument("--secret", default=None, help="the course's secret (default: $CALIBCOURSE_SECRET, else the "
                                                   "published lab)")
    args = ap.parse_args(argv)
    try:
        write_labs(args.out, args.lab, args.edition, secret_from_env(args.secret), log=lambda p: print(f"wrote {p}"))
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
