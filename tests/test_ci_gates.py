"""``scripts/test.sh`` (what ``.ci/run`` runs) gates on ruff, ruff format, mypy and the docs build before pytest.

The script runs in a scratch copy of the repository layout whose set-up script and ``.venv``
tools are stand-ins that log their arguments, so the order and the failure paths are observed
without installing anything.
"""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
GATES = ["ruff check src tests benchmarks", "ruff format --check src tests benchmarks", "mypy --strict src", "mkdocs build --strict --quiet"]


def _stub(path: Path, log: Path, name: str, fail_on: str | None, code: int) -> None:
    fail = f'if [ "{name} $*" = "{fail_on}" ]; then exit {code}; fi\n' if fail_on else ""
    path.write_text(f'#!/usr/bin/env bash\necho "{name} $*" >> "{log}"\n{fail}exit 0\n')
    path.chmod(path.stat().st_mode | stat.S_IXUSR)


def _run(tmp_path: Path, fail_on: str | None = None, code: int = 3) -> tuple[int, list[str]]:
    (tmp_path / "scripts").mkdir()
    shutil.copy(ROOT / "scripts" / "test.sh", tmp_path / "scripts" / "test.sh")
    log = tmp_path / "log"
    (tmp_path / "scripts" / "setup.sh").write_text(f'echo "setup" >> "{log}"\n')
    (tmp_path / ".venv" / "bin").mkdir(parents=True)
    for tool in ("ruff", "mypy", "mkdocs", "python"):
        _stub(tmp_path / ".venv" / "bin" / tool, log, tool, fail_on, code)
    done = subprocess.run(["bash", str(tmp_path / "scripts" / "test.sh"), "-x"], capture_output=True, text=True, env=dict(os.environ), timeout=60)
    return done.returncode, log.read_text().splitlines()


def test_ci_runs_exactly_the_readme_test_command() -> None:
    lines = [li.strip() for li in (ROOT / ".ci" / "run").read_text().splitlines() if li.strip() and not li.startswith("#")]
    assert lines[-1] == "bash scripts/test.sh"


def test_the_gates_run_after_setup_and_before_pytest(tmp_path: Path) -> None:
    rc, log = _run(tmp_path)
    assert rc == 0
    assert log == ["setup", *GATES, "python -m pytest -q -x"]


@pytest.mark.parametrize("gate", GATES)
def test_a_failing_gate_fails_the_run_before_pytest(tmp_path: Path, gate: str) -> None:
    rc, log = _run(tmp_path, fail_on=gate)
    assert rc == 3
    assert log[-1] == gate and not any(line.startswith("python") for line in log)


@pytest.mark.parametrize(("pytest_rc", "rc"), [(1, 1), (5, 1), (0, 0)])
def test_the_exit_code_is_pytests_and_no_tests_is_a_failure(tmp_path: Path, pytest_rc: int, rc: int) -> None:
    got, log = _run(tmp_path, fail_on="python -m pytest -q -x", code=pytest_rc)
    assert got == rc and log[-1] == "python -m pytest -q -x"
