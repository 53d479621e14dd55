"""The package as a whole: no import circle, public names that exist, private names kept home."""
import ast
import importlib
import inspect
import re
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "calibcourse"
LAYERS = ("calibration", "study", "tools")


def _name(path: Path) -> str:
    """``calibration/metrics/binned.py`` -> ``calibration.metrics.binned``; a sub-package's ``__init__.py``
    is the sub-package (``calibration.metrics``)."""
    parts = path.relative_to(PACKAGE).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


#: every module of the three layers, as ``layer.module``, and of their sub-packages (``layer.package`` for
#: its ``__init__``, ``layer.package.module``)
MODULES = sorted(_name(p) for layer in LAYERS for p in (PACKAGE / layer).rglob("*.py")
                 if p.name != "__main__.py" and p != PACKAGE / layer / "__init__.py")


def _path(module: str) -> Path:
    base = PACKAGE / module.replace(".", "/")
    return base / "__init__.py" if base.is_dir() else base.with_suffix(".py")


def _imports(module: str) -> set[str]:
    """The calibcourse modules (``layer.module``) ``module`` imports anywhere (top level or inside a function)."""
    layer = module.split(".")[0]
    tree = ast.parse(_path(module).read_text())
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            if node.level == 1:  # from . import x / from .x import y
                found.update([f"{layer}.{node.module}"] if node.module else [f"{layer}.{a.name}" for a in node.names])
            elif node.module and node.module.startswith("calibcourse."):
                base = node.module.split(".", 1)[1]
                found.add(base)
                found.update(f"{base}.{a.name}" for a in node.names)  # from calibcourse.study.runs import cache
        elif isinstance(node, ast.Import):
            found.update(a.name.split(".", 1)[1] for a in node.names if a.name.startswith("calibcourse."))
    return found & set(MODULES)


def test_every_module_sits_in_a_layer():
    # the layers are the package: nothing beside them but the package's entry points
    assert sorted(p.name for p in PACKAGE.glob("*.py")) == ["__init__.py", "__main__.py"]


def test_the_package_has_no_import_circle():
    graph = {m: _imports(m) for m in MODULES}
    assert graph["study.runs.cache"] & {"study.runs.experiments", "tools.cli", "study.runs.labels"} == set(), (
        "the store knows nothing of the registry"
    )
    done, path = set(), []

    def visit(m):
        if m in path:
            cycle = path[path.index(m):] + [m]
            pytest.fail("import circle: " + " -> ".join(cycle))
        if m in done:
            return
        path.append(m)
        for n in sorted(graph[m]):
            visit(n)
        path.pop()
        done.add(m)

    for m in MODULES:
        visit(m)


def test_import_circle_detection_sees_function_level_imports(tmp_path):
    # the check above must not be blind to `from .x import y` inside a function
    assert "study.runs.cache" in _imports("study.runs.experiments.registry")
    assert "study.runs.experiments" in _imports("tools.cli")


@pytest.mark.parametrize("module", MODULES)
def test_all_names_exist(module):
    mod = importlib.import_module(f"calibcourse.{module}")
    for name in getattr(mod, "__all__", []):
        assert hasattr(mod, name), f"calibcourse.{module}.__all__ lists {name!r}, which does not exist"


def _private(name: str) -> bool:
    return name.startswith("_") and not name.endswith("__")


def _package_of(module: str) -> str:
    """The package a module sits in: ``calibration.metrics`` for ``calibration.metrics.binned`` and for the
    sub-package ``calibration.metrics`` itself (its ``__init__``)."""
    return module if _path(module).name == "__init__.py" else module.rpartition(".")[0]


def _may_use(user: str, owner: str) -> bool:
    """Whether module ``user`` may use a private name defined in module ``owner`` (both ``layer.module``).

    A private name stays in its module, except that a module whose name starts with ``_`` (``_core``,
    ``_base``, ``_engine``) and a package's ``__init__`` hold what their package shares: every module of
    that package (and of its sub-packages) may use their private names."""
    if user == owner:
        return True
    shared = _path(owner).name == "__init__.py" or _private(owner.rpartition(".")[2])
    home = _package_of(owner)
    return shared and (user == home or user.startswith(home + "."))


