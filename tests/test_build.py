"""The book build: execution, fingerprints, failure messages, the HTML step."""
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from bs4 import BeautifulSoup

from calibcourse.tools import build, whatheld

HEADER = textwrap.dedent("""\
    ---
    jupytext:
      text_representation:
        extension: .md
        format_name: myst
    kernelspec:
      display_name: Python 3
      language: python
      name: python3
    ---
    """)


def code(src, tags=None):
    t = f":tags: [{', '.join(tags)}]\n\n" if tags else ""
    return f"```{{code-cell}} ipython3\n{t}{src}\n```\n\n"


def write_book(root: Path, pages: dict, extra_config: str = ""):
    (root / "notebooks").mkdir(parents=True, exist_ok=True)
    (root / "book").mkdir(exist_ok=True)
    (root / "book" / "intro.md").write_text("# Intro\n\nHello.\n")
    (root / "_config.yml").write_text(textwrap.dedent("""\
        title: test book
        only_build_toc_files: true
        execute:
          execute_notebooks: "off"
        exclude_patterns: ["notebooks/*", "pkg/*"]
        """) + extra_config)
    chapters = "\n".join(f"  - file: book/generated/{name}" for name in pages)
    (root / "_toc.yml").write_text(f"format: jb-book\nroot: book/intro\nchapters:\n{chapters}\n")
    for name, body in pages.items():
        (root / "notebooks" / f"{name}.md").write_text(HEADER + body)
    pkg = root / "pkg"
    pkg.mkdir(exist_ok=True)
    (pkg / "mod.py").write_text("X = 1\n")
    return pkg


GOOD = "# Good\n\n" + code('profile = "default"', ["parameters"]) + code("print('profile', profile)")
BAD = ("# Bad\n\n" + code('profile = "default"', ["parameters"]) + code("x = 1")
       + code("y = 2\nraise ValueError('deliberate failure in the test book')") + code("z = 3"))


def test_toc_entries_walks_parts_chapters_sections():
    toc = {"root": "intro", "parts": [{"caption": "A", "chapters": [
        {"file": "a", "sections": [{"file": "a1"}]}, {"file": "b"}]}]}
    assert build.toc_entries(toc) == ["intro", "a", "a1", "b"]


def test_toc_entry_without_source_is_an_error(tmp_path):
    write_book(tmp_path, {"good": GOOD})
    (tmp_path / "notebooks" / "good.md").unlink()
    with pytest.raises(build.BuildError, match="notebooks/good.md does not exist"):
        build.notebook_pages(tmp_path)


def test_execute_injects_profile_then_skips_unchanged_then_reruns_on_package_change(tmp_path):
    pkg = write_book(tmp_path, {"good": GOOD})
    lines = []
    status = build.execute_book(tmp_path, profile="ci", package_dir=pkg, log=lines.append)
    assert status == {"notebooks/good.md": "executed"}
    out = (tmp_path / "book" / "generated" / "good.ipynb").read_text()
    assert "profile ci" in out, "the injected parameter must reach the notebook"
    assert lines and "executed in" in lines[0]
    # nothing changed: skipped
    lines.clear()
    assert build.execute_book(tmp_path, profile="ci", package_dir=pkg, log=lines.append) == {
        "notebooks/good.md": "skipped"}
    assert "skipped (unchanged)" in lines[0]
    # a package file changed: executed again
    (pkg / "mod.py").write_text("X = 2\n")
    assert build.execute_book(tmp_path, profile="ci", package_dir=pkg, log=print) == {
        "notebooks/good.md": "executed"}
    # another profile is another fingerprint
    assert build.execute_book(tmp_path, profile="default", package_dir=pkg, log=print) == {
        "notebooks/good.md": "executed"}
    assert "profile default" in (tmp_path / "book" / "generated" / "good.ipynb").read_text()


