"""What a cache entry is: its key (:func:`config_key`), its files, its manifest's text and its
outputs as stored (:func:`narrow_outputs`); :mod:`calibcourse.study.runs.cache` stores and reads
entries with them."""
from __future__ import annotations

import hashlib
import io
import json
import platform
from pathlib import Path

import numpy as np

__all__ = ["FORMAT", "FILES", "RETIRED_OUTPUTS", "CacheError", "config_key", "narrow_outputs", "retired_outputs"]

FORMAT = 1
FILES = ("outputs.npz", "history.csv")
#: outputs that training once wrote for every run of their kind and now writes only where the config
#: asks, by the config's path to the switch that asks (a true value): chapter 5's per-sample gamma
#: snapshots (8 MiB of the committed cache, read by no page)
RETIRED_OUTPUTS = {name: ("meta", "snapshots")
                   for name in ("snapshot_epochs", "snapshot_test_gammas", "snapshot_test_p_true")}


class CacheError(RuntimeError):
    """An entry is corrupt, incomplete or of a different format."""


def _manifest_text(manifest: dict) -> str:
    """A manifest as every entry writes it (sorted keys, one-space indents)."""
    return json.dumps(manifest, indent=1, sort_keys=True) + "\n"


def _npz_bytes(arrays: dict) -> bytes:
    """``outputs.npz``'s bytes: the arrays of :func:`narrow_outputs`, compressed."""
    buf = io.BytesIO()
    np.savez_compressed(buf, **arrays)
    return buf.getvalue()


def narrow_outputs(outputs: dict) -> tuple[dict, list[str]]:
    """The arrays an entry stores, and the names of those stored as float32 to be widened on load.

    A float64 array is stored as float32 when that loses nothing: every value (NaN and the
    sign of zero included) comes back bit for bit from ``astype(np.float64)``. A network that
    computes in float32 gives such logits; a temperature fitted in float64 does not, and stays.

    Parameters
    ----------
    outputs : dict of str to array_like
        A run's outputs.

    Returns
    -------
    arrays : dict of str to numpy.ndarray
        What to write, the narrowed arrays as float32.
    widened : list of str
        The sorted names of the narrowed arrays (the manifest's ``widened``).

    Examples
    --------
    >>> arrays, widened = narrow_outputs({"logits": np.array([0.5, -2.0]), "t": np.array(1.1)})
    >>> widened, arrays["logits"].dtype, arrays["t"].dtype
    (['logits'], dtype('float32'), dtype('float64'))
    """
    arrays, widened = {}, []
    for name, value in outputs.items():
        a = np.asarray(value)
        if a.dtype == np.float64:
            narrow = a.astype(np.float32)
            if narrow.astype(np.float64).tobytes() == a.tobytes():
                a = narrow
                widened.append(name)
        arrays[name] = a
    return arrays, sorted(widened)


def retired_outputs(config: dict, names) -> list[str]:
    """The outputs among ``names`` that a run of ``config`` no longer writes (:data:`RETIRED_OUTPUTS`).

    Parameters
    ----------
    config : dict
        The entry's config.
    names : iterable of str
        The outputs the entry stores.

    Returns
    -------
    list of str
        Sorted; empty where the config asks for them.

    Examples
    --------
    >>> stored = ["test_logits", "snapshot_test_gammas"]
    >>> retired_outputs({"meta": {"outer": "sece"}}, stored)
    ['snapshot_test_gammas']
    >>> retired_outputs({"meta": {"outer": "sece", "snapshots": True}}, stored)
    []
    """
    retired = []
    for name in names:
        if name not in RETIRED_OUTPUTS:
            continue
        switch = config
        for part in RETIRED_OUTPUTS[name]:
            switch = switch.get(part, {}) if isinstance(switch, dict) else {}
        if switch is not True:
            retired.append(name)
    return sorted(retired)


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def config_key(config: dict) -> str:
    """The cache key of a run config.

    Parameters
    ----------
    config : dict
        A run config (see :func:`calibcourse.study.training.config.normalize_config`).

    Returns
    -------
    str
        The first 20 hex digits of the sha256 of the canonical config.

    Examples
    --------
    >>> cfg = {"data": {"name": "mnist1d"}, "model": {"name": "mlp"}, "epochs": 2}
    >>> config_key(cfg) == config_key({**cfg, "lr": 1e-3})  # 1e-3 is the default
    True
    >>> len(config_key(cfg))
    20
    """
    from calibcourse.study.training.config import normalize_config

    canon = json.dumps({"config": normalize_config(config)}, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(canon.encode()).hexdigest()[:20]


def _package_versions() -> dict:
    import importlib.metadata as md

    out = {"python": platform.python_version()}
    for name in ("torch", "numpy", "scipy", "scikit-learn", "mnist1d", "mlxtend"):
        try:
            out[name] = md.version(name)
        except md.PackageNotFoundError:  # pragma: no cover
            pass
    return out
