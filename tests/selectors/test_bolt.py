"""BOLT: hand-worked cases and properties.

Agreement with the reference code itself (sming256/BOLT ``select_frames.py``) on seeded
inputs is in ``test_bolt_reference.py``.
"""

from __future__ import annotations

import numpy as np
import pytest

from frameselect.errors import SelectionError
from frameselect.registry import selectors
from frameselect.selectors.bolt import BOLT
from frameselect.types import CandidatePool, Features


def pool_of(n: int) -> CandidatePool:
    return CandidatePool.from_timestamps(np.arange(n, dtype=float))


def run(selector: BOLT, scores: np.ndarray, k: int) -> list[int]:
    return list(selector.select(pool_of(len(scores)), None, k, Features(scores=scores)).indices)


def test_repeats_are_kept_in_reference_exact_and_filled_otherwise() -> None:
    # normalised [0, .5, .5, 0, 1] -> CDF [0, .25, .5, .5, 1]; quantiles 1/4, 5/12, 7/12, 3/4 -> 1, 2, 4, 4
    scores = np.array([0.0, 1.0, 1.0, 0.0, 2.0])
    assert run(BOLT(reference_exact=True), scores, 4) == [1, 2, 4, 4]
    # default: drop the repeat, fill with the most relevant unchosen frame (0 and 3 tie at 0.0: earlier wins)
    assert run(BOLT(), scores, 4) == [0, 1, 2, 4]


def test_power_sharpens_towards_the_peak() -> None:
    scores = np.array([0.0, 1.0, 2.0, 3.0, 4.0])
    # power 1: p = [0, .1, .2, .3, .4], CDF [0, .1, .3, .6, 1]; quantiles 1/3, 1/2, 2/3 -> 3, 3, 4
    assert run(BOLT(reference_exact=True), scores, 3) == [3, 3, 4]
    # power 2: p ∝ [0, 1/16, 1/4, 9/16, 1], CDF [0, .033, .167, .467, 1] -> 3, 4, 4
    assert run(BOLT(power=2.0, reference_exact=True), scores, 3) == [3, 4, 4]
    assert run(BOLT(power=2.0), scores, 3) == [2, 3, 4]


def test_power_minus_one_means_off_as_in_the_reference() -> None:
    rng = np.random.default_rng(5)
    scores = rng.random(50)
    assert run(BOLT(power=-1, reference_exact=True), scores, 8) == run(BOLT(power=1.0, reference_exact=True), scores, 8)


def test_constant_relevance_reads_as_uniform_weights() -> None:
    # uniform CDF [.2, .4, .6, .8, 1]; k = 3: quantiles 1/3, 1/2, 2/3 -> frames 1, 2, 3
    assert run(BOLT(), np.full(5, 0.3), 3) == [1, 2, 3]
    # k = 2: linspace(1/2, 1/2, 2) asks for the median twice -> 2, 2; the repeat is filled (earliest frame)
    assert run(BOLT(), np.full(5, 0.3), 2) == [0, 2]


def test_single_frame_budget_stays_in_range() -> None:
    rng = np.random.default_rng(2)
    for _ in range(20):
        scores = rng.random(37)
        out = run(BOLT(), scores, 1)
        assert len(out) == 1 and 0 <= out[0] < 37


def test_scale_and_shift_of_relevance_do_not_matter() -> None:
    rng = np.random.default_rng(9)
    scores = rng.random(200)
    assert run(BOLT(power=3.0), scores, 16) == run(BOLT(power=3.0), 100.0 * scores - 7.0, 16)


@pytest.mark.parametrize("bad", [np.nan, -np.inf])
def test_non_finite_scores_raise(bad: float) -> None:
    scores = np.linspace(0, 1, 10)
    scores[2] = bad
    with pytest.raises(SelectionError):
        BOLT().select(pool_of(10), None, 3, Features(scores=scores))


def test_registered_and_conformant() -> None:
    assert selectors.get("bolt") is BOLT
    testing = pytest.importorskip("frameselect.testing")
    testing.check_selector("bolt")
    testing.check_selector("bolt", params={"power": 3.0})
