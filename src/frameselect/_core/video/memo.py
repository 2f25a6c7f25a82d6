"""The last few decoded frame sets, shared by the frame sources of one run."""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable

import numpy as np
from numpy.typing import NDArray

__all__ = ["FrameMemo"]

_MemoKey = tuple[str, tuple[int, ...], tuple[int, int] | None]


class FrameMemo:
    """The last few decoded frame sets: (file with size and mtime, frame pts, size) -> {pts: frame}.

    Owned by a run (or by one frame source when none is given): concurrent
    requests for the same frames (an answerer's threads) decode once. At most
    ``limit`` sets and ``max_bytes`` bytes are kept; a larger set is not kept,
    so memory never grows with a request.
    """

    def __init__(self, limit: int = 4, max_bytes: int = 256 * 1024 * 1024) -> None:
        self.limit, self.max_bytes = limit, max_bytes
        self._frames: OrderedDict[_MemoKey, dict[int, NDArray[np.uint8]]] = OrderedDict()
        self._lock = threading.Lock()
        self._key_locks: dict[_MemoKey, threading.Lock] = {}

    def __reduce__(self) -> tuple[type[FrameMemo], tuple[int, int]]:
        """Pickled (sent to or from a worker), a memo arrives empty, with its settings: frames and locks stay here."""
        return FrameMemo, (self.limit, self.max_bytes)

    def get(self, key: _MemoKey, decode: Callable[[], dict[int, NDArray[np.uint8]]]) -> dict[int, NDArray[np.uint8]]:
        """The frames under ``key``, decoded by ``decode()`` on a miss."""
        with self._lock:
            key_lock = self._key_locks.setdefault(key, threading.Lock())
        with key_lock:
            with self._lock:
                frames = self._frames.get(key)
                if frames is not None:
                    self._frames.move_to_end(key)
                    return frames
            try:
                frames = decode()
            except BaseException:
                with self._lock:
                    self._key_locks.pop(key, None)
                raise
            with self._lock:
                self._remember(key, frames)
            return frames

    def _remember(self, key: _MemoKey, frames: dict[int, NDArray[np.uint8]]) -> None:
        """Keep a decoded set, dropping the oldest beyond the count and byte limits (lock held)."""
        if sum(f.nbytes for f in frames.values()) > self.max_bytes:
            self._key_locks.pop(key, None)
            return
        self._frames[key] = frames
        total = sum(f.nbytes for fs in self._frames.values() for f in fs.values())
        while len(self._frames) > self.limit or total > self.max_bytes:
            old, dropped = self._frames.popitem(last=False)
            self._key_locks.pop(old, None)
            total -= sum(f.nbytes for f in dropped.values())
