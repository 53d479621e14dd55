"""The run grid of a profile on submitit: in parallel on this machine, or one SLURM job per run.

    make train PROFILE=full EXECUTOR=local JOBS=2       # this machine, 2 runs at a time
    make train PROFILE=full EXECUTOR=slurm PARTITION=gpu GPUS=1 TIME=600 ACCOUNT=myproj
    make status PROFILE=full                            # done / running / failed / missing per run

Each run of the profile that has no valid entry in the cache (:mod:`calibcourse.study.runs.cache`) and
is not running already becomes one submitit job (`submitit <https://github.com/facebookincubator/submitit>`_,
pinned in ``requirements-train.txt``). A job trains its config with checkpoints every
``checkpoint_every`` epochs (:meth:`calibcourse.study.runs.cache.Cache.get_or_train`) and writes the
entry atomically; a job that dies leaves no entry, its checkpoint stays, and the next
``make train`` submits the run again, which resumes from that checkpoint. On SLURM a
preempted or timed-out job is requeued by submitit (the job is a
``submitit.helpers.Checkpointable``) and resumes the same way.

What each run is doing is kept in ``<cache root>/.grid/<key>.json`` (written by the
submitter, then by the job): the executor, the job id, the submitit folder, the process and
host, and ``failed`` with the error when the job raised. :func:`status` reads those and asks
the scheduler (``sacct`` through submitit) about SLURM jobs.

Why submitit: it is a small pure-Python dependency that submits a pickled Python callable
to SLURM (``sbatch``) or to local processes through one interface, requeues on preemption,
and needs no server; Ray or Dask would need a cluster of their own running beside SLURM.
"""
from __future__ import annotations

import json
import os
import signal
import socket
import sys
import time
import traceback
from pathlib import Path

from calibcourse.calibration._validation import check_int
from calibcourse.study.runs.cache import Cache, CacheError, config_key
from calibcourse.study.training.provenance import resolve_threads
from calibcourse.tools._env import environ

__all__ = [
    "TrainJob",
    "missing",
    "status",
    "unique_runs",
    "check_inputs",
    "train_serial",
    "train_local",
    "submit_slurm",
    "STATES",
    "SLURM_DEFAULTS",
]

#: what :func:`status` says of a run
STATES = ("done", "running", "failed", "missing")
#: SLURM states in which a job is still alive (queued, running or being requeued)
_SLURM_ALIVE = {"PENDING", "RUNNING", "REQUEUED", "CONFIGURING", "COMPLETING", "RESIZING", "SUSPENDED",
                "REQUEUE_HOLD", "REQUEUE_FED", "SIGNALING", "STAGE_OUT"}
#: the SLURM parameters a job gets unless ``make train`` says otherwise (time in minutes)
SLURM_DEFAULTS = {"partition": None, "gpus": 1, "time": 720, "account": None, "cpus": 8, "mem": None}


def _grid_dir(cache: Cache) -> Path:
    return cache.root / ".grid"


def _marker(cache: Cache, key: str) -> Path:
    return _grid_dir(cache) / f"{key}.json"


def _write_marker(cache: Cache, key: str, **fields) -> None:
    path = _marker(cache, key)
    path.parent.mkdir(parents=True, exist_ok=True)
    old = json.loads(path.read_text()) if path.is_file() else {}
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(json.dumps({**old, **fields}, indent=1, sort_keys=True))
    os.replace(tmp, path)


def unique_runs(configs: dict) -> dict:
    """``{key: (name, config)}``: runs that share a config (and so an entry) are trained once.

    Parameters
    ----------
    configs : dict
        ``{name: config}``.

    Returns
    -------
    dict
        ``{cache key: (first name, config)}``, in the order of ``configs``.

    Examples
    --------
    >>> cfg = {"data": {"name": "digits"}, "model": {"name": "mlp"}, "epochs": 1}
    >>> runs = unique_runs({"ch1/a": cfg, "ch4/same": dict(cfg), "ch4/b": {**cfg, "epochs": 2}})
    >>> [name for name, _ in runs.values()]
    ['ch1/a', 'ch4/b']
    """
    out = {}
    for name, cfg in configs.items():
        out.setdefault(config_key(cfg), (name, cfg))
    return out


