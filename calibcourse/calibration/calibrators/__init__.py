"""Post-hoc calibration methods (chapter 3: binary methods; chapter 4: multiclass).

One API for all, in the style of scikit-learn's ``calibration.py``::

    cal = TemperatureScaling().fit(val_logits, val_labels)   # returns self
    probs = cal.predict_proba(test_logits)
    cal.temperature_                                           # fitted attributes end in "_"

Binary methods (:data:`BINARY`: ``HistogramBinning``, ``IsotonicCalibration``,
``BBQ``, ``PlattScaling``) take ``scores`` of shape ``(n,)`` (P(y = 1), or its
logit) and labels in {0, 1}, and ``predict_proba`` returns ``[P(y = 0), P(y = 1)]``
of shape ``(n, 2)``, as scikit-learn's classifiers do (``[:, 1]`` is P(y = 1)).

Multiclass methods (:data:`MULTICLASS`: ``TemperatureScaling``,
``VectorScaling``, ``MatrixScaling``, ``OneVsAll``, ``BiasCorrectedTemperatureScaling``) take scores of shape
``(n, K)`` and return probabilities of shape ``(n, K)``.
``TemperatureScaling``, ``VectorScaling`` and ``MatrixScaling`` scale logits;
``TemperatureScaling`` also takes the single logit of a sigmoid network, shape
``(n,)``, and then returns shape ``(n, 2)`` too.

scikit-learn's conventions
--------------------------
Every calibrator is a ``sklearn.base.BaseEstimator``: ``get_params(deep=True)``,
``set_params`` and ``sklearn.base.clone`` work (``OneVsAll``'s inner method
included, as ``binary_method__n_bins``), and ``predict_proba`` before ``fit``
raises scikit-learn's ``NotFittedError``. Labels follow scikit-learn's rule:
``classes_`` is the sorted unique labels of ``fit`` (or ``fit(..., classes=)``
where the calibration set lacks a class), the score columns in that order;
integers are not read by their range. A calibrator is a scikit-learn classifier
(``is_classifier``): ``predict`` (the argmax, as ``classes_``) and ``score`` (the
mean log-likelihood, what ``GridSearchCV`` maximizes by default), so
scikit-learn's model-selection tools take it. Scores of shape ``(n, 1)`` are
``(n,)``; float32 scores give float32 probabilities.

Platt scaling, temperature scaling and vector / matrix scaling take
``targets="platt"``: Platt's smoothed targets instead of the labels, as
scikit-learn's sigmoid calibration fits them.

What the scores are: ``input_type``
-----------------------------------
The binary methods and ``OneVsAll`` take ``input_type="probabilities"`` (the
default of all of them) or ``input_type="logits"``, and convert with the
sigmoid, the softmax or the logit as they need. Probabilities passed as logits
are an error wherever they can be told apart: scores that all lie in [0, 1]
for a binary method, rows that all lie in [0, 1] and sum to 1 for a
multiclass one.

Inputs may be numpy arrays or torch tensors; a torch input gives a torch output.
"""
from __future__ import annotations

from sklearn.exceptions import NotFittedError

from calibcourse.calibration.calibrators._base import INPUT_TYPES
from calibcourse.calibration.calibrators.affine import BiasCorrectedTemperatureScaling, MatrixScaling, VectorScaling
from calibcourse.calibration.calibrators.binary import BBQ, HistogramBinning, IsotonicCalibration, PlattScaling
from calibcourse.calibration.calibrators.one_vs_all import OneVsAll
from calibcourse.calibration.calibrators.temperature import TemperatureGrid, TemperatureScaling

#: Every binary calibrator: ``name -> class`` (scores of shape (n,), ``[P(y = 0), P(y = 1)]`` of shape
#: (n, 2) out). The tests run every registered calibrator through the same checks.
BINARY = {"histogram_binning": HistogramBinning, "isotonic": IsotonicCalibration, "bbq": BBQ,
          "platt": PlattScaling}
#: Every multiclass calibrator: ``name -> class`` (scores of shape (n, K), probabilities (n, K) out).
MULTICLASS = {"temperature": TemperatureScaling, "vector": VectorScaling, "matrix": MatrixScaling,
              "one_vs_all": OneVsAll, "bcts": BiasCorrectedTemperatureScaling}
#: All calibrators.
CALIBRATORS = {**BINARY, **MULTICLASS}

__all__ = ["HistogramBinning", "IsotonicCalibration", "BBQ", "PlattScaling", "TemperatureScaling",
           "TemperatureGrid", "VectorScaling", "MatrixScaling", "BiasCorrectedTemperatureScaling",
           "OneVsAll", "NotFittedError", "INPUT_TYPES", "BINARY",
           "MULTICLASS", "CALIBRATORS"]
