"""The labs: both editions from one source; the instructor edition passes its checks, the
student edition executes and its checks report failures (not crashes)."""
import json
import os
from pathlib import Path

import jupytext
import pytest

from calibcourse.tools import build, editions, handout

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
    paths = handout.write_editions(ROOT, tmp_path)  # the student edition alone, unless asked
    assert len(paths) == len(LABS) and not (tmp_path / "instructor").exists()
    paths = handout.write_editions(ROOT, tmp_path, editions=("instructor",))
    assert len(paths) == len(LABS)
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
def test_lab_executes_in_both_editions(lab, edition, two_editions):
    # the lab as the book executed it for that edition (the two-edition build below keeps both copies)
    text = outputs_text(two_editions / build.EXECUTED / edition / "labs" / f"{lab.stem}.ipynb")
    assert "ERROR" not in text, text
    n_checks = sum(c.count("checks.check_") for c in [lab.read_text()])
    if edition == "instructor":
        assert "FAIL" not in text, text
        assert text.count("all passed") == n_checks
    else:  # each check says the function is not written yet, once, and counts nothing as failed
        assert text.count(": not written yet, its ") == n_checks, text
        assert "FAIL" not in text and "all passed" not in text and " failed" not in text


def test_lab2_closing_question_is_answered_in_the_instructor_edition_only():
    src = ROOT / "notebooks" / "labs" / "lab2_temperature.md"
    answer = [c for c in jupytext.read(src).cells if "solution" in c.metadata.get("tags", [])]
    assert len(answer) == 1 and answer[0].source.startswith("**Answer.** The NLL's temperature")
    texts = {ed: "\n".join(c.source for c in editions.to_edition(jupytext.read(src), ed).cells)
             for ed in ("instructor", "student")}
    assert "**Answer.**" in texts["instructor"] and "**Answer.**" not in texts["student"]
    assert "**Question 6** (written, 4 points). Which of the two temperatures" in texts["student"]


# ------------------------------------------------------------------ graded parts, rubrics, schedule
import re
import shutil

from calibcourse.study.course import schedule
from calibcourse.tools import assignments
from calibcourse.tools.assignments import code_questions

WRITTEN = re.compile(r"\*\*Question (\d+)\*\* \(written, (\d+) points\)")


def rubric_points(text):
    """The points of a rubric cell's title and the sum of its table's rows."""
    title = re.search(r"\*\*Rubric \((\d+) points\)\.\*\*", text)
    rows = [int(m) for m in re.findall(r"(?m)^\| (\d+) \|", text)]
    return (int(title.group(1)) if title else None), sum(rows)


@pytest.mark.parametrize("lab", LABS, ids=[p.stem for p in LABS])
def test_every_lab_has_four_graded_parts_hidden_tests_and_rubrics(lab):
    nb = jupytext.read(lab)
    code = assignments.questions(nb)
    assert len(code) >= 4, [q.function for q in code]
    assert all(q.hidden > 0 for q in code), "every code part has hidden tests"
    for q in code:  # each hidden test is a real check of the checks module, with another seed
        assert hasattr(__import__("calibcourse.study.course.checks", fromlist=["x"]), q.check), q.check
    written = 0
    for i, cell in enumerate(nb.cells):
        prompt = WRITTEN.search(cell.source) if cell.cell_type == "markdown" else None
        if not prompt:
            continue
        written += 1
        rubric = next(c for c in nb.cells[i + 1:] if "solution" in c.metadata.get("tags", []))
        title, rows = rubric_points(rubric.source)
        assert title == rows == int(prompt.group(2)), (lab.name, prompt.group(0), title, rows)
    assert written >= 1, f"{lab.name}: no written question with a rubric"
    student = "\n".join(c.source for c in editions.to_edition(jupytext.read(lab), "student").cells)
    instructor = "\n".join(c.source for c in editions.to_edition(jupytext.read(lab), "instructor").cells)
    assert "Rubric" not in student and "Rubric" in instructor
    assert editions.BEGIN not in student
    # under every written question: an answer cell for the student (hidden in the book's HTML), and a model
    # answer before the rubric in the instructor edition
    cells = editions.to_edition(jupytext.read(lab), "student").cells
    for i, cell in enumerate(cells):
        prompt = WRITTEN.search(cell.source) if cell.cell_type == "markdown" else None
        if prompt:
            below = cells[i + 1]
            assert below.metadata.get("tags") == ["answer", "remove-cell"], (lab.name, prompt.group(0))
            assert below.source.startswith(f"**Your answer to question {prompt.group(1)}.**")
    assert instructor.count("**Answer.**") == written and "**Answer.**" not in student


