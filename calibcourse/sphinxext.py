"""A Sphinx extension of the book's build (listed in ``_config.yml``): each script once per page.

Under jupyter-book 1.x, ``sphinx_thebe`` and ``sphinx_togglebutton`` register their inline
configuration scripts twice, and the second ``const THEBE_JS_URL = ...`` raises
"Identifier 'THEBE_JS_URL' has already been declared" in every page's console (found by
:mod:`calibcourse.pagecheck`). This keeps the first of identical script and stylesheet
entries of a page. It imports nothing of the package's numerics.
"""
from __future__ import annotations


def _key(entry):
    return str(entry), tuple(sorted((k, str(v)) for k, v in getattr(entry, "attributes", {}).items()))


def dedupe_assets(app, pagename, templatename, context, doctree):
    """``html-page-context`` handler: drop repeated entries of ``script_files`` and ``css_files``."""
    for name in ("script_files", "css_files"):
        entries = context.get(name)
        if not entries:
            continue
        seen, kept = set(), []
        for entry in entries:
            key = _key(entry)
            if key not in seen:
                seen.add(key)
                kept.append(entry)
        entries[:] = kept


def setup(app):
    app.connect("html-page-context", dedupe_assets, priority=900)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
