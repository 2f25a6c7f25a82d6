"""Built-in selectors. Every module in this package registers its parts on import."""

from frameselect._autoload import import_submodules
from frameselect.selectors.base import Selector, fill_to_k

import_submodules(__name__, __path__)

__all__ = ["Selector", "fill_to_k"]
