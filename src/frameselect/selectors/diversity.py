"""Diversity and coverage selectors: ``kmeans`` (k-means++ / Lloyd, the frame nearest each centroid), ``dpp`` / ``dpp_diverse`` (greedy DPP MAP with / without query quality) and ``facility_location`` (relevance + coverage, greedy).

Each is a thin wrapper over a plain function on arrays; the conventions they
share with the relevance selectors are :mod:`frameselect.selectors.classical`'s
(where they are also importable)."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from frameselect.errors import SelectionError
from frameselect.parts import Range
from frameselect.registry import selectors
from frameselect.selectors._classical_common import FloatArray, _check_fraction, _embeddings, _squared_norms, _unit_rows_and_norms
from frameselect.selectors._draws import weighted_index
from frameselect.selectors.base import Scored, Selector, fill_to_k, normalize_minmax
from frameselect.types import CandidatePool, Features, Query

__all__ = ["DPP", "DPPDiverse", "FacilityLocation", "KMeans", "dpp_greedy", "facility_location_greedy", "kmeans_centroids", "kmeans_plus_plus"]


def kmeans_plus_plus(x: NDArray[np.floating], k: int, rng: np.random.Generator, sq: FloatArray | None = None) -> list[int]:
    """k-means++ seeding (Arthur & Vassilvitskii, SODA 2007): indices of the initial centres.

    The first centre is drawn uniformly; each next one with probability
    proportional to its squared distance to the nearest centre so far. When
    every remaining point coincides with a centre (all distances 0), the
    next one is drawn uniformly among the points not yet taken. Distances
    are computed in float32 (one matrix-vector product per centre).
    ``sq``, the rows' :func:`_squared_norms`, is computed when not given.
    The weighted draws are ``rng.choice(n, p=...)``'s, without its argument
    checks (:func:`~frameselect.selectors._draws.weighted_index`).
    """
    pts = np.asarray(x, dtype=np.float32)
    n = pts.shape[0]
    k = min(k, n)
    norms = _squared_norms(pts) if sq is None else sq

    def dist2(i: int) -> FloatArray:
        # max(|x|^2 - 2 x.c + |c|^2, 0), operation by operation as written, in one buffer
        d: FloatArray = (pts @ pts[i]).astype(np.float64)
        d *= 2.0
        np.subtract(norms, d, out=d)
        d += norms[i]
        return np.maximum(d, 0.0, out=d)

    first = int(rng.integers(n))
    centres = [first]
    weights = dist2(first)  # the distance to the nearest centre, 0 at the centres themselves
    weights[first] = 0.0
    while len(centres) < k:
        total = float(weights.sum())
        if total > 0.0:
            i = weighted_index(rng, weights / total)
        else:
            taken = np.zeros(n, dtype=bool)
            taken[centres] = True
            i = int(rng.choice(np.flatnonzero(~taken)))
        centres.append(i)
        np.minimum(weights, dist2(i), out=weights)
        weights[centres] = 0.0
    return centres


def _mean_variance(pts: NDArray[np.float32]) -> float:
    """The data's per-dimension variance averaged over dimensions, in float64 (one pass: Σ|x|² / N - |mean|²)."""
    n, d = int(pts.shape[0]), int(pts.shape[1])
    mean = pts.sum(axis=0, dtype=np.float64) / n
    total = float(np.einsum("ij,ij->i", pts, pts).sum(dtype=np.float64))
    return max(total / n - float(mean @ mean), 0.0) / d


def kmeans_centroids(x: NDArray[np.floating], k: int, rng: np.random.Generator, max_iter: int = 100, tol: float = 1e-4) -> FloatArray:
    """Lloyd's algorithm (Lloyd 1957/1982) from k-means++ seeds; returns (k, D) centroids.

    Stops when the assignment no longer changes, when the centroids moved by
    at most ``tol`` times the data's mean per-dimension variance in total
    squared distance (scikit-learn's criterion), or after ``max_iter``
    rounds. An empty cluster keeps its previous centroid. The assignment
    product runs in float32 (the features' precision); each cluster's sum
    is kept in float64 and, after the first round, updated only by the
    frames that changed cluster, so a later round costs one (N, D) x (D, k)
    product.
    """
    return _lloyd(np.asarray(x, dtype=np.float32), None, k, rng, max_iter, tol)[0]


