"""Fast paths that must compute exactly what the plain numpy code computed.

Each restructured computation is compared, bit for bit, with the numpy
expression it replaced, on seeded inputs chosen to stress rounding.
"""

from __future__ import annotations

import numpy as np
import pytest

from frameselect.selectors.focus import _mean_var_as_numpy


def awkward_values(rng: np.random.Generator, n: int, kind: int) -> list[float]:
    """Short float lists: uniform, wide magnitudes, large offset (cancellation), two-decimal values."""
    if kind == 0:
        v = rng.random(n)
    elif kind == 1:
        v = rng.standard_normal(n) * 10.0 ** rng.integers(-8, 8, n)
    elif kind == 2:
        v = 1e8 + rng.random(n)
    else:
        v = np.round(rng.random(n), 2)
    return [float(x) for x in v]


@pytest.mark.parametrize("n", range(1, 12))
def test_focus_arm_mean_and_variance_equal_numpys_bit_for_bit(n: int) -> None:
    rng = np.random.default_rng(n)
    for trial in range(4000):
        values = awkward_values(rng, n, trial % 4)
        assert _mean_var_as_numpy(values) == (float(np.mean(values)), float(np.var(values))), values
