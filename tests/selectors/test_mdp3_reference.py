"""MDP3 against outputs of the reference code itself.

Expected values: github.com/AIDC-AI/Ovis at commit 4de4946166ee40a2c3c6209b7ef57c50a7eaaf99,
``plugin/mdp3.py``, method ``MDP3._select_frames_fast(image_embeds, text_embeds)`` with the
class's own settings (lamda=0.2, condition_size=1, segment_size=-1 unless a case sets
it, ``MultiGaussianKernel`` with alphas 2**-3 .. 2**1), run in float32 torch (2.13.0, CPU)
under ``torch.no_grad()`` on ``inputs_for(seed, n, d, rows)`` below: the visual encoder
is not built, the embeddings are handed in. ``text_embeds`` has ``rows`` rows;
``_select_frames_fast`` reads the first. Where N < k it returns ``[]``.
"""

from __future__ import annotations

import numpy as np
import pytest

from frameselect.errors import SelectionError
from frameselect.selectors.mdp3 import MDP3
from frameselect.types import CandidatePool, Features


def inputs_for(seed: int, n: int, d: int, rows: int) -> tuple[np.ndarray, np.ndarray]:
    """Video-like unit embeddings: a slow random walk through a few scenes; queries near a scene."""
    rng = np.random.default_rng(seed)
    scenes = rng.standard_normal((6, d))
    which = np.sort(rng.integers(0, 6, n))
    emb = (scenes[which] + 0.3 * np.cumsum(rng.standard_normal((n, d)), axis=0) / np.sqrt(n)).astype(np.float32)
    emb /= np.linalg.norm(emb, axis=1, keepdims=True)
    text = (scenes[rng.integers(0, 6, rows)] + 0.5 * rng.standard_normal((rows, d))).astype(np.float32)
    text /= np.linalg.norm(text, axis=1, keepdims=True)
    return emb, text


def static_inputs_for(seed: int) -> tuple[np.ndarray, np.ndarray]:
    """A static video: 16 distinct unit embeddings (D = 128), each shown four times; one query row."""
    rng = np.random.default_rng(seed)
    base = rng.standard_normal((16, 128)).astype(np.float32)
    base /= np.linalg.norm(base, axis=1, keepdims=True)
    text = (base[rng.integers(16)] + 0.3 * rng.standard_normal(128)).astype(np.float32)
    return np.repeat(base, 4, axis=0), text / np.linalg.norm(text)


#: (seed, k) -> _select_frames_fast on static_inputs_for(seed); k up to the 16 distinct frames
# fmt: off
EXPECTED_STATIC: dict[tuple[int, int], list[int]] = {
    (0, 8): [4, 12, 28, 32, 40, 44, 56, 60],
    (1, 16): [0, 4, 8, 12, 16, 20, 24, 28, 32, 36, 40, 44, 48, 52, 56, 60],
    (2, 16): [0, 4, 8, 12, 16, 20, 24, 28, 32, 36, 40, 44, 48, 52, 56, 60],
    (3, 12): [0, 4, 8, 12, 16, 24, 28, 40, 44, 48, 52, 60],
}
# fmt: on


#: (seed, N, D, text rows, k, segment_size) -> _select_frames_fast's output
# fmt: off
EXPECTED: dict[tuple[int, int, int, int, int, int], list[int]] = {
    (0, 64, 128, 1, 8, -1): [36, 38, 40, 42, 43, 44, 45, 46],
    (1, 128, 512, 1, 16, -1): [24, 36, 114, 115, 116, 117, 118, 119, 120, 121, 122, 123, 124, 125, 126, 127],
    (2, 256, 1152, 1, 32, -1): [46, 47, 48, 50, 51, 52, 53, 54, 56, 57, 58, 59, 60, 61, 62, 63, 64, 65, 67, 69, 70, 71, 73, 74, 75, 76, 78, 80, 82, 84, 86, 87],
    (3, 100, 768, 3, 16, -1): [0, 28, 40, 41, 42, 43, 44, 45, 46, 47, 48, 49, 50, 66, 81, 86],
    (4, 256, 128, 2, 64, -1): [0, 13, 30, 46, 47, 66, 86, 88, 89, 90, 91, 92, 93, 94, 95, 96, 97, 98, 99, 100, 101, 102, 103, 104, 105, 106, 107, 108, 109, 110, 111, 112, 113, 114, 115, 116, 117, 118, 119, 120, 121, 122, 123, 124, 125, 126, 127, 128, 129, 130, 131, 133, 156, 166, 167, 175, 182, 187, 192, 197, 204, 213, 214, 255],
    (5, 64, 1152, 1, 32, -1): [0, 6, 7, 10, 13, 15, 17, 19, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32, 33, 35, 37, 40, 42, 43, 49, 54, 55, 59, 61, 63],
    (6, 128, 256, 1, 16, 32): [58, 59, 60, 61, 62, 63, 64, 66, 68, 70, 71, 72, 73, 75, 77, 97],
    (7, 64, 512, 2, 8, 16): [53, 55, 56, 57, 58, 60, 62, 63],
    (8, 20, 128, 1, 32, -1): [],
    (9, 8, 512, 2, 8, -1): [0, 1, 2, 3, 4, 5, 6, 7],
    (10, 64, 128, 1, 100, 32): [],
}
# fmt: on


