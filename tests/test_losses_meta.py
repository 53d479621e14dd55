"""calibcourse.study.training.losses and calibcourse.study.training.meta: closed forms, finite-difference gradients,
the bilevel step."""

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from calibcourse.calibration import metrics as M
from calibcourse.study.training import losses as L
from calibcourse.study.training.meta import GammaNet, MetaTrainer, adam_noise_walk, lookahead_outer_loss, lookahead_step
from calibcourse.study.training.models import MLP


def data(n=64, k=5, seed=0, dtype=torch.float64):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(n, k, generator=g, dtype=dtype) * 2, torch.randint(0, k, (n,), generator=g)


def test_focal_gamma_zero_is_cross_entropy_exactly():
    z, y = data()
    assert torch.equal(L.focal_loss(z, y, 0.0), F.cross_entropy(z, y))
    assert torch.allclose(L.focal_loss(z, y, torch.zeros(64, dtype=z.dtype)), F.cross_entropy(z, y), atol=1e-15)


def test_focal_matches_formula_scalar_and_per_sample():
    z, y = data()
    p = torch.softmax(z, 1)[torch.arange(64), y]
    for gamma in (1.0, 3.0):
        expected = -((1 - p) ** gamma * torch.log(p)).mean()
        assert torch.allclose(L.focal_loss(z, y, gamma), expected)
    gam = torch.linspace(0, 5, 64, dtype=z.dtype)
    assert torch.allclose(L.focal_loss(z, y, gam), -((1 - p) ** gam * torch.log(p)).mean())
    with pytest.raises(ValueError, match="gamma must be a number or have shape"):
        L.focal_loss(z, y, torch.ones(3, dtype=z.dtype))
    with pytest.raises(ValueError, match="gamma must be >= 0"):
        L.focal_loss(z, y, -1.0)


def test_focal_with_a_certain_correct_sample_is_finite():
    z = torch.tensor([[100.0, 0.0], [0.0, 1.0]], dtype=torch.float64, requires_grad=True)
    y = torch.tensor([0, 1])
    out = L.focal_loss(z, y, 2.0)
    out.backward()
    assert torch.isfinite(out) and torch.isfinite(z.grad).all()


def test_flsd53_uses_gamma_5_below_0_2_and_3_above():
    z = torch.tensor([[0.0, 3.0], [3.0, 0.0]], dtype=torch.float64)  # p_t = 0.047 and 0.953 for label 0
    y = torch.tensor([0, 0])
    p = torch.softmax(z, 1)[:, 0]
    expected = -(((1 - p[0]) ** 5) * torch.log(p[0]) + ((1 - p[1]) ** 3) * torch.log(p[1])) / 2
    assert torch.allclose(L.flsd53_loss(z, y), expected)


def test_label_smoothing_matches_manual_targets():
    z, y = data()
    eps, k = 0.1, 5
    target = torch.full((64, k), eps / k, dtype=z.dtype)
    target[torch.arange(64), y] += 1 - eps
    expected = -(target * torch.log_softmax(z, 1)).sum(1).mean()
    assert torch.allclose(L.label_smoothing_loss(z, y, eps), expected)
    with pytest.raises(ValueError, match="smoothing"):
        L.label_smoothing_loss(z, y, 1.5)


def test_mixup_batch_and_loss():
    torch.manual_seed(0)
    x = torch.arange(8, dtype=torch.float32)[:, None]
    y = torch.arange(8)
    xm, ya, yb, lam = L.mixup_batch(x, y, 0.4, generator=torch.Generator().manual_seed(1))
    assert 0 <= lam <= 1
    torch.testing.assert_close(xm[:, 0], lam * x[:, 0] + (1 - lam) * x[yb, 0])
    z, _ = data(8, 8)
    assert torch.allclose(L.mixup_loss(z, ya, ya, 0.3), F.cross_entropy(z, ya))
    with pytest.raises(ValueError, match="alpha"):
        L.mixup_batch(x, y, 0.0)


