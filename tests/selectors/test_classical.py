"""Classical selectors on tiny inputs whose answers are computed by hand."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from frameselect.errors import SelectionError
from frameselect.registry import selectors
from frameselect.selectors.classical import (
    dpp_greedy,
    facility_location_greedy,
    kmeans_centroids,
    kmeans_plus_plus,
    mmr_greedy,
    stratified_top1,
    temporal_nms,
    topk_indices,
)
from frameselect.types import CandidatePool, Features, Query

Q = Query("q")


def unit(*degrees: float) -> np.ndarray:
    """2-D unit vectors at the given angles: points on a circle, cos = cos(angle difference)."""
    rad = np.deg2rad(np.asarray(degrees, dtype=np.float64))
    return np.stack([np.cos(rad), np.sin(rad)], axis=1)


def pool(n: int, timestamps: list[float] | None = None) -> CandidatePool:
    return CandidatePool.from_timestamps(np.arange(n, dtype=float) if timestamps is None else timestamps)


def select(name: str, k: int, *, ts: list[float] | None = None, n: int | None = None, seed: int = 0, **features_and_params: object) -> list[int]:
    feats = {key: features_and_params.pop(key) for key in ("embeddings", "text", "scores") if key in features_and_params}
    size = n if n is not None else len(ts) if ts is not None else len(next(iter(feats.values())))  # type: ignore[arg-type]
    sel = selectors.create(name, **features_and_params)
    return list(sel.select(pool(size, ts), Q, k, Features(**feats), seed=seed).indices)  # type: ignore[arg-type]


# -- top-k --------------------------------------------------------------------


def test_topk_takes_the_most_relevant_earlier_first_on_ties() -> None:
    rel = np.array([0.2, 0.9, 0.5, 0.9, 0.1])
    assert topk_indices(rel, 2) == [1, 3]
    assert topk_indices(rel, 3) == [1, 2, 3]
    assert topk_indices(np.ones(4), 2) == [0, 1]
    selection = selectors.create("topk").select(pool(5), Q, 3, Features(scores=rel))
    assert selection.indices == (1, 2, 3)
    assert selection.scores == (0.9, 0.5, 0.9)


def test_topk_relevance_from_embeddings_and_text() -> None:
    emb = unit(0, 45, 90, 135)
    text = unit(80)[0]  # nearest 90, then 45 (35 deg) vs 135 (55 deg)
    assert select("topk", 2, embeddings=emb, text=text) == [1, 2]


# -- MMR ----------------------------------------------------------------------
# frames at 0, 30, 90, 60 degrees; relevance 0.9, 1.0, 0.3, 0.6.
# cos(30) = 0.866, cos(60) = 0.5, cos(90) = 0.
# step 1: most relevant -> 1 (30 deg).
# step 2, lam=0.5: f0 = .45 - .5*.866 = .017; f2 = .15 - .5*.5 = -.10; f3 = .30 - .5*.866 = -.133 -> 0
# step 3, lam=0.5: f2 = .15 - .5*max(.5, 0) = -.10; f3 = .30 - .5*max(.866, .5) = -.133 -> 2
# step 2, lam=0.8: f0 = .72 - .2*.866 = .547; f2 = .24 - .1 = .14; f3 = .48 - .173 = .307 -> 0
# step 3, lam=0.8: f2 = .24 - .2*.5 = .14; f3 = .48 - .2*.866 = .307 -> 3
MMR_EMB = unit(0, 30, 90, 60)
MMR_REL = np.array([0.9, 1.0, 0.3, 0.6])


def test_mmr_greedy_order_by_hand() -> None:
    assert mmr_greedy(MMR_EMB, MMR_REL, 3, lam=0.5) == [1, 0, 2]
    assert mmr_greedy(MMR_EMB, MMR_REL, 3, lam=0.8) == [1, 0, 3]
    assert mmr_greedy(MMR_EMB, MMR_REL, 4, lam=1.0) == [1, 0, 3, 2]  # pure relevance
    # lam = 0: after the most relevant, the least similar to it: 90 deg (cos 60 = .5)
    assert mmr_greedy(MMR_EMB, MMR_REL, 2, lam=0.0) == [1, 2]


def test_mmr_selector() -> None:
    assert select("mmr", 3, embeddings=MMR_EMB, scores=MMR_REL) == [0, 1, 2]
    assert select("mmr", 3, embeddings=MMR_EMB, scores=MMR_REL, lam=0.8) == [0, 1, 3]
    assert select("mmr", 2, embeddings=MMR_EMB, scores=MMR_REL) == [0, 1]


def test_mmr_normalize_rescales_relevance() -> None:
    big = MMR_REL * 100  # raw, relevance swamps similarity: the top-k order 1, 0, 3
    assert select("mmr", 3, embeddings=MMR_EMB, scores=big, lam=0.3) == [0, 1, 3]
    # normalised r = (.857, 1, 0, .429), lam = .3: step 2: f0 = .257 - .7*.866 = -.349,
    # f2 = 0 - .7*.5 = -.35, f3 = .129 - .606 = -.478 -> 0; step 3: f2 = -.35, f3 = -.478 -> 2
    assert select("mmr", 3, embeddings=MMR_EMB, scores=big, lam=0.3, normalize=True) == [0, 1, 2]


def test_mmr_rejects_lambda_outside_unit_interval() -> None:
    for bad in (-0.1, 1.5, math.nan, "0.5"):
        with pytest.raises(SelectionError, match="lam"):
            selectors.create("mmr", lam=bad)


# -- k-means ------------------------------------------------------------------


def test_kmeans_picks_the_frame_nearest_each_cluster_centre() -> None:
    emb = unit(0, 2, 4, 90, 92, 94)  # two tight clusters; their means point at 2 and 92 degrees
    for seed in range(5):
        assert select("kmeans", 2, embeddings=emb, seed=seed) == [1, 4]


def test_kmeans_three_clusters_and_centroids() -> None:
    emb = unit(0, 1, 2, 60, 61, 62, 120, 121, 122)
    for seed in range(5):
        cents = kmeans_centroids(emb, 3, np.random.default_rng(seed))
        angles = sorted(float(np.rad2deg(np.arctan2(c[1], c[0]))) for c in cents)
        assert angles == pytest.approx([1, 61, 121], abs=1e-4)  # float32 sums
        assert select("kmeans", 3, embeddings=emb, seed=seed) == [1, 4, 7]


def test_kmeans_centroids_are_the_means_of_their_clusters() -> None:
    """Cluster sums are updated by the frames that move; at convergence each centroid is its cluster's mean."""
    rng = np.random.default_rng(3)
    centres = rng.normal(size=(6, 16))
    x = (centres[rng.integers(0, 6, 400)] + 0.8 * rng.normal(size=(400, 16))).astype(np.float32)
    cents = kmeans_centroids(x, 6, np.random.default_rng(0), max_iter=1000, tol=0.0)
    x64 = x.astype(np.float64)
    labels = np.argmin(((x64[:, None, :] - cents[None]) ** 2).sum(axis=2), axis=1)
    means = np.array([x64[labels == c].mean(axis=0) for c in range(6)])
    # the first round's sums are a float32 product, later changes are exact float64 additions
    np.testing.assert_allclose(cents, means, rtol=0, atol=1e-6)


