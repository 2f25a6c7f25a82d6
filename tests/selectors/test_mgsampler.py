"""MGSampler and its SSIM: hand-computed cases, and OpenCV / scikit-image where installed."""

from __future__ import annotations

import numpy as np
import pytest

from frameselect.registry import selectors
from frameselect.selectors.mgsampler import consecutive_ssim, motion_guided_indices, rgb_to_gray, ssim
from frameselect.types import CandidatePool, Features, Query

Q = Query("q")
C1, C2 = (0.01 * 255) ** 2, (0.03 * 255) ** 2


def solid(value: int, h: int = 24, w: int = 32) -> np.ndarray:
    return np.full((h, w, 3), value, dtype=np.uint8)


def textured(seed: int, h: int = 24, w: int = 32) -> np.ndarray:
    return np.random.default_rng(seed).integers(0, 256, size=(h, w, 3), dtype=np.uint8)


def mgsampler(frames: list[np.ndarray], k: int, seed: int = 0, **params: object) -> list[int]:
    pixels = np.stack(frames)
    pool = CandidatePool.from_timestamps(np.arange(len(frames), dtype=float))
    return list(selectors.create("mgsampler", **params).select(pool, Q, k, Features(pixels=pixels), seed=seed).indices)


# -- gray and SSIM ----------------------------------------------------------------


def test_gray_of_primaries_is_opencvs_fixed_point_luma() -> None:
    rgb = np.array([[255, 0, 0], [0, 255, 0], [0, 0, 255], [255, 255, 255], [0, 0, 0], [100, 100, 100]], dtype=np.uint8)
    # (9798 R + 19235 G + 3735 B + 16384) >> 15
    assert rgb_to_gray(rgb).tolist() == [76, 150, 29, 255, 0, 100]


def test_gray_matches_opencv_bit_for_bit() -> None:
    cv2 = pytest.importorskip("cv2")
    img = np.random.default_rng(3).integers(0, 256, size=(64, 257, 3), dtype=np.uint8)
    assert np.array_equal(rgb_to_gray(img), cv2.cvtColor(img, cv2.COLOR_RGB2GRAY))


@pytest.mark.parametrize("window", ["uniform", "gaussian"])
def test_ssim_of_identical_images_is_exactly_one(window: str) -> None:
    img = rgb_to_gray(textured(1))
    assert ssim(img, img, window) == 1.0


@pytest.mark.parametrize("window", ["uniform", "gaussian"])
def test_ssim_of_two_flat_images_is_the_luminance_term(window: str) -> None:
    # no variance anywhere: SSIM = (2ab + C1) / (a^2 + b^2 + C1) at every pixel
    a, b = 100.0, 150.0
    expected = (2 * a * b + C1) / (a * a + b * b + C1)
    got = ssim(np.full((20, 20), 100, np.uint8), np.full((20, 20), 150, np.uint8), window)
    assert got == pytest.approx(expected, rel=1e-6)
    assert ssim(np.zeros((12, 12), np.uint8), np.full((12, 12), 255, np.uint8), window) == pytest.approx(C1 / (255.0**2 + C1), rel=1e-6)


def test_window_sums_are_exact() -> None:
    from frameselect.selectors.mgsampler import _box_valid

    g = np.random.default_rng(3).integers(0, 256, size=(4, 30, 41)).astype(np.int64)
    for values in (g, g * g, g[:-1] * g[1:]):
        expected = np.lib.stride_tricks.sliding_window_view(values, (7, 7), axis=(1, 2)).sum(axis=(-2, -1))
        assert np.array_equal(_box_valid(values.astype(np.float32), 7), expected)


def test_ssim_matches_scikit_image() -> None:
    metrics = pytest.importorskip("skimage.metrics")
    rng = np.random.default_rng(5)
    a = rng.integers(0, 256, size=(72, 128), dtype=np.uint8)
    b = np.clip(a.astype(int) + rng.integers(-60, 61, size=a.shape), 0, 255).astype(np.uint8)
    assert ssim(a, b) == pytest.approx(metrics.structural_similarity(a, b, data_range=255), abs=1e-6)
    ref_gauss = metrics.structural_similarity(a, b, data_range=255, gaussian_weights=True, sigma=1.5, use_sample_covariance=False)
    assert ssim(a, b, "gaussian") == pytest.approx(ref_gauss, abs=1e-9)