def test_fingerprint_changes_with_requirements_and_data(tmp_path):
    pkg = write_book(tmp_path, {"good": GOOD})
    (page,) = build.notebook_pages(tmp_path)
    params = {"profile": "ci", "edition": "instructor"}
    fp = lambda: build.fingerprint(page, params, tmp_path, package_dir=pkg)
    (tmp_path / "requirements.txt").write_text("numpy==2.4.6\n")
    (tmp_path / "data" / "cache" / "abc").mkdir(parents=True)
    (tmp_path / "data" / "cache" / "abc" / "outputs.npz").write_bytes(b"one")
    seen = [fp()]
    assert fp() == seen[0], "a fingerprint is a function of the files"
    (tmp_path / "requirements.txt").write_text("numpy==2.4.7\n")       # a pin changed
    seen.append(fp())
    (tmp_path / "data" / "cache" / "abc" / "outputs.npz").write_bytes(b"two")  # a cached result changed
    seen.append(fp())
    (tmp_path / "data" / "cache" / "new").mkdir()
    (tmp_path / "data" / "cache" / "new" / "manifest.json").write_text("{}")   # an entry was added
    seen.append(fp())
    (tmp_path / "data" / "cache" / "new" / "manifest.json").rename(tmp_path / "data" / "cache" / "new" / "m.json")
    seen.append(fp())                                                    # a file was renamed
    assert len(set(seen)) == len(seen), "every change to requirements.txt or data/ changes the fingerprint"
    # and the build re-executes for it
    assert build.execute_book(tmp_path, profile="ci", package_dir=pkg, log=print) == {"notebooks/good.md": "executed"}
    assert build.execute_book(tmp_path, profile="ci", package_dir=pkg, log=print) == {"notebooks/good.md": "skipped"}
    (tmp_path / "requirements.txt").write_text("numpy==2.4.8\n")
    assert build.execute_book(tmp_path, profile="ci", package_dir=pkg, log=print) == {"notebooks/good.md": "executed"}


def test_failing_cell_names_notebook_cell_and_exception(tmp_path):
    write_book(tmp_path, {"good": GOOD, "bad": BAD})
    proc = subprocess.run([sys.executable, "-m", "calibcourse.tools.build", "--root", str(tmp_path),
                           "--profile", "ci", "--no-html"], capture_output=True, text=True)
    assert proc.returncode != 0
    err = proc.stderr
    assert "notebooks/bad.md" in err
    assert "code cell 3" in err, err  # parameters, x = 1, then the failing cell
    assert "ValueError" in err and "deliberate failure in the test book" in err
    src_lines = (tmp_path / "notebooks" / "bad.md").read_text().splitlines()
    line_no = next(i for i, ln in enumerate(src_lines, 1) if ln.startswith("y = 2"))
    assert f"line {line_no} of notebooks/bad.md" in err
    # no executed copy of the failed notebook looks done; the failed one is kept for inspection
    assert not (tmp_path / "book" / "generated" / "bad.ipynb").exists()
    assert (tmp_path / "_build" / "failed" / "bad.ipynb").exists()
    assert (tmp_path / "book" / "generated" / "good.ipynb").exists()


def test_failed_notebook_is_not_skipped_next_time(tmp_path):
    pkg = write_book(tmp_path, {"bad": BAD})
    with pytest.raises(build.BuildError):
        build.execute_book(tmp_path, profile="ci", package_dir=pkg, log=print)
    with pytest.raises(build.BuildError, match="deliberate failure"):
        build.execute_book(tmp_path, profile="ci", package_dir=pkg, log=print)


