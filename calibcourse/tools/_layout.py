"""Where the book build puts what it makes, and its error: shared by the build and the claims ledger."""
from __future__ import annotations

from pathlib import Path

__all__ = ["BuildError", "GENERATED", "LEDGER_PAGE", "CLAIMS_JSON"]

#: the executed pages, as the book reads them
GENERATED = Path("book") / "generated"
#: pages the build writes itself (no notebook source): the claims ledger
LEDGER_PAGE = GENERATED / "what_held"
CLAIMS_JSON = Path("_build") / "claims.json"


class BuildError(RuntimeError):
    """A notebook failed or the HTML build reported a warning/error."""
