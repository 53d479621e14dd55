"""The command line of the result cache and the run grid (``make train`` and ``make status`` call it).

    python -m calibcourse.tools.cli list | verify | clear | compact [--root DIR]
    python -m calibcourse.tools.cli train PROFILE [--executor serial|local|slurm] [--jobs N] [--threads T]
                                            [--partition P] [--gpus G] [--time MIN] [--account A]
                                            [--cpus C] [--mem M] [--checkpoint-every E] [--root DIR]
    python -m calibcourse.tools.cli status PROFILE [--root DIR]

``list`` prints every entry of the cache with the experiment names it serves
(``profile:name``) and its wall time; ``verify`` exits non-zero naming each bad
entry; ``clear`` removes the cache; ``compact`` stores every entry's lossless float32 arrays as float32
(:meth:`calibcourse.study.runs.cache.Cache.compact`); ``train`` trains every run of a profile that has
no entry (:func:`calibcourse.study.runs.experiments.experiments`): one after another in this process
(``serial``, the default), ``--jobs`` at a time on this machine (``local``) or one SLURM
job per run (``slurm``), through submitit (:mod:`calibcourse.tools.grid`); ``status`` says
which runs are done, running, failed or missing (exit status 1 unless all are done) and which
done entries are stale (another version of the training code produced them:
:meth:`calibcourse.study.runs.cache.Cache.stale`). The ``ci`` profile trains under the pinned
numerics (:data:`calibcourse.study.training.provenance.PINNED_ENV`): ``train ci`` runs itself again in a
process started with that environment.
``calibcourse list|verify|clear|compact|train|status ...`` (:mod:`calibcourse.__main__`) is the same command.
"""
from __future__ import annotations

import argparse
import sys

from calibcourse.study.runs.cache import Cache, CacheError, config_key
from calibcourse.study.runs.experiments import experiments
from calibcourse.study.runs.profiles import PROFILES
from calibcourse.study.training.provenance import PINNED_PROFILES
from calibcourse.tools._env import in_pinned_process

__all__ = ["main", "EXECUTORS"]

#: how ``train`` runs the missing runs
EXECUTORS = ("serial", "local", "slurm")


def _experiment_names() -> dict:
    """``{cache key: "profile:name"}`` of every experiment of every profile (the first name of a shared key)."""
    names = {}
    for prof in PROFILES:
        for name, cfg in experiments(prof).items():
            names.setdefault(config_key(cfg), f"{prof}:{name}")
    return names


def _list(cache: Cache) -> int:
    names = _experiment_names()
    for key in cache.keys():
        try:
            m = cache.check(key)
            status = f"{m['info'].get('wall_time_s', 0):7.1f} s  {m['info'].get('device', '?')}"
        except CacheError as exc:
            status = f"BAD: {exc}"
        print(f"{key}  {names.get(key, '(no experiment)'):45s} {status}")
    print(f"{len(cache.keys())} entries, {cache.size_bytes() / 1e6:.1f} MB in {cache.root}")
    return 0


def _verify(cache: Cache) -> int:
    bad = cache.verify()
    for _key, problem in bad:
        print(f"BAD {problem}", file=sys.stderr)
    print(f"{len(cache.keys()) - len(bad)} good, {len(bad)} bad entries in {cache.root}")
    return 1 if bad else 0


def _train(cache: Cache, args) -> int:
    from calibcourse.tools import grid

    configs = experiments(args.profile)
    todo = {n: c for n, c in configs.items() if cache.load(c) is None}
    try:
        grid.check_inputs(todo)
    except FileNotFoundError as exc:
        print(f"make train PROFILE={args.profile}: {exc}", file=sys.stderr)
        return 2
    print(f"profile {args.profile}: {len(configs)} runs ({len(grid.unique_runs(configs))} distinct configs), "
          f"{len(todo)} without an entry in {cache.root}", flush=True)
    log = lambda line: print(line, flush=True)  # noqa: E731
    if args.executor == "serial":
        skipped = grid.train_serial(configs, cache, checkpoint_every=args.checkpoint_every, log=log,
                                    threads=args.threads)
        _record_stability(cache, configs, args, log)
        return 1 if skipped else 0  # runs another job trains have no entry yet
    if args.executor == "local":
        failed = grid.train_local(configs, args.jobs, cache, checkpoint_every=args.checkpoint_every, log=log,
                                  threads=args.threads)
        _record_stability(cache, configs, args, log)
        return 1 if failed else 0
    slurm = {"partition": args.partition, "gpus": args.gpus, "time": args.time, "account": args.account,
             "cpus": args.cpus, "mem": args.mem}
    grid.submit_slurm(configs, cache, slurm, checkpoint_every=args.checkpoint_every, log=log, threads=args.threads)
    return 0


