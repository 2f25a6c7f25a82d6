"""Import every module of a package so built-in parts register themselves."""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Iterable


def import_submodules(package: str, path: Iterable[str]) -> None:
    """Import every public module of ``package`` found on ``path`` (a name starting with ``_`` is a helper, left out)."""
    for info in sorted(pkgutil.iter_modules(list(path)), key=lambda m: m.name):
        if not info.name.startswith("_"):
            importlib.import_module(f"{package}.{info.name}")
