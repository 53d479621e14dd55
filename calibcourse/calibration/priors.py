r"""Label shift: the class priors change, the classes' inputs do not (chapter 6).

Under label shift the deployed data has other class frequencies :math:`\pi'` than the training
data's :math:`\pi`, while :math:`p(x \mid y)` stays the same. Bayes' rule then fixes the new
posteriors from the old ones without any label (:func:`adjust_priors`):

.. math::

    p'(y \mid x) \propto p(y \mid x)\, \pi'_y / \pi_y.

The new priors themselves are unknown. :func:`em_priors` estimates them from unlabelled
deployed inputs by the EM algorithm of Saerens, Latinne and Decaestecker (2002): adjust the
posteriors to the current priors (E step), set the priors to the mean adjusted posterior
(M step), repeat. It maximizes the likelihood of the deployed inputs under the model, and that
likelihood's maximum is at the true priors only if the model's probabilities are calibrated;
Alexandari, Kundaje and Shrikumar (2020) found EM hard to beat on probabilities calibrated by
bias-corrected temperature scaling (a temperature and one bias per class:
:class:`calibcourse.calibration.calibrators.BiasCorrectedTemperatureScaling`), with plain temperature
scaling less reliable. The training priors are the frequencies of the data the model was
calibrated on.

:func:`bbse_priors` is the other estimator: black-box shift estimation (Lipton, Wang and Smola 2018).
It does not read the probabilities as posteriors. It counts, on labelled data of the training
distribution, how often the model predicts class :math:`i` for inputs of class :math:`j` (the joint
confusion matrix :math:`C_{ij}`), counts the predictions on the deployed inputs
(:math:`\hat\mu_i`), and solves :math:`C w = \hat\mu` for the weights :math:`w_j = \pi'_j / \pi_j`:
under label shift the deployed predictions are that mixture of the training classes' predictions.
It needs no calibration, only an invertible confusion matrix, and it wastes what the
probabilities know beyond the predicted class; its soft variant counts probabilities instead of
predicted classes.
"""
from __future__ import annotations

import numpy as np

from calibcourse.calibration._validation import check_int, check_labels, check_probs, to_numpy

__all__ = ["adjust_priors", "bbse_priors", "em_priors"]


def _priors(priors, k: int, name: str) -> np.ndarray:
    p = to_numpy(priors, name)
    if p.dtype.kind not in "fiu" or p.shape != (k,):
        raise ValueError(f"{name} must be {k} class frequencies (one per column of probs); got shape {p.shape}")
    p = p.astype(np.float64)
    if not np.all(np.isfinite(p)) or p.min() <= 0 or abs(p.sum() - 1) > 1e-6:
        raise ValueError(f"{name} must be positive and sum to 1; got {np.round(p, 4).tolist()}")
    return p


def _probs(probs) -> np.ndarray:
    p = check_probs(probs, allow_1d=False)
    return p.astype(np.float64)


def _adjust(p: np.ndarray, ratio: np.ndarray) -> np.ndarray:
    q = p * ratio
    s = q.sum(axis=1, keepdims=True)
    return np.divide(q, s, out=np.full_like(q, 1.0 / q.shape[1]), where=s > 0)


def adjust_priors(probs, train_priors, new_priors) -> np.ndarray:
    """Posteriors under new class priors: each row times ``new_priors / train_priors``, renormalized.

    Parameters
    ----------
    probs : array_like of shape (n, K)
        The model's probabilities (trained, and calibrated, under ``train_priors``).
    train_priors, new_priors : array_like of shape (K,)
        Class frequencies (positive, summing to 1).

    Returns
    -------
    numpy.ndarray of shape (n, K)

    Examples
    --------
    >>> adjust_priors([[0.5, 0.5]], [0.5, 0.5], [0.9, 0.1]).round(3)   # an undecided input follows the priors
    array([[0.9, 0.1]])
    >>> adjust_priors([[0.2, 0.8]], [0.3, 0.7], [0.3, 0.7]).tolist()  # the same priors: unchanged
    [[0.2, 0.8]]
    """
    p = _probs(probs)
    k = p.shape[1]
    return _adjust(p, _priors(new_priors, k, "new_priors") / _priors(train_priors, k, "train_priors"))


