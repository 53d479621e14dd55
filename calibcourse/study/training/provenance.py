"""What decides a training run's last bits, in one place: the thread policy and the run's provenance.

A CPU run's outputs depend on more than its config. How a sum is split over threads changes
its last bits, and training amplifies them: the same config trained with 1 and with 2 torch
threads ends with logits that differ by about 1e-3 after a few epochs (chapter 2's MLPs).
The CPU's vector instructions (``torch.backends.cpu.get_cpu_capability()``: AVX2, AVX512, or
``DEFAULT`` under ``ATEN_CPU_CAPABILITY=default``) and the library versions do the same.
torch does not promise bit-identical results across CPUs, and training for tens of epochs is
chaotic: which runs a last-bit difference turns into a visible one depends on the CPU. So the
study promises two things:

* **the bits**, where a run's provenance is the machine's and the CPU is of the kind that
  trained it (:func:`cpu_kind`): the same config, code, torch, thread count, CPU capability,
  numerics mode and device give byte-identical outputs. The *pinned* numerics mode
  (:data:`PINNED_ENV`, :func:`pinned_environ`: torch's portable ``DEFAULT`` kernels, MKL's
  conditional-numerical-reproducibility code path, oneDNN off, one thread) removes most of the
  CPU's choices, but not all: MKL's vector math (the square root of every Adam step) still
  follows the processor, so a pinned run's bits are **not** the same across CPU kinds. Of the
  77 pinned ``ci`` runs trained on an AMD family 26 model 2, 15 came back bit for bit on an
  Intel family 6 model 207 (the contributors' guide records every CPU kind measured). The
  ``ci`` profile's committed entries are pinned, and ``tests/test_cache.py`` demands their
  bits on a CPU of their kind only (:mod:`calibcourse.tools.retrained`);
* **the verdicts**, everywhere: ``make reproduce`` recomputes the claims ledger from runs
  retrained on the reader's machine and lists every verdict that changed
  (:mod:`calibcourse.tools.reproduce`).

The thread policy: a run trains with :data:`DEFAULT_THREADS` (1) torch threads unless the
caller passes ``threads=`` explicitly (:func:`calibcourse.study.training.train.train`, the cache's
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
import os
import platform
from functools import lru_cache
from pathlib import Path

from calibcourse.calibration._validation import check_int

__all__ = ["DEFAULT_THREADS", "KEYS", "TOOLKIT_TRAINING_CODE", "PINNED_ENV", "PINNED_PROFILES", "CPU_KIND_ENV",
           "resolve_threads", "pinned_environ", "numerics", "cpu_kind", "describe", "code_fingerprint", "code_modules",
           "current", "differences"]

#: torch's intra-op threads of a run unless the caller says otherwise
DEFAULT_THREADS = 1
#: the provenance fields that decide a run's bits (compared by :func:`differences`)
KEYS = ("torch", "threads", "cpu_capability", "numerics", "device", "code")
#: the module whose execution is a training run: the fingerprint covers it and the training
#: modules it imports (at module level or inside a function): :func:`code_modules`
TRAINING_ENTRY = "calibcourse.study.training.train"
#: The environment of the *pinned* numerics mode. It must be set before torch is imported (torch
#: reads its kernel set, MKL and oneDNN their code paths, once), so a pinned run trains in a
#: process started with it (:func:`pinned_environ`); :func:`calibcourse.study.training.train.train` also
#: turns oneDNN off for the run (its kernels choose their blocking by the CPU's cache sizes).
#:
#: * ``ATEN_CPU_CAPABILITY=default``: torch's portable kernels, no AVX2 or AVX-512 lanes that
#:   split a sum differently (the libraries torch calls still look at the CPU: the bits of a
#:   pinned run are its CPU kind's, :func:`cpu_kind`);
#: * ``MKL_CBWR=COMPATIBLE``: MKL's conditional numerical reproducibility, which asks for one
#:   code path on Intel and AMD processors (matrix products, the convolutions' GEMMs; its
#:   vector math, torch's ``sqrt``, still rounds by the CPU);
#: * ``ONEDNN_MAX_CPU_ISA=SSE41``: oneDNN held to a baseline instruction set, should any kernel
#:   reach it;
#: * one OpenMP and MKL thread, and no GPU.
PINNED_ENV = {"ATEN_CPU_CAPABILITY": "default", "MKL_CBWR": "COMPATIBLE", "ONEDNN_MAX_CPU_ISA": "SSE41",
              "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", "CUDA_VISIBLE_DEVICES": ""}
#: the profiles whose runs train under the pinned numerics (their entries are what the tests
#: retrain and compare: bit for bit on a CPU of the entry's kind, without a numeric verdict elsewhere)
PINNED_PROFILES = ("ci",)
#: the environment variable that, set, replaces the CPU kind this machine reports (:func:`cpu_kind`)
CPU_KIND_ENV = "CALIBCOURSE_CPU_KIND"


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
    ValueError: threads must be an integer >= 1; got 0
    """
    if threads is None:
        return DEFAULT_THREADS
    check_int(threads, "threads", low=1)
    return threads


