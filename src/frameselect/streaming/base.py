"""The streaming selector interface: frames seen once, a bounded memory, questions at any time.

A streaming selector watches a stream one frame at a time. After
:meth:`StreamingSelector.start` (which also resets it, so one instance runs
many streams), each :meth:`~StreamingSelector.observe` hands it one frame's
embedding (a 1-D, L2-normalised float vector) and its stream time; it decides
then, before the next frame arrives, what to keep, and never holds more than
``memory`` frames. :meth:`~StreamingSelector.select` answers a question asked
at time ``now`` from what it holds: ``min(k, held)`` frames, none later than
``now``, as a :class:`StreamSelection` of stream frame numbers (0 for the
first frame observed) and times.

Two settings, declared by each part in ``settings``:

- ``"monitoring"``: the question is known before the stream starts and given to
  ``start(query)``; the memory may use it (a part that cannot work without it
  declares ``needs_query``);
- ``"later"``: the question arrives while the stream plays; the memory must not
  depend on it (``start()`` without a query).

Frames are numbered in the order they are observed; a time that does not
increase is refused with :class:`StreamOrderError`.

Writing a new streaming selector takes a few lines: subclass
:class:`StreamingSelector`, keep hyper-parameters as constructor arguments
(attributes of the same names), and implement ``_observe`` with the memory
:class:`HeldFrames` the base class gives (``self._frames``).
"""

from __future__ import annotations

import math
import time as _time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
from numpy.typing import ArrayLike, NDArray

from frameselect.errors import SelectionError
from frameselect.parts import Part, Range, check_budget

__all__ = [
    "SETTINGS",
    "HeldFrames",
    "StreamingSelector",
    "StreamOrderError",
    "StreamSelection",
    "StreamStateError",
    "check_setting",
    "spread",
    "top_by_relevance",
]

#: the settings a streaming selector may support
SETTINGS = frozenset({"monitoring", "later"})


class StreamOrderError(SelectionError):
    """A frame's time did not increase, or a time is not a finite number."""


class StreamStateError(SelectionError):
    """The selector was used out of order (``observe`` before ``start``) or in a setting it does not support."""


@dataclass(frozen=True)
class StreamSelection:
    """Frames chosen from a stream's memory at time ``now``.

    ``indices``: stream frame numbers (the order of ``observe`` calls, from 0),
    ascending; ``timestamps``: their stream times; ``held``: how many frames
    the memory held at or before ``now`` when the question was asked.
    """

    indices: tuple[int, ...]
    timestamps: tuple[float, ...]
    now: float
    held: int = 0
    scores: tuple[float, ...] | None = None
    selector: str = ""
    latency_s: float = 0.0

    def __post_init__(self) -> None:
        object.__setattr__(self, "indices", tuple(int(i) for i in self.indices))
        object.__setattr__(self, "timestamps", tuple(float(t) for t in self.timestamps))
        if self.scores is not None:
            object.__setattr__(self, "scores", tuple(float(s) for s in self.scores))

    def __len__(self) -> int:
        return len(self.indices)


class HeldFrames:
    """The frames a memory holds: slots of (frame number, time, embedding), allocated once.

    ``capacity`` slots are allocated when the first frame arrives (its size
    fixes the embedding size), so the memory a stream uses does not grow
    with its length.
    """

    def __init__(self, capacity: int) -> None:
        self.capacity = int(capacity)
        self.ids = np.full(self.capacity, -1, dtype=np.int64)
        self.times = np.zeros(self.capacity, dtype=np.float64)
        self.embeddings = np.zeros((self.capacity, 0), dtype=np.float32)
        self.used = np.zeros(self.capacity, dtype=bool)
        self._free = list(range(self.capacity - 1, -1, -1))

    def allocate(self, dim: int) -> None:
        self.embeddings = np.zeros((self.capacity, dim), dtype=np.float32)

    def __len__(self) -> int:
        return self.capacity - len(self._free)

    def add(self, frame: int, t: float, embedding: NDArray[Any]) -> int:
        if not self._free:
            raise RuntimeError(f"memory of {self.capacity} frames is full; remove a frame first")
        slot = self._free.pop()
        self.ids[slot], self.times[slot], self.used[slot] = frame, t, True
        self.embeddings[slot] = embedding
        return slot

    def remove(self, slot: int) -> None:
        if not self.used[slot]:
            raise RuntimeError(f"slot {slot} holds no frame")
        self.used[slot] = False
        self.ids[slot] = -1
        self._free.append(int(slot))

    def replace(self, slot: int, frame: int, t: float, embedding: NDArray[Any]) -> None:
        self.ids[slot], self.times[slot] = frame, t
        self.embeddings[slot] = embedding

    def slots(self) -> NDArray[np.int64]:
        """The used slots, in stream order (ascending frame number)."""
        used = np.flatnonzero(self.used)
        return used[np.argsort(self.ids[used], kind="stable")]


