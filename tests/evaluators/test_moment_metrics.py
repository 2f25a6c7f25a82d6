"""QVHighlights moment retrieval mAP and R1: against moment_detr's standalone_eval, and the selection's windows."""

from __future__ import annotations

import math

import numpy as np
import pytest

from frameselect._engine.pipeline import aggregate
from frameselect.evaluators.moments import (
    MR_BRIEF_KEYS,
    MR_FULL_KEYS,
    MR_IOU_THRESHOLDS,
    MomentRetrievalMAP,
    moment_ap,
    moment_r1,
    moment_retrieval_scores,
    selection_moments,
)
from frameselect.registry import evaluators
from frameselect.types import CandidatePool, Query, Sample, SampleRecord, Selection, Span


def _pool(times: list[float], duration: float) -> CandidatePool:
    return CandidatePool("v", np.asarray(times, dtype=np.float64), np.arange(len(times)), "given", duration)


NAN = math.nan


def mr_cases(seed: int = 7, n: int = 12) -> list[tuple[list[list[float]], list[list[float]]]]:
    """Seeded questions: 1-3 ground-truth windows, 1-12 predictions (most near a window), best score first."""
    rng = np.random.default_rng(seed)
    cases = []
    for _ in range(n):
        n_gt = int(rng.integers(1, 4))
        gt = []
        for _ in range(n_gt):
            length = 2 * int(rng.choice([1, 3, 5, 8, 12, 20, 40]))
            start = 2 * int(rng.integers(0, (150 - length) // 2 + 1))
            gt.append([float(start), float(start + length)])
        n_pred = int(rng.integers(1, 13))
        pred = []
        for _ in range(n_pred):
            if rng.uniform() < 0.6:
                g = gt[int(rng.integers(0, n_gt))]
                a = max(0, int(g[0]) + 2 * int(rng.integers(-3, 4)))
                b = min(150, int(g[1]) + 2 * int(rng.integers(-3, 4)))
            else:
                a, b = sorted(2 * int(x) for x in rng.integers(0, 76, size=2))
            if b <= a:
                b = a + 2
            pred.append([float(a), float(b), round(float(rng.uniform(0, 1)), 1)])
        pred.sort(key=lambda w: -w[2])
        cases.append((gt, pred))
    return cases


# Per question (MR-full-mAP, @0.5, @0.75, MR-short-mAP, -middle-, -long-), from running jayleicn/moment_detr at commit
# b7e553ac3b0c898ee6b85e03ee507c064eab89ca: standalone_eval/utils.py compute_average_precision_detection
# with tiou_thresholds 0.5:0.05:0.95 on the first 10 predictions, against all windows and against each
# length bucket's windows as standalone_eval/eval.py get_data_by_range keeps them (NAN: no window in it).
REFERENCE_PER_QUESTION = [
    (0.29999999999999993, 0.6666666666666666, 0.16666666666666666, NAN, 0.3, 0.45),
    (0.24500000000000002, 0.5, 0.25, NAN, 0.24500000000000002, NAN),
    (0.15214285714285716, 0.375, 0.1, 0.025, NAN, 0.25428571428571434),
    (0.35, 0.5, 0.5, 0.7, 0.0, NAN),
    (0.4666666666666667, 1.0, 0.3333333333333333, NAN, 0.4666666666666667, NAN),
    (0.20357142857142857, 0.5, 0.125, NAN, 0.20357142857142857, NAN),
    (0.0, 0.0, 0.0, 0.0, NAN, NAN),
    (0.3166666666666666, 0.5555555555555556, 0.16666666666666666, 0.0, NAN, 0.475),
    (0.1875, 0.375, 0.16666666666666666, 0.0875, 0.15333333333333332, NAN),
    (0.0, 0.0, 0.0, 0.0, NAN, NAN),
    (0.0, 0.0, 0.0, 0.0, NAN, NAN),
    (0.06777777777777778, 0.3333333333333333, 0.0, 0.0, 0.12, 0.041666666666666664),
]

# Benchmark level (percent, rounded to 0.01) from the same commit's eval_moment_retrieval on all 12
# questions: bucket -> (MR-mAP average, @0.5, @0.75).
REFERENCE_BENCHMARK = {"full": (19.08, 40.05, 15.07), "short": (10.16, 15.62, 14.06), "middle": (21.27, 54.76, 11.55), "long": (30.52, 64.58, 17.5)}

#: the reference prints percentages as float(f"{100 * v:.2f}"): within half a hundredth (a half-way value either way)
ROUNDED = 0.005 + 1e-9

KEYS = ("MR-full-mAP", "MR-full-mAP@0.5", "MR-full-mAP@0.75", "MR-short-mAP", "MR-middle-mAP", "MR-long-mAP")


def _windows(rows: list[list[float]]) -> list[tuple[float, ...]]:
    return [tuple(r) for r in rows]


@pytest.mark.parametrize("index", range(12))
def test_per_question_values_match_moment_detr(index: int) -> None:
    gt, pred = mr_cases()[index]
    ours = moment_retrieval_scores(_windows(pred), _windows(gt))  # type: ignore[arg-type]
    for key, expected in zip(KEYS, REFERENCE_PER_QUESTION[index], strict=True):
        if math.isnan(expected):
            assert math.isnan(ours[key]), key
        else:
            assert ours[key] == pytest.approx(expected, abs=1e-12), key


def test_benchmark_means_match_eval_moment_retrieval() -> None:
    per_question = [moment_retrieval_scores(_windows(p), _windows(g)) for g, p in mr_cases()]  # type: ignore[arg-type]

    def mean(key: str) -> float:
        values = [q[key] for q in per_question if not math.isnan(q[key])]
        return 100 * sum(values) / len(values)

    for bucket, (average, at_05, at_075) in REFERENCE_BENCHMARK.items():
        assert mean(f"MR-{bucket}-mAP") == pytest.approx(average, abs=ROUNDED), bucket
        assert mean(f"MR-{bucket}-mAP@0.5") == pytest.approx(at_05, abs=ROUNDED), bucket
        assert mean(f"MR-{bucket}-mAP@0.75") == pytest.approx(at_075, abs=ROUNDED), bucket


def test_moment_ap_hand_computed() -> None:
    # one window; predictions ranked 0.9 (IoU 1), 0.8 (IoU 0.5 with [0,10]: [5,15] -> 5/15), 0.7 exact duplicate
    ap = moment_ap([(0.0, 10.0, 0.9), (5.0, 15.0, 0.8), (0.0, 10.0, 0.7)], [(0.0, 10.0)], (0.3, 0.5))
    # the first claims the window at both thresholds, the later ones are false positives: AP 1
    assert ap.tolist() == [1.0, 1.0]
    # two windows, the first hit ranked second: precision 1/2 at recall 1/2, then 2/3 at recall 1;
    # the interpolated envelope is 2/3 at both recall steps
    ap2 = moment_ap([(50.0, 60.0, 0.9), (0.0, 10.0, 0.8), (20.0, 30.0, 0.1)], [(0.0, 10.0), (20.0, 30.0)], (0.5,))
    assert ap2[0] == pytest.approx(0.5 * (2 / 3) + 0.5 * (2 / 3))
    # a later window found first, then nothing: precision 1 at recall 1/2
    assert moment_ap([(20.0, 30.0, 0.9), (70.0, 80.0, 0.5)], [(0.0, 10.0), (20.0, 30.0)], (0.5,))[0] == 0.5
    assert moment_ap([], [(0.0, 1.0)]).tolist() == [0.0] * 10
    assert np.isnan(moment_ap([(0.0, 1.0, 1.0)], [])).all()
    assert MR_IOU_THRESHOLDS == (0.5, 0.55, 0.6, 0.65, 0.7, 0.75, 0.8, 0.85, 0.9, 0.95)


def test_only_the_ten_first_predictions_count() -> None:
    # compute_mr_ap (moment_detr b7e553a) on these three: 0.0, 9.09 with max_pred_windows=11, and 10.0
    gt = [(0.0, 10.0)]
    decoys = [(100.0, 110.0, 0.9)] * 10
    assert moment_retrieval_scores([*decoys, (0.0, 10.0, 0.1)], gt)["MR-full-mAP"] == 0.0
    assert moment_retrieval_scores([*decoys, (0.0, 10.0, 0.1)], gt, max_windows=11)["MR-full-mAP"] == pytest.approx(1 / 11)
    # the cut is in the order given, before ranking, as compute_mr_ap cuts pred_relevant_windows
    assert moment_retrieval_scores([(100.0, 110.0, 0.9)] * 9 + [(0.0, 10.0, 0.1), (50.0, 60.0, 1.0)], gt)["MR-full-mAP"] == pytest.approx(1 / 10)


def test_selection_windows_merge_consecutive_clips() -> None:
    pool = _pool([float(t) for t in range(0, 20)], 19.0)
    # frames at 0,1 (clip 0), 3 (clip 1), 8 (clip 4), 18 (clip 9, cut at the 19-s duration)
    sel = Selection((0, 1, 3, 8, 18), scores=(0.1, 0.4, 0.2, 0.9, 0.3))
    assert selection_moments(pool, sel, 2.0, 19.0) == [(8.0, 10.0, 0.9), (0.0, 4.0, 0.4), (18.0, 19.0, 0.3)]
    assert selection_moments(pool, Selection((5,)), 2.0) == [(4.0, 6.0, 1.0)]
    assert selection_moments(pool, Selection(()), 2.0) == []


def _sample(spans: list[tuple[float, float]], **metadata: object) -> Sample:
    return Sample("q", "v.mp4", Query("a man walks"), None, tuple(Span(a, b) for a, b in spans), dict(metadata))


def test_evaluator_scores_the_selection_windows() -> None:
    ev = evaluators.create("mr_map")
    assert isinstance(ev, MomentRetrievalMAP)
    pool = _pool([float(t) for t in range(0, 150, 2)], 150.0)
    sample = _sample([(20.0, 26.0), (100.0, 140.0)], duration=150.0, clip_length=2.0)
    sel = Selection((10, 11, 12, 60), scores=(0.5, 0.9, 0.2, 0.7))  # windows [20,26] 0.9 and [120,122] 0.7
    scores = ev.score(sample, pool, sel, None)
    assert tuple(scores) + ("grounding_from_answer",) == ev.score_keys == (*MR_FULL_KEYS, "grounding_from_answer")  # no answer: no source to name
    assert ev.metrics == (*MR_BRIEF_KEYS, "grounding_from_answer")
    assert scores == moment_retrieval_scores([(20.0, 26.0, 0.9), (120.0, 122.0, 0.7)], [(20.0, 26.0), (100.0, 140.0)])
    assert scores["MR-full-mAP@0.5"] == 0.5  # [20,26] found first, [100,140] never: precision 1 at recall 1/2
    assert scores["MR-short-mAP"] == 1.0
    assert math.isnan(scores["MR-middle-mAP"])  # no 10-30 s window
    assert scores["MR-long-mAP"] == 0.0
    # R1: the first (best scored) window [20,26] is exactly the short window
    assert scores["MR-full-R1@0.95"] == 1.0 and scores["MR-short-R1@0.95"] == 1.0 and scores["MR-long-R1@0.5"] == 0.0


def test_an_empty_selection_is_left_out_as_the_reference_leaves_out_questions_without_predictions() -> None:
    # moment_detr's compute_mr_ap at b7e553a gives 100.0 for [question 0 without predictions, question 1 exact]:
    # the question without predictions is not averaged in
    ev = MomentRetrievalMAP()
    pool = _pool([0.0, 2.0, 4.0, 6.0, 8.0], 10.0)
    sample = _sample([(0.0, 10.0)])
    empty = ev.score(sample, pool, Selection(()), None)
    full = ev.score(sample, pool, Selection((0, 1, 2, 3, 4)), None)
    assert all(math.isnan(v) for v in empty.values())
    assert full["MR-full-mAP"] == 1.0
    records = [SampleRecord("a", empty), SampleRecord("b", full)]
    assert aggregate(records, [ev])["MR-full-mAP"] == 1.0
    assert aggregate(records, [ev])["MR-full-R1@0.7"] == 1.0
    # a bucket no question falls in: the reference raises TypeError there; NaN here
    assert math.isnan(aggregate(records, [ev])["MR-long-mAP"])


def test_bad_parameters_are_rejected() -> None:
    with pytest.raises(ValueError, match="clip_length"):
        MomentRetrievalMAP(clip_length=0)
    with pytest.raises(ValueError, match="max_windows"):
        MomentRetrievalMAP(max_windows=0)
    with pytest.raises(ValueError, match="report"):
        MomentRetrievalMAP(report="all")


# -- the full eval_submission dictionary: every threshold, mAP and R1 per length bucket ---------------

#: two questions whose first submitted window is not the best scored one (R1 judges the first one given)
R1_ORDER_CASES = [
    ([[10.0, 20.0], [40.0, 80.0]], [[44.0, 78.0, 0.2], [10.0, 20.0, 0.9], [0.0, 6.0, 0.5]]),
    ([[0.0, 4.0], [100.0, 130.0]], [[96.0, 126.0, 0.1], [0.0, 4.0, 0.3]]),
]

# eval_submission(submission, ground_truth) of jayleicn/moment_detr at commit b7e553ac3b0c898ee6b85e03ee507c064eab89ca
# (standalone_eval/eval.py) on the 12 seeded questions of mr_cases() and the two above (qids 0..13), in percent
# rounded to 0.01: bucket -> (["MR-mAP"]["average"], ["MR-mAP"][t] and ["MR-R1"][t] for t = 0.5, 0.55, ..., 0.95).
REFERENCE_FULL = {
    "full": (
        27.54,
        [47.42, 47.02, 43.55, 34.29, 28.04, 26.01, 17.38, 12.62, 10.24, 8.84],
        [42.86, 42.86, 42.86, 35.71, 28.57, 21.43, 14.29, 7.14, 0.0, 0.0],
    ),
    "short": (28.12, [32.5, 32.5, 31.25, 31.25, 31.25, 31.25, 31.25, 20.0, 20.0, 20.0], [10.0, 10.0, 10.0, 10.0, 10.0, 10.0, 10.0, 0.0, 0.0, 0.0]),
    "middle": (22.36, [54.17, 54.17, 50.42, 29.08, 17.83, 16.35, 1.56, 0.0, 0.0, 0.0], [37.5, 37.5, 37.5, 25.0, 12.5, 12.5, 0.0, 0.0, 0.0, 0.0]),
    "long": (29.75, [58.33, 56.67, 47.33, 25.67, 25.67, 20.67, 20.67, 20.67, 14.0, 7.86], [60.0, 60.0, 60.0, 40.0, 40.0, 20.0, 20.0, 20.0, 0.0, 0.0]),
}
#: what eval_submission's "brief" dictionary printed for the same 14 questions
REFERENCE_BRIEF = {
    "MR-full-R1@0.5": 42.86,
    "MR-full-R1@0.7": 28.57,
    "MR-full-mAP": 27.54,
    "MR-full-mAP@0.5": 47.42,
    "MR-full-mAP@0.75": 26.01,
    "MR-long-mAP": 29.75,
    "MR-middle-mAP": 22.36,
    "MR-short-mAP": 28.12,
}

# Per question and bucket, compute_mr_r1 (same commit) on that question alone after get_data_by_range, one digit per
# threshold 0.5..0.95 (1: R1 hit); None: no window of the bucket.
REFERENCE_R1 = [
    {"short": None, "middle": "1110000000", "long": "1110000000", "full": "1110000000"},
    {"short": None, "middle": "0000000000", "long": None, "full": "0000000000"},
    {"short": "0000000000", "middle": None, "long": "0000000000", "full": "0000000000"},
    {"short": "1111111000", "middle": "0000000000", "long": None, "full": "1111111000"},
    {"short": None, "middle": "1111000000", "long": None, "full": "1111000000"},
    {"short": None, "middle": "0000000000", "long": None, "full": "0000000000"},
    {"short": "0000000000", "middle": None, "long": None, "full": "0000000000"},
    {"short": "0000000000", "middle": None, "long": "1111100000", "full": "1111100000"},
    {"short": "0000000000", "middle": "0000000000", "long": None, "full": "0000000000"},
    {"short": "0000000000", "middle": None, "long": None, "full": "0000000000"},
    {"short": "0000000000", "middle": None, "long": None, "full": "0000000000"},
    {"short": "0000000000", "middle": "0000000000", "long": "0000000000", "full": "0000000000"},
    {"short": "0000000000", "middle": None, "long": "1111111100", "full": "1111111100"},
    {"short": "0000000000", "middle": "1111110000", "long": None, "full": "1111110000"},
]
# compute_average_precision_detection (standalone_eval/utils.py, same commit) on the two R1_ORDER_CASES questions,
# thresholds 0.5..0.95, per bucket holding a window
REFERENCE_AP_ORDER_CASES = [
    {"short": [1.0] * 10, "long": [1 / 3] * 8 + [0.0, 0.0], "full": [5 / 6] * 8 + [0.5, 0.5]},
    {"short": [1.0] * 10, "middle": [0.5] * 6 + [0.0] * 4, "full": [1.0] * 6 + [0.5] * 4},
]


def _all_cases() -> list[tuple[list[list[float]], list[list[float]]]]:
    return mr_cases() + R1_ORDER_CASES


@pytest.mark.parametrize("index", range(14))
def test_r1_per_bucket_matches_compute_mr_r1(index: int) -> None:
    gt, pred = _all_cases()[index]
    ours = moment_retrieval_scores(_windows(pred), _windows(gt))  # type: ignore[arg-type]
    for bucket, digits in REFERENCE_R1[index].items():
        values = [ours[f"MR-{bucket}-R1@{t}"] for t in MR_IOU_THRESHOLDS]
        if digits is None:
            assert all(math.isnan(v) for v in values), bucket
            assert math.isnan(ours[f"MR-{bucket}-mAP"]), bucket
        else:
            assert values == [float(d) for d in digits], bucket


@pytest.mark.parametrize("index", range(2))
def test_ap_at_every_threshold_matches_compute_average_precision_detection(index: int) -> None:
    gt, pred = R1_ORDER_CASES[index]
    ours = moment_retrieval_scores(_windows(pred), _windows(gt))  # type: ignore[arg-type]
    for bucket, expected in REFERENCE_AP_ORDER_CASES[index].items():
        assert [ours[f"MR-{bucket}-mAP@{t}"] for t in MR_IOU_THRESHOLDS] == pytest.approx(expected, abs=1e-12), bucket
        assert ours[f"MR-{bucket}-mAP"] == pytest.approx(sum(expected) / 10, abs=1e-12), bucket


def test_benchmark_dictionary_matches_eval_submission() -> None:
    ev = MomentRetrievalMAP(report="full")
    assert ev.metrics == (*MR_FULL_KEYS, "grounding_from_answer") and len(MR_FULL_KEYS) == 4 * 21
    records = [SampleRecord(str(i), moment_retrieval_scores(_windows(p), _windows(g))) for i, (g, p) in enumerate(_all_cases())]  # type: ignore[arg-type]
    table = ev.aggregate(records)
    assert tuple(table) == (*MR_FULL_KEYS, "grounding_from_answer")
    assert math.isnan(table["grounding_from_answer"])  # no answers: no source to name
    for bucket, (average, ap, r1) in REFERENCE_FULL.items():
        assert 100 * table[f"MR-{bucket}-mAP"] == pytest.approx(average, abs=ROUNDED), bucket
        for t, a, r in zip(MR_IOU_THRESHOLDS, ap, r1, strict=True):
            assert 100 * table[f"MR-{bucket}-mAP@{t}"] == pytest.approx(a, abs=ROUNDED), (bucket, t)
            assert 100 * table[f"MR-{bucket}-R1@{t}"] == pytest.approx(r, abs=ROUNDED), (bucket, t)
    brief = MomentRetrievalMAP().aggregate(records)
    assert set(brief) - {"grounding_from_answer"} == set(REFERENCE_BRIEF) == set(MR_BRIEF_KEYS)
    for key, expected in REFERENCE_BRIEF.items():
        assert 100 * brief[key] == pytest.approx(expected, abs=ROUNDED), key


def test_moment_r1_hand_computed() -> None:
    # the first window given is judged, whatever its score: [0,10] against [0,10] and [50,60]
    ours = moment_retrieval_scores([(50.0, 60.0, 0.1), (0.0, 10.0, 0.9)], [(0.0, 10.0)])
    assert ours["MR-full-R1@0.5"] == 0.0 and ours["MR-full-mAP@0.5"] == 1.0
    # best of two windows by IoU: [2,10] (IoU 0.8 with [0,10]) rather than [30,40]
    assert moment_r1((0.0, 10.0), [(30.0, 40.0), (2.0, 10.0)]).tolist() == [1.0] * 7 + [0.0] * 3
    assert moment_r1((0.0, 10.0), [(20.0, 30.0)]).tolist() == [0.0] * 10
    assert np.isnan(moment_r1((0.0, 1.0), [])).all()
