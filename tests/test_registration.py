"""calibcourse.tools.registration: each claim's pre-registration, checked against the history.

A synthetic repository with fabricated commit and run times checks the rule on every case; the
repository's own history checks the known facts of the ledger (issue 46) and that the committed
data/registration.json is current.
"""
import datetime as dt
import json
import os
import subprocess
from pathlib import Path

import pytest

from calibcourse.study.analysis.ledger.reads import CLAIM_READS, Reads
from calibcourse.tools import registration as reg
from calibcourse.tools._history import history_missing, terms_of

ROOT = Path(__file__).resolve().parents[1]
T0 = dt.datetime(2026, 1, 1, tzinfo=dt.timezone.utc)


def _iso(t: int) -> str:
    return (T0 + dt.timedelta(seconds=t)).strftime("%Y-%m-%dT%H:%M:%SZ")


class Repo:
    """A git repository whose commits carry fabricated times (seconds after T0)."""

    def __init__(self, path: Path):
        self.path = path
        self.git("init", "-q")
        self.git("config", "user.email", "t@example.org")
        self.git("config", "user.name", "t")

    def git(self, *args, when=None):
        env = dict(os.environ)
        if when is not None:
            env["GIT_AUTHOR_DATE"] = env["GIT_COMMITTER_DATE"] = _iso(when).replace("Z", "+0000")
        out = subprocess.run(["git", *args], cwd=self.path, env=env, capture_output=True, text=True, check=True)
        return out.stdout.strip()

    def notebook(self, cells: list):
        text = "# nb\n\n" + "".join(f"```{{code-cell}} ipython3\n{c}\n```\n\n" for c in cells)
        (self.path / "notebooks").mkdir(exist_ok=True)
        (self.path / "notebooks" / "nb.md").write_text(text)

    def entry(self, key: str, created: int, config: dict):
        d = self.path / "data" / "cache" / key
        d.mkdir(parents=True, exist_ok=True)
        (d / "manifest.json").write_text(json.dumps({"key": key, "created": _iso(created), "config": config}))

    def drop(self, key: str):
        self.git("rm", "-q", "-r", f"data/cache/{key}")

    def commit(self, when: int, message="c") -> str:
        self.git("add", "-A")
        self.git("commit", "-q", "-m", message, when=when)
        return self.git("rev-parse", "HEAD")


def _claim(id, null="0.0", extra=""):
    return f'ledger.claim("{id}", claim="x", source="s", effect="e", interval=d, null={null}{extra})'


@pytest.fixture(scope="module")
def synthetic(tmp_path_factory):
    """Every case of the rule in one history:

    t=500   the run of c-late (created at 450)
    t=1000  the declarations (c-margin at MARGIN = 0.01), with c-moved tested on run "old" and c-together on
            runs committed with its declaration
    t=1500  "old" committed: c-moved's first verdict
    t=2000  the runs of c-reg, c-margin, c-retrain, c-moved (new ones) and seeds 0-1 of c-seeds' arms
    t=3000  c-margin's margin changed to 0.02
    t=4000  seed 2 of c-seeds' arms: added after its verdict
    t=5000  c-reg's run re-keyed with its config unchanged (a rename); c-retrain's retrained with one value
            changed
    """
    if history_missing(ROOT) == "git is not installed":
        pytest.skip("git is not installed")
    repo = Repo(tmp_path_factory.mktemp("history"))
    repo.entry("klate", 450, {"seed": 0, "lr": 0.1})
    repo.commit(500)
    repo.notebook(["MARGIN = 0.01\n" + "\n".join([
        _claim("c-reg"), _claim("c-late"), _claim("c-margin", null="MARGIN", extra=', direction="above"'),
        _claim("c-seeds"), _claim("c-sim"), _claim("c-retrain"), _claim("c-moved"), _claim("c-together")])])
    declared_at = repo.commit(1000)
    repo.entry("kold", 1400, {"seed": 0, "lr": 0.3})
    moved_at = repo.commit(1500)
    repo.entry("kreg", 1900, {"seed": 0, "lr": 0.2})
    repo.entry("kmargin", 1950, {"seed": 0, "lr": 0.4})
    repo.entry("kretrain", 1960, {"seed": 0, "lr": 0.5, "epochs": 10})
    repo.entry("kmoved", 1970, {"seed": 0, "lr": 0.6})
    for arm in ("a", "b"):
        for s in (0, 1):
            repo.entry(f"k{arm}{s}", 1980, {"seed": s, "arm": arm})
    repo.commit(2000)
    repo.notebook(["MARGIN = 0.02\n" + "\n".join([
        _claim("c-reg"), _claim("c-late"), _claim("c-margin", null="MARGIN", extra=', direction="above"'),
        _claim("c-seeds"), _claim("c-sim"), _claim("c-retrain"), _claim("c-moved"), _claim("c-together")])])
    repo.commit(3000)
    for arm in ("a", "b"):
        repo.entry(f"k{arm}2", 3900, {"seed": 2, "arm": arm})
    repo.commit(4000)
    repo.drop("kreg")
    repo.entry("kreg2", 4950, {"seed": 0, "lr": 0.2})  # the same config under a new key
    repo.drop("kretrain")
    repo.entry("kretrain2", 4960, {"seed": 0, "lr": 0.5, "epochs": 20})
    repo.commit(5000)
    keys = {"late/s0": "klate", "reg/s0": "kreg2", "margin/s0": "kmargin", "retrain/s0": "kretrain2",
            "moved/s0": "kmoved", **{f"{arm}/s{s}": f"k{arm}{s}" for arm in ("a", "b") for s in (0, 1, 2)}}
    entries = {"c-reg": Reads(("reg/s0",)), "c-late": Reads(("late/s0",)), "c-margin": Reads(("margin/s0",)),
               "c-seeds": Reads(("a/s*", "b/s*")), "c-sim": Reads(), "c-retrain": Reads(("retrain/s0",)),
               "c-moved": Reads(("moved/s0",), earlier=moved_at[:8], why="first tested on run old"),
               "c-together": Reads(("moved/s0",), earlier=declared_at[:8], why="first tested with its declaration"),
               "c-new": Reads()}
    return reg.compute(repo.path, entries=entries, keys=keys)


