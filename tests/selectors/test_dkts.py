"""D-KTS: cubic resize, dHash, de-duplication, KTS against brute force, and block boundaries."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from frameselect.registry import selectors
from frameselect.selectors.dkts import dedup_bases, dhash_nibbles, kts_segments, resize_cubic, segment_scatters
from frameselect.types import CandidatePool, Features, Query

Q = Query("q")


def gradient(decreasing: bool, h: int = 72, w: int = 128) -> np.ndarray:
    row = np.linspace(250, 5, w) if decreasing else np.linspace(5, 250, w)
    return np.repeat(np.repeat(row.astype(np.uint8)[None, :, None], h, axis=0), 3, axis=2)


def blocks(lengths: list[int], dim: int = 8, noise: float = 0.0, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    centres = np.eye(dim)[: len(lengths)]
    x = np.repeat(centres, lengths, axis=0) + noise * rng.normal(size=(sum(lengths), dim))
    return (x / np.linalg.norm(x, axis=1, keepdims=True)).astype(np.float32)


def dkts(embeddings: np.ndarray, pixels: np.ndarray, k: int, **params: object) -> list[int]:
    pool = CandidatePool.from_timestamps(np.arange(len(embeddings), dtype=float))
    feats = Features(embeddings=embeddings, pixels=pixels)
    return list(selectors.create("dkts", **params).select(pool, Q, k, feats, seed=0).indices)


# -- resize and dHash ------------------------------------------------------------


def test_resize_keeps_flat_images_flat() -> None:
    flat = np.full((2, 72, 128, 3), 77, dtype=np.uint8)
    assert np.all(resize_cubic(flat, 9, 8) == 77)


def _resize_by_definition(img: np.ndarray, width: int, height: int) -> np.ndarray:
    """OpenCV's fixed-point INTER_CUBIC written out pixel by pixel in Python integers."""
    from frameselect.selectors.dkts import _cubic_taps

    xi, xw = _cubic_taps(img.shape[1], width)
    yi, yw = _cubic_taps(img.shape[0], height)
    out = np.zeros((height, width, img.shape[2]), dtype=np.uint8)
    for y, x, c in itertools.product(range(height), range(width), range(img.shape[2])):
        total = sum(int(yw[y, j]) * int(xw[x, i]) * int(img[yi[y, j], xi[x, i], c]) for j in range(4) for i in range(4))
        out[y, x, c] = min(255, max(0, (total + (1 << 21)) >> 22))
    return out


@pytest.mark.parametrize("shape, size", [((72, 128, 3), (9, 8)), ((5, 7, 3), (9, 8)), ((8, 9, 1), (3, 11)), ((40, 3, 3), (6, 2))])
def test_resize_is_the_fixed_point_formula_exactly(shape: tuple[int, int, int], size: tuple[int, int]) -> None:
    rng = np.random.default_rng(sum(shape))
    imgs = rng.integers(0, 256, size=(3, *shape), dtype=np.uint8)
    imgs[1] = np.where(imgs[1] > 127, 255, 0)  # hard edges: the negative lobes push sums out of range
    got = resize_cubic(imgs, *size)
    for img, out in zip(imgs, got, strict=True):
        assert np.array_equal(out, _resize_by_definition(img, *size))


def test_resize_is_within_one_level_of_opencv() -> None:
    cv2 = pytest.importorskip("cv2")
    imgs = np.random.default_rng(0).integers(0, 256, size=(20, 72, 128, 3), dtype=np.uint8)
    ours = resize_cubic(imgs, 9, 8)
    theirs = np.stack([cv2.resize(im, (9, 8), interpolation=cv2.INTER_CUBIC) for im in imgs])
    assert np.abs(ours.astype(int) - theirs.astype(int)).max() <= 1


def test_dhash_of_gradients() -> None:
    # bit = left pixel brighter than its right neighbour: all ones (F) falling, all zeros rising
    nibbles = dhash_nibbles(np.stack([gradient(True), gradient(False)]))
    assert nibbles[0].tolist() == [15] * 16
    assert nibbles[1].tolist() == [0] * 16


