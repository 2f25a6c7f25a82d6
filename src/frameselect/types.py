"""Plain, frozen data types passed between the stages of a run.

The flow of one sample (see ``docs/design.md``)::

    Sample -> CandidatePool -> Features -> Selection -> record

Numpy arrays live inside; no torch in the core types. Arrays handed to these
types are copied and marked read-only, so a stage can never mutate another
stage's input.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

import numpy as np
from numpy.typing import NDArray

__all__ = [
    "Span",
    "option_letter",
    "option_letters",
    "Query",
    "Sample",
    "FrameSource",
    "InMemoryFrames",
    "CandidatePool",
    "Features",
    "Selection",
    "Answer",
    "SampleRecord",
]


def _frozen_array(values: Any, dtype: Any) -> NDArray[Any]:
    array = np.array(values, dtype=dtype, copy=True)
    array.setflags(write=False)
    return array


@dataclass(frozen=True)
class Span:
    """A closed time interval ``[start, end]`` in seconds."""

    start: float
    end: float

    def __post_init__(self) -> None:
        if not (np.isfinite(self.start) and np.isfinite(self.end)):
            raise ValueError(f"span bounds must be finite, got [{self.start}, {self.end}]")
        if self.end < self.start:
            raise ValueError(f"span end {self.end} is before its start {self.start}")

    def contains(self, t: float) -> bool:
        return self.start <= t <= self.end

    @property
    def duration(self) -> float:
        return self.end - self.start


def option_letter(index: int) -> str:
    """The letter of the option at ``index``: 0 -> ``"A"``, 1 -> ``"B"``, ... (the one place that maps positions to letters).

    >>> option_letter(0), option_letter(4)
    ('A', 'E')
    """
    return chr(ord("A") + index)


def option_letters(n: int) -> list[str]:
    """The letters of ``n`` options: ``["A", "B", ...]``."""
    return [option_letter(i) for i in range(n)]


@dataclass(frozen=True)
class Query:
    """The question put to the answering model, with its options (may be empty)."""

    text: str
    options: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        object.__setattr__(self, "options", tuple(self.options))


@dataclass(frozen=True)
class Sample:
    """One question about one video.

    ``answer`` is the ground truth: for multiple choice, the option letter
    (``"A"``, ``"B"``, ...). ``evidence`` holds the spans (seconds) where the
    answer can be seen. ``metadata`` is free: question kind, duration group,
    task type, ... and drives table breakdowns.
    """

    id: str
    video: str
    query: Query
    answer: str | None = None
    evidence: tuple[Span, ...] = ()
    metadata: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        object.__setattr__(self, "evidence", tuple(self.evidence))
        object.__setattr__(self, "metadata", dict(self.metadata))


@runtime_checkable
class FrameSource(Protocol):
    """Decoded RGB frames (H, W, 3 uint8) of a pool, by pool index: what a run asks of a video.

    ``size=(w, h)`` asks for frames scaled to that size (pixel-based
    selectors read small frames). :class:`~frameselect.video.decode.VideoFrameSource`
    decodes lazily from a file; :class:`InMemoryFrames` serves frames held in memory.
    """

    def get(self, indices: Sequence[int], size: tuple[int, int] | None = None) -> list[NDArray[np.uint8]]:
        """The frames at these pool indices, in the order asked."""
        ...

    def iter(self, indices: Sequence[int], size: tuple[int, int] | None = None) -> Iterator[tuple[int, NDArray[np.uint8]]]:
        """``(pool_index, frame)`` for each wanted index, ascending, decoded in one pass."""
        ...


class InMemoryFrames(FrameSource):
    """Frames held in memory (tests, notebooks); ``None`` for a features-only pool."""

    def __init__(self, frames: Sequence[NDArray[np.uint8]] | None = None) -> None:
        self._frames = frames

    def get(self, indices: Sequence[int], size: tuple[int, int] | None = None) -> list[NDArray[np.uint8]]:
        frames = self._get(indices)
        return frames if size is None else [_nearest_resize(f, size) for f in frames]

    def _get(self, indices: Sequence[int]) -> list[NDArray[np.uint8]]:
        if self._frames is None:
            raise LookupError("this candidate pool has no frame source (features-only pool)")
        return [np.asarray(self._frames[int(i)]) for i in indices]

    def iter(self, indices: Sequence[int], size: tuple[int, int] | None = None) -> Iterator[tuple[int, NDArray[np.uint8]]]:
        for i in sorted({int(i) for i in indices}):
            frame = self._get([i])[0]
            yield i, frame if size is None else _nearest_resize(frame, size)


def _nearest_resize(frame: NDArray[np.uint8], size: tuple[int, int]) -> NDArray[np.uint8]:
    """``frame`` scaled to ``size=(w, h)`` by nearest neighbour (pixel centres)."""
    h0, w0 = frame.shape[:2]
    w, h = size
    rows = np.minimum(((np.arange(h) + 0.5) * h0 / h).astype(np.int64), h0 - 1)
    cols = np.minimum(((np.arange(w) + 0.5) * w0 / w).astype(np.int64), w0 - 1)
    return np.ascontiguousarray(frame[rows][:, cols])


@dataclass(frozen=True)
class CandidatePool:
    """The frames a selector may choose from.

    ``timestamps`` are exact presentation times in seconds, ascending.
    ``frame_indices`` are the indices of those frames in decoding order of the
    video stream. ``source`` decodes frames on demand.
    """

    video_id: str
    timestamps: NDArray[np.float64]
    frame_indices: NDArray[np.int64]
    policy: str = "all"
    duration: float | None = None
    source: FrameSource | None = field(default=None, compare=False, repr=False)

    def __post_init__(self) -> None:
        ts = _frozen_array(self.timestamps, np.float64)
        fi = _frozen_array(self.frame_indices, np.int64)
        if ts.ndim != 1 or fi.shape != ts.shape:
            raise ValueError("timestamps and frame_indices must be 1-D arrays of equal length")
        object.__setattr__(self, "timestamps", ts)
        object.__setattr__(self, "frame_indices", fi)

    def __len__(self) -> int:
        return int(self.timestamps.shape[0])

    @classmethod
    def from_timestamps(cls, timestamps: Sequence[float] | NDArray[Any], video_id: str = "") -> CandidatePool:
        ts = np.asarray(timestamps, dtype=np.float64)
        return cls(video_id=video_id, timestamps=ts, frame_indices=np.arange(ts.shape[0]), policy="given")

    def frames(self, indices: Sequence[int]) -> list[NDArray[np.uint8]]:
        if self.source is None:
            raise LookupError(f"pool of {self.video_id!r} has no frame source")
        return self.source.get(list(indices))


@dataclass(frozen=True)
class Features:
    """What a selector declared it needs, for one pool.

    ``embeddings``: (N, D) frame embeddings (L2-normalised unless the encoder
    says otherwise); ``text``: (D,) query embedding in the same space;
    ``scores``: (N,) precomputed query-to-frame relevance; ``pixels``:
    (N, h, w, 3) uint8 downscaled frames for pixel-based selectors.
    """

    embeddings: NDArray[np.float32] | None = None
    text: NDArray[np.float32] | None = None
    scores: NDArray[np.float64] | None = None
    pixels: NDArray[np.uint8] | None = None
    encoder_id: str = ""

    def __post_init__(self) -> None:
        for name, dtype in (("embeddings", np.float32), ("text", np.float32), ("scores", np.float64), ("pixels", np.uint8)):
            value = getattr(self, name)
            if isinstance(value, np.memmap) and value.dtype == dtype and not value.flags.writeable:
                continue  # a read-only map of a cache file (pixels): copying would put it all in memory
            if value is not None:
                object.__setattr__(self, name, _frozen_array(value, dtype))

    def relevance(self) -> NDArray[np.float64]:
        """Per-frame query relevance: given ``scores``, else embeddings · text."""
        if self.scores is not None:
            return np.asarray(self.scores, dtype=np.float64)
        if self.embeddings is None or self.text is None:
            raise ValueError("query relevance needs per-frame scores or frame and text embeddings")
        return np.asarray(self.embeddings, dtype=np.float64) @ np.asarray(self.text, dtype=np.float64)


@dataclass(frozen=True)
class Selection:
    """Indices into a :class:`CandidatePool`: unique and ascending, ``min(k, N)`` of them.

    ``reference_exact=True`` marks the output of a selector run in its
    reference-exact mode: the indices are then exactly what the published
    reference code returns for the budget as given, which may be fewer than
    ``min(k, N)`` (even none), more than ``N`` indices, or repeat a frame. Such a
    selection is the reference's output, not a broken contract; checks of
    count and uniqueness skip it (indices are still within the pool).

    ``filled`` counts the indices that the shared fill rule
    (:func:`~frameselect.selectors.base.fill_to_k`) supplied because the
    selector's own method returned fewer frames than the budget; the other
    ``len(indices) - filled`` are the selector's own. A selection made by
    :meth:`Selector.select <frameselect.selectors.base.Selector.select>`
    always carries it (0 when nothing was filled); ``None`` means not known
    (a selection made by hand, or imported from a published file).
    """

    indices: tuple[int, ...]
    scores: tuple[float, ...] | None = None
    selector: str = ""
    latency_s: float = 0.0
    reference_exact: bool = False
    filled: int | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "indices", tuple(int(i) for i in self.indices))
        if self.filled is not None:
            filled = int(self.filled)
            if not 0 <= filled <= len(self.indices):
                raise ValueError(f"a selection of {len(self.indices)} frames cannot have {filled} filled frames")
            object.__setattr__(self, "filled", filled)
        if self.scores is not None:
            object.__setattr__(self, "scores", tuple(float(s) for s in self.scores))

    def __len__(self) -> int:
        return len(self.indices)

    def timestamps(self, pool: CandidatePool) -> list[float]:
        return [float(pool.timestamps[i]) for i in self.indices]


def _windows(values: Any, what: str) -> tuple[tuple[float, float], ...] | None:
    """``values`` as a tuple of ``(start, end)`` float pairs (None stays None); lists read from JSON become tuples."""
    if values is None:
        return None
    windows = []
    for pair in values:
        start, end = (float(v) for v in pair)
        if not (np.isfinite(start) and np.isfinite(end)) or end < start:
            raise ValueError(f"{what}: a window is (start, end) seconds with start <= end, got {tuple(pair)!r}")
        windows.append((start, end))
    return tuple(windows)


@dataclass(frozen=True)
class Answer:
    """What an answering backend said about one sample.

    ``windows`` are the time windows ``(start, end)`` in seconds the answer
    names, in the order the model gave them (the first is its best): None when
    the question asked for none (see :mod:`frameselect.windows`), ``()`` when
    it asked and the reply held none.
    """

    text: str
    latency_s: float = 0.0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    model: str = ""
    error: str | None = None
    windows: tuple[tuple[float, float], ...] | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "windows", _windows(self.windows, "Answer.windows"))


@dataclass(frozen=True)
class SampleRecord:
    """The per-sample result of a run: metric values and what produced them."""

    sample_id: str
    metrics: Mapping[str, float]
    status: str = "ok"  # "ok" or "failed"
    error: str | None = None
    answer: str | None = None
    selection: tuple[int, ...] = ()
    timestamps: tuple[float, ...] = ()
    k: int = 0
    policy: str = ""
    metadata: Mapping[str, Any] = field(default_factory=dict)
    #: the time windows (seconds) the answer named (:attr:`Answer.windows`)
    answer_windows: tuple[tuple[float, float], ...] | None = None
    #: frames of ``selection`` supplied by the fill rule (:attr:`Selection.filled`); None: not known
    filled: int | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "metrics", dict(self.metrics))
        object.__setattr__(self, "metadata", dict(self.metadata))
        object.__setattr__(self, "answer_windows", _windows(self.answer_windows, "SampleRecord.answer_windows"))
