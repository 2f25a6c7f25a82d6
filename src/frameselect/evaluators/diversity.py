"""Feature-space evaluators: redundancy, representativeness, spread and query relevance.

They read the run's frame embeddings (or query relevance) from the features
the pipeline hands to evaluators that declare ``needs``; without them they
return NaN. Distances are Euclidean on the embeddings as the encoder gives
them (L2-normalised for the built-in encoders, so ``d² = 2 − 2·cos``), or
cosine distances ``1 − cos`` with ``metric="cosine"``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from numpy.typing import NDArray

from frameselect.evaluators.base import Evaluator
from frameselect.registry import evaluators
from frameselect.types import Answer, CandidatePool, Features, Sample, Selection

__all__ = [
    "redundancy",
    "representativeness",
    "mean_min_distance",
    "query_relevance",
    "Redundancy",
    "Representativeness",
    "MeanMinDistance",
    "QueryRelevance",
]


def _unit(x: NDArray[Any]) -> NDArray[np.float64]:
    x = np.asarray(x, dtype=np.float64)
    unit: NDArray[np.float64] = x / np.maximum(np.linalg.norm(x, axis=1, keepdims=True), 1e-12)
    return unit


def _pairwise(a: NDArray[Any], b: NDArray[Any], metric: str) -> NDArray[np.float64]:
    if metric == "euclidean":
        a = np.asarray(a, dtype=np.float64)
        b = np.asarray(b, dtype=np.float64)
        sq = (a * a).sum(1)[:, None] + (b * b).sum(1)[None, :] - 2.0 * a @ b.T
        return np.asarray(np.sqrt(np.maximum(sq, 0.0)), dtype=np.float64)
    if metric == "cosine":
        return 1.0 - _unit(a) @ _unit(b).T
    raise ValueError(f"unknown distance {metric!r}; use 'euclidean' or 'cosine'")


def redundancy(embeddings: NDArray[Any], indices: Sequence[int]) -> float:
    """Mean pairwise cosine similarity of the selected frames (NaN for fewer than two).

    >>> round(redundancy(np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]]), [0, 1, 2]), 6)
    0.471405
    """
    if len(indices) < 2:
        return math.nan
    x = _unit(np.asarray(embeddings)[list(indices)])
    sims = x @ x.T
    k = len(indices)
    return float((sims.sum() - np.trace(sims)) / (k * (k - 1)))


def representativeness(embeddings: NDArray[Any], indices: Sequence[int], metric: str = "euclidean") -> tuple[float, float]:
    """k-medoid cost and coverage radius of the selection as medoids of the whole pool.

    Cost: mean over every pool frame of the distance to its nearest selected
    frame; radius: the largest such distance. Lower is better for both.

    >>> representativeness(np.array([[0.0], [1.0], [3.0]]), [1])
    (1.0, 2.0)
    """
    if not len(indices):
        return math.nan, math.nan
    x = np.asarray(embeddings)
    nearest = _pairwise(x, x[list(indices)], metric).min(axis=1)
    return float(nearest.mean()), float(nearest.max())


def mean_min_distance(embeddings: NDArray[Any], indices: Sequence[int], metric: str = "euclidean") -> float:
    """Mean over the selected frames of the distance to the nearest other selected frame.

    Higher means more spread out; NaN for fewer than two frames.

    >>> mean_min_distance(np.array([[0.0], [1.0], [3.0]]), [0, 1, 2])
    1.3333333333333333
    """
    if len(indices) < 2:
        return math.nan
    x = np.asarray(embeddings)[list(indices)]
    d = _pairwise(x, x, metric)
    np.fill_diagonal(d, np.inf)
    return float(d.min(axis=1).mean())


def query_relevance(relevance: NDArray[Any], indices: Sequence[int]) -> float:
    """Mean query relevance of the selected frames.

    >>> query_relevance(np.array([0.1, 0.5, 0.9]), [1, 2])
    0.7
    """
    if not len(indices):
        return math.nan
    return float(np.mean(np.asarray(relevance, dtype=np.float64)[list(indices)]))


def _embeddings(features: Features | None, pool: CandidatePool) -> NDArray[np.float32] | None:
    if features is None or features.embeddings is None or features.embeddings.shape[0] != len(pool):
        return None
    return features.embeddings


class _EmbeddingEvaluator(Evaluator):
    needs = frozenset({"embeddings"})

    def __init__(self, metric: str = "euclidean") -> None:
        _pairwise(np.zeros((1, 1)), np.zeros((1, 1)), metric)
        self.metric = metric


@evaluators.register("redundancy")
class Redundancy(Evaluator):
    """Mean pairwise cosine similarity of the selected frames' embeddings (lower is better).

    The usual redundancy measure of frame-selection and keyframe papers; no
    single reference implementation. NaN without embeddings or below two frames.
    """

    needs = frozenset({"embeddings"})
    higher_is_better = False

    def score(self, sample: Sample, pool: CandidatePool, selection: Selection, answer: Answer | None, features: Features | None = None) -> Mapping[str, float]:
        emb = _embeddings(features, pool)
        return {self.name: math.nan if emb is None else redundancy(emb, selection.indices)}


@evaluators.register("representativeness")
class Representativeness(_EmbeddingEvaluator):
    """k-medoid cost of the selection over the pool, plus its coverage radius (lower is better).

    Writes ``representativeness`` (mean distance of every pool frame to its
    nearest selected frame, the k-medoid objective) and ``coverage_radius``
    (the largest such distance, the k-center objective of Gonzalez 1985).
    """

    higher_is_better = False

    @property
    def metrics(self) -> tuple[str, ...]:
        return ("representativeness", "coverage_radius")

    def score(self, sample: Sample, pool: CandidatePool, selection: Selection, answer: Answer | None, features: Features | None = None) -> Mapping[str, float]:
        emb = _embeddings(features, pool)
        cost, radius = (math.nan, math.nan) if emb is None else representativeness(emb, selection.indices, self.metric)
        return {"representativeness": cost, "coverage_radius": radius}


@evaluators.register("mean_min_distance")
class MeanMinDistance(_EmbeddingEvaluator):
    """Mean distance of each selected frame to its nearest other selected frame (higher = more diverse)."""

    def score(self, sample: Sample, pool: CandidatePool, selection: Selection, answer: Answer | None, features: Features | None = None) -> Mapping[str, float]:
        emb = _embeddings(features, pool)
        return {self.name: math.nan if emb is None else mean_min_distance(emb, selection.indices, self.metric)}


@evaluators.register("query_relevance")
class QueryRelevance(Evaluator):
    """Mean query relevance of the selected frames (the run's per-frame scores, or embeddings · text).

    Declares ``needs = {"relevance"}``, so a run with it needs a text-capable
    encoder (the pipeline computes evaluators' features like a selector's).
    Called directly without relevance in ``features``, it gives NaN.
    """

    needs = frozenset({"relevance"})

    def score(self, sample: Sample, pool: CandidatePool, selection: Selection, answer: Answer | None, features: Features | None = None) -> Mapping[str, float]:
        if features is None:
            return {self.name: math.nan}
        try:
            relevance = features.relevance()
        except ValueError:
            return {self.name: math.nan}
        if relevance.shape[0] != len(pool):
            return {self.name: math.nan}
        return {self.name: query_relevance(relevance, selection.indices)}
