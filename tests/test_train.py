"""calibcourse.study.training.train: one config -> a reproducible run with its history and outputs."""
import numpy as np
import pytest
import torch

from calibcourse.study.training import train as T
from calibcourse.study.training.config import load_data_splits, normalize_config
from calibcourse.study.training.results import RunResult, predict_logits
from calibcourse.study.training.steps import MetaStep, MixupStep, PlainStep, make_step, register_loss

SMALL = {"data": {"name": "digits"}, "model": {"name": "mlp", "depth": 1, "width": 32}, "epochs": 3, "seed": 0}


def test_train_records_history_and_outputs():
    r = T.train(SMALL, progress=False)
    assert list(r.history.columns[:7]) == ["epoch", "train_loss", "val_error", "val_nll", "test_error",
                                           "test_nll", "test_ece"]
    assert r.history["epoch"].tolist() == [1, 2, 3]
    n_test = r.info["n_test"]
    assert r.outputs["test_logits"].shape == (n_test, 10) and r.outputs["test_labels"].shape == (n_test,)
    assert r.history["test_error"].iloc[-1] < 0.5, "a 3-epoch MLP on sklearn digits learns something"
    from calibcourse.calibration import metrics as M
    assert r.history["test_ece"].iloc[-1] == pytest.approx(M.ece(r.probs(), r.labels()))


def test_same_config_and_seed_give_the_same_numbers_and_seeds_differ():
    a = T.train(SMALL, progress=False)
    b = T.train(SMALL, progress=False)
    np.testing.assert_array_equal(a.outputs["test_logits"], b.outputs["test_logits"])
    c = T.train({**SMALL, "seed": 1}, progress=False)
    assert not np.array_equal(a.outputs["test_logits"], c.outputs["test_logits"])


def test_binary_sigmoid_run_and_epoch_logits():
    cfg = {"data": {"name": "digits", "view": {"one_vs_rest": 9}}, "model": {"name": "mlp", "depth": 1},
           "loss": "bce", "epochs": 2, "keep_epoch_logits": True}
    r = T.train(cfg, progress=False)
    z = r.outputs["test_logits"]
    assert z.ndim == 1 and set(np.unique(r.labels())) == {0, 1}
    assert r.outputs["epoch_test_logits"].shape == (2, len(z))
    assert np.all((r.probs() > 0) & (r.probs() < 1))


def test_weight_decay_sgd_and_schedules_run():
    for extra in ({"optimizer": "sgd", "lr": 0.05, "schedule": "step", "weight_decay": 1e-3},
                  {"schedule": "cosine"}):
        r = T.train({**SMALL, **extra, "epochs": 2}, progress=False)
        assert np.isfinite(r.history["train_loss"]).all()


@pytest.mark.parametrize("bad,match", [
    ({"epochs": 0}, "epochs must be an integer >= 1"),
    ({"loss": "hinge"}, "loss must be one of"),
    ({"optimizer": "rmsprop"}, "optimizer must be"),
    ({"data": {"name": "imagenet"}}, "data.name must be one of"),
    ({"learning_rate": 0.1}, "unknown config keys"),
    ({"model": {"name": "vgg"}}, "model.name must be one of"),
    ({"model": {"name": "frozen_features"}}, "model.backbone must be the run config"),
    ({"epochs": True}, "epochs must be an integer >= 1"),
    ({"lr": -0.1}, "lr must be a number > 0"),
    ({"weight_decay": -1e-4}, "weight_decay must be a number >= 0"),
    ({"mixup_alpha": -0.2}, "mixup_alpha must be a number > 0"),
    ({"mixup_alpha": 0}, "mixup_alpha must be a number > 0"),
    ({"data": "digits"}, "data must be a dict"),
    ({"data": None}, "data must be a dict"),
    ({"data": {"name": "digits", "n_trian": 100}}, r"unknown keys \['n_trian'\] in data"),
    ({"mixup_alpha": 0.2, "loss": "focal"}, "trains with loss 'ce'"),
    ({"meta": {"outer": "sece"}}, "trains with loss 'focal'"),
    ({"meta": {"outer": "sece"}, "loss": "focal", "mixup_alpha": 0.2}, "cannot be combined"),
])
def test_bad_configs_are_rejected(bad, match):
    with pytest.raises(ValueError, match=match):
        normalize_config({**SMALL, **bad})


def test_unknown_keys_message_lists_the_optional_keys_and_losses_keep_their_names():
    with pytest.raises(ValueError, match="mixup_alpha"):  # an optional key is listed among the known
        normalize_config({**SMALL, "mixup": 0.2})
    with pytest.raises(ValueError, match="data.name must be one of"):
        load_data_splits({"name": "imagenet"})
    with pytest.raises(ValueError, match="built-in loss"):
        register_loss("focal", lambda z, y: z.sum())


def test_register_loss_makes_a_new_loss_available():
    import torch.nn.functional as F

    register_loss("ce_smooth_test", lambda z, y, eps=0.1: F.cross_entropy(z, y, label_smoothing=eps))
    r = T.train({**SMALL, "loss": "ce_smooth_test", "loss_kwargs": {"eps": 0.2}, "epochs": 1}, progress=False)
    assert np.isfinite(r.history["train_loss"]).all()


def test_frozen_feature_head_trains_on_a_trained_backbone():
    backbone = {"data": {"name": "digits"}, "model": {"name": "mlp", "depth": 1, "width": 32}, "epochs": 2}
    cfg = {"data": {"name": "digits", "view": {"two_class": [4, 9]}},
           "model": {"name": "frozen_features", "backbone": backbone, "hidden": 16}, "loss": "nll", "epochs": 2}
    r = T.train(cfg, progress=False)
    assert r.outputs["test_logits"].shape[1] == 2
    np.testing.assert_allclose(np.exp(r.outputs["test_logits"]).sum(1), 1.0, rtol=1e-6)  # log-probabilities


