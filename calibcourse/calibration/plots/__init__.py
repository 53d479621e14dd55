"""Figures of calibration (chapter 1 introduces the reliability diagram; chapters 2-5 reuse all).

Every function returns the matplotlib ``Figure`` it drew on, and most take an
``ax`` (or a pair of axes) so that they can be placed in a grid. The numbers
they draw come from :mod:`calibcourse.calibration.metrics` (bins: :mod:`calibcourse.calibration.binning`,
smoothing: :mod:`calibcourse.calibration.kernels`).
"""
from __future__ import annotations

from calibcourse.calibration.plots._common import ACC_COLOR, GAP_COLOR, SMALL_FONT  # noqa: F401 (plots.X)
from calibcourse.calibration.plots.curves import (
                                                  MAP_GRID,  # noqa: F401 (plots.MAP_GRID)
                                                  bilevel_diagram,
                                                  calibration_maps,
                                                  ece_vs_bins,
                                                  sweep_plot,
                                                  training_curves,
)
from calibcourse.calibration.plots.reliability import reliability_diagram, reliability_grid, smooth_reliability_diagram

__all__ = ["reliability_diagram", "reliability_grid", "smooth_reliability_diagram",
           "ece_vs_bins", "training_curves", "sweep_plot", "calibration_maps", "bilevel_diagram"]