def em_priors(probs, train_priors, max_iter: int = 1000, tol: float = 1e-8):
    """Estimate the deployed class priors from unlabelled inputs (Saerens et al. 2002's EM).

    Parameters
    ----------
    probs : array_like of shape (n, K)
        The model's probabilities on the deployed inputs.
    train_priors : array_like of shape (K,)
        The class frequencies the model's probabilities hold for (its calibration data's).
    max_iter : int, default=1000
        Iterations at most.
    tol : float, default=1e-8
        Stop when no prior moves by more than this.

    Returns
    -------
    priors : numpy.ndarray of shape (K,)
        The estimated deployed priors.
    adjusted : numpy.ndarray of shape (n, K)
        ``probs`` adjusted to them (:func:`adjust_priors`): the corrected predictions.

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> y = (rng.random(20000) < 0.8).astype(int)                  # deployed: 80 % class 1
    >>> x = rng.normal(2.0 * y, 1.0)                               # class 0 at 0, class 1 at 2
    >>> p1 = 1 / (1 + np.exp(-(2 * x - 2)))                        # exact posteriors at priors 1/2, 1/2
    >>> priors, adjusted = em_priors(np.c_[1 - p1, p1], [0.5, 0.5])
    >>> priors.round(2)
    array([0.2, 0.8])
    """
    p = _probs(probs)
    pi0 = _priors(train_priors, p.shape[1], "train_priors")
    check_int(max_iter, "max_iter", low=1)
    if not (isinstance(tol, (int, float, np.floating)) and tol > 0):
        raise ValueError(f"tol must be a number > 0; got {tol!r}")
    pi = pi0.copy()
    for _ in range(int(max_iter)):
        adjusted = _adjust(p, pi / pi0)
        new = adjusted.mean(axis=0)
        done = np.max(np.abs(new - pi)) < tol
        pi = new
        if done:
            break
    return pi, _adjust(p, pi / pi0)


def bbse_priors(source_probs, source_labels, target_probs, soft: bool = False):
    r"""Estimate the deployed class priors by black-box shift estimation (Lipton et al. 2018).

    Solves :math:`C w = \hat\mu`, where :math:`C_{ij}` is the share of the labelled source samples
    that are predicted :math:`i` and of class :math:`j`, and :math:`\hat\mu_i` the share of the
    deployed samples predicted :math:`i`; the deployed priors are :math:`w_j \pi_j`, with
    :math:`\pi` the source labels' frequencies. Weights below 0 (sampling noise) are set to 0 and
    the priors renormalized, as Lipton et al. do. ``soft=True`` counts each sample's probabilities
    instead of its predicted class (Alexandari et al. 2020's "soft BBSE").

    Parameters
    ----------
    source_probs : array_like of shape (n_source, K)
        The model's probabilities on labelled data of the training distribution, data it did not
        train on (a validation split).
    source_labels : array_like of shape (n_source,)
        Their labels, every class present.
    target_probs : array_like of shape (n_target, K)
        The model's probabilities on the deployed inputs (no labels).
    soft : bool, default=False
        Count probabilities rather than predicted classes.

    Returns
    -------
    priors : numpy.ndarray of shape (K,)
        The estimated deployed priors.
    adjusted : numpy.ndarray of shape (n_target, K)
        ``target_probs`` adjusted to them from the source priors (:func:`adjust_priors`'s rule).

    Raises
    ------
    ValueError
        Bad input, named; a class absent from ``source_labels``; a confusion matrix that cannot be
        inverted (a class the model never predicts).

    Examples
    --------
    A perfect classifier: the estimate is the share of each predicted class.

    >>> src = np.eye(3)[[0, 0, 1, 1, 2, 2]]
    >>> tgt = np.eye(3)[[0, 0, 0, 1, 2, 2]]
    >>> priors, adjusted = bbse_priors(src, [0, 0, 1, 1, 2, 2], tgt)
    >>> priors.round(3)
    array([0.5  , 0.167, 0.333])
    """
    ps, pt = _probs(source_probs), _probs(target_probs)
    k = ps.shape[1]
    if pt.shape[1] != k:
        raise ValueError(f"target_probs must have {k} columns, as source_probs; got {pt.shape[1]}")
    if not isinstance(soft, (bool, np.bool_)):
        raise ValueError(f"soft must be True or False; got {soft!r}")
    y = check_labels(source_labels, len(ps), k, "source_labels")
    counts = np.bincount(y, minlength=k)
    if counts.min() == 0:
        raise ValueError(f"source_labels must hold every class: class {int(np.argmin(counts))} is absent")
    pi = counts / len(y)
    if soft:
        rs, rt = ps, pt
    else:
        rs, rt = np.eye(k)[ps.argmax(axis=1)], np.eye(k)[pt.argmax(axis=1)]
    joint = rs.T @ np.eye(k)[y] / len(y)           # C[i, j]: predicted (or probability of) i, class j
    mu = rt.mean(axis=0)
    if np.linalg.matrix_rank(joint) < k:
        raise ValueError("the source confusion matrix is singular (a class is never predicted, or two are "
                         "predicted alike): black-box shift estimation needs it invertible")
    w = np.clip(np.linalg.solve(joint, mu), 0.0, None)
    priors = w * pi
    if priors.sum() <= 0:
        raise ValueError("every estimated weight is 0: the deployed predictions fit no mixture of the classes")
    priors = priors / priors.sum()
    return priors, _adjust(pt, priors / pi)
