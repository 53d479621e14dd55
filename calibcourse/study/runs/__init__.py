"""The runs of the book: the registry of every run by profile (``experiments``), the result cache,
the profiles, the labels read from a run's config, and each run's stability to a perturbation of its
initial weights (recorded for information; no test decides on it)."""

__all__: list[str] = []  # a folder of modules: import them by name