# --------------------------------------------------------------------------- the job
try:  # submitit is installed by `make train` (requirements-train.txt); the package works without it
    import submitit as _submitit

    _Checkpointable = _submitit.helpers.Checkpointable
except ImportError:  # pragma: no cover
    _submitit, _Checkpointable = None, object


class TrainJob(_Checkpointable):
    """One run as a submitit job: ``TrainJob()(config, cache_root, threads, checkpoint_every)``.

    Has the run train with ``threads`` torch threads (None: 1, the policy of
    :mod:`calibcourse.study.training.provenance`; OpenMP waits passively), marks it as
    running, trains it through the cache with checkpoints, and marks it failed (with the
    error) if it raises. A ``submitit.helpers.Checkpointable``: SLURM requeues it after a preemption or
    a time-out, and the requeued job resumes from the run's checkpoint. It is meant to run
    in a process of its own: it sets the process's environment. ``kill_after_epoch`` is a
    preemption drill: the job kills itself (SIGKILL) right after the checkpoint of that epoch
    is written, which is how ``tests/test_grid.py`` checks that the next ``make train`` resumes.

    Examples
    --------
    In this process, with a tiny run (the job returns the entry's key and the run's time):

    >>> import os, tempfile
    >>> env = dict(os.environ)
    >>> cfg = {"data": {"name": "digits", "n_train": 200}, "model": {"name": "mlp", "depth": 1, "width": 8},
    ...        "epochs": 1}
    >>> root = tempfile.mkdtemp()
    >>> out = TrainJob()(cfg, root, threads=1)
    >>> out["key"] == config_key(cfg), [row["state"] for row in status({"a": cfg}, Cache(root))]
    (True, ['done'])
    >>> os.environ.clear(); os.environ.update(env)
    """

    def __call__(self, config: dict, cache_root: str, threads: int | None = None, checkpoint_every: int = 5,
                 kill_after_epoch: int | None = None):
        """Train ``config`` into the cache at ``cache_root``, in one job of the grid."""
        os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
        os.environ.setdefault("CALIBCOURSE_QUIET", "1")
        cache = Cache(cache_root)
        key = config_key(config)
        _write_marker(cache, key, state="running", pid=os.getpid(), host=socket.gethostname(),
                      slurm_job_id=os.environ.get("SLURM_JOB_ID"), started=time.time())
        try:
            result = cache.get_or_train(config, progress=False, checkpoint_every=checkpoint_every, threads=threads,
                                        on_checkpoint=_killer(kill_after_epoch))
        except BaseException as exc:
            _write_marker(cache, key, state="failed", error=f"{type(exc).__name__}: {exc}",
                          traceback=traceback.format_exc()[-4000:])
            raise
        _marker(cache, key).unlink(missing_ok=True)
        return {"key": key, "wall_time_s": result.info.get("wall_time_s")}


def _killer(epoch: int | None):
    """None, or a checkpoint hook that kills this process (SIGKILL: no handler runs) once the
    checkpoint of ``epoch`` or later is written: a preemption at a known point."""
    if epoch is None:
        return None

    def kill(done: int) -> None:
        if done >= epoch:
            os.kill(os.getpid(), signal.SIGKILL)

    return kill


def _need_submitit():
    if _submitit is None:
        raise ImportError("the run grid needs submitit: `make train EXECUTOR=...` installs it "
                          "(pip install -r requirements-train.txt)")
    return _submitit


# --------------------------------------------------------------------------- status
def _pid_alive(pid) -> bool:
    try:
        os.kill(int(pid), 0)
    except (OSError, TypeError, ValueError):
        return False
    return True


