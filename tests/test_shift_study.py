"""Chapter 6's corrected statements, each decided by its number on the committed cache, and the
study's helpers (calibcourse.study.analysis.shift_study) against independent computations.

The numbers are recomputed here as the chapter computes them (the default profile's runs, its
bootstrap sizes); each test asserts the side of an interval or a gap wide enough that a last-bit
difference between CPUs cannot move it."""
import re
from pathlib import Path

import numpy as np
import pytest
from scipy.special import softmax

from calibcourse.calibration import metrics, stats
from calibcourse.study.analysis import shift_study as SS
from calibcourse.study.course.notebook import budget

ROOT = Path(__file__).resolve().parents[1]
CHAPTER = ROOT / "notebooks" / "06_practice.md"
N_BOOT = budget("default", "n_boot_seeds")


# --------------------------------------------------------------------------- the helpers
def test_order_reversals_counts_swapped_pairs_like_a_double_loop():
    rng = np.random.default_rng(0)
    z = rng.normal(scale=3, size=(60, 5))
    t = 2.5
    c1, c2 = softmax(z, axis=1).max(1), softmax(z / t, axis=1).max(1)
    swapped = sum((c1[i] - c1[j]) * (c2[i] - c2[j]) < 0 for i in range(60) for j in range(i + 1, 60))
    assert SS.order_reversals(z, t) == pytest.approx(swapped / (60 * 59 / 2))
    assert SS.order_reversals(z, t) > 0                                      # five classes: some swap
    binary = np.c_[np.zeros(60), rng.normal(scale=3, size=60)]
    assert SS.order_reversals(binary, t) == 0.0                              # two classes: none
    with pytest.raises(ValueError, match="temperature must be a number > 0"):
        SS.order_reversals(z, 0.0)


def test_the_calibrated_reference_is_the_expected_ece_of_a_calibrated_model():
    """Against a plain simulation: labels drawn from the probabilities, the ECE averaged."""
    rng = np.random.default_rng(1)
    p = softmax(rng.normal(scale=2, size=(120, 4)), axis=1)
    sim = np.mean([metrics.ece(p, np.array([rng.choice(4, p=row) for row in p])) for _ in range(300)])
    assert SS.calibrated_reference_ece(p, draws=300, seed=2) == pytest.approx(sim, abs=0.01)
    assert SS.calibrated_reference_ece(p, draws=300) > 0.05                  # 120 samples: several points


def test_mean_contrast_is_the_mean_of_per_angle_differences():
    rng = np.random.default_rng(3)
    y = rng.integers(0, 3, 200)
    P = {name: {a: [softmax(rng.normal(scale=s, size=(200, 3)), axis=1) for _ in range(4)] for a in (1, 2)}
         for name, s in (("a", 1.0), ("b", 3.0))}
    d = SS.mean_contrast(P, "a", "b", [1, 2], y, n_boot=0)
    per_seed = [np.mean([metrics.ece(P["a"][k][i], y) - metrics.ece(P["b"][k][i], y) for k in (1, 2)])
                for i in range(4)]
    assert d.estimate == pytest.approx(np.mean(per_seed))


def test_out_of_fold_nll_change_matches_a_plain_cross_validation():
    """Against scikit-learn's StratifiedKFold and a scipy search for each fold's temperature."""
    from scipy.optimize import minimize_scalar
    from sklearn.model_selection import StratifiedKFold

    from calibcourse.calibration.synthetic import scaled_logits

    z, y = scaled_logits(1500, 4, factor=0.6, seed=5)                   # underconfident: T < 1 helps
    oof = np.empty_like(z)
    for train, held in StratifiedKFold(5, shuffle=True, random_state=0).split(z, y):
        t = minimize_scalar(lambda t, train=train: metrics.nll(softmax(z[train] / t, axis=1), y[train]),
                            bounds=(0.05, 20), method="bounded", options={"xatol": 1e-8}).x
        oof[held] = softmax(z[held] / t, axis=1)
    expected = metrics.nll(oof, y) - metrics.nll(softmax(z, axis=1), y)
    assert expected < 0
    assert SS.out_of_fold_nll_change(z, y) == pytest.approx(expected, abs=1e-5)
    with pytest.raises(ValueError, match="folds"):
        SS.out_of_fold_nll_change(z, y, folds=1)


