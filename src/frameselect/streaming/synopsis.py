"""A K-means synopsis of the stream, after Flash-VStream's context synopsis memory."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import ClassVar

import numpy as np
from numpy.typing import NDArray

from frameselect.parts import Range
from frameselect.registry import streaming
from frameselect.streaming.base import StreamingSelector, top_by_relevance

__all__ = ["KMeansSynopsis", "weighted_kmeans"]


def weighted_kmeans(
    points: NDArray[np.float64],
    k: int,
    weights: NDArray[np.float64],
    init: Sequence[int] | NDArray[np.int64],
    rng: np.random.Generator,
    *,
    tol: float = 1e-4,
    max_iter: int = 10,
) -> tuple[NDArray[np.float64], NDArray[np.int64], NDArray[np.float64]]:
    """Weighted Lloyd iterations from the centroids ``points[init]``: ``(centroids, labels, cluster weights)``.

    Follows Flash-VStream's ``weighted_kmeans_feature`` (its inner
    ``weighted_kmeans_torch``; repository IVGSZ/Flash-VStream,
    ``flash_vstream/model/compress_functions.py``), quirks included: Euclidean
    assignment (ties: the first centroid); a centroid is its members'
    weighted mean, and an empty cluster's is a point drawn at random (here
    from ``rng``); iterations stop when the centroids moved less than ``tol``
    in total (summed norms), and then the centroids *before* the last update
    are returned, with the labels and weights of that last assignment; after
    ``max_iter`` iterations the last update is returned. The reference draws
    its initial centroids with ``torch.randperm``; here the caller passes them.
    """
    x = np.asarray(points, dtype=np.float64)
    w = np.asarray(weights, dtype=np.float64)
    centroids = x[np.asarray(init, dtype=np.int64)].copy()
    labels = np.zeros(x.shape[0], dtype=np.int64)
    wsum = np.zeros(k)
    for _ in range(max_iter):
        dist = np.sqrt(np.sum((x[:, None, :] - centroids[None, :, :]) ** 2, axis=2))
        labels = np.argmin(dist, axis=1)
        wsum = np.bincount(labels, weights=w, minlength=k).astype(np.float64)
        wx = np.zeros_like(centroids)
        np.add.at(wx, labels, w[:, None] * x)
        new = np.zeros_like(centroids)
        full = wsum > 0
        new[full] = wx[full] / wsum[full, None]
        for j in np.flatnonzero(~full):
            new[j] = x[int(rng.integers(0, x.shape[0]))]
        if float(np.linalg.norm(centroids - new, axis=1).sum()) < tol:
            break
        centroids = new
    return centroids, labels, wsum


@streaming.register("kmeans_synopsis")
class KMeansSynopsis(StreamingSelector):
    """``memory`` K-means centroids of everything seen, each weighted by what it absorbed, each shown by one real frame.

    Source: Zhang et al., "Flash-VStream: Memory-Based Real-Time Understanding
    for Long Video Streams", 2024 (its context synopsis memory); code:
    IVGSZ/Flash-VStream, ``flash_vstream/model/compress_functions.py``
    ``weighted_kmeans_feature`` and ``flash_vstream/model/vstream_arch.py``
    ``embed_video_streaming``, which concatenates the old centroids with the
    new frames' features and clusters them back to ``memory`` centroids.

    As built, one frame at a time: while fewer than ``memory`` clusters are
    held, a frame is a cluster of its own; then each new frame and the held
    centroids (weighted by how many frames each absorbed) are clustered into
    ``memory`` clusters by :func:`weighted_kmeans` (initial centroids drawn from
    the seeded rng, ``iterations`` Lloyd steps at most). ``reference_exact=True``
    weighs every centroid 1, as ``embed_video_streaming`` does (it calls the
    compress function without weights), where the paper weighs by count.

    Ours: a centroid is not a frame, so each cluster is shown by one real frame,
    the representative among its members' representatives nearest to the new
    centroid (ties: the earlier frame); a cluster left empty is dropped.
    ``select``: the ``k`` most relevant representatives for a question
    embedding, else the representatives of the ``k`` heaviest clusters (as
    Flash-VStream retrieves key frames by cluster weight), in stream order.
    Query-agnostic (both settings).
    """

    supports_reference_exact: ClassVar[bool] = True
    param_ranges: ClassVar[Mapping[str, Range]] = {
        "memory": Range(ge=1, integer=True),
        "iterations": Range(ge=1, integer=True),
        "tol": Range(ge=0),
    }

    def __init__(self, memory: int = 16, iterations: int = 10, tol: float = 1e-4, reference_exact: bool = False) -> None:
        super().__init__(memory=memory)
        self.iterations = iterations
        self.tol = tol
        self.reference_exact = reference_exact

    def _capacity(self) -> int:
        return int(self.memory) + 1

    def _start(self) -> None:
        self._centroid = np.zeros((self._capacity(), 0))
        self._weight = np.zeros(self._capacity())

    def _observe(self, frame: int, t: float, embedding: NDArray[np.float64]) -> None:
        if self._centroid.shape[1] != embedding.shape[0]:
            self._centroid = np.zeros((self._capacity(), embedding.shape[0]))
        new = self._frames.add(frame, t, embedding)
        self._centroid[new], self._weight[new] = embedding, 1.0
        if len(self._frames) <= self.memory:
            return
        slots = self._frames.slots()  # stream order: the held clusters, the new frame last
        m = int(self.memory)
        weights = np.ones(len(slots)) if self.reference_exact else self._weight[slots]
        init = self._rng.permutation(len(slots))[:m]
        centroids, labels, wsum = weighted_kmeans(self._centroid[slots], m, weights, init, self._rng, tol=float(self.tol), max_iter=int(self.iterations))
        reps = self._frames.embeddings[slots].astype(np.float64)
        keep: dict[int, int] = {}
        for j in range(m):
            members = np.flatnonzero(labels == j)
            if members.size == 0:
                continue
            gap = np.linalg.norm(reps[members] - centroids[j], axis=1)
            keep[int(slots[members[int(np.argmin(gap))]])] = j
        for slot in slots:
            if int(slot) not in keep:
                self._frames.remove(int(slot))
        for slot, j in keep.items():
            self._centroid[slot], self._weight[slot] = centroids[j], wsum[j]

    def centroids(self) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
        """The held centroids and their weights, in the stream order of their representative frames."""
        self._require_started("centroids")
        slots = self._frames.slots()
        return self._centroid[slots].copy(), self._weight[slots].copy()

    def _choose(self, slots: NDArray[np.int64], query: NDArray[np.float64] | None, k: int, now: float) -> tuple[NDArray[np.int64], NDArray[np.float64] | None]:
        if query is not None:
            rel = self._frames.embeddings[slots].astype(np.float64) @ query
            pos = top_by_relevance(rel, k)
            return slots[pos], rel[pos]
        pos = top_by_relevance(self._weight[slots], k)
        return slots[pos], self._weight[slots][pos]
