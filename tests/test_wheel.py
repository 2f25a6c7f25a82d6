"""The wheel is real: built from a copy of the source, installed (not editable) into a fresh virtual environment.

The new environment has no pip and none of the dependencies of its own: a ``.pth`` file adds the
site-packages of the interpreter running the tests (numpy, PyAV, ...), whose own ``.pth`` files
(the editable install of this checkout among them) are not processed there, so ``frameselect``
resolves to the installed wheel, which the test asserts. Nothing is downloaded: the wheel is built
without build isolation (setuptools of this environment) and installed with ``--no-index``.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow  # builds a wheel and starts several interpreters

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "src" / "frameselect"

EVALUATE = (
    "import json, frameselect\n"
    "r = frameselect.evaluate(dataset='tiny', selector='uniform', k=2, evaluators=['evidence_recall', 'frame_precision'], store='{store}')\n"
    "print(json.dumps([frameselect.__file__, frameselect.__version__, {{m: r.table[m] for m in ('evidence_recall', 'frame_precision', 'n', 'failed')}}]))"
)


def _package_files(suffix_is_py: bool) -> set[str]:
    files = {p.relative_to(PACKAGE.parent).as_posix() for p in PACKAGE.rglob("*") if p.is_file() and "__pycache__" not in p.parts}
    return {f for f in files if f.endswith(".py") == suffix_is_py and not f.endswith(".pyc")}


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """``python -m build --wheel`` of a copy of the source tree (so the checkout gets no build/ or egg-info)."""
    work = tmp_path_factory.mktemp("wheel")
    shutil.copytree(PACKAGE, work / "src" / "frameselect", ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, work / name)
    done = subprocess.run(
        [sys.executable, "-m", "build", "--wheel", "--no-isolation", "--outdir", str(work / "dist"), str(work)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert "deprecated" not in (done.stdout + done.stderr).lower(), "the build warns of a deprecated setting"
    (built,) = (work / "dist").glob("frameselect-*.whl")
    return built


@pytest.fixture(scope="module")
def venv(wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh virtual environment with the wheel installed (no pip in it; this environment's pip installs there)."""
    env_dir = tmp_path_factory.mktemp("venv") / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(env_dir)], check=True, timeout=120)
    python = env_dir / "bin" / "python"
    clean = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV")}  # a source tree on the path looks installed to pip
    subprocess.run(
        [sys.executable, "-m", "pip", "--python", str(python), "install", "--no-deps", "--no-index", "-q", str(wheel)], check=True, timeout=300, env=clean
    )
    site = Path(
        subprocess.run(
            [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"], capture_output=True, text=True, check=True
        ).stdout.strip()
    )
    deps = sorted({sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]})
    (site / "_test_dependencies.pth").write_text("".join(f"{d}\n" for d in deps))
    return env_dir


def _env(tmp: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV")}
    env["FRAMESELECT_CACHE"] = str(tmp / "cache")
    return env


def test_the_wheel_holds_every_module_and_the_package_data(wheel: Path) -> None:
    with zipfile.ZipFile(wheel) as zf:
        names = set(zf.namelist())
    assert wheel.name == f"frameselect-{_version()}-py3-none-any.whl"
    data = _package_files(suffix_is_py=False)
    assert {"frameselect/py.typed", "frameselect/learned/checkpoints/haystack.safetensors", "frameselect/_studies/htmlreport/templates/report.html.j2"} <= data
    assert data <= names, f"package data missing from the wheel: {sorted(data - names)}"
    missing = _package_files(suffix_is_py=True) - names
    assert not missing, f"modules missing from the wheel: {sorted(missing)}"
    with zipfile.ZipFile(wheel) as zf:
        checkpoint = zf.read("frameselect/learned/checkpoints/haystack.safetensors")
    assert checkpoint == (PACKAGE / "learned" / "checkpoints" / "haystack.safetensors").read_bytes()


def _version() -> str:
    namespace: dict[str, str] = {}
    exec((PACKAGE / "_version.py").read_text(), namespace)
    return namespace["__version__"]


def test_the_installed_command_lists_from_the_wheel(venv: Path, tmp_path: Path) -> None:
    command = venv / "bin" / "frameselect"
    listed = subprocess.run([str(command), "list"], capture_output=True, text=True, env=_env(tmp_path), timeout=120, check=True)
    assert {"selectors", "token_models"} <= set(listed.stdout.split())
    selectors = subprocess.run([str(command), "list", "selectors"], capture_output=True, text=True, env=_env(tmp_path), timeout=120, check=True)
    assert {"uniform", "kcenter", "bayes_grpo"} <= set(selectors.stdout.split())
    version = subprocess.run([str(command), "--version"], capture_output=True, text=True, env=_env(tmp_path), timeout=120, check=True)
    assert version.stdout.strip() == f"frameselect {_version()}"


def test_evaluate_from_the_wheel_gives_what_the_source_gives(venv: Path, tmp_path: Path) -> None:
    env = _env(tmp_path)
    wheel_out = subprocess.run(
        [str(venv / "bin" / "python"), "-c", EVALUATE.format(store=tmp_path / "wheel.sqlite")], capture_output=True, text=True, env=env, timeout=300
    )
    assert wheel_out.returncode == 0, wheel_out.stderr[-3000:]
    where, version, table = json.loads(wheel_out.stdout.strip().splitlines()[-1])
    assert Path(where).resolve().is_relative_to(venv.resolve()), where  # the wheel's copy, not this checkout's
    assert version == _version()
    source_env = {**env, "PYTHONPATH": str(ROOT / "src")}
    source_out = subprocess.run(
        [sys.executable, "-c", EVALUATE.format(store=tmp_path / "source.sqlite")], capture_output=True, text=True, env=source_env, timeout=300
    )
    assert source_out.returncode == 0, source_out.stderr[-3000:]
    source_where, _, source_table = json.loads(source_out.stdout.strip().splitlines()[-1])
    assert Path(source_where).resolve().is_relative_to(ROOT / "src")
    assert table == source_table and table["n"] == 6 and table["failed"] == 0
