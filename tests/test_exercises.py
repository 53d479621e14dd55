"""The chapters' exercises: every coding exercise's solution is executed code, folded, in both editions."""
import re
from pathlib import Path

import jupytext
import nbformat
import pytest

from calibcourse.tools import build
from calibcourse.tools.editions import to_edition

ROOT = Path(__file__).resolve().parents[1]
CHAPTERS = sorted((ROOT / "notebooks").glob("0[1-9]_*.md"))

# a directive's fence: ``` or ````, its name, and its argument (title or label)
DIRECTIVE = re.compile(r"^(`{3,})\{(exercise|solution|solution-start|solution-end|code-cell)\}[ \t]*(.*)$", re.M)
# an exercise is a coding one when its title or its text says so
CODING = re.compile(r"\bcoding\b|\bsimulat", re.I)


def directives(text):
    """Every exercise and solution directive of a MyST page, in order: (kind, argument, options, body, line)."""
    out = []
    for m in DIRECTIVE.finditer(text):
        fence, kind, arg = m.groups()
        close = re.compile(rf"^{fence}\s*$", re.M).search(text, m.end())
        body = text[m.end():close.start()] if close else ""
        options = dict(re.findall(r"^:([\w-]+):[ \t]*(.*)$", body, re.M))
        out.append((kind, arg.strip(), options, body, text.count("\n", 0, m.start()) + 1))
    return out


def exercises_and_solutions(path):
    """``({label: (title, text)}, {label: solution})`` of one chapter.

    A solution is ``{"gated": bool, "options": dict, "code_cells": int, "text": str, "line": int}``:
    gated solutions run from ``{solution-start}`` to ``{solution-end}`` and count their code cells.
    """
    found = directives(path.read_text())
    exercises, solutions, open_gate = {}, {}, None
    for kind, arg, options, body, line in found:
        if kind == "exercise":
            exercises[options["label"]] = (arg, body)
        elif kind == "solution":
            assert open_gate is None, f"{path.name}:{line}: a solution inside the gated solution of {open_gate}"
            solutions[arg] = {"gated": False, "options": options, "code_cells": 0, "text": body, "line": line}
        elif kind == "solution-start":
            assert open_gate is None, f"{path.name}:{line}: {open_gate}'s gated solution is not closed"
            open_gate = arg
            solutions[arg] = {"gated": True, "options": options, "code_cells": 0, "text": "", "line": line}
        elif kind == "solution-end":
            assert open_gate is not None, f"{path.name}:{line}: solution-end without solution-start"
            open_gate = None
        elif kind == "code-cell" and open_gate is not None:
            solutions[open_gate]["code_cells"] += 1
    assert open_gate is None, f"{path.name}: the gated solution of {open_gate} is not closed"
    return exercises, solutions


def coding_labels(exercises):
    return sorted(label for label, (title, text) in exercises.items() if CODING.search(title + "\n" + text))


def test_the_parser_finds_a_gated_solution_and_its_code_cells(tmp_path):
    page = tmp_path / "01_demo.md"
    page.write_text("```{exercise} Coding: count\n:label: ex-a\n\nCount.\n```\n\n"
                    "```{solution-start} ex-a\n:class: dropdown\n```\n\nText.\n\n"
                    "```{code-cell} ipython3\nprint(2)\n```\n\n```{solution-end}\n```\n\n"
                    "```{exercise} Derivation\n:label: ex-b\n\nShow it.\n```\n\n"
                    "````{solution} ex-b\n:class: dropdown\n\nBy hand.\n````\n")
    exercises, solutions = exercises_and_solutions(page)
    assert coding_labels(exercises) == ["ex-a"]
    assert solutions["ex-a"]["gated"] and solutions["ex-a"]["code_cells"] == 1
    assert solutions["ex-a"]["options"] == {"class": "dropdown"}
    assert not solutions["ex-b"]["gated"] and solutions["ex-b"]["code_cells"] == 0
    page.write_text("```{solution-start} ex-a\n```\n\n```{code-cell} ipython3\n1\n```\n")
    with pytest.raises(AssertionError, match="not closed"):
        exercises_and_solutions(page)


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.stem)
def test_every_coding_exercise_has_an_executed_folded_solution(path):
    exercises, solutions = exercises_and_solutions(path)
    assert set(solutions) == set(exercises), f"{path.name}: exercises and solutions do not pair up"
    for label in coding_labels(exercises):
        sol = solutions[label]
        assert sol["gated"], f"{path.name}:{sol['line']}: {label} is a coding exercise; its solution must be " \
                             "gated (solution-start / solution-end) so that its code runs"
        assert sol["code_cells"] >= 1, f"{path.name}:{sol['line']}: {label}'s solution has no code cell"
    for label, sol in solutions.items():
        assert sol["options"].get("class") == "dropdown", f"{path.name}:{sol['line']}: {label} is not folded"
        # code shown without its output: a fenced block inside a plain solution
        assert not re.search(r"^```+(python|ipython3?)\s*$", sol["text"], re.M), \
            f"{path.name}:{sol['line']}: {label}'s solution shows code that does not run; gate it"


