"""Built-in evaluators. Every module in this package registers its parts on import."""

from frameselect._autoload import import_submodules
from frameselect.evaluators.base import Evaluator, mean_of

import_submodules(__name__, __path__)

__all__ = ["Evaluator", "mean_of"]
