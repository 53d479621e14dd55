"""The prose of a chapter source: what a student reads, without code, math blocks, comments or directives' options.

A week of reading is budgeted in words of prose (chapter 5's lecture: at most
:data:`MAX_LECTURE_WORDS`; every chapter of Part I: at most :data:`MAX_CHAPTER_WORDS`);
``python -m calibcourse.tools.prose notebooks/*.md`` prints each page's count.

The prose of an *executed* page as a reader sees it, with the glued numbers and texts pasted
(:func:`rendered_prose`), is what :func:`plumbing` reads: the study's machinery (run names,
template names, profile names, the page's own variables in backticks, internal ids) has no place
in a course page's sentences.
"""
from __future__ import annotations

import re
import sys
from pathlib import Path

from calibcourse.tools import myst

__all__ = ["prose", "prose_words", "MAX_LECTURE_WORDS", "MAX_CHAPTER_WORDS", "rendered_prose", "plumbing"]

#: the most words of prose a lecture page may have (a week's reading beside its exercises and lab)
MAX_LECTURE_WORDS = 6000
#: the most words of prose a chapter of Part I, the course, may have (one week, with its quiz)
MAX_CHAPTER_WORDS = 4500

#: literal blocks in these languages are code; another's lines (a shell command) are read
_CODE_LANGUAGES = ("", "python", "text")
_WORD = re.compile(r"[^\W_][\w'’.-]*")


def prose(text: str) -> str:
    r"""The prose of a jupytext MyST page: its front matter, code cells, directive options (``:key:``
    lines), HTML comments and display math removed; exercises, solutions, admonitions and quiz
    dropdowns are prose and stay.

    Parameters
    ----------
    text : str
        The page's source.

    Returns
    -------
    str

    Examples
    --------
    >>> page = "---\nkernel: x\n---\n# Title\n\n```{code-cell} ipython3\nx = 1\n```\nOne two.\n$$a+b$$\n"
    >>> prose(page).split()
    ['#', 'Title', 'One', 'two.']
    >>> prose("````{exercise} Go\nThree.\n```python\ny = 2\n```\n````\n").split()  # code in a directive
    ['Three.']
    """
    out = [line.text for line in myst.lines(text.removesuffix("\n")) if _is_prose(line)]
    body = re.sub(r"<!--.*?-->", " ", "\n".join(out), flags=re.S)
    return re.sub(r"\$\$.*?\$\$", " ", body, flags=re.S)


def _is_prose(line: myst.Line) -> bool:
    """Whether the word count reads a line (:func:`calibcourse.tools.myst.lines`): prose, a literal
    block's line in a language that is not code, and a colon-fenced directive's lines (a quiz
    option's ``:::{dropdown} A. ...`` line, title and all)."""
    return (line.kind == "prose" or (line.kind == "literal" and line.info not in _CODE_LANGUAGES)
            or (line.kind in ("directive", "close") and line.text.lstrip().startswith(":")))


def prose_words(path) -> int:
    r"""The number of words of prose in a page's source (:func:`prose`).

    Parameters
    ----------
    path : str or pathlib.Path
        A jupytext MyST source, e.g. ``notebooks/05_meta_regularization.md``.

    Returns
    -------
    int

    Examples
    --------
    >>> import tempfile, pathlib
    >>> p = pathlib.Path(tempfile.mkdtemp()) / "page.md"
    >>> _ = p.write_text("# A page\n\nThree short words.\n")
    >>> prose_words(p)
    5
    """
    return len(_WORD.findall(prose(Path(path).read_text())))


# --------------------------------------------------------------------------- the page as it renders
_GLUE_PREFIX = "application/papermill.record/"
_ROLE = re.compile(r"\{([\w:-]+)\}`([^`]*)`")
_TITLED = re.compile(r"^(.*?)\s*<([^<>]+)>$", re.S)


def _glued(nb) -> dict:
    """``{name: text/plain}`` of every value glued in an executed notebook."""
    values = {}
    for cell in nb.cells:
        for out in cell.get("outputs", []):
            name = out.get("metadata", {}).get("scrapbook", {}).get("name")
            text = out.get("data", {}).get(_GLUE_PREFIX + "text/plain")
            if name and text is not None:
                values[name] = text
    return values


def _paste(name: str, arg: str, glued: dict) -> str:
    """What a role renders as, in plain text (inline code keeps its backticks)."""
    if name in ("glue:text", "glue", "glue:any"):
        if "::" in arg:                       # a value of another page: not checked here
            return "[glued]"
        key, _, fmt = arg.partition(":")
        if key not in glued:
            return "[glued]"
        from myst_nb.core.variables import format_plain_text

        return format_plain_text(glued[key], fmt)
    titled = _TITLED.match(arg)
    if name in ("ref", "doc", "numref", "quote", "eq", "download", "term"):
        return titled.group(1) if titled else f"[{name}]"
    if name in ("func", "class", "mod", "meth", "attr", "obj", "data", "py:func", "py:class"):
        return f"`{arg.lstrip('~')}`"
    if name in ("math",):
        return f"${arg}$"
    if name.startswith("cite"):
        return "[cite]"
    return arg                                # fixed, sub, and the like: their text


