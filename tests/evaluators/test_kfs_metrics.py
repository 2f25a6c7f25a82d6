"""KFS-Bench KFR, SHR, BSR, BDS, UKSS: hand-computed and against outputs of eval.py itself."""

from __future__ import annotations

import math

import pytest

from frameselect._engine.pipeline import aggregate
from frameselect.evaluators.kfs import UKSS, kfs_scores, sample_scenes, ukss_mean
from frameselect.registry import evaluators
from frameselect.types import CandidatePool, Query, Sample, SampleRecord, Selection, Span

CASES = [
    ([1.0, 2.0, 7.0, 9.5], [[[0.0, 4.0]], [[6.0, 8.0]]]),
    ([0.5, 1.0, 1.5, 2.0, 30.0], [[[0.0, 10.0]], [[20.0, 21.0], [29.0, 31.0]], [[40.0, 50.0]]]),
    ([100.0, 200.0], [[[0.0, 4.0]], [[6.0, 8.0]]]),  # no key frame: BDS 0, UKSS 0
    ([3.0, 3.0, 3.5, 6.0, 6.5, 7.0, 7.5, 8.0], [[[3.0, 4.0]], [[6.0, 9.0]], [[3.5, 6.5]]]),  # overlapping scenes
    ([float(t) for t in range(0, 60, 4)], [[[5.0, 9.0], [12.0, 13.0]], [[40.0, 59.0]], [[30.0, 31.0]]]),
]

# (kfr, shr, bsr, bds, ukss) per case and the benchmark UKSS, as NEC-VID/KFS-Bench at commit
# 2349b9ebe00433db250f28cac497b15dbd1ca48a, eval.py main(), computed them (its kfs_metrics and mean_ukss,
# read on return) from a csv of these segments with each end written 1 s early (main adds 1 s to ends).
CASES_REFERENCE = [
    (0.75, 1.0, 1.0, 1.0, 0.9085602964160698),
    (1.0, 0.6666666666666666, 0.6666666666666666, 0.7275768548373758, 0.7857104669463827),
    (0.0, 0.0, 0.0, 0.0, 0.0),
    (1.0, 1.0, 1.0, 0.9763238936355179, 0.9920448479129047),
    (0.4666666666666667, 0.6666666666666666, 0.6666666666666666, 0.9947838311887514, 0.676417362329615),
]
CASES_MEAN_UKSS = 0.34361528095038896


@pytest.mark.parametrize("index", range(len(CASES)))
def test_matches_kfs_bench_eval(index: int) -> None:
    times, scenes = CASES[index]
    ours = kfs_scores(times, [[(seg[0], seg[1]) for seg in scene] for scene in scenes])
    for key, expected in zip(("kfr", "shr", "bsr", "bds", "ukss"), CASES_REFERENCE[index], strict=True):
        assert ours[key] == pytest.approx(expected, abs=1e-12), key


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
    values = [row[4] for row in CASES_REFERENCE]
    assert ukss_mean(values) == pytest.approx(CASES_MEAN_UKSS, abs=1e-12)
    assert ukss_mean([0.0, 0.0]) == pytest.approx(0.01)
    records = [SampleRecord(str(i), {"kfs_ukss": v}) for i, v in enumerate(values)] + [SampleRecord("nan", {"kfs_ukss": math.nan})]
    assert UKSS().aggregate(records)["kfs_ukss"] == pytest.approx(CASES_MEAN_UKSS, abs=1e-12)


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


# -- eval.py run on seeded questions, two of them with an empty selection ---------------------------
NAN = math.nan

# Per question: annotation rows (scene_id, start s, end s, as in the csv before eval.py adds 1 s to the end),
# selected frame times, and (kfr, shr, bsr, bds, ukss) as NEC-VID/KFS-Bench at commit
# 2349b9ebe00433db250f28cac497b15dbd1ca48a, eval.py main(), computed them (its kfs_metrics list, read on return).
KFS_REFERENCE = [
    (
        [("s0", 30.0, 31.0), ("s1", 136.0, 142.0), ("s2", 6.0, 6.0), ("s2", 56.0, 59.0)],
        [20.5, 28.8, 70.4, 77.5, 93.0, 105.6, 132.2, 132.8],
        (0.0, 0.0, 0.0, 0.0, 0.0),
    ),
    ([("s0", 162.0, 168.0), ("s0", 48.0, 50.0), ("s1", 110.0, 115.0), ("s1", 147.0, 149.0)], [], (NAN, 0.0, 0.0, 0.0, NAN)),
    (
        [("s0", 13.0, 20.0), ("s1", 50.0, 51.0), ("s1", 53.0, 53.0), ("s2", 112.0, 116.0), ("s2", 41.0, 44.0)],
        [5.5, 16.4, 67.4, 118.9, 127.3],
        (0.2, 0.3333333333333333, 0.3333333333333333, 0.6446583712203042, 0.35027794180223437),
    ),
    (
        [("s0", 158.0, 165.0), ("s0", 35.0, 39.0), ("s1", 42.0, 44.0), ("s1", 82.0, 87.0), ("s2", 122.0, 127.0)],
        [77.1, 118.4, 122.9, 147.6, 149.4],
        (0.2, 0.3333333333333333, 0.3333333333333333, 0.5773502691896258, 0.33763648565448784),
    ),
    ([("s0", 55.0, 62.0), ("s0", 65.0, 65.0), ("s1", 144.0, 149.0), ("s1", 66.0, 73.0), ("s2", 65.0, 66.0)], [], (NAN, 0.0, 0.0, 0.0, NAN)),
    ([("s0", 135.0, 137.0), ("s0", 106.0, 112.0)], [32.5, 35.4, 71.9, 101.1, 110.3], (0.2, 1.0, 1.0, 1.0, 0.5848035476425733)),
]
#: what that run printed for the means: UKSS and KFR nan (a NaN in the mean), Scene Hit Rate 0.2778
KFS_PRINTED_SHR = "0.2778"


