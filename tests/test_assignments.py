"""Homework: every lab becomes an otter-grader assignment, and `grade` grades a folder of
submissions: the solution earns full points, the untouched student notebook zero, a broken
answer loses only its question, special-casing the visible checks earns no hidden points,
and a submission that hangs, floods its output, deletes files or imports what does not exist
never stops the batch."""
import csv
import json
import os
import re
import select
import zipfile
from pathlib import Path

import jupytext
import nbformat
import pytest

from calibcourse.tools import assignments as A
from calibcourse.tools import handout
from calibcourse.tools.assignments import written as W
from calibcourse.tools.handout import VARIANTS

ROOT = Path(__file__).resolve().parent.parent
LABS = [p.stem for p in A.lab_sources()]
#: the time limit of every grading in these tests: a safety net that no grading reaches, so that no test
#: depends on how fast or how loaded the machine is (the hanging submission is cut by the grader's clock,
#: which the test moves past the limit once the submission hangs: see test_grading_survives_...)
NO_LIMIT = 1800


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    out = tmp_path_factory.mktemp("assignments")
    return out, {lab: paths for lab, paths in zip(LABS, A.write_assignments(out, log=lambda *_: None), strict=True)}


def lab_questions(lab):
    return A.questions(jupytext.read(ROOT / "notebooks" / "labs" / f"{lab}.md"))


def written_points(lab):
    return sum(w.points for w in W.written_questions(jupytext.read(ROOT / "notebooks" / "labs" / f"{lab}.md")))


# ------------------------------------------------------------------ submissions a class hands in
def copy(nb):
    return nbformat.from_dict(json.loads(json.dumps(nb)))


def replace_function(nb, fn, new_source):
    """A copy of ``nb`` whose cell defining ``fn`` is replaced by ``new_source``."""
    nb = copy(nb)
    (cell,) = [c for c in nb.cells if c.cell_type == "code" and f"def {fn}(" in c.source]
    cell.source = new_source
    return nb


def raising(nb, fn):
    return replace_function(nb, fn, f"def {fn}(*args, **kwargs):\n    raise ZeroDivisionError('my bug')")


def special_cased(nb, questions):
    """Each function right on the inputs of the visible check and wrong elsewhere: it records
    the inputs the public check (seed 0) passes, and answers only those."""
    nb = copy(nb)
    for q in questions:
        (cell,) = [c for c in nb.cells if c.cell_type == "code" and f"def {q.function}(" in c.source]
        cell.source = cell.source.replace(f"def {q.function}(", f"def _solution_{q.function}(") + f"""

import hashlib as _h
import numpy as _np

def _key(args):
    parts = [_np.asarray(a.detach() if hasattr(a, "detach") else a).tobytes() for a in args]
    return _h.sha256(b"|".join(parts)).hexdigest()

_seen_{q.function} = set()

def _record_{q.function}(*args):
    _seen_{q.function}.add(_key(args))
    return _solution_{q.function}(*args)

# the visible check, run on the recorder; reached through globals(), which the grader's scan for the
# checks module does not follow (the scan is tested on its own): this tests the hidden tests
globals()["checks"].{q.check}(_record_{q.function})

def {q.function}(*args):
    if _key(args) not in _seen_{q.function}:
        raise ValueError("not one of the inputs I memorized")
    return _solution_{q.function}(*args)
"""
    return nb


#: per lab, a first exercise answered by the library (through an alias, a helper in another cell, an import)
WRAPS_THE_LIBRARY = {
    "lab1_ece": ("from calibcourse.calibration import metrics as m\n\n"
                 "def bin_stats(probs, labels, n_bins=15):\n"
                 "    rb = m.reliability_bins(probs, labels, n_bins=n_bins)\n"
                 "    return rb.accuracy, rb.confidence, rb.count"),
    "lab2_temperature": ("from calibcourse.calibration.metrics import softmax\n\n"
                         "def softmax_t(logits, temperature):\n    return softmax(logits / temperature)"),
    "lab3_binning": ("from calibcourse.calibration import calibrators\n\n"
                     "def histogram_binning(val_scores, val_labels, test_scores, n_bins=15):\n"
                     "    hb = calibrators.HistogramBinning(n_bins=n_bins).fit(val_scores, val_labels)\n"
                     "    return hb.predict_proba(test_scores)[:, 1]"),
    "lab4_sece_focal": ("from calibcourse.calibration import metrics\n\n"
                        "def my_sece(probs, labels, bandwidth=0.05):\n"
                        "    return metrics.sece(probs, labels, bandwidth=bandwidth, method='exact')"),
}


