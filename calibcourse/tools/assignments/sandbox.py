"""One submission, graded in its own process: the cells run in a fresh kernel, each question graded
after the last cell that defines its function, the points saved as they come; and the
process control that cuts a submission at its limits."""
from __future__ import annotations

import json
import os
import shutil
import time
from pathlib import Path

from calibcourse.tools.assignments.code_questions import GRADE_PROFILE, ROOT, defined_names, exercise_label

__all__ = ["OUTPUT_LIMIT", "cell_names", "KILL_WAIT", "FILE_SIZE_LIMIT"]

#: characters of cell output kept per submission
OUTPUT_LIMIT = 2_000_000



class KernelGrader:
    """Runs a submission's otter test files inside its kernel and saves the points after
    each question (the grading cells that :func:`run_submission` adds call it).

    The tests are read when it is created, before any of the student's code runs.
    """

    def __init__(self, tests_path, progress_path):
        self.tests = json.loads(Path(tests_path).read_text())["tests"]
        self.progress_path = str(progress_path)
        self.results = {}

    def grade(self, name: str, env: dict):
        from otter.test_files.exception_test import ExceptionTestFile

        if name in self.results:
            return
        tf = ExceptionTestFile.from_string(self.tests[name], path=f"{name}.py")
        try:
            tf.run(env)
            cases = [{"name": r.test_case.name, "hidden": r.test_case.hidden, "points": r.test_case.points,
                      "passed": r.passed, "message": r.message} for r in tf.test_case_results]
        except BaseException as exc:  # SystemExit, KeyboardInterrupt from the student's code
            cases = [{"name": tc.name, "hidden": tc.hidden, "points": tc.points, "passed": False,
                      "message": f"the test was stopped by {type(exc).__name__}: {exc}"} for tc in tf.test_cases]
        self.results[name] = {"score": sum(c["points"] for c in cases if c["passed"]), "cases": cases}
        tmp = self.progress_path + ".tmp"
        with open(tmp, "w") as f:
            json.dump(self.results, f)
        os.replace(tmp, self.progress_path)

    def grade_rest(self, env: dict):
        for name in self.tests:
            self.grade(name, env)


# =========================================================================== one submission (child)
def cell_names(sources, qs: list[dict]) -> list[str]:
    r"""Each code cell named as a student sees it (a notebook shows no cell numbers): the cell of an
    exercise by the exercise, another by its first line and the exercise before it.

    Parameters
    ----------
    sources : list of str
        The code cells of a submission, in order.
    qs : list of dict
        The lab's questions, each with its ``function`` and ``title``.

    Returns
    -------
    list of str
        One name per cell, for the feedback and the grades' ``details``.

    Examples
    --------
    >>> names = cell_names(["import numpy as np", "def f(x):\n    return x", "print(f(2))"],
    ...                    [{"function": "f", "title": "1. Identity"}])
    >>> for name in names:
    ...     print(name)
    the cell that starts `import numpy as np`
    your cell of exercise 1 (Identity)
    the cell that starts `print(f(2))` (after exercise 1 (Identity))
    """
    out, after = [], None
    for source in sources:
        defined = set(defined_names(source))
        q = next((q for q in qs if q["function"] in defined), None)
        if q is not None:
            after = exercise_label(q["title"])
            out.append(f"your cell of {after}")
            continue
        first = next((ln.strip() for ln in source.splitlines() if ln.strip() and not ln.lstrip().startswith("#")),
                     "(empty)")
        first = first if len(first) <= 40 else first[:37] + "..."
        out.append(f"the cell that starts `{first}`" + (f" (after {after})" if after else ""))
    return out


