"""calibcourse.calibration.binning and calibcourse.calibration.kernels: the shared numerics, against plain
loops and dense sums."""

import numpy as np
import pytest

from calibcourse.calibration import binning as B
from calibcourse.calibration import kernels as K


# ------------------------------------------------------------------ binning
@pytest.mark.parametrize("n_bins", [1, 2, 3, 7, 10, 15, 49, 100, 1000, 4096])
def test_uniform_bins_are_guo_bins_even_on_the_edges(n_bins):
    edges = np.linspace(0, 1, n_bins + 1)
    rng = np.random.default_rng(n_bins)
    x = np.clip(np.concatenate([edges, np.nextafter(edges, -1), np.nextafter(edges, 2),
                                rng.uniform(size=3000), rng.uniform(size=300).astype(np.float32)]), 0, 1)
    index, got_edges = B.assign_bins(x, n_bins)
    np.testing.assert_array_equal(got_edges, edges)
    # a plain statement of ((m-1)/M, m/M], with 0 in the first bin
    expected = np.array([max(m for m in range(n_bins) if m == 0 or xi > edges[m]) for xi in x]) \
        if n_bins <= 100 else np.searchsorted(edges[1:-1], x, side="left")
    np.testing.assert_array_equal(index, expected)
    np.testing.assert_array_equal(B.bin_index(x, edges), expected)