def pinned_environ(base=None) -> dict:
    """An environment for a process that trains under the pinned numerics mode.

    Parameters
    ----------
    base : mapping, optional
        The environment to start from (default ``os.environ``).

    Returns
    -------
    dict
        ``base`` with :data:`PINNED_ENV` set.

    Examples
    --------
    >>> env = pinned_environ({"PATH": "/bin", "ATEN_CPU_CAPABILITY": "avx2"})
    >>> env["ATEN_CPU_CAPABILITY"], env["MKL_CBWR"], env["PATH"]
    ('default', 'COMPATIBLE', '/bin')
    """
    return {**(os.environ if base is None else base), **PINNED_ENV}


def numerics(threads=None) -> str:
    """The numerics mode of a run trained in this process now with ``threads`` threads.

    ``"pinned"`` when this process was started with :data:`PINNED_ENV` (and torch runs its
    portable kernels) and the run uses one thread; ``"native"`` otherwise: the CPU's own kernels,
    whose bits are this machine's.

    Parameters
    ----------
    threads : int or None, default=None
        The torch threads of the run (:func:`resolve_threads`).

    Returns
    -------
    str
        ``"pinned"`` or ``"native"``.

    Examples
    --------
    >>> import os
    >>> numerics() == ("pinned" if all(os.environ.get(k) == v for k, v in PINNED_ENV.items()) else "native")
    True
    >>> numerics(threads=2)
    'native'
    """
    if resolve_threads(threads) != 1 or any(os.environ.get(k) != v for k, v in PINNED_ENV.items()):
        return "native"
    import torch

    return "pinned" if torch.backends.cpu.get_cpu_capability() == "DEFAULT" else "native"


def _package_dir() -> Path:
    return Path(__file__).resolve().parents[2]


def _module_file(name: str, root: Path | None = None) -> Path | None:
    """The source file of package module ``name`` (``calibcourse.x`` or ``calibcourse.x.y``), or None;
    ``root``: another copy of the package's folder (default this one's)."""
    parts = name.split(".")[1:]
    base = (root or _package_dir()).joinpath(*parts)
    for candidate in (base.with_suffix(".py"), base / "__init__.py"):
        if candidate.is_file():
            return candidate
    return None


def _imports(name: str, tree: ast.AST, root: Path | None = None) -> set[str]:
    """The package modules that module ``name`` imports anywhere in its source, except inside a
    module-level ``__getattr__`` (PEP 562: it runs only when a caller asks for that attribute, as
    ``calibcourse.calibration.load`` does; a training run never does)."""
    found = set()
    own = _module_file(name, root)
    package = name if own and own.name == "__init__.py" else name.rsplit(".", 1)[0]
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
                if _module_file(f"{mod}.{alias.name}", root):
                    found.add(f"{mod}.{alias.name}")
    return {m for m in found if _module_file(m, root)}


def _strip_docstrings(tree: ast.AST) -> ast.AST:
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(getattr(body[0], "value", None), ast.Constant) \
                    and isinstance(body[0].value.value, str):
                node.body = body[1:] or [ast.Pass()]
    return tree