def gated_code_cells(nb):
    """The code cells between each solution-start and its solution-end of a notebook, by label."""
    cells, label = {}, None
    for cell in nb.cells:
        if cell.cell_type == "markdown":
            for m in re.finditer(r"\{solution-start\}[ \t]*(\S+)|\{solution-end\}", cell.source):
                label = m.group(1)
                if label:
                    cells[label] = []
        elif label is not None:
            cells[label].append(cell)
    return cells


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.stem)
def test_the_student_edition_keeps_the_gated_solutions(path):
    """Only the labs' solutions leave the student edition: the chapters' gated code stays, untouched."""
    _, solutions = exercises_and_solutions(path)
    gated = {label for label, sol in solutions.items() if sol["gated"]}
    for edition in ("student", "instructor"):
        nb = to_edition(jupytext.read(path), edition)
        cells = gated_code_cells(nb)
        assert set(cells) == gated
        for label, code in cells.items():
            assert len(code) == solutions[label]["code_cells"]
            assert all(c.cell_type == "code" and "NotImplementedError" not in c.source for c in code)


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.stem)
def test_the_built_chapter_ran_the_solutions_code(path):
    """On the executed notebook of the last build (skipped where there is none): every gated
    solution's code cell ran, without error, and shows an output."""
    page = next((p for p in build.notebook_pages(ROOT) if p.source == path), None)
    if page is None or not page.output.exists() or page.output.stat().st_mtime < path.stat().st_mtime:
        pytest.skip(f"{path.name} has no executed notebook newer than its source (make book)")
    nb = nbformat.read(page.output, as_version=4)
    cells = gated_code_cells(nb)
    assert cells, f"{page.output.name} has no gated solution"
    for label, code in cells.items():
        for cell in code:
            assert cell.get("execution_count"), f"{label}: a solution cell did not run"
            kinds = [o["output_type"] for o in cell.outputs]
            assert "error" not in kinds, f"{label}: a solution cell failed"
            assert not any(o.get("name") == "stderr" for o in cell.outputs), f"{label}: stderr (a warning?)"
        assert any(c.outputs for c in code), f"{label}: the solution shows no output"


def test_chapter_6_derivation_both_poolings_are_bounded_by_the_members_mean_nll():
    """The solution of ex-ch6-derivation: averaging probabilities and averaging logits both have an
    NLL at most the members' mean NLL (Jensen for -log, convexity of log-sum-exp), checked on
    20,000 random ensembles; and neither pooling is always the lower."""
    import numpy as np
    from scipy.special import log_softmax, logsumexp

    rng = np.random.default_rng(0)
    m, k, n = 5, 4, 20_000
    z = rng.normal(size=(n, m, k)) * rng.uniform(0.1, 8, size=(n, 1, 1))  # members' logits, from flat to sharp
    y = rng.integers(0, k, n)
    logp = log_softmax(z, axis=2)
    members = -logp[np.arange(n), :, y].mean(1)
    prob_avg = -(logsumexp(logp, axis=1) - np.log(m))[np.arange(n), y]
    logit_avg = -log_softmax(z.mean(1), axis=1)[np.arange(n), y]
    assert (prob_avg <= members + 1e-12).all() and (logit_avg <= members + 1e-12).all()
    assert (prob_avg < logit_avg).any() and (logit_avg < prob_avg).any()
    text = " ".join(next(ROOT.glob("notebooks/06_*.md")).read_text().split())
    assert "does not inherit the bound" not in text and "inherits the bound too" in text
