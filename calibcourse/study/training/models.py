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

    Parameters
    ----------
    num_classes : int, default=10
        Number of outputs; 1 gives a single logit, read through a sigmoid.
    in_channels : int, default=1
        Channels of the input images.
    input_size : int, default=28
        Height and width of the (square) input images, at least 12.
    dropout : float, default=0
        Dropout probability before each fully connected layer (chapter 6's MC dropout); 0 leaves
        the network as LeCun et al.'s, with no dropout layers at all.

    Attributes
    ----------
    head : torch.nn.Linear
        The last layer, 84 features to ``num_classes`` logits.

    Examples
    --------
    >>> net = LeNet5()
    >>> x = torch.zeros(2, 1, 28, 28)
    >>> net(x).shape, net.features(x).shape
    (torch.Size([2, 10]), torch.Size([2, 84]))
    >>> count_parameters(net), count_parameters(LeNet5(in_channels=3, input_size=32))
    (61706, 83126)
    >>> [type(m).__name__ for m in LeNet5(dropout=0.25).fc]  # the same weights, three dropout layers
    ['Dropout', 'Linear', 'ReLU', 'Dropout', 'Linear', 'ReLU', 'Dropout']
    """

    def __init__(self, num_classes: int = 10, in_channels: int = 1, input_size: int = 28, dropout: float = 0.0):
        super().__init__()
        if input_size < 12:
            raise ValueError(f"input_size must be >= 12 for LeNet-5; got {input_size}")
        if isinstance(dropout, bool) or not isinstance(dropout, (int, float)) or not 0 <= dropout < 1:
            raise ValueError(f"dropout must be a probability in [0, 1); got {dropout!r}")
        self.conv = nn.Sequential(
            nn.Conv2d(in_channels, 6, 5, padding=2), nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(6, 16, 5), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten())
        with torch.no_grad():
            flat = self.conv(torch.zeros(1, in_channels, input_size, input_size)).shape[1]
        # dropout layers hold no weights: with them the initialization draws the same numbers
        drop = (lambda: [nn.Dropout(dropout)]) if dropout > 0 else (lambda: [])
        self.fc = nn.Sequential(*drop(), nn.Linear(flat, 120), nn.ReLU(), *drop(), nn.Linear(120, 84), nn.ReLU(),
                                *drop())
        self.head = nn.Linear(84, num_classes)

    def features(self, x):
        """The features the head classifies: the convolutions and the hidden layers."""
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

    Parameters
    ----------
    depth : int, default=20
        Number of layers, ``6n + 2`` with ``n >= 1`` (8, 14, 20, 32, ...).
    width : float, default=1.0
        Factor on the channels 16, 32, 64 of the three stages, > 0.
    batch_norm : bool, default=True
        False: every batch norm is the identity, the convolutions get biases.
    num_classes : int, default=10
        Number of outputs; 1 gives a single logit, read through a sigmoid.
    in_channels : int, default=3
        Channels of the input images.

    Attributes
    ----------
    head : torch.nn.Linear
        The last layer, from the pooled features of the last stage.

    Examples
    --------
    >>> net = CifarResNet(depth=20)
    >>> count_parameters(net)                      # the 0.27 M of He et al.'s ResNet-20
    272474
    >>> small = CifarResNet(depth=8, width=0.5, batch_norm=False, in_channels=1)
    >>> small(torch.zeros(2, 1, 28, 28)).shape, small.head
    (torch.Size([2, 10]), Linear(in_features=32, out_features=10, bias=True))
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
        """The features the head classifies: the pooled output of the last stage."""
        return self.body(x)


class MLP(_WithFeatures):
    """Multilayer perceptron: ``depth`` hidden layers of ``width`` units, ReLU (chapter 2's sweeps).

    Parameters
    ----------
    in_features : int
        Size of one input sample (inputs are flattened).
    num_classes : int, default=10
        Number of outputs; 1 gives a single logit, read through a sigmoid.
    width : int, default=256
        Units per hidden layer.
    depth : int, default=2
        Number of hidden layers; 0 is a linear model.
    batch_norm : bool, default=False
        A batch norm after each hidden linear layer.

    Attributes
    ----------
    head : torch.nn.Linear
        The last layer, ``width`` (or ``in_features`` when ``depth=0``) to ``num_classes``.

    Examples
    --------
    >>> net = MLP(in_features=40, width=32, depth=2)
    >>> net(torch.zeros(5, 40)).shape, net.features(torch.zeros(5, 40)).shape
    (torch.Size([5, 10]), torch.Size([5, 32]))
    >>> count_parameters(net) == (40 * 32 + 32) + (32 * 32 + 32) + (32 * 10 + 10)
    True
    """

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
        """The features the head classifies: the last hidden layer."""
        return self.body(x)


class CNN1D(_WithFeatures):
    """1-D CNN for MNIST-1D: three conv layers (``channels``), then 128 ReLU features and a linear head.

    The second and third convolutions have stride 2; their output is flattened (no pooling).

    Parameters
    ----------
    num_classes : int, default=10
        Number of outputs; 1 gives a single logit, read through a sigmoid.
    channels : int, default=32
        Channels of the three convolutions.
    length : int, default=40
        Length of an input sequence.

    Attributes
    ----------
    head : torch.nn.Linear
        The last layer, 128 features to ``num_classes``.

    Examples
    --------
    >>> net = CNN1D(channels=8)
    >>> x = torch.zeros(3, 40)                     # three MNIST-1D sequences
    >>> net(x).shape, net.features(x).shape
    (torch.Size([3, 10]), torch.Size([3, 128]))
    """

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
        """The features the head classifies: the pooled convolutions."""
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
    the 7x7 stride-2 convolution and the max-pool). Randomly initialized.

    Parameters
    ----------
    num_classes : int, default=10
        Number of outputs; 1 gives a single logit, read through a sigmoid.
    in_channels : int, default=3
        Channels of the input images.
    stem : {"cifar", "imagenet"}, default="cifar"
        The first layers (see above).

    Returns
    -------
    torch.nn.Module
        The model, with ``features(x)`` and ``head``.

    Examples
    --------
    >>> net = resnet18_small(num_classes=2, in_channels=1, stem="imagenet")
    >>> net(torch.zeros(2, 1, 28, 28)).shape, net.head
    (torch.Size([2, 2]), Linear(in_features=512, out_features=2, bias=True))
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

    Parameters
    ----------
    num_classes : int, default=10
        Number of outputs; 1 gives a single logit, read through a sigmoid.
    in_channels : int, default=3
        Channels of the input images.
    weights_path : str or path, optional
        A local file with the state dict of torchvision's ``densenet121`` (never downloaded). The classifier
        is replaced afterwards, so ``num_classes`` may differ from the weights' 1000.
    stem : {"cifar", "imagenet"}, optional
        The first layers (see above).

    Returns
    -------
    torch.nn.Module
        The model, with ``features(x)`` and ``head``.

    Examples
    --------
    >>> net = densenet121_small(num_classes=10)
    >>> net.head, round(count_parameters(net) / 1e6, 2)
    (Linear(in_features=1024, out_features=10, bias=True), 6.96)
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

    Parameters
    ----------
    backbone : torch.nn.Module
        A trained model with ``features(x)``; its parameters are frozen and ``features`` runs in eval mode
        without gradients.
    feature_dim : int
        Size of ``backbone.features(x)``.
    num_classes : int, default=2
        Number of classes.
    hidden : int, default=500
        Units of the hidden layer.

    Attributes
    ----------
    head : torch.nn.Sequential
        The last linear layer and the LogSoftmax.

    Examples
    --------
    >>> clf = FrozenFeatureClassifier(LeNet5(), feature_dim=84, hidden=16)
    >>> out = clf(torch.zeros(4, 1, 28, 28))
    >>> out.shape, bool(torch.allclose(out.exp().sum(1), torch.ones(4)))   # log-probabilities
    (torch.Size([4, 2]), True)
    >>> count_parameters(clf) - count_parameters(clf.backbone)   # trainable: 84*16+16 + 16*2+2
    1394
    """

    def __init__(self, backbone: nn.Module, feature_dim: int, num_classes: int = 2, hidden: int = 500):
        super().__init__()
        self.backbone = backbone
        for p in self.backbone.parameters():
            p.requires_grad_(False)
        self.mlp = nn.Sequential(nn.Linear(feature_dim, hidden), nn.ReLU())
        self.head = nn.Sequential(nn.Linear(hidden, num_classes), nn.LogSoftmax(dim=1))

    def features(self, x):
        """The frozen backbone's features, in evaluation mode and without gradients."""
        self.backbone.eval()
        with torch.no_grad():
            f = self.backbone.features(x)
        return self.mlp(f)

    def forward(self, x):
        """The head's logits on the frozen features."""
        return self.head(self.features(x))


def load_weights(model: nn.Module, path) -> nn.Module:
    """Load a state dict from a local file only (``torch.load(..., weights_only=True)``).

    A missing file raises ``FileNotFoundError``: pretrained weights are never downloaded.

    Parameters
    ----------
    model : torch.nn.Module
        The model to load into (changed in place).
    path : str or path
        A file written by ``torch.save(model.state_dict(), path)``; ``~`` is expanded.

    Returns
    -------
    torch.nn.Module
        ``model``, with the weights of the file.

    Examples
    --------
    >>> import os, tempfile
    >>> path = os.path.join(tempfile.mkdtemp(), "mlp.pt")
    >>> trained = MLP(in_features=4, width=3, depth=1)
    >>> torch.save(trained.state_dict(), path)
    >>> fresh = load_weights(MLP(in_features=4, width=3, depth=1), path)
    >>> bool(torch.equal(fresh.head.weight, trained.head.weight))
    True
    """
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
    """Number of parameters of a model.

    Parameters
    ----------
    model : torch.nn.Module
        Any model.

    Returns
    -------
    int
        The number of its parameters (trainable or not).

    Examples
    --------
    >>> count_parameters(nn.Linear(84, 10))        # 84 * 10 weights + 10 biases
    850
    """
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

    Parameters
    ----------
    name : str
        A key of :data:`MODELS`: ``'lenet5'``, ``'cifar_resnet'``, ``'mlp'``, ``'cnn1d'``, ``'resnet18'``,
        ``'densenet121'``.
    input_shape : tuple of int, optional
        The shape of one input sample (e.g. ``(40,)`` or ``(1, 28, 28)``); it fills the arguments that depend
        on it (:data:`INPUT_ARGS`) unless ``kwargs`` give them.
    **kwargs
        The model's other arguments (``num_classes``, ``width``, ...).

    Returns
    -------
    torch.nn.Module
        The model, with ``features(x)`` and ``head``.

    Examples
    --------
    >>> build_model("mlp", input_shape=(40,), depth=1, width=8).head
    Linear(in_features=8, out_features=10, bias=True)
    >>> net = build_model("lenet5", input_shape=(3, 32, 32), num_classes=1)   # a binary head
    >>> net(torch.zeros(2, 3, 32, 32)).shape
    torch.Size([2, 1])
    """
    if name not in MODELS:
        raise ValueError(f"model must be one of {', '.join(sorted(MODELS))}; got {name!r}")
    if input_shape is not None:
        kwargs = {**INPUT_ARGS[name](tuple(input_shape)), **kwargs}
    return MODELS[name](**kwargs)
