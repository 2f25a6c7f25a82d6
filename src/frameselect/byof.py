"""Deprecated name of :mod:`frameselect.arrays` (selection on arrays you bring); kept for one release."""

import warnings

from frameselect.arrays import pool_size, select_from_arrays, selector_params

__all__ = ["select_from_arrays", "pool_size", "selector_params"]

warnings.warn("frameselect.byof is now frameselect.arrays; import select_from_arrays from there", DeprecationWarning, stacklevel=2)
