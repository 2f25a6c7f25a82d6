"""The bench report's chance, normalised and trained-selector labels, on hand-made rows (no models)."""

from __future__ import annotations

import pytest

from frameselect._studies.bench.runner import BenchConfig, BenchResult, BenchRow, chance_by_kind, format_report, normalised, per_video
from frameselect.types import Query, Sample, SampleRecord


def _row(selector: str, acc: float, by_kind: dict[str, float], by_video: dict[str, float], aware: bool = False) -> BenchRow:
    return BenchRow(
        selector, 8, "label_ocr_reader", f"r-{selector}", {"mc_accuracy": acc, "n": 4}, {k: {"mc_accuracy": v} for k, v in by_kind.items()}, 0.0, aware, 0,
        by_video=by_video,
    )  # fmt: skip


def test_chance_and_normalised_by_hand() -> None:
    samples = [
        Sample("v/a", "v.mp4", Query("q", ("1", "2", "3", "4")), "A", metadata={"kind": "counting"}),
        Sample("v/b", "v.mp4", Query("q", ("x", "y")), "B", metadata={"kind": "global"}),
        Sample("v/c", "v.mp4", Query("q", ("x", "y", "z")), "C", metadata={"kind": "global"}),
    ]
    chance = chance_by_kind(samples)
    assert chance == pytest.approx({"counting": 0.25, "global": (1 / 2 + 1 / 3) / 2})
    # counting (0.7 - 0.25) / 0.75 = 0.6; global with chance 0.5: (0.75 - 0.5) / 0.5 = 0.5; mean 0.55
    assert normalised({"counting": {"m": 0.7}, "global": {"m": 0.75}}, {"counting": 0.25, "global": 0.5}, "m") == pytest.approx(0.55)
    assert normalised({"counting": {"m": 0.25}}, {"counting": 0.25}, "m") == 0.0  # chance is 0


def test_per_video_means_count_failures_as_wrong() -> None:
    records = [
        SampleRecord("v1/a", {"mc_accuracy": 1.0}),
        SampleRecord("v1/b", {"mc_accuracy": 0.0}),
        SampleRecord("v2/a", {}, status="failed", error="x"),
        SampleRecord("v2/b", {"mc_accuracy": 1.0}),
    ]
    assert per_video(records, "mc_accuracy") == {"v1": 0.5, "v2": 0.5}


def test_report_prints_chance_norm_detectable_line_and_training_footnote() -> None:
    config = BenchConfig(budgets=(8,), answerers=("label_ocr_reader",))
    rows = [
        _row("bayes_grpo", 0.75, {"needle": 1.0, "global": 0.5}, {"v1": 1.0, "v2": 0.5, "v3": 0.75}, aware=True),
        _row("uniform", 0.5, {"needle": 0.25, "global": 0.75}, {"v1": 0.5, "v2": 0.5, "v3": 0.5}),
    ]
    result = BenchResult(
        config, rows, [], {}, 12, 3, {"needle": 6, "global": 6}, "mc_accuracy",
        chance={"needle": 0.25, "global": 0.5}, trained={"bayes_grpo": "trained on haystack, domain train (12 videos, seed 1); out of distribution"},
    )  # fmt: skip
    out = format_report(result)
    assert "chance (a uniform guess) per kind: needle 0.250, global 0.500" in out
    # bayes_grpo: needle (1 - 0.25) / 0.75 = 1, global 0 -> norm 0.50; uniform: needle 0, global 0.5 -> 0.25
    assert "| bayes_grpo * † | 0.75 | 0.50 |" in out and "| uniform | 0.50 | 0.25 |" in out
    assert "| bayes_grpo † | 1.00 | 0.50 |" in out  # the by-kind table labels it too
    assert out.count("(† bayes_grpo: trained on haystack, domain train (12 videos, seed 1); out of distribution)") == 2
    assert "| (chance) | 0.25 | 0.50 |" in out
    # per-video differences 0.5, 0, 0.25: sd 0.25, one pair, 3 videos
    assert "detectable difference: " in out and "over 3 videos at alpha = 0.05 / 1 pairs" in out and "differences 0.250" in out