def wraps_the_library(nb, lab, q):
    """A copy of ``nb`` whose first exercise calls the library's solution from a helper cell."""
    helper = WRAPS_THE_LIBRARY[lab].replace(f"def {q.function}(", "def _mine(")
    nb = replace_function(nb, q.function, f"def {q.function}(*args, **kwargs):\n    return _mine(*args, **kwargs)")
    i = next(i for i, c in enumerate(nb.cells) if c.cell_type == "code" and f"def {q.function}(" in c.source)
    nb.cells.insert(i, nbformat.v4.new_code_cell(helper))
    return nb


def write(folder, name, nb):
    folder.mkdir(exist_ok=True)
    nbformat.write(nb, folder / f"{name}.ipynb")


def start_submissions(lab, built, folder):
    """The solution and the untouched student notebook of ``lab`` in ``folder``."""
    out, paths = built
    solution = nbformat.read(paths[lab]["solution"], as_version=4)
    write(folder, "solution", solution)
    write(folder, "untouched", nbformat.read(paths[lab]["student"], as_version=4))
    return out, lab_questions(lab), solution


def read_csv(path):
    with open(path, newline="") as f:
        return {row["file"]: row for row in csv.DictReader(f)}


# ------------------------------------------------------------------ building
def test_each_lab_has_three_graded_questions_and_hidden_inputs_differ():
    for lab in LABS:
        qs = lab_questions(lab)
        assert len(qs) >= 3, lab
        assert all(q.public > 0 and q.hidden > 0 for q in qs), lab
        seeds = {A.hidden_seed(lab, q.name) for q in qs}
        assert len(seeds) == len(qs) and 0 not in seeds
        assert A.hidden_seed(lab, "q1", "another secret") != A.hidden_seed(lab, "q1")


def test_bad_points_metadata_is_named(tmp_path):
    src = tmp_path / "lab9_x.md"
    src.write_text((ROOT / "notebooks" / "labs" / "lab1_ece.md").read_text().replace(
        "points: [1, 2]", "points: 3", 1))
    with pytest.raises(ValueError, match="points must be"):
        A.questions(jupytext.read(src))


def test_assignments_are_written_with_points_stated_and_solutions_only_in_the_solution(built):
    out, paths = built
    for lab in LABS:
        p = paths[lab]
        assert p["student"] == out / lab / "student" / f"{lab}.ipynb"
        assert p["solution"] == out / lab / "solution" / f"{lab}.ipynb"
        assert p["autograder"] == out / lab / f"{lab}-autograder.zip"
        student, solution = p["student"].read_text(), p["solution"].read_text()
        qs = lab_questions(lab)
        for q in qs:
            assert f"def {q.function}(" in student and f"def {q.function}(" in solution
            assert "hidden tests that run the same check" in student
        assert student.count("NotImplementedError(\\\"exercise") == len(qs)
        assert "NotImplementedError(\\\"exercise" not in solution
        for text in (student, solution):
            assert "BEGIN SOLUTION" not in text and "BEGIN PROMPT" not in text
        assert 'edition = \\"student\\"' in student and 'edition = \\"instructor\\"' in solution
        with zipfile.ZipFile(p["autograder"]) as z:
            names = z.namelist()
            tests = {n: z.read(n).decode() for n in names if n.startswith("tests/")}
            assert (
                "files/calibcourse/study/course/checks/__init__.py" in names
                and "files/calibcourse/study/course/checks/lab1.py" in names
                and "environment.yml" in names
            )
            assert "jupyter-book" not in z.read("environment.yml").decode()
            assert json.loads(z.read("otter_config.json"))["pdf"] is True  # Gradescope gets a PDF of the answers
        assert len(tests) == len(qs)
        # every written question: an otter manual question, with a model answer and a rubric in the solution only
        written = W.written_questions(jupytext.read(ROOT / "notebooks" / "labs" / f"{lab}.md"))
        assert written and student.count("<!-- BEGIN QUESTION -->") == student.count("<!-- END QUESTION -->") == len(
            written)
        assert student.count("Double-click this cell and write your answer here") == len(written)
        assert solution.count("**Answer.**") == solution.count("**Rubric (") == len(written)
        assert "**Answer.**" not in student and "**Rubric" not in student
        for q in qs:  # the hidden test: the same check on another seed; each through graded, naming the exercise
            src = tests[f"tests/{q.name}.py"]
            variant = "" if q.check not in VARIANTS else f", variant={VARIANTS[q.check][0]!r}"
            call = f"checks.graded({A.code_questions.exercise_label(q.title)!r}, checks.{q.check}, {q.function}"
            assert f"{call}{variant})" in src, src
            assert f"{call}, seed={A.hidden_seed(lab, q.name)}{variant})" in src, src
    lab2 = paths["lab2_temperature"]  # the labs' data travel inside the package
    assert "files/calibcourse/study/course/lab_runs.npz" in zipfile.ZipFile(lab2["autograder"]).namelist()