@pytest.mark.parametrize("lab", LABS, ids=[p.stem for p in LABS])
def test_no_cell_of_the_student_edition_hands_out_an_answer(lab):
    """Outside the exercise cells, no code cell of the student edition (the hidden ones included: the
    downloaded notebook shows them) reads what an exercise forbids; the solutions themselves use none of
    it; and every exercise names what it forbids."""
    qs = assignments.questions(jupytext.read(lab))
    fns = {q.function for q in qs}
    assert all(len(q.forbid) > len(assignments.ALWAYS_FORBIDDEN) for q in qs), "an exercise without forbid"
    forbidden = sorted({f for q in qs for f in q.forbid} - set(assignments.ALWAYS_FORBIDDEN))
    student = [c.source for c in editions.to_edition(jupytext.read(lab), "student").cells
               if c.cell_type == "code" and not fns & set(code_questions.defined_names(c.source))]
    assert assignments.forbidden_uses(student, None, forbidden, imports=False) == []
    instructor = [c.source for c in editions.to_edition(jupytext.read(lab), "instructor").cells
                  if c.cell_type == "code"]
    for q in qs:
        assert assignments.forbidden_uses(instructor, q.function, q.forbid) == [], q.function
    text = lab.read_text()
    assert "reference_" not in text and "losses.focal_loss" not in text and "TemperatureScaling" not in text


@pytest.mark.parametrize("lab", LABS, ids=[p.stem for p in LABS])
def test_every_name_a_visible_cell_reads_comes_from_a_visible_cell(lab):
    """A student reads where each name of a visible cell comes from: a visible cell before it defines or
    imports it (hidden cells only set up the page and print results)."""
    import ast
    import builtins

    hidden_tags = {"remove-input", "remove-cell", "hide-input"}
    known = set(dir(builtins))
    for cell in editions.to_edition(jupytext.read(lab), "student").cells:
        if cell.cell_type != "code":
            continue
        tree = ast.parse(cell.source)
        if not hidden_tags & set(cell.metadata.get("tags", [])):
            missing = code_questions._free_names(tree) - known
            assert not missing, f"{lab.name}: a visible cell reads {sorted(missing)}, defined only in hidden cells"
            known |= code_questions._top_level_names(tree)
            for node in ast.walk(tree):
                if isinstance(node, (ast.Import, ast.ImportFrom)):
                    known |= {(a.asname or a.name).split(".")[0] for a in node.names}


def test_checks_expose_no_reference_implementation():
    from calibcourse.study.course import checks

    # the checks, their failure, and graded (a graded test's call of a check, which names the exercise)
    assert all(name in ("CheckFailure", "graded") or name.startswith("check_") for name in checks.__all__)
    assert not [name for name in dir(checks) if name.startswith("reference")]