def code_modules(entry: str = TRAINING_ENTRY, root=None) -> dict:
    """The fingerprint of the training code a run executes, by module name.

    The modules are ``entry`` and the modules of ``calibcourse.study.training`` it imports,
    transitively (imports inside functions included), with the toolkit's folds
    (:data:`TOOLKIT_TRAINING_CODE`: which samples each cross-fitted network trains on): the code
    that decides a run's weights and outputs. Left out are this module (it records the run, it
    does not train it) and the rest of the toolkit's numpy code that a run calls (softmax, the
    temperature fit of cross-fitting, the ECE of the history): a change there, a validation
    refactor say, moves no trained weight, the toolkit's tests compare its numbers with
    scikit-learn's and torchmetrics', and a change that did move
    an output would fail the bit-for-bit test of the pinned ``ci`` entries on a CPU of their
    kind (``tests/test_cache.py``). A module's fingerprint is the sha256 of its code with docstrings
    and comments removed (``ast.unparse``), so a reworded docstring does not make a cache entry
    stale; 12 hex digits.

    Parameters
    ----------
    entry : str, default="calibcourse.study.training.train"
        The module where a run starts.
    root : str or path-like, optional
        Another copy of the package's folder, e.g. an older commit's ``calibcourse/`` (default:
        this one's); ``make restamp`` reads the history with it.

    Returns
    -------
    dict of str to str
        ``{module: fingerprint}``, sorted by module name.

    Examples
    --------
    >>> mods = code_modules()
    >>> ("calibcourse.study.training.train" in mods and "calibcourse.study.training.models" in mods
    ...  and "calibcourse.tools.build" not in mods)
    True
    >>> "calibcourse.study.training.losses" in mods, "calibcourse.calibration.metrics" in mods
    (True, False)
    """
    return _code_modules(entry) if root is None else _code_modules.__wrapped__(entry, Path(root))


@lru_cache(maxsize=None)
def _code_modules(entry: str, root: Path | None = None) -> dict:
    """:func:`code_modules`; this checkout's once per process (another folder's is read each time)."""
    if _module_file(entry, root) is None:
        raise ValueError(f"entry must name a module of the package; got {entry!r}")
    seen, todo, trees = set(), [entry], {}
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        trees[name] = ast.parse(_module_file(name, root).read_text())
        todo.extend(_imports(name, trees[name], root) - seen)
    return {name: hashlib.sha256(ast.unparse(_strip_docstrings(trees[name])).encode()).hexdigest()[:12]
            for name in sorted(trees) if _is_training_code(name)}


#: the toolkit's modules that decide a run's weights: the folds a cross-fitted run's networks train on
TOOLKIT_TRAINING_CODE = ("calibcourse.calibration.folds",)


def _is_training_code(name: str) -> bool:
    return name in TOOLKIT_TRAINING_CODE or (name.startswith("calibcourse.study.training.")
                                             and name != "calibcourse.study.training.provenance")


def code_fingerprint(entry: str = TRAINING_ENTRY, root=None) -> str:
    """One fingerprint of the training code: the sha256 of :func:`code_modules`, 16 hex digits.

    Parameters
    ----------
    entry : str, default="calibcourse.study.training.train"
        The module where a run starts.
    root : str or path-like, optional
        Another copy of the package's folder (default: this one's).

    Returns
    -------
    str

    Examples
    --------
    >>> fp = code_fingerprint()
    >>> len(fp), set(fp) <= set("0123456789abcdef")
    (16, True)
    >>> code_fingerprint("calibcourse.study.training.losses") != fp  # fewer modules: another fingerprint
    True
    """
    mods = code_modules(entry) if root is None else code_modules(entry, root)
    return hashlib.sha256("\n".join(f"{k} {v}" for k, v in mods.items()).encode()).hexdigest()[:16]


@lru_cache(maxsize=1)
def _cpuinfo() -> dict:
    """The first processor's fields of ``/proc/cpuinfo`` (empty where there is none)."""
    fields = {}
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            key, _, value = line.partition(":")
            fields.setdefault(key.strip(), value.strip())
    except OSError:  # pragma: no cover (not Linux)
        pass
    return fields


def _cpu_name() -> str:
    return _cpuinfo().get("model name") or platform.processor() or platform.machine()