def test_label_shift_resamples_draw_one_set_per_network_with_shared_labels():
    from calibcourse.study.analysis.deployment import label_shift_indices

    y = np.random.default_rng(4).integers(0, 3, 900)
    sets, ys = SS.label_shift_resamples(y, [0.6, 0.3, 0.1], 400, n_sets=4, seed=2)
    assert len(sets) == 4 and np.bincount(ys).tolist() == [240, 120, 40]
    assert all(np.array_equal(y[s], ys) for s in sets)                   # the same labels, row for row
    assert len({tuple(np.sort(s)) for s in sets}) == 4                   # drawn on their own
    for i, s in enumerate(sets):                                         # each one label_shift_indices' draw
        assert np.array_equal(np.sort(s), label_shift_indices(y, [0.6, 0.3, 0.1], 400, seed=2 + i))


# --------------------------------------------------------------------------- the committed runs
@pytest.fixture(scope="module")
def rotated():
    """Chapter 6's fair footing on the committed default runs, as the chapter computes it."""
    from calibcourse.study.analysis.deployment import SHIFT_RUN_OF, fair_footing
    from calibcourse.study.runs.experiments import experiments, runs
    from calibcourse.study.training.shift import shift_levels

    R = {k: v for f in SHIFT_RUN_OF.values() for k, v in runs(f"ch6/{f}/", "default").items()}
    seeds = sorted(int(n.rsplit("s", 1)[1]) for n in R if n.startswith("ch6/CE/"))
    cfg = experiments("default")["ch6/CE/s0"]
    levels = shift_levels(cfg)
    y_full = R["ch6/CE/s0"].labels("test")
    n = cfg["shift"]["n"]
    splits = {a: ("test", slice(0, n)) if a == 0 else (f"shift/{a}", slice(None)) for a in [0] + levels}
    splits["full"] = ("test", slice(None))
    P, temps = fair_footing(R, seeds, splits)
    return {"R": R, "P": P, "temps": temps, "levels": levels, "y": y_full[:n], "y_full": y_full, "seeds": seeds}


def test_a_temperature_below_1_worsens_every_method_it_sharpens_under_shift(rotated):
    """Issue 46: ensemble ECE +3.3 [+1.5, +5.1], MC dropout +7.2, focal +8.1 points (TS minus uncalibrated,
    mean over the shifted angles); CE, whose temperature is above 1, improves."""
    P, y, levels = rotated["P"], rotated["y"], rotated["levels"]
    for m in ("Ensemble", "MC dropout", "Focal"):
        assert max(rotated["temps"][m]) < 1, m                                # the temperature sharpens
        for metric in (metrics.ece, metrics.nll):
            d = SS.mean_contrast(P, f"{m} + TS", m, levels, y, metric, n_boot=N_BOOT)
            assert stats.verdict(d.low, d.high, direction="above") == "held", (m, metric.__name__, d)
    assert min(rotated["temps"]["CE"]) > 1
    d_ce = SS.mean_contrast(P, "CE + TS", "CE", levels, y, n_boot=N_BOOT)
    assert d_ce.high < 0
    ens = SS.mean_contrast(P, "Ensemble + TS", "Ensemble", levels, y, n_boot=N_BOOT)
    assert 0.02 < ens.estimate < 0.05


