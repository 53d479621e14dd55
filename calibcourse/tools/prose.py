"""The prose of a chapter source: what a student reads, without code, math blocks, comments or directives' options.

A week of reading is budgeted in words of prose (chapter 5's lecture: at most
:data:`MAX_LECTURE_WORDS`); ``python -m calibcourse.tools.prose notebooks/*.md`` prints each page's count.
"""
from __future__ import annotations

import re
import sys
from pathlib import Path

__all__ = ["prose", "prose_words", "MAX_LECTURE_WORDS"]

#: the most words of prose a lecture page may have (a week's reading beside its exercises and lab)
MAX_LECTURE_WORDS = 6000

_FENCE = re.compile(r"^(`{3,}|~{3,})\s*(.*)$")
_WORD = re.compile(r"[^\W_][\w'’.-]*")


def prose(text: str) -> str:
    """The prose of a jupytext MyST page: its front matter, code cells, directive options (``:key:``
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
    >>> page = "---\\nkernel: x\\n---\\n# Title\\n\\n```{code-cell} ipython3\\nx = 1\\n```\\nOne two.\\n$$a+b$$\\n"
    >>> prose(page).split()
    ['#', 'Title', 'One', 'two.']
    """
    text = re.sub(r"\A---\n.*?\n---\n", "", text, flags=re.S)
    out, skip, fence = [], False, None
    for line in text.splitlines():
        m = _FENCE.match(line)
        if m and fence is None:
            fence, skip = m.group(1), "code-cell" in m.group(2) or m.group(2) in ("", "python", "text", "{math}")
            continue
        if m and fence is not None and line.strip() == fence:
            fence, skip = None, False
            continue
        if skip or re.match(r"^:[\w-]+:", line):
            continue
        out.append(line)
    body = re.sub(r"<!--.*?-->", " ", "\n".join(out), flags=re.S)
    return re.sub(r"\$\$.*?\$\$", " ", body, flags=re.S)


def prose_words(path) -> int:
    """The number of words of prose in a page's source (:func:`prose`).

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
    >>> _ = p.write_text("# A page\\n\\nThree short words.\\n")
    >>> prose_words(p)
    5
    """
    return len(_WORD.findall(prose(Path(path).read_text())))


if __name__ == "__main__":
    for arg in sys.argv[1:]:
        print(f"{prose_words(arg):6d}  {arg}")
