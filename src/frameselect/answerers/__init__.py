"""Built-in answerers. Every module in this package registers its parts on import."""

from frameselect._autoload import import_submodules
from frameselect.answerers.base import Answerer, AnswerRequest
from frameselect.registry import answerers as registry

#: the registry's API, so ``frameselect.answerers.names()`` reads naturally
register, get, create, names = registry.register, registry.get, registry.create, registry.names

import_submodules(__name__, __path__)

__all__ = ["registry", "register", "get", "create", "names", "Answerer", "AnswerRequest"]