@pytest.fixture(scope="module")
def in_distribution():
    """Every seed of the recipe on the clean test digits (the letters' runs: seeds 0-9, the first five
    the rotated study's networks again), as the chapter computes it."""
    from calibcourse.study.analysis.deployment import fair_footing
    from calibcourse.study.runs.experiments import runs

    family = {"CE": "CE", "Ensemble": "ensemble", "MC dropout": "dropout", "Focal": "focal"}
    R = {k: v for f in family.values() for k, v in runs(f"ch6/letters/{f}/", "default").items()}
    seeds = sorted(int(n.rsplit("s", 1)[1]) for n in R if n.startswith("ch6/letters/CE/"))
    P, temps = fair_footing(R, seeds, {"test": ("test", slice(None)), "val": ("val", slice(None))}, family,
                            prefix="ch6/letters")
    r0 = R[f"ch6/letters/CE/s{seeds[0]}"]
    return {"R": R, "P": P, "temps": temps, "seeds": seeds, "y": r0.labels("test"), "yv": r0.labels("val"),
            "family": family}


def _gap(probs, y):
    """Mean confidence minus accuracy, mean over seeds."""
    return float(np.mean([p.max(1).mean() - (p.argmax(1) == y).mean() for p in probs]))


def test_the_ensemble_is_calibrated_in_distribution_and_mc_dropout_and_focal_are_underconfident(rotated,
                                                                                                 in_distribution):
    """Expert review: the ensemble's confidence matches its accuracy on the test digits (0.9716 against
    0.9720 on the rotated study's 5 seeds, +0.0003 on all 10); its T < 1 follows the 500-digit validation
    split, where the gap is -0.008, about one standard error. MC dropout and focal loss are underconfident."""
    for P, y, key in ((rotated["P"], rotated["y_full"], "full"), (in_distribution["P"], in_distribution["y"], "test")):
        assert abs(_gap(P["Ensemble"][key], y)) < 0.003
        assert _gap(P["MC dropout"][key], y) < -0.015
        assert _gap(P["Focal"][key], y) < -0.03
    P, yv = in_distribution["P"], in_distribution["yv"]
    val_gap = _gap(P["Ensemble"]["val"], yv)
    acc = np.mean([(p.argmax(1) == yv).mean() for p in P["Ensemble"]["val"]])
    se = np.sqrt(acc * (1 - acc) / len(yv))
    assert len(yv) == 500 and val_gap < 0 and 0.5 < abs(val_gap) / se < 2       # "about one standard error"
    assert max(in_distribution["temps"]["Ensemble"]) < 1
    assert _gap(P["Ensemble + TS"]["test"], in_distribution["y"]) > 0.003      # sharpened past its accuracy


def test_temperature_scaling_the_ensemble_gains_nothing_even_in_distribution(rotated, in_distribution):
    """Expert review: on the clean test digits the temperature raises the ensemble's NLL in every seed
    (+0.009 [-0.001, +0.019] nats on 10 seeds, +0.011 on 5) and does not lower its ECE (+0.16 [-0.22,
    +0.54] points); it lowers MC dropout's and focal loss's ECE (-1.6 and -3.5 points)."""
    for P, y, key in ((rotated["P"], rotated["y_full"], "full"), (in_distribution["P"], in_distribution["y"], "test")):
        for metric in (metrics.ece, metrics.nll):
            d = stats.paired_seeds_difference(metric, P["Ensemble + TS"][key], P["Ensemble"][key], y, n_boot=N_BOOT)
            assert d.estimate > 0 and d.high > 0, (metric.__name__, d)          # no gain shown
        d = stats.paired_seeds_difference(metrics.nll, P["Ensemble + TS"][key], P["Ensemble"][key], y, n_boot=0)
        assert d.n_positive == d.n_seeds                                         # up in every seed
    P, y = in_distribution["P"], in_distribution["y"]
    for m in ("MC dropout", "Focal"):
        d = stats.paired_seeds_difference(metrics.ece, P[f"{m} + TS"]["test"], P[m]["test"], y, n_boot=N_BOOT)
        assert d.high < 0, (m, d)


