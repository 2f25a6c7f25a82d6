"""Helpers of the tests of ``frameselect select``: arrays saved as ``.npy`` files, the CLI run in-process."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from frameselect.cli import main


def save(tmp_path: Path, name: str, array: np.ndarray) -> str:
    """``array`` saved as ``<tmp_path>/<name>.npy``; its path."""
    path = tmp_path / f"{name}.npy"
    np.save(path, array)
    return str(path)


def run_cli(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    """``frameselect <args>``: its exit code, standard output and standard error."""
    rc = main(args)
    out, err = capsys.readouterr()
    return rc, out, err
