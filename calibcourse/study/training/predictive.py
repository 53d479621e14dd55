"""Predictive distributions averaged over networks (chapter 6): deep ensembles and MC dropout.

Both average softmax outputs, not logits: a deep ensemble (Lakshminarayanan et al. 2017)
averages the softmax of ``m`` networks trained from different seeds; MC dropout (Gal and
Ghahramani 2016) averages the softmax of ``T`` forward passes of one network with its dropout
layers on. A run stores the average as its "logits", ``log(mean softmax)``: the softmax of those
logits is the average itself (:func:`log_mean_softmax`), so every measure of the book reads them
like any run's. Such averaged outputs are stored as float32 (:data:`STORED_DTYPE`): the average is
computed in float64 and rounded, a relative change below 1e-7, far under any printed digit.

The optional config keys ``ensemble`` (number of members) and ``mc_dropout`` (number of passes)
ask for them; :func:`calibcourse.study.training.train.train` calls :func:`train_ensemble` and
:func:`mc_dropout_logits`.
"""
from __future__ import annotations

import numpy as np

from calibcourse.calibration._validation import check_int

__all__ = ["log_mean_softmax", "mc_dropout_logits", "member_seed", "member_config", "combine_members",
           "train_ensemble"]

#: the dtype of averaged outputs in a run's outputs (see the module docstring)
STORED_DTYPE = np.float32


def log_mean_softmax(logits) -> np.ndarray:
    """``log(mean_j softmax(z_j))`` of logits stacked on the first axis, computed stably in float64.

    Parameters
    ----------
    logits : array_like of shape (m, n, K)
        ``m`` predictions (members or passes) of ``n`` samples.

    Returns
    -------
    numpy.ndarray of shape (n, K)
        Logits whose softmax is the mean of the ``m`` softmaxes.

    Examples
    --------
    >>> z = np.array([[[2.0, 0.0]], [[0.0, 2.0]]])          # two members that disagree
    >>> np.exp(log_mean_softmax(z)).round(3)                  # the mean of their softmaxes
    array([[0.5, 0.5]])
    >>> bool(np.allclose(np.exp(log_mean_softmax(z[:1])), np.exp(z[0]) / np.exp(z[0]).sum()))
    True
    """
    from scipy.special import log_softmax, logsumexp

    z = np.asarray(logits, dtype=np.float64)
    if z.ndim != 3 or z.shape[0] < 1:
        raise ValueError(f"logits must have shape (m, n, K) with m >= 1; got {z.shape}")
    return logsumexp(log_softmax(z, axis=2), axis=0) - np.log(z.shape[0])


def mc_dropout_logits(model, X, passes: int, seed: int, batch_size: int = 2048) -> np.ndarray:
    """MC dropout: ``log(mean softmax)`` of ``passes`` forward passes with only the dropout layers on.

    The passes draw their dropout masks from torch's generator seeded with ``seed`` (forked, so the
    caller's random state is left as it was); the other layers stay in eval mode.

    Parameters
    ----------
    model : torch.nn.Module
        The trained network.
    X : array_like or torch.Tensor
        Inputs, first axis the samples.
    passes : int
        Forward passes, at least 1.
    seed : int
        Seed of the dropout masks.
    batch_size : int, default=2048
        Samples per forward pass.

    Returns
    -------
    numpy.ndarray of shape (n, K)
        float64 logits whose softmax is the average over the passes.

    Examples
    --------
    >>> import torch
    >>> net = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.Dropout(0.5), torch.nn.Linear(8, 3))
    >>> X = torch.randn(6, 4)
    >>> a, b = mc_dropout_logits(net, X, 10, seed=1), mc_dropout_logits(net, X, 10, seed=1)
    >>> bool(np.array_equal(a, b)), a.shape, net[1].training    # seeded; the model is left in eval mode
    (True, (6, 3), False)
    """
    import torch

    check_int(passes, "passes", low=1)
    dev = next(model.parameters()).device
    X = X if torch.is_tensor(X) else torch.as_tensor(np.asarray(X), dtype=torch.float32)
    model.eval()
    for m in model.modules():
        if isinstance(m, torch.nn.modules.dropout._DropoutNd):
            m.train()
    z = []
    try:
        with torch.random.fork_rng(devices=[dev] if dev.type == "cuda" else []), torch.no_grad():
            torch.manual_seed(seed)
            for _ in range(passes):
                z.append(torch.cat([model(X[i: i + batch_size].to(dev)).double().cpu()
                                    for i in range(0, len(X), batch_size)]).numpy())
    finally:
        model.eval()
    return log_mean_softmax(np.stack(z))


def member_seed(seed: int, member: int) -> int:
    """The seed of member ``member`` of the ensemble of a run with seed ``seed``.

    Member 0 has the run's own seed, so the ensemble of seed ``s`` contains the single network of
    seed ``s`` (paired comparisons); member ``j`` has ``seed + 1000 j``, distinct from every
    other run's member while the runs' seeds stay below 1000.

    Parameters
    ----------
    seed : int
        The run's seed.
    member : int
        The member's index, from 0.

    Returns
    -------
    int
        The member's seed.

    Examples
    --------
    >>> [member_seed(3, j) for j in range(4)]
    [3, 1003, 2003, 3003]
    """
    return seed + 1000 * member