def test_the_held_out_check_rejects_the_ensembles_temperature_and_keeps_mc_dropouts(in_distribution):
    """Cross-validated on the 500 validation digits, the temperature lowers the NLL in 5 of 10 seeds for
    the ensemble (by at most 0.004 nats), in every seed for MC dropout and focal loss."""
    R, yv, fam = in_distribution["R"], in_distribution["yv"], in_distribution["family"]
    change = {m: np.array([SS.out_of_fold_nll_change(R[f"ch6/letters/{fam[m]}/s{s}"].logits("val"), yv)
                           for s in in_distribution["seeds"]]) for m in ("Ensemble", "MC dropout", "Focal")}
    assert 3 <= (change["Ensemble"] < 0).sum() <= 7 and np.abs(change["Ensemble"]).max() < 0.005
    assert (change["MC dropout"] < 0).all() and (change["Focal"] < 0).all()


def test_the_temperature_scaled_ensemble_has_a_worse_nll_than_ce_plus_ts_at_the_strongest_angle(rotated):
    P, far = rotated["P"], rotated["levels"][-1]
    d = stats.paired_seeds_difference(metrics.nll, P["Ensemble + TS"][far], P["CE + TS"][far], rotated["y"],
                                      n_boot=N_BOOT)
    assert d.low > 0                                                        # +1.46 [+0.15, +2.78] nats


def test_temperature_scaling_reorders_some_pairs_of_confidences_here(rotated):
    """The chapter's "a temperature keeps the order" holds for two classes only: here 0.8 to 3.2 % of pairs."""
    R, temps, n = rotated["R"], rotated["temps"], len(rotated["y"])
    rev = [SS.order_reversals(R[f"ch6/CE/s{s}"].logits("test")[:n].astype(float), t)
           for s, t in zip(rotated["seeds"], temps["CE"], strict=True)]
    assert min(rev) > 0.002 and max(rev) < 0.05


def test_the_recalibration_floor_is_mostly_the_binned_eces_bias(rotated):
    """Against a perfectly calibrated reference: at 30 degrees all 150 labels leave the reference's ECE;
    at 90 degrees 50 labels leave a gap of several points and 100 close it (the checklist's "about a
    hundred labels at the strongest shift")."""
    R, temps, y, levels = rotated["R"], rotated["temps"], rotated["y"], rotated["levels"]
    half = len(y) // 2
    gaps = {}
    for a in (levels[1], levels[-1]):
        z = [R[f"ch6/CE/s{s}"].logits(f"shift/{a}").astype(float) / t
             for s, t in zip(rotated["seeds"], temps["CE"], strict=True)]
        curve, _ = SS.recalibration_with_reference(z, y, [0, 10, 20, 50, 100, half], repeats=20, draws=20)
        g = curve.groupby("n")[["ECE", "ECE if calibrated"]].mean()
        gaps[a] = (g["ECE"] - g["ECE if calibrated"]).to_dict()
    assert abs(gaps[levels[1]][half]) < 0.01
    assert gaps[levels[-1]][50] > 0.03 and gaps[levels[-1]][100] < 0.01


@pytest.fixture(scope="module")
def label_shift():
    """Chapter 5's reference CE networks, each on its own label-shifted resample of the test sequences."""
    from calibcourse.study.analysis.reference import ref_part
    from calibcourse.study.runs.experiments import runs

    R5 = runs("ch5/reference/CE/", "default")
    keys = sorted(R5, key=lambda k: int(k.rsplit("s", 1)[1]))
    y5 = R5[keys[0]].labels("test")
    new = 0.7 ** np.arange(10)
    new /= new.sum()
    sets, y_ls = SS.label_shift_resamples(y5, new, int(np.bincount(y5, minlength=10).min() / new.max()), len(keys))
    nets = [(*ref_part(R5[k], "posthoc", "logits"), R5[k].logits("test")[ix]) for k, ix in zip(keys, sets, strict=True)]
    return {"table": SS.label_shift_comparison(nets, y_ls, new), "nets": nets, "y": y_ls, "sets": sets}


