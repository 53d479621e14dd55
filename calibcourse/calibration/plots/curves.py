"""The other figures: ECE against the number of bins, training curves, a sweep, calibration maps,
the bilevel loop's diagram."""
from __future__ import annotations

import numpy as np

from calibcourse.calibration import metrics as M
from calibcourse.calibration._validation import check_labels, check_probs
from calibcourse.calibration.plots._common import ACC_COLOR, GAP_COLOR, SMALL_FONT, _plt

__all__ = ["ece_vs_bins", "training_curves", "sweep_plot", "MAP_GRID", "calibration_maps", "bilevel_diagram"]


def ece_vs_bins(models: dict, bins=(10, 15, 20, 50, 100, 200, 500, 1000), strategy: str = "uniform",
                axes=None):
    """Top-label ECE (left) and MCE (right), in percent, against the number of bins (the robustness
    figure of Wang et al. 2023).

    Parameters
    ----------
    models : dict
        ``{name: (probs, labels)}``, one line each.
    bins : sequence of int, default=(10, 15, 20, 50, 100, 200, 500, 1000)
        The numbers of bins.
    strategy : {"uniform", "quantile"}, default="uniform"
        Equal-width Guo bins or equal-mass bins (:mod:`calibcourse.calibration.binning`).
    axes : pair of matplotlib Axes, optional
        Where to draw (default: a new figure).

    Returns
    -------
    matplotlib.figure.Figure
        The figure.

    Examples
    --------
    >>> probs = np.array([[0.9, 0.1], [0.8, 0.2], [0.3, 0.7], [0.4, 0.6]])
    >>> fig = ece_vs_bins({"model": (probs, np.array([0, 1, 1, 1]))}, bins=(1, 5))
    >>> fig.axes[0].lines[0].get_ydata().round(3)  # one bin: mean confidence = accuracy = 0.75
    array([ 0., 25.])
    """
    plt = _plt()
    created = axes is None
    if created:
        fig, axes = plt.subplots(1, 2, figsize=(7.2, 3.6))
    fig = axes[0].figure
    for name, (p, y) in models.items():
        e = [100 * M.ece(p, y, n_bins=b, strategy=strategy, reliability="top_label") for b in bins]
        m = [100 * M.mce(p, y, n_bins=b, strategy=strategy, reliability="top_label") for b in bins]
        axes[0].plot(bins, e, marker="o", label=str(name))
        axes[1].plot(bins, m, marker="o", label=str(name))
    for a, what in zip(axes, ("ECE", "MCE"), strict=True):
        a.set_xscale("log")
        a.set_xlabel("number of bins")
        a.set_ylabel(f"{what} (%)")
        a.grid(alpha=0.3)
    handles, labels = axes[0].get_legend_handles_labels()
    if created:   # one legend, under both panels
        fig.legend(handles, labels, loc="lower center", ncol=min(len(handles), 3), fontsize=SMALL_FONT,
                   frameon=False)
        fig.tight_layout(rect=(0, 0.06 + 0.06 * int(np.ceil(len(handles) / 3)), 1, 1))
    else:         # beside the second panel
        axes[1].legend(handles, labels, loc="upper left", bbox_to_anchor=(1.02, 1), fontsize=SMALL_FONT,
                       frameon=False)
    return fig


