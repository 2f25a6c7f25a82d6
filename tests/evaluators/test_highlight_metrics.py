"""QVHighlights HL-mAP / HL-Hit@1 against moment_detr's standalone_eval definitions."""

from __future__ import annotations

import math

import numpy as np
import pytest

from frameselect.evaluators.highlight import clip_saliency, gt_saliency, hl_scores, saliency_ap
from frameselect.registry import evaluators
from frameselect.types import CandidatePool, Features, Query, Sample, Selection

AP_CASES = [
    ([1, 0, 1, 0], [0.9, 0.8, 0.7, 0.1]),
    ([0, 0, 1, 1, 0, 1], [0.5, 0.5, 0.5, 0.2, 0.9, 0.2]),  # ties
    ([1, 1, 0, 0, 0], [0.0, 0.0, 0.0, 0.0, 0.0]),  # all tied
    ([0, 1, 0, 0, 1, 1, 0, 1], [3, 1, 4, 1, 5, 9, 2, 6]),
    ([0, 0, 0], [1, 2, 3]),
    ([1, 1], [1, 2]),
]
# get_ap(y_true, y_predict) of jayleicn/moment_detr at commit b7e553ac3b0c898ee6b85e03ee507c064eab89ca,
# standalone_eval/utils.py, run on AP_CASES
AP_REFERENCE = [0.8333333333333333, 0.5, 0.4, 0.875, 0.0, 1.0]

# Per seeded query of test_hl_scores_match_reference: (HL-mAP, HL-Hit@1) at min score 4, then at min score 2,
# from the same commit's standalone_eval/eval.py: compute_ap_from_tuple per annotator (mean over the three)
# and compute_hl_hit1 on the query alone (its percentage / 100).
HL_REFERENCE = [
    (0.17037037037037037, 0.0, 0.7598765432098765, 1.0),
    (0.16666666666666666, 0.0, 0.6746031746031745, 1.0),
    (0.16666666666666666, 1.0, 0.625, 1.0),
    (0.42407407407407405, 0.0, 0.8336011904761905, 1.0),
    (0.27777777777777773, 0.0, 0.7060185185185185, 1.0),
    (0.3333333333333333, 1.0, 0.7546296296296297, 1.0),
    (0.7222222222222222, 0.0, 0.8333333333333334, 0.0),
    (0.13333333333333333, 0.0, 0.7666666666666666, 1.0),
    (0.3962962962962963, 1.0, 0.6943650793650793, 1.0),
    (0.20202020202020202, 0.0, 0.7348484848484849, 1.0),
    (0.0, 0.0, 0.7222222222222222, 1.0),
    (0.44708994708994704, 1.0, 0.7185185185185184, 1.0),
    (0.08333333333333333, 0.0, 0.75, 1.0),
    (0.5, 0.0, 0.8055555555555555, 1.0),
    (0.23597883597883595, 0.0, 0.5345069745069745, 1.0),
    (0.5944444444444444, 1.0, 0.7158730158730159, 1.0),
    (0.16666666666666666, 1.0, 0.8888888888888888, 1.0),
    (0.19047619047619047, 0.0, 0.6611111111111111, 1.0),
    (0.3333333333333333, 1.0, 0.7222222222222222, 1.0),
    (0.0, 0.0, 0.9444444444444443, 1.0),
]


@pytest.mark.parametrize("index", range(len(AP_CASES)))
def test_ap_matches_moment_detr_get_ap(index: int) -> None:
    truth, score = AP_CASES[index]
    assert saliency_ap(truth, score) == pytest.approx(AP_REFERENCE[index], abs=1e-12)


def test_hl_scores_match_reference() -> None:
    rng = np.random.default_rng(3)
    for i in range(20):
        n = int(rng.integers(3, 12))
        gt = rng.integers(0, 5, size=(n, 3)).astype(float)
        pred = np.round(rng.random(n + int(rng.integers(-2, 3))), 1)
        ap4, hit4, ap2, hit2 = HL_REFERENCE[i]
        assert hl_scores(gt, pred) == pytest.approx((ap4, hit4), abs=1e-12)
        assert hl_scores(gt, pred, 2) == pytest.approx((ap2, hit2), abs=1e-12)


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
