"""Runs turned into what the chapters say: tables, the claims ledger, the glue of numbers into
prose, the intervals' coverage study, deployment's recalibration curves, and chapter 5's reference
recipe with its choice rule and frozen-control test."""

__all__: list[str] = []  # a folder of modules: import them by name
