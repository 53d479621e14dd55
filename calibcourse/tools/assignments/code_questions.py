"""A lab's graded code questions: what each asks for, what it may not use, the seed of its
hidden test."""
from __future__ import annotations

import ast
import hashlib
import re
from dataclasses import dataclass
from pathlib import Path

from calibcourse.study.course.checks import rules as _rules
from calibcourse.tools.editions import BEGIN

__all__ = ["ROOT", "GRADE_PROFILE", "DEFAULT_TIMEOUT", "DEFAULT_MEMORY_MB", "DEFAULT_SECRET", "SHORT_MODULES",
           "ALWAYS_FORBIDDEN", "Question", "forbidden_uses", "questions", "hidden_seed", "lab_sources"]

ROOT = Path(__file__).resolve().parents[3]
GRADE_PROFILE = "ci"
DEFAULT_TIMEOUT = 120  # seconds per submission
DEFAULT_MEMORY_MB = 4096  # per submission, all its processes together
DEFAULT_SECRET = "calibcourse"
_CHECK_CALL = re.compile(r"checks\.(check_\w+)\(\s*(\w+)\s*[,)]")
#: the package's modules as the labs import them (``from calibcourse.calibration import metrics``): a
#: name given to :func:`forbidden_uses` may be short, ``metrics.ece`` for ``calibcourse.calibration.metrics.ece``
SHORT_MODULES = {name: f"calibcourse.calibration.{name}" for name in
                 ("metrics", "calibrators", "plots", "binning", "stats", "synthetic")}
SHORT_MODULES.update({name: f"calibcourse.study.course.{name}" for name in ("checks", "labs")})
SHORT_MODULES["losses"] = "calibcourse.study.training.losses"
#: what no exercise may call: the study layer (the checks' reference implementations, the labs' helpers,
#: the training losses) and other calibration libraries (:data:`calibcourse.study.course.checks.rules.ALWAYS`)
ALWAYS_FORBIDDEN = _rules.ALWAYS


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
        The :mod:`calibcourse.study.course.checks` function that tests it.
    public : float
        Points of the public test (the lab's check, seed 0).
    hidden : float
        Points of the hidden test (the same check, another seed).
    title : str
        The bold title of the prompt, for the feedback.
    forbid : tuple of str
        What the function may not call, as modules and functions: its check's rules
        (:func:`calibcourse.study.course.checks.rules.rules_of`, :data:`ALWAYS_FORBIDDEN` included), which
        the check enforces on what the function calls; :func:`forbidden_uses` finds them in a
        notebook's code.
    points : float
        ``public + hidden``.

    Examples
    --------
    >>> Question("q1", "my_ece", "check_ece", 1.0, 2.0, "2. ECE").points
    3.0
    """

    name: str       # q1, q2, ... in the order of the lab
    function: str   # the function the student writes
    check: str      # the calibcourse.study.course.checks function that tests it
    public: float   # points of the public test (the lab's check, seed 0)
    hidden: float   # points of the hidden test (the same check, another seed)
    title: str      # the bold title of the prompt, for the feedback
    forbid: tuple = ALWAYS_FORBIDDEN  # what the function may not use (the library's solution)

    @property
    def points(self) -> float:
        """The question's points: public checks and hidden tests together."""
        return self.public + self.hidden


def defined_names(source: str) -> list[str]:
    """The names of the functions a cell's ``source`` defines at its top level (none if it does not parse)."""
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
    aliases = _aliases(sources, trees)
    found = []
    for i in sorted(_cells_reached(trees, function)):
        for name in _names_read(trees[i], imports):
            full = _resolve(aliases, name) if name else ""  # a chain that does not start with a name: none
            if full and any(full == f or full.startswith(f + ".") for f in forbid):
                line = f"{cell_names[i] if cell_names else f'cell {i + 1}'} uses {full}"
                if line not in found:
                    found.append(line)
    return found


def _resolve(aliases: dict, dotted: str) -> str:
    """A dotted name as the notebook's aliases make it: ``m.ece`` -> ``calibcourse.calibration.metrics.ece``."""
    head, _, rest = dotted.partition(".")
    full = aliases.get(head, head)
    return f"{full}.{rest}" if rest else full


def _aliases(sources, trees) -> dict:
    """What each alias of the notebook stands for: every cell's imports (the kernel shares them), then
    the simple assignments of the cells scanned (``m = metrics``, ``f = metrics.ece``)."""
    aliases = dict(SHORT_MODULES)
    for tree in (_parse(src) for src in sources):
        for node in ast.walk(tree) if tree else ():
            if isinstance(node, ast.Import):
                for a in node.names:
                    aliases[a.asname or a.name.split(".")[0]] = a.name if a.asname else a.name.split(".")[0]
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                for a in node.names:
                    aliases[a.asname or a.name] = f"{node.module}.{a.name}"
    for tree in trees:
        for node in tree.body if tree else ():
            if isinstance(node, ast.Assign) and _dotted(node.value):
                for t in node.targets:
                    if isinstance(t, ast.Name):
                        aliases[t.id] = _resolve(aliases, _dotted(node.value))
    return aliases


def _cells_reached(trees, function: str | None) -> set:
    """The cells that define ``function`` and, transitively, a name their code reads (every scanned
    cell where ``function`` is None)."""
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
    return seen


def _names_read(tree, imports: bool):
    """The names a cell reads, each attribute chain whole (``metrics.ece``), and with ``imports`` the
    names it imports."""
    inner = {id(n.value) for n in ast.walk(tree) if isinstance(n, ast.Attribute)}
    for node in ast.walk(tree):
        if id(node) in inner:  # a part of a longer chain: the chain is checked
            continue
        if isinstance(node, ast.Attribute):
            yield _dotted(node)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load):
            yield node.id
        elif isinstance(node, ast.Import) and imports:
            yield from (a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and imports:
            yield from (f"{node.module}.{a.name}" for a in node.names)


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
    ...     new.new_markdown_cell("**1. The ECE.** Write `my_ece(probs, labels, n_bins)`."),
    ...     new.new_code_cell("def my_ece(probs, labels, n_bins):\n    # BEGIN SOLUTION\n    ...\n"
    ...                       "    # END SOLUTION", metadata={"tags": ["exercise"], "points": [1, 2]}),
    ...     new.new_code_cell("checks.check_ece(my_ece)")])
    >>> q = questions(nb)[0]
    >>> q.name, q.function, q.check, q.points, q.title
    ('q1', 'my_ece', 'check_ece', 3.0, '1. The ECE')
    >>> q.forbid[:3]
    ('calibcourse.calibration.metrics', 'calibcourse.calibration.binning', 'calibcourse.study')
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
        names = defined_names(cell.source)
        if len(names) != 1:
            raise ValueError(f"{where}: a graded cell defines exactly one function; it defines {names}")
        fn = names[0]
        checks = [m.group(1) for c in nb.cells[i + 1:] if c.cell_type == "code"
                  for m in _CHECK_CALL.finditer(c.source) if m.group(2) == fn]
        if not checks:
            raise ValueError(f"{where}: no later cell calls checks.check_...({fn})")
        prompt = nb.cells[i - 1].source if i and nb.cells[i - 1].cell_type == "markdown" else ""
        title = re.search(r"(?m)^\*\*(.+?)\*\*", prompt)
        if "forbid" in cell.metadata:
            raise ValueError(f"{where}: forbid metadata is not read: an exercise's rules are its check's "
                             "(calibcourse.study.course.checks.rules.RULES)")
        if checks[0] not in _rules.RULES:
            raise ValueError(f"{where}: {checks[0]} has no rules in calibcourse.study.course.checks.rules.RULES")
        rules = _rules.rules_of(checks[0])
        full = tuple(dict.fromkeys([*rules.modules, *rules.functions, *ALWAYS_FORBIDDEN]))
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


