"""The book's machinery: the build, the audit of its numbers, the labs' editions and grading, the slides and
the PDF, the run grid and the command line."""
