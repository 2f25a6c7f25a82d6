"""Progress bars (tqdm) for long work: runs, replays, encoding pools, suite generation, training.

A bar shows counts, rate and ETA on a terminal and stays silent otherwise
(``enabled=None``: only when stderr is a terminal).
"""

from __future__ import annotations

import sys
from collections.abc import Iterable, Iterator
from typing import Any, TypeVar

__all__ = ["Progress", "progress_bar", "track"]

T = TypeVar("T")


def progress_bar(total: int | None, label: str, *, enabled: bool | None = None, unit: str = "it", leave: bool = True) -> Any:
    """A tqdm bar on stderr; ``enabled=None`` shows it only on a terminal."""
    from tqdm.auto import tqdm

    show = sys.stderr.isatty() if enabled is None else enabled
    return tqdm(total=total, desc=label, unit=unit, leave=leave, disable=not show, file=sys.stderr, dynamic_ncols=True, mininterval=0.5)


def track(items: Iterable[T], total: int | None, label: str, *, enabled: bool | None = None, unit: str = "it", leave: bool = True) -> Iterator[T]:
    """``items``, advancing a bar by one for each."""
    bar = progress_bar(total, label, enabled=enabled, unit=unit, leave=leave)
    try:
        for item in items:
            yield item
            bar.update(1)
    finally:
        bar.close()


class Progress:
    """The run's bar over its samples (``update``/``close``), backed by tqdm."""

    def __init__(self, total: int, label: str, enabled: bool | None = None, *, unit: str = "sample") -> None:
        self.total = total
        self._bar = progress_bar(total, label, enabled=enabled, unit=unit)

    @property
    def n(self) -> int:
        return int(self._bar.n)

    @property
    def enabled(self) -> bool:
        return not self._bar.disable

    def update(self, n: int = 1) -> None:
        self._bar.update(n)

    def close(self) -> None:
        self._bar.close()
