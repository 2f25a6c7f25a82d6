"""TSN segment sampling: segment centres and random offsets worked by hand."""

from __future__ import annotations

import numpy as np
import pytest

from frameselect.registry import selectors
from frameselect.selectors.tsn import tsn_test_indices, tsn_train_indices
from frameselect.testing import check_selector
from frameselect.types import CandidatePool, Features, Query

Q = Query("q")


def run(n: int, k: int, seed: int = 0, **params: object) -> list[int]:
    pool = CandidatePool.from_timestamps(np.arange(n, dtype=float) * 0.5)
    return list(selectors.create("tsn", **params).select(pool, Q, k, Features(), seed=seed).indices)


def test_test_mode_takes_segment_centres() -> None:
    # tick = 10 / 3 = 3.33: centres 1.67, 5.0, 8.33 -> 1, 5, 8
    assert tsn_test_indices(10, 3) == [1, 5, 8]
    # tick = 3: centres 1.5, 4.5, 7.5, 10.5
    assert tsn_test_indices(12, 4) == [1, 4, 7, 10]
    # tick = 2.5: centres 1.25, 3.75, 6.25, 8.75
    assert tsn_test_indices(10, 4) == [1, 3, 6, 8]
    assert tsn_test_indices(5, 1) == [2]
    assert run(10, 3) == [1, 5, 8]
    assert run(12, 4) == [1, 4, 7, 10]


def test_test_mode_keeps_the_references_float_arithmetic() -> None:
    # tick = 12 / 7; the centre of segment 3 is exactly 6 in rationals, but the reference computes
    # int(tick / 2.0 + tick * 3) = int(5.999999999999999) = 5 in float64, and so do we
    assert tsn_test_indices(12, 7) == [0, 2, 4, 5, 7, 9, 11]
    assert run(12, 7) == [0, 2, 4, 5, 7, 9, 11]


def test_budget_at_or_above_the_pool_size_takes_every_frame() -> None:
    assert run(5, 5) == [0, 1, 2, 3, 4]
    assert run(5, 9) == [0, 1, 2, 3, 4]
    assert run(5, 9, mode="train") == [0, 1, 2, 3, 4]
    assert run(1, 3) == [0]


def test_reference_repeats_frames_when_the_pool_is_shorter_than_k() -> None:
    # what TSN itself returns for n < k (the selector caps k at N instead)
    assert tsn_test_indices(2, 3) == [0, 1, 1]  # tick 0.67: centres 0.33, 1.0, 1.67
    assert tsn_train_indices(2, 3, np.random.default_rng(0)) == [0, 0, 0]  # average_duration = 0


def test_train_mode_draws_one_offset_per_segment_from_the_run_rng() -> None:
    # n = 10, k = 3: average_duration = 3, segments [0, 3), [3, 6), [6, 9); frame 9 is never drawn
    for seed in range(30):
        offsets = np.random.default_rng(seed).integers(3, size=3)
        expected = [0 + int(offsets[0]), 3 + int(offsets[1]), 6 + int(offsets[2])]
        assert run(10, 3, seed=seed, mode="train") == expected
    drawn = {i for seed in range(200) for i in run(10, 3, seed=seed, mode="train")}
    assert drawn == set(range(9))


def test_train_mode_is_deterministic_per_seed_and_varies_across_seeds() -> None:
    assert run(100, 8, seed=4, mode="train") == run(100, 8, seed=4, mode="train")
    assert len({tuple(run(100, 8, seed=s, mode="train")) for s in range(10)}) > 1


def test_unknown_mode_is_refused() -> None:
    with pytest.raises(ValueError, match="mode"):
        run(10, 3, mode="val")


@pytest.mark.parametrize("mode", ["test", "train"])
def test_conformance(mode: str) -> None:
    check_selector("tsn", params={"mode": mode})
    check_selector("tsn", params={"mode": mode}, n=40, k=7)