def test_html_build_passes_then_fails_on_a_broken_reference(tmp_path):
    pkg = write_book(tmp_path, {"good": GOOD})
    build.execute_book(tmp_path, profile="ci", package_dir=pkg, log=print)
    html = build.build_html(tmp_path, log=print)
    assert (html / "generated" / "good.html").exists() or (html / "book" / "generated" / "good.html").exists()
    # a broken cross-reference on an unchanged-notebook page must still fail the build
    (tmp_path / "book" / "intro.md").write_text("# Intro\n\nSee {ref}`no-such-label`.\n")
    with pytest.raises(build.BuildError, match="no-such-label|undefined label"):
        build.build_html(tmp_path, log=print)
    assert not html.exists(), "a failed build must not leave the old HTML looking done"
    # and again: Jupyter Book must not hide the warning of a page it already read
    with pytest.raises(build.BuildError):
        build.build_html(tmp_path, log=print)


def test_two_editions_build_side_by_side_and_switch_without_executing_again(tmp_path):
    """The student edition (``_build/html``) stubs the labs' solutions and drops the cells tagged
    ``solution`` (rubrics); the chapters' exercise solutions stay in both (folded), the gated ones
    (``solution-start`` / ``solution-end``) with their code executed and its output inside the
    folded solution. The instructor edition goes to ``_build/instructor/html`` and leaves the
    student's HTML in place."""
    page = ("# Ex\n\n" + code('profile = "default"\nedition = "instructor"', ["parameters"])
            + code("def f(x):\n    # BEGIN SOLUTION\n    return 2 * x\n    # END SOLUTION", ["exercise"])
            + code("try:\n    print('f gives', f(2))\nexcept NotImplementedError:\n    print('f not written')")
            + "+++ {\"tags\": [\"solution\"]}\n\nRUBRIC-TEXT: two points for the factor.\n\n+++\n\n"
            + "```{exercise}\n:label: ex-one\n\nDouble it.\n```\n\n"
            + "```{solution} ex-one\n:class: dropdown\n\nCHAPTER-ANSWER: multiply by two.\n```\n\n"
            + "```{exercise}\n:label: ex-two\n\nCompute it.\n```\n\n"
            + "```{solution-start} ex-two\n:class: dropdown\n```\n\nGATED-TEXT\n\n"
            + code("print('GATED-OUTPUT', 6 * 7)") + "```{solution-end}\n```\n")
    pkg = write_book(tmp_path, {"ex": page}, extra_config="sphinx:\n  extra_extensions: [sphinx_exercise]\n")
    texts = {}
    for edition in ("student", "instructor"):
        build.execute_book(tmp_path, profile="ci", edition=edition, package_dir=pkg, log=print)
        html = build.build_html(tmp_path, edition=edition, log=print)
        assert html == tmp_path / build.HTML_DIRS[edition]
        texts[edition] = next(html.rglob("ex.html")).read_text()
    assert "f not written" in texts["student"] and "return 2 * x" not in texts["student"]
    assert "RUBRIC-TEXT" not in texts["student"]
    assert "f gives 4" in texts["instructor"] and "RUBRIC-TEXT" in texts["instructor"]
    for text in texts.values():
        assert "CHAPTER-ANSWER" in text
        folded = [div for div in BeautifulSoup(text, "html.parser").find_all(class_="solution")
                  if "GATED-TEXT" in div.get_text()]
        assert len(folded) == 1 and "dropdown" in folded[0]["class"]
        assert "GATED-OUTPUT 42" in folded[0].get_text(), "the gated solution's output is in its fold"
    assert (tmp_path / "_build" / "html" / "index.html").exists(), "the student edition is still there"
    # back to the student edition: its executed copy is reused
    assert build.execute_book(tmp_path, profile="ci", edition="student", package_dir=pkg,
                              log=print) == {"notebooks/ex.md": "skipped"}
    assert "f not written" in (tmp_path / "book" / "generated" / "ex.ipynb").read_text()


LEDGER_PAGE = ("# Claims\n\n" + code('profile = "default"', ["parameters"]) + code(textwrap.dedent("""\
    from calibcourse.calibration import stats
    from calibcourse.study.analysis.ledger import Ledger
    ledger = Ledger(chapter=2)
    ledger.claim("t-held", claim="lowers", source="guo2017calibration", effect="d",
                 interval=stats.Difference(-0.03, -0.05, -0.01, 0.95, n=1000), direction="below")
    ledger.claim("t-open", claim="raises", source="kumar2019verified", effect="d",
                 interval=stats.Difference(0.01, -0.01, 0.03, 0.95, n=1000), direction="above")
    ledger.table()""")))


