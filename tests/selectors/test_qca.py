"""QCA against outputs of the reference code itself.

Expected values: github.com/hktk07/QCA at commit 842fae5c46542cc0dd238224d3604bc6cd69efed,
``keyframes_select.py``: ``compute_segment_variance_with_softmax``, ``split_second_elements``,
``allocate_and_select_frames_from_softmax``, ``redistribute_segment_quota`` and
``farthest_point_sampling_gpu`` (given CPU float32 tensors), driven by the per-sample body of its
``__main__`` on the seeded inputs built by :func:`inputs` (frame index = position in the pool).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from frameselect.selectors.qca import QCA, qca_farthest_points, qca_quota, qca_redistribute, qca_segment_lengths, qca_select
from frameselect.testing import check_selector
from frameselect.types import CandidatePool, Features


def inputs(seed: int, n: int, d: int, shift: float = 0.0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    feats = rng.normal(size=(n, d)).astype(np.float32)
    return feats, rng.uniform(0.0, 1.0, size=n) - shift


# (seed, n, d, k, params, reference quotas after redistribution, reference selection)
REFERENCE: list[tuple[int, int, int, int, dict[str, Any], list[int], list[int]]] = [
    (0, 40, 8, 8, {}, [0, 1, 0, 1, 0, 1, 0, 1, 0, 0, 1, 1, 1, 1, 0, 0], [3, 9, 15, 22, 29, 30, 33, 34]),
    (1, 64, 16, 16, {}, [1] * 16, [0, 5, 8, 13, 16, 23, 24, 29, 35, 39, 43, 45, 48, 55, 57, 61]),
    (2, 100, 12, 32, {}, [2] * 16, [2, 3, 8, 9, 17, 19, 26, 27, 29, 33, 34, 38, 42, 43, 48, 49, 54, 55, 58, 61, 65, 69, 73, 74, 80, 81, 84, 85, 89, 92, 96, 98]),
    (3, 16, 4, 5, {}, [0, 1, 0, 1, 0, 0, 1, 0, 1, 0, 0, 0, 0, 0, 1, 0], [1, 3, 6, 8, 14]),
    (
        4, 37, 6, 30, {}, [2, 2, 1, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 1, 2, 2],
        [1, 2, 3, 5, 7, 9, 11, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 32, 33, 34, 35, 36],
    ),
    (5, 50, 8, 64, {}, [4, 4, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3], list(range(50))),  # k > N: every frame
    (
        6, 200, 32, 64, {}, [4] * 16,
        [2, 10, 11, 12, 17, 18, 23, 25, 31, 32, 33, 36, 40, 41, 47, 49, 54, 58, 62, 63, 68, 70, 73, 77, 82, 85, 88, 90, 91, 93, 94, 97,
         104, 109, 110, 115, 116, 117, 122, 127, 131, 134, 136, 138, 140, 141, 148, 150, 152, 153, 158, 163, 170, 172, 173, 175, 176, 178, 182, 183, 188, 189, 193, 195],
    ),
    (7, 23, 5, 10, dict(segments=4, gamma=0.8, beta=0.3, tau=0.5), [2, 3, 2, 3], [0, 3, 6, 7, 11, 14, 15, 19, 20, 22]),
]  # fmt: skip


def _quota(
    feats: np.ndarray, rel: np.ndarray, k: int, segments: int = 16, beta: float = 0.5, tau: float = 1.0, temperature: float = 0.5, **_: Any
) -> list[int]:
    from frameselect.selectors.qca import qca_quotas

    x = (feats / (np.linalg.norm(feats, axis=1, keepdims=True) + np.float32(1e-8))).astype(np.float32)
    return [int(q) for q in qca_quotas(x, np.asarray(rel, dtype=np.float64), k, segments, beta, tau, temperature)[2]]


def _run(sel: QCA, feats: np.ndarray, rel: np.ndarray, k: int) -> list[int]:
    pool = CandidatePool.from_timestamps(np.arange(len(feats), dtype=float))
    return list(sel.select(pool, None, k, Features(embeddings=feats, scores=rel)).indices)


@pytest.mark.parametrize("case", REFERENCE, ids=lambda c: f"seed{c[0]}-n{c[1]}-k{c[3]}")
def test_matches_the_reference_code(case: tuple[int, int, int, int, dict[str, Any], list[int], list[int]]) -> None:
    seed, n, d, k, params, quota, expected = case
    feats, rel = inputs(seed, n, d)
    assert _quota(feats, rel, k, **params) == quota
    assert qca_select(feats, rel, k, **params) == expected
    assert _run(QCA(reference_exact=True, **params), feats, rel, k) == expected


def test_reference_returns_fewer_than_k_when_a_segment_scores_at_most_zero() -> None:
    """seed 9, N=48, k=24, scores shifted by -0.6: segments whose best score is <= 0 yield only their anchor (reference: 22 frames)."""
    feats, rel = inputs(9, 48, 6, shift=0.6)
    expected = [2, 4, 7, 8, 10, 12, 14, 16, 18, 19, 22, 24, 27, 30, 34, 35, 38, 41, 43, 44, 45, 46]
    assert _quota(feats, rel, 24) == [2, 1, 2, 2, 2, 1, 2, 1, 1, 1, 1, 2, 1, 1, 2, 2]
    assert _run(QCA(reference_exact=True), feats, rel, 24) == expected
    filled = _run(QCA(), feats, rel, 24)
    assert len(filled) == 24 and set(expected) <= set(filled)
    extra = sorted(set(filled) - set(expected))
    rest = [i for i in range(48) if i not in expected]
    assert extra == sorted(sorted(rest, key=lambda i: (-rel[i], i))[:2])


def test_repeated_features_match_the_reference() -> None:
    """Four distinct features repeated 8 times each (seed 10): the reference returns these 20 frames for k=20."""
    rng = np.random.default_rng(10)
    base = rng.normal(size=(4, 6)).astype(np.float32)
    feats, rel = np.repeat(base, 8, axis=0), rng.uniform(0, 1, 32)
    expected = [0, 3, 5, 7, 8, 9, 10, 13, 15, 16, 17, 18, 20, 22, 24, 27, 28, 29, 30, 31]
    assert _run(QCA(reference_exact=True), feats, rel, 20) == expected


def test_hand_worked_pieces() -> None:
    assert qca_segment_lengths(23, 4) == [6, 6, 6, 5]
    # weights 0.5/0.3/0.2 of k=5 on 3 segments of 2: floors 2,1,1, remainder to the largest fraction (0.5 of segment 1)
    assert list(qca_quota(6, np.array([0.5, 0.3, 0.2]), 5)) == [2, 2, 1]
    # capacities 1,3,3: segment 0 gives one back, it goes to the best-scored segment with room
    assert list(qca_redistribute(np.array([2, 2, 1]), np.array([1, 3, 3]), np.array([0.5, 0.3, 0.2]), 5)) == [1, 3, 1]
    pts = np.array([[0, 0], [1, 0], [3, 0], [3.5, 0]], dtype=np.float32)
    assert qca_farthest_points(pts, np.arange(4), 1, 3) == [0, 1, 3]  # from 1: 3.5 is farthest, then 0


def test_short_pools() -> None:
    feats, rel = inputs(11, 10, 4)
    assert _run(QCA(reference_exact=True), feats, rel, 4) == []  # the reference skips N < segments
    assert len(_run(QCA(), feats, rel, 4)) == 4


def test_conformance() -> None:
    check_selector("qca")
    check_selector("qca", params={"reference_exact": True}, n=20, k=6)


def test_select_command_prints_the_reference_output(tmp_path: Any, capsys: Any) -> None:
    import json

    from frameselect.cli import main

    feats, rel = inputs(9, 48, 6, shift=0.6)
    np.save(tmp_path / "e.npy", feats)
    np.save(tmp_path / "s.npy", rel)
    args = ["select", "-s", "qca", "-k", "24", "--embeddings", str(tmp_path / "e.npy"), "--scores", str(tmp_path / "s.npy"), "-p", "reference_exact=true"]
    assert main(args) == 0
    assert json.loads(capsys.readouterr().out)["indices"] == [2, 4, 7, 8, 10, 12, 14, 16, 18, 19, 22, 24, 27, 30, 34, 35, 38, 41, 43, 44, 45, 46]
