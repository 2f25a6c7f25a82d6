"""evidence_recall and frame_precision against hand-computed cases."""

from __future__ import annotations

import math

import pytest

import frameselect
from frameselect.evaluators.evidence import evidence_recall, frame_precision
from frameselect.types import CandidatePool, Query, Sample, Selection, Span


def test_evidence_recall_hand_cases() -> None:
    spans = [Span(0.5, 1.5), Span(2.0, 3.0), Span(10.0, 10.0)]
    assert evidence_recall([1.0, 5.0], spans) == pytest.approx(1 / 3)
    assert evidence_recall([1.5, 2.0, 10.0], spans) == 1.0  # closed intervals: bounds count
    assert evidence_recall([], spans) == 0.0
    assert math.isnan(evidence_recall([1.0], []))


def test_frame_precision_hand_cases() -> None:
    spans = [Span(0.5, 1.5), Span(1.0, 3.0)]  # overlapping spans count a frame once
    assert frame_precision([1.2, 5.0, 2.5, 0.0], spans) == pytest.approx(2 / 4)
    assert math.isnan(frame_precision([], spans))
    assert math.isnan(frame_precision([1.0], []))


def test_registered_evaluators_score_a_selection() -> None:
    pool = CandidatePool.from_timestamps([0.0, 1.0, 2.0, 3.0, 4.0])
    sample = Sample("s", "v.mp4", Query("q"), None, (Span(0.8, 1.2), Span(3.5, 4.5)))
    sel = Selection((1, 2, 3))
    rec = frameselect.evaluators.create("evidence_recall").score(sample, pool, sel, None)
    prec = frameselect.evaluators.create("frame_precision").score(sample, pool, sel, None)
    assert rec == {"evidence_recall": 0.5}
    assert prec == {"frame_precision": pytest.approx(1 / 3)}