def _run_state(cache: Cache, key: str) -> tuple[str, str]:
    """``(state, detail)`` of one run: see :func:`status`."""
    if cache.path(key).exists():
        try:
            m = cache.check(key)
            return "done", f"{m['info'].get('wall_time_s', 0):.0f} s on {m['info'].get('device', '?')}"
        except CacheError as exc:
            return "failed", f"bad entry: {exc}"
    path = _marker(cache, key)
    if not path.is_file():
        return "missing", ""
    mark = json.loads(path.read_text())
    if mark.get("state") == "failed":
        return "failed", mark.get("error", "")
    if mark.get("executor") == "slurm" and mark.get("job_id"):
        state = _need_submitit().SlurmJob(mark["folder"], str(mark["job_id"])).state
        if state in _SLURM_ALIVE or state == "UNKNOWN" and time.time() - mark.get("submitted", 0) < 120:
            return "running", f"SLURM job {mark['job_id']} {state}"
        if state == "COMPLETED":
            return "failed", f"SLURM job {mark['job_id']} completed without an entry"
        return "failed", f"SLURM job {mark['job_id']} {state}"
    same_host = mark.get("host", socket.gethostname()) == socket.gethostname()
    pid = mark.get("pid") or mark.get("job_id")
    if same_host and _pid_alive(pid):
        return "running", f"process {pid}"
    ckpt = cache.checkpoint_path(key)
    return "failed", "the job died" + (" (a checkpoint is kept: the next run resumes)" if ckpt.is_file() else "")


def status(configs: dict, cache: Cache | None = None) -> list[dict]:
    """Which runs are done (a valid entry), running, failed (the job raised or died) or missing.

    A done run whose entry another version of the training code produced has its reason in
    ``stale`` (:meth:`calibcourse.study.runs.cache.Cache.stale`; empty otherwise).

    Parameters
    ----------
    configs : dict
        ``{name: config}``, e.g. :func:`calibcourse.study.runs.experiments.experiments` of a profile.
    cache : calibcourse.study.runs.cache.Cache, optional
        The cache (default: :class:`Cache()`).

    Returns
    -------
    list of dict
        One row per run: ``name``, ``key``, ``state`` (one of :data:`STATES`) and ``detail``.

    Examples
    --------
    >>> import tempfile
    >>> cfg = {"data": {"name": "digits"}, "model": {"name": "mlp"}, "epochs": 1}
    >>> [row["state"] for row in status({"a": cfg}, Cache(tempfile.mkdtemp()))]
    ['missing']
    """
    cache = cache or Cache()
    keys = {name: config_key(cfg) for name, cfg in configs.items()}
    stale = cache.stale(set(keys.values()))
    rows = []
    for name, key in keys.items():
        state, detail = _run_state(cache, key)
        rows.append({"name": name, "key": key, "state": state, "detail": detail,
                     "stale": stale.get(key, "") if state == "done" else ""})
    return rows


def missing(configs: dict, cache: Cache | None = None) -> dict:
    """The runs a ``make train`` submits: neither done nor running (failed and dead ones again).

    Parameters
    ----------
    configs : dict
        ``{name: config}``.
    cache : calibcourse.study.runs.cache.Cache, optional
        The cache (default: :class:`Cache()`).

    Returns
    -------
    dict
        ``{key: (name, config)}`` of the runs to submit: no entry and not running.

    Examples
    --------
    >>> import tempfile
    >>> cfg = {"data": {"name": "digits"}, "model": {"name": "mlp"}, "epochs": 1}
    >>> todo = missing({"a": cfg, "b": dict(cfg)}, Cache(tempfile.mkdtemp()))
    >>> list(todo.values()) == [("a", cfg)]  # one entry for both names, not in this empty cache
    True
    """
    cache = cache or Cache()
    return {key: nc for key, nc in unique_runs(configs).items() if _run_state(cache, key)[0] not in ("done", "running")}


# --------------------------------------------------------------------------- inputs
def _inputs(config: dict):
    """``(data set names, weights file names)`` a config reads from disk (its backbone's included)."""
    from calibcourse.study.training.config import DATASETS

    sets, weights = [], []
    name = config.get("data", {}).get("name")
    if name in DATASETS and name in ("mnist", "cifar10", "cifar100"):
        sets.append((name, config["data"].get("root")))
    spec = config.get("model", {}).get("backbone")
    if isinstance(spec, dict):
        if "pretrained" in spec and "weights" in spec["pretrained"]:
            weights.append(spec["pretrained"]["weights"])
        elif "data" in spec:
            more = _inputs(spec)
            sets += more[0]
            weights += more[1]
    return sets, weights


