"""calibcourse.study.runs.experiments / labels: committed keys, names that hold in every profile, the papers'
recipes."""
import pytest

from calibcourse.study.analysis import adam as A
from calibcourse.study.runs import cache as cachemod
from calibcourse.study.runs import experiments as E
from calibcourse.study.runs import labels as labelsmod
from calibcourse.study.training.config import normalize_config
from calibcourse.study.training.steps import make_optimizer


@pytest.mark.parametrize("profile", ["ci", "default"])
def test_every_ci_and_default_run_has_its_committed_entry(profile):
    """The default book must not retrain: a change of config key (a new field hashed, a renamed
    default) would leave a run without its entry."""
    cache = cachemod.Cache(cachemod.REPOSITORY_CACHE)
    missing = [
        name for name, cfg in E.experiments(profile).items() if not cache.path(cachemod.config_key(cfg)).is_dir()
    ]
    assert missing == [], f"runs of profile {profile} without a committed entry in data/cache: {missing}"


def test_chapter_5s_final_weights_are_the_validation_choice_on_the_committed_cache(monkeypatch):
    """The final runs use ADAM_CHOSEN; the chapter computes the choice from the grid's runs and says
    whether they agree. On the committed cache they must: a retrained grid that chooses otherwise
    means ADAM_CHOSEN (and the final runs) must follow it."""
    monkeypatch.delenv("CALIBCOURSE_CACHE", raising=False)
    choice = A.adam_choice("default")
    assert {family: c["chosen"] for family, c in choice.items()} == E.ADAM_CHOSEN


def test_a_validation_error_exactly_at_the_gap_is_within_it(monkeypatch):
    """The rule's "within 2 points of CE's error" includes 2 points: on the committed grid the
    gamma-Nets' meta lr 1e-5 makes exactly 15 errors more than CE on the 750 meta-validation
    samples, which float arithmetic put 1e-17 above the gap (and so excluded it)."""
    from calibcourse.calibration import metrics as M

    monkeypatch.delenv("CALIBCOURSE_CACHE", raising=False)
    choice = A.adam_choice("default")
    for family in ("FLgamma-SECE", "FLgamma-DECE"):
        c = choice[family]
        row = c["table"].set_index("meta lr").loc[1e-5]
        n = len(A.adam_part(E.run("ch5/CE/s0", "default"), "meta")[1])
        assert n == 750 and round((row["val error"] - c["ce_val_error"]) * n) == 15 == 0.02 * n
        assert row["val error"] > c["ce_val_error"] + E.ADAM_MAX_VAL_ERROR_GAP  # what the float test saw
        assert row["eligible"] and c["chosen"] == 1e-5
        assert M.error(*A.adam_part(E.run("ch5/CE/s0", "default"), "meta")) == c["ce_val_error"]


@pytest.mark.parametrize("profile", ["ci", "default"])
def test_the_small_profiles_use_none_of_the_full_recipe_keys(profile):
    for name, cfg in E.experiments(profile).items():
        # chapter 5's SGD-backbone arm states the papers' plain (not Nesterov) momentum; nothing else
        # and so does the reference recipe (meta-calibration's code), with its diagnosis arms
        # chapter 6's cross-fitting trains the reference recipe's network too
        reference = (name.startswith(("ch5/reference/", "ch6/heldout/", "ch6/crossfit/"))
                     or name.split("/")[2:3] in (["horizon 5"], ["delayed"], ["placebo"], ["placebo (meta lr 0.0001)"]))
        allowed = {"nesterov"} if name.startswith("ch5/diagnosis/SGD ") or reference else set()
        assert not {"augment", "amp", "milestones", "nesterov"} - allowed & set(normalize_config(cfg)), name


