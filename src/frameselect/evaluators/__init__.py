"""Built-in evaluators. Every module in this package registers its parts on import."""

from frameselect._autoload import import_submodules
from frameselect.evaluators.base import Evaluator, mean_of
from frameselect.registry import evaluators as registry

#: the registry's API, so ``frameselect.evaluators.names()`` reads naturally
register, get, create, names = registry.register, registry.get, registry.create, registry.names

import_submodules(__name__, __path__)

__all__ = ["registry", "register", "get", "create", "names", "Evaluator", "mean_of"]
