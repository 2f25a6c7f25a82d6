"""The routing interface: per-sample budgets (and policies) at a fixed mean budget.

A router sees all samples of a run before any selection (and, if it declares
``needs``, their features) and returns a :class:`RouteSet` assigning each
sample a budget ``k_i`` from the allowed set and a selector from the bank,
with ``mean(k_i)`` equal to the mean budget exactly.

Routers that estimate *evidence demand* subclass :class:`DemandRouter`: they
compute one demand score per sample from what is known before answering
(question text, relevance statistics, duration) and hand the scores to the
shared allocation rule :func:`frameselect.routing.allocate.allocate_budgets`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import ClassVar

from frameselect.parts import Part
from frameselect.selectors.base import Selector
from frameselect.types import Features, Sample

__all__ = ["Route", "RouteSet", "Router", "RouteContext", "DEFAULT_BUDGETS"]

#: the default set of allowed per-sample budgets
DEFAULT_BUDGETS: tuple[int, ...] = (4, 8, 16, 32, 64)


@dataclass(frozen=True)
class RouteContext:
    """What a router may know about one sample before answering."""

    features: Features | None = None
    duration: float | None = None
    n_candidates: int | None = None


@dataclass(frozen=True)
class Route:
    sample_id: str
    k: int
    selector: Selector
    demand: float = 0.0


@dataclass(frozen=True)
class RouteSet:
    routes: Mapping[str, Route] = field(default_factory=dict)

    def budget(self, sample_id: str) -> int:
        return self.routes[sample_id].k

    def selector(self, sample_id: str) -> Selector:
        return self.routes[sample_id].selector

    def policy_name(self, sample_id: str) -> str:
        return self.routes[sample_id].selector.name

    @property
    def mean_budget(self) -> float:
        ks = [r.k for r in self.routes.values()]
        return sum(ks) / len(ks) if ks else 0.0


class Router(Part):
    """Base class of budget routers. ``needs``: the features it reads from each sample's context."""

    kind: ClassVar[str] = "routers"
    needs: ClassVar[frozenset[str]] = frozenset()

    def allocate(self, samples: Sequence[Sample], contexts: Mapping[str, RouteContext], mean_budget: int, bank: Sequence[Selector]) -> RouteSet:
        raise NotImplementedError
