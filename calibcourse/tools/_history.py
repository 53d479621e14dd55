"""What the repository's history says about the claims and the runs (read by :mod:`calibcourse.tools.registration`).

Two facts, both from ``git`` alone:

* **when each cache entry first existed** (:func:`cache_history`): the earliest of the ``created``
  time in its manifest and the commit that first added it, followed back through *re-keyed*
  entries. An entry deleted in the commit that adds another with the same seed and a config
  differing in at most :data:`MAX_REKEY_CHANGES` values is the same run under a new key (a changed
  config format, a larger test set, a changed hyper-parameter): the new entry inherits its time,
  and the change is recorded (a re-key whose config is unchanged is a rename and records none);
* **when each claim was declared and what its declaration said** (:func:`declarations`): the
  first commit in which a notebook under ``notebooks/`` holds the claim's anchor (its id in double
  quotes, or the text its mapping names), whichever notebook that was, and at every later commit
  that touched the notebook, the claim's margin (``null=``) and side (``direction=``) as written
  in its ``claim(...)`` call, a name resolved to the value the notebook assigns it.
"""
from __future__ import annotations

import ast
import functools
import json
import re
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

from calibcourse.tools import myst

__all__ = ["GitError", "Git", "EntryHistory", "cache_history", "Declaration", "declarations", "MAX_REKEY_CHANGES",
           "history_missing"]

#: a deleted entry is the ancestor of an entry added in the same commit when their configs differ in at most
#: this many values (and their seeds are equal)
MAX_REKEY_CHANGES = 3
CACHE_DIR = "data/cache"
NOTEBOOKS = "notebooks"


class GitError(RuntimeError):
    """git failed or is missing."""


def history_missing(root) -> str | None:
    """Why ``root`` has no history to read (None when it has): no git, not a repository, a shallow clone.

    Examples
    --------
    >>> import tempfile
    >>> history_missing(tempfile.mkdtemp())
    'not a git repository'
    """
    try:
        out = subprocess.run(["git", "rev-parse", "--is-shallow-repository"], cwd=root, capture_output=True,
                             text=True, timeout=60)
    except (OSError, subprocess.SubprocessError):
        return "git is not installed"
    if out.returncode != 0:
        return "not a git repository"
    if out.stdout.strip() == "true":
        return "a shallow clone (git clone --depth): its history is cut"
    return None


class Git:
    """``git`` commands in one repository, with a ``cat-file --batch`` reader for many blobs."""

    def __init__(self, root):
        self.root = Path(root)

    def __call__(self, *args) -> str:
        try:
            out = subprocess.run(["git", *args], cwd=self.root, capture_output=True, text=True, timeout=600)
        except (OSError, subprocess.SubprocessError) as exc:
            raise GitError(f"git {args[0]} failed: {exc}") from None
        if out.returncode != 0:
            raise GitError(f"git {' '.join(args[:2])} failed: {out.stderr.strip().splitlines()[-1:]}")
        return out.stdout

    def blobs(self, specs) -> dict:
        """``{"<rev>:<path>": text}`` for every spec (a missing one is left out)."""
        specs = list(dict.fromkeys(specs))
        if not specs:
            return {}
        out = subprocess.run(["git", "cat-file", "--batch"], cwd=self.root, input="\n".join(specs).encode() + b"\n",
                             capture_output=True, timeout=600)
        if out.returncode != 0:
            raise GitError(f"git cat-file failed: {out.stderr.decode(errors='replace').strip()}")
        data, pos, found = out.stdout, 0, {}
        for spec in specs:
            end = data.index(b"\n", pos)
            header = data[pos:end].split()
            pos = end + 1
            if header[-1] == b"missing":
                continue
            size = int(header[2])
            found[spec] = data[pos:pos + size].decode(errors="replace")
            pos += size + 1
        return found

    def log(self, *paths, extra=()) -> list:
        """``[(sha, commit time, [(status, path), ...]), ...]``, oldest first, touching ``paths`` (no renames)."""
        text = self("log", "--reverse", "--no-renames", "--format=C %H %ct", "--name-status", *extra, "--", *paths)
        commits = []
        for line in text.splitlines():
            if line.startswith("C "):
                _, sha, t = line.split()
                commits.append((sha, int(t), []))
            elif line.strip() and commits:
                status, *rest = line.split("\t")
                commits[-1][2].append((status[0], rest[-1]))
        return commits