def test_titles_banners_and_schedule_page_come_from_one_table():
    assert [p.stem for p in LABS] == list(schedule.LABS)
    for lab in LABS:
        text = lab.read_text()
        assert text.splitlines()[12] == f"# {schedule.lab_title(lab.stem)}", lab.name
        assert f'schedule.lab_banner("{lab.stem}")' in text, lab.name
    for week in schedule.WEEKS:  # the chapters' own titles
        first = next(ln for ln in (ROOT / "notebooks" / f"{week.chapter}.md").read_text().splitlines()
                     if ln.startswith("# "))
        assert first == f"# {int(week.chapter[:2])}. {week.chapter_title}", first
    assert (ROOT / schedule.PAGE).read_text() == schedule.schedule_page(), \
        "book/schedule.md is stale: python -m calibcourse.study.course.schedule"
    toc = (ROOT / "_toc.yml").read_text()
    assert "file: book/schedule" in toc and "file: book/setup" in toc


def test_every_lab_follows_the_chapter_that_teaches_it_and_is_due_within_the_course():
    weeks = {int(w.chapter[:2]): w.number for w in schedule.WEEKS}
    for lab in schedule.LAB_TABLE:
        assert lab.out >= weeks[lab.chapter], lab  # never handed out before its chapter is read
        assert lab.out < lab.due <= len(schedule.WEEKS), lab
    outs = [lab.out for lab in schedule.LAB_TABLE]
    assert outs == sorted(outs), "labs are numbered in the order they are handed out"
    page = schedule.schedule_page()
    assert f"| Lab {len(schedule.LABS)} |" in page.split("\n| 6 |")[1], "the last week collects the last lab"


@pytest.mark.parametrize("chapter", [1, 2, 3, 4, 5, 6])
def test_chapters_state_their_lab_as_the_schedule_does(chapter):
    text = " ".join((ROOT / "notebooks" / f"{schedule.WEEKS[chapter - 1].chapter}.md").read_text().split())
    assert " ".join(schedule.chapter_lab_sentence(chapter).split()) in text, \
        f"chapter {chapter}: paste schedule.chapter_lab_sentence({chapter})"


@pytest.mark.parametrize("chapter", [1, 2, 3, 4, 5, 6])
def test_chapters_state_their_time_as_the_schedule_does(chapter):
    text = " ".join((ROOT / "notebooks" / f"{schedule.WEEKS[chapter - 1].chapter}.md").read_text().split())
    assert " ".join(schedule.chapter_time_sentence(chapter).split()) in text, \
        f"chapter {chapter}: paste schedule.chapter_time_sentence({chapter})"


def test_setup_page_commands_exist_and_run(tmp_path):
    """The setup page's commands, as a student types them: the extras it installs are the package's, every
    make target it names exists, `calibcourse labs` writes the notebooks `make labs` writes (byte for byte),
    and the command run before handing in executes a student notebook; with this test's Python, without
    installing anything (the install itself is measured, and the page says how)."""
    import subprocess
    import sys

    import tomllib

    page = (ROOT / "book" / "setup.md").read_text()
    commands = [ln.strip() for block in re.findall(r"```bash\n(.*?)```", page, flags=re.S)
                for ln in block.splitlines() if ln.strip()]
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    installs = [c for c in commands if c.startswith("pip install")]
    assert installs and all(set(re.search(r"\[([\w,]+)\]", c).group(1).split(",")) <= set(extras) for c in installs)
    makefile = (ROOT / "Makefile").read_text()
    for target in re.findall(r"`?make (\w+)", page):
        assert re.search(rf"(?m)^{target}:", makefile), f"make {target} is not a Makefile target"
    env = {k: v for k, v in os.environ.items() if k != "CALIBCOURSE_SECRET"}
    (labs_cmd,) = [c for c in commands if c.startswith("calibcourse labs")]
    proc = subprocess.run([sys.executable, "-m", *labs_cmd.split()], cwd=tmp_path, capture_output=True, text=True,
                          timeout=300, env=env)
    assert proc.returncode == 0, proc.stderr
    out = tmp_path / labs_cmd.split("--out ")[1].split()[0]
    assert sorted(p.name for p in out.glob("*.ipynb")) == [f"{lab.stem}.ipynb" for lab in LABS]
    # make labs, with this test's Python, the environment's stamp taken as made: the same notebooks
    make = ["make", "-o", ".venv/.book-installed", f"PY={sys.executable}"]
    shutil.rmtree(ROOT / "_build" / "labs" / "instructor", ignore_errors=True)
    proc = subprocess.run(make + ["labs"], cwd=ROOT, capture_output=True, text=True, timeout=300, env=env)
    assert proc.returncode == 0, proc.stderr
    assert not (ROOT / "_build" / "labs" / "instructor").exists(), "the students' make labs wrote the solutions"
    for lab in LABS:
        assert (ROOT / "_build" / "labs" / "student" / f"{lab.stem}.ipynb").read_bytes() == (
            out / f"{lab.stem}.ipynb").read_bytes()
    # the command run before handing in, on a student notebook (the fast data)
    (run_cmd,) = [c for c in commands if c.startswith("jupyter nbconvert")]
    nb = tmp_path / run_cmd.split()[-1]
    text = nb.read_text().replace('profile = \\"default\\"', 'profile = \\"ci\\"')
    assert text != nb.read_text()
    nb.write_text(text)
    proc = subprocess.run([sys.executable, "-m", *run_cmd.split()], cwd=tmp_path, capture_output=True, text=True,
                          timeout=600, env=env)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "check_ece: " in nb.read_text()


