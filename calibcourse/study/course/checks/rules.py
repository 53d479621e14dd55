"""What each graded exercise may not call, and the watch that finds such a call while the student's
function runs.

A rule names what is *called*, never how it is spelled: while a check runs the student's function,
a profile hook (:func:`sys.setprofile`) sees every Python function and every C function called,
directly or through other functions, whatever the route (an alias, ``getattr(metrics, "soft" +
"max")``, a ``functools.partial``, ``np.exp(log_softmax(...))``, torch's ``Tensor.softmax`` or
``F.cross_entropy``). A call that a rule forbids fails the check: the notebook's check says so, and
the graded tests, which run the same check in ``make grade``, in ``otter run`` and on Gradescope,
give no points for it.

A rule forbids

- *the course's package*: every function of ``calibcourse`` (the toolkit's ``metrics``, ``calibrators``,
  ``binning``, ``kernels``, its private helpers, the study code), but for the few an exercise allows
  (:attr:`Rules.allow`, e.g. ``metrics.ece`` for the hand search of temperatures; what such a function
  calls inside is its own business);
- *modules*: every function defined in them or below them (``calibcourse.calibration.metrics``:
  ``metrics.ece``, ``metrics.softmax``, ...), Python or compiled;
- *functions*: single functions by dotted name (``scipy.special.softmax``);
- *torch operations*: torch's compiled operations by name (``softmax``: ``torch.softmax``,
  ``F.softmax``, ``Tensor.softmax`` and ``nn.Softmax`` all reach it).

:data:`ALWAYS` is part of every rule: the course's study layer (these checks, the labs' helpers, the
training losses) and the calibration libraries a grading machine may have (netcal, torchmetrics,
relplot, uncertainty-calibration, scikit-learn's calibration module).

What the watch does not see: work handed to a thread started before the check, or to another
process; code of the student's that an allowed function calls back (an object whose ``__array__``
calls a forbidden function, handed to ``metrics.ece``); and a submission that tampers with the
grader (replaces these functions or the profile hook) is not stopped by it.
"""
from __future__ import annotations

import functools
import importlib
import sys
import threading
import types
from dataclasses import dataclass

__all__ = ["Rules", "TOOLKIT", "ALWAYS", "RULES", "rules_of", "Watch"]

#: the course's package: no exercise may call a function of it but those its rules allow (:attr:`Rules.allow`)
TOOLKIT = "calibcourse"
#: what no exercise may call: the study layer (the checks' reference implementations, the labs'
#: helpers, the training losses) and the calibration libraries that a grader's environment may hold
ALWAYS = ("calibcourse.study", "netcal", "torchmetrics", "relplot", "calibration", "sklearn.calibration",
          "sklearn.isotonic")

#: torch's compiled operations of the softmax family and of the cross-entropy, by name
TORCH_SOFTMAX = ("softmax", "_softmax", "log_softmax", "_log_softmax", "special_softmax", "special_log_softmax",
                 "logsumexp", "special_logsumexp")
TORCH_CROSS_ENTROPY = ("cross_entropy_loss", "nll_loss", "nll_loss_nd", "nll_loss2d")

#: short names of the toolkit's modules, as the labs import them
_SHORT = {f"calibcourse.calibration.{m}": m for m in ("metrics", "calibrators", "binning", "stats", "plots")}