def test_declared_before_its_first_run_is_registered_even_through_a_rename(synthetic):
    r = synthetic["c-reg"]
    assert r["registration"] == "registered" and r["amendments"] == []
    # the run's key changed at t=5000 (created 4950), its config did not: it counts from its first entry
    assert r["first_run"] == {"run": "reg/s0", "date": _iso(1900)}
    assert r["declared"]["date"] == _iso(1000) and r["declared"]["path"] == "notebooks/nb.md"
    assert "before its first run" in r["why"]


def test_declared_after_its_first_run_is_post_hoc(synthetic):
    r = synthetic["c-late"]
    assert r["registration"] == "post hoc" and r["first_run"]["date"] == _iso(450)
    assert r["why"].startswith("declared 9 min after its first run")
    # a simulation the page runs has no dated run: nothing shows the declaration came first
    assert synthetic["c-sim"]["registration"] == "post hoc" and synthetic["c-sim"]["first_run"] is None


def test_a_margin_changed_after_runs_existed_is_amended(synthetic):
    r = synthetic["c-margin"]
    assert r["registration"] == "amended"
    assert [a["what"] for a in r["amendments"]] == [
        f"its null 0.01 -> 0.02 (commit {r['amendments'][0]['what'].split('commit ')[1][:10]}), after runs existed"]
    assert r["amendments"][0]["date"] == _iso(3000)


def test_seeds_added_after_a_verdict_are_found_with_the_planned_ones(synthetic):
    r = synthetic["c-seeds"]
    assert r["registration"] == "amended"
    assert r["planned_seeds"] == [0, 1] and r["seeds"] == [0, 1, 2]
    assert r["seeds_added"]["seeds"] == [2] and r["seeds_added"]["date"] == _iso(4000)


def test_runs_retrained_under_a_changed_config_or_moved_to_other_runs_are_amended(synthetic):
    r = synthetic["c-retrain"]
    assert r["registration"] == "amended" and r["first_run"]["date"] == _iso(1960)
    assert r["amendments"] == [{"date": _iso(5000), "what": "runs retrained under a changed config (epochs)"}]
    r = synthetic["c-moved"]
    assert r["registration"] == "amended" and "first decided on runs it no longer reads" in r["amendments"][0]["what"]
    assert r["amendments"][0]["date"] == _iso(1500) and r["amendments"][0]["what"].endswith("first tested on run old")


def test_a_claim_declared_with_the_runs_of_its_first_verdict_is_post_hoc(synthetic):
    """Runs committed with a declaration were made before that commit: nothing shows the claim came first, even
    though the runs its test reads now came later (issue 46: chapter 5's claims and their first recipe)."""
    r = synthetic["c-together"]
    assert r["registration"] == "post hoc" and r["first_run"]["date"] == _iso(1970)
    assert r["why"].startswith(f"declared with the runs of its first verdict ({_iso(1000)[:10]} 00:16 UTC)")
    assert "committed with its declaration, so not shown declared before them" in r["amendments"][0]["what"]
    assert synthetic["c-moved"]["registration"] == "amended"   # first decided later than declared: amended


def test_a_claim_not_committed_yet_says_so(synthetic):
    r = synthetic["c-new"]
    assert r["declared"] is None and r["registration"] == "registered" and r["why"].startswith("not committed yet")


