"""A retrained run against its committed entry: what holds on any machine, what on the entry's CPU only.

A run trained under the pinned numerics (:mod:`calibcourse.study.training.provenance`) gives the
same bits run after run on CPUs of one kind (:func:`calibcourse.study.training.provenance.cpu_kind`).
On a CPU of another kind it need not, and how far a run moves cannot be told in advance: of the
77 pinned ``ci`` runs trained on an AMD family 26 model 2, 15 came back bit for bit on an Intel
family 6 model 207 and one that a perturbation of its initial weights had called stable moved
its ECE by 0.22 points (the contributors' guide records each CPU measured). So a retrained
pinned run is checked in two tiers (:func:`check_pinned_entry`):

* **on any machine**, what holds by construction: both runs pinned, of the same outputs,
  shapes and dtypes, on the same labels, finite, and the entry's training code the current one;
* **on a CPU of the entry's kind** (and the entry's torch): the committed bits.

On a CPU of another kind no number decides anything: :func:`summarize` says in one line how
many runs came back bit for bit, how many moved within :data:`TOLERANCE` and how many beyond,
and ``make reproduce`` recomputes the verdicts on the retrained runs
(:mod:`calibcourse.tools.reproduce`).
"""
from __future__ import annotations

import numpy as np

from calibcourse.study.runs.stability import TOLERANCE, run_metrics

__all__ = ["TOLERANCE", "NotReproduced", "compare_runs", "within_tolerance", "check_pinned_entry", "summarize"]

#: the unit each printed measure of :func:`calibcourse.study.runs.stability.run_metrics` is in
UNITS = {"error": "points", "ece": "points", "nll": "nats"}


class NotReproduced(AssertionError):
    """A retrained run breaks what must hold (:func:`check_pinned_entry`); a test fails with it."""


def compare_runs(committed, fresh) -> dict:
    """How a retrained run differs from its committed entry.

    Parameters
    ----------
    committed, fresh : calibcourse.study.training.results.RunResult
        The committed entry and the same config retrained.

    Returns
    -------
    dict
        ``provenance``: :func:`calibcourse.study.training.provenance.differences` (``{field: (committed, fresh)}``);
        ``identical``: every output array byte-identical; ``max_abs``: the largest absolute
        difference over the outputs (0.0 when identical); ``metrics``: ``{name: (committed, fresh)}``
        of :func:`calibcourse.study.runs.stability.run_metrics` on the test split.

    Examples
    --------
    >>> from calibcourse.calibration.synthetic import scaled_logits
    >>> from calibcourse.study.training.results import RunResult
    >>> z, y = scaled_logits(500, 3, factor=2.0, seed=0)
    >>> a = RunResult({}, None, {"test_logits": z, "test_labels": y}, provenance={"threads": 1})
    >>> b = RunResult({}, None, {"test_logits": z + 1e-4, "test_labels": y}, provenance={"threads": 2})
    >>> d = compare_runs(a, b)
    >>> d["identical"], round(d["max_abs"], 6), d["provenance"]["threads"], within_tolerance(d)
    (False, 0.0001, (1, 2), True)
    """
    from calibcourse.study.training.provenance import differences

    names = sorted(set(committed.outputs) | set(fresh.outputs))
    missing = [n for n in names if n not in committed.outputs or n not in fresh.outputs]
    if missing:
        raise ValueError(f"the two runs store different outputs: {', '.join(missing)}")
    identical, max_abs = True, 0.0
    for n in names:
        a, b = np.asarray(committed.outputs[n]), np.asarray(fresh.outputs[n])
        if a.shape != b.shape:
            raise ValueError(f"output {n!r} has shape {a.shape} committed and {b.shape} retrained")
        if a.dtype == b.dtype and a.tobytes() == b.tobytes():
            continue
        identical = False
        if np.issubdtype(a.dtype, np.number):
            max_abs = max(max_abs, float(np.max(np.abs(a.astype(np.float64) - b.astype(np.float64)))))
        else:  # pragma: no cover - no output is non-numeric
            max_abs = float("inf")
    mc, mf = run_metrics(committed), run_metrics(fresh)
    return {"provenance": differences(committed.provenance, fresh.provenance), "identical": identical,
            "max_abs": max_abs, "metrics": {k: (mc[k], mf[k]) for k in mc}}


