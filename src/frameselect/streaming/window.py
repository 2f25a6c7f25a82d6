"""Memories that keep frames as they are: the latest ``memory`` frames, or a uniform sample of the past."""

from __future__ import annotations

from collections import deque

import numpy as np
from numpy.typing import NDArray

from frameselect.registry import streaming
from frameselect.streaming.base import StreamingSelector

__all__ = ["SlidingWindow", "Reservoir"]


@streaming.register("sliding_window")
class SlidingWindow(StreamingSelector):
    """The latest ``memory`` frames (a sliding window over the stream); questions pick ``k`` of them.

    The window is what most streaming video-LLMs keep as their short-term
    memory. It is query-agnostic (both settings). With a question embedding,
    ``select`` returns the ``k`` most relevant held frames, else ``k`` spread
    evenly over the window (the base class's rule).
    """

    def __init__(self, memory: int = 64) -> None:
        super().__init__(memory=memory)

    def _start(self) -> None:
        self._order: deque[int] = deque()

    def _observe(self, frame: int, t: float, embedding: NDArray[np.float64]) -> None:
        if len(self._frames) == self.memory:
            self._frames.remove(self._order.popleft())
        self._order.append(self._frames.add(frame, t, embedding))


@streaming.register("reservoir")
class Reservoir(StreamingSelector):
    """A uniform random sample of ``memory`` frames of everything seen so far (reservoir sampling).

    Source: Vitter, "Random sampling with a reservoir", ACM TOMS 11(1), 1985 —
    Algorithm R: the first ``M`` frames fill the reservoir; frame ``i`` (from
    0) is then kept with probability ``M/(i+1)``, replacing a slot chosen
    uniformly. After ``n`` frames every frame is held with probability
    ``M/n``. Randomness comes from the seed given to ``start``. Query-agnostic.
    """

    def __init__(self, memory: int = 64) -> None:
        super().__init__(memory=memory)

    def _start(self) -> None:
        self._slot_of: list[int] = []  # reservoir position -> memory slot

    def _observe(self, frame: int, t: float, embedding: NDArray[np.float64]) -> None:
        if frame < self.memory:
            self._slot_of.append(self._frames.add(frame, t, embedding))
            return
        j = int(self._rng.integers(0, frame + 1))
        if j < self.memory:
            self._frames.replace(self._slot_of[j], frame, t, embedding)