# ------------------------------------------------------------------ the quizzes
CHAPTERS = sorted((ROOT / "notebooks").glob("0[1-9]_*.md"))


def quiz_section(path):
    text = path.read_text()
    start = text.index("## Self-check quiz")
    return text[text.rindex("\n(", 0, start) + 1:]


# every page with a self-check quiz: the chapters, and chapter 6's second page
QUIZ_PAGES = CHAPTERS


@pytest.mark.parametrize("chapter", QUIZ_PAGES, ids=[p.stem for p in QUIZ_PAGES])
def test_every_chapter_ends_with_a_quiz_of_five_explained_questions(chapter):
    """At least five questions, each naming the learning goal it checks ("**Question 3** (goal: ...).")
    and offering at least four explained options, exactly one of them right."""
    quiz = quiz_section(chapter)
    heads = re.findall(r"\*\*Question (\d+)\*\* \((?:to compute; )?goal: [^)]+\)\.", quiz)
    questions = re.split(r"\*\*Question \d+\*\* \((?:to compute; )?goal: [^)]+\)\.", quiz)[1:]
    assert len(questions) >= 5 and heads == [str(i) for i in range(1, len(heads) + 1)], heads
    assert quiz.count("**Question") == len(questions), "a question without its goal"
    for q in questions:
        answers = re.findall(r":::\{dropdown\}.*?\n(.*?):::", q, flags=re.S)
        assert len(answers) >= 4, q[:80]
        assert sum("**Right.**" in a for a in answers) == 1, q[:80]
        assert all(len(a.split("**", 2)[-1].split()) >= 3 for a in answers), "each answer is explained"
    assert chapter.read_text().rstrip().endswith(":::"), "the quiz is the end of the chapter"


HAVE_BROWSER = bool(shutil.which("chromium") and shutil.which("chromedriver"))


@pytest.mark.skipif(not HAVE_BROWSER, reason="chromium or chromedriver not found: the browser checks need them "
                    "(make test installs them with apt-get when run as root)")