def test_names_say_what_varies_and_the_configs_say_the_model():
    for profile in ("default", "full"):
        names = E.experiments(profile)
        assert {f"ch2/depth/level{i}/s0" for i in range(1, 5)} <= set(names)
        assert {"ch2/model/small", "ch2/model/large", "ch3/nine/small", "ch3/nine/large"} <= set(names)
    assert E.sweep_levels("ch2/depth/", "depth", "default") == {1: "ch2/depth/level1/", 2: "ch2/depth/level2/",
                                                                4: "ch2/depth/level3/", 8: "ch2/depth/level4/"}
    assert list(E.sweep_levels("ch2/depth/", "depth", "full")) == [20, 32, 56, 110]
    assert list(E.sweep_levels("ch2/width/", "width", "full")) == [16, 32, 64, 128]
    assert list(E.sweep_levels("ch2/width/", "width", "default")) == [32, 128, 512, 1024]
    assert E.sweep_axis("ch2/width/", "width", "full") == "filters in the first stage (ResNet-14)"
    assert E.sweep_axis("ch2/width/", "width", "default") == "units per layer (2 hidden layers)"
    assert E.sweep_axis("ch2/weight_decay/", "weight_decay", "full") == "weight decay (SGD, L2)"
    assert E.sweep_axis("ch2/weight_decay/", "weight_decay", "default") == "weight decay (Adam, L2)"
    assert E.sweep_axis("ch2/batchnorm/", "batch_norm", "full") == "ResNet-110"
    assert E.sweep_axis("ch2/batchnorm/", "batch_norm", "default") == "MLP 4x256"
    assert (
        E.model_label("ch3/nine/large", "full") == "ResNet-18" and E.model_label("ch3/nine/large", "ci") == "ResNet-20"
    )
    with pytest.raises(ValueError, match="what must be one of"):
        labelsmod.sweep_value({"model": {"name": "mlp"}}, "height")
    with pytest.raises(ValueError, match="needs an MLP or a CIFAR ResNet"):
        labelsmod.sweep_value({"model": {"name": "lenet5"}}, "depth")


def test_full_configs_follow_the_papers_recipes():
    full = E.experiments("full")
    he = full["ch2/depth/level4/s0"]
    assert he["model"] == {"name": "cifar_resnet", "depth": 110, "width": 1.0, "batch_norm": True}
    assert (he["optimizer"], he["lr"], he["momentum"], he["nesterov"], he["weight_decay"], he["batch_size"],
            he["epochs"], he["schedule"]) == ("sgd", 0.1, 0.9, False, 1e-4, 128, 164, "step")
    assert he["augment"] == {"crop_padding": 4, "hflip": True} and he["amp"] is True
    opt, sched = make_optimizer(normalize_config(he), __import__("torch").nn.Linear(1, 1))
    assert sorted(sched.milestones) == [82, 123]  # 50 % and 75 % of 164 epochs
    assert full["ch2/nll_overfit"]["epochs"] == 500  # Guo et al.'s Fig. 3
    ch5 = full["ch5/CE/s0"]
    assert ch5["model"] == {"name": "resnet18"} and ch5["data"]["name"] == "cifar10"
    assert (ch5["epochs"], ch5["milestones"], ch5["weight_decay"]) == (350, [150, 250], 5e-4)
    # the paper's set-up, kept as the diagnosis's reference
    assert full["ch5/diagnosis/paper/s0"]["meta"] == E.PAPER_META
    assert full["ch5/FLgamma-SECE/s0"]["meta"] == {**E.SAFE_META, "meta_lr": E.ADAM_CHOSEN["FLgamma-SECE"]}
    assert full["ch3/frozen_head"]["model"]["backbone"]["pretrained"]["weights"] == E.DENSENET_WEIGHTS
    for cfg in full.values():
        normalize_config(cfg)


