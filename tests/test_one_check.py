"""One check of each rule: the frame budget (``frameselect.parts.check_budget``) and the selector
contract (``frameselect.selectors.base.check_selection``), shared by parts, plans, runs and integrations."""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from frameselect.errors import ConfigError, ContractError, SelectionError
from frameselect.parts import K_MAX, check_budget
from frameselect.selectors.base import check_selection
from frameselect.types import Query, Sample, Selection

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


@pytest.mark.parametrize(("name", "home"), [("check_budget", "parts.py"), ("check_selection", "selectors/base.py")])
def test_no_other_module_defines_the_check(name: str, home: str) -> None:
    defined = []
    for path in sorted(SRC.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.FunctionDef) and node.name == name:
                defined.append(path.relative_to(SRC).as_posix())
    assert defined == [home]


class _Named:
    name = "mine"
    reference_exact = False


SAMPLE = Sample(id="s1", video="v.mp4", query=Query(text="q"))


@pytest.mark.parametrize(
    ("indices", "k", "n", "problem"),
    [
        ((0, 2, 4), 3, 10, None),
        ((0, 1), 5, 2, None),  # min(k, N) = 2
        ((0, 2, 4), 4, 10, "3 indices where min(k, N) = 4 are due"),
        ((2, 2, 4), 3, 10, "duplicate indices"),
        ((4, 2, 0), 3, 10, "indices not ascending"),
        ((0, 2, 10), 3, 10, "index 10 is outside the pool of 10"),
        ((0, 2, 4, 6, 8), None, 10, None),  # any count
        ((3,), None, 10, None),
        ((3, 3), None, 10, "duplicate indices"),
    ],
)
def test_the_contract(indices: tuple[int, ...], k: int | None, n: int, problem: str | None) -> None:
    selection = Selection(indices=indices, selector="mine")
    if problem is None:
        check_selection(_Named(), selection, k, n, SAMPLE)
        return
    with pytest.raises(ContractError) as exc:
        check_selection(_Named(), selection, k, n, SAMPLE, video="v")
    asked = f"k={k}, N={n}" if k is not None else f"N={n}"
    assert str(exc.value).startswith(f"selector 'mine' broke its contract on sample 's1' in video 'v': {problem} (returned {list(indices)} for {asked})")


def test_a_reference_exact_selection_is_checked_for_range_only() -> None:
    raw = Selection(indices=(4, 0, 0), selector="mine", reference_exact=True)
    check_selection(_Named(), raw, 5, 10)
    with pytest.raises(ContractError, match=r"^selector 'mine' broke its contract: index 10 is outside the pool of 10 \(returned \[0, 10\] for k=2, N=10\)"):
        check_selection(_Named(), Selection(indices=(0, 10), selector="mine", reference_exact=True), 2, 10)