def test_a_quiz_answers_in_headless_chromium_without_a_network(tmp_path):
    from calibcourse.tools import pagecheck

    for name in ("_config.yml",):
        shutil.copy(ROOT / name, tmp_path / name)
    (tmp_path / "book").mkdir()
    shutil.copy(ROOT / "book" / "references.bib", tmp_path / "book" / "references.bib")
    (tmp_path / "book" / "intro.md").write_text("# Intro\n\nThe quiz of chapter 3.\n")
    (tmp_path / "book" / "quiz.md").write_text("# Chapter 3's quiz\n\n" + quiz_section(CHAPTERS[2]))
    (tmp_path / "_toc.yml").write_text("format: jb-book\nroot: book/intro\nchapters:\n  - file: book/quiz\n")
    html = build.build_html(tmp_path, edition="student", log=print)
    page = html / "book" / "quiz.html"
    drv = pagecheck._driver()
    try:
        drv.get(page.resolve().as_uri())
        options = drv.find_elements("css selector", "details.quiz-option")
        assert len(options) >= 15
        first = options[:3]  # question 1's answers
        right = [o for o in first if "Right." in o.get_attribute("textContent")]
        assert len(right) == 1
        body = right[0].find_element("css selector", ".sd-summary-content")
        assert not body.is_displayed(), "the answer is hidden until the reader opens it"
        right[0].find_element("css selector", "summary").click()
        assert body.is_displayed() and body.text.startswith("Right."), body.text
        # no network: every script, style sheet and image the page loads is a local file
        loaded = drv.execute_script(
            "return Array.from(document.querySelectorAll('script[src], link[href][rel=stylesheet], img'))"
            ".map(e => e.src || e.href)")
        assert loaded and all(u.startswith("file:") for u in loaded), [u for u in loaded if not u.startswith("file:")]
    finally:
        drv.quit()


# ------------------------------------------------------------------ the student edition, built
def solution_lines(lab):
    """The longest line of each solution block of a lab: text that only the instructor edition holds (a
    course's variants, which the book does not show, left out)."""
    lines, inside, block = [], False, []
    cells = [c.source for c in jupytext.read(lab).cells if "variant" not in c.metadata.get("tags", [])]
    for ln in "\n".join(cells).splitlines():
        if ln.strip() == editions.BEGIN:
            inside, block = True, []
        elif ln.strip() == editions.END:
            inside = False
            lines.append(max(block, key=len).strip())
        elif inside:
            block.append(ln)
    return lines


@pytest.fixture(scope="module")
def two_editions(tmp_path_factory):
    """The labs built in the ci profile, both editions (``make book``, then ``make book EDITION=instructor``),
    with stand-ins for the chapters and reports the schedule links: the book's root."""
    tmp_path = tmp_path_factory.mktemp("two-editions")
    for name in ("_config.yml",):
        shutil.copy(ROOT / name, tmp_path / name)
    shutil.copytree(ROOT / "notebooks" / "labs", tmp_path / "notebooks" / "labs")
    (tmp_path / "book").mkdir()
    for name in ("references.bib", "setup.md", "schedule.md"):
        shutil.copy(ROOT / "book" / name, tmp_path / "book" / name)
    (tmp_path / "book" / "intro.md").write_text("# Intro\n\nThe labs.\n")
    pages = [(w.chapter, w.chapter_title) for w in schedule.WEEKS]
    pages += [(name, title) for w in schedule.WEEKS for name, title, _ in w.also]
    pages += sorted({(name, title) for w in schedule.WEEKS for name, title in w.evidence})
    chapters = "".join(f"  - file: book/generated/{name}\n" for name, _ in pages)
    for name, title in pages:  # the schedule links the chapters and Part II's reports: stand-ins
        (tmp_path / "notebooks" / f"{name}.md").write_text(f"# {title}\n")
    labs = "".join(f"  - file: book/generated/labs/{p.stem}\n" for p in LABS)
    (tmp_path / "_toc.yml").write_text("format: jb-book\nroot: book/intro\nchapters:\n" + chapters
                                       + "  - file: book/schedule\n  - file: book/setup\n" + labs)
    for edition in ("student", "instructor"):
        assert build.main(["--root", str(tmp_path), "--profile", "ci", "--edition", edition]) == 0
    return tmp_path