def check_inputs(configs: dict) -> None:
    """Stop before training when a data set or a weights file that a run reads is not on disk.

    Data sets are looked for under ``data.root``, else ``$CALIBCOURSE_DATA``, else ``~/data``
    (:func:`calibcourse.study.training.data.data_root`, :func:`calibcourse.study.training.downloads.check_available`);
    weights in that folder's ``weights/`` (:func:`calibcourse.study.training.train.weights_file`).

    Parameters
    ----------
    configs : dict
        ``{name: config}`` of the runs about to train.

    Returns
    -------
    None
        Raises ``FileNotFoundError`` naming every missing file and how to get it.

    Examples
    --------
    >>> check_inputs({"a": {"data": {"name": "mnist1d"}, "model": {"name": "mlp"}}})  # generated: nothing to read
    """
    from calibcourse.study.training.data import data_root
    from calibcourse.study.training.downloads import DatasetNotFoundError, check_available
    from calibcourse.study.training.train import weights_file

    problems, seen = [], set()
    for name, cfg in configs.items():
        sets, weights = _inputs(cfg)
        for data_name, root in sets:
            root = str(data_root(root))
            if (data_name, root) in seen:
                continue
            seen.add((data_name, root))
            try:
                check_available(data_name, root)
            except DatasetNotFoundError as exc:
                problems.append(f"{exc} (first needed by {name})")
        for w in weights:
            if w in seen:
                continue
            seen.add(w)
            try:
                weights_file(w)
            except FileNotFoundError as exc:
                problems.append(f"{exc} (needed by {name})")
    if problems:
        raise FileNotFoundError("cannot train, missing inputs:\n  " + "\n  ".join(problems))


# --------------------------------------------------------------------------- executors
def train_serial(configs: dict, cache: Cache | None = None, checkpoint_every: int = 5, log=print,
                 threads: int | None = None) -> int:
    """Train the runs without an entry one after another in this process (``make train``).

    A run that a local or SLURM job is training (:func:`status` says "running") is skipped.

    ``threads`` defaults to 1, as for every executor: CPU convolutions and batch norm round
    differently with another number of threads, and the entries must not depend on the
    executor that wrote them.

    Parameters
    ----------
    configs : dict
        ``{name: config}``.
    cache : calibcourse.study.runs.cache.Cache, optional
        The cache (default: :class:`Cache()`).
    checkpoint_every : int, default=5
        Epochs between checkpoints.
    log : callable, default=print
        Where the progress lines go.
    threads : int or None, default=None
        Torch's threads of each run that trains (None is 1:
        :func:`calibcourse.study.training.provenance.resolve_threads`).

    Returns
    -------
    int
        The number of runs left without an entry because another job is training them (0 when every run is stored).

    Examples
    --------
    >>> import tempfile
    >>> cfg = {"data": {"name": "digits", "n_train": 200}, "model": {"name": "mlp", "depth": 1, "width": 8},
    ...        "epochs": 1}
    >>> cache = Cache(tempfile.mkdtemp())
    >>> train_serial({"tiny": cfg}, cache)  # doctest: +ELLIPSIS
    [1/1] tiny: trained in ... s
    1 runs in ... s; cache ... MB
    0
    >>> train_serial({"tiny": cfg}, cache)  # doctest: +ELLIPSIS
    [1/1] tiny: cached
    1 runs in ... s; cache ... MB
    0
    """
    cache = cache or Cache()
    start, skipped = time.perf_counter(), 0
    threads = resolve_threads(threads)
    for i, (name, cfg) in enumerate(configs.items(), start=1):
        t = time.perf_counter()
        if cache.load(cfg) is not None:
            log(f"[{i}/{len(configs)}] {name}: cached")
            continue
        state, detail = _run_state(cache, config_key(cfg))
        if state == "running":  # a local or SLURM job trains it: its entry will appear
            log(f"[{i}/{len(configs)}] {name}: skipped, being trained by another job ({detail})")
            skipped += 1
            continue
        cache.get_or_train(cfg, checkpoint_every=checkpoint_every, threads=threads)
        log(f"[{i}/{len(configs)}] {name}: trained in {time.perf_counter() - t:.1f} s")
    log(f"{len(configs)} runs in {time.perf_counter() - start:.1f} s"
        + (f", {skipped} skipped (being trained by another job: `make status` follows them)" if skipped else "")
        + f"; cache {cache.size_bytes() / 1e6:.1f} MB")
    return skipped


