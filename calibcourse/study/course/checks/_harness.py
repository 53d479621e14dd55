"""The harness of every check: the report of the cases, calling the student's function, comparing
its result; a hidden check's report names no input and no expected value."""
from __future__ import annotations

import contextlib
import re

import numpy as np

from calibcourse.calibration._validation import check_int
from calibcourse.study.course.checks.rules import Watch, rules_of


class CheckFailure(AssertionError):
    """A check called with ``strict=True`` failed; the message lists the failed cases and why."""


def _kind(label: str) -> str:
    """What kind of case ``label`` names, without its numbers (a hidden case's sizes, bin count or
    parameters are inputs the student does not see): ``"random probabilities, n=300, K=5"`` ->
    ``"random probabilities"``."""
    parts = [re.sub(r"\s*\([^)]*\d[^)]*\)", "", part).strip() for part in label.split(", ")]
    return ", ".join(p for p in parts if p and not re.search(r"\d", p))


class _Report:
    """The cases of one check. A hidden check (``seed`` other than 0) names each case by its kind
    and number only, and says of a failure what went wrong (the function raised, or its result
    differs) and the hint: never the case's inputs or the expected values, which a student would
    otherwise read in the grader's feedback."""

    def __init__(self, name: str, verbose: bool, strict: bool, hidden: bool = False):
        self.name, self.verbose, self.strict, self.hidden = name, verbose, strict, hidden
        self.passed, self.failed, self.lines = 0, 0, []
        self.unfilled = False  # the function raised NotImplementedError: the other cases are not run
        self.not_run = 0  # the cases not run because of it (the one that raised included)
        self.rules = None  # what the function may not call (checks.rules.Rules), or None: not watched
        self.broken: list[str] = []  # what it called of them: the other cases are not run

    def _say(self, text: str):
        self.lines.append(text)
        if not self.strict:
            print(text)

    def case(self, label: str, ok: bool, detail: str = "", hint: str = "", tol: str = "", shown: bool = False):
        """One case: passed or failed, with what went wrong (``detail``), the ``hint`` and, for a numeric
        comparison, the tolerance that decided it (``tol``, e.g. ``"1e-09, absolute"``). A hidden case
        shows ``detail`` only where ``shown`` says it names no input or expected value."""
        if self.hidden:
            kind = _kind(label)
            label = f"hidden case {self.passed + self.failed + 1}" + (f": {kind}" if kind else "")
            raised = re.match(r"the function raised (\w+: .*)", detail or "", re.S)
            # the exception's own words, its numbers masked (a shape or an index would describe the input)
            if raised:
                detail = f"the function raised {re.sub(r'[0-9]+', 'N', raised.group(1))[:160]}"
            elif not shown:
                detail = "the result differs from the reference implementation's" + (
                    f" by more than the tolerance ({tol})" if tol else "") + (
                    "; the differences are as small as float32's rounding: compute in float64"
                    if "float32" in (detail or "") else "")
        elif tol and detail and not ok:
            detail += f"\n(the tolerance: {tol})"
        if ok:
            self.passed += 1
            if self.verbose:
                self._say(f"  PASS  {label}")
            return
        self.failed += 1
        self._say(f"  FAIL  {label}")
        if detail:
            self._say("        " + detail.replace("\n", "\n        "))
        if hint:
            self._say(f"        hint: {hint}")

    def stopped(self) -> bool:
        """Whether the other cases are not run: the function is not written yet, called what the rules
        forbid, or failed a case where the first failure stops (:func:`first_failure_stops`)."""
        return self.unfilled or bool(self.broken) or bool(self.failed and _STOP_AT_FIRST_FAILURE[0])

    def break_rules(self, label: str, found: list):
        """The function called what its exercise does not allow (``found``): this case fails, and the
        others are not run."""
        self.broken = list(found)
        self.case(label, False, f"your function calls {', '.join(found)}, which this exercise does not allow "
                  "(it is what the exercise asks you to write, or its equivalent): it earns no points",
                  "write it yourself, with what the exercise's text allows", shown=True)

    def done(self) -> bool:
        if self.broken:
            summary = (f"{self.name}: {self.passed} passed, {self.failed} failed, then stopped: the function "
                       f"calls what the exercise does not allow ({', '.join(self.broken)}); "
                       f"{self.not_run} cases not run")
        elif self.unfilled and not (self.passed or self.failed):
            summary = f"{self.name}: not written yet, its {self.not_run} cases not run"
        elif self.unfilled:
            summary = (f"{self.name}: {self.passed} passed, {self.failed} failed, then NotImplementedError: "
                       f"{self.not_run} cases not run")
        else:
            verdict = "all passed" if self.failed == 0 else f"{self.failed} failed"
            summary = f"{self.name}: {self.passed} passed, {self.failed} failed -> {verdict}"
        if self.strict:
            if self.failed or self.unfilled:
                raise CheckFailure("\n".join([summary] + self.lines))
            return True
        print(summary)
        return self.failed == 0 and not self.unfilled and not self.broken


