"""Built-in routing. Every module in this package registers its parts on import."""

from frameselect._autoload import import_submodules
from frameselect.routing.base import Route, RouteSet, Router

import_submodules(__name__, __path__)

__all__ = ["Route", "RouteSet", "Router"]
