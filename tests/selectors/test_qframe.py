"""Q-Frame against a direct re-statement of xiaomi-research/q-frame ``TextImageMatching`` and hand-worked cases."""

from __future__ import annotations

import numpy as np
import pytest

from frameselect.errors import SelectionError
from frameselect.registry import selectors
from frameselect.selectors.qframe import QFrame
from frameselect.types import CandidatePool, Features


def ref_ranking(similarity: np.ndarray, tau: float, u: np.ndarray) -> np.ndarray:
    """TextImageMatching after the similarity: softmax(s / tau), its log plus Gumbel noise, sorted."""
    z = similarity / tau
    probs = np.exp(z - z.max())
    probs = probs / probs.sum()
    perturbed = np.log(probs) - np.log(-np.log(u + 1e-10) + 1e-10)
    return np.argsort(-perturbed)


def pool_of(n: int) -> CandidatePool:
    return CandidatePool.from_timestamps(np.arange(n, dtype=float))


def run(scores: np.ndarray, k: int, seed: int, tau: float = 0.8) -> list[int]:
    return list(QFrame(tau=tau).select(pool_of(len(scores)), None, k, Features(scores=scores), seed=seed).indices)


@pytest.mark.parametrize("tau", [0.8, 0.1, 5.0])
def test_matches_the_reference_given_the_same_uniform_draws(tau: float) -> None:
    rng = np.random.default_rng(4)
    for seed in range(25):
        n = int(rng.integers(5, 200))
        scores = rng.normal(size=n) * 3.0
        k = int(rng.integers(1, n + 1))
        u = np.random.default_rng(seed).random(n)  # the draws the selector takes from its seeded rng
        want = sorted(ref_ranking(scores, tau, u)[:k].tolist())
        assert run(scores, k, seed, tau) == want


def test_seeded_determinism_and_seeds_differ() -> None:
    scores = np.random.default_rng(0).random(100)
    first = run(scores, 8, seed=3)
    assert run(scores, 8, seed=3) == first
    same_rng = [list(QFrame().select(pool_of(100), None, 8, Features(scores=scores), rng=np.random.default_rng(3)).indices) for _ in range(2)]
    assert same_rng[0] == same_rng[1] == first
    assert len({tuple(run(scores, 8, seed=s)) for s in range(10)}) > 1


def test_very_peaked_similarity_picks_the_peaks() -> None:
    # peaks 50 above the rest: 62.5 in logits; the Gumbel term lies in [-3.2, 23], so noise cannot reorder
    scores = np.zeros(60)
    peaks = [4, 17, 33, 58]
    scores[peaks] = 50.0
    for seed in range(20):
        assert run(scores, 4, seed) == peaks
        assert set(peaks) <= set(run(scores, 6, seed))


def test_hand_worked_ranking_with_fixed_draws() -> None:
    # u = 1/e for every frame -> noise -log(-log(u)) = 0 (up to the 1e-10 guards): the ranking is by similarity
    class FixedDraws(np.random.Generator):
        def random(self, size=None, dtype=np.float64, out=None):  # type: ignore[no-untyped-def,override]
            return np.full(size, np.exp(-1.0))

    sel = QFrame().select(pool_of(5), None, 2, Features(scores=np.array([0.1, 0.7, 0.3, 0.9, 0.2])), rng=FixedDraws(np.random.PCG64(0)))
    assert sel.indices == (1, 3)
    # scores are the perturbed log-probabilities log softmax(s / 0.8) of the chosen frames
    z = np.array([0.1, 0.7, 0.3, 0.9, 0.2]) / 0.8
    log_probs = z - np.log(np.exp(z).sum())
    assert sel.scores == pytest.approx([log_probs[1], log_probs[3]], abs=1e-8)


def test_gumbel_max_draws_follow_the_softmax() -> None:
    scores = np.array([0.0, 0.5, 1.0])
    p = np.exp(scores / 0.8) / np.exp(scores / 0.8).sum()  # [0.226, 0.317, 0.456]
    counts = np.bincount([run(scores, 1, seed)[0] for seed in range(3000)], minlength=3) / 3000
    assert counts == pytest.approx(p, abs=0.03)


def test_non_finite_scores_raise() -> None:
    scores = np.linspace(0, 1, 10)
    scores[3] = np.inf
    with pytest.raises(SelectionError):
        QFrame().select(pool_of(10), None, 3, Features(scores=scores))


def test_registered_and_conformant() -> None:
    assert selectors.get("qframe") is QFrame
    testing = pytest.importorskip("frameselect.testing")
    testing.check_selector("qframe")


def test_bad_temperature_raises() -> None:
    with pytest.raises(SelectionError, match="tau"):
        QFrame(tau=0.0).select(pool_of(10), None, 3, Features(scores=np.linspace(0, 1, 10)))
