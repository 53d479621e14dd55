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
cache lacks a run of the profile. Where the provenance and the CPU kind are the entry's, the
outputs must be byte-identical; elsewhere the study's claim is that the verdicts reproduce even
where the bits do not (the contributors' guide, "Reproducibility").

``make restamp`` (``--restamp``) is :func:`calibcourse.tools.restamp.restamp`.
"""
from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

from calibcourse.study.runs.profiles import PROFILES
from calibcourse.study.runs.stability import TOLERANCE, run_metrics
from calibcourse.study.training.provenance import PINNED_PROFILES
from calibcourse.tools._env import environ, in_pinned_process
from calibcourse.tools.restamp import restamp
from calibcourse.tools.retrained import compare_runs, within_tolerance

__all__ = ["TOLERANCE", "run_metrics", "compare_runs", "within_tolerance", "changed_verdicts", "reproduce", "restamp",
           "main"]


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
    from calibcourse.study.training.provenance import current
    from calibcourse.tools.grid import train_local, train_serial, unique_runs

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
            from calibcourse.tools.smoke import copy_book

            t0 = time.perf_counter()
            claims = {}
            for label, root in (("committed", committed.root), ("retrained", fresh.root)):
                log(f"the ledger from the {label} cache:")
                claims[label] = _ledger(copy_book(tmp / f"book-{label}"), profile, root, log)
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
                    help="instead: prove on this machine that the change of the training code moved no bit of "
                         "the profile's runs (calibcourse.tools.restamp), then record the current code in the stale "
                         "entries")
    ap.add_argument("--reference", metavar="COMMIT", default=None,
                    help="with --restamp on a CPU of another kind than the entries': the commit whose training code "
                         "trained them (default: the newest commit with their fingerprint)")
    argv = sys.argv[1:] if argv is None else list(argv)
    args = ap.parse_args(argv)
    if args.reference and not args.restamp:
        ap.error("--reference goes with --restamp")
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
        from calibcourse.study.runs.cache import Cache

        try:
            restamp(args.profile, workdir=args.keep, log=lambda line: print(line, flush=True),
                    reference=args.reference, jobs=args.jobs)
        except (RuntimeError, LookupError) as exc:
            print(f"restamp: {exc}", file=sys.stderr)
            return 1
        return 1 if Cache().stale() else 0
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
