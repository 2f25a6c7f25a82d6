"""DIG's query-type rule as a router: global questions to the first policy, local ones to the second.

Li et al., DIG (CVPR 2026), github.com/Jialuo-Li/DIG ``pipeline/query_identification.py``
classifies each question with an LLM; here the offline rule
:func:`frameselect.selectors.dig.dig_query_type` written from that prompt's criteria.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from frameselect.registry import routers
from frameselect.routing.base import Route, RouteContext, Router, RouteSet
from frameselect.selectors.base import Selector
from frameselect.selectors.dig import dig_query_type
from frameselect.types import Sample

__all__ = ["QueryTypeRouter"]


@routers.register("dig_query_type")
class QueryTypeRouter(Router):
    """Every sample keeps the mean budget; a global question (demand 1.0) gets ``bank[0]``, a local one (0.0) ``bank[1]``.

    Put the coverage policy first (``uniform``, as DIG does) and the
    query-aware one second (``dig``, ``topk``, ...); with one selector, every
    sample gets it.
    """

    def allocate(self, samples: Sequence[Sample], contexts: Mapping[str, RouteContext], mean_budget: int, bank: Sequence[Selector]) -> RouteSet:
        routes = {}
        for s in samples:
            demand = 1.0 if dig_query_type(s.query.text) == "global" else 0.0
            policy = bank[0] if len(bank) == 1 or demand >= 0.5 else bank[1]
            routes[s.id] = Route(s.id, int(mean_budget), policy, demand)
        return RouteSet(routes)
