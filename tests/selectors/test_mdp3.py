"""MDP3: hand-worked cases and properties.

Agreement with the reference code itself (AIDC-AI/Ovis ``plugin/mdp3.py``,
``MDP3._select_frames_fast``) on seeded inputs is in ``test_mdp3_reference.py``.
"""

from __future__ import annotations

import numpy as np
import pytest

from frameselect.errors import SelectionError
from frameselect.registry import selectors
from frameselect.selectors.mdp3 import MDP3, multi_gaussian_kernel
from frameselect.types import CandidatePool, Features

ALPHAS = [2.0**e for e in range(-3, 2)]


def pool_of(n: int) -> CandidatePool:
    return CandidatePool.from_timestamps(np.arange(n, dtype=float))


def run(selector: MDP3, emb: np.ndarray, text: np.ndarray, k: int) -> list[int]:
    return list(selector.select(pool_of(len(emb)), None, k, Features(embeddings=emb, text=text)).indices)


def random_case(seed: int, n: int, d: int):  # type: ignore[no-untyped-def]
    rng = np.random.default_rng(seed)
    emb = rng.normal(size=(n, d)).astype(np.float32)
    emb /= np.linalg.norm(emb, axis=1, keepdims=True)
    text = (emb[rng.integers(n)] + 0.7 * rng.normal(size=d)).astype(np.float32)
    text /= np.linalg.norm(text)
    return emb, text


def test_kernel_is_the_sum_of_five_gaussians() -> None:
    x = np.array([[0.0, 0.0], [1.0, 0.0]])
    want = sum(np.exp(-1.0 / (2 * a)) for a in ALPHAS)
    assert multi_gaussian_kernel(x, x) == pytest.approx(np.array([[5.0, want], [want, 5.0]]))


def test_identical_frames_are_not_picked_twice() -> None:
    # frames 0 and 1 sit on the query; the first pick is frame 0 (first on ties); frame 1 would make the
    # kernel singular (log det -inf), so the second pick is frame 2
    emb = np.array([[0.0], [0.0], [1.0]], dtype=np.float32)
    assert run(MDP3(), emb, np.array([0.0], dtype=np.float32), 2) == [0, 2]
    assert run(MDP3(), emb, np.array([0.0], dtype=np.float32), 1) == [0]


def test_lambda_trades_relevance_against_diversity() -> None:
    # query at 0, frames at 0, 1, 3. First pick: frame 0 (r = 5). Second pick, objective
    # (2/lam) log r_i + log(5 - K(0,i)^2 / 5): K(0,1) = 1.9068, K(0,3) = 0.1166, so
    #   lam = 0.2:  frame 1: 10 * 0.6455 + log(4.2728) = 7.91;  frame 3: 10 * (-2.149) + log(4.9973) = -19.9
    #   lam = 1000: frame 1: 0.0013 + 1.4523 = 1.4536;           frame 3: -0.0043 + 1.6089 = 1.6046
    emb = np.array([[0.0], [1.0], [3.0]], dtype=np.float32)
    text = np.array([0.0], dtype=np.float32)
    assert run(MDP3(lam=0.2), emb, text, 2) == [0, 1]
    assert run(MDP3(lam=1000.0), emb, text, 2) == [0, 2]


def test_last_segment_may_be_shorter() -> None:
    emb, text = random_case(5, 11, 4)
    out = run(MDP3(segment_size=4), emb, text, 6)
    assert len(out) == 6 and len(set(out)) == 6


def test_needs_embeddings_and_text() -> None:
    emb, text = random_case(1, 8, 4)
    with pytest.raises(SelectionError):
        MDP3().select(pool_of(8), None, 3, Features(embeddings=emb))
    bad = emb.copy()
    bad[3, 1] = np.nan
    with pytest.raises(SelectionError):
        MDP3().select(pool_of(8), None, 3, Features(embeddings=bad, text=text))


def test_registered_and_conformant() -> None:
    assert selectors.get("mdp3") is MDP3
    testing = pytest.importorskip("frameselect.testing")
    testing.check_selector("mdp3")
    testing.check_selector("mdp3", params={"segment_size": 4})


def test_bad_hyper_parameters_raise() -> None:
    emb, text = random_case(1, 8, 4)
    for bad in (MDP3(lam=0.0), MDP3(condition_size=0)):
        with pytest.raises(SelectionError):
            bad.select(pool_of(8), None, 3, Features(embeddings=emb, text=text))
    with pytest.raises(SelectionError, match="text embedding has shape"):
        MDP3().select(pool_of(8), None, 3, Features(embeddings=emb, text=text[:3]))
