"""One registry mechanism for every kind of part.

``Registry.register(name)`` is a decorator; a duplicate name is an error.
``get(name)`` raises :class:`UnknownNameError` listing the known names;
``create(name, **params)`` raises :class:`PartConfigError` naming the
parameters the part has when given one it does not have.

Third-party packages add parts through entry points in the group
``frameselect.<kind>`` (for example ``frameselect.selectors``). The first
time a registry is used it reads its group's entry points (metadata only): a
plug-in name that collides with a built-in, with a part registered in this
process, or with another plug-in is a :class:`DuplicateNameError` naming
both. Plug-ins are imported the first time a registry lists its names or is
asked for a name it does not hold among the built-ins.

Listing names is cheap: a registry that knows its built-in names (the
static index in :mod:`frameselect._core.builtin_names`) lists them without
importing the built-in modules, unless plug-ins are installed; the modules
load on the first ``get``, and always before any plug-in loads.
"""

from __future__ import annotations

import difflib
import fnmatch
import importlib
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from frameselect._core.autoload import import_submodules
from frameselect._core.builtin_names import BUILTIN_NAMES
from frameselect.errors import DuplicateNameError, PartConfigError, UnknownNameError
from frameselect.parts import Part, objects_in, parameter_names

if TYPE_CHECKING:
    from importlib.metadata import EntryPoint

    from frameselect.answerers.base import Answerer
    from frameselect.datasets.base import Dataset
    from frameselect.encoders.base import Encoder
    from frameselect.evaluators.base import Evaluator
    from frameselect.routing.base import Router
    from frameselect.selectors.base import Selector
    from frameselect.streaming.base import StreamingSelector

__all__ = ["Registry", "REGISTRIES", "get_registry", "did_you_mean", "revive", "registered_by_modules"]

T = TypeVar("T")


