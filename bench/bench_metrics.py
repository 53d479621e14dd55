"""Benchmark calibcourse.calibration.metrics against its peers, in one run (``make bench``).

    OMP_WAIT_POLICY=PASSIVE python bench/bench_metrics.py [--quick] [--budget]

First the speed budget: ``ece`` at n = 1e6, K = 100 (float32 and float64) as a ratio
to one read of the matrix, numpy's ``probs.max(1)``, both timed in the same process taking
turns, in CPU time of the process (a shared machine's waiting is not counted; run it under
``taskset -c 0`` to keep it on one core). Then top-label ECE (15 bins) for n in 1e4, 1e5,
1e6 and K in 10, 100 against torchmetrics, netcal and relplot's binned ECE, and against the
floor: one pass over the array (``probs.max(1)`` and ``probs.argmax(1)`` in numpy, which
every top-label ECE must do). Then SECE fast against exact and smooth_ece against relplot.
Prints markdown tables; the Practitioners' guide records one run.
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
import warnings

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
warnings.filterwarnings("ignore")

import numpy as np
import torch

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
from calibcourse.calibration import metrics as M  # noqa: E402


def best_of(fn, repeat=5):
    fn()  # warm-up
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return min(times)


def best_of_interleaved(fns: dict, repeat=5) -> dict:
    """Best time of each function, the functions taking turns (a load that comes and goes on a
    shared machine then slows all of them alike, not the one that happened to run at that time)."""
    for fn in fns.values():
        fn()  # warm-up
    best = {name: np.inf for name in fns}
    for _ in range(repeat):
        for name, fn in fns.items():
            t = time.perf_counter()
            fn()
            best[name] = min(best[name], time.perf_counter() - t)
    return best


def best_cpu_interleaved(fns: dict, repeat=11) -> dict:
    """Least CPU time of the process (every thread) for each function, the functions taking turns."""
    for fn in fns.values():
        fn()  # warm-up
    best = {name: np.inf for name in fns}
    for _ in range(repeat):
        for name, fn in fns.items():
            t = time.process_time()
            fn()
            best[name] = min(best[name], time.process_time() - t)
    return best


#: The speed budget: ``ece`` within this factor of one read of the matrix, on every CPU.
BUDGET = 1.25


def one_read_ratio(n=10**6, k=100):
    """The speed budget: ``ece`` within 1.25x of one read of the matrix, ``probs.max(1)``.

    numpy picks its SIMD kernels for the CPU it runs on, and the ratio moves with them (its
    AVX-512 row maximum is three times slower than its AVX2 one on an AMD EPYC). So the budget
    is measured once with the kernels numpy finds and, on an AVX-512 machine, once more with
    numpy's AVX-512 kernels turned off (``NPY_DISABLE_CPU_FEATURES``): what an AVX2 machine runs.
    """
    from numpy._core._multiarray_umath import __cpu_dispatch__, __cpu_features__

    print(f"\n## ece at n = {n:.0e}, K = {k} against one read of the matrix (numpy's probs.max(1)); "
          "least CPU time of 11 rounds, taking turns (ms)\n")
    print(f"| numpy's kernels | dtype | probs.max(1) | ece | ece / probs.max(1) | within {BUDGET}x |")
    print("|---|---|---|---|---|---|")
    avx512 = [t for t in __cpu_dispatch__ if t.startswith(("X86_V4", "AVX512")) and __cpu_features__.get(t)]
    levels = [("as found (" + (avx512[-1] if avx512 else "no AVX-512") + ")", {})]
    if avx512:
        levels.append(("AVX2 (AVX-512 off)", {"NPY_DISABLE_CPU_FEATURES": " ".join(avx512)}))
    for label, env in levels:
        rows = subprocess.run([sys.executable, __file__, "--budget-rows", str(n), str(k)], check=True,
                              env={**os.environ, **env}, capture_output=True, text=True).stdout
        for line in rows.splitlines():
            print(f"| {label} {line}", flush=True)


def budget_rows(n, k):
    """The rows of :func:`one_read_ratio` for the numpy kernels this process runs."""
    for dtype in (np.float32, np.float64):
        budget_row(n, k, dtype)


def budget_row(n, k, dtype):
    """One dtype's row of :func:`budget_rows`."""
    p, y = make(n, k, dtype=dtype)
    t = best_cpu_interleaved({"max": lambda: p.max(1), "ece": lambda: M.ece(p, y, n_bins=15)})
    ratio = t["ece"] / t["max"]
    print(f"| {np.dtype(dtype).name} | {t['max']*1e3:.1f} | {t['ece']*1e3:.1f} | {ratio:.2f} | "
          f"{'yes' if ratio <= BUDGET else 'no'} |", flush=True)


