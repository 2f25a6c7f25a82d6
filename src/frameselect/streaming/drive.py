"""Drive a streaming selector over a stream of frames and answer questions at their times.

:func:`iter_stream` hands each answer out as its question comes due, while
the stream plays; :func:`run_stream` collects them (and calls ``on_answer``
with each as it comes). Either can write each answer to a JSON Lines file the
moment it is given (``answers_to``), so what was answered is kept whatever
ends the run. The end of a stream is its end, however it comes: the source
running out, its connection closing, a Ctrl-C (``SIGINT``) or a ``SIGTERM``.
The questions due by then are answered, the others are not, and the result
says how the stream ended (``ended``, ``interrupted``).
"""

from __future__ import annotations

import json
import math
import os
import signal
import threading
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import FrameType
from typing import Any

import numpy as np

from frameselect.encoders.base import Encoder, l2_normalize
from frameselect.errors import ConfigError
from frameselect.streaming.base import StreamingSelector, StreamSelection, check_setting
from frameselect.types import Query

__all__ = ["AnswerStream", "StreamAnswer", "StreamAnswers", "iter_stream", "run_stream"]


@dataclass(frozen=True)
class StreamAnswer:
    """What the memory gave for one question: asked at ``asked_at`` seconds of stream time."""

    asked_at: float
    query: Any
    k: int
    selection: StreamSelection


class StreamAnswers(list[StreamAnswer]):
    """The answers of :func:`run_stream` (a list), with how the stream ended.

    ``ended``: in words (``"the stream ended after 30 frames"``, ``"interrupted by
    SIGINT after 12 frames"``); ``interrupted``: the signal's name when a
    signal ended it, else None; ``frames``: the frames observed; ``unanswered``:
    the questions not yet due when it was interrupted.
    """

    ended: str = ""
    interrupted: str | None = None
    frames: int = 0
    unanswered: list[tuple[float, Any, int]]

    def __init__(self, answers: Iterable[StreamAnswer] = ()) -> None:
        super().__init__(answers)
        self.unanswered = []


class _Signalled(BaseException):
    """A signal (``SIGTERM``) turned into an exception, as Python turns ``SIGINT`` into ``KeyboardInterrupt``."""

    def __init__(self, signum: int) -> None:
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


def _frame_and_time(item: Any) -> tuple[Any, float]:
    if hasattr(item, "image") and hasattr(item, "time"):
        return item.image, float(item.time)
    frame, t = item
    return frame, float(t)


def _text(query: Any) -> str:
    return query.text if isinstance(query, Query) else str(query)


def _record(answer: StreamAnswer) -> dict[str, Any]:
    sel = answer.selection
    return {
        "asked_at": answer.asked_at,
        "query": _text(answer.query),
        "k": answer.k,
        "indices": list(sel.indices),
        "timestamps": list(sel.timestamps),
        "held": sel.held,
        "scores": None if sel.scores is None else [s if math.isfinite(s) else None for s in sel.scores],
        "selector": sel.selector,
    }


