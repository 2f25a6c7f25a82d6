"""The streaming table: accuracy after the evidence with its interval; the oracle's before-evidence accuracy (1 by construction) not printed."""

from __future__ import annotations

from frameselect._core.stats import bootstrap_mean
from frameselect._studies.bench.stream_runner import StreamBenchRow, _intervals, format_stream_report
from frameselect.answerers.oracle import answerer_label
from frameselect.types import SampleRecord


def _records() -> tuple[list[SampleRecord], dict[str, str], dict[str, str]]:
    records, video_of, stream_of = [], {}, {}
    for v in range(4):
        for i, (stream, right) in enumerate((("after", v % 2), ("after", 1), ("before", 1))):
            sid = f"v{v}/q{i}"
            records.append(SampleRecord(sid, {"mc_accuracy": float(right)}))
            video_of[sid], stream_of[sid] = f"video{v}", stream
    return records, video_of, stream_of


def test_accuracy_after_the_evidence_is_clustered_by_video_and_the_oracles_before_is_left_out() -> None:
    records, video_of, stream_of = _records()
    after, before = _intervals(records, video_of, stream_of, oracle=True, seed=0)
    ids = [r.sample_id for r in records if stream_of[r.sample_id] == "after"]
    expected = bootstrap_mean([records[[r.sample_id for r in records].index(s)].metrics["mc_accuracy"] for s in ids], [video_of[s] for s in ids], seed=0)
    assert after == expected and after.estimate == 0.75 and after.n == 8 and after.clusters == 4 and before is None
    row = StreamBenchRow("sliding_window", 4, "r", {"mc_accuracy": 5 / 6}, {"before": {"mc_accuracy": 1.0}, "0-10s": {"mc_accuracy": 0.75}}, after, before)
    text = format_stream_report([row], "oracle")
    head = next(line for line in text.splitlines() if line.startswith("| streaming selector"))
    assert text.splitlines()[0] == "accuracy: answered by " + answerer_label("oracle")
    assert "accuracy after evidence [95% CI]" in head and "before" not in head
    assert f"| sliding_window | 4 | {after} | 8 |" in text and "0.833" not in text  # the accuracy with the before questions is not printed
    assert "left out: the oracle answers them right by construction" in text


def test_another_answerer_gets_its_before_column_with_an_interval() -> None:
    records, video_of, stream_of = _records()
    after, before = _intervals(records, video_of, stream_of, oracle=False, seed=0)
    assert before is not None and before.estimate == 1.0 and before.n == 4
    row = StreamBenchRow("reservoir", 4, "r", {}, {"before": {"mc_accuracy": 1.0}}, after, before)
    text = format_stream_report([row], "label_ocr_reader")
    assert (
        "accuracy before evidence [95% CI]" in next(line for line in text.splitlines() if line.startswith("| streaming selector"))
        and "| acc before |" not in text
    )
    assert "left out" not in text
