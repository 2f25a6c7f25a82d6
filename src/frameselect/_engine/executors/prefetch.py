"""Overlap within a worker: items produced on a thread ahead of their consumer."""

from __future__ import annotations

import queue
import threading
from collections.abc import Iterator
from typing import Any, TypeVar

from frameselect._core.queues import put_unless_stopped

__all__ = ["prefetched"]

T = TypeVar("T")


def prefetched(items: Iterator[T], depth: int) -> Iterator[T]:
    """``items`` produced on a thread, at most ``depth`` ahead of the consumer (``depth`` 0: in line).

    Used to decode the next batch of frames while the encoder works on this one;
    an exception raised while producing is raised to the consumer.
    """
    if depth <= 0:
        yield from items
        return
    slots: queue.Queue[tuple[str, Any]] = queue.Queue(maxsize=depth)
    stop = threading.Event()

    def put(entry: tuple[str, Any]) -> bool:
        return put_unless_stopped(slots, entry, stop)

    def produce() -> None:
        try:
            for item in items:
                if not put(("item", item)):
                    return
            put(("done", None))
        except BaseException as exc:  # handed to the consumer
            put(("error", exc))
        finally:
            close = getattr(items, "close", None)
            if close is not None:
                close()

    thread = threading.Thread(target=produce, name="frameselect-prefetch", daemon=True)
    thread.start()
    try:
        while True:
            kind, value = slots.get()
            if kind == "item":
                yield value
            elif kind == "done":
                return
            else:
                raise value
    finally:
        stop.set()
        thread.join()
