"""IoU / IoP / R@IoU of a selection's window and NExT-GQA Acc@GQA, against NExT-GQA's get_tIoU."""

from __future__ import annotations

import math

import numpy as np
import pytest

from frameselect._engine.pipeline import aggregate
from frameselect.evaluators.grounding import (
    NExTGQAGrounding,
    acc_gqa,
    best_iou_iop,
    fraction_to_seconds,
    recall_at_iou,
    selection_window,
    temporal_iou_iop,
)
from frameselect.registry import evaluators
from frameselect.types import Answer, CandidatePool, Query, Sample, SampleRecord, Selection, Span

# (ground-truth locations, predicted window, get_tIoU's (IoU, IoP) per location): outputs of running
# doc-doc/NExT-GQA at commit 63772e0256ad9e34b83d6a108f1ba2041b924607, code/TempGQA/eval_ground.py
# get_tIoU(loc, span) on these cases; eval_ground keeps the best per question, starting from 0.
CASES = [
    ([(4.0, 8.0)], (2.0, 6.0), [(0.3333333333333333, 0.5)]),
    ([(4.0, 8.0)], (5.0, 5.0), [(0.0, 1.0)]),
    ([(4.0, 8.0)], (9.0, 9.0), [(0.0, 0.0)]),
    ([(4.0, 8.0)], (10.0, 12.0), [(-0.25, -1.0)]),  # disjoint: negative, so the best stays at 0
    ([(0.0, 3.0), (6.0, 9.0)], (1.0, 7.0), [(0.2857142857142857, 0.3333333333333333), (0.125, 0.16666666666666666)]),
    ([(2.0, 2.0)], (0.0, 4.0), [(0.0, 0.0)]),
    ([(0.0, 10.0)], (3.0, 4.0), [(0.1, 1.0)]),
]


@pytest.mark.parametrize(("locs", "window", "per_location"), CASES)
def test_best_iou_iop_matches_nextgqa(locs: list[tuple[float, float]], window: tuple[float, float], per_location: list[tuple[float, float]]) -> None:
    for loc, expected in zip(locs, per_location, strict=True):
        assert temporal_iou_iop(window, loc) == pytest.approx((max(0.0, expected[0]), max(0.0, expected[1])))
    best = (max(0.0, *(v[0] for v in per_location)), max(0.0, *(v[1] for v in per_location)))
    assert best_iou_iop(window, [Span(*loc) for loc in locs]) == pytest.approx(best)


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
    assert evaluators.create("recall_at_iou").metrics == ("recall_at_iou@0.3", "recall_at_iou@0.5", "recall_at_iou@0.7", "grounding_from_answer")
    assert math.isnan(evaluators.create("iou").score(_sample(()), POOL, sel, None)["iou"])


def test_nextgqa_acc_gqa_needs_right_answer_and_grounding() -> None:
    ev = evaluators.create("nextgqa_acc_gqa")
    assert ev.needs_answer
    sample = _sample((Span(2.0, 6.0),))
    inside = Selection((3, 4, 5))  # window 3..5, IoP 1
    wide = Selection((0, 9))  # window 0..9, IoP 4/9
    assert ev.score(sample, POOL, inside, Answer("The answer is B")) == {"nextgqa_acc_gqa": 1.0, "grounding_from_answer": 0.0}
    assert ev.score(sample, POOL, inside, Answer("E")) == {"nextgqa_acc_gqa": 0.0, "grounding_from_answer": 0.0}
    assert ev.score(sample, POOL, wide, Answer("B")) == {"nextgqa_acc_gqa": 0.0, "grounding_from_answer": 0.0}
    # an answer that carries its own window is judged by its first one, not by the selection
    assert ev.score(sample, POOL, wide, Answer("B", windows=((3.0, 6.5), (0.0, 9.0)))) == {"nextgqa_acc_gqa": 1.0, "grounding_from_answer": 1.0}
    assert ev.score(sample, POOL, inside, Answer("B", windows=((0.0, 9.0),))) == {"nextgqa_acc_gqa": 0.0, "grounding_from_answer": 1.0}
    # asked for windows but the reply named none: the selection's window, and the record says so
    assert ev.score(sample, POOL, inside, Answer("B", windows=())) == {"nextgqa_acc_gqa": 1.0, "grounding_from_answer": 0.0}
    assert math.isnan(ev.score(_sample(()), POOL, inside, Answer("B"))["nextgqa_acc_gqa"])


