"""Built-in evaluators. Every public module in this package registers its parts; the registry imports them on first use,
so importing this package (or its base classes) loads none of them."""

from frameselect.evaluators.base import Evaluator, mean_of
from frameselect.registry import evaluators as registry

#: the registry's API, so ``frameselect.evaluators.names()`` reads naturally
register, get, create, names = registry.register, registry.get, registry.create, registry.names

__all__ = ["registry", "register", "get", "create", "names", "Evaluator", "mean_of"]
