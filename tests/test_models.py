"""calibcourse.study.training.models: shapes, features, capacity knobs, local-only weights."""
import pytest
import torch
from torch import nn

from calibcourse.study.training import models as Mo


@pytest.mark.parametrize("model,x,feat", [
    (Mo.LeNet5(), torch.zeros(3, 1, 28, 28), 84),
    (Mo.LeNet5(in_channels=3, input_size=32), torch.zeros(3, 3, 32, 32), 84),
    (Mo.CifarResNet(depth=8, width=0.5, in_channels=1), torch.zeros(3, 1, 28, 28), 32),
    (Mo.MLP(40, width=64, depth=3), torch.zeros(3, 40), 64),
    (Mo.CNN1D(), torch.zeros(3, 40), 128),
    (Mo.resnet18_small(10, in_channels=1), torch.zeros(3, 1, 28, 28), 512),
    (Mo.resnet18_small(10, stem="imagenet"), torch.zeros(3, 3, 32, 32), 512),
])
def test_forward_is_head_of_features(model, x, feat):
    model.eval()
    out = model(x)
    f = model.features(x)
    assert out.shape == (3, 10) and f.shape == (3, feat)
    torch.testing.assert_close(out, model.head(f))


def test_binary_head_has_one_logit():
    assert Mo.LeNet5(num_classes=1)(torch.zeros(2, 1, 28, 28)).shape == (2, 1)


def test_capacity_knobs():
    plain = Mo.CifarResNet(depth=14, batch_norm=False)
    assert not any(isinstance(m, nn.BatchNorm2d) for m in plain.modules())
    assert any(isinstance(m, nn.BatchNorm2d) for m in Mo.CifarResNet(depth=14).modules())
    assert Mo.count_parameters(Mo.CifarResNet(depth=20, width=2)) > 3 * Mo.count_parameters(Mo.CifarResNet(depth=20))
    assert Mo.count_parameters(Mo.MLP(40, depth=4)) > Mo.count_parameters(Mo.MLP(40, depth=1))
    with pytest.raises(ValueError, match="6n \\+ 2"):
        Mo.CifarResNet(depth=21)
    with pytest.raises(ValueError, match="stem"):
        Mo.resnet18_small(stem="huge")
    with pytest.raises(ValueError, match="model must be one of"):
        Mo.build_model("vgg")


def test_weights_load_from_local_file_only(tmp_path):
    a, b = Mo.LeNet5(), Mo.LeNet5()
    torch.save(a.state_dict(), tmp_path / "w.pt")
    Mo.load_weights(b, tmp_path / "w.pt")
    for pa, pb in zip(a.parameters(), b.parameters(), strict=True):
        torch.testing.assert_close(pa, pb)
    with pytest.raises(FileNotFoundError, match="never downloaded"):
        Mo.load_weights(b, tmp_path / "missing.pt")


def test_frozen_feature_classifier_trains_only_its_head():
    backbone = Mo.LeNet5()
    clf = Mo.FrozenFeatureClassifier(backbone, feature_dim=84, num_classes=2, hidden=16)
    out = clf(torch.randn(4, 1, 28, 28))
    torch.testing.assert_close(out.exp().sum(1), torch.ones(4))  # LogSoftmax output
    trainable = [n for n, p in clf.named_parameters() if p.requires_grad]
    assert trainable and all(not n.startswith("backbone") for n in trainable)


def test_frozen_head_on_local_pretrained_densenet(tmp_path, monkeypatch):
    """The full profile's frozen-feature run uses ImageNet DenseNet-121 weights when they are on disk."""
    from torchvision.models import densenet121

    from calibcourse.study.runs import experiments
    from calibcourse.study.training.config import normalize_config

    weights = tmp_path / "densenet121.pth"
    torch.manual_seed(0)
    torch.save(densenet121(weights=None).state_dict(), weights)
    net = Mo.densenet121_small(num_classes=2, weights_path=weights)
    assert isinstance(net.net.features.conv0, nn.Conv2d) and net.net.features.conv0.kernel_size == (7, 7)
    assert net.eval()(torch.zeros(2, 3, 32, 32)).shape == (2, 2)
    # the config names torchvision's file, not where it lies: its key is the same on every machine
    from calibcourse.study.runs.cache import config_key
    from calibcourse.study.training.train import make_model

    cfg = experiments.experiments("full")["ch3/frozen_head"]
    spec = cfg["model"]["backbone"]
    assert spec["pretrained"]["weights"] == experiments.DENSENET_WEIGHTS and "weights_path" not in spec["pretrained"]
    key = config_key(cfg)
    (tmp_path / "weights").mkdir()
    (tmp_path / "weights" / experiments.DENSENET_WEIGHTS).write_bytes(weights.read_bytes())
    monkeypatch.setenv("CALIBCOURSE_DATA", str(tmp_path))
    assert config_key(experiments.experiments("full")["ch3/frozen_head"]) == key
    model = make_model(normalize_config(cfg), (3, 32, 32), 2, torch.device("cpu"))
    torch.testing.assert_close(model.backbone.net.features.conv0.weight, net.net.features.conv0.weight)
    monkeypatch.setenv("CALIBCOURSE_DATA", str(tmp_path / "absent"))
    with pytest.raises(FileNotFoundError, match="densenet121-a639ec97.pth"):
        make_model(normalize_config(cfg), (3, 32, 32), 2, torch.device("cpu"))


def test_build_model_fills_shape_arguments_from_the_input_shape():
    mlp = Mo.build_model("mlp", input_shape=(1, 8, 8), depth=1, width=4)
    assert mlp.body[1].in_features == 64
    cnn = Mo.build_model("cnn1d", input_shape=(60,))
    assert cnn(torch.zeros(2, 60)).shape == (2, 10)
    lenet = Mo.build_model("lenet5", input_shape=(3, 32, 32))
    assert lenet(torch.zeros(2, 3, 32, 32)).shape == (2, 10)
    assert Mo.build_model("mlp", input_shape=(40,), in_features=7).body[1].in_features == 7  # explicit wins
    assert set(Mo.INPUT_ARGS) == set(Mo.MODELS)