def test_mmce_matches_naive_double_sum():
    z, y = data(40)
    p = torch.softmax(z, 1)
    r, pred = p.max(1)
    c = (pred == y).double()
    total = sum((c[i] - r[i]) * (c[j] - r[j]) * torch.exp(-abs(r[i] - r[j]) / 0.4)
                for i in range(40) for j in range(40)) / 40**2
    assert torch.allclose(L.mmce_penalty(z, y), torch.sqrt(total))


def test_dece_approaches_binned_ece_at_low_temperatures():
    z, y = data(500, 10, seed=3)
    soft = float(L.dece_loss(z, y, n_bins=15, bin_temperature=1e-4, accuracy_temperature=1e-4))
    assert soft == pytest.approx(M.ece(torch.softmax(z, 1), y, n_bins=15), abs=1e-6)


def test_sece_loss_equals_the_metric():
    z, y = data(300, 4, seed=4)
    assert float(L.sece_loss(z, y, bandwidth=0.1)) == pytest.approx(
        M.sece(torch.softmax(z, 1), y, bandwidth=0.1, method="exact"), abs=1e-12)


@pytest.mark.parametrize("loss", [lambda z, y: L.sece_loss(z, y, 0.1), lambda z, y: L.dece_loss(z, y, 10, 0.1, 0.5),
                                  L.mmce_penalty, lambda z, y: L.focal_loss(z, y, 2.0), L.flsd53_loss])
def test_gradients_match_finite_differences(loss):
    z, y = data(30, 4, seed=5)
    z.requires_grad_(True)
    (g,) = torch.autograd.grad(loss(z, y), z)
    eps = 1e-6
    for i, j in [(0, 0), (3, 2), (17, 1), (29, 3)]:
        zp, zm = z.detach().clone(), z.detach().clone()
        zp[i, j] += eps
        zm[i, j] -= eps
        fd = (loss(zp, y) - loss(zm, y)) / (2 * eps)
        assert float(g[i, j]) == pytest.approx(float(fd), rel=1e-4, abs=1e-8)


def test_losses_reject_bad_labels():
    z, y = data(10, 3)
    with pytest.raises(ValueError, match="labels must be in"):
        L.focal_loss(z, torch.full((10,), 3), 1.0)
    with pytest.raises(ValueError, match="logits must have shape"):
        L.sece_loss(z[0], y)


# ------------------------------------------------------------------ gamma-Net and the bilevel step
def test_gamma_net_shapes_and_formula():
    torch.manual_seed(0)
    g = GammaNet(6, heads=3, tau=2.0, init_gamma=1.0).double()
    x = torch.randn(5, 6, dtype=torch.float64)
    out = g(x)
    assert out.shape == (5,) and (out >= 0).all()
    assert float(out.detach().mean()) == pytest.approx(1.0)  # scaled on the first batch
    p = torch.softmax(x @ g.A, 1)
    manual = ((p @ g.A.T) @ g.W).abs()[:, 0] / 2.0 * g._scale
    torch.testing.assert_close(out, manual)
    with pytest.raises(ValueError, match="tau"):
        GammaNet(6, tau=0)


def tiny_setup():
    torch.manual_seed(0)
    model = MLP(4, num_classes=3, width=5, depth=1).double()
    gnet = GammaNet(5, heads=2, tau=1.0).double()
    xt, yt = torch.randn(16, 4, dtype=torch.float64), torch.randint(0, 3, (16,))
    xv, yv = torch.randn(32, 4, dtype=torch.float64), torch.randint(0, 3, (32,))
    gnet(model.features(xt))  # fix the first-batch scale
    return model, gnet, xt, yt, xv, yv