#: (seed, N, D, k, segment_size, condition_size, lamda) -> _select_frames_fast's output with those settings
# fmt: off
EXPECTED_SETTINGS: dict[tuple[int, int, int, int, int, int, float], list[int]] = {
    (20, 12, 5, 5, -1, 1, 1.0): [0, 2, 6, 8, 10],
    (21, 16, 6, 3, -1, 1, 1.0): [1, 11, 13],
    (22, 12, 5, 7, 4, 1, 0.2): [0, 1, 5, 6, 8, 9, 10],
    (23, 12, 5, 5, 6, 1, 0.2): [3, 6, 7, 8, 9],
    (24, 12, 5, 7, 4, 2, 0.2): [0, 1, 2, 3, 7, 9, 10],
    (25, 64, 128, 12, 16, 2, 0.5): [1, 15, 21, 30, 33, 35, 37, 38, 39, 41, 47, 53],
    (26, 96, 256, 20, 32, 3, 0.2): [76, 77, 78, 79, 80, 81, 82, 83, 84, 85, 86, 87, 88, 89, 90, 91, 92, 93, 94, 95],
}
# fmt: on


def run(seed: int, n: int, d: int, rows: int, k: int, segment: int, exact: bool = True) -> list[int]:
    emb, text = inputs_for(seed, n, d, rows)
    pool = CandidatePool.from_timestamps(np.arange(n, dtype=np.float64))
    selector = MDP3(segment_size=max(segment, 0), reference_exact=exact)
    return list(selector.select(pool, None, k, Features(embeddings=emb, text=text if rows > 1 else text[0])).indices)


@pytest.mark.parametrize("case", sorted(EXPECTED), ids=str)
def test_reference_exact_prints_the_reference_output(case: tuple[int, int, int, int, int, int]) -> None:
    assert run(*case) == EXPECTED[case]


@pytest.mark.parametrize("case", sorted(EXPECTED_SETTINGS), ids=str)
def test_reference_exact_follows_the_reference_settings(case: tuple[int, int, int, int, int, int, float]) -> None:
    seed, n, d, k, segment, condition, lam = case
    emb, text = inputs_for(seed, n, d, 1)
    pool = CandidatePool.from_timestamps(np.arange(n, dtype=np.float64))
    selector = MDP3(segment_size=max(segment, 0), condition_size=condition, lam=lam, reference_exact=True)
    assert list(selector.select(pool, None, k, Features(embeddings=emb, text=text[0])).indices) == EXPECTED_SETTINGS[case]


@pytest.mark.parametrize("case", sorted(EXPECTED_STATIC), ids=str)
def test_identical_frames_as_the_reference_while_distinct_frames_last(case: tuple[int, int]) -> None:
    emb, text = static_inputs_for(case[0])
    pool = CandidatePool.from_timestamps(np.arange(64, dtype=np.float64))
    assert list(MDP3(reference_exact=True).select(pool, None, case[1], Features(embeddings=emb, text=text)).indices) == EXPECTED_STATIC[case]


def test_cases_cover_sizes_several_query_rows_segments_and_small_pools() -> None:
    assert {n for _, n, *_ in EXPECTED} >= {64, 128, 256}
    assert {d for _, _, d, *_ in EXPECTED} >= {128, 1152}
    assert any(rows > 1 for _, _, _, rows, _, _ in EXPECTED)
    assert any(seg > 0 for *_, seg in EXPECTED)
    assert any(EXPECTED[c] == [] for c in EXPECTED if c[4] > c[1])


def test_several_query_rows_default_mode_uses_their_mean() -> None:
    emb, text = inputs_for(5, 64, 128, 3)
    pool = CandidatePool.from_timestamps(np.arange(64, dtype=np.float64))
    by_rows = MDP3().select(pool, None, 8, Features(embeddings=emb, text=text)).indices
    by_mean = MDP3().select(pool, None, 8, Features(embeddings=emb, text=text.mean(axis=0))).indices
    by_first = MDP3().select(pool, None, 8, Features(embeddings=emb, text=text[0])).indices
    assert by_rows == by_mean != by_first


def test_budget_above_the_pool_is_empty_in_reference_exact_mode_and_the_pool_otherwise() -> None:
    assert run(1, 20, 128, 1, 32, -1) == []
    assert run(1, 20, 128, 1, 32, -1, exact=False) == list(range(20))


def test_segments_that_do_not_divide_the_pool_are_refused_in_reference_exact_mode() -> None:
    with pytest.raises(SelectionError, match="not a multiple of segment_size=32"):
        run(1, 100, 128, 1, 8, 32)
