"""QCA: query-conditioned segment quotas with anchored farthest-point sampling.

Reference code: github.com/hktk07/QCA, ``keyframes_select.py``
(``compute_segment_variance_with_softmax``, ``split_second_elements``,
``allocate_and_select_frames_from_softmax``, ``redistribute_segment_quota``,
``farthest_point_sampling_gpu`` and the per-sample body of its ``__main__``).
See :class:`QCA`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np
from numpy.typing import NDArray

from frameselect.errors import SelectionError
from frameselect.parts import Range
from frameselect.registry import selectors
from frameselect.selectors.base import Selector, fill_to_k
from frameselect.types import CandidatePool, Features, Query

__all__ = [
    "QCA",
    "qca_segment_lengths",
    "qca_dispersion_weights",
    "qca_quota",
    "qca_redistribute",
    "qca_candidates",
    "qca_farthest_points",
    "qca_quotas",
    "qca_select",
]

#: the reference's floor for the halving relevance threshold
_MIN_THRESHOLD = 1e-6


def qca_segment_lengths(n: int, segments: int) -> list[int]:
    """Front-heavy split of ``n`` frames into ``segments`` runs (the first ``n % segments`` one longer).

    >>> qca_segment_lengths(10, 4)
    [3, 3, 2, 2]
    """
    base, extra = divmod(n, segments)
    return [base + 1 if i < extra else base for i in range(segments)]


def qca_dispersion_weights(feats: NDArray[np.float32], segments: int, temperature: float = 0.5) -> NDArray[np.float32]:
    """Per-segment weight D_s: softmax over (softmax of mean shift + softmax of covariance trace), all at ``temperature``.

    ``feats`` are L2-normalised float32 frame features; the mean shift is the
    squared distance of the segment mean from the video mean, the trace sums
    the per-dimension sample variances (``ddof=1``; 0 for a one-frame segment).
    """
    from scipy.special import softmax

    global_mean = feats.mean(axis=0)
    shifts, traces = [], []
    start = 0
    for length in qca_segment_lengths(len(feats), segments):
        seg = feats[start : start + length]
        start += length
        shifts.append(float(np.sum((global_mean - seg.mean(axis=0)) ** 2)))
        traces.append(float(np.var(seg, axis=0, ddof=1).sum()) if length > 1 else 0.0)
    fused = softmax(np.asarray(shifts, dtype=np.float32) / temperature) + softmax(np.asarray(traces, dtype=np.float32) / temperature)
    return np.asarray(softmax(fused / temperature), dtype=np.float32)


def qca_quota(n: int, weights: NDArray[np.floating], k: int) -> NDArray[np.int64]:
    """Largest-remainder quotas over equal segments of ``n // len(weights)`` frames (the reference's allocation).

    Floors of ``weights / sum * k_eff`` (``k_eff = min(k, usable frames)``),
    then one more frame per segment in descending fractional part, then
    round-robin in descending weight, never above the equal segment length.
    """
    segments = len(weights)
    per_segment = n // segments
    total = min(int(k), per_segment * segments)
    scores = np.asarray(weights, dtype=np.float64)
    raw = scores / scores.sum() * total
    quota: NDArray[np.int64] = np.floor(raw).astype(np.int64)
    remaining = total - int(quota.sum())
    if remaining > 0:
        for i in np.argsort(-(raw - quota)):  # the reference's default (unstable) sort kind
            if remaining <= 0:
                break
            if quota[i] < per_segment:
                quota[i] += 1
                remaining -= 1
    order = np.argsort(-scores)
    while remaining > 0:
        changed = False
        for i in order:
            if remaining <= 0:
                break
            if quota[i] < per_segment:
                quota[i] += 1
                remaining -= 1
                changed = True
        if not changed:
            break
    return np.asarray(quota, dtype=np.int64)


def qca_redistribute(quota: NDArray[np.int64], capacities: NDArray[np.int64], scores: NDArray[np.floating], k: int) -> NDArray[np.int64]:
    """Cap quotas at segment capacities and hand the excess, up to ``min(k, sum capacities)``, to the best-scored segments with room."""
    caps = np.maximum(np.asarray(capacities, dtype=np.int64), 0)
    out = np.minimum(np.maximum(np.asarray(quota, dtype=np.int64), 0), caps)
    remaining = min(int(k), int(caps.sum())) - int(out.sum())
    for i in np.argsort(-np.asarray(scores, dtype=np.float64), kind="stable"):
        if remaining <= 0:
            break
        add = min(int(caps[i] - out[i]), remaining)
        if add > 0:
            out[i] += add
            remaining -= add
    return out


def qca_candidates(sim: NDArray[np.float32], m: int, gamma: float = 0.5) -> tuple[int, NDArray[np.int64]]:
    """The anchor (best-matching frame) and the candidates at or above a threshold halved until ``m`` qualify.

    The threshold starts at ``gamma * max`` (at ``max`` when ``max <= 0``, which
    then stops at once) and halves while fewer than ``m`` frames pass, down to 1e-6.
    """
    anchor = int(np.argmax(sim))
    top = float(sim.max())
    threshold = top if top <= 0 else gamma * top
    while True:
        cand = np.unique(np.concatenate([[anchor], np.flatnonzero(sim >= threshold)]))
        if len(cand) >= m or threshold <= _MIN_THRESHOLD or len(cand) == len(sim):
            return anchor, np.asarray(cand, dtype=np.int64)
        threshold *= 0.5


def qca_farthest_points(feats: NDArray[np.float32], cand: NDArray[np.int64], anchor: int, m: int) -> list[int]:
    """Farthest-point sampling from ``anchor`` among ``cand`` by squared L2 distance, in float32.

    Distances are ``|x|^2 + |a|^2 - 2 x.a`` as in the reference; it stops early
    when the farthest remaining distance is negative (rounding on
    near-duplicates), so it may return fewer than ``m``. Returns ascending
    local indices (the reference's order, anchor first, is dropped by its final sort).
    """
    if m <= 0 or len(cand) == 0:
        return []
    if len(cand) <= m:
        return [int(i) for i in cand[:m]]
    x = feats[cand].astype(np.float32)
    x2 = (x * x).sum(axis=1)
    selected = np.zeros(len(cand), dtype=bool)
    pos = int(np.flatnonzero(cand == anchor)[0])
    selected[pos] = True
    dist = x2 + x2[pos] - np.float32(2.0) * (x @ x[pos])
    dist[selected] = -1.0
    for _ in range(m - 1):
        best = int(np.argmax(dist))
        if dist[best] < 0:
            break
        selected[best] = True
        dist = np.minimum(dist, x2 + x2[best] - np.float32(2.0) * (x @ x[best]))
        dist[selected] = -1.0
    return [int(i) for i in cand[selected]][:m]


def qca_quotas(
    x: NDArray[np.float32], rel: NDArray[np.float64], k: int, segments: int, beta: float, tau: float, temperature: float
) -> tuple[list[int], NDArray[np.int64], NDArray[np.int64]]:
    """Segment lengths, offsets and frame quotas: dispersion and softmax-matching scores, largest-remainder quota, redistribution.

    ``x``: L2-normalised frame features (float32); ``rel``: per-frame matching scores.
    """
    from scipy.special import softmax

    lengths = qca_segment_lengths(len(x), segments)
    offsets = np.cumsum([0, *lengths[:-1]]).astype(np.int64)
    means = [float(np.mean(rel[o : o + length])) for o, length in zip(offsets, lengths)]
    matching = softmax(np.asarray(means, dtype=np.float32) / tau)
    score = beta * qca_dispersion_weights(x, segments, temperature) + (1 - beta) * matching
    quota = np.asarray(qca_redistribute(qca_quota(len(x), score, k), np.asarray(lengths), score, k), dtype=np.int64)
    return list(lengths), offsets, quota


def qca_select(
    feats: NDArray[np.floating],
    relevance: NDArray[np.floating],
    k: int,
    segments: int = 16,
    gamma: float = 0.5,
    beta: float = 0.5,
    tau: float = 1.0,
    temperature: float = 0.5,
) -> list[int]:
    """QCA as the reference computes one sample: ascending, deduplicated, possibly fewer than ``k``.

    ``feats`` (N, D) are frame features (normalised here as in the
    reference), ``relevance`` (N,) the image-text matching scores of the same
    frames. Needs ``N >= segments``.
    """
    n = len(feats)
    if n < segments:
        raise SelectionError(f"qca needs at least segments={segments} frames, got {n}; lower segments or use a larger pool")
    x = np.asarray(feats, dtype=np.float32)
    x = x / (np.linalg.norm(x, axis=1, keepdims=True) + np.float32(1e-8))
    rel = np.asarray(relevance, dtype=np.float64)
    lengths, offsets, quota = qca_quotas(x, rel, k, segments, beta, tau, temperature)
    out: set[int] = set()
    for offset, length, m in zip(offsets, lengths, quota):
        if m <= 0 or length == 0:
            continue
        sim = rel[offset : offset + length].astype(np.float32)
        anchor, cand = qca_candidates(sim, int(m), gamma)
        out.update(int(offset) + i for i in qca_farthest_points(x[offset : offset + length], cand, anchor, min(int(m), len(cand))))
    return sorted(out)


@selectors.register("qca")
@dataclass(frozen=True)
class QCA(Selector):
    """QCA keyframe selection (hktk07/QCA, ECCV 2026).

    Follows ``keyframes_select.py`` of github.com/hktk07/QCA: the pool
    (the reference's 1-fps frames) is split front-heavy into ``segments``
    runs; each run scores ``beta * D_s + (1 - beta) * M_s`` where D_s is the
    feature-dispersion weight (:func:`qca_dispersion_weights`, temperature
    0.5) and M_s the softmax at ``tau`` of the run's mean image-text matching
    score (here the query relevance); quotas are allocated by largest
    remainder (:func:`qca_quota`) and redistributed past run capacity
    (:func:`qca_redistribute`); in each run the best-matching frame anchors a
    farthest-point sampling (:func:`qca_farthest_points`) among candidates
    above a halving threshold starting at ``gamma`` × the best score. Defaults
    are the reference's: ``segments=16``, ``gamma=0.5``, ``beta=0.5``,
    ``tau=1`` (the reference's ``gemma``, ``beta`` and ``softmax_tau``); its features are BLIP image features with BLIP ITM scores
    (``blip_feature_ITM_score.py``), here the encoder's embeddings and relevance.

    Deviations: the reference runs the distance step in fp16 on CUDA only (it
    skips the sample without CUDA); here it runs in float32 on CPU. fp16
    rounds normalised features and distances to about 1e-3, so near-tied
    distances may resolve differently and near-duplicate frames give
    negative squared distances (ending a segment's sampling early) more
    often there than here. ``reference_exact=True`` returns the reference
    output as is: deduplicated, ascending, possibly shorter than k (a
    segment whose scores are all <= 0 yields only its anchor), and empty
    for a pool shorter than ``segments`` (the reference skips the
    sample, so this returns no frames). The default fills to k with :func:`fill_to_k`, priority =
    relevance, and uses ``min(segments, N)`` runs on short pools.
    """

    param_ranges = {"segments": Range(ge=1, integer=True), "gamma": Range(), "beta": Range(ge=0, le=1), "tau": Range(gt=0), "temperature": Range(gt=0)}

    needs = frozenset({"embeddings", "relevance"})
    segments: int = 16
    gamma: float = 0.5
    beta: float = 0.5
    tau: float = 1.0
    temperature: float = 0.5
    reference_exact: bool = False
    supports_reference_exact: ClassVar[bool] = True

    def _select(self, pool: CandidatePool, query: Query | None, k: int, features: Features, rng: np.random.Generator) -> list[int]:
        if self.segments < 1 or self.tau <= 0 or self.temperature <= 0 or not 0 <= self.beta <= 1:
            raise SelectionError(f"qca needs segments >= 1, tau > 0, temperature > 0 and 0 <= beta <= 1, got {self}")
        assert features.embeddings is not None
        relevance = features.relevance()
        n = len(pool)
        if self.reference_exact and n < self.segments:
            return []
        segments = self.segments if self.reference_exact else min(self.segments, n)
        chosen = qca_select(features.embeddings, relevance, k, segments, self.gamma, self.beta, self.tau, self.temperature)
        if self.reference_exact:
            return chosen
        return fill_to_k(chosen, k, n, priority=relevance)
