"""calibcourse.plots: each function draws what it says and returns its figure."""
import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np
import pytest
from conftest import make_predictions

from calibcourse import metrics as M
from calibcourse import plots


def test_reliability_diagram_bars_are_bin_accuracies():
    p, y = make_predictions(2000, 10, 0)
    fig = plots.reliability_diagram(p, y, n_bins=10)
    ax_rel, ax_hist = fig.axes[:2]
    rb = M.reliability_bins(p, y, n_bins=10)
    heights = [r.get_height() for r in ax_rel.containers[0]]
    np.testing.assert_allclose(heights, np.nan_to_num(rb.accuracy))
    texts = " ".join(t.get_text() for t in ax_rel.texts)
    assert f"{100 * M.ece(p, y, n_bins=10):.2f}%" in texts
    np.testing.assert_allclose([r.get_height() for r in ax_hist.containers[0]], rb.count / rb.count.sum())
    plt.close(fig)


def test_reliability_diagram_into_given_axes_and_grid():
    p, y = make_predictions(500, 3, 0)
    fig, ax = plt.subplots()
    assert plots.reliability_diagram(p, y, ax=ax) is fig
    plt.close(fig)
    fig = plots.reliability_grid({"a": (p, y), "b": (p, y), "c": (p, y)}, ncols=2, highlight="b")
    assert len(fig.axes) == 6
    assert {a.get_title() for a in fig.axes} >= {"a", "b", "c"}
    plt.close(fig)
    with pytest.raises(ValueError, match="panels is empty"):
        plots.reliability_grid({})


def test_reliability_diagram_rejects_bad_input():
    with pytest.raises(ValueError, match="probs contains NaN"):
        plots.reliability_diagram(np.array([[np.nan, 1.0]]), np.array([0]))


def test_smooth_reliability_ece_vs_bins_training_curves():
    p, y = make_predictions(800, 4, 1)
    fig = plots.smooth_reliability_diagram(p, y, n_boot=10)
    assert "SECE" in " ".join(t.get_text() for t in fig.axes[0].texts)
    plt.close(fig)
    fig = plots.ece_vs_bins({"m": (p, y)}, bins=(10, 100, 1000))
    line = fig.axes[0].lines[0]
    np.testing.assert_allclose(line.get_ydata(), [M.ece(p, y, n_bins=b) for b in (10, 100, 1000)])
    plt.close(fig)
    hist = {"epoch": [1, 2, 3, 4], "test_error": [0.3, 0.2, 0.15, 0.14], "test_nll": [0.9, 0.6, 0.7, 0.8]}
    fig = plots.training_curves(hist)
    assert any("epoch 2" in t.get_text() for t in fig.axes[1].get_legend().get_texts())
    plt.close(fig)
