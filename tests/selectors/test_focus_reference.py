"""FOCUS against outputs of the reference code itself.

Expected values: github.com/NUS-HPC-AI-Lab/FOCUS at commit e28a555a8d84fe2d82b8de3e23bbcb787822e833,
``focus.py``, ``FOCUS(...).select_keyframes(video, query, k, min_gap_sec, rng)`` with the
command-line defaults of ``select_keyframe.py`` and its adaptive minimum gap
(``ray_worker``: none when duration / k <= 0.2 s, else min(0.25 * duration / k, 1.0 s)),
``rng = np.random.default_rng(42)`` as the driver seeds it, run unchanged on a stand-in
video of ``round(seconds * 30)`` frames at 30 fps whose ``similarity_fn`` returns
``scores_for(seed, seconds)`` below (one score per native frame; decord is not used).
The pool is every native frame: timestamps ``i / 30``.
"""

from __future__ import annotations

import numpy as np
import pytest

from frameselect.selectors.focus import FOCUS
from frameselect.types import CandidatePool, Features

FPS = 30.0


def scores_for(seed: int, seconds: float) -> np.ndarray:
    """BLIP-like match probabilities in [0, 1]: a slow wave with noise."""
    n = int(round(seconds * FPS))
    rng = np.random.default_rng(seed)
    t = np.arange(n) / FPS
    return np.clip(0.5 + 0.4 * np.sin(t / (3 + 10 * rng.random())) * rng.random() + 0.1 * rng.standard_normal(n), 0.0, 1.0)


#: (seed, seconds, k, interpolation_method) -> select_keyframes' selected frames
# fmt: off
EXPECTED: dict[tuple[int, float, int, str], list[int]] = {
    (0, 0.5, 16, 'nearest'): [0, 3, 4, 5],
    (1, 1.0, 64, 'nearest'): [0, 1, 2, 9, 13, 18, 19, 20, 21, 22, 23, 27, 28, 29],
    (2, 600.0, 32, 'nearest'): [1264, 1273, 1369, 4282, 4299, 4402, 5558, 5608, 5617, 6625, 6707, 6769, 6820, 7577, 7586, 7659, 7804, 8659, 8682, 8702, 8779, 9803, 9847, 11914, 11933, 12934, 12973, 13047, 13208, 13732, 13809, 13867],
    (3, 20.0, 8, 'nearest'): [78, 81, 107, 151, 160, 187, 293, 419],
    (4, 20.0, 64, 'nearest'): [264, 267, 268, 271, 272, 273, 278, 281, 284, 287, 288, 291, 292, 294, 296, 299, 413, 415, 416, 417, 418, 419, 420, 421, 422, 423, 427, 433, 437, 442, 443, 444, 445, 485, 487, 489, 490, 491, 492, 493, 494, 495, 496, 497, 498, 499, 503, 514, 557, 560, 562, 565, 566, 571, 574, 575, 576, 577, 578, 584, 585, 587, 589, 593],
    (5, 47.3, 16, 'linear'): [280, 283, 289, 354, 356, 361, 442, 547, 634, 687, 698, 705, 751, 871, 874, 883],
    (6, 95.0, 48, 'nearest'): [104, 114, 117, 147, 157, 166, 167, 170, 177, 207, 246, 326, 714, 727, 734, 744, 747, 753, 754, 759, 779, 798, 1450, 1462, 1479, 1483, 1498, 1554, 1557, 1577, 1582, 1583, 1617, 1793, 1808, 1828, 1832, 1843, 1847, 1855, 1858, 1879, 1887, 1910, 1927, 1957, 1973, 2007],
    (7, 300.0, 64, 'uniform'): [93, 126, 160, 172, 270, 303, 328, 335, 366, 433, 460, 471, 1912, 1915, 2009, 2034, 2037, 2038, 2054, 2098, 2128, 2158, 2205, 2240, 2252, 2276, 2320, 2361, 2363, 5252, 5257, 5282, 5303, 5329, 5349, 5365, 5430, 5431, 5501, 5522, 5623, 5669, 7107, 7115, 7176, 7194, 7236, 7305, 7420, 7501, 7509, 7515, 7538, 7557, 8524, 8556, 8564, 8592, 8664, 8671, 8702, 8703, 8708, 8894],
    (8, 611.1, 16, 'rbf'): [310, 324, 1286, 2576, 4070, 6039, 6190, 11011, 11024, 15597, 15698, 15744, 16764, 16816, 18094, 18127],
    (9, 1800.0, 64, 'nearest'): [476, 955, 1017, 4645, 4736, 5038, 5112, 5231, 6475, 6738, 6846, 7183, 7524, 7525, 9271, 9305, 9351, 9655, 9759, 11354, 11357, 15994, 16011, 16221, 16246, 16281, 16283, 22530, 22576, 22603, 26740, 26872, 27275, 27938, 29068, 29365, 29370, 31292, 31306, 33732, 33802, 33816, 35859, 35956, 36043, 39656, 39713, 40095, 40110, 40157, 42495, 42654, 42661, 42691, 44755, 44823, 46995, 46999, 49310, 49377, 51774, 51828, 52682, 52713],
    (10, 3600.0, 64, 'nearest'): [426, 7442, 12708, 14635, 15149, 16686, 16766, 16889, 16976, 17039, 17079, 18749, 18801, 21388, 21423, 21438, 26650, 26705, 29193, 29254, 31782, 34556, 36123, 36285, 38400, 40521, 40559, 40619, 42634, 43155, 43294, 43364, 45394, 45395, 50466, 50531, 50930, 51101, 52164, 53189, 53276, 53410, 53415, 58774, 59523, 66840, 66875, 68488, 68524, 69209, 70561, 70596, 71765, 71857, 79329, 79334, 83369, 95039, 97541, 97572, 100289, 104793, 105274, 107728],
    (11, 3600.0, 8, 'linear'): [2445, 12962, 18809, 25109, 68644, 91202, 104183, 106830],
    (12, 2.0, 64, 'nearest'): [7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 42, 43, 44, 45, 46, 47, 48, 49, 50, 51, 52, 53, 54, 55],
}
# fmt: on