def test_kmeans_plus_plus_is_seeded_and_distinct() -> None:
    x = np.random.default_rng(0).normal(size=(30, 4))
    a = kmeans_plus_plus(x, 8, np.random.default_rng(7))
    assert a == kmeans_plus_plus(x, 8, np.random.default_rng(7))
    assert len(set(a)) == 8
    # identical points: every distance is 0, still k distinct indices
    same = kmeans_plus_plus(np.ones((5, 3)), 4, np.random.default_rng(1))
    assert len(set(same)) == 4


def test_kmeans_identical_frames_give_distinct_indices() -> None:
    assert len(set(select("kmeans", 3, embeddings=np.ones((6, 4)) / 2.0))) == 3


def test_kmeans_rejects_bad_max_iter() -> None:
    with pytest.raises(SelectionError, match="max_iter"):
        selectors.create("kmeans", max_iter=0)


# -- DPP ----------------------------------------------------------------------
# three items: x0 = (1, 0), x1 = (.8, .6), x2 = (0, 1): S01 = .8, S12 = .6, S02 = 0.
# quality q = (1, 1.2, .9): L = diag(q) S diag(q) has diagonal (1, 1.44, .81),
# L01 = .96, L12 = .648, L02 = 0.
# step 1: argmax diag -> 1 (log det 1.44).
# step 2: det L_{1,0} = 1.44 - .96^2 = .5184 (gain .36), det L_{1,2} = 1.1664 - .648^2 = .746496
#         (gain .5184) -> 2.
# step 3: det S = 0 (rank 2): the greedy stops with [1, 2].
DPP_X = np.array([[1.0, 0.0], [0.8, 0.6], [0.0, 1.0]])


