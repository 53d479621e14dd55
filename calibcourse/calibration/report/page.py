"""The HTML page of ``calibcourse report``: the measures with their intervals, the reliability
diagrams, the recommendation."""
from __future__ import annotations

import warnings

import numpy as np

from calibcourse.calibration import metrics as M
from calibcourse.calibration import stats
from calibcourse.calibration._arrays import softmax_rows
from calibcourse.calibration._labels import encode_labels
from calibcourse.calibration._validation import checked
from calibcourse.calibration.report._compare import _choose, _cross_fit, _fold_counts, _progress, _view
from calibcourse.calibration.report.choice import candidate_methods, min_samples
from calibcourse.calibration.report.saved import FittedCalibration
from calibcourse.calibration.report.scores import prob_blocks, read_scores

__all__ = ["MAX_FIT_VALUES", "MAX_FIT_ROWS", "MAX_BOOT_DRAWS", "SMALL_N", "SMALL_CLASS", "report_html"]

#: The calibrators are cross-fitted, compared and fitted on at most this many scores, samples x
#: classes (a stratified, seeded subsample of MAX_FIT_VALUES // K rows: 200,000 for a binary model,
#: 20,000 (MAX_FIT_ROWS) at K = 100; the measures of the model as given use every sample). Measured on 1e5
#: samples of synthetic models
#: (K = 100 over- and well-calibrated, K = 10 under- and over-confident): the recommendation on the
#: subsample is the one on all samples, and 20,000 labels fix a temperature to about 1 %.
MAX_FIT_VALUES = 400_000
#: ... and at least this many rows, whatever K
MAX_FIT_ROWS = 20_000
#: The bootstraps of the page draw at most this many sample indices each (resamples x samples): at
#: 1e6 samples, 100 resamples instead of 1000 (their intervals are then a fraction of a point wide).
MAX_BOOT_DRAWS = 10**8
#: Below this many samples, or ...
SMALL_N = 300
#: ... this many in the smallest class, the page warns that the sample is small and says what its
#: intervals mean there (and the flexible maps are not offered: :func:`min_samples`)
SMALL_CLASS = 30


def _bin_band(conf, outcome, n_bins, n_boot, seed, level=0.95):
    """Per non-empty bin: mean confidence, frequency and its bootstrap percentile interval."""
    from calibcourse.calibration import binning

    idx = binning.bin_index(conf, binning.uniform_edges(n_bins))
    rows = []
    for m in range(n_bins):
        sel = idx == m
        if not sel.any():
            continue
        o = outcome[sel]
        if o.size >= 2 and np.ptp(o) > 0:
            r = stats.bootstrap_statistic(np.mean, o, n_boot=n_boot, level=level, seed=seed + m,
                                          method="percentile")
            lo, hi = r.low, r.high
        else:
            lo = hi = float(o.mean())
        rows.append((float(conf[sel].mean()), float(o.mean()), lo, hi, int(sel.sum())))
    return np.array(rows)


def _reliability_png(panels: dict, reliability: str, n_bins: int, n_boot: int, seed: int) -> str:
    """Reliability diagrams with a bootstrap band, side by side; a base64 PNG."""
    import base64
    import io

    import matplotlib

    matplotlib.use("Agg", force=False)
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(2, len(panels), figsize=(4.4 * len(panels), 5.8), squeeze=False,
                             gridspec_kw={"height_ratios": [3, 1]}, sharex=True)
    for j, (title, (conf, outcome)) in enumerate(panels.items()):
        b = _bin_band(conf, outcome, n_bins, n_boot, seed)
        ax = axes[0, j]
        ax.plot([0, 1], [0, 1], "--", color="gray", lw=1, label="perfect calibration")
        ax.fill_between(b[:, 0], b[:, 2], b[:, 3], color="C0", alpha=0.25, label="95 % bootstrap band")
        ax.plot(b[:, 0], b[:, 1], "o-", color="C0", ms=4, label="observed frequency")
        ax.set(xlim=(0, 1), ylim=(0, 1), title=title,
               ylabel="fraction of positives" if reliability == "positive_class" else "accuracy")
        ax.legend(loc="upper left", fontsize=7)
        h = axes[1, j]
        h.hist(conf, bins=np.linspace(0, 1, n_bins + 1), color="gray", edgecolor="black", lw=0.5)
        h.set(yscale="log", xlabel="P(y = 1)" if reliability == "positive_class" else "confidence",
              ylabel="samples")
    fig.tight_layout()
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=110)
    plt.close(fig)
    return base64.b64encode(buf.getvalue()).decode("ascii")