def run(seed: int, seconds: float, k: int, method: str, exact: bool = True, generator_seed: int = 42) -> list[int]:
    scores = scores_for(seed, seconds)
    pool = CandidatePool.from_timestamps(np.arange(len(scores)) / FPS)
    selector = FOCUS(interpolation_method=method, reference_exact=exact)
    return list(selector.select(pool, None, k, Features(scores=scores), rng=np.random.default_rng(generator_seed)).indices)


@pytest.mark.parametrize("case", sorted(EXPECTED), ids=str)
def test_reference_exact_prints_the_reference_output(case: tuple[int, float, int, str]) -> None:
    assert run(*case) == EXPECTED[case]


def test_cases_cover_durations_budgets_and_pools_shorter_than_k() -> None:
    assert min(s for _, s, _, _ in EXPECTED) < 1 and max(s for _, s, _, _ in EXPECTED) == 3600
    assert {k for _, _, k, _ in EXPECTED} >= {8, 16, 32, 64}
    assert any(round(s * FPS) < k for _, s, k, _ in EXPECTED)
    assert any(len(v) < k for (_, s, k, _), v in EXPECTED.items())


def test_default_mode_fills_a_short_reference_output_to_min_k_n() -> None:
    short = [c for c in EXPECTED if len(EXPECTED[c]) < min(c[2], round(c[1] * FPS))]
    assert short
    for case in short:
        out = run(*case, exact=False)
        assert len(out) == min(case[2], round(case[1] * FPS)) and len(set(out)) == len(out)


def test_the_generator_seed_matters() -> None:
    case = (2, 600.0, 32, "nearest")
    assert run(*case) == EXPECTED[case]
    assert run(*case, generator_seed=43) != EXPECTED[case]


def test_a_container_duration_a_fraction_of_a_frame_off_changes_nothing() -> None:
    # the reference's duration is frames / fps; a container often reports a little more (here 225 coarse arms, not 226)
    seed, seconds, k, method = case = (10, 3600.0, 64, "nearest")
    scores = scores_for(seed, seconds)
    pool = CandidatePool(video_id="v", timestamps=np.arange(len(scores)) / FPS, frame_indices=np.arange(len(scores)), duration=3600.03)
    selector = FOCUS(interpolation_method=method, reference_exact=True)
    assert list(selector.select(pool, None, k, Features(scores=scores), rng=np.random.default_rng(42)).indices) == EXPECTED[case]
