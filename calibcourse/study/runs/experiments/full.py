"""The papers' scale: every study's runs on MNIST and CIFAR with the papers' recipes (the ``full`` profile)."""
from __future__ import annotations

from calibcourse.study.runs.experiments.adam import adam_study_runs
from calibcourse.study.runs.experiments.crossfit import crossfit_default_runs
from calibcourse.study.runs.experiments.guo import N_TEST_MNIST1D, SEEDS, nine1d_runs
from calibcourse.study.runs.experiments.shift import LETTERS_OOD, LETTERS_SEEDS, SHIFT_N_SEEDS, SHIFT_TESTS, shift_runs

#: the module's configs; its run builders (``..._runs``) are the registry's, not an API
__all__ = ["HE_CIFAR", "META_CIFAR", "DENSENET_WEIGHTS"]

#: He et al. (2016, Sec. 4.2), the recipe Guo et al. (2017) train their CIFAR ResNets with: SGD with
#: momentum 0.9 (not Nesterov), learning rate 0.1, weight decay 1e-4, batch 128, 164 epochs (64k
#: iterations of 45k images), the rate divided by 10 at 50 % and 75 % of training (32k and 48k
#: iterations; ``schedule="step"``), 4-pixel padding + random 32x32 crops + horizontal flips, and for
#: ResNet-110 a warm-up at 0.01 until the training error falls below 80 % (about 400 iterations: the
#: first epoch here, ``warmup``);
#: mixed precision on CUDA is ours (it changes no recipe, only the arithmetic)
HE_CIFAR = {"optimizer": "sgd", "lr": 0.1, "momentum": 0.9, "nesterov": False, "weight_decay": 1e-4,
            "batch_size": 128, "epochs": 164, "schedule": "step",
            "augment": {"crop_padding": 4, "hflip": True}, "amp": True}
#: Wang and Golebiowski (2023, arXiv 2303.15057) train with Bohdal et al. (2021)'s defaults on a ResNet-18;
#: those follow Mukhoti et al. (2020): SGD 0.1, momentum 0.9, weight decay 5e-4, batch 128, 350 epochs,
#: the rate divided by 10 at epochs 150 and 250, crops and flips. Read from the papers' setup
#: sections, not from their code; Nesterov off (not stated: our choice)
META_CIFAR = {"optimizer": "sgd", "lr": 0.1, "momentum": 0.9, "nesterov": False, "weight_decay": 5e-4,
              "batch_size": 128, "epochs": 350, "schedule": "step", "milestones": [150, 250],
              "augment": {"crop_padding": 4, "hflip": True}, "amp": True}
#: the pretrained backbone of chapter 3's frozen-feature head (reference 003): torchvision's ImageNet
#: DenseNet-121, read from the ``weights`` folder of ``$CALIBCOURSE_DATA`` (default ``~/data/weights``),
#: never downloaded
DENSENET_WEIGHTS = "densenet121-a639ec97.pth"


