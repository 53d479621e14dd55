"""What decides a training run's last bits, in one place: the thread policy and the run's provenance.

A CPU run's outputs depend on more than its config. How a sum is split over threads changes
its last bits, and training amplifies them: the same config trained with 1 and with 2 torch
threads ends with logits that differ by about 1e-3 after a few epochs (chapter 2's MLPs).
The CPU's vector instructions (``torch.backends.cpu.get_cpu_capability()``: AVX2, AVX512, or
``DEFAULT`` under ``ATEN_CPU_CAPABILITY=default``) and the library versions do the same.
torch does not promise bit-identical results across CPUs, so the study promises two things:

* **the bits**, where a run's provenance is the machine's: the same config, code, torch,
  thread count, CPU capability and device give byte-identical outputs;
* **the numbers and the verdicts**, everywhere else: the metrics the book prints agree at
  the precision printed (``tests/test_cache.py``) and ``make reproduce`` recomputes the claims
  ledger from runs retrained on the reader's machine and lists every verdict that changed
  (:mod:`calibcourse.tools.reproduce`).

The thread policy: a run trains with :data:`DEFAULT_THREADS` (1) torch threads unless the
caller passes ``threads=`` explicitly (:func:`calibcourse.study.train.train`, the cache's
``get_or_train``, the run grid's executors and ``make train THREADS=n`` all take the same
argument and hand it down; nothing reads it from the environment). Parallelism comes from
running several runs at once (``make train EXECUTOR=local JOBS=2``), never from threads
inside one, so an entry is the same whichever executor wrote it. Every cache manifest records
:func:`current` as ``provenance`` (introduced for chapter 2's sweeps, used by every chapter
that trains).
"""
from __future__ import annotations

import ast
import hashlib
import platform
from functools import lru_cache
from pathlib import Path

__all__ = ["DEFAULT_THREADS", "KEYS", "resolve_threads", "code_fingerprint", "code_modules", "current",
           "differences"]

#: torch's intra-op threads of a run unless the caller says otherwise
DEFAULT_THREADS = 1
#: the provenance fields that decide a run's bits (compared by :func:`differences`)
KEYS = ("torch", "threads", "cpu_capability", "device", "code")
#: the module whose execution is a training run: the fingerprint covers it and every module
#: of the package it imports (at module level or inside a function)
TRAINING_ENTRY = "calibcourse.study.train"


def resolve_threads(threads=None) -> int:
    """The torch threads a run trains with: ``threads``, or :data:`DEFAULT_THREADS` when None.

    Parameters
    ----------
    threads : int or None, default=None
        An explicit count (at least 1), or None for the default.

    Returns
    -------
    int

    Examples
    --------
    >>> resolve_threads(), resolve_threads(4)
    (1, 4)
    >>> resolve_threads(0)
    Traceback (most recent call last):
        ...
    ValueError: threads must be an integer >= 1 or None; got 0
    """
    if threads is None:
        return DEFAULT_THREADS
    if isinstance(threads, bool) or not isinstance(threads, int) or threads < 1:
        raise ValueError(f"threads must be an integer >= 1 or None; got {threads!r}")
    return threads


def _package_dir() -> Path:
    return Path(__file__).resolve().parents[1]


def _module_file(name: str) -> Path | None:
    """The source file of package module ``name`` (``calibcourse.x`` or ``calibcourse.x.y``), or None."""
    parts = name.split(".")[1:]
    base = _package_dir().joinpath(*parts)
    for candidate in (base.with_suffix(".py"), base / "__init__.py"):
        if candidate.is_file():
            return candidate
    return None


def _imports(name: str, tree: ast.AST) -> set[str]:
    """The package modules that module ``name`` imports anywhere in its source, except inside a
    module-level ``__getattr__`` (PEP 562: it runs only when a caller asks for that attribute, as
    ``calibcourse.calibration.load`` does; a training run never does)."""
    found = set()
    package = name if _module_file(name) and _module_file(name).name == "__init__.py" else name.rsplit(".", 1)[0]
    lazy = {id(n) for top in getattr(tree, "body", []) if isinstance(top, ast.FunctionDef) and top.name == "__getattr__"
            for n in ast.walk(top)}
    for node in ast.walk(tree):
        if id(node) in lazy:
            continue
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names if a.name.split(".")[0] == "calibcourse"}
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - (node.level - 1)]
                mod = ".".join(base + ([node.module] if node.module else []))
            else:
                mod = node.module or ""
            if mod.split(".")[0] != "calibcourse":
                continue
            found.add(mod)
            for alias in node.names:  # `from . import meta` imports a module
                if _module_file(f"{mod}.{alias.name}"):
                    found.add(f"{mod}.{alias.name}")
    return {m for m in found if _module_file(m)}