def _import_base(module: str, node: ast.ImportFrom):
    """The ``layer.module`` a ``from ... import`` of ``module`` reads (relative ones resolved); None
    outside calibcourse, "" for ``from calibcourse import x``."""
    base = node.module or ""
    if node.level:  # from . import x / from .x import y
        package = _package_of(module).split(".")
        return ".".join(package[: len(package) - node.level + 1] + ([base] if base else []))
    if base == "calibcourse" or base.startswith("calibcourse."):
        return base.partition(".")[2]
    return None


def _private_uses(module: str, tree: ast.AST):
    """``(line, owner, name)`` for every private name of another calibcourse module that ``module`` imports
    (``from calibcourse.x import _y``) or reads off an imported module (``x._y``, ``calibcourse.x._y``). A
    private module itself (``_validation``) may be named: its public names are the package's to share
    (``check_int``); its private ones are checked like any other's."""
    bound = {}  # local name -> the calibcourse module it is bound to
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and (base := _import_base(module, node)) is not None:
            for a in node.names:
                sub = f"{base}.{a.name}" if base else a.name
                if sub in MODULES:
                    bound[a.asname or a.name] = sub
                elif _private(a.name) and base in MODULES:
                    yield node.lineno, base, a.name
        elif isinstance(node, ast.Import):
            for a in node.names:
                if a.name.startswith("calibcourse."):
                    bound[a.asname or "calibcourse"] = a.name.partition(".")[2] if a.asname else ""
    yield from _private_attribute_reads(tree, bound)