def full_runs():
    """The papers' scale (needs the data sets under ``$CALIBCOURSE_DATA`` or ``~/data``, and a GPU).

    Chapter 2 repeats Guo et al.'s Fig. 1-3 on CIFAR-100 with He et al.'s recipe (:data:`HE_CIFAR`):
    depth (ResNet-20/32/56/110), width (ResNet-14 at 1, 2, 4, 8 times 16-32-64 filters; Guo et al.
    vary the filters of a ResNet-14), batch norm (ResNet-110 with and without; Guo et al. use a
    6-layer ConvNet, ours keeps one architecture; without BN at learning rate 0.01, our choice, since
    a plain ResNet-110 diverges at 0.1) and weight decay (ResNet-110; 0 to 1e-2), a 500-epoch
    ResNet-110 (Fig. 3: the rate divided at epochs 250 and 375) and LeNet-5 against ResNet-110
    (Fig. 1; LeNet-5 with the same schedule at learning rate 0.01, our choice). Chapter 3: full
    MNIST "9 vs not-9" with LeNet-5 and ResNet-18 (Adam 1e-3, 20 and 40 epochs: reference 003's
    tutorial does not state a schedule, our choice) and the frozen DenseNet-121 on CIFAR-10 cat vs
    bird. Chapter 4: reference 004's ResNet-18 on CIFAR-100, trained here with :data:`HE_CIFAR`
    (the tutorial loads pretrained weights). Chapter 5: ResNet-18 on CIFAR-10 with
    :data:`META_CIFAR`, every method of :data:`ADAM_METHODS` on it (the SGD-backbone arm,
    :data:`SGD_ARM`, is then the main runs under its own names: that recipe is already the papers').
    Chapter 6: LeNet-5 on MNIST
    under rotation, every method of :data:`SHIFT_METHODS`, the 10,000 test digits at every angle.
    """
    c100, c10 = {"name": "cifar100", "val_fraction": 0.1}, {"name": "cifar10", "val_fraction": 0.1}

    def he(model, data=c100, seed=0, **extra):
        return {"data": data, "model": model, "seed": seed, **HE_CIFAR, **extra}

    def resnet(depth=110, width=1.0, bn=True, **extra):
        model = {"name": "cifar_resnet", "depth": depth, "width": width, "batch_norm": bn}
        # He et al. warm ResNet-110 up at 0.01 for about 400 iterations (one epoch here) before 0.1
        warm = {"warmup": {"epochs": 1, "lr": 0.01}} if depth >= 110 and "lr" not in extra else {}
        return he(model, **warm, **extra)

    runs = {}
    for s in SEEDS:
        for i, d in enumerate((20, 32, 56, 110), start=1):
            runs[f"ch2/depth/level{i}/s{s}"] = resnet(depth=d, seed=s)
        for i, w in enumerate((1, 2, 4, 8), start=1):
            runs[f"ch2/width/level{i}/s{s}"] = resnet(depth=14, width=w, seed=s)
        for bn in (False, True):
            runs[f"ch2/batchnorm/{'bn' if bn else 'plain'}/s{s}"] = resnet(
                seed=s, bn=bn, **({} if bn else {"lr": 0.01})
            )
        for wd in (0.0, 1e-4, 1e-3, 1e-2):
            runs[f"ch2/weight_decay/{wd:g}/s{s}"] = resnet(seed=s, weight_decay=wd)
    runs["ch2/nll_overfit"] = {**resnet(epochs=500), "keep_best": "val_nll"}
    runs["ch2/model/small"] = he({"name": "lenet5"}, lr=0.01)
    runs["ch2/model/large"] = resnet()
    full_nine = {"name": "mnist", "view": {"one_vs_rest": 9}, "val_fraction": 0.1}
    runs["ch3/nine/small"] = {"data": full_nine, "model": {"name": "lenet5"}, "epochs": 20, "seed": 0}
    runs["ch3/nine/large"] = {"data": full_nine, "model": {"name": "resnet18"}, "epochs": 20, "seed": 0, "amp": True}
    runs["ch3/nine/small_sigmoid_overfit"] = {"data": full_nine, "model": {"name": "lenet5"}, "loss": "bce",
                                              "epochs": 40, "seed": 0}
    # reference 003 froze torchvision's ImageNet DenseNet-121 and trained an MLP head on cat vs bird
    backbone = {"pretrained": {"name": "densenet121", "weights": DENSENET_WEIGHTS, "num_classes": 2}}
    runs["ch3/frozen_head"] = {"data": {"name": "cifar10", "view": {"two_class": [3, 2]}, "val_fraction": 0.1},
                               "model": {"name": "frozen_features", "backbone": backbone, "hidden": 500},
                               "loss": "nll", "epochs": 5, "lr": 1e-4, "seed": 0}
    runs.update(nine1d_runs(epochs=100, n_test=N_TEST_MNIST1D))
    runs["ch4/recipe"] = he({"name": "resnet18"})
    # the SGD arm's grid as in every profile (the chapters read the same names): its 0.1 is the recipe's own
    runs.update(adam_study_runs(base={"data": c10, "model": {"name": "resnet18"}, **META_CIFAR},
                          sgd_lr=META_CIFAR["lr"]))
    # chapter 6's cross-fitting is about scarce labels: the default profile's pools, in every profile
    runs.update(crossfit_default_runs())
    # chapter 6: LeNet-5 on full MNIST, its 10,000 test digits rotated by every angle, and the letters
    mnist = {"name": "mnist", "val_fraction": 0.1}
    runs.update(shift_runs(mnist, epochs=20, seeds=range(SHIFT_N_SEEDS), shift={**SHIFT_TESTS, "n": 10_000}))
    runs.update(shift_runs(mnist, epochs=20, seeds=range(LETTERS_SEEDS), prefix="ch6/letters",
                                ood={**LETTERS_OOD, "n": 10_000}))
    return runs
