"""PySceneDetect-style ContentDetector and Katna-style peaks: colour conversions and cuts by hand."""

from __future__ import annotations

import numpy as np
import pytest

from frameselect.registry import selectors
from frameselect.selectors._frame_differences import keep_top_k
from frameselect.selectors.katna import katna_smooth, local_maxima, luv_frame_differences, rgb_to_luv
from frameselect.selectors.scenedetect_content import content_scores, flash_filter_merge, rgb_to_hsv, scene_middles
from frameselect.types import CandidatePool, Features, Query

Q = Query("q")
H, W = 6, 8
AREA = H * W
BLACK, WHITE, GRAY128, GRAY163 = (0, 0, 0), (255, 255, 255), (128, 128, 128), (163, 163, 163)
RED, GREEN = (255, 0, 0), (0, 255, 0)


def shots(*runs: tuple[tuple[int, int, int], int]) -> np.ndarray:
    """Solid-colour frames: ``(colour, length)`` runs in order."""
    frames = [np.full((H, W, 3), colour, dtype=np.uint8) for colour, length in runs for _ in range(length)]
    return np.stack(frames)


def run(name: str, pixels: np.ndarray, k: int, timestamps: np.ndarray | None = None, **params: object) -> list[int]:
    ts = np.arange(len(pixels), dtype=float) if timestamps is None else timestamps
    pool = CandidatePool.from_timestamps(ts)
    return list(selectors.create(name, **params).select(pool, Q, k, Features(pixels=pixels), seed=0).indices)


# -- colour conversions -------------------------------------------------------------


def test_hsv_of_known_colours() -> None:
    rgb = np.array([RED, GREEN, (0, 0, 255), WHITE, BLACK, GRAY128, (10, 20, 30), (255, 255, 0)], dtype=np.uint8)
    # (10, 20, 30): V = 30, S = 255 * 20 / 30 = 170, H = (R - G + 4 * 20) * 180 / (6 * 20) = 105
    expected = [[0, 255, 255], [60, 255, 255], [120, 255, 255], [0, 0, 255], [0, 0, 0], [0, 0, 128], [105, 170, 30], [30, 255, 255]]
    assert rgb_to_hsv(rgb).tolist() == expected


def test_hsv_matches_opencv_on_a_colour_lattice() -> None:
    cv2 = pytest.importorskip("cv2")
    r, g, b = np.meshgrid(np.arange(0, 256, 3), np.arange(0, 256, 5), np.arange(0, 256, 1), indexing="ij")
    rgb = np.stack([r, g, b], axis=-1).reshape(-1, 256, 3).astype(np.uint8)
    assert np.array_equal(rgb_to_hsv(rgb), cv2.cvtColor(rgb, cv2.COLOR_RGB2HSV))


def test_luv_of_known_colours() -> None:
    # neutral greys have u* = v* = 0 -> (0 + 134) * 255 / 354 = 96.5 -> 97, (0 + 140) * 255 / 262 = 136.3 -> 136;
    # grey 163: linear 0.3663, L = 116 * 0.3663^(1/3) - 16 = 67.0 -> 67.0 * 2.55 = 170.9 -> 170
    rgb = np.array([BLACK, WHITE, GRAY163], dtype=np.uint8)
    assert rgb_to_luv(rgb).tolist() == [[0, 97, 136], [255, 97, 136], [170, 97, 136]]


def test_luv_is_within_one_level_of_opencv() -> None:
    cv2 = pytest.importorskip("cv2")
    r, g, b = np.meshgrid(np.arange(0, 256, 5), np.arange(0, 256, 3), np.arange(0, 256, 1), indexing="ij")
    rgb = np.stack([r, g, b], axis=-1).reshape(-1, 256, 3).astype(np.uint8)
    diff = np.abs(rgb_to_luv(rgb).astype(int) - cv2.cvtColor(rgb, cv2.COLOR_RGB2LUV).astype(int))
    assert diff.max() <= 1
    assert (diff == 0).mean() > 0.85


# -- ContentDetector ---------------------------------------------------------------


def test_content_scores_by_hand() -> None:
    pixels = shots((BLACK, 1), (WHITE, 1), (RED, 1), (GREEN, 1), (GREEN, 1))
    # black->white: V 255 -> 85; white->red: S 255 -> 85; red->green: H 60 -> 20; same -> 0
    assert content_scores(pixels).tolist() == [0.0, 85.0, 85.0, 20.0, 0.0]
    assert content_scores(pixels, (0.0, 0.0, 1.0)).tolist() == [0.0, 255.0, 0.0, 0.0, 0.0]