def test_bbse_misses_the_priors_by_more_than_em_and_calibration_does_not_help_ems_estimate(label_shift):
    """Per-network resamples: BBSE +0.033 [+0.024, +0.042] above EM on temperature-scaled probabilities;
    EM on the raw softmax -0.006 [-0.010, -0.002] (calibrating first did not help); the corrected
    predictions' NLL 0.364 from raw against 0.185 from calibrated probabilities. BBSE's confusion matrix
    rests on 250 calibration sequences, about 25 per class."""
    from calibcourse.study.analysis.reference import seed_t_interval

    table = label_shift["table"]

    def err(cal_name, est, col="prior error"):
        rows = table[(table["calibration"] == cal_name) & (table["estimator"] == est)]
        return rows.sort_values("network")[col].to_numpy()

    em = err("TS", "EM")
    _, lo, _ = seed_t_interval(err("TS", "BBSE") - em)
    assert lo > 0
    _, lo, _ = seed_t_interval(err("none", "EM") - em)
    assert lo < 0                                                           # calibration did not help
    assert err("none", "EM", "NLL").mean() > err("TS", "EM", "NLL").mean() + 0.1   # but the predictions differ
    assert all(len(yc) == 250 for _, yc, _ in label_shift["nets"])
    assert len({tuple(s) for s in label_shift["sets"]}) == len(label_shift["sets"])   # one draw per network


def test_ems_correction_lowers_the_nll_of_ce_plus_ts_on_per_network_resamples(label_shift):
    """The claim ch6-label-shift-em, each network on its own resample: -0.030 [-0.036, -0.024] nats."""
    from calibcourse.calibration import calibrators as cal
    from calibcourse.calibration import priors

    deployed = [cal.TemperatureScaling().fit(zc, yc).predict_proba(z.astype(np.float64))
                for zc, yc, z in label_shift["nets"]]
    corrected = [priors.em_priors(q, np.bincount(yc, minlength=10) / len(yc))[1]
                 for q, (_, yc, _) in zip(deployed, label_shift["nets"], strict=True)]
    d = stats.paired_seeds_difference(metrics.nll, corrected, deployed, label_shift["y"], n_boot=N_BOOT)
    assert d.high < -0.01 and d.n_seeds == 30


def test_the_fold_ensemble_is_underconfident_but_not_shown_worse_in_proper_scores():
    """Issue 46: judged by ECE alone it is worse; in NLL and Brier score neither way is shown better. At the
    smallest pool it is 88.9 % confident and 95.0 % accurate. The cross-fitted temperature's ECE cost is
    under 1 point (-0.24 [-1.04, +0.56]) but not shown to be nothing."""
    from calibcourse.calibration import selective
    from calibcourse.study.analysis.deployment import CROSSFIT_ARMS, crossfit_arms, crossfit_comparison
    from calibcourse.study.runs.experiments import runs

    heldout, crossfit = runs("ch6/heldout/", "default"), runs("ch6/crossfit/", "default")
    for n in (2500, 5000):
        seeds = sorted(int(k.rsplit("s", 1)[1]) for k in crossfit if f"/n{n}/" in k)
        arms = [crossfit_arms(heldout[f"ch6/heldout/n{n}/s{s}"], crossfit[f"ch6/crossfit/n{n}/s{s}"]) for s in seeds]
        y = crossfit[f"ch6/crossfit/n{n}/s{seeds[0]}"].labels("test")
        fold, cross = [a[CROSSFIT_ARMS[2]] for a in arms], [a[CROSSFIT_ARMS[1]] for a in arms]
        for f in (metrics.nll, metrics.brier):
            d = stats.paired_seeds_difference(f, fold, cross, y, n_boot=1000)
            assert d.low < 0 < d.high, (n, f.__name__, d)
        if n == 2500:
            gap = np.mean([selective.confidence(p).mean() - (p.argmax(1) == y).mean() for p in fold])
            assert gap < -0.03                                                  # underconfident
    *_, tests = crossfit_comparison({k: v for k, v in heldout.items() if "/n2500/" in k},
                                    {k: v for k, v in crossfit.items() if "/n2500/" in k},
                                    n_boot=budget("default", "n_boot"))
    d = tests[(2500, CROSSFIT_ARMS[1], "ECE (%)")]
    assert d.low < 0 < d.high < 0.01


