"""The labs as graded assignments: otter-grader builds them, ``make grade`` grades a folder.

    python -m calibcourse.tools.assignments assign [--lab LAB ...] [--out DIR] [--secret TEXT]
    python -m calibcourse.tools.assignments grade --lab LAB --submissions DIR [--timeout S] [--jobs N]

**One source per lab.** In a lab's jupytext source (``notebooks/labs/<lab>.md``) a code
cell tagged ``exercise`` with a ``points: [public, hidden]`` metadata entry is a graded
question: it defines one function between ``# BEGIN SOLUTION`` / ``# END SOLUTION``, and a
later cell checks it with ``checks.check_<name>(<function>)``. :func:`master_notebook`
turns the source into an otter-grader master notebook (questions, solutions, tests), and
``otter assign`` writes from it the student notebook, the solution notebook and the
autograder archive. A question's public test is the lab's own check, as the student sees
it; its hidden test runs the same check with another ``seed`` (other inputs, derived from
a secret), so special-casing the visible inputs earns only the public point.

**What an exercise may not use.** A graded cell's ``forbid`` metadata lists the library's
own versions of what it asks for (``metrics.ece``, ``calibrators``, ``losses`` ...); the
checks and the labs' helpers (:data:`ALWAYS_FORBIDDEN`) are forbidden everywhere. The
student's prompt states the list, and :func:`grade` gives no points to a question whose
function, or a helper it reads from another cell, uses one of them (:func:`forbidden_uses`,
a scan of the submission's code through its imports and aliases), with a message in the
feedback. The Gradescope archive runs otter's own tests and does not scan.

**Grading** (:func:`grade`) runs every submission in its own process and its own
temporary folder, with a wall-clock limit: the notebook's cells run in a fresh kernel (the
``parameters`` cell overridden to the fast ``ci`` profile: the graded checks do not depend
on it), each question is graded by otter's test files right after the last cell that
defines its function, and the points are saved after each question, so a submission cut
at the limit keeps what it earned so far. No Docker and no network: the code runs as the
user who grades (see the README for what that does not protect against).
"""
from __future__ import annotations

import argparse
import ast
import csv
import hashlib
import io
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import zipfile
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from calibcourse.tools.editions import BEGIN, END, STUB, set_edition
from calibcourse.tools.written import mark_of, read_marks, written_questions, answers, write_sheet

__all__ = ["Question", "questions", "forbidden_uses", "ALWAYS_FORBIDDEN", "hidden_seed", "lab_sources", "master_notebook", "write_assignment",
           "write_assignments", "grade", "main", "GRADE_PROFILE", "DEFAULT_TIMEOUT", "DEFAULT_MEMORY_MB",
           "DEFAULT_SECRET"]

ROOT = Path(__file__).resolve().parents[2]
GRADE_PROFILE = "ci"
DEFAULT_TIMEOUT = 120  # seconds per submission
DEFAULT_MEMORY_MB = 4096  # per submission, all its processes together
OUTPUT_LIMIT = 2_000_000  # characters of cell output kept per submission
DEFAULT_SECRET = "calibcourse"
#: the clock of the per-submission time limit (seconds; a test replaces it to cut a submission at a
#: point it chooses instead of after a number of seconds that depends on the machine's load)
_clock = time.monotonic
_CHECK_CALL = re.compile(r"checks\.(check_\w+)\(\s*(\w+)\s*[,)]")
#: the package's modules as the labs import them (``from calibcourse.calibration import metrics``): a
#: ``forbid`` entry may name them short, ``metrics.ece`` for ``calibcourse.calibration.metrics.ece``
SHORT_MODULES = {name: f"calibcourse.calibration.{name}" for name in
                 ("metrics", "calibrators", "losses", "plots", "binning", "stats", "synthetic")}
SHORT_MODULES.update({name: f"calibcourse.study.{name}" for name in ("checks", "labs")})
#: what no exercise may use: the checks (their reference implementations) and the labs' helpers
ALWAYS_FORBIDDEN = ("calibcourse.study.checks", "calibcourse.study.labs")



# =========================================================================== questions
@dataclass
class Question:
    """A graded exercise of a lab.

    Attributes
    ----------
    name : str
        ``"q1"``, ``"q2"``, ... in the order of the lab.
    function : str
        The function the student writes.
    check : str
        The :mod:`calibcourse.study.checks` function that tests it.
    public : float
        Points of the public test (the lab's check, seed 0).
    hidden : float
        Points of the hidden test (the same check, another seed).
    title : str
        The bold title of the prompt, for the feedback.
    forbid : tuple of str
        What the function may not use: the library's solution of the exercise (the graded cell's
        ``forbid`` metadata, e.g. ``["metrics.ece"]``, always with :data:`ALWAYS_FORBIDDEN`);
        :func:`forbidden_uses` finds them.
    points : float
        ``public + hidden``.

    Examples
    --------
    >>> Question("q1", "my_ece", "check_ece", 1.0, 2.0, "2. ECE").points
    3.0
    """

    name: str       # q1, q2, ... in the order of the lab
    function: str   # the function the student writes
    check: str      # the calibcourse.study.checks function that tests it
    public: float   # points of the public test (the lab's check, seed 0)
    hidden: float   # points of the hidden test (the same check, another seed)
    title: str      # the bold title of the prompt, for the feedback
    forbid: tuple = ALWAYS_FORBIDDEN  # what the function may not use (the library's solution)

    @property
    def points(self) -> float:
        return self.public + self.hidden


def _defined_names(source: str) -> list[str]:
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return []
    return [n.name for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]


def _full_name(name: str) -> str:
    """``metrics.ece`` -> ``calibcourse.calibration.metrics.ece``; other names unchanged."""
    head, _, rest = name.partition(".")
    full = SHORT_MODULES.get(head, head)
    return f"{full}.{rest}" if rest else full


def _parse(source: str):
    """The AST of a cell, IPython's ``%`` and ``!`` lines blanked; None where it does not parse."""
    lines = ["" if ln.lstrip().startswith(("%", "!")) else ln for ln in source.splitlines()]
    try:
        return ast.parse("\n".join(lines))
    except SyntaxError:
        return None


def _dotted(node) -> str | None:
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        return ".".join([node.id, *reversed(parts)])
    return None


def _top_level_names(tree) -> set:
    """The names a cell binds at its top level (functions, classes, assignments)."""
    names = set()
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for t in targets:
                names.update(n.id for n in ast.walk(t) if isinstance(n, ast.Name))
    return names


