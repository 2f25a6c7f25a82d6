"""PySceneDetect-style AdaptiveDetector: ratios, cuts and scenes worked by hand."""

from __future__ import annotations

import numpy as np
import pytest

from frameselect.registry import selectors
from frameselect.selectors.scenedetect_adaptive import adaptive_cuts, adaptive_ratios
from frameselect.selectors.scenedetect_content import content_scores
from frameselect.testing import check_selector
from frameselect.types import CandidatePool, Features, Query

Q = Query("q")
H, W = 8, 16
BLACK, WHITE, GRAY128 = (0, 0, 0), (255, 255, 255), (128, 128, 128)


def solid(colour: tuple[int, int, int], length: int) -> np.ndarray:
    return np.tile(np.array(colour, dtype=np.uint8), (length, H, W, 1))


def stripes(shift: int) -> np.ndarray:
    """Vertical black/white stripes of period 8 (4 + 4 px), moved ``shift`` px to the left."""
    x = (np.arange(W) + shift) % 8
    row = np.where(x < 4, 0, 255).astype(np.uint8)
    return np.repeat(np.tile(row[None, :, None], (H, 1, 3))[None], 1, axis=0)


def pan_video() -> np.ndarray:
    """Frames 0-19 still stripes; 20-39 a pan (2 px per frame); 40-59 still; 60-79 solid grey.

    Moving period-8 stripes by 2 px flips half the pixels between black and white, so every pan
    frame scores mean |dV| / 3 = 127.5 / 3 = 42.5; the cut to grey 128 changes V by 128 or 127,
    also 127.5 / 3 = 42.5. Hue and saturation are 0 throughout.
    """
    frames = [stripes(0)] * 20 + [stripes(2 * t) for t in range(1, 21)] + [stripes(40)] * 20 + [solid(GRAY128, 20)]
    return np.concatenate(frames)


def run(name: str, pixels: np.ndarray, k: int, timestamps: np.ndarray | None = None, **params: object) -> list[int]:
    ts = np.arange(len(pixels), dtype=float) if timestamps is None else timestamps
    pool = CandidatePool.from_timestamps(ts)
    return list(selectors.create(name, **params).select(pool, Q, k, Features(pixels=pixels), seed=0).indices)


def test_adaptive_ratio_by_hand() -> None:
    # w = 2: frame 2's neighbours 0, 1, 3, 4 score 0, 4, 4, 0 -> mean 2 -> 30 / 2 = 15
    scores = np.array([0.0, 4.0, 30.0, 4.0, 0.0, 0.0, 0.0])
    ratios = adaptive_ratios(scores, 2)
    assert np.isnan(ratios[[0, 1, 5, 6]]).all()
    # frame 3: (4 + 30 + 0 + 0) / 4 = 8.5 -> 4 / 8.5; frame 4: (30 + 4 + 0 + 0) / 4 -> 0 / 8.5
    assert ratios[2:5].tolist() == [15.0, 4.0 / 8.5, 0.0]
    # a zero mean gives 255 when the score reaches min_content_val, else 0; ratios are capped at 255
    assert adaptive_ratios(np.array([0.0, 0.0, 15.0, 0.0, 0.0]), 2).tolist()[2] == 255.0
    assert adaptive_ratios(np.array([0.0, 0.0, 14.9, 0.0, 0.0]), 2).tolist()[2] == 0.0
    assert adaptive_ratios(np.array([0.0, 0.0, 900.0, 1.0, 0.0]), 2).tolist()[2] == 255.0  # 900 / 0.25 capped
    assert np.isnan(adaptive_ratios(np.array([5.0, 50.0, 5.0]), 2)).all()  # too short for a window


