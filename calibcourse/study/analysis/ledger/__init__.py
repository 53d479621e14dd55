"""The claims ledger (chapter 1 onwards): every claim a chapter tests, with its effect, interval and verdict.

A claim is declared where it is tested (:meth:`Ledger.claim`); the chapter-end table and the
book's "What held" page (``_build/claims.json``) both read it. What each claim reads, for the check of
its registration against the history (:mod:`calibcourse.tools.registration`), is in
:mod:`~calibcourse.study.analysis.ledger.reads`.
"""
from __future__ import annotations

from calibcourse.study.analysis.ledger._texts import (
                                             CLAIM_KEYS,
                                             CLAIMS_GLUE_NAME,
                                             MAX_SEEDS,
                                             MAX_TEST_FACTOR,
                                             UNDERPOWERED_RATIO,
)
from calibcourse.study.analysis.ledger.claims import Claim, Ledger
from calibcourse.study.analysis.ledger.page import (
    check_claims,
    committed_registration,
    kind_of,
    ledger_page,
    registration_summary,
    retired_why,
    with_registration,
)

__all__ = ["Claim", "Ledger", "CLAIM_KEYS", "CLAIMS_GLUE_NAME", "check_claims", "ledger_page", "with_registration",
           "committed_registration", "retired_why", "registration_summary", "kind_of",
           "MAX_TEST_FACTOR", "MAX_SEEDS", "UNDERPOWERED_RATIO"]
