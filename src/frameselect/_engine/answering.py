"""Answering within a run: through the store's answer cache, in batches the backend takes, on the driver or where units run.

Errors are returned as answers (``Answer.error``), never cached and never raised: a
backend that raises fails its batch's samples, not the run."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from frameselect._core.cache import RunCounters
from frameselect._core.video import DecodeCounter, FrameMemo, VideoFrameSource
from frameselect.answerers.base import Answerer, AnswerRequest, answer_cache_key
from frameselect.errors import AnswererError
from frameselect.store import Store
from frameselect.types import Answer

if TYPE_CHECKING:
    pass


__all__ = [
    "AnswerWork",
    "answer_batch",
    "answer_batch_size",
    "answer_one",
    "answers_on_driver",
    "bind_frames",
    "cached_answers",
    "call_backend",
    "remember_answers",
]


def answer_batch(answerer: Answerer, requests: Sequence[AnswerRequest], store: Store, counters: RunCounters) -> list[Answer]:
    """Answers through the store's answer cache; uncached requests go to the backend as one batch.

    Errors are returned (``Answer.error``), never cached, and never raised: a
    backend that raises fails this batch's samples, not the run.
    """
    keys = [answer_cache_key(answerer, r) for r in requests]
    answers = cached_answers(store, keys)
    todo = [i for i, a in enumerate(answers) if a is None]
    if todo:
        counters.answerer_calls += len(todo)
        fresh = call_backend(answerer, [requests[i] for i in todo])
        remember_answers(store, answerer, [keys[i] for i in todo], fresh)
        for i, answer in zip(todo, fresh):
            answers[i] = answer
    return [a for a in answers if a is not None]


def answer_batch_size(answerer: Answerer | None) -> int:
    """Requests handed to one ``answer()`` call: what the backend takes in flight (``max_in_flight``, else ``concurrency``), else one."""
    return 1 if answerer is None else max(1, answerer.max_in_flight)


def cached_answers(store: Store, keys: Sequence[str]) -> list[Answer | None]:
    """The store's cached answer for each key (None where there is none)."""
    answers: list[Answer | None] = []
    for key in keys:
        cached = store.cached_answer(key)
        answers.append(Answer(**cached) if cached is not None else None)
    return answers


def call_backend(answerer: Answerer, requests: Sequence[AnswerRequest]) -> list[Answer]:
    """One ``answer()`` call; a backend that raises, or miscounts, gives every request an error answer."""
    if not requests:
        return []
    try:
        fresh = list(answerer.answer(list(requests)))
        if len(fresh) != len(requests):
            raise AnswererError(f"answerer {answerer.id} returned {len(fresh)} answers for {len(requests)} requests")
    except Exception as exc:
        fresh = [Answer(text="", model=answerer.id, error=f"{type(exc).__name__}: {exc}")] * len(requests)
    return fresh


def remember_answers(store: Store, answerer: Answerer, keys: Sequence[str], answers: Sequence[Answer]) -> None:
    """Cache the answers that carry no error."""
    for key, answer in zip(keys, answers, strict=True):
        if answer.error is None:
            store.cache_answer(key, answerer.id, dataclasses.asdict(answer))


def answer_one(answerer: Answerer, request: AnswerRequest, store: Store, counters: RunCounters) -> Answer:
    """Answer one request through the store's answer cache."""
    return answer_batch(answerer, [request], store, counters)[0]


@dataclass(frozen=True)
class AnswerWork:
    """What a transport runs to answer a unit's uncached requests (a backend that is not called from the driver)."""

    answerer: Answerer
    #: the requests' frame sources count into a counter of this call's (a worker's), returned; False: as they are (this process)
    rebind: bool = True

    def __call__(self, requests: Sequence[AnswerRequest]) -> tuple[list[Answer], int, float]:
        """The answers, the frames their requests decoded, and the seconds the backend spent loading its model meanwhile.

        The load seconds are those the backend noted (:meth:`~frameselect.answerers.base.Answerer.loaded`)
        since they were last taken: on a worker, its copy's first load, so the run can sum the loads
        of every worker into its ``answerer_load_ms`` counter.
        """
        counter, memo = DecodeCounter(), FrameMemo()
        for r in requests:
            if self.rebind:
                bind_frames(r, counter, memo)
        chunk = answer_batch_size(self.answerer)
        answers: list[Answer] = []
        for start in range(0, len(requests), chunk):
            answers.extend(call_backend(self.answerer, requests[start : start + chunk]))
        return answers, counter.frames_decoded, self.answerer.take_load_seconds()


def bind_frames(request: AnswerRequest, counter: DecodeCounter, memo: FrameMemo) -> None:
    """The request's frame source counts into ``counter`` and remembers in ``memo`` (this side's)."""
    source = request.pool.source
    if isinstance(source, VideoFrameSource):
        source.counter = counter
        source.memo = memo


def answers_on_driver(answerer: Answerer) -> bool:
    """A backend that takes concurrent requests (an HTTP server) is called from the driver; any other answers where units run."""
    return answer_batch_size(answerer) > 1
