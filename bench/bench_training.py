"""Training throughput of the course's models on this machine (``make bench``).

    OMP_WAIT_POLICY=PASSIVE python bench/bench_training.py

Samples per second of one training step (forward, backward, Adam) at batch 128,
which sets what the default profile can afford on 2 CPU cores.
"""
from __future__ import annotations

import os
import sys
import time

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
import torch

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
from calibcourse.study.training import models as Mo  # noqa: E402

CASES = [
    ("LeNet-5, 1x28x28", lambda: Mo.LeNet5(), (1, 28, 28)),
    ("CIFAR ResNet-20, 1x28x28", lambda: Mo.CifarResNet(20, in_channels=1), (1, 28, 28)),
    ("CIFAR ResNet-20 without BN, 1x28x28", lambda: Mo.CifarResNet(20, batch_norm=False, in_channels=1), (1, 28, 28)),
    ("ResNet-18, stride-1 stem, no max-pool, 1x28x28", lambda: Mo.resnet18_small(10, 1, "cifar"), (1, 28, 28)),
    ("ResNet-18, stride-2 stem + max-pool, 1x28x28", lambda: Mo.resnet18_small(10, 1, "imagenet"), (1, 28, 28)),
    ("MLP 4x256, MNIST-1D", lambda: Mo.MLP(40, width=256, depth=4), (40,)),
    ("MLP 2x2048, MNIST-1D", lambda: Mo.MLP(40, width=2048, depth=2), (40,)),
    ("MLP 8x1024, MNIST-1D", lambda: Mo.MLP(40, width=1024, depth=8), (40,)),
    ("1-D CNN, MNIST-1D", lambda: Mo.CNN1D(), (40,)),
]


def throughput(make, shape, batch=128, seconds=3.0):
    torch.manual_seed(0)
    model = make()
    opt = torch.optim.Adam(model.parameters(), 1e-3)
    x, y = torch.randn(batch, *shape), torch.randint(0, 10, (batch,))

    def step():
        loss = torch.nn.functional.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()

    for _ in range(3):
        step()
    n, t0 = 0, time.perf_counter()
    while time.perf_counter() - t0 < seconds:
        step()
        n += batch
    return n / (time.perf_counter() - t0)


def main():
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads\n")
    print("| model | samples/s (batch 128, train step) |")
    print("|---|---|")
    for name, make, shape in CASES:
        print(f"| {name} | {throughput(make, shape):,.0f} |", flush=True)


if __name__ == "__main__":
    main()
