"""Built-in routing. Every module in this package registers its parts on import."""

from frameselect._autoload import import_submodules
from frameselect.registry import routers as registry
from frameselect.routing.base import Route, Router, RouteSet

#: the registry's API, so ``frameselect.routing.names()`` reads naturally
register, get, create, names = registry.register, registry.get, registry.create, registry.names

import_submodules(__name__, __path__)

__all__ = ["registry", "register", "get", "create", "names", "Route", "RouteSet", "Router"]