def rendered_prose(nb) -> str:
    """The prose of an executed page as it renders: every glued value pasted, every role resolved.

    Markdown cells only, through :func:`prose` (no code, display math, comments or directives'
    options); ``{glue:text}`` values are formatted as MyST-NB formats them, ``{ref}``/``{doc}`` give
    their titles, ``{fixed}`` and ``{quote}`` their text, ``{func}``-like roles their target as inline
    code, ``{cite}`` ``[cite]``.

    Parameters
    ----------
    nb : nbformat.NotebookNode
        An executed notebook (:func:`calibcourse.tools.build.execute_page`).

    Returns
    -------
    str

    Examples
    --------
    >>> import nbformat
    >>> nb = nbformat.v4.new_notebook()
    >>> nb.cells = [nbformat.v4.new_code_cell("glue('err', 0.0412)", outputs=[nbformat.v4.new_output(
    ...     "display_data", data={"application/papermill.record/text/plain": "0.0412"},
    ...     metadata={"scrapbook": {"name": "err"}})]),
    ...     nbformat.v4.new_markdown_cell("Error {glue:text}`err:.1%` ({ref}`chapter 1 <ch1>`, {fixed}`15` bins).")]
    >>> rendered_prose(nb)
    'Error 4.1% (chapter 1, 15 bins).'
    """
    glued = _glued(nb)
    text = "\n\n".join(cell.source for cell in nb.cells if cell.cell_type == "markdown")
    return _ROLE.sub(lambda m: _paste(m.group(1), m.group(2), glued), prose(text)).strip()


def _page_names(nb) -> set:
    """Names a page's code binds that are the study's, not a student's tools: its variables and
    functions, and what it imports from ``calibcourse.study`` or ``calibcourse.tools``."""
    import ast

    names = set()
    for cell in nb.cells:
        if cell.cell_type != "code":
            continue
        try:
            tree = ast.parse("\n".join(ln for ln in cell.source.splitlines() if not ln.lstrip().startswith(("%", "!"))))
        except SyntaxError:
            continue
        methods = {id(f) for c in ast.walk(tree) if isinstance(c, ast.ClassDef) for f in c.body}
        for node in ast.walk(tree):
            if id(node) in methods:
                continue                      # a method's name is an API's (fit, predict_proba)
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                module = getattr(node, "module", None) or ""
                for alias in node.names:
                    full = module or alias.name
                    if full.startswith(("calibcourse.study", "calibcourse.tools")):
                        names.add((alias.asname or alias.name).split(".")[0])
            elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
                names.add(node.id)
            elif isinstance(node, (ast.FunctionDef, ast.ClassDef)):
                names.add(node.name)
    return names


#: study vocabulary that a course page's sentences must not need: (rule, pattern)
_PLUMBING = (
    ("run name", re.compile(r"\bch\d[a-z]?/[\w./-]*")),
    ("profile", re.compile(r"\bprofiles?\b|`(?:ci|default|full)`", re.I)),
    ("internal id", re.compile(r"\breference 0\d\d\b|\bledger\b", re.I)),
    ("study code", re.compile(r"`[^`]*calibcourse\.(?:study|tools)\b[^`]*`")),
)
_INLINE_CODE = re.compile(r"`([^`\n]+)`")


def plumbing(nb, labels=()) -> list:
    """The study's machinery in the sentences of an executed course page (:func:`rendered_prose`).

    Finds run names (``ch2/model/large``), the word "profile" or a profile in backticks, internal
    ids ("reference 002", the ledger), the study's code (``calibcourse.study...``), template names
    (``labels``: the model and data names the runs' configs give, pasted as "1-D CNN, MNIST-1D"),
        and inline code whose first name is one of the page's own variables or functions, or a name it
    imports from the study (``found``, ``recipe_net``, ``runs(...)``). A table's rows may be named
    by model and data; a sentence may not. The toolkit a student uses
    (``cal.TemperatureScaling``, ``metrics.ece``, numpy) is not machinery.

    Parameters
    ----------
    nb : nbformat.NotebookNode
        An executed notebook.
    labels : iterable of str, optional
        Template names to refuse in prose, e.g. ``["1-D CNN, MNIST-1D"]``.

    Returns
    -------
    list of str
        ``"rule: excerpt"``, one per finding; empty when the prose is clean.

    Examples
    --------
    >>> import nbformat
    >>> nb = nbformat.v4.new_notebook()
    >>> nb.cells = [nbformat.v4.new_code_cell("found = {}"), nbformat.v4.new_markdown_cell(
    ...     "`found` holds the networks; the ledger tests both; fit `cal.TemperatureScaling()` on "
    ...     "the validation split of 1-D CNN, MNIST-1D.")]
    >>> [finding.split(":")[0] for finding in plumbing(nb, labels=["1-D CNN, MNIST-1D"])]
    ['internal id', 'template name', 'code identifier']
    """
    rendered = rendered_prose(nb)
    text = " ".join(rendered.split())
    # a table may name its rows by model and data (a transcribed table of a paper does); a sentence may not
    sentences = " ".join(" ".join(ln for ln in rendered.splitlines() if not ln.lstrip().startswith("|")).split())
    found = []

    def excerpt(m, where=text):
        a, b = max(m.start() - 30, 0), min(m.end() + 30, len(where))
        return ("..." if a else "") + where[a:b] + ("..." if b < len(where) else "")

    for rule, pattern in _PLUMBING:
        found += [f"{rule}: {excerpt(m)}" for m in pattern.finditer(text)]
    for label in labels:
        found += [f"template name: {excerpt(m, sentences)}" for m in re.finditer(re.escape(label), sentences)]
    own = _page_names(nb)
    for m in _INLINE_CODE.finditer(text):
        head = re.match(r"([A-Za-z_]\w*)\s*(=?)", m.group(1).strip())
        if head and head.group(1) in own and not head.group(2):   # name=value is an argument
            found.append(f"code identifier: {excerpt(m)}")
    return found


if __name__ == "__main__":
    for arg in sys.argv[1:]:
        print(f"{prose_words(arg):6d}  {arg}")
