"""Built-in datasets. Every public module in this package registers its parts; the registry imports them on first use,
so importing this package (or its base classes) loads none of them."""

from frameselect.datasets.base import Dataset, InMemoryDataset
from frameselect.registry import datasets as registry

#: the registry's API, so ``frameselect.datasets.names()`` reads naturally
register, get, create, names = registry.register, registry.get, registry.create, registry.names

__all__ = ["registry", "register", "get", "create", "names", "Dataset", "InMemoryDataset"]
