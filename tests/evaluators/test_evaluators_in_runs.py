"""Every selection-level evaluator runs inside evaluate() on the tiny dataset; values checked by hand."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

import frameselect
from frameselect.registry import evaluators


def test_selection_level_evaluators_in_a_real_run(tmp_path: Path) -> None:
    names = [n for n in evaluators.names() if not evaluators.get(n).needs_answer and "relevance" not in evaluators.get(n).needs]
    assert len(names) >= 18
    result = frameselect.evaluate(
        selector="uniform", evaluators=names, dataset="tiny", k=3, encoder="color_histogram", store=tmp_path / "s.sqlite", cache_dir=tmp_path / "c"
    )
    assert not result.failed
    rec = {r.sample_id: r.metrics for r in result.records}["tiny_a/scenes"]
    # uniform k=3 on tiny_a's 12-frame pool: times 0, 5, 11 s; evidence = the four 3-s scenes
    assert rec["kfs_kfr"] == 1.0 and rec["kfs_shr"] == 0.75 and rec["kfs_bsr"] == 0.75
    assert rec["kfs_bds"] == pytest.approx(math.sqrt(3) / 2)
    assert rec["frames"] == 3.0 and rec["pool_frames"] == 12.0
    # window 0..11 s against [0,3] [3,6] [6,9] [9,12]: best intersection 3 s, hull 11 s, window 11 s
    assert rec["iop"] == pytest.approx(3 / 11) and rec["iou"] == pytest.approx(3 / 11)
    # keyframes at the scene midpoints 1.5, 4.5, 7.5, 10.5 are all within 5 s of a frame
    assert rec["lvh_recall"] == 1.0 and rec["lvh_precision"] == 1.0
    assert 0.0 <= rec["redundancy"] <= 1.0 and rec["representativeness"] > 0
    assert math.isnan(rec["hl_map"])  # tiny has no saliency annotations
    # NExT-GQA's numbers on the same window: IoU and IoP 3/11, below both thresholds
    assert rec["nextgqa_miou"] == pytest.approx(3 / 11) and rec["nextgqa_miop"] == pytest.approx(3 / 11)
    assert rec["nextgqa_iop@0.3"] == 0.0 and rec["nextgqa_iou@0.3"] == 0.0
    # moment windows [0,2] [4,6] [10,12] (2-s clips of 0, 5, 11 s): IoU 2/3 with three of the four 3-s scenes,
    # so AP 0.75 at thresholds 0.5-0.65 and 0 above: mean 4 * 0.75 / 10; all scenes are "short"
    assert rec["MR-full-mAP"] == pytest.approx(0.3) and rec["MR-full-mAP@0.5"] == 0.75 and rec["MR-full-mAP@0.75"] == 0.0
    assert rec["MR-short-mAP"] == pytest.approx(0.3) and math.isnan(rec["MR-long-mAP"])
    # R1 judges the first window, [0,2] (equal scores keep time order): IoU 2/3 with [0,3]
    assert rec["MR-full-R1@0.65"] == 1.0 and rec["MR-full-R1@0.7"] == 0.0 and math.isnan(rec["MR-long-R1@0.5"])
    assert result.table["kfs_ukss"] > 0


def test_every_evaluator_writes_only_the_keys_it_declares() -> None:
    """score() returns a subset of ``score_keys``; aggregate() exactly ``metrics``."""
    from frameselect.types import Answer, CandidatePool, Query, Sample, SampleRecord, Selection, Span

    metadata = {
        "duration": 20.0,
        "keyframe_times": [3.0],
        "scene_ids": ["a"],
        "saliency_scores": [[4, 2, 3]] * 10,
        "group_id": "g",
        "group_type": "relevance",
        "group_order": 1,
        "task_type": "TR",
    }
    sample = Sample("s", "v.mp4", Query("q?", ("x", "y", "z", "w")), "B", (Span(2.0, 6.0),), metadata)
    pool = CandidatePool.from_timestamps([float(t) for t in range(20)])
    for name in evaluators.names():
        ev = evaluators.create(name)
        values = ev.score(sample, pool, Selection((1, 4, 9)), Answer("The answer is B", prompt_tokens=3), None)
        assert set(values) <= set(ev.score_keys), name
        table = ev.aggregate([SampleRecord("s", dict(values), metadata=metadata)])
        assert set(table) == set(ev.metrics), name


def test_a_table_names_the_convention_that_ran(tmp_path: Path) -> None:
    from frameselect._studies.analysis import build_tables, load_runs, render_tables
    from frameselect.store import Store

    evs = [evaluators.create("kfs_kfr"), evaluators.create("kfs_kfr", reference_exact=True), evaluators.create("iou", signed=True)]
    frameselect.evaluate(selector="uniform", evaluators=evs, dataset="tiny", k=3, store=tmp_path / "s.sqlite", cache_dir=tmp_path / "c")
    with Store(tmp_path / "s.sqlite") as store:
        sections = build_tables(load_runs(store), n_boot=50)
    assert [m.name for m in sections[0].metrics][:3] == ["kfs_kfr", "kfs_kfr_ref", "iou_signed"]
    header = render_tables(sections, "csv").splitlines()[0].split(",")
    assert "kfs_kfr_ref" in header and "iou_signed" in header
