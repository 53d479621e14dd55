"""calibcourse.tools.grid and the command line: the run grid on submitit (local processes, SLURM), status,
missing inputs, a killed job that leaves no entry and resumes."""
import os
import stat
import sys
import time

import numpy as np
import pytest

pytest.importorskip("submitit")

from calibcourse.study.runs import cache as cachemod  # noqa: E402
from calibcourse.study.training import train as T  # noqa: E402
from calibcourse.tools import cli, grid  # noqa: E402

TINY = {"data": {"name": "digits"}, "model": {"name": "mlp", "depth": 1, "width": 16}, "epochs": 2, "seed": 0}


def _configs(n=2, **extra):
    return {f"t/run{i}": {**TINY, "seed": i, **extra} for i in range(n)}


# ------------------------------------------------------------------ status
def test_status_says_missing_done_running_and_failed(tmp_path):
    cache = cachemod.Cache(tmp_path)
    configs = _configs(4)
    keys = [cachemod.config_key(c) for c in configs.values()]
    cache.store(T.train(configs["t/run0"], progress=False))
    grid._write_marker(cache, keys[1], state="running", executor="local", pid=os.getpid(), host=os.uname().nodename)
    grid._write_marker(cache, keys[2], state="failed", error="FloatingPointError: training diverged")
    rows = {r["name"]: r for r in grid.status(configs, cache)}
    assert [rows[n]["state"] for n in configs] == ["done", "running", "failed", "missing"]
    assert "diverged" in rows["t/run2"]["detail"]
    assert set(grid.missing(configs, cache)) == {keys[2], keys[3]}  # failed ones are submitted again
    # a local job whose process is gone is failed, not running
    dead = os.fork()
    if dead == 0:
        os._exit(0)
    os.waitpid(dead, 0)
    grid._write_marker(cache, keys[1], state="running", pid=dead)
    assert grid.status(configs, cache)[1]["state"] == "failed"


def test_status_names_entries_that_older_training_code_produced(tmp_path, monkeypatch):
    import io

    from calibcourse.study.training import provenance as P

    cache = cachemod.Cache(tmp_path)
    configs = _configs(2)
    cache.store(T.train(configs["t/run0"], progress=False))
    rows = grid.status(configs, cache)
    assert [r["stale"] for r in rows] == ["", ""]  # current code; a missing run is not stale
    mods = dict(P.code_modules())
    monkeypatch.setattr(P, "code_fingerprint", lambda entry=P.TRAINING_ENTRY: "f" * 16)
    monkeypatch.setattr(
        P, "code_modules", lambda entry=P.TRAINING_ENTRY: {**mods, "calibcourse.study.training.losses": "new"}
    )
    rows = grid.status(configs, cache)
    assert (
        rows[0]["state"] == "done"
        and rows[0]["stale"] == "training code changed since it ran (calibcourse.study.training.losses)"
    )
    out = io.StringIO()
    assert grid.print_status(rows, out) == 1  # one run not done
    text = out.getvalue()
    assert "STALE: training code changed since it ran (calibcourse.study.training.losses)" in text
    assert (
        text.splitlines()[-1]
        == "1 done, 0 running, 0 failed, 1 missing (1 stale: retrain them to bring their provenance up to date)"
    )


def test_serial_training_skips_a_run_another_job_trains_and_restores_threads(tmp_path, monkeypatch):
    import torch

    cache = cachemod.Cache(tmp_path)
    configs = _configs(2)
    keys = [cachemod.config_key(c) for c in configs.values()]
    grid._write_marker(cache, keys[0], state="running", executor="local", pid=os.getpid(), host=os.uname().nodename)
    threads, lines = torch.get_num_threads(), []
    assert grid.train_serial(configs, cache, log=lines.append, threads=2) == 1  # one run left to the other job
    assert "skipped, being trained by another job" in lines[0] and "trained in" in lines[1]
    assert "1 skipped" in lines[-1]
    assert cache.load(configs["t/run0"]) is None and cache.load(configs["t/run1"]) is not None
    assert cache.load(configs["t/run1"]).provenance["threads"] == 2  # the count it was given, recorded
    assert torch.get_num_threads() == threads


def test_environ_restores_set_and_unset_variables(monkeypatch):
    from calibcourse.tools._env import environ

    monkeypatch.setenv("CALIBCOURSE_A", "old")
    monkeypatch.delenv("CALIBCOURSE_B", raising=False)
    with pytest.raises(RuntimeError):
        with environ(CALIBCOURSE_A=1, CALIBCOURSE_B="x", CALIBCOURSE_C=None):
            assert os.environ["CALIBCOURSE_A"] == "1" and os.environ["CALIBCOURSE_B"] == "x"
            raise RuntimeError("restored on an error too")
    assert os.environ["CALIBCOURSE_A"] == "old" and "CALIBCOURSE_B" not in os.environ


