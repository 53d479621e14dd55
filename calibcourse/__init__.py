"""calibcourse: a course and a reproducible study on the calibration of neural networks, and its toolkit.

Three layers: :mod:`calibcourse.calibration` (the practitioner's toolkit), :mod:`calibcourse.study` (the
course's data, training, runs and analyses) and :mod:`calibcourse.tools` (the book's build, grading, the
run grid and the command line); each imports only the ones below it.
"""
