"""``make reproduce``: retrain a profile on this machine and say what reproduces, bits and verdicts.

    make reproduce                      # PROFILE=ci
    make reproduce PROFILE=default JOBS=2
    python -m calibcourse.tools.reproduce --profile ci [--jobs N] [--threads T] [--keep DIR] [--no-ledger]

1. Every run of the profile is retrained into a temporary cache on this machine
   (:func:`calibcourse.tools.grid.train_serial`, or ``--jobs`` at a time with
   :func:`calibcourse.tools.grid.train_local`), with the thread policy of :mod:`calibcourse.study.training.provenance`.
2. Each retrained run is compared with its committed entry (:func:`compare_runs`): the
   provenance fields that differ (torch, threads, CPU capability, device, training code), the
   largest absolute difference of its outputs, and the differences of the test error, ECE and
   NLL the book prints from it.
3. The chapters are executed twice, against the committed cache and against the retrained
   one, and every claim of the ledger whose verdict changed is listed (:func:`changed_verdicts`).

The exit status is 0 when every verdict is the same, 1 when one changed, 2 when the committed
cache lacks a run of the profile. Where the provenance is the same, the outputs must be
byte-identical; elsewhere the study's claim is that the verdicts reproduce even where the bits
do not (README, "Reproducibility").
"""
from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from calibcourse.tools._env import environ, in_pinned_process
from calibcourse.study.runs.profiles import PROFILES
from calibcourse.study.training.provenance import PINNED_PROFILES
from calibcourse.study.runs.stability import TOLERANCE, run_metrics

__all__ = ["TOLERANCE", "run_metrics", "compare_runs", "within_tolerance", "changed_verdicts", "reproduce", "restamp",
           "main"]


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
        of :func:`run_metrics` on the test split.

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


def _describe(name: str, c: dict) -> str:
    prov = ", ".join(f"{k} {a}->{b}" for k, (a, b) in c["provenance"].items() if k != "code") or "same"
    if "code" in c["provenance"]:
        prov = (prov + ", " if prov != "same" else "") + "training code"
    if c["identical"]:
        outs = "outputs byte-identical"
    else:
        deltas = ", ".join(f"{k} {b - a:+.4f}" for k, (a, b) in c["metrics"].items())
        outs = f"max |diff| {c['max_abs']:.2e}; {deltas}" + ("" if within_tolerance(c) else "  BEYOND TOLERANCE")
    return f"{name}: provenance {prov}; {outs}"


def changed_verdicts(before: list, after: list) -> list:
    """The claims whose verdict differs between two ledgers (``_build/claims.json`` lists).

    Parameters
    ----------
    before, after : list of dict
        Claims with ``chapter``, ``id`` and ``verdict`` (:class:`calibcourse.study.analysis.ledger.Claim`).

    Returns
    -------
    list of dict
        ``{"chapter", "id", "before", "after"}`` for every claim whose verdict changed, or that
        is in one ledger only (its verdict ``None`` in the other).

    Examples
    --------
    >>> a = [{"chapter": 1, "id": "x", "verdict": "held"}, {"chapter": 2, "id": "y", "verdict": "held"}]
    >>> changed_verdicts(a, [{**a[0]}, {**a[1], "verdict": "inconclusive"}])
    [{'chapter': 2, 'id': 'y', 'before': 'held', 'after': 'inconclusive'}]
    """
    b = {(c["chapter"], c["id"]): c["verdict"] for c in before}
    a = {(c["chapter"], c["id"]): c["verdict"] for c in after}
    return [{"chapter": k[0], "id": k[1], "before": b.get(k), "after": a.get(k)}
            for k in sorted(set(a) | set(b)) if a.get(k) != b.get(k)]


