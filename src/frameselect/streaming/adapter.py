"""Any offline selector, run over a streaming memory when a question arrives."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
from numpy.typing import NDArray

from frameselect.errors import SelectionError
from frameselect.registry import streaming
from frameselect.streaming.base import StreamingSelector

__all__ = ["OfflineAdapter", "STREAMABLE_NEEDS"]

#: what an offline selector may need to run on a memory: a memory holds embeddings, never pixels
STREAMABLE_NEEDS = frozenset({"embeddings", "text", "relevance"})


@streaming.register("offline_adapter")
class OfflineAdapter(StreamingSelector):
    """A registered offline selector (``selector`` with ``params``) run over what a query-agnostic memory (``keep``) holds (ours).

    The memory is the streaming selector ``keep`` (default ``sliding_window``)
    with the same ``memory``. At question time the held frames at or before
    ``now`` become a candidate pool (their stream times, their frame numbers)
    with features from their embeddings: the embeddings, the question's
    embedding as ``text`` and ``embeddings · text`` as relevance, for what the
    selector declares in ``needs``. Only selectors that need embeddings, text,
    relevance or nothing can run on a memory; one that needs decoded frames
    (pixels) is refused when the adapter is created, as is a ``keep`` memory
    that needs the question at start. The selector's randomness is seeded by
    the stream's seed and the number of frames observed.
    """

    def __init__(self, selector: str = "uniform", params: Mapping[str, Any] | None = None, keep: str = "sliding_window", memory: int = 64) -> None:
        super().__init__(memory=memory)
        from frameselect.registry import selectors

        self.selector = selector
        self.params = dict(params or {})
        self.keep = keep
        offline = selectors.create(selector, **self.params)
        pixels = set(offline.needs) - STREAMABLE_NEEDS
        if pixels:
            raise ValueError(
                f"offline_adapter: selector {selector!r} needs {', '.join(sorted(pixels))} (decoded frames), which a stream memory does not hold; "
                f"choose a selector whose needs are among {', '.join(sorted(STREAMABLE_NEEDS))} or none"
            )
        if keep == "offline_adapter":
            raise ValueError("offline_adapter: keep must name a memory (e.g. sliding_window, reservoir, stream_kcenter), not offline_adapter itself")
        inner = streaming.create(keep, memory=memory)
        if inner.needs_query or "later" not in inner.settings:
            raise ValueError(
                f"offline_adapter: keep={keep!r} is a query-aware memory; choose a query-agnostic one (sliding_window, reservoir, stream_kcenter, ...)"
            )
        self._offline = offline
        self._inner = inner

    def _capacity(self) -> int:
        return 0  # the frames are held by the inner memory

    @property
    def held(self) -> int:
        return self._inner.held if self._started else 0

    def held_frames(self) -> tuple[NDArray[np.int64], NDArray[np.float64]]:
        self._require_started("held_frames")
        return self._inner.held_frames()

    def _start(self) -> None:
        self._inner.start(seed=self._seed)

    def _observe(self, frame: int, t: float, embedding: NDArray[np.float64]) -> None:
        self._inner.observe(embedding, t)

    def select(self, query: Any, k: int, now: float, *, question: Any = None) -> Any:
        from frameselect.parts import check_budget
        from frameselect.streaming.base import StreamOrderError, StreamSelection, _vector
        from frameselect.types import CandidatePool, Features, Query

        self._require_started("select")
        k = check_budget(k)
        if isinstance(now, bool) or not isinstance(now, (int, float, np.integer, np.floating)) or not np.isfinite(float(now)):
            raise StreamOrderError(f"the question's time now={now!r} must be a finite number of seconds")
        q = self._query if query is None else _vector("query embedding", query, self._dim)
        frames = self._inner._frames
        slots = frames.slots()
        slots = slots[frames.times[slots] <= float(now)]
        if len(slots) == 0:
            return StreamSelection((), (), now=float(now), held=0, selector=self.name)
        needs = set(self._offline.needs)
        if needs & {"text", "relevance"} and q is None:
            raise SelectionError(f"offline_adapter: selector {self.selector!r} needs the question; pass its embedding to select() or start()")
        emb = frames.embeddings[slots]
        values: dict[str, Any] = {}
        if "embeddings" in needs or "relevance" in needs:
            values["embeddings"] = emb
        if q is not None and needs & {"text", "relevance"}:
            values["text"] = q
        if q is not None and "relevance" in needs:
            values["scores"] = emb.astype(np.float64) @ q
        pool = CandidatePool(video_id="stream", timestamps=frames.times[slots], frame_indices=frames.ids[slots], policy="stream")
        out = self._offline.select(
            pool, question if isinstance(question, Query) else Query(""), k, Features(encoder_id="stream", **values), seed=self._seed + self._count
        )
        chosen = slots[np.asarray(out.indices, dtype=np.int64)]
        return StreamSelection(
            indices=tuple(frames.ids[chosen].tolist()),
            timestamps=tuple(frames.times[chosen].tolist()),
            now=float(now),
            held=int(len(slots)),
            scores=out.scores,
            selector=self.name,
            latency_s=out.latency_s,
        )
