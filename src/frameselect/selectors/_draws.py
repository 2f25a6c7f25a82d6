"""numpy's weighted ``choice`` draws without its argument checks: the same draws, the same generator state after.

``Generator.choice(n, p=p)`` and ``RandomState.choice(n, size, replace=False,
p=p)`` spend most of a call on a small ``n`` checking ``p`` (a Kahan sum,
a negativity and a NaN test, a copy); the draw itself is a cumulative sum
and a binary search. Selectors that make many such draws on weights they
built themselves (finite, non-negative, normalised, with enough non-zero
entries) call these instead. Both follow numpy's own code
(``numpy/random/_generator.pyx`` and ``mtrand.pyx``, ``choice``), which is
the same for the two generators: the weights' cumulative sum divided by its
last value, ``uniform(m)`` draws (``Generator.random`` or
``RandomState.random_sample``), each one's bin by ``searchsorted(...,
side="right")``; without replacement the bins already drawn are zeroed and
the missing ones redrawn, keeping the first occurrence of each bin.
``tests/selectors/test_fast_paths.py`` checks draws and generator states
against numpy's calls.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from numpy.typing import NDArray

__all__ = ["weighted_index", "weighted_sample"]


def weighted_index(rng: np.random.Generator, p: NDArray[np.float64]) -> int:
    """``int(rng.choice(len(p), p=p))``: one draw with replacement (numpy's ``size=None`` path: one uniform)."""
    cdf = np.cumsum(p)
    cdf /= cdf[-1]
    return int(cdf.searchsorted(rng.random(), side="right"))


def weighted_sample(uniform: Callable[[int], NDArray[np.float64]], size: int, p: NDArray[np.float64]) -> list[int]:
    """``choice(len(p), size, replace=False, p=p).tolist()`` of the generator whose uniform draws ``uniform`` makes.

    ``uniform`` is ``rng.random`` for a ``Generator``, ``rs.random_sample``
    for a ``RandomState``. ``p`` needs at least ``size`` positive entries
    (numpy raises otherwise; here the loop would not end).
    """
    weights = np.array(p, dtype=np.float64)
    found: list[int] = []
    while len(found) < size:
        x = uniform(size - len(found))
        if found:
            weights[found] = 0.0
        cdf = np.cumsum(weights)
        cdf /= cdf[-1]
        # a zeroed bin is empty, so only new bins come back; dict keeps each one's first occurrence, in order
        found += dict.fromkeys(cdf.searchsorted(x, side="right").tolist())
    return found
