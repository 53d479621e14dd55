"""How far a run's training amplifies a last-bit difference, measured on the machine that trains it.

Training for tens of epochs is chaotic for some runs: a difference in the last bit of one
sum (another CPU's kernels, another thread count) grows into a difference a reader can see in
the test error or the ECE. This module measures one such difference for each run: the same
config trained again with every initial weight moved one float up
(:func:`calibcourse.study.training.train.train` with ``perturb_init=True``). If the measures the
book prints from the run move by more than :data:`STABLE_FRACTION` of :data:`TOLERANCE`, the
run is called **chaotic**, else **stable**. The result is stored in the entry's manifest
(``stability``) when the run is trained (``make train PROFILE=ci``), as information only: it
decides no test. It does not predict what another CPU does to a run, whose noise enters at
every operation and not at the start alone: on an Intel family 6 model 207, a ``ci`` run
called stable here moved its ECE by 0.22 points (issue 45). Across CPU kinds, the tests
report how far the runs moved and ``make reproduce`` checks the verdicts
(:mod:`calibcourse.tools.retrained`).
"""
from __future__ import annotations

__all__ = ["TOLERANCE", "STABLE_FRACTION", "run_metrics", "stability"]

#: How far a run's printed measures may move and still count as "within the tolerance" in the
#: reports of a retrained run (another CPU kind, thread count, torch or device), in the units
#: the book prints them: test error, ECE in percentage points, NLL in nats. The chapters print
#: error and ECE with 1-2 decimals of a point, and their seed-to-seed spread is 0.1 to several
#: points; a difference below 0.05 points cannot change a printed number by more than one unit
#: in its last digit, and is 10x smaller than the smallest difference any claim is about.
TOLERANCE = {"error": 0.05, "ece": 0.05, "nll": 0.001}
#: A run is called stable when a one-float perturbation of its initial weights moves every
#: printed measure by at most this fraction of :data:`TOLERANCE` (information; no test reads it).
STABLE_FRACTION = 0.5


def run_metrics(result, split: str = "test", n_bins: int = 15) -> dict:
    """The measures the book prints from a run: error and ECE (points), NLL.

    Parameters
    ----------
    result : calibcourse.study.training.results.RunResult
        A run.
    split : str, default="test"
        The split.
    n_bins : int, default=15
        ECE bins (Guo et al.'s 15 equal-width bins, as the chapters).

    Returns
    -------
    dict
        ``error`` and ``ece`` in percentage points, ``nll`` in nats (plug-in estimates).

    Examples
    --------
    >>> from calibcourse.calibration.synthetic import scaled_logits
    >>> from calibcourse.study.training.results import RunResult
    >>> z, y = scaled_logits(1000, 3, factor=2.0, seed=0)
    >>> m = run_metrics(RunResult({}, None, {"test_logits": z, "test_labels": y}))
    >>> sorted(m), 0 < m["ece"] < 100
    (['ece', 'error', 'nll'], True)
    """
    from calibcourse.calibration import metrics as M

    p, y = result.probs(split), result.labels(split)
    return {"error": 100 * M.error(p, y), "ece": 100 * M.ece(p, y, n_bins=n_bins, reliability="top_label"),
            "nll": M.nll(p, y)}


def stability(result, threads=None) -> dict:
    """Train ``result``'s config again with perturbed initial weights; say whether it is chaotic.

    Parameters
    ----------
    result : calibcourse.study.training.results.RunResult
        A run trained on this machine (its config is trained again, with the same threads).
    threads : int or None, default=None
        Torch threads of the perturbed run (default: the run's recorded ones).

    Returns
    -------
    dict
        ``moves`` (``{measure: perturbed - run}``, in the printed units), ``chaotic`` (bool),
        ``rule`` (the rule in words) and ``cpu_kind`` (where it was measured).

    Examples
    --------
    >>> from calibcourse.study.training.train import train
    >>> cfg = {"data": {"name": "digits", "n_train": 200}, "model": {"name": "mlp", "depth": 1, "width": 8},
    ...        "epochs": 1}
    >>> s = stability(train(cfg, progress=False))
    >>> sorted(s["moves"]), s["chaotic"]
    (['ece', 'error', 'nll'], False)
    """
    from calibcourse.study.training.provenance import cpu_kind
    from calibcourse.study.training.train import train

    threads = threads if threads is not None else (result.provenance or {}).get("threads")
    perturbed = train(result.config, progress=False, threads=threads, perturb_init=True)
    before, after = run_metrics(result), run_metrics(perturbed)
    moves = {k: after[k] - before[k] for k in before}
    chaotic = any(abs(d) > STABLE_FRACTION * TOLERANCE[k] for k, d in moves.items())
    return {"moves": moves, "chaotic": bool(chaotic), "cpu_kind": cpu_kind(),
            "rule": (f"initial weights moved one float up: chaotic if a printed measure moves by more than "
                     f"{STABLE_FRACTION} x {TOLERANCE}")}