def _centroid_product(pts: NDArray[np.float32], centroids: FloatArray) -> NDArray[np.float32]:
    """``-2 x.c`` for every frame and centroid, (N, k), one float32 product."""
    product: NDArray[np.float32] = pts @ (centroids.astype(np.float32) * np.float32(-2.0)).T
    return product


def _lloyd(
    pts: NDArray[np.float32], sq: FloatArray | None, k: int, rng: np.random.Generator, max_iter: int, tol: float
) -> tuple[FloatArray, NDArray[np.float32] | None]:
    """:func:`kmeans_centroids`, and :func:`_centroid_product` of the centroids it returns when its last round computed it (no frame moved).

    ``sq`` (the rows' :func:`_squared_norms`) goes to the seeding.
    """
    n = pts.shape[0]
    centroids = pts[kmeans_plus_plus(pts, k, rng, sq)].astype(np.float64)
    k = centroids.shape[0]
    threshold = tol * _mean_variance(pts)
    labels = np.full(n, -1)
    sums = np.zeros(centroids.shape)
    distance = np.empty((n, k))
    for _ in range(max_iter):
        # argmin_c |x - c|^2 = argmin_c (|c|^2 - 2 x.c): |x|^2 is the same for every centre
        product = _centroid_product(pts, centroids)
        c32 = centroids.astype(np.float32)
        # the sum in float32, stored exactly as float64: numpy's argmin over rows of k float32 costs 3x its float64 one
        np.add(product, np.einsum("ij,ij->i", c32, c32)[None, :], out=distance, dtype=np.float32)
        new_labels = np.argmin(distance, axis=1)
        moved = np.flatnonzero(new_labels != labels)
        if moved.size == 0:
            return centroids, product
        if labels[0] < 0:  # the first round: one float32 product with the membership matrix
            membership = np.zeros((k, n), dtype=np.float32)
            membership[new_labels, np.arange(n)] = 1.0
            sums = (membership @ pts).astype(np.float64)
        else:  # +1 for the cluster a moved frame joins, -1 for the one it leaves
            change = np.zeros((k, moved.size))
            change[new_labels[moved], np.arange(moved.size)] = 1.0
            change[labels[moved], np.arange(moved.size)] = -1.0
            sums += change @ pts[moved].astype(np.float64)
        labels = new_labels
        counts = np.bincount(labels, minlength=k)
        filled = counts > 0
        updated = centroids.copy()
        updated[filled] = sums[filled] / counts[filled, None]
        shift = float(np.sum((updated - centroids) ** 2))
        centroids = updated
        if shift <= threshold:
            break
    return centroids, None


