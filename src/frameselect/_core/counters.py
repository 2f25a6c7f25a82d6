"""What one invocation of a run cost: frames decoded and encoded, cache hits, calls, samples."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["RunCounters"]


@dataclass
class RunCounters:
    """What one invocation of a run cost."""

    frames_decoded: int = 0
    frames_encoded: int = 0
    cache_hits: int = 0
    cache_misses: int = 0
    encoder_calls: int = 0
    selector_calls: int = 0
    answerer_calls: int = 0
    samples_done: int = 0
    samples_skipped: int = 0
    samples_failed: int = 0
    #: milliseconds the answering backend spent loading its model in this invocation (left out of each answer's latency)
    answerer_load_ms: int = 0

    def as_dict(self) -> dict[str, int]:
        return dict(self.__dict__)

    def add(self, other: RunCounters) -> None:
        for k, v in other.__dict__.items():
            setattr(self, k, getattr(self, k) + v)
