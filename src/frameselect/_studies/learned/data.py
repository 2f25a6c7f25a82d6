"""Training questions for the learned selector: pools, per-frame inputs, evidence labels, the video split.

Pools and features come from the pipeline's own :func:`~frameselect._engine.pipeline.build_pool`
and :func:`~frameselect._engine.pipeline.featurize` with the run's feature cache, so
training, ``evaluate`` and the answering readers share one cache.
"""

from __future__ import annotations

import math
import zlib
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from frameselect.encoders.base import Encoder
from frameselect.errors import FrameselectError
from frameselect.learned.inputs import frame_inputs
from frameselect.types import CandidatePool, Sample

__all__ = ["Question", "split_by_video", "evidence_labels", "load_questions"]


@dataclass
class Question:
    """One training question: its sample, pool and what the policy reads."""

    sample: Sample
    pool: CandidatePool
    relevance: NDArray[np.float64]
    embeddings: NDArray[np.float32] | None
    labels: NDArray[np.float64]
    _inputs: dict[int, NDArray[np.float32]] = field(default_factory=dict, repr=False)

    def inputs(self, k: int) -> NDArray[np.float32]:
        """The per-frame inputs at budget ``k`` (computed once)."""
        if k not in self._inputs:
            self._inputs[k] = frame_inputs(self.pool.timestamps, self.pool.duration, self.relevance, self.embeddings, k)
        return self._inputs[k]


def split_by_video(samples: Sequence[Sample], test_fraction: float, seed: int) -> tuple[list[Sample], list[Sample]]:
    """(train, test): whole videos go to one side; ``ceil(test_fraction * videos)`` videos are test.

    Videos are ordered by a seeded hash of their path, so the split is stable
    and independent of the samples' order.
    """
    if not 0.0 <= test_fraction < 1.0:
        raise ValueError(f"test fraction must be in [0, 1), got {test_fraction}")
    videos = sorted({s.video for s in samples}, key=lambda v: (zlib.crc32(f"{seed}|{Path(v).name}".encode()), v))
    n_test = math.ceil(test_fraction * len(videos)) if test_fraction > 0 else 0
    if n_test >= len(videos):
        raise ValueError(f"{len(videos)} videos cannot be split with test fraction {test_fraction}: no training video is left")
    test_videos = set(videos[:n_test])
    return [s for s in samples if s.video not in test_videos], [s for s in samples if s.video in test_videos]


def evidence_labels(sample: Sample, times: NDArray[np.float64]) -> NDArray[np.float64]:
    """1 for pool frames inside any evidence span, else 0."""
    labels = np.zeros(len(times))
    for span in sample.evidence:
        labels[(times >= span.start) & (times <= span.end)] = 1.0
    return labels


def load_questions(samples: Sequence[Sample], encoder: Encoder, policy: str, cache_dir: str | Path, *, executor: Any = "serial") -> list[Question]:
    """Pools, relevance and embeddings of every sample with options and an answer (others are skipped).

    A run that only computes features (:func:`frameselect._engine.pipeline.feature_plan`) on ``executor``;
    a sample that cannot be read raises, naming it.
    """
    from frameselect._engine.pipeline import FeatureStep, feature_plan
    from frameselect._engine.run import Run, reason_of

    usable = [s for s in samples if s.query.options and s.answer is not None]
    with Run(feature_plan(usable, encoder, policy, "training data"), cache_dir=cache_dir, progress=False) as run:
        prepared = run.collect(FeatureStep(frozenset({"embeddings", "relevance"})), executor)
    out = []
    for p in prepared:
        one = p.one() if p.error is None else None
        feats = None if one is None else one[2]
        if one is None or feats is None:
            raise FrameselectError(f"sample {p.sample.id!r}: {reason_of(p.error) if p.error is not None else 'no features'}") from p.error
        pool = one[0]
        out.append(Question(p.sample, pool, feats.relevance(), feats.embeddings, evidence_labels(p.sample, pool.timestamps)))
    return out
