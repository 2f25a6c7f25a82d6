"""VideoTree without its LLM: k-means, relevance levels, width and depth expansion, fit to k."""

from __future__ import annotations

import numpy as np
import pytest

from frameselect.registry import selectors
from frameselect.selectors.videotree import adaptive_width, build_tree, kmeans_cosine, relevance_levels
from frameselect.types import CandidatePool, Features, Query

Q = Query("q")


def circle(*degrees: float) -> np.ndarray:
    rad = np.deg2rad(np.asarray(degrees, dtype=np.float64))
    return np.stack([np.cos(rad), np.sin(rad)], axis=1).astype(np.float32)


def groups(sizes: list[int], dim: int = 8, noise: float = 0.05, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    x = np.repeat(np.eye(dim)[: len(sizes)], sizes, axis=0) + noise * rng.normal(size=(sum(sizes), dim))
    return (x / np.linalg.norm(x, axis=1, keepdims=True)).astype(np.float32)


def videotree(emb: np.ndarray, scores: np.ndarray, k: int, seed: int = 0, **params: object) -> list[int]:
    pool = CandidatePool.from_timestamps(np.arange(len(emb), dtype=float))
    feats = Features(embeddings=emb, scores=scores)
    return list(selectors.create("videotree", **params).select(pool, Q, k, feats, seed=seed).indices)


def test_relevance_levels_by_hand() -> None:
    # min-max to [0, 1]: 0, .25, .5, .75, 1 -> cut at 1/3 and 2/3
    assert relevance_levels(np.array([2.0, 3.0, 4.0, 5.0, 6.0]), (1 / 3, 2 / 3)).tolist() == [1, 1, 2, 3, 3]
    assert relevance_levels(np.full(4, 0.7), (1 / 3, 2 / 3)).tolist() == [1, 1, 1, 1]


@pytest.mark.parametrize("seed", range(5))
def test_kmeans_separates_two_groups_from_any_start(seed: int) -> None:
    x = circle(0, 2, 4, 90, 92, 94)
    labels, centres = kmeans_cosine(x, 2, np.random.default_rng(seed))
    assert labels[0] == labels[1] == labels[2] != labels[3] == labels[4] == labels[5]
    # centres are plain means of their members
    assert np.allclose(centres[labels[0]], x[:3].mean(axis=0), atol=1e-6)


def test_kmeans_centres_are_the_means_of_their_members_after_many_moves() -> None:
    """Cluster sums follow the points that change cluster; the returned centres are the last assignment's means."""
    rng = np.random.default_rng(4)
    x = (rng.normal(size=(5, 12))[rng.integers(0, 5, 300)] + 0.9 * rng.normal(size=(300, 12))).astype(np.float32)
    labels, centres = kmeans_cosine(x, 5, np.random.default_rng(1), iter_limit=100, tol=1e-12)
    x64 = x.astype(np.float64)
    for c in range(5):
        np.testing.assert_allclose(centres[c], x64[labels == c].mean(axis=0), rtol=0, atol=1e-6)


def test_kmeans_single_cluster_and_one_per_point() -> None:
    x = circle(0, 40, 80, 120)
    labels, centres = kmeans_cosine(x, 1, np.random.default_rng(0))
    assert labels.tolist() == [0, 0, 0, 0] and np.allclose(centres[0], x.mean(axis=0), atol=1e-6)
    labels, _ = kmeans_cosine(x, 4, np.random.default_rng(0))
    assert sorted(labels.tolist()) == [0, 1, 2, 3]


def test_depth_expansion_by_relevance_level() -> None:
    # one primary cluster: four tight groups (theta - 1, theta, theta + 1) at 0, 30, 60, 90 degrees
    x = circle(*[t + d for t in (0, 30, 60, 90) for d in (-1, 0, 1)])
    labels = np.zeros(12, dtype=np.int64)
    mean = x.mean(axis=0)
    primary = int(np.argmax((x / np.linalg.norm(x, axis=1, keepdims=True)) @ (mean / np.linalg.norm(mean))))
    # level 1: the primary keyframe only
    assert build_tree(x, labels, {0: 1}, 4, 4) == [(primary, 0)]
    # level 2: plus the centre of each Ward sub-cluster (the groups): frames 1, 4, 7, 10
    nodes = build_tree(x, labels, {0: 2}, 4, 4)
    assert nodes[0] == (primary, 0)
    assert sorted(nodes[1:]) == [(1, 1), (4, 1), (7, 1), (10, 1)]
    # level 3: each group of 3 splits again into 3 single frames: every frame is a leaf
    nodes = build_tree(x, labels, {0: 3}, 4, 4)
    assert nodes[0] == (primary, 0)
    assert sorted(nodes[1:]) == [(i, 2) for i in range(12)]


def test_width_expands_until_enough_clusters_are_highly_relevant() -> None:
    x = groups([5] * 4, noise=0.3)  # 20 frames
    rng = np.random.default_rng(0)
    # nothing is relevant: 8 -> 16 -> 20 clusters (never more than the frames), one per frame
    labels, levels = adaptive_width(x, np.ones(20, dtype=np.int64), rng)
    assert len(set(labels.tolist())) == 20 and set(levels.values()) == {1}
    # everything is relevant: the first 8 clusters already hold 4 of level 3
    labels, levels = adaptive_width(x, np.full(20, 3, dtype=np.int64), rng)
    assert labels.max() < 8 and set(levels.values()) == {3}


def test_relevant_group_gets_the_frames_and_seed_fixes_the_result() -> None:
    emb = groups([25, 25, 25, 25], noise=0.2, seed=1)
    scores = np.repeat([0.1, 0.2, 0.9, 0.15], 25) + np.random.default_rng(2).normal(0, 0.01, 100)
    picked = videotree(emb, scores, 6, seed=3)
    assert picked == videotree(emb, scores, 6, seed=3)
    assert len(picked) == 6 and picked == sorted(set(picked))
    assert sum(50 <= i < 75 for i in picked) >= 4


def test_small_trees_are_filled_by_relevance() -> None:
    emb = groups([3, 3], noise=0.0)
    scores = np.array([0.0, 0.0, 0.0, 1.0, 0.9, 0.8])
    # 6 frames, 8 clusters asked: 6 clusters of one frame, all nodes, then k = 6 takes all
    assert videotree(emb, scores, 6) == [0, 1, 2, 3, 4, 5]
    # a single relevant frame ranks first among the primaries
    assert 3 in videotree(emb, scores, 1, init_cluster_num=2, max_cluster_num=2)


def test_bad_parameters_are_refused() -> None:
    emb = groups([3, 3])
    with pytest.raises(ValueError, match="adaptive_rate"):
        videotree(emb, np.zeros(6), 2, adaptive_rate=1)
