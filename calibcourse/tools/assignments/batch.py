"""A folder of submissions graded (`make grade`): each in its own process, the grades CSV, the
feedback, the written answers' marking sheet."""
from __future__ import annotations

import csv
import io
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import zipfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from calibcourse.calibration._validation import check_int
from calibcourse.tools.assignments.authoring import write_assignments
from calibcourse.tools.assignments.code_questions import (
    DEFAULT_MEMORY_MB,
    DEFAULT_TIMEOUT,
    ROOT,
    exercise_label,
    lab_sources,
    questions,
)
from calibcourse.tools.assignments.code_questions import fmt_points as _fmt
from calibcourse.tools.assignments.sandbox import (
    OUTPUT_LIMIT,
    child_env,
    descendants,
    kill_tree,
    remove_tree,
    rss_bytes,
)
from calibcourse.tools.assignments.written import answers, mark_of, read_marks, write_sheet, written_questions

__all__ = ["grade"]

#: the clock of the per-submission time limit (seconds; a test replaces it to cut a submission at a
#: point it chooses instead of after a number of seconds that depends on the machine's load)
_clock = time.monotonic


def grade_one(submission, tests: dict, timeout: float = DEFAULT_TIMEOUT, memory_mb: int = DEFAULT_MEMORY_MB) -> dict:
    """Grade one submission in its own process and temporary folder, within ``timeout``
    seconds and ``memory_mb`` of memory. Returns ``{"scores", "cases", "status", "details", ...}``."""
    submission = Path(submission)
    tmp = Path(tempfile.mkdtemp(prefix="calibcourse-grade-"))
    private, workdir = tmp / "private", tmp / "work"
    private.mkdir()
    workdir.mkdir()
    (private / "tests.json").write_text(json.dumps(tests))
    copy = workdir / submission.name
    shutil.copy(submission, copy)
    start, tail = time.monotonic(), io.BytesIO()
    limit_start = _clock()
    proc = subprocess.Popen([sys.executable, "-m", "calibcourse.tools.assignments", "_run", str(copy), str(private),
                             str(workdir)], cwd=workdir, env=child_env(tmp), stdin=subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True)
    reader = threading.Thread(target=_drain, args=(proc.stdout, tail), daemon=True)
    reader.start()
    try:
        status = _watch(proc, private, timeout, memory_mb, limit_start)
        proc.wait()
        reader.join(timeout=5)
        seconds = time.monotonic() - start
        progress = _read_json(private / "progress.json")
        result = _read_json(private / "result.json")
    finally:
        if proc.poll() is None:  # never signal a reaped pid: it may belong to someone else now
            kill_tree(proc.pid)
            proc.wait()
        remove_tree(tmp)
    status, details = _outcome(result, status, proc.returncode, tail)
    missing = [q["name"] for q in tests["questions"] if q["name"] not in progress]
    if missing and status:
        details.append(f"not graded: {', '.join(missing)}")
    return {"file": submission.name, "scores": {q: progress[q]["score"] for q in progress},
            "cases": {q: progress[q]["cases"] for q in progress}, "status": status or "graded",
            "details": details, "seconds": seconds}


def _drain(stream, tail: io.BytesIO) -> None:
    """Keep the last 8 kB of what the grading process prints."""
    for chunk in iter(lambda: stream.read(4096), b""):
        tail.write(chunk)
        if tail.tell() > 65536:
            keep = tail.getvalue()[-8192:]
            tail.seek(0)
            tail.truncate()
            tail.write(keep)


def _watch(proc, private: Path, timeout: float, memory_mb: int, limit_start: float):
    """Poll the grading process until it ends, or kill its tree at the time or memory limit: the
    limit's message (with the cell it was in), or None."""
    while proc.poll() is None:
        status = None
        if _clock() - limit_start > timeout:
            status = f"time limit: cut after {timeout:g} s"
        elif rss_bytes([proc.pid] + descendants(proc.pid)) > memory_mb * 2**20:
            status = f"memory limit: cut above {memory_mb} MB"
        if status:
            where = _read_json(private / "status.json").get("where")
            kill_tree(proc.pid)
            return status + (f" in {where}" if where else "")
        time.sleep(0.2)
    return None


