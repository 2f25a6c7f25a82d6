"""LV-Haystack temporal P/R/F1 (5 s) and ANND against outputs of val_tstar_results.py itself."""

from __future__ import annotations

import math

import numpy as np
import pytest

from frameselect._engine.pipeline import aggregate
from frameselect.evaluators.base import Evaluator, mean_of
from frameselect.evaluators.haystack import annd, keyframe_times, temporal_prf
from frameselect.registry import evaluators
from frameselect.types import CandidatePool, Query, Sample, SampleRecord, Selection, Span

GT = [[12.0, 40.0], [5.0], [], [100.0, 103.0, 250.0], [7.5]]
PRED = [[0.0, 10.0, 30.0], [0.0, 10.0, 10.5], [1.0, 2.0], [98.0, 104.9, 105.1, 300.0], [2.5]]
# Outputs of running mll-lab-nu/TStar at commit 6b3a2e161a2f72c9940cdbeb48149fdf22f1a4c9,
# LVHaystackBench/val_tstar_results.py, on GT and PRED (as numpy arrays): calculate_prf(threshold=5) and
# calculate_annd (per scorable question; the third has no keyframe and is skipped)
PRF_REFERENCE = (0.6875, 0.7916666666666666, 0.7264705882352942)
ANND_REFERENCE = [(8.0, 6.0), (5.166666666666667, 5.0), (14.0, 17.96666666666667), (5.0, 5.0)]


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
    assert (mean_of(records, "lvh_precision"), mean_of(records, "lvh_recall"), mean_of(records, "lvh_f1")) == pytest.approx(PRF_REFERENCE, abs=1e-12)
    scorable = [r for r in records if not math.isnan(r.metrics["lvh_annd_precision"])]
    for record, expected in zip(scorable, ANND_REFERENCE, strict=True):
        assert (record.metrics["lvh_annd_precision"], record.metrics["lvh_annd_recall"]) == pytest.approx(expected, abs=1e-12)
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


# -- calculate_prf / calculate_annd run on seeded questions -------------------------------------
def lvh_cases(seed: int = 9) -> tuple[list[list[float]], list[list[float]]]:
    """Eight questions' keyframe and selected times (s); questions 2 and 5 select nothing."""
    rng = np.random.default_rng(seed)
    gt, pred = [], []
    for q in range(8):
        g = np.round(rng.uniform(0, 600, size=int(rng.integers(1, 5))), 2)
        p = np.round(rng.uniform(0, 600, size=int(rng.integers(2, 9))), 2) if q not in (2, 5) else np.array([])
        if q % 3 == 0 and len(p):
            p[: len(g)] = np.round(g[: len(p)] + rng.uniform(-6, 6, size=min(len(g), len(p))), 2)
        gt.append(g.tolist())
        pred.append(p.tolist())
    return gt, pred


# From running mll-lab-nu/TStar at commit 6b3a2e161a2f72c9940cdbeb48149fdf22f1a4c9,
# LVHaystackBench/val_tstar_results.py: calculate_prf(gt, pred, threshold=5) on lvh_cases(), and on no
# scorable question (the empty-selection question alone, and no question at all): (0.0, 0.0, 0.0) both.
LVH_PRF = (0.14285714285714282, 0.27777777777777773, 0.18787878787878787)
# calculate_annd on lvh_cases(): (selected -> keyframes, keyframes -> selected) per scorable question
LVH_ANND = [
    (107.40125, 5.575000000000003),
    (255.02428571428575, 119.21000000000004),
    (11.608571428571407, 2.4099999999999913),
    (70.19999999999999, 51.836666666666666),
    (135.02, 4.210000000000002),
    (124.70500000000001, 68.19),
]


def _lvh_records(gt: list[list[float]], pred: list[list[float]]) -> tuple[list[SampleRecord], list[Evaluator]]:
    evs = [evaluators.create(n) for n in ("lvh_precision", "lvh_recall", "lvh_f1", "lvh_annd")]
    records = []
    for i, (g, p) in enumerate(zip(gt, pred, strict=True)):
        pool = CandidatePool.from_timestamps(sorted(p))
        metrics: dict[str, float] = {}
        for ev in evs:
            metrics.update(ev.score(Sample(str(i), "v", Query("q"), None, (), {"keyframe_times": g}), pool, Selection(tuple(range(len(p)))), None))
        records.append(SampleRecord(str(i), metrics))
    return records, evs


def test_seeded_run_matches_calculate_prf_and_calculate_annd() -> None:
    gt, pred = lvh_cases()
    records, evs = _lvh_records(gt, pred)
    table = aggregate(records, evs)
    assert (table["lvh_precision"], table["lvh_recall"], table["lvh_f1"]) == pytest.approx(LVH_PRF, abs=1e-12)
    scorable = [r for r in records if not math.isnan(r.metrics["lvh_annd_precision"])]
    assert len(scorable) == len(LVH_ANND)
    for record, expected in zip(scorable, LVH_ANND, strict=True):
        assert (record.metrics["lvh_annd_precision"], record.metrics["lvh_annd_recall"]) == pytest.approx(expected, abs=1e-9)


def test_no_scorable_question_gives_what_calculate_prf_gives() -> None:
    gt, pred = lvh_cases()
    records, evs = _lvh_records([gt[2], gt[5]], [pred[2], pred[5]])
    table = aggregate(records, evs)
    assert (table["lvh_precision"], table["lvh_recall"], table["lvh_f1"]) == (0.0, 0.0, 0.0)
    assert aggregate([], evs)["lvh_f1"] == 0.0
    # calculate_annd returns an empty list there, without a mean: NaN
    assert math.isnan(table["lvh_annd_precision"]) and math.isnan(table["lvh_annd_recall"])
