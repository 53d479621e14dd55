"""``calibcourse report``: the calibration report of a model's outputs, from the command line.

    calibcourse report OUTPUTS.npz [--labels-key y] [--logits-key KEY | --probs-key KEY]
                       [--out report/] [--folds 5] [--save calibrator.json]
    calibcourse report SCORES.npy LABELS.npy [--kind logits|probs] ...
    calibcourse report OUTPUTS.csv [--labels-key y] [--logits-key PREFIX | --probs-key PREFIX] ...

It reads logits or probabilities and labels (what the scores are is read from the numbers, and
asked for with ``--kind`` where they cannot tell), writes ``OUT/index.html`` (one self-contained
page: :func:`calibcourse.calibration.report.report_html`) and, with ``--save``, the recommended
calibrator as JSON (read back by ``calibcourse.calibration.load``), fitted on the samples the
comparison used (all, or a stratified subsample of a very large set: the command says which).
Bad input ends in one line on stderr (exit status 2), never a traceback. It needs numpy, scipy,
scikit-learn and matplotlib only.
"""
from __future__ import annotations

import argparse
import os
import sys

import numpy as np

__all__ = ["main", "read_outputs", "LABEL_KEYS", "LOGIT_KEYS", "PROB_KEYS"]

#: The names tried, in order, for the labels, the logits and the probabilities of an ``.npz`` or ``.csv``.
LABEL_KEYS = ("y", "labels", "label", "targets", "target", "test_labels")
LOGIT_KEYS = ("logits", "test_logits", "z")
PROB_KEYS = ("probs", "probabilities", "p", "test_probs")


def _parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(
        prog="calibcourse report",
        description="Calibration report of a model's outputs (logits or probabilities) and labels: "
                    "reliability diagrams, ECE/MCE/ACE/NLL/Brier with intervals, and the post-hoc "
                    "calibrators compared by cross-fitting.")
    ap.add_argument("inputs", nargs="+", metavar="FILE",
                    help="an .npz (scores and labels), a pair SCORES.npy LABELS.npy, or a .csv with a header")
    ap.add_argument("--labels-key", help=f"the labels' array (.npz) or column (.csv); default: the first of "
                                         f"{', '.join(LABEL_KEYS)}")
    group = ap.add_mutually_exclusive_group()
    group.add_argument("--logits-key", help=f"the logits' array (.npz) or column prefix (.csv); default: the "
                                            f"first of {', '.join(LOGIT_KEYS)}")
    group.add_argument("--probs-key", help=f"the probabilities' array (.npz) or column prefix (.csv); default: "
                                           f"the first of {', '.join(PROB_KEYS)}")
    ap.add_argument("--kind", choices=("auto", "logits", "probs"), default=None,
                    help="what the scores are (default: from the key, else auto: probabilities if they "
                         "lie in [0, 1] and rows sum to 1 within their written precision; asked where "
                         "the numbers cannot tell)")
    ap.add_argument("--out", default="report", help="the folder of index.html (default: report)")
    ap.add_argument("--folds", type=int, default=5, help="folds of the cross-fitting (default: 5)")
    ap.add_argument("--save", metavar="JSON", help="write the recommended calibrator here (with the class names)")
    ap.add_argument("--n-bins", type=int, default=15, help="bins of ECE/MCE/ACE and the diagrams (default: 15)")
    ap.add_argument("--n-boot", type=int, default=1000, help="bootstrap resamples of the intervals (default: 1000)")
    ap.add_argument("--seed", type=int, default=0, help="seed of the resampling (default: 0)")
    ap.add_argument("--title", default=None, help="the page's title")
    return ap


def _pick(available, wanted, candidates, what, option, source):
    if wanted is not None:
        if wanted not in available:
            raise ValueError(f"{option} {wanted}: no such {what} in {source}; it has {', '.join(available)}")
        return wanted
    for key in candidates:
        if key in available:
            return key
    return None


def _load_npy(path):
    with open(path, "rb") as f:
        magic = f.read(6)
    if magic != b"\x93NUMPY":
        raise ValueError(f"FILE {os.path.basename(path)} is not an .npy file (numpy.save writes one)")
    try:
        return np.load(path, allow_pickle=False)
    except ValueError:
        raise ValueError(f"FILE {os.path.basename(path)} holds Python objects, not plain numbers") from None


