"""Budget allocation at an exact mean: the shared rule every demand router uses.

Problem: ``n`` samples with demand scores ``d_i`` ≥ 0, allowed budgets
``A`` (e.g. {4, 8, 16, 32, 64}) and a mean budget ``B``. Choose ``k_i ∈ A``
with ``Σ k_i = n·B`` exactly, maximising the estimated gain

    Σ_i  u_i(k_i),   u_i(k) = (ε + d_i) · log2(k)

a concave, diminishing-returns gain whose continuous optimum gives budgets
proportional to ``ε + d_i`` (``ε`` = ``floor`` keeps every sample above the
smallest budget's worth of weight, so a sample with zero estimated demand
still gets frames). The discrete problem is solved *exactly* by dynamic
programming over the total in units of ``g = gcd(A)``: ``O(n · (nB/g) · |A|)``
time, vectorised per sample. Ties are broken deterministically (the lowest
budget for the earliest sample), so the same inputs give the same routes.

The mean is exact whenever ``n·B`` can be written as a sum of ``n`` allowed
budgets (always true when ``B`` itself is allowed); otherwise
:class:`InfeasibleBudgetError` says so. Above 2,000 samples the samples are
dealt round-robin into chunks of at most 2,000, each solved exactly at the
same mean (so the overall mean stays exact; optimality is per chunk).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from functools import reduce

import numpy as np
from numpy.typing import NDArray

from frameselect.errors import FrameselectError

__all__ = ["allocate_budgets", "InfeasibleBudgetError", "gain"]

#: the exact DP runs on at most this many samples at once (memory: n × nB/g bytes)
_DP_LIMIT = 2_000


class InfeasibleBudgetError(FrameselectError, ValueError):
    """No choice of allowed budgets has the requested mean."""


def gain(demand: float, k: int, floor: float = 0.1) -> float:
    """The estimated gain of giving ``k`` frames to a sample of this demand."""
    return (floor + demand) * math.log2(k)


def allocate_budgets(demands: Sequence[float] | NDArray[np.float64], mean_budget: int, allowed: Sequence[int], *, floor: float = 0.1) -> list[int]:
    """Per-sample budgets from ``allowed`` with mean exactly ``mean_budget``.

    >>> allocate_budgets([0.0, 1.0], 8, [4, 8, 12])
    [4, 12]
    >>> allocate_budgets([0.0, 1.0], 8, [4, 8, 16])  # (4, 12) is not allowed
    [8, 8]
    """
    d = np.asarray(demands, dtype=np.float64)
    n = int(d.shape[0])
    levels = sorted({int(a) for a in allowed})
    if not levels or levels[0] < 1:
        raise ValueError(f"allowed budgets must be positive integers, got {list(allowed)}")
    if n == 0:
        return []
    if not np.all(np.isfinite(d)) or np.any(d < 0):
        raise ValueError("demand scores must be finite and non-negative")
    total = n * int(mean_budget)
    g = reduce(math.gcd, levels)
    if total % g or not levels[0] * n <= total <= levels[-1] * n:
        raise InfeasibleBudgetError(f"mean budget {mean_budget} over {n} sample(s) cannot be made from allowed budgets {levels}")
    if n > _DP_LIMIT:
        # round-robin chunks, each allocated exactly at the same mean: the overall mean stays exact
        chunks = math.ceil(n / _DP_LIMIT)
        out = [0] * n
        for c in range(chunks):
            members = list(range(c, n, chunks))
            for i, k in zip(members, allocate_budgets(d[members], mean_budget, levels, floor=floor)):
                out[i] = k
        return out
    units = [a // g for a in levels]
    cap = total // g
    logs = np.log2(np.asarray(levels, dtype=np.float64))
    neg = -np.inf
    best = np.full(cap + 1, neg)
    best[0] = 0.0
    choice = np.zeros((n, cap + 1), dtype=np.int8)
    for i in range(n):
        w = floor + d[i]
        new = np.full(cap + 1, neg)
        arg = np.zeros(cap + 1, dtype=np.int8)
        for j, u in enumerate(units):
            if u > cap:
                continue
            cand = np.full(cap + 1, neg)
            cand[u:] = best[: cap + 1 - u] + w * logs[j]
            better = cand > new + 1e-12
            new = np.where(better, cand, new)
            arg = np.where(better, j, arg)
        best, choice[i] = new, arg
    if not np.isfinite(best[cap]):
        raise InfeasibleBudgetError(f"mean budget {mean_budget} over {n} sample(s) cannot be made from allowed budgets {levels}")
    out = [0] * n
    rest = cap
    for i in range(n - 1, -1, -1):
        j = int(choice[i, rest])
        out[i] = levels[j]
        rest -= units[j]
    assert rest == 0 and sum(out) == total
    return out