def test_runs_that_share_a_config_are_trained_once(tmp_path):
    configs = {"a": TINY, "b": dict(TINY), "c": {**TINY, "seed": 5}}
    assert len(grid.missing(configs, cachemod.Cache(tmp_path))) == 2


def test_cli_status_prints_each_run_and_exits_1_until_all_are_done(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(cli, "experiments", lambda profile: _configs(2))
    assert cli.main(["status", "ci", "--root", str(tmp_path)]) == 1
    out = capsys.readouterr().out
    assert "t/run0" in out and "missing" in out and "0 done, 0 running, 0 failed, 2 missing" in out
    for cfg in _configs(2).values():
        cachemod.Cache(tmp_path).store(T.train(cfg, progress=False))
    assert cli.main(["status", "ci", "--root", str(tmp_path)]) == 0
    assert "2 done" in capsys.readouterr().out


# ------------------------------------------------------------------ inputs
def test_a_missing_data_set_or_weights_file_stops_train_naming_the_file(tmp_path, monkeypatch, capsys):
    from calibcourse.study.runs.experiments import experiments

    monkeypatch.setenv("CALIBCOURSE_DATA", str(tmp_path / "nodata"))
    full = experiments("full")
    with pytest.raises(FileNotFoundError) as info:
        grid.check_inputs(full)
    msg = str(info.value)
    for expected in (str(tmp_path / "nodata" / "cifar-100-python" / "train"),
                     str(tmp_path / "nodata" / "MNIST" / "raw" / "train-images-idx3-ubyte"),
                     str(tmp_path / "nodata" / "cifar-10-batches-py" / "data_batch_1"),
                     str(tmp_path / "nodata" / "weights" / "densenet121-a639ec97.pth"),
                     "https://www.cs.toronto.edu/~kriz/cifar-100-python.tar.gz",
                     "https://download.pytorch.org/models/densenet121-a639ec97.pth"):
        assert expected in msg
    assert cli.main(["train", "full", "--root", str(tmp_path / "cache")]) == 2
    assert "cifar-100-python" in capsys.readouterr().err and not (tmp_path / "cache").exists()
    # with the files there (small ones in the real formats), nothing is missing
    from calibcourse.tools.smoke import _write_fake_weights, write_fake_data

    write_fake_data(tmp_path / "nodata")
    _write_fake_weights(tmp_path / "nodata" / "weights")
    grid.check_inputs(full)


# ------------------------------------------------------------------ SLURM, with fake commands
FAKE = r'''#!{python}
import os, sys
log = os.environ["FAKE_SLURM_LOG"]
name = os.path.basename(sys.argv[0])
with open(log, "a") as f:
    f.write(name + " " + " ".join(sys.argv[1:]) + "\n")
    if name == "sbatch":
        f.write("SCRIPT " + open(sys.argv[-1]).read().replace("\n", "\\n") + "\n")
if name == "sbatch":
    n = sum(1 for line in open(log) if line.startswith("sbatch "))
    print(f"Submitted batch job {{4000 + n}}")
elif name == "sacct":
    state = open(os.environ["FAKE_SLURM_STATE"]).read().strip()
    ids = [sys.argv[i + 1] for i, a in enumerate(sys.argv) if a == "-j"]
    print("JobID|State|NodeList")
    for i in ids:
        print(f"{{i}}|{{state}}|node1")
'''


@pytest.fixture
def fake_slurm(tmp_path, monkeypatch):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for name in ("sbatch", "sacct", "squeue", "scancel", "srun"):
        path = bin_dir / name
        path.write_text(FAKE.format(python=sys.executable))
        path.chmod(path.stat().st_mode | stat.S_IEXEC)
    log, state = tmp_path / "slurm.log", tmp_path / "state"
    state.write_text("PENDING")
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("FAKE_SLURM_LOG", str(log))
    monkeypatch.setenv("FAKE_SLURM_STATE", str(state))
    return log, state


def test_slurm_submits_one_job_per_missing_run_with_the_given_resources(tmp_path, fake_slurm, monkeypatch):
    log, state = fake_slurm
    cache = cachemod.Cache(tmp_path / "cache")
    configs = _configs(3)
    cache.store(T.train(configs["t/run0"], progress=False))  # done: not submitted
    monkeypatch.setattr(cli, "experiments", lambda profile: configs)
    assert cli.main(["train", "full", "--root", str(cache.root), "--executor", "slurm", "--partition", "gpu",
                     "--gpus", "2", "--time", "90", "--account", "proj42", "--mem", "32G"]) == 0
    lines = log.read_text().splitlines()
    sbatch = [ln for ln in lines if ln.startswith("sbatch ")]
    scripts = [ln[len("SCRIPT "):].replace("\\n", "\n") for ln in lines if ln.startswith("SCRIPT ")]
    assert len(sbatch) == 2 and len(scripts) == 2
    for script in scripts:
        for flag in ("#SBATCH --partition=gpu", "#SBATCH --gpus-per-node=2", "#SBATCH --time=90",
                     "#SBATCH --account=proj42", "#SBATCH --mem=32G", "#SBATCH --signal=USR2@120"):
            assert flag in script, flag
    assert {"calibcourse-t-run1", "calibcourse-t-run2"} == {
        ln.split("--job-name=")[1].strip() for s in scripts for ln in s.splitlines() if "--job-name=" in ln}
    rows = {r["name"]: r for r in grid.status(configs, cache)}
    assert rows["t/run0"]["state"] == "done"
    assert rows["t/run1"]["state"] == "running" and "SLURM job 4001 PENDING" in rows["t/run1"]["detail"]
    assert any(ln.startswith("sacct ") and "-j 4001" in ln for ln in log.read_text().splitlines())
    assert grid.missing(configs, cache) == {}  # queued jobs are not submitted twice
    state.write_text("PREEMPTED")
    rows = {r["name"]: r for r in grid.status(configs, cache)}
    assert rows["t/run2"]["state"] == "failed" and "PREEMPTED" in rows["t/run2"]["detail"]
    assert len(grid.missing(configs, cache)) == 2  # the next `make train` submits them again


def test_slurm_rejects_unknown_parameters(tmp_path, fake_slurm):
    with pytest.raises(ValueError, match="unknown SLURM parameters"):
        grid.submit_slurm(_configs(1), cachemod.Cache(tmp_path), {"qos": "high"})


# ------------------------------------------------------------------ local processes
def test_local_jobs_give_the_same_entries_as_a_serial_run(tmp_path):
    configs = _configs(3)
    serial, parallel = cachemod.Cache(tmp_path / "serial"), cachemod.Cache(tmp_path / "parallel")
    assert grid.train_serial(configs, serial, log=lambda line: None) == 0
    assert grid.train_local(configs, 2, parallel, log=lambda line: None) == 0
    assert serial.keys() == parallel.keys() and len(serial.keys()) == 3
    for cfg in configs.values():
        a, b = serial.load(cfg), parallel.load(cfg)
        for split in ("val", "test"):
            assert a.logits(split).tobytes() == b.logits(split).tobytes()
    assert parallel.verify() == [] and grid.missing(configs, parallel) == {}


def test_a_killed_local_job_leaves_no_entry_and_the_next_train_resumes_it(tmp_path):
    import submitit

    cfg = {**TINY, "epochs": 6, "keep_best": "val_nll"}
    cache = cachemod.Cache(tmp_path / "cache")
    key = cachemod.config_key(cfg)
    executor = submitit.LocalExecutor(folder=str(tmp_path / "jobs"))
    # a preemption at a known point: the job kills itself (SIGKILL) right after its epoch-3 checkpoint
    job = executor.submit(grid.TrainJob(), cfg, str(cache.root), 1, 1, 3)
    deadline = time.monotonic() + 600  # a safety net only: the job ends by itself
    while not job.done():
        assert time.monotonic() < deadline, "the job neither died nor finished"
        time.sleep(0.05)
    with pytest.raises(submitit.core.utils.UncompletedJobError):  # FailedJobError is one too
        job.result()
    assert cache.keys() == [] and cache.load(cfg) is None, "a killed job must leave no entry"
    assert cache.checkpoint_path(key).is_file()
    (row,) = grid.status({"run": cfg}, cache)
    assert row["state"] == "failed" and "checkpoint" in row["detail"]
    # the next `make train` submits it again; it resumes from the checkpoint
    assert grid.train_local({"run": cfg}, 1, cache, checkpoint_every=1, log=lambda line: None) == 0
    resumed = cache.load(cfg)
    assert resumed.info["resumed_at_epoch"] == 4 and resumed.provenance["threads"] == 1
    assert not cache.checkpoint_path(key).exists() and not grid._marker(cache, key).exists()
    whole = T.train(cfg, progress=False, threads=1)  # the jobs' thread count: the same arithmetic
    for name in ("val_logits", "test_logits", "best_test_logits", "best_epoch"):
        assert whole.outputs[name].tobytes() == resumed.outputs[name].tobytes(), name
    np.testing.assert_allclose(whole.history["test_nll"], resumed.history["test_nll"], rtol=1e-9)  # csv: 10 digits