def within_tolerance(comparison: dict, tolerance: dict | None = None) -> bool:
    """Whether every printed measure of :func:`compare_runs` moved less than :data:`TOLERANCE`.

    Parameters
    ----------
    comparison : dict
        A result of :func:`compare_runs`.
    tolerance : dict, optional
        ``{measure: largest allowed absolute difference}`` (default :data:`TOLERANCE`).

    Returns
    -------
    bool

    Examples
    --------
    >>> c = {"metrics": {"error": (8.70, 8.72), "ece": (4.40, 4.43), "nll": (0.300, 0.3004)}}
    >>> within_tolerance(c), within_tolerance(c, {"error": 0.01, "ece": 0.05, "nll": 0.001})
    (True, False)
    """
    tolerance = tolerance or TOLERANCE
    return all(abs(a - b) <= tolerance[k] for k, (a, b) in comparison["metrics"].items())


def check_pinned_entry(name: str, committed, fresh) -> dict:
    """Check a committed pinned entry against the same config retrained on this machine.

    Raises :class:`NotReproduced` when what holds on any machine does not (both runs pinned,
    the same outputs, shapes, dtypes and labels, finite values, the entry's training code the
    one that retrained it), or when the retrained run is of the entry's CPU kind and
    provenance and its bits differ. On a CPU of another kind (or another torch) a numeric
    difference, however large, raises nothing: it is returned, for :func:`summarize`.

    Parameters
    ----------
    name : str
        The run's name (for the messages).
    committed, fresh : calibcourse.study.training.results.RunResult
        The committed entry and the same config retrained here (its provenance records this
        machine's :func:`calibcourse.study.training.provenance.cpu_kind`).

    Returns
    -------
    dict
        ``name``; ``status``: ``"identical"``, ``"within"`` (moved within :data:`TOLERANCE`) or
        ``"beyond"``; ``foreign``: None on the entry's CPU kind and provenance, else what differs
        (e.g. ``"cpu_kind: A committed, B here"``); ``kinds``: (committed, here);
        ``moves``: ``{measure: retrained - committed}``; ``max_abs``: the outputs' largest difference.

    Raises
    ------
    NotReproduced
        As above.

    Examples
    --------
    >>> from calibcourse.calibration.synthetic import scaled_logits
    >>> from calibcourse.study.training.results import RunResult
    >>> z, y = scaled_logits(500, 3, factor=2.0, seed=0)
    >>> prov = {"numerics": "pinned", "cpu_capability": "DEFAULT", "cpu_kind": "A", "code": "c0de"}
    >>> entry = RunResult({}, None, {"test_logits": z, "test_labels": y}, provenance=prov)
    >>> moved = RunResult({}, None, {"test_logits": 2 * z, "test_labels": y}, provenance={**prov, "cpu_kind": "B"})
    >>> out = check_pinned_entry("example", entry, moved)  # another CPU kind: reported, not failed
    >>> out["status"], out["foreign"]
    ('beyond', 'cpu_kind: A committed, B here')
    >>> check_pinned_entry("example", entry, RunResult({}, None, moved.outputs, provenance=prov))
    Traceback (most recent call last):
        ...
    calibcourse.tools.retrained.NotReproduced: example: retrained on a CPU of its entry's kind (A) ...
    """
    def fail(message):
        raise NotReproduced(f"{name}: {message}")

    if committed.provenance.get("numerics") != "pinned":
        fail("the committed entry was not trained under the pinned numerics: retrain it (make train PROFILE=ci)")
    if fresh.provenance.get("numerics") != "pinned" or fresh.provenance.get("cpu_capability") != "DEFAULT":
        fail(f"the retrained run is not pinned (numerics {fresh.provenance.get('numerics')}, "
             f"cpu_capability {fresh.provenance.get('cpu_capability')})")
    if set(committed.outputs) != set(fresh.outputs):
        fail(f"outputs {sorted(committed.outputs)} committed, {sorted(fresh.outputs)} retrained")
    for key, a in committed.outputs.items():
        a, b = np.asarray(a), np.asarray(fresh.outputs[key])
        if a.shape != b.shape or a.dtype != b.dtype:
            fail(f"{key} {a.shape} {a.dtype} committed, {b.shape} {b.dtype} retrained")
        if key.endswith("labels") and not np.array_equal(a, b):
            fail(f"{key} differ: the data are not the entry's")
        if np.issubdtype(b.dtype, np.floating) and not np.isfinite(b).all():
            fail(f"{key} has non-finite values")
    code = committed.provenance.get("code"), fresh.provenance.get("code")
    if code[0] != code[1]:
        fail(f"the entry records training code {code[0]}, the code is now {code[1]}: `make restamp` if the "
             "change moved no number, else retrain the entry (make train PROFILE=ci)")
    c = compare_runs(committed, fresh)
    kinds = committed.provenance.get("cpu_kind"), fresh.provenance.get("cpu_kind")
    differs = {**{k: v for k, v in c["provenance"].items() if k != "code"},
               **({"cpu_kind": kinds} if kinds[0] != kinds[1] else {})}
    foreign = "; ".join(f"{k}: {a} committed, {b} here" for k, (a, b) in differs.items()) or None
    if foreign is None and not c["identical"]:
        fail(f"retrained on a CPU of its entry's kind ({kinds[0]}) under the pinned numerics, yet the outputs "
             f"differ by up to {c['max_abs']:.2e}: the training moved its numbers (retrain it: make train "
             "PROFILE=ci), or this CPU rounds unlike its kind (report it, with `make provenance`)")
    status = "identical" if c["identical"] else "within" if within_tolerance(c) else "beyond"
    return {"name": name, "status": status, "foreign": foreign, "kinds": kinds,
            "moves": {k: b - a for k, (a, b) in c["metrics"].items()}, "max_abs": c["max_abs"]}


