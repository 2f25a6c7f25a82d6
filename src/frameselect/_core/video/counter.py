"""The count of frames a run decodes."""

from __future__ import annotations

import threading

__all__ = ["DecodeCounter"]


class DecodeCounter:
    """Counts decoded frames. A run owns one and hands it to its pools' frame sources."""

    def __init__(self) -> None:
        self.frames_decoded = 0
        self._lock = threading.Lock()

    def add(self, n: int = 1) -> None:
        with self._lock:  # an answerer's threads may decode at once
            self.frames_decoded += n

    def __reduce__(self) -> tuple[type[DecodeCounter], tuple[()]]:
        """Pickled (sent to or from a worker), a counter arrives empty: the receiving side counts its own frames."""
        return DecodeCounter, ()
