"""Handing items across threads through a bounded queue that a consumer may stop reading."""

from __future__ import annotations

import queue
import threading
from typing import TypeVar

T = TypeVar("T")

#: how often (seconds) a producer blocked on a full queue looks whether it was stopped
POLL_SECONDS = 0.05


def put_unless_stopped(q: queue.Queue[T], item: T, stop: threading.Event) -> bool:
    """Put ``item`` into ``q``, waiting while it is full; ``False`` (not put) once ``stop`` is set."""
    while not stop.is_set():
        try:
            q.put(item, timeout=POLL_SECONDS)
            return True
        except queue.Full:
            continue
    return False


__all__ = ["put_unless_stopped", "POLL_SECONDS"]
