"""A third-party selector in ten lines: every other frame, thinned to k."""

from dataclasses import dataclass

from frameselect.selectors import Selector
from frameselect.selectors.basic import uniform_indices


@dataclass(frozen=True)
class EveryOther(Selector):
    """Every other frame of the pool; if more than k, k of them uniformly."""

    def _select(self, pool, query, k, features, rng):
        evens = list(range(0, len(pool), 2))
        if len(evens) < k:
            evens = list(range(len(pool)))
        return [evens[i] for i in uniform_indices(len(evens), k)]