def training_curves(history, x: str = "epoch", error: str = "test_error", nll: str = "test_nll",
                    ax=None, mark_nll_minimum: bool = True, title: str | None = None):
    """Test error in percent (left axis) and test NLL in nats (right axis) per epoch, Guo et al. Fig. 3.

    Parameters
    ----------
    history : pandas.DataFrame or dict
        Equal-length sequences, e.g. ``RunResult.history``.
    x : str, default="epoch"
        The column of the horizontal axis.
    error : str, default="test_error"
        The column drawn on the left axis.
    nll : str, default="test_nll"
        The column drawn on the right axis.
    ax : matplotlib Axes, optional
        Where to draw (default: a new figure).
    mark_nll_minimum : bool, default=True
        Mark the epoch of minimal NLL.
    title : str, optional
        Title of the figure.

    Returns
    -------
    matplotlib.figure.Figure
        The figure.

    Examples
    --------
    >>> fig = training_curves({"epoch": [1, 2, 3], "test_error": [0.3, 0.2, 0.2], "test_nll": [0.9, 0.7, 0.8]})
    >>> fig.axes[1].get_legend().get_texts()[-1].get_text()
    'NLL minimum (epoch 2)'
    """
    plt = _plt()
    h = {k: np.asarray(history[k]) for k in (x, error, nll)}
    if ax is None:
        fig, ax = plt.subplots(figsize=(6, 3.6))
    else:
        fig = ax.figure
    ax.plot(h[x], 100 * h[error], color=ACC_COLOR, label="test error")
    ax.set_xlabel(x)
    ax.set_ylabel("test error (%)", color=ACC_COLOR)
    ax2 = ax.twinx()
    ax2.plot(h[x], h[nll], color=GAP_COLOR, label="test NLL")
    ax2.set_ylabel("test NLL (nats)", color=GAP_COLOR)
    if mark_nll_minimum:
        i = int(np.argmin(h[nll]))
        ax2.axvline(h[x][i], color="gray", ls=":", label=f"NLL minimum ({x} {h[x][i]})")
    # one legend for both axes, under the plot: it covers no curve
    handles = ax.get_legend_handles_labels()[0] + ax2.get_legend_handles_labels()[0]
    ax2.legend(handles, [hd.get_label() for hd in handles], loc="upper center", bbox_to_anchor=(0.5, -0.2),
               ncol=len(handles), fontsize=SMALL_FONT, frameon=False)
    if title:
        ax.set_title(title)
    return fig


def sweep_plot(table, xlabel: str, columns=("error", "ece", "temperature"), logx: bool = False,
               titles=None, axes=None, categorical: bool = False):
    """One panel per measure against a swept value (Guo et al. Fig. 2), mean +- std over seeds.

    Error, ECE and MCE are drawn in percent, NLL in nats.

    Parameters
    ----------
    table : pandas.DataFrame
        The output of :func:`calibcourse.study.analysis.tables.sweep_table`: index = swept value, columns ``m`` and
        (optionally) ``m_std`` per measure ``m``.
    xlabel : str
        Label of the swept value.
    columns : sequence of str, default=("error", "ece", "temperature")
        The measures, one panel each.
    logx : bool, default=False
        Logarithmic horizontal axis.
    titles : sequence of str, optional
        One title per panel.
    axes : sequence of matplotlib Axes, optional
        Where to draw (default: a new figure).
    categorical : bool, default=False
        Evenly spaced values labelled by the index (e.g. "plain" / "bn").

    Returns
    -------
    matplotlib.figure.Figure
        The figure.

    Examples
    --------
    >>> import pandas as pd
    >>> table = pd.DataFrame({"error": [0.3, 0.2], "error_std": [0.01, 0.02]}, index=[1, 4])
    >>> len(sweep_plot(table, "depth", columns=["error"]).axes)
    1
    """
    plt = _plt()
    labels = {"error": "test error (%)", "ece": "test ECE (%)", "temperature": "fitted temperature T",
              "nll": "test NLL (nats)", "mce": "test MCE (%)", "ece_ts": "ECE after TS (%)"}
    percent = {"error", "ece", "mce", "ece_ts"}  # fractions in the table, percent on the axis
    if axes is None:
        fig, axes = plt.subplots(1, len(columns), figsize=(2.4 * len(columns), 2.6))
    axes = np.atleast_1d(axes)
    fig = axes[0].figure
    values = list(table.index)
    x = np.arange(len(values), dtype=float) if categorical else np.asarray(values, dtype=float)
    for i, (ax, col) in enumerate(zip(axes, columns, strict=False)):  # the caller's axes may hold more panels
        scale = 100.0 if col in percent else 1.0
        y = scale * table[col].to_numpy(dtype=float)
        err = scale * table[f"{col}_std"].to_numpy(dtype=float) if f"{col}_std" in table else None
        if err is not None and np.all(np.isnan(err)):
            err = None
        ax.errorbar(x, y, yerr=err, marker="o", capsize=3)
        if col == "temperature":
            ax.axhline(1.0, color="gray", ls=":", lw=1)
        ax.set_xlabel(xlabel)
        ax.set_ylabel(labels.get(col, col))
        if logx and not categorical:
            ax.set_xscale("log")
        if logx or categorical:
            from matplotlib.ticker import NullFormatter

            ax.xaxis.set_minor_formatter(NullFormatter())
            ax.set_xticks(x)
            ax.set_xticklabels([f"{v:g}" if isinstance(v, (int, float)) else str(v) for v in values])
        if titles:
            ax.set_title(titles[i])
        ax.grid(alpha=0.3)
    fig.tight_layout()
    return fig


