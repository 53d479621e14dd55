"""A result cache that a build can trust (every chapter that trains reads through it).

A run is stored once under ``data/cache/<key>/``, where ``key`` is the sha256
of its canonical config (:func:`calibcourse.study.training.config.normalize_config`). An entry holds

* ``manifest.json``: config, key, package versions, facts of the run (device, wall
  time), its ``provenance`` (:func:`calibcourse.study.training.provenance.current`: torch, threads, CPU
  capability, device and the fingerprint of the training code that produced it) and the
  sha256 of every other file;
* ``outputs.npz``: logits and labels (loaded with ``allow_pickle=False``). A float64 array whose
  every value is a float32 number (a float32 network's logits) is stored as float32 and listed in
  the manifest's ``widened``; loading widens it back, so what is read is bit for bit what was
  stored (:func:`narrow_outputs`), at about 15 % less room. An output that training no longer
  writes for the entry's config (:data:`~calibcourse.study.runs._entry.RETIRED_OUTPUTS`) is removed
  by :meth:`Cache.compact` and listed in the manifest's ``dropped``;
* ``history.csv``: the per-epoch history.

Writes are atomic (a temporary folder, then a rename), so an interrupted run
leaves no entry. An entry whose checksum or format is wrong is reported and
recomputed, never used.

    python -m calibcourse.tools.cli list | verify | train PROFILE | clear | compact [--root DIR]

(:mod:`calibcourse.tools.cli`; ``calibcourse list|verify|clear`` runs the same command). The
store knows configs only as the dicts it hashes: which runs a profile holds is
:mod:`calibcourse.study.runs.experiments`'s business.

The key does not depend on the code: a change to the training code makes an entry
*stale* (its recorded code fingerprint differs from :func:`calibcourse.study.training.provenance.code_fingerprint`;
:meth:`Cache.stale` lists them, and so does ``make status``), and ``make train`` leaves it as it
is until it is removed or retrained. ``tests/test_cache.py`` retrains ``ci`` runs and compares
them with their committed entries: bit for bit where the provenance and the CPU kind are this
machine's; elsewhere it reports how far they moved and decides nothing on it
(:mod:`calibcourse.tools.retrained`).
"""
from __future__ import annotations

import json
import os
import shutil
import time
import uuid
import warnings
from pathlib import Path

import numpy as np

from calibcourse.study.runs._entry import (
    FILES,
    FORMAT,
    CacheError,
    _manifest_text,
    _npz_bytes,
    _package_versions,
    _sha256,
    config_key,
    narrow_outputs,
    retired_outputs,
)

__all__ = ["Cache", "CacheError", "config_key", "get_or_train", "REPOSITORY_CACHE", "default_root",
           "narrow_outputs"]

#: the committed cache of a checkout of the repository (``<checkout>/data/cache``)
REPOSITORY_CACHE = Path(__file__).resolve().parents[3] / "data" / "cache"


def default_root() -> Path:
    """Where the cache is when no folder is given: ``$CALIBCOURSE_CACHE``, else the checkout's ``data/cache``.

    The package knows the repository's committed cache only when it runs from a checkout
    (``pip install -e .`` or the repository on ``sys.path``); a copy installed elsewhere has
    no cache of its own and says so instead of writing next to its installed files.

    Returns
    -------
    pathlib.Path

    Raises
    ------
    CacheError
        Neither ``CALIBCOURSE_CACHE`` nor a checkout's ``data/cache`` is there.

    Examples
    --------
    >>> saved = os.environ.pop("CALIBCOURSE_CACHE", None)
    >>> default_root() == REPOSITORY_CACHE  # run from a checkout: its committed cache
    True
    >>> os.environ["CALIBCOURSE_CACHE"] = "/tmp/my-cache"
    >>> default_root()
    PosixPath('/tmp/my-cache')
    >>> if saved is None: del os.environ["CALIBCOURSE_CACHE"]
    ... else: os.environ["CALIBCOURSE_CACHE"] = saved
    """
    env = os.environ.get("CALIBCOURSE_CACHE")
    if env:
        return Path(env)
    if (REPOSITORY_CACHE.parents[1] / "pyproject.toml").is_file() and REPOSITORY_CACHE.is_dir():
        return REPOSITORY_CACHE
    raise CacheError("no result cache: set the environment variable CALIBCOURSE_CACHE to a folder (this copy "
                     f"of calibcourse is not in a checkout of the repository, so it has no {REPOSITORY_CACHE})")