def read_outputs(paths, labels_key=None, logits_key=None, probs_key=None, kind=None):
    """Read a model's scores and labels from an ``.npz``, a pair of ``.npy`` files or a ``.csv``.

    Parameters
    ----------
    paths : list of str
        One ``.npz`` or ``.csv``, or two ``.npy`` (scores, labels).
    labels_key, logits_key, probs_key : str, optional
        The arrays (``.npz``) or the label column and the score columns' prefix (``.csv``);
        by default the first of :data:`LABEL_KEYS`, :data:`LOGIT_KEYS`, :data:`PROB_KEYS` found.
    kind : {"auto", "logits", "probs"}, optional
        What the scores are; by default from the key that found them, else ``"auto"``.

    Returns
    -------
    scores : numpy.ndarray
    labels : numpy.ndarray
    kind : str
    names : dict
        ``{"scores": ..., "labels": ..., "folds": "--folds"}``: how error messages call them.

    Examples
    --------
    >>> import tempfile, os
    >>> path = os.path.join(tempfile.mkdtemp(), "out.npz")
    >>> np.savez(path, logits=np.zeros((4, 3)), y=np.array([0, 1, 2, 1]))
    >>> s, y, kind, names = read_outputs([path])
    >>> s.shape, kind, names["labels"]
    ((4, 3), 'logits', "out.npz['y'] (--labels-key)")
    """
    exts = [os.path.splitext(p)[1].lower() for p in paths]
    for p in paths:
        if os.path.isdir(p):
            raise ValueError(f"FILE {p} is a folder: give the .npz, .csv or .npy file(s) of the model's outputs")
        if not os.path.isfile(p):
            raise ValueError(f"FILE {p}: no such file")
    if len(paths) == 2 and exts == [".npy", ".npy"]:
        scores, labels = (_load_npy(p) for p in paths)
        names = {"scores": f"{os.path.basename(paths[0])} (the first FILE)",
                 "labels": f"{os.path.basename(paths[1])} (the second FILE)"}
        return scores, labels, kind or "auto", {**names, "folds": "--folds"}
    if len(paths) != 1 or exts[0] not in (".npz", ".csv"):
        raise ValueError(f"FILE: give one .npz, one .csv or two .npy files (scores, then labels); got {list(paths)}")
    path, base = paths[0], os.path.basename(paths[0])
    if exts[0] == ".npz":
        import zipfile

        if not zipfile.is_zipfile(path):
            raise ValueError(f"FILE {base} is not an .npz file: numpy.savez writes a zip archive, and this is none")
        try:
            with np.load(path, allow_pickle=False) as data:
                arrays = {k: data[k] for k in data.files}
        except (ValueError, OSError, zipfile.BadZipFile) as exc:
            raise ValueError(f"FILE {base}: numpy cannot read it as an .npz of plain arrays ({exc})".replace(
                "If you trust the file you can load it unsafely using the `allow_pickle=` keyword argument or "
                "`pickle.load()`.", "arrays of Python objects are not read")) from None
        available = list(arrays)
        lk = _pick(available, labels_key, LABEL_KEYS, "array", "--labels-key", base)
        if lk is None:
            raise ValueError(f"--labels-key: none of {', '.join(LABEL_KEYS)} is in {base}; it has "
                             f"{', '.join(available)}: name the labels' array")
        if logits_key or probs_key:
            sk = _pick(available, logits_key or probs_key, (), "array",
                       "--logits-key" if logits_key else "--probs-key", base)
            found = "logits" if logits_key else "probs"
        else:
            sk, found = _pick(available, None, LOGIT_KEYS, "array", "", base), "logits"
            if sk is None:
                sk, found = _pick(available, None, PROB_KEYS, "array", "", base), "probs"
            if sk is None:
                rest = [k for k in available if k != lk]
                if len(rest) != 1:
                    raise ValueError(f"--logits-key/--probs-key: none of {', '.join(LOGIT_KEYS + PROB_KEYS)} is "
                                     f"in {base}; it has {', '.join(available)}: name the scores' array")
                sk, found = rest[0], "auto"
        option = {"probs": "--probs-key", "logits": "--logits-key"}.get(found, "--logits-key or --probs-key")
        names = {"scores": f"{base}[{sk!r}] ({option})", "labels": f"{base}[{lk!r}] (--labels-key)"}
        return arrays[sk], arrays[lk], kind or found, {**names, "folds": "--folds"}
    return _read_csv(path, base, labels_key, logits_key, probs_key, kind)


#: The column separators a .csv may use, in the order they are tried
DELIMITERS = (",", ";", "\t")


def _csv_text(path, base) -> str:
    """The text of a .csv, or one line saying why it is none."""
    with open(path, "rb") as f:
        raw = f.read()
    if not raw.strip():
        raise ValueError(f"FILE {base} is empty: a .csv needs a header row and at least one row of numbers")
    if b"\x00" in raw[:65536]:
        raise ValueError(f"FILE {base} holds binary data, not text: a .csv is text (a header row, then rows of "
                         "numbers separated by commas)")
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as e:
        raise ValueError(f"FILE {base} is not a text .csv: byte {e.start} (0x{raw[e.start]:02x}) is not UTF-8 text "
                         "(a binary file, or text in another encoding)") from None