def fmt_points(x: float) -> str:
    """A number of points as a grade sheet writes it: ``1``, ``0.5``, ``2.25``."""
    return f"{x:g}"


def lab_sources(root=None) -> list[Path]:
    """The labs.

    Parameters
    ----------
    root : str or path, optional
        A repository root; default: the checkout this package runs from or, for a copy installed by
        pip (``pip install .``), the lab sources installed with it (``<prefix>/share/calibcourse/labs``).

    Returns
    -------
    list of pathlib.Path
        The labs' jupytext sources, ``notebooks/labs/*.md``, sorted.

    Examples
    --------
    >>> [p.stem for p in lab_sources()]
    ['lab1_ece', 'lab2_temperature', 'lab3_binning', 'lab4_sece_focal']
    """
    if root is not None:
        return sorted((Path(root) / "notebooks" / "labs").glob("*.md"))
    if (ROOT / "notebooks" / "labs").is_dir():
        return sorted((ROOT / "notebooks" / "labs").glob("*.md"))
    return _installed_labs()


def _installed_labs() -> list[Path]:
    """The lab sources that ``pip install`` put beside the package (pyproject's ``data-files``)."""
    from importlib import metadata

    try:
        files = metadata.distribution("calibcourse").files or []
    except metadata.PackageNotFoundError:
        files = []
    found = sorted(Path(f.locate()) for f in files if f.name.endswith(".md") and f.parent.name == "labs"
                   and "share" in f.parts)
    if not found:
        raise ValueError("no lab sources: run from a checkout of the calibcourse repository, or install it with "
                         "pip install <the repository's folder>")
    return found


def exercise_label(title: str) -> str:
    """``"1. Softmax with a temperature"`` -> ``"exercise 1 (Softmax with a temperature)"``."""
    num, dot, name = title.partition(". ")
    return f"exercise {num} ({name})" if dot and num.isdigit() else f"exercise {title!r}"
