"""Calibration measures (chapter 1, *Theory*; reused in every later chapter).

A functional core in the style of ``torchmetrics.functional``: every measure
takes ``probs`` and ``labels`` as numpy arrays or torch tensors (or lists) and
returns a Python float. The registries :data:`SCORES`,
:data:`CALIBRATION_ERRORS` and :data:`MEASURES` list them by name (the tests
iterate over them, and :func:`calibcourse.calibration.report.calibration_report` computes them all).

Inputs
------
``probs``
    Shape ``(n, K)``: a probability vector per sample (rows sum to 1 within
    ``calibcourse.calibration._validation.SUM_TOL`` = 1e-3), or shape ``(n,)``: the
    probability of class 1 of a binary problem. Logits go through
    :func:`logits_to_probs` first.
``labels``
    Shape ``(n,)``: integer class indices in ``[0, K)``.

Bins
----
The binned measures bin with :mod:`calibcourse.calibration.binning`: equal-width bins
``((m-1)/M, m/M]`` closed on the right (Guo et al. 2017), a confidence of
exactly 0 in the first bin and exactly 1 in the last. ``torchmetrics`` uses
``[lo, hi)`` instead (and puts a confidence of exactly 1.0 in an extra bin);
``netcal`` uses ``[lo, hi)`` too, and reads a two-column ``(n, 2)`` input as
binary, measuring ``P(y = 1)`` (our ``reliability="positive_class"``). On
inputs with no confidence on an edge all three agree.

What is measured: ``reliability``
---------------------------------
By default (``reliability=None``) a binary input of shape ``(n,)`` is P(y = 1)
and its reliability is measured: confidence ``p`` against the outcome ``y``
(``reliability="positive_class"``, as ``sklearn.calibration.calibration_curve``
and ``torchmetrics``' ``BinaryCalibrationError``), and a matrix ``(n, K)`` is
measured top-label (``reliability="top_label"``, as ``torchmetrics``'
``MulticlassCalibrationError``): confidence ``max_k p_k``, correctness
``[argmax_k p_k == y]``. The top-label view of a binary ``(n,)`` input is asked
for explicitly, ``reliability="top_label"``: ``p`` is then read as the
two-column matrix ``[1 - p, p]``. ``reliability="positive_class"`` also takes
an ``(n, 2)`` matrix (its column 1).
"""
from __future__ import annotations

from calibcourse.calibration.metrics._core import (
                                                   NORMS,
                                                   PROB_EPS,
                                                   RELIABILITIES,
                                                   ReliabilityBins,
                                                   log_softmax,
                                                   logits_to_probs,
                                                   probs_to_logits,
                                                   reliability_bins,
                                                   softmax,
                                                   top_label,
)
from calibcourse.calibration.metrics.binned import ace, classwise_ece, debiased_ece, ece, mce
from calibcourse.calibration.metrics.proper import BrierDecomposition, accuracy, brier, brier_decomposition, error, nll
from calibcourse.calibration.metrics.resampling import binned_on_confidence, confidence_outcome
from calibcourse.calibration.metrics.smooth import sece, smooth_ece, smooth_ece_bandwidth

__all__ = [
    "binned_on_confidence",
    "confidence_outcome",
    "softmax",
    "log_softmax",
    "logits_to_probs",
    "probs_to_logits",
    "PROB_EPS",
    "top_label",
    "reliability_bins",
    "ReliabilityBins",
    "ece",
    "mce",
    "ace",
    "classwise_ece",
    "debiased_ece",
    "sece",
    "smooth_ece",
    "smooth_ece_bandwidth",
    "nll",
    "brier",
    "brier_decomposition",
    "BrierDecomposition",
    "error",
    "accuracy",
    "SCORES",
    "CALIBRATION_ERRORS",
    "MEASURES",
    "NORMS",
    "RELIABILITIES",
]

SCORES = {"error": error, "nll": nll, "brier": brier}
#: Every calibration error: ``name -> fn(probs, labels, ..., reliability=...) -> float``.
CALIBRATION_ERRORS = {"ece": ece, "mce": mce, "ace": ace, "classwise_ece": classwise_ece,
                      "debiased_ece": debiased_ece, "sece": sece, "smooth_ece": smooth_ece}
#: Every measure of this module, in the column order of :func:`calibcourse.calibration.report.calibration_report`.
MEASURES = {**SCORES, **CALIBRATION_ERRORS}
