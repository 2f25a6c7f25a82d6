"""Built-in encoders. Every module in this package registers its parts on import."""

from frameselect._autoload import import_submodules
from frameselect.encoders.base import Encoder, l2_normalize

import_submodules(__name__, __path__)

__all__ = ["Encoder", "l2_normalize"]
