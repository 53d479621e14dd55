"""``make restamp``: after a change of the training code that moves no number, record the new code.

A cache entry records the fingerprint of the training code that produced it
(:func:`calibcourse.study.training.provenance.code_fingerprint`), so a change that moves no
number (a module moved, a function split, a new option whose default path is the old one)
still makes every entry *stale*. :func:`restamp` proves that no number moved, then records the
current code in every stale entry whose code it proved (:meth:`calibcourse.study.runs.cache.Cache.restamp`,
which keeps the old fingerprint and the evidence in the manifest's ``restamped``). The proof
depends on the machine:

* **on a CPU of the entries' kind** (their torch, threads, numerics and CPU kind are this
  machine's): the ``ci`` profile's runs are retrained with the current code and must come
  back byte-identical to their committed entries;
* **on a CPU of another kind**, whose bits are not the entries' anyway: the ``ci`` runs are
  trained twice on this machine, once with the code the entries were trained with (the newest
  commit whose training code has their fingerprint, extracted from git into a temporary
  folder) and once with the working tree, and the two must agree bit for bit.

Either way nothing is written unless every compared run agrees; the runs that moved are named.

    make restamp                       # python -m calibcourse.tools.reproduce --restamp
    make restamp REF=<commit> JOBS=2   # the entries' code at <commit>; both trainings at once
    make restamp REF=<c1>,<c2>         # entries of several training codes (merged branches): each its commit
"""
from __future__ import annotations

import io
import json
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

__all__ = ["restamp", "reference_commit"]

#: the child process that trains ``configs`` (a JSON file) into a cache with the package it
#: imports; it uses only what every version of the package has (``Cache``, ``train_serial``)
_TRAIN_SCRIPT = (
    "import json, os, sys\n"
    "import calibcourse\n"
    "if not os.path.realpath(calibcourse.__file__).startswith(os.path.realpath(os.getcwd()) + os.sep):\n"
    "    sys.exit(f'imported calibcourse from {calibcourse.__file__}, not from {os.getcwd()}')\n"
    "from calibcourse.study.runs.cache import Cache\n"
    "from calibcourse.tools.grid import train_serial\n"
    "configs = json.loads(open(sys.argv[1]).read())\n"
    "sys.exit(1 if train_serial(configs, Cache(sys.argv[2]), log=lambda line: None) else 0)\n"
)


def _repository() -> Path:
    """The checkout this package runs from (the folder that holds ``calibcourse/``)."""
    return Path(__file__).resolve().parents[2]


def _git(repo: Path, *args: str, text: bool = True) -> str | bytes:
    try:
        out = subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=text)
    except FileNotFoundError:
        raise RuntimeError("git is not installed: on a CPU of another kind than the entries', restamp compares the "
                           "entries' code (from git) with the working tree's") from None
    if out.returncode != 0:
        err = out.stderr if text else out.stderr.decode(errors="replace")
        raise RuntimeError(f"git {' '.join(args[:2])} failed in {repo}: {err.strip().splitlines()[-1:]}")
    return out.stdout


def _extract(repo: Path, commit: str, dest: Path) -> Path:
    """``calibcourse/`` of ``commit`` into ``dest``; the folder that holds the package."""
    raw = _git(repo, "archive", "--format=tar", commit, "calibcourse", text=False)
    dest.mkdir(parents=True, exist_ok=True)
    with tarfile.open(fileobj=io.BytesIO(raw)) as tar:
        if hasattr(tarfile, "data_filter"):
            tar.extractall(dest, filter="data")
        else:  # pragma: no cover - Python before 3.11.4
            tar.extractall(dest)
    return dest


def reference_commit(code: str, repo=None, limit: int = 200, workdir=None) -> str:
    """The newest commit (of the last ``limit`` before ``HEAD``) whose training code has fingerprint ``code``.

    Parameters
    ----------
    code : str
        A fingerprint recorded by cache entries (:func:`calibcourse.study.training.provenance.code_fingerprint`).
    repo : str or path-like, optional
        The git checkout (default: this package's).
    limit : int, default=200
        How many commits back to look.
    workdir : str or path-like, optional
        Where the commits' packages are extracted (default: a temporary folder, removed).

    Returns
    -------
    str
        The commit's full hash.

    Raises
    ------
    LookupError
        No commit of the last ``limit`` has that training code (pass one: ``make restamp REF=<commit>``).

    Examples
    --------
    >>> from calibcourse.study.training.provenance import code_fingerprint
    >>> head = reference_commit(code_fingerprint())  # doctest: +SKIP
    """
    from calibcourse.study.training.provenance import code_fingerprint

    repo = Path(repo) if repo else _repository()
    tmp = Path(workdir) if workdir else Path(tempfile.mkdtemp(prefix="calibcourse-history-"))
    try:
        seen = set()
        for commit in _git(repo, "rev-list", "-n", str(limit), "HEAD").split():
            tree = _git(repo, "rev-parse", f"{commit}:calibcourse").strip()
            if tree in seen:
                continue
            seen.add(tree)
            package = _extract(repo, commit, tmp / commit[:12]) / "calibcourse"
            if code_fingerprint(root=package) == code:
                return commit
    finally:
        if not workdir:
            shutil.rmtree(tmp, ignore_errors=True)
    raise LookupError(f"none of the last {limit} commits before HEAD has training code {code}: name the commit "
                      "the entries were trained at (make restamp REF=<commit>), or retrain the stale entries")


