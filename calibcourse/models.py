"""Models of the course (chapter 2 onwards): LeNet-5, CIFAR-style ResNets, adapted torchvision
ResNet-18 / DenseNet-121, MLPs and a 1-D CNN for MNIST-1D.

Every model has ``features(x)`` (the penultimate representation, used by the
gamma-Net of chapter 5) and ``head`` (the last linear layer); ``forward`` is
``head(features(x))``. ``num_classes=1`` gives a binary head with a single
logit, read through a sigmoid (reference 003's LeNet-5).
"""
from __future__ import annotations

from pathlib import Path

import torch
from torch import nn

__all__ = ["LeNet5", "CifarResNet", "MLP", "CNN1D", "resnet18_small", "densenet121_small",
           "FrozenFeatureClassifier", "build_model", "load_weights", "count_parameters", "MODELS",
           "INPUT_ARGS"]


class _WithFeatures(nn.Module):
    def forward(self, x):
        return self.head(self.features(x))


class LeNet5(_WithFeatures):
    """LeNet-5 (LeCun et al. 1998) for ``in_channels`` x ``input_size`` x ``input_size`` images.

    conv 5x5 (6) - ReLU - maxpool - conv 5x5 (16) - ReLU - maxpool - 120 - 84 - classes;
    the first convolution pads by 2 so that 28x28 and 32x32 inputs both work.
    """

    def __init__(self, num_classes: int = 10, in_channels: int = 1, input_size: int = 28):
        super().__init__()
        if input_size < 12:
            raise ValueError(f"input_size must be >= 12 for LeNet-5; got {input_size}")
        self.conv = nn.Sequential(
            nn.Conv2d(in_channels, 6, 5, padding=2), nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(6, 16, 5), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten())
        with torch.no_grad():
            flat = self.conv(torch.zeros(1, in_channels, input_size, input_size)).shape[1]
        self.fc = nn.Sequential(nn.Linear(flat, 120), nn.ReLU(), nn.Linear(120, 84), nn.ReLU())
        self.head = nn.Linear(84, num_classes)

    def features(self, x):
        return self.fc(self.conv(x))


class _BasicBlock(nn.Module):
    def __init__(self, cin, cout, stride, batch_norm):
        super().__init__()
        norm = (lambda c: nn.BatchNorm2d(c)) if batch_norm else (lambda c: nn.Identity())
        self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=not batch_norm)
        self.bn1 = norm(cout)
        self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=not batch_norm)
        self.bn2 = norm(cout)
        self.short = nn.Identity()
        if stride != 1 or cin != cout:
            self.short = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=not batch_norm), norm(cout))

    def forward(self, x):
        out = torch.relu(self.bn1(self.conv1(x)))
        return torch.relu(self.bn2(self.conv2(out)) + self.short(x))


class CifarResNet(_WithFeatures):
    """CIFAR-style ResNet (He et al. 2016): depth = 6n + 2 (20, 32, 44, 56, 110).

    Three stages of ``n`` basic blocks with 16, 32, 64 channels times ``width``;
    ``batch_norm=False`` replaces every batch norm by the identity (chapter 2's
    batch-norm experiment).
    """

    def __init__(self, depth: int = 20, width: float = 1.0, batch_norm: bool = True,
                 num_classes: int = 10, in_channels: int = 3):
        super().__init__()
        if depth < 8 or (depth - 2) % 6:
            raise ValueError(f"depth must be 6n + 2 with n >= 1 (8, 14, 20, 32, ...); got {depth}")
        if width <= 0:
            raise ValueError(f"width must be > 0; got {width}")
        n = (depth - 2) // 6
        ch = [max(1, int(round(c * width))) for c in (16, 32, 64)]
        norm = nn.BatchNorm2d(ch[0]) if batch_norm else nn.Identity()
        layers = [nn.Conv2d(in_channels, ch[0], 3, 1, 1, bias=not batch_norm), norm, nn.ReLU()]
        cin = ch[0]
        for stage, cout in enumerate(ch):
            for i in range(n):
                layers.append(_BasicBlock(cin, cout, 2 if (stage > 0 and i == 0) else 1, batch_norm))
                cin = cout
        layers += [nn.AdaptiveAvgPool2d(1), nn.Flatten()]
        self.body = nn.Sequential(*layers)
        self.head = nn.Linear(cin, num_classes)

    def features(self, x):
        return self.body(x)


