"""``frameselect list`` shows every registry in the source: the kinds without an argument, the names of one kind with it."""

from __future__ import annotations

import ast
import importlib
import re
from pathlib import Path

import pytest

from frameselect.cli import main
from frameselect.cli.commands.list import KINDS, registry_of
from frameselect.registry import REGISTRIES, Registry

ROOT = Path(__file__).resolve().parents[1]


def _registries_in_source() -> dict[str, str]:
    """Every module-level ``name = Registry("kind", ...)`` under src, as kind -> module."""
    found: dict[str, str] = {}
    for path in sorted((ROOT / "src" / "frameselect").rglob("*.py")):
        for node in ast.parse(path.read_text()).body:
            value = node.value if isinstance(node, ast.Assign | ast.AnnAssign) else None
            if isinstance(value, ast.Call) and isinstance(value.func, ast.Name) and value.func.id == "Registry":
                first = value.args[0]
                assert isinstance(first, ast.Constant), f"{path}: a registry's kind is a literal"
                found[str(first.value)] = ".".join(path.relative_to(ROOT / "src").with_suffix("").parts)
    return found


def test_every_registry_in_the_source_is_listed() -> None:
    in_source = _registries_in_source()
    assert {"selectors", "streaming", "budget_policies", "joint_selectors", "token_models"} <= set(in_source)
    assert set(in_source) == set(KINDS)
    for kind, module in in_source.items():
        reg = registry_of(kind)
        assert isinstance(reg, Registry) and reg.kind == kind and type(reg).__module__ == "frameselect.registry"
        assert reg is getattr(importlib.import_module(module), kind)  # each registry is bound to the name of its kind
    assert set(REGISTRIES) <= set(KINDS)


def test_list_without_a_kind_prints_the_kinds(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["list"]) == 0
    assert capsys.readouterr().out.split() == list(KINDS)
    assert main(["list", "-v"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert [line.split()[0] for line in lines] == list(KINDS)
    assert "cross-video question" in lines[list(KINDS).index("budget_policies")]


@pytest.mark.parametrize(
    ("kind", "some"),
    [
        ("budget_policies", {"equal", "duration", "relevance", "crossvid"}),
        ("joint_selectors", {"topk_union", "binding", "holmes"}),
        ("token_models", {"qwen2_vl", "qwen2_5_vl", "internvl", "smolvlm"}),
        ("streaming", {"reservoir", "sliding_window"}),
    ],
)
def test_list_a_kind_prints_its_registered_names(kind: str, some: set[str], capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["list", kind]) == 0
    names = capsys.readouterr().out.split()
    assert names == sorted(registry_of(kind).names()) and some <= set(names)


def test_list_a_kind_with_a_pattern_and_summaries(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["list", "joint_selectors", "b*", "-v"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert len(out) == 1 and out[0].startswith("binding  ") and len(out[0]) > len("binding  ")


def test_an_unknown_kind_is_one_error_line_naming_the_kinds(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        main(["list", "selector"])
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert "invalid choice: 'selector'" in err and "token_models" in err and "Traceback" not in err


def test_contributing_names_every_kind_of_part() -> None:
    text = (ROOT / "CONTRIBUTING.md").read_text()
    table = text[text.index("### Where each kind of part lives") :]
    rows = [line for line in table.splitlines() if line.startswith("| ") and "`frameselect list" in line]
    listed = {m for row in rows for m in re.findall(r"`frameselect list (\w+)`", row)}
    assert listed == set(KINDS)