def test_flash_filter_merge_by_hand() -> None:
    above = np.zeros(60, dtype=bool)
    above[[5, 20, 25, 40]] = True
    # 5 is before min_scene_len (dropped); 20 is a cut; 25 starts a merge; 40 is above the threshold
    # 15 frames after the merge began, and once 15 frames pass below it (at 55) the merge emits 40
    assert flash_filter_merge(above, np.arange(60.0), 15) == [20, 40]
    assert flash_filter_merge(above, np.arange(60.0), 0) == [5, 20, 25, 40]
    above = np.zeros(80, dtype=bool)
    above[[20, 25, 45, 70]] = True
    # merge from 25 runs until 45 is above and then 15 frames pass below the threshold: emits 45 at 60
    assert flash_filter_merge(above, np.arange(80.0), 15) == [20, 45, 70]


def test_scene_middles() -> None:
    assert scene_middles([20, 40], 60) == [9, 29, 49]
    assert scene_middles([], 10) == [4]


def test_cuts_exactly_where_the_colour_changes() -> None:
    pixels = shots((BLACK, 20), (WHITE, 20), (RED, 20))
    detector = selectors.create("scenedetect_content")
    cuts, scores = detector.cuts(CandidatePool.from_timestamps(np.arange(60.0)), pixels)
    assert cuts == [20, 40]
    assert scores[20] == 85.0 and scores[40] == 85.0
    assert run("scenedetect_content", pixels, 3) == [9, 29, 49]


def test_a_change_below_the_threshold_is_no_cut() -> None:
    pixels = shots((RED, 20), (GREEN, 20))  # score 20 < 27
    assert run("scenedetect_content", pixels, 1) == [19]  # one scene: middle (0 + 39) // 2
    assert run("scenedetect_content", pixels, 1, threshold=20.0) == [9]  # first scene outranks the cut


def test_more_scenes_than_k_keeps_the_strongest_cuts() -> None:
    # cuts: 20 (black->white, 85), 40 (white->grey128, 127/3), 60 (grey128->black, 128/3)
    pixels = shots((BLACK, 20), (WHITE, 20), (GRAY128, 20), (BLACK, 20))
    assert run("scenedetect_content", pixels, 4) == [9, 29, 49, 69]
    assert run("scenedetect_content", pixels, 3) == [9, 29, 69]
    assert run("scenedetect_content", pixels, 2) == [9, 29]


def test_fewer_scenes_than_k_are_filled_farthest_in_time() -> None:
    pixels = shots((BLACK, 10))
    assert run("scenedetect_content", pixels, 3) == [0, 4, 9]  # middle 4, then 9 (5 away), then 0


def test_min_scene_len_in_seconds_uses_timestamps() -> None:
    pixels = shots((BLACK, 8), (WHITE, 12))
    half_seconds = np.arange(20) * 0.5
    assert run("scenedetect_content", pixels, 2, timestamps=half_seconds) == [9, 19]  # cut at 8 < 15 frames: dropped
    assert run("scenedetect_content", pixels, 2, timestamps=half_seconds, min_scene_len=3.0) == [3, 13]  # 8 frames = 4 s >= 3 s


def test_edge_weight_is_refused() -> None:
    with pytest.raises(ValueError, match="edge"):
        run("scenedetect_content", shots((BLACK, 3)), 1, weights=(1.0, 1.0, 1.0, 0.5))


def test_keep_top_k_ties_go_to_the_earlier_frame() -> None:
    assert keep_top_k([3, 7, 9], [2.0, 2.0, 2.0], 2, 10) == [3, 7]


# -- Katna ----------------------------------------------------------------------


def test_luv_differences_by_hand() -> None:
    pixels = shots((BLACK, 2), (WHITE, 1), (GRAY163, 1))
    # only L changes: 0 -> 255 -> 170
    assert luv_frame_differences(pixels).tolist() == [0, 255 * AREA, 85 * AREA]


