r"""The number audit of the book's pages: every number a reader sees is computed.

A number in the prose of a chapter or a lab is either

* **glued**: ``{glue:text}`name``` (or ``{glue}``, ``{glue:md}``), computed by the page's code
  from the same call that fills its table or figure;
* **a quotation of a paper**: ``{quote}`16.53 % <guo2017calibration>``` renders "16.53 %" and
  names the entry of ``book/references.bib`` that reports it (the key must exist);
* **a fixed design choice** (bins, seeds, sizes we chose): ``{fixed}`15 bins```;
* or a whole paragraph or table of quotations or design choices, marked by an HTML comment on
  the line before it: ``<!-- quote: guo2017calibration -->`` or ``<!-- fixed -->``.

Everything else that looks like a number in prose is reported, and makes the audit fail:
a typed number can disagree with the code without anyone noticing. Not numbers in this
sense: the constants 0 and 1 of the definitions, the book's level in "95 % interval",
math (``$...$``, ``$$...$$``), inline code, code cells, cross-references and citations, labels, numbered-list
markers, a page's own chapter number in its title, names
that contain digits (CIFAR-100, ResNet-110, LeNet-5, MNIST-1D, L2, 2x512), the numbers of
chapters, labs, figures, tables, exercises and sections ("chapter 3", "Figure 2",
"chapters 3 to 5"), and years ("(1998)", "in 2017").

The audit also fails on a line of *shown* code (a code cell not tagged ``remove-cell`` or
``remove-input``, or a fenced block in the prose) over 79 characters, which the HTML cuts.

``python -m calibcourse.tools.audit [FILE ...]`` audits the given pages, by default every
chapter and lab under ``notebooks/``; exit status 1 on a finding.
"""
from __future__ import annotations

import re
import sys
from dataclasses import dataclass
from pathlib import Path

from calibcourse.tools import myst

__all__ = ["Finding", "audit_text", "audit_file", "bib_keys", "pages", "main", "MAX_CODE_LINE"]

ROOT = Path(__file__).resolve().parents[2]

#: the longest line of shown code (PEP 8's 79; longer lines are cut in the HTML)
MAX_CODE_LINE = 79

@dataclass(frozen=True)
class Finding:
    """One problem of a page: where, what kind, and the text.

    Attributes
    ----------
    path : str
        The page.
    line : int
        Its line, from 1.
    kind : str
        ``"number"`` (a typed number), ``"quote"`` (a quotation whose citation is missing or
        unknown) or ``"code"`` (a shown code line over :data:`MAX_CODE_LINE` characters) or ``"table"`` (a bar
        inside inline math in a table row, which splits the cell).
    text : str
        The number, or the offending line.

    Examples
    --------
    >>> str(Finding("notebooks/01_theory.md", 12, "number", "4.3"))  # doctest: +ELLIPSIS
    '...01_theory.md:12...4.3...'
    """

    path: str
    line: int
    kind: str
    text: str

    def __str__(self) -> str:
        """``path:line: what is wrong: text``, the line the audit prints."""
        what = {"number": "typed number, neither glued nor marked",
                "quote": "quotation without a known citation",
                "code": f"shown code line over {MAX_CODE_LINE} characters"}[self.kind]
        return f"{self.path}:{self.line}: {what}: {self.text}"


# --------------------------------------------------------------------------- what is not prose
_ROLE = re.compile(r"\{([\w:.-]+)\}`((?:[^`\\]|\\.)*)`")
_QUOTE = re.compile(r"^(?P<text>.*?)\s*<(?P<key>[\w:.-]+)>\s*$", re.S)
_MATH_BLOCK = re.compile(r"\$\$.*?\$\$", re.S)
_MATH_INLINE = re.compile(r"(?<![\\$])\$(?!\$)(?:[^$\\\n]|\\.)+\$")
_CODE_INLINE = re.compile(r"``.*?``|`[^`\n]*`")
_URL = re.compile(r"\]\([^)]*\)|https?://\S+")
_COMMENT = re.compile(r"<!--.*?-->", re.S)
_LABEL = re.compile(r"^\s*\([\w:.-]+\)=\s*$")
_LIST_MARKER = re.compile(r"^\s*(?:\d+[.)]|[-*+])\s+")
_HEADING_NUMBER = re.compile(r"^(#+\s+)\d+(?:\.\d+)*\.?\s")
#: numbering, not data: a quiz question's number (``**Question 3.**``), a lab's part label at the
#: start of a paragraph (``**2. ECE**``) and a reference to a part or question ("question 5",
#: "Part 6", "questions 5 and 6"), and a written question's points ("(written, 4 points)",
#: "**Rubric (4 points).**", set by the lab's design)
_NUMBERING = re.compile(r"\*\*Question \d+\.?\*\*|^\*\*\d+\.\s|\b[QqPp](?:uestion|art)s? \d+(?: and \d+)?\b"
                         r"|\(written, \d+ points\)|\*\*Rubric \(\d+ points\)\.\*\*", re.M)
