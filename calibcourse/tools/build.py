"""The book build: jupytext -> papermill -> jupyter-book (``make book`` calls this).

    python -m calibcourse.tools.build [--profile ci|default|full] [--edition student|instructor]
                                [--no-html] [--force] [--root DIR]

Two editions, two builds side by side: the student edition (the default, the public book:
the labs' solutions and rubrics removed from every page and download; the chapters'
exercise solutions stay, folded) renders into ``_build/html``; the instructor edition into
``_build/instructor/html``.

1. Reads ``_toc.yml``. A page ``book/generated/<name>`` has its source in
   ``notebooks/<name>.md`` (a jupytext MyST notebook). Each source is converted
   to .ipynb and executed by papermill with the parameters ``profile`` and
   ``edition`` injected; the executed notebook is written, atomically, to
   ``book/generated/<name>.ipynb`` (git-ignored), and a copy is kept per edition under
   ``_build/executed/<edition>/`` so that switching editions re-executes nothing that did not
   change.
2. A notebook is skipped when its fingerprint -- the sha256 of its source, of
   every file of the ``calibcourse`` package, of ``requirements.txt``, of the
   committed result cache ``data/`` and of its parameters -- equals the one
   stored after its last successful execution.
3. ``jupyter-book build --all -W --keep-going`` renders the HTML with notebook
   execution off; every page is re-read each time, so the warnings of pages
   that did not change are never hidden, and any ``WARNING``/``ERROR`` line
   fails the build even if Jupyter Book exits 0.
4. A failing cell stops the build with a message naming the notebook, the cell
   (its number and the line of the source where it starts) and the exception;
   the executed copy of that notebook is removed, the failed one is kept under
   ``_build/failed/`` for inspection, and the stale HTML is deleted so that no
   half-built book is left looking done.
"""
from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from calibcourse.calibration._validation import check_int
from calibcourse.study.runs.profiles import PROFILES
from calibcourse.tools._env import environ
from calibcourse.tools._layout import CLAIMS_JSON, GENERATED, LEDGER_PAGE, BuildError  # noqa: F401 (build.X)
from calibcourse.tools.pages import (  # noqa: F401 (build.X)
    FINGERPRINT_SUFFIX,
    SOURCES,
    Page,
    fingerprint,
    fingerprint_path,
    is_up_to_date,
    notebook_pages,
    page_reads,
    toc_entries,
)
from calibcourse.tools.whatheld import collect_claims, write_ledger  # noqa: F401 (build.x)

__all__ = [
    "EDITIONS",
    "HTML_DIRS",
    "BuildError",
    "Page",
    "toc_entries",
    "notebook_pages",
    "fingerprint",
    "page_reads",
    "execute_book",
    "write_ledger",
    "build_html",
    "write_schedule",
    "prepare_pages",
    "main",
]

EDITIONS = ("student", "instructor")
#: where each edition's HTML goes, relative to the root
HTML_DIRS = {"student": Path("_build") / "html", "instructor": Path("_build") / "instructor" / "html"}
#: the executed notebooks of each edition, kept to switch editions without executing again
EXECUTED = Path("_build") / "executed"

# --------------------------------------------------------------------------- execution
def _source_line_of_cell(source_text: str, cell_source: str) -> int | None:
    """1-based line of ``source_text`` where the code of a cell starts (None if not found)."""
    first = next((ln for ln in cell_source.splitlines() if ln.strip()), None)
    if first is None:
        return None
    for i, line in enumerate(source_text.splitlines(), start=1):
        if line.rstrip() == first.rstrip():
            return i
    return None


def _hide_parameter_cells(nb) -> None:
    for cell in nb.cells:
        tags = cell.get("metadata", {}).get("tags", [])
        if "parameters" in tags or "injected-parameters" in tags:
            if "remove-cell" not in tags:
                cell.metadata.setdefault("tags", []).append("remove-cell")