def _nearest_distinct(
    x: NDArray[np.floating], centroids: NDArray[np.floating], sq: FloatArray | None = None, product: NDArray[np.float32] | None = None
) -> list[int]:
    """One distinct frame per centroid, minimising the total squared distance.

    When the centroids' nearest frames are already distinct this is exactly
    "the nearest frame to each centroid"; when two centroids share a nearest
    frame (duplicate frames), the optimal assignment gives each its own.
    ``sq`` (the rows' :func:`_squared_norms`) and ``product``
    (:func:`_centroid_product` of these centroids) are computed when not given.

    The assignment (scipy's ``linear_sum_assignment``) is skipped when every
    row of the cost ``C`` it would solve has a single minimum and those
    minima lie in distinct columns: then the per-row argmins are its answer.
    Proof: any assignment ``a`` costs ``Σ_r C[r, a_r] >= Σ_r min_j C[r, j]``,
    with equality only if every ``a_r`` is row r's minimum; the argmins are
    distinct, so they are an assignment, and the unique optimum. The solver
    also returns exactly them: it works on ``C - min(C)`` (tested here, as
    its subtraction may round), and for each row in turn its shortest
    augmenting path starts with that row's reduced costs, which are its
    costs (every column potential is still 0); the unique smallest lies in
    a free column, so the path ends there at once, the row's potential
    becomes that cost, and no column potential changes.
    """
    pts = np.asarray(x, dtype=np.float32)
    c64 = np.asarray(centroids, dtype=np.float64)
    if sq is None:
        sq = _squared_norms(pts)
    if product is None:
        product = _centroid_product(pts, c64)
    c32 = c64.astype(np.float32)
    # |c|^2 - 2 c.x + |x|^2 in float64, the product in float32 (the features' precision)
    cost = product.T.astype(np.float64)
    cost += sq[None, :]
    cost += _squared_norms(c32)[:, None]
    np.maximum(cost, 0.0, out=cost)
    shifted = cost - cost.min()  # what linear_sum_assignment solves
    nearest = np.argmin(shifted, axis=1)
    rows = np.arange(shifted.shape[0])
    single = np.count_nonzero(shifted == shifted[rows, nearest][:, None]) == rows.size
    if single and np.unique(nearest).size == rows.size:
        return sorted(nearest.tolist())
    from scipy.optimize import linear_sum_assignment

    _rows, cols = linear_sum_assignment(cost)
    return sorted(int(c) for c in cols)


@selectors.register("kmeans")
@dataclass(frozen=True)
class KMeans(Selector):
    """k-means on frame embeddings; the frame nearest each centroid.

    Lloyd, "Least squares quantization in PCM" (1957, publ. 1982) with
    k-means++ seeding (Arthur & Vassilvitskii, SODA 2007), as in
    scikit-learn's ``KMeans`` (sklearn/cluster/_kmeans.py). Euclidean distance
    on the (re-normalised) embeddings, ``k`` clusters, one initialisation
    seeded from the run's rng, at most ``max_iter`` (100; scikit-learn 300)
    Lloyd rounds, stopping early by scikit-learn's ``tol`` (1e-4) criterion or
    when the assignment stops changing. Deviations from scikit-learn: plain
    k-means++ (one candidate per step, not its 2 + log k local trials) and
    empty clusters keep their centroid (no relocation). Each
    centroid is represented by a distinct real frame (the assignment of
    frames to centroids minimising total squared distance, which is each
    centroid's nearest frame whenever those differ).

    Precision: distances are float32 products (the features' precision),
    cluster sums float64 updated by the frames that change cluster, and the
    final frame-to-centroid cost float64 built on a float32 product (it
    was a float64 product up to version 0.1.0; fingerprints carry the
    library version, so stored runs do not mix). Lloyd's trajectory turns on
    rounding wherever a frame is nearly equidistant from two centres: on
    300 seeded inputs (N 10-3,600, k 1-64; random, clustered and repeated
    embeddings) 225 selections equal the former code's; the others are
    other local optima, as often better as worse (inertia within 3.4 %).
    The former code and this one each agree with Lloyd computed wholly in
    float64 on 221 and 220 of those inputs.

    Cost: k-means++ seeding (k matrix-vector passes over the embeddings
    and k weighted draws, 4-6 ms) and Lloyd rounds of one (N, D) x (D, k)
    float32 product each (11-17 rounds on the benchmark's random unit
    vectors; the first also sums the clusters with one product), then the
    final assignment, read off the last round's product. Around those
    products the work is done once: the rows' squared norms serve the
    normalisation check, the seeding and the final cost; the draws are
    ``Generator.choice``'s without its argument checks; the assignment
    solver runs only where two centroids' nearest frames coincide or a
    nearest frame is tied (the same selections, checked on 320 seeded
    inputs). CPU time on one loaded core at N = 3,600, D = 512, k = 32,
    medians of three alternating comparisons: 37-47 ms against 44-55 ms
    before the fourth round of ``docs/performance-selectors.md``
    (1.14-1.23x; 70-90 ms in 0.1.0), about the 50 ms target. Fewer rounds or a cheaper seeding would change the
    clustering; Hamerly's bounds skip no frame on these random vectors
    (every frame is nearly equidistant from its two nearest centres).
    """

    param_ranges = {"max_iter": Range(ge=1, integer=True), "tol": Range(ge=0)}

    needs = frozenset({"embeddings"})
    max_iter: int = 100
    tol: float = 1e-4

    def __post_init__(self) -> None:
        if isinstance(self.max_iter, bool) or not isinstance(self.max_iter, int) or self.max_iter < 1:
            raise SelectionError(f"kmeans max_iter must be a positive integer, got {self.max_iter!r}")
        if isinstance(self.tol, bool) or not isinstance(self.tol, (int, float)) or not math.isfinite(self.tol) or self.tol < 0:
            raise SelectionError(f"kmeans tol must be a finite number >= 0, got {self.tol!r}")

    def _select(self, pool: CandidatePool, query: Query | None, k: int, features: Features, rng: np.random.Generator) -> list[int]:
        assert features.embeddings is not None  # guaranteed by Selector._check_features
        x, sq = _unit_rows_and_norms(features.embeddings)
        centroids, product = _lloyd(x, sq, k, rng, self.max_iter, self.tol)
        return _nearest_distinct(x, centroids, sq, product)


