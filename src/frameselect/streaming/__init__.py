"""Built-in streaming selectors. Every module in this package registers its parts on import."""

from frameselect._autoload import import_submodules
from frameselect.registry import streaming as registry
from frameselect.streaming.base import HeldFrames, StreamingSelector, StreamOrderError, StreamSelection, StreamStateError

#: the registry's API, so ``frameselect.streaming.names()`` reads naturally
register, get, create, names = registry.register, registry.get, registry.create, registry.names

import_submodules(__name__, __path__)

__all__ = ["registry", "register", "get", "create", "names", "HeldFrames", "StreamingSelector", "StreamOrderError", "StreamSelection", "StreamStateError"]
