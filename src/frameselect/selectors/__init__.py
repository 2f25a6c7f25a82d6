"""Built-in selectors. Every module in this package registers its parts on import."""

from frameselect._autoload import import_submodules
from frameselect.registry import selectors as registry
from frameselect.selectors.base import Selector, fill_to_k

#: the registry's API, so ``frameselect.selectors.names()`` reads naturally
register, get, create, names = registry.register, registry.get, registry.create, registry.names

import_submodules(__name__, __path__)

__all__ = ["registry", "register", "get", "create", "names", "Selector", "fill_to_k"]
