"""Built-in routing. Every public module in this package registers its parts; the registry imports them on first use,
so importing this package (or its base classes) loads none of them."""

from frameselect.registry import routers as registry
from frameselect.routing.base import Route, Router, RouteSet

#: the registry's API, so ``frameselect.routing.names()`` reads naturally
register, get, create, names = registry.register, registry.get, registry.create, registry.names

__all__ = ["registry", "register", "get", "create", "names", "Route", "RouteSet", "Router"]