def _ledger(book: Path, profile: str, cache_root: Path, log) -> list:
    """Execute the chapters (not the labs) of a copy of the book against ``cache_root``; their claims."""
    from calibcourse.tools.build import BuildError, collect_claims, execute_page, notebook_pages

    pages = [p for p in notebook_pages(book) if "labs" not in p.source.relative_to(book / "notebooks").parts]
    with environ(CALIBCOURSE_CACHE=str(cache_root), CALIBCOURSE_QUIET="1", OMP_WAIT_POLICY="PASSIVE"):
        for page in pages:
            t = time.perf_counter()
            try:
                execute_page(page, {"profile": profile, "edition": "instructor"}, book, book / "_build" / "failed")
            except BuildError as exc:
                raise RuntimeError(f"executing the chapters against {cache_root} failed: {exc}") from None
            log(f"  {page.source.name} executed in {time.perf_counter() - t:.0f} s")
    return collect_claims(pages)


def reproduce(profile: str = "ci", jobs: int = 1, threads: int | None = None, workdir=None, ledger: bool = True,
              committed_root=None, log=print) -> dict:
    """Retrain ``profile`` here, compare with the committed cache, recompute the ledger.

    Parameters
    ----------
    profile : str, default="ci"
        The profile whose runs to retrain.
    jobs : int, default=1
        Runs trained at once (1: this process; more: submitit's local executor).
    threads : int or None, default=None
        Torch's threads of each run (:func:`calibcourse.study.training.provenance.resolve_threads`: None is 1).
    workdir : str or path-like, optional
        Where the retrained cache and the executed chapters go (kept); default a temporary
        folder, removed at the end.
    ledger : bool, default=True
        Execute the chapters against both caches and compare the verdicts.
    committed_root : str or path-like, optional
        The cache to compare with (default :class:`calibcourse.study.runs.cache.Cache`'s).
    log : callable, default=print
        Where the report's lines go.

    Returns
    -------
    dict
        ``comparisons`` (``{name: compare_runs(...)}``), ``changed`` (:func:`changed_verdicts`;
        None without ``ledger``), ``n_claims``, ``seconds`` (``{"train", "ledger"}``).

    Examples
    --------
    Retraining a profile takes minutes (``tests/test_reproduce.py`` runs a small one):

    >>> reproduce("ci")  # doctest: +SKIP
    """
    from calibcourse.study.runs.cache import Cache
    from calibcourse.study.runs.experiments import experiments
    from calibcourse.tools.grid import train_local, train_serial, unique_runs
    from calibcourse.study.training.provenance import current

    committed = Cache(committed_root)
    runs = unique_runs(experiments(profile))
    absent = [name for name, cfg in runs.values() if committed.load(cfg) is None]
    if absent:
        raise FileNotFoundError(f"the committed cache {committed.root} has no entry for {len(absent)} run(s) of "
                                f"profile {profile!r} ({', '.join(absent[:5])}{', ...' if len(absent) > 5 else ''}): "
                                f"`make train PROFILE={profile}` first")
    tmp = Path(workdir) if workdir else Path(tempfile.mkdtemp(prefix="calibcourse-reproduce-"))
    fresh = Cache(tmp / "cache")
    here = current(threads)
    log(f"reproduce {profile}: {len(runs)} runs retrained into {fresh.root} on this machine "
        f"(torch {here['torch']}, {here['threads']} thread(s), CPU capability {here['cpu_capability']}, "
        f"{here['cpu']}, code {here['code']})")
    try:
        t0 = time.perf_counter()
        configs = {name: cfg for name, cfg in runs.values()}
        quiet = lambda line: None  # noqa: E731
        if jobs > 1:
            failed = train_local(configs, jobs, fresh, log=quiet, threads=threads)
            if failed:
                raise RuntimeError(f"{failed} run(s) failed to train; logs under {fresh.root / '.grid'}")
        else:
            train_serial(configs, fresh, log=quiet, threads=threads)
        t_train = time.perf_counter() - t0
        log(f"trained in {t_train / 60:.1f} min; per run, against the committed entry:")
        comparisons = {}
        for name, cfg in configs.items():
            comparisons[name] = compare_runs(committed.load(cfg), fresh.load(cfg))
            log("  " + _describe(name, comparisons[name]))
        n_same = sum(c["identical"] for c in comparisons.values())
        n_out = sum(not within_tolerance(c) for c in comparisons.values())
        log(f"{n_same} of {len(comparisons)} runs byte-identical; {n_out} with a printed measure beyond the "
            f"tolerance {TOLERANCE}")
        changed, n_claims, t_ledger = None, None, 0.0
        if ledger:
            from calibcourse.tools.smoke import _copy_book

            t0 = time.perf_counter()
            claims = {}
            for label, root in (("committed", committed.root), ("retrained", fresh.root)):
                log(f"the ledger from the {label} cache:")
                claims[label] = _ledger(_copy_book(tmp / f"book-{label}"), profile, root, log)
            t_ledger = time.perf_counter() - t0
            changed = changed_verdicts(claims["committed"], claims["retrained"])
            n_claims = len(claims["retrained"])
            log(f"claims ledger: {n_claims} claims, {len(changed)} verdict(s) changed "
                f"({t_ledger / 60:.1f} min)")
            for c in changed:
                log(f"  chapter {c['chapter']} {c['id']}: {c['before']} -> {c['after']}")
        return {"comparisons": comparisons, "changed": changed, "n_claims": n_claims,
                "seconds": {"train": t_train, "ledger": t_ledger}}
    finally:
        if not workdir:
            shutil.rmtree(tmp, ignore_errors=True)


