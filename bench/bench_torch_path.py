"""The toolkit's opt-in torch compute path (``_validation.use_torch``) against its numpy path.

Wall time (median of 5 or 9 calls, best in brackets) of what a user calls: the value checks of a
probability matrix (min, max, row sums), the ECE, and a temperature fit, at n = 1e5 and 1e6 with
K = 100, each through numpy (one thread) and through torch's thread pool.

    OMP_WAIT_POLICY=PASSIVE python bench/bench_torch_path.py
"""
import time
from functools import partial

import numpy as np
import torch

from calibcourse.calibration import calibrators as C
from calibcourse.calibration import metrics as M
from calibcourse.calibration._validation import check_probs, use_torch
from calibcourse.calibration.synthetic import scaled_logits


def best(fn, rounds):
    """The best and the median wall time of ``rounds`` calls of ``fn``."""
    times = []
    for _ in range(rounds):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return min(times), float(np.median(times))


def fit(z, y):
    """A temperature fit, as a user calls it."""
    return C.TemperatureScaling().fit(z, y)


def main():
    print(f"torch threads {torch.get_num_threads()}; ms, median [best]")
    for n, k in ((1_000_000, 100), (100_000, 100)):
        z, y = scaled_logits(n, k, factor=2.0, seed=0)
        p = M.softmax(z)
        cases = {"check_probs float64": partial(check_probs, p),
                 "check_probs float32": partial(check_probs, p.astype(np.float32)),
                 "ece": partial(M.ece, p, y), "TemperatureScaling.fit": partial(fit, z, y)}
        for name, fn in cases.items():
            out = []
            for backend in ("numpy", "torch"):
                use_torch(backend == "torch")
                out.append(best(fn, 5 if n > 100_000 else 9))
            use_torch(False)
            (nb, nm), (tb, tm) = out
            print(f"n={n:>9,} K={k}  {name:24s} numpy {1e3 * nm:8.1f} [{1e3 * nb:.1f}]  "
                  f"torch {1e3 * tm:8.1f} [{1e3 * tb:.1f}]  numpy/torch {nm / tm:.2f}")


if __name__ == "__main__":
    main()
