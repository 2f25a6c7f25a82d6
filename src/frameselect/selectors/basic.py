"""Query-agnostic baselines: uniform, random, k-center and fixed fps."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from frameselect.parts import Range
from frameselect.registry import selectors
from frameselect.selectors.base import Selector, fill_to_k
from frameselect.types import CandidatePool, Features, Query

__all__ = ["Uniform", "RandomSelector", "KCenter", "FixedFps", "uniform_indices", "kcenter_greedy"]


def uniform_indices(n: int, k: int, convention: str = "linspace") -> list[int]:
    """Uniformly spaced indices into a pool of ``n`` frames.

    ``"linspace"``: lmms-eval's ``np.linspace(0, n - 1, k, dtype=int)``
    (both endpoints included, truncation towards zero).
    ``"interior"``: the centres of ``k`` equal segments,
    ``floor((j + 0.5) * n / k)``, as in Video-MME-v2's evaluation, which never
    takes the first or last frame.

    >>> uniform_indices(10, 4)
    [0, 3, 6, 9]
    >>> uniform_indices(10, 4, "interior")
    [1, 3, 6, 8]
    """
    k = min(k, n)
    if convention == "linspace":
        idx = np.linspace(0, n - 1, k, dtype=int)
    elif convention == "interior":
        idx = np.floor((np.arange(k) + 0.5) * n / k).astype(int)
    else:
        raise ValueError(f"unknown uniform convention {convention!r}; use 'linspace' or 'interior'")
    return [int(i) for i in idx]


@selectors.register("uniform")
@dataclass(frozen=True)
class Uniform(Selector):
    """Uniform sampling over the pool.

    ``convention="linspace"`` (default) follows lmms-eval
    (``np.linspace(0, N-1, k, dtype=int)``); ``"interior"`` takes segment
    centres as Video-MME-v2 does. Both give ``k`` distinct indices for k ≤ N.
    """

    convention: str = "linspace"

    def _select(self, pool: CandidatePool, query: Query | None, k: int, features: Features, rng: np.random.Generator) -> list[int]:
        return uniform_indices(len(pool), k, self.convention)


@selectors.register("random")
@dataclass(frozen=True)
class RandomSelector(Selector):
    """``k`` frames drawn without replacement, seeded by the run's seed."""

    def _select(self, pool: CandidatePool, query: Query | None, k: int, features: Features, rng: np.random.Generator) -> list[int]:
        return sorted(int(i) for i in rng.choice(len(pool), size=k, replace=False))


def kcenter_greedy(embeddings: np.ndarray, k: int, first: int = 0) -> list[int]:
    """Farthest-first traversal (Gonzalez 1985), Euclidean distance.

    Starts from ``first``; each step adds the frame farthest from every frame
    chosen so far (earliest index on ties). A 2-approximation of k-center.
    Squared distances come from one matrix-vector product per step
    (``|x|² − 2 x·c + |c|²``), so a step costs O(N·D).

    >>> kcenter_greedy(np.array([[0.0], [1.0], [10.0], [4.0]]), 3)
    [0, 2, 3]
    """
    x = np.asarray(embeddings, dtype=np.float32)
    n = x.shape[0]
    k = min(k, n)
    sq = np.einsum("ij,ij->i", x, x)
    chosen = [first]
    dist = np.maximum(sq - 2.0 * (x @ x[first]) + sq[first], 0.0)
    dist[first] = -1.0
    while len(chosen) < k:
        i = int(np.argmax(dist))
        if dist[i] < 0:
            break
        chosen.append(i)
        dist = np.minimum(dist, np.maximum(sq - 2.0 * (x @ x[i]) + sq[i], 0.0))
        dist[chosen] = -1.0
    return chosen


@selectors.register("kcenter")
@dataclass(frozen=True)
class KCenter(Selector):
    """k-center by farthest-first traversal on frame embeddings.

    Gonzalez, "Clustering to minimize the maximum intercluster distance"
    (1985). Starts from the first frame of the pool (``start="first"``) or
    from the frame nearest the mean embedding (``start="medoid"``).
    Identical frames are at distance 0 and are taken in pool order once every
    distinct frame is chosen.
    """

    needs = frozenset({"embeddings"})
    start: str = "first"

    def _select(self, pool: CandidatePool, query: Query | None, k: int, features: Features, rng: np.random.Generator) -> list[int]:
        x = np.asarray(features.embeddings, dtype=np.float64)
        if self.start == "first":
            first = 0
        elif self.start == "medoid":
            first = int(np.argmin(np.linalg.norm(x - x.mean(axis=0), axis=1)))
        else:
            raise ValueError(f"unknown start {self.start!r}; use 'first' or 'medoid'")
        return sorted(kcenter_greedy(x, k, first))


@selectors.register("fixed_fps")
@dataclass(frozen=True)
class FixedFps(Selector):
    """Frames at a fixed rate ``fps`` (one per ``1 / fps`` seconds, from the first).

    For targets ``t_0 + j / fps`` takes the pool frame nearest in time;
    repeats are dropped. If that yields more than ``k`` frames, ``k`` of them
    are kept uniformly (linspace); if fewer, the budget is filled with the
    frames farthest in time from those chosen (the shared fill rule).
    """

    param_ranges = {"fps": Range(gt=0)}

    fps: float = 1.0

    def _select(self, pool: CandidatePool, query: Query | None, k: int, features: Features, rng: np.random.Generator) -> list[int]:
        if self.fps <= 0:
            raise ValueError(f"fixed_fps needs fps > 0, got {self.fps}")
        ts = np.asarray(pool.timestamps, dtype=np.float64)
        count = int(np.floor((ts[-1] - ts[0]) * self.fps + 1e-9)) + 1
        targets = ts[0] + np.arange(count) / self.fps
        right = np.clip(np.searchsorted(ts, targets), 0, len(ts) - 1)
        left = np.clip(right - 1, 0, len(ts) - 1)
        nearest = np.unique(np.where(np.abs(ts[left] - targets) <= np.abs(ts[right] - targets), left, right))
        if len(nearest) > k:
            nearest = nearest[uniform_indices(len(nearest), k)]
        return fill_to_k(list(nearest), k, len(pool), times=ts)