def _record_stability(cache: Cache, configs: dict, args, log) -> None:
    """The pinned profiles' entries learn whether their training is chaotic
    (:mod:`calibcourse.study.runs.stability`)."""
    if args.profile not in PINNED_PROFILES or args.no_stability:
        return
    from calibcourse.study.runs.stability import stability
    from calibcourse.tools.grid import unique_runs

    todo = [(name, cfg) for name, cfg in unique_runs(configs).values()
            if cache.load(cfg) is not None and "stability" not in cache.check(config_key(cfg))]
    for i, (name, cfg) in enumerate(todo, start=1):
        s = stability(cache.load(cfg))
        cache.record_stability(config_key(cfg), s)
        moves = ", ".join(f"{k} {v:+.3f}" for k, v in s["moves"].items())
        log(
            f"[{i}/{len(todo)}] {name}: {'chaotic' if s['chaotic'] else 'stable'} "
            f"({moves} with perturbed initial weights)"
        )


def _status(cache: Cache, profile: str) -> int:
    from calibcourse.tools import grid

    return 1 if grid.print_status(grid.status(experiments(profile), cache)) else 0


def main(argv=None) -> int:
    """Run the command line.

    Parameters
    ----------
    argv : list of str, optional
        The arguments (default: ``sys.argv[1:]``).

    Returns
    -------
    int
        The exit status: 0; 1 when ``verify`` found bad entries, a ``train`` run failed or ``status`` found
        runs not done; 2 when ``train`` misses an input.

    Examples
    --------
    >>> import tempfile
    >>> main(["verify", "--root", tempfile.mkdtemp()])  # doctest: +ELLIPSIS
    0 good, 0 bad entries in ...
    0
    """
    ap = argparse.ArgumentParser(prog="python -m calibcourse.tools.cli", description=__doc__.split("\n")[0])
    ap.add_argument("command", choices=("list", "verify", "train", "status", "clear", "compact"))
    ap.add_argument("profile", nargs="?", choices=PROFILES, help=f"for train and status: {', '.join(PROFILES)}")
    ap.add_argument(
        "--root", default=None, help="cache folder (default $CALIBCOURSE_CACHE, else the checkout's data/cache)"
    )
    ap.add_argument("--executor", default="serial", choices=EXECUTORS,
                    help="train: serial (this process), local (--jobs processes through submitit), "
                         "slurm (one SLURM job per run through submitit)")
    ap.add_argument("--jobs", type=int, default=1, help="local: runs at a time")
    ap.add_argument("--no-stability", action="store_true",
                    help=f"train, for the {', '.join(PINNED_PROFILES)} profile: do not measure whether each run's "
                         "training is chaotic (a second run with perturbed initial weights)")
    ap.add_argument("--checkpoint-every", type=int, default=5, help="epochs between checkpoints (default 5)")
    ap.add_argument("--threads", type=int, default=None,
                    help="torch threads per run, for every executor (default 1); CPU results are "
                         "byte-identical between executors with the same count, and each entry records it")
    slurm = ap.add_argument_group("slurm (one job per run)")
    slurm.add_argument("--partition", default=None)
    slurm.add_argument("--gpus", type=int, default=None, help="GPUs per job (default 1)")
    slurm.add_argument("--time", type=int, default=None, help="time limit per job in minutes (default 720)")
    slurm.add_argument("--account", default=None)
    slurm.add_argument("--cpus", type=int, default=None, help="CPUs per job (default 8)")
    slurm.add_argument("--mem", default=None, help="memory per job, e.g. 32G")
    argv = sys.argv[1:] if argv is None else list(argv)
    args = ap.parse_args(argv)
    try:
        cache = Cache(args.root)
    except CacheError as exc:  # an installed copy, outside a checkout, with no cache named
        print(f"calibcourse {args.command}: error: {exc}", file=sys.stderr)
        return 2
    if args.command == "list":
        return _list(cache)
    if args.command == "verify":
        return _verify(cache)
    if args.command == "compact":
        print(f"{cache.compact() / 2**20:.1f} MiB saved in {cache.root}")
        return 0
    if args.command == "clear":
        print(f"removed {cache.clear()} entries from {cache.root}")
        return 0
    if not args.profile:
        ap.error(f"{args.command} needs a PROFILE: {', '.join(PROFILES)}")
    if args.jobs < 1:
        ap.error(f"--jobs must be >= 1; got {args.jobs}")
    if args.threads is not None and args.threads < 1:
        ap.error(f"--threads must be >= 1; got {args.threads}")
    if args.command == "status":
        return _status(cache, args.profile)
    if args.profile in PINNED_PROFILES and args.threads not in (None, 1):
        ap.error(
            f"the {args.profile} profile trains under the pinned numerics, with one thread; "
            f"got --threads {args.threads}"
        )
    rc = in_pinned_process("calibcourse.tools.cli", argv, args.profile)
    return _train(cache, args) if rc is None else rc


if __name__ == "__main__":
    sys.exit(main())
