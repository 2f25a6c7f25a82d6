"""T* against outputs of the reference code itself.

Expected values: github.com/mll-lab-nu/TStar at commit 6b3a2e161a2f72c9940cdbeb48149fdf22f1a4c9,
``TStar/interface_searcher.py`` ``TStarSearcher.search`` on a video of N frames at 1 fps, with the
detector replaced by one reporting the confidences of :func:`detections` for the frames in each grid
cell (targets first, then cues), after ``np.random.seed(seed)``. ``frames`` is its sorted output;
``None`` where it raised "Fewer non-zero entries in p than size" (then ``nonzero`` lists the frames
with a non-zero final score). ``score_sum`` is the sum of its final ``score_distribution``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from frameselect.arrays import select_from_arrays
from frameselect.errors import SelectionError
from frameselect.selectors.tstar import Detections, TStar, load_detections, question_objects, tstar_draw, tstar_search
from frameselect.testing import check_selector
from frameselect.types import CandidatePool, Features, Query
from seeded_detections import detections  # noqa: E402

REFERENCE: list[dict[str, Any]] = [
    dict(seed=0, n=60, targets=1, cues=2, k=8, threshold=0.7, budget=1.0, grid=(4, 4),
         iterations=1, found=True, score_sum=7.8920649213, frames=[18, 22, 23, 34, 35, 36, 41, 44], nonzero=None),
    dict(seed=2, n=120, targets=2, cues=2, k=16, threshold=0.7, budget=1.0, grid=(4, 4),
         iterations=2, found=True, score_sum=19.1918614791, frames=[39, 40, 41, 43, 44, 58, 59, 60, 61, 62, 63, 86, 89, 91, 96, 109], nonzero=None),
    dict(seed=3, n=400, targets=1, cues=2, k=32, threshold=0.5, budget=1.0, grid=(4, 4),
         iterations=1, found=True, score_sum=8.0205583905, frames=[97, 98, 99, 100, 101, 102, 103, 104, 150, 171, 172, 173, 174, 175, 176, 177, 179, 180, 195, 196, 197, 198, 199, 200, 201, 202, 204, 205, 248, 249, 250, 251], nonzero=None),
    dict(seed=4, n=48, targets=1, cues=1, k=4, threshold=0.99, budget=1.0, grid=(4, 4),
         iterations=3, found=False, score_sum=11.7756533701, frames=[24, 31, 36, 44], nonzero=None),
    dict(seed=5, n=90, targets=2, cues=3, k=8, threshold=0.7, budget=0.3, grid=(4, 4),
         iterations=1, found=True, score_sum=12.2491303155, frames=[10, 11, 25, 40, 49, 54, 56, 58], nonzero=None),
    dict(seed=6, n=64, targets=1, cues=2, k=6, threshold=0.7, budget=1.0, grid=(2, 3),
         iterations=2, found=True, score_sum=4.5037269275, frames=[34, 35, 36, 37, 38, 39], nonzero=None),
    dict(seed=7, n=200, targets=1, cues=2, k=8, threshold=0.99, budget=1.0, grid=(4, 4),
         iterations=13, found=False, score_sum=26.5060556911, frames=[112, 125, 128, 140, 141, 182, 185, 199], nonzero=None),
    dict(seed=8, n=150, targets=2, cues=2, k=16, threshold=0.96, budget=1.0, grid=(4, 4),
         iterations=10, found=False, score_sum=24.5194534665, frames=[49, 53, 55, 57, 59, 61, 64, 110, 112, 113, 114, 116, 119, 122, 124, 149], nonzero=None),
    dict(seed=9, n=300, targets=1, cues=3, k=12, threshold=0.99, budget=0.25, grid=(4, 4),
         iterations=5, found=False, score_sum=31.9182695639, frames=[95, 96, 101, 261, 262, 264, 265, 270, 271, 280, 281, 294], nonzero=None),
    dict(seed=10, n=100, targets=1, cues=1, k=64, threshold=0.99, budget=1.0, grid=(4, 4),
         iterations=7, found=False, score_sum=19.336793576, frames=None, nonzero=[7, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 30, 44, 45, 46, 47, 48, 49, 50, 52, 53, 54, 55, 63, 64, 66, 67, 68, 69, 70, 71, 72, 73, 74, 75, 76, 77, 78, 79, 80, 81, 82, 83, 86, 90, 91, 92, 93, 95, 96, 97, 98]),
    dict(seed=12, n=40, targets=1, cues=1, k=40, threshold=0.7, budget=1.0, grid=(4, 4),
         iterations=2, found=True, score_sum=5.997165881, frames=None, nonzero=[3, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 19, 23, 25, 26, 27, 28, 29, 30, 31, 32, 33, 34, 35, 36, 37, 38, 39]),
]  # fmt: skip


def _det(case: dict[str, Any]) -> Detections:
    conf = detections(case["seed"], case["n"], case["targets"], case["cues"])
    names = tuple(f"t{i}" for i in range(case["targets"])) + tuple(f"c{i}" for i in range(case["cues"]))
    return Detections(conf, names, tuple(range(case["targets"])), tuple(range(case["targets"], len(names))))


@pytest.mark.parametrize("case", REFERENCE, ids=lambda c: f"seed{c['seed']}-n{c['n']}-k{c['k']}")
def test_matches_the_reference_code(case: dict[str, Any]) -> None:
    rs = np.random.RandomState(case["seed"])
    state = tstar_search(_det(case), rs, grid=case["grid"], threshold=case["threshold"], budget=case["budget"])
    assert state.iterations == case["iterations"]
    assert (not state.remaining) == case["found"]
    assert float(state.score.sum()) == pytest.approx(case["score_sum"], abs=1e-8)
    drawn = tstar_draw(state.score, case["k"], rs)
    assert drawn == case["frames"]
    if drawn is None:
        assert [int(i) for i in np.flatnonzero(state.score > 0)] == case["nonzero"]


def test_selector_runs_the_same_search() -> None:
    """Through select(): the draws come from a RandomState seeded by the selection generator."""
    case = REFERENCE[0]
    conf = detections(case["seed"], case["n"], 1, 2)
    pool = CandidatePool.from_timestamps(np.arange(case["n"], dtype=float))
    sel = TStar(detector="matrix", objects=("t0", "c0", "c1"), targets=("t0",), cues=("c0", "c1"), reference_exact=True)
    got = sel.select(pool, None, 8, Features(embeddings=conf), seed=5)
    rs = np.random.RandomState(int(np.random.default_rng(5).integers(0, 2**32)))
    state = tstar_search(_det(case), rs)
    assert list(got.indices) == tstar_draw(state.score, 8, rs)


def test_failed_draw_returns_scored_frames_then_fills() -> None:
    case = REFERENCE[-1]  # seed 12: k = N = 40, the reference's draw fails
    conf = detections(case["seed"], case["n"], 1, 1)
    pool = CandidatePool.from_timestamps(np.arange(case["n"], dtype=float))
    kw: dict[str, Any] = dict(detector="matrix", objects=("t0", "c0"), targets=("t0",), cues=("c0",))
    f = Features(embeddings=conf)
    rs = np.random.RandomState(int(np.random.default_rng(0).integers(0, 2**32)))
    scored = [int(i) for i in np.flatnonzero(tstar_search(_det(case), rs).score > 0)]
    assert 0 < len(scored) < 36
    assert list(TStar(reference_exact=True, **kw).select(pool, None, 40, f, seed=0).indices) == scored
    assert list(TStar(**kw).select(pool, None, 40, f, seed=0).indices) == list(range(40))
    short = list(TStar(**kw).select(pool, None, 36, f, seed=0).indices)
    assert len(short) == 36 and set(scored) <= set(short)


def test_hand_worked_search() -> None:
    """Target seen at frames 20-22 with confidence 0.9: the first evenly spaced grid (0, 2, ..., 30) finds it at once."""
    conf = np.zeros((32, 1))
    conf[20:23, 0] = 0.9
    state = tstar_search(Detections(conf, ("cup",), (0,), ()), np.random.RandomState(0))
    assert state.iterations == 1 and state.remaining == []
    # frames 20 and 22 were sampled (0.9); 21 is lifted by its neighbours to 0.9 / 2, 19 and 23 too; 18 and 24 to 0.9 / 3
    assert state.score[20] == state.score[22] == 0.9
    assert state.score[21] == pytest.approx(0.45) and state.score[24] == pytest.approx(0.3)
    assert state.score[0] == 0.0 and state.score[1] == pytest.approx(1e-6)


def test_question_rule_and_byo_detections(tmp_path: Path) -> None:
    assert question_objects(["couch", "tv"], "Where are the couches?") == ([0], [1])
    assert question_objects(["couch", "tv"], None) == ([0, 1], [])
    path = tmp_path / "det.json"
    path.write_text(json.dumps({"objects": ["cup"], "frames": [{}, {"cup": 0.9, "table": 0.2}, {"table": 0.4}]}))
    conf, names = load_detections(path)
    assert names == ("cup", "table") and conf.tolist() == [[0, 0], [0.9, 0.2], [0, 0.4]]
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps([{"cup": "high"}]))
    with pytest.raises(SelectionError, match="frame 0, object 'cup'"):
        load_detections(bad)
    # all three frames in the first grid: 0, 0.9 (cup), 0.2 (table, a cue: 0.4 x 0.5); frame 1 tops the quarter and lifts
    # its neighbours to 0.9 / 2; the cup is verified (0.9 > 0.7) and the search stops
    state = tstar_search(Detections(conf, names, (0,), (1,)), np.random.RandomState(0))
    assert state.score.tolist() == [0.45, 0.9, 0.45] and state.remaining == [] and state.iterations == 1
    out = select_from_arrays("tstar", 3, embeddings=conf, detector="matrix", objects=list(names), targets=["cup"], cues=["table"], reference_exact=True)
    assert out["indices"] == [0, 1, 2]


def test_auto_detector_uses_relevance_without_imagenet_features() -> None:
    rel = np.zeros(40)
    rel[30:33] = 0.95
    pool = CandidatePool.from_timestamps(np.arange(40, dtype=float))
    got = TStar(reference_exact=True).select(pool, Query("where is the cup?"), 3, Features(embeddings=np.eye(40, 4), scores=rel), seed=1)
    assert set(got.indices) <= set(range(25, 38))  # only frames near the detections carry score


def test_conformance() -> None:
    check_selector("tstar")
    check_selector("tstar", params={"reference_exact": True})


def test_imagenet_detector_grounds_objects_in_the_query_distribution() -> None:
    """imagenet_label features: frame embedding [sqrt(p)/sqrt(2), pooled/sqrt(2)], text [sqrt(q), 0]."""
    from frameselect.encoders.offline import LABEL_WEIGHT
    from frameselect.selectors.tstar import detections_for, imagenet_objects

    n = 20
    p = np.full((n, 1000), 0.1 / 998)
    p[:, 5], p[:, 7] = 0.45, 0.45
    p[12, 5], p[12, 7], p[12, 831] = 0.04, 0.06, 0.9  # frame 12 shows class 831 ("couch")
    p /= p.sum(axis=1, keepdims=True)
    emb = np.concatenate([LABEL_WEIGHT * np.sqrt(p), np.full((n, 1280), np.sqrt(0.5 / 1280))], axis=1)
    q = np.full(1000, 0.2 / 997)
    q[831], q[5], q[7] = 0.5, 0.2, 0.1
    text = np.concatenate([np.sqrt(q), np.zeros(1280)])
    assert imagenet_objects(text, 1, 2) == ([831], [5, 7])
    f = Features(embeddings=emb, text=text, scores=np.zeros(n), encoder_id="imagenet_label(size=224)")
    det = detections_for(f, None, n_cues=2)
    assert det.objects == ("imagenet:831", "imagenet:5", "imagenet:7") and det.targets == (0,) and det.cues == (1, 2)
    assert det.conf[12, 0] == pytest.approx(p[12, 831], rel=1e-5) and det.conf[0, 0] == 0.0  # 1e-4 is below min_confidence
    state = tstar_search(det, np.random.RandomState(0))
    assert state.remaining == [] and state.iterations == 1 and state.score[12] == pytest.approx(p[12, 831], rel=1e-5)
    with pytest.raises(SelectionError, match="imagenet_label"):
        detections_for(Features(embeddings=emb, scores=np.zeros(n)), None, detector="imagenet")


def test_cli_reads_detections(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from frameselect.cli import main

    path = tmp_path / "det.json"
    path.write_text(json.dumps([{}, {"cup": 0.9, "table": 0.2}, {"table": 0.4}]))
    assert main(["select", "-s", "tstar", "-k", "3", "--detections", str(path), "-p", 'targets=["cup"]', "-p", "reference_exact=true"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["indices"] == [0, 1, 2] and out["params"]["objects"] == ["cup", "table"] and out["params"]["cues"] == []
    assert main(["select", "-s", "tstar", "-k", "3", "--detections", str(tmp_path / "missing.json")]) != 0
    assert "no such file" in capsys.readouterr().err


def test_percentile75_is_numpys_bit_for_bit() -> None:
    """The search's 75th percentile equals ``np.percentile(values, 75)`` exactly, for lists and arrays."""
    from frameselect.selectors.tstar import _percentile75

    # 16 values: position 11.25 between the 12th and 13th smallest (1.0 and 4.0): 1.0 + 3.0 * 0.25
    assert _percentile75([4.0, 1.0] + [0.0] * 11 + [5.0, 6.0, 7.0]) == 1.75
    rng = np.random.default_rng(0)
    for n in [1, 2, 3, 4, 5, 16, 17, 18, 19, 3600]:  # every fractional position: 0, 0.25, 0.5, 0.75
        for scale in (1.0, 1e-3, 1e6):
            values = rng.random(n) * scale
            expected = np.float64(np.percentile(values, 75)).tobytes()
            assert np.float64(_percentile75(values)).tobytes() == expected
            assert np.float64(_percentile75(values.tolist())).tobytes() == expected
    assert np.float64(_percentile75([-0.0])).tobytes() == np.float64(-0.0).tobytes()
