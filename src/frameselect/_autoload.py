"""Import every module of a package so built-in parts register themselves."""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Iterable


def import_submodules(package: str, path: Iterable[str], skip: Iterable[str] = ()) -> None:
    """Import every public module of ``package`` found on ``path``, but those named in ``skip`` (old paths kept as shims)."""
    skipped = frozenset(skip)
    for info in sorted(pkgutil.iter_modules(list(path)), key=lambda m: m.name):
        if not info.name.startswith("_") and info.name not in skipped:
            importlib.import_module(f"{package}.{info.name}")