class MLP(_WithFeatures):
    """Multilayer perceptron: ``depth`` hidden layers of ``width`` units, ReLU (chapter 2's sweeps)."""

    def __init__(self, in_features: int, num_classes: int = 10, width: int = 256, depth: int = 2,
                 batch_norm: bool = False):
        super().__init__()
        if depth < 0 or width < 1:
            raise ValueError(f"depth must be >= 0 and width >= 1; got depth={depth}, width={width}")
        layers, d = [nn.Flatten()], in_features
        for _ in range(depth):
            layers += [nn.Linear(d, width)] + ([nn.BatchNorm1d(width)] if batch_norm else []) + [nn.ReLU()]
            d = width
        self.body = nn.Sequential(*layers)
        self.head = nn.Linear(d, num_classes)

    def features(self, x):
        return self.body(x)


class CNN1D(_WithFeatures):
    """1-D CNN for MNIST-1D: three conv layers (``channels``), global pooling, linear head."""

    def __init__(self, num_classes: int = 10, channels: int = 32, length: int = 40):
        super().__init__()
        self.body = nn.Sequential(
            nn.Unflatten(1, (1, length)),
            nn.Conv1d(1, channels, 5, padding=2), nn.ReLU(),
            nn.Conv1d(channels, channels, 3, padding=1, stride=2), nn.ReLU(),
            nn.Conv1d(channels, channels, 3, padding=1, stride=2), nn.ReLU(), nn.Flatten())
        with torch.no_grad():
            flat = self.body(torch.zeros(1, length)).shape[1]
        self.body.append(nn.Linear(flat, 128))
        self.body.append(nn.ReLU())
        self.head = nn.Linear(128, num_classes)

    def features(self, x):
        return self.body(x)


class _TorchvisionWrapper(_WithFeatures):
    def __init__(self, net, head_attr):
        super().__init__()
        self.head = getattr(net, head_attr)
        setattr(net, head_attr, nn.Identity())
        self.net = net

    def features(self, x):
        return self.net(x)


def resnet18_small(num_classes: int = 10, in_channels: int = 3, stem: str = "cifar"):
    """torchvision's ResNet-18 adapted to small images.

    ``stem="cifar"``: 3x3 stride-1 first convolution and no max-pool (the usual
    CIFAR adaptation, about 10x slower on 28x28 than ``"imagenet"``, which keeps
    the 7x7 stride-2 convolution and the max-pool).
    """
    from torchvision.models import resnet18

    net = resnet18(weights=None, num_classes=num_classes)
    if stem == "cifar":
        net.conv1 = nn.Conv2d(in_channels, 64, 3, 1, 1, bias=False)
        net.maxpool = nn.Identity()
    elif stem == "imagenet":
        if in_channels != 3:
            net.conv1 = nn.Conv2d(in_channels, 64, 7, 2, 3, bias=False)
    else:
        raise ValueError(f"stem must be 'cifar' or 'imagenet'; got {stem!r}")
    return _TorchvisionWrapper(net, "fc")


def densenet121_small(num_classes: int = 10, in_channels: int = 3, weights_path=None, stem=None):
    """torchvision's DenseNet-121; optional ImageNet weights from a local file.

    ``stem="cifar"`` (the default without weights): a 3x3 stride-1 first
    convolution and no max-pool, for 32x32 inputs. With ``weights_path`` the
    ImageNet stem is kept by default (``stem="imagenet"``), since a new stem would
    discard the pretrained first layer.
    """
    from torchvision.models import densenet121

    net = densenet121(weights=None)
    if weights_path is not None:
        load_weights(net, weights_path)
    stem = stem or ("imagenet" if weights_path is not None else "cifar")
    if stem == "cifar":
        net.features.conv0 = nn.Conv2d(in_channels, 64, 3, 1, 1, bias=False)
        net.features.pool0 = nn.Identity()
    elif stem != "imagenet":
        raise ValueError(f"stem must be 'cifar' or 'imagenet'; got {stem!r}")
    elif in_channels != 3:
        raise ValueError("the ImageNet stem takes 3 input channels")
    net.classifier = nn.Linear(net.classifier.in_features, num_classes)
    return _TorchvisionWrapper(net, "classifier")


