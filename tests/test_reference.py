"""The reference recipe: the gamma-Net's new options against closed forms and controls, the
registry, the choice rule and the frozen-control test on the committed cache."""
import copy

import numpy as np
import pytest
import torch

from calibcourse.calibration import metrics as M
from calibcourse.study.analysis import reference as R
from calibcourse.study.analysis.ledger import Ledger, check_claims
from calibcourse.study.runs.experiments import reference as X
from calibcourse.study.training.meta import GammaNet, MetaTrainer, lookahead_outer_loss
from calibcourse.study.training.models import MLP
from calibcourse.study.training.steps import LOSSES, PlainStep


def _data(n=96, d=5, k=3, seed=0):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(n, d, generator=g), torch.randint(0, k, (n,), generator=g)


def _model(seed=0):
    torch.manual_seed(seed)
    return MLP(in_features=5, num_classes=3, width=8, depth=1)


def test_limit_bounds_every_gamma_and_keeps_a_full_gradient():
    torch.manual_seed(0)
    net = GammaNet(in_features=6, heads=3, limit=2.0)
    feats = torch.randn(500, 6)
    net(feats)  # sets the first batch's rescale
    with torch.no_grad():
        net.W.mul_(50.0)
    assert float(net(feats).detach().max()) > 2.0
    net.project_()
    assert float(net(feats).detach().max()) <= 2.0 + 1e-5
    # far below the limit the gradient of gamma in W is linear in x~ (no squashing); a sigmoid bound's vanishes
    with torch.no_grad():
        net.W.mul_(1e-3)
    g_small = torch.autograd.grad(net(feats[:1]).sum(), net.W)[0].norm()
    with torch.no_grad():
        net.W.mul_(100.0)
    g_large = torch.autograd.grad(net(feats[:1]).sum(), net.W)[0].norm()
    assert float(g_small) == pytest.approx(float(g_large), rel=1e-5)
    sig = GammaNet(in_features=6, heads=3, bound=2.0)
    with torch.no_grad():
        sig.b.fill_(-12.0)  # gamma near 0: the sigmoid saturates
    assert float(torch.autograd.grad(sig(feats[:1]).sum(), sig.W)[0].norm()) < 1e-3 * float(g_small)


def test_limit_refuses_a_bound_too():
    with pytest.raises(ValueError, match="limit"):
        GammaNet(in_features=4, bound=5.0, limit=5.0)


def _trainer(control=None, **kw):
    X, y = _data()
    model = _model()
    t = MetaTrainer(model, X[64:], y[64:], heads=2, val_batch=16, lookahead="sgd", lookahead_params="head",
                    control=control, **kw)
    return t, model, X, y


def _recording(t) -> list:
    """A list that gets the gamma-Net's gradients at each step of its meta optimizer (which still steps)."""
    seen, real_step = [], t.opt.step

    def step():
        seen.append([p.grad.clone() for p in t.gamma_net.parameters()])
        return real_step()
    t.opt.step = step
    return seen


def test_placebo_replaces_the_outer_gradient_by_one_of_the_same_norm():
    norms = {}
    grads = {}
    for control in (None, "placebo"):
        t, model, X, y = _trainer(control, meta_lr=1e-3)
        seen = _recording(t)
        t.step(X[:16], y[:16], torch.optim.SGD(model.parameters(), lr=0.1))
        grads[control] = torch.cat([g.flatten() for g in seen[0]])
        norms[control] = float(grads[control].norm())
    assert norms["placebo"] == pytest.approx(norms[None], rel=1e-5)
    cos = float(grads[None] @ grads["placebo"]) / (norms[None] * norms["placebo"])
    assert abs(cos) < 0.9


def test_a_zero_meta_rate_and_a_late_start_keep_the_gamma_net_fixed():
    for kw in ({"meta_lr": 0.0}, {"meta_lr": 1e-2, "start_epoch": 2}):
        t, model, X, y = _trainer(**kw)
        before = copy.deepcopy(t.gamma_net.state_dict())
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        for i in range(0, 64, 16):
            t.step(X[i:i + 16], y[i:i + 16], opt)
        assert all(torch.equal(before[k], v) for k, v in t.gamma_net.state_dict().items()), kw
    t.epoch = 2  # the caller's epoch reaches start_epoch: the gamma-Net moves
    t.step(X[:16], y[:16], opt)
    assert not torch.equal(before["W"], t.gamma_net.W)