@dataclass(frozen=True)
class Rules:
    """What a graded function may not call.

    Attributes
    ----------
    modules : tuple of str
        Modules whose every function is forbidden (and their sub-modules').
    functions : tuple of str
        Single functions, by dotted name.
    torch_ops : tuple of str
        torch's compiled operations, by name.
    allow : tuple of str
        The functions of the course's package (:data:`TOOLKIT`) the exercise may call, by dotted name;
        every other function of the package is forbidden.
    allowed : str
        What else the exercise allows, for the hand-out's sentence ("" if nothing to add).

    Examples
    --------
    >>> r = Rules(modules=("calibcourse.calibration.calibrators",), functions=("scipy.special.softmax",),
    ...           allow=("calibcourse.calibration.metrics.ece",))
    >>> print(r.describe())  # doctest: +NORMALIZE_WHITESPACE
    Not allowed in this function, directly or through another function: any function of the course's
    package, `calibcourse` (`calibrators` and its other modules), except `metrics.ece`;
    `scipy.special.softmax`; other calibration libraries.
    """

    modules: tuple = ()
    functions: tuple = ()
    torch_ops: tuple = ()
    allow: tuple = ()
    allowed: str = ""

    def describe(self) -> str:
        """The sentence of the hand-out: what the function may not call."""
        toolkit = [f"`{_SHORT[m]}`" for m in self.modules if m in _SHORT]
        package = ("any function of the course's package, `calibcourse` ("
                   + (" and ".join([", ".join(toolkit), "its other modules"]) if toolkit else "every module") + ")")
        if self.allow:
            short = [f"`{_public_short(a)}`" for a in self.allow]
            package += ", except " + (" and ".join([", ".join(short[:-1]), short[-1]]) if len(short) > 1 else short[0])
        others = [f"`{m}`" for m in self.modules if m not in _SHORT and "._" not in m]  # a private module: named
        others += [f"`{f}`" for f in self.functions]                                       # by its functions
        if set(TORCH_SOFTMAX) <= set(self.torch_ops):
            others.append("torch's softmax, log-softmax and logsumexp"
                          + (" and its cross-entropy and NLL losses" if set(TORCH_CROSS_ENTROPY) <= set(self.torch_ops)
                             else ""))
        groups = [package] + ([", ".join(others)] if others else []) + ["other calibration libraries"]
        text = "Not allowed in this function, directly or through another function: " + "; ".join(groups) + "."
        return text + (f" {self.allowed}" if self.allowed else "")


_METRICS, _CALIBRATORS = "calibcourse.calibration.metrics", "calibcourse.calibration.calibrators"
_BINNING, _STATS = "calibcourse.calibration.binning", "calibcourse.calibration.stats"
_ALLOWED = {name: f"calibcourse.calibration.metrics.{name}" for name in ("softmax", "nll", "brier", "ece")}
_SCIPY_SOFTMAX = ("scipy.special.softmax", "scipy.special.log_softmax", "scipy.special.logsumexp")
#: the module of those three, whose private helpers compute them too (its ``_logsumexp``)
_SCIPY_SOFTMAX_MODULE = "scipy.special._logsumexp"
_SKLEARN_SOFTMAX = ("sklearn.utils.extmath.softmax",)
#: scipy's isotonic regression and its compiled pool-adjacent-violators (``_pava_pybind.pava``)
_SCIPY_ISOTONIC_MODULES = ("scipy.optimize._isotonic", "scipy.optimize._pava_pybind")

#: each check's rules: what the exercise it grades may not call
RULES = {
    # Lab 1: the binned measures, written from the bins up
    **{name: Rules(modules=(_METRICS, _BINNING), allowed="Write it with numpy.") for name in (
        "check_reliability_bins", "check_ece", "check_mce", "check_ece_l2")},
    # Lab 2
    "check_softmax_temperature": Rules(
        modules=(_METRICS, _CALIBRATORS, _SCIPY_SOFTMAX_MODULE), functions=_SCIPY_SOFTMAX + _SKLEARN_SOFTMAX,
        torch_ops=TORCH_SOFTMAX, allowed="Write it with numpy."),
    "check_temperature_scaling": Rules(
        modules=(_CALIBRATORS,), allow=(_ALLOWED["softmax"], _ALLOWED["nll"], _ALLOWED["brier"]),
        allowed="You may use scipy's `minimize_scalar`."),
    "check_grid_temperature": Rules(
        modules=(_CALIBRATORS,), allow=(_ALLOWED["softmax"], _ALLOWED["ece"])),
    "check_nll_temperature": Rules(
        modules=(_METRICS, _CALIBRATORS, "sklearn.metrics", _SCIPY_SOFTMAX_MODULE),
        functions=_SCIPY_SOFTMAX + _SKLEARN_SOFTMAX, torch_ops=TORCH_SOFTMAX + TORCH_CROSS_ENTROPY,
        allowed="Write it with numpy."),
    # Lab 3
    "check_histogram_binning": Rules(modules=(_CALIBRATORS, _BINNING, "sklearn"), allowed="Write it with numpy."),
    "check_isotonic": Rules(modules=(_CALIBRATORS, _BINNING, "sklearn", *_SCIPY_ISOTONIC_MODULES),
                            functions=("scipy.optimize.isotonic_regression",), allowed="Write it with numpy."),
    "check_platt": Rules(modules=(_CALIBRATORS, "sklearn"),
                         allowed="You may use scipy's `minimize`, `expit` and `logit`."),
    "check_paired_difference": Rules(modules=(_STATS, _CALIBRATORS), allow=(_ALLOWED["ece"],)),
    # Lab 4
    **{name: Rules(modules=(_METRICS,), allowed="Write it with numpy or torch.") for name in (
        "check_sece", "check_focal_loss", "check_flsd53", "check_classwise_ece")},
}


