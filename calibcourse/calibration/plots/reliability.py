"""Reliability diagrams: binned (one model, a grid of models) and smoothed, with their bands."""
from __future__ import annotations

import warnings

import numpy as np

from calibcourse.calibration import metrics as M
from calibcourse.calibration import stats
from calibcourse.calibration.kernels import kernel_regression
from calibcourse.calibration.plots._common import ACC_COLOR, GAP_COLOR, SMALL_FONT, _checked, _plt

__all__ = ["reliability_diagram", "reliability_grid", "smooth_reliability_diagram"]


def reliability_diagram(probs, labels, n_bins: int = 15, ax=None, title: str | None = None,
                        show_histogram: bool = True, strategy: str = "uniform", legend: bool = True):
    """Guo-style reliability diagram of top-label confidences.

    A binary input of shape ``(n,)`` is drawn top-label too, as ``[1 - p, p]``
    (:func:`calibration_maps` draws P(y = 1)).

    Top: bars of acc(B_m) per bin (:func:`calibcourse.calibration.metrics.reliability_bins`),
    the gap to conf(B_m) shaded red, the diagonal of perfect calibration. Bottom (when
    ``show_histogram``): the histogram of confidences with the mean confidence and the
    accuracy marked. The numbers (ECE and MCE, plug-in, and the mean confidence and
    accuracy) are written under the horizontal axis and the legend beside the diagram, so
    that nothing covers the bars.

    Parameters
    ----------
    probs : array_like of shape (n, K) or (n,)
        Probabilities: a row per sample that sums to 1, or P(y = 1) of a binary problem.
    labels : array_like of shape (n,)
        Integer class labels.
    n_bins : int, default=15
        Number of bins.
    ax : matplotlib Axes or pair of Axes, optional
        ``None`` (a new figure), one Axes (the diagram only) or a pair ``(ax_diagram, ax_histogram)``.
    title : str, optional
        Title of the figure.
    show_histogram : bool, default=True
        Draw the histogram below (only when ``ax`` is None).
    strategy : {"uniform", "quantile"}, default="uniform"
        Equal-width Guo bins or equal-mass bins (:mod:`calibcourse.calibration.binning`).
    legend : bool, default=True
        Draw the legend, right of the diagram, outside the data (a grid draws one legend for all its panels,
        under them).

    Returns
    -------
    matplotlib.figure.Figure
        The figure drawn on.

    Examples
    --------
    >>> probs = np.array([[0.9, 0.1], [0.8, 0.2], [0.3, 0.7], [0.4, 0.6]])
    >>> fig = reliability_diagram(probs, np.array([0, 1, 1, 1]), n_bins=5)
    >>> fig.axes[1].get_xlabel().splitlines()
    ['confidence', 'ECE 25.00 %, MCE 40.00 %', 'mean conf. 75.0 %, acc. 75.0 %']
    """
    plt = _plt()
    probs, y, conf, pred = _checked(probs, labels)
    rb = M.reliability_bins(probs, y, n_bins=n_bins, strategy=strategy, reliability="top_label")
    if ax is None:
        if show_histogram:
            fig, (ax_rel, ax_hist) = plt.subplots(2, 1, figsize=(4.2, 5.6), sharex=True,
                                                  gridspec_kw={"height_ratios": [3, 1.2]})
        else:
            fig, ax_rel = plt.subplots(figsize=(4.2, 4.2))
            ax_hist = None
    elif isinstance(ax, (tuple, list, np.ndarray)):
        ax_rel, ax_hist = ax
        fig = ax_rel.figure
    else:
        ax_rel, ax_hist = ax, None
        fig = ax.figure
    left = rb.edges[:-1]
    width = np.diff(rb.edges)
    nonempty = rb.count > 0
    acc = np.where(nonempty, rb.accuracy, 0.0)
    ax_rel.bar(left, acc, width=width, align="edge", color=ACC_COLOR, edgecolor="black",
               linewidth=0.6, label="accuracy")
    gap_lo = np.where(nonempty, np.minimum(rb.accuracy, rb.confidence), 0.0)
    gap_h = np.where(nonempty, np.abs(rb.gap), 0.0)
    ax_rel.bar(left, gap_h, bottom=gap_lo, width=width, align="edge", color=GAP_COLOR,
               alpha=0.35, edgecolor=GAP_COLOR, hatch="//", linewidth=0.6, label="gap")
    ax_rel.plot([0, 1], [0, 1], "--", color="gray", label="perfect calibration")
    e = M.ece(probs, y, n_bins=n_bins, strategy=strategy, reliability="top_label")
    m = M.mce(probs, y, n_bins=n_bins, strategy=strategy, reliability="top_label")
    mean_conf, acc_all = conf.mean(), np.mean(pred == y)
    summary = (f"confidence\nECE {100 * e:.2f} %, MCE {100 * m:.2f} %\n"
               f"mean conf. {100 * mean_conf:.1f} %, acc. {100 * acc_all:.1f} %")
    ax_rel.set_xlim(0, 1)
    ax_rel.set_ylim(0, 1)
    ax_rel.set_ylabel("accuracy")
    if title:
        ax_rel.set_title(title)
    if ax_hist is not None:
        frac = rb.count / rb.count.sum()
        ax_hist.bar(left, frac, width=width, align="edge", color="gray", edgecolor="black",
                    linewidth=0.6)
        ax_hist.axvline(mean_conf, color=GAP_COLOR, ls="--", label="mean confidence")
        ax_hist.axvline(acc_all, color=ACC_COLOR, ls="-", label="accuracy (all samples)")
        ax_hist.set_xlim(0, 1)
        ax_hist.set_ylabel("fraction")
        ax_hist.set_xlabel(summary, fontsize=SMALL_FONT)
    else:
        ax_rel.set_xlabel(summary, fontsize=SMALL_FONT)
    if legend:
        handles = _legend_handles(ax_rel, ax_hist)
        ax_rel.legend(handles, [h.get_label() for h in handles], loc="upper left",
                      bbox_to_anchor=(1.03, 1.0), fontsize=SMALL_FONT, frameon=False)
    return fig


