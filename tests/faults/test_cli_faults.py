"""The command line as a careful user meets it: broken plug-ins, closed pipes, huge budgets, misspelt names.

Each runs the real ``frameselect`` entry module in a subprocess (tracebacks and
exit statuses are what a user sees), with this checkout's package first on the path.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

import frameselect

SRC = str(Path(frameselect.__file__).resolve().parents[1])


def _env(*paths: Path) -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": os.pathsep.join([*map(str, paths), SRC])}


def cli(*args: str, env: dict[str, str] | None = None, stdout: int | None = subprocess.PIPE) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "frameselect.cli", *args], stdout=stdout, stderr=subprocess.PIPE, text=True, env=env or _env(), timeout=300)


def _broken_plugin(root: Path) -> Path:
    """An installed distribution (metadata only) whose selector entry point fails to import."""
    (root / "broken_selector_mod.py").write_text("raise ImportError('needs libfoo 2, found 1')\n", encoding="utf-8")
    info = root / "broken_selector-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: broken-selector\nVersion: 0.1\n", encoding="utf-8")
    (info / "entry_points.txt").write_text("[frameselect.selectors]\nbroken = broken_selector_mod:Broken\n", encoding="utf-8")
    return root


def test_list_names_a_plugin_whose_import_fails(tmp_path: Path) -> None:
    done = cli("list", "selectors", env=_env(_broken_plugin(tmp_path)))
    assert done.returncode == 0, done.stderr
    assert {"uniform", "mmr"} <= set(done.stdout.split()) and "broken" not in done.stdout.split()
    assert "selector plug-in 'broken' failed to load and is not listed" in done.stderr
    assert "broken_selector_mod:Broken" in done.stderr and "from broken-selector 0.1" in done.stderr
    assert "ImportError: needs libfoo 2, found 1" in done.stderr
    assert "Traceback" not in done.stderr


def test_asking_for_the_broken_plugin_names_its_error(tmp_path: Path) -> None:
    done = cli("run", "-s", "broken", "--store", str(tmp_path / "s.sqlite"), env=_env(_broken_plugin(tmp_path)))
    assert done.returncode == 2
    assert "unknown selector 'broken' (plug-in failed to load: ImportError: needs libfoo 2, found 1)" in done.stderr


def _closed_pipe(*args: str) -> subprocess.CompletedProcess[str]:
    """Run with standard output a pipe whose reader has already gone (``| head`` that has read enough)."""
    read, write = os.pipe()
    os.close(read)
    try:
        return cli(*args, stdout=write)
    finally:
        os.close(write)


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("store") / "s.sqlite"
    cache = path.parent / "cache"
    done = cli("run", "-s", "uniform", "-k", "2", "--limit", "2", "--store", str(path), "--cache-dir", str(cache), "--no-progress")
    assert done.returncode == 0, done.stderr
    return path


@pytest.mark.parametrize("command", [["list", "selectors"], ["show"], ["table"], ["run", "-s", "uniform", "-k", "2", "--limit", "2", "--no-progress"]])
def test_a_closed_pipe_ends_quietly(command: list[str], store: Path) -> None:
    args = [*command] if command[0] == "list" else [*command, "--store", str(store)]
    if command[0] == "run":
        args += ["--cache-dir", str(store.parent / "cache")]
    done = _closed_pipe(*args)
    assert done.stderr == ""
    assert done.returncode == 141


def test_a_huge_budget_is_refused_naming_k(tmp_path: Path) -> None:
    done = cli("run", "-s", "uniform", "-k", "99999999999999999999999", "--store", str(tmp_path / "s.sqlite"))
    assert done.returncode == 2
    assert "frame budget k=99999999999999999999999 is too large: k must be at most 2147483647" in done.stderr
    assert "Traceback" not in done.stderr and not (tmp_path / "s.sqlite").exists()


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["-s", "kcentre"], "unknown selector 'kcentre' (did you mean 'kcenter'?)"),
        (["-s", "Uniform"], "unknown selector 'Uniform' (did you mean 'uniform'?)"),
        (["-s", "kcenter", "-e", "colour_histogram"], "unknown encoder 'colour_histogram' (did you mean 'color_histogram'?)"),
        (["-s", "uniform", "--evaluator", "evidence_recal"], "unknown evaluator 'evidence_recal' (did you mean 'evidence_recall'?)"),
        (["-s", "uniform", "-d", "tinyy"], "unknown dataset 'tinyy' (did you mean 'tiny'?)"),
        (["-s", "mmr", "-p", "lamb=0.5"], "selector 'mmr' has no parameter 'lamb' (did you mean 'lam'?)"),
    ],
)
def test_misspelt_names_suggest_the_close_ones(args: list[str], message: str, tmp_path: Path) -> None:
    done = cli("run", *args, "--store", str(tmp_path / "s.sqlite"))
    assert done.returncode == 2
    assert message in done.stderr


def test_a_name_close_to_nothing_suggests_nothing() -> None:
    from frameselect.errors import UnknownNameError

    with pytest.raises(UnknownNameError) as info:
        frameselect.selectors.get("zzzzqqq")
    assert "did you mean" not in str(info.value)


@pytest.mark.parametrize("value", ["0", "-1", "nan", "1e999"])
def test_fixed_fps_out_of_range_is_refused_before_the_first_sample(value: str, tmp_path: Path) -> None:
    done = cli("run", "-s", "fixed_fps", "-p", f"fps={value}", "--store", str(tmp_path / "s.sqlite"))
    assert done.returncode == 2
    assert "selector 'fixed_fps': parameter fps=" in done.stderr and "(CLI -p NAME=VALUE)" in done.stderr
    assert not (tmp_path / "s.sqlite").exists()
