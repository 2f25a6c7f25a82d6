"""The streaming suite: haystack questions asked before and after their evidence, and the oracle's rule for the former."""

from __future__ import annotations

from pathlib import Path

import pytest

from frameselect._studies.bench.stream_suite import NOT_YET, stream_questions
from frameselect.answerers.oracle import covers
from frameselect.datasets._haystack_questions import questions_for
from frameselect.datasets._haystack_suite import HaystackConfig, plan_video
from frameselect.types import Query, Sample, Span


def test_a_needle_is_asked_before_and_after_its_evidence_by_hand() -> None:
    s = Sample("v/needle_text_0", "v.mp4", Query("Which word?", ("DELTA", "ORBIT")), "B", (Span(50.0, 53.0),), {"kind": "needle", "coverage": "all_spans"})
    out = {q.id: q for q in stream_questions([s], {"v.mp4": 120.0}, delays=(0.0, 30.0, 90.0), before=20.0)}
    assert sorted(out) == ["v/needle_text_0@+0s", "v/needle_text_0@+30s", "v/needle_text_0@-20s"]  # 53 + 90 > 120: not asked
    before = out["v/needle_text_0@-20s"]
    assert before.asked_at == 30.0 and before.query.options == ("DELTA", "ORBIT", NOT_YET) and before.answer == "C"
    assert before.evidence == () and before.metadata["later_spans"] == [[50.0, 53.0]] and before.metadata["delay_s"] == -23.0
    after = out["v/needle_text_0@+30s"]
    assert after.asked_at == 83.0 and after.answer == "B" and after.evidence == s.evidence and after.metadata["delay_s"] == 30.0
    assert after.query.options == before.query.options and after.metadata["question"] == s.id
    # the oracle: before the evidence, right unless a selected frame shows the thing; after, the usual rule
    assert covers(before, [10.0, 29.0]) and not covers(before, [51.0])
    assert covers(after, [52.0]) and not covers(after, [80.0])


def test_a_question_over_two_spans_is_asked_before_the_first_and_after_the_last_by_hand() -> None:
    s = Sample(
        "v/order_0", "v.mp4", Query("Which first?", ("cat", "dog")), "A", (Span(70.0, 72.0), Span(40.0, 43.0)), {"kind": "ordering", "coverage": "all_spans"}
    )
    out = {q.id: q for q in stream_questions([s], {"v.mp4": 120.0}, delays=(0.0, 10.0, 60.0), before=20.0)}
    assert sorted(out) == ["v/order_0@+0s", "v/order_0@+10s", "v/order_0@-20s"]  # 72 + 60 > 120: not asked
    before = out["v/order_0@-20s"]
    assert before.asked_at == 20.0 and before.answer == "C" and before.metadata["delay_s"] == -23.0  # 20 - 43: before the first span's end
    assert before.metadata["later_spans"] == [[70.0, 72.0], [40.0, 43.0]]
    assert out["v/order_0@+10s"].asked_at == 82.0 and out["v/order_0@+10s"].metadata["delay_s"] == 10.0  # after the last span


def test_plurality_and_global_questions_are_left_out_and_the_suite_is_deterministic() -> None:
    plan = plan_video(HaystackConfig(n_videos=1, minutes=3.0), 0)
    base = questions_for(plan, "v0.mp4", 0)
    out = stream_questions(base, {"v0.mp4": plan.duration})
    kept = [s for s in base if s.evidence and s.metadata.get("coverage", "all_spans") == "all_spans"]
    assert {s.metadata["kind"] for s in kept} >= {"needle", "ordering"} and "global" not in {s.metadata["kind"] for s in kept}
    assert {q.metadata["question"] for q in out} == {s.id for s in kept}
    assert all(q.asked_at is not None and 0 <= q.asked_at <= plan.duration for q in out)
    assert {q.metadata["stream"] for q in out} == {"before", "after"}
    assert [q.id for q in out] == [q.id for q in stream_questions(questions_for(plan, "v0.mp4", 0), {"v0.mp4": plan.duration})]


def test_an_unknown_coverage_rule_is_refused() -> None:
    s = Sample("q", "v.mp4", Query("?", ("a",)), "A", (), {"coverage": "someday"})
    with pytest.raises(ValueError, match="not_yet"):
        covers(s, [1.0])


def test_bench_stream_refuses_unknown_selectors_before_building_the_suite(capsys: pytest.CaptureFixture[str], tmp_path: object) -> None:
    from frameselect.cli import main

    assert main(["bench", "--stream", "-s", "no_such_memory*", "--store", str(tmp_path) + "/s.sqlite", "--no-report"]) == 2
    err = capsys.readouterr().err
    assert "no streaming selector of the 'later' setting matches" in err and "Traceback" not in err


@pytest.mark.parametrize(("option", "value", "message"), [("-M", "0", "memory=0 must be >= 1"), ("-k", "0", "frame budget k must be an integer of at least 1")])
def test_bench_stream_refuses_an_out_of_range_memory_or_budget_before_building_the_suite(
    option: str, value: str, message: str, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    from frameselect.cli import main

    args = ["bench", "--stream", "-s", "sliding_window", option, value, "--store", str(tmp_path / "s.sqlite"), "--cache-dir", str(tmp_path / "c")]
    assert main([*args, "--no-report"]) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err and "streaming suite:" not in err
    assert not list(tmp_path.rglob("*.mp4"))  # no video of the suite was generated


def test_bench_stream_writes_the_report_beside_its_store(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("jinja2")
    pytest.importorskip("matplotlib")
    from frameselect.cli import main

    store = tmp_path / "s.sqlite"
    argv = ["bench", "--stream", "--n-videos", "1", "--minutes", "0.5", "-M", "2", "-M", "8", "-s", "sliding_window", "--encoder", "color_histogram"]
    assert main([*argv, "--store", str(store), "--cache-dir", str(tmp_path / "c")]) == 0
    out = capsys.readouterr().out
    assert "| sliding_window | 2 |" in out and "report: " in out
    html = (tmp_path / "s.html").read_text(encoding="utf-8")
    assert 'class="figure stream-memory"' in html and html.count('<g id="mem-point-0-') == 2  # one line, a point per memory size
    assert 'class="card stream-held"' in html
    assert main([*argv, "--store", str(tmp_path / "t.sqlite"), "--cache-dir", str(tmp_path / "c"), "--no-report"]) == 0
    assert not (tmp_path / "t.html").exists()
