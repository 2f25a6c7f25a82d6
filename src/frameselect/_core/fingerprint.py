"""Stable fingerprints of parts and configurations.

fingerprint of a part = hash of (kind, name, parameters, library version).
Parameters are serialised canonically (sorted keys, floats by their shortest repr), so
equal configurations hash equal across processes and machines. The canonical
form exists only inside :func:`fingerprint`; stored configurations hold real
JSON values (see :mod:`frameselect.parts`).
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from collections.abc import Mapping
from typing import Any

import numpy as np

from frameselect._version import __version__

__all__ = ["canonical", "fingerprint", "hash_bytes"]


def _empty(value: Any) -> bool:
    return value is None or (isinstance(value, (tuple, list)) and not value)


def canonical(value: Any) -> Any:
    """A JSON-serialisable, order-independent form of ``value``."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {
            "__type__": type(value).__name__,
            **{
                f.name: canonical(getattr(value, f.name))
                for f in dataclasses.fields(value)
                # a field marked so (Sample.videos, Sample.asked_at) is left out while empty (None or ()):
                # older values keep their fingerprints, and a time of 0.0 still counts
                if f.init and not f.name.startswith("_") and not (f.metadata.get("fingerprint_omit_empty") and _empty(getattr(value, f.name)))
            },
        }
    if isinstance(value, Mapping):
        return {str(k): canonical(v) for k, v in sorted(value.items(), key=lambda kv: str(kv[0]))}
    if isinstance(value, (list, tuple)):
        return [canonical(v) for v in value]
    if isinstance(value, (set, frozenset)):
        return sorted(canonical(v) for v in value)
    if isinstance(value, np.ndarray):
        return {"__ndarray__": hash_bytes(np.ascontiguousarray(value).tobytes()), "shape": list(value.shape), "dtype": str(value.dtype)}
    if isinstance(value, (np.integer,)):
        return int(value)
    if isinstance(value, (np.floating, float)):
        return float(value)  # JSON writes a float by its repr: exact, and never equal to a string or an int
    if isinstance(value, (str, int, bool)) or value is None:
        return value
    return repr(value)


def hash_bytes(data: bytes, digest_size: int = 16) -> str:
    return hashlib.blake2b(data, digest_size=digest_size).hexdigest()


def fingerprint(value: Any, *, with_version: bool = True) -> str:
    payload: Any = {"value": canonical(value)}
    if with_version:
        payload["version"] = __version__
    return hash_bytes(json.dumps(payload, sort_keys=True, separators=(",", ":")).encode())
