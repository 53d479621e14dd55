"""calibcourse.calibration.plots: each function draws what it says and returns its figure."""
import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np
import pytest
from conftest import make_predictions

from calibcourse.calibration import metrics as M
from calibcourse.calibration import plots


def test_reliability_diagram_bars_are_bin_accuracies():
    p, y = make_predictions(2000, 10, 0)
    fig = plots.reliability_diagram(p, y, n_bins=10)
    ax_rel, ax_hist = fig.axes[:2]
    rb = M.reliability_bins(p, y, n_bins=10)
    heights = [r.get_height() for r in ax_rel.containers[0]]
    np.testing.assert_allclose(heights, np.nan_to_num(rb.accuracy))
    label = ax_hist.get_xlabel()   # the numbers sit under the axis, over no bar
    assert f"ECE {100 * M.ece(p, y, n_bins=10):.2f} %" in label
    assert f"MCE {100 * M.mce(p, y, n_bins=10):.2f} %" in label
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
    diagrams = [a for a in fig.axes if a.get_title() in ("a", "b", "c")]
    assert len(diagrams) == 3 and all(a.get_legend() is None for a in diagrams)
    assert all(a.get_legend() is None for a in fig.axes)   # no legend over any panel's bars ...
    assert len(fig.legends) == 1                            # ... but one for the figure, under them
    fig.canvas.draw()
    legend_box = fig.legends[0].get_window_extent()
    assert all(legend_box.y1 <= a.get_window_extent().y0 for a in fig.axes)
    # the highlighted panel is framed all round: one red box holds its diagram and histogram, no other's
    from matplotlib.patches import Rectangle
    boxes = [a for a in fig.artists if isinstance(a, Rectangle)]
    from matplotlib.colors import to_rgba
    assert len(boxes) == 1 and boxes[0].get_edgecolor() == to_rgba("#d62728")   # the gap's red
    frame = boxes[0].get_window_extent()
    inside = [a for a in fig.axes if frame.contains(*a.get_window_extent().min) and
              frame.contains(*a.get_window_extent().max)]
    assert len(inside) == 2 and any(a.get_title() == "b" for a in inside)
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
    np.testing.assert_allclose(line.get_ydata(), [100 * M.ece(p, y, n_bins=b) for b in (10, 100, 1000)])
    assert fig.axes[0].get_ylabel() == "ECE (%)"
    plt.close(fig)
    hist = {"epoch": [1, 2, 3, 4], "test_error": [0.3, 0.2, 0.15, 0.14], "test_nll": [0.9, 0.6, 0.7, 0.8]}
    fig = plots.training_curves(hist)
    assert any("epoch 2" in t.get_text() for t in fig.axes[1].get_legend().get_texts())
    plt.close(fig)


def test_calibration_maps_draw_each_calibrators_predictions_and_the_bin_frequencies():
    """The curves are the fitted maps themselves: predict_proba on the plotted grid, for every method."""
    from scipy.special import expit

    from calibcourse.calibration import calibrators as C

    rng = np.random.default_rng(0)
    p = expit(rng.normal(0, 3, 3000))
    y = (rng.random(3000) < p**1.5).astype(int)
    fitted = {name: c.fit(p, y) for name, c in (("histogram binning", C.HistogramBinning(n_bins=10)),
                                               ("isotonic", C.IsotonicCalibration()), ("BBQ", C.BBQ()),
                                               ("Platt", C.PlattScaling()))}
    for n_bins in (10, 15):
        fig = plots.calibration_maps(fitted, p, y, n_bins=n_bins)
        ax = fig.axes[0]
        lines = {ln.get_label(): ln for ln in ax.lines}
        for name, c in fitted.items():
            x = lines[name].get_xdata()
            assert x.min() < 0.01 and x.max() > 0.99 and len(x) > 1000
            np.testing.assert_allclose(lines[name].get_ydata(), c.predict_proba(x)[:, 1])
        # the dots: fraction of positives per equal-width bin at the bin's mean score, with counts
        rb = M.reliability_bins(p, y, n_bins=n_bins, reliability="positive_class")
        dots = ax.containers[0].lines[0]
        full = rb.count > 0
        np.testing.assert_allclose(dots.get_xdata(), rb.confidence[full])
        np.testing.assert_allclose(dots.get_ydata(), rb.accuracy[full])
        assert sorted(int(t.get_text()) for t in ax.texts) == sorted(rb.count[full].astype(int))
        plt.close(fig)
    # histogram binning's curve is the step function of its bins, closed on the right
    hb = fitted["histogram binning"]
    edge = hb.bin_edges_[3]
    np.testing.assert_allclose(hb.predict_proba(np.array([edge, edge + 1e-9]))[:, 1], hb.bin_values_[[2, 3]])
    with pytest.raises(ValueError, match="calibrators is empty"):
        plots.calibration_maps({}, p, y)
    with pytest.raises(ValueError, match="scores must be P"):
        plots.calibration_maps(fitted, np.c_[1 - p, p], y)


def _text_sizes(fig):
    fig.canvas.draw()
    return [t.get_fontsize() for t in fig.findobj(matplotlib.text.Text) if t.get_text().strip()]


def test_every_text_is_at_least_the_minimum_size():
    p, y = make_predictions(500, 3, 0)
    figs = [plots.reliability_grid({"a": (p, y), "b": (p, y)}),
            plots.training_curves({"epoch": [1, 2, 3], "test_error": [0.3, 0.2, 0.2], "test_nll": [0.9, 0.7, 0.8]}),
            plots.ece_vs_bins({"m": (p, y)}, bins=(5, 15))]
    for fig in figs:
        assert min(_text_sizes(fig)) >= plots.SMALL_FONT >= 9
        plt.close(fig)


def test_twin_axis_curves_have_one_legend_outside_the_axes():
    fig = plots.training_curves({"epoch": [1, 2, 3], "test_error": [0.3, 0.2, 0.2], "test_nll": [0.9, 0.7, 0.8]})
    legends = [a.get_legend() for a in fig.axes if a.get_legend() is not None]
    assert len(legends) == 1
    assert [t.get_text() for t in legends[0].get_texts()] == ["test error", "test NLL", "NLL minimum (epoch 2)"]
    fig.canvas.draw()
    box = legends[0].get_window_extent()
    assert box.y1 <= fig.axes[0].get_window_extent().y0   # under the axes, over no curve
    plt.close(fig)
