"""scripts/figures.sh (benchmarks/figures.py): its commands parse, and the docs name only its entries."""

from __future__ import annotations

import importlib.util
import re
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

from frameselect.cli import build_parser

ROOT = Path(__file__).resolve().parent.parent
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
ONLY = re.compile(r"figures\.sh --only ([A-Za-z0-9_-]+)")


def _figures() -> ModuleType:
    spec = importlib.util.spec_from_file_location("figures_script", ROOT / "benchmarks" / "figures.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look the module up by name
    spec.loader.exec_module(module)
    return module


FIGURES = _figures()


def test_entry_names_are_unique_and_known_to_the_lookup() -> None:
    names = [e.name for e in FIGURES.ENTRIES]
    assert len(names) == len(set(names))
    assert set(FIGURES.BY_NAME) == set(names)


@pytest.mark.parametrize("entry", [e for e in FIGURES.ENTRIES if e.argv[0] == "frameselect"], ids=lambda e: e.name)
def test_every_cli_command_parses(entry: object, tmp_path: Path) -> None:
    argv = FIGURES.command_line(entry, tmp_path)
    assert argv[1:3] == ["-m", "frameselect.cli"]
    args = build_parser().parse_args(argv[3:])  # argparse exits (SystemExit) on an unknown option or a bad value
    assert args.command == entry.argv[1]
    if "--store" in entry.argv:
        assert args.store is not None and str(args.store).startswith(str(tmp_path / entry.name))


def test_a_bad_option_would_be_caught() -> None:
    with pytest.raises(SystemExit):
        build_parser().parse_args(["bench", "--no-such-option"])


@pytest.mark.parametrize("entry", [e for e in FIGURES.ENTRIES if e.argv[0] != "frameselect"], ids=lambda e: e.name)
def test_every_script_exists_and_takes_its_options(entry: object) -> None:
    script = ROOT / entry.argv[0]
    assert script.is_file(), script
    source = script.read_text(encoding="utf-8")
    assert "argparse" in source
    for option in (a for a in entry.argv[1:] if a.startswith("--")):
        assert f'"{option}"' in source, f"{script.name} has no option {option}"


def test_every_entry_is_quoted_by_the_pages_it_names() -> None:
    for entry in FIGURES.ENTRIES:
        for page in entry.docs:
            text = (ROOT / page).read_text(encoding="utf-8")
            assert f"figures.sh --only {entry.name}`" in text, f"{page} does not name the entry {entry.name}"


def test_every_entry_a_page_names_exists() -> None:
    named = {(page.name, m.group(1)) for page in PAGES for m in ONLY.finditer(page.read_text(encoding="utf-8"))}
    assert named, "no page names a figures entry"
    unknown = sorted((page, name) for page, name in named if name not in FIGURES.BY_NAME)
    assert not unknown, unknown


def test_list_prints_every_command_without_running(tmp_path: Path) -> None:
    out = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "figures.py"), "--list", "--only", "bench-main", "--only", "cache"],
        capture_output=True,
        text=True,
        check=True,
        cwd=tmp_path,
    ).stdout.splitlines()
    assert [line.split("\t")[0] for line in out] == ["bench-main", "cache"]
    assert "frameselect bench --executor process --no-cross-video --store {out}.sqlite" in out[0]
    assert not list(tmp_path.iterdir())


def test_an_unknown_entry_is_an_error() -> None:
    proc = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "figures.py"), "--only", "nope"], capture_output=True, text=True)
    assert proc.returncode == 2 and "unknown entry nope" in proc.stderr


def test_a_run_writes_the_command_and_the_machine(tmp_path: Path) -> None:
    entry = FIGURES.BY_NAME["selectors"]
    assert FIGURES.run(entry, tmp_path) == 0
    text = (tmp_path / "selectors.txt").read_text(encoding="utf-8")
    lines = text.splitlines()
    assert lines[1] == "# command: frameselect list selectors"
    assert lines[2].startswith("# machine: ") and " cores (" in lines[2] and "load average" in lines[2]
    assert "uniform" in text and "topk" in text
    assert "exit status 0" in lines[-1]
