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
    "VideoRef",
    "Sample",
    "MultiSelection",
    "FrameSource",
    "InMemoryFrames",
    "CandidatePool",
    "Features",
    "Selection",
    "Answer",
    "VideoFrames",
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
class VideoRef:
    """One video of a question: its id within the sample, its path and its evidence spans (seconds).

    ``id`` is unique within one sample (``"video_1"``, ``"video_2"``, ... for
    the loaders and the suite); it keys per-video pools, features and
    selections (:class:`MultiSelection`).
    """

    id: str
    path: str
    evidence: tuple[Span, ...] = ()

    def __post_init__(self) -> None:
        if not isinstance(self.id, str) or not self.id or self.id != self.id.strip():
            raise ValueError(f"a video's id must be a non-empty string without surrounding spaces, got {self.id!r}")
        object.__setattr__(self, "evidence", tuple(self.evidence))


@dataclass(frozen=True)
class Sample:
    """One question about one video, or about an ordered list of videos.

    ``answer`` is the ground truth: for multiple choice, the option letter
    (``"A"``, ``"B"``, ...). ``evidence`` holds the spans (seconds) where the
    answer can be seen. ``metadata`` is free: question kind, duration group,
    task type, ... and drives table breakdowns.

    A question over several videos names them in ``videos`` (in order; build
    it with :meth:`across`): ``video`` and ``evidence`` are then the first
    video's, so a part that reads one video still sees a valid sample. A
    one-video sample leaves ``videos`` empty; :attr:`video_refs` gives the
    videos of either kind as :class:`VideoRef` s.

    ``asked_at`` (seconds of stream time) is set for a question asked at a
    moment of a stream: only frames up to that moment may be used to answer
    it (:mod:`frameselect._engine.evaluate_stream`). ``None`` (the default): the
    question is about the whole video.
    """

    id: str
    video: str
    query: Query
    answer: str | None = None
    evidence: tuple[Span, ...] = ()
    metadata: Mapping[str, Any] = field(default_factory=dict)
    #: the videos of a question over several videos, in order; empty for one video
    #: (an empty value stays out of the fingerprint, so one-video datasets keep their ids)
    videos: tuple[VideoRef, ...] = field(default=(), metadata={"fingerprint_omit_empty": True})
    #: when the question is asked in a stream (seconds); None: after the whole video
    #: (None stays out of the fingerprint, so datasets without it keep their ids)
    asked_at: float | None = field(default=None, metadata={"fingerprint_omit_empty": True})

    def __post_init__(self) -> None:
        object.__setattr__(self, "evidence", tuple(self.evidence))
        object.__setattr__(self, "metadata", dict(self.metadata))
        if self.asked_at is not None:
            if (
                isinstance(self.asked_at, bool)
                or not isinstance(self.asked_at, (int, float, np.integer, np.floating))
                or not np.isfinite(self.asked_at)
                or self.asked_at < 0
            ):
                raise ValueError(f"sample {self.id!r}: asked_at must be a finite number of seconds ≥ 0 or None, got {self.asked_at!r}")
            object.__setattr__(self, "asked_at", float(self.asked_at))
        videos = tuple(self.videos)
        object.__setattr__(self, "videos", videos)
        if videos:
            if not all(isinstance(v, VideoRef) for v in videos):
                raise ValueError(f"sample {self.id!r}: videos must be VideoRef values")
            ids = [v.id for v in videos]
            if len(set(ids)) != len(ids):
                raise ValueError(f"sample {self.id!r}: video ids must be unique within a sample, got {ids}")
            if self.video != videos[0].path or self.evidence != videos[0].evidence:
                raise ValueError(f"sample {self.id!r}: video and evidence must be the first video's; build the sample with Sample.across(...)")

    @classmethod
    def across(
        cls,
        id: str,
        videos: Sequence[VideoRef],
        query: Query,
        answer: str | None = None,
        metadata: Mapping[str, Any] | None = None,
    ) -> Sample:
        """A question over ``videos`` (in order); ``video`` and ``evidence`` become the first video's.

        >>> s = Sample.across("q", [VideoRef("video_1", "a.mp4"), VideoRef("video_2", "b.mp4")], Query("which?"))
        >>> s.video, [v.id for v in s.video_refs], s.is_multi_video
        ('a.mp4', ['video_1', 'video_2'], True)
        """
        refs = tuple(videos)
        if not refs:
            raise ValueError(f"sample {id!r}: a question over several videos needs at least one video")
        return cls(id=id, video=refs[0].path, query=query, answer=answer, evidence=refs[0].evidence, metadata=dict(metadata or {}), videos=refs)

    @property
    def video_refs(self) -> tuple[VideoRef, ...]:
        """The sample's videos in order: ``videos``, or the one video as ``VideoRef("video_1", video, evidence)``."""
        return self.videos or (VideoRef(SINGLE_VIDEO_ID, self.video, self.evidence),)

    @property
    def is_multi_video(self) -> bool:
        return len(self.videos) > 1


#: the id :attr:`Sample.video_refs` gives the one video of a one-video sample
SINGLE_VIDEO_ID = "video_1"


