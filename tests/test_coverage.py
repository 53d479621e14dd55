"""calibcourse.study.analysis.coverage's known-truth predictor: its calibration errors against closed forms and
scipy quadrature, binning's under-estimate (Kumar et al. 2019), and the finite-sample ECE's
over-estimate against de Moivre's mean absolute deviation of a binomial."""
import numpy as np
import pytest
from scipy import integrate, special

from calibcourse.calibration import metrics
from calibcourse.study.analysis.coverage import SineMiscalibration, expected_ece


def quad_ce(sm, lo, hi, norm):
    g = lambda s: sm.frequency(s) - s  # noqa: E731
    f = (lambda s: abs(g(s))) if norm == "l1" else (lambda s: g(s) ** 2)
    cuts = np.unique(np.r_[lo, np.arange(lo, hi, sm.period / 2), hi])  # the gap's zeros: one sign per piece
    val = sum(integrate.quad(f, a, b)[0] for a, b in zip(cuts[:-1], cuts[1:], strict=True)) / (sm.high - sm.low)
    return val if norm == "l1" else np.sqrt(val)


def test_true_ece_closed_forms_over_whole_periods():
    sm = SineMiscalibration(amplitude=0.1, period=0.1, low=0.2, high=0.8)
    assert sm.true_ece() == pytest.approx(2 * 0.1 / np.pi, rel=1e-12)
    assert sm.true_ece("l2") == pytest.approx(0.1 / np.sqrt(2), rel=1e-12)


@pytest.mark.parametrize("amplitude, period, low, high", [(0.1, 0.13, 0.2, 0.8), (0.05, 0.37, 0.1, 0.9),
                                                         (0.15, 1.7, 0.3, 0.6), (0.02, 0.011, 0.05, 0.95)])
@pytest.mark.parametrize("norm", ["l1", "l2"])
def test_true_ece_against_quadrature(amplitude, period, low, high, norm):
    sm = SineMiscalibration(amplitude, period, low, high)
    assert sm.true_ece(norm) == pytest.approx(quad_ce(sm, low, high, norm), rel=1e-7, abs=1e-12)


@pytest.mark.parametrize("n_bins", [1, 3, 7, 15, 50])
@pytest.mark.parametrize("norm", ["l1", "l2"])
def test_true_binned_ece_against_quadrature(n_bins, norm):
    sm = SineMiscalibration(amplitude=0.1, period=0.13, low=0.2, high=0.8)
    edges = np.linspace(0, 1, n_bins + 1)
    terms = []
    for a, b in zip(edges[:-1], edges[1:], strict=True):
        a, b = max(a, sm.low), min(b, sm.high)
        if b <= a:
            continue
        mass = (b - a) / (sm.high - sm.low)
        mean_gap = integrate.quad(lambda s: sm.frequency(s) - s, a, b)[0] / (b - a)
        terms.append((mass, mean_gap))
    want = (sum(m * abs(g) for m, g in terms) if norm == "l1" else np.sqrt(sum(m * g**2 for m, g in terms)))
    assert sm.true_binned_ece(n_bins, norm) == pytest.approx(want, rel=1e-8, abs=1e-13)


def test_binning_never_over_estimates_and_can_hide_everything():
    rng = np.random.default_rng(0)
    for _ in range(30):
        low = rng.uniform(0.1, 0.4)
        sm = SineMiscalibration(rng.uniform(0, 0.09), rng.uniform(0.01, 0.5), low, rng.uniform(low + 0.1, 0.9))
        for m in (1, 5, 15, 50):
            for norm in ("l1", "l2"):
                assert sm.true_binned_ece(m, norm) <= sm.true_ece(norm) + 1e-12
    sm = SineMiscalibration(amplitude=0.1, period=0.1)
    assert sm.true_binned_ece(5) == pytest.approx(0, abs=1e-12) and sm.true_ece() > 0.06  # whole periods per bin
    assert sm.true_binned_ece(20) == pytest.approx(sm.true_ece(), rel=1e-9)  # bins of one sign: no loss


def test_large_sample_ece_tends_to_the_binned_truth():
    sm = SineMiscalibration(amplitude=0.1, period=0.1)
    s, y = sm.sample(400_000, rng=3)
    assert np.all((s >= 0.2) & (s <= 0.8))
    for m in (5, 15, 50):  # finite-sample bias about sqrt(M / n) / 4 at most here
        assert metrics.ece(s, y, n_bins=m, reliability="positive_class") == pytest.approx(sm.true_binned_ece(m),
                                                                                         abs=0.004)


@pytest.mark.parametrize("n, p", [(20, 0.7), (50, 0.33)])
def test_expected_ece_of_a_calibrated_constant_predictor_is_de_moivres_deviation(n, p):
    # one bin holds every sample: E ECE = E|X/n - p|, X ~ Bin(n, p); de Moivre:
    # E|X - np| = 2 k C(n, k) p^k (1 - p)^(n - k + 1), k = floor(np) + 1
    k = int(np.floor(n * p)) + 1
    want = 2 * k * special.comb(n, k) * p**k * (1 - p) ** (n - k + 1) / n
    reps = 4000

    def sample(m, rng):
        return np.full(m, p), (rng.random(m) < p).astype(int)

    got = expected_ece(sample, n, n_bins=15, reps=reps, seed=1)
    se = np.sqrt(p * (1 - p) / n) / np.sqrt(reps)  # sd of |X/n - p| is below that of X/n
    assert got == pytest.approx(want, abs=4 * se)
    assert want > 0.05  # an unbiased estimator of a true error of 0 would give 0


def test_expected_ece_over_estimates_zero_and_grows_with_bins():
    calibrated = SineMiscalibration(amplitude=0.0)
    assert calibrated.true_ece() == 0.0 and calibrated.true_binned_ece(15) == 0.0
    e5, e50 = (expected_ece(calibrated.sample, 300, n_bins=m, reps=100) for m in (5, 50))
    assert 0 < e5 < e50


@pytest.mark.parametrize("kwargs, name", [({"amplitude": 0.25}, "amplitude"), ({"amplitude": -0.1}, "amplitude"),
                                          ({"period": 0}, "period"), ({"low": 0.8, "high": 0.2}, "low")])
def test_bad_parameters_name_the_argument(kwargs, name):
    with pytest.raises(ValueError, match=name):
        SineMiscalibration(**kwargs)


def test_bad_arguments_name_the_argument():
    sm = SineMiscalibration()
    with pytest.raises(ValueError, match="norm"):
        sm.true_ece("max")
    with pytest.raises(ValueError, match="n_bins"):
        sm.true_binned_ece(0)
    with pytest.raises(ValueError, match="reps"):
        expected_ece(sm.sample, 10, reps=0)
    with pytest.raises(ValueError, match="n must"):
        sm.sample(0)
