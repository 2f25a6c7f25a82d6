"""Selection-level evidence metrics: did the chosen frames land on the evidence?"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

from frameselect.evaluators.base import Evaluator
from frameselect.registry import evaluators
from frameselect.types import Answer, CandidatePool, Features, Sample, Selection, Span

__all__ = ["evidence_recall", "frame_precision", "EvidenceRecall", "FramePrecision"]


def evidence_recall(times: Sequence[float], spans: Sequence[Span]) -> float:
    """Fraction of evidence spans hit by at least one selected frame time.

    A frame at time ``t`` hits span ``[s, e]`` when ``s <= t <= e``.
    NaN when the sample has no evidence spans.

    >>> evidence_recall([1.0, 5.0], [Span(0.5, 1.5), Span(2, 3)])
    0.5
    """
    if not spans:
        return math.nan
    hit = sum(1 for span in spans if any(span.contains(t) for t in times))
    return hit / len(spans)


def frame_precision(times: Sequence[float], spans: Sequence[Span]) -> float:
    """Fraction of selected frames that lie inside any evidence span.

    NaN when the sample has no evidence spans or no frame was selected.

    >>> frame_precision([1.0, 5.0, 2.5], [Span(0.5, 1.5), Span(2, 3)])
    0.6666666666666666
    """
    if not spans or not times:
        return math.nan
    inside = sum(1 for t in times if any(span.contains(t) for span in spans))
    return inside / len(times)


@evaluators.register("evidence_recall")
class EvidenceRecall(Evaluator):
    """Fraction of evidence spans hit by at least one selected frame."""

    def score(self, sample: Sample, pool: CandidatePool, selection: Selection, answer: Answer | None, features: Features | None = None) -> Mapping[str, float]:
        return {self.name: evidence_recall(selection.timestamps(pool), sample.evidence)}


@evaluators.register("frame_precision")
class FramePrecision(Evaluator):
    """Fraction of selected frames inside any evidence span."""

    def score(self, sample: Sample, pool: CandidatePool, selection: Selection, answer: Answer | None, features: Features | None = None) -> Mapping[str, float]:
        return {self.name: frame_precision(selection.timestamps(pool), sample.evidence)}
