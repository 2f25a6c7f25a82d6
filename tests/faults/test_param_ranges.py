"""Numeric parameters outside their declared range fail the plan, before the first sample.

Every numeric parameter of every registered part declares a
:class:`~frameselect.parts.Range` (``param_ranges``); the plan checks the
values given by name (before the part is created, so no model loads) and the
configuration of a part given as an instance. NaN and infinities are refused
unless a range allows them.
"""

from __future__ import annotations

import math
from typing import Any

import pytest

from frameselect._engine.plan import plan_run, resolve
from frameselect.errors import ConfigError
from frameselect.parts import Range, check_params, declared_ranges, numeric_parameters
from frameselect.registry import REGISTRIES
from frameselect.testing import check_param_ranges


def _classes() -> list[tuple[str, str]]:
    return [(kind, name) for kind, reg in REGISTRIES.items() for name in reg.names() if isinstance(reg.get(name), type)]


@pytest.mark.parametrize(("kind", "name"), _classes(), ids=lambda v: str(v))
def test_every_numeric_parameter_declares_a_range(kind: str, name: str) -> None:
    check_param_ranges(REGISTRIES[kind].get(name))


def _outside(rng: Range) -> list[Any]:
    """Values the range must refuse: NaN, infinities, and one just past each bound."""
    bad: list[Any] = [math.nan, math.inf, -math.inf, "1"]
    bad += [b for b in (rng.gt, rng.lt) if b is not None]
    bad += [b - 0.5 for b in (rng.ge,) if b is not None] + [b + 0.5 for b in (rng.le,) if b is not None]
    if rng.integer:
        bad.append(((rng.ge if rng.ge is not None else 0) or 0) + 1.5)
    return bad


def _cases() -> list[tuple[str, str, str, Any]]:
    out = []
    for kind, name in _classes():
        cls = REGISTRIES[kind].get(name)
        for param, rng in declared_ranges(cls).items():
            out += [(kind, name, param, value) for value in _outside(rng)]
    return out


@pytest.mark.parametrize(("kind", "name", "param", "value"), _cases(), ids=lambda v: str(v))
def test_a_value_outside_the_range_is_refused_by_name(kind: str, name: str, param: str, value: Any) -> None:
    with pytest.raises(ConfigError, match=rf"{REGISTRIES[kind].singular} '{name}': parameter {param}="):
        resolve(kind, name, **{param: value})


def test_the_range_checks_are_the_ones_declared() -> None:
    assert numeric_parameters(REGISTRIES["selectors"].get("fixed_fps")) == ["fps"]
    assert check_params(REGISTRIES["selectors"].get("fixed_fps"), {"fps": 0}) == ["fps=0 must be > 0"]
    assert check_params(REGISTRIES["selectors"].get("mmr"), {"lam": 1.5}) == ["lam=1.5 must be <= 1"]
    assert check_params(REGISTRIES["routers"].get("text_cue"), {"budgets": [4, 0]}) == ["budgets=[4, 0] element 1 (0) must be >= 1"]
    assert Range(ge=0, nan_ok=True).problem(math.nan) is None
    assert Range(gt=0).problem(None) is None  # "not set" is always allowed


@pytest.mark.parametrize("fps", [0, -1, math.nan, math.inf, 1e999])
def test_fixed_fps_out_of_range_fails_the_plan_not_the_samples(fps: float) -> None:
    with pytest.raises(ConfigError, match=r"selector 'fixed_fps': parameter fps=.* (must be > 0|not NaN|must be finite)"):
        plan_run("fixed_fps", ["frames"], "tiny", 4, selector_params={"fps": fps})


def test_an_instance_out_of_range_fails_the_plan() -> None:
    from frameselect.selectors.classical import MMR

    part = object.__new__(MMR)  # past a constructor that would refuse it: the plan checks the configuration itself
    object.__setattr__(part, "lam", math.nan)
    object.__setattr__(part, "normalize", False)
    with pytest.raises(ConfigError, match=r"selector 'mmr': parameter lam=nan must be a number, not NaN"):
        resolve("selectors", part)
