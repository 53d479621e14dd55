"""calibcourse.study.runs.cache: keys, atomic writes, lossless float32 storage, corruption handling, the CLI,
committed entries."""

import json
import subprocess
import sys
import warnings

import numpy as np
import pytest

from calibcourse.study.runs import cache as cachemod
from calibcourse.study.runs.experiments import experiments
from calibcourse.study.training import train as T
from calibcourse.study.training.config import normalize_config

CFG = {"data": {"name": "digits"}, "model": {"name": "mlp", "depth": 1, "width": 16}, "epochs": 1, "seed": 0}


@pytest.fixture(scope="module")
def result():
    return T.train(CFG, progress=False)


def test_key_is_the_sha256_of_the_canonical_config():
    import hashlib

    k = cachemod.config_key(CFG)
    canon = json.dumps({"config": normalize_config(CFG)}, sort_keys=True, separators=(",", ":"))
    assert k == hashlib.sha256(canon.encode()).hexdigest()[:20]
    assert k == cachemod.config_key(dict(CFG)) and len(k) == 20
    assert k != cachemod.config_key({**CFG, "seed": 1})
    assert cachemod.config_key({**CFG, "lr": 1e-3}) == k  # defaults filled before hashing
    for off in ({"mixup_alpha": None}, {"meta": None}, {"meta": {}}, {"amp": False}, {"augment": None}):
        assert cachemod.config_key({**CFG, **off}) == k, f"{off} is the run without it: one entry"


def test_manifest_records_the_runs_provenance_and_a_code_change_makes_it_stale(tmp_path, result, monkeypatch):
    from calibcourse.study.training import provenance as P

    cache = cachemod.Cache(tmp_path)
    path = cache.store(result)
    prov = json.loads((path / "manifest.json").read_text())["provenance"]
    assert set(P.KEYS) <= set(prov) and prov["threads"] == 1 and prov["code"] == P.code_fingerprint()
    import torch

    assert prov["torch"] == torch.__version__ and prov["cpu_capability"] == torch.backends.cpu.get_cpu_capability()
    assert cache.load(CFG).provenance == prov and cache.stale() == {}
    # another version of the training code: the entry is still found (the key is the config's) but stale
    monkeypatch.setattr(P, "code_fingerprint", lambda entry=P.TRAINING_ENTRY: "0" * 16)
    monkeypatch.setattr(
        P,
        "code_modules",
        lambda entry=P.TRAINING_ENTRY: {**prov["code_modules"], "calibcourse.study.training.meta": "changed"},
    )
    assert cache.load(CFG) is not None
    assert cache.stale() == {path.name: "training code changed since it ran (calibcourse.study.training.meta)"}


def test_store_then_load_roundtrip(tmp_path, result):
    cache = cachemod.Cache(tmp_path)
    path = cache.store(result)
    assert sorted(p.name for p in path.iterdir()) == ["history.csv", "manifest.json", "outputs.npz"]
    manifest = json.loads((path / "manifest.json").read_text())
    assert manifest["config"] == normalize_config(CFG) and "torch" in manifest["packages"]
    loaded = cache.load(CFG)
    np.testing.assert_array_equal(loaded.logits("test"), result.logits("test"))
    np.testing.assert_allclose(loaded.history["test_nll"], result.history["test_nll"], rtol=1e-9)
    assert cache.verify() == []


def test_float32_logits_are_stored_as_float32_and_load_back_bit_for_bit(tmp_path, result):
    cache = cachemod.Cache(tmp_path)
    path = cache.store(result)
    manifest = json.loads((path / "manifest.json").read_text())
    narrowed = [n for n, v in result.outputs.items() if np.asarray(v).dtype == np.float64
                and np.array_equal(np.asarray(v, dtype=np.float32).astype(np.float64), v)]
    assert narrowed and manifest["widened"] == sorted(narrowed)  # the network's logits are float32 numbers
    with np.load(path / "outputs.npz") as z:
        assert all(z[n].dtype == np.float32 for n in narrowed)
    loaded = cache.load(CFG)
    for name, value in result.outputs.items():
        a, b = np.asarray(value), loaded.outputs[name]
        assert a.dtype == b.dtype and a.tobytes() == b.tobytes(), name