def test_chapter_5s_diagnosis_arms_seeds_and_contract_names():
    """The diagnosis's contract: ch5/diagnosis/<arm>/s<seed> with arms null and permuted (3 seeds), at
    least 10 seeds for the methods the verdicts compare, 5 for the other baselines, and the
    names kept."""
    for profile in ("default", "full"):
        runs = E.experiments(profile)
        arms = {n.split("/")[2] for n in runs if n.startswith("ch5/diagnosis/")}
        sgd_grid = {f"SGD CE lr {v:g}" for v in (0.01, 0.03, 0.1)}  # the same names in every profile
        assert arms == {"paper", "null", "permuted", "bounded", "bounded null", "meta lr 1e-4", "meta lr 1e-5",
                        "CE + SECE", "last-layer look-ahead", "SGD CE", "SGD FLgamma-SECE",
                        "SGD FLgamma-SECE frozen", "horizon 5", "delayed", "placebo", "placebo (meta lr 0.0001)",
                        "bounded logged", "bounded reset"} | sgd_grid
        for arm in ("horizon 5", "delayed", "placebo"):  # the reference recipe's arms (issue contract)
            assert {f"ch5/diagnosis/{arm}/s{s}" for s in range(3)} <= set(runs), arm
        for arm in ("paper", "null", "permuted", "bounded", "bounded null"):
            assert {f"ch5/diagnosis/{arm}/s{s}" for s in range(3)} <= set(runs), arm
        seeds = {"CE": 15, "FLgamma-SECE": 15, "FLSD-53": 10, "FLgamma-DECE": 10, "Focal (gamma 1)": 10,
                 "CE-DECE (weight 0.5)": 10, "Label smoothing (epsilon 0.01)": 5, "Mixup (alpha 0.1)": 5,
                 "MMCE (weight 1)": 5}
        for method, n in seeds.items():  # at least 10 for every method a verdict compares
            assert {f"ch5/{method}/s{s}" for s in range(n)} <= set(runs) and f"ch5/{method}/s{n}" not in runs
        assert {f"ch5/grid/FLgamma-{o}ECE (meta lr {v:g})/s0" for o in "SD" for v in (1e-3, 1e-4, 1e-5)} <= set(runs)
        assert runs["ch5/diagnosis/null/s1"]["meta"] == {**E.PAPER_META, "control": "null"}
        assert runs["ch5/diagnosis/permuted/s2"]["meta"] == {**E.PAPER_META, "control": "permuted"}
        assert runs["ch5/diagnosis/bounded null/s0"]["meta"] == {**E.PAPER_META, "gamma_bound": 5.0, "control": "null"}
        assert runs["ch5/diagnosis/last-layer look-ahead/s0"]["meta"]["lookahead_params"] == "head"
        # the collapse's arms: the bounded arm logged, and the same with Adam reset each epoch (5 seeds)
        assert runs["ch5/diagnosis/bounded reset/s4"]["meta"] == {**runs["ch5/diagnosis/bounded logged/s4"]["meta"],
                                                          "reset_moments": "epoch"}
        assert runs["ch5/diagnosis/bounded logged/s0"]["meta"] == {**runs["ch5/diagnosis/bounded/s0"]["meta"],
                                                           "log_hypergradient": True}
        assert "ch5/diagnosis/bounded reset/s5" not in runs
        dece = runs["ch5/FLgamma-DECE/s3"]["meta"]
        assert dece["outer"] == "dece" and dece["meta_val"] == 0.5
        # the ablations no page read are retired (the cache's budget)
        assert not any(name.startswith("ch5/ablation/") for name in runs)
        assert all(runs[f"ch5/diagnosis/{a}/s0"]["seed"] == 0 for a in arms)
    # the gamma-Net's tuning budget is no larger than a baseline's grid
    assert all(len(E.ADAM_GRIDS[f][1]) <= 3 for f in E.ADAM_GRIDS)


def test_chapter_5s_sgd_arm_is_the_reported_ce_and_flgamma_sece_under_the_papers_sgd_recipe():
    """The backbone-optimizer arm: ch5/diagnosis/SGD CE|SGD FLgamma-SECE/s<k>, 5 seeds (ci: 0), each
    the reported config with SGD (momentum 0.9, not Nesterov, weight decay 5e-4, step schedule) at the
    grid's rate; the chosen rate's grid run is the arm's seed 0 (one entry); in full the arm's runs are
    the main runs (that backbone already trains with the papers' recipe)."""
    torch = pytest.importorskip("torch")
    for profile in ("ci", "default", "full"):
        runs = E.experiments(profile)
        seeds = range(1 if profile == "ci" else 5)
        lr = 0.1  # the grid's choice in default; the papers' rate in full
        for arm, method in (("SGD CE", "CE"), ("SGD FLgamma-SECE", "FLgamma-SECE")):
            names = {n for n in runs if n.startswith(f"ch5/diagnosis/{arm}/")}
            assert names == {f"ch5/diagnosis/{arm}/s{s}" for s in seeds}, (profile, arm)
            for s in seeds:
                sgd, adam = (
                    normalize_config(runs[f"ch5/diagnosis/{arm}/s{s}"]),
                    normalize_config(runs[f"ch5/{method}/s{s}"]),
                )
                assert (sgd["optimizer"], sgd["lr"], sgd["momentum"], sgd["nesterov"], sgd["weight_decay"],
                        sgd["schedule"], sgd["seed"]) == ("sgd", lr, 0.9, False, 5e-4, "step", s)
                # everything else is the reported method's: data, model, epochs, batch, loss, meta section
                rest = lambda c: {k: v for k, v in c.items()  # noqa: E731
                                  if k not in ("optimizer", "lr", "momentum", "nesterov", "weight_decay", "schedule")}
                assert rest(sgd) == rest(adam), (profile, arm, s)
                if profile == "full":
                    assert cachemod.config_key(sgd) == cachemod.config_key(adam)
                else:
                    assert adam["optimizer"] == "adam" and cachemod.config_key(sgd) != cachemod.config_key(adam)
        assert runs["ch5/diagnosis/SGD FLgamma-SECE/s0"]["meta"] == runs["ch5/FLgamma-SECE/s0"]["meta"]
        assert cachemod.config_key(runs["ch5/diagnosis/SGD CE lr 0.1/s0"]) == cachemod.config_key(
            runs["ch5/diagnosis/SGD CE/s0"]
        )
    # the step schedule divides the rate by 10 at 50 % and 75 % of the default backbone's 30 epochs
    cfg = normalize_config(E.experiments("default")["ch5/diagnosis/SGD CE/s2"])
    opt, sched = make_optimizer(cfg, torch.nn.Linear(1, 1))
    assert isinstance(opt, torch.optim.SGD) and sorted(sched.milestones) == [15, 22]
    assert opt.param_groups[0]["nesterov"] is False and opt.param_groups[0]["weight_decay"] == 5e-4


