"""Process-wide memos, each bounded and clearable: ``frameselect.clear_caches()`` empties them all.

Model loaders keep what they load (hundreds of MB for a network, an ONNX session,
an OCR engine) for the next call; :func:`memoized` is ``functools.lru_cache`` with
a bound, registered here so that :func:`clear_caches` releases it.
"""

from __future__ import annotations

import functools
import threading
from collections import OrderedDict
from collections.abc import Callable
from typing import Generic, TypeVar

__all__ = ["BoundedMemo", "clear_caches", "memoized", "register_clear"]

T = TypeVar("T")
K = TypeVar("K")
V = TypeVar("V")

_CLEARS: list[Callable[[], None]] = []


def register_clear(clear: Callable[[], None]) -> None:
    """Have :func:`clear_caches` call ``clear``."""
    _CLEARS.append(clear)


def memoized(maxsize: int) -> Callable[[Callable[..., T]], functools._lru_cache_wrapper[T]]:
    """``functools.lru_cache(maxsize)`` whose entries :func:`clear_caches` drops (``maxsize`` must be a bound)."""
    if maxsize is None or maxsize < 1:
        raise ValueError("a process-wide memo needs a bound (maxsize >= 1)")

    def decorate(function: Callable[..., T]) -> functools._lru_cache_wrapper[T]:
        wrapped = functools.lru_cache(maxsize=maxsize)(function)
        register_clear(wrapped.cache_clear)
        return wrapped

    return decorate


class BoundedMemo(Generic[K, V]):
    """A thread-safe mapping that keeps its ``maxsize`` most recently used entries, emptied by :func:`clear_caches`."""

    def __init__(self, maxsize: int) -> None:
        if maxsize < 1:
            raise ValueError("maxsize must be at least 1")
        self.maxsize = maxsize
        self._items: OrderedDict[K, V] = OrderedDict()
        self._lock = threading.Lock()
        register_clear(self.clear)

    def get(self, key: K) -> V | None:
        with self._lock:
            value = self._items.get(key)
            if value is not None:
                self._items.move_to_end(key)
            return value

    def put(self, key: K, value: V) -> None:
        with self._lock:
            self._items[key] = value
            self._items.move_to_end(key)
            while len(self._items) > self.maxsize:
                self._items.popitem(last=False)

    def clear(self) -> None:
        with self._lock:
            self._items.clear()

    def __len__(self) -> int:
        return len(self._items)


def clear_caches() -> None:
    """Drop every process-wide memo: loaded models, ONNX sessions, OCR engines, file hashes, probe details.

    The on-disk caches (features, probes, ONNX graphs) are untouched; the next use loads again.
    """
    for clear in list(_CLEARS):
        clear()
