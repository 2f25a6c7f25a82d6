"""Streaming runs: questions answered from the memory at their stream time, through a Plan and a Run."""

from __future__ import annotations

import dataclasses
import math
from pathlib import Path
from typing import Any

import pytest

from frameselect._core.fingerprint import canonical
from frameselect._engine.evaluate_stream import delay_group, evaluate_stream, memory_evidence_recall, plan_stream, stream_table
from frameselect.datasets.base import InMemoryDataset
from frameselect.errors import ConfigError, ContractError
from frameselect.store import Store
from frameselect.streaming.base import StreamSelection
from frameselect.streaming.window import SlidingWindow
from frameselect.types import Query, Sample, SampleRecord, Span

Q = Query("What is shown?", ("a", "b", "c"))


def samples(video: Path) -> list[Sample]:
    # counter_video: 5 s at 10 fps; the pool fps=1 holds frames at 0, 1, 2, 3, 4 s (stream frames 0..4)
    v = str(video)
    return [
        Sample("after", v, Q, "A", (Span(1.0, 1.5),), {"kind": "needle"}, asked_at=3.5),
        Sample("late", v, Q, "A", (Span(1.0, 1.5),), {"kind": "needle"}, asked_at=4.2),
        Sample("before", v, Q, "A", (Span(2.0, 3.0),), {"kind": "needle"}, asked_at=0.5),
        Sample("end", v, Q, "A", (Span(3.0, 3.2),), {"kind": "needle"}),
    ]


def by_id(records: list[SampleRecord]) -> dict[str, SampleRecord]:
    return {r.sample_id: r for r in records}


def test_each_question_is_answered_from_the_window_at_its_time(counter_video: Path, tmp_path: Path) -> None:
    report = evaluate_stream("sliding_window", ["evidence_recall"], samples(counter_video), 2, memories=[3], cache_dir=tmp_path)
    records = by_id(report.results[3].records)
    # asked at 3.5: frames 0..3 seen, the window holds 1, 2, 3; no question embedding: spread(3, 2) = positions 0, 2
    after = records["after"]
    assert after.metadata["held_frames"] == [1, 2, 3] and after.metadata["observed"] == 4
    assert after.selection == (1, 3) and after.timestamps == (1.0, 3.0)
    assert after.metadata["memory_evidence_recall"] == 1.0 and after.metrics["evidence_recall"] == 1.0
    assert after.metadata["delay_s"] == pytest.approx(2.0) and after.metadata["delay_group"] == "0-10s"
    assert after.metadata["asked_at"] == 3.5 and after.metadata["memory"] == 3
    # asked at 4.2: the window moved past the evidence at 1 s
    late = records["late"]
    assert late.metadata["held_frames"] == [2, 3, 4] and late.selection == (2, 4)
    assert late.metadata["memory_evidence_recall"] == 0.0 and late.metrics["evidence_recall"] == 0.0
    # asked at 0.5, before the evidence (2..3 s): only frame 0 seen, nothing to recall yet
    before = records["before"]
    assert before.metadata["held_frames"] == [0] and before.selection == (0,)
    assert math.isnan(before.metadata["memory_evidence_recall"])
    assert before.metadata["delay_s"] == pytest.approx(-2.5) and before.metadata["delay_group"] == "before"
    # no asked_at: asked after the last pool frame (4 s)
    end = records["end"]
    assert end.metadata["asked_at"] == 4.0 and end.metadata["held_frames"] == [2, 3, 4] and end.selection == (2, 4)
    assert end.metadata["memory_evidence_recall"] == 1.0
    # the report's tables: memory recall over the 3 questions whose evidence had begun
    table = report.by_memory[3]
    assert table["n"] == 4 and table["memory_evidence_recall"] == pytest.approx(2 / 3)
    assert table["held"] == pytest.approx((3 + 3 + 1 + 3) / 4)
    assert sorted(report.by_delay[3]) == ["0-10s", "before"] and report.by_delay[3]["before"]["n"] == 1


def test_memory_sizes_are_separate_runs_and_the_oracle_scores_accuracy_by_memory(counter_video: Path, tmp_path: Path) -> None:
    store = tmp_path / "s.sqlite"
    report = evaluate_stream(
        "sliding_window", ["evidence_recall", "mc_accuracy"], samples(counter_video)[:2], 8, memories=[1, 4], answerer="oracle", store=store, cache_dir=tmp_path
    )
    assert report.accuracy == "mc_accuracy"
    assert report.results[1].run_id != report.results[4].run_id
    # M=1 holds only the latest frame (3 s, 4 s): evidence at 1 s is lost; M=4 holds 0..3 at 3.5 s and 1..4 at 4.2 s
    assert report.by_memory[1]["mc_accuracy"] == 0.0 and report.by_memory[4]["mc_accuracy"] == 1.0
    assert report.by_memory[1]["held"] == 1.0 and report.by_memory[4]["held"] == 4.0
    with Store(store) as st:
        runs = {r.run_id: r for r in st.runs()}
    assert runs[report.results[1].run_id].config["selector"]["params"]["memory"] == 1
    assert runs[report.results[4].run_id].kind == "stream" and runs[report.results[4].run_id].selector == "sliding_window"
    # a second call resumes: nothing is computed again
    again = evaluate_stream(
        "sliding_window", ["evidence_recall", "mc_accuracy"], samples(counter_video)[:2], 8, memories=[1, 4], answerer="oracle", store=store, cache_dir=tmp_path
    )
    assert again.results[4].counters.samples_skipped == 2 and again.results[4].counters.selector_calls == 0
    assert again.by_memory == report.by_memory


