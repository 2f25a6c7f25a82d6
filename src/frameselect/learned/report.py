"""Deprecated: the held-out study of a checkpoint is now :mod:`frameselect.learned.study` (it runs experiments).

Kept for one release.
"""

import warnings

from frameselect.learned.study import DEFAULT_BASELINES, KINDS, held_out_report, plot_curves

__all__ = ["held_out_report", "plot_curves", "DEFAULT_BASELINES", "KINDS"]

warnings.warn(
    "frameselect.learned.report is now frameselect.learned.study; import held_out_report and plot_curves from there", DeprecationWarning, stacklevel=2
)
