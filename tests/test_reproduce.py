"""calibcourse.study.training.provenance and calibcourse.tools.reproduce: the fingerprint of the training code, the
provenance of a run, and `make reproduce` on a small profile."""
import ast
import hashlib
import json

import numpy as np
import pytest

from calibcourse.study.runs import cache as cachemod
from calibcourse.study.training import provenance as P
from calibcourse.study.training import train as T
from calibcourse.study.training.results import RunResult
from calibcourse.tools import reproduce as R

TINY = {"data": {"name": "digits", "n_train": 300}, "model": {"name": "mlp", "depth": 1, "width": 16}, "epochs": 2}


def test_code_modules_follow_the_imports_of_a_run_and_ignore_docstrings(tmp_path, monkeypatch):
    mods = P.code_modules()
    # what decides a run's weights: the loop, the models, the losses, the meta-learner, the data
    for m in (
        "calibcourse.study.training.train",
        "calibcourse.study.training.models",
        "calibcourse.study.training.losses",
        "calibcourse.study.training.meta",
        "calibcourse.study.training.data",
        "calibcourse.study.training.steps",
        "calibcourse.study.training.config",
    ):
        assert m in mods, m
    for m in (
        "calibcourse.tools.build",
        "calibcourse.study.analysis.ledger",
        "calibcourse.tools.grid",
        "calibcourse.tools.reproduce",
    ):
        assert m not in mods, f"{m} is not executed by a run"
    # executed, but not training code: the record of the run, the toolkit's numpy code and its validation
    for m in (
        "calibcourse.study.training.provenance",
        "calibcourse.calibration.metrics",
        "calibcourse.calibration._validation",
        "calibcourse.calibration.binning",
    ):
        assert m not in mods, f"{m} decides no trained weight"
    # an independent recomputation of one module's fingerprint
    src = (P._package_dir() / "study" / "training" / "models.py").read_text()
    tree = P._strip_docstrings(ast.parse(src))
    assert mods["calibcourse.study.training.models"] == hashlib.sha256(ast.unparse(tree).encode()).hexdigest()[:12]
    # a docstring or a comment changes nothing; code does
    a = "def f(x):\n    'doc'\n    return x + 1  # one\n"
    b = "def f(x):\n    '''other doc'''\n    # a comment\n    return x + 1\n"
    c = "def f(x):\n    return x + 2\n"
    fp = lambda s: ast.unparse(P._strip_docstrings(ast.parse(s)))  # noqa: E731
    assert fp(a) == fp(b) != fp(c)


def test_a_package_module_named_by_from_import_is_followed():
    tree = ast.parse("from . import meta\nfrom .losses import focal_loss\nfrom .nothing import x\n"
                     "import calibcourse.study.training.data\nimport os\n")
    assert P._imports("calibcourse.study.training.train", tree) == {
        "calibcourse.study.training", "calibcourse.study.training.meta", "calibcourse.study.training.losses",
        "calibcourse.study.training.data"}
    with pytest.raises(ValueError, match="entry must name a module"):
        P.code_modules("calibcourse.nothing_here")


def test_current_provenance_is_this_machines():
    import platform

    import torch

    p = P.current(threads=3)
    assert p["threads"] == 3 and p["torch"] == torch.__version__ and p["device"] == "cpu"
    assert p["cpu_capability"] == torch.backends.cpu.get_cpu_capability()
    assert p["machine"] == platform.machine() and p["code"] == P.code_fingerprint()
    assert P.differences(None, p) == {k: (None, p[k]) for k in P.KEYS}
    with pytest.raises(ValueError, match="threads must be an integer >= 1"):
        P.current(threads=-1)


def test_compare_runs_measures_what_the_book_prints():
    from scipy.special import softmax

    from calibcourse.calibration.synthetic import scaled_logits

    z, y = scaled_logits(2000, 4, factor=2.0, seed=1)
    a = RunResult({}, None, {"test_logits": z, "test_labels": y}, provenance={"threads": 1})
    same = R.compare_runs(a, RunResult({}, None, {"test_logits": z.copy(), "test_labels": y},
                                         provenance={"threads": 1}))
    assert same["identical"] and same["max_abs"] == 0.0 and same["provenance"] == {}
    z2 = z.copy()
    z2[:50, 0] += 5.0  # fifty samples lean towards class 0
    d = R.compare_runs(a, RunResult({}, None, {"test_logits": z2, "test_labels": y}, provenance={"threads": 2}))
    assert not d["identical"] and d["max_abs"] == pytest.approx(5.0) and d["provenance"] == {"threads": (1, 2)}
    # the measures against a direct computation (scipy's softmax): error in points, NLL in nats
    p2 = softmax(z2, axis=1)
    assert d["metrics"]["error"][1] == pytest.approx(100 * np.mean(p2.argmax(1) != y))
    assert d["metrics"]["nll"][1] == pytest.approx(-np.mean(np.log(p2[np.arange(len(y)), y])))
    tight = {"error": 0.0, "ece": 0.0, "nll": 0.0}
    assert R.within_tolerance(same, tight) and not R.within_tolerance(d, tight)
    with pytest.raises(ValueError, match="store different outputs: val_logits"):
        R.compare_runs(a, RunResult({}, None, {"test_logits": z, "test_labels": y, "val_logits": z}))


