"""The course around the study: what every page does first (``notebook``), the reading schedule,
the labs' data and reference answers, and the checks that grade the labs' exercises."""

__all__: list[str] = []  # a folder of modules: import them by name