class Registry(Generic[T]):
    """Names → factories (classes or functions) for one kind of part."""

    def __init__(self, kind: str, builtin_modules: tuple[str, ...] = (), builtin_names: Iterable[str] | None = None, *, singular: str | None = None) -> None:
        self.kind = kind
        self._singular = singular
        self.group = f"frameselect.{kind}"
        #: packages whose every public module registers built-in parts (imported on first use, not by the package)
        self._builtin_modules = builtin_modules
        #: names the built-in modules register, so listing need not import them (None: import to list)
        self._builtin_names = None if builtin_names is None else frozenset(builtin_names)
        self._entries: dict[str, Callable[..., T]] = {}
        self._builtins_loaded = False
        self._plugins: dict[str, EntryPoint] | None = None
        self._plugins_loaded = False
        self.plugin_errors: dict[str, str] = {}

    @property
    def singular(self) -> str:
        """``selector`` for the ``selectors`` registry (``streaming selector`` for ``streaming``)."""
        if self._singular:
            return self._singular
        return self.kind[:-1] if self.kind.endswith("s") else self.kind

    # -- registration -------------------------------------------------
    def register(self, name: str) -> Callable[[Callable[..., T]], Callable[..., T]]:
        def decorator(factory: Callable[..., T]) -> Callable[..., T]:
            self.add(name, factory)
            return factory

        return decorator

    def add(self, name: str, factory: Callable[..., T]) -> None:
        if not name or name != name.strip():
            raise ValueError(f"invalid {self.singular} name {name!r}")
        if not self._builtins_loaded and self._builtin_names is not None and name in self._builtin_names and not self._is_builtin(factory):
            self._load_builtins()  # a built-in's name taken by another part is refused now, not when the built-in loads
        existing = self._entries.get(name)
        if existing is not None and existing is not factory:
            raise DuplicateNameError(f"{self.singular} {name!r} is already registered (by {_qualname(existing)})")
        plugin = (self._plugins or {}).get(name)
        if plugin is not None and not _names(plugin, factory):
            raise DuplicateNameError(f"{self.singular} {name!r} of {_qualname(factory)} collides with the plug-in {_describe(plugin)}; choose another name")
        self._entries[name] = factory
        if isinstance(factory, type) and issubclass(factory, Part):
            factory.registered_name = name

    # -- loading ------------------------------------------------------
    def _is_builtin(self, factory: object) -> bool:
        module = str(getattr(factory, "__module__", ""))
        return any(module == p or module.startswith(p + ".") for p in self._builtin_modules)

    def _load_builtins(self) -> None:
        if self._builtins_loaded:
            return
        self._builtins_loaded = True
        for package in self._builtin_modules:
            imported = importlib.import_module(package)
            import_submodules(package, getattr(imported, "__path__", ()))

    def _scan_plugins(self) -> None:
        """Read this kind's entry points (without importing them) and refuse colliding names."""
        if self._plugins is not None:
            return
        found: dict[str, EntryPoint] = {}
        for ep in entry_points(group=self.group):
            first = found.get(ep.name)
            if first is not None and first.value != ep.value:
                raise DuplicateNameError(
                    f"{self.singular} {ep.name!r} is provided by two plug-ins: {_describe(first)} and {_describe(ep)}; uninstall one of them"
                )
            found[ep.name] = ep
        for name, ep in found.items():
            existing = self._entries.get(name)
            if existing is not None and not _names(ep, existing):
                raise DuplicateNameError(
                    f"the plug-in {_describe(ep)} registers {self.singular} {name!r}, which is already {_qualname(existing)}; rename the plug-in's entry point"
                )
        self._plugins = found

    def _load_plugin(self, name: str) -> None:
        ep = (self._plugins or {}).get(name)
        if ep is None or name in self._entries:
            return
        try:
            obj = ep.load()
        except DuplicateNameError:
            raise
        except Exception as exc:  # a broken plug-in must not break the library
            self.plugin_errors[name] = f"{type(exc).__name__}: {exc}"
            return
        if name not in self._entries:  # importing it may have registered it already
            self.add(name, obj)
        elif self._entries[name] is not obj:
            raise DuplicateNameError(
                f"the plug-in {_describe(ep)} names {_qualname(obj)}, but importing it registered {_qualname(self._entries[name])} as {self.singular} {name!r}"
            )

    def _load_plugins(self) -> None:
        self._scan_plugins()
        if self._plugins_loaded:
            return
        self._plugins_loaded = True
        if self._plugins or self._builtin_names is None:
            self._load_builtins()  # plug-ins load after the built-ins, so a clash is always seen
        for name in list(self._plugins or {}):
            self._load_plugin(name)

    # -- lookup ---------------------------------------------------------
    def get(self, name: str) -> Callable[..., T]:
        self._load_builtins()
        self._scan_plugins()  # a collision is an error every time, never a silent choice
        if name not in self._entries:
            self._load_plugin(name)
        try:
            return self._entries[name]
        except KeyError:
            names = self.names()
            known = ", ".join(names) or "(none)"
            hint = f" (plug-in failed to load: {self.plugin_errors[name]})" if name in self.plugin_errors else ""
            raise UnknownNameError(f"unknown {self.singular} {name!r}{hint}{did_you_mean(name, names)}; known: {known}") from None

    def create(self, name: str, **params: Any) -> T:
        """The part registered as ``name``, configured by ``params``."""
        factory = self.get(name)
        if isinstance(factory, type) and params:
            known = parameter_names(factory)
            unknown = sorted(set(params) - set(known))
            if unknown:
                close = "".join(did_you_mean(u, known) for u in unknown)
                raise PartConfigError(
                    f"{self.singular} {name!r} has no parameter {', '.join(map(repr, unknown))}{close}; its parameters: {', '.join(known) or 'none'}"
                )
        return factory(**params)

    def names(self, pattern: str = "*") -> list[str]:
        self._load_plugins()
        known = set(self._entries)
        if not self._builtins_loaded and self._builtin_names is not None:
            known |= self._builtin_names
        return sorted(n for n in known if fnmatch.fnmatchcase(n, pattern))

    def broken_plugins(self) -> dict[str, str]:
        """Plug-ins of this kind whose import failed: ``{name: "entry point: error"}`` (after loading them all)."""
        self._load_plugins()
        described = {n: _describe(ep) for n, ep in (self._plugins or {}).items()}
        return {n: f"{described.get(n, n)}: {err}" for n, err in sorted(self.plugin_errors.items())}

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