def test_a_run_moved_beyond_the_tolerance_fails_on_the_entrys_cpu_kind_and_is_reported_on_another(monkeypatch):
    """The test of the committed ci entries (tests/test_cache.py) on synthetic runs: a retrained run
    that moved beyond the tolerance fails on the CPU kind that trained its entry, and on another
    kind (CALIBCOURSE_CPU_KIND) is counted in the summary line instead; what holds on any machine
    fails on any machine."""
    from calibcourse.calibration.synthetic import scaled_logits
    from calibcourse.tools.retrained import NotReproduced, check_pinned_entry, summarize

    monkeypatch.delenv("CALIBCOURSE_CPU_KIND", raising=False)
    z, y = scaled_logits(2000, 4, factor=2.0, seed=1)
    far = z.copy()
    far[:200, 0] += 5.0  # two hundred samples lean towards class 0: error and ECE move by points

    def run(logits, **prov):  # a pinned run as this machine records it now
        return RunResult({}, None, {"test_logits": logits, "test_labels": y},
                         provenance={**P.current(), "numerics": "pinned", "cpu_capability": "DEFAULT", **prov})

    entry = run(z)
    assert not R.within_tolerance(R.compare_runs(entry, run(far)))
    with pytest.raises(NotReproduced, match="t/far: retrained on a CPU of its entry's kind"):
        check_pinned_entry("t/far", entry, run(far))
    assert check_pinned_entry("t/same", entry, run(z))["status"] == "identical"
    home = P.cpu_kind()
    monkeypatch.setenv("CALIBCOURSE_CPU_KIND", "a kind no entry has")
    assert P.cpu_kind() == "a kind no entry has" and P.current()["cpu_kind"] == "a kind no entry has"
    out = [check_pinned_entry("t/far", entry, run(far)), check_pinned_entry("t/same", entry, run(z)),
           check_pinned_entry("t/near", entry, run(z + 1e-5))]
    assert [o["status"] for o in out] == ["beyond", "identical", "within"]
    assert out[0]["foreign"] == f"cpu_kind: {home} committed, a kind no entry has here"
    line = summarize(out)
    assert line.startswith("3 pinned ci runs retrained on another CPU kind "
                           f"(a kind no entry has here; {home} committed): 1 bit for bit, 1 moved within the "
                           "tolerance, 1 beyond (largest: ")
    assert "t/far)" in line and "`make reproduce` recomputes the verdicts" in line
    # what holds on any machine still fails on another kind
    bad_labels = run(z)
    bad_labels.outputs["test_labels"] = (y + 1) % 4
    for fresh, match in ((run(z, numerics="native"), "not pinned"), (run(np.where(z > 3, np.nan, z)), "non-finite"),
                         (bad_labels, "test_labels differ"), (run(z, code="older"), "make restamp")):
        with pytest.raises(NotReproduced, match=match):
            check_pinned_entry("t/x", entry, fresh)


def test_changed_verdicts_lists_changes_and_claims_in_one_ledger_only():
    before = [{"chapter": 1, "id": "a", "verdict": "held"}, {"chapter": 2, "id": "b", "verdict": "not held"}]
    after = [{"chapter": 1, "id": "a", "verdict": "held"}, {"chapter": 2, "id": "b", "verdict": "inconclusive"},
             {"chapter": 3, "id": "c", "verdict": "held"}]
    assert R.changed_verdicts(before, after) == [
        {"chapter": 2, "id": "b", "before": "not held", "after": "inconclusive"},
        {"chapter": 3, "id": "c", "before": None, "after": "held"}]
    assert R.changed_verdicts(after, after) == []


