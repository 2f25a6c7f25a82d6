"""The answering-backend interface.

``answer(requests)`` takes a batch of :class:`AnswerRequest` and returns one
:class:`~frameselect.types.Answer` each. A backend that fails for one request
returns an ``Answer`` with ``error`` set rather than raising, so the run
records that one sample as failed and goes on.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np
from numpy.typing import NDArray

from frameselect.types import Answer, CandidatePool, Sample, Selection

__all__ = ["Answerer", "AnswerRequest", "option_letters"]


def option_letters(n: int) -> list[str]:
    return [chr(ord("A") + i) for i in range(n)]


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
        if self._frames is None:
            self._frames = self.pool.frames(self.selection.indices)
        return self._frames


class Answerer:
    """Base class of answering backends."""

    registered_name: ClassVar[str] = ""
    #: True for backends that see the ground truth (upper bounds such as ``oracle``)
    is_oracle: ClassVar[bool] = False
    #: the backend looks at pixels (replay decodes the selected frames for it)
    needs_frames: ClassVar[bool] = True
    #: the backend gives log-probabilities of the options (:meth:`option_logprobs`)
    has_option_logprobs: ClassVar[bool] = False

    @property
    def name(self) -> str:
        return type(self).registered_name or type(self).__name__

    def params(self) -> dict[str, Any]:
        return {}

    @property
    def id(self) -> str:
        params = ",".join(f"{k}={v}" for k, v in sorted(self.params().items()))
        return f"{self.name}({params})"

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