def did_you_mean(name: str, known: Iterable[str]) -> str:
    """`` (did you mean 'a' or 'b'?)`` for the names close to ``name`` (case ignored), else ""."""
    by_lower: dict[str, list[str]] = {}
    for k in known:
        by_lower.setdefault(k.lower(), []).append(k)
    close = difflib.get_close_matches(name.lower(), list(by_lower), n=3, cutoff=0.75)
    matches = [k for c in close for k in by_lower[c]]
    if not matches:
        return ""
    return " (did you mean " + " or ".join(repr(m) for m in matches) + "?)"


def revive(config: Mapping[str, Any], *, kind: str | None = None) -> Any:
    """The part a stored configuration describes, created through its registry.

    ``kind`` is needed only for configurations that do not carry one. A
    configuration holding injected objects, a name no registry holds, or
    parameters the part does not take raise :class:`PartConfigError` (an
    unknown name: :class:`~frameselect.errors.UnknownNameError`).
    """
    kind = str(config.get("kind") or kind or "")
    name = str(config.get("name") or "")
    params = dict(config.get("params") or {})
    objects = objects_in(params, "params")
    if objects:
        raise PartConfigError(
            f"{kind[:-1] if kind.endswith('s') else kind} {name!r} was given live objects ({', '.join(objects)}); it cannot be re-created from its configuration"
        )
    try:
        return get_registry(kind).create(name, **params)
    except PartConfigError:
        raise
    except TypeError as exc:
        raise PartConfigError(f"{kind[:-1]} {name!r} cannot be re-created from {params}: {exc}") from exc


def registered_by_modules() -> dict[str, tuple[str, ...]]:
    """What the built-in modules actually register (imports all of them; plug-ins are not loaded).

    :data:`frameselect._core.builtin_names.BUILTIN_NAMES` is kept equal to this by a test.
    """
    out: dict[str, tuple[str, ...]] = {}
    for kind, registry in REGISTRIES.items():
        registry._load_builtins()
        out[kind] = tuple(sorted(registry._entries))
    return out


def _qualname(obj: object) -> str:
    module = getattr(obj, "__module__", "?")
    return f"{module}.{getattr(obj, '__qualname__', repr(obj))}"


def entry_points(group: str) -> list[EntryPoint]:
    """The installed entry points of ``group`` (importlib.metadata, ~20 ms, imported once a registry is used)."""
    from importlib.metadata import entry_points as installed

    return list(installed(group=group))


def _target(obj: object) -> str:
    """``module:qualname``, as an entry point names an object."""
    return f"{getattr(obj, '__module__', '?')}:{getattr(obj, '__qualname__', '?')}"


def _names(ep: EntryPoint, obj: object) -> bool:
    """Whether the entry point names ``obj`` (by its path, else by importing it: it may be re-exported)."""
    if ep.value == _target(obj):
        return True
    try:
        return ep.load() is obj
    except Exception:
        return False


def _describe(ep: EntryPoint) -> str:
    dist = ep.dist
    where = f" from {dist.name} {dist.version}" if dist is not None else ""
    return f"{ep.name} = {ep.value!r}{where}"


selectors: Registry[Selector] = Registry("selectors", ("frameselect.selectors",), BUILTIN_NAMES["selectors"])
encoders: Registry[Encoder] = Registry("encoders", ("frameselect.encoders",), BUILTIN_NAMES["encoders"])
evaluators: Registry[Evaluator] = Registry("evaluators", ("frameselect.evaluators",), BUILTIN_NAMES["evaluators"])
datasets: Registry[Dataset] = Registry("datasets", ("frameselect.datasets",), BUILTIN_NAMES["datasets"])
answerers: Registry[Answerer] = Registry("answerers", ("frameselect.answerers",), BUILTIN_NAMES["answerers"])
routers: Registry[Router] = Registry("routers", ("frameselect.routing",), BUILTIN_NAMES["routers"])
streaming: Registry[StreamingSelector] = Registry("streaming", ("frameselect.streaming",), BUILTIN_NAMES["streaming"], singular="streaming selector")

REGISTRIES: dict[str, Registry[Any]] = {r.kind: r for r in (selectors, encoders, evaluators, datasets, answerers, routers, streaming)}


def get_registry(kind: str) -> Registry[Any]:
    """The registry of one kind of part: selectors, encoders, evaluators, ..."""
    try:
        return REGISTRIES[kind]
    except KeyError:
        raise UnknownNameError(f"unknown kind of part {kind!r}; known: {', '.join(REGISTRIES)}") from None