def test_reset_moments_restarts_adam_at_each_epoch_and_is_off_by_default():
    """With reset_moments="epoch" the first meta step of an epoch is the step of a fresh torch Adam on
    the same gradient (an independent optimizer); without it the run is the one it was before."""
    steps = {}
    for reset in (None, "epoch"):
        t, model, X, y = _trainer(meta_lr=1e-2, reset_moments=reset)
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        for i in range(0, 48, 16):  # epoch 1: Adam builds up its moments
            t.step(X[i:i + 16], y[i:i + 16], opt)
        t.epoch = 2
        before = [p.detach().clone() for p in t.gamma_net.parameters()]
        seen = _recording(t)
        t.step(X[48:64], y[48:64], opt)
        fresh = [torch.nn.Parameter(b.clone()) for b in before]
        adam = torch.optim.Adam(fresh, lr=1e-2)
        for f, g in zip(fresh, seen[0], strict=True):
            f.grad = g.clone()
        adam.step()
        after = list(t.gamma_net.parameters())
        steps[reset] = all(torch.allclose(a, f, rtol=0, atol=1e-7) for a, f in zip(after, fresh, strict=True))
        assert int(t.opt.state[after[0]]["step"]) == (1 if reset else 4)
    assert steps == {None: False, "epoch": True}
    with pytest.raises(ValueError, match="reset_moments"):
        _trainer(reset_moments="decay")


def test_a_longer_look_ahead_is_the_one_step_one_unrolled():
    """K = 2 on batches (b1, b2) equals stepping the head by hand twice, then the outer loss."""
    X, y = _data()
    model = _model()
    torch.manual_seed(1)
    net = GammaNet(in_features=8, heads=2)
    two = lookahead_outer_loss(model, net, X[:16], y[:16], X[64:], y[64:], inner_lr=0.3, params="head",
                               outer=torch.nn.functional.cross_entropy, more=[(X[16:32], y[16:32])])
    from calibcourse.study.training.losses import focal_loss

    w, b = model.head.weight, model.head.bias
    for xb, yb in ((X[:16], y[:16]), (X[16:32], y[16:32])):
        f = model.features(xb).detach()
        loss = focal_loss(f @ w.T + b, yb, net(f))
        gw, gb = torch.autograd.grad(loss, (w, b), create_graph=True)
        w, b = w - 0.3 * gw, b - 0.3 * gb
    by_hand = torch.nn.functional.cross_entropy(model.features(X[64:]) @ w.T + b, y[64:])
    assert float(two.detach()) == pytest.approx(float(by_hand.detach()), rel=1e-5)
    with pytest.raises(ValueError, match="last layer"):
        lookahead_outer_loss(model, net, X[:16], y[:16], X[64:], y[64:], inner_lr=0.3, params="all",
                             more=[(X[16:32], y[16:32])])


def test_summed_loss_and_clipping_follow_the_reference_code():
    X, y = _data()
    m1, m2 = _model(), _model()
    s1 = PlainStep(m1, torch.optim.SGD(m1.parameters(), lr=0.01), LOSSES["ce"])
    s2 = PlainStep(m2, torch.optim.SGD(m2.parameters(), lr=0.01 * 16), LOSSES["ce"])
    s1.reduction = "sum"
    s1(X[:16], y[:16]), s2(X[:16], y[:16])  # sum at lr equals mean at lr * 16
    for p, q in zip(m1.parameters(), m2.parameters(), strict=True):
        torch.testing.assert_close(p, q, rtol=1e-5, atol=1e-7)
    m3 = _model()
    s3 = PlainStep(m3, torch.optim.SGD(m3.parameters(), lr=1.0), LOSSES["ce"])
    s3.reduction, s3.clip_grad_norm = "sum", 0.5
    before = [p.detach().clone() for p in m3.parameters()]
    s3(X[:16], y[:16])
    with torch.no_grad():
        moved = torch.sqrt(sum(((p - b) ** 2).sum() for p, b in zip(m3.parameters(), before, strict=True)))
    assert float(moved) == pytest.approx(0.5, rel=1e-4)  # the clipped norm times the rate


