"""Built-in selectors. Every public module in this package registers its parts; the registry imports them on first use,
so importing this package (or its base classes) loads none of them."""

from frameselect.registry import selectors as registry
from frameselect.selectors.base import Selector, fill_to_k

#: the registry's API, so ``frameselect.selectors.names()`` reads naturally
register, get, create, names = registry.register, registry.get, registry.create, registry.names

__all__ = ["registry", "register", "get", "create", "names", "Selector", "fill_to_k"]
