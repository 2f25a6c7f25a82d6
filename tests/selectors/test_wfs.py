"""WFS-SB against outputs of the reference code itself, and small hand-computed cases.

Expected values: github.com/MAC-AutoML/WFS-SB at commit a424fc4528ecbe57edc93413826a2f2b8bb2c203,
``wfs/core.py``, ``WFS(WFSConfig(...)).select_keyframes(relevance_scores, num_frames,
dwt_level=compute_dwt_level(N, "db4", 3), min_peak_distance=compute_min_peak_distance(N, 0.02, 5),
features)`` as ``wfs/pipeline.py`` calls it, with the hyper-parameters of
``configs/wfs_defaults.yaml`` (w_duration 0.4, w_mean 0.2, w_max 0.3, w_var 0.1, strictness 1.2,
temperature 1, lambda 0.5, height 0.5, prominence 0.05), run unchanged (PyWavelets 1.9.0,
scikit-learn 1.9.1) on ``scores_for(seed, N)`` and ``feats_for(seed, N)`` below; ``features=None``
where the case says so (the reference's temporal proxy). Other functions quoted: ``compute_dwt_level``,
``compute_min_peak_distance``, ``WFSBudgetAllocator.allocate_budget`` / ``filter_segments``.
"""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("pywt")

from frameselect.registry import selectors  # noqa: E402
from frameselect.selectors.wfs import WFS, wfs_allocate, wfs_dwt_level, wfs_keep_segments, wfs_min_peak_distance, wfs_select  # noqa: E402
from frameselect.types import CandidatePool, Features  # noqa: E402


def scores_for(seed: int, n: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    base = rng.random(n) * 0.2 + 0.2
    for _ in range(3):  # three raised stretches: events of higher relevance
        s = int(rng.integers(0, n))
        length = int(rng.integers(3, max(4, n // 8)))
        base[s : s + length] += rng.random() * 0.5
    return base


def feats_for(seed: int, n: int, d: int = 16) -> np.ndarray:
    return np.random.default_rng(seed + 1000).standard_normal((n, d)).astype(np.float32)


#: (seed, N, k, with features) -> WFS.select_keyframes(...)
# fmt: off
EXPECTED: dict[tuple[int, int, int, bool], list[int]] = {
    (0, 64, 8, False): [5, 27, 56, 57, 58, 59, 60, 63],
    (1, 64, 8, True): [13, 29, 30, 32, 56, 57, 58, 60],
    (2, 120, 16, True): [2, 9, 12, 16, 25, 33, 53, 55, 62, 63, 65, 67, 68, 105, 116, 118],
    (3, 300, 16, False): [2, 21, 54, 72, 84, 110, 156, 213, 256, 259, 260, 263, 264, 268, 272, 279],
    (4, 300, 32, True): [5, 14, 32, 61, 145, 148, 151, 152, 161, 167, 171, 178, 185, 194, 198, 201, 224, 225, 230, 241, 242, 243, 245, 247, 248, 249, 251, 253, 255, 271, 289, 294],
    (5, 1000, 16, True): [9, 76, 173, 249, 296, 327, 345, 381, 563, 644, 738, 761, 807, 885, 945, 975],
    (6, 500, 8, False): [117, 253, 266, 287, 414, 430, 458, 498],
    (7, 40, 16, True): [8, 9, 10, 12, 16, 17, 20, 21, 22, 23, 27, 28, 29, 30, 31, 34],
    (9, 200, 64, True): [2, 3, 4, 5, 6, 7, 13, 14, 15, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32, 33, 34, 37, 40, 43, 44, 49, 52, 54, 56, 60, 62, 65, 82, 97, 100, 101, 103, 105, 106, 107, 109, 110, 111, 112, 113, 114, 115, 116, 117, 119, 121, 124, 127, 160, 173, 177, 181, 182, 187, 188, 191, 192],
}
# fmt: on


def run(seed: int, n: int, k: int, with_features: bool) -> list[int]:
    pool = CandidatePool.from_timestamps(np.arange(n, dtype=np.float64))
    feats = Features(embeddings=feats_for(seed, n), scores=scores_for(seed, n))
    return list(WFS(use_embeddings=with_features).select(pool, None, k, feats).indices)


@pytest.mark.parametrize("case", sorted(EXPECTED), ids=str)
def test_selects_what_the_reference_selects(case: tuple[int, int, int, bool]) -> None:
    assert run(*case) == EXPECTED[case]


def test_a_flat_curve_still_finds_the_reference_s_rounding_peaks() -> None:
    # select_keyframes(np.full(50, 0.3), 6, ...) and np.sin(np.linspace(0, 1, 64)), 7 frames, no features
    assert wfs_select(np.full(50, 0.3), 6) == [7, 15, 23, 29, 35, 43]
    assert wfs_select(np.sin(np.linspace(0, 1, 64)), 7) == [3, 9, 47, 54, 61, 62, 63]


def test_no_boundary_falls_back_to_half_uniform_half_most_relevant() -> None:
    # all-zero relevance: the detail band is exactly zero, no peak. Uniform linspace(0, 29, 3, int) = 0, 14, 29;
    # argsort(zeros)[::-1] runs 29, 28, ...: the first three not uniform are 28, 27, 26 (reference: the same)
    assert wfs_select(np.zeros(30), 6) == [0, 14, 26, 27, 28, 29]


def test_level_distance_allocation_and_filtering_match_the_reference_helpers() -> None:
    assert [wfs_dwt_level(m) for m in (2, 16, 40, 64, 300, 1000, 5000)] == [1, 1, 2, 3, 5, 6, 9]
    assert [wfs_min_peak_distance(m) for m in (10, 300, 1000)] == [5, 6, 20]
    assert wfs_allocate([0.5, 0.2, 0.9, 0.1], 10) == [2, 2, 4, 2]
    assert wfs_allocate([1.0, 1.0, 1.0], 8) == [2, 3, 3]  # equal remainders: the reversed argsort favours the last
    assert wfs_keep_segments([0.5, 0.52, 0.48, 0.51, 0.01]) == [0, 1, 2, 3]
    assert wfs_keep_segments([0.0, 1.0, 0.0]) == [0, 1, 2]  # three or fewer: all kept


def test_fewer_frames_than_the_budget_returns_them_all() -> None:
    assert wfs_select(scores_for(8, 10), 16) == list(range(10))
    pool = CandidatePool.from_timestamps(np.arange(10, dtype=np.float64))
    out = WFS().select(pool, None, 16, Features(embeddings=feats_for(8, 10), scores=scores_for(8, 10)))
    assert list(out.indices) == list(range(10))


def test_registered_and_refuses_an_unknown_wavelet() -> None:
    from frameselect.errors import ConfigError

    assert isinstance(selectors.create("wfs"), WFS)
    with pytest.raises(ConfigError, match="wavelet"):
        WFS(wavelet="no-such-wavelet")