def _commit_for(code: str, refs: list, repo: Path, single: bool, workdir: Path) -> str:
    """The commit whose training code is ``code``: the one of ``refs`` (given commits) that has it, the only
    one given where one change is checked (a wrong one is caught when its runs are trained), else the
    newest in the history (:func:`reference_commit`)."""
    from calibcourse.study.training.provenance import code_fingerprint

    for commit in refs:
        if code_fingerprint(root=_extract(repo, commit, workdir / commit[:12]) / "calibcourse") == code:
            return commit
    if single and len(refs) == 1:
        return refs[0]
    return reference_commit(code, repo)


#: what each tree of :func:`_train_trees` holds, for the report
_TREES = {"entries": "the entries' code", "current": "the working tree's code"}


def _train_trees(trees: dict, configs: dict, workdir: Path, jobs: int = 1, log=print) -> dict:
    """Train ``configs`` with each tree's package (``{label: folder holding calibcourse/}``) in a child
    process of this one's environment; ``{label: Cache}``. ``jobs`` >= 2 trains the trees at once."""
    from calibcourse.study.runs.cache import Cache

    spec = workdir / "configs.json"
    spec.write_text(json.dumps(configs))
    procs, caches, t0 = {}, {}, time.perf_counter()
    for label, tree in trees.items():
        caches[label] = Cache(workdir / f"cache-{label}")
        env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tree), os.environ.get("PYTHONPATH", "")]),
               "CALIBCOURSE_QUIET": "1"}
        env.pop("CALIBCOURSE_CACHE", None)
        logfile = open(workdir / f"train-{label}.log", "w")
        procs[label] = (subprocess.Popen([sys.executable, "-c", _TRAIN_SCRIPT, str(spec), str(caches[label].root)],
                                         cwd=tree, env=env, stdout=logfile, stderr=subprocess.STDOUT), logfile)
        if jobs < 2:
            _wait(label, *procs.pop(label), workdir, log, t0)
    for label, (proc, logfile) in procs.items():
        _wait(label, proc, logfile, workdir, log, t0)
    return caches


def _wait(label, proc, logfile, workdir, log, t0):
    rc = proc.wait()
    logfile.close()
    if rc != 0:
        tail = (workdir / f"train-{label}.log").read_text()[-1500:]
        raise RuntimeError(f"training with {_TREES[label]} failed (exit {rc}):\n{tail}")
    log(f"restamp: trained with {_TREES[label]} ({time.perf_counter() - t0:.0f} s since the start)")


