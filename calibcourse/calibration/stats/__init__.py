r"""The statistics of comparisons (chapter 1 introduces them; every chapter's verdicts use them).

A study's claim is a statement about an *effect*: "temperature scaling lowers the ECE",
"deeper networks are worse calibrated". This module turns an effect into an interval and an
interval into a verdict, the same way everywhere:

* :func:`interval` -- one measure of one predictor, ``metric(probs, labels)``;
* :func:`paired_difference` -- ``metric(a) - metric(b)`` of two predictors **on the same test
  samples** (or the relative change ``metric(a) / metric(b) - 1`` with ``relative=True``);
* :func:`seeds_difference` / :func:`seeds_interval` -- the same for the **mean over training
  seeds**;
* :func:`verdict` -- ``"held"``, ``"not held"`` or ``"inconclusive"`` from an interval.

What the intervals cover
------------------------
Binned calibration errors are biased: the plug-in ECE of a finite test set sits above the
ECE of the population (noise in a bin's accuracy only ever adds to ``|acc - conf|``) unless
the gaps are large. A percentile bootstrap inherits the bias twice: resampling adds the same
noise again, so the bootstrap distribution sits *above* the estimate, and the interval can
exclude the estimate it was built around, or, for a perfectly calibrated model, the truth in
every case. The bootstrap's own estimate of that bias, :math:`\bar\theta^* - \hat\theta`,
is right only in part: near a zero gap it catches about 40 % of it. So

* every function reports the **plug-in** value as ``estimate`` by default
  (``metrics.ece(a, y) - metrics.ece(b, y)`` exactly for a paired difference), so that a
  table, a figure and a sentence that compute the same quantity print the same number;
  the bias-corrected estimate :math:`\tilde\theta = 2\hat\theta - \bar\theta^*` only
  with ``bias_corrected=True``, and never for a maximum (the MCE, ``norm="max"``) or a
  ratio (``relative=True``), where it has no meaning;
* the default ``method="hull"`` interval is the hull of the percentile interval
  :math:`[q_{\alpha/2}, q_{1-\alpha/2}]` and the basic (bias-moving) interval
  :math:`[2\hat\theta - q_{1-\alpha/2}, 2\hat\theta - q_{\alpha/2}]`, both from the
  bootstrap of the plug-in quantity: the two differ by twice the estimated bias, and where
  the bias estimate is unreliable neither side can be trusted alone. The plug-in estimate
  lies inside by construction (and so does the bias-corrected one when it is asked for).

Measured on synthetic predictions with known truth (``tests/test_stats.py``, the book's appendix on coverage), at
n = 1000 and level 0.95: coverage of the population binned ECE 0.95 for a true ECE of 11 % and
of 2.5 %, 0.64 for a perfectly calibrated model (the percentile interval: 0.0); the rate of
"held" for two equally calibrated predictors 4-6 % against the nominal 5 % (percentile: up to
23 %; ``"bc"`` alone up to 21 %). What is covered is the population value of the *same
estimator's target*: for ``metrics.ece`` with 15 equal-width bins, the binned calibration error
:math:`\sum_m |P(\text{correct}, B_m) - E[c; B_m]|`, which can sit *below* the continuous ECE
(binning averages gaps of opposite sign). ``method`` ``"bc"`` (the basic interval, widened to
hold the bias-corrected estimate), ``"basic"`` and ``"percentile"`` are there for comparison.

Seeds
-----
:func:`seeds_difference` estimates the mean over seeds and adds two independent sources of
variation: which test samples were drawn (a joint bootstrap of the shared test set, the seeds
held fixed) and which seeds were trained (the spread of the per-seed estimates, divided by the
number of seeds). The interval is :math:`\tilde\theta \pm t_\nu \sqrt{V_\text{test} +
V_\text{seed}}` with Welch-Satterthwaite degrees of freedom for the seed part (widened to hold
the plug-in mean :math:`\hat\theta`, the default estimate; :math:`\hat\theta` itself is the
centre for a maximum or a ratio): with 3 seeds it is wide, as it should be. The seed spread also
contains the test-sample noise that is not shared between seeds, so the interval is conservative.
Averaging the endpoints of per-seed intervals, which is not an interval for anything, is what this
replaces.
"""
from __future__ import annotations

from calibcourse.calibration.stats._engine import (  # noqa: F401 (stats.x)
                                                    DIRECTIONS,
                                                    METHODS,
                                                    VERDICTS,
                                                    Difference,
                                                    ece_replicates,
                                                    interval_from_replicates,
                                                    metric_range,
                                                    per_sample_terms,
                                                    resample_indices,
                                                    verdict,
)
from calibcourse.calibration.stats.intervals import (
                                                    bootstrap_statistic,
                                                    interval,
                                                    paired_difference,
                                                    seeds_difference,
                                                    seeds_interval,
)
from calibcourse.calibration.stats.seeds import (
                                                    PairedSeeds,
                                                    RivalsDifference,
                                                    paired_seeds_contrast,
                                                    paired_seeds_difference,
                                                    rivals_difference,
)

__all__ = ["Difference", "interval", "paired_difference", "seeds_difference", "seeds_interval",
           "bootstrap_statistic", "verdict", "per_sample_terms", "ece_replicates", "VERDICTS", "DIRECTIONS", "METHODS",
           "PairedSeeds", "paired_seeds_difference",
           "paired_seeds_contrast", "RivalsDifference", "rivals_difference"]