# -- NExT-GQA's eval_ground run on seeded questions -----------------------------------------------
def gqa_cases(seed: int = 11, n: int = 16) -> list[tuple[float, list[list[float]], list[float]]]:
    """(duration, annotated spans, predicted window as fractions of the video), every fifth of zero length."""
    rng = np.random.default_rng(seed)
    cases = []
    for i in range(n):
        duration = round(float(rng.uniform(20, 120)), 2)
        spans = []
        for _ in range(int(rng.integers(1, 3))):
            a, b = sorted(float(x) for x in np.round(rng.uniform(0, duration, size=2), 1))
            spans.append([a, b])
        a, b = sorted(float(x) for x in np.round(rng.uniform(0, 1, size=2), 3))
        if i % 5 == 0:
            b = a
        cases.append((duration, spans, [a, b]))
    return cases


# Per question: (the window eval_ground passed to get_tIoU after scaling, best IoU, best IoP), observed by
# running doc-doc/NExT-GQA at commit 63772e0256ad9e34b83d6a108f1ba2041b924607, code/TempGQA/eval_ground.py
# eval_ground(gt, pred, pred_qa, gs=True) on gqa_cases() (get_tIoU wrapped to record its arguments and results).
GQA_REFERENCE = [
    ((2.3, 2.3), 0.0, 1.0),
    ((58.7, 76.1), 0.3768545994065283, 0.7298850574712649),
    ((26.1, 46.6), 0.5720720720720718, 0.619512195121951),
    ((14.3, 23.9), 0.2916666666666664, 0.2916666666666664),
    ((3.6, 39.0), 0.9096045197740112, 0.9096045197740112),
    ((2.1, 2.1), 0.0, 0.0),
    ((13.6, 27.9), 0.4008810572687225, 0.6363636363636362),
    ((10.0, 15.0), 0.2762430939226519, 1.0),
    ((7.9, 8.1), 0.0, 0.0),
    ((13.5, 24.3), 0.0, 0.0),
    ((0.9, 0.9), 0.0, 0.0),
    ((19.2, 33.3), 0.4200913242009132, 0.6524822695035462),
    ((14.2, 39.3), 0.8366666666666667, 1.0),
    ((2.5, 4.3), 0.0, 0.0),
    ((41.8, 47.2), 0.25806451612903275, 0.44444444444444503),
    ((16.2, 16.2), 0.0, 0.0),
]

# What that run printed: Acc&GQA mIoP TIoP@0.3 TIoP@0.5 mIoU TIoU@0.3 TIoU@0.5 (percent, one decimal), with
# pred_qa answers right for every third question (index % 3 == 0).
GQA_PRINTED = ("18.8", "45.5", "56.2", "50.0", "27.1", "37.5", "18.8")


@pytest.mark.parametrize("index", range(16))
def test_fraction_windows_and_best_values_match_eval_ground(index: int) -> None:
    duration, spans, fraction = gqa_cases()[index]
    window, best_iou, best_iop = GQA_REFERENCE[index]
    assert fraction_to_seconds((fraction[0], fraction[1]), duration) == window
    ours = best_iou_iop(window, [Span(a, b) for a, b in spans])
    assert ours == pytest.approx((best_iou, best_iop), abs=1e-12)


def test_nextgqa_grounding_evaluator_reproduces_the_printed_numbers() -> None:
    ev = evaluators.create("nextgqa_grounding", units="fraction")
    acc = evaluators.create("nextgqa_acc_gqa", units="fraction")
    pool = CandidatePool.from_timestamps([0.0, 1.0])
    records = []
    for i, (duration, spans, fraction) in enumerate(gqa_cases()):
        sample = Sample(
            f"q{i}", "v.mp4", Query("why?", ("a", "b", "c", "d", "e")), "A" if i % 3 == 0 else "B", tuple(Span(a, b) for a, b in spans), {"duration": duration}
        )
        answer = Answer("A", windows=((fraction[0], fraction[1]),))
        metrics = {**ev.score(sample, pool, Selection((0, 1)), answer), **acc.score(sample, pool, Selection((0, 1)), answer)}
        assert set(metrics) == set(ev.score_keys) | set(acc.score_keys)
        records.append(SampleRecord(sample.id, metrics))
    table = aggregate(records, [ev, acc])
    got = [
        table[k] * 100 for k in ("nextgqa_acc_gqa", "nextgqa_miop", "nextgqa_iop@0.3", "nextgqa_iop@0.5", "nextgqa_miou", "nextgqa_iou@0.3", "nextgqa_iou@0.5")
    ]
    assert tuple(f"{v:.1f}" for v in got) == GQA_PRINTED  # formatted as the reference prints


