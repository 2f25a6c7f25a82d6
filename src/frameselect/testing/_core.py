"""What every conformance suite shares: a named check, the round trip, the cases of a registry."""

from __future__ import annotations

import atexit
import dataclasses
import inspect
import json
import math
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from frameselect.errors import PartConfigError
from frameselect.parts import (
    Part,
    check_params,
    declared_ranges,
    is_revivable,
    numeric_parameters,
    parameter_declarations,
    parameter_names,
    part_config,
    part_fingerprint,
    registered_name_of,
)
from frameselect.registry import revive

__all__ = ["Check", "PartCase", "check_config_round_trip", "check_param_ranges", "label_of", "register_example", "example_for", "registry_cases", "EXAMPLES"]


@dataclass(frozen=True)
class Check:
    """One conformance check of one kind of part; ``check(part)`` raises ``AssertionError`` on failure."""

    kind: str
    name: str
    run: Callable[[Any], None]

    def __call__(self, part: Any) -> None:
        self.run(materialize(part))

    def __repr__(self) -> str:
        return f"{self.kind[:-1]}:{self.name}"


def label_of(part: Any) -> str:
    """How a failed check names the part: its registered name, else its class."""
    if isinstance(part, PartCase):
        return part.label
    if isinstance(part, Part):
        return part.name
    return str(getattr(part, "name", None) or type(part).__name__)


def fail(suite: str, part: Any, case: str, message: str) -> AssertionError:
    return AssertionError(f"{suite}({label_of(part)}) [{case}]: {message}")


def check_param_ranges(part: Any) -> None:
    """Every numeric parameter of a part (a class or an instance) declares its range, and the defaults lie in it.

    A numeric parameter is one annotated ``int``/``float`` (alone, optional or
    in a sequence) or whose default is a number; its :class:`~frameselect.parts.Range`
    goes in the class's ``param_ranges``, which the plan checks before a run
    starts. A range naming no parameter is an error too (a typo would check nothing).
    """
    cls = part if isinstance(part, type) else type(part)
    label = registered_name_of(cls) or cls.__qualname__
    ranges = declared_ranges(cls)
    missing = [n for n in numeric_parameters(cls) if n not in ranges]
    if missing:
        raise AssertionError(f"param_ranges({label}): numeric parameter(s) {missing} declare no range; add them to {cls.__qualname__}.param_ranges")
    stray = sorted(set(ranges) - set(parameter_names(cls)))
    if stray:
        raise AssertionError(f"param_ranges({label}): ranges for {stray}, which are not parameters of {cls.__qualname__}")
    defaults = {name: default for name, _, default in parameter_declarations(cls) if name in ranges and default is not inspect.Parameter.empty}
    defaults = {k: v for k, v in defaults.items() if v is not dataclasses.MISSING}
    problems = check_params(cls, defaults)
    if problems:
        raise AssertionError(f"param_ranges({label}): a default lies outside its declared range: {'; '.join(problems)}")


def check_config_round_trip(suite: str) -> Check:
    """Reviving the part from its stored configuration gives a part with the same fingerprint.

    The configuration must be plain JSON (numbers stay numbers, no NaN); a
    part given live objects (an injected model) cannot be revived and must
    say so with :class:`~frameselect.errors.PartConfigError`.
    """

    def run(part: Any) -> None:
        if not (isinstance(part, Part) and registered_name_of(type(part))):
            raise fail(
                suite, part, "round trip", "it is not registered, so a stored run cannot re-create it: register it (e.g. @frameselect.selectors.register(name))"
            )
        try:
            config = part_config(part)
        except PartConfigError as exc:
            raise fail(suite, part, "round trip", f"its configuration cannot be read: {exc}") from exc
        try:
            text = json.dumps(config, allow_nan=False)
        except (TypeError, ValueError) as exc:
            raise fail(suite, part, "round trip", f"its configuration is not plain JSON ({exc}): {config!r}") from exc
        if json.loads(text) != config:
            raise fail(suite, part, "round trip", f"its configuration changes through JSON: {config!r}")
        if not is_revivable(config):
            try:
                revive(config)
            except PartConfigError:
                return
            raise fail(suite, part, "round trip", "a configuration holding live objects was revived without an error")
        try:
            revived = revive(config)
        except Exception as exc:
            raise fail(suite, part, "round trip", f"revive({config!r}) raised {type(exc).__name__}: {exc}") from exc
        if type(revived) is not type(part):
            raise fail(suite, part, "round trip", f"revived a {type(revived).__qualname__}, expected a {type(part).__qualname__}")
        again = part_config(revived)
        if part_fingerprint(revived) != part_fingerprint(part):
            raise fail(suite, part, "round trip", f"the revived part has another fingerprint: stored {config!r}, revived {again!r}")

    return Check(f"{suite.removeprefix('check_')}s", "round_trip", run)