def rules_of(check: str) -> Rules:
    """The rules of the exercise that ``check`` grades.

    Parameters
    ----------
    check : str
        The name of a check, e.g. ``"check_ece"``.

    Returns
    -------
    Rules

    Examples
    --------
    >>> rules_of("check_grid_temperature").modules
    ('calibcourse.calibration.calibrators',)
    """
    if check not in RULES:
        raise ValueError(f"check must be one of {', '.join(RULES)}; got {check!r}")
    return RULES[check]


def _module_matches(name: str, prefixes) -> bool:
    return any(name == p or name.startswith(p + ".") for p in prefixes)


def _owner_module(fn) -> str:
    """The module a C function belongs to: its ``__module__``, else its ``__self__``'s (a module, or
    the type of the object it is bound to)."""
    mod = getattr(fn, "__module__", None)
    if isinstance(mod, str):
        return mod
    owner = getattr(fn, "__self__", None)
    if isinstance(owner, types.ModuleType):
        return owner.__name__
    return getattr(type(owner), "__module__", "") or ""


def _public_short(dotted: str) -> str:
    """A toolkit's function by the name the labs use: ``calibcourse.calibration.metrics.ece`` -> ``metrics.ece``."""
    module, _, name = dotted.rpartition(".")
    return f"{_SHORT.get(module, module)}.{name}"


def _codes(fn) -> list:
    """The code objects a call of ``fn`` starts with: its own, and those of the functions it wraps."""
    out = []
    while fn is not None and len(out) < 8:
        code = getattr(fn, "__code__", None)
        if code is not None:
            out.append(code)
        fn = getattr(fn, "__wrapped__", None)
    return out


def _public(module: str, name: str) -> str:
    """A module's dotted name and a function's name -> the function's public name, as a student would import
    it: the name without its private modules (those that start with an underscore)."""
    return ".".join([part for part in module.split(".") if not part.startswith("_")] + [name])


class _Forbidden(BaseException):
    """Raised inside the student's function at a call the rules forbid, to stop it there (a
    ``BaseException``: an ``except Exception`` in the student's code does not swallow it)."""


_SETPROFILE = sys.setprofile


