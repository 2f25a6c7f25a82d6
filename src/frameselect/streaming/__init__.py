"""Built-in streaming selectors. Every public module in this package registers its parts; the registry imports them on first
use, so importing this package (or its base classes) loads none of them."""

from frameselect.registry import streaming as registry
from frameselect.streaming.base import HeldFrames, StreamingSelector, StreamOrderError, StreamSelection, StreamStateError

#: the registry's API, so ``frameselect.streaming.names()`` reads naturally
register, get, create, names = registry.register, registry.get, registry.create, registry.names

__all__ = ["registry", "register", "get", "create", "names", "HeldFrames", "StreamingSelector", "StreamOrderError", "StreamSelection", "StreamStateError"]