def test_a_pan_is_cut_by_content_detector_but_not_by_adaptive() -> None:
    pixels = pan_video()
    scores = content_scores(pixels)
    expected = np.zeros(80)
    expected[20:40] = 42.5
    expected[60] = 42.5
    assert scores.tolist() == expected.tolist()
    ratios = adaptive_ratios(scores, 2)
    # pan start 20: neighbours 0, 0, 42.5, 42.5 -> 2.0; inside the pan 1.0; pan end 39 -> 2.0; the cut 60 -> 255
    assert ratios[20] == 2.0 and ratios[21] == 42.5 / 31.875 and ratios[30] == 1.0 and ratios[39] == 2.0
    assert ratios[60] == 255.0
    pool = CandidatePool.from_timestamps(np.arange(80.0))
    cuts, _, _ = selectors.create("scenedetect_adaptive").cuts(pool, pixels)
    assert cuts == [60]
    content_cuts, _ = selectors.create("scenedetect_content").cuts(pool, pixels)
    assert content_cuts == [20, 39, 60]  # the pan's start and (after FlashFilter's merge) its end
    # scenes [0, 60) and [60, 80): middles 29 and 69; ContentDetector's four scenes: 9, 29, 49, 69
    assert run("scenedetect_adaptive", pixels, 2) == [29, 69]
    assert run("scenedetect_content", pixels, 4) == [9, 29, 49, 69]
    # k = 3: one frame more by the fill rule, the farthest from 29 and 69: frame 0 (29 away)
    assert run("scenedetect_adaptive", pixels, 3) == [0, 29, 69]


def test_min_scene_len_counts_from_the_previous_cut() -> None:
    # cuts at 14 and 15 frames after the start; each a 0 -> 255 change in V (score 85, ratio 255)
    early = np.concatenate([solid(BLACK, 14), solid(WHITE, 16)])
    at_15 = np.concatenate([solid(BLACK, 15), solid(WHITE, 15)])
    scores = content_scores(early)
    assert scores[14] == 85.0
    assert adaptive_cuts(scores, np.arange(30.0))[0] == []  # 14 - 0 < 15
    assert adaptive_cuts(content_scores(at_15), np.arange(30.0))[0] == [15]
    # two cuts 10 frames apart: the second is dropped at min_scene_len 15, kept at 10
    two = np.concatenate([solid(BLACK, 20), solid(WHITE, 10), solid(GRAY128, 20)])
    pool = CandidatePool.from_timestamps(np.arange(50.0))
    assert selectors.create("scenedetect_adaptive").cuts(pool, two)[0] == [20]
    assert selectors.create("scenedetect_adaptive", min_scene_len=10).cuts(pool, two)[0] == [20, 30]


def test_min_scene_len_in_seconds_uses_timestamps() -> None:
    pixels = np.concatenate([solid(BLACK, 8), solid(WHITE, 12)])
    half_seconds = np.arange(20) * 0.5
    assert run("scenedetect_adaptive", pixels, 2, timestamps=half_seconds) == [9, 19]  # cut at frame 8 < 15 frames: none
    assert run("scenedetect_adaptive", pixels, 2, timestamps=half_seconds, min_scene_len=3.0) == [3, 13]  # 8 frames = 4 s


def test_more_scenes_than_k_keeps_the_highest_adaptive_ratios() -> None:
    # cut 20: black -> white, score 85, but frame 22 dims to 235 (scores 20 / 3 at 22 and 23),
    # so the mean of 18, 19, 21, 22 is 5 / 3 and the ratio 51; cut 60: white -> grey 128, score 127 / 3,
    # quiet neighbours, ratio 255
    frames = [solid(BLACK, 20), solid(WHITE, 2), solid((235, 235, 235), 1), solid(WHITE, 37), solid(GRAY128, 20)]
    pixels = np.concatenate(frames)
    pool = CandidatePool.from_timestamps(np.arange(80.0))
    cuts, scores, ratios = selectors.create("scenedetect_adaptive").cuts(pool, pixels)
    assert cuts == [20, 60]
    assert scores[20] == 85.0 and scores[60] == pytest.approx(127 / 3)
    assert ratios[20] == pytest.approx(51.0) and ratios[60] == 255.0
    # scenes [0, 20), [20, 60), [60, 80): middles 9, 39, 69
    assert run("scenedetect_adaptive", pixels, 3) == [9, 39, 69]
    assert run("scenedetect_adaptive", pixels, 2) == [9, 69]  # the first scene, then ratio 255 over 51
    assert run("scenedetect_adaptive", pixels, 1) == [9]
    assert run("scenedetect_content", pixels, 2) == [9, 39]  # ContentDetector ranks by score: 85 over 42.3


