"""Built-in encoders. Every module in this package registers its parts on import."""

from frameselect._autoload import import_submodules
from frameselect.encoders.base import Encoder, l2_normalize
from frameselect.registry import encoders as registry

#: the registry's API, so ``frameselect.encoders.names()`` reads naturally
register, get, create, names = registry.register, registry.get, registry.create, registry.names

import_submodules(__name__, __path__)

__all__ = ["registry", "register", "get", "create", "names", "Encoder", "l2_normalize"]