def test_write_ledger_collects_claims_into_json_and_a_page(tmp_path):
    import json

    pkg = write_book(tmp_path, {"02_claims": LEDGER_PAGE, "good": GOOD})  # chapter 2 of this book
    build.execute_book(tmp_path, profile="ci", package_dir=pkg, log=print)
    claims = build.write_ledger(tmp_path, build.notebook_pages(tmp_path), log=print)
    on_disk = json.loads((tmp_path / "_build" / "claims.json").read_text())
    assert on_disk == claims and [c["id"] for c in claims] == ["t-held", "t-open"]
    assert [c["verdict"] for c in claims] == ["held", "inconclusive"]
    assert all(c["chapter"] == 2 and c["n_test"] == 1000 for c in claims)
    page = (tmp_path / "book" / "generated" / "what_held.md").read_text()
    assert "1 held, 0 not held, 1 inconclusive" in page
    # a verdict that does not follow from its interval stops the build
    import nbformat

    from calibcourse.study.analysis.ledger import CLAIMS_GLUE_NAME

    path = tmp_path / "book" / "generated" / "02_claims.ipynb"
    nb = nbformat.read(path, as_version=4)
    key = "application/papermill.record/text/plain"
    for cell in nb.cells:
        for out in cell.get("outputs", []):
            if out.get("metadata", {}).get("scrapbook", {}).get("name") == CLAIMS_GLUE_NAME:
                edited = json.loads(__import__("ast").literal_eval(out["data"][key]))
                edited[1]["verdict"] = "held"
                out["data"][key] = repr(json.dumps(edited))
    nbformat.write(nb, path)
    with pytest.raises(build.BuildError, match="does not follow from its interval"):
        build.write_ledger(tmp_path, build.notebook_pages(tmp_path), log=print)


def test_the_book_lists_the_ledger_page():
    import yaml

    toc = yaml.safe_load((Path(__file__).parents[1] / "_toc.yml").read_text())
    assert "book/generated/what_held" in build.toc_entries(toc)
    # the ledger page has no notebook source: it is not a notebook page
    assert all(p.toc_entry != "book/generated/what_held" for p in build.notebook_pages(Path(__file__).parents[1]))


def test_fingerprint_ignores_cache_writes_in_progress(tmp_path):
    """A training run writing a cache entry (data/cache/.tmp-*) must not break or change the fingerprint."""
    pkg = write_book(tmp_path, {"good": GOOD})
    (tmp_path / "data" / "cache" / "k1").mkdir(parents=True)
    (tmp_path / "data" / "cache" / "k1" / "outputs.npz").write_bytes(b"1")
    page = build.notebook_pages(tmp_path)[0]
    before = build.fingerprint(page, {}, tmp_path, pkg)
    tmp = tmp_path / "data" / "cache" / ".tmp-k2-123"
    tmp.mkdir()
    (tmp / "outputs.npz").write_bytes(b"partial")
    assert build.fingerprint(page, {}, tmp_path, pkg) == before
    (tmp_path / "data" / "cache" / "k1" / "outputs.npz").write_bytes(b"2")
    assert build.fingerprint(page, {}, tmp_path, pkg) != before
    (tmp_path / "requirements.txt").write_text("numpy==1\n")
    assert build.fingerprint(page, {}, tmp_path, pkg) != before


