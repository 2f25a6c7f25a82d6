"""QVHighlights HL-mAP / HL-Hit@1 against moment_detr's standalone_eval definitions."""

from __future__ import annotations

import math

import numpy as np
import pytest

from frameselect.evaluators.highlight import clip_saliency, gt_saliency, hl_scores, saliency_ap
from frameselect.registry import evaluators
from frameselect.types import CandidatePool, Features, Query, Sample, Selection


def ref_get_ap(y_true: np.ndarray, y_predict: np.ndarray) -> float:
    """moment_detr standalone_eval/utils.py get_ap(interpolate=True, point_11=False)."""
    sklearn_metrics = pytest.importorskip("sklearn.metrics")
    if len(set(y_true)) == 1:
        return 0 if y_true[0] == 0 else 1
    precision, recall, _ = sklearn_metrics.precision_recall_curve(y_true, y_predict)
    recall = recall.astype(np.float32)
    for i in range(1, len(precision)):
        precision[i] = max(precision[i - 1], precision[i])
    indices = np.where(np.diff(recall))
    return float(np.mean(precision[indices]))


def ref_hl(gt_full: np.ndarray, pred: np.ndarray, min_score: int = 4) -> tuple[float, float]:
    """compute_hl_ap and compute_hl_hit1 for one query (mk_gt_scores already applied)."""
    binary = (gt_full >= min_score).astype(float)
    top = int(np.argmax(pred))
    hit = float(np.max(binary[top])) if top < len(binary) else 0.0
    aps = []
    for w in range(binary.shape[1]):
        y_true = binary[:, w]
        y_pred = np.array(pred, dtype=float)
        if len(y_true) < len(y_pred):
            y_pred = y_pred[: len(y_true)]
        elif len(y_true) > len(y_pred):
            padded = np.zeros(len(y_true))
            padded[: len(y_pred)] = y_pred
            y_pred = padded
        aps.append(ref_get_ap(y_true, y_pred))
    return float(np.mean(aps)), hit


AP_CASES = [
    ([1, 0, 1, 0], [0.9, 0.8, 0.7, 0.1]),
    ([0, 0, 1, 1, 0, 1], [0.5, 0.5, 0.5, 0.2, 0.9, 0.2]),  # ties
    ([1, 1, 0, 0, 0], [0.0, 0.0, 0.0, 0.0, 0.0]),  # all tied
    ([0, 1, 0, 0, 1, 1, 0, 1], [3, 1, 4, 1, 5, 9, 2, 6]),
    ([0, 0, 0], [1, 2, 3]),
    ([1, 1], [1, 2]),
]


@pytest.mark.parametrize(("truth", "score"), AP_CASES)
def test_ap_matches_moment_detr_get_ap(truth: list[int], score: list[float]) -> None:
    assert saliency_ap(truth, score) == pytest.approx(ref_get_ap(np.array(truth), np.array(score, dtype=float)))


def test_hl_scores_match_reference() -> None:
    rng = np.random.default_rng(3)
    for _ in range(20):
        n = int(rng.integers(3, 12))
        gt = rng.integers(0, 5, size=(n, 3)).astype(float)
        pred = np.round(rng.random(n + int(rng.integers(-2, 3))), 1)
        assert hl_scores(gt, pred) == pytest.approx(ref_hl(gt, pred))
        assert hl_scores(gt, pred, 2) == pytest.approx(ref_hl(gt, pred, 2))


def test_hand_computed_hit_and_map() -> None:
    gt = np.array([[0, 0, 0], [4, 2, 1], [1, 1, 4], [0, 0, 0]], dtype=float)
    # top clip 1 is "VeryGood" for annotator 0 only -> hit
    ap, hit = hl_scores(gt, np.array([0.1, 0.9, 0.5, 0.0]))
    assert hit == 1.0
    # annotator 0: positive clip 1 ranked first -> AP 1; annotator 1: none -> 0; annotator 2: clip 2 ranked second -> 1/2
    assert ap == pytest.approx((1.0 + 0.0 + 0.5) / 3)
    assert hl_scores(gt, np.array([0.9, 0.1, 0.1, 0.1]))[1] == 0.0


def test_ground_truth_in_qvhighlights_form() -> None:
    sample = Sample("q", "v", Query("q"), None, (), {"relevant_clip_ids": [1, 3], "saliency_scores": [[4, 4, 2], [0, 1, 3]], "duration": 10})
    full = gt_saliency(sample)
    assert full is not None and full.shape == (5, 3)
    assert full[1].tolist() == [4, 4, 2] and full[3].tolist() == [0, 1, 3] and full[0].sum() == 0
    per_clip = Sample("q", "v", Query("q"), None, (), {"saliency_scores": [0, 4, 2]})
    assert gt_saliency(per_clip).tolist() == [[0], [4], [2]]  # type: ignore[union-attr]
    assert gt_saliency(Sample("q", "v", Query("q"))) is None


POOL = CandidatePool.from_timestamps([0.5, 1.5, 2.5, 3.5, 4.5, 5.5, 6.5, 7.5])  # 2 frames per 2-s clip


def test_clip_saliency_from_selection_scores_relevance_or_ones() -> None:
    sel = Selection((1, 4, 5), scores=(0.2, 0.9, 0.4))
    assert clip_saliency(POOL, sel, 4).tolist() == [0.2, -0.8, 0.9, -0.8]
    relevance = Features(scores=np.array([0.0, 0.3, 0.0, 0.0, 0.1, 0.7, 0.0, 0.0]))
    assert clip_saliency(POOL, Selection((1, 4, 5)), 4, features=relevance).tolist() == [0.3, -0.9, 0.7, -0.9]
    assert clip_saliency(POOL, Selection((6,)), 4).tolist() == [0.0, 0.0, 0.0, 1.0]


def test_evaluators() -> None:
    sample = Sample("q", "v", Query("q"), None, (), {"saliency_scores": [[0, 0, 0], [4, 2, 1], [1, 1, 4], [0, 0, 0]]})
    sel = Selection((2, 4), scores=(0.9, 0.5))  # clip 1 (score 0.9) then clip 2 (0.5)
    assert evaluators.create("hl_hit1").score(sample, POOL, sel, None) == {"hl_hit1": 1.0}
    assert evaluators.create("hl_map").score(sample, POOL, sel, None) == {"hl_map": pytest.approx((1.0 + 0.0 + 0.5) / 3)}
    assert evaluators.create("hl_hit1", min_score=2).score(sample, POOL, Selection((0,)), None) == {"hl_hit1": 0.0}
    assert evaluators.create("hl_hit1", min_score=2).score(sample, POOL, Selection((4,)), None) == {"hl_hit1": 1.0}
    assert math.isnan(evaluators.create("hl_map").score(Sample("x", "v", Query("q")), POOL, sel, None)["hl_map"])
