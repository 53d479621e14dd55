"""Chapter 5's diagnosis: arms paired by seed with their reference, and the view of those tests."""
from __future__ import annotations

import numpy as np

from calibcourse.calibration import metrics as M
from calibcourse.calibration import stats
from calibcourse.study.analysis.tables.summaries import fmt_difference, method_label

__all__ = ["diagnosis_table", "seed_paired_view"]


def _final_mean_gamma(result) -> float:
    """The last epoch's mean gamma on the test samples (NaN for a run without a gamma-Net)."""
    h = result.history
    if h is None or "gamma_mean" not in getattr(h, "columns", ()):
        return float("nan")
    return float(h["gamma_mean"].iloc[-1])


def diagnosis_table(arms: dict, reference: dict, labels, n_boot: int = 200, seed: int = 0,
                    reference_name: str = "CE"):
    """Arms of a diagnosis against a reference method, paired by seed (chapter 5's diagnosis).

    Every arm's seed ``s`` is compared with the reference's seed ``s`` on the same test samples
    by :func:`calibcourse.calibration.stats.paired_seeds_difference` (test error and 15-bin ECE):
    the mean of the per-seed differences, its 95 % interval and the sign count.

    Parameters
    ----------
    arms : dict
        ``{arm: {seed: RunResult}}``; at least one arm, each with at least one seed.
    reference : dict
        ``{seed: RunResult}`` of the reference method; it must hold every seed of every arm.
    labels : array_like of shape (n,)
        The test labels every run shares.
    n_boot : int, default=200
        Bootstrap resamples of the test samples (0: the seeds alone).
    seed : int, default=0
        Seed of the bootstrap.
    reference_name : str, default="CE"
        The reference's name in the column titles.

    Returns
    -------
    table : pandas.DataFrame
        Indexed by arm: ``seeds``, ``Error (%)`` and ``ECE (%)`` (means over the arm's seeds),
        ``final mean γ`` (mean over seeds of the last epoch's mean gamma; NaN without a
        gamma-Net), then for error and ECE the difference to the reference in points with its
        interval and the sign count (``"worse in k of n seeds"``).
    tests : dict
        ``{(arm, "Error" or "ECE"): calibcourse.calibration.stats.PairedSeeds}``.

    Examples
    --------
    >>> import pandas as pd
    >>> from calibcourse.study.training.results import RunResult
    >>> rng = np.random.default_rng(0)
    >>> y = rng.integers(0, 3, 600)
    >>> def fake(scale, s):
    ...     z = np.eye(3)[y] * 2 + np.random.default_rng(s).normal(size=(600, 3))
    ...     return RunResult({}, pd.DataFrame(), {"test_logits": scale * z, "test_labels": y})
    >>> ce = {s: fake(4.0, s) for s in range(3)}          # overconfident
    >>> arm = {s: fake(2.0, s) for s in range(3)}         # the same argmax, calibrated
    >>> table, tests = diagnosis_table({"soft": arm}, ce, y, n_boot=50)
    >>> int(table.loc["soft", "seeds"]), tests[("soft", "Error")].estimate
    (3, 0.0)
    >>> table.loc["soft", "ECE: seeds"]
    'worse in 0 of 3 seeds'
    """
    import pandas as pd

    if not isinstance(arms, dict) or not arms:
        raise ValueError(f"arms must be a non-empty dict {{arm: {{seed: RunResult}}}}; got {arms!r}")
    if not isinstance(reference, dict) or not reference:
        raise ValueError(f"reference must be a non-empty dict {{seed: RunResult}}; got {reference!r}")
    y = np.asarray(labels)
    rows, tests = [], {}
    for arm, by_seed in arms.items():
        if not isinstance(by_seed, dict) or not by_seed:
            raise ValueError(f"arms[{arm!r}] must be a non-empty dict {{seed: RunResult}}; got {by_seed!r}")
        missing = [s for s in by_seed if s not in reference]
        if missing:
            raise ValueError(f"reference has no seed {missing[0]!r} of arm {arm!r}: the comparison is paired "
                             f"by seed; reference holds seeds {sorted(reference)}")
        order = sorted(by_seed)
        for s in order:
            for who, r in ((arm, by_seed[s]), (reference_name, reference[s])):
                if not np.array_equal(r.labels(), y):
                    raise ValueError(f"labels differ from the test labels of {who!r}, seed {s}: the runs must "
                                     "share one test set")
        p_arm = [by_seed[s].probs() for s in order]
        p_ref = [reference[s].probs() for s in order]
        row = {"arm": arm, "seeds": len(order),
               "Error (%)": 100 * float(np.mean([M.error(p, y) for p in p_arm])),
               "ECE (%)": 100 * float(np.mean([M.ece(p, y) for p in p_arm])),
               "final mean γ": float(np.mean([_final_mean_gamma(by_seed[s]) for s in order]))}
        for label, metric in (("Error", M.error), ("ECE", M.ece)):
            d = stats.paired_seeds_difference(metric, p_arm, p_ref, y, n_boot=n_boot, seed=seed)
            tests[(arm, label)] = d
            row[f"{label} - {reference_name} (points)"] = fmt_difference(d, unit="", digits=2)
            row[f"{label}: seeds"] = d.sign_text
        rows.append(row)
    return pd.DataFrame(rows).set_index("arm"), tests