def test_outer_gradient_reaches_gamma_net_and_matches_finite_differences():
    model, gnet, xt, yt, xv, yv = tiny_setup()
    outer = lambda z, y: L.sece_loss(z, y, bandwidth=0.3)
    loss = lookahead_outer_loss(model, gnet, xt, yt, xv, yv, inner_lr=0.5, outer=outer)
    gA, gW = torch.autograd.grad(loss, [gnet.A, gnet.W])
    assert gW.abs().sum() > 0 and gA.abs().sum() > 0, "the outer gradient must reach the gamma-Net"
    eps = 1e-6
    for param, grad, idx in [(gnet.W, gW, (1, 0)), (gnet.W, gW, (3, 0)), (gnet.A, gA, (2, 1))]:
        with torch.no_grad():
            param[idx] += eps
        up = float(lookahead_outer_loss(model, gnet, xt, yt, xv, yv, 0.5, outer).detach())
        with torch.no_grad():
            param[idx] -= 2 * eps
        down = float(lookahead_outer_loss(model, gnet, xt, yt, xv, yv, 0.5, outer).detach())
        with torch.no_grad():
            param[idx] += eps
        assert float(grad[idx]) == pytest.approx((up - down) / (2 * eps), rel=1e-4, abs=1e-10)


def test_meta_trainer_step_updates_both_networks():
    model, _, xt, yt, xv, yv = tiny_setup()
    trainer = MetaTrainer(model, xv, yv, outer="dece", heads=2, meta_lr=1e-2, val_batch=8)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    before_m = [p.detach().clone() for p in model.parameters()]
    trainer.gamma_net(model.features(xt))
    before_g = [p.detach().clone() for p in trainer.gamma_net.parameters()]
    loss = trainer.step(xt, yt, opt)
    assert np.isfinite(loss)
    assert any(not torch.equal(a, b) for a, b in zip(before_m, model.parameters(), strict=True))
    assert any(not torch.equal(a, b) for a, b in zip(before_g, trainer.gamma_net.parameters(), strict=True))
    assert trainer.gammas(xv).shape == (32,)
    with pytest.raises(ValueError, match="meta.outer"):
        MetaTrainer(model, xv, yv, outer="ece")


def test_meta_run_through_train_logs_gammas():
    from calibcourse.study.training.train import train

    cfg = {"data": {"name": "digits"}, "model": {"name": "mlp", "depth": 1, "width": 16}, "epochs": 2,
           "loss": "focal", "meta": {"outer": "sece", "meta_lr": 1e-3, "val_batch": 64}}
    r = train(cfg, progress=False)
    assert {"gamma_mean", "gamma_std", "gamma_q10", "gamma_median", "gamma_q90"} <= set(r.history.columns)
    assert "gamma_capped" not in r.history.columns  # no cap, nothing to count
    assert r.outputs["gamma_hist"].shape == (2, 40) and r.outputs["test_gammas"].shape == (r.info["n_test"],)
    g = r.outputs["test_gammas"]
    assert r.history["gamma_median"].iloc[-1] == pytest.approx(np.median(g), rel=1e-6)
    assert not any(k.startswith("snapshot_") for k in r.outputs)  # per-epoch summaries only, by default
    # asked for: snapshots of gamma and the true-class probability at epochs 1 and 2, the same run otherwise
    s = train({**cfg, "meta": {**cfg["meta"], "snapshots": True}}, progress=False)
    assert s.outputs["snapshot_epochs"].tolist() == [1, 2]
    np.testing.assert_array_equal(s.outputs["test_logits"], r.outputs["test_logits"])
    np.testing.assert_allclose(s.outputs["snapshot_test_gammas"][-1], g, rtol=1e-6)
    np.testing.assert_allclose(s.outputs["snapshot_test_p_true"][-1],
                               s.probs()[np.arange(s.info["n_test"]), s.labels()], rtol=1e-5)
    capped = train({**cfg, "epochs": 1, "meta": {**cfg["meta"], "gamma_max": 1e-3}}, progress=False)
    assert capped.history["gamma_capped"].iloc[-1] == pytest.approx(1.0)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_focal_gradient_is_finite_when_a_probability_is_exactly_one(dtype):
    z = torch.tensor([[60.0, -60.0, 0.0], [0.0, 1.0, 2.0]], dtype=dtype, requires_grad=True)
    y = torch.tensor([0, 2])
    assert torch.softmax(z, 1)[0, 0] == 1.0  # saturated in this dtype
    for gamma in (2.0, torch.tensor([3.0, 0.5], dtype=dtype)):
        z.grad = None
        L.focal_loss(z, y, gamma).backward()
        assert torch.isfinite(z.grad).all()