def test_equal_ratios_fall_back_to_the_content_score() -> None:
    # cuts 20 (score 85) and 40 (white -> grey 128, 127 / 3), both with ratio 255
    pixels = np.concatenate([solid(BLACK, 20), solid(WHITE, 20), solid(GRAY128, 20)])
    assert run("scenedetect_adaptive", pixels, 2) == [9, 29]
    assert run("scenedetect_adaptive", pixels, 3) == [9, 29, 49]


def test_luma_only_and_a_lower_threshold() -> None:
    red, green = (255, 0, 0), (0, 255, 0)
    pixels = np.concatenate([solid(red, 20), solid(green, 20)])  # hue 0 -> 60: score 20 (H only)
    assert content_scores(pixels)[20] == 20.0
    assert run("scenedetect_adaptive", pixels, 2) == [9, 29]  # 20 >= min_content_val 15, ratio 255
    # V unchanged: no cut, one scene [0, 40) -> middle 19, then the farthest frame, 39 (20 away)
    assert run("scenedetect_adaptive", pixels, 2, luma_only=True) == [19, 39]
    assert run("scenedetect_adaptive", pixels, 2, min_content_val=25.0) == [19, 39]


def test_bad_parameters_are_refused() -> None:
    pixels = solid(BLACK, 6)
    with pytest.raises(ValueError, match="edge"):
        run("scenedetect_adaptive", pixels, 1, weights=(1.0, 1.0, 1.0, 0.5))
    with pytest.raises(ValueError, match="window_width"):
        run("scenedetect_adaptive", pixels, 1, window_width=0)
    with pytest.raises(ValueError, match="min_scene_len"):
        run("scenedetect_adaptive", pixels, 1, min_scene_len="15")


def test_matches_pyscenedetect_when_installed() -> None:
    scenedetect = pytest.importorskip("scenedetect")
    from scenedetect.common import FrameTimecode
    from scenedetect.detectors import AdaptiveDetector as Reference

    version = tuple(int(p) for p in scenedetect.__version__.split(".")[:3] if p.isdigit())
    if version < (0, 7, 2):
        pytest.skip("the reference is PySceneDetect 0.7.2 (earlier releases measure min_scene_len from a later frame)")
    rng = np.random.default_rng(7)
    for _ in range(10):
        n = int(rng.integers(30, 90))
        colours = rng.integers(0, 256, size=(5, 3))
        shot = np.minimum(np.sort(rng.integers(0, 5, size=n)), 4)
        noise = rng.integers(-25, 26, size=(n, H, W, 3))
        pixels = np.clip(colours[shot][:, None, None, :] + noise, 0, 255).astype(np.uint8)
        params = {"min_scene_len": int(rng.integers(0, 12)), "window_width": int(rng.integers(1, 4)), "adaptive_threshold": 2.0, "min_content_val": 10.0}
        reference = Reference(**params)
        expected = []
        for i, frame in enumerate(pixels):
            expected += reference.process_frame(FrameTimecode(i, fps=25.0), np.ascontiguousarray(frame[..., ::-1]))
        pool = CandidatePool.from_timestamps(np.arange(n) / 25.0)
        assert selectors.create("scenedetect_adaptive", **params).cuts(pool, pixels)[0] == [c.frame_num for c in expected]


def test_conformance() -> None:
    check_selector("scenedetect_adaptive")
    check_selector("scenedetect_adaptive", params={"min_scene_len": 2, "window_width": 1}, n=30, k=5)