def spread(n: int, k: int) -> NDArray[np.int64]:
    """``min(k, n)`` positions evenly spread over ``0..n-1`` (both ends included).

    >>> spread(10, 4).tolist()
    [0, 3, 6, 9]
    >>> spread(3, 5).tolist()
    [0, 1, 2]
    """
    k = min(k, n)
    if k <= 0:
        return np.zeros(0, dtype=np.int64)
    if k == 1:
        return np.array([(n - 1) // 2], dtype=np.int64)
    return np.floor(np.linspace(0.0, n - 1.0, k) + 0.5).astype(np.int64)


def top_by_relevance(relevance: NDArray[Any], k: int) -> NDArray[np.int64]:
    """The positions of the ``min(k, n)`` highest values (ties: the earlier position), ascending."""
    order = np.lexsort((np.arange(relevance.shape[0]), -np.asarray(relevance, dtype=np.float64)))
    return np.sort(order[: min(k, relevance.shape[0])])


def _vector(name: str, value: ArrayLike, dim: int | None) -> NDArray[np.float64]:
    arr = np.asarray(value, dtype=np.float64)
    if arr.ndim != 1 or arr.shape[0] == 0:
        raise SelectionError(f"{name} must be a non-empty 1-D vector, got shape {arr.shape}")
    if dim is not None and arr.shape[0] != dim:
        raise SelectionError(f"{name} has {arr.shape[0]} values, but the stream's frame embeddings have {dim}; use the same encoder for frames and question")
    if not np.all(np.isfinite(arr)):
        raise SelectionError(f"{name} contains NaN or infinite values; clean the features before streaming them")
    return arr


class StreamingSelector(Part):
    """Base class of streaming selectors. Constructor arguments are hyper-parameters; ``memory`` bounds the frames held."""

    kind: ClassVar[str] = "streaming"
    #: the settings this part supports: "monitoring" (question known at start), "later" (question arrives later)
    settings: ClassVar[frozenset[str]] = SETTINGS
    #: the memory cannot work without the question's embedding at start (monitoring only)
    needs_query: ClassVar[bool] = False
    #: the part has a mode that follows its reference code (it then takes a ``reference_exact`` argument)
    supports_reference_exact: ClassVar[bool] = False
    reference_exact = False
    param_ranges: ClassVar[Mapping[str, Range]] = {"memory": Range(ge=1, integer=True)}

    memory: int

    def __init__(self, memory: int = 64) -> None:
        self.memory = memory
        self._started = False

    # -- what subclasses implement -------------------------------------------------
    def _capacity(self) -> int:
        """Slots to allocate: the memory bound, plus any a part fills for a moment inside one ``observe``."""
        return int(self.memory)

    def _start(self) -> None:
        """Reset the part's own state (the base class has reset frames, clock and rng)."""

    def _observe(self, frame: int, t: float, embedding: NDArray[np.float64]) -> None:
        raise NotImplementedError

    def _choose(self, slots: NDArray[np.int64], query: NDArray[np.float64] | None, k: int, now: float) -> tuple[NDArray[np.int64], NDArray[np.float64] | None]:
        """Slots to answer with (of ``slots``: the held frames at or before ``now``, in stream order), and their scores.

        Default: with a question, the ``k`` most relevant (embedding · question);
        without, ``k`` spread evenly over the held frames in stream order.
        """
        if query is not None:
            rel = self._frames.embeddings[slots].astype(np.float64) @ query
            pos = top_by_relevance(rel, k)
            return slots[pos], rel[pos]
        return slots[spread(len(slots), k)], None

    # -- the protocol -----------------------------------------------------------
    def start(self, query: ArrayLike | None = None, *, seed: int = 0) -> None:
        """Begin a new stream (forgetting any earlier one); ``query``: the question's embedding in the monitoring setting."""
        if query is not None and "monitoring" not in self.settings:
            raise StreamStateError(
                f"streaming selector {self.name!r} keeps a query-agnostic memory; start it without a query and pass the question to select()"
            )
        if query is None and self.needs_query:
            raise StreamStateError(
                f"streaming selector {self.name!r} needs the question before the stream starts (monitoring setting): call start(query=<question embedding>)"
            )
        self._query = None if query is None else _vector("query embedding", query, None)
        self._seed = int(seed)
        self._rng = np.random.default_rng(self._seed)
        self._count = 0
        self._last: float | None = None
        self._dim: int | None = None if self._query is None else int(self._query.shape[0])
        self._frames = HeldFrames(self._capacity())
        self._started = True
        self._start()

    def reset(self, query: ArrayLike | None = None, *, seed: int = 0) -> None:
        """The same as :meth:`start`."""
        self.start(query, seed=seed)

    @property
    def held(self) -> int:
        """How many frames the memory holds now."""
        return len(self._frames) if self._started else 0

    @property
    def observed(self) -> int:
        """How many frames were observed since :meth:`start`."""
        return self._count if self._started else 0

    def held_frames(self) -> tuple[NDArray[np.int64], NDArray[np.float64]]:
        """The frame numbers and times the memory holds, in stream order."""
        self._require_started("held_frames")
        slots = self._frames.slots()
        return self._frames.ids[slots].copy(), self._frames.times[slots].copy()

    def observe(self, embedding: ArrayLike, time: float) -> None:
        """Show the part one frame: its embedding and its stream time (seconds, increasing)."""
        self._require_started("observe")
        t = self._check_time(time)
        emb = _vector(f"embedding of frame {self._count} (t={t:g})", embedding, self._dim)
        if self._dim is None:
            self._dim = int(emb.shape[0])
        if self._frames.embeddings.shape[1] != self._dim:
            self._frames.allocate(self._dim)
        frame = self._count
        self._observe(frame, t, emb)
        self._count += 1
        self._last = t

    def select(self, query: ArrayLike | None, k: int, now: float, *, question: Any = None) -> StreamSelection:
        """``min(k, held at or before now)`` frames for a question asked at ``now``.

        ``query``: the question's embedding (``None``: the one given to
        :meth:`start`, if any); ``question``: the question itself
        (a :class:`~frameselect.types.Query`), for parts that read it.
        """
        self._require_started("select")
        k = check_budget(k)
        if isinstance(now, bool) or not isinstance(now, (int, float, np.integer, np.floating)) or not math.isfinite(float(now)):
            raise StreamOrderError(f"the question's time now={now!r} must be a finite number of seconds")
        now = float(now)
        q = self._query if query is None else _vector("query embedding", query, self._dim)
        slots = self._frames.slots()
        slots = slots[self._frames.times[slots] <= now]
        start = _time.perf_counter()
        chosen, scores = self._choose(slots, q, k, now) if len(slots) else (np.zeros(0, dtype=np.int64), None)
        latency = _time.perf_counter() - start
        order = np.argsort(self._frames.ids[chosen], kind="stable")
        chosen = chosen[order]
        return StreamSelection(
            indices=tuple(self._frames.ids[chosen].tolist()),
            timestamps=tuple(self._frames.times[chosen].tolist()),
            now=now,
            held=int(len(slots)),
            scores=None if scores is None else tuple(np.asarray(scores)[order].tolist()),
            selector=self.name,
            latency_s=latency,
        )

    # -- helpers ------------------------------------------------------------------
    def _require_started(self, what: str) -> None:
        if not self._started:
            raise StreamStateError(f"streaming selector {self.name!r}: call start() before {what}() (start() also resets it for a new stream)")

    def _check_time(self, time: Any) -> float:
        if isinstance(time, bool) or not isinstance(time, (int, float, np.integer, np.floating)) or not math.isfinite(float(time)):
            raise StreamOrderError(f"frame {self._count}: its time {time!r} must be a finite number of seconds")
        t = float(time)
        if self._last is not None and t <= self._last:
            raise StreamOrderError(
                f"frame {self._count}: time {t:g} s does not come after the previous frame's {self._last:g} s; "
                "stream times must increase (call start() to begin a new stream)"
            )
        return t

    def __repr__(self) -> str:
        from frameselect.parts import part_id

        return part_id(self)


def check_setting(selector: StreamingSelector, setting: str) -> None:
    """Raise :class:`StreamStateError` unless ``selector`` supports ``setting`` ("monitoring" or "later")."""
    if setting not in SETTINGS:
        raise StreamStateError(f"unknown streaming setting {setting!r}; known: {', '.join(sorted(SETTINGS))}")
    if setting not in selector.settings:
        raise StreamStateError(
            f"streaming selector {selector.name!r} supports {', '.join(sorted(selector.settings))} only, not {setting!r}"
            + (": it needs the question before the stream starts" if selector.needs_query else "")
        )