#: the score grid on which :func:`calibration_maps` draws each map: uniform in [0, 1] plus points that
#: crowd towards 0 and 1 (a sigmoid of a uniform logit grid), where the scores of a confident network lie
MAP_GRID = np.unique(np.r_[np.linspace(0.0, 1.0, 1001), 1.0 / (1.0 + np.exp(-np.linspace(-12, 12, 961)))])


def calibration_maps(calibrators: dict, scores, labels, n_bins: int = 15, ax=None, title: str | None = None):
    """Fitted calibration maps of binary calibrators on one axis, against the empirical frequencies.

    Each calibrator is drawn as ``calibrator.predict_proba`` on :data:`MAP_GRID`: a step function
    for histogram binning, a staircase for isotonic regression, averaged steps for BBQ, a sigmoid
    for Platt scaling. The dots are the fraction of positives among the calibration scores of
    each equal-width bin (:func:`calibcourse.calibration.metrics.reliability_bins` with
    ``reliability="positive_class"``), placed at the bin's mean score, with a 95 % Wilson
    interval and the bin's count written beside it: what every map tries to follow, and how
    little data some bins hold.

    Parameters
    ----------
    calibrators : dict
        ``{name: fitted binary calibrator}``, one curve each, in order; each takes P(y = 1)
        (``input_type='probabilities'``).
    scores : array_like of shape (n,)
        The calibration set's P(y = 1), on which they were fitted.
    labels : array_like of shape (n,)
        Its 0/1 labels.
    n_bins : int, default=15
        Equal-width bins of the empirical frequencies (the dots).
    ax : matplotlib Axes, optional
        Where to draw (default: a new figure).
    title : str, optional
        Title of the figure.

    Returns
    -------
    matplotlib.figure.Figure
        The figure drawn on.

    Examples
    --------
    >>> from calibcourse.calibration.calibrators import HistogramBinning
    >>> p, y = np.array([0.1, 0.2, 0.3, 0.6, 0.7, 0.9]), np.array([0, 0, 1, 1, 1, 1])
    >>> fig = calibration_maps({"binning": HistogramBinning(n_bins=2).fit(p, y)}, p, y, n_bins=2)
    >>> line = fig.axes[0].lines[0]
    >>> line.get_label(), float(line.get_ydata()[0]), float(line.get_ydata()[-1])
    ('binning', 0.3333333333333333, 1.0)
    """
    plt = _plt()
    if not calibrators:
        raise ValueError("calibrators is empty: give at least one {name: fitted calibrator}")
    p = check_probs(scores, name="scores")
    if p.ndim != 1:
        raise ValueError(f"scores must be P(y = 1) of shape (n,); got shape {p.shape}")
    y = check_labels(labels, p.shape[0], 2)
    if ax is None:
        fig, ax = plt.subplots(figsize=(6.8, 5.2))
    else:
        fig = ax.figure
    for i, (name, calibrator) in enumerate(calibrators.items()):
        ax.plot(MAP_GRID, calibrator.predict_proba(MAP_GRID)[:, 1], color=f"C{i}", lw=1.8, label=str(name), zorder=3)
    rb = M.reliability_bins(p, y, n_bins=n_bins, reliability="positive_class")
    full = rb.count > 0
    n, k = rb.count[full], rb.accuracy[full] * rb.count[full]
    z = 1.959963984540054  # Wilson interval of a binomial proportion
    centre = (k + z**2 / 2) / (n + z**2)
    half = z * np.sqrt(k * (n - k) / n + z**2 / 4) / (n + z**2)
    freq = rb.accuracy[full]
    ax.errorbar(rb.confidence[full], freq, yerr=[np.clip(freq - (centre - half), 0, None),
                                                  np.clip(centre + half - freq, 0, None)],
                fmt="o", color="black", ms=4, capsize=2, lw=0.8, zorder=4,
                label=f"calibration set: fraction of positives per bin\n({n_bins} bins, 95 % interval, count beside)")
    for x, f, c in zip(rb.confidence[full], freq, n, strict=True):
        ax.annotate(f"{int(c)}", (x, f), xytext=(4, -10 if f > 0.5 else 5), textcoords="offset points",
                    fontsize=SMALL_FONT, color="dimgray")
    ax.plot([0, 1], [0, 1], ":", color="gray", lw=1, label="identity (the score unchanged)")
    ax.set_xlim(0, 1)
    ax.set_ylim(-0.02, 1.02)
    ax.set_xlabel("score: the network's P(y = 1)", fontsize=10)
    ax.set_ylabel("calibrated P(y = 1)", fontsize=10)
    ax.legend(
        loc="upper center", bbox_to_anchor=(0.5, -0.13), ncol=2, fontsize=SMALL_FONT, frameon=False
    )  # under the axes
    if title:
        ax.set_title(title)
    return fig


