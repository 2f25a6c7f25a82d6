"""A multi-video dataset run end to end with the store: per-video selections stored, answers cached, failures recorded."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from pathlib import Path
from typing import ClassVar

import pytest

from colour_encoder import MeanColour
from frameselect._engine.evaluate_across import evaluate_across
from frameselect.answerers.base import Answerer, AnswerRequest
from frameselect.datasets.base import InMemoryDataset
from frameselect.errors import ConfigError
from frameselect.registry import datasets
from frameselect.store import Store
from frameselect.types import Answer


@pytest.fixture(scope="module")
def suite(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list]:
    root = tmp_path_factory.mktemp("suite")
    ds = datasets.create("haystack_cross", n_videos=2, minutes=0.5, root=root)
    return root, list(ds.samples())


def test_uniform_with_the_oracle_stores_every_videos_selection(suite: tuple[Path, list], tmp_path: Path) -> None:
    root, samples = suite
    db = tmp_path / "runs.db"
    kw = {"dataset_params": {"n_videos": 2, "minutes": 0.5, "root": root}, "cache_dir": tmp_path / "cache", "store": db}
    result = evaluate_across("haystack_cross", "uniform", 6, budget_policy="equal", answerer="oracle", **kw)
    assert len(result.records) == len(samples) and all(r.status == "ok" for r in result.records)
    with Store(db) as st:
        for sample, record in zip(samples, result.records, strict=True):
            rows = st.video_selections(result.run_id, sample.id)
            assert [r.video for r in rows] == ["video_1", "video_2"] and [len(r.selection) for r in rows] == [3, 3]  # 6 shared equally
            # uniform, 3 of a 30-frame pool (1 fps over 30 s): np.linspace(0, 29, 3, dtype=int)
            assert all(r.selection.indices == (0, 14, 29) and r.timestamps == (0.0, 14.0, 29.0) for r in rows)
            covered = all(all(any(s.contains(t) for t in row.timestamps) for s in ref.evidence) for ref, row in zip(sample.videos, rows))
            assert record.metrics["mc_accuracy"] == float(covered)
            assert record.metrics["frames"] == 6.0 and "entities" not in record.metadata
        assert st.count(result.run_id) == {"ok": len(samples)}
    again = evaluate_across("haystack_cross", "uniform", 6, budget_policy="equal", answerer="oracle", **kw)
    assert again.run_id == result.run_id and [r.metrics for r in again.records] == [r.metrics for r in result.records]
    assert result.by_level.keys() <= {"comparison", "tracking_retrieval", "integrated"}


def test_a_missing_video_fails_that_sample_only(suite: tuple[Path, list], tmp_path: Path) -> None:
    _, samples = suite
    broken = dataclasses.replace(
        samples[0], id="broken", videos=(samples[0].videos[0], dataclasses.replace(samples[0].videos[1], path=str(tmp_path / "gone.mp4")))
    )
    ds = InMemoryDataset([broken, samples[1]])
    result = evaluate_across(ds, "uniform", 4, answerer="oracle", cache_dir=tmp_path / "cache", store=tmp_path / "r.db")
    assert [r.status for r in result.records] == ["failed", "ok"]
    assert "gone.mp4" in (result.records[0].error or "")
    assert result.table["failed"] == 1.0
    # the failed record names the budget policy the question was run under, as an answered one does
    assert [r.policy for r in result.records] == ["equal", "equal"]
    shared = evaluate_across(ds, "uniform", 4, budget_policy="duration", cache_dir=tmp_path / "cache", store=tmp_path / "d.db")
    joint = evaluate_across(ds, "topk_union", 4, encoder=MeanColour(), cache_dir=tmp_path / "cache", store=tmp_path / "j.db")
    assert [r.policy for r in shared.records] == ["duration", "duration"] and [r.policy for r in joint.records] == ["joint", "joint"]


def test_holmes_reads_out_and_stores_its_slots(suite: tuple[Path, list], tmp_path: Path) -> None:
    _, samples = suite
    ds = InMemoryDataset(samples[:3])
    result = evaluate_across(ds, "holmes", 6, encoder=MeanColour(), answerer="oracle", cache_dir=tmp_path / "cache", store=tmp_path / "h.db")
    for r in result.records:
        assert r.status == "ok", r.error
        rec = r.metadata["holmes"]
        assert rec["slots"] >= 1 and 0.0 <= r.metrics["slot_fill_rate"] <= 1.0 and r.metrics["gate_passed"] in (0.0, 1.0)
        assert len(rec["certificates"]) == rec["slots"] - rec["filled"]
        assert r.metrics["frames"] == 6.0


def test_wrong_configuration_fails_before_the_first_sample(suite: tuple[Path, list], tmp_path: Path) -> None:
    ds = InMemoryDataset(suite[1][:1])
    with pytest.raises(ConfigError, match="holmes.*answerer"):
        evaluate_across(ds, "holmes", 4, encoder=MeanColour())
    with pytest.raises(ConfigError, match="give no budget_policy"):
        evaluate_across(ds, "topk_union", 4, budget_policy="equal", encoder=MeanColour())
    with pytest.raises(ConfigError, match="text-capable encoder"):
        evaluate_across(ds, "uniform", 4, budget_policy="relevance")
    with pytest.raises(ConfigError, match="unknown budget policy"):
        evaluate_across(ds, "uniform", 4, budget_policy="fair")
    with pytest.raises(ConfigError, match="k "):
        evaluate_across(ds, "uniform", 0)
    with pytest.raises(ConfigError, match="encoder"):
        evaluate_across(ds, "topk", 4)


def test_bench_cross_video_refuses_unknown_arms_and_two_sections(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from frameselect.cli import main

    assert main(["bench", "--cross-video", "-s", "fair_share", "--store", str(tmp_path / "b.db"), "--cache-dir", str(tmp_path)]) == 2
    assert "unknown cross-video arm(s) ['fair_share']" in capsys.readouterr().err
    assert main(["bench", "--cross-video", "--stream", "--store", str(tmp_path / "b.db")]) == 2
    assert "separate sections" in capsys.readouterr().err
    assert main(["bench", "--stream", "--tokens", "--store", str(tmp_path / "b.db")]) == 2  # --stream would ignore --tokens
    assert "--stream and --tokens are separate sections" in capsys.readouterr().err
    assert not (tmp_path / "b.db").exists()


def test_bench_cross_video_compares_the_arms_on_the_same_questions(suite: tuple[Path, list], tmp_path: Path) -> None:
    from frameselect._studies.bench.cross_runner import CrossBenchConfig, format_cross_report, run_cross_bench

    root, samples = suite
    config = CrossBenchConfig(
        budgets=(6,),
        arms=("uniform/equal", "topk_union"),
        encoder="color_histogram",
        answerer="oracle",
        store=tmp_path / "b.db",
        cache_dir=tmp_path,
        n_videos=2,
        minutes=0.5,
        n_boot=200,
    )
    import shutil

    shutil.copytree(root, tmp_path / "bench")  # the rendered suite, where the bench looks for it
    with pytest.raises(ConfigError, match="query relevance"):  # colour histograms have no text side: refused before any sample
        run_cross_bench(config)
    config = CrossBenchConfig(
        budgets=(6,), arms=("uniform/equal",), answerer="oracle", store=tmp_path / "b.db", cache_dir=tmp_path, n_videos=2, minutes=0.5, n_boot=200
    )
    (row,) = run_cross_bench(config)
    assert row.n == len(samples) and row.failed == 0 and row.versus_baseline is None
    assert row.accuracy.low <= row.accuracy.estimate <= row.accuracy.high
    report = format_cross_report([row], "oracle")
    assert report.splitlines()[0] == "cross-video suite, total budget k=6 per question, answered by oracle (coverage, strict)" and "uniform/equal" in report


def test_the_report_shows_one_timeline_row_per_video_of_a_question(suite: tuple[Path, list], tmp_path: Path) -> None:
    import re

    pytest.importorskip("matplotlib")
    pytest.importorskip("jinja2")
    from frameselect._studies.htmlreport import ReportOptions, write_report

    root, samples = suite
    db = tmp_path / "r.db"
    kw = {"dataset_params": {"n_videos": 2, "minutes": 0.5, "root": root}, "cache_dir": tmp_path / "cache", "store": db, "answerer": "oracle"}
    evaluate_across("haystack_cross", "uniform", 6, budget_policy="equal", **kw)
    evaluate_across("haystack_cross", "uniform", 5, budget_policy="duration", **kw)
    html = write_report(db, tmp_path / "r.html", options=ReportOptions(cache_dir=tmp_path, thumbnails=False)).read_text()
    ticks = re.findall(r'<g id="tl(\d+)-v(\d)-tick-(\d+)-\d+"', html)
    assert ticks, "no multi-video timeline in the report"
    first = [t for t in ticks if t[0] == ticks[0][0]]
    # two videos, two runs (rows) in each: equal 3 + 3 frames, duration 3 + 2 (equal lengths: the remainder to video 1)
    per = {(v, row): sum(1 for t in first if t[1] == v and t[2] == row) for v in "01" for row in "01"}
    assert per == {("0", "0"): 3, ("1", "0"): 3, ("0", "1"): 3, ("1", "1"): 2}
    assert "mc_accuracy" in html


def test_frameselect_evaluate_runs_questions_over_several_videos(suite: tuple[Path, list], tmp_path: Path) -> None:
    import frameselect

    root, samples = suite
    db = tmp_path / "e.db"
    kw = {
        "dataset": datasets.create("haystack_cross", n_videos=2, minutes=0.5, root=root),
        "evaluators": ("evidence_recall", "mc_accuracy"),
        "answerer": "oracle",
        "store": db,
        "cache_dir": tmp_path / "cache",
    }
    result = frameselect.evaluate(selector="uniform", k=6, budget_policy="equal", **kw)
    assert [r.status for r in result.records] == ["ok"] * len(samples)
    assert result.table["mean_k"] == 6.0  # the frames of both videos (3 + 3), not the first video's 3
    across = evaluate_across(
        "haystack_cross",
        "uniform",
        6,
        budget_policy="equal",
        answerer="oracle",
        dataset_params={"n_videos": 2, "minutes": 0.5, "root": root},
        cache_dir=tmp_path / "cache",
        store=db,
    )
    # one loop: evaluate_across is this very run (same id), found stored and read back
    assert across.run_id == result.run_id and [r.metrics for r in across.records] == [r.metrics for r in result.records]
    with Store(db) as st:
        rows = st.video_selections(result.run_id, samples[0].id)
        assert [r.video for r in rows] == ["video_1", "video_2"] and [r.selection.indices for r in rows] == [(0, 14, 29), (0, 14, 29)]
        assert st.run(result.run_id).config["budget_policy"]["name"] == "equal"
    joint = frameselect.evaluate(selector="holmes", k=6, encoder=MeanColour(), **{**kw, "store": tmp_path / "h.db"})
    assert all(r.status == "ok" and "slot_fill_rate" in r.metrics and "holmes" in r.metadata for r in joint.records)
    assert all(r.metrics.get("frames") == 6.0 for r in joint.records)


def test_evaluate_refuses_wrong_cross_video_configuration_before_the_first_sample(suite: tuple[Path, list]) -> None:
    import frameselect

    ds = InMemoryDataset(suite[1][:1])
    with pytest.raises(ConfigError, match="give no budget_policy"):
        frameselect.evaluate(selector="topk_union", dataset=ds, k=4, encoder=MeanColour(), budget_policy="equal")
    with pytest.raises(ConfigError, match="holmes.*answerer"):
        frameselect.evaluate(selector="holmes", dataset=ds, k=4, encoder=MeanColour())
    with pytest.raises(ConfigError, match="'per_video' does not keep a question's total, so a router's budgets would not hold"):
        frameselect.evaluate(selector="uniform", dataset=ds, k=4, router="constant", budget_policy="per_video")
    with pytest.raises(ConfigError, match="unknown budget policy"):
        frameselect.evaluate(selector="uniform", dataset=ds, k=4, budget_policy="fair")


@pytest.mark.slow  # spawns worker processes
def test_process_workers_give_the_serial_loops_records(suite: tuple[Path, list], tmp_path: Path) -> None:
    import frameselect

    root, _ = suite
    ds = datasets.create("haystack_cross", n_videos=2, minutes=0.5, root=root)
    kw = {"selector": "uniform", "k": 6, "budget_policy": "equal", "dataset": ds, "evaluators": ("mc_accuracy", "evidence_recall"), "answerer": "oracle"}
    serial = frameselect.evaluate(cache_dir=tmp_path / "a", **kw)
    workers = frameselect.evaluate(cache_dir=tmp_path / "b", executor="process", workers=2, **kw)
    assert [r.status for r in workers.records] == ["ok"] * len(serial.records)
    assert [(r.sample_id, r.metrics["mc_accuracy"]) for r in workers.records] == [(r.sample_id, r.metrics["mc_accuracy"]) for r in serial.records]


def test_the_run_command_takes_a_budget_policy_and_joint_selectors(suite: tuple[Path, list], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from frameselect.cli import main

    root, samples = suite
    common = ["run", "-d", "haystack_cross", "-D", "n_videos=2", "-D", "minutes=0.5", "-D", f"root={root}", "-k", "6", "--store", str(tmp_path / "c.db")]
    common += ["--cache-dir", str(tmp_path / "cache")]
    assert main([*common, "-s", "uniform", "--budget-policy", "duration", "--evaluator", "evidence_recall"]) == 0
    with Store(tmp_path / "c.db") as st:
        (run,) = st.runs()
        assert run.config["budget_policy"]["name"] == "duration" and st.count(run.run_id) == {"ok": len(samples)}
    capsys.readouterr()
    assert main([*common, "-s", "topk_union", "-e", "imagenet_label", "--budget-policy", "equal"]) == 2
    err = capsys.readouterr().err
    assert "give no budget_policy" in err and "Traceback" not in err
    assert main([*common, "-s", "topk_union"]) == 2  # the default encoder has no text side
    assert "selector 'topk_union' needs query relevance" in capsys.readouterr().err


class _Refuses(Answerer):
    """Answers every question over several videos with an error (a backend that timed out)."""

    needs_frames: ClassVar[bool] = False

    def answer(self, requests: Sequence[AnswerRequest]) -> list[Answer]:
        return [Answer(text="", error="TimeoutError: no reply in 30 s") for _ in requests]


def test_an_answerer_error_fails_that_question_and_the_run_goes_on(suite: tuple[Path, list], tmp_path: Path) -> None:
    import frameselect

    ds = InMemoryDataset(suite[1][:2])
    result = frameselect.evaluate(selector="uniform", dataset=ds, k=4, evaluators=("mc_accuracy",), answerer=_Refuses(), store=tmp_path / "f.db")
    assert [r.status for r in result.records] == ["failed", "failed"]
    assert all(r.error == "AnswererError: TimeoutError: no reply in 30 s" for r in result.records)
    assert all("entities" not in r.metadata for r in result.records)  # left out of a question's record, failed or not
    with Store(tmp_path / "f.db") as st:
        assert st.video_selections(result.run_id, suite[1][0].id) == []  # as for one video: a failed record keeps no selection


def test_the_wrapper_gives_the_records_of_the_former_serial_loop(suite: tuple[Path, list], tmp_path: Path) -> None:
    """Expected values: the former serial loop of ``evaluate_across`` (its own prepare, answer and scoring code), run on this
    suite (2 videos of 0.5 min, seed 0, 3 cards a minute: the haystack-v1 density) with this encoder and the oracle before it
    became a wrapper of the main loop; every record's metrics (latencies aside), metadata and per-video rows were equal for
    uniform/equal, uniform/duration, topk/equal, topk_union, binding and holmes, with and without an answerer."""
    root, _ = suite
    params = {"n_videos": 2, "minutes": 0.5, "events_per_minute": 3.0, "root": root}
    samples = list(datasets.create("haystack_cross", **params))
    kw = {"dataset_params": params, "cache_dir": tmp_path / "cache", "store": tmp_path / "w.db"}
    binding = evaluate_across("haystack_cross", "binding", 6, encoder=MeanColour(), answerer="oracle", **kw)
    holmes = evaluate_across("haystack_cross", "holmes", 6, encoder=MeanColour(), answerer="oracle", **kw)
    ids = ["more_often", "retrieval", "where_when", "total_count", "after_event"]
    assert [r.sample_id for r in binding.records] == [f"haystack_00+haystack_01/{i}" for i in ids]
    assert [r.answer for r in binding.records] == ["B", "A", "A", "B", "A"]
    assert [r.metrics["evidence_recall"] for r in binding.records] == [0.0, 0.0, 0.0, 0.0, 0.5]
    assert [r.metrics["binding_accuracy"] for r in binding.records] == [1.0] * 5 and [r.metrics["mc_accuracy"] for r in binding.records] == [0.0] * 5
    assert binding.records[0].metadata["bindings"] == [
        ["video_2", 25, "video_1", 24],
        ["video_1", 22, "video_2", 25],
        ["video_1", 23, "video_2", 25],
        ["video_2", 23, "video_1", 24],
        ["video_2", 24, "video_1", 24],
    ]
    assert binding.records[4].metadata["per_video_recall"] == {"video_1": 1.0, "video_2": 0.0}
    assert [r.metadata["bindings"] for r in holmes.records] == [
        [["video_1", 24, "video_2", 25]],
        [["video_1", 24, "video_2", 25]],
        [["video_2", 25, "video_1", 24]],
        [["video_1", 24, "video_2", 25]],
        [],
    ]
    assert [r.metrics["slot_fill_rate"] for r in holmes.records] == [1.0] * 5 and [r.metrics["gate_passed"] for r in holmes.records] == [1.0] * 5
    assert "binding_accuracy" not in holmes.records[4].metrics and holmes.records[4].metrics["evidence_recall"] == 0.5
    with Store(tmp_path / "w.db") as st:
        assert [[r.selection.indices for r in st.video_selections(binding.run_id, s.id)] for s in samples] == [[(22, 23, 24), (23, 24, 25)]] * 5
        assert [r.selection.indices for r in st.video_selections(holmes.run_id, samples[4].id)] == [(5, 6, 7, 22, 23, 24), ()]
    assert binding.table == pytest.approx(
        {"n": 5.0, "failed": 0.0, "binding_accuracy": 1.0, "evidence_recall": 0.1, "frames": 6.0, "mc_accuracy": 0.0}
        | {k: v for k, v in binding.table.items() if k.endswith("latency_s") or k in ("answer_tokens", "pool_time_error_max", "pool_time_error_mean")}
    )