class FrozenFeatureClassifier(nn.Module):
    """A frozen ``backbone`` (its ``features``) and a trainable MLP head with LogSoftmax output.

    As in reference 003: features -> ``hidden`` units -> classes, LogSoftmax,
    trained with NLLLoss; the log-probabilities serve as logits.
    """

    def __init__(self, backbone: nn.Module, feature_dim: int, num_classes: int = 2, hidden: int = 500):
        super().__init__()
        self.backbone = backbone
        for p in self.backbone.parameters():
            p.requires_grad_(False)
        self.mlp = nn.Sequential(nn.Linear(feature_dim, hidden), nn.ReLU())
        self.head = nn.Sequential(nn.Linear(hidden, num_classes), nn.LogSoftmax(dim=1))

    def features(self, x):
        self.backbone.eval()
        with torch.no_grad():
            f = self.backbone.features(x)
        return self.mlp(f)

    def forward(self, x):
        return self.head(self.features(x))


def load_weights(model: nn.Module, path) -> nn.Module:
    """Load a state dict from a local file only (``torch.load(..., weights_only=True)``)."""
    path = Path(path).expanduser()
    if not path.is_file():
        raise FileNotFoundError(f"weights file {path} not found; pretrained weights are never "
                                "downloaded, put the file there first")
    state = torch.load(path, map_location="cpu", weights_only=True)
    # torchvision's published DenseNet files use the old key names ("norm.1" for "norm1"); rename as
    # torchvision.models.densenet does when it loads them
    import re

    old = re.compile(r"^(.*denselayer\d+\.(?:norm|relu|conv))\.((?:[12])\.(?:weight|bias|running_mean|running_var))$")
    state = {(m.group(1) + m.group(2) if (m := old.match(k)) else k): v for k, v in state.items()}
    model.load_state_dict(state)
    return model


def count_parameters(model: nn.Module) -> int:
    return sum(p.numel() for p in model.parameters())


MODELS = {"lenet5": LeNet5, "cifar_resnet": CifarResNet, "mlp": MLP, "cnn1d": CNN1D,
          "resnet18": resnet18_small, "densenet121": densenet121_small}


def _prod(shape):
    out = 1
    for n in shape:
        out *= int(n)
    return out


#: name -> the constructor arguments that follow from the shape of one input sample (C, H, W) or (L,)
INPUT_ARGS = {
    "mlp": lambda shape: {"in_features": _prod(shape)},
    "cnn1d": lambda shape: {"length": int(shape[-1])},
    "lenet5": lambda shape: {"in_channels": int(shape[0]), "input_size": int(shape[-1])},
    "cifar_resnet": lambda shape: {"in_channels": int(shape[0])},
    "resnet18": lambda shape: {"in_channels": int(shape[0])},
    "densenet121": lambda shape: {"in_channels": int(shape[0])},
}


def build_model(name: str, input_shape=None, **kwargs) -> nn.Module:
    """Build a model of :data:`MODELS` by name (what a run config names).

    ``input_shape``: the shape of one input sample (e.g. ``(40,)`` or ``(1, 28, 28)``); it
    fills the arguments that depend on it (:data:`INPUT_ARGS`) unless ``kwargs`` give them.

    Examples
    --------
    >>> build_model("mlp", input_shape=(40,), depth=1, width=8).head
    Linear(in_features=8, out_features=10, bias=True)
    """
    if name not in MODELS:
        raise ValueError(f"model must be one of {', '.join(sorted(MODELS))}; got {name!r}")
    if input_shape is not None:
        kwargs = {**INPUT_ARGS[name](tuple(input_shape)), **kwargs}
    return MODELS[name](**kwargs)