def test_bib_titles_name_the_first_author_year_and_title(tmp_path):
    bib = tmp_path / "r.bib"
    bib.write_text("@inproceedings{a2017,\n  title = {On {C}alibration},\n  author = {Guo, Chuan and Pleiss, Geoff and"
                   " Sun, Yu},\n  year = {2017}\n}\n\n@misc{b2024,\n  title = {Project},\n  author = {Mu\\~noz, Ana and"
                   " Lee, Bo},\n  year = {2024}\n}\n")
    assert whatheld.bib_titles(bib) == {"a2017": "Guo et al. (2017), On Calibration",
                                      "b2024": "Muñoz and Lee (2024), Project"}


def test_pages_execute_side_by_side_each_after_the_pages_it_reads(tmp_path):
    # a report quotes the chapter it reads: it starts only once that chapter has finished, while an
    # independent page runs beside the chapter (two at once); each page writes when it ran
    def timed(name, extra=""):
        return GOOD + code(f"import time\nt0 = time.time()\ntime.sleep(2)\n{extra}\n"
                           f"open({str(tmp_path / name)!r}, 'w').write(f'{{t0}} {{time.time()}}')")

    pkg = write_book(tmp_path, {"chapter": timed("chapter"), "other": timed("other"),
                                "report": timed("report", 'reads = "chapter"'), "prose": "# Prose\n\nNo code.\n"})
    pages = build.notebook_pages(tmp_path)
    assert build.page_dependencies(pages) == {0: set(), 1: set(), 2: {0}, 3: set()}
    lines = []
    status = build.execute_book(tmp_path, profile="ci", package_dir=pkg, log=lines.append, jobs=2)
    assert list(status) == ["notebooks/chapter.md", "notebooks/other.md", "notebooks/report.md", "notebooks/prose.md"]
    assert set(status.values()) == {"executed"}
    ran = {name: [float(v) for v in (tmp_path / name).read_text().split()] for name in ("chapter", "other", "report")}
    assert ran["report"][0] >= ran["chapter"][1], "the report started after the chapter it reads had finished"
    assert ran["other"][0] < ran["chapter"][1] and ran["chapter"][0] < ran["other"][1], "two pages side by side"
    assert any(ln.startswith("[3/4] notebooks/report.md: executed") for ln in lines), lines
    # a page without code is written without a kernel
    assert "No code." in (tmp_path / "book" / "generated" / "prose.ipynb").read_text()


def test_a_bad_jobs_count_is_one_line(tmp_path, monkeypatch):
    proc = subprocess.run([sys.executable, "-m", "calibcourse.tools.build", "--root", str(tmp_path), "--jobs", "0"],
                          capture_output=True, text=True)
    assert proc.returncode == 2 and "jobs must be an integer >= 1; got 0" in proc.stderr
    assert "Traceback" not in proc.stderr
    monkeypatch.setenv("CALIBCOURSE_PAGE_JOBS", "two")
    with pytest.raises(ValueError, match="CALIBCOURSE_PAGE_JOBS must be a whole number"):
        build.page_jobs()


def test_no_page_reads_a_name_it_never_defines(tmp_path):
    """Every page's cells, as one script, pass ruff's undefined-name check: a name an edit removed
    fails here in seconds instead of in the smoke run (study_shift read a removed `records`)."""
    import jupytext

    pages = sorted((Path(__file__).resolve().parents[1] / "notebooks").rglob("*.md"))
    assert len(pages) >= 15
    for page in pages:
        jupytext.write(jupytext.read(page), tmp_path / f"{page.stem}.py", fmt="py:percent")
    ruff = Path(sys.executable).with_name("ruff")
    proc = subprocess.run([str(ruff), "check", "--no-cache", "--isolated", "--select", "F821,F822,F823",
                           "--config", "builtins = ['display', 'get_ipython']", str(tmp_path)],
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout
    (tmp_path / "bad.py").write_text("x = records.get('a')\n")  # and the check can fail
    proc = subprocess.run([str(ruff), "check", "--no-cache", "--isolated", "--select", "F821",
                           str(tmp_path / "bad.py")], capture_output=True, text=True)
    assert proc.returncode == 1 and "records" in proc.stdout