def test_dpp_greedy_three_items_by_hand() -> None:
    assert dpp_greedy(DPP_X, 2, np.array([1.0, 1.2, 0.9])) == [1, 2]
    assert dpp_greedy(DPP_X, 3, np.array([1.0, 1.2, 0.9])) == [1, 2]  # rank 2: stops early
    # quality 1: all gains 1 first -> 0; then 1 - .64 = .36 (item 1) vs 1 (item 2) -> 2
    assert dpp_greedy(DPP_X, 3) == [0, 2]
    # item 0 made tiny: step 1 still 1; step 2: gains .01*(.36) vs .81*(.64)... -> 2
    assert dpp_greedy(DPP_X, 2, np.array([0.1, 1.2, 0.9])) == [1, 2]
    # make item 2 poor: d2 after item 1: item 0 1 - .64 = .36, item 2 .04 * .64 = .0256 -> 0
    assert dpp_greedy(DPP_X, 2, np.array([1.0, 1.2, 0.2])) == [1, 0]


def _logdet(L: np.ndarray, items: list[int]) -> float:
    sign, value = np.linalg.slogdet(L[np.ix_(items, items)])
    return float(value) if sign > 0 else -math.inf


def test_dpp_greedy_matches_naive_log_det_greedy() -> None:
    rng = np.random.default_rng(3)
    for _ in range(20):
        x = rng.normal(size=(15, 6))
        x /= np.linalg.norm(x, axis=1, keepdims=True)
        q = np.exp(rng.uniform(0, 1, size=15))
        L = q[:, None] * (x @ x.T) * q[None, :]
        chosen: list[int] = []
        for _step in range(6):
            gains = [(_logdet(L, chosen + [i]), -i) for i in range(15) if i not in chosen]
            chosen.append(-max(gains)[1])
        assert dpp_greedy(x, 6, q) == chosen


def test_dpp_selectors() -> None:
    # theta = 0: quality 1, as dpp_greedy above, then the budget is filled by relevance
    rel = np.array([0.0, 1.0, 0.5])
    assert select("dpp", 2, embeddings=DPP_X, scores=rel, theta=0.0) == [0, 2]
    assert select("dpp", 3, embeddings=DPP_X, scores=rel, theta=0.0) == [0, 1, 2]
    # theta = .5: alpha = .5, q = exp(.5 * (0, 1, .5)); diag q^2 = (1, e, e^.5) -> 1;
    # then gains q_j^2 (1 - S1j^2): item 0 .36, item 2 e^.5 * .64 = 1.055 -> 2
    assert select("dpp", 2, embeddings=DPP_X, scores=rel) == [1, 2]
    assert select("dpp_diverse", 2, embeddings=DPP_X) == [0, 2]
    # identical frames: one item, then the fill rule (farthest in time: the last frame)
    assert select("dpp_diverse", 2, embeddings=np.ones((5, 3))) == [0, 4]


def test_dpp_rejects_theta_one() -> None:
    with pytest.raises(SelectionError, match="theta"):
        selectors.create("dpp", theta=1.0)


