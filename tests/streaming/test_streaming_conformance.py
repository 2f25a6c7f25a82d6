"""Every registered streaming selector passes the streaming suite; the suite catches broken ones."""

from __future__ import annotations

import re
from typing import Any

import numpy as np
import pytest
from numpy.typing import NDArray

import frameselect
from frameselect.registry import streaming
from frameselect.streaming.base import StreamingSelector
from frameselect.testing import check_streaming, checks_for, parametrize_with_checks, registry_cases


@parametrize_with_checks(registry_cases("streaming"))
def test_streaming_selector_conforms(part: Any, check: Any) -> None:
    check(part)


def test_the_suite_takes_every_registered_streaming_selector() -> None:
    assert [c.label for c in registry_cases("streaming")] == streaming.names()
    assert {streaming.get(n).kind for n in streaming.names()} == {"streaming"}
    assert [c.name for c in checks_for(streaming.create("reservoir"))] == ["declarations", "memory_bound", "determinism", "reset", "bad_input", "round_trip"]
    assert set(streaming.names()) == {
        "kmeans_synopsis",
        "offline_adapter",
        "reservoir",
        "sieve_streaming",
        "sliding_window",
        "stream_kcenter",
        "threshold_keeper",
    }
    assert frameselect.streaming.names() == streaming.names()


# -- deliberately broken streaming selectors: each check must fail on them ------------------------


class _Hoarder(StreamingSelector):
    """Keeps every frame: breaks the memory bound."""

    def _capacity(self) -> int:
        return 10_000

    def _observe(self, frame: int, t: float, embedding: NDArray[np.float64]) -> None:
        self._frames.add(frame, t, embedding)


class _Clairvoyant(_Hoarder):
    """Answers with frames later than the question (and keeps everything)."""

    def _choose(self, slots: Any, query: Any, k: int, now: float) -> Any:
        every = self._frames.slots()
        return every[-min(k, len(slots)) :], None


class _Unseeded(StreamingSelector):
    """Draws from a generator that start() does not reset."""

    def __init__(self, memory: int = 4) -> None:
        super().__init__(memory=memory)
        self._own = np.random.default_rng()

    def _observe(self, frame: int, t: float, embedding: NDArray[np.float64]) -> None:
        if len(self._frames) < self.memory:
            self._frames.add(frame, t, embedding)
        elif self._own.random() < 0.5:
            self._frames.replace(int(self._frames.slots()[0]), frame, t, embedding)


class _Short(StreamingSelector):
    """Returns one frame whatever k is."""

    def __init__(self, memory: int = 4) -> None:
        super().__init__(memory=memory)

    def _observe(self, frame: int, t: float, embedding: NDArray[np.float64]) -> None:
        if len(self._frames) == self.memory:
            self._frames.remove(int(self._frames.slots()[0]))
        self._frames.add(frame, t, embedding)

    def _choose(self, slots: Any, query: Any, k: int, now: float) -> Any:
        return slots[:1], None


@pytest.mark.parametrize(
    ("part", "message"),
    [
        (_Hoarder(memory=5), r"memory holds 6 frames, more than memory=5"),
        (_Clairvoyant(memory=100), r"later than now"),
        (_Unseeded(), r"\[determinism\]: seed=0"),
        (_Short(), r"expected min\(k, held at or before now\) = 3"),
    ],
    ids=["hoarder", "clairvoyant", "unseeded", "short"],
)
def test_the_suite_fails_broken_streaming_selectors(part: StreamingSelector, message: str) -> None:
    with pytest.raises(AssertionError, match=message):
        check_streaming(part)


def test_check_streaming_takes_a_registered_name() -> None:
    check_streaming("sliding_window")


def test_a_selector_that_accepts_time_going_backwards_fails_the_suite() -> None:
    class _Forgiving(_Short):
        def _check_time(self, time: Any) -> float:
            return float(time)

    with pytest.raises(AssertionError, match=re.escape("a time going backwards was accepted; expected StreamOrderError")):
        for check in checks_for(_Forgiving()):
            if check.name == "bad_input":
                check(_Forgiving())
