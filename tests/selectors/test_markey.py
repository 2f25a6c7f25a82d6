"""MarKey (arXiv 2609.15408) against hand-computed cases.

No reference code is public: the expected values below are worked by hand
from the paper's Eqs. (4), (6), (9), (10), (12) and Algorithm 1.
"""

from __future__ import annotations

import numpy as np
import pytest

from frameselect.registry import selectors
from frameselect.selectors.markey import MarKey, markey_anchors, markey_greedy
from frameselect.types import CandidatePool, Features

# three frames: g0 = (1, 0), g1 = (0.8, 0.6), g2 = (0, 1); cosines s01 = 0.8, s02 = 0, s12 = 0.6
G = np.array([[1.0, 0.0], [0.8, 0.6], [0.0, 1.0]])
REL = np.array([0.5, 0.6, 0.2])


def test_worked_example_with_the_paper_s_weights() -> None:
    # step 1 (m = 0, rho = 0): kappa = (0.6, 0.8, 0.5333); u = 0.7 r + 0.2 kappa = (0.47, 0.58, 0.2467) -> frame 1
    # step 2: m = (0.8, 1, 0.6); kappa0 = 0.2 / 3, kappa2 = 0.4 / 3; rho = (0.8, -, 0.6)
    #   u0 = 0.35 + 0.01333 - 0.08 = 0.2833, u2 = 0.14 + 0.02667 - 0.06 = 0.1067 -> frame 0
    assert markey_greedy(G, REL, 2) == [1, 0]


def test_a_strong_redundancy_weight_prefers_the_dissimilar_frame() -> None:
    # lambda = 1: u0 = 0.35 + 0.01333 - 0.8 = -0.4367, u2 = 0.14 + 0.02667 - 0.6 = -0.4333 -> frame 2
    assert markey_greedy(G, REL, 2, lam=1.0) == [1, 2]
    # an empty window switches redundancy off: u0 = 0.3633 > u2 = 0.1667 -> frame 0 again
    assert markey_greedy(G, REL, 2, lam=1.0, window=0) == [1, 0]


def test_relevance_only_is_top_k_and_coverage_only_is_facility_location() -> None:
    rng = np.random.default_rng(0)
    x = rng.normal(size=(40, 8))
    rel = rng.random(40)
    assert sorted(markey_greedy(x, rel, 5, alpha=1.0, delta=0.0, lam=0.0)) == sorted(np.argsort(-rel)[:5].tolist())
    # delta only: each step adds the largest gain in mean positive coverage over all frames
    g = x / np.linalg.norm(x, axis=1, keepdims=True)
    s = g @ g.T
    cover = np.zeros(40)
    want = []
    for _ in range(4):
        gain = np.maximum(s - cover[:, None], 0).mean(axis=0)
        gain[want] = -np.inf
        want.append(int(np.argmax(gain)))
        cover = np.maximum(cover, s[:, want[-1]])
    assert markey_greedy(x, rel, 4, alpha=0.0, delta=1.0, lam=0.0) == want


def test_anchors_are_every_frame_up_to_the_budget_then_a_stratified_subset() -> None:
    rel = np.random.default_rng(1).random(700)
    times = np.arange(700, dtype=np.float64)
    assert np.array_equal(markey_anchors(rel[:648], times[:648]), np.arange(648))
    a = markey_anchors(rel, times)
    assert len(a) == 648 and len(np.unique(a)) == 648
    # 70 ten-second clips of 10 frames, 648 anchors: 18 clips keep 10 anchors, 52 keep 9; each clip's
    # best frame (top of the high stratum) is always kept
    per_clip = np.bincount(a // 10, minlength=70)
    assert sorted(per_clip.tolist()) == [9] * 52 + [10] * 18
    for c in range(70):
        assert c * 10 + int(np.argmax(rel[c * 10 : c * 10 + 10])) in a
    # a small budget spreads over clips: 7 anchors, one per clip of the first seven of 10 clips
    b = markey_anchors(rel[:100], times[:100], budget=7)
    assert len(b) == 7 and len(np.unique(b // 10)) == 7


def test_selector_returns_the_picked_frames_in_order_with_their_relevance() -> None:
    pool = CandidatePool.from_timestamps(np.arange(3, dtype=np.float64))
    sel = MarKey().select(pool, None, 2, Features(embeddings=G.astype(np.float32), scores=REL))
    assert list(sel.indices) == [0, 1]
    assert sel.scores is not None and np.allclose(sel.scores, [0.5, 0.6])
    assert isinstance(selectors.create("markey"), MarKey)


@pytest.mark.parametrize("bad", [{"anchors": 0}, {"window": -1}, {"clip_s": 0}])
def test_bad_parameters_are_refused(bad: dict[str, float]) -> None:
    from frameselect.parts import check_params

    assert check_params(MarKey, bad)