def _grading_notebook(nb, qs: list[dict], private: Path):
    """The cells to execute: the grader's set-up, the submission's code cells with the ``ci``
    profile injected after its parameters cell, a grading cell after the last cell that defines
    each question's function, and a last cell for the questions left. Code cells after the last
    graded definition are not run: nothing there is graded. What a function may not call is
    enforced by the tests themselves (the checks' rules), as in ``otter run`` and on Gradescope."""
    import nbformat

    new = nbformat.v4.new_code_cell
    code = [c for c in nb.cells if c.get("cell_type") == "code"]
    sources = [c.source for c in code]
    names = cell_names(sources, qs)
    last_def = {}
    for i, cell in enumerate(code):
        for fn in defined_names(cell.source):
            last_def[fn] = i
    if all(q["function"] in last_def for q in qs):
        code = code[: max(last_def[q["function"]] for q in qs) + 1]
    cells, origin = [new(f"from calibcourse.tools.assignments.sandbox import KernelGrader as _KG\n"
                         f"__calibcourse_grader__ = _KG({str(private / 'tests.json')!r}, "
                         f"{str(private / 'progress.json')!r})\ndel _KG\n")], ["grader set-up"]
    for i, cell in enumerate(code):
        cells.append(new(cell.source))
        origin.append(names[i])
        if "parameters" in cell.get("metadata", {}).get("tags", []):
            cells.append(new(f'profile = "{GRADE_PROFILE}"'))
            origin.append("profile override")
        for q in qs:
            if last_def.get(q["function"]) == i:
                cells.append(new(f'__calibcourse_grader__.grade("{q["name"]}", globals())'))
                origin.append(f"grading {exercise_label(q['title'])}")
    cells.append(new("__calibcourse_grader__.grade_rest(globals())"))
    origin.append("grading the questions left")
    return nbformat.v4.new_notebook(cells=cells, metadata={"kernelspec": {
        "name": "python3", "display_name": "Python 3", "language": "python"}}), origin


def run_submission(submission, private, workdir) -> dict:
    """Execute one submission (a copy of it in ``workdir``) and grade it; what happened goes
    to ``private/result.json``, the points to ``private/progress.json`` as they come."""
    import nbformat
    from nbclient import NotebookClient
    from nbclient.exceptions import DeadKernelError

    private, workdir = Path(private), Path(workdir)
    status_path = private / "status.json"
    result = {"errors": [], "truncated": False, "died": None, "read_error": None}

    def save():
        (private / "result.json.tmp").write_text(json.dumps(result))
        os.replace(private / "result.json.tmp", private / "result.json")

    try:
        nb = nbformat.read(submission, as_version=4)
    except Exception as exc:
        result["read_error"] = f"{type(exc).__name__}: {exc}"[:500]
        save()
        return result
    tests = json.loads((private / "tests.json").read_text())
    gnb, origin = _grading_notebook(nb, tests["questions"], private)

    class Client(NotebookClient):
        used = 0

        def output(self, outs, msg, display_id, cell_index):
            content = msg.get("content", {})
            size = len(content.get("text", "")) + sum(len(str(v)) for v in content.get("data", {}).values())
            Client.used += size
            if Client.used > OUTPUT_LIMIT and msg.get("msg_type") != "error":
                result["truncated"] = True
                return None
            return super().output(outs, msg, display_id, cell_index)

    def on_start(cell, cell_index):
        status_path.write_text(json.dumps({"where": origin[cell_index], "since": time.time()}))

    def on_executed(cell, cell_index, execute_reply):
        content = execute_reply.get("content", {})
        if content.get("status") == "error":
            result["errors"].append({"where": origin[cell_index], "ename": content.get("ename", ""),
                                     "evalue": str(content.get("evalue", ""))[:300]})
            save()

    client = Client(gnb, timeout=None, kernel_name="python3", allow_errors=True, record_timing=False,
                    resources={"metadata": {"path": str(workdir)}}, on_cell_start=on_start,
                    on_cell_executed=on_executed, shutdown_kernel="immediate")
    try:
        client.execute()
    except DeadKernelError:
        where = json.loads(status_path.read_text())["where"] if status_path.exists() else "?"
        result["died"] = f"the kernel died in {where}"
    except Exception as exc:
        result["died"] = f"{type(exc).__name__}: {exc}"[:500]
    save()
    return result