def test_smoothing_a_ramp_shifts_it_by_half_a_frame() -> None:
    # away from the ends the even Hanning window centres half a sample early: y_i = i - 0.5
    ramp = np.arange(40, dtype=float)
    smooth = katna_smooth(ramp)
    assert np.allclose(smooth[10:30], ramp[10:30] - 0.5)
    # Katna's padding mirrors x[20..2] (skipping x[1]): padded = -20..-2, 0..39, 39..57, so
    # y_0 = sum_{m<10} w[m] (9 - m) + sum_{m>=10} w[m] (8 - m) = (9 - 9.5) - 0.5 = -1
    assert smooth[0] == pytest.approx(-1.0)
    assert np.array_equal(katna_smooth(ramp[:10]), ramp[:10])  # shorter than the window: unchanged
    assert np.array_equal(katna_smooth(ramp, window_len=3), ramp)  # hanning(3) = [0, 1, 0]


def test_local_maxima_are_strict_and_interior() -> None:
    assert local_maxima(np.array([5.0, 1.0, 3.0, 3.0, 1.0, 4.0, 2.0, 6.0])) == [5]
    assert local_maxima(np.array([1.0, 2.0])) == []


def test_katna_keyframe_after_smoothing_by_hand() -> None:
    """black (0-19), grey 163 (20), white (21-39): differences 170 A at pair 19, 85 A at pair 20.

    Smoothed ``y_i = sum_m w[m] x[i + 9 - m] = 170 A w[i - 10] + 85 A w[i - 11]`` (w: Hanning(20)
    normalised, symmetric, w[9] = w[10] its top): ``y_20 = 255 A w[9]`` beats
    ``y_19 = 170 A w[9] + 85 A w[8]`` and ``y_21 = 170 A w[8] + 85 A w[9]``: one peak, at pair 20,
    i.e. frame 20 -- one frame later than the raw peak at pair 19.
    """
    pixels = shots((BLACK, 20), (GRAY163, 1), (WHITE, 19))
    assert run("katna", pixels, 1) == [20]
    assert run("katna", pixels, 3) == [0, 20, 39]  # filled farthest in time


def test_katna_keeps_the_highest_peaks() -> None:
    # unsmoothed (hanning(3) is the identity): peaks at pairs 9 (255 A), 19 (85 A), 29 (170 A) -> frames 9, 19, 29
    pixels = shots((BLACK, 10), (WHITE, 10), (GRAY163, 10), (BLACK, 10))
    assert run("katna", pixels, 3, window_len=3) == [9, 19, 29]
    assert run("katna", pixels, 2, window_len=3) == [9, 29]


def test_constant_and_tiny_pools() -> None:
    for name in ("katna", "scenedetect_content"):
        assert run(name, shots((RED, 7)), 3) == [0, 3, 6]
        assert run(name, shots((RED, 1)), 2) == [0]
        assert run(name, shots((RED, 2), (BLACK, 1)), 5) == [0, 1, 2]


def test_content_detector_matches_pyscenedetect_when_installed() -> None:
    """Cuts equal PySceneDetect 0.7.2's ContentDetector (flash filter included) on random shot sequences."""
    scenedetect = pytest.importorskip("scenedetect")
    from scenedetect.common import FrameTimecode
    from scenedetect.detectors import ContentDetector as Reference

    version = tuple(int(p) for p in scenedetect.__version__.split(".")[:3] if p.isdigit())
    if version < (0, 7, 2):
        pytest.skip("the reference is PySceneDetect 0.7.2")
    rng = np.random.default_rng(11)
    cases = 0
    for _ in range(12):
        n = int(rng.integers(30, 90))
        colours = rng.integers(0, 256, size=(6, 3))
        shot = np.minimum(np.sort(rng.integers(0, 6, size=n)), 5)
        noise = rng.integers(-20, 21, size=(n, H, W, 3))
        pixels = np.clip(colours[shot][:, None, None, :] + noise, 0, 255).astype(np.uint8)
        params = {"threshold": float(rng.choice([15.0, 27.0, 40.0])), "min_scene_len": int(rng.integers(1, 12))}
        reference = Reference(**params)
        expected = []
        for i, frame in enumerate(pixels):
            expected += reference.process_frame(FrameTimecode(i, fps=25.0), np.ascontiguousarray(frame[..., ::-1]))
        pool = CandidatePool.from_timestamps(np.arange(n) / 25.0)
        got = selectors.create("scenedetect_content", **params).cuts(pool, pixels)[0]
        assert got == [c.frame_num for c in expected], params
        cases += len(expected)
    assert cases > 10  # the sequences really have cuts