def test_a_pixel_statistic_detects_the_letters_as_well_as_the_networks():
    """Expert review: the share of saturated pixels (> 0.99), 10.5 % for the letters against 5.6 % for the
    digits, gives AUROC 0.81, the strongest of the trivial features, about the ensemble's 0.802 and MC
    dropout's 0.807, above CE's 0.767; still below the issue's bar of 0.9."""
    from calibcourse.study.analysis.deployment import brightness_separation, fair_footing, ood_metric, with_ood
    from calibcourse.study.runs.experiments import experiments, runs
    from calibcourse.study.training.config import load_data_splits
    from calibcourse.study.training.shift import OOD_SPLIT, ood_letters

    family = {"CE": "CE", "Ensemble": "ensemble", "MC dropout": "dropout"}
    R = {k: v for f in family.values() for k, v in runs(f"ch6/letters/{f}/", "default").items()}
    seeds = sorted(int(n.rsplit("s", 1)[1]) for n in R if n.startswith("ch6/letters/CE/"))
    P, _ = fair_footing(R, seeds, {"test": ("test", slice(None)), OOD_SPLIT: (OOD_SPLIT, slice(None))}, family,
                        prefix="ch6/letters")
    *_, X_test, _, (mean, std) = load_data_splits(experiments("default")["ch6/letters/CE/s0"]["data"],
                                                  return_stats=True)
    raw = X_test * np.asarray(std).reshape(1, -1, 1, 1) + np.asarray(mean).reshape(1, -1, 1, 1)
    letters = ood_letters(len(P["CE"][OOD_SPLIT][0]), X_test.shape[1:])
    pix = brightness_separation(raw, letters)
    assert max(pix, key=pix.get) == "saturated fraction" and 0.78 < pix["saturated fraction"] < 0.84
    assert (letters > 0.99).mean() > 1.5 * (raw > 0.99).mean()
    auc = {m: np.mean([ood_metric(*with_ood(a, b)) for a, b in zip(P[m]["test"], P[m][OOD_SPLIT], strict=True)])
           for m in ("CE", "Ensemble", "MC dropout")}
    assert auc["CE"] < pix["saturated fraction"] - 0.02
    assert all(abs(auc[m] - pix["saturated fraction"]) < 0.02 for m in ("Ensemble", "MC dropout"))


# --------------------------------------------------------------------------- the pages' words
def test_the_chapter_no_longer_says_a_temperature_rescales_every_confidence_alike():
    text = CHAPTER.read_text()
    for wrong in ("every confidence alike", "rescales every input's confidence the same way",
                  "all the data at no cost in calibration", "a few dozen labelled samples bring it"):
        assert wrong not in text, wrong
    checklist = (ROOT / "book" / "checklist.md").read_text()
    assert "a few dozen labelled samples of the new inputs to come close" not in checklist
    assert "random sample" in checklist and "target risk" in checklist and "trigger" in checklist


def _words(path: Path) -> str:
    return " ".join(path.read_text().split())