# =========================================================================== the batch (parent)
# The process tree is psutil's: a psutil.Process remembers its process's start time, so a signal never
# reaches another process that reused the pid of one that has exited.
def _members(pid: int, itself: bool = True) -> list:
    """``pid`` (unless ``itself`` is false) and its descendants, as psutil processes."""
    import psutil

    try:
        root = psutil.Process(pid)
        return ([root] if itself else []) + root.children(recursive=True)
    except psutil.NoSuchProcess:
        return []


def descendants(pid: int) -> list[int]:
    """The pids of the descendants of ``pid``."""
    return [p.pid for p in _members(pid, itself=False)]


def rss_bytes(pids) -> int:
    """The resident memory of the processes ``pids`` together, in bytes (those gone count 0)."""
    import psutil

    total = 0
    for pid in pids:
        try:
            total += psutil.Process(pid).memory_info().rss
        except psutil.Error:
            pass
    return total


#: seconds to wait for killed processes to exit: a safety net (a process stuck in the kernel), never
#: reached normally; a killed process with gigabytes of memory takes a moment to go
KILL_WAIT = 300.0


def kill_tree(pid: int, itself: bool = True) -> list[int]:
    """Stop, then kill, a process (unless ``itself`` is false) and all its descendants (stopped
    processes cannot fork), then wait until every one killed has exited (a zombie counts as
    exited; none is reaped here, so a caller's ``Popen.wait`` still reads its child's status).
    Returns the pids killed that had not exited after :data:`KILL_WAIT` seconds."""
    import psutil

    for _ in range(2):  # the second pass stops what forked while the first ran
        for p in _members(pid, itself):
            try:
                p.suspend()
            except psutil.Error:
                pass
    killed = _members(pid, itself)
    for p in killed:
        try:
            p.kill()
        except psutil.Error:
            pass
    return _wait_exited(killed, KILL_WAIT)


def _wait_exited(procs: list, timeout: float) -> list[int]:
    """Wait until each psutil process of ``procs`` has exited (is a zombie, or gone), ``timeout``
    seconds at most. Returns the pids still running then."""
    import psutil

    def running(p) -> bool:
        try:
            return p.is_running() and p.status() != psutil.STATUS_ZOMBIE
        except psutil.NoSuchProcess:
            return False

    end, left = time.monotonic() + timeout, list(procs)
    while (left := [p for p in left if running(p)]) and time.monotonic() < end:
        time.sleep(0.02)
    return sorted(p.pid for p in left)


FILE_SIZE_LIMIT = 512 * 2**20  # bytes of one file a submission writes


def limit_self():
    """In the grading process (inherited by its kernel): no file over FILE_SIZE_LIMIT, no core
    dumps, and orphans of the kernel stay our descendants (so that they can be killed)."""
    import resource

    resource.setrlimit(resource.RLIMIT_FSIZE, (FILE_SIZE_LIMIT, FILE_SIZE_LIMIT))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    try:
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(36, 1, 0, 0, 0)  # PR_SET_CHILD_SUBREAPER
    except Exception:  # pragma: no cover - not Linux
        pass


def child_env(tmp: Path) -> dict:
    """The environment of a submission's processes: marked with ``tmp`` (its temporary folder), one thread
    per library, this checkout on the path, no display, quiet, fixed hashing."""
    env = dict(os.environ)
    env["CALIBCOURSE_GRADING"] = str(tmp)  # marks every process of this submission
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT)] + [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p])
    env.update({"OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1",
                "OMP_WAIT_POLICY": "PASSIVE", "MPLBACKEND": "Agg", "CALIBCOURSE_QUIET": "1",
                "PYTHONHASHSEED": "0", "PYDEVD_DISABLE_FILE_VALIDATION": "1"})
    return env


def remove_tree(path: Path):
    """Remove ``path`` and everything below it, a folder a submission made read-only included."""
    def unlock(func, p, _exc):
        try:
            os.chmod(os.path.dirname(p), 0o700)
            os.chmod(p, 0o700)
            func(p)
        except OSError:
            pass
    shutil.rmtree(path, onerror=unlock)
