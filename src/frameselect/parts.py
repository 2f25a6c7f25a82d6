"""What a part is: its kind, its registered name and its configuration.

Every part (selector, encoder, evaluator, dataset, answerer, router) is
configured by explicit keyword arguments, as scikit-learn estimators are.
Its configuration is read mechanically, never written by hand: the fields of
a dataclass, or the constructor's parameters (following ``**kwargs`` up the
class hierarchy) read back from the attributes of the same names.

One shape describes a part everywhere (stored runs, fingerprints, replay,
tables)::

    {"kind": "selectors", "name": "mmr", "params": {"lam": 0.7, ...}}

with real JSON values: numbers stay numbers, paths become strings, tuples
lists. Parts whose outputs also depend on something fixed only when they load
(a hub revision's commit, the dtype, a weights file) add ``"resolved"``.
:func:`frameselect.registry.revive` re-creates a part from that shape; the canonical string form
of values exists only inside :func:`frameselect._core.fingerprint.fingerprint`.

A part declares, on its class:

- ``secret_params``: constructor arguments that never enter the configuration,
  the ``id`` or a log (credentials; they come from the environment on revival);
- ``identity_exclude``: configuration that does not change outputs (batch
  size, device, concurrency, timeouts), left out of the ``id`` that keys
  feature and answer caches;
- ``live_params``: constructor arguments that are live data (a sample list),
  recorded only as such;
- :meth:`Part.resolved_identity`: the values fixed at load time;
- ``param_ranges``: the :class:`Range` of every numeric parameter, checked by
  :func:`check_params` before a run starts (NaN and infinities are refused
  unless a range allows them).

A constructor argument that is a live object (an injected model, tokenizer or
sample list) is recorded as ``{"__object__": "module.Class"}``; such a part
is reproducible by its ``id`` but cannot be revived, and ``revive`` says so.
"""

from __future__ import annotations

import dataclasses
import enum
import inspect
import math
import operator
import os
import re
import sys
from collections.abc import Mapping
from typing import Any, ClassVar, TypedDict, TypeVar

from frameselect.errors import FrameselectError, PartConfigError, SelectionError

__all__ = [
    "Part",
    "Range",
    "K_MAX",
    "check_budget",
    "declared_ranges",
    "numeric_parameters",
    "parameter_declarations",
    "check_params",
    "PartConfig",
    "part_params",
    "part_config",
    "part_id",
    "part_fingerprint",
    "parameter_names",
    "registered_name_of",
    "objects_in",
    "is_revivable",
    "to_json",
]

P = TypeVar("P", bound="Part")


class _PartConfigBase(TypedDict):
    kind: str
    name: str
    params: dict[str, Any]


class PartConfig(_PartConfigBase, total=False):
    """A part's stored configuration (see the module docstring)."""

    resolved: dict[str, Any]


class Part:
    """Base of every kind of part: kind, name and declared configuration rules."""

    #: the registry this kind of part lives in ("selectors", "encoders", ...)
    kind: ClassVar[str] = ""
    #: the name it is registered under (set by the registry)
    registered_name: ClassVar[str] = ""
    #: constructor arguments that are credentials: never configured, fingerprinted or shown
    secret_params: ClassVar[frozenset[str]] = frozenset()
    #: configuration that does not change outputs, left out of the ``id``
    identity_exclude: ClassVar[frozenset[str]] = frozenset()
    #: constructor arguments that are live data, recorded only as such (the part cannot be revived)
    live_params: ClassVar[frozenset[str]] = frozenset()
    #: the range of each numeric parameter (merged with the base classes'); see :class:`Range`
    param_ranges: ClassVar[Mapping[str, Range]] = {}

    @property
    def name(self) -> str:
        """The name this class is registered under (not a parent's), else the class name."""
        return registered_name_of(type(self)) or type(self).__name__

    def resolved_identity(self) -> dict[str, Any]:
        """Values fixed when the part loads that determine its outputs (none by default)."""
        return {}


