"""The claims ledger (chapter 1 onwards): every claim a chapter tests, with its effect, interval and verdict.

A claim is declared where it is tested (:meth:`Ledger.claim`); the chapter-end table and the
book's "What held" page (``_build/claims.json``) both read it.
"""
from __future__ import annotations

from calibcourse.study.analysis.ledger._texts import (CLAIM_KEYS, CLAIMS_GLUE_NAME, MAX_SEEDS, MAX_TEST_FACTOR,
                                             UNDERPOWERED_RATIO)
from calibcourse.study.analysis.ledger.claims import Claim, Ledger
from calibcourse.study.analysis.ledger.page import check_claims, ledger_page

__all__ = ["Claim", "Ledger", "CLAIM_KEYS", "CLAIMS_GLUE_NAME", "check_claims", "ledger_page",
           "MAX_TEST_FACTOR", "MAX_SEEDS", "UNDERPOWERED_RATIO"]