def execute_page(page: Page, params: dict, root: Path, failed_dir: Path) -> None:
    """Convert ``page.source`` with jupytext and execute it with papermill into ``page.output``.

    A page without a code cell is written as it is: no kernel starts for it (a second or more)."""
    import jupytext
    import nbformat
    import papermill as pm

    from calibcourse.tools.editions import to_edition
    from calibcourse.tools.handout import lab_notebook

    if page.source.parent == root / "notebooks" / "labs":  # a lab: the published hand-out, executed
        nb = lab_notebook(page.source, params.get("edition", "instructor"))
    else:
        nb = to_edition(jupytext.read(page.source), params.get("edition", "instructor"))
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    page.output.parent.mkdir(parents=True, exist_ok=True)
    if not any(cell.cell_type == "code" for cell in nb.cells):
        tmp_out = page.output.with_name(page.output.name + ".tmp")
        nbformat.write(nb, tmp_out)
        os.replace(tmp_out, page.output)
        return
    with tempfile.TemporaryDirectory(prefix="calibcourse-build-") as tmp:
        src_nb = Path(tmp) / "input.ipynb"
        out_nb = Path(tmp) / "output.ipynb"
        nbformat.write(nb, src_nb)
        try:
            pm.execute_notebook(str(src_nb), str(out_nb), parameters=params, kernel_name="python3",
                                cwd=str(root), progress_bar=False, log_output=False,
                                report_mode=False,
                                extra_arguments=["--IPKernelApp.log_level=ERROR"])
        except pm.PapermillExecutionError as exc:
            # papermill numbers cells of its output, which has an injected-parameters cell and an
            # error banner; find the failing cell in the source notebook by its code instead.
            code_cells = [c.source for c in nb.cells if c.cell_type == "code"]
            code_no = next((i for i, src in enumerate(code_cells, 1) if src == exc.source), None)
            line = _source_line_of_cell(page.source.read_text(), exc.source)
            kept = failed_dir / page.output.relative_to(root / GENERATED)
            if out_nb.exists():
                kept.parent.mkdir(parents=True, exist_ok=True)
                shutil.copy(out_nb, kept)
            where = f"code cell {code_no}" if code_no else f"cell {exc.cell_index}"
            if line:
                where += f" (line {line} of {page.source.relative_to(root)})"
            snippet = "\n".join("    | " + ln for ln in exc.source.splitlines()[:8])
            raise BuildError(f"{page.source.relative_to(root)}: {where} raised {exc.ename}: {exc.evalue}\n"
                             f"{snippet}\n    executed notebook kept at {kept.relative_to(root)}") from None
        except Exception as exc:  # kernel died, bad notebook, ...
            raise BuildError(f"{page.source.relative_to(root)}: execution failed: "
                             f"{type(exc).__name__}: {exc}") from None
        executed = nbformat.read(out_nb, as_version=4)
        _hide_parameter_cells(executed)
        tmp_out = page.output.with_name(page.output.name + ".tmp")
        nbformat.write(executed, tmp_out)
        os.replace(tmp_out, page.output)


def page_dependencies(pages: list) -> dict:
    r"""Which earlier pages each page reads: those whose name its source quotes (``"03_binary"``).

    A study report reads the claims its chapters published (:func:`calibcourse.study.course.evidence.
    published_claims` names them): it executes after them. A page never depends on a later one.

    Parameters
    ----------
    pages : list of Page
        :func:`notebook_pages`, in the book's order.

    Returns
    -------
    dict
        ``{page index: set of indices of earlier pages}``.

    Examples
    --------
    >>> import tempfile
    >>> root = Path(tempfile.mkdtemp())
    >>> (root / "notebooks").mkdir()
    >>> _ = (root / "notebooks" / "ch.md").write_text("# A chapter")
    >>> _ = (root / "notebooks" / "report.md").write_text('claims = published_claims(["ch"])')
    >>> _ = (root / "_toc.yml").write_text("root: book/intro\nchapters:\n- file: book/generated/ch\n"
    ...                                    "- file: book/generated/report\n")
    >>> page_dependencies(notebook_pages(root))
    {0: set(), 1: {0}}
    """
    deps = {}
    for i, page in enumerate(pages):
        text = page.source.read_text()
        deps[i] = {j for j, other in enumerate(pages[:i])
                   if f'"{other.output.stem}"' in text or f"'{other.output.stem}'" in text}
    return deps


