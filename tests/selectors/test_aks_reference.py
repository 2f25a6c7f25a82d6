"""AKS against outputs of the reference code itself.

Expected values: github.com/ncTimTang/AKS at commit 46675011a0ad67ad65559ac98235f2ce82102a2e,
``frame_select.py``, function ``main`` (which calls ``meanstd``), run unchanged on
one video's scores written as its ``--score_path`` / ``--frame_path`` JSON inputs
(frame numbers ``0 .. N-1``), with ``--max_num_frames k``, ``--ratio r`` and the other
defaults (t1=0.8, t2=-100, all_depth=5). Inputs: ``scores_for(seed, n)`` below.
Where N // ratio < k the reference returns every candidate.
"""

from __future__ import annotations

import numpy as np
import pytest

from frameselect.selectors.aks import AKS
from frameselect.types import CandidatePool, Features


def scores_for(seed: int, n: int) -> np.ndarray:
    return np.random.default_rng(seed).random(n) ** 3


#: (seed, N, k, ratio) -> frame_select.main's selected frames
# fmt: off
EXPECTED: dict[tuple[int, int, int, int], list[int]] = {
    (0, 10, 32, 1): [0, 1, 2, 3, 4, 5, 6, 7, 8, 9],
    (0, 10, 32, 2): [0, 2, 4, 6, 8],
    (1, 64, 8, 1): [],
    (2, 64, 64, 1): [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32, 33, 34, 35, 36, 37, 38, 39, 40, 41, 42, 43, 44, 45, 46, 47, 48, 49, 50, 51, 52, 53, 54, 55, 56, 57, 58, 59, 60, 61, 62, 63],
    (3, 100, 32, 1): [2, 3, 8, 11, 14, 15, 18, 21, 27, 29, 33, 35, 37, 40, 43, 46, 52, 54, 58, 61, 64, 66, 68, 71, 75, 79, 83, 84, 88, 90, 93, 96],
    (4, 256, 64, 1): [0, 2, 10, 14, 16, 21, 27, 31, 32, 35, 41, 47, 48, 52, 58, 61, 68, 69, 72, 79, 81, 85, 94, 95, 98, 102, 104, 107, 112, 119, 122, 124, 130, 131, 139, 141, 145, 151, 154, 156, 160, 162, 169, 172, 178, 182, 184, 189, 194, 197, 204, 206, 209, 211, 217, 222, 224, 226, 237, 239, 241, 245, 248, 253],
    (5, 256, 32, 2): [0, 14, 22, 28, 36, 44, 54, 58, 68, 76, 80, 94, 100, 108, 116, 120, 128, 142, 150, 152, 164, 174, 182, 184, 194, 202, 210, 222, 226, 236, 240, 254],
    (6, 1000, 64, 1): [4, 13, 36, 53, 68, 81, 111, 117, 132, 155, 171, 174, 200, 215, 230, 245, 253, 266, 287, 311, 321, 324, 343, 349, 400, 405, 410, 433, 453, 458, 495, 498, 503, 509, 550, 552, 575, 589, 597, 622, 631, 646, 665, 679, 688, 701, 729, 744, 755, 759, 786, 807, 812, 835, 871, 872, 876, 903, 906, 907, 942, 954, 988, 998],
    (7, 1000, 128, 4): [0, 4, 8, 16, 28, 44, 48, 56, 68, 72, 76, 84, 92, 100, 104, 116, 124, 136, 140, 148, 152, 172, 176, 180, 184, 200, 204, 208, 216, 220, 228, 232, 248, 252, 268, 272, 284, 288, 292, 296, 316, 320, 324, 336, 340, 356, 364, 368, 372, 388, 392, 396, 412, 416, 428, 432, 440, 452, 456, 464, 472, 488, 492, 496, 500, 504, 520, 524, 540, 544, 548, 556, 572, 576, 580, 588, 592, 600, 608, 612, 624, 628, 636, 644, 652, 656, 664, 668, 696, 700, 704, 712, 716, 732, 736, 744, 748, 752, 760, 768, 780, 792, 800, 804, 812, 816, 824, 836, 844, 848, 856, 860, 876, 880, 888, 896, 912, 916, 928, 932, 936, 940, 948, 952, 972, 984, 992, 996],
    (8, 300, 16, 1): [],
    (9, 50, 64, 1): [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32, 33, 34, 35, 36, 37, 38, 39, 40, 41, 42, 43, 44, 45, 46, 47, 48, 49],
}
# fmt: on


def run(seed: int, n: int, k: int, ratio: int, exact: bool = True) -> list[int]:
    pool = CandidatePool.from_timestamps(np.arange(n, dtype=np.float64))
    return list(AKS(ratio=ratio, reference_exact=exact).select(pool, None, k, Features(scores=scores_for(seed, n))).indices)


@pytest.mark.parametrize("case", sorted(EXPECTED), ids=str)
def test_reference_exact_prints_the_reference_output(case: tuple[int, int, int, int]) -> None:
    assert run(*case) == EXPECTED[case]


def test_cases_cover_budgets_above_the_pool_and_short_outputs() -> None:
    assert any(n // r < k for _, n, k, r in EXPECTED)
    assert any(len(v) < k for (_, n, k, r), v in EXPECTED.items() if n // r >= k)


def test_budget_above_the_pool_returns_every_candidate_but_default_mode_keeps_min_k_n() -> None:
    assert run(0, 10, 32, 1) == list(range(10))
    assert run(0, 10, 32, 2) == [0, 2, 4, 6, 8]
    assert run(0, 10, 32, 2, exact=False) == list(range(10))


@pytest.mark.parametrize("case", sorted(EXPECTED), ids=str)
def test_default_mode_keeps_the_reference_frames_and_fills_to_min_k_n(case: tuple[int, int, int, int]) -> None:
    out = run(*case, exact=False)
    n, k = case[1], case[2]
    assert len(out) == min(k, n) == len(set(out)) and out == sorted(out)
    assert set(EXPECTED[case]) <= set(out)
