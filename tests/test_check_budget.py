"""One frame-budget check for the package (``frameselect.parts.check_budget``): parts, plans and integrations share it."""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from frameselect.errors import ConfigError, SelectionError
from frameselect.parts import K_MAX, check_budget

SRC = Path(__file__).resolve().parents[1] / "src" / "frameselect"


@pytest.mark.parametrize(("k", "expected"), [(1, 1), (8, 8), (np.int64(5), 5), (np.uint8(3), 3), (K_MAX, 2**31 - 1)])
def test_a_whole_budget_from_one_to_k_max_is_an_int(k: Any, expected: int) -> None:
    got = check_budget(k)
    assert got == expected and type(got) is int


@pytest.mark.parametrize("k", [0, -3, 2.5, 4.0, True, np.bool_(True), "4", None])
def test_anything_else_is_refused_naming_the_value(k: Any) -> None:
    with pytest.raises(SelectionError) as exc:
        check_budget(k)
    assert str(exc.value) == f"frame budget k must be an integer of at least 1, got {k!r}"


def test_a_plan_refuses_with_a_config_error_saying_where_k_is_set() -> None:
    with pytest.raises(ConfigError, match=r"^frame budget k must be an integer of at least 1, got 0 \(k=, CLI -k\)$"):
        check_budget(0, error=ConfigError, hint="k=, CLI -k")
    with pytest.raises(ConfigError, match=rf"^frame budget k={K_MAX + 1} is too large: k must be at most {K_MAX} \(CLI -k\)$"):
        check_budget(K_MAX + 1, error=ConfigError, hint="CLI -k")


def test_no_other_module_defines_a_budget_check() -> None:
    defined = []
    for path in sorted(SRC.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.FunctionDef) and node.name == "check_budget":
                defined.append(path.relative_to(SRC).as_posix())
    assert defined == ["parts.py"]
