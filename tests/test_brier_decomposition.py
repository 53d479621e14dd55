"""metrics.brier_decomposition: Murphy's identity where it is exact, its terms against their
definitions computed sample by sample, and bad input named."""
import numpy as np
import pytest

from calibcourse.calibration import metrics


def discrete_forecasts(n, k, seed):
    """Rows drawn from 3 fixed probability vectors whose entries are bin centres of 10 bins,
    so that every bin of every class holds one forecast value (Murphy's identity is exact)."""
    rng = np.random.default_rng(seed)
    rows = np.array([[0.05, 0.15, 0.25, 0.55], [0.65, 0.15, 0.15, 0.05], [0.25, 0.25, 0.45, 0.05]])[:, :k]
    rows = rows / rows.sum(1, keepdims=True) if k < 4 else rows
    probs = rows[rng.integers(0, 3, n)]
    labels = np.array([rng.choice(k, p=r) for r in probs])
    return probs, labels


def test_identity_is_exact_for_forecasts_with_one_value_per_bin():
    probs, labels = discrete_forecasts(2000, 4, 0)
    d = metrics.brier_decomposition(probs, labels, n_bins=10)
    assert d.reliability - d.resolution + d.uncertainty == pytest.approx(metrics.brier(probs, labels), abs=1e-12)


def test_terms_against_their_definitions():
    # group by the distinct forecast values, class by class, without the package's binning
    probs, labels = discrete_forecasts(1500, 4, 1)
    n, k = probs.shape
    onehot = np.eye(k)[labels]
    rel = res = 0.0
    for c in range(k):
        base = onehot[:, c].mean()
        for v in np.unique(probs[:, c]):
            sel = probs[:, c] == v
            freq = onehot[sel, c].mean()
            rel += sel.sum() / n * (v - freq) ** 2
            res += sel.sum() / n * (freq - base) ** 2
    unc = sum(onehot[:, c].mean() * (1 - onehot[:, c].mean()) for c in range(k))
    d = metrics.brier_decomposition(probs, labels, n_bins=10)
    assert d == pytest.approx((rel, res, unc), abs=1e-12)


def test_binary_input_matches_sklearns_single_column_brier():
    from sklearn.metrics import brier_score_loss

    rng = np.random.default_rng(2)
    p = rng.choice([0.05, 0.35, 0.75, 0.95], 3000)
    y = (rng.random(3000) < p).astype(int)
    d = metrics.brier_decomposition(p, y, n_bins=10)
    assert d.reliability - d.resolution + d.uncertainty == pytest.approx(brier_score_loss(y, p), abs=1e-12)
    assert d.uncertainty == pytest.approx(y.mean() * (1 - y.mean()))
    assert d.reliability < 0.002  # calibrated by construction: only sampling noise


def test_continuous_forecasts_close_but_not_exact_and_overconfidence_shows_in_reliability():
    rng = np.random.default_rng(3)
    z = rng.normal(size=(4000, 5)) * 2
    labels = np.array([rng.choice(5, p=r) for r in metrics.softmax(z)])
    calibrated, overconfident = metrics.softmax(z), metrics.softmax(3 * z)
    for p in (calibrated, overconfident):
        d = metrics.brier_decomposition(p, labels, n_bins=15)
        assert d.reliability - d.resolution + d.uncertainty == pytest.approx(metrics.brier(p, labels), abs=0.01)
    assert (metrics.brier_decomposition(overconfident, labels).reliability
            > 5 * metrics.brier_decomposition(calibrated, labels).reliability)


def test_bad_input_is_named():
    with pytest.raises(ValueError, match="labels"):
        metrics.brier_decomposition(np.array([[0.5, 0.5]]), np.array([3]))
    with pytest.raises(ValueError, match="n_bins"):
        metrics.brier_decomposition(np.array([[0.5, 0.5]]), np.array([1]), n_bins=0)