def _private_attribute_reads(tree: ast.AST, bound: dict):
    """``(line, owner, name)`` of each ``x._y`` (or ``x.sub._y``) where ``x`` is bound to a calibcourse module."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and _private(node.attr):
            chain, base = [], node.value
            while isinstance(base, ast.Attribute):
                chain.append(base.attr)
                base = base.value
            if isinstance(base, ast.Name) and base.id in bound:
                target = ".".join(p for p in [bound[base.id], *reversed(chain)] if p)
                if target in MODULES and f"{target}.{node.attr}" not in MODULES:
                    yield node.lineno, target, node.attr


def _private_crossings(module: str) -> dict:
    """``{(module, owner, name): where}`` for each private name ``module`` takes from a module it may not."""
    tree = ast.parse(_path(module).read_text())
    return {(module, owner, name): f"calibcourse.{module}:{line} uses {name}, a private name of calibcourse.{owner}"
            for line, owner, name in _private_uses(module, tree) if not _may_use(module, owner)}


def test_private_names_stay_home():
    """CONTRIBUTING: a private name (``_x``) stays in its module; a package's ``_``-modules and its
    ``__init__`` hold what its modules share. The AST sees every form: imported, read off a module,
    a module bound by ``import ... as``."""
    crossings = {}
    for m in MODULES:
        crossings |= _private_crossings(m)
    assert not crossings, "\n".join(where for _, where in sorted(crossings.items()))


def test_the_private_name_check_sees_every_form(tmp_path, monkeypatch):
    """The check finds ``from x import _y``, ``x._y`` on an imported module (also under another name and
    through a chain), and lets siblings share through a ``_`` module."""
    source = ("from calibcourse.calibration.report.choice import _choose, VIEWS\n"
              "from calibcourse.calibration.report import choice as c\n"
              "from calibcourse.calibration import metrics\n"
              "from calibcourse.calibration.metrics._core import _prepare\n"
              "from calibcourse.calibration._validation import check_int\n"
              "from calibcourse.calibration import _validation as V\n"
              "def f(x):\n    return c._view(x), metrics.binned._x, x._private, V._torch_view(x), V.checked()\n")
    uses = {(owner, name) for _, owner, name in _private_uses("study.course.notebook", ast.parse(source))}
    assert uses == {("calibration.report.choice", "_choose"), ("calibration.report.choice", "_view"),
                    ("calibration.metrics.binned", "_x"), ("calibration.metrics._core", "_prepare"),
                    ("calibration._validation", "_torch_view")}
    assert _may_use("calibration.metrics.binned", "calibration.metrics._core")
    assert _may_use("calibration.metrics.binned", "calibration.metrics")
    assert not _may_use("calibration.report.page", "calibration.report.choice")
    assert not _may_use("study.course.labs", "study.course.checks._harness")


#: Modules whose public API is documented numpydoc-style; a module joins when it is.
#: every public module: a new module is documented by being added
DOCUMENTED = [m for m in MODULES if not any(part.startswith("_") for part in m.split(".")[1:])]


def _public_callables(module):
    mod = importlib.import_module(f"calibcourse.{module}")
    for name in mod.__all__:
        obj = getattr(mod, name)
        if (inspect.isfunction(obj) or inspect.isclass(obj)):
            yield name, obj


@pytest.mark.parametrize("module", DOCUMENTED)
def test_public_api_has_numpydoc_sections_and_examples(module):
    missing = []
    for name, obj in _public_callables(module):
        doc = inspect.getdoc(obj) or ""
        if inspect.isclass(obj) and issubclass(obj, Exception):
            assert doc, f"{name}: a docstring"
            continue
        takes = [p for p in inspect.signature(obj).parameters if p not in ("self", "args", "kwargs")]
        sections = (["Parameters"] if takes else []) + ([] if inspect.isclass(obj) else ["Returns"]) + ["Examples"]
        for section in sections:
            alternative = "Attributes" if section == "Parameters" and inspect.isclass(obj) else section
            if not re.search(rf"^({section}|{alternative})\n-+$", doc, re.M):
                missing.append(f"{name}: {section}")
        for meth in ("fit", "predict_proba"):
            if inspect.isclass(obj) and hasattr(obj, meth):
                mdoc = inspect.getdoc(getattr(obj, meth)) or ""
                missing += [f"{name}.{meth}: {s}" for s in ("Parameters", "Returns") if f"\n{s}\n" not in mdoc]
    assert not missing, f"calibcourse.{module}: missing numpydoc sections: {missing}"
    assert inspect.getdoc(importlib.import_module(f"calibcourse.{module}")), "a module docstring"


_INTEGER_TYPES = {"int", "Integral", "integer", "signedinteger", "unsignedinteger"}
_NUMBER_TYPES = {"float", "Real", "Number", "number", "floating", "complex"}


def _type_names(node: ast.AST) -> set:
    """The names of the types an ``isinstance`` or ``type(x) is`` test names: ``int``, ``np.integer``, ..."""
    if isinstance(node, ast.Tuple):
        return set().union(*(_type_names(e) for e in node.elts))
    if isinstance(node, ast.Name):
        return {node.id}
    if isinstance(node, ast.Attribute):
        return {node.attr}
    return set()


def _hand_integer_checks(tree: ast.AST):
    """``(line, text)`` of every test that a value is an integer written by hand: ``isinstance(x, int)``
    (any argument: a name, ``cfg["epochs"]``, ``args.n``), ``isinstance(x, (int, np.integer))``,
    ``isinstance(x, numbers.Integral)`` and ``type(x) is int``. A test for a number
    (``isinstance(x, (int, float))``) is not one."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "isinstance" \
                and len(node.args) == 2:
            names = _type_names(node.args[1])
        elif isinstance(node, ast.Compare) and isinstance(node.left, ast.Call) \
                and isinstance(node.left.func, ast.Name) and node.left.func.id == "type":
            names = set().union(*(_type_names(c) for c in node.comparators))
        else:
            continue
        if names & _INTEGER_TYPES and not names & _NUMBER_TYPES:
            yield node.lineno, ast.unparse(node)