def cpu_kind() -> str:
    """The processor as far as its arithmetic goes: vendor, family, model and widest vector set.

    Virtual machines often show one model name for several generations ("AMD EPYC" for a Zen 3
    with AVX2 and a Zen 5 with AVX-512), so the name alone cannot say that two machines round
    alike. Every comparison of CPU kinds (a run's provenance, the test of the pinned ``ci``
    entries, ``make restamp``) reads it here, so the environment variable
    :data:`CPU_KIND_ENV` (``CALIBCOURSE_CPU_KIND``), when set and not empty, replaces what the
    processor says: ``CALIBCOURSE_CPU_KIND=other make test`` takes the path of a machine of
    another kind on the machine that trained the entries.

    Returns
    -------
    str
        e.g. ``"AuthenticAMD family 26 model 2 (avx512)"``, or ``$CALIBCOURSE_CPU_KIND``.

    Examples
    --------
    >>> import re
    >>> saved = os.environ.pop(CPU_KIND_ENV, None)
    >>> bool(re.fullmatch(r".+ family .+ model .+ [(](avx512|avx2|avx|sse4[.]2|baseline)[)]", cpu_kind()))  # Linux
    True
    >>> os.environ[CPU_KIND_ENV] = "a kind no entry has"
    >>> cpu_kind()
    'a kind no entry has'
    >>> if saved is None: del os.environ[CPU_KIND_ENV]
    ... else: os.environ[CPU_KIND_ENV] = saved
    """
    override = os.environ.get(CPU_KIND_ENV, "").strip()
    if override:
        return override
    fields = _cpuinfo()
    if not fields:  # pragma: no cover (not Linux)
        return platform.processor() or platform.machine()
    flags = set(fields.get("flags", "").split())
    widest = next((name for flag, name in (("avx512f", "avx512"), ("avx2", "avx2"), ("avx", "avx"),
                                           ("sse4_2", "sse4.2")) if flag in flags), "baseline")
    return (f"{fields.get('vendor_id', platform.machine())} family {fields.get('cpu family', '?')} "
            f"model {fields.get('model', '?')} ({widest})")


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
        (``torch.backends.cpu.get_cpu_capability()``), ``numerics`` (:func:`numerics`:
        ``"pinned"`` or ``"native"``), ``device`` (with the GPU's name on CUDA),
        ``code`` (:func:`code_fingerprint`), and for the reader: ``code_modules``
        (:func:`code_modules`), ``python``, ``numpy``, ``machine``, ``cpu`` (the processor's
        model name) and ``cpu_kind`` (:func:`cpu_kind`).

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
            "cpu_capability": torch.backends.cpu.get_cpu_capability(), "numerics": numerics(threads), "device": name,
            "code": code_fingerprint(), "code_modules": code_modules(), "python": platform.python_version(),
            "numpy": np.__version__, "machine": platform.machine(), "cpu": _cpu_name(), "cpu_kind": cpu_kind()}


def differences(recorded: dict | None, here: dict) -> dict:
    """The fields of :data:`KEYS` in which two provenances differ.

    Parameters
    ----------
    recorded : dict or None
        A run's provenance (a cache manifest's ``provenance``); None or ``{}`` for an entry
        that recorded none (every field then differs). An entry from before the numerics mode
        was recorded counts as ``"native"``.
    here : dict
        Another one, e.g. :func:`current`.

    Returns
    -------
    dict of str to (object, object)
        ``{field: (recorded, here)}``; empty when the bits are expected to be the same.

    Examples
    --------
    >>> a = {"torch": "2.14.1", "threads": 1, "cpu_capability": "AVX512", "device": "cpu", "code": "ab"}
    >>> differences(a, {**a, "cpu_capability": "DEFAULT", "numerics": "pinned"})
    {'cpu_capability': ('AVX512', 'DEFAULT'), 'numerics': ('native', 'pinned')}
    >>> differences(a, {**a, "numerics": "native"})
    {}
    """
    def get(prov, k):
        return prov.get(k, "native" if k == "numerics" and prov else None)

    recorded = recorded or {}
    return {k: (get(recorded, k), get(here, k)) for k in KEYS if get(recorded, k) != get(here, k)}


def describe() -> str:
    """This machine's provenance in one line, for a CI log: a red run then names its machine.

    Returns
    -------
    str
        The CPU (model name and :func:`cpu_kind`), cores, torch, its kernel set, the numerics
        mode, threads, numpy, Python and the training code's fingerprint.

    Examples
    --------
    >>> "cpu_capability" in describe() and "numerics" in describe()
    True
    """
    import torch

    p = current()
    return (f"machine: {p['cpu']} [{p['cpu_kind']}], {os.cpu_count()} cores; torch {p['torch']}, "
            f"cpu_capability {p['cpu_capability']}, numerics {p['numerics']}, torch threads {torch.get_num_threads()} "
            f"(a run uses {DEFAULT_THREADS}); numpy {p['numpy']}; python {p['python']}; training code {p['code']}")


if __name__ == "__main__":
    print(describe())