def _legend_handles(ax_rel, ax_hist=None):
    """The artists of one diagram that a legend names: bars, gap, diagonal, the histogram's lines."""
    handles = ax_rel.get_legend_handles_labels()[0]
    if ax_hist is not None:
        handles += ax_hist.get_legend_handles_labels()[0]
    return handles


def reliability_grid(panels: dict, n_bins: int = 15, ncols: int | None = None,
                     show_histogram: bool = True, highlight: str | None = None,
                     panel_size: float = 3.3):
    """Side-by-side reliability diagrams, one per entry of ``panels``.

    Parameters
    ----------
    panels : dict
        ``{title: (probs, labels)}``, one diagram each, in order.
    n_bins : int, default=15
        Number of bins.
    ncols : int, optional
        Diagrams per row (default: up to 4).
    show_histogram : bool, default=True
        A histogram of confidences under each diagram.
    highlight : str, optional
        The title of a panel to frame in red (e.g. the best temperature).
    panel_size : float, default=3.3
        Width of a panel in inches.

    Returns
    -------
    matplotlib.figure.Figure
        The figure.

    Examples
    --------
    >>> probs = np.array([[0.9, 0.1], [0.8, 0.2], [0.3, 0.7], [0.4, 0.6]])
    >>> fig = reliability_grid({"a": (probs, [0, 1, 1, 1]), "b": (probs, [0, 0, 1, 1])}, highlight="b")
    >>> [ax.get_title() for ax in fig.axes if ax.get_title()]
    ['a', 'b']
    """
    plt = _plt()
    if not panels:
        raise ValueError("panels is empty: give at least one {title: (probs, labels)}")
    n = len(panels)
    ncols = ncols or min(n, 4)
    nrows = int(np.ceil(n / ncols))
    fig = plt.figure(figsize=(panel_size * ncols, panel_size * nrows * (1.45 if show_histogram else 1.1) + 0.6))
    # one cell per panel, well apart (titles and axis labels never reach a neighbour); inside a cell the
    # histogram sits close under its diagram, which gives up its tick labels to it
    height = fig.get_figheight()
    room = 1.3 / height  # inches for the last row's labels and the one legend, under every panel
    outer = fig.add_gridspec(nrows, ncols, hspace=0.6, wspace=0.42, bottom=room)
    first = None
    for i, (name, (p, y)) in enumerate(panels.items()):
        r, c = divmod(i, ncols)
        if show_histogram:
            inner = outer[r, c].subgridspec(2, 1, height_ratios=[3, 1.1], hspace=0.1)
            ax_rel = fig.add_subplot(inner[0])
            axes = (ax_rel, fig.add_subplot(inner[1], sharex=ax_rel))
            ax_rel.tick_params(labelbottom=False)
        else:
            ax_rel = axes = fig.add_subplot(outer[r, c])
        reliability_diagram(p, y, n_bins=n_bins, ax=axes, title=str(name), legend=False)
        first = first or axes
        if highlight is not None and str(name) == str(highlight):
            framed = axes if isinstance(axes, tuple) else (axes,)
    handles = _legend_handles(*first) if isinstance(first, tuple) else _legend_handles(first)
    fig.legend(handles, [h.get_label() for h in handles], loc="lower center", ncol=min(len(handles), 3),
               fontsize=SMALL_FONT, frameon=False)
    if highlight is not None and any(str(name) == str(highlight) for name in panels):
        _frame(fig, framed)
    return fig


