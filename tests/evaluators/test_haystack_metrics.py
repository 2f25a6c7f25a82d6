"""LV-Haystack temporal P/R/F1 (5 s) and ANND against a transliteration of val_tstar_results.py."""

from __future__ import annotations

import math

import numpy as np
import pytest

from frameselect.evaluators.base import mean_of
from frameselect.evaluators.haystack import annd, keyframe_times, temporal_prf
from frameselect.registry import evaluators
from frameselect.types import CandidatePool, Query, Sample, SampleRecord, Selection, Span


def ref_calculate_prf(list_gt: list[np.ndarray], list_pred: list[np.ndarray], threshold: float = 5) -> tuple[float, float, float]:
    """mll-lab-nu/TStar LVHaystackBench/val_tstar_results.py calculate_prf."""
    ps, rs, fs = [], [], []
    for gt, pred in zip(list_gt, list_pred, strict=True):
        if gt.size == 0 or pred.size == 0:
            continue
        d_gt = np.min(np.abs(gt[:, np.newaxis] - pred), axis=1)
        d_pred = np.min(np.abs(pred[:, np.newaxis] - gt), axis=1)
        p = np.sum(d_pred <= threshold) / len(pred)
        r = np.sum(d_gt <= threshold) / len(gt)
        ps.append(p)
        rs.append(r)
        fs.append(2 * p * r / (p + r) if p + r > 0 else 0.0)
    return float(np.mean(ps)), float(np.mean(rs)), float(np.mean(fs))


def ref_calculate_annd(list_gt: list[np.ndarray], list_pred: list[np.ndarray]) -> list[tuple[float, float]]:
    out = []
    for gt, pred in zip(list_gt, list_pred, strict=True):
        if gt.size == 0 or pred.size == 0:
            continue
        out.append((float(np.mean(np.min(np.abs(pred[:, None] - gt), axis=1))), float(np.mean(np.min(np.abs(gt[:, None] - pred), axis=1)))))
    return out


GT = [[12.0, 40.0], [5.0], [], [100.0, 103.0, 250.0], [7.5]]
PRED = [[0.0, 10.0, 30.0], [0.0, 10.0, 10.5], [1.0, 2.0], [98.0, 104.9, 105.1, 300.0], [2.5]]


def test_means_over_questions_match_the_reference() -> None:
    pool = CandidatePool.from_timestamps(sorted({t for p in PRED for t in p}))
    index = {float(t): i for i, t in enumerate(pool.timestamps)}
    records = []
    evs = [evaluators.create(n) for n in ("lvh_precision", "lvh_recall", "lvh_f1", "lvh_annd")]
    for i, (gt, pred) in enumerate(zip(GT, PRED, strict=True)):
        sample = Sample(str(i), "v", Query("q"), None, (), {"keyframe_times": gt})
        sel = Selection(tuple(sorted(index[t] for t in pred)))
        metrics: dict[str, float] = {}
        for ev in evs:
            metrics.update(ev.score(sample, pool, sel, None))
        records.append(SampleRecord(str(i), metrics))
    ref = ref_calculate_prf([np.array(g) for g in GT], [np.array(p) for p in PRED])
    assert (mean_of(records, "lvh_precision"), mean_of(records, "lvh_recall"), mean_of(records, "lvh_f1")) == pytest.approx(ref)
    ref_annd = ref_calculate_annd([np.array(g) for g in GT], [np.array(p) for p in PRED])
    assert mean_of(records, "lvh_annd_precision") == pytest.approx(np.mean([a for a, _ in ref_annd]))
    assert mean_of(records, "lvh_annd_recall") == pytest.approx(np.mean([b for _, b in ref_annd]))
    assert evaluators.create("lvh_annd").higher_is_better is False


def test_hand_computed_values_and_threshold() -> None:
    assert temporal_prf([0.0, 10.0, 30.0], [12.0, 40.0]) == pytest.approx((1 / 3, 1 / 2, 0.4))
    assert temporal_prf([0.0], [5.0]) == (1.0, 1.0, 1.0)  # exactly 5 s counts
    assert temporal_prf([0.0], [5.01]) == (0.0, 0.0, 0.0)
    assert temporal_prf([0.0], [8.0], threshold=10) == (1.0, 1.0, 1.0)
    assert all(math.isnan(v) for v in temporal_prf([], [1.0]))
    assert annd([0.0, 10.0], [12.0]) == (7.0, 2.0)


def test_keyframe_sources() -> None:
    assert keyframe_times(Sample("a", "v", Query("q"), None, (), {"keyframe_times": [1, 2]})) == [1.0, 2.0]
    assert keyframe_times(Sample("a", "v", Query("q"), None, (), {"gt_frame_index": [30, 90], "fps": 30})) == [1.0, 3.0]
    spans = Sample("a", "v", Query("q"), None, (Span(2, 4), Span(10, 11)))
    assert keyframe_times(spans) == [3.0, 10.5]
    assert keyframe_times(spans, fallback=None) == []
    pool = CandidatePool.from_timestamps([0.0, 3.0])
    assert math.isnan(evaluators.create("lvh_f1", fallback=None).score(spans, pool, Selection((1,)), None)["lvh_f1"])