class Cache:
    """The result cache: one verified entry per run config under ``root``.

    Parameters
    ----------
    root : str or pathlib.Path, optional
        The folder; default :func:`default_root` (``$CALIBCOURSE_CACHE``, else the checkout's ``data/cache``).

    Examples
    --------
    >>> import tempfile
    >>> cfg = {"data": {"name": "digits", "n_train": 200}, "model": {"name": "mlp", "depth": 1, "width": 8},
    ...        "epochs": 1}
    >>> cache = Cache(tempfile.mkdtemp())
    >>> result = cache.get_or_train(cfg, progress=False)  # trained once, then read from disk
    >>> cache.keys() == [config_key(result.config)] and cache.verify() == []
    True
    >>> bool((cache.load(cfg).logits("test") == result.logits("test")).all())
    True
    """

    def __init__(self, root=None):
        self.root = Path(root) if root else default_root()

    # ------------------------------------------------------------------ paths
    def path(self, key: str) -> Path:
        """The folder of entry ``key``.


        Parameters
        ----------
        key : str
        A key of :func:`config_key`.

        Returns
        -------
        pathlib.Path
        ``root / key`` (which may not exist).

        """
        return self.root / key

    def keys(self) -> list[str]:
        """The keys of every entry, sorted.


        Returns
        -------
        list of str
        Folder names under ``root`` (temporary folders of writes in progress excluded).

        """
        if not self.root.exists():
            return []
        return sorted(p.name for p in self.root.iterdir() if p.is_dir() and not p.name.startswith("."))

    # ------------------------------------------------------------------ read
    def check(self, key: str) -> dict:
        """Verify an entry against its manifest.

        Parameters
        ----------
        key : str
            The entry.

        Returns
        -------
        dict
            The manifest.

        Raises
        ------
        CacheError
            The manifest is missing, not JSON, of another format or key, or a
            file is missing or does not match its checksum.
        """
        d = self.path(key)
        mf = d / "manifest.json"
        if not mf.is_file():
            raise CacheError(f"{key}: manifest.json missing")
        try:
            manifest = json.loads(mf.read_text())
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            raise CacheError(f"{key}: manifest.json is not valid JSON ({exc})") from None
        if manifest.get("format") != FORMAT:
            raise CacheError(f"{key}: format {manifest.get('format')!r}, expected {FORMAT}")
        if manifest.get("key") != key:
            raise CacheError(f"{key}: manifest names key {manifest.get('key')!r}")
        for name in FILES:
            f = d / name
            if not f.is_file():
                raise CacheError(f"{key}: {name} missing")
            expected = manifest.get("files", {}).get(name)
            if expected != _sha256(f):
                raise CacheError(f"{key}: {name} checksum mismatch (file changed or corrupt)")
        return manifest

    def load(self, config: dict):
        """The cached result of ``config``, or None.

        A corrupt entry is reported (a warning naming it and the problem) and
        treated as missing, so the caller recomputes it.


        Parameters
        ----------
        config : dict
            A run config (see :func:`calibcourse.study.training.config.normalize_config`).

        Returns
        -------
        calibcourse.study.training.results.RunResult or None
            The result, or None when there is no usable entry.

        """
        import pandas as pd

        from calibcourse.study.training.config import normalize_config
        from calibcourse.study.training.results import RunResult

        key = config_key(config)
        if not self.path(key).exists():
            return None
        try:
            manifest = self.check(key)
            with np.load(self.path(key) / "outputs.npz", allow_pickle=False) as z:
                outputs = {k: z[k] for k in z.files}
            for name in manifest.get("widened", []):  # stored as float32, losslessly (narrow_outputs)
                outputs[name] = outputs[name].astype(np.float64)
            history = pd.read_csv(self.path(key) / "history.csv")
        except (CacheError, ValueError, OSError, KeyError) as exc:
            warnings.warn(f"cache entry {key} is unusable and will be recomputed: {exc}", stacklevel=2)
            return None
        return RunResult(normalize_config(config), history, outputs, manifest.get("info", {}),
                         provenance=manifest.get("provenance", {}))

    # ------------------------------------------------------------------ write
    def store(self, result) -> Path:
        """Write ``result`` atomically (a temporary folder, then a rename).

        An existing (e.g. corrupt) entry of the same key is replaced.


        Parameters
        ----------
        result : calibcourse.study.training.results.RunResult
            A run's result (its ``config``, ``history``, ``outputs`` and ``info``).

        Returns
        -------
        pathlib.Path
            The entry's folder.

        """
        key = config_key(result.config)
        if result.info.get("perturbed_init"):
            raise CacheError(f"{key}: a run with perturbed initial weights only measures a run's stability; "
                             "it is never stored")
        if result.info.get("smoke") and self.root.resolve() == REPOSITORY_CACHE.resolve():
            raise CacheError(f"{key}: a smoke run ({result.info['smoke']}) is never stored in the committed "
                             f"cache {REPOSITORY_CACHE}; point CALIBCOURSE_CACHE at a temporary folder")
        self.root.mkdir(parents=True, exist_ok=True)
        tmp = self.root / f".tmp-{key}-{uuid.uuid4().hex[:8]}"
        tmp.mkdir()
        try:
            arrays, widened = narrow_outputs(result.outputs)
            (tmp / "outputs.npz").write_bytes(_npz_bytes(arrays))
            result.history.to_csv(tmp / "history.csv", index=False, float_format="%.10g")
            manifest = {
                "format": FORMAT, "key": key, "widened": widened,
                "config": result.config, "info": result.info, "provenance": result.provenance,
                "packages": _package_versions(),
                "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                "files": {name: _sha256(tmp / name) for name in FILES},
            }
            (tmp / "manifest.json").write_text(_manifest_text(manifest))
            final = self.path(key)
            if final.exists():
                trash = self.root / f".trash-{key}-{uuid.uuid4().hex[:8]}"
                os.replace(final, trash)
                os.replace(tmp, final)
                shutil.rmtree(trash, ignore_errors=True)
            else:
                os.replace(tmp, final)
        finally:
            if tmp.exists():
                shutil.rmtree(tmp, ignore_errors=True)
        return self.path(key)

    def restamp(self, key: str, provenance: dict, because: str) -> None:
        """Replace entry ``key``'s recorded training code by ``provenance``'s, keeping the old one.

        Only for a change of the training code that moves no bit (a module moved, a docstring
        rewritten): :func:`calibcourse.tools.reproduce.restamp` calls it after retraining
        shows byte-identical outputs. The manifest keeps ``restamped`` (the previous ``code``
        and ``because``); outputs and history are untouched. Written atomically.

        Parameters
        ----------
        key : str
            The entry.
        provenance : dict
            A provenance whose ``code`` and ``code_modules`` are recorded
            (:func:`calibcourse.study.training.provenance.current`).
        because : str
            The evidence that no bit moved, e.g. ``"38 ci runs retrained byte-identical"``.

        Returns
        -------
        None

        Examples
        --------
        >>> import tempfile
        >>> from calibcourse.study.training.train import train
        >>> cfg = {"data": {"name": "digits", "n_train": 200}, "model": {"name": "mlp", "depth": 1, "width": 8},
        ...        "epochs": 1}
        >>> cache = Cache(tempfile.mkdtemp())
        >>> key = cache.store(train(cfg, progress=False)).name
        >>> cache.restamp(key, {"code": "0123", "code_modules": {}}, because="an example")
        >>> m = cache.check(key)
        >>> m["provenance"]["code"], m["restamped"][-1]["because"], cache.verify()
        ('0123', 'an example', [])
        """
        manifest = self.check(key)
        prov = manifest.get("provenance") or {}
        history = list(manifest.get("restamped", []))
        history.append({"code": prov.get("code"), "because": because,
                        "when": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())})
        manifest["provenance"] = {**prov, "code": provenance["code"], "code_modules": provenance["code_modules"]}
        manifest["restamped"] = history
        self._rewrite_manifest(key, manifest)

    def _rewrite_manifest(self, key: str, manifest: dict) -> None:
        """Replace entry ``key``'s manifest atomically (outputs and history untouched)."""
        path = self.path(key) / "manifest.json"
        tmp = path.with_name(f".manifest-{uuid.uuid4().hex[:8]}.json")
        tmp.write_text(_manifest_text(manifest))
        os.replace(tmp, path)

    def record_stability(self, key: str, stability: dict) -> None:
        """Write ``stability`` (:func:`calibcourse.study.runs.stability.stability`) into entry ``key``'s manifest.

        Outputs and history are untouched; written atomically.

        Parameters
        ----------
        key : str
            The entry.
        stability : dict
            What the perturbed retraining measured.

        Returns
        -------
        None

        Examples
        --------
        >>> import tempfile
        >>> from calibcourse.study.training.train import train
        >>> tiny = {"data": {"name": "digits", "n_train": 100}, "model": {"name": "mlp", "depth": 1, "width": 4},
        ...         "epochs": 1}
        >>> cache = Cache(tempfile.mkdtemp())
        >>> key = cache.store(train(tiny, progress=False)).name
        >>> cache.record_stability(key, {"chaotic": False})
        >>> cache.check(key)["stability"], cache.verify()
        ({'chaotic': False}, [])
        """
        manifest = self.check(key)
        manifest["stability"] = stability
        self._rewrite_manifest(key, manifest)

    def compact(self) -> int:
        """Store every entry's lossless float32 arrays as float32 (:func:`narrow_outputs`), and drop
        the outputs its config no longer writes (:func:`retired_outputs`).

        For entries written before the cache narrowed what it stores, or before training stopped
        writing an output by default: ``outputs.npz`` is rewritten and the manifest's checksum,
        ``widened`` and ``dropped`` (the outputs removed) updated; nothing else changes, and every
        array an entry keeps loads bit for bit as before. An entry that is already compact is left
        as it is, and so is a bad one (:meth:`verify` names it).

        Returns
        -------
        int
            The bytes saved.

        Examples
        --------
        >>> import tempfile
        >>> from calibcourse.study.training.train import train
        >>> cfg = {"data": {"name": "digits", "n_train": 200}, "model": {"name": "mlp", "depth": 1, "width": 8},
        ...        "epochs": 1}
        >>> cache = Cache(tempfile.mkdtemp())
        >>> result = train(cfg, progress=False)
        >>> _ = cache.store(result)
        >>> cache.compact()  # stored compact already
        0
        >>> np.array_equal(cache.load(cfg).logits("test"), result.logits("test"))
        True
        """
        saved = 0
        for key in self.keys():
            try:
                manifest = self.check(key)
            except CacheError:
                continue  # verify() reports it
            d = self.path(key)
            with np.load(d / "outputs.npz", allow_pickle=False) as z:
                outputs = {k: z[k] for k in z.files}
            dropped = retired_outputs(manifest["config"], outputs)
            arrays, widened = narrow_outputs({k: v for k, v in outputs.items() if k not in dropped})
            if not widened and not dropped:
                continue
            before = (d / "outputs.npz").stat().st_size
            manifest["widened"] = sorted((set(manifest.get("widened", [])) - set(dropped)) | set(widened))
            if dropped:
                manifest["dropped"] = sorted(set(manifest.get("dropped", [])) | set(dropped))
            tag = uuid.uuid4().hex[:8]
            tmp_out, tmp_man = d / f".outputs-{tag}.npz", d / f".manifest-{tag}.json"
            tmp_out.write_bytes(_npz_bytes(arrays))
            manifest["files"] = {**manifest["files"], "outputs.npz": _sha256(tmp_out)}
            tmp_man.write_text(_manifest_text(manifest))
            os.replace(tmp_out, d / "outputs.npz")
            os.replace(tmp_man, d / "manifest.json")
            saved += before - (d / "outputs.npz").stat().st_size
        return saved

    def checkpoint_path(self, key: str) -> Path:
        """Where a run of ``key`` keeps its checkpoint while it trains (never an entry).


        Parameters
        ----------
        key : str
        The entry.

        Returns
        -------
        pathlib.Path
        ``root/.checkpoints/<key>.pt`` (which may not exist).

        """
        return self.root / ".checkpoints" / f"{key}.pt"

    def get_or_train(self, config: dict, progress: bool | None = None, checkpoint_every: int | None = None,
                     threads: int | None = None, on_checkpoint=None):
        """The cached result of ``config``, training (and storing) it first if needed.

        With ``checkpoint_every``, a run killed part-way leaves a checkpoint (no entry) and
        the next call resumes from it; the checkpoint is removed once the entry is stored.

        Parameters
        ----------
        config : dict
            A run config (see :func:`calibcourse.study.training.config.normalize_config`).
        progress : bool, optional
            Show a progress bar while training (default: unless ``CALIBCOURSE_QUIET`` is set).
        checkpoint_every : int, optional
            Checkpoint every this many epochs into :meth:`checkpoint_path` and resume from it; None (the
            default) trains without checkpoints.
        threads : int or None, default=None
            Torch's threads of each run that trains (None is 1:
            :func:`calibcourse.study.training.provenance.resolve_threads`).
        on_checkpoint : callable, optional
            Called with the epoch after each checkpoint (:func:`calibcourse.study.training.train.train`).

        Returns
        -------
        calibcourse.study.training.results.RunResult
            The result.

        """
        from calibcourse.study.training.train import train

        cached = self.load(config)
        if cached is not None:
            return cached
        ckpt = self.checkpoint_path(config_key(config)) if checkpoint_every else None
        result = train(config, progress=progress, checkpoint=ckpt, checkpoint_every=checkpoint_every or 1,
                       threads=threads, on_checkpoint=on_checkpoint)
        self.store(result)
        if ckpt is not None:
            ckpt.unlink(missing_ok=True)
        return result

    # ------------------------------------------------------------------ maintenance
    def verify(self) -> list[tuple[str, str]]:
        """Check every entry.


        Returns
        -------
        list of (str, str)
        ``(key, problem)`` for every bad entry; empty when all are good.

        """
        bad = []
        for key in self.keys():
            try:
                self.check(key)
            except CacheError as exc:
                bad.append((key, str(exc)))
        return bad

    def stale(self, keys=None) -> dict:
        """The entries that another version of the training code produced.

        A stale entry is still used (the key is the config's); retrain it to bring it up to date
        (remove it, then ``make train``).

        Parameters
        ----------
        keys : iterable of str, optional
            The entries to look at (default: every entry).

        Returns
        -------
        dict
            ``{key: reason}`` of every entry whose provenance records no code fingerprint or another one than
            the current training code's, with the modules that changed.

        Examples
        --------
        >>> import json, tempfile
        >>> from calibcourse.study.training.train import train
        >>> cfg = {"data": {"name": "digits", "n_train": 200}, "model": {"name": "mlp", "depth": 1, "width": 8},
        ...        "epochs": 1}
        >>> cache = Cache(tempfile.mkdtemp())
        >>> path = cache.store(train(cfg, progress=False))
        >>> cache.stale()  # trained by this code
        {}
        >>> m = json.loads((path / "manifest.json").read_text())
        >>> m["provenance"] = {}
        >>> _ = (path / "manifest.json").write_text(json.dumps(m))
        >>> cache.stale() == {path.name: "no provenance recorded"}
        True
        """
        from calibcourse.study.training.provenance import code_fingerprint, code_modules

        now, mods, out = code_fingerprint(), code_modules(), {}
        for key in self.keys() if keys is None else [k for k in keys if self.path(k).exists()]:
            try:
                prov = self.check(key).get("provenance") or {}
            except CacheError:
                continue  # verify() reports it
            if "code" not in prov:
                out[key] = "no provenance recorded"
            elif prov["code"] != now:
                old = prov.get("code_modules", {})
                changed = sorted(m for m in set(old) | set(mods) if old.get(m) != mods.get(m))
                out[key] = f"training code changed since it ran ({', '.join(changed) or 'unknown modules'})"
        return out

    def clear(self) -> int:
        """Remove the cache folder.


        Returns
        -------
        int
        The number of entries removed.

        """
        n = len(self.keys())
        if self.root.exists():
            shutil.rmtree(self.root)
        return n

    def size_bytes(self) -> int:
        """Total size of the files under ``root``.


        Returns
        -------
        int
        Bytes.

        """
        return sum(f.stat().st_size for f in self.root.rglob("*") if f.is_file()) if self.root.exists() else 0


def get_or_train(config: dict, progress: bool | None = None, root=None, threads: int | None = None):
    """The cached result of ``config``, trained first if needed: ``Cache(root).get_or_train(config)``.

    Parameters
    ----------
    config : dict
        A run config (see :func:`calibcourse.study.training.config.normalize_config`).
    progress : bool, optional
        Show a progress bar while training (default: unless ``CALIBCOURSE_QUIET`` is set).
    root : str or pathlib.Path, optional
        The cache folder (see :class:`Cache`).
    threads : int or None, default=None
        Torch's threads of each run that trains (None is 1:
        :func:`calibcourse.study.training.provenance.resolve_threads`).

    Returns
    -------
    calibcourse.study.training.results.RunResult
        The result.

    Examples
    --------
    >>> import tempfile
    >>> cfg = {"data": {"name": "digits", "n_train": 200}, "model": {"name": "mlp", "depth": 1, "width": 8},
    ...        "epochs": 1}
    >>> root = tempfile.mkdtemp()
    >>> first = get_or_train(cfg, progress=False, root=root)  # trains and stores
    >>> bool((get_or_train(cfg, root=root).logits("test") == first.logits("test")).all())  # read back
    True
    """
    return Cache(root).get_or_train(config, progress=progress, threads=threads)