@dataclasses.dataclass(frozen=True)
class Range:
    """The values a numeric parameter takes: bounds (``gt``/``ge``/``lt``/``le``), whole numbers only, NaN, infinities.

    ``None`` is always accepted (a parameter's "not set"); a sequence is
    checked element by element. NaN and ±inf are refused unless ``nan_ok`` /
    ``inf_ok`` (an infinity must still satisfy the bounds).

    >>> Range(gt=0).problem(0)
    'must be > 0'
    >>> Range(ge=1, integer=True).problem(2.5)
    'must be a whole number'
    >>> Range(ge=0, le=1).problem(float("nan"))
    'must be a number, not NaN'
    >>> Range(gt=0, inf_ok=True).problem(float("inf")) is None
    True
    """

    gt: float | None = None
    ge: float | None = None
    lt: float | None = None
    le: float | None = None
    integer: bool = False
    nan_ok: bool = False
    inf_ok: bool = False

    def __str__(self) -> str:
        what = "a whole number" if self.integer else "a number"
        bounds = [f"{op} {_num(v)}" for op, v in ((">", self.gt), (">=", self.ge), ("<", self.lt), ("<=", self.le)) if v is not None]
        return what + (" " + " and ".join(bounds) if bounds else "") + (" (or NaN)" if self.nan_ok else "") + (" (infinity allowed)" if self.inf_ok else "")

    def problem(self, value: Any) -> str | None:
        """Why ``value`` is outside the range, or None when it is inside."""
        if value is None:
            return None
        if isinstance(value, (list, tuple)):
            for i, v in enumerate(value):
                why = self.problem(v)
                if why is not None:
                    return f"element {i} ({v!r}) {why}"
            return None
        np = sys.modules.get("numpy")
        if isinstance(value, bool) or not (isinstance(value, (int, float)) or (np is not None and isinstance(value, (np.integer, np.floating)))):
            return f"must be {self}"
        x = float(value)
        if math.isnan(x):
            return None if self.nan_ok else "must be a number, not NaN"
        if math.isinf(x) and not self.inf_ok:
            return "must be finite"
        if self.integer and not math.isinf(x) and x != int(x):
            return "must be a whole number"
        if self.gt is not None and not x > self.gt:
            return f"must be > {_num(self.gt)}"
        if self.ge is not None and not x >= self.ge:
            return f"must be >= {_num(self.ge)}"
        if self.lt is not None and not x < self.lt:
            return f"must be < {_num(self.lt)}"
        if self.le is not None and not x <= self.le:
            return f"must be <= {_num(self.le)}"
        return None


def _num(v: float) -> str:
    return str(int(v)) if float(v).is_integer() else f"{v:g}"


def declared_ranges(factory: type | object) -> dict[str, Range]:
    """Every parameter range a part class declares, its base classes' included (a subclass's wins)."""
    cls = factory if isinstance(factory, type) else type(factory)
    out: dict[str, Range] = {}
    for klass in reversed(cls.__mro__):
        out.update(vars(klass).get("param_ranges", {}) or {})
    return out


_NUMERIC_ANNOTATION = re.compile(r"\b(int|float)\b")


def numeric_parameters(factory: type | object) -> list[str]:
    """The parameters of a part class that take numbers: annotated ``int``/``float`` (alone, optional or in a sequence), or a number by default."""
    cls = factory if isinstance(factory, type) else type(factory)
    found: list[str] = []
    names = set(parameter_names(cls))
    for name, annotation, default in parameter_declarations(cls):
        if name not in names or name in found:
            continue
        numeric_default = isinstance(default, (int, float)) and not isinstance(default, bool)
        if _NUMERIC_ANNOTATION.search(str(annotation)) or numeric_default:
            found.append(name)
    return found


def parameter_declarations(cls: type) -> list[tuple[str, Any, Any]]:
    """``(name, annotation, default)`` of each configuration parameter (annotations as written)."""
    if dataclasses.is_dataclass(cls):
        return [(f.name, f.type, f.default) for f in dataclasses.fields(cls) if f.init]
    out: list[tuple[str, Any, Any]] = []
    for klass in cls.__mro__:
        if klass is object:
            break
        init = klass.__dict__.get("__init__")
        if init is None:
            continue
        params = list(inspect.signature(init).parameters.values())[1:]
        out += [(p.name, p.annotation, p.default) for p in params if p.kind not in (p.VAR_KEYWORD, p.VAR_POSITIONAL)]
        if not any(p.kind is p.VAR_KEYWORD for p in params):
            break
    return out


