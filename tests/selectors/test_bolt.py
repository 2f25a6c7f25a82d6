"""BOLT against a direct re-statement of sming256/BOLT ``inverse_transform_sampling`` and hand-worked cases."""

from __future__ import annotations

import numpy as np
import pytest

from frameselect.errors import SelectionError
from frameselect.registry import selectors
from frameselect.selectors.bolt import BOLT
from frameselect.types import CandidatePool, Features


def ref_inverse_transform_sampling(score, n, power=-1):  # type: ignore[no-untyped-def]
    """select_frames.py, step by step."""
    score = score - np.min(score)
    score = score / np.max(score)
    if power != -1:
        score = score**power
    probabilities = score / np.sum(score)
    cdf = np.cumsum(probabilities)
    uniform_sampling = np.linspace(1 / n, 1 - 1 / n, n)
    return np.searchsorted(cdf, uniform_sampling)


def pool_of(n: int) -> CandidatePool:
    return CandidatePool.from_timestamps(np.arange(n, dtype=float))


def run(selector: BOLT, scores: np.ndarray, k: int) -> list[int]:
    return list(selector.select(pool_of(len(scores)), None, k, Features(scores=scores)).indices)


@pytest.mark.parametrize("power", [-1, 1.0, 2.5, 3.0])
def test_reference_exact_matches_the_reference_steps(power: float) -> None:
    rng = np.random.default_rng(11)
    for n in (5, 17, 64, 300, 3600):
        for scores in (rng.random(n), rng.normal(size=n) * 30 + 20, rng.random(n) ** 6):
            for k in (2, 4, 8, 16, 32, 64):
                if k > n:
                    continue
                want = ref_inverse_transform_sampling(scores, k, power).tolist()
                got = run(BOLT(power=power, reference_exact=True), scores, k)
                assert got == want
                default = run(BOLT(power=power), scores, k)
                assert len(default) == k and set(want) <= set(default)


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
