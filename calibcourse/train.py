"""Training loops (chapter 1 uses ``fit_classifier``; the later chapters build on it).

Runs on CUDA when present and on the CPU otherwise.
"""
from __future__ import annotations

import numpy as np

__all__ = ["default_device", "fit_classifier", "predict_logits"]


def default_device(device: str = "auto"):
    import torch

    if device == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    return torch.device(device)


def fit_classifier(model, X, y, epochs: int = 30, lr: float = 1e-3, batch_size: int = 128,
                   weight_decay: float = 0.0, seed: int = 0, device: str = "auto",
                   history_fn=None):
    """Train ``model`` with Adam on cross-entropy for ``epochs`` epochs; return the model.

    ``history_fn(epoch, model)``, if given, is called after every epoch (e.g.
    to record test error and NLL) and its return values are collected in
    ``model.history_``.
    """
    import torch

    torch.manual_seed(seed)
    dev = default_device(device)
    model = model.to(dev)
    Xt = torch.as_tensor(np.asarray(X), dtype=torch.float32)
    yt = torch.as_tensor(np.asarray(y), dtype=torch.long)
    opt = torch.optim.Adam(model.parameters(), lr=lr, weight_decay=weight_decay)
    gen = torch.Generator().manual_seed(seed)
    model.history_ = []
    for epoch in range(1, epochs + 1):
        model.train()
        perm = torch.randperm(len(yt), generator=gen)
        for i in range(0, len(perm), batch_size):
            b = perm[i: i + batch_size]
            loss = torch.nn.functional.cross_entropy(model(Xt[b].to(dev)), yt[b].to(dev))
            opt.zero_grad()
            loss.backward()
            opt.step()
        if history_fn is not None:
            model.history_.append(history_fn(epoch, model))
    return model


def predict_logits(model, X, batch_size: int = 1024) -> np.ndarray:
    """Logits of ``model`` on ``X`` as a float64 numpy array (eval mode, no gradients)."""
    import torch

    dev = next(model.parameters()).device
    model.eval()
    out = []
    with torch.no_grad():
        Xt = torch.as_tensor(np.asarray(X), dtype=torch.float32)
        for i in range(0, len(Xt), batch_size):
            out.append(model(Xt[i: i + batch_size].to(dev)).double().cpu().numpy())
    return np.concatenate(out)