@runtime_checkable
class FrameSource(Protocol):
    """Decoded RGB frames (H, W, 3 uint8) of a pool, by pool index: what a run asks of a video.

    ``size=(w, h)`` asks for frames scaled to that size (pixel-based
    selectors read small frames). :class:`~frameselect._core.video.source.VideoFrameSource`
    decodes lazily from a file; :class:`InMemoryFrames` serves frames held in memory.

    :meth:`candidate_time_errors` is each candidate's time error in seconds (actual -
    target) where the source knows it (a pool addressed by time in a video file), else
    ``None`` (the default of sources that derive from this protocol).
    """

    def candidate_time_errors(self) -> NDArray[np.float64] | None:
        """Each candidate's time error in seconds (actual - target), or ``None`` when this source does not know it."""
        return None

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

    ``sizes`` gives, per selected frame, the ``(height, width)`` the answerer
    receives it at (a run at a token budget, or a mixed-resolution selector);
    ``None``: every frame as decoded. ``tokens`` is what the frames cost the
    answering model (:mod:`frameselect.tokens`) where a cost model is known.
    ``scales`` is what a mixed-resolution selector asks for, per selected
    frame: the fraction of the decoded size it is sent at (1.0: as decoded);
    the run turns it into ``sizes`` (:func:`frameselect._engine.token_runs.sized_selection`).
    """

    indices: tuple[int, ...]
    scores: tuple[float, ...] | None = None
    selector: str = ""
    latency_s: float = 0.0
    reference_exact: bool = False
    filled: int | None = None
    sizes: tuple[tuple[int, int], ...] | None = None
    tokens: int | None = None
    scales: tuple[float, ...] | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "indices", tuple(int(i) for i in self.indices))
        if self.scales is not None:
            scales = tuple(float(x) for x in self.scales)
            if len(scales) != len(self.indices) or not all(0.0 < x <= 1.0 for x in scales):
                raise ValueError(f"a selection of {len(self.indices)} frames needs as many scales in (0, 1], got {self.scales!r}")
            object.__setattr__(self, "scales", scales)
        if self.sizes is not None:
            sizes = tuple((int(h), int(w)) for h, w in self.sizes)
            if len(sizes) != len(self.indices) or any(h < 1 or w < 1 for h, w in sizes):
                raise ValueError(f"a selection of {len(self.indices)} frames needs as many (height, width) sizes of at least 1 pixel, got {self.sizes!r}")
            object.__setattr__(self, "sizes", sizes)
        if self.tokens is not None:
            object.__setattr__(self, "tokens", int(self.tokens))
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


@dataclass(frozen=True)
class MultiSelection:
    """The selections of a question over several videos: one :class:`Selection` per video, in the sample's order.

    ``by_video`` maps each :attr:`VideoRef.id` to the selection made in that
    video's pool (indices into that pool); a video may get an empty selection
    (a budget share of zero). ``budget`` is the total asked for over the
    question's videos.
    """

    by_video: Mapping[str, Selection]
    budget: int = 0
    selector: str = ""
    policy: str = ""
    #: cross-video bindings a joint selector made: ``(video_a, index_a, video_b, index_b)``,
    #: two selected frames it took to show the same thing
    bindings: tuple[tuple[str, int, str, int], ...] = ()

    def __post_init__(self) -> None:
        object.__setattr__(self, "by_video", dict(self.by_video))
        object.__setattr__(self, "bindings", tuple((str(a), int(i), str(b), int(j)) for a, i, b, j in self.bindings))

    def __len__(self) -> int:
        return sum(len(s) for s in self.by_video.values())

    def __getitem__(self, video_id: str) -> Selection:
        return self.by_video[video_id]

    @property
    def shares(self) -> dict[str, int]:
        """Frames selected per video."""
        return {v: len(s) for v, s in self.by_video.items()}


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
    the question asked for none (see :mod:`frameselect._core.windows`), ``()`` when
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
class VideoFrames:
    """The frames chosen in one video of a question over several videos: pool indices and their times (seconds)."""

    #: the video's id within the sample (:attr:`VideoRef.id`)
    video: str
    indices: tuple[int, ...] = ()
    timestamps: tuple[float, ...] = ()

    def __post_init__(self) -> None:
        object.__setattr__(self, "indices", tuple(int(i) for i in self.indices))
        object.__setattr__(self, "timestamps", tuple(float(t) for t in self.timestamps))
        if len(self.indices) != len(self.timestamps):
            raise ValueError(f"video {self.video!r}: {len(self.indices)} indices but {len(self.timestamps)} timestamps")


@dataclass(frozen=True)
class SampleRecord:
    """The per-sample result of a run: metric values and what produced them.

    A question over several videos keeps each video's frames in ``videos``
    (in the sample's order); ``selection`` and ``timestamps`` are then the
    first video's, so code that reads one video still sees frames.
    """

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
    #: a question over several videos: the frames chosen in each video, in order; empty for one video
    videos: tuple[VideoFrames, ...] = ()

    def __post_init__(self) -> None:
        object.__setattr__(self, "videos", tuple(self.videos))
        object.__setattr__(self, "metrics", dict(self.metrics))
        object.__setattr__(self, "metadata", dict(self.metadata))
        object.__setattr__(self, "answer_windows", _windows(self.answer_windows, "SampleRecord.answer_windows"))