def dpp_greedy(embeddings: NDArray[np.floating], k: int, quality: NDArray[np.floating] | None = None, epsilon: float = 1e-10) -> list[int]:
    """Greedy MAP inference of a DPP by incremental Cholesky (Chen et al., NeurIPS 2018, Alg. 1).

    The kernel is ``L = diag(q) · X Xᵀ · diag(q)`` with ``X`` the unit-norm
    embeddings and ``q`` the quality (1 when ``None``). Each step adds the
    item with the largest marginal gain ``log det(L_{S+i}) - log det(L_S)
    = log d_i²``, where ``d_i²`` is updated in O(N·|S|) from the Cholesky
    factor's new row; only the kernel rows of chosen items are computed
    (O(N·D) each), never the whole N × N kernel. Stops early (returning
    fewer than ``k``) once the best ``d_i²`` falls below ``epsilon``, as the
    reference does. Returns items in the order picked.

    >>> dpp_greedy(np.array([[1.0, 0.0], [1.0, 0.0], [0.0, 1.0]]), 3)
    [0, 2]
    """
    # float64 throughout: epsilon = 1e-10 presumes it (duplicates leave d_i^2 ~ 1e-16, not 1e-7)
    x = np.asarray(embeddings, dtype=np.float64)
    norm = np.sqrt(np.einsum("ij,ij->i", x, x))[:, None]
    x = np.divide(x, norm, out=np.zeros_like(x), where=norm > 0)
    n = x.shape[0]
    k = min(k, n)
    q = np.ones(n) if quality is None else np.asarray(quality, dtype=np.float64)
    d2 = q * q * (norm[:, 0] > 0)  # diag(L): cos(x_i, x_i) = 1 exactly, so ties stay ties
    c = np.zeros((k, n))
    chosen: list[int] = []
    j = int(np.argmax(d2))
    if d2[j] < epsilon:
        return chosen
    chosen.append(j)
    while len(chosen) < k:
        m = len(chosen) - 1
        row = q[j] * q * (x @ x[j])  # L[j, :]
        e = (row - c[:m, j] @ c[:m, :]) / math.sqrt(d2[j])
        c[m, :] = e
        d2 = d2 - e * e
        d2[chosen] = -np.inf
        j = int(np.argmax(d2))
        if d2[j] < epsilon:
            break
        chosen.append(j)
    return chosen


