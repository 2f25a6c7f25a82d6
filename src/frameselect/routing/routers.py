"""Evidence-demand routers and the constant (uniform-budget) reference.

Every demand router estimates, from what is known *before answering*, how
much evidence a question needs (a score in [0, 1]), then hands the scores to
:func:`~frameselect.routing.allocate.allocate_budgets`, which picks budgets
from the allowed set with the mean budget exact. With a bank of two or more
selectors, a sample whose demand is at least ``split`` gets ``bank[0]`` (put
the coverage policy first, e.g. ``uniform``) and the others ``bank[1]`` (a
query-aware policy, e.g. ``topk``); with one selector, every sample gets it.
Training-free: nothing is fitted to answers.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence

import numpy as np

from frameselect.parts import Range
from frameselect.registry import routers
from frameselect.routing.allocate import allocate_budgets
from frameselect.routing.base import DEFAULT_BUDGETS, Route, RouteContext, Router, RouteSet
from frameselect.selectors.base import Selector
from frameselect.types import Sample

__all__ = ["ConstantRouter", "DemandRouter", "TextCueRouter", "RelevanceShapeRouter", "HybridRouter", "text_demand", "relevance_demand", "relevance_stats"]


@routers.register("constant")
class ConstantRouter(Router):
    """Every sample gets the mean budget and the bank's first selector (the reference)."""

    def allocate(self, samples: Sequence[Sample], contexts: Mapping[str, RouteContext], mean_budget: int, bank: Sequence[Selector]) -> RouteSet:
        return RouteSet({s.id: Route(s.id, int(mean_budget), bank[0]) for s in samples})


class DemandRouter(Router):
    """Base of routers that score evidence demand and allocate at a fixed mean."""

    param_ranges = {"budgets": Range(ge=1, integer=True), "split": Range(ge=0, le=1), "floor": Range(ge=0)}

    def __init__(self, budgets: Sequence[int] = DEFAULT_BUDGETS, split: float = 0.5, floor: float = 0.1) -> None:
        self.budgets = tuple(sorted({int(b) for b in budgets}))
        self.split = float(split)
        self.floor = float(floor)

    def demand(self, samples: Sequence[Sample], contexts: Mapping[str, RouteContext]) -> list[float]:
        raise NotImplementedError

    def allocate(self, samples: Sequence[Sample], contexts: Mapping[str, RouteContext], mean_budget: int, bank: Sequence[Selector]) -> RouteSet:
        demands = self.demand(samples, contexts)
        ks = allocate_budgets(demands, mean_budget, self.budgets, floor=self.floor)
        routes = {}
        for s, k, d in zip(samples, ks, demands):
            policy = bank[0] if len(bank) == 1 or d >= self.split else bank[1]
            routes[s.id] = Route(s.id, k, policy, d)
        return RouteSet(routes)


# -- question-text cues ----------------------------------------------------------

_CUES: tuple[tuple[float, re.Pattern[str]], ...] = (
    (1.0, re.compile(r"\bhow many\b|\bcount\b|\bnumber of\b|\bhow often\b|\btimes\b")),
    (
        1.0,
        re.compile(
            r"\boverall\b|\bwhole (video|clip)\b|\bentire\b|\bthroughout\b|\bmostly\b|\bmost of\b|\bmajority\b|\bmain (topic|theme|subject|idea)\b|\bsummar|\bdominat|\bin general\b|\bthe video (is )?about\b"
        ),
    ),
    (0.6, re.compile(r"\bfirst\b|\bbefore\b|\bafter\b|\border\b|\bsequence\b|\bearlier\b|\blater\b|\bthen\b|\bfinally\b|\blast\b")),
)


def text_demand(question: str) -> float:
    """Evidence demand from the question text alone (options are not read).

    Counting and whole-video cues → 1.0; ordering cues → 0.6; a question
    with none of these (about one moment) → 0.1.

    >>> text_demand("How many times does a dog appear?")
    1.0
    >>> text_demand("Which appears first, the cat or the rocket?")
    0.6
    >>> text_demand("What colour is the cup on the table?")
    0.1
    """
    text = question.lower()
    return max([w for w, pattern in _CUES if pattern.search(text)], default=0.1)


@routers.register("text_cue")
class TextCueRouter(DemandRouter):
    """Demand from cues in the question text (counting, whole-video, ordering words)."""

    def demand(self, samples: Sequence[Sample], contexts: Mapping[str, RouteContext]) -> list[float]:
        return [text_demand(s.query.text) for s in samples]