def check_params(factory: type | object, params: Mapping[str, Any] | None = None) -> list[str]:
    """What is wrong with ``params`` (default: the part's own configuration) against the declared ranges: ``["fps=0 must be > 0", ...]``."""
    ranges = declared_ranges(factory)
    values = dict(params) if params is not None else {k: getattr(factory, k, None) for k in ranges}
    problems = []
    for name, value in values.items():
        rng = ranges.get(name)
        why = rng.problem(value) if rng is not None else None
        if why is not None:
            problems.append(f"{name}={value!r} {why}")
    return problems


#: the largest frame budget: far more frames than any video holds, and within what the store keeps as an integer
K_MAX = 2**31 - 1


def check_budget(k: Any, *, error: type[FrameselectError] = SelectionError, hint: str = "") -> int:
    """``k`` as a frame budget: an integer (a numpy one too, never a bool) from 1 to :data:`K_MAX`.

    The one budget check of the package. A part checks the budget it is called with (the
    default: :class:`~frameselect.errors.SelectionError`); a run's plan checks the configured one
    (``error=ConfigError`` and ``hint``, where the user sets it: ``"k=, CLI -k"``).
    """
    where = f" ({hint})" if hint else ""
    try:
        value = None if isinstance(k, bool) else operator.index(k)
    except TypeError:
        value = None
    if value is None or value < 1:
        raise error(f"frame budget k must be an integer of at least 1, got {k!r}{where}")
    if value > K_MAX:
        raise error(f"frame budget k={value} is too large: k must be at most {K_MAX}{where}")
    return value


def registered_name_of(cls: type) -> str:
    """The name ``cls`` itself is registered under; "" for a class that is not (even if a parent is)."""
    name = vars(cls).get("registered_name", "")
    return name if isinstance(name, str) else ""


# -- reading a configuration ----------------------------------------------------------


def _constructor_parameters(cls: type) -> list[str]:
    """Names of the constructor's parameters, following ``**kwargs`` to the base classes."""
    names: dict[str, None] = {}
    for klass in cls.__mro__:
        if klass is object:
            break
        init = klass.__dict__.get("__init__")
        if init is None:
            continue
        forwards = False
        for p in list(inspect.signature(init).parameters.values())[1:]:
            if p.kind is inspect.Parameter.VAR_KEYWORD:
                forwards = True
            elif p.kind is not inspect.Parameter.VAR_POSITIONAL and not p.name.startswith("_"):
                names.setdefault(p.name, None)
        if not forwards:
            break
    return list(names)


def parameter_names(factory: type | object) -> list[str]:
    """The parameters a part class (or a part) is configured by: dataclass fields or constructor arguments.

    >>> from frameselect.registry import selectors
    >>> parameter_names(selectors.get("mmr"))
    ['lam', 'normalize']
    """
    cls = factory if isinstance(factory, type) else type(factory)
    if dataclasses.is_dataclass(cls):
        return [f.name for f in dataclasses.fields(cls) if f.init and not f.name.startswith("_")]
    return _constructor_parameters(cls)


