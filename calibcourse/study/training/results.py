"""What a training run leaves (chapter 2): :class:`RunResult`, its logits, probabilities and labels.

A result is what the cache stores (:mod:`calibcourse.study.runs.cache`) and what the chapters read.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

__all__ = ["RunResult", "predict_logits", "meta_count", "val_part"]


# --------------------------------------------------------------------------- results
@dataclass
class RunResult:
    """What a run produces: the history per epoch, the outputs, and facts about the run.

    Attributes
    ----------
    config : dict
        The normalized run config (:func:`normalize_config`).
    history : pandas.DataFrame
        One row per epoch: ``epoch``, ``train_loss``, ``val_error``, ``val_nll``,
        ``test_error``, ``test_nll``, ``test_ece``, and the step's own columns (the gamma-Net's
        gammas in chapter 5).
    outputs : dict of str to numpy.ndarray
        ``val_logits``, ``val_labels``, ``test_logits``, ``test_labels`` of the kept epoch,
        and what the config asks for beyond them; read them with :meth:`logits`,
        :meth:`probs` and :meth:`labels`.
    info : dict
        Facts about the run: device, wall time, parameters, split sizes.
    provenance : dict
        What decides its last bits (:func:`calibcourse.study.training.provenance.current`: torch, threads,
        CPU capability, device, code fingerprint); empty for a cache entry that recorded none.
    model : torch.nn.Module or None
        The trained network when the run was just trained, ``None`` when it was read from
        the cache (which stores outputs, not weights).

    Examples
    --------
    >>> z = np.array([[2.0, 0.0], [0.0, 1.0]])
    >>> r = RunResult(config={}, history=None, outputs={"test_logits": z, "test_labels": np.array([0, 1])})
    >>> r.probs("test").round(3), r.labels("test")
    (array([[0.881, 0.119],
           [0.269, 0.731]]), array([0, 1]))
    >>> r.logits("val")
    Traceback (most recent call last):
        ...
    KeyError: "split 'val' has no logits in this run; stored: test"
    """

    config: dict
    history: "object"  # pandas DataFrame
    outputs: dict = field(default_factory=dict)  # name -> numpy array
    info: dict = field(default_factory=dict)
    provenance: dict = field(default_factory=dict)
    model: "object" = field(default=None, repr=False, compare=False)

    def logits(self, split: str = "test"):
        """Logits of a split ("val", "test", or another stored set such as "best_test"): (n, K),
        or (n,) for a single sigmoid logit ("epoch_test", kept with ``keep_epoch_logits``: one
        such array per epoch)."""
        return self._stored(split, "logits")

    def probs(self, split: str = "test"):
        """Probabilities of a split: :func:`calibcourse.calibration.metrics.logits_to_probs` of its logits."""
        from calibcourse.calibration.metrics import logits_to_probs

        return logits_to_probs(self.logits(split))

    def labels(self, split: str = "test"):
        """Integer labels of a split, in the order of its logits."""
        return self._stored(split, "labels")

    def _stored(self, split: str, kind: str):
        """``outputs["<split>_<kind>"]``, or a KeyError that names the splits stored with that kind."""
        key = f"{split}_{kind}"
        if key not in self.outputs:
            stored = sorted(k[: -len(kind) - 1] for k in self.outputs if k.endswith(f"_{kind}"))
            raise KeyError(f"split {split!r} has no {kind} in this run; stored: {', '.join(stored)}")
        return self.outputs[key]


# --------------------------------------------------------------------------- parts of the validation split
def meta_count(n_val: int, meta_val: float) -> int:
    """How many of ``n_val`` validation samples the meta-learner takes with ``meta.meta_val``: the first
    ``round(meta_val * n_val)`` (the rest is post-hoc calibration's and the grids').

    Parameters
    ----------
    n_val : int
        The validation split's size.
    meta_val : float
        The config's ``meta.meta_val``, a fraction.

    Returns
    -------
    int

    Examples
    --------
    >>> meta_count(750, 1 / 3), meta_count(1500, 0.5)
    (250, 750)
    """
    return int(round(meta_val * n_val))


def val_part(result: RunResult, part: str, cuts: dict, kind: str = "probs"):
    """One named part of a run's validation split.

    Parameters
    ----------
    result : RunResult
        The run.
    part : str
        A name of ``cuts``.
    cuts : dict of str to slice
        The parts, by name, as slices of the validation split.
    kind : {"probs", "logits"}, default="probs"
        What to return beside the labels.

    Returns
    -------
    tuple of numpy.ndarray
        ``(probs or logits, labels)`` of that part.

    Examples
    --------
    >>> r = RunResult({}, None, {"val_logits": np.zeros((4, 3)), "val_labels": np.array([0, 1, 2, 0])})
    >>> val_part(r, "b", {"a": slice(None, 1), "b": slice(1, None)})[1]
    array([1, 2, 0])
    >>> val_part(r, "c", {"a": slice(None, 1), "b": slice(1, None)})
    Traceback (most recent call last):
        ...
    ValueError: part must be one of a, b; got 'c'
    """
    if part not in cuts:
        raise ValueError(f"part must be one of {', '.join(cuts)}; got {part!r}")
    if kind not in ("probs", "logits"):
        raise ValueError(f"kind must be 'probs' or 'logits'; got {kind!r}")
    values = result.probs("val") if kind == "probs" else result.logits("val")
    return values[cuts[part]], result.labels("val")[cuts[part]]


def predict_logits(model, X, batch_size: int = 2048) -> np.ndarray:
    """Logits of ``model`` on ``X`` (array or tensor) as float64 numpy, in eval mode, without
    gradients; a single logit per sample comes back as shape (n,).

    Parameters
    ----------
    model : torch.nn.Module
        The network; its parameters' device is where the batches go. Left in eval mode.
    X : array_like or torch.Tensor
        Inputs, first axis the samples.
    batch_size : int, default=2048
        Samples per forward pass.

    Returns
    -------
    numpy.ndarray of shape (n, K) or (n,)
        float64 logits.

    Examples
    --------
    >>> import torch
    >>> lin = torch.nn.Linear(3, 1)
    >>> with torch.no_grad():
    ...     _ = lin.weight.fill_(1.0), lin.bias.fill_(0.5)
    >>> predict_logits(lin, np.ones((4, 3)), batch_size=3)
    array([3.5, 3.5, 3.5, 3.5])
    """
    import torch

    dev = next(model.parameters()).device
    model.eval()
    X = X if torch.is_tensor(X) else torch.as_tensor(np.asarray(X), dtype=torch.float32)
    out = []
    with torch.no_grad():
        for i in range(0, len(X), batch_size):
            out.append(model(X[i: i + batch_size].to(dev)).double().cpu())
    z = torch.cat(out).numpy()
    return z[:, 0] if z.ndim == 2 and z.shape[1] == 1 else z


def epoch_measures(z, y):
    """Test error, NLL and ECE of logits ``z`` against labels ``y`` (a row of the history)."""
    from calibcourse.calibration import metrics as M

    p = M.logits_to_probs(z)  # log-probabilities (loss "nll") pass through softmax unchanged
    # top-label also for a sigmoid network's P(y = 1) of shape (n,), as every cached history holds it
    return {"error": M.error(p, y), "nll": M.nll(p, y), "ece": M.ece(p, y, reliability="top_label")}