def test_consecutive_ssim_handles_chunks_and_order() -> None:
    frames = rgb_to_gray(np.stack([textured(i % 3) for i in range(300)]))  # more than one chunk
    values = consecutive_ssim(frames)
    assert values.shape == (299,)
    assert values[0] == pytest.approx(ssim(frames[0], frames[1]))
    assert values[298] == pytest.approx(ssim(frames[298], frames[299]))


def test_ssim_rejects_images_smaller_than_the_window() -> None:
    with pytest.raises(ValueError, match="7x7"):
        ssim(np.zeros((6, 30), np.uint8), np.zeros((6, 30), np.uint8))
    with pytest.raises(ValueError, match="window"):
        ssim(np.zeros((30, 30), np.uint8), np.zeros((30, 30), np.uint8), "box")


# -- the motion-guided pick ---------------------------------------------------------


def test_quantile_pick_by_hand() -> None:
    # 4 still pairs, then 8 equal moves: C = 0,0,0,0, 1/8, 2/8, ..., 1; targets 1/8, 3/8, 5/8, 7/8
    assert motion_guided_indices(np.array([0.0] * 4 + [1.0] * 8), 4) == [4, 6, 8, 10]
    # ties go to the earlier pair: C = 0,0,0,.25,.5,.75,1 and target .125 is .125 from both 0 and .25
    assert motion_guided_indices(np.array([0.0, 0.0, 0.0, 1.0, 1.0, 1.0, 1.0]), 4) == [0, 3, 4, 5]
    # motion enters as its square root: d = 1, 2 -> C = 1/3, 1; targets 1/4, 3/4 -> 0 and 1
    assert motion_guided_indices(np.array([1.0, 4.0]), 2) == [0, 1]


def test_no_motion_at_all_is_sampled_uniformly() -> None:
    # 10 pairs, C = (i + 1) / 10; targets 1/6, 1/2, 5/6 -> pairs 1, 4, 7
    assert motion_guided_indices(np.zeros(10), 3) == [1, 4, 7]


def test_frames_follow_the_motion() -> None:
    """Frames 0-9 still, then 10-17 alternate between two images: every pick in the moving half."""
    still, other = textured(10), textured(11)
    frames = [still] * 10 + [other if i % 2 == 0 else still for i in range(8)]
    # pairs 0-8 move 0, pairs 9-16 move equally: C = 0 (x9), 1/8, ..., 1 -> 9, 11, 13, 15
    assert mgsampler(frames, 4) == [9, 11, 13, 15]
    assert mgsampler(frames, 4, ssim_window="gaussian") == [9, 11, 13, 15]


def test_repeated_picks_are_filled_by_motion_then_time() -> None:
    """One cut between frames 9 and 10: C = 0 (pairs 0-8), 1 (pairs 9-18)."""
    frames = [textured(20)] * 10 + [textured(21)] * 10
    # targets 1/8, 3/8 -> pair 0 (nearest C = 0, first), 5/8, 7/8 -> pair 9; fill: no other motion,
    # so the earliest frames not yet taken
    assert mgsampler(frames, 4) == [0, 1, 2, 9]


def test_constant_pool_and_edge_budgets() -> None:
    frames = [solid(40)] * 11
    assert mgsampler(frames, 3) == [1, 4, 7]
    assert mgsampler(frames, 11) == list(range(11))
    assert mgsampler(frames, 50) == list(range(11))
    assert mgsampler([solid(40)], 3) == [0]


def test_train_mode_draws_from_the_seed() -> None:
    frames = [textured(i) for i in range(30)]
    first = mgsampler(frames, 5, seed=7, mode="train")
    assert first == mgsampler(frames, 5, seed=7, mode="train")
    assert len(first) == 5
    with pytest.raises(ValueError, match="mode"):
        mgsampler(frames, 5, mode="eval")