def seed_paired_view(tests: dict, units: dict | None = None, nulls: dict | None = None):
    """Seed-paired comparisons as a table: A - B with its 95 % interval, the sign count and the
    verdict of "A - B lies below its bound" (the meta-regularization study's comparison).

    Parameters
    ----------
    tests : dict
        ``{(measure, A, B): calibcourse.calibration.stats.PairedSeeds}``.
    units : dict, optional
        ``{measure: (scale, unit)}``; by default NLL in nats (scale 1), every other measure in
        percentage points.
    nulls : dict, optional
        ``{(measure, A, B): bound or None}``: the bound a row's claim puts on A - B (a claim with a
        size, e.g. 0.01 for "costs less than 1 point"); None for a row that is the cost of another
        and tests nothing (its verdict is blank). Every other row is tested against 0.

    Returns
    -------
    pandas.DataFrame
        Indexed by (measure, A, B), the methods as :func:`method_label` writes them:
        ``A - B [95 % interval]``, ``A above B in`` (``"worse in k of n seeds"``: the seeds where A's
        measure is higher), ``claim: A - B below`` (the bound, in the row's unit) and ``verdict``.

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> y = rng.integers(0, 2, 500)
    >>> a = [np.eye(2)[y] * 0.6 + 0.2 for _ in range(3)]   # correct at confidence 0.8
    >>> b = [np.eye(2)[y] * 0.9 + 0.05 for _ in range(3)]  # correct at confidence 0.95
    >>> d = stats.paired_seeds_difference(M.ece, a, b, y, n_boot=0)
    >>> seed_paired_view({("ECE", "A", "B"): d}).loc[("ECE", "A", "B")].tolist()
    ['+15.00 [+15.00, +15.00] points', 'worse in 3 of 3 seeds', '0', 'not held']
    >>> seed_paired_view({("ECE", "A", "B"): d}, nulls={("ECE", "A", "B"): 0.2}).iloc[0, 2:].tolist()
    ['+20.00', 'held']
    """
    import pandas as pd

    if not isinstance(tests, dict) or not tests:
        raise ValueError(f"tests must be a non-empty dict {{(measure, A, B): PairedSeeds}}; got {tests!r}")
    units = {"NLL": (1.0, "nats"), **(units or {})}
    rows = []
    for key, d in tests.items():
        if not (isinstance(key, tuple) and len(key) == 3):
            raise ValueError(f"tests' keys must be (measure, A, B); got {key!r}")
        if not hasattr(d, "n_positive"):
            raise ValueError(f"tests[{key!r}] must be a stats.PairedSeeds (paired_seeds_difference); "
                             f"got {type(d).__name__}")
        measure, a, b = key
        scale, unit = units.get(measure, (100.0, "points"))
        digits = 3 if scale == 1 else 2
        null = (nulls or {}).get(key, 0.0)
        rows.append(
            {
                "measure": measure,
                "A": method_label(a),
                "B": method_label(b),
                "A - B [95 % interval]": fmt_difference(d, scale=scale, unit=unit, digits=digits),
                "A above B in": d.sign_text,
                "claim: A - B below": "" if null is None else ("0" if null == 0 else f"{scale * null:+.{digits}f}"),
                "verdict": "" if null is None else stats.verdict(d.low, d.high, null=null),
            }
        )
    return pd.DataFrame(rows).set_index(["measure", "A", "B"])


