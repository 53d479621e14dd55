"""Selective prediction: how well a model's confidence ranks its own errors (chapter 6).

A model that may abstain answers only where its confidence is above a threshold. Two summaries
say how well the confidence supports that, whatever its calibration:

- :func:`misclassification_auroc`: the probability that a correct prediction has a higher
  confidence than a wrong one (ties count one half), the area under the ROC curve of the
  confidence as a detector of correct predictions;
- :func:`risk_coverage`: the error among the answered samples (the *risk*) against the fraction
  answered (the *coverage*), as the threshold falls; :func:`aurc` is the area under that curve.

:func:`risk_threshold` turns the curve into a decision: the confidence threshold that answers as
many labelled samples as it can at a target risk. Set on data of the training distribution, it
holds there only; under a shift the same threshold answers inputs whose error is higher.

Both depend on the *order* of the confidences only. A transformation that keeps the order
(any increasing function of the confidence; temperature scaling in the binary case, where the
confidence is an increasing function of :math:`|z| / T`) leaves them unchanged. In more than two
classes temperature scaling keeps each sample's argmax but can swap two samples' confidences:
the top-label confidence depends on every logit, and dividing by T weighs the gaps differently
(logits (3, 2.9, -100) are less confident than (2, 0, 0) at T = 1 and more at T = 100).

:func:`auroc` is the shared core (also the out-of-distribution detection score of chapter 6:
confidence on in-distribution inputs against confidence on inputs of no class).
"""
from __future__ import annotations

import numpy as np

from calibcourse.calibration._validation import check_labels, check_probs, to_numpy

__all__ = ["auroc", "aurc", "confidence", "misclassification_auroc", "risk_coverage", "risk_threshold"]


def _scores(x, name: str) -> np.ndarray:
    s = to_numpy(x, name)
    if s.dtype.kind not in "fiub" or s.ndim != 1:
        raise ValueError(f"{name} must be a 1-d numeric array; got dtype {s.dtype}, shape {s.shape}")
    if s.size == 0:
        raise ValueError(f"{name} is empty: at least one score is needed")
    s = s.astype(np.float64)
    if not np.all(np.isfinite(s)):
        raise ValueError(f"{name} must be finite; got {s[~np.isfinite(s)][0]!r}")
    return s


def _auroc(pos: np.ndarray, neg: np.ndarray) -> float:
    """Mann-Whitney U / (n_pos n_neg) of checked arrays, ties one half (average ranks)."""
    from scipy.stats import rankdata

    ranks = rankdata(np.concatenate([pos, neg]))
    n_pos, n_neg = len(pos), len(neg)
    return float((ranks[:n_pos].sum() - n_pos * (n_pos + 1) / 2) / (n_pos * n_neg))


def auroc(positive, negative) -> float:
    """The probability that a score of ``positive`` exceeds one of ``negative`` (ties count 1/2).

    The area under the ROC curve of the score as a detector of the positive group (the
    Mann-Whitney statistic, normalized): 1 separates them perfectly, 0.5 is chance.

    Parameters
    ----------
    positive, negative : array_like of shape (n_pos,) and (n_neg,)
        Scores of the two groups (finite).

    Returns
    -------
    float

    Examples
    --------
    >>> auroc([0.9, 0.8], [0.1, 0.2]), auroc([0.5], [0.5]), auroc([0.1], [0.9, 0.1])
    (1.0, 0.5, 0.25)
    """
    return _auroc(_scores(positive, "positive"), _scores(negative, "negative"))


def confidence(probs) -> np.ndarray:
    """The top-label confidence of each sample: the largest probability of its row.

    Shape (n,) probabilities (class 1 of a binary problem) give ``max(p, 1 - p)``.

    Parameters
    ----------
    probs : array_like of shape (n, K) or (n,)

    Returns
    -------
    numpy.ndarray of shape (n,)

    Examples
    --------
    >>> confidence([[0.2, 0.8], [0.6, 0.4]]).tolist(), confidence([0.3, 0.9]).tolist()
    ([0.8, 0.6], [0.7, 0.9])
    """
    return _confidence(check_probs(probs))


def _confidence(p: np.ndarray) -> np.ndarray:
    return np.maximum(p, 1 - p) if p.ndim == 1 else p.max(axis=1)


def _correct(p: np.ndarray, y: np.ndarray) -> np.ndarray:
    pred = (p > 0.5).astype(np.int64) if p.ndim == 1 else p.argmax(axis=1)
    return pred == y


def _checked(probs, labels):
    p = check_probs(probs)
    y = check_labels(labels, len(p), 2 if p.ndim == 1 else p.shape[1])
    return _confidence(p), _correct(p, y)


