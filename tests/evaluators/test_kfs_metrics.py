"""KFS-Bench KFR, SHR, BSR, BDS, UKSS: hand-computed and against a transliteration of eval.py."""

from __future__ import annotations

import math

import numpy as np
import pytest

from frameselect.evaluators.kfs import UKSS, kfs_scores, sample_scenes, ukss_mean
from frameselect.registry import evaluators
from frameselect.types import CandidatePool, Query, Sample, SampleRecord, Selection, Span


def ref_kfs(timestamps: list[float], scene_segments: list[list[list[float]]]) -> dict[str, float]:
    """NEC-VID/KFS-Bench eval.py, the per-result body of main()."""
    timestamps_a = np.array(timestamps)
    scenes = [np.array(s) for s in scene_segments]
    flat = np.concatenate(scenes, 0)
    n_tp = np.any((timestamps_a[:, None] >= flat[:, 0]) * (timestamps_a[:, None] <= flat[:, 1]), axis=1).sum()
    kfr = n_tp / len(timestamps_a)
    n_hit = np.sum([np.any((timestamps_a[:, None] >= s[:, 0]) * (timestamps_a[:, None] <= s[:, 1])) for s in scenes])
    shr = n_hit / len(scenes)
    n_tp_per_scene = np.array([np.any((timestamps_a[:, None] >= s[:, 0]) * (timestamps_a[:, None] <= s[:, 1]), axis=1).sum() for s in scenes])
    scene_lens = np.array([np.sum(s[:, 1] - s[:, 0]) for s in scenes])
    thres = np.clip(np.floor(np.minimum(scene_lens / np.sum(scene_lens) * n_tp, np.ones(len(scenes)) / len(scenes) * n_tp)), a_min=1, a_max=None)
    bsr = np.mean(n_tp_per_scene >= thres)
    if n_tp > 0:
        tp_dist = n_tp_per_scene / np.sum(n_tp_per_scene)
        len_dists = scene_lens[:, None] ** (0.1 * np.arange(11))
        sims = tp_dist @ len_dists / (np.linalg.norm(tp_dist) * np.linalg.norm(len_dists, axis=0))
        bds = np.max(sims)
    else:
        bds = 0
    return {"kfr": kfr, "shr": shr, "bsr": bsr, "bds": bds, "ukss": (kfr * bsr * bds) ** (1 / 3)}


def ref_mean_ukss(values: list[float]) -> float:
    return float(np.exp(np.mean(np.log(np.clip(np.array(values), a_min=1e-2, a_max=None)))))


CASES = [
    ([1.0, 2.0, 7.0, 9.5], [[[0.0, 4.0]], [[6.0, 8.0]]]),
    ([0.5, 1.0, 1.5, 2.0, 30.0], [[[0.0, 10.0]], [[20.0, 21.0], [29.0, 31.0]], [[40.0, 50.0]]]),
    ([100.0, 200.0], [[[0.0, 4.0]], [[6.0, 8.0]]]),  # no key frame: BDS 0, UKSS 0
    ([3.0, 3.0, 3.5, 6.0, 6.5, 7.0, 7.5, 8.0], [[[3.0, 4.0]], [[6.0, 9.0]], [[3.5, 6.5]]]),  # overlapping scenes
    ([float(t) for t in range(0, 60, 4)], [[[5.0, 9.0], [12.0, 13.0]], [[40.0, 59.0]], [[30.0, 31.0]]]),
]


@pytest.mark.parametrize(("times", "scenes"), CASES)
def test_matches_kfs_bench_eval(times: list[float], scenes: list[list[list[float]]]) -> None:
    ours = kfs_scores(times, [[tuple(seg) for seg in scene] for scene in scenes])
    ref = ref_kfs(times, scenes)
    for key in ("kfr", "shr", "bsr", "bds", "ukss"):
        assert ours[key] == pytest.approx(float(ref[key]), abs=1e-12), key


def test_hand_computed_case() -> None:
    # scenes [0,3] [3,6] [6,9] [9,12] (3 s each), frames at 0, 5, 11 s
    s = kfs_scores([0.0, 5.0, 11.0], [[(0.0, 3.0)], [(3.0, 6.0)], [(6.0, 9.0)], [(9.0, 12.0)]])
    assert s["kfr"] == 1.0
    assert s["shr"] == 0.75
    assert s["bsr"] == 0.75  # every scene needs max(1, floor(0.75)) = 1 frame; scene 3 has none
    assert s["bds"] == pytest.approx(math.sqrt(3) / 2)  # equal lengths: cos([1,1,0,1], [1,1,1,1])
    assert s["ukss"] == pytest.approx((0.75 * math.sqrt(3) / 2) ** (1 / 3))
    assert all(math.isnan(v) for v in kfs_scores([1.0], []).values())


def test_ukss_geometric_mean_with_floor_matches_reference() -> None:
    values = [ref_kfs(t, s)["ukss"] for t, s in CASES]
    assert ukss_mean(values) == pytest.approx(ref_mean_ukss(values))
    assert ukss_mean([0.0, 0.0]) == pytest.approx(0.01)
    records = [SampleRecord(str(i), {"kfs_ukss": v}) for i, v in enumerate(values)] + [SampleRecord("nan", {"kfs_ukss": math.nan})]
    assert UKSS().aggregate(records)["kfs_ukss"] == pytest.approx(ref_mean_ukss(values))


def test_scenes_from_scene_ids_and_end_pad() -> None:
    sample = Sample("s", "v", Query("q"), "A", (Span(0, 1), Span(5, 6), Span(2, 3)), {"scene_ids": ["x", "y", "x"]})
    assert sample_scenes(sample) == [[(0, 1), (2, 3)], [(5, 6)]]
    assert sample_scenes(sample, end_pad=1.0) == [[(0, 2.0), (2, 4.0)], [(5, 7.0)]]
    bad = Sample("s", "v", Query("q"), "A", (Span(0, 1),), {"scene_ids": ["x", "y"]})
    with pytest.raises(ValueError, match="scene_ids"):
        sample_scenes(bad)


def test_evaluators_score_a_selection() -> None:
    pool = CandidatePool.from_timestamps([0.0, 1.0, 2.0, 3.0, 4.0, 5.0])
    sample = Sample("s", "v", Query("q"), "A", (Span(0.5, 1.5), Span(4.0, 4.5)))
    sel = Selection((1, 2, 4))  # times 1, 2, 4: two key frames, both scenes hit
    expected = kfs_scores([1.0, 2.0, 4.0], [[(0.5, 1.5)], [(4.0, 4.5)]])
    for key in ("kfr", "shr", "bsr", "bds", "ukss"):
        ev = evaluators.create(f"kfs_{key}")
        assert ev.score(sample, pool, sel, None) == {f"kfs_{key}": pytest.approx(expected[key])}
    assert expected["kfr"] == pytest.approx(2 / 3) and expected["shr"] == 1.0
    # with a 1 s end pad the frame at 2 s falls in the first scene
    assert evaluators.create("kfs_kfr", end_pad=1.0).score(sample, pool, sel, None)["kfs_kfr"] == 1.0
