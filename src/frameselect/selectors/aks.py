"""AKS: Adaptive Keyframe Sampling.

Tang et al., "Adaptive Keyframe Sampling for Long Video Understanding",
CVPR 2025. Reference code: github.com/ncTimTang/AKS (commit 4667501),
``frame_select.py`` (functions ``meanstd`` and ``main``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import ClassVar

import numpy as np
from numpy.typing import NDArray

from frameselect.errors import SelectionError
from frameselect.parts import Range
from frameselect.registry import selectors
from frameselect.selectors.base import Selector, fill_to_k, normalize_minmax
from frameselect.types import CandidatePool, Features, Query

__all__ = ["AKS", "aks_leaves", "aks_select"]


def _top_order(scores: NDArray[np.float64]) -> NDArray[np.intp]:
    """Positions by descending score, earlier position first on ties (as ``heapq.nlargest``)."""
    return np.argsort(-scores, kind="stable")


def _ranks(scores: NDArray[np.float64]) -> tuple[NDArray[np.intp], NDArray[np.intp]]:
    """:func:`_top_order` and each position's place in it (0 for the highest score)."""
    order = _top_order(scores)
    rank = np.empty_like(order)
    rank[order] = np.arange(order.shape[0])
    return order, rank


def _segment_top(order: NDArray[np.intp], rank: NDArray[np.intp], start: int, stop: int, m: int) -> NDArray[np.intp]:
    """``start + _top_order(scores[start:stop])[:m]``, from the whole pool's order and ranks.

    Ordering by (descending score, position) restricted to a segment is the
    segment's own order, so the segment's ``m`` smallest (distinct) ranks,
    sorted, read through the pool's order give its top ``m`` positions
    without comparing scores again; one sort of the pool serves every
    segment the recursion visits.
    """
    return order[np.sort(rank[start:stop])[:m]]


def _mean(values: NDArray[np.float64]) -> float:
    """``float(np.mean(values))`` without its dispatch: the same reduction and division (NaN when empty)."""
    n = values.shape[0]
    return float(values.sum()) / n if n else math.nan


def _std(values: NDArray[np.float64]) -> float:
    """``float(np.std(values))`` without its dispatch: deviations from the same mean, squared, summed, divided, rooted."""
    dev = values - _mean(values)
    return math.sqrt(float((dev * dev).sum()) / values.shape[0])


def aks_leaves(scores: NDArray[np.float64], m: int, t1: float = 0.8, t2: float = -100.0, all_depth: int = 5) -> list[tuple[int, int, int]]:
    """The leaf segments ``(start, stop, depth)`` of AKS's recursive halving.

    ``scores`` are already min-max normalised. A segment is a leaf when the
    mean of its top ``m`` scores minus its mean exceeds ``t1`` and its
    standard deviation exceeds ``t2``, or when it sits at ``all_depth``;
    otherwise it is cut at ``len // 2``. Leaves come level by level (the
    reference's breadth-first order). Empty segments (halving a one-frame
    segment) hold no frames and are dropped: the reference carries them to
    ``all_depth`` where they yield nothing.

    >>> aks_leaves(np.array([0.0, 0.0, 0.0, 0.0, 0.0, 1.0]), 1)  # 1 - 1/6 > 0.8: the root is a leaf
    [(0, 6, 0)]
    >>> aks_leaves(np.array([0.0, 0.0, 0.0, 0.0, 1.0]), 1, all_depth=2)  # 1 - 1/5 is not > 0.8
    [(0, 1, 2), (1, 2, 2), (2, 3, 2), (3, 5, 2)]
    """
    scores = np.asarray(scores, dtype=np.float64)
    return _leaves(scores, *_ranks(scores), m, t1, t2, all_depth)


def _leaves(
    scores: NDArray[np.float64], order: NDArray[np.intp], rank: NDArray[np.intp], m: int, t1: float, t2: float, all_depth: int
) -> list[tuple[int, int, int]]:
    leaves: list[tuple[int, int, int]] = []
    level = [(0, len(scores))]
    depth = 0
    while level:
        next_level: list[tuple[int, int]] = []
        for start, stop in level:
            if stop <= start:
                continue
            seg = scores[start:stop]
            top = scores[_segment_top(order, rank, start, stop, m)]
            # the same reductions, on the same values in the same order, as the reference
            mean_diff = _mean(top) - _mean(seg)
            if (mean_diff > t1 and _std(seg) > t2) or depth >= all_depth:
                leaves.append((start, stop, depth))
            else:
                mid = start + (stop - start) // 2
                next_level += [(start, mid), (mid, stop)]
        level = next_level
        depth += 1
    return leaves