def _kfs_sample(i: int, rows: list[tuple[str, float, float]]) -> Sample:
    return Sample(f"q{i}", "v.mp4", Query("q?"), None, tuple(Span(a, b) for _, a, b in rows), {"scene_ids": [sid for sid, _, _ in rows]})


def test_empty_selections_score_as_eval_py_and_stay_in_the_scene_hit_means() -> None:
    names = ("kfs_kfr", "kfs_shr", "kfs_bsr", "kfs_bds", "kfs_ukss")
    evs = [evaluators.create(n, end_pad=1.0) for n in names]
    records = []
    for i, (rows, times, expected) in enumerate(KFS_REFERENCE):
        pool = CandidatePool.from_timestamps(times)
        metrics: dict[str, float] = {}
        for ev in evs:
            metrics.update(ev.score(_kfs_sample(i, rows), pool, Selection(tuple(range(len(times)))), None))
        for name, value in zip(names, expected, strict=True):
            if math.isnan(value):
                assert math.isnan(metrics[name]), (i, name)
            else:
                assert metrics[name] == pytest.approx(value, abs=1e-12), (i, name)
        records.append(SampleRecord(f"q{i}", metrics))
    table = aggregate(records, evs)
    assert f"{table['kfs_shr']:.4f}" == KFS_PRINTED_SHR  # the two empty selections count as 0
    assert table["kfs_bsr"] == pytest.approx(sum(e[2] for _, _, e in KFS_REFERENCE) / 6)
    assert table["kfs_bds"] == pytest.approx(sum(e[3] for _, _, e in KFS_REFERENCE) / 6)
    # deviation: the reference's KFR mean is NaN here; ours is over the four questions with frames
    assert table["kfs_kfr"] == pytest.approx((0.0 + 0.2 + 0.2 + 0.2) / 4)
    empty = kfs_scores([], [[(0.0, 1.0)]])
    assert math.isnan(empty["kfr"]) and math.isnan(empty["ukss"]) and (empty["shr"], empty["bsr"], empty["bds"]) == (0.0, 0.0, 0.0)


# -- reference_exact: eval.py's aggregate, NaN included ------------------------------------------------

# What NEC-VID/KFS-Bench at commit 2349b9ebe00433db250f28cac497b15dbd1ca48a, eval.py main(), returned for its means
# (mean_kfr, mean_shr, mean_ukss, read on return; it prints them to 4 places) on the KFS_REFERENCE questions:
# all six (two with an empty selection), and the four with frames.
KFS_REFERENCE_MEANS_ALL = (NAN, 0.27777777777777773, NAN)
KFS_REFERENCE_MEANS_WITH_FRAMES = (0.15000000000000002, 0.41666666666666663, 0.1621690750734271)

# The same eval.py on two questions: the first's scenes written with each end 1 s before its start (zero length once
# main adds 1 s), frames at 10, 20, 30 s; the second's scenes [0,3] and [5,9] (as written), frames at 1, 6, 7, 12 s.
# Per question (kfr, shr, bsr, bds, ukss) and the means (mean_kfr, mean_shr, mean_ukss).
ZERO_LENGTH_SCENES = [([[(10.0, 10.0)], [(20.0, 20.0)]], [10.0, 20.0, 30.0]), ([[(0.0, 4.0)], [(5.0, 10.0)]], [1.0, 6.0, 7.0, 12.0])]
ZERO_LENGTH_REFERENCE = [(0.6666666666666666, 1.0, 0.0, NAN, NAN), (0.75, 1.0, 1.0, 0.9778024140774094, 0.9017873167470597)]
ZERO_LENGTH_MEANS = (0.7083333333333333, 1.0, NAN)

KEYS = ("kfr", "shr", "bsr", "bds", "ukss")


