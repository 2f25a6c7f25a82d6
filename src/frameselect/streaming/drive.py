"""Drive a streaming selector over a stream of frames and answer questions at their times."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from frameselect.encoders.base import Encoder, l2_normalize
from frameselect.errors import ConfigError
from frameselect.streaming.base import StreamingSelector, StreamSelection, check_setting
from frameselect.types import Query

__all__ = ["StreamAnswer", "run_stream"]


@dataclass(frozen=True)
class StreamAnswer:
    """What the memory gave for one question: asked at ``asked_at`` seconds of stream time."""

    asked_at: float
    query: Any
    k: int
    selection: StreamSelection


def _frame_and_time(item: Any) -> tuple[Any, float]:
    if hasattr(item, "image") and hasattr(item, "time"):
        return item.image, float(item.time)
    frame, t = item
    return frame, float(t)


def _text(query: Any) -> str:
    return query.text if isinstance(query, Query) else str(query)


def run_stream(
    source: Iterable[Any],
    selector: StreamingSelector,
    encoder: Encoder,
    questions: Sequence[tuple[float, Any, int]] = (),
    *,
    monitoring: bool = False,
    seed: int = 0,
) -> list[StreamAnswer]:
    """Observe every frame of ``source`` and answer each question ``(t, query, k)`` from the memory at time ``t``.

    ``source`` yields ``(frame, time)`` pairs (or objects with ``image`` and
    ``time``, as :mod:`frameselect.video.stream` sources do): RGB frames
    ``(H, W, 3)`` uint8 and increasing stream times. Each frame is embedded by
    ``encoder.encode_frames`` (L2-normalised) and observed; a question at ``t``
    is answered before the first frame later than ``t`` is observed (those
    after the stream ends, at its end), from what the memory holds then. The
    question (a ``str`` or :class:`~frameselect.types.Query`) is embedded by the
    encoder's text side when it has one. ``monitoring=True``: the (single)
    question is known before the stream starts and given to ``start``.

    A selector that cannot work in the setting, or that needs the question
    with an encoder that cannot embed text, raises
    :class:`~frameselect.errors.ConfigError` before the first frame is read.
    """
    setting = "monitoring" if monitoring else "later"
    try:
        check_setting(selector, setting)
    except Exception as exc:
        raise ConfigError(f"{exc}; choose the other setting or another streaming selector") from exc
    has_text = bool(encoder.has_text)
    if selector.needs_query and not has_text:
        raise ConfigError(
            f"streaming selector {selector.name!r} needs the question's embedding, but encoder {encoder.id!r} cannot embed text; use a text-capable encoder"
        )
    pending = sorted(((float(t), q, int(k)) for t, q, k in questions), key=lambda x: x[0])
    embedded: dict[str, Any] = {}

    def embed(query: Any) -> Any:
        if not has_text:
            return None
        text = _text(query)
        if text not in embedded:
            embedded[text] = l2_normalize(encoder.encode_text([text]))[0].astype(np.float64)
        return embedded[text]

    start_query = None
    if monitoring:
        texts = {_text(q) for _, q, _ in pending}
        if len(texts) > 1:
            raise ConfigError(f"monitoring watches one question known before the stream starts; got {len(texts)} different ones")
        start_query = embed(pending[0][1]) if pending else None
        if start_query is None and selector.needs_query:
            raise ConfigError(f"streaming selector {selector.name!r} needs a question to monitor; give one in questions")
    selector.start(start_query, seed=seed)
    answers: list[StreamAnswer] = []

    def answer(t: float, query: Any, k: int) -> None:
        selection = selector.select(embed(query), k, t, question=query if isinstance(query, Query) else None)
        answers.append(StreamAnswer(asked_at=t, query=query, k=k, selection=selection))

    for item in source:
        frame, t = _frame_and_time(item)
        while pending and pending[0][0] < t:
            answer(*pending.pop(0))
        embedding = l2_normalize(encoder.encode_frames(np.asarray(frame)[None]))[0]
        selector.observe(embedding, t)
    for question in pending:
        answer(*question)
    return answers
