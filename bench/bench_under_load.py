"""TemperatureScaling.fit on 10,000 x 100 logits, idle and while another process keeps one core busy.

The toolkit's passes run single-threaded in numpy: on a 2-core machine with one core taken, a
fit must take at most twice its idle time.

    OMP_WAIT_POLICY=PASSIVE python bench/bench_under_load.py
"""
import subprocess
import sys
import time

import numpy as np

from calibcourse.calibration import calibrators as C
from calibcourse.calibration.synthetic import scaled_logits


def _best(fn, rounds=15):
    times = []
    for _ in range(rounds):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return min(times), float(np.median(times))


def main():
    z, y = scaled_logits(10_000, 100, factor=2.0, seed=0)
    fit = lambda: C.TemperatureScaling().fit(z, y)  # noqa: E731
    idle = _best(fit)
    busy_proc = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    try:
        time.sleep(0.5)
        busy = _best(fit)
    finally:
        busy_proc.kill()
        busy_proc.wait()
    print("TemperatureScaling.fit, 10,000 x 100 float64, median of 15 (best in brackets)")
    (i_best, i_med), (b_best, b_med) = idle, busy
    ratio = b_med / i_med
    print(f"  idle {1e3 * i_med:7.1f} ms [{1e3 * i_best:.1f}]   one core busy {1e3 * b_med:7.1f} ms "
          f"[{1e3 * b_best:.1f}]   {ratio:4.2f}x  within 2x: {'yes' if ratio <= 2 else 'no'}")


if __name__ == "__main__":
    main()
