import os

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
os.environ.setdefault("MPLBACKEND", "Agg")

import numpy as np
import pytest


def make_predictions(n, k, seed=0, sharpness=3.0, acc_boost=0.6, dtype=np.float64):
    """Random softmax probabilities with labels correlated with the argmax (no value on a bin edge)."""
    rng = np.random.default_rng(seed)
    z = rng.normal(size=(n, k)) * sharpness
    z -= z.max(1, keepdims=True)
    p = np.exp(z)
    p /= p.sum(1, keepdims=True)
    y = np.where(rng.random(n) < acc_boost, p.argmax(1), rng.integers(0, k, n))
    return p.astype(dtype), y


@pytest.fixture
def preds():
    return make_predictions