def to_json(value: Any) -> Any:
    """``value`` as a plain JSON value; live objects become ``{"__object__": "module.Class"}``."""
    if value is None or isinstance(value, (bool, str)):
        return value
    np = sys.modules.get("numpy")  # a numpy value exists only once numpy is imported: listing parts never imports it
    if np is not None and isinstance(value, np.bool_):
        return bool(value)
    if isinstance(value, int) or (np is not None and isinstance(value, np.integer)):
        return int(value)
    if isinstance(value, float) or (np is not None and isinstance(value, np.floating)):
        return float(value)
    if isinstance(value, enum.Enum):
        return to_json(value.value)
    if isinstance(value, os.PathLike):
        return os.fspath(value)
    if isinstance(value, Mapping):
        return {str(k): to_json(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [to_json(v) for v in value]
    if isinstance(value, (set, frozenset)):
        return sorted((to_json(v) for v in value), key=repr)
    if np is not None and isinstance(value, np.ndarray) and value.ndim <= 1 and value.size <= 64:
        return [to_json(v) for v in value.tolist()]
    return {"__object__": f"{type(value).__module__}.{type(value).__qualname__}"}


def part_params(part: object) -> dict[str, Any]:
    """The part's configuration: every constructor argument (secrets excluded) as JSON values.

    >>> from frameselect.registry import selectors
    >>> part_params(selectors.create("mmr", lam=0.7))["lam"]
    0.7
    """
    secrets = _secrets(part)
    live = part.live_params if isinstance(part, Part) else frozenset()
    out: dict[str, Any] = {}
    for name in parameter_names(part):
        if name in secrets:
            continue
        if name in live:  # live data is recorded only as such (an absent one as None)
            out[name] = None if getattr(part, name, None) is None else {"__object__": f"{type(part).__qualname__}.{name}"}
            continue
        try:
            value = getattr(part, name)
        except AttributeError:
            raise PartConfigError(
                f"{type(part).__qualname__}: constructor argument {name!r} is not kept as an attribute of the same name; "
                f"store it as self.{name}, or declare it in secret_params if it is a credential"
            ) from None
        out[name] = to_json(value)
    return out


def _secrets(part: object) -> frozenset[str]:
    return part.secret_params if isinstance(part, Part) else frozenset()


def _kind(part: object) -> str:
    if isinstance(part, Part) and part.kind:
        return part.kind
    raise PartConfigError(f"{type(part).__qualname__} is not a frameselect part: subclass Selector, Encoder, Evaluator, Dataset, Answerer or Router")


def _name(part: object) -> str:
    return part.name if isinstance(part, Part) else type(part).__name__


def part_config(part: object) -> PartConfig:
    """``{"kind", "name", "params"}`` (and ``"resolved"`` where the part has load-time identity)."""
    config: PartConfig = {"kind": _kind(part), "name": _name(part), "params": part_params(part)}
    resolved = part.resolved_identity() if isinstance(part, Part) else {}
    if resolved:
        config["resolved"] = {str(k): to_json(v) for k, v in resolved.items()}
    return config


def part_id(part: object) -> str:
    """``name(key=value,...)``: what determines the part's outputs; keys feature and answer caches.

    The configuration minus ``identity_exclude``, with ``None`` values left
    out, updated by the resolved identity.
    """
    exclude = part.identity_exclude if isinstance(part, Part) else frozenset()
    values = {k: v for k, v in part_params(part).items() if k not in exclude and v is not None}
    if isinstance(part, Part):
        values.update({str(k): to_json(v) for k, v in part.resolved_identity().items()})
    inner = ",".join(f"{k}={_id_text(v)}" for k, v in sorted(values.items()))
    return f"{_name(part)}({inner})"


def _id_text(value: Any) -> str:
    if isinstance(value, list):
        return "[" + ",".join(_id_text(v) for v in value) + "]"
    if isinstance(value, dict):
        if set(value) == {"__object__"}:
            return f"<{value['__object__']}>"
        return "{" + ",".join(f"{k}:{_id_text(v)}" for k, v in sorted(value.items())) + "}"
    return str(value)


def part_fingerprint(part: object) -> str:
    """The fingerprint of the part's configuration (kind, name, parameters, resolved identity, version)."""
    from frameselect._core.fingerprint import fingerprint

    return fingerprint(part_config(part))


# -- reviving ---------------------------------------------------------------------


def objects_in(value: Any, path: str) -> list[str]:
    """Where a stored configuration holds injected live objects: ``["params.encoder (Encoder)", ...]``."""
    if isinstance(value, dict):
        if "__object__" in value and len(value) == 1:
            return [f"{path} ({value['__object__']})"]
        return [p for k, v in value.items() for p in objects_in(v, f"{path}.{k}")]
    if isinstance(value, list):
        return [p for i, v in enumerate(value) for p in objects_in(v, f"{path}[{i}]")]
    return []


def is_revivable(config: Mapping[str, Any]) -> bool:
    """Whether ``config`` holds only plain values (no injected live objects)."""
    return not objects_in(dict(config.get("params") or {}), "params")
