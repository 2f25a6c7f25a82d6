"""TASS (DATE) against outputs of the reference code itself.

Expected values: github.com/yuanc3/DATE at commit c39612872c0500721d92eb90caccc01ca4a670f2,
``utils/sampling.py``, ``tass_sampling(timestamps, scores, topk=0, max_frames=k)`` (any integer
``topk`` selects the above-mean count; ``topk=None``, as ``demo.py`` passes it, raises
``TypeError``), run unchanged on ``inputs(seed, N, fps)`` below. The lists are its
``selected_indices``, in the order picked.
"""

from __future__ import annotations

import numpy as np
import pytest

from frameselect.registry import selectors
from frameselect.selectors.tass import TASS, tass_select
from frameselect.types import CandidatePool, Features


def inputs(seed: int, n: int, fps: float) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    s = 0.2 + 0.05 * rng.standard_normal(n)
    for _ in range(4):
        c = int(rng.integers(0, n))
        w = int(rng.integers(2, max(3, n // 10)))
        s[max(0, c - w) : c + w] += 0.08 * rng.random()
    return np.arange(n) / fps, s


#: (seed, N, fps, k) -> tass_sampling(...)[1]
# fmt: off
EXPECTED: dict[tuple[int, int, float, int], list[int]] = {
    (0, 120, 2.0, 8): [89, 47, 6, 114, 67, 79, 101, 21],
    (1, 240, 2.0, 16): [183, 124, 30, 70, 237, 207, 155, 4, 104, 196, 166, 141, 94, 56, 84, 221],
    (2, 600, 1.0, 32): [136, 105, 56, 291, 77, 256, 429, 472, 195, 231, 319, 174, 26, 340, 552, 517, 4, 386, 598, 147, 117, 41, 90, 304, 273, 441, 185, 220, 164, 401, 570, 124],
    (3, 3600, 2.0, 64): [993, 9, 1966, 109, 940, 247, 181, 824, 2759, 718, 772, 2231, 3108, 329, 2126, 3579, 899, 2860, 2440, 1886, 2998, 1324, 468, 675, 578, 1037, 3192, 3376, 67, 2311, 1390, 1634, 1247, 1738, 2949, 1694, 3477, 2385, 3425, 2039, 2637, 1798, 2805, 2493, 3056, 1838, 1172, 415, 1113, 1492, 3272, 1550, 2553, 513, 142, 277, 967, 695, 1014, 46, 88, 846, 746, 224],
    (4, 60, 1.0, 32): [57, 24, 15, 55, 48, 51, 22, 2, 11, 54, 26, 17, 23, 50, 58, 53, 35, 33, 49, 36, 41, 28, 40, 3, 21, 52, 13],
    (5, 1000, 0.5, 8): [309, 320, 442, 337, 458, 371, 403, 220],
    (6, 40, 2.0, 4): [16, 34, 1, 28],
}
# fmt: on


@pytest.mark.parametrize("case", sorted(EXPECTED), ids=str)
def test_picks_what_the_reference_picks(case: tuple[int, int, float, int]) -> None:
    seed, n, fps, k = case
    t, s = inputs(seed, n, fps)
    assert tass_select(t, s, k) == EXPECTED[case]
    pool = CandidatePool(video_id="v", timestamps=t, frame_indices=np.arange(n))
    exact = TASS(reference_exact=True).select(pool, None, k, Features(scores=s))
    assert list(exact.indices) == sorted(EXPECTED[case])


def test_few_frames_above_the_mean_are_all_the_reference_gives_and_the_default_fills() -> None:
    # case (4, 60, 1.0, 32): only 27 frames lie above the mean
    t, s = inputs(4, 60, 1.0)
    pool = CandidatePool(video_id="v", timestamps=t, frame_indices=np.arange(60))
    exact = TASS(reference_exact=True).select(pool, None, 32, Features(scores=s))
    assert len(exact.indices) == 27 and exact.reference_exact
    filled = TASS().select(pool, None, 32, Features(scores=s))
    assert len(filled.indices) == 32 and set(exact.indices) <= set(filled.indices)
    assert filled.filled == 5
    # the five added are the most relevant of the rest
    rest = sorted(set(range(60)) - set(exact.indices), key=lambda i: -s[i])[:5]
    assert set(filled.indices) - set(exact.indices) == set(rest)


def test_by_hand_gap_then_halving() -> None:
    # scores 9..0 at t = 0..9 s; mean 4.5: frames 0-4 above it, five candidates for k = 3, best first.
    # gap 20 s: frame 0; gaps 10 and 5 s: nothing (all within 4 s of frame 0); 2.5 s: frame 3;
    # 1.25 s: nothing (1 and 2 s from frame 0 or 3, frame 4 1 s from 3); 0.625 s: frame 1.
    # (reference: tass_sampling(list(range(10)), [9.0, ..., 0.0], topk=0, max_frames=3) -> [0, 3, 1])
    t = np.arange(10, dtype=np.float64)
    s = np.arange(10, dtype=np.float64)[::-1]
    assert tass_select(t, s, 3) == [0, 3, 1]
    # a constant curve has nothing above its mean: the reference returns no frame
    assert tass_select(t, np.full(10, 0.5), 3) == []


def test_registered() -> None:
    assert isinstance(selectors.create("tass"), TASS)
