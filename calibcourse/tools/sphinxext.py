"""A Sphinx extension of the book's build (listed in ``_config.yml``): each script once per page.

Under jupyter-book 1.x, ``sphinx_thebe`` and ``sphinx_togglebutton`` register their inline
configuration scripts twice (once with filename None, once copied from Sphinx's registry with
filename ""), and the second ``const THEBE_JS_URL = ...`` raises
"Identifier 'THEBE_JS_URL' has already been declared" in every page's console (found by
:mod:`calibcourse.tools.pagecheck`). This keeps the first of identical script and stylesheet
entries of a page. It imports nothing of the package's numerics.
"""
from __future__ import annotations

__all__ = ["dedupe_assets", "setup"]


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
    >>> scripts = [Asset(filename=None, attributes=inline, priority=500), Asset(filename="a.js", attributes={}, priority=200),
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
    return {"parallel_read_safe": True, "parallel_write_safe": True}
