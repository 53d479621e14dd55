"""calibcourse.study.training.train: augmentation on the device, mixed precision, optional keys, checkpoints,
smoke caps."""
import numpy as np
import pytest
import torch

from calibcourse.study.runs import cache as cachemod
from calibcourse.study.training import train as T
from calibcourse.study.training.config import normalize_config, smoke_caps
from calibcourse.study.training.steps import PlainStep, augment_batch, make_optimizer

IMG = {"data": {"name": "digits"}, "model": {"name": "cifar_resnet", "depth": 8, "width": 0.5}, "epochs": 4,
       "seed": 0, "optimizer": "sgd", "lr": 0.05, "schedule": "step", "milestones": [2, 3],
       "augment": {"crop_padding": 2, "hflip": True}}


def _reference_crop_flip(x, oy, ox, flip, pad, fill):
    """Pad, crop and flip one image (C, H, W) with numpy, from the draws."""
    c, h, w = x.shape
    padded = np.empty((c, h + 2 * pad, w + 2 * pad), x.dtype)
    padded[:] = np.asarray(fill, x.dtype).reshape(c, 1, 1)
    padded[:, pad: pad + h, pad: pad + w] = x
    out = padded[:, oy: oy + h, ox: ox + w]
    return out[:, :, ::-1] if flip else out


def test_augment_batch_is_pad_crop_flip_with_the_generators_draws():
    x = torch.randn(6, 3, 5, 7)
    fill = np.array([-1.0, 0.5, 2.0], np.float32)
    g = torch.Generator().manual_seed(3)
    twin = torch.Generator().manual_seed(3)
    out = augment_batch(x, {"crop_padding": 2, "hflip": True}, g, fill).numpy()
    oy, ox = torch.randint(0, 5, (6,), generator=twin), torch.randint(0, 5, (6,), generator=twin)
    flips = torch.rand(6, generator=twin) < 0.5
    for i in range(6):
        ref = _reference_crop_flip(x[i].numpy(), int(oy[i]), int(ox[i]), bool(flips[i]), 2, fill)
        np.testing.assert_array_equal(out[i], ref)
    assert out.shape == (6, 3, 5, 7) and flips.any() and not flips.all()
    # no padding, no flip: the batch itself
    same = augment_batch(x, {"crop_padding": 0, "hflip": False}, torch.Generator(), None)
    assert torch.equal(same, x)


def test_optional_keys_are_absent_unless_used_so_old_keys_hold():
    base = {"data": {"name": "digits"}, "model": {"name": "mlp"}, "epochs": 1}
    key = cachemod.config_key(base)
    for off in ({"amp": False}, {"augment": None}, {"augment": {}}, {"milestones": None}):
        assert cachemod.config_key({**base, **off}) == key, off
        assert set(off) - set(normalize_config({**base, **off})) == set(off)
    assert cachemod.config_key({**base, "amp": True}) != key
    assert cachemod.config_key({**base, "augment": {"hflip": True}}) != key


@pytest.mark.parametrize("bad,match", [({"augment": {"rotate": 5}}, "augment must be a dict"),
                                       ({"augment": {"crop_padding": -1}}, "crop_padding"),
                                       ({"amp": "yes"}, "amp must be True"),
                                       ({"nesterov": 1}, "nesterov must be"),
                                       ({"schedule": "step", "milestones": [3, 2]}, "milestones must be increasing"),
                                       ({"milestones": [1]}, "milestones need schedule='step'")])
def test_bad_recipe_keys_are_refused_naming_the_key(bad, match):
    with pytest.raises(ValueError, match=match):
        normalize_config({**IMG, "schedule": "none", "milestones": None, **bad})


def test_step_schedule_divides_the_rate_at_the_milestones():
    cfg = normalize_config({**IMG, "epochs": 8, "milestones": [3, 6]})
    model = torch.nn.Linear(2, 2)
    opt, sched = make_optimizer(cfg, model)
    rates = []
    for _ in range(8):
        rates.append(opt.param_groups[0]["lr"])
        opt.step()
        sched.step()
    np.testing.assert_allclose(rates, [0.05] * 3 + [0.005] * 3 + [0.0005] * 2)
    assert opt.param_groups[0]["nesterov"] is True  # the default for momentum > 0 (older configs)
    assert make_optimizer(normalize_config({**IMG, "nesterov": False}), model)[0].param_groups[0]["nesterov"] is False


def test_amp_is_ignored_on_the_cpu():
    plain = T.train({**IMG, "epochs": 2, "milestones": [1]}, progress=False)
    amp = T.train({**IMG, "epochs": 2, "milestones": [1], "amp": True}, progress=False)
    np.testing.assert_array_equal(plain.logits("test"), amp.logits("test"))


@pytest.mark.parametrize("extra", [{}, {"model": {"name": "mlp", "depth": 1, "width": 16}, "augment": None,
                                        "loss": "focal", "meta": {"outer": "sece", "val_batch": 32}},
                                   {"mixup_alpha": 0.2, "keep_best": "val_nll", "keep_epoch_logits": True}])
