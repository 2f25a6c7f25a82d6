"""Deprecated: the routing study is now :mod:`frameselect.routing.study` (it runs experiments).

Kept for one release; the registry does not import it (``DEPRECATED_MODULES``
in :mod:`frameselect.routing`).
"""

import warnings

from frameselect.routing.study import RoutingComparison, compare_routing, render_routing, routing_study, routing_table

__all__ = ["RoutingComparison", "compare_routing", "routing_table", "render_routing", "routing_study"]

warnings.warn(
    "frameselect.routing.report is now frameselect.routing.study; import routing_study and compare_routing from there", DeprecationWarning, stacklevel=2
)