def test_fraction_rounding_to_a_tenth_of_a_second_decides_hits() -> None:
    # 0.3333 and 0.6667 of 30 s are 9.999 and 20.001 s; rounded they are exactly the span [10, 20]
    assert fraction_to_seconds((0.3333, 0.6667), 30.0) == (10.0, 20.0)
    sample = Sample("q", "v.mp4", Query("q?"), None, (Span(10.0, 20.0),), {"duration": 30.0})
    pool = CandidatePool.from_timestamps([0.0])
    answer = Answer("", windows=((0.3333, 0.6667),))
    assert NExTGQAGrounding("fraction").score(sample, pool, Selection((0,)), answer)["nextgqa_miop"] == 1.0
    # in seconds the same numbers are a window of 0.33 s, far from the span
    assert NExTGQAGrounding().score(sample, pool, Selection((0,)), answer)["nextgqa_miop"] == 0.0
    # without an answer window the selection's window counts, in seconds
    no_window = NExTGQAGrounding("fraction").score(sample, CandidatePool.from_timestamps([12.0, 14.0]), Selection((0, 1)), Answer("A"))
    assert no_window["nextgqa_miop"] == 1.0 and no_window["nextgqa_iou@0.3"] == 0.0
    with pytest.raises(ValueError, match="duration"):
        NExTGQAGrounding("fraction").score(Sample("q", "v.mp4", Query("q?"), None, (Span(1.0, 2.0),)), pool, Selection((0,)), answer)
    with pytest.raises(ValueError, match="units"):
        NExTGQAGrounding("percent")


def test_nextgqa_grounding_is_nan_without_evidence_or_window() -> None:
    ev = NExTGQAGrounding()
    pool = CandidatePool.from_timestamps([0.0, 1.0])
    no_evidence = ev.score(Sample("q", "v.mp4", Query("q?")), pool, Selection((0,)), None)
    empty = ev.score(Sample("q", "v.mp4", Query("q?"), None, (Span(0.0, 1.0),)), pool, Selection(()), None)
    assert all(math.isnan(v) for v in [*no_evidence.values(), *empty.values()])
    assert set(no_evidence) == set(ev.metrics) - {"grounding_from_answer"}  # no answer, no source to name


# -- signed get_tIoU: the reference's per-segment values ------------------------------------------------

