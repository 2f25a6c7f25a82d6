"""Stable fingerprints of parts and configurations.

fingerprint of a part = hash of (kind, name, parameters, library version).
Parameters are serialised canonically (sorted keys, floats by ``repr``), so
equal configurations hash equal across processes and machines.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from collections.abc import Mapping
from typing import Any

import numpy as np

from frameselect._version import __version__

__all__ = ["canonical", "fingerprint", "part_config", "json_value", "hash_bytes"]


def canonical(value: Any) -> Any:
    """A JSON-serialisable, order-independent form of ``value``."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {
            "__type__": type(value).__name__,
            **{f.name: canonical(getattr(value, f.name)) for f in dataclasses.fields(value) if f.init and not f.name.startswith("_")},
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
        return repr(float(value))
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


def json_value(value: Any) -> Any:
    """``value`` as plain JSON (numbers stay numbers); what JSON cannot hold takes its canonical form.

    ``canonical(json_value(v)) == canonical(v)``, so fingerprints do not change.
    """
    if isinstance(value, (bool, str)) or value is None:
        return value
    if isinstance(value, (int, np.integer)):
        return int(value)
    if isinstance(value, (float, np.floating)):
        return float(value)
    if isinstance(value, Mapping):
        return {str(k): json_value(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [json_value(v) for v in value]
    return canonical(value)


def part_config(kind: str, part: Any) -> dict[str, Any]:
    """The full configuration of a part: its kind, registered name and parameters (as JSON values)."""
    name = getattr(part, "registered_name", None) or getattr(type(part), "registered_name", None) or type(part).__name__
    params: Any
    if dataclasses.is_dataclass(part) and not isinstance(part, type):
        params = {f.name: json_value(getattr(part, f.name)) for f in dataclasses.fields(part) if f.init and not f.name.startswith("_")}
    elif hasattr(part, "params"):
        params = json_value(part.params())
    else:
        params = {}
    return {"kind": kind, "name": name, "params": params}
