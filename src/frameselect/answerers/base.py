"""The answering-backend interface.

``answer(requests)`` takes a batch of :class:`AnswerRequest` and returns one
:class:`~frameselect.types.Answer` each. A backend that fails for one request
returns an ``Answer`` with ``error`` set rather than raising, so the run
records that one sample as failed and goes on.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import ClassVar

import numpy as np
from numpy.typing import NDArray

from frameselect.parts import Part, part_id
from frameselect.types import SINGLE_VIDEO_ID, Answer, CandidatePool, Sample, Selection, option_letters

__all__ = ["Answerer", "AnswerRequest", "VideoInput", "option_letters", "video_label"]


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
        if self._frames is None:
            self._frames = self.pool.frames(self.selection.indices) if self.selection.indices else []
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
        if self._frames is None:
            self._frames = self.pool.frames(self.selection.indices)
        return self._frames

    def frame_identity(self) -> dict[str, object]:
        """What determines the frames shown, per video (video hash, pool policy, indices, times): part of an answer cache key."""
        return {"videos": [[v.id, v.pool.video_id, v.pool.policy, list(v.selection.indices), [round(t, 6) for t in v.timestamps]] for v in self.inputs]}


def video_label(position: int) -> str:
    """How a prompt names the video at ``position`` (0-based) of a question: ``"Video 1"``, ``"Video 2"``, ..."""
    return f"Video {position + 1}"


class Answerer(Part):
    """Base class of answering backends.

    Capabilities are declared on the class: ``is_oracle``, ``needs_frames``
    and ``concurrency`` (how many requests of one batch it answers at once;
    the run hands it batches of that size).
    """

    kind: ClassVar[str] = "answerers"
    #: True for backends that see the ground truth (upper bounds such as ``oracle``)
    is_oracle: ClassVar[bool] = False
    #: the backend looks at pixels (replay decodes the selected frames for it)
    needs_frames: ClassVar[bool] = True
    #: requests answered at once; backends that answer concurrently take it as a parameter
    concurrency: int = 1
    identity_exclude: ClassVar[frozenset[str]] = frozenset({"concurrency", "device", "cache_dir"})
    #: the backend gives log-probabilities of the options (:meth:`option_logprobs`)
    has_option_logprobs: ClassVar[bool] = False

    @property
    def max_in_flight(self) -> int:
        """Requests one ``answer()`` call takes in flight at most: ``concurrency`` (a backend with several servers, more)."""
        return int(self.concurrency)

    @property
    def id(self) -> str:
        """Model and decoding settings: what determines an answer (keys the answer cache)."""
        return part_id(self)

    def answer(self, requests: Sequence[AnswerRequest]) -> list[Answer]:
        raise NotImplementedError

    def option_logprobs(self, requests: Sequence[AnswerRequest]) -> list[NDArray[np.float64]]:
        """Log-probabilities of each request's options (one array of length ``len(options)``, log-sum-exp 0).

        The negative log-likelihood of the right option is ``-lp[answer index]``.
        Only backends with ``has_option_logprobs`` implement it.
        """
        raise NotImplementedError(
            f"answerer {self.name!r} gives no option log-probabilities; use one with has_option_logprobs (e.g. label_ocr_reader, qwen2_vl)"
        )
