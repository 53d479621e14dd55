"""Chapter 5's seed-paired tables (calibcourse.study.analysis.tables.diagnosis_table, seed_paired_view)
against independent references: scipy's paired t test, the metrics themselves, hand-counted signs."""
import numpy as np
import pandas as pd
import pytest
from scipy import stats as sps

from calibcourse.calibration import metrics as M
from calibcourse.calibration import stats
from calibcourse.study.analysis import tables as R
from calibcourse.study.training.results import RunResult

N = 800
Y = np.random.default_rng(0).integers(0, 4, N)


def run(scale, seed, gammas=None):
    """Logits 2 e_y + N(0, 1) of seed ``seed``, multiplied by ``scale`` (2: calibrated)."""
    z = np.eye(4)[Y] * 2 + np.random.default_rng(100 + seed).normal(size=(N, 4))
    history = pd.DataFrame({"epoch": [1, 2], "gamma_mean": gammas}) if gammas else pd.DataFrame()
    return RunResult({}, history, {"test_logits": scale * z, "test_labels": Y})


def test_diagnosis_table_matches_scipy_paired_t_and_the_metrics():
    ref = {s: run(4.0, s) for s in range(4)}
    # a different scale per seed, so the per-seed differences vary
    arm = {s: run(1.5 + 0.4 * s, s, gammas=[1.0, 2.0 + s]) for s in range(4)}
    table, tests = R.diagnosis_table({"arm": arm}, ref, Y, n_boot=0)
    d_ece = [M.ece(arm[s].probs(), Y) - M.ece(ref[s].probs(), Y) for s in range(4)]
    t = sps.ttest_rel([M.ece(arm[s].probs(), Y) for s in range(4)],
                      [M.ece(ref[s].probs(), Y) for s in range(4)])
    lo, hi = t.confidence_interval(0.95)
    d = tests[("arm", "ECE")]
    assert d.estimate == pytest.approx(np.mean(d_ece))
    assert (d.low, d.high) == (pytest.approx(lo), pytest.approx(hi))
    assert d.n_positive == sum(v > 0 for v in d_ece)
    assert table.loc["arm", "ECE: seeds"] == f"worse in {sum(v > 0 for v in d_ece)} of 4 seeds"
    assert table.loc["arm", "ECE (%)"] == pytest.approx(100 * np.mean([M.ece(arm[s].probs(), Y) for s in range(4)]))
    assert table.loc["arm", "final mean γ"] == pytest.approx(np.mean([2.0 + s for s in range(4)]))
    # the argmax does not depend on the scale: no error difference in any seed
    assert tests[("arm", "Error")].estimate == 0.0
    assert table.loc["arm", "Error: seeds"] == "worse in 0 of 4 seeds"


def test_diagnosis_table_pairs_only_the_arms_seeds_and_has_no_gamma_without_a_gamma_net():
    ref = {s: run(4.0, s) for s in range(3)}
    table, tests = R.diagnosis_table({"one seed": {1: run(2.0, 1)}}, ref, Y, n_boot=20)
    assert int(table.loc["one seed", "seeds"]) == 1 and tests[("one seed", "ECE")].n_seeds == 1
    assert np.isnan(table.loc["one seed", "final mean γ"])
    expected = M.ece(run(2.0, 1).probs(), Y) - M.ece(ref[1].probs(), Y)
    assert tests[("one seed", "ECE")].plugin == pytest.approx(expected)


@pytest.mark.parametrize("arms, reference, match", [
    ({}, {0: None}, "arms must be a non-empty dict"),
    ({"a": {}}, {0: None}, r"arms\['a'\] must be a non-empty dict"),
    ({"a": {5: None}}, {0: None}, "reference has no seed 5 of arm 'a'"),
    ({"a": {0: None}}, {}, "reference must be a non-empty dict"),
])
def test_diagnosis_table_rejects_bad_inputs(arms, reference, match):
    with pytest.raises(ValueError, match=match):
        R.diagnosis_table(arms, reference, Y)


def test_diagnosis_table_rejects_another_test_set():
    other = RunResult({}, pd.DataFrame(), {"test_logits": run(2.0, 0).logits(), "test_labels": np.roll(Y, 1)})
    with pytest.raises(ValueError, match="share one test set"):
        R.diagnosis_table({"a": {0: other}}, {0: run(4.0, 0)}, Y)


def test_seed_paired_view_shows_the_interval_sign_count_and_verdict():
    a = [run(1.0 + 0.5 * s, s).probs() for s in range(3)]
    b = [run(4.0, s).probs() for s in range(3)]
    d = stats.paired_seeds_difference(M.nll, a, b, Y, n_boot=0)
    row = R.seed_paired_view({("NLL", "A", "B"): d}).loc[("NLL", "A", "B")]
    per_seed = [M.nll(p, Y) - M.nll(q, Y) for p, q in zip(a, b, strict=True)]
    assert row["A above B in"] == f"worse in {sum(v > 0 for v in per_seed)} of 3 seeds"
    assert row["A - B [95 % interval]"].startswith(f"{np.mean(per_seed):+.3f}")
    assert row["A - B [95 % interval]"].endswith("nats")
    assert row["claim: A - B below"] == "0" and row["verdict"] == stats.verdict(d.low, d.high)
    # a claim with a size is tested on its size; a cost row tests nothing
    bound = (d.low + d.high) / 2
    view = R.seed_paired_view({("NLL", "A", "B"): d, ("Error", "A", "B"): d},
                              nulls={("NLL", "A", "B"): bound, ("Error", "A", "B"): None})
    assert view.loc[("NLL", "A", "B"), "verdict"] == "inconclusive" == stats.verdict(d.low, d.high, null=bound)
    assert view.loc[("NLL", "A", "B"), "claim: A - B below"] == f"{bound:+.3f}"
    assert view.loc[("Error", "A", "B"), ["claim: A - B below", "verdict"]].tolist() == ["", ""]


def test_seed_paired_view_rejects_an_unpaired_difference():
    with pytest.raises(ValueError, match="must be a stats.PairedSeeds"):
        R.seed_paired_view({("ECE", "A", "B"): stats.Difference(0.0, -0.1, 0.1, 0.95, n=10)})
    with pytest.raises(ValueError, match="tests must be a non-empty dict"):
        R.seed_paired_view({})
