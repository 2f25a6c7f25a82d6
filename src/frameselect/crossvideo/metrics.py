"""Metrics of questions over several videos: per-video evidence recall, binding accuracy, accuracy per level and task.

- :func:`per_video_evidence_recall`: for each video, the fraction of its
  evidence spans hit by a frame selected in that video
  (:func:`~frameselect.evaluators.evidence.evidence_recall` per video); the
  sample's value is the mean over the videos that have evidence.
- :func:`binding_accuracy`: of the cross-video bindings a joint selector made
  (:attr:`~frameselect.types.MultiSelection.bindings`), the fraction whose two
  frames show the same entity, read from labels ``{video_id: [(start, end,
  entity), ...]}`` (a frame outside every labelled span shows nothing).
- :func:`accuracy_by`: the mean of a per-sample metric grouped by a metadata
  key (``level`` for the taxonomy level, ``task_type`` for the task).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from frameselect.evaluators.evidence import evidence_recall
from frameselect.types import CandidatePool, MultiSelection, Sample, SampleRecord

__all__ = ["per_video_evidence_recall", "binding_accuracy", "entity_at", "accuracy_by"]


def per_video_evidence_recall(sample: Sample, pools: Mapping[str, CandidatePool], selection: MultiSelection) -> tuple[float, dict[str, float]]:
    """``(mean over videos with evidence, {video_id: recall})``; NaN for a video without evidence (and a mean over none).

    >>> from frameselect.types import Query, Selection, Span, VideoRef
    >>> s = Sample.across("q", [VideoRef("video_1", "a", (Span(0, 1),)), VideoRef("video_2", "b", (Span(5, 6), Span(8, 9)))], Query("?"))
    >>> pools = {v: CandidatePool.from_timestamps(range(10)) for v in ("video_1", "video_2")}
    >>> m = MultiSelection({"video_1": Selection((7,)), "video_2": Selection((5,))})
    >>> per_video_evidence_recall(s, pools, m)
    (0.25, {'video_1': 0.0, 'video_2': 0.5})
    """
    per = {}
    for ref in sample.video_refs:
        sel = selection.by_video.get(ref.id)
        times = sel.timestamps(pools[ref.id]) if sel is not None else []
        per[ref.id] = evidence_recall(times, ref.evidence)
    valid = [v for v in per.values() if not math.isnan(v)]
    return (sum(valid) / len(valid) if valid else math.nan), per


def entity_at(labels: Sequence[Sequence[Any]], t: float) -> str | None:
    """The entity labelled at time ``t`` (the first ``(start, end, entity)`` holding it), else None."""
    for start, end, entity in labels:
        if float(start) <= t <= float(end):
            return str(entity)
    return None


def binding_accuracy(selection: MultiSelection, pools: Mapping[str, CandidatePool], labels: Mapping[str, Sequence[Sequence[Any]]]) -> float:
    """The fraction of bindings whose two frames show the same labelled entity; NaN without bindings.

    >>> from frameselect.types import Selection
    >>> pools = {v: CandidatePool.from_timestamps(range(10)) for v in ("video_1", "video_2")}
    >>> m = MultiSelection({"video_1": Selection((1, 7)), "video_2": Selection((2, 3))}, bindings=(("video_1", 1, "video_2", 2), ("video_1", 7, "video_2", 3)))
    >>> binding_accuracy(m, pools, {"video_1": [(0, 2, "dog"), (6, 8, "cat")], "video_2": [(2, 2.5, "dog")]})
    0.5
    """
    if not selection.bindings:
        return math.nan
    good = 0
    for a, i, b, j in selection.bindings:
        ea = entity_at(labels.get(a, ()), float(pools[a].timestamps[i]))
        eb = entity_at(labels.get(b, ()), float(pools[b].timestamps[j]))
        good += int(ea is not None and ea == eb)
    return good / len(selection.bindings)


def accuracy_by(records: Sequence[SampleRecord], metric: str, key: str) -> dict[str, float]:
    """The mean of ``metric`` over ok records, grouped by ``metadata[key]`` (``"unknown"`` when absent), NaN values left out."""
    groups: dict[str, list[float]] = {}
    for r in records:
        if r.status != "ok" or metric not in r.metrics or math.isnan(float(r.metrics[metric])):
            continue
        groups.setdefault(str(r.metadata.get(key, "unknown")), []).append(float(r.metrics[metric]))
    return {g: sum(v) / len(v) for g, v in sorted(groups.items())}