def test_narrow_outputs_keeps_what_float32_cannot_hold():
    third, tiny = np.array([1 / 3]), np.array([1e-300])
    exact = np.array([0.5, -0.0, np.nan, np.inf, 3.0], dtype=np.float64)
    arrays, widened = cachemod.narrow_outputs({"third": third, "tiny": tiny, "exact": exact, "labels": np.arange(3),
                                        "f32": exact.astype(np.float32)})
    assert widened == ["exact"]
    assert arrays["third"].dtype == arrays["tiny"].dtype == np.float64 and arrays["labels"].dtype == np.int64
    back = arrays["exact"].astype(np.float64)
    assert back.tobytes() == exact.tobytes() and np.signbit(back[1])


def test_compact_drops_the_outputs_training_no_longer_writes(tmp_path, result):
    cache = cachemod.Cache(tmp_path)
    path = cache.store(result)
    # an entry as chapter 5's gamma-Nets were stored before their per-sample snapshots were retired
    with np.load(path / "outputs.npz") as z:
        stored = {k: z[k] for k in z.files}
    snapshot = np.arange(6, dtype=np.float32).reshape(2, 3)
    (path / "outputs.npz").write_bytes(cachemod._npz_bytes({**stored, "snapshot_test_gammas": snapshot}))
    m = json.loads((path / "manifest.json").read_text())
    m["files"]["outputs.npz"] = cachemod._sha256(path / "outputs.npz")
    (path / "manifest.json").write_text(json.dumps(m))
    assert "snapshot_test_gammas" in cache.load(CFG).outputs
    before = (path / "outputs.npz").stat().st_size
    assert cache.compact() == before - (path / "outputs.npz").stat().st_size > 0
    assert cache.verify() == [] and cache.compact() == 0
    assert json.loads((path / "manifest.json").read_text())["dropped"] == ["snapshot_test_gammas"]
    loaded = cache.load(CFG)
    assert "snapshot_test_gammas" not in loaded.outputs
    for name, value in result.outputs.items():  # every other array bit for bit
        assert np.asarray(value).tobytes() == loaded.outputs[name].tobytes(), name


def test_compact_rewrites_an_older_entry_losslessly(tmp_path, result):
    import io

    cache = cachemod.Cache(tmp_path)
    path = cache.store(result)
    # an entry as the cache wrote it before it narrowed: every output as the run returned it
    buf = io.BytesIO()
    np.savez_compressed(buf, **{k: np.asarray(v) for k, v in result.outputs.items()})
    (path / "outputs.npz").write_bytes(buf.getvalue())
    m = json.loads((path / "manifest.json").read_text())
    del m["widened"]
    m["files"]["outputs.npz"] = cachemod._sha256(path / "outputs.npz")
    (path / "manifest.json").write_text(json.dumps(m))
    before = (path / "outputs.npz").stat().st_size
    assert cache.load(CFG).outputs["test_logits"].dtype == np.float64
    saved = cache.compact()
    assert saved == before - (path / "outputs.npz").stat().st_size > 0
    assert cache.verify() == [] and cache.compact() == 0
    loaded = cache.load(CFG)
    for name, value in result.outputs.items():
        assert np.asarray(value).tobytes() == loaded.outputs[name].tobytes(), name


def test_an_entry_that_widens_an_array_it_lacks_is_unusable(tmp_path, result):
    cache = cachemod.Cache(tmp_path)
    path = cache.store(result)
    m = json.loads((path / "manifest.json").read_text())
    m["widened"] = m["widened"] + ["no_such_output"]
    (path / "manifest.json").write_text(json.dumps(m))
    with pytest.warns(UserWarning, match=f"cache entry {path.name} is unusable"):
        assert cache.load(CFG) is None


def test_interrupted_write_leaves_no_entry(tmp_path, result, monkeypatch):
    cache = cachemod.Cache(tmp_path)

    def boom(*a, **k):
        raise KeyboardInterrupt("interrupted")

    monkeypatch.setattr(cachemod.np, "savez_compressed", boom)
    with pytest.raises(KeyboardInterrupt):
        cache.store(result)
    assert cache.keys() == [] and list(tmp_path.iterdir()) == []
    assert cache.load(CFG) is None


@pytest.mark.parametrize("damage", ["flip_npz", "bad_json", "missing_history", "other_format"])
def test_corrupt_entry_is_reported_and_recomputed_never_used(tmp_path, result, damage):
    cache = cachemod.Cache(tmp_path)
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