class Watch:
    """Watches one call of a student's function for what ``rules`` forbid.

    Parameters
    ----------
    rules : Rules
        What the function may not call; :data:`ALWAYS` is added.

    Examples
    --------
    >>> import numpy as np
    >>> from calibcourse.calibration import metrics
    >>> watch = Watch(rules_of("check_softmax_temperature"))
    >>> sm = getattr(metrics, "soft" + "max")
    >>> _ = watch.call(lambda z: sm(z), np.zeros((2, 3)))
    >>> watch.found
    ['calibcourse.calibration.metrics.softmax']
    >>> watch = Watch(rules_of("check_softmax_temperature"))
    >>> _ = watch.call(lambda z: np.exp(z) / np.exp(z).sum(1, keepdims=True), np.zeros((2, 3)))
    >>> watch.found
    []
    """

    def __init__(self, rules: Rules):
        self.modules = tuple(rules.modules) + ALWAYS + (TOOLKIT,)
        self.torch_ops = frozenset(rules.torch_ops)
        self.allowed = {code for dotted in rules.allow for code in _codes(_resolve(dotted))}
        self._inside: dict = {}  # per thread, the frames of the allowed functions running (what they call is theirs)
        self.codes, self.builtins = {}, {}
        for dotted in rules.functions:
            fn = _resolve(dotted)
            code = getattr(getattr(fn, "__wrapped__", fn), "__code__", None) or getattr(fn, "__code__", None)
            if code is not None:
                self.codes[code] = dotted
            elif fn is not None:
                self.builtins[id(fn)] = (fn, dotted)
        self.found: list[str] = []
        self._verdict: dict = {}
        self._thread = None

    def _note(self, what: str):
        if what not in self.found:
            self.found.append(what)
        if threading.get_ident() == self._thread:  # the function's own thread: stopped there (a profile
            raise _Forbidden(what)                   # hook that raises is turned off); another thread goes on

    def _profile(self, frame, event, arg):
        inside = self._inside.get(threading.get_ident())
        if inside:  # inside a function the exercise allows: only its end matters
            if event == "return" and frame is inside[-1]:
                inside.pop()
            return
        if event == "call":
            code = frame.f_code
            if code in self.allowed:
                self._inside.setdefault(threading.get_ident(), []).append(frame)
                return
            verdict = self._verdict.get(code)
            if verdict is None:
                # a function of a module's file (not code a doctest or exec ran in that module's namespace)
                module = "" if code.co_filename.startswith("<") else frame.f_globals.get("__name__", "") or ""
                verdict = self.codes.get(code) or (
                    _public(module, getattr(code, "co_qualname", code.co_name))
                    if _module_matches(module, self.modules) else "")
                self._verdict[code] = verdict
            if verdict:
                self._note(verdict)
        elif event == "c_call":
            if arg is _SETPROFILE:
                if frame.f_code is not _CALL_CODE:  # not the watch's own closing call
                    self._note("sys.setprofile (it would turn off this watch)")
                return
            name = getattr(arg, "__name__", "")
            if id(arg) in self.builtins and self.builtins[id(arg)][0] is arg:
                self._note(self.builtins[id(arg)][1])
                return
            module = _owner_module(arg)
            if name in self.torch_ops and (module == "torch" or module.startswith("torch.")):
                self._note(f"torch's {name.removeprefix('special_').lstrip('_')}")
            elif module and _module_matches(module, self.modules):
                self._note(_public(module, name))

    def call(self, fn, *args, **kwargs):
        """``fn(*args, **kwargs)``, watched; what it called of the rules lands in :attr:`found` (the function
        is stopped at the first such call, and None returned)."""
        return _watched(self, fn, args, kwargs)


def _watched(watch, fn, args, kwargs):
    watch._thread = threading.get_ident()
    old, old_threads = sys.getprofile(), threading.getprofile()
    threading.setprofile(watch._profile)  # threads the function starts are watched too
    sys.setprofile(watch._profile)
    try:
        return fn(*args, **kwargs)
    except _Forbidden:
        return None
    finally:
        still = sys.getprofile()
        sys.setprofile(old)
        threading.setprofile(old_threads)
        if not watch.found and getattr(still, "__func__", None) is not Watch._profile:
            watch.found.append("sys.setprofile (it turned off this watch)")


_CALL_CODE = _watched.__code__


@functools.lru_cache(maxsize=None)
def _resolve(dotted: str):
    """The object a dotted name names, or None where its module is not installed."""
    parts = dotted.split(".")
    for i in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:i]))
        except ImportError:
            continue
        try:
            for attr in parts[i:]:
                obj = getattr(obj, attr)
        except AttributeError:
            return None
        return obj
    return None