def member_config(cfg: dict, member: int) -> dict:
    """The run config of one member: the ensemble's config without ``ensemble``, seed :func:`member_seed`.

    Parameters
    ----------
    cfg : dict
        The ensemble's run config.
    member : int
        The member's index, from 0.

    Returns
    -------
    dict
        A new config.

    Examples
    --------
    >>> member_config({"model": {"name": "lenet5"}, "seed": 2, "ensemble": 5}, 1)
    {'model': {'name': 'lenet5'}, 'seed': 1002}
    """
    out = {k: v for k, v in cfg.items() if k != "ensemble"}
    out["seed"] = member_seed(cfg["seed"], member)
    return out


def combine_members(outputs: list) -> dict:
    """The ensemble's outputs from its members': every ``<split>_logits`` averaged by
    :func:`log_mean_softmax` (stored as :data:`STORED_DTYPE`), every ``<split>_labels`` checked equal.

    Outputs of the training's own bookkeeping (``best_*``, ``epoch_*``) are not combined.

    Parameters
    ----------
    outputs : list of dict
        The members' ``RunResult.outputs``, in member order.

    Returns
    -------
    dict
        The ensemble's outputs.

    Examples
    --------
    >>> a = {"test_logits": np.array([[2.0, 0.0]]), "test_labels": np.array([0])}
    >>> b = {"test_logits": np.array([[0.0, 2.0]]), "test_labels": np.array([0])}
    >>> out = combine_members([a, b])
    >>> np.exp(out["test_logits"]).round(3), out["test_logits"].dtype, out["test_labels"]
    (array([[0.5, 0.5]], dtype=float32), dtype('float32'), array([0]))
    """
    if not outputs:
        raise ValueError("outputs must hold at least one member's outputs")
    splits = [k[: -len("_logits")] for k in outputs[0] if k.endswith("_logits")
              and not k.startswith(("best_", "epoch_"))]
    out = {}
    for s in splits:
        labels = outputs[0][f"{s}_labels"]
        if any(not np.array_equal(o[f"{s}_labels"], labels) for o in outputs[1:]):
            raise ValueError(f"the members' {s} labels differ: they must be scored on the same samples")
        out[f"{s}_logits"] = log_mean_softmax([o[f"{s}_logits"] for o in outputs]).astype(STORED_DTYPE)
        out[f"{s}_labels"] = labels
    return out


def train_ensemble(cfg: dict, train_member):
    """Train the ``cfg["ensemble"]`` members of a normalized config and combine them into one result.

    Parameters
    ----------
    cfg : dict
        A normalized run config with ``ensemble`` (the number of members).
    train_member : callable
        ``train_member(member_config) -> RunResult``: trains one member (the training loop).

    Returns
    -------
    calibcourse.study.training.results.RunResult
        ``config`` is ``cfg``; ``outputs`` the members' combined outputs (:func:`combine_members`);
        ``history`` the members' histories one below the other, with a first column ``member``;
        ``info`` the summed wall and step times and parameters, ``members``, and the split sizes;
        ``provenance`` member 0's; ``model`` the members as a ``torch.nn.ModuleList``.

    Examples
    --------
    >>> from calibcourse.study.training.results import RunResult
    >>> import pandas as pd
    >>> def fake(c):   # a "member" whose logits depend on its seed
    ...     z = np.array([[float(c["seed"] % 7), 0.0]])
    ...     return RunResult(c, pd.DataFrame({"epoch": [1]}), {"test_logits": z, "test_labels": np.array([0])},
    ...                      {"wall_time_s": 1.0, "step_time_s": 0.5, "n_parameters": 10, "n_test": 1})
    >>> r = train_ensemble({"seed": 0, "ensemble": 2}, fake)
    >>> r.history["member"].tolist(), r.info["wall_time_s"], r.info["members"]
    ([0, 1], 2.0, 2)
    >>> float(r.probs("test")[0, 0].round(4))   # the mean of softmax([0, 0]) and softmax([6, 0])
    0.7488
    """
    import pandas as pd

    m = cfg.get("ensemble")
    check_int(m, "cfg['ensemble']", low=1)
    from calibcourse.study.training.results import RunResult

    members = [train_member(member_config(cfg, j)) for j in range(m)]
    history = pd.concat([r.history.assign(member=j)[["member", *r.history.columns]]
                         for j, r in enumerate(members)], ignore_index=True)
    info = {k: v for k, v in members[0].info.items() if k.startswith("n_") or k in ("device", "smoke")}
    for key in ("wall_time_s", "step_time_s", "n_parameters"):
        if key in members[0].info:
            total = sum(r.info[key] for r in members)
            info[key] = round(total, 3) if isinstance(total, float) else total
    info["members"] = m
    model = None
    if all(r.model is not None for r in members):
        import torch

        model = torch.nn.ModuleList([r.model for r in members])
    return RunResult(cfg, history, combine_members([r.outputs for r in members]), info,
                     provenance=members[0].provenance, model=model)