def test_observe_latency_and_peak_memory_are_recorded(counter_video: Path, tmp_path: Path) -> None:
    report = evaluate_stream("sliding_window", ["evidence_recall"], samples(counter_video)[3:], 1, memories=[2, 200], cache_dir=tmp_path)
    for m in (2, 200):
        record = report.results[m].records[0]
        assert record.metadata["observe_ms_mean"] > 0 and record.metadata["observe_ms_p99"] >= 0
        assert report.by_memory[m]["observe_ms_p99"] == record.metadata["observe_ms_p99"]
    # the window's slots are allocated at the first frame: 200 float32 embeddings of color_histogram's 512 values
    assert report.by_memory[200]["peak_kib"] >= 200 * 512 * 4 / 1024
    assert report.by_memory[2]["peak_kib"] < report.by_memory[200]["peak_kib"] / 10


def test_asked_at_is_part_of_the_dataset_fingerprint_only_when_given(counter_video: Path) -> None:
    s = samples(counter_video)[0]
    plain = dataclasses.replace(s, asked_at=None)
    assert "asked_at" not in canonical(plain)  # datasets without it keep their ids
    assert canonical(s)["asked_at"] == 3.5
    ids = {InMemoryDataset([x]).id for x in (s, plain, dataclasses.replace(s, asked_at=3.0), dataclasses.replace(s, asked_at=0.0))}
    assert len(ids) == 4  # a question at 0 s is not one about the whole video
    for bad in (-1.0, math.nan, math.inf, "3"):
        with pytest.raises(ValueError, match="asked_at"):
            dataclasses.replace(s, asked_at=bad)


def test_wrong_configuration_fails_before_the_first_sample(counter_video: Path) -> None:
    ds = samples(counter_video)
    with pytest.raises(ConfigError, match="threshold_keeper.*monitoring"):
        plan_stream("threshold_keeper", ["evidence_recall"], ds, 4, encoder="color_histogram")
    with pytest.raises(ConfigError, match="pass an encoder"):
        plan_stream("sliding_window", ["evidence_recall"], ds, 4, encoder=None)
    with pytest.raises(ConfigError, match="cannot embed text"):
        plan_stream("sliding_window", ["evidence_recall"], ds, 4, encoder="color_histogram", monitoring=True)
    with pytest.raises(ConfigError, match="memory"):
        plan_stream("sliding_window", ["evidence_recall"], ds, 4, memory=0, encoder="color_histogram")
    with pytest.raises(ConfigError, match="answering backend"):
        plan_stream("sliding_window", ["mc_accuracy"], ds, 4, encoder="color_histogram")


class _Liar(SlidingWindow):
    """Answers with a frame it never held."""

    def select(self, query: Any, k: int, now: float, *, question: Any = None) -> StreamSelection:
        return StreamSelection(indices=(0,), timestamps=(0.0,), now=now, held=1)


def test_a_selection_outside_the_memory_breaks_the_contract(counter_video: Path, tmp_path: Path) -> None:
    with pytest.raises(ContractError, match="does not hold"):
        evaluate_stream(_Liar(memory=2), ["evidence_recall"], samples(counter_video)[:1], 1, cache_dir=tmp_path, trace_memory=False)


def test_a_bad_video_fails_its_sample_and_the_run_goes_on(counter_video: Path, tmp_path: Path) -> None:
    broken = tmp_path / "broken.mp4"
    broken.write_bytes(b"not a video")
    ds = [*samples(counter_video)[:1], Sample("bad", str(broken), Q, "A", (), {}, asked_at=1.0)]
    report = evaluate_stream("sliding_window", ["evidence_recall"], ds, 2, memories=[3], cache_dir=tmp_path)
    result = report.results[3]
    assert [r.status for r in result.records] == ["ok", "failed"] and report.by_memory[3]["failed"] == 1


def test_helpers_by_hand() -> None:
    assert [delay_group(d) for d in (-0.1, 0, 59.9, 60, 299, 300)] == ["before", "0-10s", "10-60s", "60-300s", "60-300s", "300s+"]
    assert memory_evidence_recall([0.5, 2.5], [Span(0, 1), Span(2, 3), Span(4, 5)], now=4.5) == pytest.approx(2 / 3)
    assert memory_evidence_recall([4.0], [Span(4, 5)], now=3.9) != memory_evidence_recall([4.0], [Span(4, 5)], now=4.5)
    records = [
        SampleRecord("a", {"m": 1.0}, metadata={"observed": 3, "observe_ms_mean": 1.0, "observe_ms_p99": 2.0, "peak_kib": 5.0, "held_frames": [0, 1]}),
        SampleRecord("b", {"m": 0.0}, metadata={"observed": 1, "observe_ms_mean": 5.0, "observe_ms_p99": 7.0, "peak_kib": 3.0, "held_frames": [0]}),
        SampleRecord("c", {}, status="failed", metadata={"observed": 100, "observe_ms_mean": 100.0}),
    ]
    table = stream_table(records, "m")
    assert table["m"] == 0.5 and table["observe_ms_mean"] == pytest.approx((3 * 1 + 5) / 4)
    assert table["observe_ms_p99"] == 7.0 and table["peak_kib"] == 5.0 and table["held"] == 1.5 and table["n"] == 2
