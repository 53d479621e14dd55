"""Guo et al.'s one-vs-all extension of a binary calibrator to K classes."""
from __future__ import annotations

import numpy as np

from calibcourse.calibration import metrics as M
from calibcourse.calibration._validation import check_choice, check_labels, check_logits, check_probs
from calibcourse.calibration.calibrators._base import INPUT_TYPES, _BinaryCalibrator, _Calibrator, _like
from calibcourse.calibration.calibrators.binary import HistogramBinning

__all__ = ["OneVsAll"]


class OneVsAll(_Calibrator):
    r"""Guo et al.'s multiclass extension of a binary method.

    For each class ``k`` a copy of ``binary_method`` is fitted on the
    probability :math:`\hat p_k` against :math:`\mathbb 1[y = k]`; the
    calibrated vector :math:`[\hat q^{(1)}, \dots, \hat q^{(K)}]` is then
    divided by its sum (a row whose calibrated values are all 0 becomes
    uniform). The predicted class may change.

    Parameters
    ----------
    binary_method : binary calibrator, default=HistogramBinning()
        One of :data:`BINARY` (its own ``input_type`` is overridden: it gets probabilities).
    input_type : {"probabilities", "logits"}, default="probabilities"
        What the scores are (:data:`calibcourse.calibration.calibrators.INPUT_TYPES`).

    A class absent from the calibration set (fitted with ``classes=`` naming it,
    as scikit-learn's ``CalibratedClassifierCV`` knows its model's classes) has
    no positives to calibrate on: its column gets the constant
    :math:`1/(n + 2)`, Laplace's estimate for a class not seen in ``n`` samples,
    before the rows are normalized.

    Attributes
    ----------
    calibrators_ : list
        The fitted binary calibrator of each class (None for a class absent from the calibration set).
    absent_value_ : float
        The calibrated value of an absent class, :math:`1/(n + 2)`.

    Examples
    --------
    >>> from calibcourse.calibration.calibrators import IsotonicCalibration
    >>> probs = np.array([[0.7, 0.2, 0.1], [0.1, 0.8, 0.1], [0.2, 0.2, 0.6], [0.6, 0.3, 0.1],
    ...                   [0.3, 0.4, 0.3], [0.1, 0.1, 0.8]])
    >>> ova = OneVsAll(IsotonicCalibration()).fit(probs, np.array([0, 1, 2, 1, 1, 2]))
    >>> ova.predict_proba(probs[:2])
    array([[1., 0., 0.],
           [0., 1., 0.]])
    """

    _fitted_attr = "calibrators_"

    #: its X is probabilities (rows in [0, 1] summing to 1) by default: the checks that feed it
    #: arbitrary real features cannot apply (``input_type="logits"`` takes logits instead)
    EXPECTED_FAILED_CHECKS = {
        **{name: why for name, why in _Calibrator.EXPECTED_FAILED_CHECKS.items()
           if name != "check_non_transformer_estimators_n_iter"},
        **{name: "X is a matrix of probabilities (rows in [0, 1] summing to 1); the check feeds arbitrary "
                 "real features" for name in (
            "check_all_zero_sample_weights_error", "check_complex_data", "check_dict_unchanged",
            "check_dont_overwrite_parameters", "check_estimators_dtypes", "check_estimators_nan_inf",
            "check_estimators_pickle", "check_f_contiguous_array_estimator", "check_fit2d_1sample",
            "check_fit_check_is_fitted", "check_fit_idempotent", "check_fit_score_takes_y",
            "check_methods_sample_order_invariance", "check_methods_subset_invariance", "check_n_features_in",
            "check_n_features_in_after_fitting", "check_pipeline_consistency", "check_positive_only_tag_during_fit",
            "check_sample_weight_equivalence_on_dense_data", "check_sample_weights_list",
            "check_sample_weights_not_an_array", "check_sample_weights_not_overwritten",
            "check_sample_weights_pandas_series", "check_sample_weights_shape", "check_classifier_data_not_an_array",
            "check_classifiers_classes", "check_classifiers_regression_target", "check_supervised_y_2d",
            "check_fit2d_1feature")},
    }

    def __init__(self, binary_method=None, input_type: str = "probabilities"):
        self.binary_method = binary_method
        self.input_type = input_type

    def _n_classes(self, scores) -> int:
        return int(self._probs(scores).shape[1])

    def _probs(self, scores):
        check_choice(self.input_type, INPUT_TYPES, "input_type")
        if self.input_type == "logits":
            return M.softmax(check_logits(scores, "logits", reject_probabilities=True))
        return check_probs(scores, "probabilities", allow_1d=False).astype(np.float64)

    def _fit(self, scores, labels, sample_weight):
        method = self.binary_method if self.binary_method is not None else HistogramBinning()
        if not isinstance(method, _BinaryCalibrator):
            raise ValueError("binary_method must be a binary calibrator such as HistogramBinning(), "
                             f"IsotonicCalibration(), BBQ() or PlattScaling(); got {method!r}")
        p = self._probs(scores)
        y = check_labels(labels, p.shape[0], p.shape[1])
        present = np.bincount(y, minlength=p.shape[1]) > 0
        # a class absent from the calibration set (named by classes=) has no positives to fit: its
        # column gets a constant, Laplace's 1 / (n + 2) (as Platt's target of a negative)
        n = p.shape[0] if sample_weight is None else float(np.sum(sample_weight))
        self.absent_value_ = 1.0 / (n + 2.0)
        self.calibrators_ = [method.clone(input_type="probabilities").fit(p[:, k], (y == k).astype(int),
                                                                           sample_weight=sample_weight)
                             if present[k] else None for k in range(p.shape[1])]
        return self

    def _predict_proba(self, scores):
        p = self._probs(scores)
        if p.shape[1] != len(self.calibrators_):
            raise ValueError(f"scores have {p.shape[1]} classes but the calibrator was fitted on "
                             f"{len(self.calibrators_)}")
        absent = getattr(self, "absent_value_", 0.0)
        q = np.stack([np.full(p.shape[0], absent) if c is None else c.predict_proba(p[:, k])[:, 1]
                      for k, c in enumerate(self.calibrators_)], 1)
        s = q.sum(1, keepdims=True)
        q = np.where(s > 0, q / np.where(s > 0, s, 1), 1.0 / q.shape[1])
        return _like(q, scores)