def test_terms_are_read_from_the_claim_call_as_written():
    nb = ('```{code-cell} ipython3\nM = -0.094\nledger.claim("a", claim="x", source="s", effect="e", interval=d, '
          'null=M, direction="below")\nclaim("b", "t", "e", key, null=0.01)\n```\n')
    assert terms_of(nb, '"a"') == {"null": "-0.094", "direction": "'below'"}
    assert terms_of(nb, '"b"') == {"null": "0.01", "direction": "'below'"}
    assert terms_of(nb, '"c"') is None


# --------------------------------------------------------------------------- this repository's history
@pytest.fixture(scope="module")
def records():
    reason = history_missing(ROOT)
    if reason:
        pytest.skip(f"the registration is read from data/registration.json here: {reason}")
    return reg.compute(ROOT)


def test_committed_registration_is_current(records):
    stale = reg.stale(ROOT, records)
    assert not stale, (f"data/registration.json is stale for {stale}: run python -m calibcourse.tools.registration "
                       "and commit it")


def test_the_known_facts_of_the_ledger(records):
    # declared after +0.003 had been seen (issue 46)
    assert records["ch6-ood-ts"]["registration"] == records["ch6-ood-ts-lower"]["registration"] == "post hoc"
    # moved to chapter 5's CNNs after an inconclusive first try: their runs existed before it was declared
    assert records["ch6-label-shift-em"]["registration"] in ("post hoc", "amended")
    # 10 seeds at its verdict, 30 after the 20 added for undecided claims
    cost = records["ch5-error-cost"]   # declared with the first recipe's runs, then moved to the reference recipe's
    assert cost["registration"] == "post hoc" and cost["why"].startswith("declared with the runs of its first verdict")
    assert cost["planned_seeds"] == list(range(10)) and cost["seeds"] == list(range(30))
    # the meta rates were committed a minute or two before the first γ-Net grid run; focal loss's γ after its grid
    assert records["ch5-choice-meta-lr"]["registration"] == "registered"
    assert records["ch5-choice-meta-lr"]["why"].startswith("declared 2 min before")
    assert records["ch5-choice-focal"]["registration"] == "post hoc"


def test_every_declared_claim_has_an_entry():
    """Every id a notebook declares as a literal (and every f-string anchor) is in reads.CLAIM_READS."""
    import re

    declared = set()
    for nb in (ROOT / "notebooks").rglob("*.md"):
        declared |= set(re.findall(r'(?:claim\(\s*(?:id=)?|\bid=)"(ch\d[^"{}]*)"', nb.read_text()))
    missing = sorted(declared - set(CLAIM_READS))
    assert not missing, (f"claims without an entry in calibcourse/study/analysis/ledger/reads.py: {missing} "
                         "(book/guide_contributors.md says how to add one)")


def test_what_held_says_what_the_history_cannot_show_about_the_meta_rates(tmp_path):
    """The meta rates are the grid's outcome, yet were committed before the grid's runs: "registered" by the
    rule, which cannot tell an uncommitted pass from a choice made beforehand; What held says so beside it, as
    the study's report does (issue 46)."""
    import shutil

    from calibcourse.tools.whatheld import write_ledger

    (tmp_path / "data").mkdir()
    shutil.copy(ROOT / reg.REGISTRATION_JSON, tmp_path / reg.REGISTRATION_JSON)   # a clone without history
    write_ledger(tmp_path, [], log=lambda line: None)
    page = (tmp_path / "book" / "generated" / "what_held.md").read_text()
    row = next(line for line in page.splitlines() if line.startswith("| the γ-Nets' meta rates"))
    assert "| registered | declared 2 min before its first run" in row
    assert "uncommitted pass of the grid" in row and "not before them" in row
    focal = next(line for line in page.splitlines() if line.startswith("| focal loss's γ"))
    assert "*post hoc*" in focal and "; but" not in focal


def test_the_pages_read_the_committed_records_wherever_they_run(tmp_path, monkeypatch):
    # the smoke run executes the study pages in a temporary folder: a page that opened
    # data/registration.json relative to its working folder failed there (CI, 2026-11-28)
    from calibcourse.study.analysis.ledger import committed_registration, with_registration

    monkeypatch.chdir(tmp_path)
    assert committed_registration() == reg.load(ROOT) != {}
    some = next(iter(reg.load(ROOT)))
    tagged = with_registration([{"id": some, "source": "guo2017calibration"}])[0]
    assert tagged["registration"] == reg.load(ROOT)[some]["registration"]
    for page in sorted((ROOT / "notebooks").glob("*.md")):
        assert "data/registration.json" not in page.read_text(), f"{page.name} opens the records by a relative path"
