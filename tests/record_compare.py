"""Records of two runs of the same work, compared without what may differ between them (timings)."""

from __future__ import annotations

from typing import Any

from frameselect.types import SampleRecord


def comparable(records: list[SampleRecord]) -> list[tuple[Any, ...]]:
    """A record without its timings (the one thing two runs of the same work may differ in)."""
    return [
        (
            r.sample_id,
            r.status,
            r.error,
            {k: v for k, v in r.metrics.items() if not k.endswith("latency_s")},
            r.answer,
            r.selection,
            r.timestamps,
            r.k,
            r.policy,
            dict(r.metadata),
        )
        for r in records
    ]
