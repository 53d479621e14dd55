"""The book's bibliography (``book/references.bib``) as the pages and decks cite it.

One reader of the .bib file for the "What held" page (a paper's first author, year and title) and
the slide decks (first author and year).
"""
from __future__ import annotations

import re
from pathlib import Path
from typing import NamedTuple

__all__ = ["Entry", "read_bib"]

#: the TeX accents the bibliography uses, as the characters they make
_ACCENTS = (("\\l", "ł"), ("\\~n", "ñ"), ("\\'o", "ó"), ('\\"u', "ü"), ("\\'e", "é"))


class Entry(NamedTuple):
    """One entry of the bibliography.

    Attributes
    ----------
    who : str
        ``"Guo et al."``, ``"Muñoz and Lee"`` or ``"Platt"``: the first author's last name, then
        "et al." for three authors or more, or the second's for two.
    year : str
        The year, as written.
    title : str
        The title, TeX braces removed.

    Examples
    --------
    >>> e = Entry("Guo et al.", "2017", "On Calibration of Modern Neural Networks")
    >>> e.cite, e.reference
    ('Guo et al. 2017', 'Guo et al. (2017), On Calibration of Modern Neural Networks')
    """

    who: str
    year: str
    title: str

    @property
    def cite(self) -> str:
        """How a page cites the entry: ``Guo et al. 2017``."""
        return f"{self.who} {self.year}".strip()

    @property
    def reference(self) -> str:
        """The entry in a reference list: ``Guo et al. (2017), On Calibration ...``."""
        return f"{self.who} ({self.year}), {self.title}"


def read_bib(path) -> dict:
    r"""Every entry of a .bib file, by key.

    Parameters
    ----------
    path : str or path
        The .bib file; a missing file has no entry.

    Returns
    -------
    dict of str to Entry

    Examples
    --------
    >>> import pathlib, tempfile
    >>> bib = pathlib.Path(tempfile.mkdtemp()) / "r.bib"
    >>> _ = bib.write_text("@misc{b2024,\n  title = {{P}roject},\n  author = {Mu\\~noz, Ana and Lee, Bo},\n"
    ...                    "  year = {2024}\n}\n")
    >>> read_bib(bib)["b2024"]
    Entry(who='Muñoz and Lee', year='2024', title='Project')
    """
    path = Path(path)
    entries = {}
    for m in re.finditer(r"@\w+\{([^,]+),(.*?)\n\}", path.read_text() if path.exists() else "", flags=re.S):
        key, body = m.group(1).strip(), m.group(2) + "\n"
        for tex, char in _ACCENTS:
            body = body.replace(tex, char)
        authors = [a.strip() for a in _field(body, "author").split(" and ") if a.strip()]
        last = authors[0].split(",")[0].strip() if authors else key
        who = last + (" et al." if len(authors) > 2 else f" and {authors[1].split(',')[0].strip()}"
                      if len(authors) == 2 else "")
        entries[key] = Entry(who, _field(body, "year"), _field(body, "title"))
    return entries


def _field(body: str, name: str) -> str:
    """The value of field ``name`` of a .bib entry's ``body``, its braces removed ("" if it has none)."""
    f = re.search(name + r"\s*=\s*\{(.*?)\}\s*,?\s*\n", body, flags=re.S)
    return re.sub(r"[{}]", "", f.group(1)).strip() if f else ""
