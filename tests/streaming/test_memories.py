"""Each streaming selector against its definition: hand-computed cases, its paper's guarantee, its reference code's outputs."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from numpy.typing import NDArray
from scipy import stats

from frameselect._engine.plan import resolve
from frameselect.errors import ConfigError
from frameselect.registry import selectors, streaming
from frameselect.streaming.base import StreamingSelector, spread
from frameselect.streaming.sieve import ivm_value, sieve_count
from frameselect.streaming.synopsis import weighted_kmeans
from frameselect.types import CandidatePool, Features, Query


def feed(
    part: StreamingSelector,
    embeddings: NDArray[np.float64],
    times: NDArray[np.float64] | None = None,
    *,
    query: NDArray[np.float64] | None = None,
    seed: int = 0,
) -> None:
    part.start(query, seed=seed)
    times = np.arange(len(embeddings), dtype=np.float64) if times is None else times
    for e, t in zip(embeddings, times, strict=True):
        part.observe(e, float(t))


def unit(angle_deg: float) -> NDArray[np.float64]:
    a = math.radians(angle_deg)
    return np.array([math.cos(a), math.sin(a)])


# -- sliding window: exact --------------------------------------------------------------------------


def test_sliding_window_holds_exactly_the_latest_frames() -> None:
    part = streaming.create("sliding_window", memory=3)
    emb = np.stack([unit(a) for a in (0, 10, 20, 30, 40, 50, 60)])
    feed(part, emb, np.array([0.0, 0.5, 1.0, 1.5, 2.0, 2.5, 3.0]))
    ids, times = part.held_frames()
    assert ids.tolist() == [4, 5, 6] and times.tolist() == [2.0, 2.5, 3.0]
    assert part.select(None, 2, 3.0).indices == (4, 6)  # spread over the window: both ends
    assert part.select(None, 5, 2.5).indices == (4, 5)  # nothing after now
    assert part.select(unit(52), 1, 3.0).indices == (5,)  # the most relevant: 50° is closest to 52°
    assert part.select(None, 3, 1.0).indices == ()  # the window no longer holds anything that early


def test_spread_takes_both_ends_and_distinct_positions() -> None:
    for n in range(1, 30):
        for k in range(1, n + 1):
            pos = spread(n, k).tolist()
            assert len(set(pos)) == k and pos == sorted(pos)
            if k > 1:
                assert pos[0] == 0 and pos[-1] == n - 1


# -- reservoir: uniform over the past (Vitter's algorithm R) ------------------------------------------


def _inclusion_counts(name: str, n: int, memory: int, runs: int) -> NDArray[np.int64]:
    emb = np.tile(unit(0), (n, 1))
    counts = np.zeros(n, dtype=np.int64)
    part = streaming.create(name, memory=memory)
    for seed in range(runs):
        feed(part, emb, seed=seed)
        ids, _ = part.held_frames()
        counts[ids] += 1
    return counts


def test_reservoir_holds_every_frame_with_the_same_probability() -> None:
    n, memory, runs = 20, 5, 2000
    counts = _inclusion_counts("reservoir", n, memory, runs)
    assert counts.sum() == runs * memory
    p = stats.chisquare(counts).pvalue  # expected runs * memory / n = 500 each
    assert p > 0.01, counts.tolist()
    # the same test tells a memory that is not uniform: the sliding window keeps only the last frames
    assert stats.chisquare(_inclusion_counts("sliding_window", n, memory, 50)).pvalue < 1e-6


def test_reservoir_depends_only_on_its_seed() -> None:
    emb = np.stack([unit(a) for a in range(0, 90, 3)])
    part = streaming.create("reservoir", memory=4)
    feed(part, emb, seed=11)
    first = part.held_frames()[0].tolist()
    feed(part, emb, seed=11)
    assert part.held_frames()[0].tolist() == first
    feed(part, emb, seed=12)
    assert part.held_frames()[0].tolist() != first


# -- incremental k-center: the 8-approximation of the doubling algorithm ------------------------------


def _radius(points: NDArray[np.float64], centres: NDArray[np.float64]) -> float:
    return float(max(np.linalg.norm(centres - p, axis=1).min() for p in points))


def _optimal_radius(points: NDArray[np.float64], k: int) -> float:
    """The exact discrete k-center radius (centres among the points) by brute force: at least the continuous optimum."""
    return min(_radius(points, points[list(c)]) for c in itertools.combinations(range(len(points)), k))


@pytest.mark.parametrize("seed", range(12))
def test_stream_kcenter_covers_the_whole_stream_within_eight_times_the_optimum(seed: int) -> None:
    rng = np.random.default_rng(seed)
    points = rng.normal(size=(10, 2)) * rng.uniform(0.1, 3.0, size=(10, 1))
    part = streaming.create("stream_kcenter", memory=3)
    feed(part, points)
    slots = part._frames.slots()
    centres = part._frames.embeddings[slots].astype(np.float64)
    assert 1 <= len(centres) <= 3
    alg = _radius(points, centres)
    assert alg <= 2.0 * part.radius + 1e-6  # the invariant: every frame within 2d of a centre
    assert alg <= 8.0 * _optimal_radius(points, 3) + 1e-6


def test_the_brute_force_bound_catches_a_memory_that_forgets_an_outlier() -> None:
    points = np.array([[100.0, 0.0]] + [[0.0, 0.1 * i] for i in range(9)])
    window = streaming.create("sliding_window", memory=3)
    feed(window, points)
    held = window._frames.embeddings[window._frames.slots()].astype(np.float64)
    assert _radius(points, held) > 8.0 * _optimal_radius(points, 3)
    kcenter = streaming.create("stream_kcenter", memory=3)
    feed(kcenter, points)
    assert 0 in kcenter.held_frames()[0].tolist()  # the outlier stays a centre


def test_stream_kcenter_hand_computed_doubling() -> None:
    # 1-D: 0, 1, 3 fill k=2 + 1 centres; d = smallest gap = 1 merges 1 into 0; 3 stays (gap 3 > 1)
    part = streaming.create("stream_kcenter", memory=2)
    feed(part, np.array([[0.0], [1.0], [3.0]]))
    assert part.held_frames()[0].tolist() == [0, 2] and part.radius == 1.0
    part.observe(np.array([4.5]), 3.0)  # within 2d = 2 of 3: joins its cluster
    assert part.held_frames()[0].tolist() == [0, 2]
    part.observe(np.array([10.0]), 4.0)  # farther than 2 from both: k+1 centres, d doubles to 2; 0–3 is 3 > 2, 3–10 is 7 > 2: d = 4 merges 3 into 0
    assert part.held_frames()[0].tolist() == [0, 4] and part.radius == 4.0


# -- sieve-streaming: (1/2 − ε) of the best subset ----------------------------------------------------


@pytest.mark.parametrize("seed", range(10))
def test_sieve_streaming_reaches_half_minus_epsilon_of_the_best_subset(seed: int) -> None:
    rng = np.random.default_rng(seed)
    centres = rng.normal(size=(4, 3))
    points = centres[rng.integers(0, 4, size=10)] + 0.3 * rng.normal(size=(10, 3))
    points /= np.linalg.norm(points, axis=1, keepdims=True)
    size, eps, h = 3, 0.2, 1.5
    part = streaming.create("sieve_streaming", memory=sieve_count(size, eps) * size, size=size, epsilon=eps, bandwidth=h)
    feed(part, points)
    value, frames = part.best()
    assert len(frames) <= size
    achieved = ivm_value(points[frames], h)
    assert value == pytest.approx(achieved, abs=1e-6)  # the incremental Cholesky tracks f (embeddings are held as float32)
    best = max(ivm_value(points[list(c)], h) for c in itertools.combinations(range(10), size))
    assert achieved >= (0.5 - eps) * best


def test_sieve_streaming_memory_bound_is_checked_when_created() -> None:
    assert sieve_count(8, 0.5) == 7  # ⌊log 16 / log 1.5⌋ + 1
    with pytest.raises(ConfigError, match=r"memory must be at least 56 \(got 40\)"):
        resolve("streaming", "sieve_streaming", memory=40, size=8, epsilon=0.5)


def test_ivm_value_hand_computed() -> None:
    # two orthogonal unit vectors, h = 1: K = [[1, e^-2], [e^-2, 1]]; f = ½ log det(I + K) = ½ log(4 − e^-4)
    x = np.array([[1.0, 0.0], [0.0, 1.0]])
    assert ivm_value(x, 1.0) == pytest.approx(0.5 * math.log(4.0 - math.exp(-4.0)))
    assert ivm_value(x[:1], 1.0) == pytest.approx(0.5 * math.log(2.0))


# -- threshold keeper: hand-computed ---------------------------------------------------------------------


def _at_relevance(values: list[float]) -> NDArray[np.float64]:
    """Unit vectors whose dot product with [1, 0] is each value."""
    return np.stack([np.array([v, math.sqrt(1.0 - v * v)]) for v in values])


def test_threshold_keeper_keeps_frames_that_beat_the_percentile_and_evicts_the_least_relevant() -> None:
    part = streaming.create("threshold_keeper", memory=2, percentile=50.0, max_gap=100.0)
    feed(part, _at_relevance([0.0, 0.5, -0.5, 0.9, 0.2, 0.95]), query=np.array([1.0, 0.0]))
    # 0: first, kept; 1: beats 1 of 1; 2: beats 0 of 2 (< 50 %), dropped; 3: beats 3 of 3, evicts 0 (0.0);
    # 4: beats 2 of 4 (= 50 %), evicts 1 (0.5); 5: beats 5 of 5, evicts 4 (0.2)
    assert part.held_frames()[0].tolist() == [3, 5]
    assert part.select(None, 1, 10.0).indices == (5,)
    assert part.select(None, 5, 4.0).indices == (3,)


def test_threshold_keeper_forces_a_keep_after_the_maximum_gap() -> None:
    part = streaming.create("threshold_keeper", memory=4, percentile=100.0, max_gap=2.5)
    feed(part, _at_relevance([0.9, 0.8, 0.7, 0.6, 0.5, 0.4]), query=np.array([1.0, 0.0]))
    assert part.held_frames()[0].tolist() == [0, 3]  # 0 first; 3 after 3 s without a keep; the rest never beat every earlier frame


def test_threshold_keeper_needs_the_question_at_start() -> None:
    part = streaming.create("threshold_keeper")
    with pytest.raises(Exception, match="needs the question before the stream starts"):
        part.start()


# -- kmeans synopsis: Flash-VStream's weighted k-means --------------------------------------------------

# Expected values: IVGSZ/Flash-VStream at commit 8f6bde2f397f4846505df4d03364d97617fc02ee,
# Flash-VStream-LLaVA/flash_vstream/model/compress_functions.py, weighted_kmeans_feature(img_feature, k, weights),
# run with torch 2.13 (CPU) on X = np.random.default_rng(100 + case).normal(size=(n, d)) as float32 of shape (n, 1, d)
# and weights None or np.random.default_rng(wseed).integers(1, 6, size=n); torch.manual_seed(seed) before the call, so its
# initial centroids are torch.randperm(n)[:k] under that seed (listed as init). No empty cluster occurs in these cases.
REFERENCE_KMEANS = [
    {
        "n": 7, "d": 3, "k": 4, "wseed": None, "init": [4, 0, 5, 3],
        "weights": [1.0, 1.0, 4.0, 1.0],
        "members": [[4], [0], [1, 2, 5, 6], [3]],
        "centroids": [[0.047211, 1.754235, -1.33798], [-1.15755, 0.289756, 0.780854], [0.511439, -0.719157, 0.200943], [1.104347, 2.242972, -0.611493]],
    },
    {
        "n": 9, "d": 5, "k": 6, "wseed": 3, "init": [4, 0, 6, 5, 7, 2],
        "weights": [4.0, 5.0, 5.0, 6.0, 3.0, 1.0],
        "members": [[3, 4, 8], [0], [6], [1, 5], [7], [2]],
        "centroids": [
            [-1.239665, 0.771294, 1.235779, 0.210052, -1.142978],
            [-0.790152, -2.034626, 0.603302, 0.744295, -0.309687],
            [-1.642417, -1.435393, -1.097978, 0.294925, -0.787246],
            [0.478733, 0.689842, 1.294521, 1.358818, 0.688444],
            [1.309538, 0.243855, 0.364767, 0.750508, 0.340248],
            [-0.863567, 0.964017, -1.648463, -0.332092, -0.437294],
        ],
    },
    {
        "n": 12, "d": 4, "k": 8, "wseed": 5, "init": [0, 9, 3, 2, 10, 5, 6, 7],
        "weights": [4.0, 1.0, 8.0, 1.0, 7.0, 3.0, 9.0, 4.0],
        "members": [[0], [9], [3, 4], [2], [1, 10], [5], [6, 8], [7, 11]],
        "centroids": [
            [0.625729, 2.164325, 0.955541, -1.080232],
            [0.31341, 0.312571, 0.060446, -2.680367],
            [-0.367363, -0.710652, 0.053264, 1.149733],
            [-1.942233, 2.11292, 1.884983, -1.448199],
            [-0.328969, 0.764162, -0.239661, 0.990324],
            [-0.388149, 0.36029, -1.389337, 1.079326],
            [1.901976, 0.44461, 0.333243, -1.231627],
            [0.314648, -2.106125, 0.915803, 0.695149],
        ],
    },
]  # fmt: skip


@pytest.mark.parametrize("case", range(len(REFERENCE_KMEANS)))
def test_weighted_kmeans_equals_flash_vstream(case: int) -> None:
    ref = REFERENCE_KMEANS[case]
    n, d, k = ref["n"], ref["d"], ref["k"]
    x = np.random.default_rng(100 + case).normal(size=(n, d)).astype(np.float32).astype(np.float64)
    w = np.ones(n) if ref["wseed"] is None else np.random.default_rng(ref["wseed"]).integers(1, 6, size=n).astype(np.float64)
    centroids, labels, weights = weighted_kmeans(x, k, w, ref["init"], np.random.default_rng(0))
    assert np.allclose(centroids, np.array(ref["centroids"]), atol=2e-6)
    assert weights.tolist() == ref["weights"]
    assert [np.flatnonzero(labels == j).tolist() for j in range(k)] == ref["members"]


def test_kmeans_synopsis_merges_by_count_and_in_reference_mode_by_one() -> None:
    stream = np.array([[0.0], [10.0], [11.0], [12.0]])
    paper = streaming.create("kmeans_synopsis", memory=2)
    feed(paper, stream[:3])
    centroids, weights = paper.centroids()
    # 0 | 10, 11: every initial pair converges to {0}, {10, 11}; 10 and 11 tie for the centroid 10.5: the earlier frame shows it
    assert paper.held_frames()[0].tolist() == [0, 1] and centroids.ravel().tolist() == [0.0, 10.5] and weights.tolist() == [1.0, 2.0]
    paper.observe(stream[3], 3.0)
    centroids, weights = paper.centroids()
    assert centroids.ravel().tolist() == [0.0, 11.0] and weights.tolist() == [1.0, 3.0]  # (2·10.5 + 12) / 3
    assert paper.held_frames()[0].tolist() == [0, 1]  # 10 and 12 are both 1 from 11: the earlier
    exact = streaming.create("kmeans_synopsis", memory=2, reference_exact=True)
    feed(exact, stream)
    centroids, weights = exact.centroids()
    assert centroids.ravel().tolist() == [0.0, 11.25] and weights.tolist() == [1.0, 2.0]  # (10.5 + 12) / 2: every centroid weighs 1
    assert exact.held_frames()[0].tolist() == [0, 3]  # 12 is nearer 11.25 than 10
    assert exact.select(None, 1, 10.0).indices == (3,)  # the heaviest cluster's frame


# -- offline adapter ---------------------------------------------------------------------------------------


def test_offline_adapter_runs_the_offline_selector_on_the_held_frames() -> None:
    rng = np.random.default_rng(4)
    emb = rng.normal(size=(30, 6))
    emb /= np.linalg.norm(emb, axis=1, keepdims=True)
    times = np.cumsum(rng.uniform(0.3, 0.9, size=30))
    query = emb[20] + 0.1
    query /= np.linalg.norm(query)
    part = streaming.create("offline_adapter", selector="mmr", params={"lam": 0.6}, keep="sliding_window", memory=10)
    feed(part, emb, times)
    got = part.select(query, 4, float(times[-1]))
    pool = CandidatePool.from_timestamps(times[20:])
    want = selectors.create("mmr", lam=0.6).select(pool, Query(""), 4, Features(embeddings=emb[20:], text=query, scores=emb[20:] @ query), seed=30)
    assert got.indices == tuple(20 + i for i in want.indices)
    assert got.timestamps == tuple(float(times[20 + i]) for i in want.indices)


def test_offline_adapter_refuses_pixel_selectors_when_created() -> None:
    with pytest.raises(ConfigError, match=r"selector 'mgsampler' needs pixels \(decoded frames\), which a stream memory does not hold"):
        resolve("streaming", "offline_adapter", selector="mgsampler")
    with pytest.raises(ConfigError, match="query-aware memory"):
        resolve("streaming", "offline_adapter", keep="threshold_keeper")