@pytest.mark.parametrize("n_bins", [1, 15, 100])
def test_uniform_bins_of_a_long_input_go_chunk_by_chunk_alike(n_bins):
    """An input longer than the chunks that stay in the cache: every chunk, the last one short, is binned alike."""
    edges = np.linspace(0, 1, n_bins + 1)
    rng = np.random.default_rng(n_bins)
    n = 2 * B._INDEX_CHUNK + 123
    x = rng.uniform(size=n)
    x[rng.integers(0, n, 500)] = rng.choice(edges, 500)  # scores on an edge, in every chunk
    x[B._INDEX_CHUNK - 2: B._INDEX_CHUNK + 2] = [edges[-1], edges[0], edges[n_bins // 2], 1e-300]
    np.testing.assert_array_equal(B.assign_bins(x, n_bins)[0], np.searchsorted(edges[1:-1], x, side="left"))


def test_quantile_bins_are_array_split_runs():
    rng = np.random.default_rng(1)
    x = rng.uniform(size=103)
    index, edges = B.quantile_bins(x, 10)
    order = np.argsort(x, kind="stable")
    for m, run in enumerate(np.array_split(order, 10)):
        assert set(np.flatnonzero(index == m)) == set(run)
    s = np.sort(x)
    ends = np.cumsum([len(r) for r in np.array_split(s, 10)])[:-1]
    np.testing.assert_allclose(edges[1:-1], (s[ends - 1] + s[ends]) / 2)
    assert edges[0] == 0 and edges[-1] == 1
    # fewer scores than bins: the missing inner edges are 1
    np.testing.assert_allclose(B.quantile_bins(np.array([0.2, 0.4]), 4)[1], [0.0, 0.3, 1.0, 1.0, 1.0])


@pytest.mark.parametrize("strategy", B.STRATEGIES)
def test_bin_sums_of_a_matrix_are_per_column_bin_sums(strategy):
    rng = np.random.default_rng(2)
    x = rng.uniform(size=(400, 3))
    w = rng.integers(0, 2, size=(400, 3)).astype(float)
    count, (sx, sw), edges = B.bin_sums(x, x, w, n_bins=6, strategy=strategy)
    assert count.shape == (3, 6)
    for c in range(3):
        idx, e = B.assign_bins(x[:, c], 6, strategy)
        np.testing.assert_array_equal(count[c], np.bincount(idx, minlength=6))
        np.testing.assert_allclose(sx[c], [x[idx == m, c].sum() for m in range(6)], atol=1e-12)
        np.testing.assert_allclose(sw[c], [w[idx == m, c].sum() for m in range(6)], atol=1e-12)
        np.testing.assert_allclose(edges[c] if strategy == "quantile" else edges, e)


def test_binning_bad_arguments_name_the_argument():
    with pytest.raises(ValueError, match="n_bins"):
        B.assign_bins(np.array([0.5]), 0)
    with pytest.raises(ValueError, match="strategy"):
        B.bin_sums(np.array([0.5]), n_bins=3, strategy="equal")


# ------------------------------------------------------------------ kernels
def dense_sums(t, x, w, h):
    return np.exp(-((t[:, None] - x[None, :]) ** 2) / (2 * h * h)) @ w


#: Sums of n = 300 positive float64 terms in two libraries (torch's exp and matrix product against
#: numpy's): each term carries a few units of roundoff u = 2**-53 from the square, the exponential and
#: the product, and a sum of positive terms in any order is within (n - 1) u of the exact one
#: (Higham, Accuracy and Stability of Numerical Algorithms, 4.2), so the relative difference is at
#: most about (n + 4) u = 3.4e-14 whatever the thread count or the CPU's kernels. Measured:
#: 8.6e-16 for the sums, 1.2e-15 for their ratio, and torch's sums bit-identical under
#: ATEN_CPU_CAPABILITY=default, avx2 and avx512, 1, 2, 3, 4 and 8 threads, 30 differently aligned
#: inputs each (the 15,000 exponentials are below ATen's parallel grain size; each output of the
#: 50x300 @ 300x2 product is one dot product); 200 runs at random thread counts while two processes kept
#: both cores busy: no failure. So neither the thread count nor the kernels can move this test past
#: 1e-12, the tolerance of the reported failure: its cause is not in this arithmetic, and a failure now
#: prints the thread count and CPU capability it ran with.
KERNEL_SUM_RTOL = 1e-13


def test_kernel_regression_is_the_dense_formula():
    rng = np.random.default_rng(3)
    x, y, t = rng.uniform(size=300), rng.integers(0, 2, 300).astype(float), np.linspace(0, 1, 50)
    est, den = K.kernel_regression(t, x, y, 0.07)
    # a ratio of two dense sums: twice the bound of one
    np.testing.assert_allclose(est, dense_sums(t, x, y, 0.07) / dense_sums(t, x, np.ones(300), 0.07),
                               rtol=2 * KERNEL_SUM_RTOL)
    np.testing.assert_allclose(den, dense_sums(t, x, np.ones(300), 0.07), rtol=KERNEL_SUM_RTOL)
    # no data near t: NaN, not a division by zero
    est, _ = K.kernel_regression([0.0, 1.0], [0.5], [1.0], 0.01)
    assert np.isnan(est).all()


@pytest.mark.parametrize("h", [0.01, 0.05, 0.2])
def test_gaussian_smooth_on_a_grid_approximates_the_dense_sum(h):
    rng = np.random.default_rng(4)
    x = rng.beta(5, 2, size=2000)
    w = (rng.random(2000) < x).astype(float)
    grid = int(max(4096, np.ceil(40 / h)))
    (fast,) = K.gaussian_smooth(x, [w], h, grid)
    t = np.linspace(0, 1, grid)
    exact = dense_sums(t[::37], x, w, h)
    np.testing.assert_allclose(fast[::37], exact, atol=2e-4 * exact.max())


def test_linear_binning_keeps_the_mass_and_the_mean():
    rng = np.random.default_rng(5)
    x, w = rng.uniform(size=500), rng.uniform(size=500)
    (g,) = K.linear_binning(x, [w], 101)
    assert g.sum() == pytest.approx(w.sum())
    assert g @ np.linspace(0, 1, 101) == pytest.approx(w @ x)  # linear binning keeps the first moment


def test_reflected_smooth_keeps_the_mass_inside_the_interval():
    x = np.array([0.01, 0.02, 0.5, 0.97])  # (a point exactly on 0 or 1 keeps half its mass, as in relplot)
    (d,) = K.reflected_gaussian_smooth(x, [np.ones(4)], 0.1, 1001, at=np.linspace(0, 1, 1001))
    # reflection at 0 and 1: the density integrates to the number of points (up to the grid's resolution)
    assert np.trapezoid(d, dx=1 / 1000) == pytest.approx(4, rel=1e-3)
    (plain,) = K.gaussian_smooth(x, [np.ones(4)], 0.1, 1001)
    assert d[0] > plain[0] / (np.sqrt(2 * np.pi) * 0.1) / 1.01  # mass reflected back at the edge


def test_fixed_point_bandwidth_bisects_to_the_fixed_point():
    f = lambda s: 0.3 - 0.5 * s  # fixed point s = 0.2
    assert K.fixed_point_bandwidth(f, refine=30) == pytest.approx(0.2, abs=1e-8)
    assert K.fixed_point_bandwidth(lambda s: 2.0) == 1.0          # above 1 everywhere: 1
    assert K.fixed_point_bandwidth(lambda s: 0.0, eps=1e-3, refine=20) == pytest.approx(1e-3, abs=2e-6)


def test_bin_sums_of_a_long_input_match_the_whole_array_path_and_check_the_weights():
    """Past one chunk, bin sums go chunk by chunk: the same counts, the same sums to rounding, the same checks."""
    rng = np.random.default_rng(5)
    n = 3 * B._INDEX_CHUNK + 17
    x = rng.uniform(size=n)
    x[:5] = [0.0, 1.0, -np.inf, np.inf, 0.5]
    w = rng.integers(0, 2, n).astype(bool)
    count, (sx, sw), _ = B.bin_sums(x, np.clip(x, 0, 1), w[:, None], n_bins=15)  # a column of weights is raveled
    index = np.searchsorted(np.linspace(0, 1, 16)[1:-1], x, side="left")
    np.testing.assert_array_equal(count, np.bincount(index, minlength=15))
    np.testing.assert_allclose(sx, np.bincount(index, weights=np.clip(x, 0, 1), minlength=15), rtol=1e-12)
    np.testing.assert_array_equal(sw, np.bincount(index, weights=w, minlength=15))
    for m in (5, n):  # short and long inputs name the weight that does not fit
        with pytest.raises(ValueError, match=r"weights\[1\] must have one value per score"):
            B.bin_sums(x[:m], x[:m], x[: m - 1], n_bins=15)
