"""The labs: both editions from one source; the instructor edition passes its checks, the
student edition executes and its checks report failures (not crashes)."""
import json
from pathlib import Path

import jupytext
import pytest

from calibcourse.tools import build, editions

ROOT = Path(__file__).resolve().parent.parent
LABS = sorted((ROOT / "notebooks" / "labs").glob("*.md"))


def test_strip_solution_keeps_indentation_and_rejects_unbalanced_markers():
    code = "def f(x):\n    # BEGIN SOLUTION\n    return x + 1\n    # END SOLUTION\n\ny = 2"
    assert editions.strip_solution(code) == (
        'def f(x):\n    raise NotImplementedError("exercise: write your solution here")\n\ny = 2')
    with pytest.raises(ValueError, match="without"):
        editions.strip_solution("# BEGIN SOLUTION\nx = 1")
    with pytest.raises(ValueError, match="without"):
        editions.strip_solution("x = 1\n# END SOLUTION")


def test_every_lab_has_exercises_and_checks():
    assert len(LABS) >= 4
    for lab in LABS:
        nb = jupytext.read(lab)
        exercises = [c for c in nb.cells if "exercise" in c.metadata.get("tags", [])]
        assert exercises and all(editions.BEGIN in c.source for c in exercises), lab.name
        assert any("checks.check_" in c.source for c in nb.cells), lab.name


def test_write_labs_gives_two_editions(tmp_path):
    paths = editions.write_labs(ROOT, tmp_path)
    assert len(paths) == 2 * len(LABS)
    student = (tmp_path / "student" / "lab1_ece.ipynb").read_text()
    instructor = (tmp_path / "instructor" / "lab1_ece.ipynb").read_text()
    assert "NotImplementedError" in student and "np.searchsorted" not in student
    assert "np.searchsorted" in instructor and "BEGIN SOLUTION" not in instructor
    assert 'edition = \\"student\\"' in student


def outputs_text(path):
    nb = json.loads(Path(path).read_text())
    texts = []
    for cell in nb["cells"]:
        for out in cell.get("outputs", []):
            texts.append("".join(out.get("text", "")) + "".join(out.get("data", {}).get("text/plain", "")))
            if out.get("output_type") == "error":
                texts.append(f"ERROR {out['ename']}: {out['evalue']}")
    return "\n".join(texts)


@pytest.mark.parametrize("lab", LABS, ids=[p.stem for p in LABS])
@pytest.mark.parametrize("edition", ["instructor", "student"])
def test_lab_executes_in_both_editions(lab, edition, tmp_path):
    page = build.Page(f"book/generated/labs/{lab.stem}", lab, tmp_path / f"{lab.stem}.ipynb")
    build.execute_page(page, {"profile": "ci", "edition": edition}, ROOT, tmp_path / "failed")
    text = outputs_text(page.output)
    assert "ERROR" not in text, text
    n_checks = sum(c.count("checks.check_") for c in [lab.read_text()])
    if edition == "instructor":
        assert "FAIL" not in text, text
        assert text.count("all passed") == n_checks
    else:
        assert "FAIL" in text and "NotImplementedError" in text
        assert "all passed" not in text


def test_lab2_closing_question_is_answered_in_the_instructor_edition_only():
    src = ROOT / "notebooks" / "labs" / "lab2_temperature.md"
    answer = [c for c in jupytext.read(src).cells if "solution" in c.metadata.get("tags", [])]
    assert len(answer) == 1 and answer[0].source.startswith("**Answer.** The NLL's temperature")
    texts = {ed: "\n".join(c.source for c in editions.to_edition(jupytext.read(src), ed).cells)
             for ed in ("instructor", "student")}
    assert "**Answer.**" in texts["instructor"] and "**Answer.**" not in texts["student"]
    assert "**Question 6** (written, 4 points). Which of the two temperatures" in texts["student"]