class _AnswerFile:
    """A JSON Lines file that each answer is appended to as one line, written and synced before the next frame is read."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)

    def write(self, obj: dict[str, Any]) -> None:
        os.write(self.fd, (json.dumps(obj, ensure_ascii=False) + "\n").encode("utf-8"))  # one write: a line is there whole or not at all
        os.fsync(self.fd)

    def close(self) -> None:
        os.close(self.fd)


class _SigtermRaises:
    """While active (in the main thread, where ``SIGTERM`` still has its default action), ``SIGTERM`` raises :class:`_Signalled`."""

    def __enter__(self) -> _SigtermRaises:
        self.previous: Any = None
        if threading.current_thread() is threading.main_thread() and signal.getsignal(signal.SIGTERM) == signal.SIG_DFL:

            def raise_it(signum: int, frame: FrameType | None) -> None:
                raise _Signalled(signum)

            self.previous = signal.signal(signal.SIGTERM, raise_it)
        return self

    def __exit__(self, *exc: object) -> None:
        if self.previous is not None:
            signal.signal(signal.SIGTERM, self.previous)


def _resolve(selector: StreamingSelector | str, encoder: Encoder | str) -> tuple[StreamingSelector, Encoder]:
    from frameselect.errors import UnknownNameError
    from frameselect.registry import encoders, streaming

    try:
        sel = streaming.create(selector) if isinstance(selector, str) else selector
        enc = encoders.create(encoder) if isinstance(encoder, str) else encoder
    except UnknownNameError as exc:
        raise ConfigError(str(exc)) from None
    return sel, enc


class AnswerStream:
    """The answers of one stream as each question comes due (iterate once); made by :func:`iter_stream`.

    After the iteration: ``answers`` (every answer given), ``ended``,
    ``interrupted``, ``frames`` and ``unanswered`` as in :class:`StreamAnswers`.
    A Ctrl-C or ``SIGTERM`` while the stream is read, a frame is observed or
    an answer is given ends the iteration (no exception); one that comes while
    the loop that consumes the answers runs its own code is that loop's.
    """

    def __init__(
        self,
        source: Iterable[Any],
        selector: StreamingSelector,
        encoder: Encoder,
        pending: list[tuple[float, Any, int]],
        embed: Callable[[Any], Any],
        answers_to: str | os.PathLike[str] | None,
    ) -> None:
        self._source = source
        self._selector = selector
        self._encoder = encoder
        self._pending = pending
        self._embed = embed
        self._answers_to = answers_to
        self._started = False
        self.result = StreamAnswers()

    @property
    def answers(self) -> StreamAnswers:
        return self.result

    @property
    def ended(self) -> str:
        return self.result.ended

    @property
    def interrupted(self) -> str | None:
        return self.result.interrupted

    def __iter__(self) -> Iterator[StreamAnswer]:
        if self._started:
            raise RuntimeError("the answers of a stream can be iterated once; call iter_stream again to read the stream again")
        self._started = True
        return self._run()

    def _answer(self, t: float, query: Any, k: int, out: _AnswerFile | None) -> StreamAnswer:
        selection = self._selector.select(self._embed(query), k, t, question=query if isinstance(query, Query) else None)
        answer = StreamAnswer(asked_at=t, query=query, k=k, selection=selection)
        if out is not None:
            out.write(_record(answer))
        self.result.append(answer)
        return answer

    def _run(self) -> Iterator[StreamAnswer]:
        result, pending = self.result, self._pending
        out = _AnswerFile(self._answers_to) if self._answers_to is not None else None
        source = iter(self._source)
        how = "the stream ended"
        try:
            with _SigtermRaises():
                try:
                    for item in source:
                        frame, t = _frame_and_time(item)
                        while pending and pending[0][0] < t:
                            yield self._answer(*pending.pop(0), out)
                        embedding = l2_normalize(self._encoder.encode_frames(np.asarray(frame)[None]))[0]
                        self._selector.observe(embedding, t)
                        result.frames += 1
                    while pending:  # the end of the stream: the questions after it are answered from the memory at its end
                        yield self._answer(*pending.pop(0), out)
                except KeyboardInterrupt:
                    result.interrupted = "SIGINT"
                except _Signalled as exc:
                    result.interrupted = str(exc)
        finally:
            close = getattr(source, "close", None)
            if close is not None:
                try:
                    close()
                except (KeyboardInterrupt, _Signalled):
                    result.interrupted = result.interrupted or "SIGINT"
            told = getattr(self._source, "ended", None)
            if result.interrupted:
                how = f"interrupted by {result.interrupted} after {result.frames} frame{'s' if result.frames != 1 else ''}"
            elif isinstance(told, str) and told:
                how = told
            else:
                how = f"the stream ended after {result.frames} frame{'s' if result.frames != 1 else ''}"
            result.ended = how
            result.unanswered = list(pending)
            if out is not None:
                out.write({"ended": how, "interrupted": result.interrupted, "frames": result.frames, "unanswered": len(pending)})
                out.close()


def iter_stream(
    source: Iterable[Any],
    selector: StreamingSelector | str,
    encoder: Encoder | str,
    questions: Sequence[tuple[float, Any, int]] = (),
    *,
    monitoring: bool = False,
    seed: int = 0,
    answers_to: str | os.PathLike[str] | None = None,
) -> AnswerStream:
    """The answers to ``questions`` over ``source``, each handed out as soon as its question comes due.

    As :func:`run_stream` (the same arguments, checked before this returns);
    iterate the result: ``for answer in iter_stream(LiveSource(url, fps=2),
    "sliding_window", "color_histogram", [(5.0, "what is on screen?", 4)]): ...``.
    """
    sel, enc = _resolve(selector, encoder)
    setting = "monitoring" if monitoring else "later"
    try:
        check_setting(sel, setting)
    except Exception as exc:
        raise ConfigError(f"{exc}; choose the other setting or another streaming selector") from exc
    has_text = bool(enc.has_text)
    if sel.needs_query and not has_text:
        raise ConfigError(
            f"streaming selector {sel.name!r} needs the question's embedding, but encoder {enc.id!r} cannot embed text; use a text-capable encoder"
        )
    pending = []
    for n, item in enumerate(questions):
        try:
            t, query, k = item
        except (TypeError, ValueError):
            raise ConfigError(f"question {n}: give (time in seconds, question, k), got {item!r}") from None
        if isinstance(t, bool) or not isinstance(t, (int, float)) or not math.isfinite(t) or t < 0:
            raise ConfigError(f"question {n}: its time must be a finite number of seconds >= 0, got {t!r}")
        if isinstance(k, bool) or not isinstance(k, int) or k < 1:
            raise ConfigError(f"question {n}: k must be a whole number of frames >= 1, got {k!r}")
        pending.append((float(t), query, int(k)))
    pending.sort(key=lambda x: x[0])
    embedded: dict[str, Any] = {}

    def embed(query: Any) -> Any:
        if not has_text:
            return None
        text = _text(query)
        if text not in embedded:
            embedded[text] = l2_normalize(enc.encode_text([text]))[0].astype(np.float64)
        return embedded[text]

    start_query = None
    if monitoring:
        texts = {_text(q) for _, q, _ in pending}
        if len(texts) > 1:
            raise ConfigError(f"monitoring watches one question known before the stream starts; got {len(texts)} different ones")
        start_query = embed(pending[0][1]) if pending else None
        if start_query is None and sel.needs_query:
            raise ConfigError(f"streaming selector {sel.name!r} needs a question to monitor; give one in questions")
    sel.start(start_query, seed=seed)
    return AnswerStream(source, sel, enc, pending, embed, answers_to)


def run_stream(
    source: Iterable[Any],
    selector: StreamingSelector | str,
    encoder: Encoder | str,
    questions: Sequence[tuple[float, Any, int]] = (),
    *,
    monitoring: bool = False,
    seed: int = 0,
    on_answer: Callable[[StreamAnswer], None] | None = None,
    answers_to: str | os.PathLike[str] | None = None,
) -> StreamAnswers:
    """Observe every frame of ``source`` and answer each question ``(t, query, k)`` from the memory at time ``t``.

    ``source`` yields ``(frame, time)`` pairs (or objects with ``image`` and
    ``time``, as :mod:`frameselect._core.video.stream` sources do): RGB frames
    ``(H, W, 3)`` uint8 and increasing stream times. ``selector`` and
    ``encoder`` are parts or registered names (``"sliding_window"``,
    ``"imagenet_label"``). Each frame is embedded by ``encoder.encode_frames``
    (L2-normalised) and observed; a question at ``t`` is answered before the
    first frame later than ``t`` is observed (those after the stream ends, at
    its end), from what the memory holds then. The question (a ``str`` or
    :class:`~frameselect.types.Query`) is embedded by the encoder's text side
    when it has one. ``monitoring=True``: the (single) question is known before
    the stream starts and given to ``start``.

    Each answer is passed to ``on_answer`` and appended to the JSON Lines file
    ``answers_to`` (one object per answer, then one saying how the stream
    ended) as it is given. A Ctrl-C or ``SIGTERM`` ends the run at once with
    the answers given so far (``interrupted`` names the signal); so does the
    end of the stream, however it comes (``ended`` says how).

    A selector that cannot work in the setting, or that needs the question
    with an encoder that cannot embed text, raises
    :class:`~frameselect.errors.ConfigError` before the first frame is read.
    """
    stream = iter_stream(source, selector, encoder, questions, monitoring=monitoring, seed=seed, answers_to=answers_to)
    answers = iter(stream)
    try:
        with _SigtermRaises():
            for answer in answers:
                if on_answer is not None:
                    on_answer(answer)
    except (KeyboardInterrupt, _Signalled) as exc:  # in on_answer: the stream ends here too
        stream.result.interrupted = stream.result.interrupted or ("SIGINT" if isinstance(exc, KeyboardInterrupt) else str(exc))
        close = getattr(answers, "close", None)
        if close is not None:
            close()
    return stream.result