def test_forbidden_uses_follows_aliases_and_helpers_but_not_the_labs_own_cells():
    cells = ["import numpy as np\nfrom calibcourse.calibration import metrics\n"
             "from calibcourse.study.course import checks",
             "probs = np.ones((3, 2)) / 2",                                   # a name that parameters shadow
             "ok = checks.check_ece(my_ece)",                                 # the lab's own check cell
             "e = metrics.ece",                                               # an alias by assignment
             "def helper(p, y, n):\n    return e(p, y, n_bins=n)",
             "def my_ece(probs, labels, n_bins=15):\n    return helper(probs, labels, n_bins)",
             "def my_mce(probs, labels, n_bins=15):\n    x = probs.max(1)\n    return float(np.max(x))",
             "def my_l2(probs, labels, n_bins=15):\n    import calibcourse.calibration.metrics as mm\n"
             "    return mm.ece(probs, labels, norm='l2')",
             "def my_bins(probs, labels, n_bins=15):\n    return ok"]
    assert A.forbidden_uses(cells, "my_ece", ["metrics.ece"]) == ["cell 4 uses calibcourse.calibration.metrics.ece",
                                                                 "cell 5 uses calibcourse.calibration.metrics.ece"]
    assert A.forbidden_uses(cells, "my_mce", ["metrics"]) == []              # probs is its parameter, not cell 2
    assert A.forbidden_uses(cells, "my_l2", ["metrics.ece"]) == ["cell 8 uses calibcourse.calibration.metrics"
                                                                ".ece"]
    assert A.forbidden_uses(cells, "my_bins", A.ALWAYS_FORBIDDEN) == [
        "cell 3 uses calibcourse.study.course.checks.check_ece"]
    assert A.forbidden_uses(cells, "my_bins", A.ALWAYS_FORBIDDEN, given=[cells[2]]) == []
    assert A.forbidden_uses(cells, "nothing_defined", ["metrics"]) == []


# ------------------------------------------------------------------ grading
@pytest.mark.parametrize("lab", [lab for lab in LABS if lab != "lab1_ece"])
def test_grading_a_lab(lab, built, tmp_path):
    subs = tmp_path / "subs"
    out, qs, solution = start_submissions(lab, built, subs)
    # the first questions special-cased (public point only), the last one raising (zero)
    write(subs, "special_cased_last_raises", raising(special_cased(solution, qs[:-1]), qs[-1].function))
    # the first question answered by the library: it passes the checks, and earns nothing
    write(subs, "wraps_the_library", wraps_the_library(solution, lab, qs[0]))
    rows = read_csv(A.grade(lab, subs, tmp_path / "grades", timeout=NO_LIMIT, assignments_dir=out, log=lambda *_: None))
    full = {q.name: q.points for q in qs}
    assert {q: float(rows["solution.ipynb"][q]) for q in full} == full
    assert [float(rows["wraps_the_library.ipynb"][q.name]) for q in qs] == [0] + [q.points for q in qs[1:]]
    fb = (tmp_path / "grades" / lab / "wraps_the_library.txt").read_text()
    assert "which this exercise does not allow" in fb and "it earns no points" in fb
    assert "public check (1 point): FAILED" in fb and "hidden test (2 points): FAILED" in fb
    assert all(float(rows["untouched.ipynb"][q]) == 0 for q in full)
    assert [float(rows["special_cased_last_raises.ipynb"][q.name]) for q in qs] == [q.public for q in qs[:-1]] + [0]
    for row in rows.values():
        assert float(row["max_total"]) == sum(full.values()) + written_points(lab) and row["status"] == "graded"


def _record_pid(path, then):
    """A code cell that appends this kernel's pid to ``path`` (outside the grader's folders), then ``then``."""
    return f"import os\nwith open({str(path)!r}, 'a') as _f:\n    _f.write(f'{{os.getpid()}}\\n')\n{then}"