def test_no_page_calls_the_ensemble_underconfident_or_a_temperature_its_fix():
    """Expert review: the deep ensemble is calibrated in distribution here and a temperature after
    averaging made it no better even there; the advice is a held-out check, the bookkeeping stays in
    Part II, and the claims are worded as the ledger decides them."""
    chapter, study = _words(CHAPTER), _words(ROOT / "notebooks" / "study_shift.md")
    checklist, deck = _words(ROOT / "book" / "checklist.md"), _words(ROOT / "notebooks" / "slides" / "06_practice.md")
    wrong = {chapter: ("t_under", "ensemble's underconfidence", "If the data will stay close to the training data, "
                       "calibrate it", "Brightness alone barely", "its tests are retired", "is {ref}`retired",
                       "An earlier test of temperature scaling", "an equivalence test:", "at no cost in calibration",
                       "An ensemble needs $T = 0.8$"),
             study: ("The three methods that are underconfident in distribution", "calibration gained in distribution "
                     "did not carry over to the shift. It is", "since a label shift needs a test set large enough",
                     "The ensemble, MC dropout and focal loss start underconfident"),
             checklist: ("leans underconfident: calibrate the averaged ensemble", "was not decided here",
                         "If the deployed data will stay close"),
             deck: ("Calibrate an ensemble after averaging.", "so calibrate after averaging",
                    "a few dozen labels come close to what all of them give", "fourteen steps")}
    for text, phrases in wrong.items():
        for phrase in phrases:
            assert phrase not in text, phrase
    assert "lowers the NLL on labelled data that no member trained on" in chapter
    assert "only if it lowers the held-out NLL" in checklist and "only if it lowers the held-out NLL" in deck
    assert "split the held-out data in two, or cross-validate the temperature" in checklist
    quiz = chapter[chapter.index("## Self-check quiz"):]
    assert "**Question 1** (goal: the fair footing read both ways). MC dropout needs" in quiz


def test_the_letters_claims_are_declared_as_registered_before_their_runs():
    """The chapter's ledger calls keep the margins and sides declared in the package before the runs."""
    from calibcourse.study.analysis.deployment import LETTERS_CLAIMS

    text = CHAPTER.read_text()
    for cid, spec in LETTERS_CLAIMS.items():
        call = re.search(r'ledger\.claim\("' + re.escape(cid) + r'",(.*?)\)\n', text, flags=re.S)
        assert call, cid
        assert f"null={spec['null']}" in call.group(1) and f'direction="{spec["direction"]}"' in call.group(1), cid


def test_the_quiz_has_questions_to_compute_and_balanced_options():
    text = CHAPTER.read_text()
    quiz = text[text.index("## Self-check quiz"):]
    heads = re.findall(r"^\*\*Question (\d+)\*\* \((to compute; )?goal: [^)]+\)\.", quiz, flags=re.M)
    assert len(heads) >= 5 and sum(bool(c) for _, c in heads) >= 2
    blocks = re.split(r"^\*\*Question \d+\*\*", quiz, flags=re.M)[1:]
    longest_right = 0
    for b in blocks:
        opts = re.findall(r"^:::\{dropdown\} [A-Z]\. ([^\n]*)\n(.*?)^:::", b, flags=re.M | re.S)
        right = [len(t) for t, body in opts if "**Right.**" in body]
        others = [len(t) for t, body in opts if "**Right.**" not in body]
        assert len(right) == 1
        longest_right += right[0] > max(others)
    assert 3 * longest_right <= len(blocks)


def test_the_post_hoc_claims_say_so_in_their_text_and_their_registration():
    """Issue 46: ch6-ood-ts and ch6-ood-ts-lower were declared after +0.003 had been seen, and the label-shift
    claim moved to chapter 5's networks after an inconclusive first try; What held shows each claim's text and
    its registration, so both must flag them (the registration from data/registration.json)."""
    import json

    records = json.loads((ROOT / "data" / "registration.json").read_text())
    text = " ".join(CHAPTER.read_text().split())

    def declared(cid):   # the claim's text as its ledger.claim call writes it, literals joined
        call = text[text.index(f'ledger.claim("{cid}"'):]
        call = call[:call.index("source=")]
        return "".join(re.findall(r'"([^"]*)"', call))

    for cid in ("ch6-ood-ts", "ch6-ood-ts-lower"):
        assert records[cid]["registration"] == "post hoc"
        assert "declared after its numbers were seen" in declared(cid)
    assert records["ch6-label-shift-em"]["registration"] == "post hoc"
    assert "after an inconclusive first try" in declared("ch6-label-shift-em")
    assert "declared after their runs" in declared("ch6-label-shift-em")
