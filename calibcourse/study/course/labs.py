"""What the labs show beside the student's code: the results a correct solution gives.

A lab's ungraded parts compare the student's functions with the library's on real
predictions. Their code lives here, not in the lab's visible cells: a visible cell that
called ``metrics.ece`` or ``calibrators.TemperatureScaling`` would hand the student the answer
to an exercise. Each function takes the student's functions (or None until their check
passes, and the library's stands in), computes, and returns the text to print, in one piece.

Lab 1: :func:`ece_bias_table`, :func:`digit_predictions`, :func:`measures_table`.
Labs 2 and 3: :func:`lab_run`, the outputs of their networks, packaged (:data:`LAB_DATA`).
Lab 2: :func:`grid_against_nll`, :func:`resplit_table`.
Lab 3: :func:`calibrator_table`, :func:`small_set_table`.
Lab 4: :func:`focal_gradient_table`, :func:`loss_comparison`.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np

from calibcourse.calibration import calibrators, metrics
from calibcourse.calibration._validation import check_int
from calibcourse.calibration.synthetic import SyntheticCalibration

__all__ = ["ece_bias_table", "digit_predictions", "measures_table", "grid_against_nll", "resplit_table",
           "calibrator_table", "small_set_table", "focal_gradient_table", "loss_comparison", "LAB2_RUN",
           "LAB3_RUN", "LAB_DATA", "lab_run", "write_lab_data", "require_study"]

#: the run of Lab 2: chapter 2's network at the third level of its depth sweep (the CI build's
#: sweep has two levels, so there the plain network of the batch-norm study)
LAB2_RUN = {"ci": "ch2/batchnorm/plain/s0", "default": "ch2/depth/level3/s0"}
#: the run of Lab 3: chapter 3's 1-D CNN on "9 vs not-9" of MNIST-1D
LAB3_RUN = "ch3/nine1d/cnn"


#: the validation and test outputs of the runs of Labs 2 and 3, in the two profiles a lab runs in: a copy of
#: the result cache's entries (:func:`write_lab_data`), packaged so that the labs run where neither the
#: cache nor torch is (a student's ``pip install``); a test checks that it equals the cache
LAB_DATA = Path(__file__).with_name("lab_runs.npz")
_LAB_RUNS = {"ci": (LAB2_RUN["ci"], LAB3_RUN), "default": (LAB2_RUN["default"], LAB3_RUN)}
_SPLITS = ("val_logits", "val_labels", "test_logits", "test_labels")


def lab_run(name: str, profile: str = "default"):
    """The validation and test outputs of a lab's run, as packaged (:data:`LAB_DATA`).

    Parameters
    ----------
    name : str
        The run: ``LAB2_RUN[...]`` or ``LAB3_RUN``.
    profile : {"ci", "default", "full"}, default="default"
        The build's profile (``full`` reads the default profile's run).

    Returns
    -------
    calibcourse.study.training.results.RunResult
        With ``logits``, ``probs`` and ``labels`` of ``"val"`` and ``"test"``.

    Examples
    --------
    >>> run = lab_run(LAB3_RUN, "ci")
    >>> run.probs("val").shape[1], len(run.labels("test")) == len(run.logits("test"))
    (2, True)
    """
    from calibcourse.study.training.results import RunResult

    profile = "ci" if profile == "ci" else "default"
    if name not in _LAB_RUNS[profile]:
        raise ValueError(f"name must be one of the labs' runs {', '.join(_LAB_RUNS[profile])} (profile {profile}); "
                         f"got {name!r}")
    with np.load(LAB_DATA, allow_pickle=False) as z:  # stored narrow (float32, uint8), losslessly
        outputs = {k: z[f"{profile}/{name}/{k}"].astype(np.float64 if "logits" in k else np.int64) for k in _SPLITS}
    return RunResult({"name": name}, None, outputs)


def write_lab_data(path=None) -> Path:
    """Write :data:`LAB_DATA` from the result cache (the study's runs: needs its dependencies).

    Parameters
    ----------
    path : str or path, optional
        Where to write; default :data:`LAB_DATA`.

    Returns
    -------
    pathlib.Path
        The file written.

    Examples
    --------
    >>> import tempfile
    >>> p = write_lab_data(Path(tempfile.mkdtemp()) / "lab_runs.npz")  # doctest: +SKIP
    """
    from calibcourse.study.runs.experiments import runs

    arrays = {}
    for profile, names in _LAB_RUNS.items():
        for name in names:
            run = runs(name, profile)[name]
            for k in _SPLITS:
                split, what = k.split("_")
                value = run.logits(split) if what == "logits" else run.labels(split)
                narrow = value.astype(np.float32 if what == "logits" else np.uint8)
                if not np.array_equal(narrow, value):
                    raise ValueError(f"{profile}/{name}: its {k} do not fit {narrow.dtype} losslessly")
                arrays[f"{profile}/{name}/{k}"] = narrow
    path = Path(path or LAB_DATA)
    np.savez_compressed(path, **arrays)
    return path


#: what the labs that train networks import beyond the toolkit (the study extra of pyproject.toml)
STUDY_PACKAGES = ("torch", "tqdm", "mnist1d", "pandas")


def require_study(lab: str = "this lab"):
    """Raise one clear ``ImportError`` where a package of the study (torch, ...) is not installed.

    Labs 1 to 3 run on the toolkit alone; Lab 4 trains networks and calls this first.

    Parameters
    ----------
    lab : str, default="this lab"
        The lab, for the message.

    Returns
    -------
    None

    Examples
    --------
    >>> require_study("Lab 4")  # the study's packages are installed here
    """
    import importlib.util

    missing = [name for name in STUDY_PACKAGES if importlib.util.find_spec(name) is None]
    if missing:
        raise ImportError(f"{lab} trains small networks with PyTorch, and this environment lacks {', '.join(missing)}: "
                          "install the course's study extra too, pip install \"<the repository's folder>[labs,study]\" "
                          "(the setup page says what it costs)")


def _check_positive_int(name, value):
    check_int(value, name, low=1)


# ============================================================================ Lab 1
def ece_bias_table(ece_fn=None, sizes=(100, 300, 1000, 3000), n_reps: int = 200, n_bins: int = 15):
    """The mean binned ECE over ``n_reps`` draws of ``n`` samples of two synthetic models whose
    true ECE is known (Lab 1, part 5).

    Parameters
    ----------
    ece_fn : callable or None, default=None
        ``ece_fn(probs, labels, n_bins) -> float``, the student's ECE; None: the library's.
    sizes : sequence of int, default=(100, 300, 1000, 3000)
        The sample sizes ``n``.
    n_reps : int, default=200
        Draws per size.
    n_bins : int, default=15
        The ECE's bins.

    Returns
    -------
    text : str
        The table, one row a model, the truth in the last column (percent).
    bias : dict
        ``{power: array of mean estimate minus truth, one per size}``.

    Examples
    --------
    >>> text, bias = ece_bias_table(sizes=(100, 1000), n_reps=5)
    >>> print(text.splitlines()[0])
    mean binned ECE (15 bins, %) over 5 draws; last column: the truth
    >>> bool(bias[1.0][0] > bias[1.0][1] > 0)
    True
    """
    _check_positive_int("n_reps", n_reps)
    _check_positive_int("n_bins", n_bins)
    for n in sizes:
        _check_positive_int("sizes' entries", n)
    fn = ece_fn if ece_fn is not None else (lambda p, y, m: metrics.ece(p, y, n_bins=m))
    lines = [f"mean binned ECE ({n_bins} bins, %) over {n_reps} draws; last column: the truth",
             f"{'model':<24s}" + "".join(f"{'n = ' + str(n):>10s}" for n in sizes) + f"{'true':>8s}"]
    bias = {}
    for power, name in ((1.0, "calibrated (power 1)"), (2.0, "overconfident (power 2)")):
        synth = SyntheticCalibration(power=power)
        means = np.array([np.mean([fn(*synth.sample(n, seed=1000 * r + n), n_bins) for r in range(n_reps)])
                          for n in sizes])
        bias[power] = means - synth.true_ece()
        lines.append(f"{name:<24s}" + "".join(f"{100 * m:10.2f}" for m in means)
                     + f"{100 * synth.true_ece():8.2f}")
    return "\n".join(lines), bias


def digit_predictions(profile: str = "default"):
    """A multinomial logistic regression's test predictions on the 5000 MNIST digits (Lab 1, part 6).

    Trained on a stratified 60 % of the digits, tested on the other 40 % (in the ``ci`` profile,
    the first of each split only: :func:`calibcourse.study.course.notebook.budget`'s ``lab_split_sizes``).

    Parameters
    ----------
    profile : str, default="default"

    Returns
    -------
    probs : ndarray of shape (n_test, 10)
    labels : ndarray of shape (n_test,)

    Examples
    --------
    >>> probs, labels = digit_predictions("ci")
    >>> probs.shape[1], len(labels) == len(probs)
    (10, True)
    """
    from sklearn.linear_model import LogisticRegression

    from calibcourse.study.course.notebook import budget
    from calibcourse.study.training.data import load_mnist5k, stratified_split

    n_train, n_test = budget(profile, "lab_split_sizes")
    X, y = load_mnist5k()
    tr, te = stratified_split(y, (0.6, 0.4), seed=0)
    tr, te = tr[:n_train], te[:n_test]
    return LogisticRegression(max_iter=500).fit(X[tr], y[tr]).predict_proba(X[te]), y[te]


def measures_table(probs, labels, yours: dict, n_bins: int = 15) -> str:
    """What a correct solution gives for the ECE, MCE and l2-ECE of ``probs``, and what the student's
    functions give (Lab 1, part 6).

    Parameters
    ----------
    probs : array of shape (n, K)
    labels : array of shape (n,)
    yours : dict
        ``{"ECE": fn, "MCE": fn, "l2-ECE": fn}``, each ``fn(probs, labels, n_bins) -> float``.
    n_bins : int, default=15

    Returns
    -------
    str
        One line a measure; "not written yet" where the function raises ``NotImplementedError``.

    Examples
    --------
    >>> p = np.array([[0.9, 0.1], [0.6, 0.4], [0.2, 0.8]]); y = np.array([0, 1, 1])
    >>> def unwritten(*args):
    ...     raise NotImplementedError
    >>> print(measures_table(p, y, {"ECE": unwritten, "MCE": unwritten, "l2-ECE": unwritten}))
    3 test samples, 15 bins: a correct solution gives, and yours gives
      ECE     30.000 %   yours: not written yet
      MCE     60.000 %   yours: not written yet
      l2-ECE  36.968 %   yours: not written yet
    """
    reference = {"ECE": metrics.ece(probs, labels, n_bins=n_bins),
                 "MCE": metrics.mce(probs, labels, n_bins=n_bins),
                 "l2-ECE": metrics.ece(probs, labels, n_bins=n_bins, norm="l2")}
    missing = sorted(set(reference) - set(yours))
    if missing:
        raise ValueError(f"yours must have a function for each of {', '.join(reference)}; missing {missing}")
    lines = [f"{len(labels)} test samples, {n_bins} bins: a correct solution gives, and yours gives"]
    for name, value in reference.items():
        try:
            mine = f"{100 * yours[name](probs, labels, n_bins):.3f} %"
        except NotImplementedError:
            mine = "not written yet"
        lines.append(f"  {name:7s} {100 * value:.3f} %   yours: {mine}")
    return "\n".join(lines)


# ============================================================================ Lab 2
def _split_logits(run):
    return run.logits("val"), run.labels("val"), run.logits("test"), run.labels("test")


def grid_against_nll(run, temperatures, ax=None):
    """The grid's ECE optimum and the NLL optimum of a run's temperature, each applied to its
    test split; the validation ECE and NLL against ``T`` drawn on ``ax`` (Lab 2, part 5).

    Parameters
    ----------
    run : RunResult
        A run with ``val`` and ``test`` logits.
    temperatures : array
        The grid.
    ax : matplotlib Axes, optional
        Where to draw (ECE on its left axis, NLL on a twin axis); None: no figure.

    Returns
    -------
    text : str
        Both temperatures, the test ECE uncalibrated and with each, and which one wins.
    result : dict
        ``t_ece``, ``t_nll`` and ``test_ece`` (``{T: ECE}``).

    Examples
    --------
    >>> from calibcourse.study.training.results import RunResult
    >>> rng = np.random.default_rng(0)
    >>> y = rng.integers(0, 3, 400); z = 4.0 * np.eye(3)[y] + rng.normal(0, 2, (400, 3))  # overconfident
    >>> run = RunResult({}, None, {"val_logits": z[:200], "val_labels": y[:200],
    ...                            "test_logits": z[200:], "test_labels": y[200:]})
    >>> text, result = grid_against_nll(run, np.linspace(0.5, 3, 26))
    >>> bool(result["t_nll"] > 0), sorted(result["test_ece"]) == sorted({1.0, result["t_ece"], result["t_nll"]})
    (True, True)
    """
    zv, yv, zt, yt = _split_logits(run)
    grid = calibrators.TemperatureScaling.grid(zv, yv, temperatures)
    t_nll = calibrators.TemperatureScaling().fit(zv, yv).temperature_
    t_ece = grid.best("ece")
    if ax is not None:
        ax.plot(grid.temperature, 100 * grid.ece, label="validation ECE")
        ax2 = ax.twinx()
        ax2.plot(grid.temperature, grid.nll, color="C1", label="validation NLL")
        ax.axvline(t_ece, color="C0", ls=":")
        ax2.axvline(t_nll, color="C1", ls=":")
        ax.set(xlabel="T", ylabel="validation ECE (%)")
        ax2.set_ylabel("validation NLL (nats)")
    test_ece = {t: metrics.ece(metrics.softmax(zt / t), yt) for t in (1.0, t_ece, t_nll)}
    winner = "the grid's T (the hand search)" if test_ece[t_ece] < test_ece[t_nll] else "the NLL's T"
    text = "\n".join([
        f"grid ECE optimum T = {t_ece:.2f}, NLL optimum T = {t_nll:.3f}",
        f"test ECE: uncalibrated {100 * test_ece[1.0]:.2f} %, T_ece {100 * test_ece[t_ece]:.2f} %, "
        f"T_nll {100 * test_ece[t_nll]:.2f} %",
        f"On this one split, {winner} has the lower test ECE."])
    return text, {"t_ece": t_ece, "t_nll": t_nll, "test_ece": test_ece}


def resplit_table(run, temperatures, n_resplits: int, seed: int = 0) -> str:
    """Both temperatures picked on a random half of a run's validation and test logits and compared
    on the other, ``n_resplits`` times (Lab 2, part 5).

    Parameters
    ----------
    run : RunResult
    temperatures : array
        The grid.
    n_resplits : int
    seed : int, default=0

    Returns
    -------
    str
        How often each wins on test ECE and NLL, how much each temperature moves, the mean and
        spread of the ECE difference and the one split of :func:`grid_against_nll`.

    Examples
    --------
    >>> from calibcourse.study.training.results import RunResult
    >>> rng = np.random.default_rng(0)
    >>> y = rng.integers(0, 3, 400); z = 4.0 * np.eye(3)[y] + rng.normal(0, 2, (400, 3))
    >>> run = RunResult({}, None, {"val_logits": z[:200], "val_labels": y[:200],
    ...                            "test_logits": z[200:], "test_labels": y[200:]})
    >>> print(resplit_table(run, np.linspace(0.5, 3, 26), n_resplits=3).splitlines()[0])
    3 random splits:
    """
    _check_positive_int("n_resplits", n_resplits)
    zv, yv, zt, yt = _split_logits(run)
    z_all, y_all = np.r_[zv, zt], np.r_[yv, yt]
    rng = np.random.default_rng(seed)
    rows = []
    for _ in range(n_resplits):
        perm = rng.permutation(len(y_all))
        a, b = perm[: len(yv)], perm[len(yv):]
        te = calibrators.TemperatureScaling.grid(z_all[a], y_all[a], temperatures).best("ece")
        tn = calibrators.TemperatureScaling().fit(z_all[a], y_all[a]).temperature_
        pe, pn = metrics.softmax(z_all[b] / te), metrics.softmax(z_all[b] / tn)
        rows.append((te, tn, metrics.ece(pe, y_all[b]), metrics.ece(pn, y_all[b]),
                     metrics.nll(pe, y_all[b]), metrics.nll(pn, y_all[b])))
    te, tn, ece_e, ece_n, nll_e, nll_n = np.array(rows).T
    one = grid_against_nll(run, temperatures)[1]
    above = one["test_ece"][one["t_ece"]] - one["test_ece"][one["t_nll"]]
    d = ece_e - ece_n
    return "\n".join([
        f"{len(rows)} random splits:",
        f"  lower test ECE: grid's T in {np.mean(ece_e < ece_n):.0%} of them, NLL's T in {np.mean(ece_n < ece_e):.0%}",
        f"  lower test NLL: grid's T in {np.mean(nll_e < nll_n):.0%} of them, NLL's T in {np.mean(nll_n < nll_e):.0%}",
        f"  std of T from split to split: grid's {te.std():.3f}, NLL's {tn.std():.3f}",
        f"  test ECE, grid's T minus NLL's T: mean {100 * d.mean():+.2f}, std {100 * d.std():.2f} points",
        f"  (on the split above: {100 * above:+.2f} points)"])


# ============================================================================ Lab 3
def _paired_ece(pa, pb, y, boot_idx, n_bins=15):
    from calibcourse.study.course.checks.lab3 import paired_reference

    return paired_reference(pa, pb, y, boot_idx, n_bins)[:3]


def calibrator_table(run, yours: dict, paired=None, n_boot: int = 1000, seed: int = 0) -> str:
    """Three binary calibrators fitted on a run's validation P(1), their test ECE and MCE (top-label,
    as chapter 3), and each one's ECE change against the uncalibrated scores with a paired
    bootstrap interval (Lab 3, part 5).

    Parameters
    ----------
    run : RunResult
        A binary run (``probs(split)[:, 1]`` is the score).
    yours : dict
        ``{"histogram binning": fn or None, "isotonic": fn or None, "Platt": fn or None}``: the
        student's ``fn(val_scores, val_labels, test_scores)``, or None for the library's.
    paired : callable or None, default=None
        The student's ``paired(scores_a, scores_b, labels, boot_idx) -> (estimate, low, high)``;
        None: the library's.
    n_boot : int, default=1000
    seed : int, default=0

    Returns
    -------
    str
        One line a calibrator, and which of them are the student's.

    Examples
    --------
    >>> from calibcourse.study.training.results import RunResult
    >>> rng = np.random.default_rng(0)
    >>> y = rng.integers(0, 2, 600); z = np.c_[np.zeros(600), 3.0 * (2 * y - 1) + rng.normal(0, 2, 600)]
    >>> run = RunResult({}, None, {"val_logits": z[:300], "val_labels": y[:300],
    ...                            "test_logits": z[300:], "test_labels": y[300:]})
    >>> text = calibrator_table(run, {"histogram binning": None, "isotonic": None, "Platt": None}, n_boot=50)
    >>> all(name in text for name in ("histogram binning", "isotonic", "Platt"))
    True
    """
    _check_positive_int("n_boot", n_boot)
    library = {"histogram binning": calibrators.HistogramBinning(n_bins=15),
               "isotonic": calibrators.IsotonicCalibration(),
               "Platt": calibrators.PlattScaling(input_type="probabilities")}
    unknown = sorted(set(yours) - set(library))
    if unknown:
        raise ValueError(f"yours must name calibrators among {', '.join(library)}; got {unknown}")
    paired = paired or _paired_ece
    pv, yv = run.probs("val")[:, 1], run.labels("val")
    pt, yt = run.probs("test")[:, 1], run.labels("test")
    boot_idx = np.random.default_rng(seed).integers(0, len(yt), size=(n_boot, len(yt)))
    n_errors = int(((pt > 0.5) != yt).sum())

    def row(name, p):
        return (f"{name:18s}{100 * metrics.ece(p, yt, reliability='top_label'):7.2f}"
                f"{100 * metrics.mce(p, yt, reliability='top_label'):8.2f}")

    lines = [f"validation: {len(yv)} samples; test: {len(yt)} samples, {n_errors} errors",
             "top-label ECE and MCE (15 bins); the ECE's change against uncalibrated",
             f"{'':18s}{'ECE %':>7s}{'MCE %':>8s}   change, points [95 % interval]", row("uncalibrated", pt)]
    for name, cal in library.items():
        fn = yours.get(name)
        p = fn(pv, yv, pt) if fn is not None else cal.fit(pv, yv).predict_proba(pt)[:, 1]
        est, lo, hi = paired(p, pt, yt, boot_idx)
        lines.append(row(name, p) + f"   {100 * est:+5.2f} [{100 * lo:+.2f}, {100 * hi:+.2f}]")
    mine = [name for name in library if yours.get(name) is not None] + (["the paired bootstrap"]
                                                                         if paired is not _paired_ece else [])
    lines.append("yours: " + (", ".join(mine) if mine else "none yet (the library's stand in)"))
    return "\n".join(lines)


def small_set_table(run, n_fits: int = 300, sizes=(20, 50, 200), seed: int = 1) -> str:
    """Platt scaling fitted on ``n_fits`` random calibration sets of each size drawn from a run's
    validation split, scored on its own set and on the test split (Lab 3, part 6).

    Parameters
    ----------
    run : RunResult
        A binary run.
    n_fits : int, default=300
    sizes : sequence of int, default=(20, 50, 200)
    seed : int, default=1

    Returns
    -------
    str
        The fit on the whole validation split, then per size the spread of ``a`` and ``b``, the
        mean NLL on the own set and on the test split, and how often the test NLL is above the
        full fit's.

    Examples
    --------
    >>> from calibcourse.study.training.results import RunResult
    >>> rng = np.random.default_rng(0)
    >>> y = rng.integers(0, 2, 600); z = np.c_[np.zeros(600), 3.0 * (2 * y - 1) + rng.normal(0, 2, 600)]
    >>> run = RunResult({}, None, {"val_logits": z[:300], "val_labels": y[:300],
    ...                            "test_logits": z[300:], "test_labels": y[300:]})
    >>> text = small_set_table(run, n_fits=5, sizes=(20,))
    >>> len(text.splitlines()) > 1
    True
    """
    _check_positive_int("n_fits", n_fits)
    rng = np.random.default_rng(seed)
    pv, yv = run.probs("val")[:, 1], run.labels("val")
    pt, yt = run.probs("test")[:, 1], run.labels("test")

    def fit(scores, labels):
        return calibrators.PlattScaling(input_type="probabilities").fit(scores, labels)

    full = fit(pv, yv)
    nll_full = metrics.nll(full.predict_proba(pt), yt)
    lines = [f"all {len(yv)} validation samples: a = {full.a_:.2f}, b = {full.b_:.2f}, test NLL {nll_full:.4f}",
             "small sets (a and b: 5th to 95th percentile of the fits):"]
    for n_cal in sizes:
        rows = []
        for _ in range(n_fits):
            pick = rng.choice(len(yv), n_cal, replace=False)
            if yv[pick].min() == yv[pick].max():
                continue  # one class only: no fit
            f = fit(pv[pick], yv[pick])
            rows.append((f.a_, f.b_, metrics.nll(f.predict_proba(pt), yt),
                         metrics.nll(f.predict_proba(pv[pick]), yv[pick])))
        a, b, test_nll, own_nll = np.array(rows).T
        lines += [f"n = {n_cal:3d}, {len(rows)} fits: a in [{np.percentile(a, 5):.2f}, {np.percentile(a, 95):.2f}], "
                  f"b in [{np.percentile(b, 5):.2f}, {np.percentile(b, 95):.2f}]",
                  f"    mean NLL on its own set {own_nll.mean():.4f}, on the test split {test_nll.mean():.4f}",
                  f"    test NLL above the full fit's in {np.mean(test_nll > nll_full):.0%} of the fits"]
    return "\n".join(lines)


# ============================================================================ Lab 4
def focal_gradient_table(p_t=(0.05, 0.1, 0.15, 0.19, 0.3, 0.5, 0.8)) -> str:
    """The focal loss's factor ``(1 - p_t)^gamma`` for gamma 3 and 5, and the ratio of its gradient's
    norm to cross-entropy's on two-class logits, measured with torch's autograd (Lab 4, part 5).

    Parameters
    ----------
    p_t : sequence of float, default=(0.05, 0.1, 0.15, 0.19, 0.3, 0.5, 0.8)
        The true class's probability, each in (0, 1).

    Returns
    -------
    str
        One row per ``p_t``.

    Examples
    --------
    >>> print(focal_gradient_table((0.5,)))
      p_t   (1-p)^3   (1-p)^5  gradient / CE, gamma 3  gamma 5
     0.50     0.125     0.031                   0.385    0.140
    """
    import torch
    import torch.nn.functional as F

    from calibcourse.study.training.losses import focal_loss

    p = torch.tensor(list(p_t), dtype=torch.float64)
    if p.ndim != 1 or not bool(((p > 0) & (p < 1)).all()):
        raise ValueError(f"p_t must be probabilities in (0, 1); got {p_t!r}")

    def grad_norm(loss_fn):
        z = torch.stack([torch.log(p / (1 - p)), torch.zeros_like(p)], 1).requires_grad_(True)
        loss_fn(z, torch.zeros(len(p), dtype=torch.long)).backward()
        return z.grad.norm(dim=1)

    # the mean over n samples scales every gradient by 1/n alike: sums keep one sample's gradient
    ce = grad_norm(lambda z, y: F.cross_entropy(z, y, reduction="sum"))
    def summed_focal(gamma):  # focal loss summed over the samples, as the CE beside it
        return lambda z, y: len(p) * focal_loss(z, y, gamma)

    ratio = {g: grad_norm(summed_focal(float(g))) / ce for g in (3, 5)}
    lines = [f"{'p_t':>5s} {'(1-p)^3':>9s} {'(1-p)^5':>9s} {'gradient / CE, gamma 3':>23s} {'gamma 5':>8s}"]
    for i, pi in enumerate(p.tolist()):
        lines.append(f"{pi:5.2f} {(1 - pi) ** 3:9.3f} {(1 - pi) ** 5:9.3f} {float(ratio[3][i]):23.3f} "
                     f"{float(ratio[5][i]):8.3f}")
    return "\n".join(lines)


def loss_comparison(epochs: int, focal=None, flsd53=None, classwise_ece=None) -> str:
    """The same MLP trained on MNIST-1D with cross-entropy, a focal loss (gamma 3) and FLSD-53;
    error, ECE, class-wise ECE and SECE of each on the test split (Lab 4, part 6).

    Parameters
    ----------
    epochs : int
    focal : callable or None, default=None
        The student's ``focal(logits, labels, gamma)``; None: the library's.
    flsd53 : callable or None, default=None
        The student's ``flsd53(logits, labels)``; None: the library's.
    classwise_ece : callable or None, default=None
        The student's ``classwise_ece(probs, labels, n_bins)``; None: the library's.

    Returns
    -------
    str
        Whose losses were used, then one row a loss.

    Examples
    --------
    >>> lines = loss_comparison(epochs=1).splitlines()  # three short trainings
    >>> lines[0], [line.split()[0] for line in lines[2:]]
    ("losses: the library's (your checks do not pass yet)", ['cross-entropy', 'focal,', 'FLSD-53'])
    """
    from calibcourse.study.training import losses
    from calibcourse.study.training.steps import register_loss
    from calibcourse.study.training.train import train

    _check_positive_int("epochs", epochs)
    mine = focal is not None and flsd53 is not None
    focal_fn = focal if focal is not None else losses.focal_loss
    register_loss("lab4_focal", lambda z, y: focal_fn(z, y, 3.0))
    register_loss("lab4_flsd53", flsd53 if flsd53 is not None else losses.flsd53_loss)
    cw = classwise_ece if classwise_ece is not None else (lambda p, y, m: metrics.classwise_ece(p, y, n_bins=m))
    base = {"data": {"name": "mnist1d"}, "model": {"name": "mlp", "depth": 4, "width": 256},
            "epochs": epochs}
    lines = ["losses: " + ("yours" if mine else "the library's (your checks do not pass yet)"),
             f"{'':15s}{'error %':>8s}{'ECE %':>7s}{'class-wise ECE %':>18s}{'SECE %':>8s}"]
    for name, cfg in (("cross-entropy", base), ("focal, gamma 3", {**base, "loss": "lab4_focal"}),
                      ("FLSD-53", {**base, "loss": "lab4_flsd53"})):
        r = train(cfg, progress=False)
        p, y = r.probs(), r.labels()
        lines.append(f"{name:15s}{100 * metrics.error(p, y):8.1f}{100 * metrics.ece(p, y):7.1f}"
                     f"{100 * cw(p, y, 15):18.2f}{100 * metrics.sece(p, y):8.1f}")
    return "\n".join(lines)