def restamp(profile: str = "ci", committed_root=None, workdir=None, log=print) -> int:
    """Record the current training code in every committed entry, after proving no bit moved.

    A change to the training code that moves no number (modules moved between the package's
    layers, a function split) still changes its fingerprint, so every entry turns *stale*.
    This retrains ``profile``'s runs here with one thread; if every run whose recorded
    provenance equals this machine's in everything but the code comes out byte-identical (and
    at least one does), every entry of the committed cache, of every profile, gets the current
    code (:meth:`calibcourse.study.runs.cache.Cache.restamp`, which keeps the old fingerprint and this
    evidence in the manifest). Otherwise nothing is written and the runs that moved are named.

    Parameters
    ----------
    profile : str, default="ci"
        The profile retrained as evidence (the ``ci`` profile runs every kind of training step).
    committed_root : str or path-like, optional
        The committed cache (default :class:`calibcourse.study.runs.cache.Cache`'s).
    workdir : str or path-like, optional
        Where the retrained cache goes (kept); default a temporary folder, removed.
    log : callable, default=print
        Where the report's lines go.

    Returns
    -------
    int
        The number of entries restamped (0 when every entry already had the current code).

    Raises
    ------
    RuntimeError
        A run on this machine's provenance did not reproduce its bits, or none could be compared.

    Examples
    --------
    Retraining a profile takes minutes (``tests/test_reproduce.py`` runs a small one):

    >>> restamp("ci")  # doctest: +SKIP
    """
    from calibcourse.study.runs.cache import Cache
    from calibcourse.study.runs.experiments import experiments
    from calibcourse.study.training.provenance import KEYS, current, differences
    from calibcourse.tools.grid import train_serial, unique_runs

    committed = Cache(committed_root)
    here = current()
    stale = committed.stale()
    if not stale:
        log("every entry records the current training code: nothing to restamp")
        return 0
    runs = {name: cfg for name, cfg in unique_runs(experiments(profile)).values()}
    same = {name: cfg for name, cfg in runs.items() if (e := committed.load(cfg)) is not None
            and set(differences(e.provenance, here)) <= {"code"}}
    if not same:
        raise RuntimeError(f"no committed {profile} run was trained on this machine's provenance "
                           f"({', '.join(f'{k}={here[k]}' for k in KEYS if k != 'code')}): nothing proves the "
                           "bits unchanged here; retrain the entries instead (remove them, then make train)")
    tmp = Path(workdir) if workdir else Path(tempfile.mkdtemp(prefix="calibcourse-restamp-"))
    try:
        fresh = Cache(tmp / "cache")
        train_serial(same, fresh, log=lambda line: None)
        moved = [
            name for name, cfg in same.items() if not compare_runs(committed.load(cfg), fresh.load(cfg))["identical"]
        ]
    finally:
        if not workdir:
            shutil.rmtree(tmp, ignore_errors=True)
    if moved:
        raise RuntimeError(f"{len(moved)} of {len(same)} {profile} runs changed their bits under the current code "
                           f"({', '.join(moved[:5])}{', ...' if len(moved) > 5 else ''}): the change moves numbers; "
                           "retrain the stale entries instead of restamping them")
    because = f"{len(same)} {profile} runs retrained byte-identical under code {here['code']}"
    for key in stale:
        committed.restamp(key, here, because)
    log(f"restamped {len(stale)} entries: {because}")
    return len(stale)