def _free_names(tree) -> set:
    """The names a cell reads from outside itself: what its top-level code reads, and what its
    functions read that is neither a parameter nor a name they assign, less what the cell binds."""
    def local(fn) -> set:
        a = fn.args
        names = {x.arg for x in [*a.posonlyargs, *a.args, *a.kwonlyargs, a.vararg, a.kwarg] if x}
        for node in ast.walk(fn):
            if isinstance(node, ast.Name) and isinstance(node.ctx, (ast.Store, ast.Del)):
                names.add(node.id)
            elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and node is not fn:
                names.add(node.name)
            elif isinstance(node, ast.Lambda):
                names.update(x.arg for x in node.args.args)
            elif isinstance(node, (ast.Import, ast.ImportFrom)):
                names.update((x.asname or x.name).split(".")[0] for x in node.names)
        return names

    free = set()

    def visit(node, bound):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            for d in getattr(node, "decorator_list", []) + node.args.defaults + node.args.kw_defaults:
                if d is not None:
                    visit(d, bound)
            inner = bound | local(node)
            for child in (node.body if isinstance(node.body, list) else [node.body]):
                visit(child, inner)
            return
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load) and node.id not in bound:
            free.add(node.id)
        for child in ast.iter_child_nodes(node):
            visit(child, bound)

    visit(tree, set())
    own = _top_level_names(tree) | {(a.asname or a.name).split(".")[0] for node in tree.body
                                    if isinstance(node, (ast.Import, ast.ImportFrom)) for a in node.names}
    own |= {n.id for node in tree.body if isinstance(node, (ast.For, ast.With, ast.If, ast.Try, ast.While))
            for n in ast.walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
    return free - own


def forbidden_uses(sources, function: str | None, forbid, given=(), imports: bool = True,
                   cell_names=None) -> list[str]:
    r"""What ``function``'s code uses of ``forbid``: the calls that hand over an exercise's answer.

    The cells scanned are the ones that define ``function`` and, transitively, the ones that
    define a name its code reads (a helper in another cell counts); cells of ``given`` (the lab's
    own cells, as handed out) are not scanned. A use is an attribute chain, a name or an import
    that resolves, through the notebook's imports and assignments (``import ... as``, ``m =
    metrics``), to an entry of ``forbid`` or to something inside it.

    Parameters
    ----------
    sources : list of str
        The code cells of a notebook, in order.
    function : str or None
        The exercise's function; None: every cell (but those of ``given``).
    forbid : iterable of str
        Full dotted names (``calibcourse.calibration.metrics.ece``) or short ones (``metrics.ece``).
    given : iterable of str, default=()
        Sources of cells that are not the student's own (compared without surrounding blank space).
    imports : bool, default=True
        Whether importing a forbidden name counts as a use (False: only what the code reads).
    cell_names : list of str, optional
        How to name each cell in the lines returned (default ``"cell n"``, from 1); the grader
        names a cell as a student sees it (:func:`cell_names`).

    Returns
    -------
    list of str
        One line per use: ``"cell n calls calibcourse.calibration.metrics.ece"``; empty: none.

    Examples
    --------
    >>> cells = ["from calibcourse.calibration import metrics as m",
    ...          "def helper(p, y, n):\n    return m.ece(p, y, n_bins=n)",
    ...          "def my_ece(p, y, n_bins=15):\n    return helper(p, y, n_bins)",
    ...          "def my_mce(p, y, n_bins=15):\n    return 0.0"]
    >>> forbidden_uses(cells, "my_ece", ["metrics.ece"])
    ['cell 2 uses calibcourse.calibration.metrics.ece']
    >>> forbidden_uses(cells, "my_mce", ["metrics.ece"])
    []
    """
    forbid = [_full_name(f) for f in forbid]
    given = {g.strip() for g in given}
    trees = [_parse(src) if src.strip() not in given else None for src in sources]
    aliases = dict(SHORT_MODULES)
    for tree in (_parse(src) for src in sources):  # every cell's imports: the kernel shares them
        for node in ast.walk(tree) if tree else ():
            if isinstance(node, ast.Import):
                for a in node.names:
                    aliases[a.asname or a.name.split(".")[0]] = a.name if a.asname else a.name.split(".")[0]
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                for a in node.names:
                    aliases[a.asname or a.name] = f"{node.module}.{a.name}"

    def resolve(dotted: str) -> str:
        head, _, rest = dotted.partition(".")
        full = aliases.get(head, head)
        return f"{full}.{rest}" if rest else full

    for tree in trees:  # simple aliases by assignment: m = metrics, f = metrics.ece
        for node in tree.body if tree else ():
            if isinstance(node, ast.Assign) and _dotted(node.value):
                for t in node.targets:
                    if isinstance(t, ast.Name):
                        aliases[t.id] = resolve(_dotted(node.value))
    defines = {}
    for i, tree in enumerate(trees):
        for name in _top_level_names(tree) if tree else ():
            defines.setdefault(name, []).append(i)
    todo = [i for i, t in enumerate(trees) if t] if function is None else list(defines.get(function, []))
    seen = set()
    while todo:
        i = todo.pop()
        if i in seen:
            continue
        seen.add(i)
        for name in _free_names(trees[i]):
            todo += defines.get(name, [])

    def bad(full: str) -> bool:
        return any(full == f or full.startswith(f + ".") for f in forbid)

    found = []
    for i in sorted(seen):
        inner = {id(n.value) for n in ast.walk(trees[i]) if isinstance(n, ast.Attribute)}
        for node in ast.walk(trees[i]):
            names = []
            if id(node) in inner:  # a part of a longer chain: the chain is checked
                continue
            if isinstance(node, ast.Attribute):
                names.append(_dotted(node))
            elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load):
                names.append(node.id)
            elif isinstance(node, ast.Import) and imports:
                names += [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module and imports:
                names += [f"{node.module}.{a.name}" for a in node.names]
            for name in names:
                if name and bad(resolve(name)):
                    line = f"{cell_names[i] if cell_names else f'cell {i + 1}'} uses {resolve(name)}"
                    if line not in found:
                        found.append(line)
    return found


def questions(nb) -> list[Question]:
    r"""The graded questions of a lab notebook (read by jupytext), in order.

    A graded question is a code cell with ``points: [public, hidden]`` in its metadata that
    defines one function between the solution markers, and that a later cell checks with
    ``checks.check_<name>(<function>)``; its title is the bold text of the markdown cell
    before it.

    Parameters
    ----------
    nb : nbformat.NotebookNode
        A lab notebook (read by jupytext).

    Returns
    -------
    list of Question
        In the order of the lab; a malformed graded cell raises ``ValueError`` naming the cell.

    Examples
    --------
    >>> import nbformat
    >>> new = nbformat.v4
    >>> nb = new.new_notebook(cells=[
    ...     new.new_markdown_cell("**1. Double.** Write `double(x)`."),
    ...     new.new_code_cell("def double(x):\n    # BEGIN SOLUTION\n    return 2 * x\n    # END SOLUTION",
    ...                       metadata={"tags": ["exercise"], "points": [1, 2]}),
    ...     new.new_code_cell("checks.check_double(double)")])
    >>> q = questions(nb)[0]
    >>> q.name, q.function, q.check, q.points, q.title
    ('q1', 'double', 'check_double', 3.0, '1. Double')
    >>> q.forbid
    ('calibcourse.study.checks', 'calibcourse.study.labs')
    """
    out = []
    for i, cell in enumerate(nb.cells):
        if cell.cell_type != "code" or "points" not in cell.metadata:
            continue
        where = f"code cell {i + 1} ({cell.source.splitlines()[0] if cell.source else 'empty'})"
        points = cell.metadata["points"]
        if not (isinstance(points, list) and len(points) == 2 and all(isinstance(p, (int, float)) and p >= 0
                                                                      for p in points)):
            raise ValueError(f"{where}: points must be [public, hidden], two non-negative numbers; got {points!r}")
        if BEGIN not in cell.source:
            raise ValueError(f"{where}: a graded cell needs a '{BEGIN}' block")
        names = _defined_names(cell.source)
        if len(names) != 1:
            raise ValueError(f"{where}: a graded cell defines exactly one function; it defines {names}")
        fn = names[0]
        checks = [m.group(1) for c in nb.cells[i + 1:] if c.cell_type == "code"
                  for m in _CHECK_CALL.finditer(c.source) if m.group(2) == fn]
        if not checks:
            raise ValueError(f"{where}: no later cell calls checks.check_...({fn})")
        prompt = nb.cells[i - 1].source if i and nb.cells[i - 1].cell_type == "markdown" else ""
        title = re.search(r"(?m)^\*\*(.+?)\*\*", prompt)
        forbid = cell.metadata.get("forbid", [])
        if not (isinstance(forbid, list) and all(isinstance(f, str) and f for f in forbid)):
            raise ValueError(f"{where}: forbid must be a list of names (e.g. ['metrics.ece']); got {forbid!r}")
        full = tuple(dict.fromkeys([*(_full_name(f) for f in forbid), *ALWAYS_FORBIDDEN]))
        out.append(Question(f"q{len(out) + 1}", fn, checks[0], float(points[0]), float(points[1]),
                            title.group(1).strip(" .") if title else fn, full))
    return out


def hidden_seed(lab: str, question: str, secret: str = DEFAULT_SECRET) -> int:
    """The seed of a question's hidden test: from the secret, the lab and the question.

    Parameters
    ----------
    lab : str
        The lab, e.g. ``"lab1_ece"``.
    question : str
        The question, e.g. ``"q1"``.
    secret : str, default=DEFAULT_SECRET
        The text the hidden tests' seeds derive from (:func:`hidden_seed`).

    Returns
    -------
    int
        A seed in ``[1, 2**31 - 2]``, from the sha256 of the three.

    Examples
    --------
    >>> hidden_seed("lab1_ece", "q1", secret="my course 2026")
    1285810705
    >>> hidden_seed("lab1_ece", "q2", secret="my course 2026")
    1471497284
    """
    digest = hashlib.sha256(f"{secret}/{lab}/{question}".encode()).digest()
    return 1 + int.from_bytes(digest[:4], "big") % (2**31 - 2)


def _fmt(x: float) -> str:
    return f"{x:g}"


# =========================================================================== master notebook
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


def _test_cell(q: Question, points: float, hidden: bool, seed: int):
    import nbformat

    args = f"{q.function}, seed={seed}, strict=True" if hidden else f"{q.function}, strict=True"
    return nbformat.v4.new_code_cell(
        f'""" # BEGIN TEST CONFIG\npoints: {_fmt(points)}\nhidden: {str(hidden).lower()}\n""" # END TEST CONFIG\n'
        f"def test_{'hidden' if hidden else 'public'}({q.function}):\n"
        f"    from calibcourse.study import checks\n"
        f"    checks.{q.check}({args})")


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
        from calibcourse.study import checks
        checks.check_reliability_bins(bin_stats, seed=1285810705, strict=True)
    '''
    import jupytext
    import nbformat
    import yaml

    src = Path(src)
    nb = jupytext.read(src)
    qs = {id(c): q for c, q in zip([c for c in nb.cells if "points" in c.metadata], questions(nb))}
    config = {"name": src.stem, "requirements": "requirements.txt", "python_version": "3.11", "init_cell": False,
              "check_all_cell": False, "export_cell": False, "run_tests": False,
              "show_question_points": False, "tests": {"files": True, "ok_format": False},
              "generate": {"pdf": True, "show_stdout": True, "show_hidden": False, "warn_missing_pdf": True},
              "autograder_files": ["calibcourse", "data"]}
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
            cells += [raw(f"# BEGIN QUESTION\nname: {manual.name}\nmanual: true\npoints: {_fmt(manual.points)}"),
                      cell]
            continue
        q = qs.get(id(cell))
        if q is None:
            cells.append(cell)
            continue
        prompt = cells.pop() if cells and cells[-1].cell_type == "markdown" else nbformat.v4.new_markdown_cell("")
        own = [f"`{f}`" for f in cell.metadata.get("forbid", [])]
        prompt.source += (f"\n\n*{_fmt(q.points)} points: {_fmt(q.public)} for the check below, "
                          f"{_fmt(q.hidden)} for hidden tests that run the same check on inputs you do not see. "
                          f"A function that uses {', '.join(own) + ' or ' if own else ''}the `checks` module "
                          "earns no points.*")
        solution = nbformat.v4.new_code_cell(_prompt_cell_source(cell.source), metadata=dict(cell.metadata))
        solution.metadata.pop("points", None)
        solution.metadata.pop("forbid", None)
        seed = hidden_seed(src.stem, q.name, secret)
        cells += [raw(f"# BEGIN QUESTION\nname: {q.name}\npoints: [{_fmt(q.public)}, {_fmt(q.hidden)}]\n"
                      "check_cell: false"), prompt,
                  raw("# BEGIN SOLUTION"), solution, raw("# END SOLUTION"),
                  raw("# BEGIN TESTS"), _test_cell(q, q.public, False, 0), _test_cell(q, q.hidden, True, seed),
                  raw("# END TESTS"), raw("# END QUESTION")]
    if manual is not None:
        cells += [raw("# END SOLUTION"), raw("# END QUESTION")]
    out = nbformat.v4.new_notebook(cells=cells)
    out.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    return out


def _solution_source(code: str) -> str:
    """Remove otter's prompt and solution markers from a solution cell."""
    out, in_prompt = [], False
    for line in code.splitlines():
        s = line.strip()
        if s == '""" # BEGIN PROMPT':
            in_prompt = True
        elif s == '""" # END PROMPT':
            in_prompt = False
        elif not in_prompt and s not in (f"{BEGIN} NO PROMPT", END):
            out.append(line)
    return "\n".join(out)


def _cache_entries(source_text: str) -> list[Path]:
    """The result-cache entries of the runs a lab loads (experiment names quoted in its source, or
    named by a ``labs.LAB..._RUN`` constant of :mod:`calibcourse.study.labs`)."""
    from calibcourse.study.cache import Cache, config_key
    from calibcourse.study.experiments import experiments

    from calibcourse.study import labs

    quoted = set(re.findall(r'"(ch\d[^"]*)"', source_text))
    for name in re.findall(r"labs\.(LAB\w+)", source_text):  # a lab's runs named in calibcourse.study.labs
        value = getattr(labs, name, "")
        quoted.update(value.values() if isinstance(value, dict) else [value])
    cache, found = Cache(), []
    for profile in ("ci", "default"):
        for name, cfg in experiments(profile).items():
            if any(name.startswith(q) for q in quoted):
                path = cache.path(config_key(cfg))
                if path.is_dir() and path not in found:
                    found.append(path)
    return found


_BOOK_ONLY = ("jupyter-book", "papermill", "sphinx", "pytest")


def _autograder_requirements() -> str:
    """requirements.txt without what only the book's build and the tests need."""
    keep = [ln for ln in (ROOT / "requirements.txt").read_text().splitlines()
            if ln.strip() and not ln.startswith("#") and not ln.startswith(_BOOK_ONLY)]
    return "\n".join(keep) + "\n"


def write_assignment(src, out_dir, secret: str = DEFAULT_SECRET, log=print) -> dict:
    """Build the assignment of the lab ``src`` under ``out_dir/<lab>/``.

    Runs ``otter assign`` on :func:`master_notebook` with the package, the lab's runs of the
    result cache and the runtime requirements as the autograder's files.

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
        Paths of ``student`` (the notebook to hand out), ``solution`` and ``autograder`` (the zip archive for Gradescope, also what :func:`grade` reads).

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

    src, lab = Path(src), Path(src).stem
    dest = Path(out_dir) / lab
    with tempfile.TemporaryDirectory(prefix=f"calibcourse-assign-{lab}-") as tmp:
        stage = Path(tmp) / "master"
        stage.mkdir()
        nbformat.write(master_notebook(src, secret), stage / f"{lab}.ipynb")
        shutil.copytree(ROOT / "calibcourse", stage / "calibcourse",
                        ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
        for entry in _cache_entries(src.read_text()):
            shutil.copytree(entry, stage / "data" / "cache" / entry.name)
        (stage / "data").mkdir(exist_ok=True)
        (stage / "requirements.txt").write_text(_autograder_requirements())
        result = Path(tmp) / "dist"
        otter_assign(str(stage / f"{lab}.ipynb"), str(result), no_pdfs=True, no_run_tests=True)
        student = nbformat.read(result / "student" / f"{lab}.ipynb", as_version=4)
        student.cells = [c for c in student.cells if "solution" not in c.metadata.get("tags", [])]
        set_edition(student, "student")
        solution = nbformat.read(result / "autograder" / f"{lab}.ipynb", as_version=4)
        for cell in solution.cells:
            if cell.cell_type == "code":
                cell.source = _solution_source(cell.source)
        set_edition(solution, "instructor")
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


def lab_sources(root=ROOT) -> list[Path]:
    """The labs.

    Parameters
    ----------
    root : str or path, default=ROOT
        The repository root.

    Returns
    -------
    list of pathlib.Path
        The labs' jupytext sources, ``notebooks/labs/*.md``, sorted.

    Examples
    --------
    >>> [p.stem for p in lab_sources()]
    ['lab1_ece', 'lab2_temperature', 'lab3_binning', 'lab4_sece_focal']
    """
    return sorted((Path(root) / "notebooks" / "labs").glob("*.md"))


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
    out_dir = Path(out_dir or ROOT / "_build" / "assignments")
    secret = secret or os.environ.get("CALIBCOURSE_SECRET") or DEFAULT_SECRET
    sources = {p.stem: p for p in lab_sources()}
    unknown = sorted(set(labs or ()) - set(sources))
    if unknown:
        raise ValueError(f"labs must be among {', '.join(sources)}; got {', '.join(unknown)}")
    return [write_assignment(sources[name], out_dir, secret, log) for name in (labs or sources)]


# =========================================================================== inside the kernel
class KernelGrader:
    """Runs a submission's otter test files inside its kernel and saves the points after
    each question (the grading cells that :func:`run_submission` adds call it).

    The tests are read when it is created, before any of the student's code runs.
    """

    def __init__(self, tests_path, progress_path):
        self.tests = json.loads(Path(tests_path).read_text())["tests"]
        self.progress_path = str(progress_path)
        self.results = {}

    def grade(self, name: str, env: dict):
        from otter.test_files.exception_test import ExceptionTestFile

        if name in self.results:
            return
        tf = ExceptionTestFile.from_string(self.tests[name], path=f"{name}.py")
        try:
            tf.run(env)
            cases = [{"name": r.test_case.name, "hidden": r.test_case.hidden, "points": r.test_case.points,
                      "passed": r.passed, "message": r.message} for r in tf.test_case_results]
        except BaseException as exc:  # SystemExit, KeyboardInterrupt from the student's code
            cases = [{"name": tc.name, "hidden": tc.hidden, "points": tc.points, "passed": False,
                      "message": f"the test was stopped by {type(exc).__name__}: {exc}"} for tc in tf.test_cases]
        self.results[name] = {"score": sum(c["points"] for c in cases if c["passed"]), "cases": cases}
        tmp = self.progress_path + ".tmp"
        with open(tmp, "w") as f:
            json.dump(self.results, f)
        os.replace(tmp, self.progress_path)

    def refuse(self, name: str, function: str, uses: list):
        """Fail every test of question ``name``: ``function`` uses the library's solution (``uses``)."""
        from otter.test_files.exception_test import ExceptionTestFile

        tf = ExceptionTestFile.from_string(self.tests[name], path=f"{name}.py")
        message = (f"{function} uses what the exercise asks you to write, so it earns no points: "
                   f"{'; '.join(uses)}. Write it yourself with numpy (and what the exercise's text allows).")
        self.results[name] = {"score": 0, "cases": [
            {"name": tc.name, "hidden": tc.hidden, "points": tc.points, "passed": False, "message": message}
            for tc in tf.test_cases]}
        tmp = self.progress_path + ".tmp"
        with open(tmp, "w") as f:
            json.dump(self.results, f)
        os.replace(tmp, self.progress_path)

    def grade_rest(self, env: dict):
        for name in self.tests:
            self.grade(name, env)


# =========================================================================== one submission (child)
def _exercise(title: str) -> str:
    """``"1. Softmax with a temperature"`` -> ``"exercise 1 (Softmax with a temperature)"``."""
    num, dot, name = title.partition(". ")
    return f"exercise {num} ({name})" if dot and num.isdigit() else f"exercise {title!r}"


def cell_names(sources, qs: list[dict]) -> list[str]:
    r"""Each code cell named as a student sees it (a notebook shows no cell numbers): the cell of an
    exercise by the exercise, another by its first line and the exercise before it.

    Examples
    --------
    >>> names = cell_names(["import numpy as np", "def f(x):\n    return x", "print(f(2))"],
    ...                    [{"function": "f", "title": "1. Identity"}])
    >>> for name in names:
    ...     print(name)
    the cell that starts `import numpy as np`
    your cell of exercise 1 (Identity)
    the cell that starts `print(f(2))` (after exercise 1 (Identity))
    """
    out, after = [], None
    for source in sources:
        defined = set(_defined_names(source))
        q = next((q for q in qs if q["function"] in defined), None)
        if q is not None:
            after = _exercise(q["title"])
            out.append(f"your cell of {after}")
            continue
        first = next((ln.strip() for ln in source.splitlines() if ln.strip() and not ln.lstrip().startswith("#")),
                     "(empty)")
        first = first if len(first) <= 40 else first[:37] + "..."
        out.append(f"the cell that starts `{first}`" + (f" (after {after})" if after else ""))
    return out


def _grading_notebook(nb, qs: list[dict], private: Path, given=()):
    """The cells to execute: the grader's set-up (which fails at once every question whose
    function uses its ``forbid`` list, :func:`forbidden_uses`), the submission's code cells with the
    ``ci`` profile injected after its parameters cell, a grading cell after the last cell
    that defines each question's function, and a last cell for the questions left. Code
    cells after the last graded definition are not run: nothing there is graded."""
    import nbformat

    new = nbformat.v4.new_code_cell
    code = [c for c in nb.cells if c.get("cell_type") == "code"]
    sources = [c.source for c in code]
    names = cell_names(sources, qs)
    refusals = "".join(
        f"__calibcourse_grader__.refuse({q['name']!r}, {q['function']!r}, {uses!r})\n" for q in qs
        for uses in [forbidden_uses(sources, q["function"], q.get("forbid", ALWAYS_FORBIDDEN), given,
                                    cell_names=names)] if uses)
    last_def = {}
    for i, cell in enumerate(code):
        for fn in _defined_names(cell.source):
            last_def[fn] = i
    if all(q["function"] in last_def for q in qs):
        code = code[: max(last_def[q["function"]] for q in qs) + 1]
    cells, origin = [new(f"from calibcourse.tools.assignments import KernelGrader as _KG\n"
                         f"__calibcourse_grader__ = _KG({str(private / 'tests.json')!r}, "
                         f"{str(private / 'progress.json')!r})\ndel _KG\n{refusals}")], ["grader set-up"]
    for i, cell in enumerate(code):
        cells.append(new(cell.source))
        origin.append(names[i])
        if "parameters" in cell.get("metadata", {}).get("tags", []):
            cells.append(new(f'profile = "{GRADE_PROFILE}"'))
            origin.append("profile override")
        for q in qs:
            if last_def.get(q["function"]) == i:
                cells.append(new(f'__calibcourse_grader__.grade("{q["name"]}", globals())'))
                origin.append(f"grading {_exercise(q['title'])}")
    cells.append(new("__calibcourse_grader__.grade_rest(globals())"))
    origin.append("grading the questions left")
    return nbformat.v4.new_notebook(cells=cells, metadata={"kernelspec": {
        "name": "python3", "display_name": "Python 3", "language": "python"}}), origin


def run_submission(submission, private, workdir) -> dict:
    """Execute one submission (a copy of it in ``workdir``) and grade it; what happened goes
    to ``private/result.json``, the points to ``private/progress.json`` as they come."""
    import nbformat
    from nbclient import NotebookClient
    from nbclient.exceptions import DeadKernelError

    private, workdir = Path(private), Path(workdir)
    status_path = private / "status.json"
    result = {"errors": [], "truncated": False, "died": None, "read_error": None}

    def save():
        (private / "result.json.tmp").write_text(json.dumps(result))
        os.replace(private / "result.json.tmp", private / "result.json")

    try:
        nb = nbformat.read(submission, as_version=4)
    except Exception as exc:
        result["read_error"] = f"{type(exc).__name__}: {exc}"[:500]
        save()
        return result
    tests = json.loads((private / "tests.json").read_text())
    gnb, origin = _grading_notebook(nb, tests["questions"], private, tests.get("given", ()))

    class Client(NotebookClient):
        used = 0

        def output(self, outs, msg, display_id, cell_index):
            content = msg.get("content", {})
            size = len(content.get("text", "")) + sum(len(str(v)) for v in content.get("data", {}).values())
            Client.used += size
            if Client.used > OUTPUT_LIMIT and msg.get("msg_type") != "error":
                result["truncated"] = True
                return None
            return super().output(outs, msg, display_id, cell_index)

    def on_start(cell, cell_index):
        status_path.write_text(json.dumps({"where": origin[cell_index], "since": time.time()}))

    def on_executed(cell, cell_index, execute_reply):
        content = execute_reply.get("content", {})
        if content.get("status") == "error":
            result["errors"].append({"where": origin[cell_index], "ename": content.get("ename", ""),
                                     "evalue": str(content.get("evalue", ""))[:300]})
            save()

    client = Client(gnb, timeout=None, kernel_name="python3", allow_errors=True, record_timing=False,
                    resources={"metadata": {"path": str(workdir)}}, on_cell_start=on_start,
                    on_cell_executed=on_executed, shutdown_kernel="immediate")
    try:
        client.execute()
    except DeadKernelError:
        where = json.loads(status_path.read_text())["where"] if status_path.exists() else "?"
        result["died"] = f"the kernel died in {where}"
    except Exception as exc:
        result["died"] = f"{type(exc).__name__}: {exc}"[:500]
    save()
    return result


# =========================================================================== the batch (parent)
def _children_map() -> dict:
    children = {}
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                with open(f"/proc/{d}/stat") as f:
                    ppid = int(f.read().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            children.setdefault(ppid, []).append(int(d))
    return children


def _tree(pid: int) -> list[int]:
    children, out, stack = _children_map(), [], [pid]
    while stack:
        for c in children.get(stack.pop(), []):
            out.append(c)
            stack.append(c)
    return out


def _rss_bytes(pids) -> int:
    page, total = os.sysconf("SC_PAGE_SIZE"), 0
    for p in pids:
        try:
            with open(f"/proc/{p}/statm") as f:
                total += int(f.read().split()[1]) * page
        except (OSError, IndexError, ValueError):
            pass
    return total


#: seconds to wait for killed processes to exit: a safety net (a process stuck in the kernel), never
#: reached normally; a killed process with gigabytes of memory takes a moment to go
KILL_WAIT = 300.0


def _kill_tree(pid: int, itself: bool = True) -> list[int]:
    """Stop, then kill, a process (unless ``itself`` is false) and all its descendants (stopped
    processes cannot fork), then wait until every one killed has exited (a zombie counts as
    exited). Returns the pids killed that had not exited after :data:`KILL_WAIT` seconds."""
    def members():
        return ([pid] if itself else []) + _tree(pid)

    for _ in range(2):
        for p in members():
            _signal(p, signal.SIGSTOP)
    killed = members()
    handles = {p: _pidfd(p) for p in killed}  # opened before the kill: the pid cannot be reused meanwhile
    for p in killed:
        _signal(p, signal.SIGKILL)
    return _wait_exited(handles, KILL_WAIT)


def _signal(pid: int, sig):
    try:
        os.kill(pid, sig)
    except (ProcessLookupError, PermissionError):
        pass


def _pidfd(pid: int):
    """A pidfd of ``pid`` (readable once it exits), or None where it is gone or pidfds are missing."""
    try:
        return os.pidfd_open(pid)
    except (AttributeError, OSError):
        return None


def _wait_exited(handles: dict, timeout: float) -> list[int]:
    """Wait until the process of each pidfd in ``{pid: pidfd}`` has exited, ``timeout`` seconds at
    most; close the pidfds. Returns the pids still running then."""
    import select

    left, end = {fd: pid for pid, fd in handles.items() if fd is not None}, time.monotonic() + timeout
    try:
        poll = select.poll()
        for fd in left:
            poll.register(fd, select.POLLIN)
        while left and (wait := end - time.monotonic()) > 0:
            for fd, _ in poll.poll(wait * 1000):
                poll.unregister(fd)
                del left[fd]
        return sorted(left.values())
    finally:
        for fd in handles.values():
            if fd is not None:
                os.close(fd)


FILE_SIZE_LIMIT = 512 * 2**20  # bytes of one file a submission writes


def _limit_self():
    """In the grading process (inherited by its kernel): no file over FILE_SIZE_LIMIT, no core
    dumps, and orphans of the kernel stay our descendants (so that they can be killed)."""
    import resource

    resource.setrlimit(resource.RLIMIT_FSIZE, (FILE_SIZE_LIMIT, FILE_SIZE_LIMIT))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    try:
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(36, 1, 0, 0, 0)  # PR_SET_CHILD_SUBREAPER
    except Exception:  # pragma: no cover - not Linux
        pass


def _child_env(tmp: Path) -> dict:
    env = dict(os.environ)
    env["CALIBCOURSE_GRADING"] = str(tmp)  # marks every process of this submission
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT)] + [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p])
    env.update({"OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1",
                "OMP_WAIT_POLICY": "PASSIVE", "MPLBACKEND": "Agg", "CALIBCOURSE_QUIET": "1",
                "PYTHONHASHSEED": "0", "PYDEVD_DISABLE_FILE_VALIDATION": "1"})
    return env


def _rmtree(path: Path):
    def unlock(func, p, _exc):
        try:
            os.chmod(os.path.dirname(p), 0o700)
            os.chmod(p, 0o700)
            func(p)
        except OSError:
            pass
    shutil.rmtree(path, onerror=unlock)


def grade_one(submission, tests: dict, timeout: float = DEFAULT_TIMEOUT, memory_mb: int = DEFAULT_MEMORY_MB) -> dict:
    """Grade one submission in its own process and temporary folder, within ``timeout``
    seconds and ``memory_mb`` of memory. Returns ``{"scores", "cases", "status", "details", ...}``."""
    submission = Path(submission)
    tmp = Path(tempfile.mkdtemp(prefix="calibcourse-grade-"))
    private, workdir = tmp / "private", tmp / "work"
    private.mkdir()
    workdir.mkdir()
    (private / "tests.json").write_text(json.dumps(tests))
    copy = workdir / submission.name
    shutil.copy(submission, copy)
    start, status, tail = time.monotonic(), None, io.BytesIO()
    limit_start = _clock()
    proc = subprocess.Popen([sys.executable, "-m", "calibcourse.tools.assignments", "_run", str(copy), str(private),
                             str(workdir)], cwd=workdir, env=_child_env(tmp), stdin=subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True)

    def drain():  # keep the last 8 kB of what the grading process prints
        for chunk in iter(lambda: proc.stdout.read(4096), b""):
            tail.write(chunk)
            if tail.tell() > 65536:
                keep = tail.getvalue()[-8192:]
                tail.seek(0)
                tail.truncate()
                tail.write(keep)
    reader = threading.Thread(target=drain, daemon=True)
    reader.start()
    try:
        while proc.poll() is None:
            if _clock() - limit_start > timeout:
                status = f"time limit: cut after {timeout:g} s"
            elif _rss_bytes([proc.pid] + _tree(proc.pid)) > memory_mb * 2**20:
                status = f"memory limit: cut above {memory_mb} MB"
            if status:
                where = _read_json(private / "status.json").get("where")
                status += f" in {where}" if where else ""
                _kill_tree(proc.pid)
                break
            time.sleep(0.2)
        proc.wait()
        reader.join(timeout=5)
        seconds = time.monotonic() - start
        progress = _read_json(private / "progress.json")
        result = _read_json(private / "result.json")
    finally:
        if proc.poll() is None:  # never signal a reaped pid: it may belong to someone else now
            _kill_tree(proc.pid)
            proc.wait()
        _rmtree(tmp)
    details = []
    if result.get("read_error"):
        status = f"not a notebook: {result['read_error']}"
    elif status is None and not result:
        status = f"grading process failed (exit {proc.returncode}): " + \
            tail.getvalue()[-300:].decode(errors="replace").strip().replace("\n", " | ")
    elif status is None and result.get("died"):
        status = result["died"]
    for err in result.get("errors", []):
        if not err["where"].startswith("grading") and err["where"] != "grader set-up":
            details.append(f"{err['where']} raised {err['ename']}: {err['evalue']}")
        elif err["ename"]:
            details.append(f"{err['where']} failed: {err['ename']}: {err['evalue']}")
    if result.get("truncated"):
        details.append(f"output beyond {OUTPUT_LIMIT:,} characters dropped")
    missing = [q["name"] for q in tests["questions"] if q["name"] not in progress]
    if missing and status:
        details.append(f"not graded: {', '.join(missing)}")
    return {"file": submission.name, "scores": {q: progress[q]["score"] for q in progress},
            "cases": {q: progress[q]["cases"] for q in progress}, "status": status or "graded",
            "details": details, "seconds": seconds}


def _read_json(path: Path) -> dict:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return {}


def read_autograder(zip_path, questions_of=None) -> dict:
    """``{"tests": {name: source}, "questions": [...]}`` from an autograder archive (its test
    files hold the hidden tests too) and the lab's questions."""
    from otter.test_files.exception_test import ExceptionTestFile

    with zipfile.ZipFile(zip_path) as z:
        tests = {Path(n).stem: z.read(n).decode() for n in sorted(z.namelist())
                 if n.startswith("tests/") and n.endswith(".py")}
    qs = []
    for name, source in sorted(tests.items(), key=lambda kv: int(kv[0][1:]) if kv[0][1:].isdigit() else 0):
        tf = ExceptionTestFile.from_string(source, path=f"{name}.py")
        q = next((q for q in questions_of or [] if q.name == name), None)
        qs.append({"name": name, "function": q.function if q else _test_params(source),
                   "title": q.title if q else name, "possible": float(tf.possible),
                   "forbid": list(q.forbid if q else ALWAYS_FORBIDDEN)})
    return {"tests": tests, "questions": qs}


def _test_params(source: str) -> str:
    m = re.search(r"def test_\w+\((\w+)\)", source)
    return m.group(1) if m else ""


def _case_message(message: str) -> str:
    """The reason a test failed, without otter's banner and the line of the test (it would show
    the hidden test's seed)."""
    lines = [ln for ln in message.splitlines() if ln.strip() != "❌ Test case failed"]
    if lines and lines[0].startswith("Error at line"):
        lines = lines[2:]
    return "\n".join(lines)


def _feedback(row: dict, qs: list[dict], lab: str, wqs=()) -> str:
    total, possible = _total(row), sum(q["possible"] for q in qs) + sum(w.points for w in wqs)
    lines = [f"{lab}: {row['file']}", f"total: {_fmt(total)} / {_fmt(possible)}", f"status: {row['status']}", ""]
    for q in qs:
        got = row["scores"].get(q["name"])
        lines.append(f"{q['name']}, {_exercise(q['title'])}, function {q['function']}: "
                     + (f"{_fmt(got)} / {_fmt(q['possible'])}" if got is not None
                        else f"0 / {_fmt(q['possible'])}, not graded"))
        for case in row["cases"].get(q["name"], []):
            kind = "hidden test" if case["hidden"] else "public check"
            verdict = "passed" if case["passed"] else "FAILED"
            lines.append(f"  {kind} ({_fmt(case['points'])} point{'s' if case['points'] != 1 else ''}): {verdict}")
            if not case["passed"]:
                lines += ["    " + ln for ln in _case_message(case["message"]).splitlines()]
        lines.append("")
    for w in wqs:
        marks = row.get("written", {}).get(w.name, [None] * len(w.rubric))
        got = mark_of(marks)
        lines.append(f"{w.name}, question {w.number} (written): "
                     + ("not marked yet" if got is None else f"{_fmt(got)} / {_fmt(w.points)}")
                     + ("" if row.get("answers", {}).get(w.name) else " (no answer found under the question)"))
        if got is not None:
            lines += [f"  {_fmt(m)} / {_fmt(p)}  {text}" for m, (p, text) in zip(marks, w.rubric)]
        lines.append("")
    if row["details"]:
        lines += ["what else happened:"] + [f"  {d}" for d in row["details"]]
    return "\n".join(lines) + "\n"


def grade(lab: str, submissions, out_dir=None, timeout: float = DEFAULT_TIMEOUT, jobs: int = 2,
          memory_mb: int = DEFAULT_MEMORY_MB, assignments_dir=None, log=print) -> Path:
    """Grade every ``.ipynb`` of the folder ``submissions`` for ``lab``.

    Writes ``<out_dir>/<lab>.csv`` (atomically: one row per file, a column per code question with
    its points, one per written question with its mark (blank until marked), ``written``,
    ``total``, ``max_total``, ``status``, ``details``), one feedback file per submission,
    ``<out_dir>/<lab>/<name>.txt``, and the marking sheet of the written answers,
    ``<out_dir>/<lab>-written.csv`` (:mod:`calibcourse.tools.written`): the marks filled in there
    from the rubric are read by the next call, checked, and counted. The assignment is built first if it is missing
    or older than the lab's source.

    Parameters
    ----------
    lab : str
        A lab of ``notebooks/labs`` (``lab1_ece``, ...).
    submissions : path
        A folder of ``.ipynb`` files.
    out_dir : path, optional
        Default ``_build/grades``.
    timeout : float, default 120
        Wall-clock seconds per submission; a submission still running then is cut and keeps the
        points of the questions graded before.
    jobs : int, default 2
        Submissions graded at the same time.
    memory_mb : int, default 4096
        Memory of a submission's processes together; above it, it is cut.
    assignments_dir : path, optional
        Where the assignments are (default ``_build/assignments``).
    log : callable, default=print
        Called with each progress line.

    Returns
    -------
    Path
        The CSV file.

    Examples
    --------
    >>> import tempfile
    >>> grade("lab1_ece", tempfile.mkdtemp())  # doctest: +ELLIPSIS
    Traceback (most recent call last):
        ...
    ValueError: submissions: no .ipynb file in ...

    A folder of two submissions (skipped in the doctests: each runs in a fresh kernel):

    >>> grade("lab1_ece", "hand-ins/")  # doctest: +SKIP
    grading 2 submissions of lab1_ece (2 at a time, 120 s each at most)
      alice.ipynb: 12 / 16  (graded, 6.1 s)
      bob.ipynb: 4 / 16  (graded, 6.3 s)
    .../_build/grades/lab1_ece.csv written (2 rows, 6.4 s); feedback in .../_build/grades/lab1_ece
    PosixPath('.../_build/grades/lab1_ece.csv')
    """
    sources = {p.stem: p for p in lab_sources()}
    if lab not in sources:
        raise ValueError(f"lab must be one of {', '.join(sources)}; got {lab!r}")
    submissions = Path(submissions)
    if not submissions.is_dir():
        raise ValueError(f"submissions must be a folder of .ipynb files; {submissions} is not a folder")
    if not (isinstance(timeout, (int, float)) and timeout > 0):
        raise ValueError(f"timeout must be a positive number of seconds; got {timeout!r}")
    if not (isinstance(jobs, int) and jobs >= 1):
        raise ValueError(f"jobs must be a positive integer; got {jobs!r}")
    files = sorted(submissions.glob("*.ipynb"))
    if not files:
        raise ValueError(f"submissions: no .ipynb file in {submissions}")
    adir = Path(assignments_dir or ROOT / "_build" / "assignments")
    zip_path = adir / lab / f"{lab}-autograder.zip"
    if not zip_path.exists() or zip_path.stat().st_mtime < sources[lab].stat().st_mtime:
        write_assignments(adir, [lab], log=log)
    import jupytext

    lab_qs = questions(jupytext.read(sources[lab]))
    tests = read_autograder(zip_path, lab_qs)
    handed_out = zip_path.parent / "student" / f"{lab}.ipynb"
    if handed_out.exists():  # the lab's own cells, as handed out: not the student's code
        import nbformat

        fns = {q.function for q in lab_qs}
        tests["given"] = [c.source for c in nbformat.read(handed_out, as_version=4).cells
                          if c.cell_type == "code" and not fns & set(_defined_names(c.source))]
    qs = tests["questions"]
    out_dir = Path(out_dir or ROOT / "_build" / "grades")
    wqs = written_questions(jupytext.read(sources[lab]))
    sheet = out_dir / f"{lab}-written.csv"  # the written answers' marks, filled in by the instructor
    marks = read_marks(sheet, wqs) if sheet.exists() else {}
    fb_dir = out_dir / lab
    fb_dir.mkdir(parents=True, exist_ok=True)
    log(f"grading {len(files)} submissions of {lab} ({jobs} at a time, {timeout:g} s each at most)")
    start = time.monotonic()

    possible = sum(q["possible"] for q in qs) + sum(w.points for w in wqs)

    def one(path):
        row = grade_one(path, tests, timeout, memory_mb)
        row["written"] = {w.name: marks.get(path.name, {}).get(w.name, [None] * len(w.rubric)) for w in wqs}
        try:
            import nbformat

            row["answers"] = answers(nbformat.read(path, as_version=4), wqs)
        except Exception:  # not a notebook: its status says so
            row["answers"] = {w.name: "" for w in wqs}
        (fb_dir / (path.stem + ".txt")).write_text(_feedback(row, qs, lab, wqs))
        log(f"  {path.name}: {_fmt(_total(row))} / {_fmt(possible)}  ({row['status']}, {row['seconds']:.1f} s)")
        return row

    with ThreadPoolExecutor(max_workers=jobs) as pool:
        rows = list(pool.map(one, files))
    csv_path = out_dir / f"{lab}.csv"
    tmp = csv_path.with_name(csv_path.name + ".tmp")
    with open(tmp, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["file"] + [q["name"] for q in qs] + [q.name for q in wqs]
                   + ["written", "total", "max_total", "status", "details"])
        for row in rows:
            scores = [row["scores"].get(q["name"], 0.0) for q in qs]
            got = [mark_of(row["written"][q.name]) for q in wqs]
            w.writerow([row["file"]] + [_fmt(s) for s in scores] + ["" if g is None else _fmt(g) for g in got]
                       + ["" if None in got else _fmt(sum(got)), _fmt(_total(row)), _fmt(possible), row["status"],
                          "; ".join(row["details"] + ([f"written answers not marked yet: "
                                                       f"{', '.join(q.name for q, g in zip(wqs, got) if g is None)}"]
                                                      if None in got else []))])
    os.replace(tmp, csv_path)
    if wqs:
        write_sheet(sheet, wqs, {row["file"]: row["answers"] for row in rows}, marks)
    log(f"{csv_path} written ({len(rows)} rows, {time.monotonic() - start:.1f} s); feedback in {fb_dir}")
    if wqs and any(None in [mark_of(m) for m in row["written"].values()] for row in rows):
        log(f"written answers to mark: {sheet} (a row per submission, a column per rubric line of "
            f"{', '.join(q.name for q in wqs)}; fill in the marks and run the same command again)")
    return csv_path


def _total(row: dict) -> float:
    """The points of a graded row: its code questions' and those of its written answers marked on every
    rubric line."""
    marked = [mark_of(marks) for marks in row.get("written", {}).values()]
    return sum(row["scores"].values()) + sum(m for m in marked if m is not None)


# =========================================================================== command line
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
            _limit_self()
            try:
                run_submission(args.submission, args.private, args.workdir)
            finally:  # what the submission started and left running, gone before this process ends
                _kill_tree(os.getpid(), itself=False)
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