def test_reproduce_retrains_a_profile_and_compares_each_run(tmp_path, monkeypatch):
    import calibcourse.study.runs.experiments as E

    configs = {"t/a": {**TINY, "seed": 0}, "t/b": {**TINY, "seed": 1}, "t/b-again": {**TINY, "seed": 1}}
    monkeypatch.setattr(E, "experiments", lambda profile: configs)
    committed = cachemod.Cache(tmp_path / "committed")
    # the committed cache lacks a run: nothing trains, the command says what to do
    committed.store(T.train(configs["t/a"], progress=False))
    with pytest.raises(FileNotFoundError, match=r"no entry for 1 run\(s\) of profile 'ci' \(t/b\)"):
        R.reproduce("ci", committed_root=committed.root, ledger=False, log=lambda line: None)
    committed.store(T.train(configs["t/b"], progress=False, threads=2))  # another thread count
    lines = []
    out = R.reproduce("ci", committed_root=committed.root, ledger=False, workdir=tmp_path / "work",
                      log=lines.append)
    assert sorted(out["comparisons"]) == ["t/a", "t/b"]  # one run per distinct config
    a, b = out["comparisons"]["t/a"], out["comparisons"]["t/b"]
    assert a["identical"] and a["provenance"] == {}
    assert b["provenance"] == {"threads": (2, 1)}
    assert any("t/a: provenance same; outputs byte-identical" in ln for ln in lines)
    assert any(ln.startswith("  t/b: provenance threads 2->1") for ln in lines)
    assert out["changed"] is None and (tmp_path / "work" / "cache").is_dir()
    manifest = json.loads((cachemod.Cache(tmp_path / "work" / "cache").path(cachemod.config_key(configs["t/a"]))
                           / "manifest.json").read_text())
    assert manifest["provenance"]["threads"] == 1


def test_the_command_line_says_what_is_missing(tmp_path, monkeypatch, capfd):
    monkeypatch.setenv("CALIBCOURSE_CACHE", str(tmp_path / "empty"))
    assert R.main(["--profile", "ci", "--no-ledger"]) == 2  # in a process under the pinned numerics
    assert "has no entry for" in capfd.readouterr().err
    with pytest.raises(SystemExit):
        R.main(["--profile", "ci", "--threads", "2"])  # the pinned numerics use one thread
    with pytest.raises(SystemExit):
        R.main(["--jobs", "0"])


def test_restamp_records_the_current_code_only_when_the_retrained_bits_are_the_same(tmp_path, monkeypatch):
    import calibcourse.study.runs.experiments as E
    from calibcourse.study.training import provenance as P

    configs = {"t/a": {**TINY, "seed": 0}}
    monkeypatch.setattr(E, "experiments", lambda profile: configs)
    committed = cachemod.Cache(tmp_path / "committed")
    key = committed.store(T.train(configs["t/a"], progress=False)).name
    extra = committed.store(T.train({**TINY, "seed": 5}, progress=False)).name  # of no profile: restamped too
    assert R.restamp("ci", committed_root=committed.root, log=lambda line: None) == 0  # nothing stale
    # the code "changes" (another fingerprint), the bits do not: both entries get the current code
    monkeypatch.setattr(P, "code_fingerprint", lambda entry=P.TRAINING_ENTRY: "after-the-move")
    assert set(committed.stale()) == {key, extra}
    assert R.restamp("ci", committed_root=committed.root, log=lambda line: None) == 2
    m = committed.check(key)
    assert m["provenance"]["code"] == "after-the-move" and committed.stale() == {} and committed.verify() == []
    assert m["restamped"][-1]["because"] == (f"1 ci runs retrained byte-identical to their entries on {P.cpu_kind()} "
                                             "under code after-the-move")
    # an entry whose bits the current code does not reproduce: nothing is written, the run is named
    monkeypatch.setattr(P, "code_fingerprint", lambda entry=P.TRAINING_ENTRY: "a-change-that-moves-bits")
    z = committed.load(configs["t/a"])
    z.outputs["test_logits"] = z.outputs["test_logits"] + 1e-6
    committed.store(z)
    with pytest.raises(RuntimeError, match=r"1 of 1 ci runs changed their bits .*\(t/a\)"):
        R.restamp("ci", committed_root=committed.root, log=lambda line: None)
    assert committed.check(extra)["provenance"]["code"] == "after-the-move"


def _stored_copy(run, cache, **provenance):
    """``run`` stored in ``cache`` as if trained elsewhere: the same outputs and config, another provenance."""
    return cache.store(RunResult(run.config, run.history, dict(run.outputs), dict(run.info),
                                 provenance={**run.provenance, **provenance}))