def _hanging(fn, hung):
    """A definition of ``fn`` that, when called, writes its kernel's pid to ``hung`` (atomically: the file
    appears whole) and never returns."""
    return (f"def {fn}(*args):\n    import os\n    with open({str(hung) + '.tmp'!r}, 'w') as _f:\n"
            f"        _f.write(str(os.getpid()))\n    os.replace({str(hung) + '.tmp'!r}, {str(hung)!r})\n"
            "    while True:\n        pass")


def test_grading_survives_what_students_hand_in(built, tmp_path, monkeypatch):
    lab, subs, hang_dir = "lab1_ece", tmp_path / "subs", tmp_path / "hang"
    pids = tmp_path / "pids.txt"  # the processes the submissions start write their pids here
    hung = tmp_path / "hung.pid"  # the hanging submission's kernel writes its pid here once it hangs
    out, qs, solution = start_submissions(lab, built, subs)
    write(subs, "last_raises", raising(solution, qs[-1].function))
    write(subs, "special_cased", special_cased(solution, qs))
    write(hang_dir, "hangs", replace_function(solution, qs[1].function, _hanging(qs[1].function, hung)))
    chaos = copy(solution)
    chaos.cells[3:3] = [nbformat.v4.new_code_cell(src) for src in (
        "import a_module_that_does_not_exist",
        "import os, shutil\nfor f in os.listdir('.'):\n    shutil.rmtree(f) if os.path.isdir(f) else os.remove(f)",
        "for _ in range(30):\n    print('x' * 1_000_000)",
        "import subprocess\n_p = subprocess.Popen(['sleep', '600'], start_new_session=True)\n"
        f"with open({str(pids)!r}, 'a') as _f:\n    _f.write(f'{{_p.pid}}\\n')")]
    # a missing module, its folder wiped, 30 MB printed, a process left running: graded all the same
    write(subs, "chaos", chaos)
    hog = copy(solution)
    # 3 GB, above the 1500 MB given below, held in that cell until the grader cuts it (not moving on to
    # the next cell, where the cut would be reported if the grader's check came late on a loaded machine)
    hog.cells.insert(3, nbformat.v4.new_code_cell(_record_pid(
        pids, "import numpy as np, time\nblocks = [np.ones(2**27) for _ in range(3)]\nwhile True:\n"
              "    time.sleep(1)")))
    write(subs, "memory_hog", hog)
    (subs / "not_a_notebook.ipynb").write_text("this is not JSON")
    csv_path = A.grade(lab, subs, tmp_path / "grades", timeout=NO_LIMIT, memory_mb=1500, assignments_dir=out,
                       log=lambda *_: None)
    # the hanging submission, on its own: the grader's clock (what its time limit is measured on) stands
    # still until the submission hangs in q2, then jumps past the limit. The cut comes at that point for
    # certain, whatever the machine's load; the limit itself is still the grader's own code path.
    with monkeypatch.context() as m:
        m.setattr(A.batch, "_clock", lambda: 1e9 if hung.exists() else 0.0)
        hang_csv = A.grade(lab, hang_dir, tmp_path / "grades-hang", timeout=NO_LIMIT, memory_mb=1500,
                           assignments_dir=out, log=lambda *_: None, jobs=1)
    rows = {**read_csv(csv_path), **read_csv(hang_csv)}
    assert len(rows) == 8
    pts = {name: [float(row[q.name]) for q in qs] for name, row in rows.items()}
    full = [q.points for q in qs]
    assert pts["solution.ipynb"] == full and rows["solution.ipynb"]["status"] == "graded"
    assert pts["untouched.ipynb"] == [0] * len(qs)
    assert pts["last_raises.ipynb"] == full[:-1] + [0]
    assert pts["special_cased.ipynb"] == [q.public for q in qs]
    # cut at the time limit in the hidden test of q2: q1 was graded before and keeps its points
    assert pts["hangs.ipynb"] == [full[0]] + [0] * (len(qs) - 1)
    assert rows["hangs.ipynb"]["status"].startswith(f"time limit: cut after {NO_LIMIT} s in grading exercise 2 (")
    assert "not graded: " + ", ".join(q.name for q in qs[1:]) in rows["hangs.ipynb"]["details"]
    assert pts["chaos.ipynb"] == full and rows["chaos.ipynb"]["status"] == "graded"
    assert "the cell that starts `import a_module_that_does_not_exist`" in rows["chaos.ipynb"]["details"]
    assert "raised ModuleNotFoundError" in rows["chaos.ipynb"]["details"]
    assert "output beyond" in rows["chaos.ipynb"]["details"]
    assert pts["memory_hog.ipynb"] == [0] * len(qs)
    assert rows["memory_hog.ipynb"]["status"].startswith("memory limit: cut above 1500 MB in the cell that starts `")
    assert pts["not_a_notebook.ipynb"] == [0] * len(qs)
    assert rows["not_a_notebook.ipynb"]["status"].startswith("not a notebook")
    for row in rows.values():
        assert float(row["total"]) == sum(float(row[q.name]) for q in qs)  # the written answer is not marked yet
        assert float(row["max_total"]) == sum(full) + written_points(lab)
    # feedback: which check failed and why, in calibcourse.study.course.checks' words; no hidden seed shown
    fb = (tmp_path / "grades" / lab / "last_raises.txt").read_text()
    assert f"{qs[-1].name}, exercise {len(qs)} (" in fb and f"function {qs[-1].function}: 0 / " in fb
    assert "the function raised ZeroDivisionError: my bug" in fb
    assert "seed=" not in fb and not re.search(r"\bcell \d", fb)  # a notebook shows no cell numbers
    # a hidden test's failure names the case by its kind, never its inputs or expected values
    hidden = fb[fb.index("hidden test", fb.index(f"{qs[-1].name}, exercise")):]
    assert "hidden case 1" in hidden and "expected" not in hidden and "n_bins =" not in hidden
    fb = (tmp_path / "grades" / lab / "special_cased.txt").read_text()
    assert "public check (1 point): passed" in fb and "hidden test (2 points): FAILED" in fb
    assert "not one of the inputs I memorized" in fb
    assert not list(csv_path.parent.glob("*.tmp"))
    # the memory hog's kernel, the detached sleep and the hanging kernel (which wrote their own pids) were
    # all killed, and grade() returns only once the processes it killed have exited: each is gone, or
    # a zombie its new parent has not reaped yet, when grade() returns. No waiting, no deadline here.
    started = [int(p) for p in pids.read_text().split()] + [int(hung.read_text())]
    assert len(started) == 3, started
    assert not [p for p in started if _running(p)], "processes a submission started outlived its grading"