def _fit_rows(y, cap: int, seed: int):
    """Indices of a stratified, seeded subsample of ``cap`` rows, sorted; None when ``len(y) <= cap``."""
    if len(y) <= cap:
        return None
    from sklearn.model_selection import train_test_split

    idx = np.arange(len(y))
    try:
        sub = train_test_split(idx, train_size=cap, stratify=y, random_state=seed)[0]
    except ValueError:  # a class too rare to stratify: a plain random subsample
        sub = np.random.default_rng(seed).choice(idx, cap, replace=False)
    return np.sort(sub)


def _per_sample(z, p, y, reliability: str):
    """One pass over the rows, block by block: each sample's confidence and outcome (what the binned
    measures bin), NLL, Brier and error terms. No full-size copy of the scores is made."""
    n = len(y)
    conf, outcome = np.empty(n), np.empty(n)
    means = {"NLL": (M.nll, np.empty(n)), "Brier": (M.brier, np.empty(n)), "error": (M.error, np.empty(n))}
    for i, pk in prob_blocks(z, p):
        j = slice(i, i + len(pk))
        conf[j], outcome[j] = M.confidence_outcome(pk, y[j], reliability)
        for metric, terms in means.values():  # the terms the bootstrap engine resamples, over the columns
            terms[j] = stats.per_sample_terms(metric, pk, y[j], {})
    return conf, outcome, {key: terms for key, (_, terms) in means.items()}


def _measure_rows(per_sample, n_bins: int, n_boot: int, seed: int, progress: bool = False) -> list:
    """The page's table of the model as given: each measure and its bootstrap interval, every measure
    on the same resamples of the per-sample quantities of :func:`_per_sample`."""
    conf, outcome, means = per_sample
    binned = {"ECE": M.binned_on_confidence(M.ece, n_bins=n_bins), "MCE": M.binned_on_confidence(M.mce, n_bins=n_bins),
              "ACE": M.binned_on_confidence(M.ace, n_bins=n_bins)}
    reps = {key: [] for key in (*binned, *means)}
    for idx in _progress(
        stats.resample_indices(len(conf), n_boot, seed), n_boot, "intervals of the measures", progress
    ):
        c, o = conf[idx], outcome[idx]
        for key, f in binned.items():
            reps[key].append(f(c, o))
        for key, t in means.items():
            reps[key].append(float(t[idx].mean()))
    rows = []
    for key in reps:
        plugin = binned[key](conf, outcome) if key in binned else float(means[key].mean())
        upper = {"NLL": None, "Brier": 2.0}.get(key, 1.0)  # every interval inside its measure's range
        r = stats.interval_from_replicates(plugin, reps[key], 0.95, "hull", len(conf), lower=0.0, upper=upper)
        if key in ("NLL", "Brier"):
            unit, f = (" nats" if key == "NLL" else ""), (lambda v: f"{v:.4f}")
        else:
            unit, f = " %", _pct
        rows.append((key, f"{f(r.plugin)}{unit}", f"[{f(r.low)}, {f(r.high)}]{unit}"))
    return rows


def _pct(x):
    return f"{100 * x:.2f}"