def _csv_lines(text: str, base: str):
    """The header's names, the separator, and the data lines (blank ones dropped) with their line numbers."""
    import csv

    lines = [(i, line) for i, line in enumerate(text.splitlines(), start=1) if line.strip()]
    head = lines[0][1]
    delim = max(DELIMITERS, key=head.count)
    if head.count(delim) == 0:
        raise ValueError(f"FILE {base}: its header {head.strip()[:60]!r} has one column; a .csv of a model's outputs "
                         "needs a label column and score columns, separated by commas (or ; or tabs)")
    names = [c.strip() for c in next(csv.reader([head], delimiter=delim))]
    rows = lines[1:]
    if not rows:
        raise ValueError(f"FILE {base} has a header and no rows: a .csv needs at least one row of numbers")
    for number, line in rows:  # every row as long as the header: a ragged file is named by its line
        fields = line.count(delim) + 1
        if fields != len(names) and len(next(csv.reader([line], delimiter=delim))) != len(names):
            raise ValueError(f"FILE {base}: line {number} has {fields} fields but the header has {len(names)} "
                             f"({', '.join(names)}): every row needs one value per column")
    return names, delim, rows


def _csv_column(rows, j: int, delim: str, numbers: bool, base: str, column: str):
    """Column ``j`` of the data rows: floats (``numbers``), or the labels as integers, floats or strings."""
    import csv
    import io

    comma = delim != "," and any("," in line for _, line in rows[:100])  # a decimal comma, with ; as separator
    body = "\n".join(line.replace(",", ".") if comma else line for _, line in rows)
    try:
        col = np.loadtxt(io.StringIO(body), delimiter=delim, usecols=[j], dtype=str if not numbers else np.float64,
                         quotechar='"', ndmin=1, comments=None)
    except ValueError:
        for number, line in rows:  # the first value that is no number, named by its line
            value = next(csv.reader([line], delimiter=delim))[j].strip()
            try:
                float(value.replace(",", ".") if comma else value)
            except ValueError:
                raise ValueError(f"FILE {base}: line {number}, column {column!r} holds {value[:30]!r}, not a number: "
                                 "scores must be numbers (name the labels' column with --labels-key)") from None
        raise
    if numbers:
        return col
    col = np.char.strip(col.astype(str))
    for dtype in (np.int64, np.float64):
        try:
            col = col.astype(dtype)
        except ValueError:
            continue
        if dtype is np.float64 and np.all(np.isfinite(col)) and np.all(col == np.round(col)):
            col = col.astype(np.int64)  # labels written as 1.0 or 1.000e+00 are the integer 1
        return col
    return col


def _read_csv(path, base, labels_key, logits_key, probs_key, kind):
    """:func:`read_outputs` of a .csv: a header row, a label column, score columns."""
    names, delim, rows = _csv_lines(_csv_text(path, base), base)
    lk = _pick(names, labels_key, LABEL_KEYS, "column", "--labels-key", base)
    if lk is None:
        raise ValueError(f"--labels-key: none of {', '.join(LABEL_KEYS)} is a column of {base}; it has "
                         f"{', '.join(names)}: name the labels' column")
    prefix = logits_key or probs_key
    cols = [c for c in names if c != lk and (prefix is None or c.startswith(prefix))]
    if not cols:
        raise ValueError(f"{'--logits-key' if logits_key else '--probs-key'} {prefix}: no column of {base} "
                         f"starts with it; it has {', '.join(names)}")
    scores = np.stack([_csv_column(rows, names.index(c), delim, True, base, c) for c in cols], 1)
    scores = scores[:, 0] if scores.shape[1] == 1 else scores
    labels = _csv_column(rows, names.index(lk), delim, False, base, lk)
    found = "logits" if logits_key else "probs" if probs_key else "auto"
    names = {
        "scores": f"the columns {', '.join(cols)} of {base}",
        "labels": f"the column {lk!r} of {base} (--labels-key)",
    }
    return scores, labels, kind or found, {**names, "folds": "--folds"}


