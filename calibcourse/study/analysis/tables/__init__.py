"""Summaries of cached runs for the chapters (chapter 2 onwards).

``run_summary`` turns one :class:`~calibcourse.study.training.results.RunResult` into the
numbers a chapter reports (error, NLL, ECE with a bootstrap interval, MCE, the
temperature fitted on the validation split); ``sweep_table`` aggregates a sweep
over seeds; the post-hoc, seed and paired tables fill the chapters' tables. The claims a
chapter tests live in :mod:`calibcourse.study.analysis.ledger`.
"""
from __future__ import annotations

from calibcourse.study.analysis.tables.diagnosis import diagnosis_table, seed_paired_view
from calibcourse.study.analysis.tables.post_hoc import (
    binary_scores,
    post_hoc_binary_view,
    post_hoc_table,
    post_hoc_view,
)
from calibcourse.study.analysis.tables.seeds import (
    SEED_MEASURES,
    grid_choice_view,
    seed_table,
    seeds_view,
)
from calibcourse.study.analysis.tables.summaries import (
    fmt_ci,
    fmt_difference,
    method_label,
    run_summary,
    seed_predictions,
    sweep_table,
)

__all__ = [
    "run_summary",
    "sweep_table",
    "seed_predictions",
    "fmt_ci",
    "fmt_difference",
    "method_label",
    "post_hoc_table",
    "binary_scores",
    "post_hoc_view",
    "post_hoc_binary_view",
    "SEED_MEASURES",
    "seed_table",
    "seeds_view",
    "grid_choice_view",
    "diagnosis_table",
    "seed_paired_view",
]