def report_html(scores, labels, kind: str = "auto", folds: int = 5, n_bins: int = 15, n_boot: int = 1000,
                seed: int = 0, title: str = "Calibration report", names: dict | None = None, progress: bool = False):
    """The calibration report of a model's outputs: an HTML page and the recommended calibration.

    The page holds (PNG figures embedded, no other file needed) the reliability diagrams
    with a 95 % bootstrap band before and after the recommended calibrator (out of fold);
    ECE, MCE, ACE, NLL and Brier with 95 % intervals (:func:`calibcourse.calibration.stats.interval`);
    every calibrator of :func:`candidate_methods` the data can support, compared by
    :func:`cross_fit`; and the recommended one (:func:`choose`, by the NLL and the Brier score
    out of fold) with the paired intervals of its changes and of its error change (the cost).
    Where the sample is small it says so, and what its intervals mean there.

    Parameters
    ----------
    scores : array_like of shape (n, K) or (n,)
        Logits or probabilities of a model on labelled data (a validation or test set).
    labels : array_like of shape (n,)
        Class labels, scikit-learn's way: the sorted unique labels name the score columns in order.
    kind : {"auto", "logits", "probs"}, default="auto"
        What ``scores`` are (:func:`as_logits_and_probs`).
    folds : int, default=5
        Folds of the cross-fitting.
    n_bins : int, default=15
        Bins of the ECE, MCE and ACE and of the diagrams.
    n_boot : int, default=1000
        Bootstrap resamples of every interval.
    seed : int, default=0
        Seed of the resampling.
    title : str, default="Calibration report"
        The page's title.
    names : dict, optional
        ``{"scores": ..., "labels": ..., "folds": ..., "kind": ...}``: how the arguments are called
        in error messages (the command line passes its options).
    progress : bool, default=False
        Progress bars on stderr for the long steps (tqdm, where installed); the command line
        shows them when stderr is a terminal.

    Returns
    -------
    html : str
        The page.
    fitted : FittedCalibration
        The recommended calibrator, fitted on the samples the comparison used (all of them, or
        the subsample of at most :data:`MAX_FIT_ROWS` rows: ``fitted.n_fit``).
    choice : Choice
        The comparison.

    Examples
    --------
    >>> from calibcourse.calibration.synthetic import scaled_logits
    >>> z, y = scaled_logits(600, 3, factor=2.0, seed=0)
    >>> html, fitted, choice = report_html(z, y, folds=3, n_boot=50)
    >>> html.startswith("<!DOCTYPE html>"), "data:image/png;base64," in html, fitted.name == choice.name
    (True, True, True)
    """
    names = {"scores": "scores", "labels": "labels", "folds": "folds", "kind": "kind", **(names or {})}
    with warnings.catch_warnings(record=True) as said:  # what was said of the scores goes on the page too
        warnings.simplefilter("always")
        z, p, kind, floor, floored = read_scores(scores, kind, names["scores"], _probs=False, kind_name=names["kind"])
    for w in said:
        warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
    n, k = z.shape
    try:
        y, classes = encode_labels(labels, n, k, names["labels"])
    except ValueError as e:
        msg = str(e).replace("the predictions have", f"{names['scores']} has")
        lab = names["labels"]  # a name such as "the column 'y' of x.csv (--labels-key)": one column, singular
        if "distinct values" in msg:  # the report's own ending: it has no classes= to offer
            head = msg.split(" but the scores have")[0].replace(f"{lab} have ", f"{lab}: ", 1)
            msg = (f"{head}; the scores ({names['scores']}) have {k} columns: the sorted labels name the score "
                   f"columns, so the labels must hold each of the {k} classes, and no other")
        msg = msg.replace(f"{lab} contain ", f"{lab} contains ", 1)  # one array or column: one class only, NaN
        raise ValueError(msg) from None
    y = _fold_counts(y, k, folds, names["labels"], names["folds"], classes)
    with checked():  # the scores and the labels are checked: nothing below checks them again
        return _report(z, p, kind, y, classes, folds, n_bins, n_boot, seed, title, progress, (floor, floored),
                       [str(w.message) for w in said])