def bilevel_diagram(lookahead: str = "same"):
    """The bilevel loop of meta-regularization (chapter 5), drawn with boxes and arrows.

    Parameters
    ----------
    lookahead : {'same', 'sgd'}, default 'same'
        The look-ahead's update rule, as ``meta.lookahead`` of the training config: ``'same'`` is the real
        step's optimizer with its current state (Adam in chapter 5), ``'sgd'`` a plain gradient step at the
        same learning rate.

    Returns
    -------
    matplotlib.figure.Figure
        The diagram.

    Returns
    -------
    matplotlib.figure.Figure
        The diagram.

    Examples
    --------
    >>> len(bilevel_diagram().axes[0].patches)  # six boxes
    6
    """
    rules = {
        "same": "look-ahead: the real step\n$\\theta' = \\mathrm{Adam}(\\theta, \\nabla_\\theta \\mathrm{FL}_\\gamma)$",
        "sgd": "look-ahead (SGD)\n$\\theta' = \\theta - \\eta\\nabla_\\theta \\mathrm{FL}_\\gamma$",
    }
    if lookahead not in rules:
        raise ValueError(f"lookahead must be one of {', '.join(rules)}; got {lookahead!r}")
    plt = _plt()
    fig, ax = plt.subplots(figsize=(9, 3.4))
    ax.set_axis_off()
    ax.set_xlim(0, 10)
    ax.set_ylim(0, 4)
    boxes = {
        "train": (0.2, 2.6, "training batch\n$(x, y)$"),
        "backbone": (2.6, 2.6, "backbone $\\theta$\nfeatures, logits"),
        "gnet": (2.6, 0.4, "$\\gamma$-Net $\\phi$\n$\\gamma_i = |\\tilde x_i W| / \\tau$"),
        "focal": (5.0, 2.6, "focal loss\n$\\mathrm{FL}_{\\gamma}(\\theta)$"),
        "step": (7.4, 2.6, rules[lookahead]),
        "sece": (7.4, 0.4, "SECE of $\\theta'$\non a meta batch"),
    }
    for key, (x, y, text) in boxes.items():
        ax.add_patch(plt.Rectangle((x, y), 2.1, 1.0, fc="#eef3fb" if key != "sece" else "#fdecea",
                                   ec="black", lw=1))
        ax.text(x + 1.05, y + 0.5, text, ha="center", va="center", fontsize=SMALL_FONT)

    def arrow(x0, y0, x1, y1, text="", color="black"):
        ax.annotate("", xy=(x1, y1), xytext=(x0, y0),
                    arrowprops={"arrowstyle": "->", "color": color, "lw": 1.3})
        if text:
            ax.text((x0 + x1) / 2, (y0 + y1) / 2 + 0.12, text, fontsize=SMALL_FONT, ha="center", color=color)

    arrow(2.3, 3.1, 2.6, 3.1)
    arrow(4.7, 3.1, 5.0, 3.1, "")
    arrow(3.65, 2.6, 3.65, 1.4, "features", "gray")
    arrow(4.7, 0.9, 5.5, 2.6, "$\\gamma_i$")
    arrow(7.1, 3.1, 7.4, 3.1)
    arrow(8.45, 2.6, 8.45, 1.4)
    arrow(7.4, 0.75, 4.7, 0.75, "outer: $\\nabla_\\phi$ SECE (through $\\theta'$)", "#d62728")
    ax.text(5.0, 3.85, "inner: the backbone learns with per-sample $\\gamma$", ha="center", fontsize=SMALL_FONT)
    return fig