def _running(pid: int) -> bool:
    """Whether process ``pid`` (one the test's own submissions started) has not exited: a pidfd of it is
    readable once it has (a zombie has exited); no pidfd can be opened once it is reaped."""
    try:
        fd = os.pidfd_open(pid)
    except ProcessLookupError:
        return False
    try:
        return not select.select([fd], [], [], 0)[0]
    finally:
        os.close(fd)


def test_written_answers_reach_the_grade(built, tmp_path):
    """A written answer lands in the marking sheet beside its rubric's lines; the marks an instructor fills
    in there are checked, then counted in the grades CSV (the question's column, written, total) and the
    feedback; a mark above its line's points stops the grading with one line naming the cell."""
    lab = "lab3_binning"
    subs = tmp_path / "subs"
    out, qs, _ = start_submissions(lab, built, subs)
    student = nbformat.read(built[1][lab]["student"], as_version=4)
    answered = copy(student)
    for i, cell in enumerate(answered.cells):
        if "answer" in cell.metadata.get("tags", []):
            cell.source = f"My answer, cell {i}: it depends on the errors."
    write(subs, "answered", answered)
    grades = tmp_path / "grades"
    rows = read_csv(A.grade(lab, subs, grades, timeout=NO_LIMIT, assignments_dir=out, log=lambda *_: None))
    wqs = W.written_questions(jupytext.read(ROOT / "notebooks" / "labs" / f"{lab}.md"))
    assert [w.name for w in wqs] == ["q5", "q6"]
    assert all(rows[f][w.name] == "" and rows[f]["written"] == "" for f in rows for w in wqs)
    assert "written answers not marked yet: q5, q6" in rows["answered.ipynb"]["details"]
    sheet = grades / f"{lab}-written.csv"
    with open(sheet, newline="") as f:
        table = list(csv.DictReader(f))
    by_file = {r["file"]: r for r in table}
    assert (
        by_file["answered.ipynb"]["q5 answer"].startswith("My answer") and by_file["untouched.ipynb"]["q6 answer"] == ""
    )
    # a column per rubric line, headed by its points and its text: the sheet is marked without the solution open
    assert list(table[0]) == W.sheet_columns(wqs)
    assert [c.split(":")[0] for c in table[0]] == ["file", "q5.1 (of 1)", "q5.2 (of 1)", "q5.3 (of 1)", "q5 answer",
                                                   "q6.1 (of 1)", "q6.2 (of 1)", "q6.3 (of 1)", "q6 answer"]
    for w in wqs:
        for k, (points, text) in enumerate(w.rubric, 1):
            assert f"{w.name}.{k} (of {points:g}): {text}" in table[0]
    col = {c.split(":")[0]: c for c in table[0]}
    by_file["answered.ipynb"].update({col["q5.1 (of 1)"]: "1", col["q5.2 (of 1)"]: "0.5", col["q5.3 (of 1)"]: "0",
                                      col["q6.1 (of 1)"]: "1", col["q6.2 (of 1)"]: "1", col["q6.3 (of 1)"]: "1"})
    by_file["solution.ipynb"].update({col["q5.1 (of 1)"]: "1"})  # partly marked: not counted yet

    def save(table):
        with open(sheet, "w", newline="") as f:
            w = csv.DictWriter(f, fieldnames=W.sheet_columns(wqs))
            w.writeheader()
            w.writerows(table)
    save(table)
    rows = read_csv(A.grade(lab, subs, grades, timeout=NO_LIMIT, assignments_dir=out, log=lambda *_: None))
    code = sum(float(rows["answered.ipynb"][q.name]) for q in qs)
    assert (rows["answered.ipynb"]["q5"], rows["answered.ipynb"]["q6"], rows["answered.ipynb"]["written"]) == (
        "1.5", "3", "4.5")
    assert float(rows["answered.ipynb"]["total"]) == code + 4.5
    assert rows["solution.ipynb"]["q5"] == "" and float(rows["solution.ipynb"]["total"]) == sum(q.points for q in qs)
    fb = (grades / lab / "answered.txt").read_text()
    assert "q5, question 5 (written): 1.5 / 3" in fb and "0.5 / 1  Explains that the ECE's sampling noise" in fb
    assert "q6, question 6 (written): not marked yet" not in fb
    assert "(no answer found under the question)" in (grades / lab / "untouched.txt").read_text()
    with open(sheet, newline="") as f:  # the marks are kept when the sheet is written again
        assert {r["file"]: r for r in csv.DictReader(f)}["answered.ipynb"][col["q5.2 (of 1)"]] == "0.5"
    by_file["answered.ipynb"][col["q5.2 (of 1)"]] = "2"
    save(table)
    with pytest.raises(
        ValueError,
        match=r"^lab3_binning-written.csv, row \d \(answered.ipynb\), column 'q5.2 \(of 1\)': "
        r"2 is more than the line's 1 point$",
    ):
        A.grade(lab, subs, grades, timeout=NO_LIMIT, assignments_dir=out, log=lambda *_: None)