def test_the_calibcourse_command_lists_verifies_and_clears(tmp_path, result):
    cache = cachemod.Cache(tmp_path)
    path = cache.store(result)
    run = lambda *a: subprocess.run([sys.executable, "-m", "calibcourse", *a, "--root", str(tmp_path)],
                                    capture_output=True, text=True)
    out = run("list")
    assert out.returncode == 0 and path.name in out.stdout and "1 entries" in out.stdout
    assert run("verify").returncode == 0
    compact = run("compact")
    assert compact.returncode == 0 and "0.0 MiB saved" in compact.stdout  # stored compact already
    (path / "history.csv").write_text("tampered\n")
    bad = run("verify")
    assert bad.returncode == 1 and path.name in bad.stderr and "checksum mismatch" in bad.stderr
    assert run("compact").returncode == 0  # a bad entry is left to verify's report
    assert run("clear").returncode == 0 and not tmp_path.exists()
    assert run("train").returncode != 0  # needs a profile


def _ci_runs():
    from calibcourse.tools.grid import unique_runs

    return [name for name, _ in unique_runs(experiments("ci")).values()]


@pytest.fixture(scope="module")
def retrained_ci(tmp_path_factory):
    """Every ci run retrained once into a fresh cache, by ``calibcourse train ci`` in a process
    started under the pinned numerics (torch reads them when it is imported): about 1.5 minutes."""
    import os

    from calibcourse.study.training.provenance import pinned_environ

    root = tmp_path_factory.mktemp("ci-retrained")
    env = pinned_environ({**os.environ, "CALIBCOURSE_QUIET": "1"})
    out = subprocess.run([sys.executable, "-m", "calibcourse.tools.cli", "train", "ci", "--root", str(root),
                          "--no-stability"], capture_output=True, text=True, env=env)
    assert out.returncode == 0, out.stdout[-1500:] + out.stderr[-1500:]
    return cachemod.Cache(root)


@pytest.fixture(scope="module")
def retrained_outcomes(terminal_note):
    """What each retrained ci run did against its entry; one line of it in the terminal summary."""
    from calibcourse.tools.retrained import summarize

    outcomes = []
    yield outcomes
    if outcomes:
        terminal_note(summarize(outcomes))


@pytest.mark.parametrize("name", _ci_runs())
def test_committed_ci_entries_match_a_fresh_training_run(name, retrained_ci, retrained_outcomes):
    """Every ci run, retrained here under the pinned numerics, against its committed entry
    (:func:`calibcourse.tools.retrained.check_pinned_entry`).

    On any machine: both runs pinned, of the same outputs, shapes and labels, finite, and the
    entry's training code the current one. On a CPU of the entry's kind
    (:func:`calibcourse.study.training.provenance.cpu_kind`, which ``CALIBCOURSE_CPU_KIND``
    overrides) and torch: the committed bits. On another kind no number decides: the terminal
    summary says in one line how many runs came back bit for bit, within the tolerance and
    beyond, and ``make reproduce`` recomputes the verdicts.
    """
    from calibcourse.tools.retrained import check_pinned_entry

    cfg = experiments("ci")[name]
    committed = cachemod.Cache().load(cfg)
    assert committed is not None, (f"no committed cache entry for ci run {name!r} (key {cachemod.config_key(cfg)}): "
                                   "run `make train PROFILE=ci` and commit data/cache")
    retrained_outcomes.append(check_pinned_entry(name, committed, retrained_ci.load(cfg)))


def test_every_committed_entry_is_current():
    """The training fingerprint covers the training code only, so a toolkit refactor leaves every
    entry current; a change that does move the training code retrains or restamps in the same commit."""
    stale = cachemod.Cache().stale()
    assert not stale, (f"{len(stale)} committed entries are stale, e.g. {next(iter(stale.items()))}: "
                       "make restamp (if no bit moved) or retrain them")


def test_a_perturbed_run_is_the_same_run_with_a_last_bit_difference_and_is_never_stored(tmp_path, result):
    from calibcourse.study.runs.stability import stability

    perturbed = T.train(CFG, progress=False, perturb_init=True)
    assert perturbed.info["perturbed_init"] and not result.info.get("perturbed_init")
    assert not np.array_equal(perturbed.logits("test"), result.logits("test"))
    np.testing.assert_allclose(perturbed.logits("test"), result.logits("test"), atol=1e-4)
    with pytest.raises(cachemod.CacheError, match="never stored"):
        cachemod.Cache(tmp_path).store(perturbed)
    s = stability(result)
    assert s["chaotic"] is False and max(abs(v) for v in s["moves"].values()) < 0.01