def test_registry_names_and_seeds():
    runs = X.reference_runs()
    for method in ("FLgamma-SECE", "FLgamma-DECE"):
        for lr in X.REF_META_LRS:
            assert all(X.ref_name(method, lr, s) in runs for s in X.REF_GRID_SEEDS)
        assert all(X.ref_name(method, X.REF_CHOSEN[method], s) in runs for s in range(X.REF_N_SEEDS))
    assert all(X.ref_name("FLgamma-SECE", 0.0, s) in runs for s in range(X.REF_N_SEEDS))
    # the claims' extra seeds: the chosen FLgamma-SECE, CE and CE-DECE, and nothing else beyond REF_N_SEEDS
    n = X.REF_CLAIM_SEEDS
    assert n["FLgamma-SECE"] > X.REF_N_SEEDS and min(n.values()) > X.REF_N_SEEDS
    assert X.ref_name("FLgamma-SECE", X.REF_CHOSEN["FLgamma-SECE"], n["FLgamma-SECE"] - 1) in runs
    assert X.ref_name("FLgamma-SECE", X.REF_CHOSEN["FLgamma-SECE"], n["FLgamma-SECE"]) not in runs
    for label in ("CE", "CE-DECE (weight 0.5)"):
        assert {s for s in range(100) if X.ref_name(label, seed=s) in runs} == set(range(n[label]))
    beyond = {name.rsplit("/", 1)[0] for name in runs if int(name.rsplit("/s", 1)[1]) >= X.REF_N_SEEDS}
    assert beyond == {X.ref_name(label, seed=0).rsplit("/", 1)[0] for label in ("CE", "CE-DECE (weight 0.5)")} | {
        X.ref_name("FLgamma-SECE", X.REF_CHOSEN["FLgamma-SECE"], 0).rsplit("/", 1)[0]}
    assert all(f"ch5/diagnosis/{arm}/s{s}" in runs for arm in ("horizon 5", "delayed", "placebo")
               for s in X.REF_GRID_SEEDS)
    # the placebo at the chosen rate, on the frozen control's seeds: the chosen FLgamma-SECE with the placebo
    placebo = {n for n in runs if n.startswith(f"ch5/diagnosis/{X.REF_PLACEBO_LABEL}/")}
    assert placebo == {f"ch5/diagnosis/{X.REF_PLACEBO_LABEL}/s{s}" for s in range(X.REF_N_SEEDS)}
    chosen = runs[X.ref_name("FLgamma-SECE", X.REF_CHOSEN["FLgamma-SECE"], 3)]
    placebo_meta = {**chosen["meta"], "control": "placebo"}
    assert runs[f"ch5/diagnosis/{X.REF_PLACEBO_LABEL}/s3"] == {**chosen, "meta": placebo_meta}
    cfg = runs[X.ref_name("FLgamma-SECE", 1e-3, 0)]
    assert cfg["meta"]["cal_weight"] == 0.5 and cfg["meta"]["lookahead_params"] == "head"
    assert cfg["reduction"] == "sum" and cfg["clip_grad_norm"] == 2.0 and cfg["optimizer"] == "sgd"


def test_every_registered_claim_names_runs_of_the_registry_with_its_seeds():
    """The claims registered before their runs (metareg.REGISTERED) read runs the default profile has: their
    new arm (the first pattern) on exactly the seeds they declare, what it is compared with on those at least."""
    from calibcourse.study.analysis.metareg import REGISTERED
    from calibcourse.study.runs.experiments import experiments

    names = set(experiments("default"))
    for cid, c in REGISTERED.items():
        assert cid.startswith("ch5-") and c["direction"] in ("above", "below") and c["prediction"]
        for i, pattern in enumerate(c["runs"]):
            seeds = {s for s in range(100) if pattern.replace("<k>", str(s)) in names}
            assert (seeds == set(range(c["n_seeds"]))) if i == 0 else (seeds >= set(range(c["n_seeds"]))), \
                (cid, pattern, sorted(seeds))