def test_student_edition_built_holds_no_lab_solution_and_the_instructor_edition_does(two_editions):
    """The labs and the course pages built in the ci profile, both editions: no solution line and no
    rubric in any page, source or download of the student edition; all of them in the instructor's."""
    import html as htmllib

    tmp_path = two_editions
    markers = {p.stem: solution_lines(p) for p in LABS}
    assert all(len(v) >= 4 for v in markers.values())
    texts = {}
    for edition in ("student", "instructor"):
        out = tmp_path / build.HTML_DIRS[edition]
        for lab in LABS:
            page = (out / "book" / "generated" / "labs" / f"{lab.stem}.html").read_text()
            source = (out / "_sources" / "book" / "generated" / "labs" / f"{lab.stem}.ipynb").read_text()
            text = htmllib.unescape(re.sub(r"<[^>]+>", "", page))
            texts[edition, lab.stem] = text + "\n" + "\n".join(
                "".join(c["source"]) for c in json.loads(source)["cells"])
    assert (tmp_path / "_build" / "html" / "index.html").exists()
    assert (tmp_path / "_build" / "instructor" / "html" / "index.html").exists()
    for lab, lines in markers.items():
        student, instructor = texts["student", lab], texts["instructor", lab]
        for line in lines:
            assert line not in student, (lab, line)
            assert line in instructor, (lab, line)
        assert "Rubric" not in student and "Rubric" in instructor, lab
        assert "NotImplementedError" in student
    # every downloadable notebook of the student edition is the student's; a lab's is its hand-out, the
    # notebook `make labs` writes, byte for byte
    downloads = list((tmp_path / "_build" / "html").rglob("*.ipynb"))
    assert downloads
    for path in downloads:
        assert "BEGIN SOLUTION" not in path.read_text() and "Rubric" not in path.read_text(), path
    handouts = handout.write_editions(tmp_path, tmp_path / "handouts", editions=("student", "instructor"),
                                   secret=assignments.DEFAULT_SECRET)
    for edition, html in (("student", "_build/html"), ("instructor", "_build/instructor/html")):
        for lab in LABS:
            served = tmp_path / html / "_sources" / "book" / "generated" / "labs" / f"{lab.stem}.ipynb"
            assert served.read_bytes() == (tmp_path / "handouts" / edition / f"{lab.stem}.ipynb").read_bytes()
    assert len(handouts) == 2 * len(LABS)


def test_no_page_a_student_reads_advertises_the_instructor_builds():
    pages = [ROOT / "book" / name for name in ("intro.md", "setup.md", "schedule.md")]
    pages += sorted((ROOT / "notebooks" / "labs").glob("*.md")) + sorted((ROOT / "notebooks").glob("[0-9]*.md"))
    for page in pages:
        if page.exists():
            assert "EDITION=instructor" not in page.read_text(), page.name
    assert "make labs EDITION=instructor" in (ROOT / "book" / "guide_instructors.md").read_text()


# ------------------------------------------------------------------ a course's variants, the labs' data, no torch
def _exercises(nb):
    """Each graded question of a lab notebook with its exercise cell's index."""
    return zip(assignments.questions(nb), [i for i, c in enumerate(nb.cells) if "points" in c.metadata], strict=True)


def _solution_namespace(lab_path, variant_of=None):
    """The instructor's solutions of a lab run in a fresh namespace (the exercises' own imports first); with
    ``variant_of``, a course's: {check: variant} as :func:`handout.course_variant` picks them."""
    from calibcourse.tools import handout

    secret = variant_of or assignments.DEFAULT_SECRET
    nb = handout.lab_notebook(lab_path, "instructor", secret)
    ns = {}
    for cell in nb.cells:
        if cell.cell_type == "code" and cell.source.startswith("import numpy as np"):
            exec(cell.source, ns)
    for q in assignments.questions(jupytext.read(lab_path)):
        (cell,) = [c for c in nb.cells if c.cell_type == "code" and f"def {q.function}(" in c.source]
        exec(cell.source, ns)
    return ns


