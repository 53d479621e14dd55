"""A Sphinx extension of the book's build (listed in ``_config.yml``): each script once per page.

Under jupyter-book 1.x, ``sphinx_thebe`` and ``sphinx_togglebutton`` register their inline
configuration scripts twice (once with filename None, once copied from Sphinx's registry with
filename ""), and the second ``const THEBE_JS_URL = ...`` raises
"Identifier 'THEBE_JS_URL' has already been declared" in every page's console (found by
:mod:`calibcourse.tools.pagecheck`). This keeps the first of identical script and stylesheet
entries of a page. It imports nothing of the package's numerics.

It also defines the two roles of the number audit (:mod:`calibcourse.tools.audit`): a number
typed in the prose is marked as a fixed design choice, ``{fixed}`15```, or as a quotation of
a paper, ``{quote}`16.53 % <guo2017calibration>``` (the key names the bibliography's entry);
both render as the plain text (the quotation without its key).
"""
from __future__ import annotations

import re

__all__ = ["dedupe_assets", "fixed_role", "quote_role", "setup"]


def _key(entry):
    """Identity of an asset, its priority aside; an inline script's filename is None or "" (Sphinx
    copies the registry's inline scripts with filename "", so a script added both ways repeats)."""
    name = getattr(entry, "filename", entry) or ""
    return str(name), tuple(sorted((k, str(v)) for k, v in getattr(entry, "attributes", {}).items()))


def dedupe_assets(app, pagename, templatename, context, doctree):
    """``html-page-context`` handler: drop repeated entries of ``script_files`` and ``css_files``.

    Parameters
    ----------
    app : sphinx.application.Sphinx
        The application (unused).
    pagename, templatename : str
        The page and its template (unused).
    context : dict
        The page's template context; its ``script_files`` and ``css_files`` lists are
        edited in place: entries sorted by priority, the first of each identity kept.
    doctree : docutils.nodes.document or None
        The page's document (unused).

    Returns
    -------
    None

    Examples
    --------
    >>> from types import SimpleNamespace as Asset
    >>> inline = dict(body="const THEBE_JS_URL = 1")
    >>> scripts = [Asset(filename=None, attributes=inline, priority=500),
    ...            Asset(filename="a.js", attributes={}, priority=200),
    ...            Asset(filename="", attributes=inline, priority=500)]
    >>> context = {"script_files": scripts}
    >>> dedupe_assets(None, "index", "page.html", context, None)
    >>> [a.filename for a in context["script_files"]]
    ['a.js', None]
    """
    for name in ("script_files", "css_files"):
        entries = context.get(name)
        if not entries:
            continue
        seen, kept = set(), []
        for entry in sorted(entries, key=lambda e: getattr(e, "priority", 500)):  # keep the earliest
            key = _key(entry)
            if key not in seen:
                seen.add(key)
                kept.append(entry)
        entries[:] = kept


def fixed_role(name, rawtext, text, lineno, inliner, options=None, content=None):
    """The ``{fixed}`...``` role: a number chosen by design (bins, seeds), rendered as it is.

    Parameters
    ----------
    name, rawtext, text, lineno, inliner, options, content
        A docutils role's arguments; ``text`` is rendered.

    Returns
    -------
    tuple
        ``([docutils.nodes.Text], [])``.

    Examples
    --------
    >>> fixed_role("fixed", "{fixed}`15`", "15", 1, None)[0][0].astext()
    '15'
    """
    from docutils import nodes

    return [nodes.Text(text)], []


def quote_role(name, rawtext, text, lineno, inliner, options=None, content=None):
    """The ``{quote}`16.53 % <key>``` role: a number quoted from the paper ``key``, rendered
    without the key (the sentence cites the paper).

    Parameters
    ----------
    name, rawtext, text, lineno, inliner, options, content
        A docutils role's arguments.

    Returns
    -------
    tuple
        ``([docutils.nodes.Text], [])``.

    Examples
    --------
    >>> quote_role("quote", "", "16.53 % <guo2017calibration>", 1, None)[0][0].astext()
    '16.53 %'
    """
    from docutils import nodes

    shown = re.sub(r"\s*<[^<>]+>\s*$", "", text)
    return [nodes.Text(shown)], []


def setup(app):
    """Register :func:`dedupe_assets` (Sphinx calls this for an extension listed in ``_config.yml``).

    Parameters
    ----------
    app : sphinx.application.Sphinx
        The application.

    Returns
    -------
    dict
        The extension's metadata: safe for parallel reading and writing.

    Examples
    --------
    >>> class App:
    ...     def connect(self, event, handler, priority=500):
    ...         print(event, handler.__name__, priority)
    >>> setup(App())["parallel_read_safe"]
    html-page-context dedupe_assets 900
    True
    """
    app.connect("html-page-context", dedupe_assets, priority=900)
    if hasattr(app, "add_role"):
        app.add_role("fixed", fixed_role)
        app.add_role("quote", quote_role)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
