"""IoU / IoP / R@IoU of a selection's window and NExT-GQA Acc@GQA, against NExT-GQA's get_tIoU."""

from __future__ import annotations

import math
from dataclasses import dataclass

import pytest

from frameselect.evaluators.grounding import acc_gqa, best_iou_iop, recall_at_iou, selection_window, temporal_iou_iop
from frameselect.registry import evaluators
from frameselect.types import Answer, CandidatePool, Query, Sample, Selection, Span


def ref_get_tiou(loc: tuple[float, float], span: tuple[float, float]) -> tuple[float, float]:
    """NExT-GQA code/TempGQA/eval_ground.py get_tIoU(loc=ground truth, span=prediction)."""
    if span[0] == span[-1]:
        return (0, 1) if loc[0] <= span[0] <= loc[1] else (0, 0)
    span_u = (min(loc[0], span[0]), max(loc[-1], span[-1]))
    span_i = (max(loc[0], span[0]), min(loc[-1], span[-1]))
    dis_i = span_i[1] - span_i[0]
    iou = dis_i / (span_u[1] - span_u[0]) if span_u[1] > span_u[0] else 0.0
    iop = dis_i / (span[-1] - span[0]) if span[-1] > span[0] else 0.0
    return iou, iop


def ref_best(locs: list[tuple[float, float]], span: tuple[float, float]) -> tuple[float, float]:
    """eval_ground's per-question max over ground-truth locations, starting from 0."""
    best_iou = best_iop = 0
    for loc in locs:
        iou, iop = ref_get_tiou(loc, span)
        best_iou, best_iop = max(best_iou, iou), max(best_iop, iop)
    return best_iou, best_iop


CASES = [
    ([(4.0, 8.0)], (2.0, 6.0)),
    ([(4.0, 8.0)], (5.0, 5.0)),
    ([(4.0, 8.0)], (9.0, 9.0)),
    ([(4.0, 8.0)], (10.0, 12.0)),  # disjoint: negative intersection in the reference, clipped by the max
    ([(0.0, 3.0), (6.0, 9.0)], (1.0, 7.0)),
    ([(2.0, 2.0)], (0.0, 4.0)),
    ([(0.0, 10.0)], (3.0, 4.0)),
]


@pytest.mark.parametrize(("locs", "window"), CASES)
def test_best_iou_iop_matches_nextgqa(locs: list[tuple[float, float]], window: tuple[float, float]) -> None:
    ours = best_iou_iop(window, [Span(*loc) for loc in locs])
    assert ours == pytest.approx(ref_best(locs, window))


def test_hand_computed_values() -> None:
    assert temporal_iou_iop((2.0, 6.0), (4.0, 8.0)) == pytest.approx((2 / 6, 2 / 4))
    assert temporal_iou_iop((10.0, 12.0), (4.0, 8.0)) == (0.0, 0.0)
    assert selection_window([]) is None
    assert all(math.isnan(v) for v in best_iou_iop((0.0, 1.0), []))
    assert recall_at_iou((0.0, 4.0), [Span(2.0, 4.0)]) == {0.3: 1.0, 0.5: 1.0, 0.7: 0.0}
    assert acc_gqa(1.0, 0.5) == 1.0 and acc_gqa(1.0, 0.49) == 0.0 and math.isnan(acc_gqa(1.0, math.nan))


POOL = CandidatePool.from_timestamps([float(t) for t in range(10)])


def _sample(evidence: tuple[Span, ...], answer: str | None = "B", n_options: int = 5) -> Sample:
    return Sample("s", "v.mp4", Query("q", tuple("abcde"[:n_options])), answer, evidence)


def test_selection_level_evaluators_on_a_pool() -> None:
    sample = _sample((Span(2.0, 6.0),))
    sel = Selection((3, 4, 7))  # window 3..7 s
    iou = evaluators.create("iou").score(sample, POOL, sel, None)
    iop = evaluators.create("iop").score(sample, POOL, sel, None)
    r = evaluators.create("recall_at_iou").score(sample, POOL, sel, None)
    assert iou == {"iou": pytest.approx(3 / 5)}
    assert iop == {"iop": pytest.approx(3 / 4)}
    assert r == {"recall_at_iou@0.3": 1.0, "recall_at_iou@0.5": 1.0, "recall_at_iou@0.7": 0.0}
    assert evaluators.create("recall_at_iou").metrics == ("recall_at_iou@0.3", "recall_at_iou@0.5", "recall_at_iou@0.7")
    assert math.isnan(evaluators.create("iou").score(_sample(()), POOL, sel, None)["iou"])


@dataclass(frozen=True)
class GroundedAnswer(Answer):
    grounding: tuple[float, float] | None = None


def test_nextgqa_acc_gqa_needs_right_answer_and_grounding() -> None:
    ev = evaluators.create("nextgqa_acc_gqa")
    assert ev.needs_answer
    sample = _sample((Span(2.0, 6.0),))
    inside = Selection((3, 4, 5))  # window 3..5, IoP 1
    wide = Selection((0, 9))  # window 0..9, IoP 4/9
    assert ev.score(sample, POOL, inside, Answer("The answer is B")) == {"nextgqa_acc_gqa": 1.0}
    assert ev.score(sample, POOL, inside, Answer("E")) == {"nextgqa_acc_gqa": 0.0}
    assert ev.score(sample, POOL, wide, Answer("B")) == {"nextgqa_acc_gqa": 0.0}
    # an answer that carries its own grounding is judged by it, not by the selection
    assert ev.score(sample, POOL, wide, GroundedAnswer("B", grounding=(3.0, 6.5))) == {"nextgqa_acc_gqa": 1.0}
    assert math.isnan(ev.score(_sample(()), POOL, inside, Answer("B"))["nextgqa_acc_gqa"])