@selectors.register("dpp")
@dataclass(frozen=True)
class DPP(Selector):
    """Greedy MAP inference of a quality × diversity DPP over the frames.

    Chen, Zhang & Zhou, "Fast Greedy MAP Inference for Determinantal Point
    Process to Improve Recommendation Diversity", NeurIPS 2018; reference
    code laming-chen/fast-map-dpp (``dpp.py``, Algorithm 1, ``epsilon=1e-10``).
    Kernel ``L = diag(q) S diag(q)`` with ``S`` the cosine similarity of
    frame embeddings and quality ``q_i = exp(α r_i)``, ``α = θ / (2(1 - θ))``:
    the paper's own relevance–diversity trade-off, under which the
    greedy step maximises ``θ Σ r + (1 - θ) log det S``. ``theta`` (θ)
    defaults to 0.5; ``θ = 0`` ignores the query (see ``dpp_diverse``).
    Deliberate deviations: the relevance ``r`` is min-max normalised to
    [0, 1] first, so θ means the same for cosine and precomputed scores; and
    if the greedy stops early (kernel rank < k, e.g. duplicate frames) the
    budget is filled by relevance, the shared fill rule.
    """

    param_ranges = {"theta": Range(ge=0, lt=1)}

    needs = frozenset({"embeddings", "relevance"})
    theta: float = 0.5

    def __post_init__(self) -> None:
        _check_fraction("dpp theta", self.theta, upper_open=True)

    def _select(self, pool: CandidatePool, query: Query | None, k: int, features: Features, rng: np.random.Generator) -> Scored:
        rel = features.relevance()
        alpha = self.theta / (2.0 * (1.0 - self.theta))
        quality = np.exp(alpha * normalize_minmax(rel))
        idx = fill_to_k(dpp_greedy(_embeddings(features), k, quality), k, len(pool), priority=rel)
        return Scored(idx, [float(rel[i]) for i in idx])


@selectors.register("dpp_diverse")
@dataclass(frozen=True)
class DPPDiverse(Selector):
    """Query-agnostic greedy DPP MAP: the most diverse frames (quality 1).

    Chen, Zhang & Zhou, NeurIPS 2018 (laming-chen/fast-map-dpp, ``dpp.py``),
    with kernel ``L = S``, the cosine similarity of frame embeddings. If the
    greedy stops early (kernel rank < k), the budget is filled with the
    frames farthest in time from those chosen (the shared fill rule).
    """

    needs = frozenset({"embeddings"})

    def _select(self, pool: CandidatePool, query: Query | None, k: int, features: Features, rng: np.random.Generator) -> list[int]:
        return fill_to_k(dpp_greedy(_embeddings(features), k), k, len(pool))