@pytest.mark.parametrize("make_opt", [
    lambda ps: torch.optim.Adam(ps, lr=0.05),
    lambda ps: torch.optim.Adam(ps, lr=0.01, betas=(0.8, 0.99), eps=1e-6, weight_decay=0.1),
    lambda ps: torch.optim.SGD(ps, lr=0.1),
    lambda ps: torch.optim.SGD(ps, lr=0.1, momentum=0.9, nesterov=True, weight_decay=1e-3),
    lambda ps: torch.optim.SGD(ps, lr=0.1, momentum=0.5, dampening=0.2),
])
def test_lookahead_step_is_the_optimizers_own_next_step(make_opt):
    """The differentiable look-ahead equals what torch's optimizer does, at its first step and
    later, with its state (Adam's moments, SGD's momentum buffer)."""
    torch.manual_seed(0)
    model = MLP(4, num_classes=3, width=5, depth=1).double()
    opt = make_opt(model.parameters())
    x, y = torch.randn(16, 4, dtype=torch.float64), torch.randint(0, 3, (16,))
    for _ in range(3):
        params = dict(model.named_parameters())
        grads = torch.autograd.grad(F.cross_entropy(model(x), y), list(params.values()))
        predicted = {k: v.detach().clone() for k, v in lookahead_step(params, grads, opt).items()}
        opt.zero_grad()
        F.cross_entropy(model(x), y).backward()
        opt.step()
        for name, p in model.named_parameters():
            torch.testing.assert_close(predicted[name], p.detach(), rtol=1e-12, atol=1e-14)
        x = x + 0.1  # another batch for the next step


def test_lookahead_step_plain_sgd_and_bad_input():
    p = {"w": torch.tensor([1.0, 2.0], dtype=torch.float64)}
    g = [torch.tensor([0.5, -1.0], dtype=torch.float64)]
    torch.testing.assert_close(lookahead_step(p, g, lr=0.1)["w"], torch.tensor([0.95, 2.1], dtype=torch.float64))
    with pytest.raises(ValueError, match="lr is needed"):
        lookahead_step(p, g)
    with pytest.raises(ValueError, match="supports Adam and SGD"):
        lookahead_step(p, g, torch.optim.RMSprop([torch.zeros(2, requires_grad=True)]))


def test_adam_lookahead_hypergradient_matches_finite_differences():
    """The chain rule outer SECE -> Adam look-ahead parameters -> gamma-Net, against finite
    differences of the whole bilevel objective (the evidence chapter 5 shows)."""
    model, gnet, xt, yt, xv, yv = tiny_setup()
    opt = torch.optim.Adam(model.parameters(), lr=0.05)
    F.cross_entropy(model(xt), yt).backward()
    opt.step()  # a non-empty Adam state
    outer = lambda z, y: L.sece_loss(z, y, bandwidth=0.3)
    f = lambda: lookahead_outer_loss(model, gnet, xt, yt, xv, yv, outer=outer, optimizer=opt)
    gA, gW = torch.autograd.grad(f(), [gnet.A, gnet.W])
    assert gW.abs().sum() > 0
    eps = 1e-6
    for param, grad, idx in [(gnet.W, gW, (0, 0)), (gnet.W, gW, (4, 0)), (gnet.A, gA, (1, 1))]:
        with torch.no_grad():
            param[idx] += eps
        up = float(f().detach())
        with torch.no_grad():
            param[idx] -= 2 * eps
        down = float(f().detach())
        with torch.no_grad():
            param[idx] += eps
        assert float(grad[idx]) == pytest.approx((up - down) / (2 * eps), rel=1e-4, abs=1e-10)


def test_meta_trainer_rejects_bad_settings():
    model, _, xt, yt, xv, yv = tiny_setup()
    with pytest.raises(ValueError, match="meta.lookahead"):
        MetaTrainer(model, xv, yv, lookahead="newton")
    with pytest.raises(ValueError, match="meta.gamma_max"):
        MetaTrainer(model, xv, yv, gamma_max=0.0)