def main(argv=None) -> int:
    """Run the command line (``make reproduce``); see the module's docstring for the exit status.

    Parameters
    ----------
    argv : list of str, optional
        The arguments (default: the command line's).

    Returns
    -------
    int
        0: every verdict reproduced; 1: a verdict changed; 2: the committed cache lacks runs.

    Examples
    --------
    >>> main(["--jobs", "0"])  # doctest: +IGNORE_EXCEPTION_DETAIL
    Traceback (most recent call last):
        ...
    SystemExit: 2
    """
    ap = argparse.ArgumentParser(prog="python -m calibcourse.tools.reproduce", description=__doc__.split("\n")[0])
    ap.add_argument("--profile", default="ci", choices=PROFILES)
    ap.add_argument("--jobs", type=int, default=1, help="runs trained at once (default 1)")
    ap.add_argument("--threads", type=int, default=None, help="torch threads per run (default 1)")
    ap.add_argument("--keep", metavar="DIR", default=None,
                    help="keep the retrained cache and the executed chapters in DIR")
    ap.add_argument("--no-ledger", action="store_true", help="compare the runs only")
    ap.add_argument("--restamp", action="store_true",
                    help="instead: retrain the profile and, if every run on this machine's provenance is "
                         "byte-identical, record the current training code in every committed entry")
    argv = sys.argv[1:] if argv is None else list(argv)
    args = ap.parse_args(argv)
    if args.jobs < 1:
        ap.error(f"--jobs must be >= 1; got {args.jobs}")
    if args.threads is not None and args.threads < 1:
        ap.error(f"--threads must be >= 1; got {args.threads}")
    if args.profile in PINNED_PROFILES and args.threads not in (None, 1):
        ap.error(
            f"the {args.profile} profile trains under the pinned numerics, with one thread; "
            f"got --threads {args.threads}"
        )
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    os.environ.setdefault("CALIBCOURSE_QUIET", "1")  # one line per run, no progress bars
    rc = in_pinned_process("calibcourse.tools.reproduce", argv, args.profile)
    if rc is not None:
        return rc
    start = time.perf_counter()
    if args.restamp:
        try:
            restamp(args.profile, workdir=args.keep, log=lambda line: print(line, flush=True))
        except RuntimeError as exc:
            print(f"restamp: {exc}", file=sys.stderr)
            return 1
        return 0
    try:
        out = reproduce(args.profile, jobs=args.jobs, threads=args.threads, workdir=args.keep,
                        ledger=not args.no_ledger, log=lambda line: print(line, flush=True))
    except FileNotFoundError as exc:
        print(f"make reproduce: {exc}", file=sys.stderr)
        return 2
    print(f"reproduce {args.profile}: done in {(time.perf_counter() - start) / 60:.1f} min")
    return 1 if out["changed"] else 0


if __name__ == "__main__":
    sys.exit(main())
