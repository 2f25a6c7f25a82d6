"""The answering-backend interface.

``answer(requests)`` takes a batch of :class:`AnswerRequest` and returns one
:class:`~frameselect.types.Answer` each. A backend that fails for one request
returns an ``Answer`` with ``error`` set rather than raising, so the run
records that one sample as failed and goes on.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, ClassVar

import numpy as np
from numpy.typing import NDArray

from frameselect.fingerprint import fingerprint
from frameselect.parts import Part, part_id
from frameselect.types import Answer, CandidatePool, Sample, Selection, option_letters
from frameselect.windows import requested_units, window_duration

if TYPE_CHECKING:
    from frameselect.tokens import TokenModel

__all__ = ["Answerer", "AnswerRequest", "answer_cache_key", "option_letters", "sized_frames"]


@dataclass
class AnswerRequest:
    """One sample, the selected frames (decoded on first use) and their timestamps."""

    sample: Sample
    pool: CandidatePool
    selection: Selection
    _frames: list[NDArray[np.uint8]] | None = field(default=None, repr=False)

    @property
    def timestamps(self) -> list[float]:
        return self.selection.timestamps(self.pool)

    def frames(self) -> list[NDArray[np.uint8]]:
        """The selected frames, each at its size in ``selection.sizes`` when given (scaled by the frame source)."""
        if self._frames is None:
            sizes = self.selection.sizes
            if sizes is None:
                self._frames = self.pool.frames(self.selection.indices)
            else:
                self._frames = sized_frames(self.pool, self.selection.indices, sizes)
        return self._frames


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
    #: True for backends that see the ground truth (upper bounds such as ``oracle``)
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
    pool indices), which determines their content exactly. A question that asks
    for time windows (:mod:`frameselect.windows`) adds their units and the
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
        }
    )