def test_capped_gammas_reach_the_lookahead_capped():
    model, gnet, xt, yt, xv, yv = tiny_setup()
    with torch.no_grad():
        gnet.W.mul_(1e3)  # gammas far above the cap
    outer = lambda z, y: L.sece_loss(z, y, bandwidth=0.3)
    capped = lookahead_outer_loss(model, gnet, xt, yt, xv, yv, 0.5, outer, gamma_max=2.0)
    (gW,) = torch.autograd.grad(capped, [gnet.W])
    assert torch.all(gW == 0), "above the cap the gammas are constant: no meta-gradient"


# ------------------------------------------------------------------ chapter 5's diagnosis
def _trainer_setup(seed=0, n=96, **kw):
    torch.manual_seed(seed)
    g = torch.Generator().manual_seed(seed)
    X, y = torch.randn(n, 5, generator=g), torch.randint(0, 3, (n,), generator=g)
    model = MLP(in_features=5, num_classes=3, width=8, depth=1)
    trainer = MetaTrainer(model, X[64:], y[64:], heads=2, val_batch=16, seed=seed, **kw)
    return X, y, model, trainer


def test_bounded_gamma_net_is_the_formula_with_the_logit_bias_and_no_rescale():
    from scipy.special import expit, logit

    torch.manual_seed(3)
    net = GammaNet(in_features=6, heads=3, tau=0.5, init_gamma=1.0, bound=5.0).double()
    x = torch.randn(20, 6, dtype=torch.float64)
    A, W = net.A.detach().numpy(), net.W.detach().numpy()
    a = x.numpy() @ A
    p = np.exp(a - a.max(1, keepdims=True))
    p /= p.sum(1, keepdims=True)
    b = float(net.b.detach())
    assert b == pytest.approx(logit(1.0 / 5.0), rel=1e-7)  # initialised at logit(init_gamma / bound)
    expected = 5.0 * expit((p @ A.T @ W)[:, 0] / 0.5 + b)
    np.testing.assert_allclose(net(x).detach().numpy(), expected, rtol=1e-12)
    assert net._scale is None  # no first-batch rescale
    with torch.no_grad():
        net.W.zero_()  # x~W = 0: every sample sits exactly at init_gamma
    np.testing.assert_allclose(net(x).detach().numpy(), 5.0 * expit(b) * np.ones(20), rtol=1e-12)
    np.testing.assert_allclose(net(x).detach().numpy(), np.ones(20), rtol=1e-6)
    with pytest.raises(ValueError, match="bound must exceed init_gamma"):
        GammaNet(in_features=6, bound=1.0, init_gamma=1.0)


def test_the_bounded_gamma_net_stays_below_its_bound_however_far_it_is_pushed():
    net = GammaNet(in_features=4, heads=2, bound=5.0)
    x = torch.randn(50, 4)
    with torch.no_grad():
        net.W.mul_(1e4)
        g = net(x)
        assert bool((g >= 0).all() and (g <= 5.0).all())
        net.b.fill_(1e5)
        assert bool((net(x) <= 5.0).all()) and float(net(x).min()) > 4.99
        net.b.fill_(-1e5)
        assert bool((net(x) >= 0.0).all()) and float(net(x).max()) < 0.01


def test_null_control_never_moves_the_gamma_net_but_trains_the_backbone():
    X, y, model, trainer = _trainer_setup(control="null")
    before = {k: v.clone() for k, v in trainer.gamma_net.state_dict().items()}
    backbone = [p.detach().clone() for p in model.parameters()]
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)
    for i in range(0, 64, 16):
        trainer.step(X[i:i + 16], y[i:i + 16], opt)
    for k, v in trainer.gamma_net.state_dict().items():
        assert torch.equal(v, before[k]), k
    assert any(not torch.equal(a, b.detach()) for a, b in zip(backbone, model.parameters(), strict=True))
    # without the control the same loop moves the gamma-Net
    X, y, model, trainer = _trainer_setup()
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)
    for i in range(0, 64, 16):
        trainer.step(X[i:i + 16], y[i:i + 16], opt)
    assert not torch.equal(trainer.gamma_net.W.detach(), before["W"])