def test_every_variant_has_its_prompt_solution_and_check():
    """Each variant a lab's check offers is written in the lab's source (its prompt and its solution, tagged
    variant, under the exercise), and that solution passes its check, rules on, on the visible cases and a
    hidden seed; the book's editions show none of them."""
    from calibcourse.tools import handout

    for lab in LABS:
        nb = jupytext.read(lab)
        for q, i in _exercises(nb):
            variants = handout.VARIANTS.get(q.check, ())
            tagged = [c for c in nb.cells[i + 1:i + 1 + 2 * len(variants)] if "variant" in c.metadata.get("tags", [])]
            assert sorted({c.metadata["variant"] for c in tagged}) == sorted(variants[1:]), (lab.stem, q.name)
            for c in tagged:
                assert c.cell_type == "markdown" or editions.BEGIN in c.source
        for edition in ("student", "instructor"):
            assert not [c for c in editions.to_edition(jupytext.read(lab), edition).cells
                        if "variant" in c.metadata.get("tags", [])]
    from calibcourse.study.course import checks

    lab2 = ROOT / "notebooks" / "labs" / "lab2_temperature.md"
    for check, variants in handout.VARIANTS.items():
        (q,) = [q for q in assignments.questions(jupytext.read(lab2)) if q.check == check]
        for variant in variants[1:]:
            secret = next(f"course {k}" for k in range(1000)
                          if handout.course_variant(lab2.stem, check, f"course {k}") == variant)
            ns = _solution_namespace(lab2, secret)
            for seed in (0, assignments.hidden_seed(lab2.stem, q.name, secret)):
                assert getattr(checks, check)(ns[q.function], seed=seed, strict=True, variant=variant), (check, variant)


def test_a_copied_published_solution_fails_every_course_s_variant():
    """A course with its own secret hands out other variants of Lab 2's graded functions: the published
    solution (the book's, the repository's) fails each of them, hidden test and public check, for every one
    of 200 courses' secrets."""
    from calibcourse.study.course import checks
    from calibcourse.study.course.checks._harness import first_failure_stops
    from calibcourse.tools import handout

    lab2 = ROOT / "notebooks" / "labs" / "lab2_temperature.md"
    published = _solution_namespace(lab2)
    qs = assignments.questions(jupytext.read(lab2))
    assert {q.check for q in qs} == set(handout.VARIANTS)
    seen = {q.check: set() for q in qs}
    for k in range(200):
        secret = f"course {k}"
        for q in qs:
            variant = handout.course_variant(lab2.stem, q.check, secret)
            seen[q.check].add(variant)
            assert variant != handout.VARIANTS[q.check][0]
            with first_failure_stops(), pytest.raises(checks.CheckFailure):  # the course's hidden test
                getattr(checks, q.check)(published[q.function], seed=assignments.hidden_seed(lab2.stem, q.name, secret),
                                         strict=True, variant=variant)
    assert all(seen[check] == set(variants[1:]) for check, variants in handout.VARIANTS.items()), seen
    for q in qs:  # and the check in the course's notebook, the same for every course of a variant
        for variant in handout.VARIANTS[q.check][1:]:
            with first_failure_stops(), pytest.raises(checks.CheckFailure):
                getattr(checks, q.check)(published[q.function], strict=True, variant=variant)


def test_the_packaged_lab_data_is_the_result_cache_s():
    """Labs 2 and 3 read their networks' outputs from a copy packaged with the course (a student's install has
    no cache): it must equal the cache's entries (python -c 'from calibcourse.study.course import labs;
    labs.write_lab_data()' rewrites it)."""
    import numpy as np

    from calibcourse.study.course import labs
    from calibcourse.study.runs.experiments import runs

    for profile in ("ci", "default"):
        for name in (labs.LAB2_RUN[profile], labs.LAB3_RUN):
            packaged, cached = labs.lab_run(name, profile), runs(name, profile)[name]
            for split in ("val", "test"):
                for what in ("logits", "labels"):
                    a, b = getattr(packaged, what)(split), getattr(cached, what)(split)
                    assert a.dtype == b.dtype and np.array_equal(a, b), (profile, name, split, what)


