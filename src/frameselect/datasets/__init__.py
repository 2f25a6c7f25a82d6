"""Built-in datasets. Every module in this package registers its parts on import."""

from frameselect._autoload import import_submodules
from frameselect.datasets.base import Dataset, InMemoryDataset
from frameselect.registry import datasets as registry

#: the registry's API, so ``frameselect.datasets.names()`` reads naturally
register, get, create, names = registry.register, registry.get, registry.create, registry.names

import_submodules(__name__, __path__)

__all__ = ["registry", "register", "get", "create", "names", "Dataset", "InMemoryDataset"]
