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
    assert result.table["kfs_ukss"] > 0
