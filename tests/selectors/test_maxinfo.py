"""MaxInfo: maxvol against brute-force volumes, rect_maxvol's greedy steps, the reference's SVD."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from frameselect.registry import selectors
from frameselect.selectors.maxinfo import maxvol, rect_maxvol, truncated_svd_rows
from frameselect.testing import check_selector
from frameselect.types import CandidatePool, Features, Query

Q = Query("q")

# 7 rows in R^3: the LU start picks rows {0, 2, 3} (|det| 72); the largest |det| of all 35 triples is
# rows {1, 3, 5} (112), which maxvol reaches by swapping
B = np.array([[-4, 0, -4], [-3, 3, -4], [1, -4, -2], [4, -2, -2], [-4, 2, -3], [0, -4, -4], [3, -4, 0]], dtype=float)


def run(embeddings: np.ndarray, k: int, **params: object) -> list[int]:
    pool = CandidatePool.from_timestamps(np.arange(len(embeddings), dtype=float))
    return list(selectors.create("maxinfo", **params).select(pool, Q, k, Features(embeddings=embeddings), seed=0).indices)


def largest_volume(a: np.ndarray, size: int) -> tuple[int, ...]:
    """Brute force: the rows whose Gram determinant det(A_I A_I^T) is largest."""
    volumes = {rows: np.linalg.det(a[list(rows)] @ a[list(rows)].T) for rows in itertools.combinations(range(len(a)), size)}
    return max(volumes, key=lambda rows: volumes[rows])


def test_maxvol_finds_the_largest_determinant() -> None:
    dets = {rows: abs(np.linalg.det(B[list(rows)])) for rows in itertools.combinations(range(7), 3)}
    assert round(dets[(0, 2, 3)]) == 72 and round(dets[(1, 3, 5)]) == 112
    assert max(dets, key=lambda rows: dets[rows]) == (1, 3, 5)
    rows, coefficients = maxvol(B)
    assert sorted(rows) == [1, 3, 5]
    # what maxvol guarantees: every row is a combination of the chosen ones with coefficients <= 1.05
    np.testing.assert_allclose(coefficients @ B[rows], B, atol=1e-12)
    assert np.abs(coefficients).max() <= 1.05
    # with no swaps allowed it stays at the LU start
    assert sorted(maxvol(B, max_iters=0)[0]) == [0, 2, 3]


def test_maxvol_on_two_columns_by_hand() -> None:
    # LU: column 0's largest is row 2 (2.0); then column 1 of the Schur complement: row 3 (2 - 0.5 * 1 = 2.5)
    a = np.array([[1.0, 0.0], [0.0, 1.0], [2.0, 1.0], [1.0, 3.0]])
    rows, c = maxvol(a)
    assert rows == [2, 3]  # det 5, the largest of the six pairs
    np.testing.assert_allclose(c, [[0.6, -0.2], [-0.2, 0.4], [1.0, 0.0], [0.0, 1.0]], atol=1e-12)


def test_rect_maxvol_adds_the_row_that_most_increases_the_volume() -> None:
    a = np.array([[1.0, 0.2], [0.3, 1.0], [2.0, 1.5], [-1.0, 2.0], [0.5, -0.4], [1.5, 1.4], [0.1, 0.1]])
    rows = rect_maxvol(a, tol=0.3)
    assert rows == [2, 3, 5, 0, 1]
    assert sorted(rows[:2]) == list(largest_volume(a, 2))
    # each added row maximises det(A_I^T A_I) over the rows not yet chosen, which grows by 1 + |c_i|^2
    for step in range(2, len(rows)):
        chosen = rows[:step]
        base = np.linalg.det(a[chosen].T @ a[chosen])
        gain = {i: np.linalg.det(a[chosen + [i]].T @ a[chosen + [i]]) / base for i in range(7) if i not in chosen}
        assert rows[step] == max(gain, key=lambda i: gain[i])
        assert gain[rows[step]] - 1.0 > 0.3**2
    # it stops when no remaining row would grow the volume by more than 1 + tol^2
    final = np.linalg.det(a[rows].T @ a[rows])
    assert all(np.linalg.det(a[rows + [i]].T @ a[rows + [i]]) / final - 1.0 <= 0.3**2 for i in (4, 6))
    assert rect_maxvol(a, tol=0.3, max_rows=3) == [2, 3, 5]
    assert rect_maxvol(a, tol=0.3, max_rows=1) == [2, 3]  # never fewer than the r columns


def test_rect_maxvol_on_identical_rows_stops_at_the_tolerance() -> None:
    # rank 1: after K identical rows each row's least-squares coefficients are 1/K each, |c|^2 = 1/K;
    # a 12th row is added because 1/11 > 0.09, a 13th is not because 1/12 <= 0.09
    assert rect_maxvol(np.ones((20, 1)), tol=0.3) == list(range(12))


def test_selector_picks_the_largest_volume_frames() -> None:
    # the rows of B placed in a 3-dimensional subspace of R^5: volumes are unchanged
    basis = np.linalg.qr(np.random.default_rng(0).normal(size=(5, 3)))[0].T
    embeddings = B @ basis
    assert largest_volume(embeddings, 3) == (1, 3, 5)
    assert run(embeddings, 3) == [1, 3, 5]
    assert run(embeddings, 3, svd="exact") == [1, 3, 5]


def test_identical_frames_are_filled_farthest_in_time() -> None:
    # rank 1: rect_maxvol returns frames 0-11 (see above); the 4 left: 19, 15, then 13 and 17
    embeddings = np.tile([[0.6, 0.8, 0.0]], (20, 1))
    assert run(embeddings, 16) == [*range(12), 13, 15, 17, 19]
    assert run(embeddings, 5) == [0, 1, 2, 3, 4]


def test_all_zero_embeddings_fall_back_to_the_fill_rule() -> None:
    assert run(np.zeros((9, 4)), 3) == [0, 4, 8]


def test_rank_is_capped_by_the_budget() -> None:
    # k = 2 < rank 8: square maxvol on the top-2 singular directions, 2 frames
    rng = np.random.default_rng(3)
    embeddings = rng.normal(size=(40, 16))
    rows = truncated_svd_rows(embeddings, 2)
    assert rows.shape == (40, 2)
    assert run(embeddings, 2) == sorted(maxvol(rows, 1.05, 10)[0])


@pytest.mark.parametrize("shape", [(300, 24), (20, 64)])
def test_projection_matches_scikit_learn_truncated_svd(shape: tuple[int, int]) -> None:
    """The reference runs ``TruncatedSVD(n_components=8, random_state=42).fit_transform``."""
    decomposition = pytest.importorskip("sklearn.decomposition")
    rng = np.random.default_rng(1)
    n, d = shape
    embeddings = rng.normal(size=(6, d))[np.arange(n) % 6] + 0.3 * rng.normal(size=(n, d))
    reference = decomposition.TruncatedSVD(n_components=8, random_state=42).fit_transform(embeddings)
    ours = truncated_svd_rows(embeddings, 8)
    signs = np.sign(np.sum(reference * ours, axis=0))
    np.testing.assert_allclose(ours * signs, reference, atol=1e-9)
    exact = decomposition.TruncatedSVD(n_components=8, algorithm="arpack", tol=0.0).fit_transform(embeddings)
    ours_exact = truncated_svd_rows(embeddings, 8, "exact")
    np.testing.assert_allclose(np.abs(ours_exact), np.abs(exact), atol=1e-7)


def test_float32_embeddings_run_the_svd_in_float32_as_scikit_learn_does() -> None:
    """scikit-learn keeps float32 input in float32 (its random test matrix cast down); so do we."""
    decomposition = pytest.importorskip("sklearn.decomposition")
    rng = np.random.default_rng(2)
    embeddings = (rng.normal(size=(6, 48))[np.arange(300) % 6] + 0.3 * rng.normal(size=(300, 48))).astype(np.float32)
    reference = decomposition.TruncatedSVD(n_components=8, random_state=42).fit_transform(embeddings)
    assert reference.dtype == np.float32
    ours = truncated_svd_rows(embeddings, 8)
    signs = np.sign(np.sum(reference * ours, axis=0))
    np.testing.assert_allclose(ours * signs, reference, atol=5e-5)
    # the float64 computation of the same values differs only in float32's last bits
    wide = truncated_svd_rows(embeddings.astype(np.float64), 8)
    np.testing.assert_allclose(np.abs(ours), np.abs(wide), atol=5e-5)
    assert np.max(np.abs(np.abs(ours) - np.abs(wide))) > 0.0


def test_bad_parameters_are_refused() -> None:
    embeddings = np.eye(6)
    with pytest.raises(ValueError, match="SVD method"):
        run(embeddings, 2, svd="arpack")
    with pytest.raises(ValueError, match="rank"):
        run(embeddings, 2, rank=0)
    with pytest.raises(ValueError, match="tol"):
        run(embeddings, 2, tol=float("nan"))


@pytest.mark.parametrize("svd", ["randomized", "exact"])
def test_conformance(svd: str) -> None:
    check_selector("maxinfo", params={"svd": svd})
    check_selector("maxinfo", params={"svd": svd, "rank": 3}, n=30, k=9, dim=12)
