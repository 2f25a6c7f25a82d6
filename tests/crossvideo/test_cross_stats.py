"""The cross-video section's statistics on fixed values: every pair of arms with Holm, holmes before its gate, chance printed."""

from __future__ import annotations

import math

import pytest

from frameselect._core.stats import holm, multiway_mean
from frameselect._studies.bench.cross_runner import NO_GATE, CrossArmRow, _backend_right, compare_arms, format_cross_report
from frameselect.types import SampleRecord


def _row(arm: str, values: dict[str, float], videos: dict[str, tuple[str, ...]]) -> CrossArmRow:
    iv = multiway_mean(list(values.values()), list(videos.values()), n_boot=200)
    return CrossArmRow(arm, 8, len(values), 0, iv, 0.5, per_sample=values, videos=videos, chance=0.3125, n_boot=200)


def test_every_pair_of_arms_is_compared_with_holm_over_all_of_them() -> None:
    videos = {f"q{i}": (f"v{i % 10}", f"v{(i + 3) % 10}") for i in range(40)}
    uniform = {q: float(i % 4 == 0) for i, q in enumerate(videos)}
    topk = {q: 1.0 for q in videos}
    binding = {q: float(i % 2 == 0) for i, q in enumerate(videos)}
    rows = [_row("uniform/equal", uniform, videos), _row("topk/equal", topk, videos), _row("binding", binding, videos)]
    comparisons = compare_arms(rows)
    assert [(c.first, c.second) for c in comparisons] == [("uniform/equal", "topk/equal"), ("uniform/equal", "binding"), ("topk/equal", "binding")]
    assert [c.p_holm for c in comparisons] == pytest.approx(holm([c.diff.p_value for c in comparisons]))
    assert comparisons[0].diff.mean_diff == pytest.approx(-0.75)
    report = format_cross_report(rows, "label_ocr_reader")
    assert "chance (one option at random): 0.312; baseline uniform/equal: 0.250" in report
    assert "topk/equal − binding:" in report and "Holm over all 3 comparisons printed" in report


def test_holmes_before_its_gate_is_the_backend_answer() -> None:
    truth = {"s1": "B", "s2": "C", "s3": "A"}
    passed = SampleRecord("s1", {"mc_accuracy": 1.0}, answer="B", metadata={"holmes": {"backend_answer": "B", "gate_passed": True}})
    rewritten = SampleRecord("s2", {"mc_accuracy": 1.0}, answer="C", metadata={"holmes": {"backend_answer": "A", "gate_passed": False}})
    silent = SampleRecord("s3", {"mc_accuracy": 0.0}, answer="", metadata={"holmes": {"backend_answer": "", "gate_passed": False}})
    assert [_backend_right(r, truth) for r in (passed, rewritten, silent)] == [1.0, 0.0, 0.0]
    assert math.isnan(_backend_right(SampleRecord("s1", {}), truth))
    assert NO_GATE == "holmes (no gate)"