# -- facility location --------------------------------------------------------
# 1-D points p = (0, 1, 2, 6, 7), similarity s = max(0, 1 - |p_i - p_j| / 4):
#   s01 = s12 = s34 = .75, s02 = .5, all others 0.
# lam = 0, coverage only: column sums (2.25, 2.5, 2.25, 1.75, 1.75) -> 1;
#   covered = (.75, 1, .75, 0, 0): gains (.25, -, .25, 1.75, 1.75) -> 3 (tie, earlier);
#   covered = (.75, 1, .75, 1, .75): gains (.25, -, .25, -, .25) -> 0.
# lam = .5, relevance r = (0, 0, 0, 0, 1), k = 2: weights .5/5 = .1 and .5/2 = .25;
#   gains (.225, .25, .225, .175, .425) -> 4; covered = (0, 0, 0, .75, 1):
#   gains (.225, .25, .225, .025) -> 1.
POINTS = np.array([0.0, 1.0, 2.0, 6.0, 7.0])
SIM_1D = np.maximum(0.0, 1.0 - np.abs(POINTS[:, None] - POINTS[None, :]) / 4.0)


def test_facility_location_on_1d_points_by_hand() -> None:
    assert facility_location_greedy(SIM_1D, None, 3, lam=0.0) == [1, 3, 0]
    assert facility_location_greedy(SIM_1D, np.array([0, 0, 0, 0, 1.0]), 2, lam=0.5) == [4, 1]
    assert facility_location_greedy(SIM_1D, np.array([0, 0, 0, 0, 1.0]), 2, lam=1.0)[0] == 4


def _naive_facility_location(s: np.ndarray, r: np.ndarray, k: int, lam: float) -> list[int]:
    n = s.shape[0]
    covered = np.zeros(n)
    chosen: list[int] = []
    for _ in range(k):
        gains = [(1 - lam) / n * np.sum(np.maximum(s[:, j] - covered, 0)) + lam / k * r[j] if j not in chosen else -np.inf for j in range(n)]
        j = int(np.argmax(gains))
        chosen.append(j)
        covered = np.maximum(covered, s[:, j])
    return chosen


def test_lazy_greedy_equals_plain_greedy_including_ties() -> None:
    rng = np.random.default_rng(5)
    for trial in range(30):
        n = 12
        x = rng.normal(size=(n, 3))
        s = np.round(np.maximum(0.0, x @ x.T / 3.0) * 4) / 4  # quarters: sums are exact, ties are real
        np.fill_diagonal(s, np.maximum(np.diag(s), 1.0))
        r = np.round(rng.uniform(size=n) * 4) / 4
        lam = [0.0, 0.3, 0.5, 1.0][trial % 4]
        assert facility_location_greedy(s, r, 5, lam) == _naive_facility_location(s, r, 5, lam)


def test_facility_location_selector_consistency() -> None:
    emb = unit(0, 10, 20, 90, 95, 180)
    rel = np.array([0.1, 0.2, 0.3, 0.9, 0.8, 0.0])
    # lam = 1: relevance only -> top-k
    assert select("facility_location", 2, embeddings=emb, scores=rel, lam=1.0) == [3, 4]
    # lam = 0: coverage only. 180 deg has clipped similarity 0 to all others, so it only
    # covers itself (gain 1/N); it comes third, once one frame covers each cluster
    chosen = select("facility_location", 3, embeddings=emb, scores=rel, lam=0.0)
    assert chosen[-1] == 5 and len(set(chosen[:2]) & {0, 1, 2}) == 1 and len(set(chosen[:2]) & {3, 4}) == 1


# -- stratified ---------------------------------------------------------------


def test_stratified_segments_by_hand() -> None:
    ts = np.arange(10.0)
    rel = np.array([5, 1, 1, 1, 9, 2, 2, 2, 2, 8.0])
    # k = 2: span 9, segments [0, 4.5) = 0..4 and [4.5, 9] = 5..9
    assert stratified_top1(ts, rel, 2) == [4, 9]
    # k = 3: [0, 3) = 0..2, [3, 6) = 3..5, [6, 9] = 6..9
    assert stratified_top1(ts, rel, 3) == [0, 4, 9]
    assert select("stratified", 3, scores=rel) == [0, 4, 9]


def test_stratified_empty_segment_is_filled_by_relevance() -> None:
    ts = [0.0, 0.1, 0.2, 10.0]
    rel = np.array([1.0, 3.0, 2.0, 0.0])
    # k = 3: segments [0, 3.33) holds 0..2, [3.33, 6.67) none, [6.67, 10] holds 3
    assert stratified_top1(np.array(ts), rel, 3) == [1, 3]
    assert select("stratified", 3, ts=ts, scores=rel) == [1, 2, 3]


