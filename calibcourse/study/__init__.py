"""The course's study: ``course`` (what the pages and labs need), ``analysis`` (runs into tables, claims and
numbers), ``runs`` (the registry of runs and the result cache) and ``training`` (the code that decides a
run's weights), each importing only the ones after it (an import-linter contract)."""
