"""The one reader of the book's MyST sources (jupytext MyST notebooks and markdown pages): every line
of a page with what it is.

The number audit (:mod:`calibcourse.tools.audit`) and the word count of prose
(:mod:`calibcourse.tools.prose`) both read a page through :func:`lines`; each decides which kinds
it reads (the audit reads figure captions as prose, the word count does not).
"""
from __future__ import annotations

import re
from typing import NamedTuple

__all__ = ["Line", "lines", "KINDS"]

#: what a line of a page is
KINDS = {
    "front": "the page's front matter (between its first two ``---`` lines)",
    "cell": "a code cell's fences and options (its YAML block or ``:key: value`` lines)",
    "caption": "a code cell's figure caption (``mystnb: figure: caption:``): prose the reader sees",
    "code": "a code cell's source",
    "directive": "a directive's opening line (```` ```{name} title ```` or ``:::{name} title``)",
    "option": "a directive's option (``:key: value``)",
    "close": "a directive's closing fence",
    "math": "the body of a ``{math}`` directive",
    "fence": "a fence of a literal block of code in the prose",
    "literal": "a line inside a literal block of code in the prose (shown as written)",
    "prose": "everything else: text, headings, lists, tables, comments, directives' bodies",
}

_CELL_OR_LITERAL = re.compile(r"^(`{3,}|~{3,})\s*(\{code-cell\}.*|[\w+-]*)\s*$")
_DIRECTIVE = re.compile(r"^\s*(`{3,}|~{3,}|:{3,})\{([\w:-]+)\}")
_BARE_FENCE = re.compile(r"^\s*(`{3,}|~{3,}|:{3,})\s*$")
_OPTION = re.compile(r"^:[\w-]+:(\s|$)")


class Line(NamedTuple):
    """One line of a page.

    Attributes
    ----------
    kind : str
        What it is, one of :data:`KINDS`.
    no : int
        Its line number, from 1.
    text : str
        The line (for a caption's first line, the caption's text after ``caption:``).
    shown : bool
        For a line of code: whether the rendered page shows it (a code cell not tagged
        ``remove-cell`` or ``remove-input``; a literal block always). False for other lines.
    info : str
        For a literal block's lines, its language (``""`` when the fence names none); for a
        directive's opening line and a ``{math}`` body, the directive's name; ``""`` otherwise.

    Examples
    --------
    >>> Line("prose", 3, "One two.", False, "")
    Line(kind='prose', no=3, text='One two.', shown=False, info='')
    """

    kind: str
    no: int
    text: str
    shown: bool = False
    info: str = ""


