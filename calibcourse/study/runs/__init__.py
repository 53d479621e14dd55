"""The runs of the book: the registry of every run by profile (``experiments``), the result cache,
the profiles, the labels read from a run's config, and the stability check across CPUs."""

__all__: list[str] = []  # a folder of modules: import them by name
