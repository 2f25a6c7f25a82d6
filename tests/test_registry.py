"""The one registry mechanism, and third-party parts through entry points."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import frameselect
from frameselect.errors import DuplicateNameError, UnknownNameError
from frameselect.registry import REGISTRIES, Registry


def test_register_get_create_and_names() -> None:
    reg: Registry[object] = Registry("widgets")

    @reg.register("alpha")
    class Alpha:
        def __init__(self, size: int = 1) -> None:
            self.size = size

    reg.add("beta", lambda: "b")
    assert reg.get("alpha") is Alpha
    assert reg.create("alpha", size=3).size == 3  # type: ignore[attr-defined]
    assert reg.names() == ["alpha", "beta"]
    assert reg.names("a*") == ["alpha"]
    assert "beta" in reg and "gamma" not in reg


def test_duplicate_name_is_an_error() -> None:
    reg: Registry[object] = Registry("widgets")
    reg.add("alpha", int)
    with pytest.raises(DuplicateNameError, match="alpha"):
        reg.add("alpha", float)


def test_unknown_name_lists_known_names() -> None:
    with pytest.raises(UnknownNameError) as info:
        frameselect.selectors.get("no_such_selector")
    message = str(info.value)
    assert "no_such_selector" in message
    for name in ("uniform", "random", "kcenter"):
        assert name in message


def test_every_kind_has_a_registry() -> None:
    assert set(REGISTRIES) == {"selectors", "encoders", "evaluators", "datasets", "answerers", "routers", "streaming"}
    assert {"uniform", "random", "kcenter"} <= set(frameselect.selectors.names())
    assert {"color_histogram", "thumbnail"} <= set(frameselect.encoders.names())
    assert {"evidence_recall", "frame_precision"} <= set(frameselect.evaluators.names())
    assert "tiny" in frameselect.datasets.names()


def test_import_and_listing_do_not_import_torch() -> None:
    code = (
        "import sys, frameselect\n"
        "from frameselect.cli import main\n"
        "for kind in ('selectors','encoders','evaluators','datasets','answerers','routers'):\n"
        "    main(['list', kind])\n"
        "heavy = [m for m in ('torch','transformers','open_clip','ray','onnxruntime','rapidocr') if m in sys.modules]\n"
        "assert not heavy, heavy\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr


@pytest.mark.slow
def test_installed_plugin_adds_a_selector_through_entry_points(tmp_path: Path) -> None:
    """A real third-party package, installed with pip, registers a selector."""
    plugin = tmp_path / "plugin_pkg"  # build from a copy: setuptools writes build/ and egg-info in place
    shutil.copytree(Path(__file__).parent / "plugin_pkg", plugin, ignore=shutil.ignore_patterns("build", "*.egg-info"))
    target = tmp_path / "site"
    install = subprocess.run(
        [sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-build-isolation", "--target", str(target), str(plugin)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert install.returncode == 0, install.stderr
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(target), os.environ.get("PYTHONPATH", "")])}
    listed = subprocess.run([sys.executable, "-m", "frameselect.cli", "list", "selectors"], capture_output=True, text=True, env=env, timeout=120)
    assert listed.returncode == 0, listed.stderr
    assert "every_other" in listed.stdout.split()
    code = (
        "import frameselect\n"
        "from frameselect.types import CandidatePool\n"
        "sel = frameselect.selectors.create('every_other')\n"
        "print(sel.select(CandidatePool.from_timestamps(range(10)), None, 3).indices)\n"
    )
    ran = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
    assert ran.returncode == 0, ran.stderr
    assert ran.stdout.strip() == "(0, 4, 8)"
