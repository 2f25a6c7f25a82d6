"""Built-in answerers. Every public module in this package registers its parts; the registry imports them on first use,
so importing this package (or its base classes) loads none of them."""

from frameselect.answerers.base import Answerer, AnswerRequest
from frameselect.registry import answerers as registry

#: the registry's API, so ``frameselect.answerers.names()`` reads naturally
register, get, create, names = registry.register, registry.get, registry.create, registry.names

__all__ = ["registry", "register", "get", "create", "names", "Answerer", "AnswerRequest"]