def test_grade_rejects_bad_arguments(tmp_path):
    with pytest.raises(ValueError, match="lab must be one of"):
        A.grade("lab9", tmp_path)
    with pytest.raises(ValueError, match="no .ipynb file"):
        A.grade("lab1_ece", tmp_path)
    with pytest.raises(ValueError, match="timeout must be"):
        A.grade("lab1_ece", tmp_path, timeout=0)
    with pytest.raises(ValueError, match="not a folder"):
        A.grade("lab1_ece", tmp_path / "nope")


def test_otter_grades_the_solution_with_the_autograder_archive(built, tmp_path):
    """What Gradescope runs: otter's own grading of the solution with the archive, full points."""
    from otter.run import main as otter_run

    out, paths = built
    p = paths["lab1_ece"]
    sub = tmp_path / "lab1_ece.ipynb"
    nb = nbformat.read(p["solution"], as_version=4)
    for cell in nb.cells:  # the quick profile, as in `grade`
        if "parameters" in cell.metadata.get("tags", []):
            cell.source = cell.source.replace('profile = "default"', 'profile = "ci"')
    nbformat.write(nb, sub)
    results = otter_run(str(sub), autograder=str(p["autograder"]), output_dir=None, no_logo=True)
    assert results.total == results.possible == sum(q.points for q in lab_questions("lab1_ece"))