def test_stratified_single_timestamp_span() -> None:
    assert stratified_top1(np.zeros(4), np.array([0.0, 2, 1, 2]), 3) == [1]
    assert select("stratified", 3, ts=[5.0, 5.0, 5.0, 5.0], scores=np.array([0.0, 2, 1, 2])) == [1, 2, 3]


# -- temporal NMS -------------------------------------------------------------
# t = 0..9 s, relevance (.1, .9, .8, .2, .3, .7, .6, .1, .5, .4), window 2 s:
#   1 kept, suppresses 0..2; 5 kept, suppresses 4..6; 8 kept, suppresses 7..9;
#   3 is exactly 2 s from 1 and 5: not suppressed (strictly less than window) -> kept.
NMS_REL = np.array([0.1, 0.9, 0.8, 0.2, 0.3, 0.7, 0.6, 0.1, 0.5, 0.4])


def test_temporal_nms_by_hand() -> None:
    ts = np.arange(10.0)
    assert temporal_nms(ts, NMS_REL, 4, window=2.0) == [1, 3, 5, 8]
    assert temporal_nms(ts, NMS_REL, 3, window=2.0) == [1, 5, 8]
    assert temporal_nms(ts, NMS_REL, 3, window=0.0) == [1, 2, 5]  # plain top-k
    # window 3: 1 suppresses 0..3, 5 suppresses 3..7, 8 (3 s from 5) suppresses 6..9: only 3 left
    assert temporal_nms(ts, NMS_REL, 4, window=3.0) == [1, 5, 8]


def test_temporal_nms_selector_fills_and_uses_seconds() -> None:
    assert select("temporal_nms", 4, scores=NMS_REL) == [1, 3, 5, 8]
    assert select("temporal_nms", 4, scores=NMS_REL, window=3.0) == [1, 2, 5, 8]  # filled with 2 (.8)
    # irregular times: 0.5 s is within 1 s of 0, 1.0 s is not
    assert select("temporal_nms", 3, ts=[0.0, 0.5, 1.0, 3.0], scores=np.array([1.0, 0.9, 0.8, 0.7]), window=1.0) == [0, 2, 3]
    # the same frames at other times: the window is in seconds, not frames
    assert select("temporal_nms", 2, ts=[0.0, 5.0, 10.0, 15.0], scores=np.array([1.0, 0.9, 0.8, 0.7]), window=1.0) == [0, 1]


def test_temporal_nms_rejects_negative_window() -> None:
    with pytest.raises(SelectionError, match="window"):
        selectors.create("temporal_nms", window=-1.0)


# -- shared behaviour ---------------------------------------------------------


@pytest.mark.parametrize("name", ["topk", "mmr", "kmeans", "dpp", "dpp_diverse", "facility_location", "stratified", "temporal_nms"])
def test_every_classical_selector_has_a_cited_docstring(name: str) -> None:
    doc = selectors.get(name).__doc__ or ""
    assert any(ch.isdigit() for ch in doc) and len(doc) > 150, f"{name} docstring must cite its source"


def test_query_aware_selectors_return_relevance_of_chosen_frames() -> None:
    rng = np.random.default_rng(0)
    emb = rng.normal(size=(20, 8))
    emb /= np.linalg.norm(emb, axis=1, keepdims=True)
    rel = rng.uniform(size=20)
    for name in ("topk", "mmr", "dpp", "facility_location", "stratified", "temporal_nms"):
        sel = selectors.create(name).select(pool(20), Q, 5, Features(embeddings=emb, scores=rel))
        assert sel.scores == tuple(float(rel[i]) for i in sel.indices), name


def test_selectors_scale_to_a_long_pool() -> None:
    rng = np.random.default_rng(1)
    emb = rng.normal(size=(600, 32))
    emb /= np.linalg.norm(emb, axis=1, keepdims=True)
    feats = Features(embeddings=emb, text=emb[7], scores=emb @ emb[7])
    for name, k in itertools.product(("mmr", "kmeans", "dpp", "dpp_diverse", "facility_location", "stratified", "temporal_nms"), (1, 16)):
        assert len(selectors.create(name).select(pool(600), Q, k, feats).indices) == k