def aks_select(scores: NDArray[np.float64], m: int, ratio: int = 1, t1: float = 0.8, t2: float = -100.0, all_depth: int = 5) -> list[int]:
    """AKS exactly as the reference computes it: ascending, possibly fewer than ``m``.

    ``scores`` are raw per-frame relevance scores; ``m`` is the reference's
    ``max_num_frames``. With ``ratio > 1`` only every ``ratio``-th frame is a
    candidate; if fewer than ``m`` remain, all of them are returned.

    >>> aks_select(np.array([0.0] * 5 + [1.0] + [0.0] * 5 + [1.0]), 2)
    [5, 11]
    >>> aks_select(np.array([0.1, 0.9, 0.2, 0.3, 0.1, 0.2, 0.8, 0.1]), 2)  # splits to depth 5: int(2 / 32) = 0 per leaf
    []
    """
    scores = np.asarray(scores, dtype=np.float64)
    count = len(scores) // ratio
    frames = np.arange(count) * ratio
    if count < m:
        return [int(i) for i in frames]
    norm = normalize_minmax(scores[frames])
    order, rank = _ranks(norm)
    out: list[int] = []
    for start, stop, depth in _leaves(norm, order, rank, m, t1, t2, all_depth):
        take = int(m / 2**depth)
        out += [int(frames[j]) for j in _segment_top(order, rank, start, stop, take)]
    return sorted(out)


@selectors.register("aks")
@dataclass(frozen=True)
class AKS(Selector):
    """Adaptive Keyframe Sampling (Tang et al., CVPR 2025).

    Follows ``frame_select.py`` of github.com/ncTimTang/AKS: relevance
    scores are min-max normalised over the whole pool; the pool is halved
    recursively (breadth first) down to depth ``all_depth``; a segment stops
    splitting when mean(top-M) − mean > ``t1`` and std > ``t2``, where
    M = ``max_num_frames`` = k; each leaf at depth d gives its top
    ``int(k / 2**d)`` frames (earlier frame first on ties). ``ratio``
    keeps every ``ratio``-th frame as a candidate first, as the reference
    does. Defaults are the reference's: ``t1=0.8``, ``t2=-100`` (the std
    test always passes), ``all_depth=5``, ``ratio=1``.

    The reference can return fewer than k frames (``int`` truncation per
    leaf, leaves shorter than their quota; with k < 32 every depth-5 leaf
    gets 0, so a pool that splits to the bottom yields nothing), and when
    fewer than k candidates remain (N // ``ratio`` < k) it returns every
    candidate. ``reference_exact=True`` returns the reference output as is
    (``main`` of ``frame_select.py`` at commit 4667501), for the budget as
    given: ascending, possibly short or empty. The default fills up to
    ``min(k, N)`` with the shared :func:`fill_to_k` rule, priority =
    relevance. Deviation: a constant relevance vector normalises to zeros
    here, where the reference divides 0 by 0.

    Code and paper: the paper presents the split rule as a relevance–coverage
    trade-off approximated by adaptive recursive binning; the code's concrete
    rule, followed here, is the one above, with two details the paper does
    not state: the standard-deviation test is switched off by its default
    (``t2=-100``), and the command line declares ``--t1``/``--t2`` as
    integers, so only the defaults (0.8, -100) can actually be used there.
    """

    param_ranges = {"t1": Range(), "t2": Range(), "all_depth": Range(ge=0, integer=True), "ratio": Range(ge=1, integer=True)}

    needs = frozenset({"relevance"})
    t1: float = 0.8
    t2: float = -100.0
    all_depth: int = 5
    ratio: int = 1
    reference_exact: bool = False
    supports_reference_exact: ClassVar[bool] = True

    def _select(self, pool: CandidatePool, query: Query | None, k: int, features: Features, rng: np.random.Generator) -> list[int]:
        if self.ratio < 1 or self.all_depth < 0:
            raise SelectionError(f"aks needs ratio >= 1 and all_depth >= 0, got ratio={self.ratio}, all_depth={self.all_depth}")
        scores = features.relevance()
        chosen = aks_select(scores, k, self.ratio, self.t1, self.t2, self.all_depth)
        if self.reference_exact:
            return chosen
        return fill_to_k(chosen, k, len(pool), priority=scores)