# ------------------------------------------------------------------ one hand-out
def test_make_labs_writes_the_notebooks_make_assignments_hands_out(built, tmp_path):
    """Byte for byte: the student notebooks of `make labs` (and `calibcourse labs`) are `make assignments`'
    hand-outs, and its instructor edition is their solution notebooks; a course's secret changes both alike."""
    out, paths = built
    written = handout.write_editions(ROOT, tmp_path / "labs", editions=("student", "instructor"),
                                     secret=A.DEFAULT_SECRET)
    assert len(written) == 2 * len(LABS)
    for lab in LABS:
        for edition, kind in (("student", "student"), ("instructor", "solution")):
            assert (tmp_path / "labs" / edition / f"{lab}.ipynb").read_bytes() == paths[lab][kind].read_bytes(), (
                lab, edition)
    assert handout.main(["--out", str(tmp_path / "cli"), "--lab", "lab1_ece", "--secret", A.DEFAULT_SECRET]) == 0
    assert (tmp_path / "cli" / "lab1_ece.ipynb").read_bytes() == paths["lab1_ece"]["student"].read_bytes()
    # a course with its own secret: its variant of Lab 2, in both
    secret = "a course of our own, 2026"
    course = A.write_assignment(ROOT / "notebooks" / "labs" / "lab2_temperature.md", tmp_path / "course", secret,
                                log=lambda *_: None)
    mine = handout.write_labs(tmp_path / "course-labs", ["lab2_temperature"], secret=secret)[0]
    assert mine.read_bytes() == course["student"].read_bytes() != paths["lab2_temperature"]["student"].read_bytes()
    text = mine.read_text()
    assert "Your course's version of this lab" in text and 'variant=\\"' in text


# ------------------------------------------------------------------ make grade and otter run agree
LAB2_ANSWERS = {  # the answers an instructor tried (issue 49), each a function's cell
    "softmax_t": {
        "log_softmax": "def softmax_t(logits, temperature):\n"
                       "    return np.exp(metrics.log_softmax(logits / temperature))",
        "getattr": "def softmax_t(logits, temperature):\n"
                   "    return getattr(metrics, 'soft' + 'max')(logits / temperature)",
        "scipy": "from scipy.special import softmax\n\ndef softmax_t(logits, temperature):\n"
                 "    return softmax(logits / temperature, axis=1)",
        "float32": "def softmax_t(logits, temperature):\n    z = (logits / temperature).astype(np.float32)\n"
                   "    e = np.exp(z - z.max(axis=1, keepdims=True))\n    return e / e.sum(axis=1, keepdims=True)",
        "global max": "def softmax_t(logits, temperature):\n    z = logits / temperature\n    e = np.exp(z - z.max())\n"
                      "    return e / e.sum(axis=1, keepdims=True)"},
    "calibrate": {
        "TemperatureScaling": "from calibcourse.calibration import calibrators\n\n"
                              "def calibrate(val_logits, val_labels, test_logits, test_labels):\n"
                              "    ts = calibrators.TemperatureScaling().fit(val_logits, val_labels)\n"
                              "    return ts.predict_proba(test_logits)",
        "fit on test": "def calibrate(val_logits, val_labels, test_logits, test_labels):\n"
                       "    nll = lambda lt: metrics.nll(metrics.softmax(test_logits / np.exp(lt)), test_labels)\n"
                       "    t = np.exp(minimize_scalar(nll, bounds=(-4, 4), method='bounded').x)\n"
                       "    return metrics.softmax(test_logits / t)"},
    "grid_temperature": {
        "last on ties": "def grid_temperature(val_logits, val_labels, temperatures, n_bins=15):\n"
                        "    best, best_t = np.inf, None\n    for t in temperatures:\n"
                        "        e = metrics.ece(metrics.softmax(val_logits / t), val_labels, n_bins=n_bins)\n"
                        "        if e <= best:\n            best, best_t = e, t\n    return float(best_t)",
        "unweighted": "def _ece(p, y, n_bins):\n    conf, ok = p.max(1), p.argmax(1) == y\n"
                      "    idx = np.searchsorted(np.linspace(0, 1, n_bins + 1)[1:-1], conf, side='left')\n"
                      "    return np.mean([abs(ok[idx == m].mean() - conf[idx == m].mean())\n"
                      "                    for m in range(n_bins) if (idx == m).any()])\n\n"
                      "def grid_temperature(val_logits, val_labels, temperatures, n_bins=15):\n"
                      "    e = [_ece(metrics.softmax(val_logits / t), val_labels, n_bins) for t in temperatures]\n"
                      "    return float(temperatures[int(np.argmin(e))])",
        "TemperatureScaling.grid": "from calibcourse.calibration.calibrators import TemperatureScaling as TS\n\n"
                                   "def grid_temperature(val_logits, val_labels, temperatures, n_bins=15):\n"
                                   "    return TS.grid(val_logits, val_labels, temperatures, n_bins=n_bins).best()"},
    "nll_at_temperature": {
        "cross_entropy": "import torch\n\ndef nll_at_temperature(logits, labels, temperature):\n"
                         "    z, y = torch.as_tensor(logits / temperature), torch.as_tensor(labels)\n"
                         "    return float(torch.nn.functional.cross_entropy(z, y))",
        "global max": "def nll_at_temperature(logits, labels, temperature):\n    z = logits / temperature\n"
                      "    z = z - z.max()\n    log_p = z - np.log(np.exp(z).sum(axis=1, keepdims=True))\n"
                      "    return float(-np.mean(log_p[np.arange(len(labels)), labels]))",
        "scipy log_softmax": "from scipy.special import log_softmax\n\n"
                             "def nll_at_temperature(logits, labels, temperature):\n"
                             "    lp = log_softmax(logits / temperature, axis=1)\n"
                             "    return float(-np.mean(lp[np.arange(len(labels)), labels]))",
        "naive": "def nll_at_temperature(logits, labels, temperature):\n    z = logits / temperature\n"
                 "    e = np.exp(z - z.max(axis=1, keepdims=True))\n    p = e / e.sum(axis=1, keepdims=True)\n"
                 "    return float(-np.mean(np.log(p[np.arange(len(labels)), labels])))"},
}
#: submissions of Lab 2, each answering its four exercises so (None: the solution's)
LAB2_SUBMISSIONS = {
    "routes": ("log_softmax", "TemperatureScaling", "last on ties", "cross_entropy"),
    "aliases": ("getattr", None, "unweighted", "global max"),
    "scipy": ("scipy", "fit on test", "TemperatureScaling.grid", "scipy log_softmax"),
    "precision": ("float32", None, None, "naive"),
    "global_max": ("global max", None, None, None),
}