def test_chapter_5s_sgd_rate_is_the_grid_rule_on_the_committed_cache(monkeypatch):
    """The arm uses SGD_LR; recomputed from the grid runs by the rule (the lowest post-hoc-half
    validation error), against the same measure taken here from the runs' validation outputs."""
    import numpy as np

    monkeypatch.delenv("CALIBCOURSE_CACHE", raising=False)
    for profile in ("ci", "default"):
        choice = A.sgd_lr_choice(profile)
        t = choice["table"]
        assert list(t["lr"]) == [0.01, 0.03, 0.1]
        errors = []
        for lr in t["lr"]:
            r = E.run(f"ch5/diagnosis/SGD CE lr {lr:g}/s0", profile)
            y = r.labels("val")
            k = round(E.ADAM_META_VAL * len(y))
            errors.append(np.mean(r.probs("val")[k:].argmax(1) != y[k:]))
        assert np.allclose(t["val error"], errors)
        assert choice["chosen"] == t["lr"][int(np.argmin(errors))]
    assert A.sgd_lr_choice("default")["chosen"] == E.SGD_LR
    monkeypatch.setattr(A, "experiments", lambda profile: {"ch5/CE/s0": {}})
    with pytest.raises(KeyError, match="no run starting with"):
        A.sgd_lr_choice("ci")


def test_chapter_5s_validation_parts_split_the_validation_set_and_the_choice_uses_them(monkeypatch):
    import numpy as np

    monkeypatch.delenv("CALIBCOURSE_CACHE", raising=False)
    r = E.run("ch5/CE/s0", "ci")
    pm, ym = A.adam_part(r, "meta")
    pp, yp = A.adam_part(r, "posthoc")
    y = r.labels("val")
    assert len(ym) == round(E.ADAM_META_VAL * len(y)) and np.array_equal(np.concatenate([ym, yp]), y)
    assert np.array_equal(np.concatenate([pm, pp]), r.probs("val"))
    zp, _ = A.adam_part(r, "posthoc", kind="logits")
    assert np.array_equal(zp, r.logits("val")[len(ym):])
    with pytest.raises(ValueError, match="part must be"):
        A.adam_part(r, "test")
    choice = A.adam_choice("ci")
    assert choice["FLgamma-SECE"]["part"] == "meta" and choice["Focal"]["part"] == "posthoc"
    for family, c in choice.items():
        t = c["table"]
        pool = t[t["eligible"]] if t["eligible"].any() else t
        assert c["chosen"] == pool.loc[pool["val ECE"].idxmin(), E.ADAM_GRIDS[family][0]]
    # the meta-learner of a meta_val run saw only the first part: the runs say so in their config
    assert E.experiments("ci")["ch5/FLgamma-SECE/s0"]["meta"]["meta_val"] == E.ADAM_META_VAL