# --------------------------------------------------------------------------- cache entries
@dataclass
class EntryHistory:
    """When one cache entry (and the entries it re-keys) first existed.

    Attributes
    ----------
    key : str
    committed : int or None
        The time (seconds since the epoch) of the first commit holding it or an ancestor.
    created : int or None
        The earliest ``created`` time in its or an ancestor's manifest.
    rekeys : list of (int, list of str)
        ``(commit time, config values changed)`` of each re-key with a changed config (its own and its
        ancestors'), oldest first.
    """

    key: str
    committed: int | None = None
    created: int | None = None
    rekeys: list = field(default_factory=list)

    @property
    def first(self) -> int | None:
        """The earliest evidence that the run existed."""
        times = [t for t in (self.committed, self.created) if t is not None]
        return min(times) if times else None


def _flat(d: dict, prefix: str = "") -> dict:
    out = {}
    for k, v in d.items():
        if isinstance(v, dict) and v:
            out.update(_flat(v, f"{prefix}{k}."))
        else:
            out[prefix + k] = json.dumps(v, sort_keys=True)
    return out


def _changes(a: dict, b: dict) -> list:
    return sorted(k for k in set(a) | set(b) if a.get(k) != b.get(k))


def _time(text: str | None) -> int | None:
    import datetime as dt

    if not text:
        return None
    try:
        return int(dt.datetime.strptime(text, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=dt.timezone.utc).timestamp())
    except ValueError:
        return None


def _json(text: str | None) -> dict:
    """A manifest's JSON, or ``{}`` where it is missing or does not parse (such an entry dates nothing)."""
    try:
        out = json.loads(text) if text else {}
    except ValueError:
        return {}
    return out if isinstance(out, dict) else {}


def _seed(flat: dict):
    return flat.get("seed"), flat.get("data.seed")


def _parents(key, scored: dict, added: dict, old: dict, cfg: dict) -> list:
    """The deleted entries an added one re-keys: its closest deleted configs (same seed, at most
    :data:`MAX_REKEY_CHANGES` values apart) that are, in turn, closest to it among the entries the same
    commit adds (a mutual best match, so that a new level of a sweep does not inherit a neighbour's time)."""
    if not scored:
        return []
    best = min(scored.values())
    if best > MAX_REKEY_CHANGES:
        return []
    out = []
    for parent in (k for k, v in scored.items() if v == best):
        rivals = [len(_changes(c, old[parent])) for k, c in added.items() if k != key and _seed(c) == _seed(cfg)]
        if all(best <= r for r in rivals):
            out.append(parent)
    return out


