"""What every figure shares: its colours, its smallest font, matplotlib loaded when first drawn, the
checked inputs."""
from __future__ import annotations

from calibcourse.calibration import metrics as M
from calibcourse.calibration._validation import check_labels, check_probs

__all__ = ["ACC_COLOR", "GAP_COLOR", "SMALL_FONT"]

ACC_COLOR = "#1f77b4"
GAP_COLOR = "#d62728"


#: the smallest text of a figure, in points: at least 9 pt once a figure of the default widths
#: is shown at the width of the book's page
SMALL_FONT = 9


def _plt():
    import matplotlib.pyplot as plt  # imported late: the metrics need no plotting stack

    return plt


def _checked(probs, labels):
    """Validated (probs, labels, top-label confidence, predicted class)."""
    p = check_probs(probs)
    y = check_labels(labels, p.shape[0], 2 if p.ndim == 1 else p.shape[1])
    conf, pred = M.top_label(p)
    return p, y, conf, pred
