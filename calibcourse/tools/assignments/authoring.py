"""The labs as otter-grader assignments: the master notebook of a lab, from which `otter assign` makes
the autograder archive, beside the student's and the instructor's notebooks of
:func:`calibcourse.tools.handout.lab_notebook` (the notebooks ``make labs`` writes, byte for byte)."""
from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

from calibcourse.tools.assignments.code_questions import (
    DEFAULT_SECRET,
    ROOT,
    Question,
    exercise_label,
    fmt_points,
    hidden_seed,
    lab_sources,
    questions,
)
from calibcourse.tools.assignments.written import written_questions
from calibcourse.tools.editions import BEGIN, STUB

__all__ = ["master_notebook", "write_assignment", "write_assignments"]


def _prompt_cell_source(code: str) -> str:
    """otter's markup for our solution block: the student gets our stub, the solution the code."""
    out = []
    for line in code.splitlines():
        indent = line[: len(line) - len(line.lstrip())]
        if line.strip() == BEGIN:
            out += [f'{indent}""" # BEGIN PROMPT', f"{indent}{STUB}", f'{indent}""" # END PROMPT',
                    f"{indent}# BEGIN SOLUTION NO PROMPT"]
        else:
            out.append(line)
    return "\n".join(out)


def _test_cell(q: Question, points: float, hidden: bool, seed: int, variant: str | None = None):
    import nbformat

    # the check's call, through checks.graded: a failure's message names the exercise as the notebook does
    args = f"{exercise_label(q.title)!r}, checks.{q.check}, {q.function}" + (f", seed={seed}" if hidden else "")
    args += f", variant={variant!r}" if variant is not None else ""
    return nbformat.v4.new_code_cell(
        f'""" # BEGIN TEST CONFIG\npoints: {fmt_points(points)}\nhidden: {str(hidden).lower()}\n""" # END TEST CONFIG\n'
        f"def test_{'hidden' if hidden else 'public'}({q.function}):\n"
        f"    from calibcourse.study.course import checks\n"
        f"    checks.graded({args})")


def master_notebook(src, secret: str = DEFAULT_SECRET):
    '''The otter-grader master notebook of the lab ``src`` (a jupytext source path).

    Each graded cell becomes an otter question (its prompt, a solution cell, a public and a
    hidden test); the prompt states the points; everything else is copied as it is.

    Parameters
    ----------
    src : str or path
        The lab's jupytext source, ``notebooks/labs/<lab>.md``.
    secret : str, default=DEFAULT_SECRET
        The text the hidden tests' seeds derive from (:func:`hidden_seed`).

    Returns
    -------
    nbformat.NotebookNode
        The master notebook, for ``otter assign``.

    Examples
    --------
    >>> nb = master_notebook(lab_sources()[0], secret="my course 2026")
    >>> print(next(c.source for c in nb.cells if "def test_hidden" in c.source))
    """ # BEGIN TEST CONFIG
    points: 2
    hidden: true
    """ # END TEST CONFIG
    def test_hidden(bin_stats):
        from calibcourse.study.course import checks
        checks.graded('exercise 1 (Per-bin statistics)', checks.check_reliability_bins, bin_stats, seed=1285810705)
    '''
    import jupytext
    import nbformat
    import yaml

    # the hand-out module reads the labs with this package's parsers: imported here, not at the top
    from calibcourse.tools.handout import course_variant, course_version, prompt_rules

    src = Path(src)
    nb = course_version(jupytext.read(src), src.stem, secret)
    qs = {id(c): q for c, q in zip([c for c in nb.cells if "points" in c.metadata], questions(nb), strict=True)}
    config = {"name": src.stem, "requirements": "requirements.txt", "python_version": "3.11", "init_cell": False,
              "check_all_cell": False, "export_cell": False, "run_tests": False,
              "show_question_points": False, "tests": {"files": True, "ok_format": False},
              "generate": {"pdf": True, "show_stdout": True, "show_hidden": False, "warn_missing_pdf": True},
              "autograder_files": ["calibcourse"]}
    raw = nbformat.v4.new_raw_cell
    cells = [raw("# ASSIGNMENT CONFIG\n" + yaml.safe_dump(config, sort_keys=False))]
    written = {w.prompt: w for w in written_questions(nb)}
    manual = None  # the written question whose answer and solution cells come next
    for cell in nb.cells:
        tags = cell.get("metadata", {}).get("tags", [])
        if manual is not None:
            if "answer" in tags:  # otter-grader puts its own answer cell in the student's notebook
                continue
            if "solution" in tags:
                if cells[-1].source != "# BEGIN SOLUTION":
                    cells.append(raw("# BEGIN SOLUTION"))
                cells.append(cell)
                continue
            cells += [raw("# END SOLUTION"), raw("# END QUESTION")]
            manual = None
        if cell.cell_type == "markdown" and cell.source in written:
            manual = written[cell.source]
            cells += [raw(f"# BEGIN QUESTION\nname: {manual.name}\nmanual: true\npoints: {fmt_points(manual.points)}"),
                      cell]
            continue
        q = qs.get(id(cell))
        if q is None:
            cells.append(cell)
            continue
        prompt = cells.pop() if cells and cells[-1].cell_type == "markdown" else nbformat.v4.new_markdown_cell("")
        prompt.source = prompt.source.rstrip() + "\n\n" + prompt_rules(q)  # as the hand-out states them
        solution = nbformat.v4.new_code_cell(_prompt_cell_source(cell.source), metadata=dict(cell.metadata))
        solution.metadata.pop("points", None)
        seed = hidden_seed(src.stem, q.name, secret)
        variant = course_variant(src.stem, q.check, secret)
        cells += [raw(f"# BEGIN QUESTION\nname: {q.name}\npoints: [{fmt_points(q.public)}, {fmt_points(q.hidden)}]\n"
                      "check_cell: false"), prompt,
                  raw("# BEGIN SOLUTION"), solution, raw("# END SOLUTION"),
                  raw("# BEGIN TESTS"), _test_cell(q, q.public, False, 0, variant),
                  _test_cell(q, q.hidden, True, seed, variant), raw("# END TESTS"), raw("# END QUESTION")]
    if manual is not None:
        cells += [raw("# END SOLUTION"), raw("# END QUESTION")]
    out = nbformat.v4.new_notebook(cells=cells)
    out.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    return out