def cache_history(git: Git) -> dict:
    """``{key: EntryHistory}`` of every entry ever committed under ``data/cache``.

    Parameters
    ----------
    git : Git
        The repository.

    Returns
    -------
    dict
        Each key's earliest commit and ``created`` time, inherited through re-keys (see the module).
    """
    commits = git.log(CACHE_DIR)
    wanted = []
    for sha, _, changes in commits:
        adds = [p for s, p in changes if s == "A" and p.endswith("/manifest.json")]
        dels = [p for s, p in changes if s == "D" and p.endswith("/manifest.json")]
        wanted += [f"{sha}:{p}" for p in adds] + ([f"{sha}^:{p}" for p in dels] if adds else [])
    blobs = git.blobs(wanted)
    entries: dict = {}
    for sha, t, changes in commits:
        adds = [p for s, p in changes if s == "A" and p.endswith("/manifest.json")]
        dels = [p for s, p in changes if s == "D" and p.endswith("/manifest.json")]
        old = {}
        for p in dels if adds else []:
            text = blobs.get(f"{sha}^:{p}")
            if text:
                old[p.split("/")[-2]] = _flat(_json(text).get("config") or {})
        manifests = {p.split("/")[-2]: _json(blobs.get(f"{sha}:{p}")) for p in adds}
        added = {k: _flat(m.get("config") or {}) for k, m in manifests.items()}
        for key, manifest in manifests.items():
            e = entries.setdefault(key, EntryHistory(key))
            e.committed = t if e.committed is None else min(e.committed, t)
            created = _time(manifest.get("created"))
            if created is not None:
                e.created = created if e.created is None else min(e.created, created)
            if not old:
                continue
            cfg = added[key]
            scored = {k: len(_changes(cfg, c)) for k, c in old.items() if _seed(c) == _seed(cfg)}
            for parent in _parents(key, scored, added, old, cfg):
                ancestor = entries.get(parent)
                if ancestor is None or ancestor is e:
                    continue
                for attr in ("committed", "created"):
                    mine, theirs = getattr(e, attr), getattr(ancestor, attr)
                    if theirs is not None:
                        setattr(e, attr, theirs if mine is None else min(mine, theirs))
                changed = _changes(cfg, old[parent])
                e.rekeys = sorted(ancestor.rekeys + e.rekeys + ([(t, changed)] if changed else []))
    return entries


# --------------------------------------------------------------------------- declarations
@dataclass
class Declaration:
    """What the history says of one claim's declaration.

    Attributes
    ----------
    anchor : str
        The text searched for.
    commit, time, path
        The first commit whose notebooks hold the anchor, its time, and the notebook.
    terms : list of (int, str, dict)
        ``(commit time, sha, {"null": ..., "direction": ...})`` at the first commit and at every later
        one where the terms as written changed.
    """

    anchor: str
    commit: str | None = None
    time: int | None = None
    path: str | None = None
    terms: list = field(default_factory=list)


_DEFAULTS = {"null": "0.0", "direction": "'below'"}


def _cells(text: str) -> list:
    """``(offset, source)`` of each code cell of a MyST notebook, as :func:`calibcourse.tools.myst.lines`
    reads it: its options, ``:key:`` lines and magics blanked (so that line numbers stay)."""
    starts, pos = [], 0
    for row in text.split("\n"):
        starts.append(pos)
        pos += len(row) + 1
    cells, current = [], None
    for line in myst.lines(text):
        if current is None:
            if line.kind == "cell" and "{code-cell}" in line.text:
                current = (starts[line.no] if line.no < len(starts) else pos, [])
            continue
        if line.kind == "cell" and line.text.startswith(("```", "~~~")):  # the closing fence
            cells.append((current[0], "".join(row + "\n" for row in current[1])))
            current = None
            continue
        code = line.kind == "code" and not (re.match(r"^:[a-z_]+:", line.text)
                                             or line.text.lstrip().startswith(("%", "!")))
        current[1].append(line.text if code else "")
    return cells


@functools.lru_cache(maxsize=4096)
def _calls(cell: str) -> tuple:
    """The ``claim(...)`` calls of one cell, each with its source text (none if the cell does not parse)."""
    try:
        tree = ast.parse(cell)
    except SyntaxError:
        return ()
    lines = cell.splitlines(keepends=True)
    starts = [0]
    for line in lines:
        starts.append(starts[-1] + len(line.encode()))
    raw = cell.encode()

    def source(node):
        a = starts[node.lineno - 1] + node.col_offset
        b = starts[node.end_lineno - 1] + node.end_col_offset
        return raw[a:b].decode(errors="replace")

    return tuple((node, source(node)) for node in ast.walk(tree) if isinstance(node, ast.Call)
                 and (getattr(node.func, "attr", None) or getattr(node.func, "id", "")).endswith("claim"))