def test_restamp_on_another_cpu_kind_compares_the_entries_code_with_the_current_code_here(tmp_path, monkeypatch):
    """The entries were trained on a CPU of another kind (CALIBCOURSE_CPU_KIND), so their bits prove
    nothing here: the two trainings of this machine, the entries' code and the current one, decide."""
    import calibcourse.study.runs.experiments as E
    from calibcourse.study.training import provenance as P

    configs = {"t/a": {**TINY, "seed": 0}, "t/b": {**TINY, "seed": 1}}
    monkeypatch.setattr(E, "experiments", lambda profile: configs)
    committed = cachemod.Cache(tmp_path / "committed")
    runs = {name: T.train(cfg, progress=False) for name, cfg in configs.items()}
    old, home = P.code_fingerprint(), P.cpu_kind()
    keys = [committed.store(r).name for r in runs.values()]
    monkeypatch.setenv("CALIBCOURSE_CPU_KIND", "a kind no entry has")
    monkeypatch.setattr(P, "code_fingerprint", lambda entry=P.TRAINING_ENTRY, root=None: "after-the-move")
    assert set(committed.stale()) == set(keys)
    calls = []

    def trainer(moved=(), code=old, noise=1e-3):
        """Both trainings of this machine: the entries' outputs moved by ``noise`` (this CPU's own bits),
        the current code's moved again for the runs in ``moved``."""
        def train(trees, cfgs, workdir):
            calls.append(sorted(cfgs))
            assert (trees["entries"] / "calibcourse" / "study" / "training" / "train.py").is_file()
            caches = {}
            for label in trees:
                caches[label] = cachemod.Cache(workdir / label)
                for name in cfgs:
                    r = runs[name]
                    z = r.outputs["test_logits"] + noise + (1e-6 if label == "current" and name in moved else 0.0)
                    prov = {**r.provenance, "cpu_kind": "a kind no entry has",
                            "code": code if label == "entries" else "after-the-move"}
                    caches[label].store(RunResult(r.config, r.history, {**r.outputs, "test_logits": z}, dict(r.info),
                                                  provenance=prov))
            return caches
        return train

    # the current code moves one run's bits on this machine: nothing is written, the run is named
    with pytest.raises(RuntimeError, match=r"1 of 2 ci runs changed their bits .*\(t/b\)"):
        R.restamp("ci", committed_root=committed.root, reference="HEAD", trainer=trainer(moved=("t/b",)),
                  log=lambda line: None)
    assert set(committed.stale()) == set(keys) and calls == [["t/a", "t/b"]]
    # the commit named does not train with the entries' code: refused
    with pytest.raises(RuntimeError, match="trains with code elsewhere, not the entries'"):
        R.restamp("ci", committed_root=committed.root, reference="HEAD", trainer=trainer(code="elsewhere"),
                  log=lambda line: None)
    # both codes give the same bits here (neither the entries' bits): every stale entry is restamped
    lines = []
    assert R.restamp("ci", committed_root=committed.root, reference="HEAD", trainer=trainer(), log=lines.append) == 2
    assert committed.stale() == {} and committed.verify() == []
    because = committed.check(keys[0])["restamped"][-1]["because"]
    assert because.startswith(f"2 ci runs trained byte-identical on a kind no entry has under the entries' code {old}")
    assert because.endswith(f"(entries trained on {home})")
    assert any("compared bit for bit" in ln for ln in lines) and any("restamped 2 entries" in ln for ln in lines)
    # the outputs are the entries' own, untouched
    np.testing.assert_array_equal(committed.load(configs["t/a"]).logits("test"), runs["t/a"].logits("test"))