def _fit_all(z, p, kind, y, classes, choice, methods, skipped, n_fit, n_total):
    """The recommended calibrator fitted on the comparison's samples, as a :class:`FittedCalibration`."""
    from sklearn.base import clone

    k = z.shape[1]
    if choice.name == "uncalibrated":
        return FittedCalibration(None, "probs", kind, "uncalibrated", classes=classes, n_fit=n_fit, n_total=n_total)
    cal, view = methods[choice.name]
    fitted = clone(cal).fit(_view(z, p, view), y, classes=range(k))
    fitted.classes_ = classes  # the calibrator's columns are the report's classes, by name
    return FittedCalibration(fitted, view, kind, choice.name, classes=classes, n_fit=n_fit, n_total=n_total)


def _small_note(n: int, counts, methods: dict, k: int) -> str:
    """The page's warning for a small sample: what its intervals mean, what is not offered."""
    smallest = int(counts.min())
    if n >= SMALL_N and smallest >= SMALL_CLASS:
        return ""
    left = [name for name in candidate_methods(k) if name not in methods]
    need = "; ".join(f"{name} from {min_samples(name, k):,}" for name in left)
    return f"""<p class="warn"><b>Few samples.</b> {n:,} labelled samples, {smallest:,} in the smallest class:
every interval on this page is wide, and only approximate. A bootstrap interval shows how a number varies
over resamples of these same {n:,} samples; with this few it tends to be too narrow (a resample cannot
hold a kind of error the sample lacks), and the binned measures are biased upwards (the MCE, the error of
the worst bin, most of all). {"Only the simplest calibrators are compared (" + need + " samples). "
if left else ""}Read the recommendation as provisional, and label a few hundred samples more
before relying on it.</p>"""


