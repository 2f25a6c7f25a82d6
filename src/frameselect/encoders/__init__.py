"""Built-in encoders. Every public module in this package registers its parts; the registry imports them on first use,
so importing this package (or its base classes) loads none of them."""

from frameselect.encoders.base import Encoder, l2_normalize
from frameselect.registry import encoders as registry

#: the registry's API, so ``frameselect.encoders.names()`` reads naturally
register, get, create, names = registry.register, registry.get, registry.create, registry.names

__all__ = ["registry", "register", "get", "create", "names", "Encoder", "l2_normalize"]