def test_restamp_finds_the_commit_of_the_entries_code_and_trains_both_codes_for_real(tmp_path, monkeypatch):
    """A git checkout with two commits; entries stamped at the first; the second changes the training
    code without moving a number. On another CPU kind, restamp finds the first commit by its
    fingerprint, trains both codes in child processes and restamps."""
    import shutil
    import subprocess

    import calibcourse.study.runs.experiments as E
    from calibcourse.study.training import provenance as P
    from calibcourse.tools import restamp as RS

    repo = tmp_path / "repo"
    shutil.copytree(P._package_dir(), repo / "calibcourse", ignore=shutil.ignore_patterns("__pycache__"))
    git = lambda *a: subprocess.run(["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@t", *a],  # noqa: E731
                                    check=True, capture_output=True, text=True).stdout
    git("init", "-q")
    git("add", "-A")
    git("commit", "-qm", "entries")
    first = git("rev-parse", "HEAD").strip()
    stamped = P.code_fingerprint(root=repo / "calibcourse")
    assert stamped == P.code_fingerprint()  # the same files
    losses = repo / "calibcourse" / "study" / "training" / "losses.py"
    losses.write_text(losses.read_text() + "\n\ndef _a_helper_no_run_calls():\n    return None\n")
    git("commit", "-qam", "a change that moves no number")
    moved_on = P.code_fingerprint(root=repo / "calibcourse")
    assert moved_on != stamped
    assert RS.reference_commit(stamped, repo=repo) == first
    assert RS.reference_commit(moved_on, repo=repo) == git("rev-parse", "HEAD").strip()
    with pytest.raises(LookupError, match="none of the last 200 commits before HEAD has training code 0123"):
        RS.reference_commit("0123", repo=repo)

    configs = {"t/a": {**TINY, "seed": 0}}
    monkeypatch.setattr(E, "experiments", lambda profile: configs)
    monkeypatch.setattr(RS, "_repository", lambda: repo)
    committed = cachemod.Cache(tmp_path / "committed")
    key = committed.store(T.train(configs["t/a"], progress=False)).name  # under the stamped code
    real = P.code_fingerprint  # this process's own code "moves on"; the commits' are read from git
    monkeypatch.setattr(P, "code_fingerprint",
                        lambda entry=P.TRAINING_ENTRY, root=None: moved_on if root is None else real(entry, root))
    monkeypatch.setenv("CALIBCOURSE_CPU_KIND", "a kind no entry has")
    lines = []
    assert R.restamp("ci", committed_root=committed.root, workdir=tmp_path / "work", log=lines.append, jobs=2) == 1
    assert f"commit {first[:12]}" in " ".join(lines)
    assert committed.check(key)["provenance"]["code"] == moved_on and committed.stale() == {}
    trained = {label: cachemod.Cache(tmp_path / "work" / f"code-{stamped}" / f"cache-{label}").load(configs["t/a"])
               for label in ("entries", "current")}
    assert trained["entries"].provenance["code"] == stamped and trained["current"].provenance["code"] == moved_on


def test_restamp_checks_each_training_code_of_merged_branches_against_its_own_commit(tmp_path, monkeypatch):
    """Two branches each changed the training code and trained runs; merged, the stale entries record two
    codes. Each code's runs are trained with the commit that has it and with the working tree; all agree,
    so every entry is restamped, each with its own evidence; one run that moves writes nothing."""
    from pathlib import Path

    import calibcourse.study.runs.experiments as E
    import calibcourse.tools.restamp as RS
    from calibcourse.study.training import provenance as P

    configs = {"t/a": {**TINY, "seed": 0}, "t/b": {**TINY, "seed": 1}}
    monkeypatch.setattr(E, "experiments", lambda profile: configs)
    committed = cachemod.Cache(tmp_path / "committed")
    runs = {name: T.train(cfg, progress=False) for name, cfg in configs.items()}
    code_of = {"t/a": "code-one", "t/b": "code-two"}
    keys = {name: _stored_copy(runs[name], committed, code=code_of[name]).name for name in runs}
    monkeypatch.setenv("CALIBCOURSE_CPU_KIND", "a kind no entry has")
    monkeypatch.setattr(P, "code_fingerprint", lambda entry=P.TRAINING_ENTRY, root=None: "merged")
    looked_up = []
    monkeypatch.setattr(RS, "reference_commit", lambda code, repo=None: looked_up.append(code) or "HEAD")
    monkeypatch.setattr(RS, "_extract", lambda repo, commit, dest: Path(dest))
    calls = []

    def trainer(moved=()):
        def train(trees, cfgs, workdir):
            calls.append(sorted(cfgs))
            caches = {}
            for label in trees:
                caches[label] = cachemod.Cache(workdir / label)
                for name in cfgs:
                    r = runs[name]
                    z = r.outputs["test_logits"] + (1e-6 if label == "current" and name in moved else 0.0)
                    prov = {**r.provenance, "code": code_of[name] if label == "entries" else "merged"}
                    caches[label].store(RunResult(r.config, r.history, {**r.outputs, "test_logits": z},
                                                  dict(r.info), provenance=prov))
            return caches
        return train

    with pytest.raises(RuntimeError, match=r"1 of 2 ci runs changed their bits .*\(t/b\)"):
        R.restamp("ci", committed_root=committed.root, trainer=trainer(moved=("t/b",)), log=lambda line: None)
    assert set(committed.stale()) == set(keys.values())  # nothing written
    assert calls == [["t/a"], ["t/b"]] and looked_up == ["code-one", "code-two"]  # one code at a time
    assert R.restamp("ci", committed_root=committed.root, trainer=trainer(), log=lambda line: None) == 2
    assert committed.stale() == {}
    for name, key in keys.items():
        because = committed.check(key)["restamped"][-1]["because"]
        assert f"under the entries' code {code_of[name]}" in because and because.startswith("1 ci runs")