def _outcome(result: dict, status, returncode, tail: io.BytesIO):
    """The submission's status (None: graded) and the details of what went wrong, from the grading
    process's result file, the limit it hit, its exit code and the end of its output."""
    details = []
    if result.get("read_error"):
        status = f"not a notebook: {result['read_error']}"
    elif status is None and not result:
        status = f"grading process failed (exit {returncode}): " + \
            tail.getvalue()[-300:].decode(errors="replace").strip().replace("\n", " | ")
    elif status is None and result.get("died"):
        status = result["died"]
    for err in result.get("errors", []):
        if not err["where"].startswith("grading") and err["where"] != "grader set-up":
            details.append(f"{err['where']} raised {err['ename']}: {err['evalue']}")
        elif err["ename"]:
            details.append(f"{err['where']} failed: {err['ename']}: {err['evalue']}")
    if result.get("truncated"):
        details.append(f"output beyond {OUTPUT_LIMIT:,} characters dropped")
    return status, details


def _read_json(path: Path) -> dict:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return {}


def read_autograder(zip_path, questions_of=None) -> dict:
    """``{"tests": {name: source}, "questions": [...]}`` from an autograder archive (its test
    files hold the hidden tests too) and the lab's questions."""
    from otter.test_files.exception_test import ExceptionTestFile

    with zipfile.ZipFile(zip_path) as z:
        tests = {Path(n).stem: z.read(n).decode() for n in sorted(z.namelist())
                 if n.startswith("tests/") and n.endswith(".py")}
    qs = []
    for name, source in sorted(tests.items(), key=lambda kv: int(kv[0][1:]) if kv[0][1:].isdigit() else 0):
        tf = ExceptionTestFile.from_string(source, path=f"{name}.py")
        q = next((q for q in questions_of or [] if q.name == name), None)
        qs.append({"name": name, "function": q.function if q else _test_params(source),
                   "title": q.title if q else name, "possible": float(tf.possible)})
    return {"tests": tests, "questions": qs}


def _test_params(source: str) -> str:
    m = re.search(r"def test_\w+\((\w+)\)", source)
    return m.group(1) if m else ""


def _case_message(message: str) -> str:
    """The reason a test failed, without otter's banner and the line of the test (it would show
    the hidden test's seed)."""
    lines = [ln for ln in message.splitlines() if ln.strip() != "❌ Test case failed"]
    if lines and lines[0].startswith("Error at line"):
        lines = lines[2:]
    if lines:  # the exercise, which checks.graded puts first for otter's output, heads this feedback already
        lines[0] = re.sub(r"^(\s*CheckFailure: )exercise [^:]*?\): ", r"\1", lines[0])
    return "\n".join(lines)


