"""Built-in answerers. Every module in this package registers its parts on import."""

from frameselect._autoload import import_submodules
from frameselect.answerers.base import Answerer, AnswerRequest

import_submodules(__name__, __path__)

__all__ = ["Answerer", "AnswerRequest"]