def train_local(configs: dict, jobs: int, cache: Cache | None = None, checkpoint_every: int = 5, log=print,
                threads: int | None = None) -> int:
    """Train the missing runs on this machine, ``jobs`` at a time, through submitit's ``LocalExecutor``.

    Each job is its own process with ``OMP_WAIT_POLICY=PASSIVE`` and ``threads`` torch threads
    (default 1: use ``jobs`` for the cores; this process's environment is restored afterwards); this call
    waits for all of them and prints one line per run.
    Each job starts a Python process and imports torch (seconds): worth it for runs of minutes.

    Parameters
    ----------
    configs : dict
        ``{name: config}``.
    jobs : int
        How many runs train at once.
    cache : calibcourse.study.runs.cache.Cache, optional
        The cache (default: :class:`Cache()`).
    checkpoint_every : int, default=5
        Epochs between checkpoints.
    log : callable, default=print
        Where the progress lines go.
    threads : int or None, default=None
        Torch's threads of each run that trains (None is 1:
        :func:`calibcourse.study.training.provenance.resolve_threads`).

    Returns
    -------
    int
        The number of runs that failed (0 when all are done).

    Examples
    --------
    Runs already in the cache start no job (``tests/test_grid.py`` trains through real jobs):

    >>> import tempfile
    >>> cfg = {"data": {"name": "digits", "n_train": 200}, "model": {"name": "mlp", "depth": 1, "width": 8},
    ...        "epochs": 1}
    >>> cache = Cache(tempfile.mkdtemp())
    >>> _ = cache.get_or_train(cfg, progress=False)
    >>> train_local({"tiny": cfg}, jobs=2, cache=cache, threads=1)  # doctest: +ELLIPSIS
    1 runs, 0 to train, 2 at a time with 1 thread(s) each (submitit LocalExecutor, logs in ...)
    0 trained, 0 failed in ... s; cache ... MB
    0
    >>> train_local({"tiny": cfg}, jobs=0, cache=cache)
    Traceback (most recent call last):
        ...
    ValueError: jobs must be an integer >= 1; got 0
    """
    submitit = _need_submitit()
    check_int(jobs, "jobs", low=1)
    cache = cache or Cache()
    todo = list(missing(configs, cache).items())
    threads = resolve_threads(threads)
    with environ(OMP_WAIT_POLICY="PASSIVE", OMP_NUM_THREADS=threads):  # the jobs inherit them
        return _run_local(todo, configs, jobs, cache, threads, checkpoint_every, log, submitit)


def _run_local(todo, configs, jobs, cache, threads, checkpoint_every, log, submitit) -> int:
    """:func:`train_local`'s loop: submit ``jobs`` at a time, wait, report each run."""
    folder = _grid_dir(cache) / "submitit"
    executor = submitit.LocalExecutor(folder=str(folder))
    executor.update_parameters(timeout_min=7 * 24 * 60)
    log(f"{len(configs)} runs, {len(todo)} to train, {jobs} at a time with {threads} thread(s) each "
        f"(submitit LocalExecutor, logs in {folder})")
    start, running, failed, done = time.perf_counter(), {}, 0, 0
    while todo or running:
        while todo and len(running) < jobs:
            key, (name, cfg) = todo.pop(0)
            job = executor.submit(TrainJob(), cfg, str(cache.root), threads, checkpoint_every)
            _write_marker(cache, key, state="submitted", executor="local", job_id=job.job_id,
                          folder=str(folder), host=socket.gethostname(), pid=job.job_id, name=name,
                          submitted=time.time())
            running[key] = (name, job, time.perf_counter())
        time.sleep(0.2)
        for key in [k for k, (_, job, _) in running.items() if job.done()]:
            name, job, t0 = running.pop(key)
            done += 1
            try:
                job.result()
                log(f"[{done}/{done + len(todo) + len(running)}] {name}: trained in "
                    f"{time.perf_counter() - t0:.1f} s (job {job.job_id})")
            except Exception as exc:  # the job's error; its marker says failed
                failed += 1
                first = str(exc).strip().splitlines()
                log(f"[{done}/{done + len(todo) + len(running)}] {name}: FAILED ({first[-1] if first else exc}); "
                    f"log: {job.paths.stderr}")
    log(f"{done - failed} trained, {failed} failed in {time.perf_counter() - start:.1f} s; "
        f"cache {cache.size_bytes() / 1e6:.1f} MB")
    return failed