def _feedback(row: dict, qs: list[dict], lab: str, wqs=()) -> str:
    total, possible = _total(row), sum(q["possible"] for q in qs) + sum(w.points for w in wqs)
    lines = [f"{lab}: {row['file']}", f"total: {_fmt(total)} / {_fmt(possible)}", f"status: {row['status']}", ""]
    for q in qs:
        got = row["scores"].get(q["name"])
        lines.append(f"{q['name']}, {exercise_label(q['title'])}, function {q['function']}: "
                     + (f"{_fmt(got)} / {_fmt(q['possible'])}" if got is not None
                        else f"0 / {_fmt(q['possible'])}, not graded"))
        for case in row["cases"].get(q["name"], []):
            kind = "hidden test" if case["hidden"] else "public check"
            verdict = "passed" if case["passed"] else "FAILED"
            lines.append(f"  {kind} ({_fmt(case['points'])} point{'s' if case['points'] != 1 else ''}): {verdict}")
            if not case["passed"]:
                lines += ["    " + ln for ln in _case_message(case["message"]).splitlines()]
        lines.append("")
    for w in wqs:
        marks = row.get("written", {}).get(w.name, [None] * len(w.rubric))
        got = mark_of(marks)
        lines.append(f"{w.name}, question {w.number} (written): "
                     + ("not marked yet" if got is None else f"{_fmt(got)} / {_fmt(w.points)}")
                     + ("" if row.get("answers", {}).get(w.name) else " (no answer found under the question)"))
        if got is not None:
            lines += [f"  {_fmt(m)} / {_fmt(p)}  {text}" for m, (p, text) in zip(marks, w.rubric, strict=True)]
        lines.append("")
    if row["details"]:
        lines += ["what else happened:"] + [f"  {d}" for d in row["details"]]
    return "\n".join(lines) + "\n"


