"""The command line of the result cache and the experiments (``make train`` calls it).

    python -m calibcourse.cli list | verify | clear [--root DIR]
    python -m calibcourse.cli train PROFILE [--root DIR]

``list`` prints every entry of the cache with the experiment names it serves
(``profile:name``) and its wall time; ``verify`` exits non-zero naming each bad
entry; ``clear`` removes the cache; ``train`` fills it with every run of a
profile (:func:`calibcourse.experiments.experiments`). ``python -m
calibcourse.cache ...`` is the same command.
"""
from __future__ import annotations

import argparse
import sys
import time

from ._docs import document
from .cache import DEFAULT_ROOT, Cache, CacheError, config_key
from .experiments import experiments
from .profiles import PROFILES

__all__ = ["main"]


def _experiment_names() -> dict:
    """``{cache key: "profile:name"}`` of every experiment of every profile (the first name of a shared key)."""
    names = {}
    for prof in PROFILES:
        try:
            for name, cfg in experiments(prof).items():
                names.setdefault(config_key(cfg), f"{prof}:{name}")
        except Exception:  # pragma: no cover - a profile whose data is absent
            pass
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


def _train(cache: Cache, profile: str) -> int:
    todo = experiments(profile)
    start = time.perf_counter()
    for i, (name, cfg) in enumerate(todo.items(), start=1):
        t = time.perf_counter()
        hit = cache.load(cfg) is not None
        if not hit:
            cache.get_or_train(cfg)
        print(f"[{i}/{len(todo)}] {name}: {'cached' if hit else f'trained in {time.perf_counter() - t:.1f} s'}",
              flush=True)
    print(f"profile {profile}: {len(todo)} runs in {time.perf_counter() - start:.1f} s; "
          f"cache {cache.size_bytes() / 1e6:.1f} MB")
    return 0


@document(("argv", "list of str, optional", "The arguments (default: ``sys.argv[1:]``)."),
          returns=("int", "The exit status: 0, or 1 when ``verify`` found bad entries."))
def main(argv=None) -> int:
    """Run the command line.

    Examples
    --------
    >>> import tempfile
    >>> main(["verify", "--root", tempfile.mkdtemp()])  # doctest: +ELLIPSIS
    0 good, 0 bad entries in ...
    0
    """
    ap = argparse.ArgumentParser(prog="python -m calibcourse.cli", description=__doc__.split("\n")[0])
    ap.add_argument("command", choices=("list", "verify", "train", "clear"))
    ap.add_argument("profile", nargs="?", choices=PROFILES, help=f"for train: {', '.join(PROFILES)}")
    ap.add_argument("--root", default=None, help=f"cache folder (default {DEFAULT_ROOT})")
    args = ap.parse_args(argv)
    cache = Cache(args.root)
    if args.command == "list":
        return _list(cache)
    if args.command == "verify":
        return _verify(cache)
    if args.command == "clear":
        print(f"removed {cache.clear()} entries from {cache.root}")
        return 0
    if not args.profile:
        ap.error(f"train needs a PROFILE: {', '.join(PROFILES)}")
    return _train(cache, args.profile)


if __name__ == "__main__":
    sys.exit(main())
