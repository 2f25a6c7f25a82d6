"""Built-in datasets. Every module in this package registers its parts on import."""

from frameselect._autoload import import_submodules
from frameselect.datasets.base import Dataset, InMemoryDataset

import_submodules(__name__, __path__)

__all__ = ["Dataset", "InMemoryDataset"]
