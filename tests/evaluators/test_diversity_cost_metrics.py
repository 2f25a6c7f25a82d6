"""Redundancy, representativeness, spread, query relevance and cost evaluators, hand-computed."""

from __future__ import annotations

import math

import numpy as np
import pytest

from frameselect.evaluators.diversity import mean_min_distance, query_relevance, redundancy, representativeness
from frameselect.registry import evaluators
from frameselect.types import Answer, CandidatePool, Features, Query, Sample, Selection

EMB = np.array([[1.0, 0.0], [0.6, 0.8], [0.0, 1.0], [-1.0, 0.0]], dtype=np.float32)
POOL = CandidatePool.from_timestamps([0.0, 1.0, 2.0, 3.0])
SAMPLE = Sample("s", "v", Query("q"))


def test_redundancy_is_mean_pairwise_cosine() -> None:
    assert redundancy(EMB, [0, 1, 2]) == pytest.approx((0.6 + 0.0 + 0.8) / 3)
    assert redundancy(EMB * 5, [0, 3]) == pytest.approx(-1.0)  # scale does not matter
    assert math.isnan(redundancy(EMB, [1]))


def test_representativeness_cost_and_radius() -> None:
    # pool distances to selected {0, 2}: 0, min(|(.4,-.8)|, |(.6,.2)|), 0, min(2, sqrt 2)
    d1 = min(math.hypot(0.4, 0.8), math.hypot(0.6, 0.2))
    cost, radius = representativeness(EMB, [0, 2])
    assert cost == pytest.approx((0 + d1 + 0 + math.sqrt(2)) / 4)
    assert radius == pytest.approx(math.sqrt(2))
    cost_cos, radius_cos = representativeness(EMB, [0, 2], metric="cosine")
    assert cost_cos == pytest.approx((0 + 0.2 + 0 + 1.0) / 4) and radius_cos == pytest.approx(1.0)
    with pytest.raises(ValueError, match="unknown distance"):
        representativeness(EMB, [0], metric="manhattan")


def test_mean_min_distance_and_query_relevance() -> None:
    assert mean_min_distance(EMB, [0, 2, 3]) == pytest.approx((math.sqrt(2) + math.sqrt(2) + math.sqrt(2)) / 3)
    assert mean_min_distance(EMB, [0, 1], metric="cosine") == pytest.approx(0.4)
    assert query_relevance(np.array([0.1, 0.2, 0.3, 0.4]), [1, 3]) == pytest.approx(0.3)


def test_evaluators_read_features_and_give_nan_without() -> None:
    feats = Features(embeddings=EMB, text=np.array([0.0, 1.0], dtype=np.float32))
    sel = Selection((0, 2))
    assert evaluators.create("redundancy").score(SAMPLE, POOL, sel, None, feats) == {"redundancy": pytest.approx(0.0)}
    rep = evaluators.create("representativeness").score(SAMPLE, POOL, sel, None, feats)
    assert rep["coverage_radius"] == pytest.approx(math.sqrt(2))
    assert evaluators.create("mean_min_distance").score(SAMPLE, POOL, sel, None, feats) == {"mean_min_distance": pytest.approx(math.sqrt(2))}
    # relevance = embeddings . text = [0, .8, 1, 0]
    assert evaluators.create("query_relevance").score(SAMPLE, POOL, sel, None, feats) == {"query_relevance": pytest.approx(0.5)}
    for name in ("redundancy", "representativeness", "mean_min_distance", "query_relevance"):
        ev = evaluators.create(name)
        assert ev.needs
        assert all(math.isnan(v) for v in ev.score(SAMPLE, POOL, sel, None, None).values())
        assert all(math.isnan(v) for v in ev.score(SAMPLE, POOL, sel, None, Features()).values())
    assert evaluators.create("redundancy").higher_is_better is False
    assert evaluators.create("mean_min_distance").higher_is_better is True


def test_cost_evaluators() -> None:
    sel = Selection((0, 2, 3), latency_s=0.25)
    assert evaluators.create("selection_latency").score(SAMPLE, POOL, sel, None) == {"selection_latency_s": 0.25}
    assert evaluators.create("frames").score(SAMPLE, POOL, sel, None) == {"frames": 3.0, "pool_frames": 4.0}
    ev = evaluators.create("answer_cost")
    assert ev.needs_answer and not ev.higher_is_better
    assert ev.score(SAMPLE, POOL, sel, Answer("A", latency_s=1.5, prompt_tokens=1000, completion_tokens=7)) == {
        "answer_prompt_tokens": 1000.0,
        "answer_completion_tokens": 7.0,
        "answer_tokens": 1007.0,
        "answer_latency_s": 1.5,
    }
    assert ev.score(SAMPLE, POOL, sel, None) == {}