def test_learns_restates_a_claim_without_credit():
    ledger = Ledger(chapter=5)
    interval = (-0.02, -0.03, -0.01, 0.95)
    frozen = {"verdict": "not held", "ece": "+0.1 [-0.2, +0.4] points", "gamma": "+0.00 [-0.01, +0.01]",
              "gamma0": 1.0}
    c = ledger.claim("x", "FLγ-SECE has a lower ECE than CE", "wang2023metareg", "d", interval, learns=frozen)
    assert c.claim.startswith("γ-Net inactive (focal loss at γ ≈ 1)") and not c.credited
    check_claims([c.as_dict()])
    bad = {**c.as_dict(), "claim": "FLγ-SECE has a lower ECE than CE"}
    with pytest.raises(ValueError, match="γ-Net inactive"):
        check_claims([bad])
    named = ledger.claim("z", "FLγ-SECE has a lower ECE than FLγ-DECE", "wang2023metareg", "d", interval,
                         learns={**frozen, "net": "FLγ-DECE"})
    assert named.claim.startswith("γ-Net inactive (FLγ-DECE's: focal loss at γ ≈ 1): FLγ-SECE") and not named.credited
    check_claims([named.as_dict()])
    assert "**not credited to the paper**: FLγ-DECE's γ-Net is not shown to beat its frozen control" in \
        named.verdict_text()
    assert "the γ-Net is not shown to beat" in c.verdict_text()
    ok = ledger.claim("y", "A", "wang2023metareg", "d", interval, learns={**frozen, "verdict": "held"})
    assert ok.credited and ok.claim == "A"
    assert "; the γ-Net learns (against its frozen control: ECE +0.1 [-0.2, +0.4] points" in ok.verdict_text()
    # a γ-Net that ends somewhere else than its control, without a gain shown, is active, not inactive
    active = ledger.claim("w", "FLγ-SECE has a lower ECE than FLγ-DECE", "wang2023metareg", "d", interval,
                          learns={**frozen, "verdict": "inconclusive", "gamma": "+3.92 [+3.27, +4.57]",
                                  "moves": True, "net": "FLγ-DECE", "note": "underconfident in 8 of 10 seeds"})
    assert active.claim.startswith("γ-Net active but not shown to help (FLγ-DECE's final γ +3.92 [+3.27, +4.57] "
                                   "against its frozen control's; underconfident in 8 of 10 seeds): FLγ-SECE")
    assert not active.credited
    check_claims([active.as_dict()])


# --------------------------------------------------------------------------- on the committed cache
@pytest.fixture(scope="module")
def committed():
    from calibcourse.study.runs.cache import Cache
    from calibcourse.study.runs.experiments import experiments

    cache = Cache()
    runs = {n: c for n, c in experiments("default").items() if n.startswith(("ch5/reference/", "ch5/diagnosis/"))}
    loaded = {n: cache.load(c) for n, c in runs.items()}
    if any(v is None for v in loaded.values()):
        pytest.skip("the reference runs are not in this cache")
    return loaded


def test_ce_is_overconfident_on_the_reference_backbone(committed):
    ce = [committed[X.ref_name("CE", seed=s)] for s in range(X.REF_N_SEEDS)]
    err = np.mean([M.error(r.probs("test"), r.labels("test")) for r in ce])
    ece = np.mean([M.ece(r.probs("test"), r.labels("test")) for r in ce])
    assert err <= 0.10 and ece >= 0.03, (err, ece)


def test_the_chosen_values_are_the_rules(committed):
    for family in ("FLgamma-SECE", "FLgamma-DECE", "Focal"):
        assert R.ref_choice(committed, family)["chosen"] == X.REF_CHOSEN[family], family


