"""Temperature scaling: fit time and error in T against the usual implementations (``make bench``).

    OMP_WAIT_POLICY=PASSIVE python bench/bench_calibrators.py [--quick]

Logits of K = 100 classes from a strongly overconfident model (labels drawn from
softmax(z), the model reports 7 z: T* about 7), n = 10,000 and n = 100,000
(``--quick``: 10,000 only). The exact optimum is found by bisection on the
derivative of the NLL in 1/T to 1e-14. Compared in the same run:

* calibcourse ``TemperatureScaling`` (safeguarded Newton, exact);
* a three-line bounded Brent search, ``scipy.optimize.minimize_scalar`` over
  torch's float64 ``cross_entropy(z / T, y)`` (xatol 1e-8);
* torch LBFGS in the style of the widely copied reference implementation
  (gpleiss/temperature_scaling: T initialised to 1.5, ``LBFGS(lr=0.01, max_iter=50)``);
* TorchUncertainty's ``TemperatureScaler`` (bench-only dependency);
* netcal's ``TemperatureScaling`` on float64 and on float32 probabilities.
"""
from __future__ import annotations

import logging
import os
import sys
import time
import warnings

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
warnings.filterwarnings("ignore")
logging.disable(logging.WARNING)

import numpy as np
import torch
from scipy.special import logsumexp

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
from calibcourse.calibration import metrics as M  # noqa: E402
from calibcourse.calibration.calibrators import TemperatureScaling  # noqa: E402
from calibcourse.calibration.synthetic import scaled_logits  # noqa: E402


def data(n=10_000, k=100, factor=7.0, seed=0):
    z, y = scaled_logits(n, k, factor=factor, spread=2.0, seed=seed)
    return z.astype(np.float32), y


def exact_temperature(z, y):
    z = z.astype(np.float64)
    zy = z[np.arange(len(y)), y]

    def g(beta):
        u = beta * z
        q = np.exp(u - logsumexp(u, 1, keepdims=True))
        return np.mean((q * z).sum(1) - zy)

    lo, hi = 1e-6, 100.0
    for _ in range(200):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if g(mid) < 0 else (lo, mid)
        if hi - lo < 1e-14:
            break
    return 1 / ((lo + hi) / 2)


def timed(fn, repeat=5):
    fn()
    best, out = np.inf, None
    for _ in range(repeat):
        t = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - t)
    return best, out


def ours(z, y):
    return TemperatureScaling().fit(z, y).temperature_


def brent(z, y):
    import torch.nn.functional as F
    from scipy.optimize import minimize_scalar

    zt, yt = torch.from_numpy(z).double(), torch.from_numpy(y)
    return minimize_scalar(lambda t: F.cross_entropy(zt / t, yt).item(), bounds=(0.05, 50.0),
                           method="bounded", options={"xatol": 1e-8}).x


def reference_lbfgs(z, y):
    logits, labels = torch.from_numpy(z), torch.from_numpy(y)
    t = torch.nn.Parameter(torch.ones(1) * 1.5)
    opt = torch.optim.LBFGS([t], lr=0.01, max_iter=50)
    crit = torch.nn.CrossEntropyLoss()

    def closure():
        opt.zero_grad()
        loss = crit(logits / t, labels)
        loss.backward()
        return loss

    opt.step(closure)
    return float(t.item())


def torch_uncertainty(z, y):
    from torch.utils.data import DataLoader, TensorDataset
    from torch_uncertainty.post_processing import TemperatureScaler

    dl = DataLoader(TensorDataset(torch.from_numpy(z), torch.from_numpy(y)), batch_size=len(y))
    s = TemperatureScaler(model=None)
    s.fit(dl, progress=False)
    return float(s.temperature[0].item())


def netcal(z, y, dtype):
    from netcal.scaling import TemperatureScaling as NTS

    p = M.softmax(z.astype(np.float64)).astype(dtype)
    m = NTS()
    m.fit(p, y)
    # netcal's `temperature` property returns its weight, the *inverse* temperature 1/T
    return 1.0 / float(np.ravel(m.weights)[0])


def run(n):
    z, y = data(n)
    t_star = exact_temperature(z, y)
    print(f"\nn = {len(y)}, K = {z.shape[1]}, exact optimum T* = {t_star:.8f}; torch threads "
          f"{torch.get_num_threads()}\n")
    rows = [("calibcourse TemperatureScaling", lambda: ours(z, y)),
            ("scipy minimize_scalar (bounded Brent) over torch float64 cross_entropy", lambda: brent(z, y)),
            ("torch LBFGS, reference style (lr 0.01, 50 it.)", lambda: reference_lbfgs(z, y))]
    try:
        import importlib

        importlib.import_module("torch_uncertainty.post_processing")

        rows.append(("TorchUncertainty TemperatureScaler", lambda: torch_uncertainty(z, y)))
    except Exception as exc:  # pragma: no cover
        print(f"(TorchUncertainty not importable: {exc})")
    rows += [("netcal TemperatureScaling, float64 probs", lambda: netcal(z, y, np.float64)),
             ("netcal TemperatureScaling, float32 probs", lambda: netcal(z, y, np.float32))]
    print("| implementation | fit time (ms, best of 5) | T | abs error in T |")
    print("|---|---|---|---|")
    results = {}
    for name, fn in rows:
        try:
            t, temp = timed(fn, repeat=3 if ("netcal" in name or n > 10_000) else 5)
        except Exception as exc:  # pragma: no cover
            print(f"| {name} | failed: {type(exc).__name__}: {exc} | | |")
            continue
        results[name] = (t, abs(temp - t_star))
        print(f"| {name} | {t * 1e3:.1f} | {temp:.6f} | {abs(temp - t_star):.1e} |", flush=True)
    ours_t = results["calibcourse TemperatureScaling"][0]
    for peer, (t, err) in results.items():
        if peer != "calibcourse TemperatureScaling" and err < 1e-6:  # a speed-up only over peers that find T*
            print(f"calibcourse is {t / ours_t:.1f}x faster than {peer} (which reaches T* within {err:.0e})")


def main():
    import argparse

    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true", help="n = 10,000 only")
    args = ap.parse_args()
    for n in (10_000,) if args.quick else (10_000, 100_000):
        run(n)


if __name__ == "__main__":
    main()