def test_a_resumed_run_equals_an_uninterrupted_one_byte_for_byte(tmp_path, monkeypatch, extra):
    cfg = {**IMG, **extra}
    whole = T.train(cfg, progress=False)
    ckpt = tmp_path / "run.pt"
    save = T._save_checkpoint

    def save_then_die(path, state):
        save(path, state)
        raise KeyboardInterrupt("killed after the checkpoint of epoch 2")

    monkeypatch.setattr(T, "_save_checkpoint", save_then_die)
    with pytest.raises(KeyboardInterrupt):
        T.train(cfg, progress=False, checkpoint=ckpt, checkpoint_every=2)
    monkeypatch.setattr(T, "_save_checkpoint", save)
    assert ckpt.is_file()
    resumed = T.train(cfg, progress=False, checkpoint=ckpt, checkpoint_every=2)
    assert resumed.info["resumed_at_epoch"] == 3
    assert set(resumed.outputs) == set(whole.outputs)
    for k in whole.outputs:
        assert whole.outputs[k].tobytes() == resumed.outputs[k].tobytes(), k
    assert whole.history.equals(resumed.history)


def test_a_checkpoint_of_another_config_is_refused(tmp_path):
    ckpt = tmp_path / "run.pt"
    T.train({**IMG, "epochs": 4}, progress=False, checkpoint=ckpt, checkpoint_every=1)
    with pytest.raises(ValueError, match="belongs to another config"):
        T.train({**IMG, "epochs": 4, "seed": 1}, progress=False, checkpoint=ckpt)


def test_cache_checkpoints_then_removes_the_checkpoint(tmp_path):
    cache = cachemod.Cache(tmp_path)
    r = cache.get_or_train({**IMG, "epochs": 4}, progress=False, checkpoint_every=1)
    assert cache.keys() == [cachemod.config_key(r.config)] and not cache.checkpoint_path(cache.keys()[0]).exists()


def test_smoke_caps_cut_epochs_batches_and_samples_and_never_reach_the_committed_cache(monkeypatch, tmp_path):
    monkeypatch.setenv("CALIBCOURSE_SMOKE", "2:1:8")
    assert smoke_caps() == (2, 1, 8)
    r = T.train({**IMG, "epochs": 50}, progress=False)
    assert r.history["epoch"].tolist() == [1, 2] and r.config["epochs"] == 50  # the key is the real config's
    assert r.info["smoke"] == "2 epochs of at most 1 batches of at most 8 samples"
    monkeypatch.setattr(cachemod, "REPOSITORY_CACHE", tmp_path)
    with pytest.raises(cachemod.CacheError, match="never stored in the committed cache"):
        cachemod.Cache(tmp_path).store(r)
    assert cachemod.Cache(tmp_path / "elsewhere").store(r).is_dir()
    monkeypatch.setenv("CALIBCOURSE_SMOKE", "0:1")
    with pytest.raises(ValueError, match="CALIBCOURSE_SMOKE must be"):
        smoke_caps()


def test_missing_weights_file_is_named_with_where_to_get_it(tmp_path, monkeypatch):
    monkeypatch.setenv("CALIBCOURSE_DATA", str(tmp_path))
    with pytest.raises(FileNotFoundError) as info:
        T.weights_file("densenet121-a639ec97.pth")
    msg = str(info.value)
    assert str(tmp_path / "weights" / "densenet121-a639ec97.pth") in msg
    assert "https://download.pytorch.org/models/densenet121-a639ec97.pth" in msg


def test_torchvision_densenet_files_load_with_their_old_key_names(tmp_path):
    from torchvision.models import densenet121

    from calibcourse.study.training.models import densenet121_small

    torch.manual_seed(0)
    state = densenet121(weights=None).state_dict()
    # torchvision's published file (2017) spells "norm1" as "norm.1" (its loader renames them) and
    # has no batch-norm step counters
    old = {k.replace("norm1.", "norm.1.").replace("conv2.", "conv.2.") if "denselayer" in k else k: v
           for k, v in state.items() if not k.endswith("num_batches_tracked")}
    assert any(".norm.1." in k for k in old)
    torch.save(old, tmp_path / "w.pth")
    net = densenet121_small(num_classes=2, weights_path=tmp_path / "w.pth")
    torch.testing.assert_close(net.net.features.denseblock1.denselayer1.norm1.weight,
                               state["features.denseblock1.denselayer1.norm1.weight"])


def test_warmup_uses_its_rate_for_its_epochs_then_the_schedules():
    cfg = {**IMG, "epochs": 4, "milestones": [3], "warmup": {"epochs": 1, "lr": 0.001}}
    seen = []
    orig = PlainStep.__call__

    def spy(self, xb, yb):
        seen.append(self.optimizer.param_groups[0]["lr"])
        return orig(self, xb, yb)

    PlainStep.__call__ = spy
    try:
        r = T.train(cfg, progress=False)
    finally:
        PlainStep.__call__ = orig
    per_epoch = len(seen) // 4
    rates = [seen[i * per_epoch] for i in range(4)]
    np.testing.assert_allclose(rates, [0.001, 0.05, 0.05, 0.005])
    assert r.history["epoch"].tolist() == [1, 2, 3, 4]
    with pytest.raises(ValueError, match="warmup must be"):
        normalize_config({**cfg, "warmup": {"epochs": 4, "lr": 0.01}})
