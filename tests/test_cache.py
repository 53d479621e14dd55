"""calibcourse.cache: keys, atomic writes, corruption handling, the CLI, committed entries."""
import json
import subprocess
import sys
import warnings

import numpy as np
import pytest

from calibcourse import cache as C
from calibcourse import train as T
from calibcourse.experiments import experiments

CFG = {"data": {"name": "digits"}, "model": {"name": "mlp", "depth": 1, "width": 16}, "epochs": 1, "seed": 0}


@pytest.fixture(scope="module")
def result():
    return T.train(CFG, progress=False)


def test_key_depends_on_config_and_code_version(monkeypatch):
    k = C.config_key(CFG)
    assert k == C.config_key(dict(CFG)) and len(k) == 20
    assert k != C.config_key({**CFG, "seed": 1})
    assert C.config_key({**CFG, "lr": 1e-3}) == k  # defaults filled before hashing
    for off in ({"mixup_alpha": None}, {"meta": None}, {"meta": {}}, {"amp": False}, {"augment": None}):
        assert C.config_key({**CFG, **off}) == k, f"{off} is the run without it: one entry"
    monkeypatch.setattr(C, "CODE_VERSION", C.CODE_VERSION + 1)
    assert C.config_key(CFG) != k


def test_store_then_load_roundtrip(tmp_path, result):
    cache = C.Cache(tmp_path)
    path = cache.store(result)
    assert sorted(p.name for p in path.iterdir()) == ["history.csv", "manifest.json", "outputs.npz"]
    manifest = json.loads((path / "manifest.json").read_text())
    assert manifest["config"] == T.normalize_config(CFG) and "torch" in manifest["packages"]
    loaded = cache.load(CFG)
    np.testing.assert_array_equal(loaded.logits("test"), result.logits("test"))
    np.testing.assert_allclose(loaded.history["test_nll"], result.history["test_nll"], rtol=1e-9)
    assert cache.verify() == []


def test_interrupted_write_leaves_no_entry(tmp_path, result, monkeypatch):
    cache = C.Cache(tmp_path)

    def boom(*a, **k):
        raise KeyboardInterrupt("interrupted")

    monkeypatch.setattr(C.np, "savez_compressed", boom)
    with pytest.raises(KeyboardInterrupt):
        cache.store(result)
    assert cache.keys() == [] and list(tmp_path.iterdir()) == []
    assert cache.load(CFG) is None


@pytest.mark.parametrize("damage", ["flip_npz", "bad_json", "missing_history", "other_format"])
def test_corrupt_entry_is_reported_and_recomputed_never_used(tmp_path, result, damage):
    cache = C.Cache(tmp_path)
    path = cache.store(result)
    if damage == "flip_npz":
        raw = bytearray((path / "outputs.npz").read_bytes())
        raw[len(raw) // 2] ^= 0xFF
        (path / "outputs.npz").write_bytes(bytes(raw))
    elif damage == "bad_json":
        (path / "manifest.json").write_text("{not json")
    elif damage == "missing_history":
        (path / "history.csv").unlink()
    else:
        m = json.loads((path / "manifest.json").read_text())
        m["format"] = 99
        (path / "manifest.json").write_text(json.dumps(m))
    bad = cache.verify()
    assert len(bad) == 1 and bad[0][0] == path.name
    with pytest.warns(UserWarning, match=f"cache entry {path.name} is unusable"):
        assert cache.load(CFG) is None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        again = cache.get_or_train(CFG, progress=False)
    np.testing.assert_array_equal(again.logits("test"), result.logits("test"))
    assert cache.verify() == []


def test_cli_list_verify_clear(tmp_path, result):
    cache = C.Cache(tmp_path)
    path = cache.store(result)
    run = lambda *a: subprocess.run([sys.executable, "-m", "calibcourse.cache", *a, "--root", str(tmp_path)],
                                    capture_output=True, text=True)
    out = run("list")
    assert out.returncode == 0 and path.name in out.stdout and "1 entries" in out.stdout
    assert run("verify").returncode == 0
    (path / "history.csv").write_text("tampered\n")
    bad = run("verify")
    assert bad.returncode == 1 and path.name in bad.stderr and "checksum mismatch" in bad.stderr
    assert run("clear").returncode == 0 and not tmp_path.exists()
    assert run("train").returncode != 0  # needs a profile


@pytest.mark.parametrize("name", ["ch2/depth/level2/s0", "ch2/width/level1/s0", "ch3/nine/small_sigmoid_overfit"])
def test_committed_ci_entries_match_a_fresh_training_run(name):
    """A change to the training code that forgets to bump CODE_VERSION fails here."""
    cfg = experiments("ci")[name]
    committed = C.Cache().load(cfg)
    assert committed is not None, (f"no committed cache entry for ci run {name!r} (key {C.config_key(cfg)}): "
                                   "run `python -m calibcourse.cache train ci` and commit data/cache")
    fresh = T.train(cfg, progress=False)
    np.testing.assert_allclose(fresh.logits("test"), committed.logits("test"),
                               rtol=1e-5, atol=1e-6,
                               err_msg="training code changed its results: bump calibcourse.cache.CODE_VERSION "
                                       "and re-train the cache")


def test_committed_cache_verifies():
    assert C.Cache().verify() == []


@pytest.mark.parametrize("profile", ["ci", "default", "full"])
def test_every_experiment_config_is_valid_and_profiles_name_the_same_runs(profile):
    runs = experiments(profile)
    for name, cfg in runs.items():
        T.normalize_config(cfg)  # raises on a bad config
    if profile != "ci":
        assert set(experiments("default")) <= set(runs), "chapters read the same names in every profile"


def test_run_results_give_logits_and_probabilities_by_split():
    from scipy.special import expit, softmax

    sigmoid_run = C.Cache().load(experiments("ci")["ch3/nine/small_sigmoid_overfit"])  # one logit per sample
    z = sigmoid_run.logits("test")
    assert z.ndim == 1 and z is sigmoid_run.outputs["test_logits"]
    np.testing.assert_allclose(sigmoid_run.probs("test"), expit(z), rtol=1e-15)  # never a softmax across samples
    softmax_run = C.Cache().load(experiments("ci")["ch2/model/small"])
    np.testing.assert_allclose(softmax_run.probs("val"), softmax(softmax_run.logits("val"), axis=1), rtol=1e-12)
    assert softmax_run.labels("val").shape == softmax_run.logits("val").shape[:1]
    with pytest.raises(KeyError, match="split 'train' has no logits in this run; stored: test, val"):
        softmax_run.logits("train")