# -- relevance statistics --------------------------------------------------------


def relevance_stats(relevance: np.ndarray, min_gap: int = 3) -> dict[str, float]:
    """Shape statistics of per-frame query relevance.

    ``entropy``: Shannon entropy of the min-max-normalised relevance taken as a
    distribution, divided by log N (1 = flat, 0 = one frame holds it all);
    ``peakedness``: (max − mean) / std (0 for a constant signal);
    ``peaks``: local maxima with normalised relevance ≥ 0.5, at least
    ``min_gap`` candidates apart (greedy from the highest).
    """
    r = np.asarray(relevance, dtype=np.float64)
    n = r.shape[0]
    if n <= 1:
        return {"entropy": 0.0, "peakedness": 0.0, "peaks": float(n)}
    lo, hi = float(r.min()), float(r.max())
    if hi - lo <= 1e-12:
        return {"entropy": 1.0, "peakedness": 0.0, "peaks": 0.0}
    z = (r - lo) / (hi - lo)
    p = z / z.sum()
    nz = p[p > 0]
    entropy = float(-(nz * np.log(nz)).sum() / math.log(n))
    peakedness = float((r.max() - r.mean()) / r.std())
    left = np.concatenate([[-np.inf], z[:-1]])
    right = np.concatenate([z[1:], [-np.inf]])
    candidates = np.flatnonzero((z >= left) & (z >= right) & (z >= 0.5))
    kept: list[int] = []
    for i in candidates[np.argsort(-z[candidates], kind="stable")]:
        if all(abs(int(i) - j) >= min_gap for j in kept):
            kept.append(int(i))
    return {"entropy": entropy, "peakedness": peakedness, "peaks": float(len(kept))}


def relevance_demand(relevance: np.ndarray) -> float:
    """Demand in [0, 1] from relevance shape: flat or many-peaked → high, one sharp peak → low.

    The mean of three terms: the normalised entropy; ``min(1, (peaks − 1) / 3)``;
    and ``1 − min(1, peakedness / 6)``.
    """
    st = relevance_stats(relevance)
    terms = [st["entropy"], min(1.0, max(0.0, st["peaks"] - 1.0) / 3.0), 1.0 - min(1.0, st["peakedness"] / 6.0)]
    return float(np.clip(np.mean(terms), 0.0, 1.0))


@routers.register("relevance_shape")
class RelevanceShapeRouter(DemandRouter):
    """Demand from the shape of query-to-frame relevance (entropy, peakedness, peak count)."""

    needs = frozenset({"relevance"})

    def demand(self, samples: Sequence[Sample], contexts: Mapping[str, RouteContext]) -> list[float]:
        out = []
        for s in samples:
            ctx = contexts.get(s.id)
            feats = ctx.features if ctx else None
            if feats is None or (feats.scores is None and (feats.embeddings is None or feats.text is None)):
                out.append(0.5)  # nothing known: neutral demand
            else:
                out.append(relevance_demand(feats.relevance()))
        return out


def duration_demand(durations: Sequence[float | None]) -> list[float]:
    """log-duration, min-max normalised over the run's samples (unknown → 0.5)."""
    known = [math.log1p(d) for d in durations if d is not None and d > 0]
    if not known or max(known) - min(known) < 1e-9:
        return [0.5] * len(durations)
    lo, hi = min(known), max(known)
    return [0.5 if d is None or d <= 0 else (math.log1p(d) - lo) / (hi - lo) for d in durations]


@routers.register("hybrid")
class HybridRouter(DemandRouter):
    """Mean of text-cue, relevance-shape and duration demand (weights configurable)."""

    param_ranges = {"weights": Range(ge=0)}

    needs = frozenset({"relevance"})

    def __init__(self, budgets: Sequence[int] = DEFAULT_BUDGETS, split: float = 0.5, floor: float = 0.1, weights: Sequence[float] = (1.0, 1.0, 0.5)) -> None:
        super().__init__(budgets, split, floor)
        self.weights = tuple(float(w) for w in weights)

    def demand(self, samples: Sequence[Sample], contexts: Mapping[str, RouteContext]) -> list[float]:
        text = TextCueRouter().demand(samples, contexts)
        rel = RelevanceShapeRouter().demand(samples, contexts)
        dur = duration_demand([contexts[s.id].duration if s.id in contexts else None for s in samples])
        w = np.asarray(self.weights)
        return [float(np.dot(w, [a, b, c]) / w.sum()) for a, b, c in zip(text, rel, dur)]
