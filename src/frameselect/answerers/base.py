"""The answering-backend interface.

``answer(requests)`` takes a batch of :class:`AnswerRequest` and returns one
:class:`~frameselect.types.Answer` each. A backend that fails for one request
returns an ``Answer`` with ``error`` set rather than raising, so the run
records that one sample as failed and goes on.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, ClassVar

import numpy as np
from numpy.typing import NDArray

from frameselect._core.fingerprint import fingerprint
from frameselect._core.windows import requested_units, window_duration
from frameselect.parts import Part, part_id
from frameselect.types import SINGLE_VIDEO_ID, Answer, CandidatePool, Sample, Selection, option_letters

if TYPE_CHECKING:
    from frameselect.tokens import TokenModel

__all__ = ["Answerer", "AnswerRequest", "VideoInput", "answer_cache_key", "option_letters", "sized_frames", "size_groups", "video_label"]


def _selected_frames(pool: CandidatePool, selection: Selection) -> list[NDArray[np.uint8]]:
    sizes = selection.sizes
    if sizes is None:
        return pool.frames(selection.indices)
    return sized_frames(pool, selection.indices, sizes)


@dataclass
class VideoInput:
    """One video of a request: its id within the sample, its pool and the frames selected in it."""

    id: str
    pool: CandidatePool
    selection: Selection
    _frames: list[NDArray[np.uint8]] | None = field(default=None, repr=False)

    @property
    def timestamps(self) -> list[float]:
        return self.selection.timestamps(self.pool)

    def frames(self) -> list[NDArray[np.uint8]]:
        """The frames selected in this video (none for an empty selection)."""
        if self._frames is None:
            self._frames = _selected_frames(self.pool, self.selection) if self.selection.indices else []
        return self._frames


@dataclass
class AnswerRequest:
    """One sample, the selected frames (decoded on first use) and their timestamps.

    A question over several videos also carries ``videos``: one
    :class:`VideoInput` per video of the sample, in the sample's order
    (build it with :meth:`across`); ``pool`` and ``selection`` are then the
    first video's, so a backend that reads one video still gets a valid
    request. A one-video request leaves ``videos`` empty; :attr:`inputs`
    gives the videos of either kind.
    """

    sample: Sample
    pool: CandidatePool
    selection: Selection
    _frames: list[NDArray[np.uint8]] | None = field(default=None, repr=False)
    #: the videos of a question over several videos, in the sample's order; empty for one video
    videos: tuple[VideoInput, ...] = ()

    def __post_init__(self) -> None:
        self.videos = tuple(self.videos)

    @classmethod
    def across(cls, sample: Sample, pools: Mapping[str, CandidatePool], selections: Mapping[str, Selection]) -> AnswerRequest:
        """A request over every video of ``sample`` (``sample.video_refs`` order); pools and selections keyed by video id."""
        refs = sample.video_refs
        missing = [r.id for r in refs if r.id not in pools or r.id not in selections]
        if missing:
            raise ValueError(f"sample {sample.id!r}: no pool or selection for video(s) {missing}")
        videos = tuple(VideoInput(r.id, pools[r.id], selections[r.id]) for r in refs)
        first = videos[0]
        return cls(sample, first.pool, first.selection, videos=videos if len(videos) > 1 else ())

    @property
    def is_multi_video(self) -> bool:
        return len(self.videos) > 1

    @property
    def inputs(self) -> tuple[VideoInput, ...]:
        """The request's videos in order: ``videos``, or the one video (sharing this request's decoded frames)."""
        if self.videos:
            return self.videos
        one = VideoInput(SINGLE_VIDEO_ID, self.pool, self.selection)
        one._frames = self.frames() if self._frames is not None else None
        return (one,)

    @property
    def timestamps(self) -> list[float]:
        return self.selection.timestamps(self.pool)

    def frames(self) -> list[NDArray[np.uint8]]:
        """The selected frames, each at its size in ``selection.sizes`` when given (scaled by the frame source)."""
        if self._frames is None:
            self._frames = _selected_frames(self.pool, self.selection)
        return self._frames

    def frame_identity(self) -> dict[str, object]:
        """What determines the frames shown, per video (video hash, pool policy, indices, times): part of an answer cache key."""
        return {"videos": [[v.id, v.pool.video_id, v.pool.policy, list(v.selection.indices), [round(t, 6) for t in v.timestamps]] for v in self.inputs]}


def video_label(position: int) -> str:
    """How a prompt names the video at ``position`` (0-based) of a question: ``"Video 1"``, ``"Video 2"``, ..."""
    return f"Video {position + 1}"


def size_groups(frames: Sequence[NDArray[np.uint8]]) -> list[list[int]]:
    """The positions of ``frames`` grouped by frame size, in the order each size first appears (time order within a group).

    A model whose processor stacks a video into one array takes frames of one size, so a
    mixed-resolution selection is sent as one video per group: what
    :meth:`frameselect.tokens.TokenModel.selection_tokens` prices.

    >>> size_groups([np.zeros((4, 6, 3), np.uint8), np.zeros((2, 3, 3), np.uint8), np.zeros((4, 6, 3), np.uint8)])
    [[0, 2], [1]]
    """
    groups: dict[tuple[int, int], list[int]] = {}
    for i, frame in enumerate(frames):
        groups.setdefault((int(frame.shape[0]), int(frame.shape[1])), []).append(i)
    return list(groups.values())


def sized_frames(pool: CandidatePool, indices: Sequence[int], sizes: Sequence[tuple[int, int]]) -> list[NDArray[np.uint8]]:
    """The frames at ``indices``, frame ``i`` scaled to ``sizes[i]`` (height, width): one request to the source per distinct size."""
    if pool.source is None:
        raise LookupError(f"pool of {pool.video_id!r} has no frame source")
    out: list[NDArray[np.uint8] | None] = [None] * len(indices)
    for size in dict.fromkeys(sizes):
        slots = [i for i, s in enumerate(sizes) if s == size]
        frames = pool.source.get([indices[i] for i in slots], size=(size[1], size[0]))
        for slot, frame in zip(slots, frames, strict=True):
            out[slot] = frame
    return [f for f in out if f is not None]


class Answerer(Part):
    """Base class of answering backends.

    Capabilities are declared on the class: ``is_oracle``, ``needs_frames``
    and ``concurrency`` (how many requests of one batch it answers at once;
    the run hands it batches of that size).
    """

    kind: ClassVar[str] = "answerers"
    #: True for backends that see the ground truth (such as ``oracle``, which scores evidence coverage)
    is_oracle: ClassVar[bool] = False
    #: the backend looks at pixels (replay decodes the selected frames for it)
    needs_frames: ClassVar[bool] = True
    #: requests answered at once; backends that answer concurrently take it as a parameter
    concurrency: int = 1
    identity_exclude: ClassVar[frozenset[str]] = frozenset({"concurrency", "device", "cache_dir"})
    #: the backend gives log-probabilities of the options (:meth:`option_logprobs`)
    has_option_logprobs: ClassVar[bool] = False
    #: the backend takes the frames of one request at different sizes (a mixed-resolution selection)
    takes_mixed_sizes: ClassVar[bool] = True
    #: what else the backend gives a selector (``answerer_attention``: :meth:`frame_attention`, the model's own cross-modal attention)
    capabilities: ClassVar[frozenset[str]] = frozenset()

    @property
    def max_in_flight(self) -> int:
        """Requests one ``answer()`` call takes in flight at most: ``concurrency`` (a backend with several servers, more)."""
        return int(self.concurrency)

    @property
    def id(self) -> str:
        """Model and decoding settings: what determines an answer (keys the answer cache)."""
        return part_id(self)

    def token_model(self) -> TokenModel | None:
        """The visual-token cost model of the model that answers (:mod:`frameselect.tokens`); None where unknown.

        A run at a token budget plans its frames with it, and every run with an
        answerer that declares one records the tokens its frames cost.
        """
        return None

    def answer(self, requests: Sequence[AnswerRequest]) -> list[Answer]:
        raise NotImplementedError

    def loaded(self, seconds: float) -> None:
        """Note ``seconds`` spent loading a model (or an engine): kept apart from the answers' ``latency_s``, which leave it out.

        A backend that loads lazily inside :meth:`answer` times the load, says
        so here and subtracts it from that answer's latency; the run records the
        sum as its ``answerer_load_ms`` counter (:meth:`take_load_seconds`).
        """
        self.__dict__["_load_seconds"] = self.__dict__.get("_load_seconds", 0.0) + float(seconds)

    def take_load_seconds(self) -> float:
        """The seconds noted by :meth:`loaded` since the last call (then zero)."""
        return float(self.__dict__.pop("_load_seconds", 0.0))

    def option_logprobs(self, requests: Sequence[AnswerRequest]) -> list[NDArray[np.float64]]:
        """Log-probabilities of each request's options (one array of length ``len(options)``, log-sum-exp 0).

        The negative log-likelihood of the right option is ``-lp[answer index]``.
        Only backends with ``has_option_logprobs`` implement it.
        """
        raise NotImplementedError(
            f"answerer {self.name!r} gives no option log-probabilities; use one with has_option_logprobs (e.g. label_ocr_reader, qwen2_vl)"
        )


def answer_cache_key(answerer: Answerer, request: AnswerRequest) -> str:
    """Hash of everything that determines an answer: backend id, prompt, options, frames.

    Frames enter by identity (video content hash, pool policy and the selected
    pool indices), which determines their content exactly; a request over
    several videos adds each video's (:meth:`AnswerRequest.frame_identity`). A question that asks
    for time windows (:mod:`frameselect._core.windows`) adds their units and the
    duration fractions refer to (the prompt and the reading of the reply depend on them).
    """
    units = requested_units(request.sample)
    duration = window_duration(request.sample.metadata, request.pool.duration) if units == "fraction" else None
    grounding = {"windows": [units, duration]} if units is not None else {}
    return fingerprint(
        {
            **grounding,
            "answerer": answerer.id,
            "query": request.sample.query,
            "video": request.pool.video_id,
            "policy": request.pool.policy,
            "indices": list(request.selection.indices),
            "timestamps": [round(t, 6) for t in request.timestamps],
            **({"sizes": [list(size) for size in request.selection.sizes]} if request.selection.sizes is not None else {}),
            "oracle": [request.sample.answer, list(request.sample.evidence), dict(request.sample.metadata)] if answerer.is_oracle else None,
            # a question over several videos: every video's frames (and, for the oracle, its evidence); one-video keys are unchanged
            **(request.frame_identity() if request.is_multi_video else {}),
            **({"evidence_by_video": [[r.id, list(r.evidence)] for r in request.sample.video_refs]} if request.is_multi_video and answerer.is_oracle else {}),
        }
    )