def test_integer_arguments_have_one_check():
    """Issue 38: one integer check (``check_int``), not one per module, so that ``np.int64(3)`` is an
    integer everywhere and ``True`` nowhere; the AST sees a subscripted or an attribute argument too."""
    found = lambda src: [text for _, text in _hand_integer_checks(ast.parse(src))]  # noqa: E731
    assert found("if isinstance(folds, bool) or not isinstance(folds, (int, np.integer)) or folds < 2: pass") == [
        "isinstance(folds, (int, np.integer))"]
    assert found("ok = isinstance(cfg['epochs'], int) and type(args.n) is int and isinstance(k, numbers.Integral)"
                 ) == ["isinstance(cfg['epochs'], int)", "type(args.n) is int", "isinstance(k, numbers.Integral)"]
    assert found("ok = isinstance(v, (int, float)) and isinstance(b, bool)") == []
    hand = [f"calibcourse.{m}:{line}: {text}" for m in MODULES if not m.endswith("._validation")
            for line, text in _hand_integer_checks(ast.parse(_path(m).read_text()))]
    assert not hand, "use calibcourse.calibration._validation.check_int:\n" + "\n".join(hand)
    import numpy as np

    from calibcourse.calibration._validation import check_int

    assert check_int(np.int64(3), "k", low=2) == 3 and check_int(np.uint8(0), "k") == 0
    for bad in (True, np.bool_(True), 3.0, "3", None, 1):
        with pytest.raises(ValueError, match=r"^k must be an integer >= 2; got "):
            check_int(bad, "k", low=2)


#: a chapter number in an identifier: ``CH5_METHODS``, ``_chapter3``, ``ch5_val_part``, ``ch6``
_CHAPTER_NUMBER = re.compile(r"(?:^|_)(?:ch|chapter)_?\d", re.I)


def _identifiers(tree: ast.AST):
    """Every name a module binds or reads: functions, classes, arguments, variables, attributes, keyword
    arguments, imported names and the modules they come from, with the line of each."""
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            yield node.name, node.lineno
        elif isinstance(node, ast.Name):
            yield node.id, node.lineno
        elif isinstance(node, ast.Attribute):
            yield node.attr, node.lineno
        elif isinstance(node, ast.arg):
            yield node.arg, node.lineno
        elif isinstance(node, ast.keyword) and node.arg:
            yield node.arg, node.value.lineno
        elif isinstance(node, ast.alias):
            yield from ((part, node.lineno) for part in [*node.name.split("."), node.asname] if part)
        elif isinstance(node, ast.ImportFrom) and node.module:
            yield from ((part, node.lineno) for part in node.module.split("."))


def test_no_identifier_names_a_chapter():
    """Names say what a thing is, not which chapter uses it (issue 50): a chapter moves and every name
    would lie. Run names, claim ids and glue keys are strings (the public contract) and keep theirs."""
    found = [f"{p.relative_to(PACKAGE.parent)}: the module's name" for p in PACKAGE.rglob("*.py")
             if _CHAPTER_NUMBER.search(p.stem)]
    for p in sorted(PACKAGE.rglob("*.py")):
        found += [f"{p.relative_to(PACKAGE.parent)}:{line}: {name}"
                  for name, line in _identifiers(ast.parse(p.read_text())) if _CHAPTER_NUMBER.search(name)]
    assert not found, "identifiers with a chapter number:\n" + "\n".join(found)


def test_the_chapter_number_check_sees_every_kind_of_name():
    source = ("from calibcourse.study.ch5 import CH5_METHODS as m\nimport calibcourse.chapter3\n"
              "def _chapter3(ch5_val_part):\n    return x.ch6_data(chapter1=1)\nclass Ch4Table: pass\n")
    names = {n for n, _ in _identifiers(ast.parse(source)) if _CHAPTER_NUMBER.search(n)}
    assert names == {"ch5", "CH5_METHODS", "chapter3", "_chapter3", "ch5_val_part", "ch6_data", "chapter1",
                     "Ch4Table"}
    assert not any(_CHAPTER_NUMBER.search(n) for n in ("batch2", "epoch5", "lab3", "nine1d_runs", "mnist1d", "ch_x"))