def _frame(fig, axes) -> None:
    """A red box around a panel: its axes with their titles, tick labels and the text under them."""
    from matplotlib.patches import Rectangle
    from matplotlib.transforms import Bbox

    renderer = fig.canvas.get_renderer()
    box = Bbox.union([ax.get_tightbbox(renderer) for ax in axes]).transformed(fig.transFigure.inverted())
    pad = 0.008
    fig.add_artist(Rectangle((box.x0 - pad, box.y0 - pad), box.width + 2 * pad, box.height + 2 * pad,
                             transform=fig.transFigure, fill=False, edgecolor=GAP_COLOR, linewidth=2.5,
                             clip_on=False))


def smooth_reliability_diagram(probs, labels, bandwidth: float = 0.05, n_boot: int = 100,
                               level: float = 0.95, seed: int = 0, ax=None, title: str | None = None,
                               grid: int = 200):
    """Kernel-smoothed reliability curve with a bootstrap band.

    The curve is the Nadaraya-Watson estimate of P(correct | confidence = t)
    with a Gaussian kernel (:func:`calibcourse.calibration.kernels.kernel_regression`, the
    SACC of :func:`calibcourse.calibration.metrics.sece`); the band is the pointwise
    ``level`` percentile interval over ``n_boot`` resamples.

    Parameters
    ----------
    probs : array_like of shape (n, K) or (n,)
        Probabilities: a row per sample that sums to 1, or P(y = 1) of a binary problem.
    labels : array_like of shape (n,)
        Integer class labels.
    bandwidth : float, default=0.05
        The kernel bandwidth.
    n_boot : int, default=100
        Bootstrap resamples of the band.
    level : float, default=0.95
        Coverage of the band.
    seed : int, default=0
        Seed of the resampling.
    ax : matplotlib Axes, optional
        Where to draw (default: a new figure).
    title : str, optional
        Title of the figure.
    grid : int, default=200
        Points of [0, 1] where the curve is evaluated.

    Returns
    -------
    matplotlib.figure.Figure
        The figure drawn on.

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> p = rng.uniform(0.5, 1, 300)
    >>> fig = smooth_reliability_diagram(p, (rng.random(300) < p).astype(int), n_boot=10)
    >>> fig.axes[0].get_xlabel()
    'confidence'
    """
    plt = _plt()
    p, y, conf, pred = _checked(probs, labels)
    correct = (pred == y).astype(float)
    t = np.linspace(0, 1, grid)
    est, den = kernel_regression(t, conf, correct, bandwidth)
    boots = [kernel_regression(t, conf[i], correct[i], bandwidth)[0]  # the resamples of stats
             for i in stats.resample_indices(conf.shape[0], n_boot, seed)]
    with warnings.catch_warnings():  # no data near t in any resample: NaN, outside the support drawn
        warnings.simplefilter("ignore", RuntimeWarning)
        lo, hi = np.nanquantile(np.array(boots), [(1 - level) / 2, (1 + level) / 2], axis=0)
    if ax is None:
        fig, ax = plt.subplots(figsize=(4.2, 4.2))
    else:
        fig = ax.figure
    support = den / den.max() > 1e-3
    ax.fill_between(t[support], lo[support], hi[support], color=ACC_COLOR, alpha=0.25,
                    label=f"{int(level * 100)}% bootstrap band")
    ax.plot(t[support], est[support], color=ACC_COLOR, lw=2, label="smoothed accuracy")
    ax.plot([0, 1], [0, 1], "--", color="gray", label="perfect calibration")
    s = M.sece(p, y, bandwidth=bandwidth, reliability="top_label")
    ax.text(0.04, 0.96, f"SECE = {100 * s:.2f}%", transform=ax.transAxes, va="top", fontsize=9,
            bbox={"boxstyle": "round", "facecolor": "white", "alpha": 0.85})
    ax.set_xlim(0, 1)
    ax.set_ylim(0, 1)
    ax.set_xlabel("confidence")
    ax.set_ylabel("accuracy")
    ax.legend(loc="lower right", fontsize=SMALL_FONT)
    if title:
        ax.set_title(title)
    return fig
