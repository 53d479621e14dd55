"""Pre-registration checked from the history: was each claim declared before its runs?

    python -m calibcourse.tools.registration            # compute from git, write data/registration.json
    python -m calibcourse.tools.registration --check    # exit 1 if data/registration.json is stale
    python -m calibcourse.tools.registration --show     # one line per claim, nothing written

For each claim of :data:`calibcourse.study.analysis.ledger.reads.CLAIM_READS` (and each design choice of
``CHOICES``), from the repository's history alone (:mod:`calibcourse.tools._history`):

* **declared**: the first commit whose notebooks hold the claim's declaration (its id in double quotes, or
  its mapping's ``anchor``), whichever notebook it was in;
* **first run**: the earliest evidence that any run it reads existed: the ``created`` time of its cache
  entry or the commit that first added it, followed back through re-keyed entries;
* its **status**: ``post hoc`` when it was declared at or after its first run (a claim computed from a
  simulation the page runs has no dated run, and is post hoc: nothing shows its declaration came
  first), or in the commit that holds the runs of its first verdict before its test moved to others
  (the mapping's ``earlier`` commit is its declaration's: those runs were made before that commit);
  else ``amended`` when, after runs existed, its margin or side changed (as written in its
  ``claim(...)`` call), its seeds grew past those of its first verdict (the first commit holding its
  declaration and a complete seed), its runs were retrained under a changed config, or its test moved
  from runs it no longer reads (the mapping's ``earlier`` commit); else ``registered``.

The status is only as good as the history: it dates commits and cache entries, and cannot show a
result seen in an uncommitted pass. A clone without history (``git clone --depth 1``) reads the statuses
from ``data/registration.json``, which this command writes and ``tests/test_registration.py`` keeps
current.
"""
from __future__ import annotations

import argparse
import datetime as dt
import json
import re
import sys
from fnmatch import fnmatchcase
from pathlib import Path

from calibcourse.tools._history import Git, GitError, cache_history, declarations, history_missing

__all__ = ["REGISTRATION_JSON", "STATUSES", "compute", "load", "registration", "write", "main"]

#: the committed statuses, for a clone without history
REGISTRATION_JSON = Path("data") / "registration.json"
STATUSES = ("registered", "post hoc", "amended")
_SEED = re.compile(r"^(.*)/s(\d+)$")


