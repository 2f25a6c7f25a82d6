"""The oracle's correctness rule, per question kind (hand-made samples, no models)."""

from __future__ import annotations

import numpy as np
import pytest

from frameselect.answerers.base import AnswerRequest
from frameselect.answerers.oracle import Oracle, covers, wrong_letter
from frameselect.types import CandidatePool, Query, Sample, Selection, Span


def _sample(kind: str, spans: list[tuple[float, float]], answer: str = "B", options: tuple[str, ...] = ("w", "x", "y", "z"), **meta: object) -> Sample:
    return Sample(f"s/{kind}", "v.mp4", Query("?", options), answer, tuple(Span(a, b) for a, b in spans), {"kind": kind, **meta})


def test_needle_needs_a_frame_in_its_span() -> None:
    s = _sample("needle", [(10.0, 12.75)])
    assert covers(s, [3.0, 10.0]) and covers(s, [12.75]) and not covers(s, [9.99, 13.0]) and not covers(s, [])


def test_ordering_needs_both_spans() -> None:
    s = _sample("ordering", [(10.0, 12.0), (40.0, 42.0)], options=("the cat", "the rocket"))
    assert covers(s, [11.0, 41.0])
    assert not covers(s, [11.0, 11.5]) and not covers(s, [41.0])


def test_counting_needs_every_span() -> None:
    s = _sample("counting", [(1, 2), (5, 6), (9, 10)], answer="C", options=("1", "2", "3", "4"))
    assert covers(s, [1.5, 5.5, 9.5, 20.0])
    assert not covers(s, [1.5, 5.5, 20.0])


def test_global_needs_a_strict_plurality_of_the_answer() -> None:
    spans = {"bunny": [[0.0, 9.75], [20.0, 29.75]], "man": [[10.0, 19.75]], "bikes": [[30.0, 39.75]]}
    s = _sample("global", [(0.0, 9.75), (20.0, 29.75)], answer="A", options=("bunny", "man", "bikes"), coverage="plurality", option_spans=spans)
    assert covers(s, [1, 5, 21, 11, 31])  # bunny 3, man 1, bikes 1
    assert not covers(s, [1, 11, 31])  # a tie is not enough
    assert not covers(s, [11, 12, 13, 1])  # man dominates the selection


def test_oracle_answers_right_exactly_when_covered() -> None:
    s = _sample("ordering", [(2.0, 3.0), (6.0, 7.0)], answer="A", options=("the cat", "the rocket"))
    pool = CandidatePool.from_timestamps(np.arange(10.0), video_id="v")
    oracle = Oracle()
    assert oracle.is_oracle and not oracle.needs_frames
    (hit,) = oracle.answer([AnswerRequest(s, pool, Selection((2, 6)))])
    (miss,) = oracle.answer([AnswerRequest(s, pool, Selection((2, 5)))])
    assert hit.text == "A" and miss.text == "B" == wrong_letter(s)
    assert hit.model == "oracle (evidence coverage, strict)"


def test_sample_without_evidence_is_never_covered_and_unknown_rules_fail() -> None:
    assert not covers(_sample("needle", []), [1.0])
    with pytest.raises(ValueError, match="coverage"):
        covers(_sample("needle", [(0, 1)], coverage="most"), [0.5])


def test_oracle_through_the_pipeline_equals_coverage(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """Run through evaluate() on the tiny dataset: oracle accuracy = fraction of covered samples."""
    from frameselect._engine.pipeline import evaluate
    from frameselect.datasets.tiny import TinyDataset

    ds = TinyDataset(tmp_path / "tiny")
    result = evaluate("uniform", ["mc_accuracy", "evidence_recall"], ds, k=3, answerer="oracle", store=tmp_path / "s.sqlite", cache_dir=tmp_path / "c")
    expected = [covers(s, list(r.timestamps)) for s, r in zip(ds.samples(), result.records)]
    assert [r.metrics["mc_accuracy"] for r in result.records] == [float(x) for x in expected]
    assert 0 < sum(expected) < len(expected)