_BLOCK_MARK = re.compile(r"^\s*<!--\s*(quote:\s*(?P<key>[\w:.-]+)|fixed)\s*-->\s*$")
# a number: digits with optional thousands separators, decimals, a sign
_NUMBER = re.compile(r"(?<![\w.\-/^_,])[-+\u2212]?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?")
# what makes a number part of a name or a reference
_NAME_AFTER = re.compile(r"^(?:[A-Za-z_]|-[A-Za-z]|x\d|\d)")
_REFERENCE_WORDS = (r"(?:chapters?|ch\.|labs?|figures?|figs?\.|tables?|exercises?|sections?|parts?|"
                    r"steps?|equations?|eqs?\.|pages?|references?|appendix|version|python|issue)")
_REFERENCE_BEFORE = re.compile(_REFERENCE_WORDS + r"\s+(?:\d+[a-z]?(?:\s*(?:,|and|to|or|-|\u2013)\s*))*$",
                               re.I)
_YEAR = re.compile(r"^(?:19[5-9]\d|20[0-4]\d)$")


def bib_keys(path: Path | str | None = None) -> set:
    """The entry keys of the book's bibliography (``book/references.bib``).

    Parameters
    ----------
    path : path-like, optional
        The BibTeX file; by default the book's.

    Returns
    -------
    set of str

    Examples
    --------
    >>> "guo2017calibration" in bib_keys()
    True
    """
    text = Path(path or ROOT / "book" / "references.bib").read_text(encoding="utf-8")
    return set(re.findall(r"^@\w+\{([^,\s]+),", text, re.M))


def _blank(s: str) -> str:
    """``s`` with every character but newlines replaced by a space (keeps columns and lines)."""
    return re.sub(r"[^\n]", " ", s)


#: what the audit reads of each kind of line (:data:`calibcourse.tools.myst.KINDS`): a figure's caption is
#: prose the reader sees, a literal block in the prose is shown code; the rest is markup ("meta")
_READS = {"prose": "prose", "caption": "prose", "code": "code", "literal": "code"}


def _items(text: str) -> list:
    """``(kind, line number, text, shown)`` of each line of a page, ``kind`` one of "prose", "code"
    and "meta" (:data:`_READS`); ``shown``: a line of code the page shows."""
    return [(_READS.get(line.kind, "meta"), line.no, line.text, line.shown) for line in myst.lines(text)]


def _scan_numbers(text: str):
    """The typed numbers of a prose text whose glue, roles, math and code are blanked out:
    ``[(offset, number)]``."""
    found = []
    for m in _NUMBER.finditer(text):
        num = m.group(0)
        after = text[m.end():m.end() + 2]
        before = text[max(0, m.start() - 60):m.start()]
        if _NAME_AFTER.match(after):                 # LeNet-5's digits in "5x5", "2x512", "1D"
            continue
        if before.endswith("-") or re.search(r"[A-Za-z]$", before):  # CIFAR-100, L2, ResNet-110
            continue
        if _REFERENCE_BEFORE.search(before):
            continue
        bare = num.lstrip("+-\u2212")
        if bare in ("0", "1", "0.0", "1.0") and num == bare:   # constants of the definitions
            continue
        if bare == "95" and re.match(r"^\s*(?:%|\u00a0%|&nbsp;%)\s*(?:\w+\s+){0,2}(?:interval|bootstrap)",
                                     text[m.end():m.end() + 40]):
            continue                                    # the book's level, a fixed choice
        if _YEAR.match(bare) and (re.search(r"[(\[]\s*$|\b(?:in|of|since|from|until)\s+$|et al\.,?\s*$",
                                            before) or re.match(r"^\s*[)\],;]", after) or re.match(r"^[a-z]\)", after)):
            continue
        found.append((m.start(), num))
    return found


def audit_text(text: str, path: str = "<text>", keys: set | None = None) -> list:
    r"""The findings of one page's MyST markdown.

    Parameters
    ----------
    text : str
        The page (a MyST notebook or markdown page).
    path : str, default="<text>"
        Its name in the findings.
    keys : set of str, optional
        The citation keys a ``{quote}`` may name (default: :func:`bib_keys`).

    Returns
    -------
    list of Finding
        In the order of the page.

    Examples
    --------
    >>> page = "The MLP's ECE is 4.3 %; {glue:text}`mlp_ece:.1f` % with {fixed}`15` bins."
    >>> [str(f) for f in audit_text(page, "p.md")]
    ['p.md:1: typed number, neither glued nor marked: 4.3']
    >>> audit_text("Guo et al. report {quote}`16.53 % <guo2017calibration>` on CIFAR-100.")
    []
    >>> [f.kind for f in audit_text("{quote}`16.53 % <nobody2030>`")]
    ['quote']
    >>> audit_text("<!-- quote: guo2017calibration -->\n| ResNet-110 | 4.6 | 0.58 |")
    []
    >>> [f.kind for f in audit_text("| ECE | $|a - b|$ |")]
    ['table']
    """
    keys = bib_keys() if keys is None else keys
    findings = []
    # group the prose into blocks (separated by blank lines) to apply block marks
    block_mark = False
    for kind, no, line, shown in _items(text):
        if kind == "code":
            if shown and len(line) > MAX_CODE_LINE:
                findings.append(Finding(path, no, "code", line.strip()[:100]))
            continue
        if kind == "meta":
            continue
        if not line.strip():
            block_mark = False
            continue
        m = _BLOCK_MARK.match(line)
        if m:
            key = m.group("key")
            if key is not None and key not in keys:
                findings.append(Finding(path, no, "quote", line.strip()))
            block_mark = True
            continue
        if not block_mark and not _LABEL.match(line):
            findings += _prose_findings(line, no, path, keys)
    return findings