# -- cases: parts to check, built lazily -----------------------------------------------


@dataclass(frozen=True)
class PartCase:
    """A part to check, built when the check runs (``make(tmp_dir)``), named ``label``."""

    kind: str
    label: str
    make: Callable[[Path], Any]

    def __repr__(self) -> str:
        return self.label


#: (kind, registered name) -> builder of an example part in a scratch folder
EXAMPLES: dict[tuple[str, str], Callable[[Path], Any]] = {}


def register_example(kind: str, name: str) -> Callable[[Callable[[Path], Any]], Callable[[Path], Any]]:
    """Register the builder of an example of a registered part, for the conformance suites.

    A dataset loader needs files: its builder writes a small copy of the
    benchmark's layout into the folder it is given and returns the loader on
    it. A part that needs a model gets a tiny one (call ``pytest.skip`` where
    an optional package is absent). Parts without a builder are created with
    their defaults, except datasets: a dataset without an example is reported
    by the suite as a failure.
    """

    def decorator(builder: Callable[[Path], Any]) -> Callable[[Path], Any]:
        EXAMPLES[(kind, name)] = builder
        return builder

    return decorator


class MissingExampleError(AssertionError):
    """A registered dataset loader has no example for the conformance suite."""


def example_for(kind: str, name: str) -> Callable[[Path], Any]:
    builder = EXAMPLES.get((kind, name))
    if builder is not None:
        return builder
    if kind == "datasets":

        def missing(_: Path) -> Any:
            raise MissingExampleError(
                f"dataset {name!r} has no example for the conformance suite: register a builder that writes a small copy of its files, "
                f"with @frameselect.testing.register_example('datasets', {name!r})"
            )

        return missing

    from frameselect.registry import get_registry

    return lambda _: get_registry(kind).create(name)


def registry_cases(kind: str, names: Iterable[str] | None = None) -> list[PartCase]:
    """One case per registered part of ``kind`` (every name, unless ``names`` are given)."""
    from frameselect.registry import get_registry

    chosen = list(names) if names is not None else get_registry(kind).names()
    return [PartCase(kind, name, example_for(kind, name)) for name in chosen]


_SCRATCH: list[Path] = []


def _remove_scratch() -> None:
    """The scratch folders of materialised parts, removed when the process ends (a suite leaves no folder behind)."""
    import shutil

    while _SCRATCH:
        shutil.rmtree(_SCRATCH.pop(), ignore_errors=True)


def materialize(part: Any) -> Any:
    """The part itself, or the part a :class:`PartCase` builds (in a fresh scratch folder)."""
    if not isinstance(part, PartCase):
        return part
    import tempfile

    folder = Path(tempfile.mkdtemp(prefix=f"frameselect-{part.kind}-{part.label}-"))
    if not _SCRATCH:
        atexit.register(_remove_scratch)
    _SCRATCH.append(folder)
    return part.make(folder)


# -- small helpers shared by the suites ------------------------------------------------------


def same_values(a: Mapping[str, Any], b: Mapping[str, Any]) -> bool:
    """Equal dicts of numbers, NaN equal to NaN."""
    if set(a) != set(b):
        return False
    for key in a:
        x, y = a[key], b[key]
        if isinstance(x, float) and isinstance(y, float) and math.isnan(x) and math.isnan(y):
            continue
        if x != y:
            return False
    return True


def iter_checks(checks: Iterable[Check], parts: Iterable[Any]) -> Iterator[tuple[Any, Check]]:
    for part in parts:
        for check in checks:
            yield part, check
