"""MDP3 against a direct re-statement of the Ovis MDP3 plug-in and hand-worked cases.

The re-statement uses the reference's own slow path for each segment (log-det
of every candidate set by ``slogdet``, as ``seqdpp_select_fast``), so it is
independent of the incremental Cholesky in the implementation.
"""

from __future__ import annotations

import numpy as np
import pytest

from frameselect.errors import SelectionError
from frameselect.registry import selectors
from frameselect.selectors.mdp3 import MDP3, multi_gaussian_kernel
from frameselect.types import CandidatePool, Features

INF = 0x7FFFFFFF
ALPHAS = [2.0**e for e in range(-3, 2)]


def ref_kernel(x, y=None):  # type: ignore[no-untyped-def]
    y = x if y is None else y
    sq = ((x[:, None, :] - y[None, :, :]) ** 2).sum(2)
    return sum(np.exp(-sq / (2 * a)) for a in ALPHAS)


def ref_segment_greedy(total, offset, to_select, lam):  # type: ignore[no-untyped-def]
    if to_select == 0:
        return [0.0], [[]]
    r, s_matrix = total[0:1, 1:], total[1:, 1:]
    cond = list(range(offset))
    trace, scores = [], [0.0]
    while len(trace) < to_select:
        best, best_i = None, -1
        for i in range(len(s_matrix) - offset):
            if i in trace:
                continue
            sel = cond + [j + offset for j in trace] + [i + offset]
            obj = 1.0 / lam * 2 * np.log(r[0, sel]).sum() + np.linalg.slogdet(s_matrix[np.ix_(sel, sel)])[1]
            if best_i == -1 or obj > best:
                best, best_i = obj, i
        scores.append(best)
        trace.append(best_i)
    return scores, [sorted(trace[:j]) for j in range(len(trace) + 1)]


def ref_mdp3(image, text, k, lam=0.2, segment_size=32, condition_size=1):  # type: ignore[no-untyped-def]
    """_select_frames_fast of the plug-in (N must be a multiple of segment_size)."""
    segment_num = (len(image) + segment_size - 1) // segment_size
    dp = [[0.0] + [-INF] * k for _ in range(segment_num + 1)]
    trace = [[[] for _ in range(k + 1)] for _ in range(segment_num + 1)]
    for seg in range(1, segment_num + 1):
        cand = image[(seg - 1) * segment_size : seg * segment_size]
        sim = ref_kernel(cand)
        for start in range(0, min(k, (seg - 1) * segment_size) + 1):
            prev = trace[seg - 1][start]
            cond = prev[-min(condition_size, len(prev)) :]
            extra = np.vstack([text[None, :]] + [image[c][None, :] for c in cond])
            additional = ref_kernel(extra, np.vstack([extra, cand]))
            total = np.vstack([additional, np.hstack([additional[:, -len(sim) :].T, sim])])
            scores, traces = ref_segment_greedy(total, len(cond), min(k - start, segment_size), lam)
            for j, (score, picked) in enumerate(zip(scores, traces, strict=True)):
                value = dp[seg - 1][start] + score
                if value > dp[seg][start + j]:
                    dp[seg][start + j] = value
                    trace[seg][start + j] = prev + [i + (seg - 1) * segment_size for i in picked]
    return trace[segment_num][k]


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


@pytest.mark.parametrize("lam", [0.2, 1.0])
def test_one_segment_matches_the_reference(lam: float) -> None:
    for seed in range(12):
        emb, text = random_case(seed, 10 + seed, 6)
        x, t = emb.astype(np.float64), text.astype(np.float64)
        for k in (1, 3, 6):
            want = ref_mdp3(x, t, k, lam, segment_size=len(x))
            assert run(MDP3(lam=lam), emb, text, k) == want


@pytest.mark.parametrize(("segment_size", "condition_size"), [(4, 1), (6, 1), (4, 2)])
def test_segment_dynamic_programme_matches_the_reference(segment_size: int, condition_size: int) -> None:
    for seed in range(6):
        emb, text = random_case(100 + seed, 12, 5)
        x, t = emb.astype(np.float64), text.astype(np.float64)
        for k in (2, 5, 7):
            want = ref_mdp3(x, t, k, 0.2, segment_size, condition_size)
            assert run(MDP3(segment_size=segment_size, condition_size=condition_size), emb, text, k) == want


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
    with pytest.raises(SelectionError, match="dimensions"):
        MDP3().select(pool_of(8), None, 3, Features(embeddings=emb, text=text[:3]))