def grade(lab: str, submissions, out_dir=None, timeout: float = DEFAULT_TIMEOUT, jobs: int = 2,
          memory_mb: int = DEFAULT_MEMORY_MB, assignments_dir=None, log=print) -> Path:
    """Grade every ``.ipynb`` of the folder ``submissions`` for ``lab``.

    Writes ``<out_dir>/<lab>.csv`` (atomically: one row per file, a column per code question with
    its points, one per written question with its mark (blank until marked), ``written``,
    ``total``, ``max_total``, ``status``, ``details``), one feedback file per submission,
    ``<out_dir>/<lab>/<name>.txt``, and the marking sheet of the written answers,
    ``<out_dir>/<lab>-written.csv`` (:mod:`calibcourse.tools.assignments.written`): the marks filled in there
    from the rubric are read by the next call, checked, and counted. The assignment is built first if it is missing
    or older than the lab's source.

    Parameters
    ----------
    lab : str
        A lab of ``notebooks/labs`` (``lab1_ece``, ...).
    submissions : path
        A folder of ``.ipynb`` files.
    out_dir : path, optional
        Default ``_build/grades``.
    timeout : float, default 120
        Wall-clock seconds per submission; a submission still running then is cut and keeps the
        points of the questions graded before.
    jobs : int, default 2
        Submissions graded at the same time.
    memory_mb : int, default 4096
        Memory of a submission's processes together; above it, it is cut.
    assignments_dir : path, optional
        Where the assignments are (default ``_build/assignments``).
    log : callable, default=print
        Called with each progress line.

    Returns
    -------
    Path
        The CSV file.

    Examples
    --------
    >>> import tempfile
    >>> grade("lab1_ece", tempfile.mkdtemp())  # doctest: +ELLIPSIS
    Traceback (most recent call last):
        ...
    ValueError: submissions: no .ipynb file in ...

    A folder of two submissions (skipped in the doctests: each runs in a fresh kernel):

    >>> grade("lab1_ece", "hand-ins/")  # doctest: +SKIP
    grading 2 submissions of lab1_ece (2 at a time, 120 s each at most)
      alice.ipynb: 12 / 16  (graded, 6.1 s)
      bob.ipynb: 4 / 16  (graded, 6.3 s)
    .../_build/grades/lab1_ece.csv written (2 rows, 6.4 s); feedback in .../_build/grades/lab1_ece
    PosixPath('.../_build/grades/lab1_ece.csv')
    """
    sources = {p.stem: p for p in lab_sources()}
    if lab not in sources:
        raise ValueError(f"lab must be one of {', '.join(sources)}; got {lab!r}")
    submissions = Path(submissions)
    if not submissions.is_dir():
        raise ValueError(f"submissions must be a folder of .ipynb files; {submissions} is not a folder")
    if not (isinstance(timeout, (int, float)) and timeout > 0):
        raise ValueError(f"timeout must be a positive number of seconds; got {timeout!r}")
    check_int(jobs, "jobs", low=1)
    files = sorted(submissions.glob("*.ipynb"))
    if not files:
        raise ValueError(f"submissions: no .ipynb file in {submissions}")
    adir = Path(assignments_dir or ROOT / "_build" / "assignments")
    zip_path = adir / lab / f"{lab}-autograder.zip"
    if not zip_path.exists() or zip_path.stat().st_mtime < sources[lab].stat().st_mtime:
        write_assignments(adir, [lab], log=log)
    import jupytext

    source_nb = jupytext.read(sources[lab])
    lab_qs = questions(source_nb)
    tests = read_autograder(zip_path, lab_qs)
    qs = tests["questions"]
    out_dir = Path(out_dir or ROOT / "_build" / "grades")
    wqs = written_questions(source_nb)
    sheet = out_dir / f"{lab}-written.csv"  # the written answers' marks, filled in by the instructor
    marks = read_marks(sheet, wqs) if sheet.exists() else {}
    fb_dir = out_dir / lab
    fb_dir.mkdir(parents=True, exist_ok=True)
    log(f"grading {len(files)} submissions of {lab} ({jobs} at a time, {timeout:g} s each at most)")
    start = time.monotonic()

    possible = sum(q["possible"] for q in qs) + sum(w.points for w in wqs)

    def one(path):
        row = grade_one(path, tests, timeout, memory_mb)
        row["written"] = {w.name: marks.get(path.name, {}).get(w.name, [None] * len(w.rubric)) for w in wqs}
        try:
            import nbformat

            row["answers"] = answers(nbformat.read(path, as_version=4), wqs)
        except Exception:  # not a notebook: its status says so
            row["answers"] = {w.name: "" for w in wqs}
        (fb_dir / (path.stem + ".txt")).write_text(_feedback(row, qs, lab, wqs))
        log(f"  {path.name}: {_fmt(_total(row))} / {_fmt(possible)}  ({row['status']}, {row['seconds']:.1f} s)")
        return row

    with ThreadPoolExecutor(max_workers=jobs) as pool:
        rows = list(pool.map(one, files))
    csv_path = out_dir / f"{lab}.csv"
    tmp = csv_path.with_name(csv_path.name + ".tmp")
    with open(tmp, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["file"] + [q["name"] for q in qs] + [q.name for q in wqs]
                   + ["written", "total", "max_total", "status", "details"])
        for row in rows:
            scores = [row["scores"].get(q["name"], 0.0) for q in qs]
            got = [mark_of(row["written"][q.name]) for q in wqs]
            unmarked = ", ".join(q.name for q, g in zip(wqs, got, strict=True) if g is None)
            w.writerow([row["file"]] + [_fmt(s) for s in scores] + ["" if g is None else _fmt(g) for g in got]
                       + ["" if None in got else _fmt(sum(got)), _fmt(_total(row)), _fmt(possible), row["status"],
                          "; ".join(row["details"] + ([f"written answers not marked yet: {unmarked}"]
                                                      if None in got else []))])
    os.replace(tmp, csv_path)
    if wqs:
        write_sheet(sheet, wqs, {row["file"]: row["answers"] for row in rows}, marks)
    log(f"{csv_path} written ({len(rows)} rows, {time.monotonic() - start:.1f} s); feedback in {fb_dir}")
    if wqs and any(None in [mark_of(m) for m in row["written"].values()] for row in rows):
        log(f"written answers to mark: {sheet} (a row per submission, a column per rubric line of "
            f"{', '.join(q.name for q in wqs)}; fill in the marks and run the same command again)")
    return csv_path


def _total(row: dict) -> float:
    """The points of a graded row: its code questions' and those of its written answers marked on every
    rubric line."""
    marked = [mark_of(marks) for marks in row.get("written", {}).values()]
    return sum(row["scores"].values()) + sum(m for m in marked if m is not None)