def _date(t: int | None) -> str | None:
    return None if t is None else dt.datetime.fromtimestamp(t, dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def _when(t: int) -> str:
    """``"2026-11-27 10:31 UTC"``."""
    return dt.datetime.fromtimestamp(t, dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")


def _gap(a: int, b: int) -> str:
    """``b - a`` in words: "12 min", "5.2 h", "3.1 days"."""
    s = abs(b - a)
    return f"{s / 60:.0f} min" if s < 5400 else f"{s / 3600:.1f} h" if s < 172800 else f"{s / 86400:.1f} days"


def _runs(patterns, names) -> dict:
    """``{pattern: [run names]}`` of the profile's names each pattern matches."""
    return {p: [n for n in names if fnmatchcase(n, p)] for p in patterns}


def _seeds(matched: dict, when) -> set | None:
    """The claim's seeds whose every run exists by ``when(name) -> bool`` (None if no run has a seed).

    A seed counts when every pattern that has runs of that seed has all of them there, and every pattern
    with seeded runs has some of that seed (the seeds its arms share)."""
    per = []
    for names in matched.values():
        by_seed: dict = {}
        for n in names:
            m = _SEED.match(n)
            if m:
                by_seed.setdefault(int(m.group(2)), []).append(n)
        if by_seed:
            per.append({s for s, ns in by_seed.items() if all(when(n) for n in ns)})
    if not per:
        return None
    return set.intersection(*per)


def _one(cid, entry, decl, names, keys, hist, commits) -> dict:
    """The record of one claim (see :func:`compute`)."""
    matched, runs, ehist = _committed_runs(cid, entry, names, keys, hist)
    first_name = min(runs, key=lambda n: (ehist[n].first, n)) if runs else None
    first = ehist[first_name].first if first_name else None
    rec = {"registration": None, "declared": None, "first_run": None, "runs": len(runs), "seeds": None,
           "planned_seeds": None, "seeds_added": None, "amendments": [], "why": ""}
    if decl:
        rec["declared"] = {"commit": decl.commit[:10], "date": _date(decl.time), "path": decl.path}
    if first_name:
        rec["first_run"] = {"run": first_name, "date": _date(first)}
    seeds_now = _seeds(matched, lambda n: True)
    if seeds_now is not None:
        rec["seeds"] = sorted(seeds_now)
    amend = rec["amendments"]
    if decl and runs:
        _after_the_first_verdict(rec, decl, runs, ehist, seeds_now, commits)
    if decl and first is not None:
        _changed_terms(amend, decl, first)
    if entry.earlier and decl:
        _earlier_runs(amend, cid, entry, decl, first, commits)
    amend.sort(key=lambda a: a["date"] or "")
    rec["registration"], rec["why"] = _status(decl, runs, first, first_name, amend)
    return rec


def _committed_runs(cid, entry, names, keys, hist):
    """The runs a claim reads (by pattern, and all of them) and their history in the cache; a pattern
    that matches no run, or a run never committed, is a ``ValueError``."""
    matched = _runs(entry.runs, names)
    missing = [p for p, ns in matched.items() if not ns]
    if missing:
        raise ValueError(f"claim {cid!r}: no run of the default profile matches {missing} "
                         "(calibcourse/study/analysis/ledger/reads.py)")
    runs = sorted({n for ns in matched.values() for n in ns})
    ehist = {n: hist.get(keys[n]) for n in runs}
    unknown = [n for n, e in ehist.items() if e is None or e.first is None]
    if unknown:
        raise ValueError(f"claim {cid!r}: runs never committed to data/cache: {unknown[:3]}")
    return matched, runs, ehist


def _after_the_first_verdict(rec, decl, runs, ehist, seeds_now, commits) -> None:
    """The seeds planned at the first verdict (the first commit holding the declaration and a complete
    seed, or every run), those added after it, and the runs retrained under a changed config since."""
    amend = rec["amendments"]

    def done(seed):  # when every run of a seed was committed
        return max(ehist[n].committed for n in runs if n.endswith(f"/s{seed}"))
    ready = min(done(s) for s in seeds_now) if seeds_now else max(ehist[n].committed for n in runs)
    verdict_t = max(decl.time, ready)
    if seeds_now:
        # a seed was planned when some run of it was committed by the first verdict (a run retrained or a
        # level added later is a change of the runs, not a seed added); the others came after it
        planned = {s for s in seeds_now if any(ehist[n].committed <= verdict_t for n in runs
                                               if n.endswith(f"/s{s}"))}
        rec["planned_seeds"] = sorted(planned)
        added = seeds_now - planned
        if added:
            t_add = min(done(s) for s in added)
            rec["seeds_added"] = {"commit": commits.get(t_add, "")[:10], "date": _date(t_add),
                                  "seeds": sorted(added)}
            amend.append({"date": _date(t_add), "what": f"seeds added after a verdict: {len(planned)} at its "
                          f"first verdict ({_when(verdict_t)}), {len(seeds_now)} now"})
    for n in runs:
        for t, changed in ehist[n].rekeys:
            if t > verdict_t and changed:
                text = f"runs retrained under a changed config ({', '.join(changed)})"
                if not any(a["what"] == text for a in amend):
                    amend.append({"date": _date(t), "what": text})


def _changed_terms(amend: list, decl, first) -> None:
    """A margin, side, test or number of seeds written differently after runs existed: an amendment each."""
    for t, sha, terms in decl.terms[1:]:
        if t > first:
            before = next(x for tt, _, x in reversed(decl.terms) if tt < t)
            change = ", ".join(f"{k} {before[k]} -> {terms[k]}" for k in terms if terms[k] != before[k])
            amend.append({"date": _date(t), "what": f"its {change} (commit {sha[:10]}), after runs existed"})


def _earlier_runs(amend: list, cid, entry, decl, first, commits) -> None:
    """A claim first decided on runs it no longer reads (its entry's ``earlier`` commit): an amendment."""
    e_sha, e_t = entry.earlier, next((t for t, s in commits.items() if s.startswith(entry.earlier)), None)
    if e_t is None:
        raise ValueError(f"claim {cid!r}: its earlier commit {e_sha!r} is not in the history")
    if e_t < decl.time:
        raise ValueError(f"claim {cid!r}: its earlier commit {e_sha!r} precedes its declaration "
                         f"({decl.commit[:10]}): no verdict existed then")
    if first is not None and e_t < first:
        why = f": {entry.why}" if entry.why else ""
        # committed with its declaration, the runs of its first verdict were created before that commit
        together = ", committed with its declaration, so not shown declared before them" if e_t == decl.time else ""
        amend.insert(0, {"date": _date(e_t), "what": f"first decided on runs it no longer reads (commit {e_sha})"
                         f"{together}; its current runs came {_gap(e_t, first)} later{why}"})


def _status(decl, runs, first, first_name, amend) -> tuple:
    """The registration (:data:`STATUSES`) and the sentence that says why."""
    d_time = decl.time if decl else None
    if decl is None:
        return ("post hoc" if runs else "registered",
                "not committed yet: " + ("its runs exist already" if runs else
                                         "declared before any run (commit it before training them)"))
    if not runs:
        return ("post hoc", f"declared {_when(d_time)}; its numbers come from a computation the page runs, so no "
                            "committed run dates them after the declaration")
    if first <= d_time:
        return "post hoc", f"declared {_gap(first, d_time)} after its first run ({first_name}, {_when(first)})"
    if any("committed with its declaration" in a["what"] for a in amend):
        return ("post hoc", f"declared with the runs of its first verdict ({_when(d_time)}), then moved to runs that "
                            f"came later ({first_name}, {_when(first)})")
    return ("amended" if amend else "registered",
            f"declared {_gap(d_time, first)} before its first run ({first_name}, {_when(first)})")


def compute(root, ids=None, entries=None, keys=None) -> dict:
    """The registration of every claim (and design choice), from the history of ``root``.

    Parameters
    ----------
    root : path-like
        A clone with its history.
    ids : iterable of str, optional
        The claims to compute (default: every entry).
    entries : dict, optional
        ``{id: Reads}`` (default: ``CLAIM_READS`` and ``CHOICES`` of
        :mod:`calibcourse.study.analysis.ledger.reads`; a choice, whose anchor is in the package, is an id of
        ``CHOICES``).
    keys : dict, optional
        ``{run name: cache key}`` (default: the ``default`` profile's runs).

    Returns
    -------
    dict
        ``{id: record}``; a record holds ``registration`` (one of :data:`STATUSES`), ``declared`` (commit,
        date, notebook; None if not committed), ``first_run`` (run, date), ``runs``, ``seeds`` (the seeds its
        arms share now), ``planned_seeds`` (those of its first verdict), ``seeds_added`` (when the rest
        came), ``amendments`` (date, what) and ``why`` (one sentence).

    Raises
    ------
    ValueError
        A mapping entry matches no run, or reads a run never committed, or names an unknown commit.
    GitError
        No history, or git failed.

    Examples
    --------
    A folder without history says so (a clone with one computes every record, about a minute):

    >>> import tempfile
    >>> compute(tempfile.mkdtemp())
    Traceback (most recent call last):
        ...
    calibcourse.tools._history.GitError: no history to read: not a git repository
    """
    from calibcourse.study.analysis.ledger.reads import CHOICES, CLAIM_READS

    root = Path(root)
    reason = history_missing(root)
    if reason:
        raise GitError(f"no history to read: {reason}")
    entries = {**CLAIM_READS, **CHOICES} if entries is None else dict(entries)
    ids = list(entries) if ids is None else list(ids)
    unknown = [i for i in ids if i not in entries]
    if unknown:
        raise ValueError(f"no entry in calibcourse/study/analysis/ledger/reads.py for {unknown}")
    if keys is None:
        from calibcourse.study.runs._entry import config_key
        from calibcourse.study.runs.experiments import experiments

        keys = {n: config_key(c) for n, c in experiments("default").items()}
    git = Git(root)
    hist = cache_history(git)

    def anchor(i):
        return entries[i].anchor or f'"{i}"'

    claims = {i: anchor(i) for i in ids if i not in CHOICES and not entries[i].path}
    choices = {i: anchor(i) for i in ids if i in CHOICES}
    decls = declarations(git, claims) if claims else {}
    if choices:
        decls.update(declarations(git, choices, paths=("calibcourse",), suffix=".py"))
    for path in sorted({entries[i].path for i in ids if entries[i].path and i not in CHOICES}):
        # claims registered in a module of the package before a page tested them
        coded = {i: anchor(i) for i in ids if entries[i].path == path and i not in CHOICES}
        decls.update(declarations(git, coded, paths=(path,), suffix=".py"))
    commits = {int(t): sha for sha, t in (line.split() for line in git("log", "--format=%H %ct").splitlines())}
    return {i: _one(i, entries[i], decls.get(i), list(keys), keys, hist, commits) for i in ids}


def write(root, records: dict) -> Path:
    """Write ``records`` to ``data/registration.json`` under ``root`` (sorted, one claim per block).

    Parameters
    ----------
    root : path-like
        The repository (or any folder: ``data/`` is made where missing).
    records : dict
        ``{id: record}`` (:func:`compute`).

    Returns
    -------
    pathlib.Path
        The file written.

    Examples
    --------
    >>> import tempfile
    >>> root = tempfile.mkdtemp()
    >>> write(root, {"x": {"registration": "registered", "seeds": [0, 1, 2]}}).name
    'registration.json'
    >>> load(root)["x"]["seeds"]
    [0, 1, 2]
    """
    path = Path(root) / REGISTRATION_JSON
    path.parent.mkdir(parents=True, exist_ok=True)
    text = json.dumps(dict(sorted(records.items())), indent=1, ensure_ascii=False)
    # a list of seeds on one line
    text = re.sub(r"\[\n\s+(\d+(?:,\n\s+\d+)*)\n\s+\]", lambda m: "[" + re.sub(r",\n\s+", ", ", m.group(1)) + "]", text)
    path.write_text(text + "\n")
    return path


def load(root) -> dict:
    """The committed records (``data/registration.json``), or ``{}`` where there is none.

    Parameters
    ----------
    root : path-like
        The repository.

    Returns
    -------
    dict
        ``{id: record}`` as :func:`write` wrote it.

    Examples
    --------
    >>> import tempfile
    >>> load(tempfile.mkdtemp())
    {}
    """
    path = Path(root) / REGISTRATION_JSON
    return json.loads(path.read_text()) if path.is_file() else {}


def _essence(rec: dict) -> tuple:
    """What a stale file would get wrong: the status, the seeds planned and now, the amendments."""
    return (rec.get("registration"), rec.get("planned_seeds"), rec.get("seeds"),
            [a["what"] for a in rec.get("amendments", [])])


def stale(root, records: dict) -> list:
    """The ids whose committed record differs from ``records`` in :func:`_essence` (or is missing or extra)."""
    committed = load(root)
    ids = set(committed) | set(records)
    return sorted(i for i in ids if i not in committed or i not in records
                  or _essence(committed[i]) != _essence(records[i]))


def registration(root, ids=None, log=print) -> dict:
    """The records the build uses: computed from the history where there is one, else read from
    ``data/registration.json`` (saying so once with ``log``); a stale committed file is reported.

    Parameters
    ----------
    root : path-like
        The repository.
    ids : iterable of str, optional
        The claims wanted (default: every entry).
    log : callable, default=print
        Called with each line to report.

    Returns
    -------
    dict
        ``{id: record}`` (:func:`compute`); a claim the committed file lacks has no record.

    Examples
    --------
    A copy without history reads the committed file:

    >>> import tempfile
    >>> root = tempfile.mkdtemp()
    >>> _ = write(root, {"x": {"registration": "registered"}, "y": {"registration": "post hoc"}})
    >>> registration(root, ids=["x"])
    registration: read from data/registration.json (not a git repository)
    {'x': {'registration': 'registered'}}
    """
    reason = history_missing(root)
    if reason:
        log(f"registration: read from {REGISTRATION_JSON} ({reason})")
        records = load(root)
        return {i: r for i, r in records.items() if ids is None or i in set(ids)}
    records = compute(root, ids)
    old = stale(root, records) if ids is None else [i for i in stale(root, records) if i in set(ids)]
    if old:
        log(f"registration: {REGISTRATION_JSON} is stale for {len(old)} claims ({', '.join(old[:4])}"
            f"{', ...' if len(old) > 4 else ''}): run python -m calibcourse.tools.registration")
    return records


def _line(cid: str, rec: dict) -> str:
    seeds = ""
    if rec.get("planned_seeds") is not None and rec.get("seeds_added"):
        seeds = f" [seeds {len(rec['planned_seeds'])} -> {len(rec['seeds'])}]"
    return f"{cid:34s} {rec['registration']:10s} {rec['why']}{seeds}"


def main(argv=None) -> int:
    """The command line (the module's docstring): compute, check or show the registrations.

    Parameters
    ----------
    argv : list of str, optional
        The arguments (default: the command line's).

    Returns
    -------
    int
        0 when done (or current), 1 when ``--check`` finds the committed file stale, 2 when the history
        cannot be read.

    Examples
    --------
    >>> import contextlib, io, tempfile
    >>> with contextlib.redirect_stderr(io.StringIO()) as err:
    ...     code = main(["--root", tempfile.mkdtemp(), "--show"])
    >>> code, err.getvalue().strip()
    (2, 'registration: no history to read: not a git repository')
    """
    p = argparse.ArgumentParser(prog="python -m calibcourse.tools.registration",
                                description="Check each claim's pre-registration against the history.")
    p.add_argument("--root", default=".", help="the repository (default: the current folder)")
    g = p.add_mutually_exclusive_group()
    g.add_argument("--check", action="store_true", help=f"exit 1 if {REGISTRATION_JSON} is stale")
    g.add_argument("--show", action="store_true", help="print one line per claim, write nothing")
    args = p.parse_args(argv)
    root = Path(args.root)
    try:
        records = compute(root)
    except (GitError, ValueError) as exc:
        print(f"registration: {exc}", file=sys.stderr)
        return 2
    if args.check:
        old = stale(root, records)
        if old:
            print(f"registration: {REGISTRATION_JSON} is stale for {', '.join(old)}: run python -m "
                  "calibcourse.tools.registration", file=sys.stderr)
            return 1
        print(f"registration: {REGISTRATION_JSON} is current ({len(records)} claims and choices)")
        return 0
    for cid, rec in records.items():
        print(_line(cid, rec))
    counts = {s: sum(r["registration"] == s for r in records.values()) for s in STATUSES}
    print("registration: " + ", ".join(f"{n} {s}" for s, n in counts.items()))
    if not args.show:
        print(f"registration: wrote {write(root, records)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
