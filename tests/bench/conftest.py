"""Fixtures of the ONNX Runtime encoder tests: a fresh cache folder per module, where graphs are exported once."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from frameselect.encoders import _onnx


@pytest.fixture(scope="module")
def onnx_root(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A fresh cache folder for this module: graphs are exported there once."""
    _onnx.session.cache_clear()
    yield tmp_path_factory.mktemp("onnx-cache")
    _onnx.session.cache_clear()


@pytest.fixture()
def onnx_cache(onnx_root: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """``$FRAMESELECT_CACHE`` pointed at the module's folder."""
    monkeypatch.setenv("FRAMESELECT_CACHE", str(onnx_root))
    return onnx_root