#: the variables that set a kernel's threads (OpenMP: torch and most BLAS; OpenBLAS; MKL)
_THREAD_VARIABLES = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")


def page_jobs(jobs: int | None = None) -> int:
    """How many pages execute at once: ``jobs``, else ``CALIBCOURSE_PAGE_JOBS``, else one per core (at most 2).

    Examples
    --------
    >>> page_jobs(3)
    3
    """
    if jobs is None:
        raw = os.environ.get("CALIBCOURSE_PAGE_JOBS", "")
        if raw and not (raw.isdigit() and int(raw) >= 1):
            raise ValueError(f"CALIBCOURSE_PAGE_JOBS must be a whole number >= 1; got {raw!r}")
        jobs = int(raw) if raw else min(2, len(os.sched_getaffinity(0)))
    check_int(jobs, "jobs", low=1)
    return int(jobs)


def execute_book(root: Path, profile: str = "default", edition: str = "instructor",
                 force: bool = False, package_dir: Path | None = None, log=print, jobs: int | None = None) -> dict:
    r"""Execute every notebook page whose fingerprint changed, ``jobs`` at a time, each after the pages it reads.

    A page is executed by papermill in a fresh kernel (seconds); after its success its
    fingerprint is stored next to the output, ``<output>.fingerprint``. Pages execute side by
    side (:func:`page_jobs`: one per core, at most 2; each kernel with its share of the cores'
    threads unless ``OMP_NUM_THREADS`` is set), a page after those it reads
    (:func:`page_dependencies`); each line is logged as its page finishes. When a page fails, no
    new page starts, those running finish, and the first failure is raised.

    Parameters
    ----------
    root : pathlib.Path
        The book's root (holds ``_config.yml``, ``_toc.yml``, ``notebooks/``).
    profile : str
        One of :data:`calibcourse.study.runs.profiles.PROFILES`.
    edition : {"instructor", "student"}, default="instructor"
        The edition.
    force : bool, default=False
        Execute every page, changed or not.
    package_dir : pathlib.Path, optional
        As in :func:`fingerprint`.
    log : callable, default=print
        Called with each progress line.
    jobs : int, optional
        Pages executed at once (:func:`page_jobs`).

    Returns
    -------
    dict
        ``{source path relative to root: 'executed' or 'skipped'}`` in the book's order; a failing page raises
        :class:`BuildError`.

    Examples
    --------
    A page whose output and stored fingerprint are current is skipped (here written by hand;
    executing a page needs a kernel):

    >>> import tempfile
    >>> root = Path(tempfile.mkdtemp())
    >>> (root / "notebooks").mkdir()
    >>> _ = (root / "notebooks" / "ch.md").write_text("# A chapter")
    >>> _ = (root / "_toc.yml").write_text("root: book/intro\nchapters:\n- file: book/generated/ch\n")
    >>> page, = notebook_pages(root)
    >>> page.output.parent.mkdir(parents=True)
    >>> _ = page.output.write_text("{}")
    >>> fp = fingerprint(page, {"profile": "ci", "edition": "instructor"}, root)
    >>> _ = page.output.with_name(page.output.name + FINGERPRINT_SUFFIX).write_text(fp)
    >>> execute_book(root, profile="ci")
    [1/1] notebooks/ch.md: skipped (unchanged)
    {'notebooks/ch.md': 'skipped'}
    """
    from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, wait

    root = Path(root).resolve()
    jobs = page_jobs(jobs)
    failed_dir = root / "_build" / "failed"
    params = {"profile": profile, "edition": edition}
    status = {}
    pages = notebook_pages(root)
    todo = {}
    for i, page in enumerate(pages, start=1):
        rel = page.source.relative_to(root)
        fp = fingerprint(page, params, root, package_dir)
        kept = root / EXECUTED / edition / page.output.relative_to(root / GENERATED)
        kept_page = Page(page.toc_entry, page.source, kept)
        if not force and not is_up_to_date(page, fp) and is_up_to_date(kept_page, fp):
            page.output.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy(kept, page.output)           # this edition's copy, executed before
            fingerprint_path(page).write_text(fp + "\n")
        if not force and is_up_to_date(page, fp):
            if not is_up_to_date(kept_page, fp):
                kept.parent.mkdir(parents=True, exist_ok=True)
                shutil.copy(page.output, kept)
                fingerprint_path(kept_page).write_text(fp + "\n")
            log(f"[{i}/{len(pages)}] {rel}: skipped (unchanged)")
            status[str(rel)] = "skipped"
            continue
        todo[i - 1] = (fp, kept_page)

    def run(i: int) -> None:
        page, (fp, kept_page) = pages[i], todo[i]
        fingerprint_path(page).unlink(missing_ok=True)
        try:
            execute_page(page, params, root, failed_dir)
        except BuildError:
            page.output.unlink(missing_ok=True)
            raise
        fingerprint_path(page).write_text(fp + "\n")
        kept_page.output.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(page.output, kept_page.output)
        fingerprint_path(kept_page).write_text(fp + "\n")

    deps = page_dependencies(pages)
    waiting, running, finished, error = sorted(todo), {}, set(), None
    # pages side by side share the cores: each kernel's BLAS and torch get its share (unless set already)
    share = str(max(1, len(os.sched_getaffinity(0)) // jobs))
    threads = {v: os.environ.get(v) or share for v in _THREAD_VARIABLES} if jobs > 1 else {}
    with environ(**threads), ThreadPoolExecutor(max_workers=jobs) as pool:
        while waiting or running:
            # a page starts once every page it reads that is executed here has finished; none after a failure
            ready = [] if error else [i for i in waiting if deps[i] & set(todo) <= finished]
            for i in ready[:jobs - len(running)]:
                waiting.remove(i)
                running[pool.submit(run, i)] = (i, time.perf_counter())
            if not running:
                break
            done, _ = wait(running, return_when=FIRST_COMPLETED)
            for future in done:
                i, start = running.pop(future)
                rel = pages[i].source.relative_to(root)
                try:
                    future.result()
                except BuildError as exc:
                    log(f"[{i + 1}/{len(pages)}] {rel}: FAILED after {time.perf_counter() - start:.1f} s")
                    error = error or exc
                    continue
                log(f"[{i + 1}/{len(pages)}] {rel}: executed in {time.perf_counter() - start:.1f} s")
                status[str(rel)] = "executed"
                finished.add(i)
    if error is not None:
        raise error
    return {str(p.source.relative_to(root)): status[str(p.source.relative_to(root))] for p in pages}




# --------------------------------------------------------------------------- html
def build_html(root: Path, edition: str = "student", log=print) -> Path:
    """Render the book with jupyter-book (execution off), failing on any warning.

    Any ``WARNING``, ``ERROR`` or ``Traceback`` line, or a non-zero exit, raises
    :class:`BuildError` with those lines; the full log goes to ``_build/jupyter-book.log`` and
    the stale HTML of that edition is removed. The other edition's HTML is left as it is.

    Parameters
    ----------
    root : pathlib.Path
        The book's root (holds ``_config.yml``, ``_toc.yml``, ``notebooks/``).
    edition : {"student", "instructor"}, default="student"
        Which edition: it decides only where the HTML goes (:data:`HTML_DIRS`); what the pages hold was
        decided when they were executed (:func:`execute_book`).
    log : callable, default=print
        Called with each progress line.

    Returns
    -------
    pathlib.Path
        The HTML folder: ``root/_build/html`` (student) or ``root/_build/instructor/html``.

    Examples
    --------
    Skipped in the doctests: rendering the book takes minutes.

    >>> build_html(Path("."), edition="instructor")  # doctest: +SKIP
    html: built in 95.3 s -> /.../_build/instructor/html/index.html
    PosixPath('/.../_build/instructor/html')
    """
    if edition not in EDITIONS:
        raise ValueError(f"edition must be one of {EDITIONS}; got {edition!r}")
    root = Path(root).resolve()
    jb = Path(sys.executable).with_name("jupyter-book")
    cmd = [str(jb) if jb.exists() else "jupyter-book", "build", str(root), "--all", "-W", "--keep-going"]
    html = root / HTML_DIRS[edition]
    # jupyter-book writes to <path-output>/_build/html: the student edition to the usual place,
    # the instructor edition to a folder of its own, moved to _build/instructor/html afterwards
    stage = None if edition == "student" else root / "_build" / "instructor" / "stage"
    if stage is not None:
        cmd += ["--path-output", str(stage)]
    start = time.perf_counter()
    proc = subprocess.run(cmd, cwd=root, capture_output=True, text=True)
    out = proc.stdout + proc.stderr
    problems = [ln for ln in out.splitlines() if "WARNING" in ln or "ERROR" in ln
                or "Traceback" in ln]
    if proc.returncode != 0 or problems:
        (root / "_build").mkdir(exist_ok=True)
        (root / "_build" / "jupyter-book.log").write_text(out)
        shutil.rmtree(html, ignore_errors=True)
        if stage is not None:
            shutil.rmtree(stage / "_build" / "html", ignore_errors=True)
        shown = "\n".join("    " + ln for ln in (problems or out.splitlines()[-25:])[:40])
        raise BuildError(f"jupyter-book build failed (exit {proc.returncode}, {len(problems)} "
                         f"warning/error lines); full log in _build/jupyter-book.log:\n{shown}")
    if stage is not None:
        shutil.rmtree(html, ignore_errors=True)
        os.replace(stage / "_build" / "html", html)
    _serve_handouts(root, html, edition)
    log(f"html: built in {time.perf_counter() - start:.1f} s -> {html / 'index.html'}")
    return html


def _serve_handouts(root: Path, html: Path, edition: str) -> None:
    """The download button of a lab's page serves its hand-out (:func:`calibcourse.tools.handout.lab_notebook`,
    the notebook ``make labs`` writes), not the executed page."""
    import nbformat

    from calibcourse.tools.handout import lab_notebook

    for src in sorted((root / "notebooks" / "labs").glob("*.md")):
        served = html / "_sources" / GENERATED / "labs" / f"{src.stem}.ipynb"
        if served.exists():
            nbformat.write(lab_notebook(src, edition), served)


def write_schedule(root: Path) -> None:
    """Rewrite ``book/schedule.md`` from :mod:`calibcourse.study.course.schedule` where ``_toc.yml`` lists it
    (and where it changed): the first step of every build of the book, the HTML, the PDF and the slides.

    Parameters
    ----------
    root : pathlib.Path
        The book's root (holds ``_toc.yml``).

    Returns
    -------
    None

    Examples
    --------
    >>> import tempfile
    >>> write_schedule(Path(tempfile.mkdtemp()))  # no _toc.yml: nothing to write
    """
    import yaml

    from calibcourse.study.course import schedule

    toc = root / "_toc.yml"
    if toc.exists() and schedule.PAGE.with_suffix("").as_posix() in toc_entries(yaml.safe_load(toc.read_text())):
        page = root / schedule.PAGE
        if not page.exists() or page.read_text() != schedule.schedule_page():
            schedule.write_page(root)


def prepare_pages(root: Path, profile: str = "default", edition: str = "student", force: bool = False,
                  log=print, jobs: int | None = None) -> None:
    """Everything the book's pages need before they are rendered (HTML, PDF or slides): the schedule
    page, every notebook executed where its fingerprint changed, the claims ledger.

    Parameters
    ----------
    root : pathlib.Path
        The book's root.
    profile : {"ci", "default", "full"}, default="default"
        The profile the notebooks run with.
    edition : {"student", "instructor"}, default="student"
        The edition they are executed for.
    force : bool, default=False
        Execute every notebook.
    log : callable, default=print
        Called with each progress line.
    jobs : int, optional
        Pages executed at once (:func:`page_jobs`).

    Returns
    -------
    None
        A failed notebook raises :class:`BuildError`.

    Examples
    --------
    Skipped in the doctests: it executes the book (minutes).

    >>> prepare_pages(Path("."), "ci")  # doctest: +SKIP
    [1/14] notebooks/01_theory.md: executed in 6.1 s
    ...
    """
    write_schedule(root)
    execute_book(root, profile, edition, force=force, log=log, jobs=jobs)
    write_ledger(root, notebook_pages(root), log=log)


def main(argv=None) -> int:
    """Run the command line (``make book``, ``make labs``).

    Parameters
    ----------
    argv : list of str, optional
        The arguments (default: the command line's).

    Returns
    -------
    int
        The exit status: 0, or 1 when the build failed (the reason on stderr).

    Examples
    --------
    ``--labs`` writes every lab of the ``--edition`` asked for (the student edition by default):

    >>> import tempfile
    >>> root = Path(tempfile.mkdtemp())
    >>> (root / "notebooks" / "labs").mkdir(parents=True)
    >>> _ = (root / "notebooks" / "labs" / "lab1_ece.md").write_text("# Lab 1")
    >>> main(["--root", str(root), "--labs"])
    _build/labs/student/lab1_ece.ipynb
    0
    >>> main(["--root", str(root), "--labs", "--edition", "instructor"])
    _build/labs/instructor/lab1_ece.ipynb
    0
    """
    ap = argparse.ArgumentParser(prog="python -m calibcourse.tools.build", description=__doc__.split("\n")[0])
    ap.add_argument("--profile", default="default", choices=PROFILES,
                    help="ci: seconds-long smoke runs; default: the real book on embedded data; "
                         "full: MNIST/CIFAR with the papers' architectures (needs the data sets, a GPU)")
    ap.add_argument("--edition", default="student", choices=EDITIONS,
                    help="student (default): the public book, in _build/html, no lab solution in any page "
                         "or download; instructor: with the solutions and rubrics, in _build/instructor/html")
    ap.add_argument("--root", default=".", help="the book's root (holds _config.yml and _toc.yml)")
    ap.add_argument("--force", action="store_true", help="re-execute every notebook")
    ap.add_argument("--no-html", action="store_true", help="execute the notebooks only")
    ap.add_argument("--jobs", type=int, default=None,
                    help="pages executed at once (default: CALIBCOURSE_PAGE_JOBS, else one per core, at most 2)")
    ap.add_argument("--labs", metavar="DIR", nargs="?", const="_build/labs",
                    help="only write the lab notebooks (.ipynb) of --edition under DIR/<edition> and exit")
    args = ap.parse_args(argv)
    root = Path(args.root).resolve()
    try:
        jobs = page_jobs(args.jobs)
    except ValueError as exc:
        ap.error(str(exc))
    if args.labs:
        from calibcourse.tools.handout import write_editions

        for path in write_editions(root, root / args.labs, editions=(args.edition,)):
            print(path.relative_to(root) if path.is_relative_to(root) else path)
        return 0
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    os.environ.setdefault("CALIBCOURSE_QUIET", "1")  # no progress bars inside executed notebooks
    start = time.perf_counter()
    try:
        prepare_pages(root, args.profile, args.edition, force=args.force, jobs=jobs)
        if not args.no_html:
            build_html(root, args.edition)
    except BuildError as exc:
        print(f"\nBUILD FAILED: {exc}", file=sys.stderr)
        if not args.no_html:
            shutil.rmtree(root / HTML_DIRS[args.edition], ignore_errors=True)
        return 1
    print(f"done in {time.perf_counter() - start:.1f} s (profile {args.profile}, edition {args.edition})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
