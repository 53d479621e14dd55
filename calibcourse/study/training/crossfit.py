"""Calibration without a held-out set (chapter 6): cross-fitting a temperature, as scikit-learn does.

A held-out split spends data twice over: the network never trains on it, and only it is left
to fit the calibrator. Cross-fitting uses every sample for both. The pool (a run's training
and validation splits together) is cut into ``k`` stratified folds
(:func:`calibcourse.calibration.folds.fold_indices`, shuffled by the run's seed);
``k`` networks each train on ``k - 1`` folds and predict the fold they did not see, which
gives an out-of-fold logit for every sample of the pool (:func:`out_of_fold`). One temperature
is fitted on the out-of-fold logits and applied to a final network trained on the whole pool:
``k + 1`` trainings instead of one. This is scikit-learn's ``CalibratedClassifierCV`` with
``ensemble=False`` (``method="temperature"``); its default, ``ensemble=True``, would instead keep
the ``k`` fold networks, each with the temperature of its own held-out fold, and average their
calibrated probabilities (no final network, but ``k`` networks to keep and run).

A run config asks for it with the optional key ``"cross_fit": {"folds": k}``;
:func:`calibcourse.study.training.train.train` hands such a config to :func:`train_cross_fitted`. The
run stores what the analysis needs and no more (the committed cache is small): the final
network's test logits (``test``, as float32: the network's own precision, so nothing is lost)
and the temperature fitted on the out-of-fold logits (``temperature``), with each fold's own
temperature beside it (``fold_temperatures``); the out-of-fold logits themselves are not stored.
"""
from __future__ import annotations

import time

import numpy as np

from calibcourse.calibration.folds import fold_indices

__all__ = ["ensemble_predict", "out_of_fold", "temperature_torch", "train_cross_fitted"]


def out_of_fold(fit_predict, y, folds: int, seed: int) -> np.ndarray:
    """Out-of-fold predictions: every sample predicted by the one model that did not train on it.

    What scikit-learn's ``cross_val_predict`` computes, and ``CalibratedClassifierCV(ensemble=False)``
    fits its calibrator on, for any model: ``fit_predict(train, held)`` trains on the pool's
    samples ``train`` and returns its predictions of the samples ``held``.

    Parameters
    ----------
    fit_predict : callable
        ``fit_predict(train_indices, held_indices) -> array`` whose first axis has ``len(held_indices)`` rows.
    y : array_like of shape (n,)
        Labels of the pool (the folds are stratified by them: :func:`calibcourse.calibration.folds.fold_indices`).
    folds : int
        Number of folds.
    seed : int
        Seed of the folds.

    Returns
    -------
    numpy.ndarray
        ``n`` rows: row ``i`` is the prediction of sample ``i`` by the model of the fold that held it out.

    Examples
    --------
    >>> y = np.array([0, 1] * 5)
    >>> # a "model" that predicts the mean label of what it trained on
    >>> out_of_fold(lambda tr, held: np.full(len(held), y[tr].mean()), y, folds=5, seed=0)
    array([0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5])
    """
    y = np.asarray(y)
    out = None
    for train, held in fold_indices(y, folds, seed):
        pred = np.asarray(fit_predict(train, held))
        if pred.shape[:1] != (len(held),):
            raise ValueError(f"fit_predict must return one row per held-out sample ({len(held)}); "
                             f"got shape {pred.shape}")
        if out is None:
            out = np.empty((len(y),) + pred.shape[1:], dtype=pred.dtype)
        out[held] = pred
    return out


def ensemble_predict(fold_logits, fold_temperatures) -> np.ndarray:
    """scikit-learn's ``ensemble=True`` prediction: the mean of the fold models' calibrated probabilities.

    Each fold model's logits are divided by the temperature fitted on its own held-out fold, turned
    into probabilities, and the ``k`` results averaged (``CalibratedClassifierCV(..., ensemble=True)``
    with ``method="temperature"``; no final model is trained).

    Parameters
    ----------
    fold_logits : array_like of shape (k, n, K)
        Each fold model's logits on the same n samples.
    fold_temperatures : array_like of shape (k,)
        Each fold model's temperature (> 0).

    Returns
    -------
    numpy.ndarray of shape (n, K)
        The averaged probabilities.

    Examples
    --------
    >>> z = np.array([[[2.0, 0.0]], [[0.0, 2.0]]])        # two fold models that disagree
    >>> ensemble_predict(z, [1.0, 1.0]).round(3)
    array([[0.5, 0.5]])
    >>> ensemble_predict(z[:1], [2.0]).round(3)           # one model: temperature scaling itself
    array([[0.731, 0.269]])
    """
    from calibcourse.calibration.metrics import softmax

    z = np.asarray(fold_logits, dtype=np.float64)
    t = np.asarray(fold_temperatures, dtype=np.float64).reshape(-1)
    if z.ndim != 3 or len(t) != len(z):
        raise ValueError(f"fold_logits must be (k, n, K) and fold_temperatures (k,); got shapes {z.shape} "
                         f"and {t.shape}")
    if not np.all(np.isfinite(t) & (t > 0)):
        raise ValueError(f"fold_temperatures must be finite and > 0; got {t.tolist()}")
    return np.mean([softmax(zf / tf) for zf, tf in zip(z, t, strict=True)], axis=0)