def _value(node, text: str, before: int) -> str:
    """A keyword's value as written; a name resolved to the literal the notebook's text last assigns it
    before offset ``before`` (``NAME = <literal>`` on a line of its own)."""
    if isinstance(node, ast.Name):
        found = list(re.finditer(rf"^[ \t]*{re.escape(node.id)}[ \t]*=[ \t]*([^\n#]+)", text[:before], re.M))
        if found:
            try:
                return repr(ast.literal_eval(found[-1].group(1).strip()))
            except (ValueError, TypeError, SyntaxError, RecursionError):
                return found[-1].group(1).strip()
    try:
        return repr(ast.literal_eval(node))
    except (ValueError, TypeError, SyntaxError, RecursionError):
        return ast.unparse(node)


def terms_of(text: str, anchor: str) -> dict | None:
    """The margin and side of the ``claim(...)`` call that holds ``anchor`` in a MyST notebook's text.

    Returns ``{"null": ..., "direction": ...}`` as written (the defaults ``0.0`` and ``'below'`` where
    the call gives none; a name resolved to the literal the notebook last assigns it before the
    call), or None when no parsable call holds the anchor.

    Examples
    --------
    >>> nb = '''```{code-cell} ipython3
    ... MARGIN = 0.01
    ... ledger.claim("c-1", claim="x", source="s", effect="e", interval=d, null=MARGIN)
    ... ```
    ... '''
    >>> terms_of(nb, '"c-1"')
    {'null': '0.01', 'direction': "'below'"}
    """
    for offset, cell in _cells(text):
        if anchor not in cell:
            continue
        holding = [node for node, src in _calls(cell) if anchor in src]
        if holding:
            found = max(holding, key=lambda node: (node.lineno, node.col_offset))
            before = offset + len("\n".join(cell.split("\n")[:found.lineno - 1]))
            kw = {k.arg: _value(k.value, text, before) for k in found.keywords if k.arg in _DEFAULTS}
            return {k: kw.get(k, v) for k, v in _DEFAULTS.items()}
    return None


def declarations(git: Git, anchors: dict, paths=(NOTEBOOKS,), suffix: str = ".md") -> dict:
    """``{claim id: Declaration}`` for every claim whose anchor a committed notebook holds.

    Parameters
    ----------
    git : Git
    anchors : dict
        ``{claim id: anchor text}``.
    paths : tuple of str, default=("notebooks",)
        Where declarations live.
    suffix : str, default=".md"
        The files read there (MyST notebooks; ``".py"`` for a choice fixed in the package, whose terms
        are not read).

    Returns
    -------
    dict
        Claims whose anchor no commit holds are left out.
    """
    commits = git.log(*paths)
    specs = [f"{sha}:{p}" for sha, _, changes in commits for s, p in changes if s != "D" and p.endswith(suffix)]
    blobs = git.blobs(specs)
    out: dict = {}
    current: dict = {}  # path -> text at the commit being read
    for sha, t, changes in commits:
        touched = []
        for s, p in changes:
            if not p.endswith(suffix):
                continue
            if s == "D":
                current.pop(p, None)
            elif f"{sha}:{p}" in blobs:
                current[p] = blobs[f"{sha}:{p}"]
                touched.append(p)
        for cid, anchor in anchors.items():
            holders = [p for p in touched if anchor in current[p]]
            d = out.get(cid)
            if d is None:
                if not holders:
                    continue
                d = out[cid] = Declaration(anchor, sha, t, holders[0])
            path = next((p for p in holders), None) or next((p for p in current if anchor in current[p]), None)
            if path is None or path not in touched:
                continue
            terms = terms_of(current[path], anchor) if suffix == ".md" else None
            if terms is not None and (not d.terms or d.terms[-1][2] != terms):
                d.terms.append((t, sha, terms))
    return out
