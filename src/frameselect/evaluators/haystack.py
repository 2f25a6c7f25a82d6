"""LV-Haystack temporal search metrics: temporal precision, recall, F1 and ANND.

LV-Haystack (Ye et al., "Re-thinking Temporal Search for Long-Form Video
Understanding", CVPR 2025, the T* paper) scores a keyframe search against
annotated ground-truth keyframes by time distance. Reference:
github.com/mll-lab-nu/TStar, ``LVHaystackBench/val_tstar_results.py``
(``calculate_prf``, ``calculate_annd``), distances in seconds, threshold 5 s:

- temporal precision: fraction of selected frames within 5 s of a ground-truth keyframe;
- temporal recall: fraction of ground-truth keyframes within 5 s of a selected frame;
- F1 of the two, per question (0 when both are 0);
- ANND, average nearest-neighbour distance (s): from each selected frame to
  its nearest keyframe (``lvh_annd_precision``) and from each keyframe to its
  nearest selected frame (``lvh_annd_recall``).

Questions with no keyframe or no selected frame are skipped (NaN), as in the
reference; a benchmark with no scorable question has temporal precision,
recall and F1 0.0, as ``calculate_prf`` returns them. ``calculate_annd``
returns its per-question list without a mean; the ANND means over no
question are NaN. Keyframe times come from ``metadata["keyframe_times"]`` (seconds),
or ``metadata["gt_frame_index"]`` divided by ``metadata["fps"]`` (the
reference's conversion). Deviation, for datasets that annotate spans instead
of keyframes: without either, the midpoints of the evidence spans are used
(``fallback="evidence_midpoints"``; ``fallback=None`` gives NaN instead).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import ClassVar

import numpy as np

from frameselect.evaluators.base import Evaluator, mean_of
from frameselect.parts import Range
from frameselect.registry import evaluators
from frameselect.types import Answer, CandidatePool, Features, Sample, SampleRecord, Selection

__all__ = ["temporal_prf", "annd", "keyframe_times", "TemporalPrecision", "TemporalRecall", "TemporalF1", "ANND", "LVH_THRESHOLD_S"]

#: LV-Haystack's distance threshold, seconds
LVH_THRESHOLD_S = 5.0


def _distances(a: Sequence[float], b: Sequence[float]) -> np.ndarray:
    """For each time in ``a``, the distance to the nearest time in ``b``."""
    x = np.asarray(a, dtype=np.float64)
    y = np.asarray(b, dtype=np.float64)
    nearest: np.ndarray = np.min(np.abs(x[:, None] - y[None, :]), axis=1)
    return nearest


def temporal_prf(selected: Sequence[float], keyframes: Sequence[float], threshold: float = LVH_THRESHOLD_S) -> tuple[float, float, float]:
    """Temporal precision, recall and F1 at ``threshold`` seconds (``<=``); NaNs when either side is empty.

    >>> temporal_prf([0.0, 10.0, 30.0], [12.0, 40.0])
    (0.3333333333333333, 0.5, 0.4)
    """
    if not len(selected) or not len(keyframes):
        return math.nan, math.nan, math.nan
    precision = float(np.mean(_distances(selected, keyframes) <= threshold))
    recall = float(np.mean(_distances(keyframes, selected) <= threshold))
    f1 = 2 * precision * recall / (precision + recall) if precision + recall > 0 else 0.0
    return precision, recall, f1


def annd(selected: Sequence[float], keyframes: Sequence[float]) -> tuple[float, float]:
    """Average nearest-neighbour distances (selected → keyframes, keyframes → selected), seconds.

    >>> annd([0.0, 10.0], [12.0])
    (7.0, 2.0)
    """
    if not len(selected) or not len(keyframes):
        return math.nan, math.nan
    return float(np.mean(_distances(selected, keyframes))), float(np.mean(_distances(keyframes, selected)))


def keyframe_times(sample: Sample, fallback: str | None = "evidence_midpoints") -> list[float]:
    """Ground-truth keyframe times of a sample (see the module docstring)."""
    md = sample.metadata
    if "keyframe_times" in md:
        return [float(t) for t in md["keyframe_times"]]
    if "gt_frame_index" in md and "fps" in md:
        fps = float(md["fps"])
        return [float(i) / fps for i in md["gt_frame_index"]]
    if fallback == "evidence_midpoints":
        return [(s.start + s.end) / 2 for s in sample.evidence]
    if fallback is None:
        return []
    raise ValueError(f"unknown keyframe fallback {fallback!r}; use 'evidence_midpoints' or None")


class _HaystackEvaluator(Evaluator):
    param_ranges = {"threshold": Range(ge=0)}
    key: ClassVar[str] = ""

    def __init__(self, threshold: float = LVH_THRESHOLD_S, fallback: str | None = "evidence_midpoints") -> None:
        if fallback not in ("evidence_midpoints", None):
            raise ValueError(f"unknown keyframe fallback {fallback!r}; use 'evidence_midpoints' or None")
        self.threshold = float(threshold)
        self.fallback = fallback

    def _prf(self, sample: Sample, pool: CandidatePool, selection: Selection) -> tuple[float, float, float]:
        return temporal_prf(selection.timestamps(pool), keyframe_times(sample, self.fallback), self.threshold)

    def score(self, sample: Sample, pool: CandidatePool, selection: Selection, answer: Answer | None, features: Features | None = None) -> Mapping[str, float]:
        p, r, f1 = self._prf(sample, pool, selection)
        return {self.name: {"precision": p, "recall": r, "f1": f1}[self.key]}

    def aggregate(self, records: Sequence[SampleRecord]) -> dict[str, float]:
        """The mean over scorable questions; 0.0 over none, as ``calculate_prf``."""
        value = mean_of(records, self.name)
        return {self.name: 0.0 if math.isnan(value) else value}


@evaluators.register("lvh_precision")
class TemporalPrecision(_HaystackEvaluator):
    """LV-Haystack temporal precision: selected frames within 5 s of a ground-truth keyframe.

    Reference: github.com/mll-lab-nu/TStar ``LVHaystackBench/val_tstar_results.py``
    (``calculate_prf``). Keyframes as the module docstring says.
    """

    key = "precision"


@evaluators.register("lvh_recall")
class TemporalRecall(_HaystackEvaluator):
    """LV-Haystack temporal recall: ground-truth keyframes within 5 s of a selected frame.

    Reference: github.com/mll-lab-nu/TStar ``LVHaystackBench/val_tstar_results.py``.
    """

    key = "recall"


@evaluators.register("lvh_f1")
class TemporalF1(_HaystackEvaluator):
    """LV-Haystack temporal F1 (per question, then averaged), threshold 5 s.

    Reference: github.com/mll-lab-nu/TStar ``LVHaystackBench/val_tstar_results.py``.
    """

    key = "f1"


@evaluators.register("lvh_annd")
class ANND(Evaluator):
    """LV-Haystack ANND (s): mean distance of selected frames to their nearest keyframe, and back.

    Reference: github.com/mll-lab-nu/TStar ``LVHaystackBench/val_tstar_results.py``
    (``calculate_annd``). Writes ``lvh_annd_precision`` (selected → keyframes)
    and ``lvh_annd_recall`` (keyframes → selected). Lower is better.
    """

    higher_is_better = False

    def __init__(self, fallback: str | None = "evidence_midpoints") -> None:
        if fallback not in ("evidence_midpoints", None):
            raise ValueError(f"unknown keyframe fallback {fallback!r}; use 'evidence_midpoints' or None")
        self.fallback = fallback

    @property
    def metrics(self) -> tuple[str, ...]:
        return ("lvh_annd_precision", "lvh_annd_recall")

    def score(self, sample: Sample, pool: CandidatePool, selection: Selection, answer: Answer | None, features: Features | None = None) -> Mapping[str, float]:
        to_key, to_selected = annd(selection.timestamps(pool), keyframe_times(sample, self.fallback))
        return {"lvh_annd_precision": to_key, "lvh_annd_recall": to_selected}