def _moments_torch(a, a_y, w=None):
    """``at(beta) -> (dNLL/dbeta, d2NLL/dbeta2, NLL)`` over the torch tensors ``a`` (rows shifted by
    their max) and ``a_y`` (the label's entry), computed in ``a``'s dtype (float32 is ~2x faster);
    ``w``: row weights summing to 1 (None: the mean). The toolkit's numpy moments, in torch."""
    import torch

    wt = None if w is None else torch.as_tensor(w, dtype=torch.float64)

    def mean(x):
        return float(x.double().mean()) if wt is None else float((x.double() * wt).sum())

    rows = max(1, 2**18 // a.shape[1])  # a block of rows whose temporaries stay in the cache
    buf = torch.empty(min(rows, a.shape[0]), a.shape[1], dtype=a.dtype)
    sums = torch.empty(3, a.shape[0], dtype=a.dtype)

    def at(beta):
        for i in range(0, a.shape[0], rows):  # s_j = sum_k a^j exp(beta a), j = 0, 1, 2, per row
            blk = a[i: i + rows]
            q = buf[: blk.shape[0]]
            torch.mul(blk, beta, out=q).exp_()
            torch.sum(q, 1, out=sums[0, i: i + rows])
            torch.sum(q.mul_(blk), 1, out=sums[1, i: i + rows])
            torch.sum(q.mul_(blk), 1, out=sums[2, i: i + rows])
        s = sums[0]
        m1, m2 = sums[1] / s, sums[2] / s
        return mean(m1 - a_y), mean(m2 - m1 * m1), mean(s.log() - beta * a_y)
    return at
def _float32(t):
    return t.float()


def temperature_torch(logits, labels) -> float:
    """The maximum-likelihood temperature of logits, fitted in torch as the runs' temperatures are.

    The toolkit's :class:`calibcourse.calibration.calibrators.TemperatureScaling` fit (rows shifted
    by their max, safeguarded Newton in ``beta = 1/T`` from a subsample's start, float32 then
    float64 to 1e-10) with torch's sums instead of numpy's: a cross-fitted run's ``temperature``
    and ``fold_temperatures`` are outputs of the run, so their arithmetic is training code. The
    two agree to about one unit in the last place.

    Parameters
    ----------
    logits : numpy.ndarray of shape (n, K)
        Logits, K >= 2.
    labels : numpy.ndarray of shape (n,)
        Class indices in ``[0, K)``.

    Returns
    -------
    float
        The temperature ``T``; 1.0 where the logits carry no signal about the labels (the
        toolkit's choice, with its warning).

    Examples
    --------
    >>> from calibcourse.calibration.calibrators import TemperatureScaling
    >>> from calibcourse.calibration.synthetic import scaled_logits
    >>> z, y = scaled_logits(3000, 10, factor=2.5, seed=0)
    >>> t = temperature_torch(z, y)
    >>> round(t, 2), abs(t - TemperatureScaling().fit(z, y).temperature_) < 1e-12
    (2.5, True)
    """
    import torch

    from calibcourse.calibration.calibrators._newton import SUBSAMPLE, solve_beta

    z = np.asarray(logits, dtype=np.float64)
    y = np.asarray(labels, dtype=np.int64)
    if z.ndim != 2 or z.shape[1] < 2 or y.shape != (z.shape[0],):
        raise ValueError(f"logits must have shape (n, K), K >= 2, and labels (n,); got {z.shape} and {y.shape}")
    zt = torch.from_numpy(z)
    zc = zt - zt.max(1, keepdim=True).values  # beta * (z - max z) <= 0 never overflows
    zc_y = zc[torch.arange(len(y)), torch.from_numpy(y)]
    gap = (zc.mean(1) - zc_y).double().numpy()
    if bool((zc_y.numpy() == 0).all()):
        raise ValueError("the optimal temperature is 0: the calibration set is perfectly separated by the logits "
                         "(every label is the argmax)")
    if float(np.mean(gap)) >= 0:  # dNLL/dbeta at beta = 0: no finite T lowers the NLL
        import warnings

        warnings.warn("the logits carry no signal about the labels: temperature 1", UserWarning, stacklevel=2)
        return 1.0
    beta, _ = solve_beta(zc, zc_y, _moments_torch, _float32, 1e-10, 200, SUBSAMPLE)
    return 1.0 / beta


def train_cross_fitted(config: dict, train_network):
    """Train a run with ``"cross_fit": {"folds": k}``: ``k`` fold networks, then one on the whole pool.

    The pool is the run's training and validation splits together (the data a held-out run of the
    same ``data`` section splits in two). Each fold network trains on ``k - 1`` folds of it
    (:func:`calibcourse.calibration.folds.fold_indices`, seeded by the run's seed) with the run's recipe and seed, as
    scikit-learn clones one estimator per fold; the fold it holds out is its validation split, so
    its validation logits are the out-of-fold logits of that fold. The temperature is fitted on
    all the out-of-fold logits (:class:`calibcourse.calibration.calibrators.TemperatureScaling`,
    NLL), and the final network trains on the whole pool. The inputs are standardized once for
    the pool, with the statistics of the run's training split (the held-out run's), so that
    every network sees the same inputs. Called by :func:`calibcourse.study.training.train.train`, which
    sets the threads; a cross-fitted run does not checkpoint (each of its networks is short).

    Parameters
    ----------
    config : dict
        A run config with ``cross_fit`` (:func:`calibcourse.study.training.config.normalize_config`).
    train_network : callable
        ``train_network(config, data) -> RunResult``: trains one network of ``config`` on the given
        splits ``data = (X_train, y_train, X_val, y_val, X_test, y_test, stats)`` (the training
        loop; :func:`calibcourse.study.training.train.train` passes it, so this module does not import it).

    Returns
    -------
    calibcourse.study.training.results.RunResult
        Outputs: ``test_logits`` / ``test_labels`` (the final network, not calibrated; float32),
        ``temperature`` (fitted on the out-of-fold logits), ``fold_temperatures`` (each
        fitted on its own fold's held-out logits alone) and ``fold_test_logits`` (k, n_test, K), the
        fold networks' test logits (float32: with ``fold_temperatures``, scikit-learn's
        ``ensemble=True`` prediction, :func:`ensemble_predict`); the
        history of the final network (its validation columns empty: it has no validation split);
        ``info`` with the wall time of all ``k + 1`` trainings and of each.

    Examples
    --------
    >>> cfg = {"data": {"name": "digits", "n_train": 300}, "model": {"name": "mlp", "depth": 1, "width": 8},
    ...        "epochs": 2, "seed": 0, "cross_fit": {"folds": 3}}
    >>> from calibcourse.study.training.train import _train
    >>> r = train_cross_fitted(cfg, lambda c, data: _train(c, False, None, 1, data=data))
    >>> r.logits("test").shape, r.info["trainings"], r.info["n_pool"], r.outputs["fold_temperatures"].shape
    ((359, 10), 4, 659, (3,))
    >>> float(r.outputs["temperature"]) > 0
    True
    """
    from calibcourse.study.training.config import load_data_splits, normalize_config
    from calibcourse.study.training.results import RunResult

    cfg = normalize_config(config)
    if "cross_fit" not in cfg:
        raise ValueError('config must have "cross_fit": {"folds": k}')
    k = cfg["cross_fit"]["folds"]
    base = {key: v for key, v in cfg.items() if key != "cross_fit"}
    start = time.perf_counter()
    Xtr, ytr, Xva, yva, Xte, yte, stats = load_data_splits(cfg["data"], return_stats=True)
    X, y = np.concatenate([Xtr, Xva]), np.concatenate([ytr, yva])
    fold_t, fold_time, fold_test = [], [], []

    def fit_predict(train, held):
        r = train_network(base, (X[train], y[train], X[held], y[held], Xte, yte, stats))
        fold_t.append(temperature_torch(r.logits("val"), y[held]))
        fold_time.append(r.info["wall_time_s"])
        fold_test.append(np.asarray(r.logits("test"), dtype=np.float32))
        return r.logits("val")

    oof = out_of_fold(fit_predict, y, k, cfg["seed"])
    temperature = temperature_torch(oof, y)
    # the final network has no validation split: the pool stands in for it, and its columns are emptied
    final = train_network(base, (X, y, X, y, Xte, yte, stats))
    history = final.history.assign(val_error=np.nan, val_nll=np.nan)
    z = final.logits("test")
    if not np.array_equal(z.astype(np.float32).astype(np.float64), z):  # pragma: no cover - a float64 network
        raise ValueError("the final network's logits are not float32; store them as they are")
    outputs = {"test_logits": z.astype(np.float32), "test_labels": final.labels("test"),
               "temperature": np.array(temperature), "fold_temperatures": np.array(fold_t),
               "fold_test_logits": np.stack(fold_test)}
    info = {**final.info, "wall_time_s": round(time.perf_counter() - start, 3), "trainings": k + 1,
            "fold_wall_time_s": fold_time, "final_wall_time_s": final.info["wall_time_s"],
            "n_pool": int(len(y)), "n_val": 0}
    return RunResult(cfg, history, outputs, info, provenance=final.provenance, model=final.model)
