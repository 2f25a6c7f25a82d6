"""How parts travel to workers: one place decides (cloudpickle where installed, else pickle)."""

from __future__ import annotations

import pickle
from typing import Any

__all__ = ["ship", "unship", "cloudpickle_module"]


def cloudpickle_module() -> Any:
    """cloudpickle (or the copy inside Ray), or None where neither is installed."""
    try:
        import cloudpickle
    except ImportError:
        try:
            from ray import cloudpickle
        except ImportError:
            return None
    return cloudpickle


def ship(obj: Any) -> bytes:
    """Parts (a plan, a prepare step, an encoder) as bytes for a worker.

    cloudpickle (Ray brings a copy) where available, so parts defined in a
    script or notebook travel by value; else the standard pickle (parts must
    then be importable by the workers). A frame source's decode counter and
    frame memo travel empty (their own ``__reduce__``): the receiving side
    binds its own.
    """
    module = cloudpickle_module()
    if module is None:
        return pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL)
    return bytes(module.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL))


def unship(blob: bytes) -> Any:
    """What :func:`ship` packed."""
    return pickle.loads(blob)