# Seeded windows against 1-2 locations (half of the windows near a location, one of zero length) and get_tIoU(loc, span)
# per location: outputs of doc-doc/NExT-GQA at commit 63772e0256ad9e34b83d6a108f1ba2041b924607,
# code/TempGQA/eval_ground.py get_tIoU, run on them.
SIGNED_CASES = [
    ([(15.0, 21.0)], (12.9, 23.6), [(0.5607476635514018, 0.5607476635514018)]),
    ([(2.1, 3.4)], (24.9, 27.9), [(-0.8333333333333334, -7.166666666666667)]),
    ([(19.9, 22.7)], (21.6, 23.7), [(0.2894736842105257, 0.5238095238095233)]),
    ([(15.4, 23.6), (16.5, 26.3)], (15.3, 22.7), [(0.8795180722891565, 0.9864864864864865), (0.5636363636363636, 0.8378378378378379)]),
    ([(17.7, 20.1), (24.1, 32.8)], (22.8, 30.3), [(-0.21428571428571422, -0.35999999999999993), (0.6200000000000001, 0.8266666666666665)]),
    ([(26.9, 31.2)], (27.9, 27.9), [(0.0, 1.0)]),
    ([(6.5, 6.8), (6.0, 9.5)], (8.4, 10.7), [(-0.38095238095238115, -0.695652173913044), (0.2340425531914893, 0.47826086956521746)]),
    ([(0.5, 2.1), (29.9, 34.5)], (2.2, 2.5), [(-0.050000000000000044, -0.3333333333333338), (-0.848297213622291, -91.33333333333339)]),
    ([(25.4, 31.3)], (24.3, 28.8), [(0.48571428571428604, 0.755555555555556)]),
    ([(0.7, 9.1), (14.0, 15.3)], (7.8, 8.3), [(0.059523809523809625, 1.0), (-0.7599999999999998, -11.399999999999979)]),
    ([(18.0, 27.0)], (19.8, 25.1), [(0.588888888888889, 1.0)]),
    ([(0.5, 3.4), (21.8, 26.7)], (8.7, 11.2), [(-0.49532710280373826, -2.1199999999999997), (-0.588888888888889, -4.24)]),
]
#: what eval_ground (same commit) printed for these 12 questions: mIoP, IoP@0.3, IoP@0.5, mIoU, IoU@0.3, IoU@0.5 (%)
SIGNED_CASES_PRINTED = ("59.4", "75.0", "66.7", "31.0", "41.7", "33.3")


@pytest.mark.parametrize(("locs", "window", "per_location"), SIGNED_CASES)
def test_signed_values_are_get_tiou_per_segment(locs: list[tuple[float, float]], window: tuple[float, float], per_location: list[tuple[float, float]]) -> None:
    for loc, expected in zip(locs, per_location, strict=True):
        assert temporal_iou_iop(window, loc, signed=True) == pytest.approx(expected, abs=1e-12)
        assert temporal_iou_iop(window, loc) == pytest.approx((max(0.0, expected[0]), max(0.0, expected[1])), abs=1e-12)
    spans = [Span(*loc) for loc in locs]
    best = (max(v[0] for v in per_location), max(v[1] for v in per_location))
    assert best_iou_iop(window, spans, signed=True) == pytest.approx(best, abs=1e-12)
    # eval_ground's question-level values start from 0: the default
    assert best_iou_iop(window, spans) == pytest.approx((max(0.0, best[0]), max(0.0, best[1])), abs=1e-12)


def test_question_level_numbers_match_eval_ground_printout() -> None:
    ev = NExTGQAGrounding()
    records = []
    for i, (locs, window, _) in enumerate(SIGNED_CASES):
        sample = Sample(f"q{i}", "v.mp4", Query("q"), None, tuple(Span(*loc) for loc in locs))
        pool = CandidatePool.from_timestamps(sorted(set(window)))  # the selection's first-to-last window is `window`
        records.append(SampleRecord(f"q{i}", ev.score(sample, pool, Selection(tuple(range(len(pool.timestamps)))), None)))
    table = ev.aggregate(records)
    keys = ("nextgqa_miop", "nextgqa_iop@0.3", "nextgqa_iop@0.5", "nextgqa_miou", "nextgqa_iou@0.3", "nextgqa_iou@0.5")
    assert tuple(f"{100 * table[k]:.1f}" for k in keys) == SIGNED_CASES_PRINTED


def test_signed_iou_and_iop_evaluators_say_so_in_their_keys() -> None:
    sample = _sample((Span(4.0, 8.0),))
    sel = Selection((0, 2))  # window 0..2 s, 2 s before the span: gap 2, hull 8, window 2
    iou, iop = evaluators.create("iou", signed=True), evaluators.create("iop", signed=True)
    assert iou.metrics == iou.score_keys == ("iou_signed",) and iop.metrics == ("iop_signed",)
    assert iou.score(sample, POOL, sel, None) == {"iou_signed": pytest.approx(-2 / 8)}
    assert iop.score(sample, POOL, sel, None) == {"iop_signed": pytest.approx(-2 / 2)}
    assert evaluators.create("iou").score(sample, POOL, sel, None) == {"iou": 0.0}
    records = [SampleRecord("a", {"iou_signed": -0.25}), SampleRecord("b", {"iou_signed": 0.75})]
    assert aggregate(records, [iou])["iou_signed"] == pytest.approx(0.25)
