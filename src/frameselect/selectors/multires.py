"""Mixed resolution in one selection: the most relevant frames sharp, the rest of the budget on small context frames.

A VLM pays for visual tokens, and a frame at a quarter of its size costs
about a sixteenth of the tokens (``docs/tokens.md``). :class:`MultiRes` wraps
any selector: the inner selector chooses the frames, the ``high`` most
relevant of them (by the encoder's query relevance) are sent at
``high_scale`` of the decoded size and every other one at ``low_scale``. At a
budget of ``k`` frames it keeps the inner selection's ``k`` frames; at a
token budget (``evaluate(k=Tokens(N))``, policy ``fixed_res``) the run plans the
count from :meth:`MultiRes.frame_scales`: ``high`` frames at the high size
first, then as many low-size context frames as the rest of ``N`` pays for
(:func:`frameselect._engine.token_budget.plan_mixed`).

Each frame's scale is carried by the selection (``Selection.scales``); the
run turns scales into sizes (sides floored, then snapped to the cost model's
own resize where one is known) and prices them exactly
(:meth:`frameselect.tokens.TokenModel.selection_tokens`).
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from frameselect.parts import Range
from frameselect.registry import selectors
from frameselect.selectors.base import Selector
from frameselect.types import CandidatePool, Features, Query, Selection

__all__ = ["MultiRes", "tiered_scales", "scales_by_rank"]


def tiered_scales(n: int, tiers: Sequence[tuple[int, float]], rest: float) -> tuple[float, ...]:
    """The scales of ``n`` frames by rank: each tier's ``count`` frames at its scale, in order, then ``rest`` for the others.

    >>> tiered_scales(5, [(2, 1.0)], 0.25)
    (1.0, 1.0, 0.25, 0.25, 0.25)
    >>> tiered_scales(3, [(1, 0.5), (1, 0.25)], 0.125)
    (0.5, 0.25, 0.125)
    """
    out: list[float] = []
    for count, scale in tiers:
        out.extend([float(scale)] * max(0, min(int(count), n - len(out))))
    out.extend([float(rest)] * (n - len(out)))
    return tuple(out)


def scales_by_rank(indices: Sequence[int], ranking: Sequence[int], by_rank: Sequence[float]) -> tuple[float, ...]:
    """Each selected frame's scale (in the order of ``indices``): the ``r``-th frame of ``ranking`` gets ``by_rank[r]``.

    ``ranking`` orders the selected frames, most relevant first.

    >>> scales_by_rank([2, 5, 9], [5, 9, 2], [1.0, 0.5, 0.25])
    (0.25, 1.0, 0.5)
    """
    rank = {int(i): r for r, i in enumerate(ranking)}
    return tuple(float(by_rank[rank[int(i)]]) for i in indices)


@selectors.register("multires")
@dataclass(frozen=True)
class MultiRes(Selector):
    """Any selector's frames at two resolutions: the ``high`` most query-relevant sharp, the others small.

    ``selector`` names the registered selector that chooses the frames (with
    its default parameters); ``high`` frames (the inner selection's most
    relevant by :meth:`Features.relevance`, earlier frame first on ties) are
    sent at ``high_scale`` of the decoded size, the rest at ``low_scale``.
    Needs query relevance besides what the inner selector needs.
    """

    param_ranges = {"high": Range(ge=0, integer=True), "high_scale": Range(gt=0, le=1), "low_scale": Range(gt=0, le=1)}

    selector: str = "uniform"
    high: int = 4
    high_scale: float = 1.0
    low_scale: float = 0.25

    def __post_init__(self) -> None:
        if not isinstance(self.selector, str) or self.selector == "multires":
            raise ValueError(f"multires needs the name of another registered selector as selector=, got {self.selector!r}")
        if self.selector not in selectors.names():
            raise ValueError(f"multires: unknown selector {self.selector!r}; known: {', '.join(sorted(selectors.names()))}")
        if not 0 < self.low_scale <= self.high_scale <= 1:
            raise ValueError(f"multires needs 0 < low_scale <= high_scale <= 1, got low_scale={self.low_scale}, high_scale={self.high_scale}")

    @functools.cached_property
    def inner(self) -> Selector:
        """The selector that chooses the frames."""
        return selectors.create(self.selector)

    @property
    def needs(self) -> frozenset[str]:  # type: ignore[override]
        return frozenset(self.inner.needs) | {"relevance"}

    @property
    def requires_weights(self) -> bool:
        return self.inner.requires_weights

    def frame_scales(self, n: int) -> tuple[float, ...]:
        return tiered_scales(n, [(self.high, self.high_scale)], self.low_scale)

    def select(
        self,
        pool: CandidatePool,
        query: Query | None,
        k: int,
        features: Features | None = None,
        *,
        seed: int = 0,
        rng: np.random.Generator | None = None,
    ) -> Selection:
        features = features if features is not None else Features()
        self._check_features(features, len(pool))
        chosen = self.inner.select(pool, query, k, features, seed=seed, rng=rng)
        relevance = np.asarray(features.relevance(), dtype=np.float64)
        ranking = sorted(chosen.indices, key=lambda i: (-relevance[i], i))
        scales = scales_by_rank(chosen.indices, ranking, self.frame_scales(len(chosen.indices)))
        return dataclasses.replace(chosen, selector=self.name, scales=scales)

    def _select(self, pool: CandidatePool, query: Query | None, k: int, features: Features, rng: np.random.Generator) -> list[int]:
        return list(self.inner.select(pool, query, k, features, rng=rng).indices)