def facility_location_greedy(similarity: NDArray[np.floating], relevance: NDArray[np.floating] | None, k: int, lam: float = 0.5) -> list[int]:
    """Greedy maximisation of relevance + facility-location coverage.

    ``F(S) = (1 - lam) / N · Σ_i max_{j in S} s_ij + lam / k · Σ_{j in S} r_j``
    with ``s`` a non-negative, symmetric (N, N) similarity. ``F`` is monotone
    submodular, so the greedy is within 1 - 1/e of the optimum (Nemhauser,
    Wolsey & Fisher 1978). Every step takes the largest marginal gain
    (earlier frame first on ties). Gains are kept exact incrementally: a pick
    that raises the coverage of frames ``R`` revisits only those rows
    (O(|R|·N)), so later steps, which change little, cost little. Returns
    items in the order picked.

    >>> s = np.array([[1.0, 0.5, 0.0], [0.5, 1.0, 0.5], [0.0, 0.5, 1.0]])
    >>> facility_location_greedy(s, None, 2, lam=0.0)
    [1, 0]
    """
    s = np.asarray(similarity)
    if s.dtype != np.float32:
        s = s.astype(np.float64)
    n = s.shape[0]
    k = min(k, n)
    r = np.zeros(n) if relevance is None else np.asarray(relevance, dtype=np.float64)
    w_cov, w_rel = (1.0 - lam) / n, lam / k
    covered = np.zeros(n, dtype=s.dtype)  # max similarity of each frame to S
    # Σ_i max(s_ij - covered_i, 0); row j = column j. Pairwise sums along the rows, in the similarity's precision
    coverage: FloatArray = np.sum(s, axis=1).astype(np.float64)
    taken = np.zeros(n, dtype=bool)
    chosen: list[int] = []
    while len(chosen) < k:
        gains = w_cov * coverage + w_rel * r
        gains[taken] = -np.inf
        j = int(np.argmax(gains))
        chosen.append(j)
        taken[j] = True
        rows = np.flatnonzero(s[j] > covered)
        for block in np.array_split(rows, max(1, -(-rows.size // 512))):
            if block.size == 0:
                continue
            old, new = covered[block, None], s[j, block][:, None]
            # max(s - old, 0) - max(s - new, 0) = clip(s, old, new) - old, as new > old; summed over
            # the block in the similarity's precision, then into the float64 coverage
            part = s[block]
            np.clip(part, old, new, out=part)
            part -= old
            coverage -= np.sum(part, axis=0)
            covered[block] = s[j, block]
    return chosen


@selectors.register("facility_location")
@dataclass(frozen=True)
class FacilityLocation(Selector):
    """Relevant frames that together cover the whole video: relevance + facility location.

    Coverage is the facility-location function of Cornuéjols, Fisher &
    Nemhauser (1977), used for summarisation by Lin & Bilmes, "A class of
    submodular functions for document summarization" (ACL 2011), whose
    objective adds a second term with weight λ; here that term is the
    modular query relevance:
    ``F(S) = (1 - λ) · mean_i max_{j in S} s_ij + λ · mean_{j in S} r̂_j``,
    ``s = max(cos, 0)`` of frame embeddings, ``r̂`` relevance min-max
    normalised to [0, 1], so both terms lie in [0, 1] and ``lam`` (λ,
    default 0.5) is a plain weight. Maximised by the greedy of
    Nemhauser, Wolsey & Fisher (1978). Holds the N × N similarity matrix
    (float32, 4·N² bytes: 52 MB at N = 3,600), whose computation dominates
    the latency (O(N²·D)).

    Precision: the similarity and the greedy's per-block sums are float32
    (the features' precision), the running gains float64 (the block sums
    were float64 up to version 0.1.0; fingerprints carry the library
    version). On 300 seeded inputs (N 10-3,600, k 1-64; random, clustered
    and repeated embeddings) 299 selections equal the former code's, and
    289 equal the greedy computed wholly in float64 (as did the former
    code's); every difference is a choice between identical frames, whose
    float64 gains differ by at most 6e-17.

    Cost: the similarity product alone is N²·D / 2 multiply-adds (3.3 G at
    N = 3,600, D = 512): 80-85 ms through float32 BLAS ``syrk`` on one
    x86-64 core (``benchmarks/selector_floors.py``), so this selector cannot
    reach the 50 ms target at that size without changing its definition:
    the first greedy step needs every column sum of ``max(s, 0)``, which no
    product of smaller matrices gives, and a sparse or sampled similarity
    is another objective. The incremental greedy adds 35-50 ms on random
    unit vectors, where each pick raises the coverage of many frames; a lazy
    greedy (Minoux) picks the same frames but was no faster there, since
    its stale bounds send it back to about 5,000 rows.
    """

    param_ranges = {"lam": Range(ge=0, le=1)}

    needs = frozenset({"embeddings", "relevance"})
    lam: float = 0.5

    def __post_init__(self) -> None:
        _check_fraction("facility_location lam", self.lam)

    def _select(self, pool: CandidatePool, query: Query | None, k: int, features: Features, rng: np.random.Generator) -> Scored:
        rel = features.relevance()
        x = _embeddings(features)
        sim = x @ x.T  # BLAS syrk: numpy sees the product of a matrix with its own transpose
        np.maximum(sim, np.float32(0.0), out=sim)  # in place: a second N x N array would cost as much as the clip
        idx = sorted(facility_location_greedy(sim, normalize_minmax(rel), k, self.lam))
        return Scored(idx, [float(rel[i]) for i in idx])
