"""AKS: hand-worked cases and properties.

Agreement with the reference code itself (ncTimTang/AKS ``frame_select.py``) on seeded
inputs is in ``test_aks_reference.py``.
"""

from __future__ import annotations

import numpy as np
import pytest

from frameselect.errors import SelectionError
from frameselect.registry import selectors
from frameselect.selectors.aks import AKS
from frameselect.types import CandidatePool, Features


def pool_of(n: int) -> CandidatePool:
    return CandidatePool.from_timestamps(np.arange(n, dtype=float))


def run(selector: AKS, scores: np.ndarray, k: int) -> list[int]:
    return list(selector.select(pool_of(len(scores)), None, k, Features(scores=scores)).indices)


def test_root_is_a_leaf_when_the_peaks_stand_out() -> None:
    # normalised top-2 mean 1, mean 2/12: 1 - 1/6 > 0.8, so the whole pool is one leaf giving its top 2
    scores = np.array([0.0] * 5 + [1.0] + [0.0] * 5 + [1.0])
    assert run(AKS(), scores, 2) == [5, 11]
    assert run(AKS(reference_exact=True), scores, 2) == [5, 11]


#: ncTimTang/AKS@4667501 frame_select.main on the scores below with max_num_frames=2, run as in test_aks_reference.py
AKS_MAIN_OUTPUT = [2]


def test_shortfall_is_visible_in_reference_exact_and_filled_by_relevance_otherwise() -> None:
    # root: top-2 mean 1, mean 8/24 -> 0.67, split. Left half (two 1s among 12): 1 - 1/6 > 0.8, a leaf at
    # depth 1 giving int(2 / 2) = 1 frame, the earlier of the tie (2). Right half (constant 0.5) splits to
    # depth 5, where each leaf gives int(2 / 32) = 0. The reference returns one frame for k = 2.
    scores = np.array([0.0] * 12 + [0.5] * 12)
    scores[[2, 7]] = 1.0
    assert run(AKS(reference_exact=True), scores, 2) == AKS_MAIN_OUTPUT
    assert run(AKS(), scores, 2) == [2, 7]  # filled with the next most relevant frame


def test_small_budget_returns_nothing_in_the_reference() -> None:
    scores = np.array([0.1, 0.9, 0.2, 0.3, 0.1, 0.2, 0.8, 0.1])
    assert run(AKS(reference_exact=True), scores, 3) == []
    assert run(AKS(), scores, 3) == [1, 3, 6]


def test_ratio_keeps_every_ratio_th_frame() -> None:
    scores = np.array([0.0, 5.0, 1.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0])
    # ratio 2: candidates 0, 2, ..., 12 (7 frames); frame 1 is not one of them; fewer than k=8 -> all 7
    assert run(AKS(ratio=2, reference_exact=True), scores, 8) == [0, 2, 4, 6, 8, 10, 12]
    assert run(AKS(ratio=2), scores, 8) == [0, 1, 2, 4, 6, 8, 10, 12]


def test_relevance_from_embeddings_equals_given_scores() -> None:
    rng = np.random.default_rng(3)
    emb = rng.normal(size=(80, 8))
    emb /= np.linalg.norm(emb, axis=1, keepdims=True)
    text = emb[10] + 0.2 * rng.normal(size=8)
    via_text = AKS().select(pool_of(80), None, 8, Features(embeddings=emb, text=text)).indices
    via_scores = (
        AKS().select(pool_of(80), None, 8, Features(scores=emb.astype(np.float32).astype(np.float64) @ text.astype(np.float32).astype(np.float64))).indices
    )
    assert via_text == via_scores


@pytest.mark.parametrize("bad", [np.nan, np.inf])
def test_non_finite_scores_raise(bad: float) -> None:
    scores = np.linspace(0, 1, 10)
    scores[4] = bad
    with pytest.raises(SelectionError):
        AKS().select(pool_of(10), None, 3, Features(scores=scores))


def test_registered_and_conformant() -> None:
    assert selectors.get("aks") is AKS
    testing = pytest.importorskip("frameselect.testing")
    testing.check_selector("aks")


def test_bad_hyper_parameters_raise() -> None:
    with pytest.raises(SelectionError, match="ratio"):
        AKS(ratio=0).select(pool_of(10), None, 3, Features(scores=np.linspace(0, 1, 10)))