def restamp(profile: str = "ci", committed_root=None, workdir=None, log=print, reference: str | None = None,
            jobs: int = 1, trainer=None) -> int:
    """Record the current training code in the stale entries, after proving that no number moved.

    Parameters
    ----------
    profile : str, default="ci"
        The profile trained as evidence (the ``ci`` profile runs every kind of training step).
    committed_root : str or path-like, optional
        The committed cache (default :class:`calibcourse.study.runs.cache.Cache`'s).
    workdir : str or path-like, optional
        Where the retrained caches go (kept); default a temporary folder, removed.
    log : callable, default=print
        Where the report's lines go.
    reference : str, optional
        On a CPU of another kind: the commit whose code trained the entries, or several, comma-separated,
        where the stale entries record several training codes (each code is checked against the commit
        that has it; default: found by :func:`reference_commit`).
    jobs : int, default=1
        On a CPU of another kind: 2 trains the entries' code and the working tree's at once.
    trainer : callable, optional
        ``trainer(trees, configs, workdir) -> {label: Cache}`` for the two trainings on a CPU of
        another kind (default: a child process per tree); ``trees`` maps ``"entries"`` and
        ``"current"`` to the folders that hold each one's ``calibcourse/``.

    Returns
    -------
    int
        The number of entries restamped (0 when every entry already had the current code).

    Raises
    ------
    RuntimeError
        A compared run moved, or nothing could be compared.

    Examples
    --------
    Retraining the ci profile takes minutes (``tests/test_reproduce.py`` runs small ones):

    >>> restamp("ci")  # doctest: +SKIP
    """
    from calibcourse.study.runs.cache import Cache, config_key
    from calibcourse.study.runs.experiments import experiments
    from calibcourse.study.training.provenance import current, differences
    from calibcourse.tools.grid import train_serial, unique_runs
    from calibcourse.tools.retrained import compare_runs

    committed = Cache(committed_root)
    stale = committed.stale()
    if not stale:
        log("every entry records the current training code: nothing to restamp")
        return 0
    here = current()
    runs = {name: cfg for name, cfg in unique_runs(experiments(profile)).values() if config_key(cfg) in stale}
    entries = {name: committed.load(cfg) for name, cfg in runs.items()}
    runs = {name: cfg for name, cfg in runs.items() if entries[name] is not None}
    if not runs:
        raise RuntimeError(f"none of the {len(stale)} stale entries is a run of the {profile} profile: nothing "
                           "proves their bits unchanged; retrain them instead (remove them, then make train)")
    codes = sorted({str(entries[n].provenance.get("code")) for n in runs})
    kinds = sorted({str(entries[n].provenance.get("cpu_kind")) for n in runs})
    home = all(set(differences(entries[n].provenance, here)) <= {"code"}
               and entries[n].provenance.get("cpu_kind") == here["cpu_kind"] for n in runs)
    tmp = Path(workdir) if workdir else Path(tempfile.mkdtemp(prefix="calibcourse-restamp-"))
    try:
        if home:
            log(f"restamp: {len(runs)} stale {profile} entries were trained on this machine's CPU kind "
                f"({here['cpu_kind']}) and provenance: retraining them with the current code (training code "
                f"{here['code']}) and comparing with the committed bits")
            fresh = Cache(tmp / "cache")
            train_serial(runs, fresh, log=lambda line: None)
            moved = [n for n, cfg in runs.items() if not compare_runs(entries[n], fresh.load(cfg))["identical"]]
            because = dict.fromkeys(codes, f"{len(runs)} {profile} runs retrained byte-identical to their entries "
                                              f"on {here['cpu_kind']} under code {here['code']}")
        else:
            log(f"restamp: {len(runs)} stale {profile} entries were trained on {', '.join(kinds)}, under training "
                f"code {', '.join(codes)}; this machine is {here['cpu_kind']}, so their bits are not expected here")
            repo = _repository()
            refs = [_git(repo, "rev-parse", "--verify", f"{r}^{{commit}}").strip()
                    for r in (reference.split(",") if reference else ())]
            moved, because = [], {}
            for code in codes:  # one change at a time: each code's runs against the commit that has it
                group = {n: cfg for n, cfg in runs.items() if str(entries[n].provenance.get("code")) == code}
                commit = _commit_for(code, refs, repo, single=len(codes) == 1, workdir=tmp / "history")
                log(f"restamp: the change is checked on this machine instead: {len(group)} runs of code {code} "
                    f"trained with the entries' code (commit {commit[:12]}) and with the working tree's (training "
                    f"code {here['code']}), then compared bit for bit")
                trees = {"entries": _extract(repo, commit, tmp / f"reference-{code}"), "current": repo}
                # each run as its entry records its config: the entries' code wrote it, and the current one
                # reads it (a new option absent from it takes its default)
                stored = {n: entries[n].config for n in group}
                work = tmp / f"code-{code}"
                work.mkdir(parents=True, exist_ok=True)
                caches = (trainer or (lambda t, c, w: _train_trees(t, c, w, jobs=jobs, log=log)))(trees, stored, work)
                for n, cfg in group.items():
                    old, new = caches["entries"].load(cfg), caches["current"].load(cfg)
                    if old is None or new is None:
                        raise RuntimeError(f"{n}: not trained ({'entries' if old is None else 'current'} code)")
                    if old.provenance.get("code") != code:
                        raise RuntimeError(f"commit {commit[:12]} trains with code {old.provenance.get('code')}, not "
                                           f"the entries' {code}: name the right commit (make restamp REF=<commit>)")
                    if not compare_runs(old, new)["identical"]:
                        moved.append(n)
                because[code] = (f"{len(group)} {profile} runs trained byte-identical on {here['cpu_kind']} under "
                                 f"the entries' code {code} (commit {commit[:12]}) and under code {here['code']} "
                                 f"(entries trained on {', '.join(kinds)})")
    finally:
        if not workdir:
            shutil.rmtree(tmp, ignore_errors=True)
    if moved:
        raise RuntimeError(f"{len(moved)} of {len(runs)} {profile} runs changed their bits under the current code "
                           f"({', '.join(moved[:5])}{', ...' if len(moved) > 5 else ''}): the change moves numbers; "
                           "retrain the stale entries instead of restamping them")
    log(f"restamp: {len(runs)} of {len(runs)} runs byte-identical: the change moved no number")
    proven = {str(entries[n].provenance.get("code")) for n in runs}
    keys = [key for key in stale if str((committed.check(key).get("provenance") or {}).get("code")) in proven]
    for key in keys:
        committed.restamp(key, here, because[str(committed.check(key)["provenance"].get("code"))])
    for code, why in because.items():
        log(f"restamped the entries of code {code}: {why}")
    log(f"restamped {len(keys)} entries")
    left = len(stale) - len(keys)
    if left:
        log(f"restamp: {left} stale entries record another training code than the one proven and stay stale: "
            "retrain them (make status names them)")
    return len(keys)
