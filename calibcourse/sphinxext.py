"""A Sphinx extension of the book's build (listed in ``_config.yml``): each script once per page.

Under jupyter-book 1.x, ``sphinx_thebe`` and ``sphinx_togglebutton`` register their inline
configuration scripts twice (once with filename None, once copied from Sphinx's registry with
filename ""), and the second ``const THEBE_JS_URL = ...`` raises
"Identifier 'THEBE_JS_URL' has already been declared" in every page's console (found by
:mod:`calibcourse.pagecheck`). This keeps the first of identical script and stylesheet
entries of a page. It imports nothing of the package's numerics.
"""
from __future__ import annotations


def _key(entry):
    """Identity of an asset, its priority aside; an inline script's filename is None or "" (Sphinx
    copies the registry's inline scripts with filename "", so a script added both ways repeats)."""
    name = getattr(entry, "filename", entry) or ""
    return str(name), tuple(sorted((k, str(v)) for k, v in getattr(entry, "attributes", {}).items()))


def dedupe_assets(app, pagename, templatename, context, doctree):
    """``html-page-context`` handler: drop repeated entries of ``script_files`` and ``css_files``."""
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
    app.connect("html-page-context", dedupe_assets, priority=900)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
