"""``python -m calibcourse.audit``: the number audit of the chapters and labs (``make test`` runs it).

Every number in a page's prose is glued from the code that computes it, or marked as a fixed
design choice or a quotation of a paper with its citation; shown code lines fit in 79
characters. The audit itself lives in :mod:`calibcourse.tools.audit`; this module is its
command's name.
"""
import sys

from calibcourse.tools.audit import main

__all__ = ["main"]

if __name__ == "__main__":
    sys.exit(main())
