"""The query-agnostic baselines: uniform, random, k-center, fixed fps."""

from __future__ import annotations

import numpy as np
import pytest

from frameselect.errors import SelectionError
from frameselect.registry import selectors
from frameselect.selectors.base import fill_to_k
from frameselect.selectors.basic import kcenter_greedy, uniform_indices
from frameselect.types import CandidatePool, Features, Query

Q = Query("q")


def pool(n: int, step: float = 1.0) -> CandidatePool:
    return CandidatePool.from_timestamps(np.arange(n) * step)


def pick(name: str, n: int, k: int, *, step: float = 1.0, seed: int = 0, features: Features | None = None, **params: object) -> list[int]:
    return list(selectors.create(name, **params).select(pool(n, step), Q, k, features, seed=seed).indices)


# -- uniform ------------------------------------------------------------------


def test_uniform_linspace_matches_lmms_eval() -> None:
    assert uniform_indices(10, 4) == [0, 3, 6, 9]
    assert uniform_indices(100, 3) == [0, 49, 99]  # np.linspace(0, 99, 3, dtype=int): 0, 49.5 -> 49, 99
    assert uniform_indices(10, 1) == [0]
    assert uniform_indices(5, 8) == [0, 1, 2, 3, 4]
    for n, k in ((37, 8), (3600, 32), (9, 9)):
        assert uniform_indices(n, k) == [int(i) for i in np.linspace(0, n - 1, k, dtype=int)]


def test_uniform_interior_takes_segment_centres() -> None:
    assert uniform_indices(10, 4, "interior") == [1, 3, 6, 8]  # floor(1.25), floor(3.75), floor(6.25), floor(8.75)
    assert uniform_indices(10, 1, "interior") == [5]
    assert uniform_indices(10, 5, "interior") == [1, 3, 5, 7, 9]
    assert uniform_indices(4, 4, "interior") == [0, 1, 2, 3]


def test_uniform_selector_and_its_conventions() -> None:
    assert pick("uniform", 10, 4) == [0, 3, 6, 9]
    assert pick("uniform", 10, 4, convention="interior") == [1, 3, 6, 8]
    assert pick("uniform", 3, 10) == [0, 1, 2]
    with pytest.raises(ValueError, match="convention"):
        pick("uniform", 10, 4, convention="middle")


# -- random -------------------------------------------------------------------


def test_random_is_seeded_without_replacement() -> None:
    expected = sorted(int(i) for i in np.random.default_rng(7).choice(50, size=6, replace=False))
    assert pick("random", 50, 6, seed=7) == expected
    assert pick("random", 50, 6, seed=7) == pick("random", 50, 6, seed=7)
    assert len({tuple(pick("random", 50, 6, seed=s)) for s in range(5)}) == 5
    assert pick("random", 4, 9, seed=3) == [0, 1, 2, 3]


def test_random_accepts_a_generator() -> None:
    sel = selectors.create("random")
    a = sel.select(pool(30), Q, 5, rng=np.random.default_rng(11)).indices
    assert list(a) == sorted(int(i) for i in np.random.default_rng(11).choice(30, size=5, replace=False))


# -- k-center -----------------------------------------------------------------
# 1-D points (0, 1, 5, 6, 10), start at frame 0:
#   distances (0, 1, 5, 6, 10) -> 4 (10); min distances (-, 1, 5, 4, -) -> 2 (5);
#   min distances (-, 1, -, 1, -) -> 1 (tie with 3: earlier).
POINTS = np.array([[0.0], [1.0], [5.0], [6.0], [10.0]])


def test_kcenter_farthest_first_by_hand() -> None:
    assert kcenter_greedy(POINTS, 4) == [0, 4, 2, 1]
    assert kcenter_greedy(POINTS, 2, first=2) == [2, 0]  # |0 - 5| = |10 - 5|: earlier
    feats = Features(embeddings=POINTS)
    assert pick("kcenter", 5, 3, features=feats) == [0, 2, 4]
    assert pick("kcenter", 5, 4, features=feats) == [0, 1, 2, 4]


def test_kcenter_medoid_start() -> None:
    # the mean is 4.4: nearest frame 2 (5.0); then 0 and 4 are both 5 away -> 0; then 4
    feats = Features(embeddings=POINTS)
    assert pick("kcenter", 5, 2, features=feats, start="medoid") == [0, 2]
    assert pick("kcenter", 5, 3, features=feats, start="medoid") == [0, 2, 4]
    with pytest.raises(ValueError, match="start"):
        pick("kcenter", 5, 2, features=feats, start="last")


def test_kcenter_identical_frames_and_missing_embeddings() -> None:
    assert pick("kcenter", 5, 3, features=Features(embeddings=np.ones((5, 2)))) == [0, 1, 2]
    with pytest.raises(SelectionError, match="embeddings"):
        pick("kcenter", 5, 3)


# -- fixed fps ----------------------------------------------------------------
# a pool at 0, 0.5, ..., 4.5 s; at 1 fps the targets 0..4 s hit frames 0, 2, 4, 6, 8.


def test_fixed_fps_hits_the_nearest_frames() -> None:
    assert pick("fixed_fps", 10, 5, step=0.5) == [0, 2, 4, 6, 8]
    assert pick("fixed_fps", 10, 4, step=0.5, fps=2.0) == [0, 3, 6, 9]  # all 10 frames, thinned by linspace
    assert pick("fixed_fps", 10, 10, step=0.5, fps=2.0) == list(range(10))


def test_fixed_fps_thins_with_linspace_when_over_budget() -> None:
    # 5 frames at 1 fps, k = 3: linspace over them -> positions 0, 2, 4 -> frames 0, 4, 8
    assert pick("fixed_fps", 10, 3, step=0.5) == [0, 4, 8]


def test_fixed_fps_fills_with_the_shared_rule_when_under_budget() -> None:
    # 5 frames at 1 fps, k = 6: one more, the farthest from those chosen (earliest on ties)
    assert pick("fixed_fps", 10, 6, step=0.5) == [0, 1, 2, 4, 6, 8]
    assert pick("fixed_fps", 10, 6, step=0.5) == fill_to_k([0, 2, 4, 6, 8], 6, 10)
    # at 0.25 fps only frames 0 (0 s) and 8 (4 s); k = 3 adds the middle one, 4
    assert pick("fixed_fps", 10, 3, step=0.5, fps=0.25) == [0, 4, 8]


def test_fixed_fps_rejects_non_positive_rate() -> None:
    with pytest.raises(ValueError, match="fps"):
        pick("fixed_fps", 10, 3, fps=0.0)


# -- the shared contract on the baselines ------------------------------------


@pytest.mark.parametrize("name", ["uniform", "random", "kcenter", "fixed_fps"])
def test_budget_below_one_is_an_error(name: str) -> None:
    feats = Features(embeddings=np.eye(4))
    for k in (0, -2):
        with pytest.raises(SelectionError, match="at least 1"):
            selectors.create(name).select(pool(4), Q, k, feats)
    with pytest.raises(SelectionError, match="integer"):
        selectors.create(name).select(pool(4), Q, 2.5, feats)  # type: ignore[arg-type]


def test_empty_pool_is_an_error() -> None:
    with pytest.raises(SelectionError, match="empty"):
        selectors.create("uniform").select(CandidatePool.from_timestamps([]), Q, 3)


def test_kcenter_rejects_nan_embeddings() -> None:
    emb = np.eye(4)
    emb[1, 1] = np.nan
    with pytest.raises(SelectionError, match="NaN"):
        selectors.create("kcenter").select(pool(4), Q, 2, Features(embeddings=emb))