def _report(z, p, kind, y, classes, folds, n_bins, n_boot, seed, title, progress, read=(None, None), said=()):
    """:func:`report_html` on checked scores (logits ``z``, probabilities ``p`` or None) and labels ``y``;
    ``read``: the floor of a written 0 and the probabilities as read with it (the comparison's "uncalibrated");
    ``said``: what was said of the scores as they were read (a warning), for the page."""
    floor, floored = read
    import html as H

    n, k = z.shape
    reliability = "positive_class" if k == 2 else "top_label"
    skipped, separated = {}, []
    sub = _fit_rows(y, max(MAX_FIT_ROWS, MAX_FIT_VALUES // k), seed)  # the calibrators' samples: all, or a subsample
    zs, ys = (z, y) if sub is None else (z[sub], y[sub])
    zs = zs.astype(np.float64)
    if p is None:  # logits given: their probabilities, for the subsample only
        ps = softmax_rows(zs)
    else:
        ps = (p if sub is None else p[sub]).astype(np.float64)
    methods = candidate_methods(k, len(ys))
    with warnings.catch_warnings(record=True) as caught:  # a calibrator's warnings go on the page
        warnings.simplefilter("always")
        oof = _cross_fit(zs, ps, ys, methods, folds, skipped, progress, separated)
        fit_boot = min(n_boot, max(100, MAX_BOOT_DRAWS // len(ys)))  # the comparisons' bootstraps, bounded
        # a rounded-off 0 counts in the comparison as what it stands for: no method gains from the rounding
        as_read = ps if floored is None else (floored if sub is None else floored[sub])
        choice = _choose(as_read, oof, ys, n_bins, fit_boot, seed)
        fitted = _fit_all(zs, ps, kind, ys, classes, choice, methods, skipped, len(ys), n)
    notes = sorted({str(w.message) for w in caught})

    boot = min(n_boot, max(100, MAX_BOOT_DRAWS // n))  # the bootstraps over all n samples, bounded
    per_sample = _per_sample(z, p, y, reliability)
    rows = _measure_rows(per_sample, n_bins, boot, seed, progress=progress)
    panels = {"uncalibrated": per_sample[:2]}
    if choice.name != "uncalibrated":
        panels[f"{choice.name} (out of fold)"] = M.confidence_outcome(oof[choice.name], ys, reliability)
    png = _reliability_png(panels, reliability, n_bins, min(boot, 500), seed)
    fit_note = ("" if sub is None else f" They are cross-fitted, compared and fitted on a stratified subsample of "
                f"{len(ys):,} of the {n:,} samples (enough to fix a temperature to about 1 %); the measures of the "
                "model as given use every sample.")
    if floored is not None:
        fit_note += (f" The probabilities are multiples of {4 * floor:g} (written with few decimals, or coarse "
                     f"outputs such as a forest's vote shares): in the comparison a 0 counts as "
                     f"{floor:g}, the middle of what rounds to 0, for the model as for the "
                     "calibrators' logits; the measures of the model as given, and a saved 'no calibration', keep "
                     "the values as written.")
    fit_note += "".join(f" <b>{H.escape(note)}.</b>" for note in said)
    what = ("P(y = 1) against the fraction of positives (binary: the reliability of class 1)"
            if k == 2 else "top-label confidence against accuracy")
    cmp_rows = "".join(
        f"<tr{' class=best' if r['method'] == choice.name else ''}><td>{H.escape(r['method'])}</td>"
        f"<td>{r['nll']:.4f}</td><td>{_signed(r['nll_change'])}</td><td>{r['brier']:.4f}</td>"
        f"<td>{_signed(r['brier_change'])}</td><td>{_pct(r['ece'])}</td><td>[{_pct(r['ece_low'])}, "
        f"{_pct(r['ece_high'])}]</td><td>{_pct(r['error'])}</td></tr>" for r in choice.table)
    meas_rows = "".join(f"<tr><td>{a}</td><td>{b}</td><td>{c}</td></tr>" for a, b, c in rows)
    advice = _advice(choice, fitted, H)
    left_out = "".join(f"<li>{H.escape(name)}: {H.escape(why)}</li>" for name, why in skipped.items())
    left_out += "".join(f"<li>{H.escape(name)}: not offered, it needs at least {min_samples(name, k):,} samples "
                        f"(this comparison has {len(ys):,})</li>"
                        for name in candidate_methods(k) if name not in methods)
    if left_out:
        left_out = f"<p>Left out of the comparison:</p><ul>{left_out}</ul>"
    if separated:
        plural = "s" if len(separated) > 1 else ""
        notes.insert(0, f"The model gets every label right on the training part of fold{plural} "
                        f"{', '.join(map(str, separated))} of {folds} (it separates them): a temperature fitted to the "
                        "labels there would be 0: temperature scaling fits Platt's targets there, (N + 1)/(N + 2) "
                        "for the label's class, and vector scaling's penalties keep it finite.")
    if notes:
        left_out += "<p>Said while fitting the calibrators:</p><ul>" + "".join(
            f"<li>{H.escape(note)}</li>" for note in notes) + "</ul>"
    named = not (classes.dtype.kind in "iuf" and np.array_equal(classes, np.arange(k)))
    page = f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>{H.escape(title)}</title>
<style>body{{font-family:sans-serif;max-width:60em;margin:2em auto;line-height:1.4}}
table{{border-collapse:collapse;margin:1em 0}}td,th{{border:1px solid #bbb;padding:.25em .6em;text-align:right}}
td:first-child,th:first-child{{text-align:left}}tr.best{{background:#e8f4e8;font-weight:bold}}
img{{max-width:100%}}.note{{color:#555;font-size:.9em}}.warn{{background:#fff4e0;padding:.5em}}</style></head><body>
<h1>{H.escape(title)}</h1>
<p>{n:,} samples, {k} classes{
        " (" + H.escape(", ".join(map(str, classes))) + ", the score columns in order)" if named else ""
    }, {"probabilities" if kind == "probs" else "logits"} given. Measured: {what};
{n_bins} equal-width bins; intervals are 95 % bootstrap intervals ({boot} resamples of the {n:,} samples{
        "" if boot == n_boot else f", at most {MAX_BOOT_DRAWS:.0e} draws"
    }; {fit_boot} for the comparisons).{fit_note}</p>
{_small_note(len(ys), np.bincount(ys, minlength=k), methods, k)}
<h2>Recommendation: {"no calibration" if choice.name == "uncalibrated" else H.escape(choice.name)}</h2>
{advice}
<h2>Reliability diagrams</h2>
<img alt="Reliability diagrams before and after the recommended calibrator, with 95 % bootstrap bands"
 src="data:image/png;base64,{png}">
<h2>The model as given</h2>
<table><tr><th>measure</th><th>value</th><th>95 % interval</th></tr>{meas_rows}</table>
<h2>Post-hoc calibrators, cross-fitted</h2>
<p class="note">Each sample is calibrated by a map fitted on the other {folds - 1} of {folds} stratified folds
(scikit-learn's <code>StratifiedKFold</code>, as <code>CalibratedClassifierCV(ensemble=False)</code>),
so the numbers are out of sample. NLL in nats; "change" is the paired difference from the model as given on
the same samples, with its 95 % interval; ECE and error in %.</p>
<table><tr><th>method</th><th>NLL</th><th>change</th><th>Brier</th><th>change</th><th>ECE</th><th>95 % interval</th>
<th>error</th></tr>
{cmp_rows}</table>
{left_out}
</body></html>
"""
    return page, fitted, choice


def _signed(d) -> str:
    return "" if d is None or d.estimate == 0 and d.low == 0 and d.high == 0 else \
        f"{d.estimate:+.4f} [{d.low:+.4f}, {d.high:+.4f}]"


def _advice(choice, fitted, H) -> str:
    """The recommendation's paragraph: why this method, and what it changes out of fold."""
    passed = "".join(f"<li>{H.escape(name if name != 'uncalibrated' else 'no calibration')}: {H.escape(why)}</li>"
                     for name, why in choice.rejected.items())
    passed = f"<p>Simpler candidates passed over:</p><ul>{passed}</ul>" if passed else ""
    where = ("all the data" if fitted.n_fit == fitted.n_total
             else f"the subsample of {fitted.n_fit:,} of the {fitted.n_total:,} samples")
    if choice.name == "uncalibrated":
        return ("<p>No calibrator is decidedly better than the model as given: none has an out-of-fold NLL or "
                "Brier score below the model's own by more than the noise allows (paired 95 % intervals). "
                "Keep the model's probabilities (<code>--save</code> writes this choice, and the saved file "
                "passes scores through unchanged).</p>" + passed)
    dn, db, de, dr = choice.nll_change, choice.brier_change, choice.ece_change, choice.error_change
    return f"""<p>{H.escape(choice.name).capitalize()} is the simplest candidate, no calibration included,
whose out-of-fold NLL and Brier score are both not decidedly above the lowest (paired intervals), and it is
not decidedly worse than the model as given on either. Out of fold it changes the NLL by
<b>{_fmt_d(dn, "")}</b>, the Brier score by <b>{_fmt_d(db, "")}</b>, the ECE by
<b>{_fmt_d(de, " points", 100)}</b> and the error by <b>{_fmt_d(dr, " points", 100)}</b> (paired intervals, the
same samples before and after). <code>--save</code> writes it fitted on {where}.</p>{passed}"""


def _fmt_d(d, unit: str, scale: float = 1.0) -> str:
    return f"{scale * d.estimate:+.4g}{unit} [{scale * d.low:+.4g}, {scale * d.high:+.4g}]"