def graded(exercise: str, check, fn, **kwargs) -> bool:
    """A graded test's call of ``check``: ``check(fn, strict=True, **kwargs)``, whose failure's message
    starts with the exercise's name, as the student's notebook names it (otter-grader and Gradescope
    show the message under the question's name, ``q1``, which the notebook does not use).

    Parameters
    ----------
    exercise : str
        The exercise, e.g. ``"exercise 1 (Softmax with a temperature)"``.
    check : callable
        A check of :mod:`calibcourse.study.course.checks`.
    fn : callable
        The student's function.
    **kwargs
        The check's other arguments (``seed=``, ``variant=``).

    Returns
    -------
    bool
        True; a failure raises :class:`CheckFailure`.

    Examples
    --------
    >>> from calibcourse.study.course import checks
    >>> checks.graded("exercise 2 (The ECE)", checks.check_ece, lambda p, y, n: 0.0)
    Traceback (most recent call last):
    ...
    calibcourse.study.course.checks.CheckFailure: exercise 2 (The ECE): check_ece: 0 passed, 6 failed -> 6 failed
    ...
    """
    try:
        return check(fn, strict=True, **kwargs)
    except CheckFailure as exc:
        raise CheckFailure(f"{exercise}: {exc}") from None


_MEMO: dict = {}


def _memo(key, compute):
    """``compute()``, kept under ``key`` for the next calls (a check's expected values of a seed: the grader
    checks a seed once, a test checks many functions on it); the last few hundred keys are kept."""
    if key not in _MEMO:
        if len(_MEMO) > 512:
            _MEMO.clear()
        _MEMO[key] = compute()
    return _MEMO[key]


_STOP_AT_FIRST_FAILURE = [False]


@contextlib.contextmanager
def first_failure_stops():
    """Inside it, a check stops at its first failed case (the verdict is the same: it fails if any case
    fails); for tests that run a wrong answer on many seeds."""
    _STOP_AT_FIRST_FAILURE[0] = True
    try:
        yield
    finally:
        _STOP_AT_FIRST_FAILURE[0] = False


def _start(name: str, fn, verbose: bool, strict: bool, seed, rules: bool = True) -> _Report:
    check_int(seed, "seed", low=0)
    if not isinstance(rules, bool):
        raise ValueError(f"rules must be True or False; got {rules!r}")
    report = _Report(name, verbose, strict, hidden=seed != 0)
    report.rules = rules_of(name) if rules else None
    if not callable(fn):
        report.case("the function to check", False,
                    f"fn must be a function; got {fn!r}",
                    "run the exercise cell that defines it (and keep its name), then this check")
    return report


def _call(report, label, fn, *args, **kwargs):
    if not callable(fn):
        return False, None
    if report.stopped():
        report.not_run += 1
        return False, None
    watch = Watch(report.rules) if report.rules is not None else None
    try:
        got = watch.call(fn, *args, **kwargs) if watch else fn(*args, **kwargs)
    except NotImplementedError:
        report.unfilled = True
        report.not_run += 1
        return False, None
    except Exception as exc:  # a bug in the student's code is a failed case, not a crash
        if watch and watch.found:
            report.break_rules(label, watch.found)
        else:
            report.case(label, False, f"the function raised {type(exc).__name__}: {exc}")
        return False, None
    if watch and watch.found:
        report.break_rules(label, watch.found)
        return False, None
    return True, got


def _short(a, n=6):
    a = np.asarray(a)
    return np.array2string(a.ravel()[:n], precision=4, separator=", ") + (" ..." if a.size > n else "")


def _as_float_array(got, shape):
    """``got`` as a float array of ``shape``, or a sentence saying why it is not one."""
    try:
        arr = np.asarray(got.detach().cpu() if hasattr(got, "detach") else got, dtype=float)
    except Exception as exc:
        return None, f"the result is not an array of numbers ({type(exc).__name__}: {exc}); got {got!r:.80}"
    if arr.shape != tuple(shape):
        return None, f"expected an array of shape {tuple(shape)}, got shape {arr.shape}"
    return arr, ""


def _first_difference(got, expected, atol, where=None, rtol=0.0):
    """The first element where ``got`` and ``expected`` differ by more than ``atol`` (and ``rtol`` of
    ``|expected|``; NaNs equal), as a sentence; ``where(index)`` describes the input at that index. None
    if none differs. Where every difference is as small as float32's rounding, the sentence says so."""
    bad = ~np.isclose(got, expected, atol=atol, rtol=rtol, equal_nan=True)
    if not bad.any():
        return None
    idx = tuple(int(i) for i in np.argwhere(bad)[0])
    at = idx[0] if len(idx) == 1 else idx
    e, g = expected[idx], got[idx]
    fmt = ".6g" if f"{e:.6g}" != f"{g:.6g}" else ".12g"  # two values that print alike at 6 digits: more
    text = (f"{int(bad.sum())} of {bad.size} values differ; the first at index {at}: "
            f"expected {e:{fmt}}, got {g:{fmt}}")
    text += f" ({where(idx)})" if where else ""
    with np.errstate(invalid="ignore"):
        worst = np.abs(got - expected)[bad]
        scale = np.maximum(np.abs(expected[bad]), 1.0)
    if np.all(np.isfinite(worst)) and np.all(worst <= 1e-6 * scale):
        text += (f"\nthe largest difference, {worst.max():.2g}, is as small as float32's rounding (7 digits): "
                 "compute in float64")
    return text


def _close(got, expected, atol):
    try:
        got = got.detach() if hasattr(got, "detach") else got
        return got is not None and abs(float(got) - expected) < atol
    except (TypeError, ValueError):
        return False