def summarize(outcomes) -> str:
    """One line on retrained pinned runs: bit for bit, moved within the tolerance, beyond.

    Parameters
    ----------
    outcomes : iterable of dict
        Results of :func:`check_pinned_entry`.

    Returns
    -------
    str
        On the entries' CPU kind, how many came back bit for bit; on another, also how many
        moved within :data:`TOLERANCE` and beyond, the largest move (relative to its
        tolerance) and where the verdicts are checked (``make reproduce``).

    Examples
    --------
    >>> same = {"status": "identical", "foreign": None, "kinds": ("A", "A"), "moves": {}}
    >>> print(summarize([same, same]))
    2 pinned ci runs retrained bit for bit on their entries' CPU kind (A)
    >>> far = {"name": "ch9/x", "status": "beyond", "foreign": "cpu_kind: A committed, B here", "kinds": ("A", "B"),
    ...        "moves": {"error": 0.0, "ece": 0.22, "nll": -0.0001}}
    >>> print(summarize([{**far, "status": "identical", "moves": {}}, far]))  # doctest: +NORMALIZE_WHITESPACE
    2 pinned ci runs retrained on another CPU kind (B here; A committed): 1 bit for bit, 0 moved within the
    tolerance, 1 beyond (largest: ECE +0.220 points, ch9/x); no test decides on these numbers, `make reproduce`
    recomputes the verdicts
    """
    outcomes = list(outcomes)
    home = [o for o in outcomes if o["foreign"] is None]
    away = [o for o in outcomes if o["foreign"] is not None]
    parts = []
    if home:
        kinds = ", ".join(sorted({str(o["kinds"][1]) for o in home}))
        parts.append(f"{len(home)} pinned ci runs retrained bit for bit on their entries' CPU kind ({kinds})")
    if away:
        here = ", ".join(sorted({str(o["kinds"][1]) for o in away}))
        there = ", ".join(sorted({str(o["kinds"][0]) for o in away}))
        what = "another CPU kind" if here != there else "another provenance"
        n = {s: sum(o["status"] == s for o in away) for s in ("identical", "within", "beyond")}
        line = (f"{len(away)} pinned ci runs retrained on {what} ({here} here; {there} committed): "
                f"{n['identical']} bit for bit, {n['within']} moved within the tolerance, {n['beyond']} beyond")
        moves = [(abs(d) / TOLERANCE[k], k, d, o["name"]) for o in away for k, d in o["moves"].items() if d]
        if moves:
            _, k, d, name = max(moves)
            line += f" (largest: {k.upper() if k != 'error' else k} {d:+.3f} {UNITS[k]}, {name})"
        line += "; no test decides on these numbers, `make reproduce` recomputes the verdicts"
        if what == "another provenance":
            line += f" ({away[0]['foreign']})"
        parts.append(line)
    return "; ".join(parts) if parts else "no pinned run was retrained"