def main(argv=None) -> int:
    """Run ``calibcourse report`` with ``argv`` (the arguments after ``report``); the exit status.

    Parameters
    ----------
    argv : list of str, optional
        Default ``sys.argv[1:]``.

    Returns
    -------
    int
        0, 2 for bad input (one line, naming the argument, goes to stderr), 1 for an internal
        error (one line too: no traceback reaches the user).

    Examples
    --------
    >>> import tempfile, os
    >>> d = tempfile.mkdtemp()
    >>> from calibcourse.calibration.synthetic import scaled_logits
    >>> z, y = scaled_logits(400, 3, factor=2.0, seed=0)
    >>> np.savez(os.path.join(d, "out.npz"), logits=z, y=y)
    >>> main([os.path.join(d, "out.npz"), "--out", os.path.join(d, "r"),
    ...       "--folds", "3", "--n-boot", "50"])  # doctest: +ELLIPSIS
    wrote .../r/index.html: 400 samples, 3 classes; recommended ...
    0
    """
    args = _parser().parse_args(sys.argv[1:] if argv is None else argv)
    try:
        return _run(args)
    except (ValueError, OSError) as e:
        if isinstance(e, OSError) and e.filename:
            e = f"{e.strerror}: {e.filename}"
        print(f"calibcourse report: error: {e}", file=sys.stderr)
        return 2
    except MemoryError:
        print("calibcourse report: error: out of memory: the scores do not fit; give a sample of the rows",
              file=sys.stderr)
        return 2
    except Exception as e:  # no traceback reaches the user: one line, and what to do with it
        print(f"calibcourse report: internal error: {type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''} "
              "(please report it with the command that gave it)", file=sys.stderr)
        return 1


def _check_writable(path: str, option: str) -> None:
    """One line naming ``option`` where ``path`` cannot be written: its nearest existing folder must be one
    this user can write in (the folders below it are made)."""
    parent = os.path.dirname(os.path.abspath(path))
    while not os.path.exists(parent):
        parent = os.path.dirname(parent)
    if not os.path.isdir(parent):
        raise ValueError(f"{option} {path}: {parent} is a file, not a folder")
    if not os.access(parent, os.W_OK):
        raise ValueError(f"{option} {path}: the folder {parent} cannot be written in (permission denied)")


def _run(args) -> int:
    """:func:`main` on parsed arguments: the page, the saved calibrator, the one-line summary."""
    from calibcourse.calibration import report

    scores, labels, kind, names = read_outputs(args.inputs, args.labels_key, args.logits_key, args.probs_key,
                                               args.kind)
    if args.n_boot < 10:  # an int: argparse's type
        raise ValueError(f"--n-boot must be >= 10; got {args.n_boot}")
    if args.n_bins < 1:
        raise ValueError(f"--n-bins must be >= 1; got {args.n_bins}")
    if os.path.exists(args.out) and not os.path.isdir(args.out):
        raise ValueError(f"--out {args.out} is a file, not a folder: name a folder for the report")
    _check_writable(args.out, "--out")  # before the long part: its result is not lost to a typo
    if args.save:
        if os.path.isdir(args.save):
            raise ValueError(f"--save {args.save} is a folder: name the JSON file to write")
        _check_writable(args.save, "--save")
    title = args.title or f"Calibration report: {', '.join(os.path.basename(p) for p in args.inputs)}"
    import warnings

    with warnings.catch_warnings(record=True) as said:  # each in one line, after the work
        warnings.simplefilter("always")
        page, fitted, choice = report.report_html(scores, labels, kind=kind, folds=args.folds, n_bins=args.n_bins,
                                                  n_boot=args.n_boot, seed=args.seed, title=title,
                                                  names={**names, "kind": "--kind"}, progress=sys.stderr.isatty())
    for w in said:
        print(f"calibcourse report: warning: {str(w.message).splitlines()[0]}", file=sys.stderr)
    out = os.path.join(args.out, "index.html")
    try:
        os.makedirs(args.out, exist_ok=True)
        with open(out, "w", encoding="utf-8") as f:
            f.write(page)
    except OSError as e:
        raise ValueError(f"--out {args.out}: the page cannot be written ({e.strerror})") from None
    if args.save:
        try:
            os.makedirs(os.path.dirname(os.path.abspath(args.save)), exist_ok=True)
            report.save(fitted, args.save)
        except OSError as e:
            raise ValueError(f"--save {args.save}: the calibrator cannot be written ({e.strerror}); the page is "
                             f"in {out}") from None
    k, n = len(fitted.classes_), len(labels)
    if choice.name == "uncalibrated":
        print(f"wrote {out}: {n} samples, {k} classes; recommended no calibration (no calibrator is "
              "decidedly better than the model as given)")
    else:
        dn, de = choice.nll_change, choice.ece_change
        print(f"wrote {out}: {n} samples, {k} classes; recommended {choice.name} (out of fold: NLL change "
              f"{dn.plugin:+.4f} [{dn.low:+.4f}, {dn.high:+.4f}], ECE change {100 * de.plugin:+.2f} points "
              f"[{100 * de.low:+.2f}, {100 * de.high:+.2f}])")
    if args.save:
        where = (f"all {fitted.n_fit} samples" if fitted.n_fit == n
                 else f"a stratified subsample of {fitted.n_fit} of the {n} samples")
        what = ("no calibration (scores pass through unchanged)" if choice.name == "uncalibrated"
                else f"{choice.name}, fitted on {where}")
        print(f"wrote {args.save}: {what}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
