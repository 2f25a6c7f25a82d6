"""AKS against a direct re-statement of ncTimTang/AKS ``frame_select.py`` and hand-worked cases."""

from __future__ import annotations

import heapq
import warnings

import numpy as np
import pytest

from frameselect.errors import SelectionError
from frameselect.registry import selectors
from frameselect.selectors.aks import AKS
from frameselect.types import CandidatePool, Features

# -- the reference's steps, restated (meanstd + main of frame_select.py) ------------------------


def ref_meanstd(dic_scores, n, fns, t1, t2, all_depth):  # type: ignore[no-untyped-def]
    split_scores, split_fn, leaf_scores, leaf_fn = [], [], [], []
    for dic_score, fn in zip(dic_scores, fns, strict=True):
        score, depth = dic_score["score"], dic_score["depth"]
        mean = np.mean(score)
        std = np.std(score)
        top_n = heapq.nlargest(n, range(len(score)), score.__getitem__)
        mean_diff = np.mean([score[t] for t in top_n]) - mean
        if mean_diff > t1 and std > t2:
            leaf_scores.append(dic_score)
            leaf_fn.append(fn)
        elif depth < all_depth:
            half = len(score) // 2
            split_scores += [dict(score=score[:half], depth=depth + 1), dict(score=score[half:], depth=depth + 1)]
            split_fn += [fn[:half], fn[half:]]
        else:
            leaf_scores.append(dic_score)
            leaf_fn.append(fn)
    if split_scores:
        deeper_scores, deeper_fn = ref_meanstd(split_scores, n, split_fn, t1, t2, all_depth)
    else:
        deeper_scores, deeper_fn = [], []
    return leaf_scores + deeper_scores, leaf_fn + deeper_fn


def ref_aks(itm_out, fn_out, max_num_frames=64, ratio=1, t1=0.8, t2=-100, all_depth=5):  # type: ignore[no-untyped-def]
    nums = int(len(itm_out) / ratio)
    score = [itm_out[i * ratio] for i in range(nums)]
    fn = [fn_out[i * ratio] for i in range(nums)]
    num = max_num_frames
    if len(score) < num:
        return fn
    normalized = (score - np.min(score)) / (np.max(score) - np.min(score))
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")  # means of empty halves, as in the reference
        segs, frames = ref_meanstd([dict(score=normalized, depth=0)], num, [fn], t1, t2, all_depth)
    out = []
    for s, f in zip(segs, frames, strict=True):
        f_num = int(num / 2 ** s["depth"])
        topk = heapq.nlargest(f_num, range(len(s["score"])), s["score"].__getitem__)
        out.extend(f[t] for t in topk)
    out.sort()
    return out


def pool_of(n: int) -> CandidatePool:
    return CandidatePool.from_timestamps(np.arange(n, dtype=float))


def run(selector: AKS, scores: np.ndarray, k: int) -> list[int]:
    return list(selector.select(pool_of(len(scores)), None, k, Features(scores=scores)).indices)


def score_cases():  # type: ignore[no-untyped-def]
    rng = np.random.default_rng(7)
    for n in (40, 64, 100, 257, 1000):
        yield rng.random(n)
        yield rng.random(n) ** 8  # a few strong peaks: leaves at shallow depths
        spiky = np.zeros(n)
        spiky[rng.choice(n, size=3, replace=False)] = 1.0
        yield spiky + 0.01 * rng.random(n)


@pytest.mark.parametrize("ratio", [1, 3])
def test_reference_exact_matches_the_reference_steps(ratio: int) -> None:
    checked = 0
    for scores in score_cases():
        for k in (1, 2, 3, 8, 16, 32, 48, 64):
            if k > len(scores):
                continue
            want = ref_aks(list(scores), list(range(len(scores))), k, ratio)
            got = run(AKS(ratio=ratio, reference_exact=True), scores, k)
            assert got == want, (len(scores), k)
            default = run(AKS(ratio=ratio), scores, k)
            assert len(default) == k and set(want) <= set(default)
            checked += 1
    assert checked > 60


def test_root_is_a_leaf_when_the_peaks_stand_out() -> None:
    # normalised top-2 mean 1, mean 2/12: 1 - 1/6 > 0.8, so the whole pool is one leaf giving its top 2
    scores = np.array([0.0] * 5 + [1.0] + [0.0] * 5 + [1.0])
    assert run(AKS(), scores, 2) == [5, 11]
    assert run(AKS(reference_exact=True), scores, 2) == [5, 11]


def test_shortfall_is_visible_in_reference_exact_and_filled_by_relevance_otherwise() -> None:
    # root: top-2 mean 1, mean 8/24 -> 0.67, split. Left half (two 1s among 12): 1 - 1/6 > 0.8, a leaf at
    # depth 1 giving int(2 / 2) = 1 frame, the earlier of the tie (2). Right half (constant 0.5) splits to
    # depth 5, where each leaf gives int(2 / 32) = 0. The reference returns one frame for k = 2.
    scores = np.array([0.0] * 12 + [0.5] * 12)
    scores[[2, 7]] = 1.0
    assert ref_aks(list(scores), list(range(24)), 2) == [2]
    assert run(AKS(reference_exact=True), scores, 2) == [2]
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