def submit_slurm(configs: dict, cache: Cache | None = None, slurm: dict | None = None, checkpoint_every: int = 5,
                 log=print, threads: int | None = None) -> dict:
    """Submit one SLURM job per missing run (``sbatch`` through submitit's ``SlurmExecutor``) and return.

    The jobs run this repository's Python (``sys.executable``) on the nodes, so the
    repository, its virtual environment and the cache must be on a shared file system.
    Requeued on preemption or time-out (up to 3 times), each requeued job resuming from the
    run's last checkpoint. ``make status`` follows them. ``cpus`` reserves a job's cores;
    ``threads`` (default 1, as everywhere) decides how its sums are split, and so its bits.

    Parameters
    ----------
    configs : dict
        ``{name: config}``.
    cache : calibcourse.study.runs.cache.Cache, optional
        The cache: a folder every node of the cluster sees.
    slurm : dict, optional
        ``partition``, ``gpus`` (per job), ``time`` (minutes), ``account``, ``cpus``, ``mem``; missing keys
        from :data:`SLURM_DEFAULTS`.
    checkpoint_every : int, default=5
        Epochs between checkpoints.
    log : callable, default=print
        Where the lines go.
    threads : int or None, default=None
        Torch's threads of each run that trains (None is 1:
        :func:`calibcourse.study.training.provenance.resolve_threads`).

    Returns
    -------
    dict
        ``{name: SLURM job id}`` of the jobs submitted.

    Examples
    --------
    The parameters are checked before anything is submitted (``tests/test_grid.py`` submits
    to a fake ``sbatch``):

    >>> import tempfile
    >>> submit_slurm({}, Cache(tempfile.mkdtemp()), slurm={"gpu": 1})
    Traceback (most recent call last):
        ...
    ValueError: unknown SLURM parameters ['gpu']; known: ['account', 'cpus', 'gpus', 'mem', 'partition', 'time']
    """
    submitit = _need_submitit()
    params = {**SLURM_DEFAULTS, **{k: v for k, v in (slurm or {}).items() if v not in (None, "")}}
    unknown = set(params) - set(SLURM_DEFAULTS)
    if unknown:
        raise ValueError(f"unknown SLURM parameters {sorted(unknown)}; known: {sorted(SLURM_DEFAULTS)}")
    cache = cache or Cache()
    folder = _grid_dir(cache) / "submitit"
    executor = submitit.SlurmExecutor(folder=str(folder), max_num_timeout=3)
    executor.update_parameters(
        time=int(params["time"]), gpus_per_node=int(params["gpus"]), cpus_per_task=int(params["cpus"]),
        ntasks_per_node=1, job_name="calibcourse", signal_delay_s=120,
        **{k: params[k] for k in ("partition", "account", "mem") if params[k]})
    threads = resolve_threads(threads)
    submitted = {}
    for key, (name, cfg) in missing(configs, cache).items():
        executor.update_parameters(job_name=f"calibcourse-{name}".replace("/", "-"))
        job = executor.submit(TrainJob(), cfg, str(cache.root), threads, checkpoint_every)
        _write_marker(cache, key, state="submitted", executor="slurm", job_id=job.job_id, folder=str(folder),
                      name=name, submitted=time.time())
        submitted[name] = job.job_id
        log(f"{name}: SLURM job {job.job_id}")
    log(f"{len(submitted)} jobs submitted; `make status` follows them")
    return submitted


def print_status(rows: list, out=None) -> int:
    """Print :func:`status` rows and a count per state (to ``out``, default stdout); return the number
    of runs not done."""
    out = out or sys.stdout
    width = max((len(r["name"]) for r in rows), default=10)
    for r in rows:
        stale = f"  STALE: {r['stale']}" if r.get("stale") else ""
        print(f"{r['name']:{width}s}  {r['state']:8s} {r['detail']}{stale}", file=out)
    counts = {s: sum(r["state"] == s for r in rows) for s in STATES}
    n_stale = sum(bool(r.get("stale")) for r in rows)
    print(", ".join(f"{n} {s}" for s, n in counts.items())
          + (f" ({n_stale} stale: retrain them to bring their provenance up to date)" if n_stale else ""), file=out)
    return len(rows) - counts["done"]
