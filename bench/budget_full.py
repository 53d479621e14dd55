"""Estimated GPU-hours of the ``full`` profile, per chapter (the Contributors' guide, *Budget of the full profile*).

    python bench/budget_full.py [--tflops 20] [--meta-factor 5]

For every distinct config of ``experiments("full")`` (runs that share a config train once):
the floating-point operations of one epoch, counted here by ``torch.utils.flop_counter`` on the
real model (a training sample costs 3 forward passes: forward + backward; every epoch also
evaluates the validation and test splits), times the epochs, divided by an assumed sustained
throughput. The throughput is an assumption, not a measurement (no GPU here): ``--tflops``
(default 5 TFLOP/s: a ResNet-110 epoch on CIFAR, 45,000 training and 15,000 evaluated images,
then takes 15 s; 32x32 convnets at batch 128 are bound by memory traffic and kernel launches,
far from a GPU's peak, and 15 s per epoch is our assumption for one modern GPU with mixed
precision, not a measurement). A
meta-learned step (chapter 5's gamma-Net: a look-ahead step with second-order gradients) costs
``--meta-factor`` plain steps: 5, the ratio measured on the CPU in the default profile
(the Contributors' guide, *Budgets*). Scale the hours by your GPU's real throughput.
"""
from __future__ import annotations

import argparse
import os
import sys
from collections import defaultdict

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

#: samples of the full data sets: train (after the 10 % validation split), validation, test
SIZES = {"cifar10": (45000, 5000, 10000), "cifar100": (45000, 5000, 10000), "mnist": (54000, 6000, 10000),
         "mnist1d": None}
SHAPES = {"cifar10": (3, 32, 32), "cifar100": (3, 32, 32), "mnist": (1, 28, 28)}
CLASSES = {"cifar10": 10, "cifar100": 100, "mnist": 10}


def forward_flops(cfg) -> float:
    import torch
    from torch.utils.flop_counter import FlopCounterMode

    from calibcourse.study.training.config import normalize_config
    from calibcourse.study.training.train import make_model

    c = normalize_config(cfg)
    name = c["data"]["name"]
    shape = SHAPES[name]
    k = 1 if c["loss"] == "bce" else (2 if c["data"].get("view") else CLASSES[name])
    model = c["model"]
    if model["name"] == "frozen_features":  # the frozen DenseNet-121 forward only, the head is negligible
        from calibcourse.study.training.models import densenet121_small

        net, k = densenet121_small(num_classes=2, stem="imagenet"), None
    else:
        net = make_model(c, shape, k, torch.device("cpu"))
    net.eval()
    with FlopCounterMode(display=False) as counter, torch.no_grad():
        net(torch.zeros(1, *shape))
    return float(counter.get_total_flops())


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--tflops", type=float, default=5.0, help="assumed sustained TFLOP/s of one GPU")
    ap.add_argument("--meta-factor", type=float, default=5.0, help="cost of a meta-learned step in plain steps")
    args = ap.parse_args(argv)
    from calibcourse.study.runs.cache import config_key
    from calibcourse.study.runs.experiments import experiments

    seen, rows = set(), defaultdict(lambda: {"runs": 0, "hours": 0.0})
    cost_of = {}
    for name, cfg in experiments("full").items():
        key = config_key(cfg)
        chapter = name.split("/")[0]
        if key in seen:
            continue
        seen.add(key)
        rows[chapter]["runs"] += 1
        data = cfg["data"]["name"]
        if SIZES.get(data) is None:  # MNIST-1D runs: CPU-sized, minutes
            continue
        n_train, n_val, n_test = SIZES[data]
        if cfg["data"].get("view", {}) and "two_class" in cfg["data"]["view"]:
            n_train, n_val, n_test = n_train // 5, n_val // 5, n_test // 5
        model_key = repr(cfg["model"]) + data
        if model_key not in cost_of:
            cost_of[model_key] = forward_flops(cfg)
        fwd = cost_of[model_key]
        frozen = cfg["model"]["name"] == "frozen_features"
        step = (1.0 if frozen else 3.0) * (args.meta_factor if cfg.get("meta") else 1.0)
        per_epoch = fwd * (step * n_train + n_val + n_test)
        rows[chapter]["hours"] += per_epoch * cfg["epochs"] / (args.tflops * 1e12) / 3600
    total_runs = sum(r["runs"] for r in rows.values())
    total = sum(r["hours"] for r in rows.values())
    print(f"| chapter | distinct runs | GPU-hours at {args.tflops:g} TFLOP/s |")
    print("|---|---|---|")
    for chapter in sorted(rows):
        h = rows[chapter]['hours']
        print(
            f"| {chapter} | {rows[chapter]['runs']} | {h:.1f} |"
            if h < 10
            else f"| {chapter} | {rows[chapter]['runs']} | {h:.0f} |"
        )
    print(f"| all | {total_runs} | {total:.0f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
