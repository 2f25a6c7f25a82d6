"""KTV's keyframe stage against outputs of the reference code itself.

Expected values: github.com/hktk07/KTV at commit d77f844a9214d8c66cc60d33395efd89273928ee,
``cluster_keyframe_and_order.py``: ``video_frame_clustering(frame_features, num_cluster=k)``
(scikit-learn 1.9.1 ``KMeans(n_clusters=k, random_state=0, init='k-means++', n_init=10)``),
followed by the check in ``cluster``: when the k frames are not distinct,
``np.linspace(0, float(total_frames), k, endpoint=False)`` as ints. Run unchanged on
``feats_for(seed, N, centers)`` below; the lists are in the reference's cluster-label order.
"""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("sklearn")

from frameselect.registry import selectors  # noqa: E402
from frameselect.selectors.ktv import KTV, ktv_cluster_frames, ktv_select  # noqa: E402
from frameselect.types import CandidatePool, Features  # noqa: E402


def feats_for(seed: int, n: int, centers: int, d: int = 32) -> np.ndarray:
    rng = np.random.default_rng(seed)
    c = rng.normal(0, 1, size=(centers, d)) * 3
    lab = np.sort(rng.integers(0, len(c), size=n))
    return (c[lab] + rng.normal(0, 0.5, size=(n, d))).astype(np.float32)


#: (seed, N, k, centres) -> the reference's keyframes, in cluster-label order
# fmt: off
EXPECTED: dict[tuple[int, int, int, int], list[int]] = {
    (0, 60, 6, 6): [28, 24, 19, 57, 39, 10],
    (1, 120, 12, 8): [25, 108, 44, 13, 98, 60, 77, 32, 107, 91, 55, 24],
    (2, 300, 12, 12): [154, 139, 247, 71, 287, 254, 180, 3, 208, 113, 42, 52],
    (3, 40, 4, 10): [24, 32, 5, 19],
    (4, 200, 8, 3): [164, 101, 9, 191, 35, 71, 88, 74],
    (5, 500, 16, 16): [259, 348, 442, 225, 15, 425, 196, 490, 181, 290, 401, 69, 87, 138, 108, 332],
}
# fmt: on


@pytest.mark.parametrize("case", sorted(EXPECTED), ids=str)
def test_keyframes_are_the_reference_s(case: tuple[int, int, int, int]) -> None:
    seed, n, k, c = case
    feats = feats_for(seed, n, c)
    assert ktv_cluster_frames(feats, k) == EXPECTED[case]
    pool = CandidatePool.from_timestamps(np.arange(n, dtype=np.float64))
    assert list(KTV().select(pool, None, k, Features(embeddings=feats)).indices) == sorted(EXPECTED[case])


def test_coinciding_keyframes_fall_back_to_uniform_positions() -> None:
    # five identical frames and one other, k = 3: two centres share a nearest frame;
    # linspace(0, 6, 3, endpoint=False) = 0, 2, 4 (reference: the same)
    f = np.zeros((6, 4), dtype=np.float32)
    f[5] = 1.0
    assert ktv_select(f, 3) == ([0, 2, 4], True)


def test_two_obvious_groups_by_hand() -> None:
    # frames 0-2 near (0, 0), frames 3-5 near (10, 10): the two centres are the group means,
    # and the frame nearest each is the middle one
    f = np.array([[0, 0], [0.1, 0.1], [0.3, 0.3], [10, 10], [10.1, 10.1], [10.3, 10.3]], dtype=np.float32)
    assert ktv_select(f, 2) == ([1, 4], False)


def test_scores_are_relevance_when_the_encoder_gives_it() -> None:
    feats = feats_for(0, 60, 6)
    pool = CandidatePool.from_timestamps(np.arange(60, dtype=np.float64))
    rel = np.linspace(0, 1, 60)
    sel = KTV().select(pool, None, 6, Features(embeddings=feats, scores=rel))
    assert list(sel.indices) == [10, 19, 24, 28, 39, 57]
    assert sel.scores is not None and np.allclose(sel.scores, rel[list(sel.indices)])
    assert isinstance(selectors.create("ktv"), KTV)