def lines(text: str) -> list:
    r"""Every line of a MyST page, with what it is.

    Code cells (```` ```{code-cell} ````) give their fences and options as ``"cell"``, a figure's
    caption in their options as ``"caption"`` and their source as ``"code"``; a directive's
    body is prose (an exercise, a quiz option, an admonition), except a ``{math}`` directive's.

    Parameters
    ----------
    text : str
        The page's source.

    Returns
    -------
    list of Line
        One per line of ``text``, in order.

    Examples
    --------
    >>> page = ("---\nkernel: x\n---\n# Title\n```{code-cell} ipython3\n:tags: [remove-input]\n"
    ...         "x = 1\n```\n:::{dropdown} A. Yes\n:open:\nRight.\n:::\n```bash\npip install .\n```")
    >>> for line in lines(page):
    ...     print(line.no, line.kind, line.shown, repr(line.info), line.text)
    1 front False '' ---
    2 front False '' kernel: x
    3 front False '' ---
    4 prose False '' # Title
    5 cell False '' ```{code-cell} ipython3
    6 cell False '' :tags: [remove-input]
    7 code False '' x = 1
    8 cell False '' ```
    9 directive False 'dropdown' :::{dropdown} A. Yes
    10 option False '' :open:
    11 prose False '' Right.
    12 close False '' :::
    13 fence False 'bash' ```bash
    14 literal True 'bash' pip install .
    15 fence False 'bash' ```
    """
    src = text.split("\n")
    out, stack = [], []   # stack: the open directives' fences, innermost last
    i, n = 0, len(src)
    if n and src[0].strip() == "---":
        j = 1
        while j < n and src[j].strip() != "---":
            j += 1
        out += [Line("front", k + 1, src[k]) for k in range(min(j + 1, n))]
        i = j + 1
    while i < n:
        line = src[i]
        m = _CELL_OR_LITERAL.match(line)
        if m and m.group(2).startswith("{code-cell}"):
            i = _code_cell(src, i, m.group(1), out)
            continue
        d = _DIRECTIVE.match(line)
        if d:
            if d.group(2) == "math":
                i = _block(src, i, d.group(1), "directive", "math", "math", False, out, strip=True)
                continue
            stack.append(d.group(1))
            out.append(Line("directive", i + 1, line, False, d.group(2)))
        elif (c := _BARE_FENCE.match(line)) and stack and stack[-1] == c.group(1):
            stack.pop()
            out.append(Line("close", i + 1, line))
        elif m:
            i = _block(src, i, m.group(1), "fence", "literal", m.group(2), True, out)
            continue
        elif _BARE_FENCE.match(line) or re.match(r"^\s*:{3,}\{", line):
            out.append(Line("close" if _BARE_FENCE.match(line) else "directive", i + 1, line))
        elif _OPTION.match(line):
            out.append(Line("option", i + 1, line))
        else:
            out.append(Line("prose", i + 1, line))
        i += 1
    return out


def _block(src, i, fence, fence_kind, body_kind, info, shown, out, strip=False) -> int:
    """A fenced block from line ``i``: its fences and its body (up to a line that starts with
    ``fence``, stripped first if ``strip``). Returns the line after it."""
    j = i + 1
    while j < len(src) and not (src[j].strip() if strip or fence_kind == "fence" else src[j]).startswith(fence):
        j += 1
    out.append(Line(fence_kind, i + 1, src[i], False, info))
    out += [Line(body_kind, k + 1, src[k], shown, info) for k in range(i + 1, j)]
    if j < len(src):
        out.append(Line("close" if fence_kind == "directive" else fence_kind, j + 1, src[j], False,
                        "" if fence_kind == "directive" else info))
    return j + 1


def _code_cell(src, i, fence, out) -> int:
    """A code cell from line ``i``: fences, options (a caption in them is prose), source. Returns
    the line after it."""
    n, j = len(src), i + 1
    if j < n and src[j].strip() == "---":       # options: a YAML block between --- lines
        k = j + 1
        while k < n and src[k].strip() != "---":
            k += 1
        body = k + 1
    else:                                       # or :key: value lines
        k = j
        while k < n and re.match(r"^:\w[\w-]*:", src[k]):
            k += 1
        body = k
    end = body
    while end < n and not src[end].startswith(fence):
        end += 1
    shown = not re.search(r"remove-(?:cell|input)", "\n".join(src[j:body]))
    out.append(Line("cell", i + 1, src[i]))
    caption_indent = None
    for k in range(i + 1, min(body, n)):
        opt = src[k]
        indent = len(opt) - len(opt.lstrip())
        key = re.match(r"^\s*([\w-]+):(\s|$)", opt)
        if caption_indent is not None and key and indent <= caption_indent:
            caption_indent = None
        if key and key.group(1) == "caption":
            caption_indent = indent
            rest = opt.split(":", 1)[1].strip()
            out.append(Line("caption", k + 1, "" if rest in (">-", ">", "|", "|-") else rest))
        elif caption_indent is not None:
            out.append(Line("caption", k + 1, opt))
        else:
            out.append(Line("cell", k + 1, opt))
    out += [Line("code", k + 1, src[k], shown) for k in range(body, end)]
    if end < n:
        out.append(Line("cell", end + 1, src[end]))
    return end + 1