def _strip_docstrings(tree: ast.AST) -> ast.AST:
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(getattr(body[0], "value", None), ast.Constant) \
                    and isinstance(body[0].value.value, str):
                node.body = body[1:] or [ast.Pass()]
    return tree


@lru_cache(maxsize=None)
def code_modules(entry: str = TRAINING_ENTRY) -> dict:
    """The fingerprint of every package module a training run executes, by module name.

    The modules are ``entry`` and every module of the package it imports, transitively
    (imports inside functions included). A module's fingerprint is the sha256 of its code
    with docstrings and comments removed (``ast.unparse``), so a reworded docstring does
    not make a cache entry stale; 12 hex digits.

    Parameters
    ----------
    entry : str, default="calibcourse.study.train"
        The module where a run starts.

    Returns
    -------
    dict of str to str
        ``{module: fingerprint}``, sorted by module name.

    Examples
    --------
    >>> mods = code_modules()
    >>> "calibcourse.study.train" in mods and "calibcourse.study.models" in mods and "calibcourse.tools.build" not in mods
    True
    """
    if _module_file(entry) is None:
        raise ValueError(f"entry must name a module of the package; got {entry!r}")
    seen, todo, trees = set(), [entry], {}
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        trees[name] = ast.parse(_module_file(name).read_text())
        todo.extend(_imports(name, trees[name]) - seen)
    return {name: hashlib.sha256(ast.unparse(_strip_docstrings(trees[name])).encode()).hexdigest()[:12]
            for name in sorted(trees)}


def code_fingerprint(entry: str = TRAINING_ENTRY) -> str:
    """One fingerprint of the training code: the sha256 of :func:`code_modules`, 16 hex digits.

    Parameters
    ----------
    entry : str, default="calibcourse.study.train"
        The module where a run starts.

    Returns
    -------
    str

    Examples
    --------
    >>> len(code_fingerprint()), code_fingerprint() == code_fingerprint()
    (16, True)
    """
    mods = code_modules(entry)
    return hashlib.sha256("\n".join(f"{k} {v}" for k, v in mods.items()).encode()).hexdigest()[:16]


def _cpu_name() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:  # pragma: no cover (not Linux)
        pass
    return platform.processor() or platform.machine()


def current(threads=None, device="cpu") -> dict:
    """The provenance of a run trained here now with ``threads`` threads on ``device``.

    Parameters
    ----------
    threads : int or None, default=None
        The torch threads of the run (:func:`resolve_threads`).
    device : str or torch.device, default="cpu"
        The device it trains on.

    Returns
    -------
    dict
        ``torch`` (version), ``threads``, ``cpu_capability``
        (``torch.backends.cpu.get_cpu_capability()``), ``device`` (with the GPU's name on CUDA),
        ``code`` (:func:`code_fingerprint`), and for the reader: ``code_modules``
        (:func:`code_modules`), ``python``, ``numpy``, ``machine`` and ``cpu`` (the processor's
        model name).

    Examples
    --------
    >>> p = current(threads=1)
    >>> [p[k] for k in ("threads", "device")], p["code"] == code_fingerprint()
    ([1, 'cpu'], True)
    >>> set(KEYS) <= set(p)
    True
    """
    import numpy as np
    import torch

    dev = torch.device(device)
    name = str(dev)
    if dev.type == "cuda":
        name = f"{dev} ({torch.cuda.get_device_name(dev)})"
    return {"torch": torch.__version__, "threads": resolve_threads(threads),
            "cpu_capability": torch.backends.cpu.get_cpu_capability(), "device": name,
            "code": code_fingerprint(), "code_modules": code_modules(), "python": platform.python_version(),
            "numpy": np.__version__, "machine": platform.machine(), "cpu": _cpu_name()}


def differences(recorded: dict | None, here: dict) -> dict:
    """The fields of :data:`KEYS` in which two provenances differ.

    Parameters
    ----------
    recorded : dict or None
        A run's provenance (a cache manifest's ``provenance``); None or ``{}`` for an entry
        that recorded none (every field then differs).
    here : dict
        Another one, e.g. :func:`current`.

    Returns
    -------
    dict of str to (object, object)
        ``{field: (recorded, here)}``; empty when the bits are expected to be the same.

    Examples
    --------
    >>> a = {"torch": "2.14.1", "threads": 1, "cpu_capability": "AVX512", "device": "cpu", "code": "ab"}
    >>> differences(a, {**a, "cpu_capability": "DEFAULT"})
    {'cpu_capability': ('AVX512', 'DEFAULT')}
    >>> differences(a, dict(a))
    {}
    """
    recorded = recorded or {}
    return {k: (recorded.get(k), here.get(k)) for k in KEYS if recorded.get(k) != here.get(k)}
