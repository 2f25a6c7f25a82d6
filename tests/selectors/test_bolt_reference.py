"""BOLT against outputs of the reference code itself.

Expected values: github.com/sming256/BOLT at commit 8a9ba455e8c7668ae4443b3273bbf283b700cc7f,
``select_frames.py``, function ``inverse_transform_sampling(score, n, power)``, run
unchanged on ``scores_for(seed, n)`` below. It returns exactly ``n`` raw
``searchsorted`` indices, repeats included, also when ``n`` exceeds the pool.
"""

from __future__ import annotations

import numpy as np
import pytest

from frameselect.errors import SelectionError
from frameselect.selectors.bolt import BOLT
from frameselect.types import CandidatePool, Features


def scores_for(seed: int, n: int) -> np.ndarray:
    return np.random.default_rng(seed).random(n) ** 3


#: (seed, N, k, power) -> inverse_transform_sampling(score, k, power)
# fmt: off
EXPECTED: dict[tuple[int, int, int, float], list[int]] = {
    (0, 5, 8, -1.0): [0, 0, 1, 4, 4, 4, 4, 4],
    (1, 64, 2, -1.0): [33, 33],
    (2, 64, 16, -1.0): [5, 13, 16, 17, 22, 25, 27, 32, 34, 38, 40, 42, 50, 52, 55, 56],
    (3, 120, 17, 2.5): [15, 21, 21, 27, 33, 42, 46, 54, 64, 66, 68, 71, 73, 83, 84, 102, 110],
    (4, 300, 64, 3.0): [2, 2, 8, 14, 14, 16, 17, 21, 27, 32, 35, 47, 47, 52, 58, 58, 61, 65, 69, 98, 104, 113, 119, 130, 131, 135, 139, 141, 145, 145, 151, 156, 160, 169, 172, 178, 178, 180, 182, 189, 197, 202, 206, 209, 211, 220, 224, 226, 226, 230, 231, 241, 248, 248, 253, 265, 270, 271, 273, 280, 286, 290, 294, 297],
    (5, 40, 128, 3.0): [0, 0, 0, 0, 1, 1, 1, 1, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 10, 13, 13, 13, 13, 13, 13, 13, 13, 13, 13, 13, 13, 13, 13, 13, 13, 13, 13, 13, 13, 13, 13, 13, 13, 14, 14, 14, 14, 14, 14, 14, 14, 14, 14, 14, 14, 15, 15, 15, 15, 15, 15, 18, 22, 22, 22, 22, 22, 22, 22, 22, 22, 22, 24, 25, 25, 25, 25, 25, 25, 25, 25, 27, 27, 27, 27, 27, 27, 27, 27, 27, 27, 27, 27, 28, 28, 28, 28, 28, 28, 28, 28, 28, 30, 36, 36, 36, 36, 39],
    (6, 10, 64, 1.0): [0, 0, 0, 0, 1, 2, 2, 3, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 5, 5, 5, 5, 5, 5, 5, 5, 6, 6, 6, 6, 6, 6, 6, 6, 6, 7, 8, 8, 8, 8, 8, 8, 8, 8, 8],
    (7, 1000, 32, 2.5): [25, 68, 84, 116, 143, 162, 198, 228, 273, 296, 324, 346, 375, 401, 425, 472, 501, 556, 585, 608, 643, 679, 722, 765, 790, 806, 848, 861, 902, 929, 950, 982],
}
# fmt: on
#: inverse_transform_sampling(scores_for(189, 100), 1)
PAST_THE_END: list[int] = [100]


def run(seed: int, n: int, k: int, power: float, exact: bool = True) -> list[int]:
    pool = CandidatePool.from_timestamps(np.arange(n, dtype=np.float64))
    return list(BOLT(power=power, reference_exact=exact).select(pool, None, k, Features(scores=scores_for(seed, n))).indices)


@pytest.mark.parametrize("case", sorted(EXPECTED), ids=str)
def test_reference_exact_prints_the_reference_output(case: tuple[int, int, int, float]) -> None:
    assert run(*case) == EXPECTED[case]


def test_cases_cover_budgets_above_the_pool() -> None:
    long = [v for (_, n, k, _), v in EXPECTED.items() if k > n]
    assert long and all(len(v) == k for (_, n, k, _), v in EXPECTED.items())


def test_default_mode_keeps_min_k_n_distinct_frames() -> None:
    out = run(3, 5, 12, -1.0, exact=False)
    assert out == [0, 1, 2, 3, 4]


def test_an_index_past_the_pool_is_refused_in_reference_exact_mode() -> None:
    # k = 1 asks for the quantile 1.0; the CDF's float sum can end below it, and searchsorted then
    # names frame N, which does not exist (the reference turns it into a time past the last frame)
    assert PAST_THE_END == [100]  # the reference's inverse_transform_sampling(scores_for(189, 100), 1)
    scores = scores_for(189, 100)
    pool = CandidatePool.from_timestamps(np.arange(100, dtype=np.float64))
    with pytest.raises(SelectionError, match=r"outside the pool of 100 frames"):
        BOLT(reference_exact=True).select(pool, None, 1, Features(scores=scores))


@pytest.mark.parametrize("case", sorted(EXPECTED), ids=str)
def test_default_mode_keeps_the_reference_frames_and_fills_to_min_k_n(case: tuple[int, int, int, float]) -> None:
    out = run(*case, exact=False)
    n, k = case[1], case[2]
    assert len(out) == min(k, n) == len(set(out)) and out == sorted(out)
    assert set(EXPECTED[case]) <= set(out)