def test_permuted_control_uses_the_seeds_permutation_of_the_meta_validation_labels():
    from calibcourse.study.training.meta import permuted_labels

    for seed in (0, 7):
        X, y, model, trainer = _trainer_setup(seed=seed, control="permuted", meta_val=0.5)
        y_meta = y[64:80]  # the first half of the 32 validation samples
        perm = torch.randperm(16, generator=torch.Generator().manual_seed(seed))
        assert torch.equal(trainer.y_val, y_meta[perm])
        assert torch.equal(trainer.y_val, permuted_labels(y_meta, seed))
        assert torch.equal(trainer.X_val, X[64:80])  # inputs in their order: only the labels move
        assert torch.equal(trainer.y_val.sort().values, y_meta.sort().values)
    assert not torch.equal(permuted_labels(torch.arange(50), 0), permuted_labels(torch.arange(50), 1))


def test_meta_val_keeps_the_first_part_of_the_validation_split():
    X, y, model, trainer = _trainer_setup(meta_val=0.25)
    assert torch.equal(trainer.X_val, X[64:72]) and torch.equal(trainer.y_val, y[64:72])


def test_head_only_lookahead_equals_a_last_layer_step_written_by_hand():
    torch.manual_seed(0)
    X, y = data(n=48, k=4, seed=1, dtype=torch.float32)
    model = MLP(in_features=4, num_classes=4, width=8, depth=2)
    net = GammaNet(in_features=8, heads=2)
    lr = 0.3
    got = lookahead_outer_loss(model, net, X[:24], y[:24], X[24:], y[24:], inner_lr=lr, params="head")
    # by hand: the features are fixed, only head.weight and head.bias take a gradient step
    f_tr, f_va = model.features(X[:24]), model.features(X[24:])
    gam = net(f_tr.detach())
    W, b = model.head.weight, model.head.bias
    inner = L.focal_loss(f_tr @ W.T + b, y[:24], gam)
    gW, gb = torch.autograd.grad(inner, [W, b], create_graph=True)
    expected = L.sece_loss(f_va @ (W - lr * gW).T + (b - lr * gb), y[24:])
    assert torch.allclose(got, expected, rtol=1e-6, atol=1e-7)
    h_got = torch.autograd.grad(got, [net.A, net.W])
    h_exp = torch.autograd.grad(expected, [net.A, net.W])
    for a, e in zip(h_got, h_exp, strict=True):
        assert torch.allclose(a, e, rtol=1e-5, atol=1e-8)
    # and it differs from the whole-network look-ahead
    full = lookahead_outer_loss(model, net, X[:24], y[:24], X[24:], y[24:], inner_lr=lr)
    assert not torch.allclose(full, got)


def test_ce_plus_cal_meta_loss_is_cross_entropy_plus_the_weighted_calibration_loss():
    X, y, model, trainer = _trainer_setup(meta_loss="ce+cal", cal_weight=0.7, bandwidth=0.1)
    z = torch.randn(30, 3, dtype=torch.float32)
    yy = torch.randint(0, 3, (30,))
    expected = F.cross_entropy(z, yy) + 0.7 * L.sece_loss(z, yy, bandwidth=0.1)
    assert torch.allclose(trainer.outer(z, yy), expected)
    _, _, _, plain = _trainer_setup(bandwidth=0.1)
    assert torch.allclose(plain.outer(z, yy), L.sece_loss(z, yy, bandwidth=0.1))


@pytest.mark.parametrize("option, value", [("control", "zero"), ("meta_loss", "cal+ce"), ("cal_weight", -1.0),
                                           ("lookahead_params", "last"), ("meta_val", 1.0), ("meta_val", 0.0),
                                           ("gamma_bound", 0.5)])
def test_bad_diagnosis_options_are_refused_by_name(option, value):
    with pytest.raises(ValueError, match=f"meta.{option}"):
        _trainer_setup(**{option: value})
    with pytest.raises(ValueError, match="params must be one of"):
        lookahead_outer_loss(MLP(in_features=2, num_classes=2, width=4, depth=1), GammaNet(4, heads=1),
                             torch.zeros(2, 2), torch.zeros(2, dtype=torch.long), torch.zeros(2, 2),
                             torch.zeros(2, dtype=torch.long), inner_lr=0.1, params="body")