def test_the_frozen_control_is_one_network_for_both_outer_losses(committed):
    """At meta rate 0 the outer loss never acts: FLgamma-DECE's control is FLgamma-SECE's, bit for bit."""
    for s in X.REF_GRID_SEEDS:
        a, b = committed[X.ref_name("FLgamma-SECE", 0.0, s)], committed[X.ref_name("FLgamma-DECE", 0.0, s)]
        assert np.array_equal(a.logits("test"), b.logits("test"))


def test_learns_at_rate_zero_is_not_held(committed):
    out = R.learns(committed, "FLgamma-SECE", 0.0, X.REF_GRID_SEEDS)
    assert out["verdict"] == "not held" and out["gamma"].startswith("0.00 [0.00, 0.00]")   # no sign on an exact 0


def test_every_paper_claim_of_chapter_5_carries_its_frozen_control_test():
    """Each ledger.claim sourced to the paper in chapter 5's pages passes learns= (the lecture's through
    its claim() helper), so that no claim can credit the paper without the frozen-control test."""
    import re
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    for page in sorted([*root.glob("notebooks/05*.md"), root / "notebooks" / "study_metareg.md"]):
        text = page.read_text()
        calls = re.findall(r"ledger\.claim\((.*?)\n(?:\S|$)", text, flags=re.S)
        helper = re.search(r"def claim\(.*?\n\n\n", text, flags=re.S)
        for call in calls:
            if "wang2023metareg" in call:
                assert "learns=" in call, (page.name, call[:80])
        if helper is not None:
            assert "learns=" in helper.group(0), page.name


def test_chapter_5s_lecture_is_one_week_of_reading():
    from pathlib import Path

    from calibcourse.tools.prose import MAX_LECTURE_WORDS, prose_words

    root = Path(__file__).resolve().parents[1]
    words = prose_words(root / "notebooks" / "05_meta_regularization.md")
    assert 3000 < words <= min(MAX_LECTURE_WORDS, 4500), words   # Part I: one week, at most 4,500 words
    # the week reads Part I's chapter alone; the diagnosis is evidence, in Part II, optional reading
    from calibcourse.study.course.schedule import WEEKS

    assert [name for w in WEEKS for name, _, _ in w.also] == []
    assert [name for name, _ in WEEKS[4].evidence] == ["study_metareg"]


def test_seed_t_interval_is_scipys_one_sample_t_interval():
    from scipy import stats as sps

    d = np.array([0.3, -0.1, 0.8, 0.4, 0.05])
    est, low, high = R.seed_t_interval(d, level=0.9)
    ci = sps.ttest_1samp(d, 0.0).confidence_interval(confidence_level=0.9)
    assert est == pytest.approx(d.mean()) and (low, high) == pytest.approx((ci.low, ci.high))
    with pytest.raises(ValueError, match="at least 2 seeds"):
        R.seed_t_interval([0.2])


def _missing_imports(text: str) -> list:
    """``[(module, name)]`` of the ``from calibcourse... import ...`` lines in ``text`` that do not resolve."""
    import importlib
    import re

    missing = []
    for m in re.finditer(r"^[ \t]*from (calibcourse[\w.]*) import (\([^)]*\)|[^\n]*)", text, re.M):
        module = importlib.import_module(m.group(1))
        for name in re.split(r"[,\n]", re.sub(r"#[^\n]*", "", m.group(2)).strip("()")):
            name = name.split(" as ")[0].strip(" \\")
            if name and not hasattr(module, name):
                try:
                    importlib.import_module(f"{m.group(1)}.{name}")
                except ImportError:
                    missing.append((m.group(1), name))
    return missing


def test_every_import_of_the_pages_resolves():
    """A page that imports a name its module no longer has stops at that cell when the book builds; the
    split of the reference recipe into runs and analysis left chapter 5 and its report doing so."""
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    assert _missing_imports("from calibcourse.study.analysis.reference import REF_N_SEEDS, learns\n") == [
        ("calibcourse.study.analysis.reference", "REF_N_SEEDS")]   # the check can fail
    pages = sorted((root / "notebooks").rglob("*.md")) + sorted((root / "book").rglob("*.md"))
    assert pages
    found = {p.relative_to(root).as_posix(): _missing_imports(p.read_text()) for p in pages}
    assert not {p: m for p, m in found.items() if m}
