"""Incremental k-center by the doubling algorithm: ``memory`` centres that cover the whole stream."""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from frameselect.registry import streaming
from frameselect.streaming.base import StreamingSelector

__all__ = ["StreamKCenter"]


@streaming.register("stream_kcenter")
class StreamKCenter(StreamingSelector):
    """Incremental k-center (the doubling algorithm), ``memory`` = the number of centres ``k``.

    Source: Charikar, Chekuri, Feder, Motwani, "Incremental clustering and
    dynamic information retrieval", STOC 1997 (SIAM J. Comput. 33(6), 2004),
    the doubling algorithm with α = β = 2: an 8-approximation of the
    k-center radius of everything seen so far, in Euclidean distance between
    frame embeddings. No reference code is published; this is our reading
    of the paper.

    As built: while at most ``k`` distinct frames were seen, all are centres.
    The memory keeps a radius ``d`` with two invariants: every frame seen lies
    within ``2d`` of a held centre, and centres are more than ``d`` apart. A new
    frame farther than ``2d`` from every centre becomes a centre; when that
    makes ``k + 1`` centres (pairwise more than ``d`` apart, so the optimum
    radius is at least ``d/2``), ``d`` doubles (the first time, ``d`` becomes
    the smallest distance between the ``k + 1`` centres) and centres merge:
    in stream order, a centre absorbs every later centre within ``d`` of it.
    This repeats until at most ``k`` centres remain; a merged cluster's radius
    stays within ``2d``. The covering radius is then at most ``8·OPT``.

    Query-agnostic (both settings); ``select`` returns the ``k`` most relevant
    centres for a question embedding, else ``k`` spread over the centres in
    stream order.
    """

    def __init__(self, memory: int = 64) -> None:
        super().__init__(memory=memory)

    def _capacity(self) -> int:
        return int(self.memory) + 1  # the (k+1)-th centre exists only inside one observe

    def _start(self) -> None:
        self._radius = 0.0

    @property
    def radius(self) -> float:
        """The current ``d``: every frame seen is within ``2d`` of a held centre."""
        return float(self._radius) if self._started else 0.0

    def _observe(self, frame: int, t: float, embedding: NDArray[np.float64]) -> None:
        slots = self._frames.slots()
        if len(slots):
            dist = np.linalg.norm(self._frames.embeddings[slots].astype(np.float64) - embedding, axis=1)
            if float(dist.min()) <= 2.0 * self._radius:
                return  # covered by a centre: the frame joins its cluster and is not held
        self._frames.add(frame, t, embedding)
        while len(self._frames) > self.memory:
            slots = self._frames.slots()
            emb = self._frames.embeddings[slots].astype(np.float64)
            if self._radius == 0.0:
                sq = np.sum(emb * emb, axis=1)
                gaps = np.sqrt(np.maximum(sq[:, None] + sq[None, :] - 2.0 * emb @ emb.T, 0.0))
                self._radius = float(gaps[np.triu_indices(len(slots), 1)].min())
            else:
                self._radius *= 2.0
            self._merge(slots, emb, self._radius)

    def _merge(self, slots: NDArray[np.int64], emb: NDArray[np.float64], threshold: float) -> None:
        alive = np.ones(len(slots), dtype=bool)
        for i in range(len(slots)):
            if not alive[i]:
                continue
            near = np.linalg.norm(emb[i + 1 :] - emb[i], axis=1) <= threshold
            for j in np.flatnonzero(near & alive[i + 1 :]) + i + 1:
                alive[j] = False
                self._frames.remove(int(slots[j]))
