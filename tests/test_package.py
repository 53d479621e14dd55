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
def test_all_names_exist_and_private_names_stay_home(module):
    mod = importlib.import_module(f"calibcourse.{module}")
    for name in getattr(mod, "__all__", []):
        assert hasattr(mod, name), f"calibcourse.{module}.__all__ lists {name!r}, which does not exist"
    source = _path(module).read_text()
    # `M._x`, `binning._x`, ...: another module's private name (modules starting with _ are shared helpers;
    # a name two modules share, `cli`, is left out)
    last = [m.split(".")[-1] for m in MODULES]
    aliases = ({"M": "calibration.metrics", "C": "calibration.calibrators", "L": "study.training.losses"}
               | {m.split(".")[-1]: m for m in MODULES if last.count(m.split(".")[-1]) == 1})
    for alias, target in aliases.items():
        if len(alias) > 1 and not re.search(rf"(from calibcourse[\w.]* import [^\n]*\b{alias}\b|"
                                            rf"import calibcourse[\w.]*\.{alias}\b)", source):
            continue  # `choice._replace` on a variable named like a module: only an imported module counts
        for use in re.findall(rf"\b{alias}\.(_[a-z]\w*)", source):
            if target != module and not module.startswith(target + "."):
                pytest.fail(f"calibcourse.{module} uses {alias}.{use}, a private name of calibcourse.{target}")


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


#: a hand-written integer check: ``isinstance(x, bool) or not isinstance(x, int)`` and its variants
_HAND_INT = re.compile(r"isinstance\(\w+, (int|numbers\.Integral|\(int, np\.integer\))\)")


def test_integer_arguments_have_one_check():
    """Issue 38: one integer check (``check_int``), not one per module, so that ``np.int64(3)`` is an
    integer everywhere and ``True`` nowhere."""
    from calibcourse.calibration._validation import check_int

    assert _HAND_INT.search("if isinstance(folds, bool) or not isinstance(folds, (int, np.integer)) or folds < 2:")
    hand = [f"{m}: {line.strip()}" for m in MODULES for line in _path(m).read_text().splitlines()
            if _HAND_INT.search(line) and not m.endswith("_validation")]
    assert not hand, "\n".join(hand)
    import numpy as np

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
