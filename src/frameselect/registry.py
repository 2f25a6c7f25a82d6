"""One registry mechanism for every kind of part.

``Registry.register(name)`` is a decorator; a duplicate name is an error.
``get(name)`` raises :class:`UnknownNameError` listing the known names.
Third-party packages add parts through entry points in the group
``frameselect.<kind>`` (for example ``frameselect.selectors``); they are
loaded the first time a registry is asked for its names or for a name it
does not hold among the built-ins.

Listing names is cheap: a registry that knows its built-in names (the
static index in :mod:`frameselect._builtin_names`) lists them without
importing the built-in modules; those load on the first ``get``, and
before any plug-in loads, so plug-ins always see (and collide with) the
built-ins exactly as when everything is imported up front.
"""

from __future__ import annotations

import fnmatch
import importlib
from collections.abc import Callable, Iterable, Iterator
from typing import Any, Generic, TypeVar

from frameselect._builtin_names import BUILTIN_NAMES
from frameselect.errors import DuplicateNameError, UnknownNameError

__all__ = ["Registry", "REGISTRIES", "get_registry"]

T = TypeVar("T")


class Registry(Generic[T]):
    """Names → factories (classes or functions) for one kind of part."""

    def __init__(self, kind: str, builtin_modules: tuple[str, ...] = (), builtin_names: Iterable[str] | None = None) -> None:
        self.kind = kind
        self.group = f"frameselect.{kind}"
        self._builtin_modules = builtin_modules
        #: names the built-in modules register, so listing need not import them (None: import to list)
        self._builtin_names = None if builtin_names is None else frozenset(builtin_names)
        self._entries: dict[str, Callable[..., T]] = {}
        self._builtins_loaded = False
        self._plugins_loaded = False
        self.plugin_errors: dict[str, str] = {}

    # -- registration -------------------------------------------------
    def register(self, name: str) -> Callable[[Callable[..., T]], Callable[..., T]]:
        def decorator(factory: Callable[..., T]) -> Callable[..., T]:
            self.add(name, factory)
            return factory

        return decorator

    def add(self, name: str, factory: Callable[..., T]) -> None:
        if not name or name != name.strip():
            raise ValueError(f"invalid {self.kind} name {name!r}")
        existing = self._entries.get(name)
        if existing is not None and existing is not factory:
            raise DuplicateNameError(f"{self.kind[:-1] if self.kind.endswith('s') else self.kind} {name!r} is already registered (by {_qualname(existing)})")
        self._entries[name] = factory
        try:
            factory.registered_name = name  # type: ignore[attr-defined]
        except (AttributeError, TypeError):
            pass

    # -- loading ------------------------------------------------------
    def _load_builtins(self) -> None:
        if self._builtins_loaded:
            return
        self._builtins_loaded = True
        for module in self._builtin_modules:
            importlib.import_module(module)

    def _load_plugins(self) -> None:
        if self._plugins_loaded:
            return
        self._plugins_loaded = True
        from importlib.metadata import entry_points  # ~20 ms: only when plug-ins are looked for

        found = list(entry_points(group=self.group))
        if found:  # plug-ins load after the built-ins, whose names win
            self._load_builtins()
        for ep in found:
            if ep.name in self._entries:
                continue
            try:
                obj = ep.load()
            except Exception as exc:  # a broken plug-in must not break the library
                self.plugin_errors[ep.name] = f"{type(exc).__name__}: {exc}"
                continue
            if ep.name not in self._entries:
                self.add(ep.name, obj)

    # -- lookup ---------------------------------------------------------
    def get(self, name: str) -> Callable[..., T]:
        self._load_builtins()
        if name not in self._entries:
            self._load_plugins()
        try:
            return self._entries[name]
        except KeyError:
            known = ", ".join(self.names()) or "(none)"
            hint = f" (plug-in failed to load: {self.plugin_errors[name]})" if name in self.plugin_errors else ""
            raise UnknownNameError(f"unknown {self.kind[:-1] if self.kind.endswith('s') else self.kind} {name!r}{hint}; known: {known}") from None

    def create(self, name: str, **params: Any) -> T:
        return self.get(name)(**params)

    def names(self, pattern: str = "*") -> list[str]:
        if self._builtin_names is None:
            self._load_builtins()
        self._load_plugins()
        known = set(self._entries)
        if not self._builtins_loaded and self._builtin_names is not None:
            known |= self._builtin_names
        return sorted(n for n in known if fnmatch.fnmatchcase(n, pattern))

    def __contains__(self, name: object) -> bool:
        if not isinstance(name, str):
            return False
        try:
            self.get(name)
        except UnknownNameError:
            return False
        return True

    def __iter__(self) -> Iterator[str]:
        return iter(self.names())

    def __len__(self) -> int:
        return len(self.names())

    def __repr__(self) -> str:
        return f"Registry({self.kind!r}, {len(self._entries)} entries)"


def _qualname(obj: object) -> str:
    module = getattr(obj, "__module__", "?")
    return f"{module}.{getattr(obj, '__qualname__', repr(obj))}"


selectors: Registry[Any] = Registry("selectors", ("frameselect.selectors",), BUILTIN_NAMES["selectors"])
encoders: Registry[Any] = Registry("encoders", ("frameselect.encoders",), BUILTIN_NAMES["encoders"])
evaluators: Registry[Any] = Registry("evaluators", ("frameselect.evaluators",), BUILTIN_NAMES["evaluators"])
datasets: Registry[Any] = Registry("datasets", ("frameselect.datasets",), BUILTIN_NAMES["datasets"])
answerers: Registry[Any] = Registry("answerers", ("frameselect.answerers",), BUILTIN_NAMES["answerers"])
routers: Registry[Any] = Registry("routers", ("frameselect.routing",), BUILTIN_NAMES["routers"])

REGISTRIES: dict[str, Registry[Any]] = {r.kind: r for r in (selectors, encoders, evaluators, datasets, answerers, routers)}


def get_registry(kind: str) -> Registry[Any]:
    """The registry of one kind of part: selectors, encoders, evaluators, ..."""
    try:
        return REGISTRIES[kind]
    except KeyError:
        raise UnknownNameError(f"unknown kind of part {kind!r}; known: {', '.join(REGISTRIES)}") from None