def misclassification_auroc(probs, labels) -> float:
    """How well the confidence ranks correct predictions above wrong ones: AUROC in [0, 1].

    :func:`auroc` of the top-label confidence of the correct predictions against that of the
    wrong ones (scikit-learn's ``roc_auc_score(correct, confidence)``). It is not defined when
    every prediction is right or every one wrong (an error says so).

    Parameters
    ----------
    probs : array_like of shape (n, K) or (n,)
        Predicted probabilities (rows sum to 1; (n,) is class 1 of a binary problem).
    labels : array_like of shape (n,)
        True classes.

    Returns
    -------
    float

    Examples
    --------
    >>> p = np.array([[0.9, 0.1], [0.6, 0.4], [0.3, 0.7], [0.8, 0.2]])
    >>> misclassification_auroc(p, [0, 1, 1, 0])   # the one error has the lowest confidence
    1.0
    """
    conf, ok = _checked(probs, labels)
    if ok.all() or not ok.any():
        raise ValueError(f"misclassification_auroc needs both right and wrong predictions; got "
                         f"{int(ok.sum())} right of {len(ok)}")
    return _auroc(conf[ok], conf[~ok])


def risk_coverage(probs, labels):
    """The risk-coverage curve: the error among the samples answered, as the threshold falls.

    At each distinct confidence c (highest first) the model answers the samples with confidence
    at least c; the coverage is their fraction, the risk their error. Samples of equal confidence
    enter together, so the curve does not depend on their order.

    Parameters
    ----------
    probs : array_like of shape (n, K) or (n,)
        Predicted probabilities.
    labels : array_like of shape (n,)
        True classes.

    Returns
    -------
    coverage, risk : numpy.ndarray
        One entry per distinct confidence; the last coverage is 1 (and its risk the error).

    Examples
    --------
    >>> p = np.array([[0.9, 0.1], [0.6, 0.4], [0.3, 0.7], [0.8, 0.2]])
    >>> cov, risk = risk_coverage(p, [0, 1, 1, 0])
    >>> cov.tolist(), risk.tolist()
    ([0.25, 0.5, 0.75, 1.0], [0.0, 0.0, 0.0, 0.25])
    """
    conf, ok = _checked(probs, labels)
    return _risk_coverage(conf, ok)


def _risk_coverage(conf: np.ndarray, ok: np.ndarray):
    order = np.argsort(-conf, kind="stable")
    c, wrong = conf[order], np.cumsum(~ok[order])
    last = np.r_[np.flatnonzero(np.diff(c) != 0), len(c) - 1]   # the last sample of each distinct value
    answered = last + 1
    return answered / len(c), wrong[last] / answered


def aurc(probs, labels) -> float:
    """The area under the risk-coverage curve (lower is better), a step function over the coverage.

    Each distinct confidence contributes its risk times the coverage it adds: with no ties, the
    mean over k of the error among the k most confident samples (Geifman et al.'s AURC).

    Parameters
    ----------
    probs : array_like of shape (n, K) or (n,)
    labels : array_like of shape (n,)

    Returns
    -------
    float

    Examples
    --------
    >>> p = np.array([[0.9, 0.1], [0.6, 0.4], [0.3, 0.7], [0.8, 0.2]])
    >>> aurc(p, [0, 1, 1, 0]), round(aurc(p, [1, 1, 1, 0]), 4)   # an error at the top costs more
    (0.0625, 0.5833)
    """
    cov, risk = risk_coverage(probs, labels)
    return float(np.sum(risk * np.diff(np.r_[0.0, cov])))


def risk_threshold(probs, labels, target_risk: float):
    """The abstention threshold for a target risk: the lowest confidence threshold whose answered
    samples have an error of at most ``target_risk``.

    Among the thresholds of :func:`risk_coverage` (each distinct confidence), the one with the
    largest coverage whose risk is at most ``target_risk``. It is fitted on labelled data and is
    optimistic there (the in-sample risk); Geifman and El-Yaniv (2017) bound the risk instead, a
    safer choice with few labels. Deployed on shifted inputs the same threshold can answer inputs
    at a higher risk: check it on data like the deployed inputs.

    Parameters
    ----------
    probs : array_like of shape (n, K) or (n,)
        Predicted probabilities on labelled data the model did not train on.
    labels : array_like of shape (n,)
        True classes.
    target_risk : float
        The error allowed among the answered samples, in [0, 1].

    Returns
    -------
    threshold : float
        Answer the samples whose top-label confidence is at least this; ``inf`` when no threshold
        reaches the target (answer none).
    coverage : float
        The fraction of ``probs`` it answers (0 when none).
    risk : float
        Their error (0 when none).

    Examples
    --------
    >>> p = np.array([[0.9, 0.1], [0.6, 0.4], [0.3, 0.7], [0.8, 0.2]])
    >>> risk_threshold(p, [0, 1, 1, 0], target_risk=0.0)   # the one error has confidence 0.6
    (0.7, 0.75, 0.0)
    >>> risk_threshold(p, [0, 1, 1, 0], target_risk=0.25)
    (0.6, 1.0, 0.25)
    """
    if not (isinstance(target_risk, (int, float, np.floating)) and 0 <= target_risk <= 1):
        raise ValueError(f"target_risk must be a number in [0, 1]; got {target_risk!r}")
    conf, ok = _checked(probs, labels)
    cov, risk = _risk_coverage(conf, ok)
    good = np.flatnonzero(risk <= target_risk + 1e-12)
    if len(good) == 0:
        return float("inf"), 0.0, 0.0
    i = good[-1]
    return float(np.sort(np.unique(conf))[::-1][i]), float(cov[i]), float(risk[i])
