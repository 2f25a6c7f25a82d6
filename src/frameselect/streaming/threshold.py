"""Keep a frame when it is more relevant to the known question than most frames seen so far."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import ClassVar

import numpy as np
from numpy.typing import NDArray

from frameselect.parts import Range
from frameselect.registry import streaming
from frameselect.streaming.base import StreamingSelector, top_by_relevance

__all__ = ["ThresholdKeeper"]

#: relevance (embedding · question, in [-1, 1]) is counted in this many equal bins
BINS = 2000


@streaming.register("threshold_keeper")
class ThresholdKeeper(StreamingSelector):
    """Query-aware: keep a frame whose relevance beats an adaptive percentile of the stream so far (ours).

    Monitoring setting only: the question's embedding is given to
    ``start(query)``. A frame's relevance is ``embedding · query``. It is kept
    when at least ``percentile`` % of the frames seen before it are less
    relevant (counted on a histogram of 2000 equal bins over [-1, 1], so the
    memory stays bounded: a frame is less relevant when its bin is lower), when
    it is the first frame, or when ``max_gap`` seconds have passed since the
    last kept frame. Keeping a frame into a full memory evicts the held frame
    of lowest relevance (ties: the oldest). ``select`` returns the ``k`` most
    relevant held frames (for the start question, or the one given).
    """

    settings: ClassVar[frozenset[str]] = frozenset({"monitoring"})
    needs_query: ClassVar[bool] = True
    param_ranges: ClassVar[Mapping[str, Range]] = {
        "memory": Range(ge=1, integer=True),
        "percentile": Range(ge=0, le=100),
        "max_gap": Range(gt=0),
    }

    def __init__(self, memory: int = 64, percentile: float = 75.0, max_gap: float = 10.0) -> None:
        super().__init__(memory=memory)
        self.percentile = percentile
        self.max_gap = max_gap

    def _start(self) -> None:
        self._hist = np.zeros(BINS, dtype=np.int64)
        self._seen = 0
        self._last_kept = -math.inf
        self._relevance = np.zeros(self._capacity())

    @staticmethod
    def _bin(r: float) -> int:
        return int(min(max(math.floor((r + 1.0) / 2.0 * BINS), 0), BINS - 1))

    def _observe(self, frame: int, t: float, embedding: NDArray[np.float64]) -> None:
        assert self._query is not None  # start() refuses to begin without it
        r = float(embedding @ self._query)
        b = self._bin(r)
        below = int(self._hist[:b].sum())
        beats = self._seen == 0 or below >= float(self.percentile) / 100.0 * self._seen
        self._hist[b] += 1
        self._seen += 1
        if not (beats or t - self._last_kept >= float(self.max_gap)):
            return
        if len(self._frames) == self.memory:
            slots = self._frames.slots()  # stream order, so the first of equal relevances is the oldest
            self._frames.remove(int(slots[int(np.argmin(self._relevance[slots]))]))
        slot = self._frames.add(frame, t, embedding)
        self._relevance[slot] = r
        self._last_kept = t

    def _choose(self, slots: NDArray[np.int64], query: NDArray[np.float64] | None, k: int, now: float) -> tuple[NDArray[np.int64], NDArray[np.float64] | None]:
        rel = self._relevance[slots] if query is None or query is self._query else self._frames.embeddings[slots].astype(np.float64) @ query
        pos = top_by_relevance(rel, k)
        return slots[pos], rel[pos]