def ece_row(n, k, multiclass_calibration_error, NetcalECE, relplot):
    """One row of the ECE table: the floor, calibcourse and the peers at ``n`` samples and ``k`` classes."""
    p, y = make(n, k)
    pt, yt = torch.from_numpy(p), torch.from_numpy(y)

    def rp():
        conf = p.max(1)
        return relplot.metrics.binnedECE(conf, (p.argmax(1) == y).astype(float), nbins=15)

    t = best_of_interleaved({
        "floor": lambda: (p.max(1), p.argmax(1)),
        "ours": lambda: M.ece(p, y, n_bins=15),
        "tm": lambda: multiclass_calibration_error(pt, yt, num_classes=k, n_bins=15),
        "nc": lambda: NetcalECE(bins=15).measure(p, y),
        "rl": rp}, repeat=3 if n >= 10**6 else 7)
    floor, ours, tm, nc, rl = (t[name] for name in ("floor", "ours", "tm", "nc", "rl"))
    print(f"| {n:.0e} | {k} | {floor*1e3:.1f} | {ours*1e3:.1f} | {tm*1e3:.1f} | {nc*1e3:.1f} | "
          f"{rl*1e3:.1f} | {ours/floor:.2f} |", flush=True)


def sece_row(n):
    """One row of the SECE table: the exact path once, the fast one at its best."""
    p, y = make(n, 10, 1)
    t = time.perf_counter()
    ex = M.sece(p, y, method="exact")
    te = time.perf_counter() - t
    tf = best_of(lambda: M.sece(p, y, method="fast"))
    fa = M.sece(p, y, method="fast")
    print(f"| {n} | {te:.3f} | {tf:.4f} | {abs(ex - fa):.1e} |")


def smooth_ece_row(n, relplot):
    """One row of the smooth ECE table, against relplot's smECE."""
    p, y = make(n, 10, 3)
    conf, pred = M.top_label(p)
    corr = (pred == y).astype(float)
    ours = best_of(lambda: M.smooth_ece(p, y), 3)
    ref = best_of(lambda: relplot.smECE(conf, corr), 3)
    diff = abs(M.smooth_ece(p, y) - relplot.smECE(conf, corr))
    print(f"| {n:.0e} | {ours:.4f} | {ref:.4f} | {diff:.1e} |")


def make(n, k, seed=0, dtype=np.float32):
    rng = np.random.default_rng(seed)
    z = rng.normal(size=(n, k)).astype(np.float32) * 3
    p = torch.softmax(torch.from_numpy(z), 1).numpy().astype(dtype, copy=False)
    y = np.where(rng.random(n) < 0.6, p.argmax(1), rng.integers(0, k, n))
    return p, y


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true", help="skip n = 1e6")
    ap.add_argument("--budget", action="store_true", help="only the ratio of ece to one read of the matrix")
    ap.add_argument("--budget-rows", nargs=2, type=int, metavar=("N", "K"), help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.budget_rows:
        return budget_rows(*args.budget_rows)
    if args.budget:
        return one_read_ratio()
    import relplot
    from netcal.metrics import ECE as NetcalECE
    from torchmetrics.functional.classification import multiclass_calibration_error

    print(f"torch threads: {torch.get_num_threads()}, cores: {os.cpu_count()}, numpy {np.__version__}")
    one_read_ratio()
    print("\n## top-label ECE, 15 bins, float32 probabilities (best of 7, or 3 at n = 1e6, taking turns; ms)\n")
    print(
        "| n | K | floor (max+argmax) | calibcourse | torchmetrics | netcal | relplot binnedECE | calibcourse / floor |"
    )
    print("|---|---|---|---|---|---|---|---|")
    sizes = [10**4, 10**5] + ([] if args.quick else [10**6])
    for n in sizes:
        for k in (10, 100):
            ece_row(n, k, multiclass_calibration_error, NetcalECE, relplot)

    print("\n## SECE (bandwidth 0.05): exact O(n^2) vs fast grid path (s)\n")
    print("| n | exact | fast | abs difference |")
    print("|---|---|---|---|")
    for n in (2000, 20000):
        sece_row(n)
    p, y = make(10**5, 10, 2)
    print(f"| 1e5 | (not run) | {best_of(lambda: M.sece(p, y, method='fast')):.4f} | |")

    print("\n## smooth_ece vs relplot.smECE (s)\n")
    print("| n | calibcourse | relplot | abs difference |")
    print("|---|---|---|---|")
    for n in (10**4, 10**5):
        smooth_ece_row(n, relplot)


if __name__ == "__main__":
    main()