def _same(a: float, b: float) -> bool:
    return (math.isnan(a) and math.isnan(b)) or a == pytest.approx(b, abs=1e-12)


def _reference_run(questions: list[tuple[list[tuple[str, float, float]], list[float]]], reference_exact: bool) -> dict[str, float]:
    names = [f"kfs_{k}" for k in KEYS]
    evs = [evaluators.create(n, end_pad=1.0, reference_exact=reference_exact) for n in names]
    records = []
    for i, (rows, times) in enumerate(questions):
        pool = CandidatePool.from_timestamps(times)
        metrics: dict[str, float] = {}
        for ev in evs:
            metrics.update(ev.score(_kfs_sample(i, rows), pool, Selection(tuple(range(len(times)))), None))
        records.append(SampleRecord(f"q{i}", metrics))
    return {k: v for ev in evs for k, v in ev.aggregate(records).items()}


def test_reference_exact_means_are_eval_py_means_nan_included() -> None:
    questions = [(rows, times) for rows, times, _ in KFS_REFERENCE]
    ref = _reference_run(questions, reference_exact=True)
    assert set(ref) == {"kfs_kfr_ref", "kfs_shr_ref", "kfs_bsr_ref", "kfs_bds_ref", "kfs_ukss_ref"}
    for key, expected in zip(("kfs_kfr_ref", "kfs_shr_ref", "kfs_ukss_ref"), KFS_REFERENCE_MEANS_ALL, strict=True):
        assert _same(ref[key], expected), key
    # the default convention on the same questions: KFR and UKSS over the questions with frames
    ours = _reference_run(questions, reference_exact=False)
    assert ours["kfs_kfr"] == pytest.approx(KFS_REFERENCE_MEANS_WITH_FRAMES[0], abs=1e-12)
    assert ours["kfs_ukss"] == pytest.approx(KFS_REFERENCE_MEANS_WITH_FRAMES[2], abs=1e-12)
    assert ours["kfs_shr"] == pytest.approx(KFS_REFERENCE_MEANS_ALL[1], abs=1e-12)
    # without an empty selection both conventions give eval.py's numbers
    with_frames = [q for q in questions if q[1]]
    for reference_exact, suffix in ((True, "_ref"), (False, "")):
        table = _reference_run(with_frames, reference_exact)
        for key, expected in zip(("kfr", "shr", "ukss"), KFS_REFERENCE_MEANS_WITH_FRAMES, strict=True):
            assert table[f"kfs_{key}{suffix}"] == pytest.approx(expected, abs=1e-12), (key, suffix)


def test_reference_exact_bds_of_zero_length_scenes_is_nan_as_np_max() -> None:
    for (scenes, times), expected in zip(ZERO_LENGTH_SCENES, ZERO_LENGTH_REFERENCE, strict=True):
        ref = kfs_scores(times, scenes, reference_exact=True)
        assert all(_same(ref[k], e) for k, e in zip(KEYS, expected, strict=True)), ref
    ref_values = [kfs_scores(t, s, reference_exact=True)["ukss"] for s, t in ZERO_LENGTH_SCENES]
    assert math.isnan(ukss_mean(ref_values, reference_exact=True)) and math.isnan(ZERO_LENGTH_MEANS[2])
    assert sum(kfs_scores(t, s, reference_exact=True)["kfr"] for s, t in ZERO_LENGTH_SCENES) / 2 == pytest.approx(ZERO_LENGTH_MEANS[0])
    # the default keeps the cosine that exists: per-scene key frames [1, 1] against lengths^0 = [1, 1]
    ours = kfs_scores(*ZERO_LENGTH_SCENES[0][::-1])
    assert ours["bds"] == pytest.approx(1.0) and ours["ukss"] == 0.0


def test_reference_exact_keys_and_a_question_without_scenes() -> None:
    ev = evaluators.create("kfs_kfr", reference_exact=True)
    assert ev.metrics == ev.score_keys == ("kfs_kfr_ref",)
    assert evaluators.create("kfs_kfr").metrics == ("kfs_kfr",)
    pool = CandidatePool.from_timestamps([1.0, 2.0])
    no_scenes = Sample("s", "v", Query("q"), None, ())
    # eval.py skips a question without annotated scenes: no value, so it cannot turn the mean into NaN
    assert ev.score(no_scenes, pool, Selection((0, 1)), None) == {}
    assert math.isnan(evaluators.create("kfs_kfr").score(no_scenes, pool, Selection((0, 1)), None)["kfs_kfr"])
    scored = ev.score(Sample("t", "v", Query("q"), None, (Span(0.0, 1.5),)), pool, Selection((0, 1)), None)
    assert scored == {"kfs_kfr_ref": 0.5}
    assert ev.aggregate([SampleRecord("s", {}), SampleRecord("t", dict(scored))]) == {"kfs_kfr_ref": 0.5}