def _prose_findings(line: str, no: int, path: str, keys: set) -> list:
    """The findings of one line of prose outside a marked block: unknown citations of its ``{quote}``
    roles, bars inside math in a table row, and its typed numbers."""
    findings = []

    def role(m):
        name, body = m.group(1), m.group(2)
        if name == "quote":
            q = _QUOTE.match(body)
            if q is None or q.group("key") not in keys:
                findings.append(Finding(path, no, "quote", m.group(0)))
        return _blank(m.group(0))

    work = _COMMENT.sub(lambda x: _blank(x.group(0)), line)
    work = _HEADING_NUMBER.sub(lambda x: x.group(1) + " " * (len(x.group(0)) - len(x.group(1))), work)
    work = _LIST_MARKER.sub(lambda x: _blank(x.group(0)), work)
    work = _NUMBERING.sub(lambda x: _blank(x.group(0)), work)
    work = _ROLE.sub(role, work)
    if line.lstrip().startswith("|"):  # a table row: a bar inside math would split the cell
        for math in _MATH_INLINE.findall(line):
            if "|" in math:
                findings.append(Finding(path, no, "table", f"'|' inside math in a table row "
                                                             f"(write \\lvert, \\rvert): {math[:60]}"))
    work = _MATH_INLINE.sub(lambda x: _blank(x.group(0)), work)
    work = _CODE_INLINE.sub(lambda x: _blank(x.group(0)), work)
    work = _URL.sub(lambda x: _blank(x.group(0)), work)
    return findings + [Finding(path, no, "number", num) for _, num in _scan_numbers(work)]


def _strip_math_blocks(text: str) -> str:
    return _MATH_BLOCK.sub(lambda x: _blank(x.group(0)), text)


def audit_file(path, keys: set | None = None) -> list:
    r""":func:`audit_text` of a file (display math blanked first).

    Parameters
    ----------
    path : path-like
        The page.
    keys : set of str, optional
        As in :func:`audit_text`.

    Returns
    -------
    list of Finding

    Examples
    --------
    >>> import tempfile
    >>> page = Path(tempfile.mkdtemp()) / "p.md"
    >>> _ = page.write_text("$$x = 2.5$$\n\nThe ECE is 4.3 %.\n")
    >>> [(f.line, f.kind, f.text) for f in audit_file(page)]  # the display math is not prose
    [(3, 'number', '4.3')]
    """
    path = Path(path)
    try:
        name = str(path.resolve().relative_to(ROOT))
    except ValueError:
        name = str(path)
    text = _strip_math_blocks(path.read_text(encoding="utf-8"))
    return audit_text(text, name, keys)


def pages() -> list:
    """Every chapter and lab of the book (``notebooks/*.md`` and ``notebooks/labs/*.md``).

    Returns
    -------
    list of pathlib.Path

    Examples
    --------
    >>> [p.name for p in pages()][:2]
    ['01_theory.md', '02_causes.md']
    """
    nb = ROOT / "notebooks"
    return sorted(nb.glob("*.md")) + sorted((nb / "labs").glob("*.md"))


def main(argv=None) -> int:
    r"""Audit the pages; print every finding; 1 if a page has one.

    Parameters
    ----------
    argv : list of str, optional
        Pages to audit (default: :func:`pages`).

    Returns
    -------
    int
        The exit status.

    Examples
    --------
    >>> import tempfile
    >>> page = Path(tempfile.mkdtemp()) / "p.md"
    >>> _ = page.write_text("The ECE is 4.3 %.\n")
    >>> import contextlib, io
    >>> out = io.StringIO()
    >>> with contextlib.redirect_stdout(out):
    ...     status = main([str(page)])
    >>> status, "4.3" in out.getvalue()
    (1, True)
    """
    argv = sys.argv[1:] if argv is None else argv
    targets = [Path(a) for a in argv] or pages()
    keys = bib_keys()
    failed = False
    for page in targets:
        findings = audit_file(page, keys)
        try:
            rel = str(page.resolve().relative_to(ROOT))
        except ValueError:
            rel = str(page)
        for f in findings:
            print(f)
        failed = failed or bool(findings)
        print(f"== {rel}: {f'{len(findings)} finding(s)' if findings else 'ok'}", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