def test_dedup_counts_differing_hex_digits() -> None:
    base = np.zeros(16, dtype=np.int64)
    four = base.copy()
    four[:4] = 1  # 4 hex digits differ: a duplicate (not > 4)
    five = base.copy()
    five[:5] = 8  # 5 differ: a new base
    hashes = np.stack([base, four, five, five, base])
    assert dedup_bases(hashes, 4.0).tolist() == [0, 0, 2, 2, 4]
    assert dedup_bases(hashes, 5.0).tolist() == [0, 0, 0, 0, 0]
    assert dedup_bases(hashes, -1.0).tolist() == [0, 1, 2, 3, 4]


# -- KTS --------------------------------------------------------------------------


def scatter(x: np.ndarray, a: int, b: int) -> float:
    seg = x[a:b].astype(np.float64)
    return float((seg * seg).sum() - (seg.sum(axis=0) ** 2).sum() / (b - a))


def brute_force(x: np.ndarray, ncp: int, max_len: int) -> list[int]:
    n = len(x)
    best, best_cps = np.inf, None
    for cps in itertools.combinations(range(1, n), ncp):
        bounds = [0, *cps, n]
        if any(e - s > max_len for s, e in zip(bounds[:-1], bounds[1:], strict=True)):
            continue
        cost = sum(scatter(x, s, e) for s, e in zip(bounds[:-1], bounds[1:], strict=True))
        if cost < best - 1e-9:
            best, best_cps = cost, list(cps)
    assert best_cps is not None
    return best_cps


def test_scatters_match_their_definition() -> None:
    x = np.random.default_rng(1).normal(size=(12, 5)).astype(np.float32)
    scat = segment_scatters(x, 6)
    for length in range(1, 7):
        for end in range(13):
            if end < length:
                assert scat[length - 1, end] == np.inf
            else:
                assert scat[length - 1, end] == pytest.approx(scatter(x, end - length, end), abs=1e-4)


@pytest.mark.parametrize("seed", range(4))
def test_kts_finds_the_optimal_segmentation(seed: int) -> None:
    x = np.random.default_rng(seed).normal(size=(11, 4)).astype(np.float32)
    for ncp, max_len in ((1, 11), (2, 11), (3, 11), (3, 4), (2, 5)):
        assert kts_segments(x, ncp, max_len) == brute_force(x, ncp, max_len), (ncp, max_len)


def test_kts_finds_block_boundaries_exactly() -> None:
    x = blocks([30, 50, 20], noise=0.3, seed=2)
    assert kts_segments(x, 2, 338) == [30, 80]
    assert kts_segments(blocks([5, 7, 3, 9]), 3, 338) == [5, 12, 15]


def test_kts_refuses_an_impossible_cut() -> None:
    with pytest.raises(ValueError, match="segments"):
        kts_segments(blocks([5, 5]), 1, 4)


# -- the selector --------------------------------------------------------------------


def test_one_middle_frame_per_block() -> None:
    emb = blocks([30, 50, 20], noise=0.3, seed=3)
    pixels = np.random.default_rng(4).integers(0, 256, size=(100, 8, 12, 3), dtype=np.uint8)
    # segments [0, 30), [30, 80), [80, 100): middles (0 + 29) // 2, (30 + 79) // 2, (80 + 99) // 2
    assert dkts(emb, pixels, 3) == [14, 54, 89]


def test_duplicates_carry_their_base_embedding() -> None:
    """Frames 0-9 look alike (falling gradient), 10-19 too (rising); their embeddings are noise.

    De-duplication gives frames 0-9 the embedding of frame 0 and 10-19 that of frame 10, so KTS
    cuts exactly at 10: middles 4 and 14. Without it (threshold -1) the noise decides.
    """
    pixels = np.stack([gradient(True)] * 10 + [gradient(False)] * 10)
    emb = np.random.default_rng(5).normal(size=(20, 16)).astype(np.float32)
    emb /= np.linalg.norm(emb, axis=1, keepdims=True)
    assert dkts(emb, pixels, 2) == [4, 14]
    assert dkts(emb, pixels, 2, threshold=-1.0) != [4, 14]


def test_budget_edges_and_a_long_pool() -> None:
    emb = blocks([6, 6])
    pixels = np.zeros((12, 8, 12, 3), dtype=np.uint8)
    assert dkts(emb, pixels, 1) == [5]
    assert dkts(emb, pixels, 12) == list(range(12))
    assert dkts(emb, pixels, 40) == list(range(12))
    # 2 segments of at most 4 frames cannot cover 12 frames: the bound rises to ceil(12 / 2) = 6
    assert dkts(emb, pixels, 2, max_segment_len=4) == [2, 8]