def test_make_grade_and_otter_run_give_the_same_points(built, tmp_path):
    """The same Lab 2 submissions, graded by `make grade` and by `otter run` with the autograder archive (what
    Gradescope runs): the same points on every question, the forbidden routes at 0 in both."""
    from otter.run import main as otter_run

    lab, subs = "lab2_temperature", tmp_path / "subs"
    out, qs, solution = start_submissions(lab, built, subs)
    fns = [q.function for q in qs]
    for name, answers in LAB2_SUBMISSIONS.items():
        nb = solution
        for fn, answer in zip(fns, answers, strict=True):
            if answer is not None:
                nb = replace_function(nb, fn, LAB2_ANSWERS[fn][answer])
        write(subs, name, nb)
    rows = read_csv(A.grade(lab, subs, tmp_path / "grades", timeout=NO_LIMIT, assignments_dir=out, log=lambda *_: None))
    table = {}
    for path in sorted(subs.glob("*.ipynb")):
        graded = tmp_path / "otter" / path.name
        graded.parent.mkdir(exist_ok=True)
        text = path.read_text().replace('profile = \\"default\\"', 'profile = \\"ci\\"')  # as `make grade` runs it
        graded.write_text(text)
        results = otter_run(str(graded), autograder=str(built[1][lab]["autograder"]), output_dir=None, no_logo=True)
        table[path.name] = [(float(rows[path.name][q.name]), float(results.get_score(q.name))) for q in qs]
        for q in qs:  # what Gradescope shows of a failed test names the exercise, as the notebook does
            summary = results.get_result(q.name).summary()
            assert "Test case failed" not in summary or f"CheckFailure: exercise {q.title.partition('.')[0]} (" in (
                summary), (path.name, q.name, summary)
    print("\nsubmission: (make grade, otter run) per question")
    for name, scores in table.items():
        print(f"  {name:22s}", "  ".join(f"{q.name} {a:g}/{b:g}" for q, (a, b) in zip(qs, scores, strict=True)))
    for name, scores in table.items():
        assert all(a == b for a, b in scores), (name, scores)
    assert [a for a, _ in table["solution.ipynb"]] == [q.points for q in qs]
    assert all(a == 0 for a, _ in table["untouched.ipynb"])
    for name, answers in LAB2_SUBMISSIONS.items():
        for q, answer, (points, _) in zip(qs, answers, table[f"{name}.ipynb"], strict=True):
            if answer is None:
                assert points == q.points, (name, q.name)
            else:  # a wrong answer keeps the public point at most; a route to the library's answer gets nothing
                assert points <= q.public, (name, answer, points)
    routes = dict(zip(fns, LAB2_SUBMISSIONS["routes"], strict=True))
    assert all(points == 0 for points, _ in table["routes.ipynb"]), routes