_BOOK_ONLY = ("jupyter-book", "papermill", "sphinx", "pytest")


def _autograder_requirements() -> str:
    """requirements.txt without what only the book's build and the tests need."""
    keep = [ln for ln in (ROOT / "requirements.txt").read_text().splitlines()
            if ln.strip() and not ln.startswith("#") and not ln.startswith(_BOOK_ONLY)]
    return "\n".join(keep) + "\n"


def write_assignment(src, out_dir, secret: str = DEFAULT_SECRET, log=print) -> dict:
    """Build the assignment of the lab ``src`` under ``out_dir/<lab>/``.

    Writes the student's and the instructor's notebooks (:func:`calibcourse.tools.handout.lab_notebook`),
    and runs ``otter assign`` on :func:`master_notebook`, with the package (the labs' data included) and
    the runtime requirements as the autograder's files, for the archive.

    Parameters
    ----------
    src : str or path
        The lab's jupytext source.
    out_dir : str or path
        The folder of the assignments; the lab's folder in it is replaced.
    secret : str, default=DEFAULT_SECRET
        The text the hidden tests' seeds derive from (:func:`hidden_seed`).
    log : callable, default=print
        Called with each progress line.

    Returns
    -------
    dict
        Paths of ``student`` (the notebook to hand out), ``solution`` and ``autograder`` (the zip archive for
        Gradescope, also what :func:`grade` reads).

    Examples
    --------
    Skipped in the doctests: ``otter assign`` takes seconds.

    >>> paths = write_assignment(lab_sources()[0], "_build/assignments")  # doctest: +SKIP
    lab1_ece: student notebook, solution notebook and autograder archive written to _build/assignments/lab1_ece
    >>> sorted(paths)  # doctest: +SKIP
    ['autograder', 'solution', 'student']
    """
    import nbformat
    from otter.assign import main as otter_assign

    from calibcourse.tools.handout import lab_notebook

    src, lab = Path(src), Path(src).stem
    dest = Path(out_dir) / lab
    with tempfile.TemporaryDirectory(prefix=f"calibcourse-assign-{lab}-") as tmp:
        stage = Path(tmp) / "master"
        stage.mkdir()
        nbformat.write(master_notebook(src, secret), stage / f"{lab}.ipynb")
        shutil.copytree(ROOT / "calibcourse", stage / "calibcourse",
                        ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
        (stage / "requirements.txt").write_text(_autograder_requirements())
        result = Path(tmp) / "dist"
        otter_assign(str(stage / f"{lab}.ipynb"), str(result), no_pdfs=True, no_run_tests=True)
        # the notebooks: the hand-out's, not otter's (whose student notebook make labs would not match)
        student, solution = (lab_notebook(src, edition, secret) for edition in ("student", "instructor"))
        (zip_path,) = (result / "autograder").glob("*.zip")
        shutil.rmtree(dest, ignore_errors=True)
        (dest / "student").mkdir(parents=True)
        (dest / "solution").mkdir()
        paths = {"student": dest / "student" / f"{lab}.ipynb", "solution": dest / "solution" / f"{lab}.ipynb",
                 "autograder": dest / f"{lab}-autograder.zip"}
        nbformat.write(student, paths["student"])
        nbformat.write(solution, paths["solution"])
        shutil.copy(zip_path, paths["autograder"])
    log(f"{lab}: student notebook, solution notebook and autograder archive written to {dest}")
    return paths


def write_assignments(out_dir=None, labs=None, secret: str | None = None, log=print) -> list[dict]:
    """Build every lab's assignment (or those named in ``labs``) under ``out_dir``
    (default ``_build/assignments``); ``make assignments`` calls it.

    Parameters
    ----------
    out_dir : str or path, optional
        Default ``_build/assignments``.
    labs : list of str, optional
        Only these labs (their names, e.g. ``['lab1_ece']``).
    secret : str, optional
        Default: ``$CALIBCOURSE_SECRET``, else :data:`DEFAULT_SECRET`.
    log : callable, default=print
        Called with each progress line.

    Returns
    -------
    list of dict
        What :func:`write_assignment` returns, per lab.

    Examples
    --------
    >>> import tempfile
    >>> write_assignments(tempfile.mkdtemp(), labs=["lab9"])
    Traceback (most recent call last):
        ...
    ValueError: labs must be among lab1_ece, lab2_temperature, lab3_binning, lab4_sece_focal; got lab9
    >>> write_assignments(labs=["lab1_ece"])  # doctest: +SKIP
    lab1_ece: student notebook, solution notebook and autograder archive written to .../_build/assignments/lab1_ece
    [{'student': ..., 'solution': ..., 'autograder': ...}]
    """
    from calibcourse.tools.handout import secret_from_env

    out_dir = Path(out_dir or ROOT / "_build" / "assignments")
    secret = secret_from_env(secret)
    sources = {p.stem: p for p in lab_sources()}
    unknown = sorted(set(labs or ()) - set(sources))
    if unknown:
        raise ValueError(f"labs must be among {', '.join(sources)}; got {', '.join(unknown)}")
    return [write_assignment(sources[name], out_dir, secret, log) for name in (labs or sources)]