#: what a Windows Python lacks (POSIX-only modules): nothing the labs import may need them
POSIX_ONLY = ("fcntl", "resource", "termios", "pwd", "grp", "posix")
NO_TORCH = '''import importlib.abc, sys
class _NotInstalled(importlib.abc.MetaPathFinder):  # a student's install without the study extra
    def find_spec(self, name, path, target=None):
        if name.split(".")[0] in ("torch", "torchvision", "mnist1d", "tqdm"):
            raise ImportError(f"No module named {name!r}: not installed (Labs 1 to 3 need no torch)")
sys.meta_path.insert(0, _NotInstalled())'''


@pytest.mark.parametrize("lab", LABS[:3], ids=[p.stem for p in LABS[:3]])
def test_labs_1_to_3_run_without_torch(lab, tmp_path):
    """Labs 1 to 3, the instructor's notebook as handed out, run where torch and the study's training data
    packages cannot be imported, and pass every check; no module they import needs a POSIX-only module."""
    import nbformat
    from nbclient import NotebookClient

    from calibcourse.tools import handout

    nb = handout.lab_notebook(lab, "instructor")
    for cell in nb.cells:
        if "parameters" in cell.metadata.get("tags", []):
            cell.source = cell.source.replace('profile = "default"', 'profile = "ci"')
    nb.cells.insert(0, nbformat.v4.new_code_cell(NO_TORCH))
    nb.cells.append(nbformat.v4.new_code_cell(
        "import sys\nprint('MODULES', sorted(m for m in sys.modules if m.startswith('calibcourse')))\n"
        "print('TORCH', 'torch' in sys.modules)"))
    NotebookClient(nb, timeout=900, kernel_name="python3", resources={"metadata": {"path": str(ROOT)}}).execute()
    path = tmp_path / "out.ipynb"
    nbformat.write(nb, path)
    text = outputs_text(path)
    assert "ERROR" not in text and "FAIL" not in text, text
    assert text.count("all passed") == lab.read_text().count("checks.check_"), text
    assert "TORCH False" in text
    modules = eval(text.split("MODULES ", 1)[1].splitlines()[0])
    for name in modules:
        spec = __import__("importlib").util.find_spec(name)
        source = Path(spec.origin).read_text() if spec and spec.origin and spec.origin.endswith(".py") else ""
        top = [ln for ln in source.splitlines() if ln.startswith(("import ", "from "))]
        assert not [ln for ln in top if re.match(rf"(import|from) ({'|'.join(POSIX_ONLY)})\b", ln)], name


def test_the_wheel_carries_the_labs_sources_and_data(tmp_path):
    """What a student's `pip install` (or a hub's wheel) gets: the package with the labs' data, and the labs'
    sources for `calibcourse labs` (pyproject's package-data and data-files)."""
    import subprocess
    import sys
    import zipfile

    src = tmp_path / "src"
    for name in ("pyproject.toml", "README.md"):
        (src / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(ROOT / name, src / name)
    shutil.copytree(ROOT / "calibcourse", src / "calibcourse", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(ROOT / "notebooks" / "labs", src / "notebooks" / "labs")
    proc = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q",
                           "-w", str(tmp_path / "wheel"), str(src)], capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-2000:]
    (wheel,) = (tmp_path / "wheel").glob("calibcourse-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    assert "calibcourse/study/course/lab_runs.npz" in names
    assert sorted(n.rsplit("/", 1)[1] for n in names if "/data/share/calibcourse/labs/" in n) == [
        p.name for p in LABS]
    assert wheel.stat().st_size < 2 * 2**20, wheel.stat().st_size  # the setup page: about 1.0 MB
