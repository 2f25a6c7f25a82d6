"""Classical selectors: relevance ranking, diversity and coverage.

Each selector is a thin wrapper over a plain function on arrays, so the
algorithm can be tested and reused without pools or features:

- ``topk``: top-k query relevance (:func:`topk_indices`)
- ``mmr``: Maximal Marginal Relevance (:func:`mmr_greedy`)
- ``kmeans``: k-means++ / Lloyd, the frame nearest each centroid (:func:`kmeans_centroids`; these diversity
  selectors live in :mod:`frameselect.selectors.diversity`)
- ``dpp`` / ``dpp_diverse``: greedy DPP MAP with / without query quality (:func:`dpp_greedy`)
- ``facility_location``: relevance + coverage, greedy (:func:`facility_location_greedy`)
- ``stratified``: the most relevant frame of each time segment (:func:`stratified_top1`)
- ``temporal_nms``: top-k with temporal non-maximum suppression (:func:`temporal_nms`)

Conventions shared by all of them: "relevance" is ``features.relevance()``
(precomputed scores, else frame · text embeddings); similarities between
frames are cosine similarities of the frame embeddings (rows are
re-normalised, so unnormalised embeddings work too); every tie is broken in
favour of the earlier frame; query-aware selectors return the relevance of the
chosen frames as :attr:`Selection.scores`. Where an algorithm can stop short of
``k`` (a DPP whose kernel has rank < k, NMS whose window suppresses every
frame), the rest of the budget is filled by the shared rule
:func:`~frameselect.selectors.base.fill_to_k`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from frameselect.errors import SelectionError
from frameselect.parts import Range
from frameselect.registry import selectors
from frameselect.selectors._classical_common import _check_fraction, _descending, _embeddings, _unit_rows
from frameselect.selectors.base import Scored, Selector, fill_to_k, normalize_minmax
from frameselect.selectors.diversity import (
    DPP,
    DPPDiverse,
    FacilityLocation,
    KMeans,
    dpp_greedy,
    facility_location_greedy,
    kmeans_centroids,
    kmeans_plus_plus,
)
from frameselect.types import CandidatePool, Features, Query

__all__ = [
    "TopK",
    "MMR",
    "KMeans",
    "DPP",
    "DPPDiverse",
    "FacilityLocation",
    "Stratified",
    "TemporalNMS",
    "topk_indices",
    "mmr_greedy",
    "kmeans_plus_plus",
    "kmeans_centroids",
    "dpp_greedy",
    "facility_location_greedy",
    "stratified_top1",
    "temporal_nms",
]


# -- shared helpers -----------------------------------------------------------


# -- top-k --------------------------------------------------------------------


def topk_indices(relevance: NDArray[np.floating], k: int) -> list[int]:
    """The ``k`` most relevant frames, ascending (earlier frame first on ties).

    >>> topk_indices(np.array([0.1, 0.9, 0.5, 0.9]), 2)
    [1, 3]
    """
    return sorted(int(i) for i in _descending(relevance)[:k])


@selectors.register("topk")
@dataclass(frozen=True)
class TopK(Selector):
    """Top-k query relevance: the ``k`` frames whose relevance is highest.

    The classical retrieval baseline (rank by query-document similarity;
    Salton & McGill, *Introduction to Modern Information Retrieval*, 1983),
    as used by CLIP-similarity frame retrieval. No hyper-parameters; ties go
    to the earlier frame.
    """

    needs = frozenset({"relevance"})

    def _select(self, pool: CandidatePool, query: Query | None, k: int, features: Features, rng: np.random.Generator) -> Scored:
        rel = features.relevance()
        idx = topk_indices(rel, k)
        return Scored(idx, [float(rel[i]) for i in idx])


# -- MMR ----------------------------------------------------------------------


def mmr_greedy(embeddings: NDArray[np.floating], relevance: NDArray[np.floating], k: int, lam: float = 0.5) -> list[int]:
    """Maximal Marginal Relevance, in the order the frames are picked.

    Each step adds ``argmax_i [lam * rel_i - (1 - lam) * max_{j in S} cos(x_i, x_j)]``
    over the frames not yet chosen; the first step (``S`` empty) takes the most
    relevant frame. Earlier frame first on ties.

    >>> x = np.array([[1.0, 0.0], [1.0, 0.0], [0.0, 1.0]])
    >>> mmr_greedy(x, np.array([0.9, 0.8, 0.3]), 2)
    [0, 2]
    """
    x = _unit_rows(embeddings)
    rel = np.asarray(relevance, dtype=np.float64)
    n = x.shape[0]
    k = min(k, n)
    chosen = [int(_descending(rel)[0])]
    max_sim = (x @ x[chosen[0]]).astype(np.float64)
    taken = np.zeros(n, dtype=bool)
    taken[chosen[0]] = True
    while len(chosen) < k:
        score = lam * rel - (1.0 - lam) * max_sim
        score[taken] = -np.inf
        i = int(np.argmax(score))
        chosen.append(i)
        taken[i] = True
        max_sim = np.maximum(max_sim, x @ x[i])
    return chosen


@selectors.register("mmr")
@dataclass(frozen=True)
class MMR(Selector):
    """Maximal Marginal Relevance: relevant frames, each unlike those already chosen.

    Carbonell & Goldstein, "The use of MMR, diversity-based reranking for
    reordering documents and producing summaries", SIGIR 1998:
    ``MMR = argmax_{D_i in R \\ S} [λ Sim1(D_i, Q) - (1 - λ) max_{D_j in S} Sim2(D_i, D_j)]``.
    Here Sim1 is the frame's query relevance and Sim2 the cosine similarity
    of frame embeddings; ``lam`` (λ) defaults to 0.5. The paper fixes no
    scale for Sim1; precomputed scores on another scale than cosine can be
    min-max normalised to [0, 1] first with ``normalize=True`` (off by
    default, which is the paper's form).
    """

    param_ranges = {"lam": Range(ge=0, le=1)}

    needs = frozenset({"embeddings", "relevance"})
    lam: float = 0.5
    normalize: bool = False

    def __post_init__(self) -> None:
        _check_fraction("mmr lam", self.lam)

    def _select(self, pool: CandidatePool, query: Query | None, k: int, features: Features, rng: np.random.Generator) -> Scored:
        rel = features.relevance()
        rel_used = normalize_minmax(rel) if self.normalize else rel
        idx = sorted(mmr_greedy(_embeddings(features), rel_used, k, self.lam))
        return Scored(idx, [float(rel[i]) for i in idx])


# -- k-means ------------------------------------------------------------------


# -- DPP ----------------------------------------------------------------------


# -- facility location --------------------------------------------------------


# -- stratified ---------------------------------------------------------------


def stratified_top1(timestamps: NDArray[np.floating], relevance: NDArray[np.floating], k: int) -> list[int]:
    """The most relevant frame in each of ``k`` equal time segments, ascending.

    Segment ``j`` is ``[t0 + j·T/k, t0 + (j+1)·T/k)`` (the last one closed),
    ``T = t_last - t0`` the pool's time span. Segments holding no frame
    contribute nothing, so fewer than ``k`` may come back. Earlier frame
    first on ties.

    >>> stratified_top1(np.arange(6.0), np.array([1, 3, 2, 0, 5, 4.0]), 2)
    [1, 4]
    """
    ts = np.asarray(timestamps, dtype=np.float64)
    rel = np.asarray(relevance, dtype=np.float64)
    span = float(ts[-1] - ts[0])
    if span > 0:
        segment = np.minimum(np.floor((ts - ts[0]) / span * k), k - 1).astype(int)
    else:
        segment = np.zeros(ts.shape[0], dtype=int)
    wanted = len(np.unique(segment))
    chosen: list[int] = []
    for i in _descending(rel):  # the first frame met in a segment is its most relevant
        if segment[i] >= 0:
            chosen.append(int(i))
            if len(chosen) == wanted:
                break
            segment[segment == segment[i]] = -1
    return sorted(chosen)


@selectors.register("stratified")
@dataclass(frozen=True)
class Stratified(Selector):
    """Temporally stratified top-1: split the pool's time span into k equal segments, take the most relevant frame of each.

    Stratified sampling (Neyman 1934) with the query relevance choosing the
    representative of each stratum: uniform coverage of the timeline, query
    awareness inside each segment. Segments are equal in time, not in frame
    count; a segment with no candidate frame (irregular pools) leaves its
    slot to the most relevant frames not yet chosen (the shared fill rule).
    """

    needs = frozenset({"relevance"})

    def _select(self, pool: CandidatePool, query: Query | None, k: int, features: Features, rng: np.random.Generator) -> Scored:
        rel = features.relevance()
        idx = fill_to_k(stratified_top1(pool.timestamps, rel, k), k, len(pool), priority=rel)
        return Scored(idx, [float(rel[i]) for i in idx])


# -- temporal NMS -------------------------------------------------------------


def temporal_nms(timestamps: NDArray[np.floating], relevance: NDArray[np.floating], k: int, window: float) -> list[int]:
    """Greedy non-maximum suppression on the timeline, ascending.

    Frames are visited by descending relevance; a frame is kept unless it
    lies less than ``window`` seconds from a frame already kept. Stops at
    ``k`` frames; may return fewer when the window suppresses the rest.

    >>> temporal_nms(np.arange(6.0), np.array([0, 5, 4, 1, 3, 2.0]), 3, window=2.0)
    [1, 4]
    """
    ts = np.asarray(timestamps, dtype=np.float64)
    suppressed = np.zeros(ts.shape[0], dtype=bool)
    order = np.argsort(ts, kind="stable")
    sorted_ts = ts[order]
    chosen: list[int] = []
    for i in _descending(relevance):
        if suppressed[i]:
            continue
        chosen.append(int(i))
        if len(chosen) == k:
            break
        lo = np.searchsorted(sorted_ts, ts[i] - window, side="right")
        hi = np.searchsorted(sorted_ts, ts[i] + window, side="left")
        suppressed[order[lo:hi]] = True
    return sorted(chosen)


@selectors.register("temporal_nms")
@dataclass(frozen=True)
class TemporalNMS(Selector):
    """Top-k relevance with temporal non-maximum suppression.

    Greedy NMS as in object detection (Neubeck & Van Gool, ICPR 2006), applied
    to the timeline: keep the most relevant frame, suppress every frame less
    than ``window`` seconds from it, repeat. ``window`` defaults to 2.0 s,
    which at a 1-fps pool rules out adjacent frames; ``window=0`` is plain
    top-k. If suppression leaves fewer than k frames, the budget is filled
    with the most relevant suppressed frames (the shared fill rule).
    """

    param_ranges = {"window": Range(ge=0)}

    needs = frozenset({"relevance"})
    window: float = 2.0

    def __post_init__(self) -> None:
        if isinstance(self.window, bool) or not isinstance(self.window, (int, float)) or not math.isfinite(self.window) or self.window < 0:
            raise SelectionError(f"temporal_nms window must be a finite number of seconds >= 0, got {self.window!r}")

    def _select(self, pool: CandidatePool, query: Query | None, k: int, features: Features, rng: np.random.Generator) -> Scored:
        rel = features.relevance()
        idx = fill_to_k(temporal_nms(pool.timestamps, rel, k, float(self.window)), k, len(pool), priority=rel)
        return Scored(idx, [float(rel[i]) for i in idx])