def test_options_off_by_default_train_bit_for_bit_as_before():
    """Explicit defaults and their absence give the same bits (the committed ci entry is checked by
    tests/test_cache.py, which retrains every ci run, chapter 5's included)."""
    from calibcourse.study.training.train import train

    base = {"data": {"name": "mnist1d", "mnist1d_train": 600, "mnist1d_test": 200},
            "model": {"name": "cnn1d", "channels": 8}, "loss": "focal", "epochs": 1, "batch_size": 128,
            "meta": {"outer": "sece", "heads": 2, "val_batch": 32, "lookahead": "same"}}
    explicit = {**base, "meta": {**base["meta"], "gamma_bound": None, "control": None, "meta_loss": "cal",
                                 "cal_weight": 1.0, "lookahead_params": "all", "meta_val": None}}
    a, b = train(base, progress=False), train(explicit, progress=False)
    assert np.array_equal(a.logits("test"), b.logits("test"))
    assert np.array_equal(a.outputs["test_gammas"], b.outputs["test_gammas"])


def test_adam_noise_walk_matches_torch_adam_on_the_same_noise():
    steps, reps, start = 50, 3, [0.2, -0.1]
    walk = adam_noise_walk(start, steps=steps, reps=reps, lr=1e-2, seed=4)
    rng = np.random.default_rng(4)      # the noise the walk draws, in the same order
    theta = torch.tensor(np.tile(start, (reps, 1)), dtype=torch.float64, requires_grad=True)
    opt = torch.optim.Adam([theta], lr=1e-2)
    for t in range(1, steps + 1):
        theta.grad = torch.from_numpy(rng.standard_normal((reps, 2)))
        opt.step()
        np.testing.assert_allclose(walk[t], theta.detach().numpy(), rtol=1e-10, atol=1e-12)
    np.testing.assert_array_equal(walk[0], np.tile(start, (reps, 1)))


def test_adam_noise_walk_validates_its_arguments():
    for kw, word in (({"start": [[0.2]]}, "start"), ({"steps": 0}, "steps"), ({"reps": 1.5}, "reps"),
                     ({"lr": 0.0}, "lr"), ({"betas": (1.0, 0.9)}, "betas"), ({"eps": -1.0}, "eps")):
        args = {"start": [0.2], "steps": 2, "reps": 2, **kw}
        with pytest.raises(ValueError, match=word):
            adam_noise_walk(**args)


def test_gaussian_kernel_sums_are_the_dense_formula_and_sece_is_differentiable():
    rng = np.random.default_rng(3)
    x, y, t = rng.uniform(size=300), rng.integers(0, 2, 300).astype(float), np.linspace(0, 1, 50)
    w = np.stack([y, np.ones(300)], 1)
    s = L.gaussian_kernel_sums(torch.from_numpy(t), torch.from_numpy(x), torch.from_numpy(w), 0.07)
    dense = np.exp(-((t[:, None] - x[None, :]) ** 2) / (2 * 0.07**2)) @ w  # the formula in numpy
    np.testing.assert_allclose(s.numpy(), dense, rtol=1e-13)
    conf = torch.rand(300, dtype=torch.float64, requires_grad=True)
    correct = (torch.rand(300, dtype=torch.float64) < conf.detach()).double()
    val = L.sece_exact_torch(conf, correct, bandwidth=0.1, chunk=64)  # several chunks
    c, a = conf.detach().numpy(), correct.numpy()
    k = np.exp(-((c[:, None] - c[None, :]) ** 2) / (2 * 0.1**2))
    assert float(val.detach()) == pytest.approx(np.mean(np.abs(k @ a / k.sum(1) - c)), rel=1e-12)  # Wang et al.'s
    val.backward()
    assert conf.grad is not None and torch.isfinite(conf.grad).all() and conf.grad.abs().sum() > 0