def test_diverged_training_is_a_clear_error():
    register_loss("nan_loss_test", lambda z, y: z.sum() * float("nan"))
    with pytest.raises(FloatingPointError, match="training diverged in epoch 1"):
        T.train({**SMALL, "loss": "nan_loss_test", "epochs": 1}, progress=False)


def test_result_carries_the_trained_model_and_predict_logits_reproduces_the_outputs():
    r = T.train(SMALL, progress=False)
    assert r.model is not None and "model" in RunResult.__dataclass_fields__
    _, _, _, _, Xte, _ = load_data_splits(normalize_config(SMALL)["data"])
    np.testing.assert_array_equal(predict_logits(r.model, Xte), r.outputs["test_logits"])
    import torch
    np.testing.assert_allclose(predict_logits(r.model, torch.from_numpy(Xte), batch_size=7),
                               r.outputs["test_logits"], rtol=1e-5, atol=1e-6)


def test_predict_logits_gives_one_column_per_class_and_a_vector_for_one_logit():
    import torch

    torch.manual_seed(0)
    lin = torch.nn.Linear(3, 1).double()
    X = np.random.default_rng(0).normal(size=(5, 3))
    z = predict_logits(lin.float(), X)
    assert z.shape == (5,) and z.dtype == np.float64
    np.testing.assert_allclose(z, X @ lin.weight.detach().numpy()[0] + lin.bias.item(), rtol=1e-5)


@pytest.mark.parametrize("extra,kind", [({}, PlainStep), ({"mixup_alpha": 0.2}, MixupStep),
                                        ({"loss": "focal", "meta": {"outer": "sece"}}, MetaStep)])
def test_make_step_picks_one_strategy_per_config(extra, kind):
    import torch

    cfg = normalize_config({**SMALL, **extra})
    model = T.make_model(cfg, (64,), 10, torch.device("cpu"))
    opt = torch.optim.Adam(model.parameters())
    X, y = np.zeros((8, 64), np.float32), np.arange(8)
    step = make_step(cfg, model, opt, X, y, torch.Generator())
    assert type(step) is kind
    before = [p.detach().clone() for p in model.parameters()]
    loss = step(torch.randn(8, 64), torch.arange(8))
    assert np.isfinite(loss) and any(not torch.equal(a, b) for a, b in zip(before, model.parameters(), strict=True))


def test_a_plain_step_is_one_optimizer_step_on_the_configured_loss():
    import torch
    import torch.nn.functional as F

    cfg = normalize_config({**SMALL, "loss": "label_smoothing", "loss_kwargs": {"smoothing": 0.2}})
    torch.manual_seed(0)
    model = T.make_model(cfg, (64,), 10, torch.device("cpu"))
    twin = T.make_model(cfg, (64,), 10, torch.device("cpu"))
    twin.load_state_dict(model.state_dict())
    x, y = torch.randn(8, 64), torch.arange(8)
    step = make_step(cfg, model, torch.optim.SGD(model.parameters(), lr=0.1), None, None, None)
    loss = step(x, y)
    expected = F.cross_entropy(twin(x), y, label_smoothing=0.2)
    assert loss == pytest.approx(float(expected.detach()))
    expected.backward()
    for p, q in zip(model.parameters(), twin.parameters(), strict=True):
        torch.testing.assert_close(p.detach(), q.detach() - 0.1 * q.grad)


def test_make_model_fills_input_arguments_and_keeps_the_configs():
    import torch

    cfg = normalize_config({"data": {"name": "digits"}, "model": {"name": "lenet5", "input_size": 16}})
    m = T.make_model(cfg, (1, 8, 8), 3, torch.device("cpu"))
    assert m.head.out_features == 3 and m.conv[0].in_channels == 1
    assert m(torch.zeros(2, 1, 16, 16)).shape == (2, 3)  # input_size from the config wins


def test_a_run_uses_the_threads_it_is_given_not_the_callers_and_records_them():
    # two threads split the sums differently; training amplifies the last bits into different
    # logits, so a run uses the threads it is given (default 1), whatever the caller set, records
    # them in its provenance, and the caller's setting comes back
    # (a 1-D CNN: its convolutions are split over threads)
    from calibcourse.study.training import provenance as P

    cfg = {"data": {"name": "mnist1d", "mnist1d_train": 600, "mnist1d_test": 200},
           "model": {"name": "cnn1d", "channels": 32}, "epochs": 2}
    before = torch.get_num_threads()
    try:
        torch.set_num_threads(2)
        a = T.train(cfg, progress=False)
        assert torch.get_num_threads() == 2
        torch.set_num_threads(1)
        b = T.train(cfg, progress=False)
        c = T.train(cfg, progress=False, threads=2)
        assert torch.get_num_threads() == 1
    finally:
        torch.set_num_threads(before)
    assert a.provenance["threads"] == b.provenance["threads"] == P.DEFAULT_THREADS == 1
    np.testing.assert_array_equal(a.logits("test"), b.logits("test"))
    assert c.provenance["threads"] == 2 and P.differences(a.provenance, c.provenance) == {"threads": (1, 2)}
    for bad in (0, 1.5, "2", True):
        with pytest.raises(ValueError, match="threads must be an integer >= 1"):
            T.train(cfg, progress=False, threads=bad)