def test_every_committed_entry_records_its_provenance():
    from calibcourse.study.training import provenance as P

    for key in cachemod.Cache().keys():
        prov = cachemod.Cache().check(key).get("provenance") or {}
        assert set(P.KEYS) <= set(prov), f"entry {key} records no provenance {sorted(set(P.KEYS) - set(prov))}"


def test_committed_cache_verifies():
    assert cachemod.Cache().verify() == []


@pytest.mark.parametrize("profile", ["ci", "default", "full"])
def test_every_experiment_config_is_valid_and_profiles_name_the_same_runs(profile):
    runs = experiments(profile)
    for cfg in runs.values():
        normalize_config(cfg)  # raises on a bad config
    if profile != "ci":
        assert set(experiments("default")) <= set(runs), "chapters read the same names in every profile"


def test_run_results_give_logits_and_probabilities_by_split():
    from scipy.special import expit, softmax

    sigmoid_run = cachemod.Cache().load(experiments("ci")["ch3/nine/small_sigmoid_overfit"])  # one logit per sample
    z = sigmoid_run.logits("test")
    assert z.ndim == 1 and z is sigmoid_run.outputs["test_logits"]
    np.testing.assert_allclose(sigmoid_run.probs("test"), expit(z), rtol=1e-15)  # never a softmax across samples
    softmax_run = cachemod.Cache().load(experiments("ci")["ch2/model/small"])
    np.testing.assert_allclose(softmax_run.probs("val"), softmax(softmax_run.logits("val"), axis=1), rtol=1e-12)
    assert softmax_run.labels("val").shape == softmax_run.logits("val").shape[:1]
    with pytest.raises(KeyError, match="split 'train' has no logits in this run; stored: test, val"):
        softmax_run.logits("train")


def test_the_default_cache_is_the_environment_s_else_the_checkout_s_else_a_clear_error(monkeypatch, tmp_path):
    monkeypatch.delenv("CALIBCOURSE_CACHE", raising=False)
    assert cachemod.Cache().root == cachemod.REPOSITORY_CACHE  # tests run from a checkout
    monkeypatch.setenv("CALIBCOURSE_CACHE", str(tmp_path / "mine"))
    assert cachemod.Cache().root == tmp_path / "mine"
    monkeypatch.delenv("CALIBCOURSE_CACHE")
    # an installed copy: no pyproject.toml two folders above its data/cache
    monkeypatch.setattr(cachemod, "REPOSITORY_CACHE", tmp_path / "site-packages" / "data" / "cache")
    with pytest.raises(cachemod.CacheError, match="set the environment variable CALIBCOURSE_CACHE"):
        cachemod.Cache()


def test_the_committed_cache_stays_within_its_budget_and_holds_no_orphan():
    from calibcourse.tools.grid import unique_runs

    committed = cachemod.Cache(cachemod.REPOSITORY_CACHE)
    assert committed.size_bytes() <= 104 * 2**20, f"data/cache is {committed.size_bytes() / 2**20:.1f} MiB (budget 104)"
    served = set(unique_runs(experiments("ci"))) | set(unique_runs(experiments("default")))
    orphans = sorted(set(committed.keys()) - served)
    assert not orphans, f"entries no ci or default run uses (remove them): {orphans[:5]}"


def test_the_training_fingerprint_skips_a_lazy_module_getattr(tmp_path, monkeypatch):
    """A module-level ``__getattr__`` (PEP 562) runs only when its attribute is asked for: the
    modules it imports are not training code (``calibcourse.calibration.load`` -> ``report``)."""
    import ast

    from calibcourse.study.training import provenance as P

    src = ("import calibcourse.study.training.data\n"
           "def __getattr__(name):\n    from calibcourse.calibration import report\n    return report\n"
           "def f():\n    from calibcourse.calibration import stats\n")
    found = P._imports("calibcourse.study.x", ast.parse(src))
    assert "calibcourse.study.training.data" in found and "calibcourse.calibration.stats" in found
    assert "calibcourse.calibration.report" not in found
    mods = P.code_modules()
    assert "calibcourse.calibration.report" not in mods and "calibcourse.calibration.metrics" not in mods
    assert "calibcourse.study.training.losses" in mods and "calibcourse.study.training.provenance" not in mods
